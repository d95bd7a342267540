"""bench --resume: the judges that an interrupted (or partly failed) bench finished are kept, and only
the others run.

Three judges take a quarter of an hour on a CPU, and Ctrl-C during the last one cost all three. What
is kept is whole judges, as the bench measured them: a judge's speed and peak memory are measured over
all its samples in one process of its own, so a judge stopped midway runs again from its first sample.
A bench is resumed only where it is a bench of the same data (its digest), metrics, options, device
and scoring rules, and names no finished judge that this one leaves out (it would be dropped from the report).
A judge is kept where it was asked as this bench asks it, its weights (a folder's) are unchanged, and
its results file holds a row for each sample of this bench, in order; else it runs again, said.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError, count_of
from ..metrics import METRICS
from ..scoring_rules import WHAT_CHANGED, other_rules
from ..run_differences import said_differences
from .labels import LabeledSample
from .report import JSON_FILE, RESULTS_DIR
from .worker import JudgeRun

Log = Callable[[str], None]


@dataclass(frozen=True)
class Asked:
    """What this bench asks: to tell whether an earlier bench's run of a judge is one of this bench's."""

    identity: dict[str, Any]  # bench_identity: the data's digest, the device, the settings of every judge
    settings: dict[str, dict[str, Any]]  # per judge, in the order named: what it is asked (tuning.settings_used)
    weights: dict[str, str | None]  # per judge: a folder's fingerprint now; None for a registered judge (pinned)


@dataclass(frozen=True)
class EarlierJudges:
    """The finished judges a resumed bench takes from the bench in --out, each as that bench measured it."""

    runs: dict[str, JudgeRun] = field(default_factory=dict)
    measured_in: dict[str, str] = field(default_factory=dict)  # judge -> the start of the bench that ran it


def bench_identity(data_sha256: str, samples: int, device: str, settings: dict[str, Any],
                   scoring_rules: str | None) -> dict[str, Any]:
    """What makes two benches one: the data and how many of its samples (--limit), the device, the options
    (with --calibrate: a resume without it would remove the calibration.json of the judges it keeps), and the
    scoring rules (scoring_rules.py; None from a localeval before they were recorded). The metrics in any order:
    their order changes no judge's answer; the embedder only where one embeds."""
    embeds = any(getattr(METRICS.get(name), "uses_embedder", False) for name in settings["metrics"])
    asked = {key: value for key, value in settings.items() if key != "metrics" and (key != "embedder" or embeds)}
    # the metrics first, where a difference is said: a change of metrics explains the rest
    return {"metrics": sorted(settings["metrics"]), "data_sha256": data_sha256, "samples": samples, "device": device,
            "settings": asked, **({"scoring_rules": scoring_rules} if scoring_rules else {})}


def kept_judges(out: Path, earlier: dict[str, Any] | None, asked: Asked, labeled: Sequence[LabeledSample],
                log: Log) -> EarlierJudges:
    """The judges that the bench in `out` (`earlier`, its bench.json as read_bench read it) finished and this
    one keeps, read back with their rows and measures (the others it finished run again, said)."""
    if earlier is None:
        log(f"--resume: nothing to resume in {out} (no {JSON_FILE}); running every judge")
        return EarlierJudges()
    _check_same_bench(out, earlier, asked)
    ids = [str(item.sample.id) for item in labeled]
    kept: dict[str, tuple[JudgeRun, str]] = {}
    for entry in (entry for entry in earlier["judges"] if entry.get("status") == "ok"):
        found = _kept_run(out, entry, asked, ids)
        if isinstance(found, str):
            log(f"--resume: {entry['name']} runs again: {found}")
        else:
            kept[entry["name"]] = found, entry.get("measured_in") or earlier["started"]
    in_order = [name for name in asked.settings if name in kept]
    earlier_judges = EarlierJudges({name: kept[name][0] for name in in_order}, {name: kept[name][1] for name in in_order})
    log(_said(earlier_judges, list(asked.settings)))
    return earlier_judges


def read_bench(out: Path) -> dict[str, Any] | None:
    """The bench.json in `out`; None without one. One that cannot be read cannot be resumed: said."""
    path = out / JSON_FILE
    if not path.exists():
        return None
    try:
        bench = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        bench = None
    if not _whole(bench):  # cut short, or edited by hand: read on, it failed in a traceback
        raise UserError(f"--resume: {path} cannot be read, so no judge of it can be kept; bench without --resume "
                        "(it replaces that bench) or into another --out")
    return bench


def _whole(bench: Any) -> bool:
    """A bench.json as bench writes it, as far as a resume reads it."""
    if not (isinstance(bench, dict) and isinstance(bench.get("started"), str) and isinstance(bench.get("dataset"), dict)
            and isinstance(bench.get("settings"), dict) and isinstance(bench["settings"].get("metrics"), list)
            and isinstance(bench.get("judges"), list)):
        return False
    return all(isinstance(judge, dict) and isinstance(judge.get("name"), str)
               and (judge.get("status") != "ok" or isinstance(judge.get("measures"), dict)) for judge in bench["judges"])


def _check_same_bench(out: Path, earlier: dict[str, Any], asked: Asked) -> None:
    if "sha256" not in earlier["dataset"]:
        raise UserError(f"--resume: the bench in {out} was written by an earlier localeval, which did not record "
                        "its data's digest, so it cannot be checked to be this bench; bench without --resume (it "
                        "replaces that bench) or into another --out")
    recorded = bench_identity(earlier["dataset"]["sha256"], earlier["dataset"].get("samples"), earlier.get("device"),
                              earlier["settings"], earlier.get("scoring_rules"))
    # other scoring rules first: no option brings them back
    if (rules := earlier.get("scoring_rules")) != (ours := asked.identity.get("scoring_rules")):
        raise UserError(f"--resume: {out} holds a bench measured by {other_rules(rules, ours)}: bench without --resume "
                        f"(it replaces that bench) or into another --out; {WHAT_CHANGED}")
    if shown := said_differences(recorded, asked.identity):
        raise UserError(f"--resume: {out} holds another bench ({shown}); resume it with the same data and options, "
                        "or bench into another --out")
    left_out = [judge["name"] for judge in earlier["judges"]
                if judge.get("status") == "ok" and judge["name"] not in asked.settings]
    if left_out:  # the report this bench writes would drop them, and their results with it
        them = "it" if len(left_out) == 1 else "them"
        raise UserError(f"--resume: the bench in {out} finished {', '.join(left_out)}, which --judges leaves out; "
                        f"name {them} in --judges too (a folder judge by the path it ran from), or bench into another "
                        "--out (its results in results/ stay there until a bench into that folder replaces them)")


def _kept_run(out: Path, entry: dict[str, Any], asked: Asked, ids: list[str]) -> JudgeRun | str:
    """The earlier run of the judge `entry` names, or why it cannot stand for this bench's."""
    name = entry["name"]
    if entry.get("settings") != asked.settings[name]:
        return "it was asked otherwise then (its measured settings changed since)"
    if asked.weights[name] is not None and entry["measures"].get("weights") != asked.weights[name]:
        return "its folder changed since (a file's name, size or time)"
    file = entry.get("results_file")
    rows = _rows(out / RESULTS_DIR / file, ids) if isinstance(file, str) else None
    if rows is None:
        return f"its results in {out / RESULTS_DIR} are missing or hold other samples"
    return JudgeRun(name, rows=rows, measures=entry["measures"])


def _said(earlier: EarlierJudges, judges: list[str]) -> str:
    """What a resumed bench keeps and what it runs, said as it starts."""
    if not earlier.runs:
        return "--resume: no judge of this bench is kept; running every judge"
    rest = [name for name in judges if name not in earlier.runs]
    running = f"running {', '.join(rest)}" if rest else "every judge named had finished: writing the reports again"
    when = sorted(set(earlier.measured_in.values()))
    return (f"--resume: keeping {count_of(len(earlier.runs), 'judge')} from the bench started {', '.join(when)} "
            f"({', '.join(earlier.runs)}); {running}")


def _rows(path: Path, ids: list[str]) -> list[dict[str, Any]] | None:
    """A judge's results, where they are whole and one per sample of this bench in its order; else None."""
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    if not all(isinstance(row, dict) for row in rows) or [str(row.get("id")) for row in rows] != ids:
        return None
    return rows
