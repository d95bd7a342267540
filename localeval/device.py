"""Where the models run: CUDA when present, else CPU; and in which float format.

On a CPU the default is float32, because it is the format in which a sample's scores do not depend
on what else shares its batch. bfloat16 rounds every intermediate result to 8 bits of mantissa, so
the different summation order of a different batch shape (a one-row matrix product, attention over
differently padded keys, several forced tokens fed in one pass or one by one) flips roundings and,
through them, some verdicts: measured with scripts/bench_speed.py, 7.7% of SmolLM2's verdicts
changed between --batch-size 1 and the default in bfloat16, none in float32 (docs/benchmarks.md).
bfloat16 is 1.8-3x faster on CPUs with bf16 instructions: `--dtype bfloat16` where speed matters
more than the last digits. GPUs keep bfloat16 (not yet measured there; no task was lent one).
"""

from __future__ import annotations

import torch

from .errors import UserError

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def choose_device(requested: str = "auto") -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {requested}: no CUDA device is available here (use --device cpu)")
    if requested != "cpu" and not requested.startswith("cuda"):
        raise UserError(f"unknown device '{requested}': use auto, cpu, cuda or cuda:N")
    return requested


def choose_dtype(device: str, requested: str = "auto") -> torch.dtype:
    if requested != "auto":
        if requested not in DTYPES:
            raise UserError(f"unknown dtype '{requested}': use auto, {', '.join(DTYPES)}")
        return DTYPES[requested]
    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def describe(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    import os
    import platform

    return f"CPU ({platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()})"
