r"""Speed benchmark: the full metric suite, one request at a time against localeval's batching.

Every configuration (and every --dtypes, --linears, --cuda-attention, --step-budget, ... variant) runs in
one process, on the same samples, with the same loaded judge and no answer cache, so their ratios are a
fair comparison on any machine. Each config's row is printed as JSON when it is done, then a markdown
table; progress goes to stderr. With --out the table also goes into a markdown file, in a section
named after the device, judge and dataset (re-running replaces it): docs/benchmarks.md keeps the
project's. Mistakes in the options, data or model names end in one line and exit status 2 before
anything is measured.

    .venv/bin/python scripts/bench_speed.py --data DATA.jsonl --limit 12
    .venv/bin/python scripts/bench_speed.py --data DATA.jsonl --judge qwen2.5-coder-0.5b-instruct --limit 12 \
        --configs default --cache-check 12 --out docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from localeval import offline

offline.defaults_for_the_command_line()  # this script's process is localeval's, as the CLI's is

from localeval.api import as_samples  # noqa: E402
from localeval import models  # noqa: E402
from localeval.device import choose_device, cpu_flags, describe, dtype_name  # noqa: E402
from localeval.engine import grammar  # noqa: E402
from localeval.engine.judge import JudgeStats, TransformersJudge  # noqa: E402
from localeval.engine.limits import BatchLimits  # noqa: E402
from localeval.errors import UserError  # noqa: E402
from localeval.metrics import resolve_metrics  # noqa: E402
from localeval.pipeline import Pipeline, build_judge, build_pipeline  # noqa: E402
from localeval.tuning import metric_settings  # noqa: E402
from roofline import Roofline  # noqa: E402  (scripts/roofline.py)
from roofline import measure as measure_roofline  # noqa: E402

WARM_UP_SAMPLES = 2
CONFIGS = {
    "batch-size-1": BatchLimits(batch_size=1),  # the one-request-at-a-time baseline
    "default": BatchLimits(),
}


@dataclass
class Measurement:
    config: str
    seconds: float
    samples: int
    stats: JudgeStats
    peak_memory_mb: float
    scores: dict[tuple[str, str], float | None]
    verdicts: dict[tuple[str, str], list[int]]  # (sample, metric): the judge's 0/1 verdicts in order
    shape: ModelShape | None = None  # for the roofline; None for a judge that is not a transformers model
    rows: int | None = None  # the batch size the engine used ("default": the judge's own for the device)

    def row(self, roofline: Roofline | None = None) -> dict:
        stats, decoding = self.stats, self.stats.decoding
        decode_passes = max(decoding.decode_passes, 1)
        decode_seconds = stats.generate_seconds - decoding.prefill_seconds
        extra = {} if roofline is None or self.shape is None else self.shape.roofline_columns(
            roofline, decoding, decode_seconds / decode_passes)
        return {
            "config": self.config,
            "rows": self.rows,
            "seconds": self.seconds,
            "samples_per_s": self.samples / self.seconds,
            "requests": stats.requests,
            "batches": stats.batches,
            "prompt_tokens": stats.prompt_tokens,
            "computed_prompt_tokens": stats.suffix_tokens,
            "output_tokens": stats.output_tokens,
            "forced_tokens": decoding.forced_tokens,
            "drafted_tokens": decoding.drafted_tokens,
            "confirmed_tokens": decoding.confirmed_tokens,
            "output_tok_per_s": stats.output_tokens / self.seconds,
            "prompt_tok_per_s": stats.prompt_tokens / self.seconds,
            "forward_passes": decoding.forward_passes,
            "prefill_s": decoding.prefill_seconds,
            "ms_per_forward": 1000 * decode_seconds / decode_passes,
            "grammar_ms_per_forward": 1000 * decoding.grammar_seconds / decode_passes,
            "peak_memory_mb": self.peak_memory_mb,
            **extra,
        }


@dataclass(frozen=True)
class ModelShape:
    """What a pass of the judge's model must compute and read: 2 flops per weight per token, and
    every weight's bytes plus the attended keys' and values' bytes per decoding pass."""

    weight_params: int  # the weights every prompt token goes through (not the embedding lookup, not the head)
    weight_bytes: int  # the bytes a decoding pass reads: those weights and the head's, as stored
    kv_bytes_per_token: int  # keys and values of one token, all layers
    dtype: str  # what the products compute in: the matmul peak this judge can reach (Roofline.flops_in)

    @staticmethod
    def of(model) -> "ModelShape":
        embedding = model.get_input_embeddings().weight
        head = list(model.get_output_embeddings().buffers()) + list(model.get_output_embeddings().parameters())
        matrices = {id(t): t for t in (*model.parameters(), *model.buffers()) if t.dim() == 2}
        read = [t for t in matrices.values() if t is not embedding or any(h is embedding for h in head)]
        config = model.config
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        return ModelShape(
            sum(t.numel() for t in read if not any(t is h for h in head)),  # the head runs for one token per row
            sum(t.numel() * t.element_size() for t in read),
            config.num_hidden_layers * 2 * kv_heads * head_dim * model.dtype.itemsize,
            str(model.dtype).removeprefix("torch."))

    def roofline_columns(self, roofline: Roofline, decoding, seconds_per_pass: float) -> dict:
        prefill_flops = 2 * self.weight_params * (decoding.prefix_tokens + decoding.prefill_tokens)
        passes = max(decoding.decode_passes, 1)
        bytes_per_pass = self.weight_bytes + self.kv_bytes_per_token * decoding.cache_tokens_read / passes
        floor = bytes_per_pass / roofline.bandwidth
        # A pass of many rows can be bound by compute instead: 2 flops per weight per token it feeds.
        decode_flops = 2 * self.weight_params * decoding.decode_tokens / passes
        compute, own_compute = decode_flops / roofline.matmul_flops, decode_flops / roofline.flops_in(self.dtype)
        prefill_flops_per_s = prefill_flops / max(decoding.prefill_seconds, 1e-9)
        return {
            "prefill_pct_of_matmul_peak": 100 * prefill_flops_per_s / roofline.matmul_flops,
            "decode_floor_ms": 1000 * floor,
            "decode_pct_of_floor": 100 * floor / seconds_per_pass,
            "decode_compute_ms": 1000 * compute,
            "decode_pct_of_roofline": 100 * max(floor, compute) / seconds_per_pass,
            # the same, against what the judge's own dtype can reach (differs for float32 on a bf16 device)
            "prefill_pct_of_dtype_peak": 100 * prefill_flops_per_s / roofline.flops_in(self.dtype),
            "decode_pct_of_dtype_roofline": 100 * max(floor, own_compute) / seconds_per_pass,
        }


class PeakMemory:
    """Peak memory while a block runs: CUDA's allocator peak, or the process's RSS sampled on CPU."""

    def __init__(self, device: str):
        self.device, self.peak_mb, self._running = device, 0.0, False

    def __enter__(self):
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.reset_peak_memory_stats()
        else:
            self._running = True
            self._thread = threading.Thread(target=self._sample_rss, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.device.startswith("cuda"):
            import torch

            self.peak_mb = torch.cuda.max_memory_allocated() / 2**20
        else:
            self._running = False
            self._thread.join()

    def _sample_rss(self):
        page_mb = os.sysconf("SC_PAGE_SIZE") / 2**20
        while self._running:
            with open("/proc/self/statm") as statm:
                self.peak_mb = max(self.peak_mb, int(statm.read().split()[1]) * page_mb)
            time.sleep(0.05)


def measure(config: str, limits: BatchLimits, loaded: Pipeline, samples) -> Measurement:
    """The loaded pipeline's models under other batch limits, without an answer cache."""
    judge, metrics = loaded.judge, loaded.metrics
    judge.stats = JudgeStats()
    if hasattr(judge, "forget_prefixes"):  # every config computes the instructions it shares: none inherits them
        judge.forget_prefixes()
    pipeline = build_pipeline(metrics, judge, loaded.embedder, device=loaded.device, limits=limits)
    engine = pipeline.engine
    with PeakMemory(loaded.device) as memory:
        started = time.perf_counter()
        results = list(pipeline.run(samples))
        seconds = time.perf_counter() - started
    if engine.invalid:
        raise SystemExit(f"{config}: {engine.invalid} of {engine.answered} judge answers were not valid JSON")
    scores = {(r.sample_id, name): m.score for r in results for name, m in r.metrics.items()}
    by_name = {metric.name: metric for metric in metrics}
    verdicts = {(r.sample_id, name): [v.verdict for v in by_name[name].verdicts(m.evidence)]
                for r in results for name, m in r.metrics.items()}
    model = getattr(judge, "model", None)  # a TransformersJudge's loaded model
    return Measurement(config, seconds, len(samples), judge.stats, memory.peak_mb, scores, verdicts,
                       None if model is None else ModelShape.of(model), engine.limits.batch_size)


def largest_difference(a: Measurement, b: Measurement) -> float:
    pairs = [(a.scores[k], b.scores[k]) for k in a.scores]
    if any((x is None) != (y is None) for x, y in pairs):
        return float("inf")
    return max((abs(x - y) for x, y in pairs if x is not None), default=0.0)


def verdicts_differing(a: Measurement, b: Measurement) -> tuple[int, int]:
    """(verdicts that differ, verdicts compared) between two runs of the same samples."""
    pairs = [(x, y) for key in a.verdicts for x, y in zip(a.verdicts[key], b.verdicts[key])]
    return sum(x != y for x, y in pairs), len(pairs)


def cache_check(args, dtype: str) -> dict:
    """The same run twice in fresh processes with one answer cache: cold, then warm. A run that fails
    is reported in the table ("failed": its error), which keeps everything measured before it."""
    options = [f"--{name}={value}" for name, value in (("judge", args.judge), ("embedder", args.embedder),
                                                      ("metrics", args.metrics), ("device", args.device),
                                                      ("dtype", dtype)) if value is not None]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LOCALEVAL_CACHE_DIR=tmp)
        timings = {}
        for run in ("cold", "warm"):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "localeval", "run", args.data, *options, "--limit",
                                   str(args.cache_check), "--out", f"{tmp}/{run}", "--quiet"],
                                  env=env, capture_output=True, text=True)
            if done.returncode != 0:
                return {"failed": f"the {run} run failed: {done.stderr.strip()[-1000:]}"}
            timings[run] = time.perf_counter() - started
            summary = json.loads(Path(f"{tmp}/{run}/summary.json").read_text())
            timings[f"{run}_judge_load_s"] = summary["timings"]["judge_load_seconds"]
            timings[f"{run}_nulls"] = sum(m["null"] for m in summary["metrics"].values())
    return timings


COLUMNS = ["config", "rows", "seconds", "samples_per_s", "output_tok_per_s", "prompt_tok_per_s", "requests", "batches",
           "prompt_tokens", "computed_prompt_tokens", "output_tokens", "forced_tokens",
           "drafted_tokens", "confirmed_tokens", "forward_passes",
           "prefill_s", "ms_per_forward", "grammar_ms_per_forward", "peak_memory_mb",
           "prefill_pct_of_matmul_peak", "decode_floor_ms", "decode_pct_of_floor", "decode_compute_ms",
           "decode_pct_of_roofline", "prefill_pct_of_dtype_peak", "decode_pct_of_dtype_roofline"]


def markdown(args, device: str, judges: dict[str, tuple[str, float]], metric_names: list[str],
             runs: list[Measurement], roofline: Roofline | None, cache: dict | None) -> str:
    rows = [run.row(roofline) for run in runs]
    columns = [c for c in COLUMNS if any(c in row for row in rows)]
    loads = "; ".join(f"`{identity}` (load {seconds:.1f} s)" for identity, seconds in judges.values())
    lines = [
        f"- device: {device}" + (f"; {roofline.describe()}" if roofline else ""),
        f"- judge: {loads}, not counted below; metrics: {', '.join(metric_names)}",
        f"- data: `{args.data}`, {runs[0].samples} samples; command: `python scripts/bench_speed.py {' '.join(sys.argv[1:])}`",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    lines.append("")
    for run, row in zip(runs[1:], rows[1:]):
        changed, compared = verdicts_differing(runs[0], run)
        lines.append(f"- **{run.config} / {runs[0].config} samples/s: {row['samples_per_s'] / rows[0]['samples_per_s']:.2f}×**; "
                     f"largest score difference: {largest_difference(runs[0], run):.2e}; verdicts that differ: "
                     f"{changed} of {compared} ({100 * changed / max(compared, 1):.1f}%)")
    if cache and "failed" in cache:
        lines.append(f"- answer cache, `localeval run --limit {args.cache_check}`: {cache['failed']}")
    elif cache:
        lines.append(f"- answer cache, `localeval run --limit {args.cache_check}` in fresh processes: cold "
                     f"{cache['cold']:.1f} s, warm {cache['warm']:.1f} s (**{cache['cold'] / cache['warm']:.1f}×**); "
                     f"judge load time on the warm run: {cache['warm_judge_load_s']:.1f} s; "
                     f"null scores cold/warm: {cache['cold_nulls']}/{cache['warm_nulls']}")
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def write_section(path: Path, title: str, body: str) -> bool:
    """Replace the section called `title` in `path` (or add it), leaving the rest of the page alone;
    whether one was replaced."""
    begin, end = f"<!-- bench: {title} -->", f"<!-- /bench: {title} -->"
    block = f"{begin}\n### {title}\n\n{body}{end}"
    text = path.read_text() if path.exists() else "# Benchmarks: how fast the judges score, on a CPU and on a GPU\n\n"
    replaced = begin in text
    if replaced:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)
    return replaced


def variant(judge: TransformersJudge, linears: str, attention: str) -> TransformersJudge:
    """The same judge with torch's own linear kernels (what prepacking is measured against) or its own
    choice of attention kernel on CUDA, cuDNN's (what localeval's choice is measured against)."""
    if (linears, attention) == ("packed", "no-cudnn"):
        return judge
    return TransformersJudge(judge.path, judge.name, str(judge.device), judge.dtype, judge.fingerprint,
                             step_budget=judge.step_budget, int8_weights=judge.int8_weights,
                             prepack=linears == "packed", torch_attention=attention == "torch")


@contextmanager
def grammars_compiled_by(compiler: str):
    """Schemas compiled as localeval compiles them ("json": llguidance's JSON compiler), or ("regex") as
    Outlines' whole-answer regular expression, which localeval used before: the same answers, measured
    against the grammar time it costs."""
    if compiler == "json":
        yield
        return
    import llguidance
    from outlines_core.json_schema import build_regex_from_schema

    own = grammar.schema_grammar
    grammar.schema_grammar = lru_cache(maxsize=None)(
        lambda schema: llguidance.grammar_from("regex", build_regex_from_schema(schema, "")))
    try:
        yield
    finally:
        grammar.schema_grammar = own


def short_enough(sample, args) -> bool:
    """Whether the sample is within --max-context-chars and --max-response-chars (a sample without
    contexts or a response, which `run` scores as null, counts as empty)."""
    context = sum(map(len, sample.retrieved_contexts or []))
    return ((args.max_context_chars is None or context <= args.max_context_chars)
            and (args.max_response_chars is None or len(sample.response or "") <= args.max_response_chars))


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="a dataset that `localeval run` reads (JSONL, JSON, CSV, Parquet)")
    parser.add_argument("--judge", default=None, help="registered judge or model directory (default: the default)")
    parser.add_argument("--embedder", default=None,
                        help="registered embedder or model directory (default: the default; scripts/gpu_kit.py "
                             "builds a random-weight one where the real one cannot travel)")
    parser.add_argument("--limit", type=whole_number(least=1), default=None, metavar="N", help="first N samples only")
    parser.add_argument("--metrics", default=None,
                        help="comma-separated metric names, or all (default: the five seed metrics, as `run`)")
    parser.add_argument("--max-context-chars", type=whole_number(least=0), default=None, metavar="N",
                        help="only samples whose retrieved contexts are N characters or fewer in all")
    parser.add_argument("--max-response-chars", type=whole_number(least=0), default=None, metavar="N",
                        help="only samples whose response is N characters or fewer")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N, as `run --device`")
    parser.add_argument("--dtypes", "--dtype", default="auto",
                        help="one or more of auto, float32, bfloat16, int8, ...: each loads the judge anew and runs "
                             "every config, side by side in this process (ratios against the first)")
    parser.add_argument("--linears", default="packed", type=choices_of("packed", "plain"),
                        help="packed, plain or both (packed,plain): the judge's linear layers with oneDNN's prepacked "
                             "weights (as localeval runs them on a CPU) or torch's own kernels, side by side")
    parser.add_argument("--cuda-attention", default="no-cudnn", type=choices_of("no-cudnn", "torch"),
                        help="no-cudnn, torch or both (no-cudnn,torch): on CUDA, attention without cuDNN's kernel (as "
                             "localeval runs it) or with torch's own choice, cuDNN's on Hopper, side by side")
    parser.add_argument("--grammar", default="json", type=choices_of("json", "regex"),
                        help="json, regex or both (json,regex): each schema compiled by llguidance's JSON compiler (as "
                             "localeval does) or as Outlines' whole-answer regular expression, side by side")
    parser.add_argument("--no-roofline", action="store_true", help="skip measuring the device's matmul peak and bandwidth")
    parser.add_argument("--configs", default="batch-size-1,default", type=choices_of(*CONFIGS),
                        help="batch-size-1 (one request at a time), default (localeval's batch limits) or both, "
                             "measured in this order on the same loaded judge")
    parser.add_argument("--batch-size", default=None, type=whole_numbers(least=1),
                        help="the default config's batch size; several (32,64,128: on a GPU, up to what its memory "
                             "holds) run side by side as configs of their own")
    parser.add_argument("--step-budget", default=None, type=whole_numbers(least=1),
                        help="most tokens a decoding forward pass feeds; several (16,32,64) run side by side")
    parser.add_argument("--drafts", default=None, type=whole_numbers(least=0),
                        help="most guessed tokens a row is fed in a pass (0: none); several (8,0) run side by side")
    parser.add_argument("--cache-check", type=whole_number(least=1), default=None, metavar="N",
                        help="also time a cold and a warm `localeval run` of the first N samples (same judge, "
                             "embedder and metrics)")
    parser.add_argument("--out", default=None, metavar="FILE.md",
                        help="also write the table into FILE.md as a section of its own, replacing the section of "
                             "the same title (docs/benchmarks.md keeps the project's); default: print it only")
    parser.add_argument("--title", default=None, help="section title (default: device, judge, data)")
    args = parser.parse_args()
    if args.out is not None and (problem := unwritable(Path(args.out))):
        parser.error(f"--out {args.out}: {problem}")  # now, not after minutes of measuring
    return args


def unwritable(path: Path) -> str | None:
    """Why the markdown file `path` could not be written (or replaced), or None."""
    if path.is_dir():
        return "a folder; give a markdown file"
    if path.exists():
        return None if os.access(path, os.W_OK) else "cannot be written"
    return None if os.access(path.resolve().parent, os.W_OK) else "its folder does not exist or cannot be written"


def choices_of(*allowed: str):
    """An argparse type: one or more of `allowed`, comma-separated, as a list."""
    def parse(text: str) -> list[str]:
        chosen = text.split(",")
        unknown = [value for value in chosen if value not in allowed]
        if unknown:
            raise argparse.ArgumentTypeError(f"{', '.join(unknown)}: choose from {', '.join(allowed)}")
        return chosen
    return parse


def whole_number(least: int):
    """An argparse type: a whole number of at least `least`."""
    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text}: give a whole number") from None
        if number < least:
            raise argparse.ArgumentTypeError(f"{text}: give at least {least}")
        return number
    return parse


def whole_numbers(least: int):
    """An argparse type: one or more whole numbers of at least `least`, comma-separated, as a list."""
    one = whole_number(least)

    def parse(text: str) -> list[int]:
        return [one(value) for value in text.split(",")]
    return parse


def configurations(args) -> tuple[dict[str, BatchLimits], list[str]]:
    """The batch limits of each config, and the configs to run in order (--batch-size may add some)."""
    configs, wanted = dict(CONFIGS), list(args.configs)
    sizes = args.batch_size or []
    if len(sizes) > 1 and "default" in wanted:  # each size a config of its own, in the default's place
        at = wanted.index("default")
        wanted[at:at + 1] = [f"batch-size-{size}" for size in sizes]
        configs.update({f"batch-size-{size}": BatchLimits(batch_size=size) for size in sizes})
    elif sizes:
        configs["default"] = BatchLimits(batch_size=sizes[0])
    return configs, wanted


def say(message: str) -> None:
    """Progress on stderr: stdout keeps each config's JSON row and the table."""
    print(f"bench_speed.py: {message}", file=sys.stderr, flush=True)


def main() -> int:
    args = parse_arguments()
    try:  # every mistake in the data, models, metrics, device or dtypes is found before anything is measured
        samples = [s for s in as_samples(args.data) if short_enough(s, args)][: args.limit]
        if not samples:
            raise UserError(f"--data {args.data}: no sample is left to measure (--max-context-chars, --max-response-chars)")
        metrics = resolve_metrics(args.metrics, metric_settings(args.judge))  # as `run` asks this judge
        device = choose_device(args.device)
        if len(args.cuda_attention) > 1 and not device.startswith("cuda"):
            raise UserError(f"--cuda-attention {','.join(args.cuda_attention)} compares attention kernels on CUDA; "
                            f"on {device} both would run the same one")
        dtypes = args.dtypes.split(",")
        for dtype in dtypes:
            dtype_name(device, dtype)
        for name, kind in ((args.judge, "judge"), (args.embedder, "embedder")):
            if name is not None:
                models.check_name(name, kind)
        return measure_and_report(args, samples, metrics, device, dtypes)
    except UserError as error:
        print(f"bench_speed.py: error: {error}", file=sys.stderr)
        return 2


def measure_and_report(args, samples, metrics, device: str, dtypes: list[str]) -> int:
    configs, wanted = configurations(args)
    runs, judges = [], {}
    variants = [(dtype, linears, kernel) for dtype in dtypes for linears in args.linears for kernel in args.cuda_attention]
    for dtype, linears, kernel in variants:  # one judge at a time, each measured under every config
        say(f"loading the judge ({dtype}, {linears} linear layers, attention {kernel})")
        judge = variant(build_judge(args.judge, device, dtype, log=lambda _: None), linears, kernel)
        loaded = build_pipeline(metrics, judge, args.embedder, device=device, dtype=dtype, log=lambda _: None)
        started = time.perf_counter()
        loaded.load()
        judges[dtype, linears, kernel] = (loaded.judge.identity, time.perf_counter() - started)
        # One untimed run of a few samples first: the first batches of a fresh process run slower (kernels
        # chosen, memory mapped in), which would otherwise count against whichever config runs first.
        say(f"warming up on {min(WARM_UP_SAMPLES, len(samples))} samples, untimed")
        measure("warm-up", configs[wanted[0]], loaded, samples[:WARM_UP_SAMPLES])
        budgets = args.step_budget or [loaded.judge.step_budget]
        drafts = args.drafts if args.drafts is not None else [loaded.judge.draft_tokens]
        for budget, draft, name, compiler in [(b, d, n, c) for b in budgets for d in drafts for n in wanted
                                              for c in args.grammar]:
            loaded.judge.step_budget, loaded.judge.draft_tokens = budget, draft  # read by every generate call
            label = " ".join([*([dtype] if len(dtypes) > 1 else []), *([linears] if len(args.linears) > 1 else []),
                              *([f"{kernel} attention"] if len(args.cuda_attention) > 1 else []),
                              *([f"budget {budget}"] if len(budgets) > 1 else []),
                              *([f"drafts {draft}"] if len(drafts) > 1 else []),
                              *([f"{compiler} grammar"] if len(args.grammar) > 1 else []), name])
            say(f"measuring {label} on {len(samples)} samples")
            with grammars_compiled_by(compiler):
                runs.append(measure(label, configs[name], loaded, samples))
            print(json.dumps(runs[-1].row()), flush=True)
        del loaded
        gc.collect()
    if not args.no_roofline:
        say("measuring the device's matmul peak and memory bandwidth")
    roofline = None if args.no_roofline else measure_roofline(device)
    if args.cache_check:
        say(f"timing a cold and a warm `localeval run` of {args.cache_check} samples")
    cache = cache_check(args, dtypes[0]) if args.cache_check else None
    judge_name = next(iter(judges.values()))[0].split("|")[0]
    title = args.title or f"{describe(device)} · {judge_name} · {Path(args.data).name}"
    body = markdown(args, f"{describe(device)}, flags {' '.join(cpu_flags()) or 'unknown'}"
                    if device == "cpu" else describe(device), judges, [m.name for m in metrics], runs, roofline, cache)
    print(body)  # first: a file that cannot be written now loses nothing that was measured
    say(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.out:
        replaced = write_section(Path(args.out), title, body)
        say(f"{'replaced' if replaced else 'added'} the section \"{title}\" in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
