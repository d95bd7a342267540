"""Reading a verdict list back: the schema fixed its shape, this turns it into 0/1 per sentence."""

from __future__ import annotations

from typing import Any

from ..requests import JudgeAnswer


def read_verdicts(answer: JudgeAnswer, key: str, sentences: tuple[str, ...]) -> list[dict[str, Any]]:
    """One evidence row per sentence: the sentence, its verdict (0/1), the judge's reason where it
    gave one, and its probability that the verdict is 1 where the model's choice was recorded."""
    items = answer.data["verdicts"]
    if len(items) != len(sentences):  # the grammar forbids it; a scripted judge might not
        raise ValueError(f"judge gave {len(items)} verdicts for {len(sentences)} sentences")
    probabilities = answer.probabilities(key)
    if probabilities is not None and len(probabilities) != len(items):
        raise ValueError(f"{len(probabilities)} recorded choices of '{key}' for {len(items)} verdicts")
    rows = []
    for index, (sentence, item) in enumerate(zip(sentences, items)):
        if item[key] not in (0, 1):
            raise ValueError(f"verdict {item[key]!r} is not 0 or 1")
        row = {"sentence": sentence, key: int(item[key])}
        if "reason" in item:
            row["reason"] = item["reason"]
        if probabilities is not None:
            row["probability"] = probabilities[index]
        rows.append(row)
    return rows
