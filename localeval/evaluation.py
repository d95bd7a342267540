"""samples -> metric steps -> engine -> scores: the loop that lets one batch serve every sample.

Samples are scored a window at a time. Within a window, every (sample, metric) pair is a
step generator; each round gathers the requests all of them are waiting on, sends the judge
requests to the engine in one call and the texts to the embedder in one call, and hands the
answers back. A window's results are complete when its generators are, so they can be
written to disk before the next window starts.
"""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import astuple, dataclass, replace
from numbers import Real
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .errors import MetricFailed, where_raised
from .gating import ROUNDING
from .metrics import BUILT_IN
from .metrics.base import Metric, MetricResult, Step
from .progress import NoProgress, Progress
from .requests import EmbedRequest, JudgeRequest
from .samples import Sample
from .text import SUPPORTED_LANGUAGES

if TYPE_CHECKING:  # the engine imports torch: not needed to read DEFAULT_WINDOW for --help
    from .engine.embedder import Embedder
    from .engine.scheduler import JudgeEngine

# Samples scored together, by device where not asked: a window's results are written when all of it is
# done, so the first ETA and the first save wait for a window, and a Ctrl-C loses the window under way. A
# GPU's batches need 64 samples' requests to fill; a CPU's are about full with 8 (16 dev samples on 2
# cores, one run each: Qwen-0.5B 98 and 117 s at a window of 16, 104 s at 8, 103 s at 4; Qwen-1.5B
# 186 s at 16, 197 s at 8), and at 64 a long CPU run showed no time left and saved nothing for a
# quarter of an hour (a long-run probe).
DEFAULT_WINDOW = {"cpu": 8, "cuda": 64}
# bench scores its samples in one window, as the judges' measurements in docs/judges.md were made: a
# bfloat16 judge's verdicts move a little with their batch
BENCH_WINDOW = 64


def window_for(window: int | None, device: str) -> int:
    """The window asked, else the device's (DEFAULT_WINDOW)."""
    return window if window is not None else DEFAULT_WINDOW["cuda" if device.startswith("cuda") else "cpu"]


@dataclass
class SampleResult:
    sample_id: str
    language: str  # the language its sentences were split in and its judge wrote in: means by language
    metrics: dict[str, MetricResult]

    def score(self, metric: str) -> float | None:
        return self.metrics[metric].score

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self.sample_id, "language": self.language}
        for name, result in self.metrics.items():
            row[name] = result.score
            row.update(result.parts)
        row["evidence"] = {name: result.to_json() for name, result in self.metrics.items()}
        return row


@dataclass
class Timings:
    judge_seconds: float = 0.0
    embed_seconds: float = 0.0
    judge_requests: int = 0
    embedded_texts: int = 0

    # Counts add up and take away: a Ray worker reports one window's share, the driver sums them.
    def __add__(self, other: Timings) -> Timings:
        return Timings(*(a + b for a, b in zip(astuple(self), astuple(other))))

    def __sub__(self, other: Timings) -> Timings:
        return Timings(*(a - b for a, b in zip(astuple(self), astuple(other))))


class Evaluator:
    def __init__(self, metrics: list[Metric], engine: JudgeEngine, embedder: Embedder | None, language: str,
                 window: int):
        self.metrics, self.engine, self.embedder = metrics, engine, embedder
        self._by_name = {metric.name: metric for metric in metrics}
        self.language, self.window = language, window
        self.timings = Timings()

    def run(self, samples: list[Sample], progress: Progress = NoProgress()) -> Iterator[SampleResult]:
        """Score `samples`, yielding each sample's result as soon as its window is done."""
        for start in range(0, len(samples), self.window):
            results = self._score_window(samples[start:start + self.window], progress)
            progress.finished(len(results))
            yield from results

    def _score_window(self, samples: list[Sample], progress: Progress) -> list[SampleResult]:
        outcomes: dict[tuple[int, str], MetricResult] = {}
        waiting: dict[tuple[int, str], tuple[Step, list]] = {}
        for index, sample in enumerate(samples):
            for metric in self.metrics:
                key = (index, metric.name)
                unmet = self._unmet(sample, metric)
                if unmet:
                    outcomes[key] = MetricResult.null(unmet)
                else:
                    self._start(key, metric, sample, outcomes, waiting)
        while waiting:
            replies = self._answer_round(waiting, progress)
            current, waiting = waiting, {}
            for key, (steps, _) in current.items():
                self._advance(key, steps, replies[key], outcomes, waiting, samples[key[0]].id)
        return [
            SampleResult(sample.id, self._language(sample),
                         {m.name: m.with_every_part(outcomes[(i, m.name)]) for m in self.metrics})
            for i, sample in enumerate(samples)
        ]

    def _language(self, sample: Sample) -> str:
        return sample.language or self.language

    def _unmet(self, sample: Sample, metric: Metric) -> str | None:
        missing = sample.missing(metric.requires)
        if missing:  # an empty answer said apart from none: a RAG system that answers "" is worth knowing of
            return ", ".join(f"{'missing' if getattr(sample, name) is None else 'empty'} {name}" for name in missing)
        if self._language(sample) not in SUPPORTED_LANGUAGES:
            return f"sentence splitting does not support language '{self._language(sample)}'"
        return None

    def _start(self, key, metric: Metric, sample: Sample, outcomes, waiting) -> None:
        """A metric's steps begun on a sample: a generator is run to its first requests; a plain function, of a
        metric of one's own that asks no model, gives its result at once."""
        who = _who(metric, sample.id)
        steps = _raised_as_failure(metric, who, lambda: metric.steps(sample, self._language(sample)))
        if inspect.isgenerator(steps):
            self._advance(key, steps, None, outcomes, waiting, sample.id)
        else:
            outcomes[key] = _checked_result(metric, steps, who)

    def _advance(self, key, steps: Step, reply, outcomes, waiting, sample_id: str) -> None:
        """Run one metric to its next request list (kept in `waiting`) or to its result."""
        metric = self._by_name[key[1]]
        who = _who(metric, sample_id)
        try:  # answers reach a metric only if they fit their schemas (engine/conformance.py)
            requests = _raised_as_failure(metric, who, lambda: steps.send(reply), finished_by_stop=True)
        except StopIteration as done:
            outcomes[key] = _checked_result(metric, done.value, who)
        else:
            waiting[key] = (steps, _checked_requests(metric, requests, who))

    def _answer_round(self, waiting, progress: Progress) -> dict:
        """Answer every waiting request list: judge requests in one engine call, texts in one encode."""
        judge_keys = [k for k, (_, reqs) in waiting.items() if reqs and isinstance(reqs[0], JudgeRequest)]
        embed_keys = [k for k, (_, reqs) in waiting.items() if reqs and isinstance(reqs[0], EmbedRequest)]
        replies = {k: [] for k in waiting}
        if judge_keys:
            started = time.perf_counter()
            flat = [r for k in judge_keys for r in waiting[k][1]]
            answers = iter(self.engine.answer(flat, progress))
            for k in judge_keys:
                replies[k] = [next(answers) for _ in waiting[k][1]]
            self.timings.judge_seconds += time.perf_counter() - started
            self.timings.judge_requests += len(set(flat))  # as the engine and the progress line count them
        if embed_keys:
            started = time.perf_counter()
            texts = [t for k in embed_keys for req in waiting[k][1] for t in req.texts]
            vectors = self.embedder.embed(texts)
            offset = 0
            for k in embed_keys:
                for req in waiting[k][1]:
                    replies[k].append(vectors[offset:offset + len(req.texts)])
                    offset += len(req.texts)
            self.timings.embed_seconds += time.perf_counter() - started
            self.timings.embedded_texts += len(texts)
        return replies


def _who(metric: Metric, sample_id: str) -> str:
    """How a metric's failure names it, with the sample it failed on."""
    return f"metric {metric.name!r} on sample {sample_id}"


def _raised_as_failure(metric: Metric, who: str, step: Callable[[], Any], finished_by_stop: bool = False) -> Any:
    """`step()`; what a user's metric raises in it is a MetricFailed naming the sample, file and line: one message,
    not a traceback through the engine (Python keeps the cause). A built-in metric's is localeval's own bug. A
    StopIteration is a generator's end where `finished_by_stop`, else a failure (out of a plain function, Python
    made it 'generator raised StopIteration', a traceback: a review)."""
    try:
        return step()
    except Exception as error:
        if metric.name in BUILT_IN or (finished_by_stop and isinstance(error, StopIteration)):
            raise
        raise MetricFailed(f"{who} failed: {where_raised(error, _file_of(metric))}") from error


def _file_of(metric: Metric) -> str | None:
    """Where its steps were written: kept by a class sent whole to a Ray worker, and "<stdin>"-like in a REPL."""
    code = getattr(type(metric).steps, "__code__", None)  # a callable object has none
    return code.co_filename if code is not None else None


# A metric of a user's own (metrics/custom.py) is checked here for what only a sample shows: a step that
# yielded one request, not a list, failed as "'JudgeRequest' object is not subscriptable" deep in a round,
# and a score of 1.5 went into the summary's mean (a probe).

def _checked_requests(metric: Metric, requests: Any, who: str) -> list:
    if not (isinstance(requests, list) and (all(isinstance(r, JudgeRequest) for r in requests)
                                            or all(isinstance(r, EmbedRequest) for r in requests))):
        raise MetricFailed(f"{who}: each step must yield a list of JudgeRequest, or a list of "
                        f"EmbedRequest (the answers come back as a list, in order); it yielded {_shown(requests)}")
    if requests and isinstance(requests[0], EmbedRequest) and not metric.uses_embedder:  # no embedder was loaded
        raise MetricFailed(f"{who}: it asks for embeddings: set uses_embedder = True on its class")
    return requests


def _checked_result(metric: Metric, result: Any, who: str) -> MetricResult:
    """The result as results.jsonl promises it: a plain float in [0, 1] or None with a reason, and only the
    sub-scores the metric names, each in range (a numpy float went to the summary as null, and a sub-score
    of 7.0 into its mean: a review)."""
    if not isinstance(result, MetricResult):
        raise MetricFailed(f"{who}: steps() must return a MetricResult; it returned {_shown(result)}")
    try:  # results.jsonl's line: a numpy number there was a traceback, exit 1, after the sample was scored (a review)
        json.dumps(result.evidence, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise MetricFailed(f"{who}: its evidence must hold plain JSON values (str, int, float, bool, None, lists "
                           f"and dicts of them), as results.jsonl keeps them: {error}") from None
    unnamed = set(result.parts) - {*metric.part_names, *metric.list_part_names}
    if unnamed:
        raise MetricFailed(f"{who}: its result has sub-scores {', '.join(map(repr, sorted(unnamed)))} "
                        "that its part_names (or list_part_names) do not name")
    parts = {name: _score_of(metric.name, name, value, who) if name in metric.part_names else value
             for name, value in result.parts.items()}  # the scalar ones checked, the per-chunk lists as they are
    if result.score is None:  # every null score says why (results.jsonl's promise)
        return replace(result, null_reason=result.null_reason or f"{metric.name} gave no reason", parts=parts)
    return replace(result, score=_score_of(metric.name, metric.name, result.score, who), parts=parts)


def _score_of(metric: str, name: str, value: Any, who: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real) or not -ROUNDING <= value <= 1 + ROUNDING:
        raise MetricFailed(f"{who}: {'a score' if name == metric else f'sub-score {name!r}'} is a number "
                        f"from 0 to 1, or None (with a null_reason: MetricResult.null(reason)); it returned {value!r}")
    return min(1.0, max(0.0, float(value)))  # a formula's float error past 0 or 1, and numpy's floats, made plain


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:120]
