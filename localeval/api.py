"""`localeval.evaluate`: the whole pipeline from Python, the same one the CLI runs."""

from __future__ import annotations

import html
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from . import models
from .bench.labels import human_scores
from .calibration import (CalibrationWarning, applied, applies_none, described, fit_warnings, load_thresholds,
                          outdated_thresholds, scoring_overridden, seen_in_fitting)
from .cluster import Cluster, cluster_for, scored_on
from .data import frame_gives_ids, load_samples, names_a_file, pandas_of_a_frame, samples_in_memory
from .engine.cache import AnswerCache
from .device import DTYPES, INT8, choose_device, dtype_name
from .engine.embedder import Embedder, SentenceTransformerEmbedder
from .engine.judge import Judge, TransformersJudge
from .engine.limits import BatchLimits
from .errors import (LocalevalWarning, UnknownScore, UserError, closest, count_of, kept_warning, said_and_kept, warn,
                     warned)
from .evaluation import SampleResult
from .metrics import METRICS, RAGAS_EQUIVALENTS, JudgeSettings, did_you_mean, resolve_metrics, result_names
from .metrics.sources import loading
from .options import check_paths, keyword_arguments, known_keywords
from .pipeline import PipelineRecipe, build_embedder, build_judge, build_scoring
from .progress import NoProgress, progress_for, to_stderr
from .results import sample_inputs
from .summary import format_table, is_number, summarize
from .samples import Sample
from .scoring_rules import SCORING_RULES
from .text import DEFAULT_LANGUAGE, check_language
from .trust import (FewLabelsWarning, NothingScoredWarning, UnmeasuredJudgeWarning, WeakJudgeWarning, few_labels,
                    nothing_scored, samples_warned, unmeasured_judge_note, weak_judge_warning)
from .tuning import check_choice, metric_settings, settings_used

if TYPE_CHECKING:  # an optional dependency (localeval[pandas]): imported by to_pandas() where it is called
    import pandas


# Models whose weights are in this process's memory (load_judge, load_embedder): they cannot go to Ray
LOADED_HERE = (TransformersJudge, SentenceTransformerEmbedder)


def as_samples(samples: Any) -> list[Sample]:
    """A dataset path; Samples, or dicts with the dataset's field names (aliases included); a pandas
    DataFrame; or a dataset object with to_list() (datasets.Dataset, ragas EvaluationDataset)."""
    if isinstance(samples, Path) or (isinstance(samples, str) and names_a_file(samples)):
        return load_samples(samples)
    return samples_in_memory(samples)


# eq=False: one call's result is itself; its timings differ from any other's, and == on its fields raised for a
# DataFrame's index (a notebook probe); rows() compare
@dataclass(eq=False)
class EvaluationResult:
    """What evaluate() gives back: `result["metric"]` is every sample's score in the samples' order (None where
    it could not be given, the reason in `rows()`), `summary()` each metric's mean and interval, `rows()` the
    lines results.jsonl would hold (scores and evidence; two calls' are equal where they scored alike),
    `to_pandas()` one row per sample, and `details` the call's timings, warnings and calibration."""
    samples: list[SampleResult]
    metrics: list[str]
    details: dict[str, Any] = field(default_factory=dict)
    human: dict[str, dict[str, float | None]] | None = None  # from `labels`: people's scores by sample id
    inputs: list[Sample] = field(default_factory=list)  # the samples scored, for to_pandas()
    frame_index: Any = None  # the index of a DataFrame, for to_pandas() (_index_given_back)
    frame_ids: dict[str, Any] | None = None  # a DataFrame's integer ids by the string each became (_frame_ids)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per sample, as a line of results.jsonl: its id, each score and each metric's evidence."""
        return [s.to_json() for s in self.samples]

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per metric: mean, 95% bootstrap interval, scored and null counts; with `labels`, the
        mean corrected for the judge's bias on the labeled samples."""
        return summarize(self.rows(), self.metrics, self.human)

    def __getitem__(self, name: str) -> list[float | None]:
        """One score of every sample, in the samples' order, None where it could not be given:
        `result["faithfulness"]`, as ragas's result gives it (a list, not the mean: summary() has that)."""
        if name in self.metrics:
            return [row.get(name) for row in self.rows()]
        raise UnknownScore(_not_a_score(name, self.metrics))

    __iter__ = None  # not a sequence of scores by position: result[0] is a mistake, not the first sample

    def __repr__(self) -> str:
        """One line for a notebook's cell (the evidence of every sample ran to kilobytes): the samples,
        each score's mean and its nulls; summary() has the intervals, rows() and to_pandas() the rest."""
        return self._line(self.rows())

    def _line(self, rows: list[dict[str, Any]]) -> str:
        means = []
        for name in self.metrics:
            scores = [row[name] for row in rows if row.get(name) is not None]
            mean = f"{sum(scores) / len(scores):.3f}" if scores else "none scored"
            nulls = len(rows) - len(scores)
            means.append(f"{name} {mean}" + (f" ({nulls} null)" if nulls and scores else ""))
        return f"<EvaluationResult: {count_of(len(rows), 'sample')}; means: {', '.join(means) or 'no metric'}>"

    def __len__(self) -> int:
        """The samples scored."""
        return len(self.samples)

    def _repr_html_(self) -> str:
        """A notebook's display: the one line, and the table of means, intervals and nulls that `run` prints (the
        rows made once: a display of 90,000 samples made them three times)."""
        rows = self.rows()
        table = format_table(summarize(rows, self.metrics, self.human)) if self.metrics else ""
        return f"<pre>{html.escape(self._line(rows))}\n\n{html.escape(table)}</pre>"

    def to_pandas(self) -> pandas.DataFrame:
        """One row per sample: the inputs under ragas's column names (user_input, retrieved_contexts,
        response, reference), the language it was split and judged in, then each score (evidence stays in
        `rows()`). Samples from a DataFrame come
        back in its order on its own index (unless that is the ids, or repeats a label), the ids in a
        column, so that a join on the index lines up; the others are indexed by id. A DataFrame's integer
        ids stay integers, so that a merge on its id column matches."""
        import pandas as pd

        inputs = {sample.id: sample_inputs(sample) for sample in self.inputs}
        frame = pd.DataFrame([
            {**inputs.get(row["id"], {}), **{k: v for k, v in row.items() if k != "evidence"}} for row in self.rows()
        ]).set_index("id")
        # A score no sample could give is a column of None: NaN in float64, as the others are.
        frame = frame.astype(dict.fromkeys((name for name in self.metrics if name in frame.columns), "float64"))
        if self.frame_ids is not None:
            frame.index = pd.Index([self.frame_ids[sample_id] for sample_id in frame.index], name="id")
        return frame if self.frame_index is None else frame.reset_index().set_axis(self.frame_index)


# evaluate()'s warnings point at its caller's line: past evaluate's own frame and its two decorators'
CALLER = 4


# ragas.evaluate()'s keywords, as a ragas user writes them, -> what to write here
RAGAS_KEYWORDS = {
    "dataset": "ragas's dataset= is samples= here, the first argument",
    "llm": "ragas's llm= is judge= here: a registered judge's name or a model folder",
    "embeddings": "ragas's embeddings= is embedder= here",
    "column_map": "no column map here: rename the columns; ragas's own names are read as they are",
}


@known_keywords(elsewhere=RAGAS_KEYWORDS)
@keyword_arguments()  # its messages name options as this function's keywords, not the CLI's flags
def evaluate(
    samples: Iterable[Sample | dict[str, Any]] | str | Path | Any,
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
    window: int | None = None,
    progress: bool = False,
    ray: str | None = None,
    workers: int | None = None,
    gpus_per_worker: float | None = None,
    cpus_per_worker: float | None = None,
) -> EvaluationResult:
    """Score `samples` with the given metrics (default: the five of DEFAULT_METRICS; "all": every
    metric). `samples`: a dataset path, a list of dicts, Samples, pydantic models or dataclasses, a pandas
    DataFrame, or a dataset with `to_list()` (a Hugging Face Dataset, a ragas EvaluationDataset); ragas's
    field names, old and new, are read (README, "Coming from ragas").

    `judge` and `embedder` take a registered model name, a local model directory, or an object
    with the Judge / Embedder interface (load_judge's and load_embedder's, loaded once for many calls;
    a ScriptedJudge in tests); given by name or folder, a model is loaded anew on every call (seconds).
    `settings`: one
    JudgeSettings for every metric or one per metric name (a metric left out: the judge's measured
    settings for it); None: the judge's measured settings
    (localeval/tuning.py), scored by `scoring` ("auto", "hard" or "soft") or by the thresholds
    that `calibration` (a `bench --calibrate` file, or the folder it is in) gives the judge. `labels`: a labeled file in
    bench's format for some of the samples; `summary()` then corrects each mean with them.

    `ray`: score on a Ray cluster ("local", or a running cluster's address) with `workers` Ray
    workers (default 2), each holding its own judge and embedder on `gpus_per_worker` GPUs
    (default 0) or `cpus_per_worker` CPU cores (default 1); without `ray` these are refused (needs
    localeval[ray]; README, "Scaling out on Ray").

    `language`: the sentence splitter's language for samples that name none ("en"; "zh" works). `device`:
    "auto" (a GPU where there is one), "cpu" or "cuda"; `dtype`: "auto" (the judge's measured dtype for the
    device), "float32", "bfloat16", "float16" or "int8". `limits`: the batch limits (BatchLimits; batch_size
    None: the judge's own, 16 rows for SmolLM2 on a CPU, else 32). `cache`: True keeps the judge's answers
    in the user's answer cache (a call asked again costs nothing), False keeps none, or an AnswerCache of
    your own. `window`: samples scored together (None: 8 on a CPU, 64 on a GPU).
    `progress`: a bar (or lines, where stderr is no terminal) on stderr. Metrics of your own:
    register_metric (`localeval docs custom-metrics`).

    Raises UserError for a mistake in the arguments or the data (before any model loads, where it can be
    seen then) or a judge object of your own that breaks its contract while scoring, EnvironmentFailure
    where the machine stops the call (a Ray cluster that does not answer, a judge whose outputs are not
    numbers), MemoryError when memory runs out; nothing of the call is kept. A registered judge known to
    agree poorly with people (the default among them) gives a WeakJudgeWarning naming the judge that agrees
    best.
    """
    if loading() is not None:  # a file's own example run, unguarded: minutes of another evaluation first
        raise UserError('it calls localeval.evaluate() as it is loaded: put that call under `if __name__ == '
                        '"__main__":`, so that loading the file only registers its metrics')
    language = check_language(language)  # de-DE is de
    judge, embedder = _model_argument("judge", judge, "generate"), _model_argument("embedder", embedder, "embed")
    _check_arguments(settings, limits, cache, window, progress)
    check_paths({"labels": labels, "calibration": calibration})
    cluster = _cluster_asked(device, dtype, ray, workers, gpus_per_worker, cpus_per_worker)
    _check_loaded_dtype(judge, dtype)
    frame_index, frame_ids = _index_given_back(samples), _frame_ids(samples)
    # warned at the caller's line (CALLER), and kept: what summary.json's
    # "warnings" keeps for a run, the result keeps too, whatever the caller's filters show
    samples, said = said_and_kept(lambda: as_samples(samples), caller_level=CALLER)
    if not samples:  # a file with none is refused too; an empty result would fail later, in to_pandas()
        raise UserError("no samples to evaluate")
    cluster = cluster and cluster.for_samples(len(samples))
    settings, thresholds, calibrated = _settings_for(judge, settings, scoring, calibration)
    chosen = resolve_metrics(metrics, settings, by_name_only=True)
    said += samples_warned(samples, chosen, language, embedder, caller_level=CALLER)
    said += warned([models.folder_passed_over(judge, "judge"), models.folder_passed_over(embedder, "embedder")],
                   LocalevalWarning, caller_level=CALLER)
    if isinstance(embedder, str) and not any(metric.uses_embedder for metric in chosen):
        said += warned([models.unused_name_warning(embedder, "embedder")], LocalevalWarning, caller_level=CALLER)
    if labels is not None:
        human, label_warnings = said_and_kept(lambda: human_scores(labels, samples, [m.name for m in chosen]),
                                              caller_level=CALLER)
        said.extend(label_warnings)
    else:
        human = None
    if ray is not None and any(isinstance(model, LOADED_HERE) for model in (judge, embedder)):
        raise UserError("ray=: a judge or embedder loaded in this process (load_judge, load_embedder) cannot go to "
                        "Ray's workers; give its name or folder, and each worker loads its own")
    recipe = PipelineRecipe(chosen, judge, embedder, device, dtype, limits, cache, language, window)
    # what setting up warns of (emulated bfloat16, a forked process) is kept too
    (pipeline, score), set_up = said_and_kept(  # a library's stdout is its caller's: log to stderr
        lambda: build_scoring(recipe, cluster, to_stderr), caller_level=CALLER)
    said += set_up
    # which file, and which thresholds it gave this call's metrics
    calibration_applied = None if calibrated is None else applied(calibrated, thresholds, [m.name for m in chosen])
    # at the caller's line (CALLER), once nothing is left to refuse the call
    said += warned([outdated_thresholds(calibration_applied),
                    *fit_warnings(calibration_applied, pipeline.judge, settings_used(chosen)),
                    scoring_overridden(calibration_applied, scoring),
                    seen_in_fitting(calibration_applied, samples, human, labels)], CalibrationWarning, caller_level=CALLER)
    said += warned([weak_judge_warning(models.judge_name(judge)) if any(m.asks_a_model() for m in chosen) else None],
                   WeakJudgeWarning, caller_level=CALLER)
    if unused := applies_none(calibration_applied, thresholds or {}):  # kept as run keeps it, a note
        warn(CalibrationWarning(unused), stacklevel=CALLER)
        said.append(f"note: {unused}")
    if unmeasured := unmeasured_judge_note(judge, labels is not None or bool(thresholds)):
        warn(UnmeasuredJudgeWarning(unmeasured), stacklevel=CALLER)  # at the caller's line
        said.append(f"note: {unmeasured}")  # as summary.json keeps run's
    bar = NoProgress() if not progress else progress_for(samples=len(samples)) if cluster is None else cluster.progress()
    try:
        results = _in_order(score(samples, bar), samples)
    finally:
        bar.close()
    # plain values, as summary.json has them: a notebook saves details with json.dump
    said += [kept_warning(message) for message in pipeline.said_while_scoring()]  # warned as they came
    details: dict[str, Any] = {"device": scored_on(pipeline.device, cluster), "scoring_rules": SCORING_RULES,
                               "timings": asdict(pipeline.evaluator.timings), "warnings": said}
    if cluster is not None:  # the workers' seconds added up, as summary.json's timings say
        details["timings"]["workers"] = cluster.workers
    if calibration_applied is not None:
        details["calibration"] = described(calibration_applied)
    result = EvaluationResult(results, result_names(chosen), details, human, samples, frame_index, frame_ids)
    if human is not None and (few := few_labels(result.summary())):  # counted on what the labels corrected
        warn(FewLabelsWarning(few), stacklevel=CALLER)  # at the caller's line
        details["warnings"].append(f"note: {few}")  # as summary.json keeps run's
    scored = {metric.name: sum(is_number(sample.score(metric.name)) for sample in results) for metric in chosen}
    if unscored := nothing_scored(scored, len(results)):
        warn(NothingScoredWarning(unscored), stacklevel=CALLER)
        details["warnings"].append(f"note: {unscored}")
    return result


def _not_a_score(name: object, scores: list[str]) -> str:
    """Why result[name] has no scores: a metric this call did not score, a ragas name, or a typo."""
    given = ", ".join(scores)
    if not isinstance(name, str):
        return f"give a score's name, one of: {given}; got {name!r}"
    if name in result_names(list(METRICS.values())):
        return f"{name!r} was not scored in this call, whose scores are {given}"
    ours = RAGAS_EQUIVALENTS.get(name)
    if ours is not None and ours not in scores:  # "did you mean" would offer a name that fails too (a review)
        return f"{name!r} is ragas's name for localeval's {ours!r}, not scored in this call, whose scores are {given}"
    near = closest(name, scores, 0.75, normal=str.lower)
    hint = f" did you mean '{near}'?" if near else did_you_mean(name, for_gates=True)
    return f"{name!r} is not a score of this result, whose scores are {given};{hint}".rstrip(";")


def _settings_for(judge: Any, settings: Any, scoring: str, calibration: Any) -> tuple[Any, dict | None, dict | None]:
    """How each metric is asked and scored: `settings` as given (completed with the judge's measured ones for
    the metrics a dict leaves out), or the judge's measured settings, scored by `scoring` or by the thresholds
    that `calibration` gives; with those thresholds and the calibration they came from."""
    if settings is not None:
        if scoring != "auto" or calibration is not None:
            raise UserError("give either settings= (which include the scoring) or scoring= / calibration=, not both")
        return (_per_metric(settings, judge) if isinstance(settings, Mapping) else settings), None, None
    check_choice("scoring", scoring)
    thresholds, calibrated = (None, None) if calibration is None else load_thresholds(
        calibration, models.judge_name(judge), models.judge_folder(judge))
    return metric_settings(judge, scoring=scoring, thresholds=thresholds), thresholds, calibrated


def _index_given_back(data: Any) -> Any:
    """A DataFrame's own index, so that to_pandas() lines up with the frame, as ragas's does: samples without
    ids are numbered 1, 2, ..., which matches no label of a default index (0, 1, ...), so a join gave a
    column of NaN; ids 1, 2, ... in an `id` column matched the wrong ones, every score a row off, unsaid (a
    probe). The ids are then a column. Not for an index that is the ids (named `id`), which to_pandas()
    gives as it is, nor for one that repeats a label: a join on it pairs every row of that label with
    every other."""
    if pandas_of_a_frame(data) is None or not data.index.is_unique:
        return None
    if data.index.name == "id" and "id" not in data.columns:  # the ids: given back as they are
        return None
    return data.index


def _frame_ids(data: Any) -> dict[str, Any] | None:
    """A DataFrame's whole-number ids (an `id` column or index), by the string each became: to_pandas() gives
    them back as they were, so a merge on them (`frame.merge(result.to_pandas(), on="id")`) matches integers
    with integers (the strings raised pandas' "merge on int64 and str columns"), and floats with floats (1.0,
    2.0: an int column pandas turned to floats in a merge; "merge on float64 and str columns")."""
    pandas = pandas_of_a_frame(data)
    if pandas is None or not frame_gives_ids(data):
        return None
    ids = data["id"] if "id" in data.columns else data.index.to_series()
    # strings stay as they are; so do ids with a missing one (a NaN, pandas' Int64 with <NA>), whose sample
    # is named by its place
    if ids.isna().any():
        return None
    if pandas.api.types.is_integer_dtype(ids):
        return {str(value): value for value in ids.tolist()}
    if pandas.api.types.is_float_dtype(ids) and all(value.is_integer() for value in ids.tolist()):
        return {str(int(value)): value for value in ids.tolist()}  # each read as its whole number
    return None


@known_keywords
@keyword_arguments()
def load_judge(judge: str | os.PathLike | None = None, *, device: str = "auto", dtype: str = "auto") -> Judge:
    """The judge (a registered name or a model folder; None: the default) loaded now, to give to
    evaluate(judge=...) call after call: given a name, evaluate() loads it anew on every call. It
    keeps the device and dtype it was loaded with; it scores as the same judge given by name does
    (its measured settings, calibrations, warnings). One process's: not for ray=."""
    _check_device(device, dtype)
    loaded = build_judge(_model_name("judge", judge), choose_device(device), dtype, log=to_stderr)
    loaded.load()  # now: a folder that does not load says so here, not in the first evaluate()
    return loaded


@known_keywords
@keyword_arguments()
def load_embedder(embedder: str | os.PathLike | None = None, *, device: str = "auto") -> Embedder:
    """The embedder loaded now, to give to evaluate(embedder=...) call after call, as load_judge's judge."""
    _check_device(device)
    loaded = build_embedder(_model_name("embedder", embedder), choose_device(device), log=to_stderr)
    loaded.load()
    return loaded


def _model_name(role: str, given: Any) -> str | None:
    """What load_judge and load_embedder load: a registered name or a folder (None: the default)."""
    if isinstance(given, os.PathLike):
        return os.fspath(given)
    if given is None or isinstance(given, str):
        return given
    raise UserError(f"{role}=: give a registered model name or a model folder; got {type(given).__name__}")


def _model_argument(role: str, given: Any, method: str) -> Any:
    """A registered name or a model folder (str or Path), or an object with the interface's `method`."""
    if isinstance(given, os.PathLike):
        return os.fspath(given)
    if isinstance(given, type):  # ScriptedJudge for ScriptedJudge(...): its method is there, unbound
        raise UserError(f"{role}=: give an object with {method}(), not the class {given.__name__} itself")
    if given is None or isinstance(given, str):
        return given
    if callable(getattr(given, method, None)):
        _check_interface(role, given)
        return given
    raise UserError(f"{role}=: give a registered model name, a model folder or an object with {method}(); "
                    f"got {type(given).__name__}")


# What a judge or embedder of one's own must have (README, "Python"), besides generate() or embed(): one without
# them failed in an AttributeError once scoring began, and an identity of None was a cache key (a custom-judge probe)
INTERFACE = {"judge": ("prompt_tokens", "prompt_length"), "embedder": ()}


def _check_interface(role: str, given: Any) -> None:
    identity = getattr(given, "identity", None)
    if not isinstance(identity, str) or not identity.strip():
        key = " (the answer cache's key)" if role == "judge" else ""
        raise UserError(f"{role}=: {type(given).__name__}.identity must be a non-empty string naming the model and "
                        f"everything that changes its {'answers' if role == 'judge' else 'vectors'}{key}; got "
                        f"{identity!r}")
    missing = [f"{name}()" for name in INTERFACE[role] if not callable(getattr(given, name, None))]
    # looked up, not read: a property may load a model's config, or ask a server
    declared = hasattr(type(given), "context_tokens") or "context_tokens" in getattr(given, "__dict__", {})
    if role == "judge" and not declared:
        missing.append("context_tokens (None for no limit)")
    if missing:
        raise UserError(f"{role}=: {type(given).__name__} lacks {', '.join(missing)} of the {role} interface "
                        f"(README, \"Python\")")


def _check_arguments(settings: Any, limits: Any, cache: Any, window: Any, progress: Any) -> None:
    """Mistakes in evaluate()'s arguments, refused before any model loads (the CLI's parser does this there)."""
    every_setting = settings.values() if isinstance(settings, Mapping) else [settings]
    if settings is not None and not all(isinstance(one, JudgeSettings) for one in every_setting):
        raise UserError("settings=: give a JudgeSettings, or a dict of metric name -> JudgeSettings")
    if not isinstance(limits, BatchLimits):
        raise UserError(f"limits=: give a localeval.BatchLimits; got {type(limits).__name__}")
    if not isinstance(cache, (bool, AnswerCache)):
        raise UserError(f"cache=: give True, False or a localeval.AnswerCache; got {type(cache).__name__}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise UserError(f"window=: give a whole number of samples, at least 1 (or None: the device's); got {window!r}")
    if not isinstance(progress, bool):  # "no" would show the bar
        raise UserError(f"progress=: give True or False; got {progress!r}")


def _per_metric(settings: Mapping[str, JudgeSettings], judge: Any) -> dict[str, JudgeSettings]:
    """A metric the dict leaves out is asked as the judge's measured settings say; a key that names
    no metric is a mistake (a misspelt one would otherwise leave its metric on those settings)."""
    unknown = [key for key in settings if key not in METRICS]
    if unknown:
        not_metrics = "is not a metric" if len(unknown) == 1 else "are not metrics"
        raise UserError(f"settings=: {', '.join(map(repr, unknown))} {not_metrics}; choose from {', '.join(METRICS)}")
    return {**metric_settings(judge), **settings}


def _check_loaded_dtype(judge: Any, dtype: str) -> None:
    """A judge load_judge loaded scores in the dtype it was loaded in: another asked for with dtype= was
    passed over without a word (a probe)."""
    if dtype == "auto" or judge is None or isinstance(judge, str):
        return
    if not isinstance(judge, TransformersJudge):  # passed over in silence, as it was for a loaded judge (a probe)
        raise UserError(f"dtype={dtype!r}: a judge object of your own computes as it was made; leave dtype= out")
    dtype = dtype_name(judge.device.type, dtype)  # an unknown name said as such, not as one to load it in
    loaded = INT8 if judge.int8_weights else next((name for name, kind in DTYPES.items() if kind == judge.dtype), None)
    if loaded is not None and dtype != loaded:
        raise UserError(f"dtype={dtype!r}: the judge given was loaded in {loaded} and scores in it; leave dtype= "
                        f"out, or load it in {dtype}: load_judge(..., dtype={dtype!r})")


def _cluster_asked(device: Any, dtype: Any, ray: Any, workers: Any, gpus_per_worker: Any,
                   cpus_per_worker: Any) -> Cluster | None:
    """Where it runs, checked, in the types the checks further on assume (the CLI's parser gives
    strings and numbers): the Ray cluster asked for, or None for this process."""
    _check_device(device, dtype)
    if ray is not None and not isinstance(ray, str):
        raise UserError(f"ray=: give \"local\", \"auto\" or a running cluster's \"HOST:PORT\"; got {ray!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, Integral)):
        raise UserError(f"workers=: give a whole number of Ray workers; got {workers!r}")
    for name, value in (("gpus_per_worker", gpus_per_worker), ("cpus_per_worker", cpus_per_worker)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, Real)):
            raise UserError(f"{name}=: give a number; got {value!r}")
    return cluster_for(ray, workers, gpus_per_worker, cpus_per_worker)


def _check_device(device: Any, dtype: Any = "auto") -> None:
    for name, value in (("device", device), ("dtype", dtype)):
        if not isinstance(value, str):
            raise UserError(f"{name}=: give its name as a string, such as \"auto\"; got {value!r}")


def _in_order(results: Iterable[SampleResult], samples: list[Sample]) -> list[SampleResult]:
    """In the samples' order: Ray's windows come back in the order they finish."""
    position = {sample.id: index for index, sample in enumerate(samples)}
    return sorted(results, key=lambda result: position[result.sample_id])
