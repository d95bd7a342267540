"""The metrics localeval scores, by name."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping

from ..errors import UserError
from .base import JudgeSettings, Metric, MetricResult
from .context_precision import ContextPrecision
from .context_recall import ContextRecall
from .context_relevance import ContextRelevance
from .faithfulness import Faithfulness
from .response_relevancy import ResponseRelevancy
from .supported_precision import AnswerSupportedPrecision, ContextSupportedPrecision

METRICS: dict[str, type[Metric]] = {
    m.name: m
    for m in (ContextRelevance, ContextRecall, ResponseRelevancy, AnswerSupportedPrecision, ContextSupportedPrecision,
              ContextPrecision, Faithfulness)
}
# The seeds' five, scored when no metric is named; the peers' headline metrics (ragas's
# context_precision and faithfulness, by the same names) are asked for by name.
DEFAULT_METRICS = ("context_relevance", "context_recall", "response_relevancy", "answer_supported_precision",
                   "context_supported_precision")
# ragas metric names localeval has no metric of that name for -> the one that asks the closest
# question, for "did you mean". Each comment: what ragas judges / what localeval does.
RAGAS_EQUIVALENTS = {
    "answer_relevancy": "response_relevancy",  # the same: questions generated from the response vs the input
    "context_utilization": "context_supported_precision",  # chunks used by the response / sentences it expresses
}


def resolve_metrics(names, settings: JudgeSettings | Mapping[str, JudgeSettings] | None = None,
                    by_name_only: bool = False) -> list[Metric]:
    """Metric objects for `names` (names or Metric instances), in the order given; None means the
    default five, "all" every metric.

    `settings` is one JudgeSettings for every metric, or one per metric name (localeval/tuning.py).
    `by_name_only`: Metric instances refused (evaluate(): an instance carries settings of its own, so the
    judge's measured settings, scoring= and calibration= never reached it, and it scored otherwise than
    its name did, silently).
    """
    if names is None:
        names = DEFAULT_METRICS
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    # a dict (thresholds, say: {"faithfulness": 0.8}) ran its keys, the values unread
    if isinstance(names, (Metric, Mapping)) or not isinstance(names, Iterable):
        raise UserError(f"metrics: give metric names, comma-separated or as a list; got {type(names).__name__}")
    names = list(names)
    if names == ["all"]:
        names = list(METRICS)
    elif "all" in names:
        raise UserError("metric 'all' already means every metric: give it alone")
    metrics = []
    for item in names:
        if isinstance(item, Metric):
            if by_name_only:
                raise UserError(f"metrics=: give metrics by name ({item.name!r}), not as objects: an object carries "
                                "settings of its own, so the judge's measured settings, scoring= and calibration= "
                                f"would not apply to it; settings={{{item.name!r}: JudgeSettings(...)}} sets how a "
                                "metric is asked")
            metrics.append(item)
        elif item in METRICS:
            metrics.append(METRICS[item](settings.get(item) if isinstance(settings, Mapping) else settings))
        else:
            raise UserError(f"unknown metric '{item}';{did_you_mean(str(item))} choose from: {', '.join(METRICS)}, or all")
    if not metrics:
        raise UserError("no metrics chosen")
    repeated = [name for name, count in Counter(m.name for m in metrics).items() if count > 1]
    if repeated:  # a run's record would name it twice, and a --resume naming it once would not match
        raise UserError(f"metric '{repeated[0]}' is given twice; name each metric once")
    return metrics


def result_names(metrics: list[Metric]) -> list[str]:
    """The scores a run reports, in order: each metric's, then its scalar sub-scores' (summary rows)."""
    return [name for metric in metrics for name in (metric.name, *metric.part_names)]


def metric_of(result_name: str) -> str:
    """The metric whose evidence a score comes from: a sub-score's metric, else the name itself."""
    return next((name for name, metric in METRICS.items() if result_name in metric.part_names), result_name)


def did_you_mean(name: str) -> str:
    """' did you mean ...?' for a ragas name or a typo of one (or of a metric); empty when nothing is close."""
    close = difflib.get_close_matches(name, [*METRICS, *RAGAS_EQUIVALENTS], n=1, cutoff=0.75)
    if not close:
        return ""
    if close[0] in RAGAS_EQUIVALENTS:
        metric = RAGAS_EQUIVALENTS[close[0]]
        return f" did you mean '{metric}', the {METRICS[metric].description}, nearest to ragas's {close[0]}?"
    return f" did you mean '{close[0]}'?"


__all__ = ["METRICS", "DEFAULT_METRICS", "JudgeSettings", "Metric", "MetricResult", "resolve_metrics", "result_names"]
