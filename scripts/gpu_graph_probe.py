"""Would CUDA graphs make a judge's decoding pass fast? One decoding pass of a judge, timed three ways.

On the H200 a batched decoding pass took 39 ms against a floor under 1 ms: it was bound by host time,
Python and the hundreds of kernel launches of a pass (docs/benchmarks.md, "A lent GPU at last"). A
CUDA graph records a pass once and replays it in one launch, but it needs fixed shapes and fixed
addresses: a cache of fixed size written in place, and a mask updated in place. Before the engine is
built that way, this probe measures what it would buy for a judge's shapes:

  engine  localeval's pass as it runs now (decode.Batch.step: a cache that grows, a 2D mask)
  static  the same pass over transformers' StaticCache (fixed size, written in place) and a 4D mask
          kept in place: the form a graph needs, run eagerly
  graph   the static pass recorded once as a CUDA graph, then replayed (CUDA only)

Every row gets `--context` random prompt tokens, then each pass feeds every row one random token
(the grammar's share of a pass is not in these figures). Each timing is host ms a pass (until the
calls returned) / total ms a pass (after a synchronisation), the mean over `--passes`; each
difference is the largest one between a pass's logits and the engine's, over the first rows. With
random weights (scripts/gpu_kit.py), on the GPU machine (with the transformers of the kit's wheels,
5.24: the static pass leans on its StaticCache's layers, `cumulative_length` and `lazy_initialization`):

    python3 scripts/gpu_graph_probe.py --model /tmp/store/qwen2.5-coder-1.5b-instruct
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import AutoModelForCausalLM, StaticCache

from localeval.engine import attention
from localeval.engine.decode import Batch, PrefixCache, Prompt
from localeval.engine.kv_cache import forward_over

COMPARED_ROWS = 8  # rows whose logits are kept for the comparison (128 rows' would fill memory)
CAPACITY_STEP = 256  # a static cache's size is rounded up to this, as an engine's sizes would be bucketed
WARM_UPS = 2  # passes a graph's capture needs before it, run on a side stream


@dataclass(frozen=True)
class Timing:
    host_ms: float  # a pass, until its calls returned
    total_ms: float  # a pass, once the device had finished

    def __str__(self) -> str:
        return f"{self.host_ms:.2f} / {self.total_ms:.2f}"


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, passes: list[Callable[[], torch.Tensor]]) -> tuple[list[torch.Tensor], Timing]:
    """Run the passes one after the other; the first rows of each one's logits, and the time a pass."""
    synchronize(device)
    kept, started = [], time.perf_counter()
    for one_pass in passes:
        kept.append(one_pass()[:COMPARED_ROWS].clone())
    host = time.perf_counter() - started
    synchronize(device)
    total = time.perf_counter() - started
    return kept, Timing(1e3 * host / len(passes), 1e3 * total / len(passes))


class StaticPass:
    """A decoding pass of one token a row over a cache of fixed size, every input in a buffer of its
    own that each pass rewrites in place: what a CUDA graph can record."""

    def __init__(self, model, prompt_cache: list[tuple[torch.Tensor, torch.Tensor]], capacity: int):
        keys = prompt_cache[0][0]  # rows x key/value heads x prompt length x head size
        rows, self.length = keys.shape[0], keys.shape[2]
        self.model, self.prompt_cache = model, prompt_cache
        self.cache = StaticCache(config=model.config, max_cache_len=capacity)
        self.tokens = torch.zeros((rows, 1), dtype=torch.long, device=keys.device)
        self.positions = torch.zeros((rows, 1), dtype=torch.long, device=keys.device)
        self.mask = torch.zeros((rows, 1, 1, capacity), dtype=torch.bool, device=keys.device)  # True: attended
        self.reset()

    def reset(self) -> None:
        """Back to the prompts alone: their keys and values in the cache's first columns."""
        for layer, (keys, values) in zip(self.cache.layers, self.prompt_cache):
            if not layer.is_initialized:
                layer.lazy_initialization(keys, values)
            layer.keys[:, :, :self.length] = keys
            layer.values[:, :, :self.length] = values
            layer.cumulative_length.fill_(self.length)  # where the next pass writes, on the device
        self.mask.zero_()
        self.mask[..., :self.length] = True
        self.fed = 0

    def prepare(self, tokens: torch.Tensor) -> None:
        """This pass's inputs into the buffers, outside any graph: each row's token, its position, and
        the column it is written to opened in the mask."""
        column = self.length + self.fed
        self.tokens.copy_(tokens[:, None])
        self.positions.fill_(column)
        self.mask[..., column] = True
        self.fed += 1

    def forward(self) -> torch.Tensor:
        return forward_over(self.model, self.cache, input_ids=self.tokens, attention_mask=self.mask,
                            position_ids=self.positions, logits_to_keep=1).logits[:, -1]


def engine_passes(model, device: torch.device, prompts: torch.Tensor, feeds: torch.Tensor):
    """localeval's own passes; their kept logits, timing, and the prompts' cache for the other ways."""
    batch = Batch(model, device, pad_id=0)
    batch.prefill([Prompt((), tuple(row)) for row in prompts.tolist()], PrefixCache(model, device))
    prompt_cache = [(layer.keys.clone(), layer.values.clone()) for layer in batch.cache.layers]
    rows = [[[token] for token in tokens] for tokens in feeds.tolist()]  # the engine takes its tokens as lists
    passes = [lambda tokens=tokens: batch.step(tokens)[:, -1] for tokens in rows]
    return (*timed(device, passes), prompt_cache)


def static_passes(static: StaticPass, device: torch.device, feeds: torch.Tensor):
    static.reset()
    return timed(device, [lambda tokens=tokens: (static.prepare(tokens), static.forward())[1] for tokens in feeds])


def graph_passes(static: StaticPass, device: torch.device, feeds: torch.Tensor):
    """The static pass captured once (after warm-ups on a side stream, as capture requires), replayed;
    also what a new shape costs an engine: its warm-up passes, then the recording, each timed apart
    (ms). The recording of a process's first graph carries one-off set-up: a later one costs less."""
    started = time.perf_counter()
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for tokens in feeds[:WARM_UPS]:
            static.prepare(tokens)
            static.forward()
    torch.cuda.current_stream(device).wait_stream(side)
    synchronize(device)
    warmed = time.perf_counter()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        logits = static.forward()
    synchronize(device)
    costs = (1e3 * (warmed - started), 1e3 * (time.perf_counter() - warmed))
    static.reset()

    def replay(tokens: torch.Tensor) -> torch.Tensor:
        static.prepare(tokens)
        graph.replay()
        return logits

    return (*timed(device, [lambda tokens=tokens: replay(tokens) for tokens in feeds]), costs)


def largest_difference(ours: list[torch.Tensor], engine: list[torch.Tensor]) -> float:
    return max(float((a.float() - b.float()).abs().max()) for a, b in zip(ours, engine))


def probe(model, device: torch.device, rows: int, context: int, passes: int, seed: int = 0) -> dict[str, str]:
    """One table row: each way's timing and its logits' largest difference from the engine's."""
    generator = torch.Generator().manual_seed(seed)
    vocabulary = model.config.vocab_size
    prompts = torch.randint(vocabulary, (rows, context), generator=generator)
    # on the device already: a pageable copy from the host before each pass would wait for the device,
    # and hide the host time a graph saves (the engine's pass copies its few tokens all the same)
    feeds = torch.randint(vocabulary, (passes, rows), generator=generator).to(device)
    capacity = -(-(context + passes + WARM_UPS) // CAPACITY_STEP) * CAPACITY_STEP
    row = {"rows": str(rows), "cache columns": str(capacity)}
    on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()  # graphs: cuda:N
    with on_device, torch.inference_mode(), attention.kernels(device):
        engine, timing, prompt_cache = engine_passes(model, device, prompts, feeds)
        row["engine"] = str(timing)
        static = StaticPass(model, prompt_cache, capacity)
        logits, timing = static_passes(static, device, feeds)
        row["static"], row["static vs engine"] = str(timing), f"{largest_difference(logits, engine):.2g}"
        if device.type == "cuda":
            try:
                logits, timing, (warm_up_ms, record_ms) = graph_passes(static, device, feeds)
            except RuntimeError as error:  # a capture this transformers cannot give: say why, keep the table
                row["graph"] = f"capture failed: {str(error).splitlines()[0][:160]}"
            else:
                row["graph"], row["graph vs engine"] = str(timing), f"{largest_difference(logits, engine):.2g}"
                row["warm-ups + recording ms"] = f"{warm_up_ms:.1f} + {record_ms:.1f}"  # once per shape
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a causal LM's folder (random weights: scripts/gpu_kit.py)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", help="default: bfloat16 on CUDA, float32 elsewhere")
    parser.add_argument("--rows", default="1,32,128", help="rows a pass, comma-separated")
    parser.add_argument("--context", type=int, default=700, help="prompt tokens a row (a dev sample's are 300-1,100)")
    parser.add_argument("--passes", type=int, default=32)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype or ("bfloat16" if device.type == "cuda" else "float32"))
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation=attention.register(),
                                                 local_files_only=True).to(device).eval()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"{name}, torch {torch.__version__}, {dtype}, {args.model}; {args.context} prompt tokens a row, "
          f"{args.passes} passes; host / total ms a pass", flush=True)
    table = [probe(model, device, int(rows), args.context, args.passes) for rows in args.rows.split(",")]
    columns = list(table[0])
    print("| " + " | ".join(columns) + " |\n|" + "---:|" * len(columns))
    for row in table:
        print("| " + " | ".join(row.get(column, "") for column in columns) + " |", flush=True)


if __name__ == "__main__":
    main()
