"""The shared shape of context_recall and answer_supported_precision: each sentence of one text
(the reference, or the response) is judged against the retrieved context, and the score is the
share judged 1 (or, under soft scoring, the mean probability of 1: metrics/scoring.py)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..requests import JudgeRequest
from ..samples import Sample
from ..text import split_sentences
from . import prompts, schemas
from .base import Metric, MetricResult, Step, judge_failure
from .verdicts import read_verdicts


class SentencesAgainstContext(Metric):
    text_field: ClassVar[str]  # the sample field whose sentences are judged
    task: ClassVar[prompts.Task]  # its sample part takes {context}, {question}, {sentences}; names the verdict
    has_example = True

    def steps(self, sample: Sample, language: str) -> Step:
        sentences = split_sentences(getattr(sample, self.text_field), language)
        if not sentences:  # nothing to judge is NaN, not 0 (seed 001)
            return MetricResult.null(f"the {self.text_field} has no sentences")
        verdict = self.verdict_key
        if not any(chunk.strip() for chunk in sample.retrieved_contexts):
            return self.result(none_supported_by_empty_context(verdict, sentences))
        schema = schemas.verdict_list(len(sentences), verdict, self.settings)
        system, user = self.task.messages(
            self.settings,
            context=prompts.passages(sample.retrieved_contexts),
            question=sample.user_input.strip(),
            sentences=prompts.numbered(sentences),
        )
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        return self.result({"sentences": read_verdicts(answer, verdict, sentences)})

    def score(self, evidence: dict[str, Any]) -> float | None:
        return self.settings.scoring.share(evidence.get("sentences"), self.verdict_key)


def none_supported_by_empty_context(key: str, sentences: tuple[str, ...]) -> dict[str, Any]:
    """Nothing can be supported by a retrieval that found nothing: every verdict 0, without asking the judge."""
    return {"sentences": [{"sentence": s, key: 0, "reason": "the retrieved context is empty"} for s in sentences]}
