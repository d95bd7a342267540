"""`localeval.evaluate`: the whole pipeline from Python, the same one the CLI runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from . import models
from .data import load_samples, samples_from_records
from .device import choose_device, choose_dtype
from .errors import UserError
from .engine.cache import AnswerCache
from .engine.embedder import Embedder, SentenceTransformerEmbedder
from .engine.judge import Judge, TransformersJudge
from .engine.scheduler import BatchLimits, JudgeEngine
from .bench.labels import human_scores
from .calibration import load_thresholds
from .evaluation import DEFAULT_WINDOW, Evaluator, SampleResult
from .metrics import JudgeSettings, resolve_metrics
from .progress import BarProgress, NoProgress
from .results import summarize
from .samples import Sample
from .text import DEFAULT_LANGUAGE
from .tuning import metric_settings


def build_judge(judge: str | Judge | None, device: str, dtype: str, log: Callable[[str], None] = print) -> Judge:
    if judge is not None and not isinstance(judge, str):
        return judge
    resolved = models.resolve(models.judge_name(judge), "judge", log)
    return TransformersJudge(resolved.path, resolved.name, device, choose_dtype(device, dtype), resolved.fingerprint())


def build_embedder(embedder: str | Embedder | None, device: str, log: Callable[[str], None] = print) -> Embedder:
    if embedder is not None and not isinstance(embedder, str):
        return embedder
    resolved = models.resolve(embedder or models.default_model("embedder"), "embedder", log)
    return SentenceTransformerEmbedder(str(resolved.path), resolved.name, device)


def as_samples(samples: Iterable[Sample | dict[str, Any]] | str | Path) -> list[Sample]:
    """A dataset path, Samples, or dicts with the dataset's field names (aliases included)."""
    if isinstance(samples, (str, Path)):
        return load_samples(samples)
    return samples_from_records(samples)


@dataclass
class EvaluationResult:
    samples: list[SampleResult]
    metrics: list[str]
    details: dict[str, Any] = field(default_factory=dict)
    human: dict[str, dict[str, float | None]] | None = None  # from `labels`: people's scores by sample id

    def rows(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.samples]

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per metric: mean, 95% bootstrap interval, scored and null counts; with `labels`, the
        mean corrected for the judge's bias on the labeled samples."""
        return summarize(self.rows(), self.metrics, self.human)

    def to_pandas(self):
        """One row per sample, one column per metric score (evidence stays in `rows()`)."""
        import pandas as pd

        return pd.DataFrame([{k: v for k, v in row.items() if k != "evidence"} for row in self.rows()]).set_index("id")


def evaluate(
    samples: Iterable[Sample | dict[str, Any]] | str | Path,
    metrics: Iterable[str] | str | None = None,
    judge: str | Judge | None = None,
    embedder: str | Embedder | None = None,
    *,
    language: str = DEFAULT_LANGUAGE,
    device: str = "auto",
    dtype: str = "auto",
    settings: JudgeSettings | Mapping[str, JudgeSettings] | None = None,
    scoring: str = "auto",
    calibration: str | Path | None = None,
    labels: str | Path | None = None,
    limits: BatchLimits = BatchLimits(),
    cache: bool | AnswerCache = True,
    window: int = DEFAULT_WINDOW,
    progress: bool = False,
) -> EvaluationResult:
    """Score `samples` (dicts, Samples, or a dataset path) with the given metrics (default: all).

    `judge` and `embedder` take a registered model name, a local model directory, or an object
    with the Judge / Embedder interface (for instance a ScriptedJudge in tests). `settings`: one
    JudgeSettings for every metric or one per metric name; None: the judge's measured settings
    (localeval/tuning.py), scored by `scoring` ("auto", "hard" or "soft") or by the thresholds
    that `calibration` (a `bench --calibrate` file) gives the judge. `labels`: a labeled file in
    bench's format for some of the samples; `summary()` then corrects each mean with them.
    """
    samples = as_samples(samples)
    if settings is None:
        thresholds = load_thresholds(calibration, models.judge_name(judge))[0] if calibration else None
        settings = metric_settings(judge, scoring=scoring, thresholds=thresholds)
    elif scoring != "auto" or calibration is not None:
        raise UserError("give either settings= (which include the scoring) or scoring= / calibration=, not both")
    chosen = resolve_metrics(metrics, settings)
    human = human_scores(labels, samples, [m.name for m in chosen]) if labels else None
    device = choose_device(device)
    answer_cache = cache if isinstance(cache, AnswerCache) else (AnswerCache() if cache else None)
    engine = JudgeEngine(build_judge(judge, device, dtype), limits, answer_cache)
    bar = BarProgress() if progress else NoProgress()
    evaluator = Evaluator(chosen, engine, build_embedder(embedder, device), language, window, bar)
    try:
        results = list(evaluator.run(samples))
    finally:
        bar.close()
    return EvaluationResult(results, [m.name for m in chosen], {"timings": evaluator.timings}, human)

