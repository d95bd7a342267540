"""compare's gates, `--max-drop [SCORE=]DROP`: a score that fell by more than DROP between two runs fails CI.

A gate reads two falls and keeps the larger: over the samples both runs scored (the paired change), and mean
against mean. On the same samples they are one number. On others, a mean can fall with the samples, not the
system (a CI probe: tonight kept last night's hard samples), or a few pairs can hold still while the mean
collapses (a review: 1 sample of 100 shared); a gate for CI errs towards failing, and the notes and the
paired column say which it was. It also fails where the share of the shared samples left null rose by more
than DROP (a mean of fewer samples can hold still while they go null), and where the later run has no mean
of a score the earlier had.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from .comparison import ScoreChange
from .errors import UserError
from .gating import ROUNDING, shown_apart
from .run_files import RunFiles


@dataclass(frozen=True)
class Gate:
    max_drop: float
    before: float | None  # the means
    after: float | None
    scored_after: bool  # the later run has the score at all
    drop: float | None  # the larger fall of the two (negative: it rose); None where neither can be taken
    paired_drop: float | None
    mean_drop: float | None
    null_rise: float | None  # of the shared samples scored before, the share null after; None where none is shared

    @property
    def failed(self) -> str | None:
        """Why it failed: "missing after", "no mean after", "fell", "more null"; None where it held."""
        if not self.scored_after:
            return "missing after"
        if self.after is None and self.before is not None:
            return "no mean after"
        if self.drop is not None and self.drop > self.max_drop + ROUNDING:
            return "fell"
        if self.null_rise is not None and self.null_rise > self.max_drop + ROUNDING:
            return "more null"
        return None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "failed": self.failed, "passed": self.failed is None}


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


def gates(before: RunFiles, changes: list[ScoreChange], drops: dict[str, float]) -> dict[str, Gate]:
    by_name = {change.name: change for change in changes}
    return {name: _gate(before.metrics[name]["mean"], by_name.get(name), most) for name, most in drops.items()}


def _gate(before: float | None, change: ScoreChange | None, most: float) -> Gate:
    if change is None:  # a score of the earlier run the later one lacks
        return Gate(most, before, None, False, None, None, None, None)
    paired = -change.paired_change if change.paired else None
    mean = None if change.mean_change is None else -change.mean_change
    falls = [fall for fall in (paired, mean) if fall is not None]
    null_rise = change.lost / change.scored_before_of_shared if change.scored_before_of_shared else None
    return Gate(most, change.before, change.after, True, max(falls) if falls else None, paired, mean, null_rise)


def gate_said(name: str, gate: Gate) -> str:
    """`max-drop: context_recall fell by 0.0504 over the paired samples, at most 0.05 allowed: FAILED`."""
    return f"max-drop: {name} {_what_happened(gate)}: {'FAILED' if gate.failed else 'passed'}"


def _what_happened(gate: Gate) -> str:
    allowed = f"at most {gate.max_drop:g} allowed"
    if gate.failed == "missing after":
        return "is not among the later run's scores"
    if gate.failed == "no mean after":
        return "has no mean after, where it had one before"
    if gate.failed == "more null":
        return (f"lost {gate.null_rise:.1%} of its shared samples to null (scored before, null after), "
                f"{allowed}")
    if gate.drop is None:
        return "has no mean before" if gate.before is None else "has nothing to compare"
    paired = gate.paired_drop is not None and gate.paired_drop >= gate.drop - ROUNDING  # the same, on the same samples
    which = "over the paired samples" if paired else "mean against mean"
    if abs(gate.drop) <= ROUNDING:
        return "did not move"
    bound = gate.max_drop if gate.drop > 0 else 0.0  # the decimals that show a fall on its side of DROP
    moved = f"{abs(gate.drop):.3f}" if abs(abs(gate.drop) - bound) <= ROUNDING else shown_apart(abs(gate.drop), bound)
    return f"{'fell' if gate.drop > 0 else 'rose'} by {moved} {which}, {allowed}"
