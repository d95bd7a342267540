"""bench --resume: the judges that an interrupted (or partly failed) bench finished are kept, and only
the others run.

Three judges take a quarter of an hour on a CPU, and Ctrl-C during the last one cost all three. What
is kept is whole judges, as the bench measured them: a judge's speed and peak memory are measured over
all its samples in one process of its own, so a judge stopped midway runs again from its first sample.
A judge is kept only from a bench of the same data (its digest), metrics, options and device, and only
where its results file in results/ holds a row for each sample of this bench, in order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..results import count_of, said_differences
from .labels import LabeledSample
from .worker import JudgeRun

Log = Callable[[str], None]


@dataclass(frozen=True)
class Kept:
    """The finished judges taken from the bench in --out, and when that bench (or the first it resumed) began."""

    runs: dict[str, JudgeRun] = field(default_factory=dict)
    since: str | None = None

    def record(self) -> dict[str, Any] | None:
        """bench.json's "resumed": which judges were measured in an earlier process, and since when."""
        return {"from": self.since, "kept": list(self.runs)} if self.runs else None


def kept_judges(out: Path, identity: dict[str, Any], labeled: Sequence[LabeledSample], judges: Sequence[str],
                result_names: Callable[[list[str]], list[str]], log: Log) -> Kept:
    """The judges of `judges` that the bench in `out` finished, read back with their rows and measures.

    A bench of other data or options is refused (its judges were measured on something else); a
    judge whose results file is gone or holds other samples (another --limit) runs again, said."""
    earlier = _earlier(out)
    if earlier is None:
        log(f"--resume: nothing to resume in {out} (no bench.json); running every judge")
        return Kept()
    if shown := said_differences(_recorded_identity(earlier), identity):
        raise UserError(f"--resume: {out} holds another bench ({shown}); resume it with the same data and options, "
                        "or bench into another --out")
    names = [judge["name"] for judge in earlier["judges"]]
    files = dict(zip(names, result_names(names)))
    ids = [str(item.sample.id) for item in labeled]
    runs = {}
    for entry in earlier["judges"]:
        name = entry["name"]
        if name not in judges or entry.get("status") != "ok":
            continue
        rows = _rows(out / "results" / files[name], ids)
        if rows is None:
            log(f"--resume: {name}'s results in {out / 'results' / files[name]} are missing or hold other samples "
                "(another --limit?); running it again")
            continue
        runs[name] = JudgeRun(name, rows=rows, measures=entry["measures"])
    since = (earlier.get("resumed") or {}).get("from") or earlier["started"]
    return Kept({name: runs[name] for name in judges if name in runs}, since)


def said_kept(kept: Kept, judges: Sequence[str]) -> str:
    """What a resumed bench keeps and what it runs, said as it starts."""
    if not kept.runs:
        return "--resume: no judge of this bench had finished; running every judge"
    rest = [name for name in judges if name not in kept.runs]
    running = f"running {', '.join(rest)}" if rest else "every judge had finished: rewriting the reports"
    return (f"--resume: keeping {count_of(len(kept.runs), 'judge')} from the bench started {kept.since} "
            f"({', '.join(kept.runs)}); {running}")


def bench_identity(data_sha256: str, device: str, settings: dict[str, Any]) -> dict[str, Any]:
    """What makes two benches one (the metrics in any order: their order changes no judge's answer)."""
    return {"data_sha256": data_sha256, "device": device, "settings": {**settings, "metrics": sorted(settings["metrics"])}}


def _recorded_identity(bench: dict[str, Any]) -> dict[str, Any]:
    """bench_identity of a bench.json; a bench.json written before its data's digest was recorded
    has none, and so differs from every bench (it cannot be checked to be this one)."""
    settings = bench.get("settings") or {}
    return bench_identity(bench.get("dataset", {}).get("sha256", "not recorded"), bench.get("device"),
                          {**settings, "metrics": settings.get("metrics") or []})


def _earlier(out: Path) -> dict[str, Any] | None:
    """The bench.json in `out`; None without one. One that cannot be read cannot be resumed: said."""
    path = out / "bench.json"
    if not path.exists():
        return None
    try:
        bench = json.loads(path.read_text(encoding="utf-8"))
        _ = [judge["name"] for judge in bench["judges"]], bench["started"]
    except (OSError, ValueError, KeyError, TypeError):
        raise UserError(f"--resume: {path} cannot be read, so no judge of it can be kept; bench without --resume "
                        "(it replaces that bench) or into another --out") from None
    return bench


def _rows(path: Path, ids: list[str]) -> list[dict[str, Any]] | None:
    """A judge's results, where they are whole and one per sample of this bench in its order; else None."""
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    if not all(isinstance(row, dict) for row in rows) or [str(row.get("id")) for row in rows] != ids:
        return None
    return rows
