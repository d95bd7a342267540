"""Host and device time of one SDPA call on CUDA, per kernel, for the shapes a judge's passes have.

Why localeval's attention on CUDA leaves out cuDNN's kernel (localeval/engine/attention.py): cuDNN
plans each new shape, and a judge's cache grows every pass. Each timed call gets a key/value length
not seen before in this process, as a judge's passes do; the kernels timed after the first meet the
lengths again (so the cudnn column shows cuDNN with its plans made, where torch's choice was cuDNN's
and made them). Keys and values are copied per query head and masked, as transformers passes them
for a pass of several tokens. Run it on the GPU machine (device tool, nothing carried):

    python3 scripts/gpu_attention_probe.py

Each cell: host ms (the call's return) / total ms (after a synchronisation), per call, mean of 40.
"""

from __future__ import annotations

import contextlib
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

HEADS, HEAD_DIM = 14, 64  # Qwen2.5-0.5B's query heads (its 2 key/value heads copied to 14)
LENGTHS = range(1000, 1280, 7)  # 40 key/value lengths, one per call
WARM_UP_LENGTH = 999  # outside LENGTHS: the warm-up makes no plan a timed call could use
KERNELS = {"torch's choice": None, "cudnn": [SDPBackend.CUDNN_ATTENTION], "efficient": [SDPBackend.EFFICIENT_ATTENTION],
           "math": [SDPBackend.MATH]}
SHAPES = [(1, 1), (32, 1), (32, 4), (128, 4), (128, 300)]  # (rows, tokens a row): decoding passes, a prefill


def inputs(rows: int, width: int, length: int) -> tuple[torch.Tensor, ...]:
    """Random queries, keys and values (never zeros: they can run faster than real data) and a
    boolean mask with some columns masked out, as padding is; keys and values copied per query head,
    as transformers does for a pass of several tokens."""
    query = torch.randn(rows, HEADS, width, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    key = torch.randn(rows, HEADS, length, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    mask = torch.rand(rows, 1, width, length, device="cuda") > 0.1
    mask[..., -1] = True
    return query, key, torch.randn_like(key), mask


def per_call(calls: list[tuple[torch.Tensor, ...]], warm_up: tuple[torch.Tensor, ...],
             kernels: list[SDPBackend] | None) -> str:
    with torch.inference_mode(), (sdpa_kernel(kernels) if kernels else contextlib.nullcontext()):
        try:
            torch.nn.functional.scaled_dot_product_attention(*warm_up[:3], attn_mask=warm_up[3])
        except RuntimeError:  # this kernel does not take these inputs
            return "n/a"
        torch.cuda.synchronize()
        started = time.perf_counter()
        for query, key, value, mask in calls:
            torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        host = time.perf_counter() - started
        torch.cuda.synchronize()
        total = time.perf_counter() - started
    return f"{1e3 * host / len(calls):.2f} / {1e3 * total / len(calls):.2f}"


def main() -> None:
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, cuDNN {torch.backends.cudnn.version()}")
    print(f"| rows | tokens a row | torch chooses | {' | '.join(KERNELS)} |")
    print("|---:|---:|---|" + "---|" * len(KERNELS))
    for rows, width in SHAPES:
        calls, warm_up = [inputs(rows, width, length) for length in LENGTHS], inputs(rows, width, WARM_UP_LENGTH)
        chosen = SDPBackend(torch._fused_sdp_choice(*warm_up[:3], warm_up[3])).name
        cells = [per_call(calls, warm_up, kernels) for kernels in KERNELS.values()]
        print(f"| {rows} | {width} | {chosen} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
