"""The `run` command: dataset in, results.jsonl and summary.json out, a table on the terminal."""

from __future__ import annotations

import json
import platform
import sys
import time
from collections import Counter
from contextlib import closing, redirect_stdout
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from . import __version__
from . import models
from .bench.labels import human_scores
from .calibration import (CalibrationWarning, applied, applies_none, described, fit_warnings, load_thresholds,
                          outdated_thresholds, scoring_overridden, seen_in_fitting)
from .cluster import Cluster, cluster_for, scored_on
from .data import load_samples
from .engine.cache import unwritable as cache_unwritable
from .engine.cache import default_cache_dir
from .engine.limits import BatchLimits
from .errors import (EXIT_BELOW_THRESHOLD, EXIT_INTERRUPTED, EXIT_OK, EnvironmentFailure, LocalevalWarning,
                     MetricFailed, ScoringStopped, UserError, count_of, for_terminal, kept_warning, out_of_memory,
                     said_and_kept, warned)
from .gating import caveats, failures, outcomes, parse_gates
from .metrics import resolve_metrics, result_names
from .metrics.sources import MetricSource, code_of, load_metric_sources, unscored
from .options import check_counts, check_paths, limit_beyond
from .out_folder import check_ours
from .paths import users_folders
from .progress import NoProgress, progress_for, to_stderr
from .report import write_report
from .samples import Sample
from .scoring_rules import SCORING_RULES
from .results import (
    RESULTS_FILE,
    RESUME_AFTER_ROOM,
    RUN_OUTPUTS,
    SCHEMA_VERSION,
    SUMMARY_FILE,
    ResultWriter,
    check_appendable,
    claim_folder,
    file_digest,
    read_results,
    sample_inputs,
    write_atomically,
)
from .summary import format_null_reasons, format_table, summarize
from .text import check_language
from .trust import (WeakJudgeWarning, few_labels, nothing_scored, samples_warned, unmeasured_judge_note,
                    weak_judge_warning)
from .tuning import metric_settings, settings_used


@dataclass
class RunPlan:
    """What a run was asked, checked before anything loads, and what checking it warned of (said
    already, on stderr, and kept for summary.json)."""

    samples: list  # the data's samples, up to --limit
    metrics: list  # the Metric objects, with the judge's settings
    gates: dict[str, float]  # --fail-under, by result name
    human: dict | None  # --labels' human scores
    calibration: dict | None  # the --calibration file's thresholds this run applies, as described
    thresholds: dict[str, float]  # every threshold the file gives this judge
    data_warnings: list[str]
    label_warnings: list[str]
    weak: str | None  # the warning of a judge known to agree poorly, said at the end unless gated
    weak_gated: list[str]  # that warning, said before the scoring because the scores are gated
    calibration_warnings: list[str]
    option_warnings: list[str]  # a model named that the run does not load and that names nothing; a folder passed over
    cluster: Cluster | None  # --ray's cluster, its workers' shares checked; None: this process scores
    metric_sources: list[MetricSource]  # --metrics-from, run: its metrics registered
    labels_sha256: str | None = None  # the --labels file read: which labels corrected the means (a labels probe)


def run_command(args) -> int:
    """Every check first (options, data, models, the output folder), then the scoring: a run that is
    refused or fails before its first result leaves an earlier run's files as they were (a folder
    it made is removed)."""
    started = time.perf_counter()
    plan = _plan(args)
    # Claimed now, before torch loads (seconds): a second run aimed here is refused at once. Whatever
    # fails inside leaves an earlier run's files as they were, and a folder this run made is removed.
    with claim_folder(Path(args.out)):
        # a user's own results.jsonl is never replaced, nor added to
        check_ours(Path(args.out), RUN_OUTPUTS, appended={RESULTS_FILE} if args.resume else ())
        if args.resume:
            check_appendable(Path(args.out) / RESULTS_FILE)
        log = to_stderr
        try:  # seconds of imports: a Ctrl-C here is told that nothing was written, as it is later what was kept
            # what setting up warns of (emulated bfloat16, a forked process) kept for summary.json
            (pipeline, score), set_up = said_and_kept(lambda: _scoring_for(args, plan, log))
        except KeyboardInterrupt:
            log(f"\ninterrupted before the first sample was scored: nothing was written in {args.out}")
            return EXIT_INTERRUPTED
        # thresholds fitted on other weights than the judge's are refused before anything is written
        misfits = warned(fit_warnings(plan.calibration, pipeline.judge, settings_used(plan.metrics)),
                         CalibrationWarning)
        writer = ResultWriter(Path(args.out), args.resume, run_identity(args, pipeline, plan.metric_sources),
                              pipeline.device)
        scored = _score(args, plan.samples, writer, score, plan.cluster, pipeline, log)
        if scored is None:
            return EXIT_INTERRUPTED
        in_file = read_results(writer.path)
        rows = _in_data_order(in_file, plan.samples)
        summary = summarize(rows, result_names(plan.metrics), plan.human)
        details = _details(args, pipeline, plan.cluster, plan.samples, scored, started)
        details.update(data_sha256=writer.identity["data_sha256"], results_in_file=len(in_file))
        if plan.metric_sources:
            details["metrics_from"] = [source.recorded() for source in plan.metric_sources]
        details.update(calibration=described(plan.calibration), labels=args.labels, labels_sha256=plan.labels_sha256,
                       gates=outcomes(summary, plan.gates))
        # the exit status's answer, for a CI step that reads the file later (None: no gate)
        details["gates_passed"] = all(gate["passed"] for gate in details["gates"].values()) if plan.gates else None
        scoring_said = [kept_warning(said) for said in pipeline.said_while_scoring()]
        details["warnings"] = _kept_warnings(args, plan, [*set_up, *scoring_said, _beyond_samples(in_file, rows)],
                                             misfits, summary)
        document = {"schema_version": SCHEMA_VERSION, "metrics": summary, **details}
        write_atomically(writer.out_dir / SUMMARY_FILE, json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                         RESUME_AFTER_ROOM)
        report = write_report(writer.out_dir, rows, summary, details, plan.samples, plan.human)
        _say_outcome(args, plan, document, writer, report, said={*set_up, *scoring_said, *misfits})
        return _gate(summary, plan.gates, rows)


def _plan(args) -> RunPlan:
    """The options, data, models' names, labels, calibration and gates checked, in seconds, before
    torch loads; what the labels and calibration warn of is said before minutes of scoring."""
    check_counts(args, ("batch_size", "max_batch_tokens", "questions", "window", "limit"))
    check_paths({"labels": args.labels, "calibration": args.calibration, "out": args.out})
    if not args.data.strip():  # read as a path, the current folder
        raise UserError("DATA: it is empty; give a data file")
    args.language = check_language(args.language)  # de-DE is de
    cluster = cluster_for(args.ray, args.workers, args.gpus_per_worker, args.cpus_per_worker)
    every_sample, data_warnings = _load(args.data)
    samples = every_sample[: args.limit]
    cluster = cluster and cluster.for_samples(len(samples))
    if args.judge is not None:
        models.check_name(args.judge, "judge")
    judge_name = models.judge_name(args.judge)
    thresholds, calibration = ({}, None) if args.calibration is None else load_thresholds(
        args.calibration, judge_name, models.judge_folder(args.judge))
    metric_sources = load_metric_sources(args.metrics_from)  # before the metrics are named: it registers its own
    settings = metric_settings(args.judge, args.reasons, args.example, args.scoring, thresholds,
                               questions=args.questions)
    metrics = resolve_metrics(args.metrics, settings)
    _check_users_folders(args, metrics)  # before the samples' warnings: said at once, not after a page of them
    if calibration:  # what the summary and the notes name: the thresholds this run applies
        calibration = applied(calibration, thresholds, [m.name for m in metrics])
    option_warnings = warned([limit_beyond(args.limit, len(every_sample)), unscored(metric_sources, metrics),
                              models.embedder_checked(args.embedder, any(m.uses_embedder for m in metrics)),
                              models.folder_passed_over(args.judge, "judge"),
                              models.folder_passed_over(args.embedder, "embedder")], LocalevalWarning)
    gates = parse_gates(args.fail_under, result_names(metrics))
    left_out = frozenset(s.id for s in every_sample[len(samples):])  # left out by --limit: labels not used
    # what reading the labels warned of (labels beyond --limit) is kept, as the data's warnings are
    human, label_warnings = (None, []) if args.labels is None else said_and_kept(
        lambda: human_scores(args.labels, samples, [m.name for m in metrics], left_out))
    labels_sha256 = None if args.labels is None else file_digest(Path(args.labels).expanduser())
    # after every quick refusal (gates, labels): a page about the samples' languages before an error buried it
    data_warnings = [*data_warnings, *samples_warned(samples, metrics, args.language, args.embedder)]
    weak = weak_judge_warning(judge_name) if any(m.asks_a_model() for m in metrics) else None  # else none is asked
    # a CI job gating on a weak judge's scores gates on its noise: said before minutes of scoring, at the log's
    # top, once the labels were read (a labels file refused ends the run before it)
    # with --labels a gate compares a corrected mean, not the judge's own (gating.gated_value)
    compared = "its means corrected by --labels, where the labels allow it" if args.labels else "these scores"
    weak_gated = warned([f"{weak}; the --fail-under gates compare {compared}" if weak and gates else None],
                        WeakJudgeWarning)
    # said before minutes of scoring, so that a user can stop and label other samples or refit
    calibration_warnings = warned([outdated_thresholds(calibration),
                                   seen_in_fitting(calibration, samples, human, args.labels)], CalibrationWarning)
    return RunPlan(samples, metrics, gates, human, calibration, thresholds, data_warnings, label_warnings,
                   weak, weak_gated, calibration_warnings, option_warnings, cluster, metric_sources, labels_sha256)


def _check_users_folders(args, metrics) -> None:
    """The model store (where a registered model is used) and the cache this machine's run needs, found and, where
    they must be written, writable, or for a user with no home folder named together: they were named one run at a
    time, the store only after seconds of imports (a container probe, an HPC probe)."""
    if args.ray not in (None, "local"):  # a cluster's workers find their own
        return

    def stored(name, kind: str, used: bool) -> list[models.ModelSpec]:  # a folder of one's own needs no store,
        spec = models.registry().get(name or models.default_model(kind)) if used else None  # nor the registered
        return [spec] if spec is not None and spec.in_store else []  # embedder (a review)

    specs = [*stored(args.judge, "judge", any(m.asks_a_model() for m in metrics)),
             *stored(args.embedder, "embedder", any(m.uses_embedder for m in metrics))]
    users_folders(*[models.store_dir] * bool(specs), *[default_cache_dir] * (not args.no_cache))
    # the cache failed its first write, after the models loaded; a store, as its model was prepared
    if unwritable := [why for why in (None if args.no_cache else cache_unwritable(), models.store_unwritable(specs))
                      if why]:
        raise EnvironmentFailure("; and ".join(unwritable))


def _kept_warnings(args, plan: RunPlan, set_up: list[str], misfits: list[str], summary: dict) -> list[str]:
    """summary.json's "warnings": every warning of the run, said before the scoring or not."""
    few = few_labels(summary)
    none_scored = nothing_scored({name: row["scored"] for name, row in summary.items()}, len(plan.samples))
    unmeasured = unmeasured_judge_note(args.judge, args.labels is not None or bool(plan.thresholds))
    unused = applies_none(plan.calibration, plan.thresholds)
    return [w for w in [
        *plan.data_warnings, *plan.option_warnings, *plan.label_warnings, *set_up, *(plan.weak_gated or [_warning(plan.weak)]),
        unused and f"note: {unused}",
        *plan.calibration_warnings, *misfits, _warning(scoring_overridden(plan.calibration, args.scoring)),
        unmeasured and f"note: {unmeasured}", few and f"note: {few}", none_scored and f"note: {none_scored}"] if w]


def _say_outcome(args, plan: RunPlan, document: dict, writer: ResultWriter, report: Path, said: set[str]) -> None:
    """The table of means, why some are null and where the files are, on stdout, or on stderr where stdout is
    --json's document; the warnings not said yet after the table, on stderr as every other warning is (a
    batch job's stderr log missed the weak judge's, printed on stdout: an HPC probe)."""
    say = to_stderr if args.json else print
    say(format_table(document["metrics"]))
    if why_null := format_null_reasons(document["metrics"]):
        say(f"\n{why_null}")
    said = {*said, *plan.data_warnings, *plan.option_warnings, *plan.label_warnings, *plan.weak_gated,
            *plan.calibration_warnings}
    unsaid = [w for w in document["warnings"] if w not in said]
    sys.stdout.flush()  # the table first in a log of both streams (Slurm's): a file's stdout waits in its buffer
    for note in [*unsaid, _applied_calibration(plan.calibration, len(plan.metrics))]:
        if note:  # "localeval: " as every warning on stderr has it: one prefix for a CI log to look for
            to_stderr(f"\nlocaleval: {for_terminal(note)}")
    say(f"\n{count_of(len(plan.samples), 'sample')} ({document['scored_this_run']} of them by this run) in "
        f"{document['timings']['total_seconds']:.1f} s; results in {for_terminal(str(writer.path))}, report in "
        f"{for_terminal(str(report))}")  # an --out with ESC or a line break in it, as the warnings show it
    if args.json:
        print(json.dumps(document))  # escaped: a stdout that cannot encode an id would print '?' for it


def _scoring_for(args, plan: RunPlan, log):
    """The pipeline with its models found, not loaded, and the scoring, here or on the plan's cluster.
    Imported only now: the engine brings torch and transformers (seconds), and a mistyped option or a
    bad file should be answered at once."""
    from .interrupts import held

    with held():  # torch and transformers whole, whenever Ctrl-C comes (interrupts.py)
        from .pipeline import PipelineRecipe, build_scoring

    recipe = PipelineRecipe(plan.metrics, args.judge, args.embedder, args.device, args.dtype,
                            BatchLimits(args.batch_size, args.max_batch_tokens), not args.no_cache,
                            args.language, args.window)
    return build_scoring(recipe, plan.cluster, log)


def _in_data_order(rows: list[dict], samples: list) -> list[dict]:
    """This run's rows in the data's order, whatever order they were written in (Ray's windows come back
    as they finish, a resume adds the rest at the end): the summary's bootstrap draws by position, so
    the same scores give the same intervals however they were scored (a probe: a Ray run's differed
    from one process's). A resumed folder may hold samples this run left out (--limit)."""
    position = {sample.id: index for index, sample in enumerate(samples)}
    return sorted((row for row in rows if str(row.get("id")) in position), key=lambda row: position[str(row["id"])])


def _beyond_samples(in_file: list[dict], rows: list[dict]) -> str | None:
    """Said where results.jsonl holds more than this run's samples: a resume with a smaller --limit kept an
    earlier invocation's, and means taken over the file then differed from summary.json's (a probe)."""
    if len(in_file) == len(rows):
        return None
    return (f"note: {RESULTS_FILE} holds {count_of(len(in_file), 'result')}, {len(in_file) - len(rows)} of them for "
            f"samples this run left out (an earlier run scored them; --limit); the summary and the report are of "
            f"this run's {count_of(len(rows), 'sample')}")


def _load(path: str) -> tuple[list, list[str]]:
    """The samples, and what reading them warned of (fields left unread, ids left out): said now, and
    kept for summary.json and the report, where a reader of a run's files looks for it."""
    return said_and_kept(lambda: load_samples(path))


def _score(args, samples, writer: ResultWriter, score, cluster, pipeline, log) -> int | None:
    """Score the samples not yet in results.jsonl, a line each as they finish; how many were scored
    now, or None if interrupted (what was scored is kept)."""
    todo = [s for s in samples if s.id not in writer.done_ids]
    if writer.resuming:
        again = ": that sample is scored again" if todo else ""  # else it is not among those asked for (--limit)
        torn = f" (its last line, cut short when the run stopped, is dropped{again})" if writer.last_line.torn else ""
        log(f"resuming: {len(samples) - len(todo)} of {count_of(len(samples), 'sample')} already scored in "
            f"{writer.path}{torn}")
        if not todo:  # no first result to mend the last line before: mended now, and the file whole
            writer.mend()
    elif args.resume:  # a CI job's first run, with --resume on every run: said so, not "0 already scored"
        log(f"--resume: nothing to resume in {writer.out_dir} (no {writer.path.name}); scoring from the start")
    elif writer.replacing:  # said before the models load, while Ctrl-C still loses nothing
        them = "it" if writer.replacing == 1 else "them"
        log(f"note: {writer.path} holds {count_of(writer.replacing, 'scored sample')} of an earlier run; this run "
            f"replaces {them} when it writes its first result (--resume keeps {them} and scores only the rest)")

    bar = NoProgress() if args.quiet else _progress(todo, cluster)
    inputs = {s.id: sample_inputs(s) for s in todo} if args.with_inputs else {}
    try:
        # Closed here, not when collected: a Ray cluster shuts down while stdout still goes to stderr,
        # where what libraries print while scoring belongs (Ray's notes of a lost worker, printed to
        # stdout, broke --json's JSON).
        with redirect_stdout(sys.stderr), closing(score(todo, bar)) as results:
            for result in results:
                row = result.to_json()
                writer.write({"id": row["id"], "language": row["language"], **inputs.get(result.sample_id, {}), **row})
    except KeyboardInterrupt:
        bar.close()
        log(f"\ninterrupted: {_saved(writer)}; {_rerun(writer)}")
        return None
    except ScoringStopped as error:
        raise EnvironmentFailure(f"{error}; {_saved(writer)}; {_rerun(writer)}") from None
    except MetricFailed as error:
        raise MetricFailed(f"{error}; {_mend(writer)}") from None
    except (MemoryError, RuntimeError, OSError) as error:
        if not out_of_memory(error):
            raise
        raise EnvironmentFailure(f"out of memory on {pipeline.device}; {_saved(writer)}. "
                                 f"Lower --batch-size or --max-batch-tokens and {_rerun(writer)}") from None
    finally:
        bar.close()
        writer.close()
    return writer.written


def _progress(todo, cluster):
    if cluster is None:  # the engine reports each request
        return progress_for(f"judging {count_of(len(todo), 'sample')}", samples=len(todo))
    return cluster.for_samples(len(todo)).progress()  # a resume's few left start as few workers


def _gate(summary: dict, gates: dict[str, float], rows: list[dict]) -> int:
    """On stderr, where a CI log shows it whether or not stdout is the JSON, after what stdout holds."""
    sys.stdout.flush()
    for line in caveats(summary, gates):
        print(f"fail-under: {line}", file=sys.stderr)
    failed = failures(summary, gates, rows)
    for line in failed:
        print(f"fail-under: {line}", file=sys.stderr)
    if failed:
        return EXIT_BELOW_THRESHOLD
    if gates:
        print(f"fail-under: {'all ' if len(gates) > 1 else ''}{count_of(len(gates), 'gate')} passed", file=sys.stderr)
    return EXIT_OK


def run_identity(args, pipeline, metric_sources: list[MetricSource]) -> dict:
    """What makes two runs the same run, whose results may go in one results.jsonl (--resume): the
    data, the models (with their weights' digest and dtype), the metrics and how each is asked and
    scored, a metric of one's own by its code's digest. Not the batch limits or --limit, which change
    neither a sample's requests nor its score."""
    names = [m.name for m in pipeline.metrics]
    return {
        "data_sha256": file_digest(Path(args.data).expanduser()),  # the file read: "~/x" quoted, unexpanded
        "judge": pipeline.judge.identity,
        "embedder": _identity(pipeline.embedder),
        "metrics": names,
        "settings": _asked(args, pipeline.metrics),
        "scoring_rules": SCORING_RULES,  # the same answers score otherwise under other rules
        # one results.jsonl, one shape of line; recorded only when set, so that a run.json written
        # before it was recorded reads as what it was, a run without the inputs
        **({"with_inputs": True} if args.with_inputs else {}),
        **code_of(metric_sources, names),
    }


def _asked(args, metrics) -> dict:
    """How each metric is asked and scored: part of a run's identity, and recorded in its summary."""
    return {**settings_used(metrics), "questions": args.questions, "language": args.language}


def _warning(message: str | None) -> str | None:
    return message and kept_warning(message)


def _identity(model) -> str | None:
    return None if model is None else model.identity


def _applied_calibration(calibration: dict | None, n_metrics: int) -> str | None:
    """For the terminal: thresholds move scores. Not a warning (the report has its own paragraph on them)."""
    if calibration is None or not calibration["thresholds"]:
        return None
    applied = ", ".join(f"{metric} {threshold:.3g}" for metric, threshold in calibration["thresholds"].items())
    others = "; the other metrics are scored as --scoring says" if n_metrics > len(calibration["thresholds"]) else ""
    return f"note: verdict thresholds from {calibration['path']}: {applied}{others}"


def _details(args, pipeline, cluster, samples: list[Sample], scored, started) -> dict:
    judge, embedder, engine, evaluator = pipeline.judge, pipeline.embedder, pipeline.engine, pipeline.evaluator
    stats = getattr(judge, "stats", None)
    timings = {
        "total_seconds": time.perf_counter() - started,
        "judge_seconds": evaluator.timings.judge_seconds,
        "embed_seconds": evaluator.timings.embed_seconds,
        "judge_load_seconds": getattr(judge, "load_seconds", 0.0),
        "embedder_load_seconds": getattr(embedder, "load_seconds", 0.0),
    }
    now = datetime.now(UTC)
    cluster = cluster and cluster.for_samples(scored)  # those started: a resume's few left started few
    if cluster is not None:  # the workers' seconds added up: they can pass total_seconds
        timings["workers"] = cluster.workers
    return {
        "samples": len(samples),
        "limit": args.limit,  # the first --limit samples of the data were scored (None: all); else it went unrecorded
        # the samples in each language, as they were split and judged: settings' "language" is only the default
        "languages": dict(Counter(sample.language or args.language for sample in samples).most_common()),
        "scored_this_run": scored,
        "data": str(args.data),
        "models": {"judge": judge.identity, "embedder": _identity(embedder)},
        "device": scored_on(pipeline.device, cluster),
        # the rows decoded together as chosen (--batch-size, else the judge's own for the device)
        "settings": {"batch_size": engine.limits.batch_size, "max_batch_tokens": engine.limits.max_batch_tokens,
                     **_asked(args, evaluator.metrics)},
        "judge": {
            "requests": evaluator.timings.judge_requests,
            "cache_hits": engine.cache_hits,
            "batches": stats.batches if stats else None,
            "prompt_tokens": stats.prompt_tokens if stats else None,
            "output_tokens": stats.output_tokens if stats else None,
        },
        "timings": timings,
        "localeval": __version__,
        "scoring_rules": SCORING_RULES,  # compare notes runs scored by other rules
        "python": platform.python_version(),
        # which run a kept report or summary is; with when this invocation began (a resumed run's other
        # invocations are in no file: a probe found only the last one's end)
        "started": (now - timedelta(seconds=timings["total_seconds"])).isoformat(timespec="seconds"),
        "finished": now.isoformat(timespec="seconds"),
    }


def _saved(writer) -> str:
    """What a stopped run kept, for its last message: a resumed run's earlier samples too."""
    if not writer.kept:
        return "no sample scored yet"
    if not writer.done_ids:
        return f"{count_of(writer.kept, 'sample')} saved in {writer.path}"
    before = "all from before this run" if not writer.written else f"{len(writer.done_ids)} from before this run"
    return f"{count_of(writer.kept, 'sample')} saved in {writer.path} ({before})"


def _mend(writer) -> str:
    """How a run stopped by a metric's code goes on: mended, its file is another run's (run_identity), so
    --resume would refuse to add to what the metric as it was had scored."""
    if not writer.kept:
        return f"{_saved(writer)}; mend the metric and score again"
    return (f"{_saved(writer)}, by the metric as it was; mend it and score again without --resume, or into "
            "another --out")


def _rerun(writer) -> str:
    """How a stopped run goes on. Until its first result a fresh run has not touched the folder, which
    may still hold another run's results: --resume would continue (or refuse) that one, not this."""
    return "rerun with --resume to continue" if writer.written or writer.resuming else "rerun the same command to start again"

