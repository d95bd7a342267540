"""What is known of a judge's agreement with people, and the warning a run prints when it is weak.

Each registered judge carries its measured agreement in localeval/registry.json (`bench` on the
labeled development set, docs/judges.md):

    "agreement": {"mean_spearman": 0.85, "measured": "docs/judges.md: bench on the dev set"}

A judge below WEAK ranks samples little better than chance, so its scores must not be read as a
quality measure; a run with it says so in one line (evaluate(): a WeakJudgeWarning) and names the
registered judge that agrees best.
"""

from __future__ import annotations

from typing import Any

from . import models
from .errors import LocalevalWarning
from .options import given, option

WEAK = 0.5  # mean Spearman rho below which a judge's scores say little


class WeakJudgeWarning(LocalevalWarning):
    """The judge is known to agree poorly with people (weak_judge_warning)."""


def measured_agreement(judge: Any) -> float | None:
    """The registered judge's mean Spearman rho against people, or None if it was never measured."""
    spec = models.registry().get(judge) if isinstance(judge, str) else None
    return spec.agreement["mean_spearman"] if spec is not None and spec.agreement else None


def weak_judge_warning(judge: Any) -> str | None:
    """One line when the judge is known to agree poorly with people, naming the one to use instead."""
    rho = measured_agreement(judge)
    if rho is None or rho >= WEAK:
        return None
    measured = [name for name, spec in models.registry().items() if spec.kind == "judge" and spec.agreement]
    best = max(measured, key=measured_agreement)
    instead = (f"; for scores you can read, use {given('judge', best)} (rho {measured_agreement(best):.2f})"
               if measured_agreement(best) >= WEAK else "; no registered judge does better: label a few samples "
               f"and pass them as {option('labels')}")
    return (f"the judge {judge} agrees poorly with people (mean Spearman rho {rho:.2f} on labeled data; "
            f"`localeval models` lists each judge's), so read these scores as a check of the pipeline, not of your "
            f"RAG system{instead}")
