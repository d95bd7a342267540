"""How verdicts become a score: the judge's greedy 0/1, its probability, or a calibrated threshold.

Every verdict in the evidence carries the judge's probability that it is 1, where the model
decoded it. A metric's score is a formula over values in [0, 1], one per verdict:
- hard: the greedy verdict, 0 or 1 (what the judge wrote);
- soft: the probability of 1. For a share of verdicts (and response_relevancy's product) the score
  is then the expected value of the hard score if each verdict were drawn from the judge's own
  probabilities, independently; context_precision's average precision, a ratio, is only the same
  formula fed the probabilities (for [0.5, 0.5] it gives 0.5, the expected hard score is 0.625);
- calibrated: 1 when the probability reaches a threshold fitted against people
  (`bench --calibrate`), else 0.
Which is better depends on the judge and the metric, so it is chosen by measurement
(localeval/tuning.py). A verdict without a probability (a scripted judge) counts as its 0/1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import prod

from ..errors import UserError

MODES = ("hard", "soft")


@dataclass(frozen=True)
class Scoring:
    mode: str = "hard"  # "hard" or "soft"; ignored when a threshold is set
    threshold: float | None = None  # calibrated: a verdict is 1 when its probability reaches it

    def __post_init__(self):
        if self.mode not in MODES:
            raise UserError(f"Scoring mode {self.mode!r}: choose from {', '.join(MODES)}")  # a caller's (a review)

    @property
    def name(self) -> str:
        return "calibrated" if self.threshold is not None else self.mode

    def value(self, verdict: int, probability: float | None) -> float:
        """The value one verdict contributes, in [0, 1]."""
        if probability is None:
            return float(verdict)
        if self.threshold is not None:
            return float(probability >= self.threshold)
        return probability if self.mode == "soft" else float(verdict)

    def values(self, verdicts: Iterable) -> list[float]:
        """The value of each verdict (metrics/evidence.py: its 0/1 `verdict` and `probability`)."""
        return [self.value(v.verdict, v.probability) for v in verdicts]

    def share(self, verdicts: list | None) -> float | None:
        """The share of the verdicts that are 1, by this rule; None when there are none."""
        return mean(self.values(verdicts)) if verdicts else None


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def any_of(values: Iterable[float]) -> float:
    """That at least one holds: 1 - prod(1 - v). For 0/1 values it is `any`; for probabilities,
    the chance that one or more verdicts is 1 if they were independent."""
    return 1.0 - prod(1.0 - v for v in values)
