"""One judge's results against the human labels: every agreement number bench reports for it.

Per sentence, the judge's verdicts (read from each metric's evidence) are set beside the human
ones, and so are its probabilities (how well they rank true above false: AUC); per sample, the
judge's score beside the score the same formula gives on the human verdicts, under the run's
scoring and re-scored from the same evidence both hard and soft (metrics/scoring.py), so one run
says which scoring agrees better. Samples the judge could not score (null) are left out and counted.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from ..errors import UserError
from ..metrics import BUILT_IN, METRICS, JudgeSettings
from ..metrics.evidence import Verdict
from ..metrics.response_relevancy import all_noncommittal, noncommittal_probability
from ..metrics.scoring import MODES, Scoring
from . import agreement
from .labels import FORMAT_DOC, RESPONSE_RELEVANCY, SENTENCE_LABELS, LabeledSample
from .worker import JudgeRun

# The metrics whose verdict is "does this text back that one": pooled, they measure how well a
# judge checks support, whichever direction it is asked in.
SUPPORT_METRICS = ("context_recall", "answer_supported_precision", "context_supported_precision")


def compare(labeled: list[LabeledSample], run: JudgeRun, metrics: list[str]) -> dict[str, Any]:
    _check_order(labeled, run)
    verdicts = {m: sentence_verdicts(labeled, run.rows, m) for m in metrics if m in SENTENCE_LABELS}
    per_metric = {}
    for metric in metrics:
        per_metric[metric] = {"scores": score_agreement(labeled, [row[metric] for row in run.rows], metric)}
        if metric in BUILT_IN:  # one of one's own scores its own way: its evidence has no verdicts to re-score
            per_metric[metric]["scorings"] = {
                mode: score_agreement(labeled, rescored(run.rows, metric, Scoring(mode)), metric) for mode in MODES}
        if metric in verdicts:
            per_metric[metric]["sentences"] = sentence_agreement(*verdicts[metric])
            per_metric[metric]["sentences"]["probability_auc"] = agreement.roc_auc(
                *sentence_probabilities(labeled, run.rows, metric))
        if metric == RESPONSE_RELEVANCY:
            per_metric[metric].update(relevancy_agreement(labeled, run.rows))
    pooled = [m for m in SUPPORT_METRICS if m in verdicts]
    pooled_support = sentence_agreement(
        [v for m in pooled for v in verdicts[m][0]], [v for m in pooled for v in verdicts[m][1]]) if pooled else None
    return {
        "summary": _summary(per_metric, pooled_support, run.measures),
        "metrics": per_metric,
        "pooled_support": pooled_support,
        "per_sample": per_sample_scores(labeled, run.rows, metrics),
    }


def _check_order(labeled: list[LabeledSample], run: JudgeRun) -> None:
    ids = [row["id"] for row in run.rows]
    if ids != [item.sample.id for item in labeled]:  # the worker keeps sample order; this guards it
        raise RuntimeError(f"{run.judge}: results are not in the order of the labeled samples")


# --- per sentence --------------------------------------------------------------------------


def rescored(rows: list[dict], metric: str, scoring: Scoring) -> list[float | None]:
    """Each sample's score for `metric` under `scoring`, from the evidence the judge left."""
    scorer = METRICS[metric](JudgeSettings(scoring=scoring))
    return [scorer.score(row["evidence"][metric]) for row in rows]


def judged_in_order(row: dict[str, Any], metric: str) -> list[Verdict]:
    """The judge's typed verdicts for `metric` in a results row, a context metric's chunks in order
    (the labels' order: verdicts that carry a chunk are sorted by it, stably)."""
    verdicts = METRICS[metric]().verdicts(row["evidence"][metric])
    if verdicts and getattr(verdicts[0], "chunk", None) is not None:
        return sorted(verdicts, key=lambda v: v.chunk)
    return verdicts


def sentence_probabilities(labeled: list[LabeledSample], rows: list[dict], metric: str
                           ) -> tuple[list[float], list[bool]]:
    """(judge probability of 1, human verdict) of every sentence whose verdict carries a probability."""
    triples = verdict_probabilities(labeled, rows, metric)
    return [probability for _, probability, _ in triples], [label for _, _, label in triples]


def verdict_probabilities(labeled: list[LabeledSample], rows: list[dict], metric: str
                          ) -> list[tuple[int, float, bool]]:
    """(sample index, judge probability, human label) per verdict, for calibration.

    A sentence metric's verdicts are its sentences; response_relevancy's is the sample's
    noncommittal verdict (response_relevancy.noncommittal_probability). A metric whose human scores
    are derived (context_precision's chunks, faithfulness's claims) has no label per verdict: none.
    """
    if metric != RESPONSE_RELEVANCY and metric not in SENTENCE_LABELS:
        return []
    triples = []
    for index, (item, row) in enumerate(zip(labeled, rows)):
        if row[metric] is None:
            continue
        verdicts = judged_in_order(row, metric)
        if metric == RESPONSE_RELEVANCY:
            probability = noncommittal_probability(verdicts)
            if probability is not None:
                triples.append((index, probability, bool(item.response_noncommittal)))
            continue
        labels = item.sentences[metric]
        if verdicts and all(v.probability is not None for v in verdicts) and len(verdicts) == len(labels):
            triples.extend((index, v.probability, label) for v, label in zip(verdicts, labels))
    return triples


def sentence_verdicts(labeled: list[LabeledSample], rows: list[dict], metric: str) -> tuple[list[bool], list[bool]]:
    """(judge, human) verdicts of every sentence of every sample the judge scored, in one flat list each."""
    judge, human = [], []
    for item, row in zip(labeled, rows):
        if row[metric] is None:  # no score, no verdicts: counted as null in the score agreement
            continue
        if decided_by_rule(item, metric):  # verdicts the judge was not asked for
            continue
        theirs = [bool(v.verdict) for v in judged_in_order(row, metric)]
        ours = item.sentences[metric]
        if len(theirs) != len(ours):
            raise UserError(f"sample {item.sample.id}, {metric}: the judge judged {len(theirs)} sentences but the "
                            f"labels have {len(ours)}; labels must follow pysbd's sentences ({FORMAT_DOC})")
        judge.extend(theirs)
        human.extend(ours)
    return judge, human


def sentence_agreement(judge: list[bool], human: list[bool]) -> dict[str, Any]:
    return {
        "sentences": len(human),
        "human_true": sum(human),
        "judge_true": sum(judge),
        "accuracy": agreement.accuracy(judge, human),
        "balanced_accuracy": agreement.balanced_accuracy(judge, human),
        "f1": agreement.f1(judge, human),
    }


# --- per sample ------------------------------------------------------------------------------


def score_agreement(labeled: list[LabeledSample], judge: list[float | None], metric: str) -> dict[str, Any]:
    judge, human = compared_scores(labeled, judge, metric)
    paired_judge, paired_human = agreement.paired(judge, human)
    return {
        "samples": len(paired_human),
        "human_untied": agreement.untied(paired_human),
        "null": sum(j is None and h is not None for j, h in zip(judge, human)),
        "by_rule": sum(decided_by_rule(item, metric) for item in labeled),
        "spearman": agreement.spearman(judge, human),
        "mae": agreement.mean_absolute_error(judge, human),
        # over the same samples: a judge's null would move people's mean and not its own (a review)
        "judge_mean": _mean(paired_judge),
        "human_mean": _mean(paired_human),
    }


def compared_scores(labeled: list[LabeledSample], judge: list[float | None], metric: str
                    ) -> tuple[list[float | None], list[float | None]]:
    """The judge's scores and the people's, sample by sample, None for the samples left out: those whose
    verdicts a rule set (an empty retrieval: every verdict 0, whoever judges), which would count as
    agreement, and those without a score on either side."""
    by_rule = [decided_by_rule(item, metric) for item in labeled]
    return ([None if rule else score for score, rule in zip(judge, by_rule)],
            [None if rule else item.human_score(metric) for item, rule in zip(labeled, by_rule)])


def decided_by_rule(item: LabeledSample, metric: str) -> bool:
    """Whether the metric scores this sample by a rule, without asking the judge (Metric.decided_by_rule)."""
    return METRICS[metric]().decided_by_rule(item.sample)


def ranking_certainty(labeled: list[LabeledSample], first: JudgeRun, second: JudgeRun, metrics: list[str]
                      ) -> dict[str, Any]:
    """How sure it is that `first` agrees with people better than `second` (agreement.resampled_gap)."""
    return {"next": second.judge, **agreement.resampled_gap(_pairs(labeled, first, metrics),
                                                            _pairs(labeled, second, metrics))}


def mean_spearman_interval(labeled: list[LabeledSample], run: JudgeRun, metrics: list[str]) -> list[float]:
    """The 95% interval of the judge's mean Spearman (agreement.resampled_interval)."""
    return agreement.resampled_interval(_pairs(labeled, run, metrics))


def spearman_interval(labeled: list[LabeledSample], run: JudgeRun, metric: str) -> list[float]:
    """The 95% interval of the judge's Spearman on one metric, over the same resamplings as its mean's."""
    return agreement.resampled_interval(_pairs(labeled, run, [metric]))


def _pairs(labeled: list[LabeledSample], run: JudgeRun, metrics: list[str]) -> list[tuple[list, list]]:
    """Per metric, the judge's scores and people's, as its agreement compares them."""
    return [compared_scores(labeled, [row[metric] for row in run.rows], metric) for metric in metrics]


def relevancy_agreement(labeled: list[LabeledSample], rows: list[dict]) -> dict[str, Any]:
    """AUC of the score against relevant / not relevant, and how often the noncommittal flag matches."""
    scores = [row[RESPONSE_RELEVANCY] for row in rows]
    auc = agreement.roc_auc(scores, [item.response_relevant for item in labeled])
    judge, human = [], []
    for item, row in zip(labeled, rows):
        questions = judged_in_order(row, RESPONSE_RELEVANCY)
        if questions:  # the metric's own rule: noncommittal when every generated question is flagged
            judge.append(all_noncommittal(questions, Scoring("hard")) == 1.0)
            human.append(item.response_noncommittal)
    noncommittal = {
        "samples": len(human),
        "human_flagged": sum(human),
        "judge_flagged": sum(judge),
        "agreement": agreement.accuracy(judge, human),
        "balanced_accuracy": agreement.balanced_accuracy(judge, human),
    }
    return {"auc": auc, "noncommittal": noncommittal}


def per_sample_scores(labeled: list[LabeledSample], rows: list[dict], metrics: list[str]) -> list[dict[str, Any]]:
    """Per sample and metric: the judge's score (under the run's scoring), hard, soft, and the human one;
    the human one None where the agreement figures leave the sample out (compared_scores), so that the
    report's scatter plots show the pairs its ρ rests on."""
    scorings = {m: {mode: rescored(rows, m, Scoring(mode)) for mode in MODES} for m in metrics if m in BUILT_IN}
    human = {m: compared_scores(labeled, [row[m] for row in rows], m)[1] for m in metrics}
    return [
        {"id": item.sample.id,
         **{m: {"judge": row[m], **{mode: scores[i] for mode, scores in scorings.get(m, {}).items()},
                "human": human[m][i]}
            for m in metrics}}
        for i, (item, row) in enumerate(zip(labeled, rows))
    ]


# --- one line per judge ----------------------------------------------------------------------


def mean_spearman(spearmans: list[float | None]) -> float | None:
    """An undefined rho (one side gave every sample the same score, or fewer than two samples were
    scored) ranks nothing, so it counts as 0. Averaging only the defined ones would let a judge that
    is constant on four metrics and right on one outrank a judge that is good on all five. With none
    defined there is no mean (it was 0.000 in a table whose headline said none was defined)."""
    return fmean(s or 0.0 for s in spearmans) if any(s is not None for s in spearmans) else None


def _summary(per_metric: dict, pooled_support: dict | None, measures: dict) -> dict[str, Any]:
    spearmans = [m["scores"]["spearman"] for m in per_metric.values()]
    balanced = [m["sentences"]["balanced_accuracy"] for m in per_metric.values() if "sentences" in m]
    return {
        "mean_spearman": mean_spearman(spearmans),
        **{f"mean_spearman_{mode}": mean_spearman([m["scorings"][mode]["spearman"] for m in per_metric.values()
                                                   if "scorings" in m])
           for mode in MODES},
        "spearman_defined": sum(s is not None for s in spearmans),
        "mean_balanced_accuracy": _mean(balanced),
        "pooled_support_balanced_accuracy": pooled_support and pooled_support["balanced_accuracy"],
        "valid_json_rate": measures.get("valid_json_rate"),
        "samples_per_second": measures.get("samples_per_second"),
    }


def _mean(values) -> float | None:
    numbers = [v for v in values if v is not None]
    return fmean(numbers) if numbers else None
