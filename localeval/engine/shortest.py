"""The shortest answer a request's schema admits: what any answer costs at least, however the judge fills
it. A list of one verdict per sentence is long however terse each verdict is, so a prompt that leaves
less room than that is refused before decoding, not cut off at the judge's limit a minute later (a
probe: a 214-sentence legal context, 6,582 prompt tokens, decoded to 8,192 and came back null)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=256)
def shortest_answer(schema: str) -> str:
    """The shortest JSON text `schema` (JSON Schema text) admits, written as the grammar has the judge
    write it: no whitespace, only the required keys, strings as short as allowed."""
    return json.dumps(_shortest(json.loads(schema)), ensure_ascii=False, separators=(",", ":"))


def _shortest(schema: Any) -> Any:
    if not isinstance(schema, dict):  # true: any value, of which null is among the shortest
        return None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return min(schema["enum"], key=_written_length)
    kind = schema.get("type")
    if isinstance(kind, list):  # one of several types: the shortest of theirs
        return min((_shortest({**schema, "type": one}) for one in kind), key=_written_length, default=None)
    if kind == "object":
        required = schema.get("required", [])  # the others may be left out
        return {key: _shortest(sub) for key, sub in schema.get("properties", {}).items() if key in required}
    if kind == "array":
        items = list(schema.get("prefixItems", []))[: schema.get("minItems", 0)]
        items += [schema.get("items", True)] * (schema.get("minItems", 0) - len(items))
        return [_shortest(item) for item in items]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    return {"integer": 0, "number": 0, "boolean": False}.get(kind)


def _written_length(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
