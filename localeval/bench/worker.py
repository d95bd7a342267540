"""One judge over the labeled samples, normally in a child process of its own.

A process per judge is what makes the load time and the peak memory that judge's alone (a
second model in the same process would inherit the first one's allocator high-water mark),
and what lets a judge that fails (not installed, out of memory, even killed by the kernel) be
reported as failed while the other judges still run.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engine.limits import BatchLimits
from ..evaluation import BENCH_WINDOW
from ..errors import EnvironmentFailure, MetricFailed, UserError, out_of_memory
from ..metrics import JudgeSettings, resolve_metrics
from ..metrics.sources import MetricSource, load_metric_sources
from ..progress import NoProgress, progress_for, to_stderr
from ..samples import Sample

try:
    import resource
except ImportError:  # Windows: a judge's peak memory there is its CUDA memory alone, or not measured
    resource = None

if TYPE_CHECKING:  # the pipeline imports torch and transformers: only a judge's process needs them
    from ..pipeline import Pipeline


@dataclass(frozen=True)
class JudgeJob:
    """Everything a child process needs: it must pickle (spawn sends it over a pipe)."""

    judge: Any  # a registered name, a model directory, or a Judge object (a ScriptedJudge in tests)
    samples: tuple[Sample, ...]
    metrics: tuple[str, ...]
    settings: dict[str, JudgeSettings]  # per metric name (localeval/tuning.py)
    embedder: Any = None  # as `judge`; None: the default embedder
    device: str = "cpu"  # already resolved by the parent (no "auto")
    dtype: str = "auto"
    limits: BatchLimits = field(default_factory=BatchLimits)
    cache: bool = False  # off by default: a cached answer takes no time and would inflate the speed
    progress: bool = False
    metric_sources: tuple[MetricSource, ...] = ()  # --metrics-from: run again in a spawned child, to register them there

    @property
    def name(self) -> str:
        return self.judge if isinstance(self.judge, str) else getattr(self.judge, "identity", type(self.judge).__name__)


@dataclass
class JudgeRun:
    """What one judge did: per-sample results (scores + evidence) and how it ran; or why it failed."""

    judge: str
    rows: list[dict[str, Any]] = field(default_factory=list)  # SampleResult.to_json(), in sample order
    measures: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None  # for a failure that is not a user error, to debug it later
    metric_failed: bool = False  # a metric of one's own failed, not the judge: the same for every judge

    @property
    def ok(self) -> bool:
        return self.error is None


def run_in_child(job: JudgeJob) -> JudgeRun:
    """`run_judge` in a fresh spawned process (no state shared with this one, CUDA included)."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(job, sender), name=f"localeval-bench {job.name}")
    child.start()
    sender.close()  # the child holds the only sending end, so its death ends recv() with EOFError
    try:
        run = receiver.recv()
    except EOFError:
        run = None
    except BaseException:  # Ctrl-C in the parent: take the child down with it
        child.terminate()
        child.join()
        raise
    finally:
        receiver.close()
    child.join()
    if run is None:
        return JudgeRun(job.name, error=_death(child.exitcode))
    return run


def _child_main(job: JudgeJob, sender) -> None:
    try:
        sender.send(run_judge(job))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the parent reports it, once
        pass
    finally:
        sender.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        hint = " (killed: most often out of memory)" if -exitcode == 9 else ""
        return f"the judge's process died from signal {-exitcode}{hint}"
    return f"the judge's process ended (exit status {exitcode}) without a result"


def run_judge(job: JudgeJob) -> JudgeRun:
    """Evaluate every sample with one judge, in this process; any failure comes back as the run's error."""
    try:
        return _evaluate(job)
    except MetricFailed as error:
        return JudgeRun(job.name, error=str(error), metric_failed=True)
    except (UserError, EnvironmentFailure) as error:  # one line of its own: a store it cannot read, NaN outputs
        return JudgeRun(job.name, error=str(error))
    except Exception as error:  # noqa: BLE001  (one judge's failure must not stop the others)
        message = f"{type(error).__name__}: {error}".splitlines()[0]
        if out_of_memory(error):
            said = f" ({message})" if str(error) else ""  # a bare MemoryError says nothing more
            return JudgeRun(job.name, error=f"out of memory on {job.device}; try a smaller --batch-size{said}")
        return JudgeRun(job.name, error=message, traceback=traceback.format_exc())


def _evaluate(job: JudgeJob) -> JudgeRun:
    from ..pipeline import build_pipeline

    _reset_peak_memory(job.device)
    _load_same_sources(job.metric_sources)
    pipeline = build_pipeline(resolve_metrics(job.metrics, job.settings), job.judge, job.embedder, device=job.device,
                              dtype=job.dtype, limits=job.limits, cache=job.cache, window=BENCH_WINDOW, log=to_stderr)
    pipeline.load()  # now, so that load time is not counted as judging time
    bar = progress_for(f"{job.name}: judging") if job.progress else NoProgress()
    started = time.perf_counter()
    try:
        rows = [result.to_json() for result in pipeline.run(list(job.samples), bar)]
    finally:
        bar.close()
    seconds = time.perf_counter() - started
    return JudgeRun(job.name, rows, _measures(job, pipeline, seconds))


def _load_same_sources(sources: tuple[MetricSource, ...]) -> None:
    """Run the --metrics-from sources again in this process, and refuse them where their code is not the code
    the parent loaded and bench.json records: a file edited while judges run would score them differently."""
    try:
        loaded = load_metric_sources([source.given for source in sources])
    except UserError as error:  # it loaded in the parent: the same for every judge, so the bench stops
        raise MetricFailed(f"{error} (it loaded when bench started: did it change while bench ran?)") from None
    for was, now in zip(sources, loaded):
        if now.sha256 != was.sha256:
            raise MetricFailed(f"--metrics-from {was.given}: its code changed while bench ran (sha256 {was.sha256[:12]} "
                               f"when bench started, {now.sha256[:12]} now); run bench again once it is as it should be")


def _measures(job: JudgeJob, pipeline: Pipeline, seconds: float) -> dict:
    judge, embedder, engine, evaluator = pipeline.judge, pipeline.embedder, pipeline.engine, pipeline.evaluator
    stats = getattr(judge, "stats", None)  # a TransformersJudge's JudgeStats; a scripted judge has none
    generate_seconds = stats.generate_seconds if stats else None
    return {
        "model": judge.identity,
        "weights": getattr(judge, "fingerprint", None) or None,  # what a calibration's thresholds belong to
        "embedder": embedder.identity if embedder is not None else None,
        "dtype": _dtype(judge, job),
        "samples": len(job.samples),
        "evaluation_seconds": seconds,
        "samples_per_second": len(job.samples) / seconds if seconds > 0 else None,
        "load_seconds": getattr(judge, "load_seconds", None),
        "embedder_load_seconds": getattr(embedder, "load_seconds", None),
        "judge_seconds": evaluator.timings.judge_seconds,
        "embed_seconds": evaluator.timings.embed_seconds,
        "requests": evaluator.timings.judge_requests,
        "answered": engine.answered,
        "invalid": engine.invalid,
        "cache_hits": engine.cache_hits,
        "valid_json_rate": 1 - engine.invalid / engine.answered if engine.answered else None,
        "batches": stats.batches if stats else None,
        "decode_steps": stats.decode_steps if stats else None,
        "prompt_tokens": stats.prompt_tokens if stats else None,
        "output_tokens": stats.output_tokens if stats else None,
        "generate_seconds": generate_seconds,
        "grammar_seconds": stats.grammar_seconds if stats else None,
        # Per second of the judge's own generation time, so embedding and Python overhead do not count.
        "output_tokens_per_second": stats.output_tokens / generate_seconds if generate_seconds else None,
        "prompt_tokens_per_second": stats.prompt_tokens / generate_seconds if generate_seconds else None,
        **_peak_memory(job.device),
    }


def _reset_peak_memory(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats(device)


def _peak_memory(device: str) -> dict[str, Any]:
    """The peak on the device the judge ran on: CUDA memory allocated by torch, else this process's RSS."""
    rss_mb = _peak_rss_mb()
    if device.startswith("cuda"):
        import torch

        return {"peak_memory_mb": torch.cuda.max_memory_allocated(device) / 2**20,
                "peak_memory_kind": "CUDA max allocated", "peak_rss_mb": rss_mb}
    return {"peak_memory_mb": rss_mb, "peak_memory_kind": "peak RSS" if rss_mb is not None else None,
            "peak_rss_mb": rss_mb}


def _peak_rss_mb() -> float | None:
    if resource is None:
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes on macOS, KiB on Linux


def _dtype(judge, job: JudgeJob) -> str:
    """The format the judge ran in, as --dtype names it: a transformers judge's own, else the asked one."""
    if getattr(judge, "int8_weights", False):
        return "int8"
    dtype = getattr(judge, "dtype", None)
    if dtype is not None:
        return str(dtype).removeprefix("torch.")
    from ..device import dtype_name

    return dtype_name(job.device, job.dtype)
