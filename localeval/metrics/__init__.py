"""The metrics localeval scores, by name."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import UserError
from .base import JudgeSettings, Metric, MetricResult
from .context_recall import ContextRecall
from .context_relevance import ContextRelevance
from .response_relevancy import ResponseRelevancy
from .supported_precision import AnswerSupportedPrecision, ContextSupportedPrecision

METRICS: dict[str, type[Metric]] = {
    m.name: m
    for m in (ContextRelevance, ContextRecall, ResponseRelevancy, AnswerSupportedPrecision, ContextSupportedPrecision)
}
DEFAULT_METRICS = tuple(METRICS)


def resolve_metrics(names, settings: JudgeSettings | Mapping[str, JudgeSettings] | None = None) -> list[Metric]:
    """Metric objects for `names` (names or Metric instances; None means all), in the order given.

    `settings` is one JudgeSettings for every metric, or one per metric name (localeval/tuning.py).
    """
    if names is None:
        names = DEFAULT_METRICS
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    metrics = []
    for item in names:
        if isinstance(item, Metric):
            metrics.append(item)
        elif item in METRICS:
            metrics.append(METRICS[item](settings.get(item) if isinstance(settings, Mapping) else settings))
        else:
            raise UserError(f"unknown metric '{item}'; choose from: {', '.join(METRICS)}")
    if not metrics:
        raise UserError("no metrics chosen")
    return metrics


__all__ = ["METRICS", "DEFAULT_METRICS", "JudgeSettings", "Metric", "MetricResult", "resolve_metrics"]
