"""Attention alone, as the judges' decoding passes run it, against two other routes, side by side.

The engine's route (engine/attention.py): one token a row goes through transformers' SDPA with
the query heads folded onto their shared key/value heads; several tokens a row go through SDPA's
grouped attention (`enable_gqa`). The other routes:

- folded: several tokens a row folded too (G query heads x T tokens as G*T query rows of their
  key/value head, the mask repeated for each head), through the same SDPA kernel;
- math: the folded product written out (scores and output products in the judge's dtype, the
  softmax in float32), as transformers' eager attention does; "math float32" the same with every
  product in float32.

Each route's largest error is against SDPA on the same inputs in float32. Shapes: Qwen2.5-0.5B
(14 query heads on 2 key/value heads of 64) and Qwen2.5-1.5B (12 on 2 of 128), a third of each
row's cache padding, as rows of different metrics carry instructions of different lengths.

    .venv/bin/python scripts/bench_attention.py [--dtype bfloat16] [--device cpu]
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from localeval.device import cpu_flags, describe
from localeval.engine.attention import grouped_sdpa
from roofline import _best_time

JUDGES = {"qwen-0.5b": (14, 2, 64), "qwen-1.5b": (12, 2, 128)}  # query heads, key/value heads, head dim
PASSES = [(20, 1, 600), (20, 1, 1200), (32, 1, 1200), (20, 2, 600), (8, 4, 600), (32, 100, 300)]  # rows, tokens, cached


def inputs(heads: int, kv_heads: int, dim: int, rows: int, tokens: int, cached: int, dtype, device):
    torch.manual_seed(0)
    query = torch.randn(rows, heads, tokens, dim, device=device).to(dtype)
    key, value = (torch.randn(rows, kv_heads, cached, dim, device=device).to(dtype) for _ in range(2))
    mask = torch.ones(rows, 1, tokens, cached, dtype=torch.bool, device=device).tril(cached - tokens)
    mask[:, :, :, : cached // 3] = False
    return query, key, value, mask


def folded(query, mask, groups: int):
    rows, heads, tokens, dim = query.shape
    return query.reshape(rows, heads // groups, groups * tokens, dim), mask.repeat(1, 1, groups, 1)


def routes(query, key, value, mask, groups: int) -> dict:
    """Each route's work, returning (rows, tokens, heads, dim) as transformers' attention does."""
    module = SimpleNamespace(num_key_value_groups=groups, is_causal=True, training=False)
    scale = query.shape[-1] ** -0.5
    q, m = folded(query, mask, groups)
    unfold = lambda out: out.reshape(query.shape).transpose(1, 2)  # noqa: E731

    def math(dtype=query.dtype):
        scores = (q.to(dtype) @ key.to(dtype).transpose(-1, -2)) * scale
        weights = scores.masked_fill(~m, float("-inf")).softmax(-1, dtype=torch.float32)
        return unfold(weights.to(dtype) @ value.to(dtype)).to(query.dtype)

    return {
        "engine": lambda: grouped_sdpa(module, query, key, value, mask, scaling=scale)[0],
        "folded": lambda: unfold(F.scaled_dot_product_attention(q, key, value, attn_mask=m, scale=scale)),
        "math": math,
        "math float32": lambda: math(torch.float32),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32", "float16"])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    dtype, device = getattr(torch, args.dtype), args.device
    flags = f", flags {' '.join(cpu_flags())}" if device == "cpu" else ""
    print(f"device: {describe(device)}{flags}; {args.dtype}; ms a layer (fastest of 5), largest error against float32\n")
    names = list(routes(*inputs(2, 1, 8, 1, 1, 4, dtype, device), 2))
    print("| judge | rows x tokens, cached | " + " | ".join(f"{name} ms" for name in names) + " | "
          + " | ".join(f"{name} error" for name in names) + " |")
    print("|---|---|" + "---:|" * 2 * len(names))
    for judge, (heads, kv_heads, dim) in JUDGES.items():
        for rows, tokens, cached in PASSES:
            query, key, value, mask = inputs(heads, kv_heads, dim, rows, tokens, cached, dtype, device)
            reference = F.scaled_dot_product_attention(query.float(), key.float(), value.float(), attn_mask=mask,
                                                       enable_gqa=True)
            timed = routes(query, key, value, mask, heads // kv_heads)
            ms = [_best_time(work, args.device) * 1e3 for work in timed.values()]
            errors = [(work().float() - reference.transpose(1, 2)).abs().max().item() for work in timed.values()]
            print(f"| {judge} | {rows} x {tokens}, {cached} | " + " | ".join(f"{t:.2f}" for t in ms) + " | "
                  + " | ".join(f"{e:.1e}" for e in errors) + " |")


if __name__ == "__main__":
    main()
