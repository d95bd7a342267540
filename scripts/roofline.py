"""The device's own limits, measured in the benchmark's process: what prefill and decoding could reach.

- Matrix-multiply peak: a product of the shape a prefill runs (512 tokens through a 1536 x 8960
  layer, a Qwen2.5-1.5B MLP projection), in the device's fast format: bfloat16 where the CPU has
  bf16 instructions (or on a GPU), else float32. Every run of a benchmark is set against this one
  peak, a float32 run on a bf16 CPU included: it says what the device could do, not the dtype.
  The same product is also timed in float32, the ceiling of a float32 judge: set against it, a
  float32 run says how much its engine leaves on the table, apart from what its dtype costs.
- Memory bandwidth: the read rate of a sum over a tensor far larger than the caches.

A prefill is bound by the first (it computes 2 x parameters flops per token), a decoding pass by the
second (it reads every weight once, and each row's keys and values). bench_speed.py reports what
it measured as a share of each.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
import torch

from localeval.device import native_bf16

PREFILL_SHAPE = (512, 1536, 8960)  # tokens, hidden, intermediate
BANDWIDTH_BYTES = 1 << 30  # 1 GiB: well past any CPU cache


@dataclass(frozen=True)
class Roofline:
    matmul_flops: float  # per second, in `dtype`
    bandwidth: float  # bytes read per second
    dtype: str
    float32_flops: float  # per second, the same product in float32

    def flops_in(self, dtype: str) -> float:
        """The matmul peak a judge computing in `dtype` can reach."""
        return self.float32_flops if dtype == "float32" else self.matmul_flops

    def describe(self) -> str:
        float32 = "" if self.dtype == "float32" else f"; in float32 {self.float32_flops / 1e9:.0f} GFLOP/s"
        return (f"matmul peak {self.matmul_flops / 1e9:.0f} GFLOP/s ({self.dtype}, {'x'.join(map(str, PREFILL_SHAPE))}"
                f"{float32}), memory read {self.bandwidth / 1e9:.1f} GB/s")


def fast_dtype(device: str) -> torch.dtype:
    if device.startswith("cuda") or native_bf16():
        return torch.bfloat16
    return torch.float32


def measure(device: str, dtype: torch.dtype | None = None) -> Roofline:
    dtype = dtype or fast_dtype(device)
    peak = _matmul_flops(device, dtype)
    float32 = peak if dtype == torch.float32 else _matmul_flops(device, torch.float32)
    big = torch.ones(BANDWIDTH_BYTES // 4, device=device)
    read_seconds = _best_time(lambda: big.sum(), device)
    return Roofline(peak, BANDWIDTH_BYTES / read_seconds, str(dtype).removeprefix("torch."), float32)


def _matmul_flops(device: str, dtype: torch.dtype) -> float:
    """The faster of torch's plain product and, on a CPU, oneDNN's with the weight prepacked (what
    localeval's CPU judges run, engine/linears.py): in float32 the plain one reaches about half."""
    tokens, hidden, inner = PREFILL_SHAPE
    x = torch.randn(tokens, hidden, device=device).to(dtype)
    w = torch.randn(inner, hidden, device=device).to(dtype)
    seconds = _best_time(lambda: x @ w.T, device)
    if device == "cpu" and torch.backends.mkldnn.is_available():
        mkldnn = torch.ops.mkldnn
        packed = mkldnn._reorder_linear_weight(w, tokens)
        seconds = min(seconds, _best_time(lambda: mkldnn._linear_pointwise(x, packed, None, "none", [], ""), device))
    return 2 * tokens * hidden * inner / seconds


def _best_time(work, device: str, repeats: int = 5) -> float:
    """The fastest of a few runs after a warm-up: the limit, not the noise of a shared machine. On a
    GPU each run is many calls between two synchronisations: one product takes tens of microseconds
    there, about what launching it and reading the host's clock cost."""
    cuda = device.startswith("cuda")
    sync, calls = (torch.cuda.synchronize, 50) if cuda else ((lambda: None), 1)
    work()
    sync()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            work()
        sync()
        best = min(best, (time.perf_counter() - started) / calls)
    return best
