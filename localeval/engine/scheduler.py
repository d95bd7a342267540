"""The judge engine: all requests of a step in, one answer each out, in as few batches as fit.

It removes duplicates, answers what the cache has seen, orders the rest by prompt length (so a
batch pads little), and cuts batches by a token budget as well as a row count. Rows of one
batch may carry different schemas: each row is constrained by its own grammar.
"""

from __future__ import annotations

from ..progress import NoProgress, Progress
from ..requests import JudgeAnswer, JudgeRequest
from .cache import AnswerCache
from .conformance import fitted
from .decode import Admission
from .judge import Judge
from .limits import BatchLimits


class JudgeEngine:
    def __init__(self, judge: Judge, limits: BatchLimits = BatchLimits(), cache: AnswerCache | None = None):
        self.judge, self.limits, self.cache = judge, limits, cache
        self.cache_hits = 0
        self.answered = 0  # fresh answers from the judge (cache hits not counted)
        self.invalid = 0  # of those, answers that did not parse as JSON (the grammar should make it 0)

    def answer(self, requests: list[JudgeRequest], progress: Progress = NoProgress()) -> list[JudgeAnswer]:
        unique = list(dict.fromkeys(requests))
        progress.expect(len(unique))
        answers = self.cache.get_many(self.judge.identity, unique) if self.cache else {}
        self.cache_hits += len(answers)
        progress.advance(len(answers))
        todo = [r for r in unique if r not in answers]
        if getattr(self.judge, "continuous", False):
            answers.update(self._decode_continuously(todo, progress))
        else:
            answers.update(self._decode_in_batches(todo, progress))
        return [fitted(r, answers[r]) for r in requests]

    def _decode_in_batches(self, todo: list[JudgeRequest], progress: Progress) -> dict[JudgeRequest, JudgeAnswer]:
        answers = {}
        for batch in self.batches(todo):
            fresh = dict(zip(batch, self.judge.generate(batch)))
            self._record(fresh)
            answers.update(fresh)
            progress.advance(len(batch))
        return answers

    def _decode_continuously(self, todo: list[JudgeRequest], progress: Progress) -> dict[JudgeRequest, JudgeAnswer]:
        """All requests in one call, shortest prompt first; the judge admits rows as others finish,
        within the same limits, and each answer is cached as soon as it is done."""
        ordered = sorted(todo, key=self.judge.prompt_tokens)
        admission = self._admission()

        def done(index: int, answer: JudgeAnswer) -> None:
            self._record({ordered[index]: answer})
            progress.advance(1)

        return dict(zip(ordered, self.judge.generate(ordered, admission, done))) if ordered else {}

    def _record(self, fresh: dict[JudgeRequest, JudgeAnswer]) -> None:
        if self.cache:
            self.cache.put_many(self.judge.identity, fresh)
        self.answered += len(fresh)
        self.invalid += sum(answer.data is None for answer in fresh.values())

    def _admission(self) -> Admission:
        """The batch limits, as the rule both ways of decoding apply (Admission.fits)."""
        return Admission(rows=self.limits.batch_size, prompt_tokens=self.limits.max_batch_tokens)

    def batches(self, requests: list[JudgeRequest]) -> list[list[JudgeRequest]]:
        """Requests by prompt length, cut where the next row would break a limit."""
        sized = sorted(((self.judge.prompt_tokens(r), r) for r in requests), key=lambda pair: pair[0])
        admission = self._admission()
        batches: list[list[JudgeRequest]] = []
        for prompt_tokens, request in sized:
            # Sorted ascending, so the row being added is the longest: it sets the padded width.
            if batches and admission.fits(len(batches[-1]) + 1, len(batches[-1]) + 1, prompt_tokens):
                batches[-1].append(request)
            else:
                batches.append([request])
        return batches
