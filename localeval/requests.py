"""What metrics ask of the models, and what comes back.

Metrics never call a model: they state requests, the engine answers them in large batches.
Requests are frozen and hashable so the engine can drop duplicates and key its cache on them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JudgeRequest:
    """One constrained generation: chat messages in, one JSON object matching `schema` out."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    schema: str  # JSON Schema text; equal schemas built by the same code compare equal
    max_new_tokens: int

    @staticmethod
    def build(system: str, user: str, schema: dict, max_new_tokens: int) -> "JudgeRequest":
        return JudgeRequest(
            messages=(("system", system), ("user", user)),
            # Key order is kept: it is the order in which the model writes the fields.
            schema=json.dumps(schema, ensure_ascii=False),
            max_new_tokens=max_new_tokens,
        )

    def chat(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]

    def key(self) -> str:
        """A stable digest of everything that decides the answer (the model is keyed apart)."""
        payload = json.dumps([self.messages, self.schema, self.max_new_tokens], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class JudgeAnswer:
    """The judge's output for one request: parsed JSON, or why there is none."""

    text: str
    data: dict[str, Any] | None = None
    error: str | None = None
    output_tokens: int = 0

    @staticmethod
    def parse(text: str, output_tokens: int = 0) -> "JudgeAnswer":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return JudgeAnswer(text, None, f"judge output is not valid JSON ({exc.msg})", output_tokens)
        if not isinstance(data, dict):
            return JudgeAnswer(text, None, "judge output is not a JSON object", output_tokens)
        return JudgeAnswer(text, data, None, output_tokens)


@dataclass(frozen=True)
class EmbedRequest:
    """Texts to embed; the answer is one unit-normalised vector per text, in order."""

    texts: tuple[str, ...] = field(default_factory=tuple)
