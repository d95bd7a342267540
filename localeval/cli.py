"""`python -m localeval`: score a dataset, or manage the local models."""

from __future__ import annotations

import argparse
import sys

from . import models, offline  # noqa: F401  (offline: its switches before any HF import)
from .errors import UserError

EXAMPLES = """examples:
  python -m localeval run examples/samples.jsonl
  python -m localeval run data.csv --metrics context_recall,answer_supported_precision --out results/
  python -m localeval run data.jsonl --judge qwen2.5-coder-0.5b-instruct --resume
  python -m localeval run data.jsonl --judge /models/my-instruct-model --embedder /models/my-embedder
  python -m localeval models
  python -m localeval models prepare qwen2.5-coder-0.5b-instruct
"""


def build_parser() -> argparse.ArgumentParser:
    from .engine.scheduler import DEFAULT_BATCH_SIZE, DEFAULT_MAX_BATCH_TOKENS
    from .metrics import METRICS

    parser = argparse.ArgumentParser(
        prog="localeval",
        description="Evaluate retrieval-augmented generation offline, with a local judge model.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run", help="score a dataset", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Score every sample of DATA with the chosen metrics and write results.jsonl and "
                    "summary.json to --out.\n\nmetrics:\n" + "\n".join(
                        f"  {name:<28} {cls.description}" for name, cls in METRICS.items()),
        epilog="Fields: user_input, retrieved_contexts (list), response, reference, optional id and language\n"
               "(legacy names question, contexts, answer, ground_truth are accepted).",
    )
    run.add_argument("data", help="dataset file: .jsonl, .json (a list of objects), .csv or .parquet")
    run.add_argument("--metrics", default=None, help="comma-separated metric names (default: all five)")
    run.add_argument("--judge", default=None, help="registered judge name or local model directory "
                     f"(default: {models.default_model('judge')})")
    run.add_argument("--embedder", default=None, help="registered embedder name or local sentence-transformers "
                     f"directory (default: {models.default_model('embedder')})")
    run.add_argument("--out", default="localeval-results", help="output directory (default: %(default)s)")
    run.add_argument("--resume", action="store_true", help="keep the results already in --out and score only the rest")
    run.add_argument("--language", default="en", help="sentence-splitting language for samples without one "
                     "(default: %(default)s; e.g. zh)")
    run.add_argument("--limit", type=int, default=None, help="score only the first N samples")
    run.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: %(default)s)")
    run.add_argument("--dtype", default="auto", help="auto, bfloat16, float16 or float32 (default: auto = "
                     "bfloat16 on GPU and on CPUs with bf16 instructions, else float32)")
    run.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                     help="most judge requests per batch; 1 = one at a time (default: %(default)s)")
    run.add_argument("--max-batch-tokens", type=int, default=DEFAULT_MAX_BATCH_TOKENS,
                     help="most padded prompt tokens per batch, rows x longest prompt (default: %(default)s)")
    run.add_argument("--no-reasons", action="store_true", help="verdicts without reasons: faster, less evidence")
    run.add_argument("--questions", type=int, default=3, help="questions generated per response for "
                     "response_relevancy (default: %(default)s)")
    run.add_argument("--no-cache", action="store_true", help="do not read or write the judge-answer cache "
                     "(kept in $LOCALEVAL_CACHE_DIR, default ~/.cache/localeval)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")

    manage = commands.add_parser("models", help="list the registered models, or prepare one",
                                 description="List registered models and whether each is ready; "
                                             "'prepare NAME' verifies and converts one now.")
    manage.add_argument("action", nargs="?", choices=["list", "prepare"], default="list")
    manage.add_argument("name", nargs="?", help="model to prepare")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "models":
            return models_command(args)
        from .runner import run_command

        return run_command(args)
    except UserError as error:
        print(f"localeval: error: {error}", file=sys.stderr)
        return 2


def models_command(args) -> int:
    registry = models.registry()
    if args.action == "prepare":
        if not args.name or args.name not in registry:
            raise UserError(f"models prepare NAME: choose one of {', '.join(registry)}")
        path = models.prepare(registry[args.name])
        print(f"{args.name}: ready in {path}")
        return 0
    print(f"{'name':<30} {'kind':<9} {'status':<24} description")
    for spec in registry.values():
        flag = " (default)" if spec.default else ""
        print(f"{spec.name:<30} {spec.kind:<9} {spec.status():<24} {spec.description}{flag}")
        if spec.status() == "not installed":
            print(f"{'':<30} install: {spec.install}")
    print(f"\nmodel store: {models.store_dir()}")
    return 0
