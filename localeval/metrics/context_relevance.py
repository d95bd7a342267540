"""context_relevance (seeds 000, 003): the share of context sentences needed to answer the question.

Departure from the seeds, on purpose: the judge picks sentences by number from the pre-split
context instead of copying them out, so no sentence can be altered and the count cannot drift.
The chunk level that seed 003 recommends comes from the same answer: a chunk is relevant when
any of its sentences is.
"""

from __future__ import annotations

from ..requests import JudgeRequest
from ..samples import Sample
from ..text import split_chunks
from . import prompts, schemas
from .base import Metric, MetricResult, Step, judge_failure


class ContextRelevance(Metric):
    name = "context_relevance"
    requires = ("user_input", "retrieved_contexts")
    description = "share of context sentences needed to answer the question"

    def steps(self, sample: Sample, language: str) -> Step:
        chunks = split_chunks(sample.retrieved_contexts, language)
        total = sum(map(len, chunks))
        if total == 0:  # the seed's rule: no context sentences scores 0
            return MetricResult(0.0, self._evidence(chunks, set(), None))
        schema = schemas.sentence_selection(total, self.settings)
        system, user = prompts.CONTEXT_RELEVANCE.messages(
            self.settings, question=sample.user_input.strip(), sentences=prompts.numbered_chunks(chunks))
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        selected = set(answer.data["relevant_sentences"])
        if not selected <= set(range(1, total + 1)):  # the grammar forbids it; a scripted judge might not
            raise ValueError(f"sentence numbers {sorted(selected)} outside 1..{total}")
        return MetricResult(len(selected) / total, self._evidence(chunks, selected, answer.data.get("reason")))

    @staticmethod
    def _evidence(chunks: list[tuple[str, ...]], selected: set[int], reason: str | None) -> dict:
        rows, per_chunk, number = [], [], 0
        for chunk_index, sentences in enumerate(chunks):
            hits = 0
            for sentence in sentences:
                number += 1
                rows.append({"chunk": chunk_index, "sentence": sentence, "relevant": int(number in selected)})
                hits += number in selected
            per_chunk.append(int(hits > 0) if sentences else None)
        judged = [c for c in per_chunk if c is not None]
        evidence = {
            "sentences": rows,
            "insufficient_information": not selected,
            "chunk_relevant": per_chunk,
            "chunk_relevance": sum(judged) / len(judged) if judged else 0.0,
        }
        if reason is not None:
            evidence["reason"] = reason
        return evidence
