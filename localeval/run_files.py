"""A finished run's folder as `localeval compare` reads it: its summary, checked, and each sample's scores.

results.jsonl is read a line at a time, keeping only each sample's scores (its evidence is most of its
bytes: two files of 94 MB took 494 MB when whole rows were kept, a review), and counting what is no
result: a line cut short, damage, a score outside 0 to 1, an id written twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UserError
from .gating import a_score
from .results import LOCK_FILE, RESULTS_FILE, RUN_FILE, SUMMARY_FILE, folder_in_use, result_of


@dataclass(frozen=True)
class RunFiles:
    folder: Path
    summary: dict[str, Any]
    scores: dict[str, dict[str, float | None]]  # sample id -> score name -> its score (None: null)
    results_read: bool  # False where results.jsonl is gone: no sample can be paired
    rows: int  # results in the file, an id written twice counted twice
    unreadable_lines: int  # lines that are no result (cut short when a run stopped, damaged), or hold a score out of range

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        return self.summary["metrics"]

    def described(self) -> dict[str, Any]:
        summary = self.summary
        return {"folder": str(self.folder), "started": summary.get("started"), "finished": summary.get("finished"),
                "samples": summary.get("samples"), "data": summary.get("data"), "data_sha256": summary.get("data_sha256"),
                "judge": (summary.get("models") or {}).get("judge")}


def read_run(given: str) -> RunFiles:
    """A finished run's output folder, or its summary.json."""
    path = Path(given).expanduser()
    if not path.exists():
        raise UserError(f"compare: {given}: no such folder or file; give a run's --out folder or its {SUMMARY_FILE}")
    if path.name == RESULTS_FILE:
        raise UserError(f"compare: {given}: give the run's --out folder (or its {SUMMARY_FILE}), not its {RESULTS_FILE}")
    folder, summary_path = (path, path / SUMMARY_FILE) if path.is_dir() else (path.parent, path)
    if folder_in_use(folder):  # its files are an earlier run's, or half this one's (a CI probe compared them)
        raise UserError(f"compare: a localeval run is writing in {folder} now ({LOCK_FILE} is held); compare it "
                        "once that run has ended")
    if not summary_path.is_file():
        raise UserError(f"compare: {folder} holds no {SUMMARY_FILE} (a run that did not finish writes none: --resume "
                        f"with the localeval that scored it finishes it); give a run's --out folder or its {SUMMARY_FILE}")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        _check_summary(summary, summary_path)
        summary = _with_data_digest(summary, folder)
        results = folder / RESULTS_FILE
        scores, rows, unreadable = _scores(results, list(summary["metrics"])) if results.exists() else ({}, 0, 0)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise UserError(f"compare: cannot read {folder}'s run ({type(error).__name__}: {error})") from None
    return RunFiles(folder, summary, scores, results.exists(), rows, unreadable)


def _with_data_digest(summary: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A summary written before it kept the data's sha256 takes its run.json's, which has had it longer: compare
    said whether the two runs scored one data file was unknown (an upgrade probe)."""
    if summary.get("data_sha256"):
        return summary
    try:
        recorded = json.loads((folder / RUN_FILE).read_text(encoding="utf-8")).get("data_sha256")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return summary
    return {**summary, "data_sha256": recorded} if isinstance(recorded, str) and recorded else summary


def _scores(results: Path, names: list[str]) -> tuple[dict[str, dict[str, float | None]], int, int]:
    """Each sample's scores by id, the results read, and the lines that are none."""
    scores: dict[str, dict[str, float | None]] = {}
    rows = unreadable = 0
    with results.open("rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = result_of(line)
            kept = None if row is None else {name: row.get(name) for name in names}
            if kept is None or not all(value is None or a_score(value) for value in kept.values()):
                unreadable += 1
                continue
            rows += 1
            scores[str(row["id"])] = kept
    return scores, rows, unreadable


def _check_summary(summary: Any, path: Path) -> None:
    """What compare reads of a summary, in the shapes localeval writes (docs/output.md); the
    schema_version of summaries written before it was kept, absent, read as 1."""
    def refused(why: str) -> UserError:
        return UserError(f"compare: {path} is not a localeval summary ({why})")

    if not isinstance(summary, dict):
        raise refused("it is not a JSON object")
    if summary.get("schema_version", 1) != 1:
        raise UserError(f"compare: {path} has schema_version {summary['schema_version']!r}; this localeval reads 1")
    if not isinstance(summary.get("metrics"), dict):
        raise refused('it has no "metrics"')
    for name, row in summary["metrics"].items():
        if not (isinstance(row, dict) and (row.get("mean") is None or a_score(row["mean"]))
                and all(_count(row.get(count)) for count in ("scored", "null"))):
            raise refused(f"{name}'s row is not a mean from 0 to 1 and its counts")
    for key, kind in (("models", dict), ("settings", dict), ("data_sha256", str), ("data", str), ("finished", str)):
        if summary.get(key) is not None and not isinstance(summary[key], kind):
            raise refused(f"its {key} is not {'an object' if kind is dict else 'text'}")
    for key in ("samples", "results_in_file"):
        if summary.get(key) is not None and not _count(summary[key]):
            raise refused(f"its {key} is not a count")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
