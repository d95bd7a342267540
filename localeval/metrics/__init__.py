"""The metrics localeval scores, by name, and what a metric of one's own is written with:

    from localeval.metrics import Metric, MetricResult, JudgeRequest, judge_failure, max_output_tokens

(docs/custom-metrics.md). Everything here is cheap to import: no torch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from ..errors import UserError, closest
from ..requests import EmbedRequest, JudgeAnswer, JudgeRequest
from ..text import split_sentences
from .base import JudgeSettings, Metric, MetricResult, judge_failure
from .custom import register_metric
from .schemas import max_output_tokens, verdict_list
from .verdicts import read_verdicts
from .context_precision import ContextPrecision
from .context_recall import ContextRecall
from .context_relevance import ContextRelevance
from .faithfulness import Faithfulness
from .response_relevancy import ResponseRelevancy
from .supported_precision import AnswerSupportedPrecision, ContextSupportedPrecision

# A metric author's whole kit, from this one module (docs/custom-metrics.md), beside the registry's names
__all__ = ["Metric", "MetricResult", "JudgeSettings", "register_metric", "JudgeRequest", "EmbedRequest", "JudgeAnswer",
           "judge_failure", "max_output_tokens", "verdict_list", "read_verdicts", "split_sentences", "METRICS",
           "DEFAULT_METRICS", "resolve_metrics", "result_names"]

METRICS: dict[str, type[Metric]] = {
    m.name: m
    for m in (ContextRelevance, ContextRecall, ResponseRelevancy, AnswerSupportedPrecision, ContextSupportedPrecision,
              ContextPrecision, Faithfulness)
}
BUILT_IN = frozenset(METRICS)  # the names register_metric (custom.py) refuses
# The seeds' five, scored when no metric is named; the peers' headline metrics (ragas's
# context_precision and faithfulness, by the same names) are asked for by name.
DEFAULT_METRICS = ("context_relevance", "context_recall", "response_relevancy", "answer_supported_precision",
                   "context_supported_precision")
# ragas metric names localeval has no metric of that name for -> the one that asks the closest
# question, for "did you mean". Each comment: what ragas judges / what localeval does.
RAGAS_EQUIVALENTS = {
    "answer_relevancy": "response_relevancy",  # the same: questions generated from the response vs the input
    "context_utilization": "context_supported_precision",  # chunks used by the response / sentences it expresses
}
# ragas metrics (names and classes) that ask a question no metric here asks -> what they do. Said as such:
# "did you mean" offered context_recall for context_entity_recall, a spelling match to another question.
RAGAS_WITHOUT_COUNTERPART = {
    "answer_correctness": "compares the response's facts with the reference's, and their embeddings",
    "answer_similarity": "is the embedding similarity of the response and the reference",
    "factual_correctness": "compares the response's claims with the reference's",
    "context_entity_recall": "counts the reference's named entities found in the context",
    "noise_sensitivity": "counts the response's claims that irrelevant retrieved chunks led to",
    "summarization_score": "scores a summary's coverage of key phrases",
    "aspect_critique": "asks a yes/no question of your own about the response",
}
# the same ragas metrics under their other names (0.2's classes, their `name` attributes)
RAGAS_WITHOUT_COUNTERPART_ALIASES = {
    "semantic_similarity": "answer_similarity", "summary_score": "summarization_score",
    "aspect_critic": "aspect_critique",
}
# ragas 0.2's metric classes, as a ragas user writes them, -> the metric of the same question here
RAGAS_CLASSES = {
    "LLMContextRecall": "context_recall", "NonLLMContextRecall": "context_recall",
    "LLMContextPrecisionWithReference": "context_precision", "LLMContextPrecisionWithoutReference": "context_precision",
    "NonLLMContextPrecisionWithReference": "context_precision", "FaithfulnesswithHHEM": "faithfulness",
}


def resolve_metrics(names, settings: JudgeSettings | Mapping[str, JudgeSettings] | None = None,
                    by_name_only: bool = False) -> list[Metric]:
    """Metric objects for `names` (names or Metric instances), in the order given; None means the
    default five, "all" every metric.

    `settings` is one JudgeSettings for every metric, or one per metric name (localeval/tuning.py).
    `by_name_only`: Metric instances refused (evaluate(): an instance carries settings of its own, so the
    judge's measured settings, scoring= and calibration= never reached it, and it scored otherwise than
    its name did, silently).
    """
    if names is None:
        names = DEFAULT_METRICS
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    # a dict (thresholds, say: {"faithfulness": 0.8}) ran its keys, the values unread
    if isinstance(names, (Metric, Mapping)) or not isinstance(names, Iterable):
        raise UserError(f"metrics: give metric names, comma-separated or as a list; got {type(names).__name__}")
    names = list(names)
    if names == ["all"]:
        names = list(METRICS)
    elif "all" in names:
        raise UserError("metric 'all' already means every metric: give it alone")
    metrics = []
    for item in names:
        if not isinstance(item, (str, Metric)):  # ragas's metric objects, a list in the list: unhashable, a TypeError
            raise UserError(_not_a_name(item))
        if isinstance(item, Metric):
            if by_name_only and item.name not in METRICS:  # one of the user's own, not registered: how to
                raise UserError(_not_a_name(item))
            if by_name_only:  # a registered one: by its name
                raise UserError(f"metrics=: give metrics by name ({item.name!r}), not as objects: an object carries "
                                "settings of its own, so the judge's measured settings, scoring= and calibration= "
                                f"would not apply to it; settings={{{item.name!r}: JudgeSettings(...)}} sets how a "
                                "metric is asked")
            metrics.append(item)
        elif item in METRICS:
            metrics.append(METRICS[item](settings.get(item) if isinstance(settings, Mapping) else settings))
        else:
            raise UserError(f"unknown metric '{item}';{did_you_mean(str(item))} choose from: {', '.join(METRICS)}, or all")
    if not metrics:
        raise UserError("no metrics chosen")
    repeated = [name for name, count in Counter(m.name for m in metrics).items() if count > 1]
    if repeated:  # a run's record would name it twice, and a --resume naming it once would not match
        raise UserError(f"metric '{repeated[0]}' is given twice; name each metric once")
    return metrics


def result_names(metrics: list[Metric]) -> list[str]:
    """The scores a run reports, in order: each metric's, then its scalar sub-scores' (summary rows)."""
    return [name for metric in metrics for name in (metric.name, *metric.part_names)]


def metric_of(result_name: str) -> str:
    """The metric whose evidence a score comes from: a sub-score's metric, else the name itself."""
    return next((name for name, metric in METRICS.items() if result_name in metric.part_names), result_name)


def did_you_mean(name: str, for_gates: bool = False) -> str:
    """' did you mean ...?' for a ragas name or class or a typo of one (or of a metric, in any case), or
    what a ragas metric with no counterpart here does; empty when nothing is close. Compared as letters
    and digits only: FAITHFULNESS, ContextRecall.
    `for_gates`: a gate's name, which may be a sub-score's, and never "all" (a metric name only)."""
    if not for_gates and _plain(name) == "all":  # exactly: at three letters "ball" and "call" are close
        return " did you mean 'all'?"
    missing = next((ragas for ragas in [*RAGAS_WITHOUT_COUNTERPART, *RAGAS_WITHOUT_COUNTERPART_ALIASES]
                    if _plain(ragas) == _plain(name)), None)
    if missing is not None:  # exactly too: FactualCorrectness, answer_correctness, AnswerCorrectness
        what = RAGAS_WITHOUT_COUNTERPART[RAGAS_WITHOUT_COUNTERPART_ALIASES.get(missing, missing)]
        return f" ragas's {missing} has no counterpart in localeval: it {what};"
    ours = [part for metric in METRICS.values() for part in (metric.name, *metric.part_names,
                                                              *metric.list_part_names)] if for_gates else list(METRICS)
    found = closest(name, [*ours, *RAGAS_EQUIVALENTS, *RAGAS_CLASSES], 0.75, normal=_plain)
    if found is None:
        return ""
    ragas = RAGAS_EQUIVALENTS.get(found) or RAGAS_CLASSES.get(found)
    if ragas is not None:
        return f" did you mean '{ragas}', the {METRICS[ragas].description}, nearest to ragas's {found}?"
    return f" did you mean '{found}'?"


def _plain(name: str) -> str:
    return "".join(character for character in name.lower() if character.isalnum())


def _not_a_name(item: object) -> str:
    """What to give in place of a metric that is not a name: ragas's metric objects carry theirs."""
    name = getattr(item, "name", None)
    if isinstance(name, str):
        what = "a metric class" if isinstance(item, type) else f"objects ({type(item).__name__})"
        if name in METRICS:
            return f"metrics: give metrics by name, not as {what}; did you mean '{name}'?"
        cls = item if isinstance(item, type) else type(item)
        if issubclass(cls, Metric):
            return (f"metrics: give metrics by name, not as {what}; a metric of your own has a name once its class is "
                    f"registered: localeval.register_metric({cls.__name__}) (localeval docs custom-metrics)")
        return f"metrics: give metrics by name, not as {what};{did_you_mean(name)}".rstrip(";")
    return (f"metrics: give metric names (strings), comma-separated or as a list; got an item of type "
            f"{type(item).__name__} among them")

