"""`python -m localeval bench`: every judge over one labeled dataset, compared with the people who labeled it."""

from __future__ import annotations

import json
import platform
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .. import __version__, models
from ..calibration import CALIBRATION_FILE, calibrate, check_enough_samples, fitted_with, weights_of, write_calibration
from ..engine.limits import BatchLimits
from ..errors import (EXIT_INTERRUPTED, EXIT_JUDGE_FAILED, EXIT_OK, LocalevalWarning, MetricFailed, UserError, count_of,
                      for_terminal, said_and_kept, warn, warned)
from ..interrupts import held
from ..results import check_writable_folder, claim_folder, file_digest, write_atomically
from ..metrics import BUILT_IN, resolve_metrics
from ..metrics.sources import code_of, load_metric_sources, unscored
from ..options import check_counts, check_paths, limit_beyond
from ..out_folder import (check_not_a_link, check_ours, is_ours, json_object_with, markdown_titled, page_titled,
                          scored_rows)
from ..progress import to_stderr
from ..scoring_rules import SCORING_RULES
from ..tuning import metric_settings, settings_used
from .cpu_share import allowed_cores, crowded, load_average, read_clock, sharing
from .compare import compare, mean_spearman_interval, ranking_certainty, spearman_interval, verdict_probabilities
from .labels import LabeledSample, read_labeled, warn_of_samples_left_out
from .resume import Asked, EarlierJudges, bench_identity, kept_judges, read_bench
from .report import (BENCH_TITLE, FEW_TO_RANK, HTML_FILE, JSON_FILE, MARKDOWN_FILE, RESULTS_DIR, failure_of, failures,
                     headline, markdown_table, ranked_judges, tables, write_reports)
from .worker import JudgeJob, JudgeRun, run_in_child, run_judge

Log = Callable[[str], None]


def bench_command(args) -> int:
    started = time.perf_counter()
    check_counts(args, ("batch_size", "max_batch_tokens", "limit"))
    check_paths({"data": args.data, "out": args.out})
    metric_sources = load_metric_sources(args.metrics_from)  # before the metrics are named: it registers its own
    chosen = resolve_metrics(args.metrics)
    if args.calibrate and not any(metric.name in BUILT_IN for metric in chosen):  # else "no threshold passed"
        raise UserError("--calibrate fits thresholds on the built-in metrics' verdicts, and a metric of your own has "
                        "none: add a built-in metric to --metrics, or leave --calibrate out")
    unscored_said = warned([unscored(metric_sources, chosen)], LocalevalWarning)  # before what the labels lack
    metrics = [m.name for m in chosen]
    judges = parse_judges(args.judges)
    embeds = any(metric.uses_embedder for metric in chosen)
    unused_embedder = models.embedder_checked(args.embedder, embeds)  # said once the data's warnings are
    labeled, data_warnings = said_and_kept(lambda: _read_and_checked(args.data, metrics, args.limit))
    data_warnings = [*unscored_said, *data_warnings]
    typed = judges if args.judges is not None else []  # the default judge, not named, is meant whatever is here
    data_warnings += warned([unused_embedder, *(models.folder_passed_over(judge, "judge", "judges") for judge in typed),
                             models.folder_passed_over(args.embedder, "embedder")], LocalevalWarning)
    data_sha256 = file_digest(Path(args.data).expanduser())  # once, now: a file edited while judges run is not this one
    if args.calibrate:
        check_enough_samples(len(labeled))
    _check_folders(judges, args.embedder, embeds)
    out = Path(args.out)
    # claimed before torch is imported, and held: no second bench writes its files there meanwhile
    with claim_folder(out):
        check_ours(out, BENCH_OUTPUTS)  # a person's own bench.md or calibration.json is never replaced
        check_not_a_link(out / RESULTS_DIR)  # what an earlier bench left there is deleted
        check_ours(out / RESULTS_DIR, dict.fromkeys(judge_result_names(judges), scored_rows))
        with held():  # torch: imported once the quick checks have passed, and whole (interrupts.py)
            from ..device import choose_device, describe, dtype_name

        device = choose_device(args.device)
        dtype_name(device, args.dtype)  # an unknown dtype is the user's error, not a failure of every judge
        log: Log = (lambda message: None) if args.quiet else to_stderr
        jobs = [
            JudgeJob(judge, tuple(item.sample for item in labeled), tuple(metrics),
                     metric_settings(judge, args.reasons, args.example, args.scoring), args.embedder, device, args.dtype,
                     BatchLimits(args.batch_size, args.max_batch_tokens), args.cache, progress=not args.quiet,
                     metric_sources=tuple(metric_sources))
            for judge in judges
        ]
        earlier = _earlier_bench(out, args.resume)
        kept = (kept_judges(out, earlier, _asked(args, jobs, data_sha256, describe(device)), labeled, log)
                if args.resume else EarlierJudges())
        to_run = [job for job in jobs if job.name not in kept.runs]
        _check_installed([job.name for job in to_run], args.embedder, embeds and bool(to_run))
        if earlier and not args.resume:  # said while Ctrl-C still loses nothing
            judged = ", ".join(judge["name"] for judge in earlier["judges"])
            log(f"note: {out / JSON_FILE} holds the bench of {earlier['started']}: {judged}; this one replaces it, and "
                "its results and calibration, once a judge finishes (--resume keeps its finished judges, another "
                "--out keeps it all)")
        runs: list[JudgeRun] = []
        interrupted = False
        try:
            run_judges(to_run, log, isolate=True, into=runs)
        except KeyboardInterrupt:
            interrupted = True
        by_judge = {**kept.runs, **{run.judge: run for run in runs}}
        if not any(run.ok for run in by_judge.values()):  # nothing to report: an earlier bench in --out is kept whole
            return _none_finished(runs, out, earlier, interrupted)
        return _report(args, labeled, jobs, by_judge, kept, data_sha256, data_warnings, started)


def _report(args, labeled: list[LabeledSample], jobs: list[JudgeJob], by_judge: dict[str, JudgeRun],
            kept: EarlierJudges, data_sha256: str, data_warnings: list[str], started: float) -> int:
    """The bench of the judges that ran or were kept, written and said; its exit status."""
    done = [job for job in jobs if job.name in by_judge]
    runs = [by_judge[job.name] for job in done]  # in the order the judges were named, kept ones included
    files = dict(zip([job.name for job in jobs], judge_result_names([job.name for job in jobs])))
    busy = _busy(runs)
    bench = assemble(labeled, runs, done, data=args.data, data_sha256=data_sha256, started=started,
                     reasons=args.reasons, example=args.example, scoring=args.scoring, calibrate_judges=args.calibrate,
                     warnings=[*data_warnings, *busy], not_run=[job.name for job in jobs if job.name not in by_judge],
                     measured_in=kept.measured_in, results_files=files)
    out_dir = Path(args.out)
    with held():  # the bench's files together: an interrupt between two would leave them out of step
        write_reports(out_dir, bench)
        write_judge_results(out_dir, runs, files)
        calibrated = _write_calibration(out_dir, bench, args, [item.sample for item in labeled])
    agreement = tables(bench)[0]  # titled and explained as in bench.md: a bare ρ column says too little
    print(for_terminal(f"{headline(bench)}\n\n{agreement.title}\n{markdown_table(agreement)}\n{agreement.note}\n\n"
                       f"{count_of(len(runs), 'judge')}{_kept_said(kept)} on {count_of(len(labeled), 'sample')} in "
                       f"{bench['total_seconds']:.1f} s; report in {out_dir / HTML_FILE}, every number in "
                       f"bench.json{calibrated}", lines=True))  # judges' names, as the terminal may show them
    for line in failures(bench):  # the table says only "failed"; --quiet hid the progress line with the reason
        print(f"failed: {for_terminal(line)}", file=sys.stderr)
    for line in busy:  # beside the speeds it qualifies; the report says it too
        print(f"localeval: {line}", file=sys.stderr)
    if bench["not_run"]:  # an interrupt once every judge had run leaves nothing out
        finished = sum(run.ok for run in runs)
        print(f"interrupted: the report holds the {count_of(finished, 'judge')} that finished; not run: "
              f"{for_terminal(', '.join(bench['not_run']))} (the same command with --resume runs only those)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if all(run.ok for run in runs) else EXIT_JUDGE_FAILED


def _kept_said(kept: EarlierJudges) -> str:
    """After a resume, how many of the judges reported an earlier bench measured (--quiet said nothing else)."""
    return f" ({len(kept.runs)} kept from an earlier bench, --resume)" if kept.runs else ""


def _asked(args, jobs: list[JudgeJob], data_sha256: str, device: str) -> Asked:
    """What this bench asks, for --resume to tell which judges of the bench in --out stand for this one's."""
    settings = bench_settings(jobs[0], args.reasons, args.example, args.scoring, args.calibrate)
    return Asked(bench_identity(data_sha256, len(jobs[0].samples), device, settings, SCORING_RULES),
                 {job.name: settings_used(resolve_metrics(job.metrics, job.settings)) for job in jobs},
                 {job.name: models.weights_now(job.name) for job in jobs})


def _none_finished(runs: list[JudgeRun], out: Path, earlier: dict[str, Any] | None, interrupted: bool) -> int:
    """No judge finished (each failed, or an interrupt came first): no report of nothing replaces the
    bench already in `out` (a failed judge's report did, its results and calibration gone with it)."""
    for run in runs:
        print(f"failed: {for_terminal(failure_of(run.judge, run.error))}", file=sys.stderr)
    said = "no judge finished, no report written" + (f"; the bench already in {out} is kept" if earlier else "")
    print(f"\ninterrupted: {said}" if interrupted else said, file=sys.stderr)
    return EXIT_INTERRUPTED if interrupted else EXIT_JUDGE_FAILED


def _check_folders(judges: list[str], embedder: str | None, uses_embedder: bool) -> None:
    """Model folders of one's own checked here, as run checks them (exit 2), not failed in every judge's
    worker (exit 1, as a bug). After the data: reading a folder's kind imports transformers, seconds a
    mistyped data file should not wait."""
    for name, kind in _models_used(judges, embedder, uses_embedder):
        if name not in models.registry():
            models.check_folder(Path(name).expanduser(), kind, judge_option="judges")


def _check_installed(judges: list[str], embedder: str | None, uses_embedder: bool) -> None:
    """The registered models the judges to run need, installed: all those that are not named at once, before
    any judge runs (a probe's met its judge's turn after the first judge's minutes). Once --resume has said
    which judges it keeps: one kept needs nothing (a review)."""
    missing = []
    for name, _ in _models_used(judges, embedder, uses_embedder):
        if (spec := models.registry().get(name)) is None:
            continue
        try:
            models.check_preparable(spec)
        except UserError as error:
            missing.append(str(error))
    if missing:
        raise UserError("; ".join(missing) if len(missing) == 1 else
                        f"{len(missing)} models are not ready: " + "; ".join(missing))


def _models_used(judges: list[str], embedder: str | None, uses_embedder: bool) -> list[tuple[str, str]]:
    """(name or folder, kind) of every model the judges load."""
    embedders = [(embedder or models.default_model("embedder"), "embedder")] if uses_embedder else []
    return [*((judge, "judge") for judge in judges), *embedders]


def _earlier_bench(out: Path, resume: bool) -> dict[str, Any] | None:
    """The bench already in `out` (its bench.json), read once for the note that this one replaces it or for
    --resume; None without one. One that cannot be read is refused by --resume, which could keep none of its
    judges, and else replaced all the same (check_ours found it ours)."""
    try:
        return read_bench(out)
    except UserError:
        if resume:
            raise
        return None


def _read_and_checked(path: str, metrics: list[str], limit: int | None) -> list[LabeledSample]:
    """The first `limit` labeled samples (all of them checked), and a warning for each metric of the
    ones among them that drop out of its agreement figures (not of samples --limit left out)."""
    every = read_labeled(path, metrics)
    if (beyond := limit_beyond(limit, len(every))) is not None:
        warn(LocalevalWarning(beyond), stacklevel=2)
    labeled = every[:limit]
    warn_of_samples_left_out(path, labeled, metrics)
    return labeled


def _write_calibration(out_dir: Path, bench: dict, args, samples: list) -> str:
    """calibration.json with --calibrate (what it holds, for the last line), else none: an earlier
    bench's file left in the folder would pass for this one's."""
    path = out_dir / CALIBRATION_FILE
    if not args.calibrate:
        path.unlink(missing_ok=True)
        return ""
    calibrated = [j for j in bench["judges"] if j.get("calibration")]
    folders = {j["name"]: models.judge_folder(j["name"]) for j in calibrated}
    belongs_to = {j["name"]: fitted_with(weights_of(folders[j["name"]], j["measures"].get("weights")),
                                         folders[j["name"]], j["settings"]) for j in calibrated}
    fitted = {j["name"]: j["calibration"] for j in calibrated}
    write_calibration(path, fitted, str(args.data), samples, belongs_to)
    applied = sum(entry["helps_both_halves"] for metrics in fitted.values() for entry in metrics.values())
    if not applied:
        return f"; no threshold passed the check on held-out halves, so {path} applies none"
    return f"; {count_of(applied, 'threshold')} that passed the check on held-out halves in {path} (use with run --calibration)"


BENCH_OUTPUTS = {JSON_FILE: json_object_with("judges"), MARKDOWN_FILE: markdown_titled(BENCH_TITLE),
                 HTML_FILE: page_titled(BENCH_TITLE), CALIBRATION_FILE: json_object_with("localeval_calibration")}


def write_judge_results(out_dir: Path, runs: list[JudgeRun], files: dict[str, str]) -> None:
    """Each judge's per-sample results with their evidence, to see why it disagrees where it does:
    results/<n>-<judge>.jsonl (`files`, by judge), numbered in the order the judges were named."""
    folder = out_dir / RESULTS_DIR
    check_writable_folder(folder)  # a clear error, not a traceback, if it cannot be made
    written = set()
    for run in runs:
        if run.ok:
            name = files[run.judge]
            lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in run.rows)
            write_atomically(folder / name, "".join(lines))
            written.add(name)
    for stale in folder.glob("*.jsonl"):  # an earlier bench's judges would pass for this one's
        # a person's own file stays, and so does a link (refused before the judges ran where it is a judge's)
        if stale.name not in written and not stale.is_symlink() and is_ours(stale, scored_rows):
            stale.unlink()


def judge_result_names(judges: list[str]) -> list[str]:
    """Each judge's results file in results/, numbered in the order the judges run (checked to be
    localeval's before a judge runs: a person's own file there was replaced)."""
    return [f"{number}-{re.sub(r'[^A-Za-z0-9._-]+', '_', Path(judge).name or judge)}.jsonl"
            for number, judge in enumerate(judges, start=1)]


def parse_judges(text: str | None) -> list[str]:
    """The judges named on the command line (default: the default judge), each checked to exist."""
    text = models.default_model("judge") if text is None else text  # "" is an unset variable, not the default
    given = [name.strip() for name in text.split(",") if name.strip()]
    if not given:
        raise UserError("--judges: name at least one judge")
    for name in given:
        models.check_name(name, "judge")
    # a registered judge's store folder is that judge, named as run names it (calibration.json's keys)
    names = [models.judge_name(name) for name in given]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        by_folder = "" if len(set(given)) < len(given) else " (a registered judge's store folder is that judge)"
        raise UserError(f"--judges: {', '.join(repeated)} listed twice{by_folder}")
    return names


def run_judges(jobs: Sequence[JudgeJob], log: Log, isolate: bool = True, into: list[JudgeRun] | None = None
               ) -> list[JudgeRun]:
    """One judge after the other (they would only compete for the same device), each in its own process;
    each run is appended to `into` as it ends, so an interrupt keeps the judges already done."""
    runs = [] if into is None else into
    for number, job in enumerate(jobs, start=1):
        tag = f"judge {number}/{len(jobs)} {job.name}"
        log(f"{tag}: starting")
        started, clock = time.perf_counter(), read_clock()
        run = run_in_child(job) if isolate else run_judge(job)
        run.measures["wall_seconds"] = time.perf_counter() - started  # spawn, load and judge: what a user waits
        # other work slows a judge too: the cores it took meanwhile (and those left idle), the last minute's load
        shared = sharing(clock, read_clock())
        run.measures["other_work_cores"] = None if shared is None else shared.others
        run.measures["idle_cores"] = None if shared is None else shared.idle
        run.measures["load_average"] = load_average()
        run.measures["cores"] = allowed_cores()  # what the load is read against, kept for a report made elsewhere
        runs.append(run)  # before it is said: an interrupt in between keeps it
        if run.metric_failed:  # every judge would fail on it in turn, each after loading (a review)
            raise MetricFailed(f"{run.error}; the bench stopped at {tag}: mend the metric and bench again")
        log(f"{tag}: {_outcome(run)}")
    return runs


def _outcome(run: JudgeRun) -> str:
    if not run.ok:
        return f"failed: {run.error}"
    m = run.measures
    valid = "n/a (all cached)" if m["valid_json_rate"] is None else f"{100 * m['valid_json_rate']:.1f}%"
    cached = f", {count_of(m['cache_hits'], 'answer')} from the cache" if m.get("cache_hits") else ""
    speed = "" if m["samples_per_second"] is None else f" ({m['samples_per_second']:.3g} samples/s after loading{cached})"
    return f"done in {m['wall_seconds']:.1f} s{speed}, valid JSON {valid}"


def assemble(labeled: list[LabeledSample], runs: list[JudgeRun], jobs: Sequence[JudgeJob], *,
             data: str | Path, data_sha256: str, started: float, reasons: str = "auto", example: str = "auto",
             scoring: str = "auto", calibrate_judges: bool = False, warnings: Sequence[str] = (),
             not_run: Sequence[str] = (), measured_in: Mapping[str, str] = MappingProxyType({}),
             results_files: Mapping[str, str] = MappingProxyType({})) -> dict[str, Any]:
    """bench.json: the comparison of every judge that ran, and the circumstances to reproduce it.

    `reasons`, `example` and `scoring` are the choices the jobs' settings were made with (auto or
    a value for every metric); what each judge was then asked per metric is in its entry's
    "settings". With `calibrate_judges`, each entry also has its fitted verdict thresholds. `warnings`:
    what reading the data warned of, kept with the figures it may explain. `not_run`: the judges an
    interrupt stopped before they finished (their runs are not in `runs`). `measured_in`: the runs kept
    from an earlier bench (bench --resume), each with the start of the bench that ran it.
    `results_files`: each judge's file in results/.
    """
    elapsed = time.perf_counter() - started
    began = (datetime.now(UTC).astimezone() - timedelta(seconds=elapsed)).isoformat(timespec="seconds")
    metrics = list(jobs[0].metrics)
    judges = [{**_judge_entry(labeled, run, job, calibrate_judges), "measured_in": measured_in.get(run.judge, began),
               **({"results_file": results_files[run.judge]} if run.ok and run.judge in results_files else {})}
              for run, job in zip(runs, jobs)]
    best = best_judge(judges)
    job = jobs[0]
    from ..device import describe

    return {
        "best_judge": best and {"name": best["name"], "mean_spearman": best["summary"]["mean_spearman"],
                                "spearman_defined": best["summary"]["spearman_defined"],
                                **_ahead_of_next(labeled, judges, runs, metrics)},
        "dataset": {"path": str(data), "samples": len(labeled), "sha256": data_sha256,
                    "languages": dict(Counter(item.sample.language or "en" for item in labeled))},
        "device": describe(job.device),
        "settings": bench_settings(job, reasons, example, scoring, calibrate_judges),
        "started": began,
        **({"resumed": {"kept": dict(measured_in)}} if measured_in else {}),
        "total_seconds": elapsed,
        "warnings": list(warnings),
        "localeval": __version__,
        "scoring_rules": SCORING_RULES,  # a --resume keeps only judges measured by these
        "python": platform.python_version(),
        "judges": judges,
        "not_run": list(not_run),
    }


def bench_settings(job: JudgeJob, reasons: str, example: str, scoring: str, calibrate: bool) -> dict[str, Any]:
    """bench.json's "settings": what every judge of the bench was run with, and whether it was calibrated."""
    metrics = list(job.metrics)
    return {"metrics": metrics, "reasons": reasons, "example": example, "scoring": scoring,
            "questions": job.settings[metrics[0]].questions,
            "batch_size": job.limits.batch_size, "max_batch_tokens": job.limits.max_batch_tokens,
            "dtype": job.dtype, "cache": job.cache, "embedder": _embedder_name(job.embedder), "calibrate": calibrate,
            **code_of(list(job.metric_sources), metrics)}


def _busy(runs: list[JudgeRun]) -> list[str]:
    """A warning where other work ran beside a judge: on a shared machine one judge's samples/s fell 20-fold
    with a test suite beside it (a probe), enough to reverse a ranking by speed (cpu_share.crowded)."""
    cores = allowed_cores()
    crowding = {run.judge: found for run in runs if run.ok and (found := crowded(run.measures, cores)) is not None}
    taken = {judge: value for judge, (kind, value) in crowding.items() if kind == "other work"}
    loaded = {judge: value for judge, (kind, value) in crowding.items() if kind == "load average"}
    if not (taken or loaded):
        return []
    told = [f"{judge}: {others:.1f}" for judge, others in taken.items()]
    measured = [f"cores other work kept busy on average while a judge ran, {', '.join(told)}, of "
                f"{count_of(cores, 'core')}, more than stood idle"] if taken else []
    if loaded:
        loads = ", ".join(f"{judge}: {load:.1f}" for judge, load in loaded.items())
        measured.append(f"load average over the minute before a judge ended, {loads}, on {count_of(cores, 'core')}, "
                        "which a judge alone keeps about busy")
    return [f"warning: other work ran beside a judge, so the speeds measured then are not comparable "
            f"({'; '.join(measured)}); bench on an otherwise idle machine to compare speeds"]


def _ahead_of_next(labeled: list[LabeledSample], judges: list[dict], runs: list[JudgeRun], metrics: list[str]
                   ) -> dict[str, Any]:
    """{"ahead_of_next": how sure the best judge's lead over the next is}, where a next judge ranks and
    there are samples enough to say (below FEW_TO_RANK a resampling repeats the few it has, and looks
    surer than the ranking is)."""
    ranked = ranked_judges(judges)
    if len(ranked) < 2 or len(labeled) < FEW_TO_RANK:
        return {}
    by_name = {run.judge: run for run in runs}
    return {"ahead_of_next": ranking_certainty(labeled, by_name[ranked[0]["name"]], by_name[ranked[1]["name"]],
                                               metrics)}


def best_judge(judges: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first of the ranked judges (report.ranked_judges); None when there is none or the first two tie."""
    ranked = ranked_judges(judges)
    tied = len(ranked) > 1 and ranked[0]["summary"]["mean_spearman"] == ranked[1]["summary"]["mean_spearman"]
    return None if not ranked or tied else ranked[0]


def _embedder_name(embedder: Any) -> str:
    """As judges are named: a registered name, or a folder's absolute path however it was typed."""
    if embedder is None:
        return models.default_model("embedder")
    if not isinstance(embedder, str):
        return embedder.identity
    return embedder if embedder in models.registry() else str(Path(embedder).expanduser().resolve())


def _judge_entry(labeled: list[LabeledSample], run: JudgeRun, job: JudgeJob, calibrate_judge: bool) -> dict[str, Any]:
    settings = settings_used(resolve_metrics(job.metrics, job.settings))
    if not run.ok:
        return {"name": run.judge, "status": "failed", "error": run.error, "traceback": run.traceback,
                "settings": settings, "measures": run.measures}
    entry = {"name": run.judge, "status": "ok", "settings": settings, "measures": run.measures,
             **compare(labeled, run, list(job.metrics))}
    if len(labeled) >= FEW_TO_RANK and entry["summary"]["mean_spearman"] is not None:  # on fewer: looks surer
        entry["summary"]["mean_spearman_interval"] = mean_spearman_interval(labeled, run, list(job.metrics))
        for metric, compared in entry["metrics"].items():  # "is this judge good enough for this metric?"
            if compared["scores"]["spearman"] is not None:
                compared["scores"]["spearman_interval"] = spearman_interval(labeled, run, metric)
    if calibrate_judge:
        entry["calibration"] = calibrate({m: verdict_probabilities(labeled, run.rows, m) for m in job.metrics})
    return entry
