"""Two runs side by side: `localeval compare BEFORE AFTER`, for a nightly job asking whether its scores moved.

Each score's mean is taken from both summaries, and, over the samples both runs scored, the mean of the
per-sample changes with its 95% bootstrap interval: a change whose interval holds 0 cannot be told from the
noise of these samples. What makes the two runs not like for like (another data file, judge, embedder or
settings) is said first; the scores are compared all the same, since comparing judges or settings is a
reason to compare. `--max-drop` makes a fall of a mean beyond a bound exit 4, as a failed --fail-under does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import EXIT_BELOW_THRESHOLD, EXIT_OK, UserError, for_terminal
from .estimates import bootstrap_interval
from .gating import ROUNDING, SCORE_RANGE, a_score
from .results import RESULTS_FILE, SUMMARY_FILE, read_results

DROPS_SHOWN = 3  # per score, the samples that fell most


@dataclass(frozen=True)
class RunFiles:
    """What compare reads of a run: its summary, and its samples' scores by id (none where results.jsonl is gone)."""

    folder: Path
    summary: dict[str, Any]
    scores: dict[str, dict[str, Any]]

    def described(self) -> dict[str, Any]:
        summary = self.summary
        return {"folder": str(self.folder), "finished": summary.get("finished"), "samples": summary.get("samples"),
                "data": summary.get("data"), "data_sha256": summary.get("data_sha256"),
                "judge": (summary.get("models") or {}).get("judge")}


@dataclass(frozen=True)
class ScoreChange:
    name: str
    before: float | None  # the summaries' means
    after: float | None
    paired: int  # samples scored in both runs
    change: float | None  # over those, the mean of after - before
    interval: tuple[float, float] | None  # its 95% bootstrap interval; None below two
    drops: list[tuple[str, float, float]]  # (id, before, after) of the samples that fell most, most first

    @property
    def direction(self) -> str:
        """"higher" or "lower" where the interval of the paired change leaves out 0, else "no clear change"."""
        if self.interval is None:
            return "too few paired samples"
        low, high = self.interval
        if not self.drops and self.change is not None and abs(self.change) <= ROUNDING:
            return "unchanged"  # none fell and on average none rose: every pair the same, not a move lost in noise
        return "higher" if low > ROUNDING else "lower" if high < -ROUNDING else "no clear change"

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "paired": self.paired, "change": self.change,
                "interval": list(self.interval) if self.interval else None, "direction": self.direction,
                "drops": [{"id": sample, "before": was, "after": now} for sample, was, now in self.drops]}


def read_run(given: str) -> RunFiles:
    """A run's output folder, or its summary.json, as compare reads them."""
    path = Path(given).expanduser()
    folder = path if path.is_dir() else path.parent
    summary_path = path / SUMMARY_FILE if path.is_dir() else path
    if not path.exists():
        raise UserError(f"compare: {given}: no such folder or file; give a run's --out folder or its {SUMMARY_FILE}")
    if not summary_path.is_file():
        raise UserError(f"compare: {folder} holds no {SUMMARY_FILE} (a run that did not finish writes none: --resume "
                        f"finishes it); give a run's --out folder or its {SUMMARY_FILE}")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UserError(f"compare: cannot read {summary_path} as a localeval summary ({error})") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("metrics"), dict):
        raise UserError(f"compare: {summary_path} is not a localeval summary (it has no \"metrics\")")
    if summary.get("schema_version") != 1:
        raise UserError(f"compare: {summary_path} has schema_version {summary.get('schema_version')!r}; this "
                        "localeval reads 1")
    rows = read_results(folder / RESULTS_FILE)
    return RunFiles(folder, summary, {str(row["id"]): row for row in rows})


def compared(before: RunFiles, after: RunFiles) -> list[ScoreChange]:
    """Every score both summaries hold, in the before run's order."""
    shared = [name for name in before.summary["metrics"] if name in after.summary["metrics"]]
    return [_change(name, before, after) for name in shared]


def _change(name: str, before: RunFiles, after: RunFiles) -> ScoreChange:
    pairs = [(sample, was[name], after.scores[sample][name]) for sample, was in before.scores.items()
             if sample in after.scores and _number(was.get(name)) and _number(after.scores[sample].get(name))]
    differences = [now - was for _, was, now in pairs]
    drops = sorted((pair for pair in pairs if pair[2] < pair[1] - ROUNDING), key=lambda pair: pair[2] - pair[1])
    return ScoreChange(name, before.summary["metrics"][name].get("mean"), after.summary["metrics"][name].get("mean"),
                       len(pairs), sum(differences) / len(differences) if differences else None,
                       bootstrap_interval(differences), drops[:DROPS_SHOWN])


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def unlike(before: RunFiles, after: RunFiles) -> list[str]:
    """What makes the two runs' scores not like for like, a note each."""
    one, other = before.summary, after.summary
    notes = []
    if not one.get("data_sha256") or not other.get("data_sha256"):
        notes.append("a summary written before localeval kept the data's sha256: whether the two runs scored the "
                     "same data file is unknown")
    elif one["data_sha256"] != other["data_sha256"]:
        notes.append(f"the runs scored different data files ({one.get('data')}, sha256 {one['data_sha256'][:12]}; "
                     f"{other.get('data')}, sha256 {other['data_sha256'][:12]}): their means are of other samples")
    for model in ("judge", "embedder"):
        was, now = (one.get("models") or {}).get(model), (other.get("models") or {}).get(model)
        if was != now:
            notes.append(f"another {model}: {was} before, {now} after")
    notes += [f"{setting} differs: {was} before, {now} after" for setting, was, now in _settings_changed(one, other)]
    for summary, where in ((one, "before"), (other, "after")):
        if summary.get("results_in_file", summary.get("samples")) != summary.get("samples"):
            notes.append(f"the {where} run's {RESULTS_FILE} holds more results than its summary's samples (a --resume "
                         "with a smaller --limit): the paired changes use them all")
    if before.scores and after.scores and not set(before.scores) & set(after.scores):
        notes.append("the runs share no sample id: only their means are compared")
    alone = [f"{name} ({where} only)" for names, where in ((one["metrics"], "before"), (other["metrics"], "after"))
             for name in names if name not in (other if where == "before" else one)["metrics"]]
    if alone:
        notes.append(f"scored in one run only, not compared: {', '.join(alone)}")
    return notes


def _settings_changed(one: dict, other: dict) -> Iterable[tuple[str, Any, Any]]:
    """How the metrics were asked and scored, where it differs (the batch limits change no score)."""
    was, now = one.get("settings") or {}, other.get("settings") or {}
    for key in dict.fromkeys([*was, *now]):
        if key not in ("batch_size", "max_batch_tokens") and was.get(key) != now.get(key):
            yield key, was.get(key), now.get(key)


def parse_max_drops(texts: Iterable[str], names: list[str]) -> dict[str, float]:
    """{score: the most its mean may fall} from `--max-drop DROP` (every score) and `--max-drop SCORE=DROP`."""
    drops: dict[str, float] = {}
    for text in texts:
        name, sep, value = text.rpartition("=")
        if sep and name.strip() not in names:
            raise UserError(f"--max-drop {text}: {name.strip()!r} is not a score both runs summarize "
                            f"({', '.join(names)})")
        try:
            drop = float(value)
        except ValueError:
            raise UserError(f"--max-drop {text}: {value!r} is not a number; write DROP or SCORE=DROP, e.g. "
                            "context_recall=0.05") from None
        if not a_score(drop):
            raise UserError(f"--max-drop {text}: a drop is at most the whole range of a score ({SCORE_RANGE})")
        drops.update({name.strip(): drop} if sep else dict.fromkeys(names, drop) | drops)
    return drops


def failed_drops(changes: list[ScoreChange], drops: dict[str, float]) -> dict[str, dict[str, Any]]:
    """Per gated score: its mean's fall, the most allowed, and whether it stayed within. A mean that cannot be
    compared (no sample scored in a run) fails: a build must not pass on nothing."""
    found = {}
    for change in changes:
        if change.name not in drops:
            continue
        fell = None if change.before is None or change.after is None else change.before - change.after
        found[change.name] = {"max_drop": drops[change.name], "drop": fell,
                              "passed": fell is not None and fell <= drops[change.name] + ROUNDING}
    return found


def document(before: RunFiles, after: RunFiles, changes: list[ScoreChange], notes: list[str],
             gates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What --json prints."""
    return {"before": before.described(), "after": after.described(), "notes": notes,
            "scores": {change.name: change.to_json() for change in changes},
            "gates": gates, "gates_passed": all(gate["passed"] for gate in gates.values()) if gates else None}


def table(changes: list[ScoreChange]) -> str:
    header = ["score", "before", "after", "change", "paired change [95% CI]", "pairs", ""]
    lines = [header] + [[change.name, _fixed(change.before), _fixed(change.after), _signed(_difference(change)),
                         _paired(change), str(change.paired), change.direction] for change in changes]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) if i in (0, 6) else cell.rjust(width)
                               for i, (cell, width) in enumerate(zip(line, widths))).rstrip() for line in lines)


def drops_said(changes: list[ScoreChange]) -> list[str]:
    return [f"  {change.name}: {sample} {was:.3f} -> {now:.3f}" for change in changes
            for sample, was, now in change.drops]


def _difference(change: ScoreChange) -> float | None:
    return None if change.before is None or change.after is None else change.after - change.before


def _paired(change: ScoreChange) -> str:
    if change.change is None:
        return "-"
    bounds = "" if change.interval is None else f" [{change.interval[0]:+.3f}, {change.interval[1]:+.3f}]"
    return f"{change.change:+.3f}{bounds}"


def _moved(drop: float | None) -> str:
    if drop is None:
        return "has no mean in one of the runs"
    return f"fell by {drop:.3f}" if drop > ROUNDING else f"rose by {-drop:.3f}" if drop < -ROUNDING else "did not move"


def _fixed(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def compare_command(args) -> int:
    """`localeval compare BEFORE AFTER`: the table (or --json's document) on stdout; exit 4 where a mean fell
    beyond its --max-drop."""
    before, after = read_run(args.before), read_run(args.after)
    changes = compared(before, after)
    if not changes:
        raise UserError(f"compare: the two runs share no score ({', '.join(before.summary['metrics'])} against "
                        f"{', '.join(after.summary['metrics'])})")
    gates = failed_drops(changes, parse_max_drops(args.max_drop or (), [change.name for change in changes]))
    notes = unlike(before, after)
    if args.json:
        print(json.dumps(document(before, after, changes, notes, gates)))
    else:
        for name, run in (("before", before), ("after", after)):
            facts = run.described()
            print(for_terminal(f"{name}: {facts['folder']} ({facts['samples']} samples, judge {facts['judge']}, "
                               f"finished {facts['finished']})"))
        print(f"\n{table(changes)}")
        if said := drops_said([change for change in changes if change.drops]):
            print("\nthe samples that fell most (before -> after):\n" + for_terminal("\n".join(said)))
        for note in notes:
            print(f"\nlocaleval: note: {for_terminal(note)}")
    for name, gate in gates.items():
        print(f"max-drop: {name} {_moved(gate['drop'])}, at most {gate['max_drop']:g} allowed: "
              f"{'passed' if gate['passed'] else 'FAILED'}", file=sys.stderr)
    return EXIT_OK if all(gate["passed"] for gate in gates.values()) else EXIT_BELOW_THRESHOLD
