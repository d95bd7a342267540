"""Reading a verdict list back: the schema fixed its shape, this turns it into 0/1 per sentence."""

from __future__ import annotations

from typing import Any

from ..requests import JudgeAnswer


def read_verdicts(answer: JudgeAnswer, key: str, sentences: tuple[str, ...]) -> list[dict[str, Any]]:
    """One evidence row per sentence: the sentence, its verdict (0/1) and the judge's reason."""
    items = answer.data["verdicts"]
    if len(items) != len(sentences):  # the grammar forbids it; a scripted judge might not
        raise ValueError(f"judge gave {len(items)} verdicts for {len(sentences)} sentences")
    rows = []
    for sentence, item in zip(sentences, items):
        if item[key] not in (0, 1):
            raise ValueError(f"verdict {item[key]!r} is not 0 or 1")
        row = {"sentence": sentence, key: int(item[key])}
        if "reason" in item:
            row["reason"] = item["reason"]
        rows.append(row)
    return rows

