"""The judge's evidence, typed: one class per kind of thing a judge gives a verdict on.

A metric builds these rows, scores them, and writes them to results.jsonl under the keys results
have always had; the report and bench read them back through the same class (`Metric.verdicts`), so
the keys of a row are named here and nowhere else. Only the verdict's own key differs by metric
("relevant", "supported", ...): the metric names it (Metric.verdict_key) and passes it in.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from .scoring import Scoring


@dataclass(frozen=True)
class Verdict:
    """A judged text and the judge's greedy 0/1 verdict on it."""

    text: str
    verdict: int
    reason: str | None = None  # the judge's reason, written before the verdict, where it was asked for one
    probability: float | None = None  # the judge's probability that the verdict is 1, where the model's choice was recorded
    text_key: ClassVar[str]  # the JSON key of `text`
    located_by: ClassVar[str | None] = None  # the field that says where the text sits, written first

    def value(self, scoring: Scoring) -> float:
        """What this verdict contributes to a score under `scoring`, in [0, 1]."""
        return scoring.value(self.verdict, self.probability)

    def to_json(self, verdict_key: str) -> dict[str, Any]:
        """The results row: where the text sits, the text, the verdict under its metric's key, then the rest;
        fields without a value are left out."""
        values = asdict(self)
        where = values.pop(self.located_by) if self.located_by else None
        out = {} if where is None else {self.located_by: where}
        out[self.text_key] = values.pop("text")
        out[verdict_key] = values.pop("verdict")
        out.update((key, value) for key, value in values.items() if value is not None)
        return out

    @classmethod
    def from_json(cls, row: dict[str, Any], verdict_key: str) -> "Verdict":
        known = {f.name for f in fields(cls)} - {"text", "verdict"}
        return cls(text=row[cls.text_key], verdict=int(row[verdict_key]),
                   **{key: value for key, value in row.items() if key in known})


@dataclass(frozen=True)
class SentenceVerdict(Verdict):
    """A pysbd sentence (of the context, the reference or the response) and its verdict."""

    chunk: int | None = None  # for a context sentence: the 0-based index of the retrieved chunk it is from
    text_key = "sentence"
    located_by = "chunk"


@dataclass(frozen=True)
class ChunkVerdict(Verdict):
    """A retrieved chunk and its verdict (context_precision: was it useful?)."""

    rank: int = field(default=0, kw_only=True)  # 0-based: the retriever's order
    text_key = "chunk"
    located_by = "rank"


@dataclass(frozen=True)
class ClaimVerdict(Verdict):
    """A claim the judge listed from the response, and whether the context supports it."""

    text_key = "claim"


@dataclass(frozen=True)
class GeneratedQuestion(Verdict):
    """A question the judge wrote that the response answers; its verdict is the noncommittal flag."""

    similarity: float = field(default=0.0, kw_only=True)  # cosine similarity to the user input
    text_key = "question"
