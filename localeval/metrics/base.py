"""What a metric is: the requests it needs for one sample, and the score it makes of the answers.

A metric is written as a generator of steps. Each `yield` hands the engine a list of requests
(all judge requests, or all embedding requests) and receives their answers in order; `return`
gives the result. The engine advances the steps of every sample and metric together, which is
what lets it batch across them, while each metric still reads top to bottom.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generator

from ..errors import UserError
from ..requests import TOO_LONG, EmbedRequest, JudgeAnswer, JudgeRequest
from ..samples import Sample
from .evidence import SentenceVerdict, Verdict
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

    def __post_init__(self):
        # Built by hand in evaluate(settings=...): a mistake here would not fail, it would quietly ask
        # something else ("no" is a true reasons=) or score nothing (questions=0 gives null scores).
        for name in ("reasons", "example"):
            if not isinstance(getattr(self, name), bool):
                raise UserError(f"JudgeSettings {name}=: give True or False; got {getattr(self, name)!r}")
        for name in ("reason_chars", "questions", "question_chars", "claim_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"JudgeSettings {name}=: give a whole number, at least 1; got {value!r}")
        if not isinstance(self.scoring, Scoring):
            raise UserError(f"JudgeSettings scoring=: give a localeval Scoring, such as Scoring('soft'); "
                            f"got {self.scoring!r}")


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
        """The evidence as results.jsonl and rows() give it: a copy, so that editing a row leaves the result as
        scored (a notebook probe set a verdict to 0 in rows(), and the result's evidence changed with it)."""
        out = copy.deepcopy(self.evidence)
        if self.null_reason is not None:
            out["null_reason"] = self.null_reason
        return out


class Metric:
    name: ClassVar[str]
    requires: ClassVar[tuple[str, ...]]  # sample fields without which the metric cannot score
    description: ClassVar[str]
    # What a low score points at, for a reader deciding what to fix: the retrieval, or the answer
    low_means: ClassVar[str] = ""
    part_descriptions: ClassVar[dict[str, str]] = {}  # each scalar sub-score's description
    uses_embedder: ClassVar[bool] = False
    # Sub-scores reported beside the score as results of their own (results.jsonl keys, to_pandas()
    # columns), named in full: the scalar ones are also summary rows and can be gated on.
    part_names: ClassVar[tuple[str, ...]] = ()
    # Sub-scores that are lists (a value per chunk): results.jsonl keys and to_pandas() columns only.
    list_part_names: ClassVar[tuple[str, ...]] = ()
    # What the judge gives verdicts on (metrics/evidence.py), the evidence list that holds them, and
    # the key of the 0/1 verdict in each row: named once, for the metric, the report and bench.
    verdict_type: ClassVar[type[Verdict]] = SentenceVerdict
    judged: ClassVar[str] = "sentences"
    verdict_key: ClassVar[str]
    # Which of --reasons, --example, --scoring the metric reads (a run records them as applied to it only then)
    asks_reasons: ClassVar[bool] = False  # whether JudgeSettings.reasons changes what the judge is asked
    has_example: ClassVar[bool] = False  # whether JudgeSettings.example does
    uses_scoring: ClassVar[bool] = False  # whether JudgeSettings.scoring (hard, soft, a threshold) changes its score
    # Whether a sample that retrieved nothing is scored by rule (every verdict 0), without asking the judge
    scores_empty_retrieval_by_rule: ClassVar[bool] = False

    def __init__(self, settings: JudgeSettings | None = None):
        self.settings = settings or JudgeSettings()

    def steps(self, sample: Sample, language: str) -> Step:
        raise NotImplementedError

    @classmethod
    def asks_a_model(cls) -> bool:
        """Whether its steps may ask the judge or the embedder: a generator does; a metric of one's own whose
        steps is a plain function (a length check, a pattern) returns its result without asking anything."""
        return inspect.isgeneratorfunction(inspect.unwrap(cls.steps))  # a decorated generator is one too

    def decided_by_rule(self, sample: Sample) -> bool:
        """Whether the metric's verdicts on this sample are set by a rule, not asked of the judge (nothing
        retrieved supports nothing): bench leaves such a sample out of a judge's agreement with people."""
        return self.scores_empty_retrieval_by_rule and retrieved_nothing(sample)

    def formula(self, verdicts: list[Verdict]) -> float | None:
        """The metric's score of its verdicts under `settings.scoring`: the one formula a run scores
        with and bench re-scores a run's evidence with (hard, soft, calibrated)."""
        raise NotImplementedError

    def score(self, evidence: dict[str, Any]) -> float | None:
        """The score of evidence as results.jsonl holds it; None for a null result."""
        return None if evidence.get(self.judged) is None else self.formula(self.verdicts(evidence))

    def verdicts(self, evidence: dict[str, Any]) -> list[Verdict]:
        """The typed verdicts of evidence as results.jsonl holds it, in the order the judge gave them;
        none for a null result (its evidence says why, under "null_reason"), so a loop over a run's
        rows needs no special case."""
        return [self.verdict_type.from_json(row, self.verdict_key) for row in evidence.get(self.judged) or ()]

    def result(self, verdicts: list[Verdict], **details: Any) -> "MetricResult":
        """The scored result of the judge's verdicts; `details` are the metric's other evidence."""
        evidence = {self.judged: [v.to_json(self.verdict_key) for v in verdicts], **details}
        return MetricResult(self.formula(verdicts), evidence, parts=self.parts(evidence))

    def parts(self, evidence: dict[str, Any]) -> dict[str, Any]:
        """The sub-scores the evidence gives (part_names, and per-chunk lists), by their results key."""
        return {}

    def with_every_part(self, result: "MetricResult") -> "MetricResult":
        """`result` with every sub-score key, null where it gave none (a null result): every line of
        results.jsonl then has the same keys, and a column read by name exists when no sample scored."""
        names = (*self.part_names, *self.list_part_names)
        if all(name in result.parts for name in names):
            return result
        return replace(result, parts={**dict.fromkeys(names), **result.parts})


class JudgedMetric(Metric):
    """A built-in metric: the judge's verdicts, each with a reason where asked, scored hard or soft. A metric of
    one's own says which settings it reads itself (Metric's are all off: the docs' defaults, which
    register_metric had to patch onto a class while Metric's said otherwise, a review)."""

    asks_reasons = True
    uses_scoring = True


def judge_failure(answer: JudgeAnswer) -> MetricResult:
    if answer.refused:
        return MetricResult.null(answer.error)
    if answer.error.startswith(TOO_LONG):  # an answer cut off at the judge's limit: the sample's length, not the judge
        return MetricResult.null(answer.error, judge_output=answer.text)
    return MetricResult.null(f"judge output unusable: {answer.error}", judge_output=answer.text)


def retrieved_nothing(sample: Sample) -> bool:
    """Contexts given, every one of them empty."""
    return sample.retrieved_contexts is not None and not any(chunk.strip() for chunk in sample.retrieved_contexts)
