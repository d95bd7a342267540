"""A persistent cache of judge answers, so a re-run with the same model and prompts is free.

Keyed by the judge's identity and the digest of the full request (messages, schema, token
bound): a changed prompt, schema or model never hits a stale entry. An answer is kept whole:
its text and the probabilities of its choices, without which soft scoring would silently fall
back to the greedy verdicts. Answers cached before probabilities were kept are in an older
table, which is not read.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import platformdirs

from ..errors import EnvironmentFailure, ScoringStopped
from ..options import folder_from_environment, switched_off
from ..requests import Choice, JudgeAnswer, JudgeRequest

TABLE = "answers_v2"  # v2: with the probabilities of each answer's choices


def default_cache_dir() -> Path:
    """$LOCALEVAL_CACHE_DIR (a file there is refused before any model loads), else the user's cache folder."""
    return folder_from_environment("LOCALEVAL_CACHE_DIR") or platformdirs.user_cache_path("localeval")


def default_cache_file() -> Path:
    return default_cache_dir() / "judge-answers.sqlite"


def check_writable(path: Path | None = None) -> None:
    """Before any model loads: the cache file can be written where it is (or made where it would be),
    else the error its first write would give, now rather than after the judge has loaded. Nothing is
    created: a run refused later leaves the cache folder alone."""
    path = path or default_cache_file()
    try:
        reason = _unwritable_because(path)
    except OSError as error:  # a folder on the way that cannot be looked into, a name too long
        reason = error.strerror or str(error)
    if reason is not None:
        raise EnvironmentFailure(_cannot_write(path, reason))


def _unwritable_because(path: Path) -> str | None:
    existing = next(place for place in (path, *path.parents) if place.exists())
    if existing == path and not path.is_file():
        return "a folder is where its file belongs"
    folder = path.parent if existing == path else existing
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    # sqlite writes a journal beside its file: the folder must be writable too
    if not os.access(folder, os.W_OK | os.X_OK) or (existing == path and not os.access(path, os.W_OK)):
        return "permission denied or a read-only file system"
    return None


def _cannot_write(path: Path, reason: object, full: bool = False) -> str:
    room = "free space, " if full else ""
    return (f"the judge-answer cache {path} cannot be written ({reason}); {room}set LOCALEVAL_CACHE_DIR to a "
            f"writable folder, or turn the cache off ({switched_off('cache')})")


class AnswerCache:
    def __init__(self, path: Path | None = None):
        self.path = path or default_cache_file()
        self._connection: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        """Opened on first use, so that a run refused before it scores (a bad option, an --out that
        cannot be written) reports that, not the cache, and leaves the cache folder alone."""
        if self._connection is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(self.path)
                connection.execute(
                    f"CREATE TABLE IF NOT EXISTS {TABLE} (judge TEXT, request TEXT, text TEXT, output_tokens INTEGER,"
                    " choices TEXT, PRIMARY KEY (judge, request))"
                )
            except (OSError, sqlite3.Error) as error:
                raise self._failure(error) from None
            self._connection = connection
        return self._connection

    def get_many(self, judge: str, requests: list[JudgeRequest]) -> dict[JudgeRequest, JudgeAnswer]:
        found = {}
        for request in requests:
            row = self._db.execute(
                f"SELECT text, output_tokens, choices FROM {TABLE} WHERE judge = ? AND request = ?",
                (judge, request.key()),
            ).fetchone()
            if row is not None:
                choices = tuple(Choice(key, probabilities) for key, probabilities in json.loads(row[2]))
                found[request] = JudgeAnswer.parse(row[0], row[1], choices)
        return found

    def put_many(self, judge: str, answers: dict[JudgeRequest, JudgeAnswer]) -> None:
        rows = [(judge, r.key(), a.text, a.output_tokens, _choices_json(a)) for r, a in answers.items()
                if a.error is None]
        try:
            with self._db:
                self._db.executemany(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.Error as error:
            raise self._failure(error) from None

    def _failure(self, error: Exception) -> ScoringStopped:
        # mid-run: what was kept, and how to go on, is the caller's to add
        return ScoringStopped(_cannot_write(self.path, error, full=True))  # mid-run, a full disk is likeliest

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def _choices_json(answer: JudgeAnswer) -> str:
    return json.dumps([[choice.key, choice.probabilities] for choice in answer.choices])
