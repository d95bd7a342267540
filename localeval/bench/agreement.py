"""Agreement between a judge and people, in plain numpy (no scipy).

Every function returns None where the statistic is undefined (no pairs, one class only,
constant input), never NaN: a report must say "undefined", not show a number that is not one.
Scores may contain None or NaN (a metric the judge could not score); those pairs are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Verdicts = Sequence[bool]
Scores = Sequence[float | None]


def accuracy(judge: Verdicts, human: Verdicts) -> float | None:
    judge, human = _bools(judge, human)
    return float(np.mean(judge == human)) if len(human) else None


def balanced_accuracy(judge: Verdicts, human: Verdicts) -> float | None:
    """The mean of the recall on true and on false human verdicts: chance is 0.5 however skewed the labels.

    When the humans used only one class, it is the recall on that class (as scikit-learn does).
    """
    judge, human = _bools(judge, human)
    recalls = [np.mean(judge[human == value] == value) for value in (True, False) if np.any(human == value)]
    return float(np.mean(recalls)) if recalls else None


def f1(judge: Verdicts, human: Verdicts) -> float | None:
    """F1 of the true class; undefined when neither side says true anywhere."""
    judge, human = _bools(judge, human)
    true_pos = np.sum(judge & human)
    wrong = np.sum(judge != human)
    return float(2 * true_pos / (2 * true_pos + wrong)) if true_pos + wrong else None


# Scores equal to this many decimals are ties: a mean of probabilities carries float noise
# (three sentences at 0.1 average to 0.10000000000000002), which must not rank samples apart.
TIE_DECIMALS = 12


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    values = np.round(np.asarray(values, dtype=float), TIE_DECIMALS)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    _, group, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(group, weights=ranks)
    return sums[group] / counts[group]


def untied(values: Sequence[float]) -> int:
    """How many values differ from their commonest one, tied as average_ranks ties them: a ρ rests on
    those alone, and over one or two of them it is a sample or two of luck, however many were compared."""
    if not len(values):
        return 0
    _, counts = np.unique(np.round(np.asarray(values, dtype=float), TIE_DECIMALS), return_counts=True)
    return int(len(values) - counts.max())


def spearman(x: Scores, y: Scores) -> float | None:
    """Spearman's rank correlation: Pearson's of the average ranks. Undefined below two pairs or for a constant side."""
    return _paired_spearman(*paired(x, y))


def _paired_spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 2:
        return None
    rx, ry = average_ranks(x) - (len(x) + 1) / 2, average_ranks(y) - (len(y) + 1) / 2
    spread = math.sqrt(float(np.sum(rx * rx) * np.sum(ry * ry)))
    if spread == 0:
        return None
    return float(np.clip(np.sum(rx * ry) / spread, -1.0, 1.0))


def mean_absolute_error(x: Scores, y: Scores) -> float | None:
    x, y = paired(x, y)
    return float(np.mean(np.abs(x - y))) if len(x) else None


def roc_auc(scores: Scores, positive: Sequence[bool | None]) -> float | None:
    """The chance that a positive outranks a negative (Mann-Whitney U / pairs), a tie counting half."""
    scores, positive = paired(scores, [None if p is None else float(p) for p in positive])
    positive = positive.astype(bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    # Average ranks count a tie between a positive and a negative as half a win.
    rank_sum = float(average_ranks(scores)[positive].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


# Resamplings of the samples behind a ranking's certainty: the share of them a judge stays first in
# moves by about 0.01 from one seed to another at this many, and 1,000 take a second on 30 samples.
RESAMPLES = 1000


def resampled_gap(first: list[tuple[Scores, Scores]], second: list[tuple[Scores, Scores]],
                  resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """How sure "the first judge agrees with people better than the second" is: the samples drawn again
    with replacement, the same draw for both judges (they judged the same samples), and each judge's
    mean Spearman recomputed, an undefined ρ counting 0 as in the ranking. `first`, `second`: per
    metric, (judge scores, human scores), sample by sample. The shares of draws where the second does
    better and where the two tie (judges that differ on a few samples tie in most draws), and the 95%
    interval of the first's lead in mean ρ (a paired bootstrap, percentile interval)."""
    first_arrays, second_arrays = _as_arrays(first), _as_arrays(second)
    gaps = np.array([_mean_rho(first_arrays, draw) - _mean_rho(second_arrays, draw)
                     for draw in _draws(len(first[0][1]), resamples, seed)])
    low, high = np.quantile(gaps, [0.025, 0.975])
    return {"resamples": resamples, "second_better": float(np.mean(gaps < 0)), "tied": float(np.mean(gaps == 0)),
            "gap_interval": [float(low), float(high)]}


def resampled_interval(pairs: list[tuple[Scores, Scores]], resamples: int = RESAMPLES, seed: int = 0) -> list[float]:
    """The 95% interval of a judge's mean Spearman when the samples are drawn again, with the draws
    resampled_gap makes (percentile interval): how good a judge is, said with how sure."""
    arrays = _as_arrays(pairs)
    low, high = np.quantile([_mean_rho(arrays, draw) for draw in _draws(len(pairs[0][1]), resamples, seed)],
                            [0.025, 0.975])
    return [float(low), float(high)]


def _draws(samples: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, samples, size=(resamples, samples))


def _as_arrays(pairs: list[tuple[Scores, Scores]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each metric's scores as floats, NaN where there is none: a draw then indexes them at numpy's speed."""
    def floats(values: Scores) -> np.ndarray:
        return np.array([v if _number(v) else math.nan for v in values], dtype=float)

    return [(floats(judge), floats(human)) for judge, human in pairs]


def _mean_rho(pairs: list[tuple[np.ndarray, np.ndarray]], draw: np.ndarray) -> float:
    rhos = []
    for judge, human in pairs:
        x, y = judge[draw], human[draw]
        both = ~(np.isnan(x) | np.isnan(y))
        rhos.append(_paired_spearman(x[both], y[both]) or 0.0)
    return float(np.mean(rhos))


def paired(x: Scores, y: Scores) -> tuple[np.ndarray, np.ndarray]:
    """The pairs where both values are numbers."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} values against {len(y)}")
    kept = [(a, b) for a, b in zip(x, y) if _number(a) and _number(b)]
    return np.array([a for a, _ in kept], dtype=float), np.array([b for _, b in kept], dtype=float)


def _number(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _bools(judge: Verdicts, human: Verdicts) -> tuple[np.ndarray, np.ndarray]:
    if len(judge) != len(human):
        raise ValueError(f"{len(judge)} judge verdicts against {len(human)} human ones")
    return np.asarray(judge, dtype=bool), np.asarray(human, dtype=bool)
