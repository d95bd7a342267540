"""What metrics ask of the models, and what comes back.

Metrics never call a model: they state requests, the engine answers them in large batches.
Requests are frozen and hashable so the engine can drop duplicates and key its cache on them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .errors import shortened


@dataclass(frozen=True)
class JudgeRequest:
    """One constrained generation: chat messages in, one JSON object matching `schema` out."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    schema: str  # JSON Schema text; equal schemas built by the same code compare equal
    max_new_tokens: int

    @staticmethod
    def build(system: str, user: str, schema: dict, max_new_tokens: int) -> "JudgeRequest":
        # an answer is read as an object: a schema of another value ({"enum": [0, 1]}) was decoded, then every
        # answer null as "not a JSON object" (a metric of one's own)
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ValueError('a judge request\'s schema describes a JSON object: {"type": "object", "properties": '
                             f'{{...}}}}, whose keys the answer fills; got {shortened(repr(schema), 80)}')
        return JudgeRequest(
            messages=(("system", system), ("user", user)),
            # Key order is kept: it is the order in which the model writes the fields.
            schema=json.dumps(schema, ensure_ascii=False),
            max_new_tokens=max_new_tokens,
        )

    def key(self) -> str:
        """A stable digest of everything that decides the answer (the model is keyed apart)."""
        payload = json.dumps([self.messages, self.schema, self.max_new_tokens], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def chat(messages) -> list[dict[str, str]]:
    """(role, content) pairs as a chat template takes them."""
    return [{"role": role, "content": content} for role, content in messages]


@dataclass(frozen=True)
class Choice:
    """A value the grammar left the judge to choose (a 0/1 verdict, a flag), and how sure it was.

    `key` is the JSON key whose value was chosen; `probabilities` maps each value the grammar
    allowed, as JSON text ("0", "1"), to the model's probability of it, renormalised over the
    allowed values. The greedy answer took the most probable one.
    """

    key: str
    probabilities: dict[str, float]

    def probability(self, value: str) -> float:
        return self.probabilities.get(value, 0.0)


# how a request or an answer that the judge's context cannot hold is said, as a null's reason of its own
TOO_LONG = "too long for the judge"


@dataclass(frozen=True)
class JudgeAnswer:
    """The judge's output for one request: parsed JSON, or why there is none."""

    text: str
    data: dict[str, Any] | None = None
    error: str | None = None
    output_tokens: int = 0
    choices: tuple[Choice, ...] = ()  # in the order the values appear in `text`; empty if unknown
    refused: bool = False  # never decoded: `error` says why (the request does not fit the judge)

    @staticmethod
    def refusal(reason: str) -> "JudgeAnswer":
        return JudgeAnswer("", None, reason, refused=True)

    @staticmethod
    def parse(text: str, output_tokens: int = 0, choices: tuple[Choice, ...] = ()) -> "JudgeAnswer":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return JudgeAnswer(text, None, f"judge output is not valid JSON ({exc.msg})", output_tokens, choices)
        if not isinstance(data, dict):
            return JudgeAnswer(text, None, "judge output is not a JSON object", output_tokens, choices)
        return JudgeAnswer(text, data, None, output_tokens, choices)

    def probabilities(self, key: str, value: str = "1") -> list[float] | None:
        """The probability of `value` at each choice of `key`, in order; None if none was recorded
        (a scripted judge, or an answer that was not decoded by a model)."""
        found = [choice.probability(value) for choice in self.choices if choice.key == key]
        return found or None


@dataclass(frozen=True)
class EmbedRequest:
    """Texts to embed; the answer is one unit-normalised vector per text, in order."""

    texts: tuple[str, ...] = field(default_factory=tuple)
