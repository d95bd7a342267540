"""A persistent cache of judge answers, so a re-run with the same model and prompts is free.

Keyed by the judge's identity and the digest of the full request (messages, schema, token
bound): a changed prompt, schema or model never hits a stale entry.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..requests import JudgeAnswer, JudgeRequest


def default_cache_dir() -> Path:
    if os.environ.get("LOCALEVAL_CACHE_DIR"):
        return Path(os.environ["LOCALEVAL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "localeval"


class AnswerCache:
    def __init__(self, path: Path | None = None):
        path = path or default_cache_dir() / "judge-answers.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS answers (judge TEXT, request TEXT, text TEXT, output_tokens INTEGER,"
            " PRIMARY KEY (judge, request))"
        )

    def get_many(self, judge: str, requests: list[JudgeRequest]) -> dict[JudgeRequest, JudgeAnswer]:
        found = {}
        for request in requests:
            row = self._db.execute(
                "SELECT text, output_tokens FROM answers WHERE judge = ? AND request = ?", (judge, request.key())
            ).fetchone()
            if row is not None:
                found[request] = JudgeAnswer.parse(row[0], row[1])
        return found

    def put_many(self, judge: str, answers: dict[JudgeRequest, JudgeAnswer]) -> None:
        rows = [(judge, r.key(), a.text, a.output_tokens) for r, a in answers.items() if a.error is None]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()
