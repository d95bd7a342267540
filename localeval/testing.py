"""Scores as test assertions, for a team's own pytest suite:

    from localeval import evaluate
    from localeval.testing import assert_scores

    def test_our_rag_answers_from_its_context():
        assert_scores(evaluate("golden.jsonl"), {"answer_supported_precision": 0.8, "context_recall": 0.7})
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .gating import failures
from .results import SUMMARY_FILE


def assert_scores(result: Any, lowest: Mapping[str, float]) -> None:
    """Fail with every metric whose mean is below its lowest acceptable value.

    `result`: what `evaluate()` returned, a run's output folder or its summary.json.
    """
    failed = failures(_summary(result), lowest)
    if failed:
        raise AssertionError("scores below their thresholds:\n  " + "\n  ".join(failed))


def _summary(result: Any) -> Mapping[str, Mapping[str, Any]]:
    if hasattr(result, "summary"):
        return result.summary()
    path = Path(result)
    if path.is_dir():
        path = path / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8"))["metrics"]
