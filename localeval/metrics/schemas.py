"""JSON Schemas that fit one sample, so the judge can only answer in the shape the score needs.

Every string is bounded so the JSON always closes within the token budget, every list has
exactly the length the sample dictates, and sentence numbers come only from those that exist.
Field order is generation order: the reason comes before the verdict it justifies.
"""

from __future__ import annotations

from typing import Any

from .base import JudgeSettings

BINARY = {"enum": [0, 1]}


def _reason(settings: JudgeSettings) -> dict[str, Any]:
    return {"reason": {"type": "string", "maxLength": settings.reason_chars}} if settings.reasons else {}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    # closed: with no other key possible, the grammar forces each object's end (engine/grammar.py)
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _exact_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}


def verdict_list(n: int, verdict: str, settings: JudgeSettings, item: str = "sentence") -> dict[str, Any]:
    """`{"verdicts": [{<item>: 1, "reason": "...", <verdict>: 0|1}, ...]}`, one per numbered item
    (a sentence, a passage, a claim)."""
    items = [_object({item: {"const": i}, **_reason(settings), verdict: BINARY}) for i in range(1, n + 1)]
    return _object({"verdicts": _exact_list(items)})


def string_list(key: str, most: int, chars: int) -> dict[str, Any]:
    """`{<key>: ["...", ...]}`: one to `most` strings of at most `chars` characters."""
    strings = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": chars},
               "minItems": 1, "maxItems": most}
    return _object({key: strings})


def question_list(settings: JudgeSettings) -> dict[str, Any]:
    question = _object({"question": {"type": "string", "maxLength": settings.question_chars}, "noncommittal": BINARY})
    return _object({"questions": _exact_list([question] * settings.questions)})


def max_output_tokens(schema: dict[str, Any]) -> int:
    """An upper bound on the tokens of any JSON the schema admits.

    A token carries at least one byte, so bytes bound tokens. Strings are counted at 6 bytes
    per character (the longest escape, \\u001F; a UTF-8 character takes at most 4); the grammar
    allows no whitespace.
    """
    return _max_bytes(schema) + 1  # + the end-of-sequence token


def _max_bytes(schema: dict[str, Any]) -> int:
    if "const" in schema:
        return len(repr(schema["const"]))
    if "enum" in schema:
        return max(len(repr(v)) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if "maxLength" not in schema:  # an unbounded string could run past any budget, and the JSON never close
            raise ValueError(f"every string of a judge's schema needs a maxLength; this one has none: {schema}")
        return 2 + 6 * schema["maxLength"]
    if kind == "object":
        return 2 + sum(len(key) + 4 + _max_bytes(sub) for key, sub in schema["properties"].items())
    if kind == "array":
        if "prefixItems" not in schema and "maxItems" not in schema:
            raise ValueError(f"every array of a judge's schema needs a maxItems (or prefixItems); this one has none: {schema}")
        items = schema.get("prefixItems") or [schema["items"]] * schema["maxItems"]
        return 2 + sum(_max_bytes(item) + 1 for item in items)
    raise ValueError(f"max_output_tokens bounds objects, arrays, strings with a maxLength, const and enum; not "
                     f"{schema} (give the tokens yourself, or write the value as an enum)")
