"""The `run` command: dataset in, results.jsonl and summary.json out, a table on the terminal."""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

from . import __version__
from . import models
from .api import build_embedder, build_judge
from .bench.labels import human_scores
from .calibration import load_thresholds
from .data import load_samples
from .device import choose_device, describe
from .engine.cache import AnswerCache
from .engine.scheduler import BatchLimits, JudgeEngine
from .errors import EnvironmentFailure, UserError
from .evaluation import Evaluator
from .metrics import resolve_metrics
from .progress import BarProgress, NoProgress
from .report import write_report
from .results import SUMMARY_FILE, ResultWriter, file_digest, format_table, read_results, summarize, write_atomically
from .text import SUPPORTED_LANGUAGES
from .trust import weak_judge_warning
from .tuning import metric_settings, settings_used


def run_command(args) -> int:
    """Every check first (options, data, models, the output folder), then the scoring: a run that is
    refused or fails before its first result leaves the output folder as it was."""
    started = time.perf_counter()
    _check_numbers(args)
    if args.language not in SUPPORTED_LANGUAGES:
        raise UserError(f"--language {args.language}: not supported; choose from {', '.join(sorted(SUPPORTED_LANGUAGES))}")
    samples = load_samples(args.data)[: args.limit]
    judge_name = models.judge_name(args.judge)
    thresholds, calibration = load_thresholds(args.calibration, judge_name) if args.calibration else ({}, None)
    settings = metric_settings(args.judge, args.reasons, args.example, args.scoring, thresholds,
                               questions=args.questions)
    metrics = resolve_metrics(args.metrics, settings)
    human = human_scores(args.labels, samples, [m.name for m in metrics]) if args.labels else None
    log = lambda message: print(message, file=sys.stderr)  # noqa: E731
    device = choose_device(args.device)
    judge = build_judge(args.judge, device, args.dtype, log)  # the model is found (not yet loaded)
    embedder = build_embedder(args.embedder, device, log)
    writer = ResultWriter(Path(args.out), args.resume, run_identity(args, judge, embedder, metrics))
    todo = [s for s in samples if s.id not in writer.done_ids]
    if args.resume:
        log(f"resuming: {len(samples) - len(todo)} of {len(samples)} samples already scored in {writer.path}")

    cache = None if args.no_cache else AnswerCache()
    engine = JudgeEngine(judge, BatchLimits(args.batch_size, args.max_batch_tokens), cache)
    bar = NoProgress() if args.quiet else BarProgress(f"judging {len(todo)} samples")
    evaluator = Evaluator(metrics, engine, embedder, args.language, args.window, progress=bar)
    try:
        for result in evaluator.run(todo):
            writer.write(result.to_json())
    except KeyboardInterrupt:
        bar.close()
        log(f"\ninterrupted: {writer.written} samples saved in {writer.path}; rerun with --resume to continue")
        return 130
    except MemoryError:
        raise EnvironmentFailure(f"out of memory; {writer.written} samples saved in {writer.path}. Lower "
                                 "--batch-size or --max-batch-tokens and rerun with --resume") from None
    except RuntimeError as error:
        if "out of memory" not in str(error).lower():
            raise
        raise EnvironmentFailure(f"out of memory on {device}; {writer.written} samples saved in {writer.path}. "
                                 "Lower --batch-size or --max-batch-tokens and rerun with --resume") from None
    finally:
        bar.close()
        writer.close()
    scored = writer.written
    out_dir = writer.out_dir

    names = [m.name for m in metrics]
    rows = read_results(writer.path)
    summary = summarize(rows, names, human)
    details = _details(args, judge, embedder, engine, evaluator, device, len(samples), scored, started)
    details["calibration"] = calibration
    details["labels"] = str(args.labels) if args.labels else None
    details["warnings"] = [w for w in [weak_judge_warning(judge_name), _unused_calibration(calibration)] if w]
    write_atomically(out_dir / SUMMARY_FILE, json.dumps({"metrics": summary, **details}, indent=2, ensure_ascii=False) + "\n")
    report = write_report(out_dir, rows, summary, details)
    print(format_table(summary))
    for warning in details["warnings"]:
        print(f"\n{warning}")
    print(f"\n{len(samples)} samples ({scored} scored now) in {details['timings']['total_seconds']:.1f} s; "
          f"results in {writer.path}, report in {report}")
    return 0



def run_identity(args, judge, embedder, metrics) -> dict:
    """What makes two runs the same run, whose results may go in one results.jsonl (--resume): the
    data, the models (with their weights' digest and dtype), the metrics and how each is asked and
    scored. Not the batch limits or --limit, which change neither a sample's requests nor its score."""
    return {
        "data_sha256": file_digest(Path(args.data)),
        "judge": judge.identity,
        "embedder": embedder.identity,
        "metrics": [m.name for m in metrics],
        "settings": {**settings_used(metrics), "questions": args.questions, "language": args.language},
    }


def _unused_calibration(calibration: dict | None) -> str | None:
    if calibration is None or calibration["thresholds"]:
        return None
    return (f"note: {calibration['path']} applies no threshold to {calibration['judge']} (none helped on both halves "
            "of the labeled samples); every metric is scored as --scoring says")


def _check_numbers(args) -> None:
    for name in ("batch_size", "max_batch_tokens", "questions", "window"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1")
    if args.limit is not None and args.limit < 1:
        raise UserError("--limit must be at least 1")


def _details(args, judge, embedder, engine, evaluator, device, n_samples, scored, started) -> dict:
    stats = getattr(judge, "stats", None)
    timings = {
        "total_seconds": time.perf_counter() - started,
        "judge_seconds": evaluator.timings.judge_seconds,
        "embed_seconds": evaluator.timings.embed_seconds,
        "judge_load_seconds": getattr(judge, "load_seconds", 0.0),
        "embedder_load_seconds": getattr(embedder, "load_seconds", 0.0),
    }
    return {
        "samples": n_samples,
        "scored_this_run": scored,
        "data": str(args.data),
        "models": {"judge": judge.identity, "embedder": embedder.identity},
        "device": describe(device),
        "settings": {"batch_size": args.batch_size, "max_batch_tokens": args.max_batch_tokens,
                     **settings_used(evaluator.metrics),
                     "questions": args.questions, "language": args.language},
        "judge": {
            "requests": evaluator.timings.judge_requests,
            "cache_hits": engine.cache_hits,
            "batches": stats.batches if stats else None,
            "prompt_tokens": stats.prompt_tokens if stats else None,
            "output_tokens": stats.output_tokens if stats else None,
        },
        "timings": timings,
        "localeval": __version__,
        "python": platform.python_version(),
    }
