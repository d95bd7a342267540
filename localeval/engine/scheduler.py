"""The judge engine: all requests of a step in, one answer each out, in as few batches as fit.

It removes duplicates, answers what the cache has seen, orders the rest by prompt length (so a
batch pads little), and hands them to the judge with the batch limits: a row count and a token
budget, which batching.py applies as rows free up. Rows of one batch may carry different
schemas: each row is constrained by its own grammar.
"""

from __future__ import annotations

import operator

from ..errors import UserError, count_of
from ..progress import NoProgress, Progress
from ..requests import TOO_LONG, JudgeAnswer, JudgeRequest
from .cache import AnswerCache
from .conformance import fitted
from .grammar import schema_error
from .batching import Admission
from .judge import Judge, TransformersJudge
from .scripted import ScriptedJudge
from .limits import BatchLimits
from .shortest import shortest_answer


OWN_JUDGES = (TransformersJudge, ScriptedJudge)  # localeval's: their broken contract is its bug

# Tokens a request's prompt must leave for its answer: a verdict list or a few claims take well under
# this, so a prompt that leaves less is refused rather than cut off mid-answer.
ANSWER_ROOM = 256


class JudgeEngine:
    def __init__(self, judge: Judge, limits: BatchLimits, cache: AnswerCache | None = None):
        if limits.batch_size is None:  # build_pipeline gives the judge's own: no second default here (a review)
            raise ValueError("JudgeEngine needs limits with a batch size (models.batch_size gives the judge's own)")
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
        refused = self._unconstrainable(todo)
        refused.update(self._too_long([r for r in todo if r not in refused]))  # sized by a schema a grammar holds
        progress.advance(len(refused))
        answers.update(refused)
        answers.update(self._decode([r for r in todo if r not in refused], progress))
        return [fitted(r, answers[r]) for r in requests]

    @staticmethod
    def _unconstrainable(requests: list[JudgeRequest]) -> dict[JudgeRequest, JudgeAnswer]:
        """Requests whose schema no grammar can hold the judge to: refused, so their metric is null and says why."""
        errors = {request: schema_error(request.schema) for request in requests}
        return {request: JudgeAnswer.refusal(f"the judge cannot be held to this request's schema: {error}")
                for request, error in errors.items() if error is not None}

    def _too_long(self, requests: list[JudgeRequest]) -> dict[JudgeRequest, JudgeAnswer]:
        """Requests whose prompt leaves no room for an answer within the positions the judge was
        trained on: refused, not decoded. Past them a model writes nonsense, slowly (on a CPU,
        minutes of prefill for one long sample), and its scores would look like any others. (A
        request's max_new_tokens is a loose bound, so the judge stops an answer at the limit.)"""
        limit = self.judge.context_tokens
        if limit is None:
            return {}
        refused = {}
        for request in requests:
            prompt = self.judge.prompt_length(request)
            # the shortest answer its schema allows: one verdict per sentence of a long context needs thousands
            room = max(min(request.max_new_tokens, ANSWER_ROOM), self._least_answer(request))
            if prompt + room > limit:
                refused[request] = JudgeAnswer.refusal(
                    f"{TOO_LONG}: its prompt ({prompt:,} tokens) leaves no room for its answer (at least {room:,}) in "
                    f"the {limit:,} tokens the judge reads (shorten the sample's texts, or use a judge that reads more)")
        return refused

    def _least_answer(self, request: JudgeRequest) -> int:
        """The positions the shortest answer its schema allows takes; 0 where it cannot be told: a judge of one's
        own without answer_length (README's interface lists it as optional), or a schema the estimate cannot read."""
        length = getattr(self.judge, "answer_length", None)
        try:
            return length(shortest_answer(request.schema)) if length is not None else 0
        except (TypeError, ValueError, KeyError, AttributeError):  # an estimate only: the old room stands
            return 0

    def _decode(self, todo: list[JudgeRequest], progress: Progress) -> dict[JudgeRequest, JudgeAnswer]:
        """All requests in one call, shortest prompt first (so a batch pads little); the judge admits
        rows as others finish, within the batch limits, and each answer is cached as soon as it is done."""
        ordered = sorted(todo, key=self.judge.prompt_tokens)
        admission = Admission(rows=self.limits.batch_size, prompt_tokens=self.limits.max_batch_tokens)

        heard: set[int] = set()

        def done(index: int, answer: JudgeAnswer) -> None:
            # checked before it is cached: a judge of one's own that announced every answer as request 0's left
            # another request's answer in the cache under its key (a custom-judge probe)
            index = _request_index(self.judge, index, len(ordered), heard)
            _check_answer(self.judge, answer, index)
            heard.add(index)
            self._record({ordered[index]: answer})
            progress.advance(1)

        if not ordered:
            return {}
        answers = dict(zip(ordered, _returned(self.judge, self.judge.generate(ordered, admission, done), len(ordered))))
        unheard = {request: answers[request] for index, request in enumerate(ordered) if index not in heard}
        if unheard:  # a judge that does not announce its answers still has them cached and counted
            self._record(unheard)
            progress.advance(len(unheard))
        return answers

    def _record(self, fresh: dict[JudgeRequest, JudgeAnswer]) -> None:
        if self.cache:
            self.cache.put_many(self.judge.identity, fresh)
        self.answered += len(fresh)
        self.invalid += sum(answer.data is None for answer in fresh.values())


def _request_index(judge: Judge, given: object, asked: int, heard: set[int]) -> int:
    """The request an on_answer call names: a whole number below `asked`, not announced before."""
    try:
        index = operator.index(given)  # numpy's and torch's integers too; not an answer passed first
    except TypeError:
        raise _broken(judge, f"called on_answer with {type(given).__name__} for the index; call on_answer(index, "
                             "answer)") from None
    if not 0 <= index < asked or index in heard:
        raise _broken(judge, f"called on_answer with index {index}: "
                             f"{'announced already' if index in heard else 'no such request'}; give each of its "
                             f"{asked} requests' index once, as the requests list numbers them")
    return index


def _returned(judge: Judge, answers: object, asked: int) -> list[JudgeAnswer]:
    """generate()'s answers, one JudgeAnswer per request in order: a judge of one's own that returned one too few
    failed in a KeyError that printed a whole prompt, and one that returned JSON text in an AttributeError."""
    if not isinstance(answers, (list, tuple)) or len(answers) != asked:
        got = count_of(len(answers), "answer") if isinstance(answers, (list, tuple)) else \
            "None" if answers is None else type(answers).__name__
        raise _broken(judge, f"returned {got} for {count_of(asked, 'request')}; return a list of one "
                             "localeval.JudgeAnswer per request, in the requests' order")
    for index, answer in enumerate(answers):
        _check_answer(judge, answer, index)
    return list(answers)


def _check_answer(judge: Judge, answer: object, index: int) -> None:
    if not isinstance(answer, JudgeAnswer):
        raise _broken(judge, f"gave {type(answer).__name__} for request {index}; give a localeval.JudgeAnswer "
                             "(JudgeAnswer.parse(text) reads the JSON text a model wrote)")


def _broken(judge: Judge, what: str) -> Exception:
    """A judge of one's own that breaks its contract is the caller's to mend (UserError); localeval's own doing
    so is a bug in localeval, a traceback to report."""
    message = f"judge=: {type(judge).__name__}.generate() {what}"
    return RuntimeError(message) if type(judge) in OWN_JUDGES else UserError(message)  # a subclass is the user's
