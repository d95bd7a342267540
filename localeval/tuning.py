"""The settings each metric asks the judge with: the choice measured for that judge, or the user's.

Two settings change how well a judge agrees with people, and which way depends on the judge and
on the metric (docs/judges.md has the measurements):
- reasons: a short reason before each verdict. The best judge checks a sentence against a text
  better without one, yet needs one to decide which sentences a response expresses.
- example: a worked case on another subject after the instructions (metrics/prompts.py). It
  raised the best judge's agreement on the sentence-against-context checks and lowered a
  smaller judge's.
So a registered judge carries its measured choice per metric in models/registry.json:

    "settings": {"reasons": {"context_recall": false, ...}, "example": {"context_recall": true, ...}}

and `--reasons auto` / `--example auto` (the defaults) follow it. A judge nobody has measured,
such as a local model directory, gets the best judge's choice, UNMEASURED below: the best guess
there is, and `bench` with `on` / `off` measures the judge itself.
"""

from __future__ import annotations

from typing import Any

from . import models
from .errors import UserError
from .metrics import METRICS, JudgeSettings

CHOICES = ("auto", "on", "off")

# Which metrics each setting changes: the registry names exactly these.
APPLIES_TO = {
    "reasons": [name for name, metric in METRICS.items() if metric.asks_reasons],
    "example": [name for name, metric in METRICS.items() if metric.has_example],
}

# For a judge without measured settings: those of qwen2.5-coder-1.5b-instruct.
UNMEASURED = {
    "reasons": {"context_relevance": False, "context_recall": False, "answer_supported_precision": False,
                "context_supported_precision": True},
    "example": {"context_relevance": False, "context_recall": True, "answer_supported_precision": True},
}


def metric_settings(judge: Any = None, reasons: str = "auto", example: str = "auto",
                    **common: Any) -> dict[str, JudgeSettings]:
    """JudgeSettings for every metric, by name.

    `judge` is a registered name, a model directory or a Judge object (None: the default judge).
    `reasons` and `example` are "auto" (the judge's measured choice), or "on" / "off" for every
    metric; `common` are JudgeSettings fields that apply to every metric (such as `questions`).
    """
    for option, choice in (("reasons", reasons), ("example", example)):
        if choice not in CHOICES:
            raise UserError(f"--{option} {choice}: choose from {', '.join(CHOICES)}")
    measured = measured_settings(judge)

    def pick(option: str, choice: str, metric: str) -> bool:
        return measured[option].get(metric, False) if choice == "auto" else choice == "on"

    return {name: JudgeSettings(reasons=pick("reasons", reasons, name), example=pick("example", example, name),
                                **common)
            for name in METRICS}


def measured_settings(judge: Any = None) -> dict[str, dict[str, bool]]:
    """{setting: {metric: on?}}: the registry's choice for a registered judge, else UNMEASURED."""
    if judge is None:
        judge = models.default_model("judge")
    spec = models.registry().get(judge) if isinstance(judge, str) else None
    if spec is None or not spec.settings:
        return {option: dict(chosen) for option, chosen in UNMEASURED.items()}
    for option, metrics in APPLIES_TO.items():
        unknown = sorted(set(spec.settings.get(option, {})) - set(metrics))
        if unknown:  # a typo in the registry would silently do nothing
            raise ValueError(f"models/registry.json: {judge} sets {option} for {unknown}, which it does not apply to")
    return {option: dict(spec.settings.get(option, {})) for option in APPLIES_TO}


def settings_used(metrics) -> dict[str, dict[str, bool]]:
    """{setting: {metric name: on?}} over the metrics that ran and that the setting changes."""
    return {
        "reasons": {m.name: m.settings.reasons for m in metrics if m.asks_reasons},
        "example": {m.name: m.settings.example for m in metrics if m.has_example},
    }
