"""A judge and an embedder that follow a script: for testing metric math without a model."""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np

from ..requests import JudgeAnswer, JudgeRequest
from .batching import Admission, decode_continuously


class ScriptedJudge:
    """Answers each request with `script(request)`: a dict (sent as JSON), a raw string, or a whole
    JudgeAnswer (to script the probabilities of its choices as well).

    Its requests go through the same continuous batching as a model's (batching.py), each row
    finishing at its first step, so `admitted` records what the batch limits let in together."""

    identity = "scripted"
    # Not kept in the user's answer cache (cache=True): every script is "scripted", so a later script
    # was answered with an earlier one's answers. An AnswerCache passed in is used, as asked.
    cacheable = False

    def __init__(self, script: Callable[[JudgeRequest], dict[str, Any] | str | JudgeAnswer],
                 context_tokens: int | None = None):
        self.script = script
        self.context_tokens = context_tokens  # most prompt + answer tokens (words here), as a model's limit
        self.admitted: list[list[JudgeRequest]] = []  # the requests of each admission, in order

    @property
    def batches(self) -> list[int]:
        """How many requests each admission took."""
        return [len(requests) for requests in self.admitted]

    def prompt_tokens(self, request: JudgeRequest) -> int:
        return sum(len(content.split()) for _, content in request.messages)

    def prompt_length(self, request: JudgeRequest) -> int:
        return self.prompt_tokens(request)  # no shared prefix: every word counts

    def answer_length(self, text: str) -> int:
        return len(text.split())  # words, as its prompts are counted

    def generate(self, requests: list[JudgeRequest], admission: Admission | None = None,
                 on_answer: Callable[[int, JudgeAnswer], None] | None = None) -> list[JudgeAnswer]:
        admission = admission or Admission.all_at_once(len(requests))
        answers: list[JudgeAnswer | None] = [None] * len(requests)

        def finished(index: int, answer: JudgeAnswer) -> None:
            answers[index] = answer
            if on_answer is not None:
                on_answer(index, answer)

        rows = _ScriptedRows(self, requests)
        decode_continuously([self.prompt_tokens(r) for r in requests], admission, rows, finished)
        return answers


class _ScriptedRows:
    """A batch whose rows each finish at their first step with the script's answer (a batching.Rows)."""

    def __init__(self, judge: ScriptedJudge, requests: list[JudgeRequest]):
        self.judge, self.requests = judge, requests
        self.rows: list[int] = []

    def decoding(self) -> int:
        return len(self.rows)

    def admit(self, requests: list[int]) -> None:
        self.judge.admitted.append([self.requests[i] for i in requests])
        self.rows += requests

    def step(self, on_done: Callable[[int, JudgeAnswer], None]) -> None:
        for index in self.rows:
            on_done(index, _as_answer(self.judge.script(self.requests[index])))
        self.rows = []


def _as_answer(reply: dict[str, Any] | str | JudgeAnswer) -> JudgeAnswer:
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
