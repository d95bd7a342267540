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
from .gating import ROUNDING, SCORE_RANGE, a_score, shown_apart
from .results import RESULTS_FILE, SUMMARY_FILE, count_of, is_number, read_results

DROPS_SHOWN = 3  # per score, the samples that fell most
# Pairs below which no direction is named: a percentile bootstrap of 2 to 5 pairs gave intervals that left 0
# out where a t-interval spanned ±0.6 (a review); bench names a best judge's interval from 10 samples too
MIN_PAIRS = 10


@dataclass(frozen=True)
class RunFiles:
    """What compare reads of a run: its summary, and its samples' scores by id."""

    folder: Path
    summary: dict[str, Any]
    scores: dict[str, dict[str, Any]]
    results_read: bool  # False where results.jsonl is gone: no pairs

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        return self.summary["metrics"]

    def described(self) -> dict[str, Any]:
        summary = self.summary
        return {"folder": str(self.folder), "started": summary.get("started"), "finished": summary.get("finished"),
                "samples": summary.get("samples"), "data": summary.get("data"), "data_sha256": summary.get("data_sha256"),
                "judge": (summary.get("models") or {}).get("judge")}


@dataclass(frozen=True)
class ScoreChange:
    name: str
    before: float | None  # the summaries' means
    after: float | None
    paired: int  # samples scored in both runs
    change: float | None  # over those, the mean of after - before
    interval: tuple[float, float] | None  # its 95% bootstrap interval; None below MIN_PAIRS
    drops: list[tuple[str, float, float]]  # (id, before, after) of the samples that fell most, most first
    lost: int  # samples scored before and null after

    @property
    def direction(self) -> str:
        """"higher" or "lower" where the interval of the paired change leaves out 0, else "no clear change"."""
        if not self.drops and self.change is not None and abs(self.change) <= ROUNDING:
            return "unchanged"  # none fell and on average none rose: every pair the same, not a move lost in noise
        if self.interval is None:
            return f"too few pairs to tell (under {MIN_PAIRS})"
        low, high = self.interval
        return "higher" if low > ROUNDING else "lower" if high < -ROUNDING else "no clear change"

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "paired": self.paired, "change": self.change,
                "interval": list(self.interval) if self.interval else None, "direction": self.direction,
                "lost": self.lost,
                "drops": [{"id": sample, "before": was, "after": now} for sample, was, now in self.drops]}


def read_run(given: str) -> RunFiles:
    """A run's output folder, or its summary.json, as compare reads them."""
    path = Path(given).expanduser()
    if not path.exists():
        raise UserError(f"compare: {given}: no such folder or file; give a run's --out folder or its {SUMMARY_FILE}")
    folder, summary_path = (path, path / SUMMARY_FILE) if path.is_dir() else (path.parent, path)
    if not summary_path.is_file():
        raise UserError(f"compare: {folder} holds no {SUMMARY_FILE} (a run that did not finish writes none: --resume "
                        f"finishes it); give a run's --out folder or its {SUMMARY_FILE}")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        rows = read_results(folder / RESULTS_FILE)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UserError(f"compare: cannot read {folder}'s run ({error})") from None
    _check_summary(summary, summary_path)
    return RunFiles(folder, summary, {str(row["id"]): row for row in rows}, (folder / RESULTS_FILE).is_file())


def _check_summary(summary: Any, path: Path) -> None:
    if not isinstance(summary, dict) or not isinstance(summary.get("metrics"), dict):
        raise UserError(f"compare: {path} is not a localeval summary (it has no \"metrics\")")
    if summary.get("schema_version") != 1:
        raise UserError(f"compare: {path} has schema_version {summary.get('schema_version')!r}; this localeval reads 1")
    for name, row in summary["metrics"].items():
        if not (isinstance(row, dict) and (row.get("mean") is None or is_number(row["mean"]))
                and all(isinstance(row.get(count), int) for count in ("scored", "null"))):
            raise UserError(f"compare: {path} is not a localeval summary ({name}'s row is not a mean and its counts)")


def compared(before: RunFiles, after: RunFiles) -> list[ScoreChange]:
    """Every score both summaries hold, in the before run's order."""
    return [_change(name, before, after) for name in before.metrics if name in after.metrics]


def _change(name: str, before: RunFiles, after: RunFiles) -> ScoreChange:
    both = [(sample, was.get(name), after.scores[sample].get(name)) for sample, was in before.scores.items()
            if sample in after.scores]
    pairs = [(sample, was, now) for sample, was, now in both if is_number(was) and is_number(now)]
    differences = [now - was for _, was, now in pairs]
    drops = sorted((pair for pair in pairs if pair[2] < pair[1] - ROUNDING), key=lambda pair: pair[2] - pair[1])
    return ScoreChange(name, before.metrics[name]["mean"], after.metrics[name]["mean"], len(pairs),
                       sum(differences) / len(differences) if differences else None,
                       bootstrap_interval(differences) if len(differences) >= MIN_PAIRS else None, drops[:DROPS_SHOWN],
                       sum(1 for _, was, now in both if is_number(was) and not is_number(now)))


def unlike(before: RunFiles, after: RunFiles, changes: list[ScoreChange]) -> list[str]:
    """What makes the two runs' scores not like for like, a note each."""
    return [*_data_notes(before, after), *_model_and_settings_notes(before, after, [c.name for c in changes]),
            *_sample_notes(before, after), *_lost_notes(changes), *_one_run_only(before, after)]


def _data_notes(before: RunFiles, after: RunFiles) -> list[str]:
    one, other = before.summary, after.summary
    if not one.get("data_sha256") or not other.get("data_sha256"):
        return ["a summary written before localeval kept the data's sha256: whether the two runs scored the same "
                "data file is unknown"]
    if one["data_sha256"] != other["data_sha256"]:
        return [f"the runs scored different data files ({one.get('data')}, sha256 {one['data_sha256'][:12]}; "
                f"{other.get('data')}, sha256 {other['data_sha256'][:12]})"]
    return []


def _model_and_settings_notes(before: RunFiles, after: RunFiles, shared: list[str]) -> list[str]:
    from .metrics import METRICS, metric_of

    metrics = {metric_of(name) for name in shared}
    # a metric unknown here (a custom one) may use an embedder
    compared_models = ["judge"] + (["embedder"] if any(getattr(METRICS.get(m), "uses_embedder", True)
                                                       for m in metrics) else [])
    notes = []
    for model in compared_models:
        was, now = (before.summary.get("models") or {}).get(model), (after.summary.get("models") or {}).get(model)
        if was != now:
            notes.append(f"another {model}: {was} before, {now} after")
    return notes + [f"{setting} differs: {was} before, {now} after"
                    for setting, was, now in _settings_changed(before.summary, after.summary, metrics)]


def _settings_changed(one: dict, other: dict, metrics: set[str]) -> Iterable[tuple[str, Any, Any]]:
    """How the shared metrics were asked and scored, where it differs (the batch limits change no score; a
    setting per metric is compared for the metrics both runs scored)."""
    was, now = one.get("settings") or {}, other.get("settings") or {}
    for key in dict.fromkeys([*was, *now]):
        if key in ("batch_size", "max_batch_tokens") or (key == "questions" and "response_relevancy" not in metrics):
            continue
        a, b = was.get(key), now.get(key)
        if isinstance(a, dict) or isinstance(b, dict):
            a, b = ({m: v for m, v in (side or {}).items() if m in metrics} for side in (a, b))
        if a != b:
            yield key, a, b


def _sample_notes(before: RunFiles, after: RunFiles) -> list[str]:
    notes = []
    for run, where in ((before, "before"), (after, "after")):
        if not run.results_read:
            notes.append(f"the {where} run's {RESULTS_FILE} is gone: no sample is paired, only the means are compared")
        elif run.summary.get("results_in_file", len(run.scores)) != len(run.scores):
            notes.append(f"the {where} run's {RESULTS_FILE} holds {count_of(len(run.scores), 'result')} where its "
                         f"summary counted {run.summary['results_in_file']}: the summary is of an earlier invocation "
                         "(a --resume stopped since?)")
    if before.results_read and after.results_read and set(before.scores) != set(after.scores):
        common = len(set(before.scores) & set(after.scores))
        notes.append(f"the runs share {common} of their samples ({len(before.scores)} before, {len(after.scores)} "
                     "after): the means are of other samples, the paired changes of those shared" if common else
                     "the runs share no sample id: only their means are compared")
    return notes


def _lost_notes(changes: list[ScoreChange]) -> list[str]:
    lost = [f"{change.name} {change.lost}" for change in changes if change.lost]
    return [f"samples scored before and null after (see their null_reason): {', '.join(lost)}"] if lost else []


def _one_run_only(before: RunFiles, after: RunFiles) -> list[str]:
    alone = [f"{name} (before only)" for name in before.metrics if name not in after.metrics]
    alone += [f"{name} (after only)" for name in after.metrics if name not in before.metrics]
    return [f"scored in one run only, not compared: {', '.join(alone)}"] if alone else []


def parse_max_drops(texts: Iterable[str], names: list[str]) -> dict[str, float]:
    """{score: the most its mean may fall} from `--max-drop DROP` (every score of the before run) and
    `--max-drop SCORE=DROP` (that one, whichever comes first)."""
    every: float | None = None
    named: dict[str, float] = {}
    for text in texts:
        name, sep, value = text.rpartition("=")
        name = name.strip()
        if sep and name not in names:
            raise UserError(f"--max-drop {text}: {name!r} is not a score of the before run ({', '.join(names)})")
        if (name in named) if sep else (every is not None):
            raise UserError(f"--max-drop {text}: {name or 'every score'} is given a drop twice; keep one")
        drop = _drop(text, value)
        if sep:
            named[name] = drop
        else:
            every = drop
    return {**({} if every is None else dict.fromkeys(names, every)), **named}


def _drop(text: str, value: str) -> float:
    try:
        drop = float(value)
    except ValueError:
        raise UserError(f"--max-drop {text}: {value!r} is not a number; write DROP or SCORE=DROP, e.g. "
                        "context_recall=0.05") from None
    if not a_score(drop):
        raise UserError(f"--max-drop {text}: a drop is at most the whole range of a score ({SCORE_RANGE})")
    return drop


def gates(before: RunFiles, after: RunFiles, drops: dict[str, float]) -> dict[str, dict[str, Any]]:
    """Per gated score: its mean's fall, the most allowed, and whether it held. It fails where the mean fell by
    more, where the after run has no mean of it (a build must not pass on nothing), and where a larger share of
    the samples is null after (a mean of fewer samples fell by nothing: a review)."""
    found = {}
    for name, most in drops.items():
        was, now = before.metrics[name], after.metrics.get(name)
        fell = None if now is None or was["mean"] is None or now["mean"] is None else was["mean"] - now["mean"]
        nulls = [None if row is None else row["null"] / max(1, row["scored"] + row["null"]) for row in (was, now)]
        more_null = nulls[1] is not None and nulls[1] > nulls[0] + ROUNDING
        passed = now is not None and now["mean"] is not None and not more_null and (fell is None or fell <= most + ROUNDING)
        found[name] = {"max_drop": most, "drop": fell, "null_share_before": nulls[0], "null_share_after": nulls[1],
                       "passed": passed}
    return found


def document(before: RunFiles, after: RunFiles, changes: list[ScoreChange], notes: list[str],
             outcomes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What --json prints."""
    return {"before": before.described(), "after": after.described(), "notes": notes,
            "scores": {change.name: change.to_json() for change in changes},
            "gates": outcomes, "gates_passed": all(gate["passed"] for gate in outcomes.values()) if outcomes else None}


def table(changes: list[ScoreChange]) -> str:
    header = ["score", "before", "after", "change", "paired change [95% CI]", "pairs", ""]
    lines = [header] + [[for_terminal(change.name), _fixed(change.before), _fixed(change.after),
                         _signed(_difference(change)), _paired(change), str(change.paired), change.direction]
                        for change in changes]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) if i in (0, 6) else cell.rjust(width)
                               for i, (cell, width) in enumerate(zip(line, widths))).rstrip() for line in lines)


def drops_said(changes: list[ScoreChange]) -> list[str]:
    return [for_terminal(f"  {change.name}: {sample} {was:.3f} -> {now:.3f}") for change in changes
            for sample, was, now in change.drops]


def gate_said(name: str, gate: dict[str, Any]) -> str:
    """`max-drop: context_recall fell by 0.0504, at most 0.05 allowed: FAILED`."""
    most, fell = gate["max_drop"], gate["drop"]
    if gate["null_share_after"] is None:
        moved = "is not scored after"
    elif fell is None:
        moved = "has no mean to compare"
    elif fell > ROUNDING:
        moved = f"fell by {shown_apart(fell, most) if fell > most + ROUNDING else f'{fell:.3f}'}"
    else:
        moved = f"rose by {-fell:.3f}" if fell < -ROUNDING else "did not move"
    if gate["null_share_after"] is not None and gate["null_share_after"] > gate["null_share_before"] + ROUNDING:
        moved += (f", and {gate['null_share_after']:.0%} of its samples are null against "
                  f"{gate['null_share_before']:.0%} before")
    return f"max-drop: {name} {moved}, at most {most:g} allowed: {'passed' if gate['passed'] else 'FAILED'}"


def _difference(change: ScoreChange) -> float | None:
    return None if change.before is None or change.after is None else change.after - change.before


def _paired(change: ScoreChange) -> str:
    if change.change is None:
        return "-"
    bounds = "" if change.interval is None else f" [{change.interval[0]:+.3f}, {change.interval[1]:+.3f}]"
    return f"{change.change:+.3f}{bounds}"


def _fixed(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def compare_command(args) -> int:
    """`localeval compare BEFORE AFTER`: the table (or --json's document) on stdout, each gate on stderr; exit 4
    where a gate failed."""
    before, after = read_run(args.before), read_run(args.after)
    changes = compared(before, after)
    if not changes:
        raise UserError(f"compare: the two runs share no score ({', '.join(before.metrics)} against "
                        f"{', '.join(after.metrics)})")
    outcomes = gates(before, after, parse_max_drops(args.max_drop or (), list(before.metrics)))
    notes = unlike(before, after, changes)
    if args.json:
        print(json.dumps(document(before, after, changes, notes, outcomes)))
    else:
        _say(before, after, changes, notes)
    for name, gate in outcomes.items():
        print(for_terminal(gate_said(name, gate)), file=sys.stderr)
    return EXIT_OK if all(gate["passed"] for gate in outcomes.values()) else EXIT_BELOW_THRESHOLD


def _say(before: RunFiles, after: RunFiles, changes: list[ScoreChange], notes: list[str]) -> None:
    for name, run in (("before", before), ("after", after)):
        facts = run.described()
        print(for_terminal(f"{name}: {facts['folder']} ({count_of(facts['samples'] or 0, 'sample')}, judge "
                           f"{facts['judge']}, finished {facts['finished']})"))
    print(f"\n{table(changes)}")
    if said := drops_said(changes):
        print("\nthe samples that fell most (before -> after):\n" + "\n".join(said))
    for note in notes:
        print(f"\nlocaleval: note: {for_terminal(note)}")
