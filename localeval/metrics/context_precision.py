"""context_precision, as ragas defines it: are the useful chunks ranked first?

For each retrieved chunk, in rank order, one verdict: was it useful for arriving at the reference
(or, for a sample without one, the response)? The score is the mean of precision@k over the ranks
k of the useful chunks, 0 when none is useful: a retriever that puts its useful chunks first
scores 1 whatever follows them, and one that buries them under distractors scores less.

All chunks are judged in one request, numbered in rank order, so a sample costs one judge call.
A chunk that is empty or only whitespace cannot be useful: it is not asked about and counts 0.
"""

from __future__ import annotations

from dataclasses import replace

from ..requests import JudgeRequest
from ..samples import Sample
from . import prompts, schemas
from .base import JudgedMetric, Metric, MetricResult, Step, judge_failure
from .evidence import ChunkVerdict, Verdict
from .verdicts import read_verdicts

VERDICT = prompts.CONTEXT_PRECISION.verdict


def average_precision(useful: list[float]) -> float:
    """Mean of precision@k over the ranks k of useful chunks; 0 when none is useful (ragas's formula).

    With 0/1 values it is ragas's score exactly. With probabilities (soft scoring) each rank counts
    with the weight of its probability, and precision@k is the expected share of useful chunks in
    the first k: the same formula, fed the judge's belief instead of its greedy verdicts."""
    total = sum(useful)
    if total == 0:
        return 0.0
    weighted, found = 0.0, 0.0
    for k, value in enumerate(useful, 1):
        found += value
        weighted += value * found / k
    return weighted / total


class ContextPrecision(JudgedMetric):
    name = "context_precision"
    requires = ("user_input", "retrieved_contexts")
    description = "rank-aware share of chunks useful for the reference (or response): useful chunks first"
    low_means = "the retrieval: useful chunks ranked below useless ones, or none useful"
    verdict_type, judged, verdict_key = ChunkVerdict, "chunks", VERDICT
    scores_empty_retrieval_by_rule = True  # no chunk to ask of: 0 (steps)

    def steps(self, sample: Sample, language: str) -> Step:
        target = _target(sample)
        if target is None:
            return MetricResult.null("missing reference and response (one is needed to judge a chunk useful)")
        chunks = list(sample.retrieved_contexts)
        asked = [rank for rank, chunk in enumerate(chunks) if chunk.strip()]
        if not asked:
            return self._result(chunks, {}, target[0])
        schema = schemas.verdict_list(len(asked), VERDICT, self.settings, item="passage")
        system, user = prompts.CONTEXT_PRECISION.messages(
            self.settings, question=sample.user_input.strip(), answer=target[1].strip(),
            passages=prompts.passages(tuple(chunks[rank] for rank in asked)))
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        verdicts = read_verdicts(answer, self, tuple(chunks[rank] for rank in asked))
        return self._result(chunks, dict(zip(asked, verdicts)), target[0])

    def formula(self, verdicts: list[Verdict]) -> float | None:
        return average_precision(self.settings.scoring.values(verdicts))

    def _result(self, chunks: list[str], judged: dict[int, Verdict], against: str) -> MetricResult:
        """One verdict per chunk in rank order (its 0-based `rank`), those not asked about 0."""
        verdicts = [replace(judged.get(rank) or ChunkVerdict(chunk, 0, "the chunk is empty"), rank=rank)
                    for rank, chunk in enumerate(chunks)]
        return self.result(verdicts, against=against)


def mixed_targets(samples: list[Sample], metrics: list[Metric]) -> str | None:
    """Where context_precision judges some samples against their reference and others, which have none,
    against their response: one mean of two of ragas's metrics (with and without a reference), said, since
    nothing else shows it but each sample's evidence (a ragas probe)."""
    if not any(isinstance(metric, ContextPrecision) for metric in metrics):
        return None
    targets = [target[0] for sample in samples
               if not sample.missing(ContextPrecision.requires) and (target := _target(sample)) is not None]
    if "reference" not in targets or "response" not in targets:
        return None
    return (f"context_precision judges {targets.count('response')} of the {len(targets)} samples it can judge "
            "against the response, having no reference, and the others against their reference: its mean mixes "
            "ragas's context precision without and with a reference (score them apart to compare with ragas)")


def _target(sample: Sample) -> tuple[str, str] | None:
    """What a useful chunk helps arrive at: the reference when there is one (ragas's
    context_precision), else the response (ragas's variant without a reference)."""
    for field in ("reference", "response"):
        text = getattr(sample, field)
        if text is not None and text.strip():
            return field, text
    return None
