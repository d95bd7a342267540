"""Reading a verdict list back: the schema fixed its shape (the grammar wrote it so, and the engine
checked it: engine/conformance.py), this turns it into one typed verdict per judged text."""

from __future__ import annotations

from ..requests import JudgeAnswer
from .base import Metric
from .evidence import Verdict


def read_verdicts(answer: JudgeAnswer, metric: Metric, texts: tuple[str, ...]) -> list[Verdict]:
    """One verdict per judged text (a sentence, a chunk, a claim: the metric's verdict_type), with the
    judge's reason where it gave one and its probability that the verdict is 1 where the model's
    choice was recorded."""
    entries = answer.data["verdicts"]  # one per text, each verdict 0 or 1
    probabilities = recorded_probabilities(answer, metric.verdict_key, len(entries))
    return [metric.verdict_type(text, int(entry[metric.verdict_key]), entry.get("reason"), probability)
            for text, entry, probability in zip(texts, entries, probabilities, strict=True)]


def recorded_probabilities(answer: JudgeAnswer, key: str, count: int) -> list[float | None]:
    """The judge's probability of 1 at each of the answer's `count` values of `key`, in order.

    None for each when the model's choices were not recorded (a scripted judge) or do not line up
    one to one with the values (a tokenizer that writes a value and the punctuation after it as one
    token leaves no choice point of its own): those values then count as their 0/1 under every
    scoring, rather than risk pairing a probability with another verdict.
    """
    found = answer.probabilities(key)
    return list(found) if found is not None and len(found) == count else [None] * count
