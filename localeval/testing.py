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

from .gating import SCORE_RANGE, a_score, failures
from .results import SUMMARY_FILE


def assert_scores(result: Any, lowest: Mapping[str, float]) -> None:
    """Fail with every metric whose mean is below its lowest acceptable value.

    `result`: what `evaluate()` returned, a run's output folder or its summary.json.
    """
    summary = _summary(result)
    for metric, value in lowest.items():  # a mistake in the test itself, not a score below: ValueError
        if metric not in summary:
            raise ValueError(f"assert_scores: {metric} is not a metric of this result ({', '.join(summary)})")
        if not a_score(value):
            raise ValueError(f"assert_scores: {metric}={value!r}: {SCORE_RANGE}")
    failed = failures(summary, lowest)
    if failed:
        raise AssertionError("scores below their thresholds:\n  " + "\n  ".join(failed))


def _summary(result: Any) -> Mapping[str, Mapping[str, Any]]:
    if hasattr(result, "summary"):
        return result.summary()
    path = Path(result)
    if path.is_dir():
        path = path / SUMMARY_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))["metrics"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"assert_scores: {path} is not a localeval summary; give what evaluate() returned, "
                         f"a run's output folder or its {SUMMARY_FILE}") from None
