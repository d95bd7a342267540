"""compare's gates, `--max-drop [SCORE=]DROP`: a score that fell by more than DROP between two runs fails CI.

The fall is measured over the samples both runs scored (the paired change): a mean over other samples moves
with the samples, not the system (a CI probe's gate failed beside rows all "unchanged", its run having lost
its easy samples). Where no sample is paired, the summaries' means are compared. A gate fails too where the
share of the score's samples left null rose by more than DROP (a mean of fewer samples can hold still while
they go null: a review), and where the later run has no mean of it while the earlier had one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .comparison import RunFiles, ScoreChange
from .errors import UserError
from .gating import ROUNDING, shown_apart


def parse_max_drops(texts: Iterable[str], names: list[str]) -> dict[str, float]:
    """{score: the most it may fall} from `--max-drop DROP` (every score of the before run) and
    `--max-drop SCORE=DROP` (that one, in place of DROP)."""
    every: float | None = None
    named: dict[str, float] = {}
    for text in texts:
        name, sep, value = text.rpartition("=")
        name = name.strip()
        if sep and name not in names:
            raise UserError(f"--max-drop {text}: {name!r} is not a score of the before run ({', '.join(names)})")
        if (name in named) if sep else (every is not None):
            raise UserError(f"--max-drop {text}: {name or 'every score'} is given a drop twice; keep one")
        if sep:
            named[name] = _drop(text, value)
        else:
            every = _drop(text, value)
    return {**({} if every is None else dict.fromkeys(names, every)), **named}


def _drop(text: str, value: str) -> float:
    try:
        drop = float(value)
    except ValueError:
        drop = math.nan
    if not math.isfinite(drop):
        raise UserError(f"--max-drop {text}: {value!r} is not a number; write DROP or SCORE=DROP, e.g. "
                        "context_recall=0.05")
    if not 0 <= drop <= 1:
        raise UserError(f"--max-drop {text}: a drop is a fall of a score, from 0 to 1")
    return drop


def gates(before: RunFiles, after: RunFiles, changes: list[ScoreChange], drops: dict[str, float]
          ) -> dict[str, dict[str, Any]]:
    """Per gated score: how far it fell, how far its null share rose, and why it failed (None: it held)."""
    by_name = {change.name: change for change in changes}
    return {name: _gate(before.metrics[name], after.metrics.get(name), by_name.get(name), most)
            for name, most in drops.items()}


def _gate(was: dict, now: dict | None, change: ScoreChange | None, most: float) -> dict[str, Any]:
    fell = _fall(change)
    nulls = [None if row is None else row["null"] / max(1, row["scored"] + row["null"]) for row in (was, now)]
    if now is None or (now["mean"] is None and was["mean"] is not None):
        failed = "no mean after"
    elif fell is not None and fell > most + ROUNDING:
        failed = "fell"
    elif nulls[1] > nulls[0] + most + ROUNDING:
        failed = "more null"
    else:
        failed = None
    return {"max_drop": most, "drop": fell, "paired": change is not None and change.paired > 0,
            "null_share_before": nulls[0], "null_share_after": nulls[1], "failed": failed, "passed": failed is None}


def _fall(change: ScoreChange | None) -> float | None:
    """Over the paired samples where there are any, else mean against mean; None where neither is known."""
    if change is None:
        return None
    if change.paired:
        return -change.paired_change
    return None if change.mean_change is None else -change.mean_change


def gate_said(name: str, gate: dict[str, Any]) -> str:
    """`max-drop: context_recall fell by 0.0504 over 12 paired samples, at most 0.05 allowed: FAILED`."""
    most, fell, failed = gate["max_drop"], gate["drop"], gate["failed"]
    over = " over the paired samples" if gate["paired"] else " (mean against mean: no sample paired)"
    if failed == "no mean after":
        said = "has no mean after, where it had one before"
    elif failed == "more null":
        said = (f"has {gate['null_share_after']:.0%} of its samples null against {gate['null_share_before']:.0%} "
                f"before, more than {most:g} more")
    elif fell is None:
        said = "has no mean in either run"
    elif fell > ROUNDING:
        said = f"fell by {shown_apart(fell, most) if failed else f'{fell:.3f}'}{over}, at most {most:g} allowed"
    else:
        said = f"rose by {-fell:.3f}{over}" if fell < -ROUNDING else "did not move"
    return f"max-drop: {name} {said}: {'FAILED' if failed else 'passed'}"
