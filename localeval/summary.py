"""A run's scores summed up per metric (mean, interval, nulls and why, the mean corrected by labels), and
the summary as the terminal's table."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable

from .errors import count_of
from .estimates import LEVEL, bootstrap_interval, corrected_mean, mean
from .metrics import metric_of


def summarize(rows: Iterable[dict[str, Any]], metrics: list[str],
              human: dict[str, dict[str, float | None]] | None = None) -> dict[str, dict[str, Any]]:
    """Per metric: mean of the scored samples with its bootstrap interval, how many scored, how many null.

    `human` ({sample id: {metric: human score}}, from `--labels`) adds the mean corrected with
    the labeled samples (estimates.corrected_mean) for every metric with labeled samples.
    """
    rows = list(rows)
    table = {}
    for name in metrics:
        scores = [row.get(name) for row in rows]
        scored = [s for s in scores if is_number(s)]
        interval = bootstrap_interval(scored)
        table[name] = {
            "mean": mean(scored) if scored else None,
            "interval": list(interval) if interval else None,
            "scored": len(scored),
            "null": len(scores) - len(scored),
        }
        reasons = _null_reasons(rows, name)
        if reasons:
            table[name]["null_reasons"] = reasons
        labeled = [(row[name], human[str(row["id"])][name]) for row in rows
                   if human and str(row["id"]) in human and is_number(row.get(name))
                   and is_number(human[str(row["id"])].get(name))]
        if labeled:
            table[name]["corrected"] = corrected_mean(scored, labeled).to_json()
    return table


def _null_reasons(rows: list[dict[str, Any]], name: str) -> dict[str, int]:
    """Why the metric's null scores are null, {reason: samples}, most common first; a sub-score
    (no evidence of its own) is null for its metric's reasons."""
    evidence_key = metric_of(name)
    reasons = Counter(row.get("evidence", {}).get(evidence_key, {}).get("null_reason") for row in rows
                      if not is_number(row.get(name)))
    reasons.pop(None, None)
    return dict(reasons.most_common())


def format_null_reasons(summary: dict[str, dict[str, Any]]) -> str:
    """Why scores are null, for the terminal; empty when every score was given."""
    lines = null_reasons(summary)
    return "null scores, and why:\n" + "\n".join(f"  {line}" for line in lines) if lines else ""


def null_reasons(summary: dict[str, dict[str, Any]], shown: int = 3) -> list[str]:
    """A line per metric and reason a score is null (the `shown` most common of each metric), said
    alike on the terminal and in the report."""
    lines = []
    for name, row in summary.items():
        reasons = list(row.get("null_reasons", {}).items())
        lines += [f"{name}: {count_of(samples, 'sample')}, {reason}" for reason, samples in reasons[:shown]]
        others = sum(samples for _, samples in reasons[shown:])
        if others:
            lines.append(f"{name}: {count_of(others, 'sample')}, other reasons (results.jsonl, evidence)")
    return lines


def is_number(value: Any) -> bool:
    """A score's value, not null (nor NaN, which a row should not hold but a hand-edited file may)."""
    try:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    except OverflowError:  # an integer of hundreds of digits, in a hand-edited file
        return False


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    """The summary as a text table; with the corrected columns when some metric has labeled samples."""
    corrected = any("corrected" in row for row in summary.values())
    level = f"{100 * LEVEL:.0f}% CI"
    header = ["metric", "mean", level, "scored", "null"]
    if corrected:
        header += ["labeled", "bias", "corrected", f"{level} (corrected)"]
    lines = [header]
    for name, row in summary.items():
        cells = [name, fixed(row["mean"]), _interval(row.get("interval")), str(row["scored"]), str(row["null"])]
        if corrected:
            fix = row.get("corrected")
            cells += (["-"] * 4 if fix is None else
                      [str(fix["labeled"]), f"{fix['bias']:+.3f}", fixed(fix["mean"]), _interval(fix["interval"])])
        lines.append(cells)
    return aligned(lines)


def aligned(lines: list[list[str]], left: tuple[int, ...] = (0,)) -> str:
    """Rows of cells as a text table: the `left` columns flush left (names), the others flush right (numbers)."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(width) if i in left else cell.rjust(width)
                               for i, (cell, width) in enumerate(zip(line, widths))).rstrip() for line in lines)


def fixed(value: float | None) -> str:
    """A score to 3 decimals, "-" for none."""
    return "-" if value is None else f"{value:.3f}"


def _interval(interval) -> str:
    return "-" if not interval else f"[{interval[0]:.3f}, {interval[1]:.3f}]"
