"""What is known of a judge's agreement with people, the warning a run prints when it is weak, the note it
prints when too few labels correct it or no one measured the judge; and what the samples say of how far
their scores can be read (samples_warned: the embedder's languages among them).

Each registered judge carries its measured agreement in localeval/registry.json (`bench` on the
labeled development set, docs/judges.md):

    "agreement": {"mean_spearman": 0.85, "measured": "docs/judges.md: bench on the dev set"}

A judge below WEAK ranks samples little better than chance, so its scores must not be read as a
quality measure; a run with it says so in one line (evaluate(): a WeakJudgeWarning) and names the
registered judge that agrees best.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from . import manual, models
from .errors import LocalevalWarning, first_few, warned
from .metrics import metric_of
from .metrics.base import Metric, retrieved_nothing
from .metrics.context_precision import mixed_targets
from .options import given, option
from .samples import Sample
from .text import LANGUAGE_NAMES
from .writing_systems import LanguageMisfitWarning, language_misfits

WEAK = 0.5  # mean Spearman rho below which a judge's scores say little


class WeakJudgeWarning(LocalevalWarning):
    """The judge is known to agree poorly with people (weak_judge_warning)."""


def measured_agreement(judge: Any) -> float | None:
    """The registered judge's mean Spearman rho against people, or None if it was never measured."""
    spec = models.registry().get(judge) if isinstance(judge, str) else None
    return spec.agreement["mean_spearman"] if spec is not None and spec.agreement else None


def weak_judge_warning(judge: Any) -> str | None:
    """One line when the judge is known to agree poorly with people, naming the one to use instead."""
    rho = measured_agreement(judge)
    if rho is None or rho >= WEAK:
        return None
    best = models.best_judge()
    instead = (f"; for scores you can read, use {given('judge', best)} (rho {measured_agreement(best):.2f})"
               if measured_agreement(best) >= WEAK else "; no registered judge does better: label a few samples "
               f"and pass them as {option('labels')}")
    return (f"the judge {judge} agrees poorly with people (mean Spearman rho {rho:.2f} on labeled data; "
            f"`localeval models` lists each judge's), so read these scores as a check of the pipeline, not of your "
            f"RAG system{instead}")


class UnmeasuredJudgeWarning(LocalevalWarning):
    """A judge of one's own, whose agreement with people no one has measured (unmeasured_judge_note)."""


def unmeasured_judge_note(judge: Any, benched: bool) -> str | None:
    """One line where the judge is a folder of one's own: each registered judge's agreement with people is
    measured (the weak-judge warning says where it is poor), a folder's is not, and only `models convert`
    said so (a probe). Not where it was `benched` (labels correct the means, whatever the judge's agreement;
    a calibration of this judge was fitted by bench, which measured it)."""
    folder = models.judge_folder(judge)
    if folder is None or benched:
        return None
    return (f"the judge {folder} has not been measured against people, so how far its scores agree with theirs "
            f"is unknown: bench it on labeled data of yours ({manual.see('labeled-data')}), or pass a few labels "
            f"as {option('labels')} to correct its means")


class FewLabelsWarning(LocalevalWarning):
    """Fewer labels correct a metric than its corrected interval was checked with (few_labels)."""


FEW_LABELS = 10  # labeled samples below which a corrected interval's coverage was measured to fall short


def few_labels(summary: dict[str, dict[str, Any]]) -> str | None:
    """Fewer labels than the corrected intervals were checked with (docs/judges.md), counted per metric:
    a labeled sample without a human score for one (an empty reference, say) does not correct it. None
    needed where every sample is labeled, since people's mean is then known exactly."""
    few = {name: row["corrected"]["labeled"] for name, row in summary.items() if "corrected" in row
           and row["corrected"]["labeled"] < min(FEW_LABELS, row["corrected"]["samples"])}
    if not few:
        return None
    return (f"fewer than ten labeled samples correct {', '.join(f'{name} ({n})' for name, n in few.items())}: "
            "with so few, the corrected 95% intervals covered people's mean less often on the dev set "
            f"({manual.see('labeled-data')}); label at least ten")


class NothingScoredWarning(LocalevalWarning):
    """A metric scored none of the samples (nothing_scored)."""


def nothing_scored(scored: dict[str, int], samples: int) -> str | None:
    """One line where a metric scored none of the `samples` (`scored`: how many each score name scored): a
    run whose every sample lacked what it needs (a column misnamed) exited 0 with its mean null, said only
    in the null counts (a ragas probe). Counts, not a summary: evaluate() has no other use for one, and
    its bootstrap took a quarter of a second a call at 2,000 samples."""
    empty = [name for name, count in scored.items() if metric_of(name) == name and count == 0 and samples > 0]
    if not empty:
        return None
    return (f"{', '.join(empty)} scored no sample: {'its mean is' if len(empty) == 1 else 'their means are'} null "
            "(the null scores' reasons say why)")


class EmbedderLanguageWarning(LocalevalWarning):
    """Samples in languages the embedder was not trained on (embedder_language_warning)."""


def embedder_language_warning(embedder: Any, samples: list[Sample], language: str, metrics: list[Metric]) -> str | None:
    """One line where a metric embeds samples in languages the registered embedder was not trained on: there
    all-MiniLM-L6-v2 barely told a question of the same meaning from an unrelated one (docs/judges.md), so
    response_relevancy's scores say little, unsaid until a probe found off-topic answers scoring higher."""
    embedders = [metric for metric in metrics if metric.uses_embedder]
    embedding = [metric.name for metric in embedders]
    # a name, or a loaded embedder by the name it was loaded under (load_embedder)
    name = models.default_model("embedder") if embedder is None else getattr(embedder, "identity", embedder)
    spec = models.registry().get(name) if isinstance(name, str) else None
    if not embedding or spec is None or not spec.languages:
        return None
    # a sample no embedding metric scores (its response missing) is null there, whatever its language
    embedded = [sample for sample in samples if any(not sample.missing(metric.requires) for metric in embedders)]
    others = Counter(code for sample in embedded if (code := sample.language or language) not in spec.languages)
    if not others:
        return None
    names = [LANGUAGE_NAMES.get(code, code) for code, _ in others.most_common()]
    named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    knows = " and ".join(LANGUAGE_NAMES.get(code, code) for code in spec.languages)
    count, scored = sum(others.values()), len(embedded)
    of = "" if scored == len(samples) else " it scores"  # the others are null there, whatever their language
    which = (f"the sample{of} is" if scored == 1 else f"every sample{of} is" if count == scored
             else f"{count} of the {scored} samples{of} {'is' if count == 1 else 'are'}")
    return (f"{', '.join(embedding)}: {which} in {named}; the "
            f"embedder {name} was trained on {knows} alone: in other languages it barely tells a question of the "
            f"same meaning from an unrelated one ({manual.see('judges')}, B3), so these scores say little there; "
            f"no registered embedder is multilingual: give a multilingual sentence-transformers folder of your own "
            f"as {option('embedder')}, or leave {' and '.join(embedding)} out ({option('metrics')})")


class RetrievedNothingWarning(LocalevalWarning):
    """Samples whose retrieval found nothing, scored 0 by rule (retrieved_nothing_warning)."""


def retrieved_nothing_warning(samples: list[Sample], metrics: list[Metric]) -> str | None:
    """One line where samples retrieved nothing (their contexts given, every one empty): the metrics that
    read the context score them 0 by rule, as they should, but a retriever that began returning nothing
    only lowered the means, unsaid (a ragas probe). Each metric counts only the samples it scores: one
    without a reference is null for context_recall, whatever it retrieved (a review)."""
    nothing = [sample for sample in samples if retrieved_nothing(sample)]
    zeroed = {metric.name: [sample.id for sample in nothing if not sample.missing(metric.requires)]
              for metric in metrics if metric.scores_empty_retrieval_by_rule}
    zeroed = {name: ids for name, ids in zeroed.items() if ids}
    counted = {sample_id for ids in zeroed.values() for sample_id in ids}  # a set: a list's `in` was quadratic
    empty = [sample.id for sample in nothing if sample.id in counted]
    if not empty:
        return None
    which = (f"the sample {empty[0]}" if len(samples) == 1 else
             f"{len(empty)} of the {len(samples)} samples ({first_few(empty)})")
    alike = all(ids == empty for ids in zeroed.values())
    scores = ", ".join(name if alike else f"{name} ({first_few(ids)})" for name, ids in zeroed.items())
    return (f"{which} retrieved nothing (retrieved_contexts empty, or every chunk blank), so {scores} "
            f"{'scores' if len(zeroed) == 1 else 'score'} {'it' if len(empty) == 1 else 'them'} 0, as nothing "
            f"retrieved supports nothing, and {'its mean counts' if len(zeroed) == 1 else 'their means count'} "
            f"{'that 0' if len(empty) == 1 else 'those 0s'}")


def samples_warned(samples: list[Sample], metrics: list[Metric], language: str, embedder: Any,
                   caller_level: int | None = None) -> list[str]:
    """What the samples warn of before anything loads, for a run and evaluate() alike, each warned and kept:
    samples that retrieved nothing, context_precision's targets mixed, text in another script than its
    language's, languages the embedder was not trained on. `caller_level` as errors.warned's, from the
    function that calls this one."""
    level = None if caller_level is None else caller_level + 1
    return [*warned([retrieved_nothing_warning(samples, metrics)], RetrievedNothingWarning, level),
            *warned([mixed_targets(samples, metrics)], LocalevalWarning, level),
            *warned([language_misfits(samples, language)], LanguageMisfitWarning, level),
            *warned([embedder_language_warning(embedder, samples, language, metrics)], EmbedderLanguageWarning, level)]
