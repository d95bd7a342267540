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
from .estimates import LEVEL, bootstrap_interval, corrected_mean

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


def summarize(rows: Iterable[dict[str, Any]], metrics: list[str],
              human: dict[str, dict[str, float | None]] | None = None) -> dict[str, dict[str, Any]]:
    """Per metric: mean of the scored samples with its bootstrap interval, how many scored, how many null.

    `human` ({sample id: {metric: human score}}, from `--labels`) adds the mean corrected with
    the labeled samples (estimates.corrected_mean) for every metric with labeled samples.
    """
    rows = list(rows)
    table = {}
    for name in metrics:
        scores = [row.get(name) for row in rows]
        scored = [s for s in scores if _number(s)]
        interval = bootstrap_interval(scored)
        table[name] = {
            "mean": sum(scored) / len(scored) if scored else None,
            "interval": list(interval) if interval else None,
            "scored": len(scored),
            "null": len(scores) - len(scored),
        }
        labeled = [(row[name], human[str(row["id"])][name]) for row in rows
                   if human and str(row["id"]) in human and _number(row.get(name))
                   and _number(human[str(row["id"])].get(name))]
        if labeled:
            table[name]["corrected"] = corrected_mean(scored, labeled).to_json()
    return table


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    """The summary as a text table; with the corrected columns when some metric has labeled samples."""
    corrected = any("corrected" in row for row in summary.values())
    level = f"{100 * LEVEL:.0f}% CI"
    header = ["metric", "mean", level, "scored", "null"]
    if corrected:
        header += ["labeled", "bias", "corrected", f"{level} (corrected)"]
    lines = [header]
    for name, row in summary.items():
        cells = [name, _fixed(row["mean"]), _interval(row.get("interval")), str(row["scored"]), str(row["null"])]
        if corrected:
            fix = row.get("corrected")
            cells += (["-"] * 4 if fix is None else
                      [str(fix["labeled"]), f"{fix['bias']:+.3f}", _fixed(fix["mean"]), _interval(fix["interval"])])
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths))) for line in lines)


def _fixed(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(interval) -> str:
    return "-" if not interval else f"[{interval[0]:.3f}, {interval[1]:.3f}]"
