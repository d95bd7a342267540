"""faithfulness, as ragas defines it: the share of the response's claims that the context supports.

Two judge calls per sample. First the judge breaks the response into atomic claims: short
standalone statements, at most CLAIMS_PER_SENTENCE per response sentence (and MAX_CLAIMS in
all), each at most `claim_chars` long, so the JSON always closes. Then it gives each claim a
supported 0/1 verdict against the context. Score: supported claims / claims.

How it differs from answer_supported_precision: there the units are the response's own pysbd
sentences, fixed before the judge sees anything, so every run judges the same units and a
sentence that mixes a supported and an unsupported fact fails whole. Here the judge writes the
units: finer (one fact each) and closer to ragas's numbers, but the claims may drift from the
response (a claim it dropped is never checked) and cost a second call. Use faithfulness to
compare with ragas; answer_supported_precision where the same units across runs matter.
"""

from __future__ import annotations

from ..requests import JudgeRequest
from ..samples import Sample
from ..text import split_sentences
from . import prompts, schemas
from .base import JudgedMetric, MetricResult, Step, judge_failure
from .evidence import ClaimVerdict, Verdict
from .sentence_support import none_supported_by_empty_context
from .verdicts import read_verdicts

VERDICT = prompts.CLAIMS_SUPPORTED.verdict
CLAIMS_PER_SENTENCE = 3
MAX_CLAIMS = 16


class Faithfulness(JudgedMetric):
    name = "faithfulness"
    requires = ("retrieved_contexts", "response")
    description = "share of the response's claims (the judge lists them) supported by the context"
    low_means = ("the answer's grounding (claims the retrieved context does not back: made up, or resting on what the "
                 "retrieval missed)")
    verdict_type, judged, verdict_key = ClaimVerdict, "claims", VERDICT
    scores_empty_retrieval_by_rule = True  # its claims are listed, then every verdict 0 (steps)

    def steps(self, sample: Sample, language: str) -> Step:
        sentences = split_sentences(sample.response, language)
        if not sentences:
            return MetricResult.null("the response has no sentences")
        (listed,) = yield [self._claims_request(sample.response, len(sentences))]
        if listed.data is None:
            return judge_failure(listed)
        claims = tuple(claim.strip() for claim in listed.data["claims"])
        if self.decided_by_rule(sample):  # the claims were the judge's; their verdicts are not
            return self.result(none_supported_by_empty_context(claims, ClaimVerdict))
        (checked,) = yield [self._verdicts_request(sample.retrieved_contexts, claims)]
        if checked.data is None:
            return judge_failure(checked)
        return self.result(read_verdicts(checked, self, claims))

    def formula(self, verdicts: list[Verdict]) -> float | None:
        return self.settings.scoring.share(verdicts)

    def _claims_request(self, response: str, n_sentences: int) -> JudgeRequest:
        schema = schemas.string_list("claims", min(MAX_CLAIMS, CLAIMS_PER_SENTENCE * n_sentences),
                                     self.settings.claim_chars)
        system, user = prompts.RESPONSE_CLAIMS.messages(self.settings, response=response.strip())
        return JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))

    def _verdicts_request(self, contexts: tuple[str, ...], claims: tuple[str, ...]) -> JudgeRequest:
        schema = schemas.verdict_list(len(claims), VERDICT, self.settings, item="claim")
        system, user = prompts.CLAIMS_SUPPORTED.messages(
            self.settings, context=prompts.passages(contexts), claims=prompts.numbered(claims))
        return JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))
