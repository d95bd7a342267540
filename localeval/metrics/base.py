"""What a metric is: the requests it needs for one sample, and the score it makes of the answers.

A metric is written as a generator of steps. Each `yield` hands the engine a list of requests
(all judge requests, or all embedding requests) and receives their answers in order; `return`
gives the result. The engine advances the steps of every sample and metric together, which is
what lets it batch across them, while each metric still reads top to bottom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Generator

from ..requests import EmbedRequest, JudgeAnswer, JudgeRequest
from ..samples import Sample
from .scoring import Scoring

Step = Generator[list[JudgeRequest] | list[EmbedRequest], list, "MetricResult"]


@dataclass(frozen=True)
class JudgeSettings:
    """How the judge is asked, and how its answers are scored.

    The asking settings are part of every request, so changing one never hits a stale cache;
    `scoring` only reads the answers (scoring.py), so it changes no request.
    """

    reasons: bool = True  # a reason before each verdict: slower; better or worse by judge and metric
    example: bool = False  # show the metric's worked example (prompts.Example), where it has one
    reason_chars: int = 120  # bound on each reason, so the JSON always closes
    questions: int = 3  # response_relevancy: questions generated per response
    question_chars: int = 150
    claim_chars: int = 150  # faithfulness: bound on each claim the judge lists
    scoring: Scoring = Scoring()


@dataclass
class MetricResult:
    score: float | None
    evidence: dict[str, Any] = field(default_factory=dict)
    null_reason: str | None = None
    parts: dict[str, Any] = field(default_factory=dict)  # sub-scores beside the score, by their results key

    @staticmethod
    def null(reason: str, **evidence: Any) -> "MetricResult":
        return MetricResult(None, dict(evidence), reason)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.evidence)
        if self.null_reason is not None:
            out["null_reason"] = self.null_reason
        return out


class Metric:
    name: ClassVar[str]
    requires: ClassVar[tuple[str, ...]]  # sample fields without which the metric cannot score
    description: ClassVar[str]
    uses_embedder: ClassVar[bool] = False
    # Sub-scores reported beside the score as results of their own (results.jsonl keys, to_pandas()
    # columns), named in full: the scalar ones are also summary rows and can be gated on.
    part_names: ClassVar[tuple[str, ...]] = ()
    # Where its evidence keeps the judge's verdicts, named once for the metric, the report and bench:
    # the list in the evidence, the key of each row's text, and the key of its 0/1 verdict.
    judged: ClassVar[str] = "sentences"
    text_key: ClassVar[str] = "sentence"
    verdict_key: ClassVar[str]
    asks_reasons: ClassVar[bool] = True  # whether JudgeSettings.reasons changes what the judge is asked
    has_example: ClassVar[bool] = False  # whether JudgeSettings.example does

    def __init__(self, settings: JudgeSettings | None = None):
        self.settings = settings or JudgeSettings()

    def steps(self, sample: Sample, language: str) -> Step:
        raise NotImplementedError

    def score(self, evidence: dict[str, Any]) -> float | None:
        """The score this metric's evidence gives under `settings.scoring`: the one formula that
        `steps` scores with and that bench re-scores the same evidence with (hard, soft, calibrated)."""
        raise NotImplementedError

    def result(self, evidence: dict[str, Any]) -> "MetricResult":
        return MetricResult(self.score(evidence), evidence, parts=self.parts(evidence))

    def parts(self, evidence: dict[str, Any]) -> dict[str, Any]:
        """The sub-scores the evidence gives (part_names, and per-chunk lists), by their results key."""
        return {}

    def verdicts(self, evidence: dict[str, Any]) -> list[int]:
        """The judge's greedy 0/1 verdicts in this metric's evidence, in the order it gave them."""
        return [row[self.verdict_key] for row in evidence.get(self.judged, [])]


def judge_failure(answer: JudgeAnswer) -> MetricResult:
    return MetricResult.null(f"judge output unusable: {answer.error}", judge_output=answer.text)
