"""The settings each metric asks and scores with: the choice measured for that judge, or the user's.

Three settings change how well a judge agrees with people, and which way depends on the judge and
on the metric (docs/judges.md has the measurements):
- reasons: a short reason before each verdict. The best judge checks a sentence against a text
  better without one, yet needs one to decide which sentences a response expresses.
- example: a worked case on another subject after the instructions (metrics/prompts.py). It
  raised the best judge's agreement on the sentence-against-context checks and lowered a
  smaller judge's.
- scoring: the greedy 0/1 verdicts (hard) or the judge's probabilities (soft) (metrics/scoring.py).
So a registered judge carries its measured choice per metric in localeval/registry.json:

    "settings": {"reasons": {"context_recall": false, ...}, "example": {"context_recall": true, ...},
                 "scoring": {"context_recall": "soft", ...}}

and `--reasons auto`, `--example auto`, `--scoring auto` (the defaults) follow it. A judge nobody
has measured, such as a local model directory, gets the best judge's choice (measured_settings):
the best guess there is, and `bench` measures the judge itself (both scorings in one run).

A calibration (`bench --calibrate`, calibration.py) replaces a metric's scoring with a verdict
threshold fitted against people.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from . import models
from .errors import UserError
from .metrics import METRICS, JudgeSettings
from .metrics.scoring import Scoring
from .options import given

AUTO = "auto"
# Each option's values on the command line (the registry stores reasons and example as true/false).
VALUES = {"reasons": ("on", "off"), "example": ("on", "off"), "scoring": ("hard", "soft")}
CHOICES = {option: (AUTO, *values) for option, values in VALUES.items()}
UNSET = {"reasons": False, "example": False, "scoring": "hard"}  # a metric the registry entry does not name

# Which metrics each setting changes: the registry names exactly these.
APPLIES_TO = {
    "reasons": [name for name, metric in METRICS.items() if metric.asks_reasons],
    "example": [name for name, metric in METRICS.items() if metric.has_example],
    "scoring": list(METRICS),  # every metric's verdicts (or flags) carry probabilities
}


def metric_settings(judge: Any = None, reasons: str = AUTO, example: str = AUTO, scoring: str = AUTO,
                    thresholds: Mapping[str, float] | None = None, **common: Any) -> dict[str, JudgeSettings]:
    """JudgeSettings for every metric, by name.

    `judge` is a registered name, a model directory or a Judge object (None: the default judge).
    `reasons`, `example` and `scoring` are "auto" (the judge's measured choice) or one value for
    every metric; `thresholds` are calibrated verdict thresholds per metric, which take the place
    of its scoring; `common` are JudgeSettings fields for every metric (such as `questions`).
    """
    requested = {"reasons": reasons, "example": example, "scoring": scoring}
    for option, choice in requested.items():
        check_choice(option, choice)
    measured = measured_settings(judge)

    def pick(option: str, metric: str) -> Any:
        choice = requested[option]
        if choice == AUTO:
            return measured[option].get(metric, UNSET[option])
        return choice == "on" if option != "scoring" else choice

    thresholds = thresholds or {}
    return {
        name: replace(JudgeSettings(**common), reasons=pick("reasons", name), example=pick("example", name),
                      scoring=Scoring(pick("scoring", name), thresholds.get(name)))
        for name in METRICS
    }


def check_choice(option: str, choice: Any) -> None:
    """Refuse a value that `option` does not take."""
    if choice not in CHOICES[option]:
        raise UserError(f"{given(option, choice)}: choose from {', '.join(CHOICES[option])}")


def measured_settings(judge: Any = None) -> dict[str, dict[str, Any]]:
    """{setting: {metric: choice}}: the registry's choice for a registered judge; for one no one measured, the
    choice of the judge that agrees best with people (models.best_judge, as the weak-judge warning names it:
    a copy of its settings written out here could drift from it, a review)."""
    judge = models.judge_name(judge)
    spec = models.registry().get(judge)
    if spec is None or not spec.settings:
        judge = models.best_judge()
        spec = models.registry()[judge]
    for option, metrics in APPLIES_TO.items():
        chosen = spec.settings.get(option, {})
        unknown = sorted(set(chosen) - set(metrics))
        if unknown:  # a typo in the registry would silently do nothing
            raise ValueError(f"localeval/registry.json: {judge} sets {option} for {unknown}, which it does not apply to")
        if option == "scoring" and not set(chosen.values()) <= set(VALUES["scoring"]):
            raise ValueError(f"localeval/registry.json: {judge} scoring must be one of {VALUES['scoring']}")
    return {option: dict(spec.settings.get(option, {})) for option in APPLIES_TO}


def settings_used(metrics) -> dict[str, dict[str, Any]]:
    """{setting: {metric name: choice}} over the metrics that ran and that the setting changes."""
    used: dict[str, dict[str, Any]] = {
        "reasons": {m.name: m.settings.reasons for m in metrics if m.asks_reasons},
        "example": {m.name: m.settings.example for m in metrics if m.has_example},
        "scoring": {m.name: m.settings.scoring.name for m in metrics if m.uses_scoring},
    }
    thresholds = {m.name: m.settings.scoring.threshold for m in metrics
                  if m.uses_scoring and m.settings.scoring.threshold is not None}
    if thresholds:
        used["thresholds"] = thresholds
    return used
