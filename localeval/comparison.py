"""Two runs side by side, for a nightly job asking whether its scores moved (`localeval compare`).

Each score's mean is taken from both summaries, and, over the samples both runs scored, the mean of the
per-sample changes with its 95% bootstrap interval: a change whose interval holds 0 cannot be told from the
noise of these samples. What makes the two runs not like for like (another data file, judge, embedder or
settings, other samples) is said as notes; the scores are compared all the same, since comparing judges or
settings is a reason to compare.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UserError
from .estimates import bootstrap_interval
from .gating import ROUNDING
from .results import LOCK_FILE, RESULTS_FILE, SUMMARY_FILE, count_of, folder_in_use, is_number, read_results

DROPS_SHOWN = 3  # per score, the samples that fell most
# Pairs below which no direction is named: a percentile bootstrap of 2 to 5 pairs gave intervals that left 0
# out where a t-interval spanned ±0.6 (a review); bench names a best judge's interval from 10 samples too
MIN_PAIRS = 10
DIRECTIONS = ("higher", "lower", "no clear change", "unchanged", "too few pairs", "no pairs")


@dataclass(frozen=True)
class RunFiles:
    """What compare reads of a run: its summary, and its samples' scores by id."""

    folder: Path
    summary: dict[str, Any]
    scores: dict[str, dict[str, Any]]
    results_read: bool  # False where results.jsonl is gone: no pairs
    unreadable_lines: int  # lines of results.jsonl that are no result (a line cut short, damage)

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
    paired_change: float | None  # over those, the mean of after - before
    interval: tuple[float, float] | None  # its 95% bootstrap interval; None below MIN_PAIRS
    drops: list[tuple[str, float, float]]  # (id, before, after) of the samples that fell most, most first
    lost: int  # samples scored before and null after

    @property
    def mean_change(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def direction(self) -> str:
        """One of DIRECTIONS: "higher" or "lower" where the paired change's interval leaves 0 out."""
        if not self.paired:
            return "no pairs"
        if not self.drops and abs(self.paired_change) <= ROUNDING:
            return "unchanged"  # none fell and on average none rose: every pair the same, however few
        if self.interval is None:
            return "too few pairs"
        low, high = self.interval
        return "higher" if low > ROUNDING else "lower" if high < -ROUNDING else "no clear change"

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "mean_change": self.mean_change, "paired": self.paired,
                "paired_change": self.paired_change, "interval": list(self.interval) if self.interval else None,
                "direction": self.direction, "lost": self.lost,
                "drops": [{"id": sample, "before": was, "after": now} for sample, was, now in self.drops]}


def read_run(given: str) -> RunFiles:
    """A finished run's output folder, or its summary.json, as compare reads them."""
    path = Path(given).expanduser()
    if not path.exists():
        raise UserError(f"compare: {given}: no such folder or file; give a run's --out folder or its {SUMMARY_FILE}")
    if path.name == RESULTS_FILE:
        raise UserError(f"compare: {given}: give the run's --out folder (or its {SUMMARY_FILE}), not its {RESULTS_FILE}")
    folder, summary_path = (path, path / SUMMARY_FILE) if path.is_dir() else (path.parent, path)
    if folder_in_use(folder):  # its files are an earlier run's, or half this one's (a CI probe compared them)
        raise UserError(f"compare: a localeval run is writing in {folder} now ({LOCK_FILE} is held); compare it "
                        "once that run has ended")
    if not summary_path.is_file():
        raise UserError(f"compare: {folder} holds no {SUMMARY_FILE} (a run that did not finish writes none: --resume "
                        f"finishes it); give a run's --out folder or its {SUMMARY_FILE}")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        lines = [line for line in (folder / RESULTS_FILE).read_bytes().splitlines() if line.strip()] \
            if (folder / RESULTS_FILE).exists() else None
        rows = read_results(folder / RESULTS_FILE)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UserError(f"compare: cannot read {folder}'s run ({error})") from None
    _check_summary(summary, summary_path)
    return RunFiles(folder, summary, {str(row["id"]): row for row in rows}, lines is not None,
                    0 if lines is None else len(lines) - len(rows))


def _check_summary(summary: Any, path: Path) -> None:
    """What compare reads of a summary, in the shapes localeval writes (docs/output.md); the
    schema_version of summaries written before it was kept, absent, read as 1."""
    def refused(why: str) -> UserError:
        return UserError(f"compare: {path} is not a localeval summary ({why})")

    if not isinstance(summary, dict) or not isinstance(summary.get("metrics"), dict):
        raise refused('it has no "metrics"')
    if summary.get("schema_version", 1) != 1:
        raise UserError(f"compare: {path} has schema_version {summary['schema_version']!r}; this localeval reads 1")
    for name, row in summary["metrics"].items():
        if not (isinstance(row, dict) and (row.get("mean") is None or (is_number(row["mean"]) and 0 <= row["mean"] <= 1))
                and all(isinstance(row.get(count), int) for count in ("scored", "null"))):
            raise refused(f"{name}'s row is not a mean from 0 to 1 and its counts")
    for key, kind in (("models", dict), ("settings", dict), ("data_sha256", str), ("data", str), ("finished", str)):
        if summary.get(key) is not None and not isinstance(summary[key], kind):
            raise refused(f"its {key} is not {'an object' if kind is dict else 'text'}")


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
    return [*_which_runs(before, after), *_data_notes(before, after),
            *_model_and_settings_notes(before, after, [c.name for c in changes]), *_sample_notes(before, after),
            *_lost_notes(changes), *_one_run_only(before, after)]


def _which_runs(before: RunFiles, after: RunFiles) -> list[str]:
    if before.folder.resolve() == after.folder.resolve():
        return ["the same run is given twice"]
    finished = before.summary.get("finished"), after.summary.get("finished")
    if all(finished) and finished[0] > finished[1]:  # ISO 8601 in UTC: ordered as text
        return [f"the before run finished after the after run ({finished[0]} against {finished[1]}): swapped?"]
    return []


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
    models = ["judge"] + (["embedder"] if any(getattr(METRICS.get(m), "uses_embedder", True) for m in metrics) else [])
    notes = []
    for model in models:
        was, now = (before.summary.get("models") or {}).get(model), (after.summary.get("models") or {}).get(model)
        if was != now:
            notes.append(f"another {model}: {was} before, {now} after")
    return notes + list(_settings_changed(before.summary, after.summary, metrics))


def _settings_changed(one: dict, other: dict, metrics: set[str]) -> Iterable[str]:
    """How the shared metrics were asked and scored, where it differs, a note each (the batch limits change no
    score; a setting per metric is said for the metrics both runs scored whose setting differs)."""
    was, now = one.get("settings") or {}, other.get("settings") or {}
    for key in dict.fromkeys([*was, *now]):
        if key in ("batch_size", "max_batch_tokens") or (key == "questions" and "response_relevancy" not in metrics):
            continue
        a, b = was.get(key), now.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            moved = [f"{metric}: {a.get(metric)} before, {b.get(metric)} after" for metric in sorted(metrics)
                     if a.get(metric) != b.get(metric)]
            if moved:
                yield f"{key} differs for {'; '.join(moved)}"
        elif a != b:
            yield f"{key} differs: {a} before, {b} after"


def _sample_notes(before: RunFiles, after: RunFiles) -> list[str]:
    notes = []
    for run, where in ((before, "before"), (after, "after")):
        if not run.results_read:
            notes.append(f"the {where} run's {RESULTS_FILE} is gone: no sample is paired, only the means are compared")
        elif run.unreadable_lines:
            notes.append(f"{count_of(run.unreadable_lines, 'line')} of the {where} run's {RESULTS_FILE} "
                         f"{'is' if run.unreadable_lines == 1 else 'are'} no result (cut short when a run stopped, or "
                         "damaged): those samples are not paired")
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
