"""The shortest answer a request's schema admits: what any answer costs at least, however the judge fills
it. A list of one verdict per sentence is long however terse each verdict is, so a prompt that leaves
less room than that is refused before decoding, not cut off at the judge's limit a minute later (a
probe: a 214-sentence legal context, 6,582 prompt tokens, decoded to 8,192 and came back null)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any


# More values than any judge's context holds: an answer of more is refused either way, and writing out a schema's
# minItems of a million (or arrays of arrays) would only fill memory
MOST_VALUES = 50_000


@lru_cache(maxsize=256)
def shortest_answer(schema: str) -> str:
    """The shortest JSON text `schema` (JSON Schema text) admits, written as the grammar has the judge
    write it: no whitespace, only the required keys, a string of one character where one is needed. A lower
    bound at every step, so that a request refused for it could not have fitted: where in doubt, the shorter."""
    return json.dumps(_Shortest().of(json.loads(schema)), ensure_ascii=False, separators=(",", ":"))


class _Shortest:
    """The shortest value of a schema, written out value by value within MOST_VALUES."""

    def __init__(self) -> None:
        self.left = MOST_VALUES

    def of(self, schema: Any) -> Any:
        self.left -= 1
        if not isinstance(schema, dict):  # true: any value
            return 0
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return min(schema["enum"], key=_written_length)
        kind = schema.get("type")
        if isinstance(kind, list):  # one of several types: the shortest of theirs, which alone spends the budget
            start, written = self.left, []
            for one in kind:
                self.left = start
                written.append((self.of({**schema, "type": one}), self.left))
            value, self.left = min(written, key=lambda option: _written_length(option[0]), default=(0, start))
            return value
        if kind == "object":
            required = schema.get("required", [])  # the others may be left out
            return {key: self.of(sub) for key, sub in schema.get("properties", {}).items() if key in required}
        if kind == "array":
            least = min(schema.get("minItems", 0), self.left)
            items = list(schema.get("prefixItems", []))[:least]
            items += [schema.get("items", True)] * (least - len(items))
            return [self.of(item) for item in items if self.left > 0]
        if kind == "string":  # one character: a token may hold many, so a longer least length is not counted
            return "x" * min(schema.get("minLength", 0), 1)
        return {"null": None, "boolean": True}.get(kind, 0)


def _written_length(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
