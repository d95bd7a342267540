"""Reading a verdict list back: the schema fixed its shape (the grammar wrote it so, and the engine
checked it: engine/conformance.py), this turns it into 0/1 per sentence."""

from __future__ import annotations

from typing import Any

from ..requests import JudgeAnswer


def read_verdicts(answer: JudgeAnswer, key: str, texts: tuple[str, ...], item: str = "sentence") -> list[dict[str, Any]]:
    """One evidence row per judged text (a sentence; a chunk or a claim, named by `item`): the text,
    its verdict (0/1), the judge's reason where it gave one, and its probability that the verdict is
    1 where the model's choice was recorded."""
    entries = answer.data["verdicts"]  # one per text, each verdict 0 or 1
    probabilities = recorded_probabilities(answer, key, len(entries))
    rows = []
    for index, (text, entry) in enumerate(zip(texts, entries, strict=True)):
        row = {item: text, key: int(entry[key])}
        if "reason" in entry:
            row["reason"] = entry["reason"]
        if probabilities[index] is not None:
            row["probability"] = probabilities[index]
        rows.append(row)
    return rows


def recorded_probabilities(answer: JudgeAnswer, key: str, count: int) -> list[float | None]:
    """The judge's probability of 1 at each of the answer's `count` values of `key`, in order.

    None for each when the model's choices were not recorded (a scripted judge) or do not line up
    one to one with the values (a tokenizer that writes a value and the punctuation after it as one
    token leaves no choice point of its own): those values then count as their 0/1 under every
    scoring, rather than risk pairing a probability with another verdict.
    """
    found = answer.probabilities(key)
    return list(found) if found is not None and len(found) == count else [None] * count
