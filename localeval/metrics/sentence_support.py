"""The shared shape of context_recall and answer_supported_precision: each sentence of one text
(the reference, or the response) is judged against the retrieved context, and the score is the
share judged 1 (or, under soft scoring, the mean probability of 1: metrics/scoring.py)."""

from __future__ import annotations

from typing import ClassVar

from ..requests import JudgeRequest
from ..samples import Sample
from ..text import split_sentences
from . import prompts, schemas
from .base import JudgedMetric, MetricResult, Step, judge_failure
from .evidence import SentenceVerdict, Verdict
from .verdicts import read_verdicts


class SentencesAgainstContext(JudgedMetric):
    text_field: ClassVar[str]  # the sample field whose sentences are judged
    task: ClassVar[prompts.Task]  # its sample part takes {context}, {question}, {sentences}; names the verdict
    has_example = True
    scores_empty_retrieval_by_rule = True  # none_supported_by_empty_context

    def steps(self, sample: Sample, language: str) -> Step:
        sentences = split_sentences(getattr(sample, self.text_field), language)
        if not sentences:  # nothing to judge is NaN, not 0 (seed 001)
            return MetricResult.null(f"the {self.text_field} has no sentences")
        if self.decided_by_rule(sample):
            return self.result(none_supported_by_empty_context(sentences))
        schema = schemas.verdict_list(len(sentences), self.verdict_key, self.settings)
        system, user = self.task.messages(
            self.settings,
            context=prompts.passages(sample.retrieved_contexts),
            question=(sample.user_input or "").strip(),  # for the tasks that show it (their metric requires it)
            sentences=prompts.numbered(sentences),
        )
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        return self.result(read_verdicts(answer, self, sentences))

    def formula(self, verdicts: list[Verdict]) -> float | None:
        return self.settings.scoring.share(verdicts)


EMPTY_CONTEXT = "the retrieved context is empty"


def none_supported_by_empty_context(texts: tuple[str, ...], kind: type[Verdict] = SentenceVerdict) -> list[Verdict]:
    """Nothing can be supported by a retrieval that found nothing: every verdict 0, without asking the judge."""
    return [kind(text, 0, EMPTY_CONTEXT) for text in texts]
