"""What scaling out on Ray costs and buys on one machine: the same `localeval run`, side by side.

Each configuration runs the command line in a fresh process on the same samples without the
answer cache, one after another: this process alone (its torch threads on every core), then a
local Ray cluster with the workers and cores asked. It reports the wall time (start-up and
model loading included, as a user waits for it), the time spent in the judge (summed over the
workers), samples/s, the ratio to the single process, and whether every score matches its.

    python scripts/bench_scaleout.py DATA [--limit 12] [--judge NAME] [--configs 1x2,2x1]

--configs: Ray workers x CPU cores per worker, comma-separated (default 1x2,2x1 on two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = ["context_relevance", "context_recall", "response_relevancy",
           "answer_supported_precision", "context_supported_precision"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data")
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--judge", default=None)
    parser.add_argument("--configs", default="1x2,2x1")
    args = parser.parse_args()
    print(f"CPU: {platform.machine()}, {os.cpu_count()} cores, flags: {_cpu_flags()}; judge: {args.judge or 'default'}; "
          f"{args.limit} samples; float32", flush=True)
    print("| configuration | wall s | judge s | samples/s | vs single process | same scores |")
    print("|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as scratch:
        single = _run(args, Path(scratch) / "single", [])
        print(_row("single process", single, single), flush=True)
        for config in args.configs.split(","):
            workers, cpus = config.split("x")
            ray = _run(args, Path(scratch) / config, ["--ray", "local", "--workers", workers, "--cpus-per-worker", cpus])
            print(_row(f"Ray, {workers} worker(s) x {cpus} core(s)", ray, single), flush=True)


def _run(args, out: Path, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "localeval", "run", args.data, "--out", str(out), "--limit", str(args.limit),
               "--no-cache", "--quiet", *extra] + (["--judge", args.judge] if args.judge else [])
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - started
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = {row["id"]: row for row in map(json.loads, (out / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    return {"wall": wall, "judge": summary["timings"]["judge_seconds"], "rows": rows, "samples": summary["samples"]}


def _row(name: str, run: dict, single: dict) -> str:
    same = all(abs((run["rows"][i][m] or 0) - (row[m] or 0)) <= 1e-5 for i, row in single["rows"].items() for m in METRICS)
    return (f"| {name} | {run['wall']:.1f} | {run['judge']:.1f} | {run['samples'] / run['wall']:.3f} | "
            f"{single['wall'] / run['wall']:.2f}x | {'yes' if same else 'NO'} |")


def _cpu_flags() -> str:
    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    wanted = ["avx2", "avx512f", "avx512_bf16", "amx_bf16"]
    return " ".join(flag for flag in wanted if flag in flags) or "none of avx2/avx512"


if __name__ == "__main__":
    main()
