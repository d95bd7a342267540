"""Where the models run: CUDA when present, else CPU; bfloat16 where the hardware does it well."""

from __future__ import annotations

from functools import lru_cache

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
    if device.startswith("cuda"):
        return torch.bfloat16
    # bfloat16 halves memory traffic but is only fast on CPUs with native bf16 instructions.
    return torch.bfloat16 if _cpu_has_bf16() else torch.float32


@lru_cache(maxsize=1)
def _cpu_has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = info.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def describe(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    import os
    import platform

    return f"CPU ({platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()})"
