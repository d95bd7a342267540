"""Two runs side by side, for a nightly job asking whether its scores moved (`localeval compare`).

Each score's mean is taken from both summaries, and, over the samples both runs scored, the mean of the
per-sample changes with its 95% interval (Student's t): a change whose interval holds 0 cannot be told from
the noise of these samples. What makes the two runs not like for like (another data file, judge, embedder or
settings, other samples) is said as notes; the scores are compared all the same, since comparing judges or
settings is a reason to compare.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev
from typing import Any

from .estimates import LEVEL
from .gating import ROUNDING
from .errors import count_of
from .results import RESULTS_FILE
from .run_files import RunFiles
from .scoring_rules import WHAT_CHANGED

DROPS_SHOWN = 3  # per score, the samples that fell most
# Pairs below which no direction is named: from 2 to 5 pairs an interval says little (a review); bench names a
# best judge's interval from 10 samples too
MIN_PAIRS = 10


@dataclass(frozen=True)
class ScoreChange:
    name: str
    before: float | None  # the summaries' means
    after: float | None
    paired: int  # samples scored in both runs
    paired_change: float | None  # over those, the mean of after - before
    interval: tuple[float, float] | None  # its 95% t-interval; None below MIN_PAIRS
    drops: list[tuple[str, float, float]]  # (id, before, after) of the samples that fell most, most first
    lost: int  # samples scored before and null after
    gained: int  # samples null before and scored after: in the after mean only (an upgrade scored some that were null)
    scored_before_of_shared: int  # of the samples both runs hold, those scored before: what `lost` is out of

    @property
    def mean_change(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def direction(self) -> str:
        """"higher" or "lower" where the paired change's interval leaves 0 out, else "no clear change";
        "unchanged", "too few pairs" or "no pairs" (docs/output.md lists them for --json's readers)."""
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
                "direction": self.direction, "lost": self.lost, "gained": self.gained,
                "drops": [{"id": sample, "before": was, "after": now} for sample, was, now in self.drops]}


def compared(before: RunFiles, after: RunFiles) -> list[ScoreChange]:
    """Every score both summaries hold, in the before run's order."""
    return [_change(name, before, after) for name in before.metrics if name in after.metrics]


def _change(name: str, before: RunFiles, after: RunFiles) -> ScoreChange:
    both = [(sample, was.get(name), after.scores[sample].get(name)) for sample, was in before.scores.items()
            if sample in after.scores]
    pairs = [(sample, was, now) for sample, was, now in both if was is not None and now is not None]
    differences = [now - was for _, was, now in pairs]
    drops = sorted((pair for pair in pairs if pair[2] < pair[1] - ROUNDING), key=lambda pair: pair[2] - pair[1])
    return ScoreChange(name=name, before=before.metrics[name]["mean"], after=after.metrics[name]["mean"],
                       paired=len(pairs), paired_change=fmean(differences) if differences else None,
                       interval=mean_interval(differences) if len(differences) >= MIN_PAIRS else None,
                       drops=drops[:DROPS_SHOWN], lost=sum(1 for _, was, now in both if was is not None and now is None),
                       gained=sum(1 for _, was, now in both if was is None and now is not None),
                       scored_before_of_shared=sum(1 for _, was, _ in both if was is not None))


def mean_interval(differences: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The t-interval of the mean of paired differences. A percentile bootstrap named a direction from pure noise
    10% of the time at 10 pairs, not 5% (a review's simulation); Student's t holds its level there. The t
    quantile is the normal one corrected for the degrees of freedom (Cornish-Fisher, good to 0.01 from 9)."""
    n, centre = len(differences), fmean(differences)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    freedom = n - 1
    t = (z + (z ** 3 + z) / (4 * freedom) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * freedom ** 2)
         + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * freedom ** 3))
    half = t * stdev(differences) / math.sqrt(n)
    return centre - half, centre + half


def unlike(before: RunFiles, after: RunFiles, changes: list[ScoreChange]) -> list[str]:
    """What makes the two runs' scores not like for like, a note each."""
    return [*_which_runs(before, after), *_data_notes(before, after),
            *scored_otherwise(before, after, [c.name for c in changes]), *_sample_notes(before, after),
            *_null_notes(changes), *_one_run_only(before, after), *_labels_notes(before, after)]


def _labels_notes(before: RunFiles, after: RunFiles) -> list[str]:
    """A run whose means --labels corrected: those are not what compare compares (a labels probe read "unchanged"
    beside a run whose corrected mean had moved, and no word of the labels)."""
    notes = []
    for run, where in ((before, "before"), (after, "after")):
        corrected = [name for name, row in run.summary.get("metrics", {}).items()
                     if isinstance(row, dict) and row.get("corrected")]
        if corrected:
            notes.append(f"the {where} run's means of {', '.join(corrected)} were corrected by its --labels "
                         f"({run.summary.get('labels')}): compare compares the judge's own means (the corrected ones "
                         "are in its summary.json)")
    return notes


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


def scored_otherwise(before: RunFiles, after: RunFiles, shared: list[str]) -> list[str]:
    """How the shared scores were measured otherwise, a note each: another judge, embedder, setting, or code of a
    metric of one's own (compare --same-judge refuses these; other data or samples it allows, as a night's
    answers differ from the last's)."""
    from .metrics import METRICS, metric_of  # here: the metrics bring pysbd, which reading the files does not need

    metrics = {metric_of(name) for name in shared}
    # a metric unknown here (a custom one) may use an embedder
    # a metric unknown here may ask the judge; one of one's own that asks no model (a plain steps) does not
    judged = any(METRICS[m].asks_a_model() if m in METRICS else True for m in metrics)
    models = (["judge"] if judged else []) + (
        ["embedder"] if any(getattr(METRICS.get(m), "uses_embedder", True) for m in metrics) else [])
    notes = []
    for model in models:
        was, now = (before.summary.get("models") or {}).get(model), (after.summary.get("models") or {}).get(model)
        if was != now:
            notes.append(f"another {model}: {_recorded(was)} before, {_recorded(now)} after")
    was, now = before.summary.get("scoring_rules"), after.summary.get("scoring_rules")
    if was != now:  # an upgrade of localeval: the same answers may score otherwise (a probe: a "regression")
        notes.append(f"other scoring rules (localeval's, how it splits sentences and scores answers): {_recorded(was)} "
                     f"before, {_recorded(now)} after; an upgrade needs a new baseline; {WHAT_CHANGED}")
    return notes + list(_settings_changed(before.summary, after.summary, metrics)) + list(
        _metric_code_changed(before.summary, after.summary, metrics))


def _recorded(value: Any) -> Any:
    """A value as a note says it: a summary that holds none (an older one, or a hand's) says "not recorded", not None."""
    return "not recorded" if value is None else value


def _metric_code_changed(one: dict, other: dict, metrics: set[str]) -> Iterable[str]:
    """A metric of one's own (--metrics-from) whose file's bytes differ between the runs."""
    was, now = _metric_files(one), _metric_files(other)
    for metric in sorted(metrics & (set(was) | set(now))):
        if was.get(metric) != now.get(metric):
            yield (f"the code of metric {metric} differs: its code's sha256 {(was.get(metric) or 'unknown')[:12]} "
                   f"before, {(now.get(metric) or 'unknown')[:12]} after")


def _metric_files(summary: dict) -> dict[str, str]:
    """{metric: the sha256 of its --metrics-from code}, from a summary's metrics_from."""
    sources = summary.get("metrics_from") if isinstance(summary.get("metrics_from"), list) else []
    return {name: source.get("sha256") for source in sources if isinstance(source, dict)
            for name in source.get("metrics") or () if isinstance(name, str)}


def _settings_changed(one: dict, other: dict, metrics: set[str]) -> Iterable[str]:
    """How the shared metrics were asked and scored, where it differs, a note each (the batch limits change no
    score; a setting per metric is said for the metrics both runs scored whose setting differs)."""
    was, now = one.get("settings") or {}, other.get("settings") or {}
    for key in dict.fromkeys([*was, *now]):
        if key in ("batch_size", "max_batch_tokens") or (key == "questions" and "response_relevancy" not in metrics):
            continue
        a, b = was.get(key), now.get(key)
        if isinstance(a, dict) or isinstance(b, dict):  # per metric; a side without it has none (thresholds)
            a, b = a if isinstance(a, dict) else {}, b if isinstance(b, dict) else {}
            moved = [f"{metric}: {_recorded(a.get(metric))} before, {_recorded(b.get(metric))} after"
                     for metric in sorted(metrics)
                     if a.get(metric) != b.get(metric)]
            if moved:
                yield f"{key} differs for {'; '.join(moved)}"
        elif a != b:
            yield f"{key} differs: {_recorded(a)} before, {_recorded(b)} after"


def _sample_notes(before: RunFiles, after: RunFiles) -> list[str]:
    notes = [note for run, where in ((before, "before"), (after, "after")) for note in _file_notes(run, where)]
    if before.results_read and after.results_read and set(before.scores) != set(after.scores):
        common = len(set(before.scores) & set(after.scores))
        notes.append(f"the runs share {common} of their samples ({len(before.scores)} before, {len(after.scores)} "
                     "after): the means are of other samples, the paired changes of those shared" if common else
                     "the runs share no sample id: only their means are compared")
    return notes


def _file_notes(run: RunFiles, where: str) -> list[str]:
    """What is amiss in one run's results.jsonl: gone, lines that are no result, ids written twice, a summary
    of another invocation (each independent of the others: a stopped --resume leaves a line cut short too)."""
    if not run.results_read:
        return [f"the {where} run's {RESULTS_FILE} is gone: no sample is paired, only the means are compared"]
    notes = []
    if run.unreadable_lines:
        notes.append(f"{count_of(run.unreadable_lines, 'line')} of the {where} run's {RESULTS_FILE} "
                     f"{'is' if run.unreadable_lines == 1 else 'are'} no result (cut short when a run stopped, damaged, "
                     "or a score outside 0 to 1): those samples are not paired")
    if run.rows > len(run.scores):
        notes.append(f"the {where} run's {RESULTS_FILE} gives {run.rows - len(run.scores)} of its ids twice: the last "
                     "result of each is paired")
    if run.summary.get("results_in_file", run.rows) != run.rows:
        notes.append(f"the {where} run's {RESULTS_FILE} holds {count_of(run.rows, 'result')} where its summary counted "
                     f"{run.summary['results_in_file']}: the summary is of an earlier invocation (a --resume stopped "
                     "since?)")
    elif run.rows > (run.summary.get("samples") or run.rows):
        notes.append(f"the {where} run's {RESULTS_FILE} holds results beyond its summary's {run.summary['samples']} "
                     "samples (a --resume with a smaller --limit): they are paired too")
    return notes


def _null_notes(changes: list[ScoreChange]) -> list[str]:
    """Samples scored in one run and null in the other: in one mean only, so the means moved by them too."""
    lost = [f"{change.name} {change.lost}" for change in changes if change.lost]
    gained = [f"{change.name} {change.gained}" for change in changes if change.gained]
    return ([f"samples scored before and null after (see their null_reason): {', '.join(lost)}"] if lost else []) + (
        [f"samples null before and scored after (in the after mean only): {', '.join(gained)}"] if gained else [])


def _one_run_only(before: RunFiles, after: RunFiles) -> list[str]:
    alone = [f"{name} (before only)" for name in before.metrics if name not in after.metrics]
    alone += [f"{name} (after only)" for name in after.metrics if name not in before.metrics]
    return [f"scored in one run only, not compared: {', '.join(alone)}"] if alone else []
