"""One place that wires a scoring pipeline: the judge and the embedder (found, not yet loaded),
the engine with its answer cache, and the evaluator over the chosen metrics.

`run`, `evaluate()`, bench's judge processes and scripts/bench_speed.py all build theirs here,
so what they measure and what they score is the same machinery.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from . import forking, models
from .device import DTYPES, INT8, choose_device, dtype_name, emulated_on_this_cpu
from .engine.cache import AnswerCache
from .engine.embedder import Embedder, SentenceTransformerEmbedder
from .engine.judge import Judge, TransformersJudge
from .engine.limits import BatchLimits
from .engine.scheduler import JudgeEngine
from .errors import LocalevalWarning, left_unsaid, warn
from .evaluation import Evaluator, SampleResult, window_for
from .metrics.base import Metric
from .options import given, option
from .progress import NoProgress, Progress
from .samples import Sample
from .text import DEFAULT_LANGUAGE

if TYPE_CHECKING:
    from .cluster import Cluster

Log = Callable[[str], None]
Score = Callable[[list[Sample], Progress], Iterator[SampleResult]]


@dataclass
class Pipeline:
    metrics: list[Metric]
    judge: Judge
    embedder: Embedder | None  # None when no metric needs one
    engine: JudgeEngine
    evaluator: Evaluator
    device: str
    # what a Ray run warned of while scoring for this pipeline (RayScorer): its workers' warnings, which reach no one
    # else, and the driver's own (workers restarted, or sharing cores)
    heard: list[str] = field(default_factory=list)

    def load(self) -> None:
        """Load the models now, not on first use (bench: so loading is not counted as judging).
        Scripted stand-ins have nothing to load."""
        for model in (self.judge, self.embedder):
            if hasattr(model, "load"):
                model.load()

    def run(self, samples: list[Sample], progress: Progress = NoProgress()) -> Iterator[SampleResult]:
        if samples and hasattr(self.embedder, "load"):
            # Seconds, and needed anyway: a folder that is no sentence-transformers model then fails
            # before the judge works, not after a window of judging.
            self.embedder.load()
        return self.evaluator.run(samples, progress)

    def said_while_scoring(self) -> list[str]:
        """The warnings scoring gave, for the run to keep (shown as they came): the answer cache set aside as
        damaged or turned off, here or in a Ray worker, and what a Ray run said of its workers."""
        return [*(self.engine.cache.said if self.engine.cache is not None else ()), *self.heard]


@dataclass
class PipelineRecipe:
    """What build_pipeline needs, as plain values: a Ray worker gets it and builds the same pipeline on
    its own node, where the model names resolve."""

    metrics: list[Metric]
    judge: str | Judge | None = None
    embedder: str | Embedder | None = None
    device: str = "auto"
    dtype: str = "auto"
    limits: BatchLimits = field(default_factory=BatchLimits)
    cache: bool | AnswerCache = False
    language: str = DEFAULT_LANGUAGE
    window: int | None = None  # None: the device's (evaluation.window_for)

    def build(self, log: Log = print) -> Pipeline:
        return build_pipeline(self.metrics, self.judge, self.embedder, device=self.device, dtype=self.dtype,
                              limits=self.limits, cache=self.cache, language=self.language, window=self.window,
                              log=log)


def build_scoring(recipe: PipelineRecipe, cluster: Cluster | None = None, log: Log = print) -> tuple[Pipeline, Score]:
    """The pipeline that names and counts a run (found, not loaded), and what scores its samples: that
    pipeline on this machine, or, given a cluster, a pool of Ray workers each holding its own."""
    if cluster is None:
        pipeline = recipe.build(log)
        return pipeline, pipeline.run
    from .scaleout import RayScorer

    recipe = cluster.place(recipe)
    # The driver's pipeline is never loaded, so any device will do. Its CPU is the workers' only on a
    # local cluster of CPU workers: only there is what it would say of emulated bfloat16 theirs.
    theirs = cluster.address == "local" and recipe.device == "cpu"
    with nullcontext() if theirs else left_unsaid(EmulatedArithmeticWarning):
        pipeline = replace(recipe, device="cpu").build(log)
    return pipeline, RayScorer(recipe, cluster, pipeline, log).run


def build_pipeline(metrics: list[Metric], judge: str | Judge | None = None, embedder: str | Embedder | None = None,
                   *, device: str = "auto", dtype: str = "auto", limits: BatchLimits = BatchLimits(),
                   cache: bool | AnswerCache = False, language: str = DEFAULT_LANGUAGE, window: int | None = None,
                   log: Log = print) -> Pipeline:
    """`judge` and `embedder`: a registered name, a model directory or an object (None: the default).
    The embedder is found only when a metric needs one: a bad --embedder cannot stop a run without."""
    if forked := forking.forked_warning():  # said before the run starts, not across its progress bar
        warn(ForkedWarning(forked))
    device = choose_device(device)
    judge = build_judge(judge, device, dtype, log)
    embedder = build_embedder(embedder, device, log) if any(m.uses_embedder for m in metrics) else None
    # the judge's own device: one loaded beforehand (load_judge) may be on another than the pipeline's
    engine = JudgeEngine(judge, limits.with_batch_size(models.batch_size(judge, getattr(judge, "device", device))),
                         cache if isinstance(cache, AnswerCache) else
                         AnswerCache() if cache and getattr(judge, "cacheable", True) else None)
    evaluator = Evaluator(metrics, engine, embedder, language, window_for(window, device))
    return Pipeline(metrics, judge, embedder, engine, evaluator, device)


class ForkedWarning(LocalevalWarning):
    """Computing in a process forked from one that had loaded a model: on one thread (forking.py)."""


class EmulatedArithmeticWarning(LocalevalWarning):
    """The judge would compute in bfloat16 or float16 on a CPU that emulates it (device.emulated_on_this_cpu)."""


def build_judge(judge: str | Judge | None, device: str, dtype: str, log: Log = print) -> Judge:
    if judge is not None and not isinstance(judge, str):
        return judge
    resolved = models.resolve(models.judge_name(judge), "judge", log)
    chosen = dtype_name(device, dtype, models.cpu_dtype(resolved.name))
    if emulated_on_this_cpu(device, DTYPES[chosen]):  # said before the run starts, not across its progress bar
        warn(EmulatedArithmeticWarning(emulated_message(chosen)))
    return TransformersJudge(resolved.path, resolved.name, device, DTYPES[chosen], resolved.fingerprint(),
                             int8_weights=chosen == INT8)


def emulated_message(chosen: str) -> str:
    """What a judge computing in `chosen` on a CPU that emulates it is told, with a measured slowdown."""
    if chosen == "float16":
        cost = "float16 ran 3x slower for SmolLM2 on a 2-core AVX2 CPU"
        missing = "fp16 instructions (avx512_fp16 or amx_fp16), so its float16 arithmetic"
    else:
        cost = "int8 ran 5.6x slower for Qwen-0.5B on a 2-core AVX2 CPU"
        missing = "bf16 instructions (avx512_bf16 or amx_bf16), so its bfloat16 arithmetic"
    return (f"{given('dtype', chosen)}: this CPU has no {missing} is emulated, several times slower than "
            f"float32 ({cost}); leave {option('dtype')} out for float32")


def build_embedder(embedder: str | Embedder | None, device: str, log: Log = print) -> Embedder:
    if embedder is not None and not isinstance(embedder, str):
        return embedder
    resolved = models.resolve(models.default_model("embedder") if embedder is None else embedder, "embedder", log)
    return SentenceTransformerEmbedder(str(resolved.path), resolved.name, device)
