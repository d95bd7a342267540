"""Where the models run: CUDA when present, else CPU; and in which float format.

On a CPU the default is float32, because it is the format in which a sample's scores do not depend
on what else shares its batch. bfloat16 rounds every intermediate result to 8 bits of mantissa, so
the different summation order of a different batch shape (a one-row matrix product, attention over
differently padded keys, several forced tokens fed in one pass or one by one) flips roundings and,
through them, some verdicts: measured with scripts/bench_speed.py, 7.7% of SmolLM2's verdicts
changed between --batch-size 1 and the default in bfloat16, none in float32 (docs/benchmarks.md).

Where that costs too much, a judge runs in bfloat16 by default: on a CPU with bf16 instructions
bfloat16 is 3-4x faster, and a judge whose agreement with people it kept says so in the registry
(`cpu_dtype`, measured with bench: qwen2.5-coder-1.5b-instruct, mean rho 0.871 in bfloat16 against
0.853 in float32). `--dtype float32` gives batch-independent scores with any judge. GPUs keep
bfloat16.

`int8` is a CPU format of its own: the judge's linear layers hold int8 weights, read a quarter of
float32's bytes per decoding pass, and compute with bfloat16 activations (engine/int8.py).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch

from .errors import UserError
from .options import given

INT8 = "int8"  # int8 weights, bfloat16 activations: the judge's linear layers only, CPU only
# Each name -> the dtype the model computes in.
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, INT8: torch.bfloat16}


def choose_device(requested: str = "auto") -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"{given('device', requested)}: no CUDA device is available here (use {given('device', 'cpu')})")
    if requested != "cpu" and not requested.startswith("cuda"):
        raise UserError(f"unknown device '{requested}': use auto, cpu, cuda or cuda:N")
    return requested


def dtype_name(device: str, requested: str = "auto", cpu_choice: str = "float32") -> str:
    """The format the judge runs in, by its --dtype name: "auto" resolved, the rest checked.
    `cpu_choice` is the judge's measured choice (models.cpu_dtype) for a CPU with bf16 instructions."""
    if requested == "auto":
        if device.startswith("cuda"):
            return "bfloat16"
        return cpu_choice if native_bf16() else "float32"
    if requested not in DTYPES:
        raise UserError(f"unknown dtype '{requested}': use auto, {', '.join(DTYPES)}")
    if requested == INT8 and device.startswith("cuda"):
        raise UserError(f"{given('dtype', INT8)} is for CPUs (torch's weight-only int8 kernel); on a GPU use bfloat16")
    return requested


@lru_cache(maxsize=1)
def cpu_flags() -> tuple[str, ...]:
    """The CPU's vector and matrix instruction sets (avx2, avx512*, amx*), from /proc/cpuinfo; empty
    where that is not readable (then nothing is assumed)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ()
    for line in text.splitlines():
        if line.startswith("flags"):
            return tuple(sorted(f for f in line.split(":", 1)[1].split() if f.startswith(("avx2", "avx512", "amx"))))
    return ()


# The instructions that compute each half-width format in hardware. A CPU without them converts
# (f16c, avx512_bf16's absence) and computes in float32, several times slower than float32 itself.
HALF_WIDTH_INSTRUCTIONS = {torch.bfloat16: ("avx512_bf16", "amx_bf16"), torch.float16: ("avx512_fp16", "amx_fp16")}


def native_bf16() -> bool:
    """Whether the CPU computes bfloat16 in hardware: elsewhere it is emulated, slower than float32."""
    return _computes_in(torch.bfloat16)


def _computes_in(dtype: torch.dtype) -> bool:
    return any(flag in cpu_flags() for flag in HALF_WIDTH_INSTRUCTIONS[dtype])


def emulated_on_this_cpu(device: str | torch.device, dtype: torch.dtype) -> bool:
    """Whether a judge computing in `dtype` on `device` (bfloat16: --dtype bfloat16 or int8's activations;
    float16) would run on a CPU of this machine that emulates it: there it runs several times slower than
    float32 (docs/benchmarks.md: int8 5.6x slower for Qwen-0.5B on a 2-core AVX2 CPU). Unknown flags (no
    /proc/cpuinfo) are not held against the choice."""
    return (torch.device(device).type == "cpu" and dtype in HALF_WIDTH_INSTRUCTIONS and bool(cpu_flags())
            and not _computes_in(dtype))


def describe(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    import os
    import platform

    from .bench.cpu_share import allowed_cores

    # the cores this process may use where fewer than the machine's (taskset, a scheduler's cgroup): a 1-CPU
    # job read "2 cores, torch threads 1" (an HPC probe)
    allowed = allowed_cores()
    cores = os.cpu_count() or allowed
    of_them = f", {allowed} of them allowed" if allowed < cores else ""
    return f"CPU ({platform.machine()}, {cores} cores{of_them}, torch threads {torch.get_num_threads()})"
