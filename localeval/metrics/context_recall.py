"""context_recall (seed 001): the share of reference sentences that the context supports."""

from __future__ import annotations

from ..requests import JudgeRequest
from ..samples import Sample
from ..text import split_sentences
from . import prompts, schemas
from .base import Metric, MetricResult, Step, judge_failure
from .verdicts import none_supported_by_empty_context, read_verdicts


class ContextRecall(Metric):
    name = "context_recall"
    requires = ("user_input", "retrieved_contexts", "reference")
    description = "share of reference sentences attributable to the context"

    def steps(self, sample: Sample, language: str) -> Step:
        sentences = split_sentences(sample.reference, language)
        if not sentences:  # the seed's rule: nothing to attribute is NaN, not 0
            return MetricResult.null("the reference has no sentences")
        empty = none_supported_by_empty_context("attributed", sentences, sample.retrieved_contexts)
        if empty:
            return empty
        schema = schemas.verdict_list(len(sentences), "attributed", self.settings)
        user = prompts.CONTEXT_RECALL.format(
            context=prompts.passages(sample.retrieved_contexts),
            question=sample.user_input.strip(),
            sentences=prompts.numbered(sentences),
            reason=prompts.reason_clause(self.settings.reasons),
        )
        (answer,) = yield [JudgeRequest.build(prompts.SYSTEM, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        rows = read_verdicts(answer, "attributed", sentences)
        return MetricResult(sum(r["attributed"] for r in rows) / len(rows), {"sentences": rows})
