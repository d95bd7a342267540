"""The settings each metric asks the judge with: the choice measured for that judge, or the user's.

Whether a verdict is better when the judge first writes a reason depends on the judge and on the
metric. Measured against people on the development set (docs/judges.md), the best judge checks
a sentence against a text better without a reason (context_relevance, context_recall,
answer_supported_precision), yet needs one to decide which sentences a response expresses
(context_supported_precision); every judge measured was better without reasons on
answer_supported_precision. So a registered judge carries its measured choice in
models/registry.json:

    "settings": {"reasons": {"context_recall": false, ...}}

and `--reasons auto` (the default) follows it. A judge nobody has measured, such as a local
model directory, gets the best judge's choice, UNMEASURED below: the best guess there is, and
`bench --reasons on` / `off` measures the judge itself.
"""

from __future__ import annotations

from typing import Any

from . import models
from .errors import UserError
from .metrics import METRICS, JudgeSettings

REASONS_CHOICES = ("auto", "on", "off")

# Reasons per metric for a judge without measured settings (that of qwen2.5-coder-1.5b-instruct).
UNMEASURED = {
    "context_relevance": False,
    "context_recall": False,
    "answer_supported_precision": False,
    "context_supported_precision": True,
}


def metric_settings(judge: Any = None, reasons: str = "auto", **common: Any) -> dict[str, JudgeSettings]:
    """JudgeSettings for every metric, by name.

    `judge` is a registered name, a model directory or a Judge object (None: the default judge);
    `reasons` is "auto" (the judge's measured choice), or "on" / "off" for every metric; `common`
    are JudgeSettings fields that apply to every metric (such as `questions`).
    """
    if reasons not in REASONS_CHOICES:
        raise UserError(f"--reasons {reasons}: choose from {', '.join(REASONS_CHOICES)}")
    chosen = measured_reasons(judge) if reasons == "auto" else {}
    return {name: JudgeSettings(reasons=chosen.get(name, reasons != "off"), **common) for name in METRICS}


def measured_reasons(judge: Any = None) -> dict[str, bool]:
    """Reasons on or off per metric: the registry's choice for a registered judge, else UNMEASURED."""
    if judge is None:
        judge = models.default_model("judge")
    spec = models.registry().get(judge) if isinstance(judge, str) else None
    if spec is None or not spec.settings:
        return dict(UNMEASURED)
    chosen = spec.settings.get("reasons", {})
    unknown = sorted(set(chosen) - {name for name, metric in METRICS.items() if metric.asks_reasons})
    if unknown:  # a typo in the registry would silently do nothing
        raise ValueError(f"models/registry.json: {judge} sets reasons for unknown metrics {unknown}")
    return dict(chosen)


def reasons_used(metrics) -> dict[str, bool]:
    """{metric name: reasons on?} for the metrics that ask for reasons: what results and reports record."""
    return {metric.name: metric.settings.reasons for metric in metrics if metric.asks_reasons}
