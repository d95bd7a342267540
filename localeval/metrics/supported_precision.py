"""answer_supported_precision and context_supported_precision (seed 004).

The same sentence-support check, run in both directions: is each response sentence supported
by the context, and is each context sentence expressed in the response. The second is asked
chunk by chunk, which gives the per-chunk values and the rank-weighted mean that seed 004's
reflection proposes (a chunk further down the ranking weighs less).
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
from .sentence_support import SentencesAgainstContext
from .verdicts import read_verdicts

VERDICT = prompts.CONTEXT_SUPPORTED.verdict  # context_supported_precision's key


class AnswerSupportedPrecision(SentencesAgainstContext):
    name = "answer_supported_precision"
    requires = ("retrieved_contexts", "response")  # no question: its prompt judges against the context alone
    description = "share of response sentences supported by the context"
    low_means = ("the answer's grounding (sentences the retrieved context does not back: made up, or resting on what "
                 "the retrieval missed)")
    text_field, task = "response", prompts.ANSWER_SUPPORTED
    verdict_key = task.verdict


def rank_weight(rank: int) -> float:
    """Weight of the chunk at 1-based `rank`: 1, 1/2, 1/3, ... (harmonic, as in reciprocal rank)."""
    return 1.0 / rank


class ContextSupportedPrecision(JudgedMetric):
    name = "context_supported_precision"
    requires = ("retrieved_contexts", "response")
    description = "share of context sentences expressed in the response (also per chunk, rank-weighted)"
    low_means = "the answer used little of what was retrieved, or the retrieval brought much it did not need"
    part_descriptions = {"context_supported_precision_rank_weighted":
                         "mean of the per-chunk shares, weighted 1, 1/2, 1/3, ... by chunk rank"}
    verdict_key = VERDICT
    part_names = ("context_supported_precision_rank_weighted",)  # seed 004's per-document mean, weights 1, 1/2, ...
    list_part_names = ("context_supported_precision_per_chunk",)
    scores_empty_retrieval_by_rule = True  # no context sentence: 0, as seed 004's calculate_precision gives

    def steps(self, sample: Sample, language: str) -> Step:
        chunks = split_chunks(sample.retrieved_contexts, language)
        judged = [(rank, sentences) for rank, sentences in enumerate(chunks, 1) if sentences]
        if not judged:  # nothing retrieved: 0 by rule, as the other metrics that read the context
            return self._result([], [], len(chunks))
        requests = [self._request(sample.response, rank, sentences) for rank, sentences in judged]
        answers = yield requests
        failed = next((a for a in answers if a.data is None), None)
        if failed is not None:
            return judge_failure(failed)
        per_chunk = [read_verdicts(a, self, s) for a, (_, s) in zip(answers, judged)]
        return self._result(judged, per_chunk, len(chunks))

    def formula(self, verdicts: list[Verdict]) -> float | None:
        return self.settings.scoring.share(verdicts) if verdicts else 0.0

    def parts(self, evidence: dict[str, Any]) -> dict[str, Any]:
        return {"context_supported_precision_rank_weighted": evidence["rank_weighted"],
                "context_supported_precision_per_chunk": evidence["per_chunk"]}

    def _request(self, response: str, rank: int, sentences: tuple[str, ...]) -> JudgeRequest:
        schema = schemas.verdict_list(len(sentences), VERDICT, self.settings)
        system, user = prompts.CONTEXT_SUPPORTED.messages(
            self.settings, response=response.strip(), chunk=rank, sentences=prompts.numbered(sentences))
        return JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))

    def _result(self, judged, per_chunk: list[list[Verdict]], n_chunks: int) -> MetricResult:
        """Every verdict tagged with its chunk, each chunk's share (None for a chunk without sentences)
        and their rank-weighted mean."""
        tagged = [replace(v, chunk=rank - 1) for (rank, _), verdicts in zip(judged, per_chunk) for v in verdicts]
        chunk_scores: list[float | None] = [None] * n_chunks
        for (rank, _), verdicts in zip(judged, per_chunk):
            chunk_scores[rank - 1] = self.settings.scoring.share(verdicts)
        weights = {rank: rank_weight(rank) for rank, _ in judged}
        weighted = sum(weights[r] * chunk_scores[r - 1] for r in weights) / sum(weights.values()) if weights else 0.0
        return self.result(tagged, per_chunk=chunk_scores, rank_weighted=weighted)
