"""Speed benchmark: the full metric suite, one request at a time against localeval's batching.

Both configurations run in one process, on the same samples, with the same loaded judge and no
answer cache, so their ratio is a fair comparison on any machine. The table goes into
docs/benchmarks.md, in a section named after the device, judge and dataset (re-running replaces it).

    .venv/bin/python scripts/bench_speed.py --data ../shared/data/dev.jsonl
    .venv/bin/python scripts/bench_speed.py --data DATA --judge qwen2.5-coder-0.5b-instruct --limit 12 \
        --configs default --cache-check 12
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
from localeval.device import choose_device, cpu_flags, describe  # noqa: E402
from localeval.engine import grammar  # noqa: E402
from localeval.engine.judge import JudgeStats, TransformersJudge  # noqa: E402
from localeval.engine.limits import BatchLimits  # noqa: E402
from localeval.metrics import resolve_metrics  # noqa: E402
from localeval.pipeline import Pipeline, build_judge, build_pipeline  # noqa: E402
from localeval.tuning import metric_settings  # noqa: E402
from roofline import Roofline  # noqa: E402  (scripts/roofline.py)
from roofline import measure as measure_roofline  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
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

    def row(self, roofline: Roofline | None = None) -> dict:
        stats, decoding = self.stats, self.stats.decoding
        decode_passes = max(decoding.decode_passes, 1)
        decode_seconds = stats.generate_seconds - decoding.prefill_seconds
        extra = {} if roofline is None or self.shape is None else self.shape.roofline_columns(
            roofline, decoding, decode_seconds / decode_passes)
        return {
            "config": self.config,
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
                       None if model is None else ModelShape.of(model))


def largest_difference(a: Measurement, b: Measurement) -> float:
    pairs = [(a.scores[k], b.scores[k]) for k in a.scores]
    if any((x is None) != (y is None) for x, y in pairs):
        return float("inf")
    return max((abs(x - y) for x, y in pairs if x is not None), default=0.0)


def verdicts_differing(a: Measurement, b: Measurement) -> tuple[int, int]:
    """(verdicts that differ, verdicts compared) between two runs of the same samples."""
    pairs = [(x, y) for key in a.verdicts for x, y in zip(a.verdicts[key], b.verdicts[key])]
    return sum(x != y for x, y in pairs), len(pairs)


def cache_check(data: str, judge: str, limit: int) -> dict:
    """The same run twice in fresh processes with one answer cache: cold, then warm."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LOCALEVAL_CACHE_DIR=tmp)
        timings = {}
        for run in ("cold", "warm"):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "localeval", "run", data, "--judge", judge, "--limit", str(limit),
                            "--out", f"{tmp}/{run}", "--quiet"], env=env, check=True, capture_output=True)
            timings[run] = time.perf_counter() - started
            summary = json.loads(Path(f"{tmp}/{run}/summary.json").read_text())
            timings[f"{run}_judge_load_s"] = summary["timings"]["judge_load_seconds"]
            timings[f"{run}_nulls"] = sum(m["null"] for m in summary["metrics"].values())
    return timings


COLUMNS = ["config", "seconds", "samples_per_s", "output_tok_per_s", "prompt_tok_per_s", "requests", "batches",
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
    if cache:
        lines.append(f"- answer cache, `localeval run --limit {args.cache_check}` in fresh processes: cold "
                     f"{cache['cold']:.1f} s, warm {cache['warm']:.1f} s (**{cache['cold'] / cache['warm']:.1f}×**); "
                     f"judge load time on the warm run: {cache['warm_judge_load_s']:.1f} s; "
                     f"null scores cold/warm: {cache['cold_nulls']}/{cache['warm_nulls']}")
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def write_section(path: Path, title: str, body: str) -> None:
    """Replace the section called `title` in `path` (or add it), leaving the rest of the page alone."""
    begin, end = f"<!-- bench: {title} -->", f"<!-- /bench: {title} -->"
    block = f"{begin}\n### {title}\n\n{body}{end}"
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    if begin in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def plain_linears(judge: TransformersJudge) -> TransformersJudge:
    """The same judge with torch's own linear kernels: what prepacking is measured against."""
    return TransformersJudge(judge.path, judge.name, str(judge.device), judge.dtype, judge.fingerprint,
                             step_budget=judge.step_budget, int8_weights=judge.int8_weights, prepack=False)


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
    """Whether the sample is within --max-context-chars and --max-response-chars."""
    context = sum(map(len, sample.retrieved_contexts))
    return ((args.max_context_chars is None or context <= args.max_context_chars)
            and (args.max_response_chars is None or len(sample.response) <= args.max_response_chars))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True)
    parser.add_argument("--judge", default=None, help="registered judge or model directory (default: the default)")
    parser.add_argument("--embedder", default=None,
                        help="registered embedder or model directory (default: the default; scripts/gpu_kit.py "
                             "builds a random-weight one where the real one cannot travel)")
    parser.add_argument("--limit", type=int, default=None, help="first N samples only")
    parser.add_argument("--metrics", default=None,
                        help="comma-separated metric names, or all (default: the five seed metrics, as `run`)")
    parser.add_argument("--max-context-chars", type=int, default=None, metavar="N",
                        help="only samples whose retrieved contexts are N characters or fewer in all")
    parser.add_argument("--max-response-chars", type=int, default=None, metavar="N",
                        help="only samples whose response is N characters or fewer")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtypes", "--dtype", default="auto",
                        help="one or more of auto, float32, bfloat16, int8, ...: each loads the judge anew and runs "
                             "every config, side by side in this process (ratios against the first)")
    parser.add_argument("--linears", default="packed",
                        help="packed, plain or both (packed,plain): the judge's linear layers with oneDNN's prepacked "
                             "weights (as localeval runs them on a CPU) or torch's own kernels, side by side")
    parser.add_argument("--grammar", default="json",
                        help="json, regex or both (json,regex): each schema compiled by llguidance's JSON compiler (as "
                             "localeval does) or as Outlines' whole-answer regular expression, side by side")
    parser.add_argument("--no-roofline", action="store_true", help="skip measuring the device's matmul peak and bandwidth")
    parser.add_argument("--configs", default="batch-size-1,default", help=f"of {', '.join(CONFIGS)}")
    parser.add_argument("--batch-size", default=None,
                        help="the default config's batch size; several (32,64,128: on a GPU, up to what its memory "
                             "holds) run side by side as configs of their own")
    parser.add_argument("--step-budget", default=None,
                        help="most tokens a decoding forward pass feeds; several (16,32,64) run side by side")
    parser.add_argument("--drafts", default=None,
                        help="most guessed tokens a row is fed in a pass (0: none); several (8,0) run side by side")
    parser.add_argument("--cache-check", type=int, default=None, metavar="N",
                        help="also time a cold and a warm `localeval run` of the first N samples")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--title", default=None, help="section title (default: device, judge, data)")
    args = parser.parse_args()

    unknown = set(args.grammar.split(",")) - {"json", "regex"}
    if unknown:
        parser.error(f"--grammar: {', '.join(sorted(unknown))}: give json, regex or json,regex")
    samples = [s for s in as_samples(args.data) if short_enough(s, args)][: args.limit]
    metrics = resolve_metrics(args.metrics, metric_settings(args.judge))  # as `run` asks this judge
    configs, wanted = dict(CONFIGS), args.configs.split(",")
    if args.batch_size:
        sizes = [int(size) for size in args.batch_size.split(",")]
        if len(sizes) > 1 and "default" in wanted:  # each size a config of its own, in the default's place
            at = wanted.index("default")
            wanted[at:at + 1] = [f"batch-size-{size}" for size in sizes]
            configs.update({f"batch-size-{size}": BatchLimits(batch_size=size) for size in sizes})
        else:
            configs["default"] = BatchLimits(batch_size=sizes[0])
    runs, judges, device = [], {}, None
    variants = [(dtype, linears) for dtype in args.dtypes.split(",") for linears in args.linears.split(",")]
    for dtype, linears in variants:  # one judge at a time, each measured under every config
        device = choose_device(args.device)
        judge = build_judge(args.judge, device, dtype, log=lambda _: None)
        if linears == "plain":
            judge = plain_linears(judge)
        loaded = build_pipeline(metrics, judge, args.embedder, device=device, dtype=dtype, log=lambda _: None)
        started = time.perf_counter()
        loaded.load()
        judges[dtype, linears] = (loaded.judge.identity, time.perf_counter() - started)
        # One untimed run of a few samples first: the first batches of a fresh process run slower (kernels
        # chosen, memory mapped in), which would otherwise count against whichever config runs first.
        measure("warm-up", configs[wanted[0]], loaded, samples[:WARM_UP_SAMPLES])
        budgets = [int(b) for b in args.step_budget.split(",")] if args.step_budget else [loaded.judge.step_budget]
        drafts = [int(d) for d in args.drafts.split(",")] if args.drafts else [loaded.judge.draft_tokens]
        compilers = args.grammar.split(",")
        for budget, draft, name, compiler in [(b, d, n, c) for b in budgets for d in drafts for n in wanted
                                              for c in compilers]:
            loaded.judge.step_budget, loaded.judge.draft_tokens = budget, draft  # read by every generate call
            label = " ".join([*([dtype] if "," in args.dtypes else []), *([linears] if "," in args.linears else []),
                              *([f"budget {budget}"] if len(budgets) > 1 else []),
                              *([f"drafts {draft}"] if len(drafts) > 1 else []),
                              *([f"{compiler} grammar"] if len(compilers) > 1 else []), name])
            with grammars_compiled_by(compiler):
                runs.append(measure(label, configs[name], loaded, samples))
            print(json.dumps(runs[-1].row()), flush=True)
        del loaded
        gc.collect()
    roofline = None if args.no_roofline else measure_roofline(device)
    cache = cache_check(args.data, args.judge or "smollm2-135m-instruct", args.cache_check) if args.cache_check else None
    judge_name = next(iter(judges.values()))[0].split("|")[0]
    title = args.title or f"{describe(device)} · {judge_name} · {Path(args.data).name}"
    body = markdown(args, f"{describe(device)}, flags {' '.join(cpu_flags()) or 'unknown'}"
                    if device == "cpu" else describe(device), judges, [m.name for m in metrics], runs, roofline, cache)
    write_section(Path(args.out), title, body)
    print(body)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")

if __name__ == "__main__":
    main()
