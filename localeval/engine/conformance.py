"""An answer is scored only if it fits the schema it was asked with.

The grammar makes a real judge's answers fit by construction; a scripted judge, a grammar
backend's bug or a stale cache entry might not. Checking every answer here, once, in the engine,
lets a metric read its answer as the schema says it is: an answer that does not fit becomes a
judge failure with the schema's complaint, and an error a metric raises while scoring is a bug in
the metric, never mistaken for a judge's bad answer.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..requests import JudgeAnswer, JudgeRequest


def fitted(request: JudgeRequest, answer: JudgeAnswer) -> JudgeAnswer:
    """`answer` as it is when it fits `request.schema`; else without data, saying why."""
    if answer.data is None:
        return answer
    error = best_match(_validator(request.schema).iter_errors(answer.data))
    if error is None:
        return answer
    where = "/".join(str(part) for part in error.absolute_path) or "the answer"
    return replace(answer, data=None, error=f"does not fit its schema at {where}: {error.message}")


@lru_cache(maxsize=512)  # a metric asks with few distinct schemas (one per item count)
def _validator(schema: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema))
