"""A judge and an embedder that follow a script: for testing metric math without a model."""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np

from ..requests import JudgeAnswer, JudgeRequest


class ScriptedJudge:
    """Answers each request with `script(request)`: a dict (sent as JSON), a raw string, or a whole
    JudgeAnswer (to script the probabilities of its choices as well)."""

    identity = "scripted"

    def __init__(self, script: Callable[[JudgeRequest], dict[str, Any] | str | JudgeAnswer]):
        self.script = script
        self.batches: list[int] = []

    def prompt_tokens(self, request: JudgeRequest) -> int:
        return sum(len(content.split()) for _, content in request.messages)

    def generate(self, requests: list[JudgeRequest]) -> list[JudgeAnswer]:
        self.batches.append(len(requests))
        return [self._answer(self.script(request)) for request in requests]

    @staticmethod
    def _answer(reply: dict[str, Any] | str | JudgeAnswer) -> JudgeAnswer:
        if isinstance(reply, JudgeAnswer):
            return reply
        return JudgeAnswer.parse(reply if isinstance(reply, str) else json.dumps(reply))


class LookupEmbedder:
    """Embeds each text as the vector a table gives it (texts not in the table get `default`)."""

    identity = "lookup"

    def __init__(self, table: dict[str, list[float]], default: list[float] | None = None):
        self.table, self.default = table, default

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([self.table.get(t, self.default) for t in texts], dtype=np.float32)
