"""Gates on scores for CI: `run --fail-under METRIC=VALUE` and `localeval.testing.assert_scores`.

A gate reads a metric's mean from the summary; where labels were given (`--labels`), the mean
corrected for the judge's bias, which is the better estimate of what people would say. A metric
that no sample could score fails its gate: a build must not pass on nothing.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import UserError, for_terminal, shortened


def parse_gates(texts: Iterable[str], metrics: Iterable[str]) -> dict[str, float]:
    """{metric: lowest acceptable mean} from METRIC=VALUE texts, every metric among the run's."""
    chosen, gates = list(metrics), {}
    for text in texts:
        metric, sep, value = text.partition("=")
        metric = metric.strip()
        if not sep or not metric:
            raise UserError(f"--fail-under {text}: write METRIC=VALUE, e.g. context_recall=0.7")
        if metric not in chosen:
            raise UserError(f"--fail-under {text}: {_not_scored(metric, chosen)}")
        if metric in gates:
            raise UserError(f"--fail-under {text}: {metric} is gated twice; keep one")
        gates[metric] = _lowest_score(text, value)
    return gates


def _not_scored(name: str, chosen: list[str]) -> str:
    """Why a gate's name has no score in this run, and what would give it one."""
    from .metrics import METRICS, did_you_mean, metric_of  # here: localeval.testing needs gating without pysbd

    scores = ", ".join(chosen)
    listed = next((metric for metric, cls in METRICS.items() if name in cls.list_part_names), None)
    if listed is not None:
        return f"{name} is a list, a number per chunk, not a score a gate can compare; gate on {listed}"
    if metric_of(name) in METRICS:
        return f"{name} is not among this run's scores ({scores}); add {metric_of(name)} to --metrics to gate on it"
    return f"{name} is no metric's score;{did_you_mean(name, for_gates=True)} this run's scores: {scores}"


def _lowest_score(text: str, value: str) -> float:
    try:
        lowest = float(value)
    except ValueError:
        raise UserError(f"--fail-under {text}: {value!r} is not a number{_comma_hint(value)}") from None
    if not a_score(lowest):
        raise UserError(f"--fail-under {text}: {SCORE_RANGE}")
    return lowest


def _comma_hint(value: str) -> str:
    """What a comma in a gate's value likely meant: several gates in one, or a decimal comma."""
    if "," in value and "=" in value:
        return " (one gate per --fail-under: repeat the option for each metric)"
    if re.fullmatch(r"\s*\d*,\d+\s*", value):
        return f" (write a decimal point: {value.strip().replace(',', '.')})"
    return ""


SCORE_RANGE = "a score lies between 0 and 1"
# A mean that misses its gate only by float rounding passes: three samples of 0.7 average to
# 0.6999999999999998, which failed a gate at 0.7 while the table showed 0.700.
ROUNDING = 1e-9


def a_score(value: Any) -> bool:
    """Whether `value` is a score: a gate's lowest, or a score read back from a run's files. Every metric and
    sub-score lies in [0, 1] (a negative mean cosine is scored 0): 70 or nan would be a gate that always fails,
    -0.5 one that never does."""
    try:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1
    except OverflowError:  # an integer of hundreds of digits, in a hand-edited file
        return False


def gated_value(row: Mapping[str, Any]) -> tuple[float | None, str]:
    """The value a gate compares, and what it is called: the corrected mean where it rests on enough
    labels to have an interval (two or more), or on every sample; else the judge's own mean. One label
    says too little of the judge's bias: a judge's 0.000 passed a gate at 0.9 on one sample's label."""
    corrected = row.get("corrected")
    if corrected is not None and (corrected["interval"] is not None or corrected["labeled"] == corrected["samples"]):
        return corrected["mean"], "corrected mean"
    return row.get("mean"), "mean"


def corrected_but_not_gated(summary: Mapping[str, Mapping[str, Any]], gates: Iterable[str]) -> list[str]:
    """The gated metrics with a corrected mean too few labels stand behind, so the gate read the judge's."""
    return [metric for metric in gates if metric in summary and summary[metric].get("corrected") is not None
            and gated_value(summary[metric])[1] == "mean"]


def outcomes(summary: Mapping[str, Mapping[str, Any]], gates: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Per gate, what it compared and whether it passed: summary.json's "gates", for a CI step that
    reads the JSON rather than the exit status and stderr."""
    found = {}
    for metric, lowest in gates.items():
        row = summary.get(metric, {})
        value, called = gated_value(row) if row else (None, "mean")
        interval = row["corrected"]["interval"] if called == "corrected mean" else None
        found[metric] = {"at_least": lowest, "compared": called, "value": value, "interval": interval,
                         "passed": value is not None and bool(value >= lowest - ROUNDING),
                         "undecided": _both_sides(interval, lowest),
                         # how many samples the value rests on: a mean of the few scored passes as well
                         "scored": row.get("scored"), "null": row.get("null")}
    return found


def caveats(summary: Mapping[str, Mapping[str, Any]], gates: Mapping[str, float]) -> list[str]:
    """What the gates' outcomes rest on, where it is less than it seems, a line each: said by run on
    stderr, by the report, and by assert_scores (warned on a pass, listed with a failure)."""
    one_label = [f"{metric}: its corrected mean rests on 1 label, too few to correct the judge's; the judge's mean "
                 "is compared" for metric in corrected_but_not_gated(summary, gates)]
    return [*one_label, *uncorrected(summary, gates), *partly_scored(summary, gates), *undecided(summary, gates)]


def uncorrected(summary: Mapping[str, Mapping[str, Any]], gates: Iterable[str]) -> list[str]:
    """Where labels corrected some metric's mean (--labels), the gated metrics none of them corrects (a
    sub-score, or labeled samples that give it no score): one label was said, none passed in silence."""
    if not any("corrected" in row for row in summary.values()):
        return []
    return [f"{metric}: no label corrects its mean (sub-scores are not labeled; or the labels leave it out, or no "
            "labeled sample gives it a score); the judge's mean is compared" for metric in gates if metric in summary
            and "corrected" not in summary[metric]]


def undecided(summary: Mapping[str, Mapping[str, Any]], gates: Mapping[str, float]) -> list[str]:
    """One line per gate on a corrected mean whose interval holds values on both sides of the gate: with
    3 labels a corrected mean of 0.5 in [0.0, 1.0] passed a gate at 0.5, and nothing said that the labels
    could not tell. The outcome stands (it compares the best estimate); the line says how little it rests on."""
    lines = []
    for metric, outcome in outcomes(summary, gates).items():
        if not outcome["undecided"]:
            continue
        value, lowest, (low, high) = outcome["value"], outcome["at_least"], outcome["interval"]
        mean = f"{value:.3f} passed" if outcome["passed"] else f"{shown_apart(value, lowest)} failed"
        interval = f"{shown_apart(low, lowest)} to {high:.3f}, from {summary[metric]['corrected']['labeled']} labels"
        lines.append(f"{metric}: its corrected mean {mean} {_as_given(lowest)}, but its 95% interval ({interval}) "
                     "holds values that pass it and values that fail it: more labels narrow it")
    return lines


def _both_sides(interval: list[float] | None, lowest: float) -> bool | None:
    """Whether a corrected mean's interval holds values that pass the gate and values that fail it; None
    where there is no such interval (a judge's own mean, or every sample labeled), so nothing to tell."""
    if interval is None:
        return None
    return bool(interval[0] < lowest - ROUNDING <= interval[1])  # as `passed` compares; JSON takes no numpy bool


def partly_scored(summary: Mapping[str, Mapping[str, Any]], gates: Iterable[str]) -> list[str]:
    """One line per gated metric that some samples could not score, and why: its gate compares the mean
    of the others, so a build where answers went empty may pass on what is left."""
    lines = []
    for metric in gates:
        row = summary.get(metric, {})
        if row.get("null") and row.get("scored"):
            total = row["scored"] + row["null"]
            lines.append(f"{metric}: its {gated_value(row)[1]} rests on {row['scored']} of {total} samples; "
                         f"{row['null']} could not be scored{_why_null(row)}")
    return lines


def _why_null(row: Mapping[str, Any]) -> str:
    """The reasons samples were left null, commonest first, in brackets; empty where none is known."""
    why = ", ".join(row.get("null_reasons", {}))
    return f" ({why})" if why else ""


def failures(summary: Mapping[str, Mapping[str, Any]], gates: Mapping[str, float],
             rows: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """One line per gate the summary does not pass (outcomes decides which); empty when all pass. `rows`, the
    results' lines where they are at hand, name the samples that scored lowest."""
    rows, failed = list(rows), []
    for metric, outcome in outcomes(summary, gates).items():
        lowest, value = outcome["at_least"], outcome["value"]
        if outcome["passed"]:
            continue
        if metric not in summary:
            failed.append(f"{metric}: not scored in this result")
        elif value is None:
            failed.append(f"{metric}: no sample could be scored{_why_null(summary[metric])}; "
                          f"needs at least {_as_given(lowest)}")
        elif math.isnan(value):  # only a summary built by hand has one: never below, never passing
            failed.append(f"{metric}: {outcome['compared']} is not a number; needs at least {_as_given(lowest)}")
        else:
            failed.append(f"{metric}: {outcome['compared']} {shown_apart(value, lowest)} is below {_as_given(lowest)}"
                          f"{lowest_scored(rows, metric, outcome['compared'] == 'corrected mean')}")
    return failed


LOWEST_SHOWN = 3  # samples a failed gate names


def lowest_scored(rows: list[Mapping[str, Any]], metric: str, corrected: bool = False) -> str:
    """'; lowest: q-refunds 0.000, q-7 0.250, q-2 0.333 (of 40 scored)', the samples that pulled a failed gate's
    mean down, in the judge's scores (`corrected`: the gate compared a corrected mean, so say whose): a failure
    named the metric alone, and its user searched the rows for them (a pytest probe). Empty without rows."""
    # by score alone, ties in the rows' order (an id sorted as text put sample 10 before sample 2)
    scored = sorted(((row[metric], row.get("id")) for row in rows if a_score(row.get(metric))),
                    key=lambda pair: pair[0])
    if not scored:
        return ""
    named = ", ".join(f"{for_terminal(shortened(str(sample), 40))} {score:.3f}"
                      for score, sample in scored[:LOWEST_SHOWN])
    whose = "the judge's " if corrected else ""
    if len(scored) <= LOWEST_SHOWN:
        return f"; {whose}scores: {named}"
    last = scored[LOWEST_SHOWN - 1][0]
    tied = sum(score == last for score, _ in scored[LOWEST_SHOWN:])  # as low as the last named, and not named
    more = f", and {tied} more at {last:.3f}" if tied else ""
    return f"; {whose}lowest: {named}{more} (of {len(scored)} scored)"


def _as_given(lowest: float) -> str:
    """The gate's value as the user wrote it (0.6388889, 0.7, 1), not cut to 6 digits: cut, the mean
    shown beside it could read as above it."""
    if hasattr(lowest, "dtype"):  # numpy's float32 0.7 is 0.699999988079071 as a Python float; as itself, 0.7
        return str(lowest).removesuffix(".0")
    return repr(float(lowest)).removesuffix(".0")  # float(): a Fraction gate reads as a number too


def shown_apart(value: float, bound: float) -> str:
    """`value` to 3 decimals, or to as many more as show it on its side of `bound` (1/7 is 0.1429 against 0.143)."""
    for decimals in range(3, 18):
        shown = f"{value:.{decimals}f}"
        if float(shown) != bound and (float(shown) < bound) == (value < bound):
            return shown
    return repr(value)
