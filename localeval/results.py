"""Results on disk: one JSON line per sample, appended as samples complete, and a summary.

Appending line by line is what makes a run resumable: whatever is in results.jsonl was fully
scored, and `--resume` skips those ids.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable

from .errors import UserError

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"


class ResultWriter:
    def __init__(self, out_dir: Path, resume: bool):
        self.out_dir = out_dir
        self.path = out_dir / RESULTS_FILE
        out_dir.mkdir(parents=True, exist_ok=True)
        self.done_ids = read_done_ids(self.path) if resume else set()
        if not resume and self.path.exists():
            self.path.unlink()  # a fresh run starts a fresh file; --resume keeps it
        self._file = self.path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        self._file.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        self._file.flush()  # on disk now: an interrupted run keeps every finished sample

    def close(self) -> None:
        self._file.close()


def read_done_ids(path: Path) -> set[str]:
    if not path.exists():
        return set()
    done = set()
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                done.add(str(json.loads(line)["id"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                # A line cut short by a crash: everything before it is kept, it is re-scored.
                if number == 1 or not line.endswith("\n"):
                    continue
                raise UserError(f"{path}, line {number}: not a localeval result; use another --out or drop --resume")
    return done


def read_results(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by an interruption
    return rows


def summarize(rows: Iterable[dict[str, Any]], metrics: list[str]) -> dict[str, dict[str, Any]]:
    """Per metric: mean of the scored samples, how many scored, how many null."""
    rows = list(rows)
    table = {}
    for name in metrics:
        scores = [row.get(name) for row in rows]
        scored = [s for s in scores if isinstance(s, (int, float)) and not math.isnan(s)]
        table[name] = {
            "mean": sum(scored) / len(scored) if scored else None,
            "scored": len(scored),
            "null": len(scores) - len(scored),
        }
    return table


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    width = max(len("metric"), *(len(name) for name in summary))
    lines = [f"{'metric':<{width}}  {'mean':>6}  {'scored':>6}  {'null':>4}"]
    for name, row in summary.items():
        mean = "-" if row["mean"] is None else f"{row['mean']:.3f}"
        lines.append(f"{name:<{width}}  {mean:>6}  {row['scored']:>6}  {row['null']:>4}")
    return "\n".join(lines)
