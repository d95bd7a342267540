"""context_relevance (seeds 000, 003): the share of context sentences needed to answer the question.

Departure from the seeds, on purpose: the judge gives a verdict on each sentence of the pre-split
context instead of copying the relevant ones out, so no sentence can be altered and the count
cannot drift. One verdict per sentence, rather than a list of the relevant sentence numbers,
because measured against people it agrees far better: picking from a list, judges under-select,
and without a reason first they pick nothing at all (docs/judges.md). The chunk level that seed
003 recommends comes from the same answer: a chunk is relevant when any of its sentences is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..requests import JudgeRequest
from ..samples import Sample
from ..text import split_chunks
from . import prompts, schemas
from .base import JudgedMetric, MetricResult, Step, judge_failure
from .evidence import Verdict
from .scoring import any_of, mean
from .verdicts import read_verdicts

VERDICT = prompts.CONTEXT_RELEVANCE.verdict


class ContextRelevance(JudgedMetric):
    name = "context_relevance"
    requires = ("user_input", "retrieved_contexts")
    description = "share of context sentences needed to answer the question"
    low_means = "the retrieval (chunks off the question; background sentences count against it too, so it runs low)"
    part_descriptions = {"context_relevance_chunks": "share of chunks with a sentence needed to answer the question"}
    verdict_key = VERDICT
    part_names = ("context_relevance_chunks",)  # the chunk level: share of chunks with a relevant sentence
    list_part_names = ("context_relevance_per_chunk",)
    has_example = True
    scores_empty_retrieval_by_rule = True  # no context sentence: 0 (steps)

    def steps(self, sample: Sample, language: str) -> Step:
        chunks = split_chunks(sample.retrieved_contexts, language)
        sentences = tuple(sentence for chunk in chunks for sentence in chunk)
        if not sentences:  # the seed's rule: no context sentences scores 0 (formula)
            return self._result(chunks, [])
        schema = schemas.verdict_list(len(sentences), VERDICT, self.settings)
        system, user = prompts.CONTEXT_RELEVANCE.messages(
            self.settings, question=sample.user_input.strip(), sentences=prompts.numbered_chunks(chunks))
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        return self._result(chunks, read_verdicts(answer, self, sentences))

    def formula(self, verdicts: list[Verdict]) -> float | None:
        return self.settings.scoring.share(verdicts) if verdicts else 0.0

    def parts(self, evidence: dict[str, Any]) -> dict[str, Any]:
        return {"context_relevance_chunks": evidence["chunk_relevance"],
                "context_relevance_per_chunk": evidence["chunk_relevant"]}

    def _result(self, chunks: list[tuple[str, ...]], verdicts: list[Verdict]) -> MetricResult:
        """Each verdict tagged with its chunk, and the chunk-level relevance of seed 003: a chunk is
        relevant when any of its sentences is (under soft scoring, the chance that one is, so
        `chunk_relevant` holds probabilities then). `insufficient_information` is the judge's own
        word: no greedy verdict says relevant. A blank chunk has no relevant sentence: 0, a retrieved slot
        wasted, as context_precision counts it (it was left out of the share, which rose for retrieving it)."""
        chunk_of = [index for index, sentences in enumerate(chunks) for _ in sentences]
        tagged = [replace(verdict, chunk=chunk) for chunk, verdict in zip(chunk_of, verdicts, strict=True)]
        per_chunk = [any_of(self.settings.scoring.values(v for v in tagged if v.chunk == index))
                     for index in range(len(chunks))]
        return self.result(tagged, insufficient_information=not any(v.verdict for v in tagged),
                           chunk_relevant=per_chunk, chunk_relevance=mean(per_chunk) if per_chunk else 0.0)
