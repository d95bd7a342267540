"""Scores as test assertions, for a team's own pytest suite:

    import localeval  # cheap; `from localeval import evaluate` up here would import torch as pytest collects
    from localeval.testing import assert_scores

    def test_our_rag_answers_from_its_context():
        result = localeval.evaluate("golden.jsonl", judge="qwen2.5-coder-1.5b-instruct")
        assert_scores(result, {"answer_supported_precision": 0.8, "context_recall": 0.7})

and `ScriptedJudge`, a judge that answers from a script, to test a metric of one's own without a model.
"""

from __future__ import annotations

import json
import numbers
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .engine.scripted import ScriptedJudge
from .errors import LocalevalWarning
from .gating import SCORE_RANGE, a_score, caveats, failures, outcomes
from .results import RESULTS_FILE, SUMMARY_FILE, read_results

__all__ = ["assert_scores", "GateWarning", "ScriptedJudge"]


class GateWarning(LocalevalWarning):
    """A gate passed on less than it seems (gating.caveats): a corrected mean whose 95% interval also holds
    values that fail it, one that rests on one label, or the mean of a few of the samples where the others
    could not be scored."""


def assert_scores(result: Any, lowest: Mapping[str, float]) -> None:
    """Fail with every metric whose mean is below its lowest acceptable value.

    `result`: what `evaluate()` returned (or its `summary()`), a run's output folder or its summary.json.
    `lowest`: {metric: lowest acceptable mean}, at least one.
    """
    __tracebackhide__ = True  # pytest shows the test's line, not this function's body
    summary, rows = _summary_and_rows(result)  # rows: read only where a gate fails
    if not isinstance(lowest, Mapping) or not lowest:  # a gate without thresholds could never fail
        raise ValueError(f"assert_scores: give the thresholds as a dict of at least one metric and its lowest mean, "
                         f"such as {{'context_recall': 0.7}}; got {_kind(lowest)}")
    for metric, value in lowest.items():  # a mistake in the test itself, not a score below: ValueError
        if metric not in summary:
            raise ValueError(f"assert_scores: {metric} is not a metric of this result ({', '.join(summary)})")
        if not a_score(value):
            why = SCORE_RANGE if isinstance(value, numbers.Real) else f"expected a number, got {_kind(value)}"
            raise ValueError(f"assert_scores: {metric}={value!r}: {why}")
    weak = caveats(summary, lowest)
    if failed_gates := [metric for metric, outcome in outcomes(summary, lowest).items() if not outcome["passed"]]:
        # the metrics on the first line: pytest's short summary shows that line alone, the same for every gate
        parts = {f"{'gate' if len(failed_gates) == 1 else 'gates'} failed: {', '.join(failed_gates)}":
                 failures(summary, lowest, rows()), "what the outcome rests on": weak}
        raise AssertionError("\n".join(f"{heading}:\n  " + "\n  ".join(lines)
                                       for heading, lines in parts.items() if lines))
    for line in weak:  # a pass on little: a warning in pytest's summary, as run says it on stderr
        warnings.warn(f"assert_scores: {line}", GateWarning, stacklevel=2)


def _summary_and_rows(result: Any) -> tuple[Mapping[str, Mapping[str, Any]], Callable[[], list[dict[str, Any]]]]:
    """The metrics part of a summary, from any of the forms assert_scores takes, and how to read the results'
    lines where they are at hand (what evaluate() returned, or a run's folder): a failure names the lowest
    samples."""
    if hasattr(result, "summary"):
        return result.summary(), result.rows if callable(getattr(result, "rows", None)) else list
    if isinstance(result, Mapping):  # summary() itself, or a summary.json read by the caller
        return _metrics_of(result.get("metrics", result), "the mapping given"), list
    if not isinstance(result, (str, os.PathLike)):
        raise ValueError(f"assert_scores: cannot read scores from {_kind(result)}; {ACCEPTED}")
    path = Path(result).expanduser()
    if not path.exists():  # "not a localeval summary" sent a user looking inside a file that is not there
        raise ValueError(f"assert_scores: {path}: no such file or folder; {ACCEPTED}")
    if path.is_dir():
        if not (path / SUMMARY_FILE).is_file():
            raise ValueError(f"assert_scores: {path} holds no {SUMMARY_FILE} (a run that has not finished?); {ACCEPTED}")
        path = path / SUMMARY_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ValueError(f"assert_scores: {path} is not a localeval summary; {ACCEPTED}") from None
    summary = _metrics_of(document.get("metrics") if isinstance(document, dict) else None, str(path))
    return summary, lambda: _summarized_rows(path.parent / RESULTS_FILE, document)


def _summarized_rows(path: Path, document: dict[str, Any]) -> list[dict[str, Any]]:
    """The results the summary was made of: none where the file holds other lines than it counted or than the run
    scored (a resume appending, one with a smaller --limit, a summary copied beside another run's results), which
    would name samples it never scored."""
    try:
        rows = read_results(path)
    except OSError:  # the lines only name the lowest samples: the summary gates without them
        return []
    return rows if len(rows) == document.get("results_in_file") == document.get("samples") else []


ACCEPTED = f"give what evaluate() returned, a run's output folder or its {SUMMARY_FILE}"


def _metrics_of(candidate: Any, source: str) -> Mapping[str, Mapping[str, Any]]:
    """A summary's metrics: one mapping per metric (run.json also has a "metrics" key: a list of names)."""
    if isinstance(candidate, Mapping) and candidate and all(isinstance(row, Mapping) for row in candidate.values()):
        return candidate
    raise ValueError(f"assert_scores: {source} is not a localeval summary; {ACCEPTED}")


def _kind(value: Any) -> str:
    if isinstance(value, Mapping) and not value:
        return "an empty dict"
    if value is None or isinstance(value, str):
        return "None" if value is None else "a string"
    return f"a value of type {type(value).__name__}"
