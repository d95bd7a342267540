"""A persistent cache of judge answers, so a re-run with the same model and prompts is free.

Keyed by the judge's identity and the digest of the full request (messages, schema, token
bound): a changed prompt, schema or model never hits a stale entry. An answer is kept whole:
its text and the probabilities of its choices, without which soft scoring would silently fall
back to the greedy verdicts. Answers cached before probabilities were kept are in an older
table, which is not read.

A cache file found damaged (a CI cache restored cut short, a disk's error) is only a cache: it is set
aside beside itself, said, and a new one started, whose answers the judge gives again. It failed every
later run otherwise, with advice to free space. An entry that cannot be read is asked again. A cache
that cannot be used mid-run (its disk full, a quota met, a write refused) is turned off for the rest
of the run, said. It stopped the run, exit 3, and the judge's minutes of answers were lost, for want
of a place to keep a copy of them.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, TypeVar

import platformdirs

from ..errors import EnvironmentFailure, LocalevalWarning, warn
from ..options import switched_off
from ..paths import acquired, system_lock, unwritable_because, users_folder
from ..requests import Choice, JudgeAnswer, JudgeRequest

T = TypeVar("T")
TABLE = "answers_v2"  # v2: with the probabilities of each answer's choices
CREATE_TABLE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (judge TEXT, request TEXT, text TEXT, output_tokens INTEGER, "
                "choices TEXT, PRIMARY KEY (judge, request))")
DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)  # sqlite's words for a file it cannot read as its own
SET_ASIDE = ".damaged"  # added to the name of a damaged cache file, and of its journal


class DamagedCacheWarning(LocalevalWarning):
    """The answer cache could not be read, so it was set aside and a new one started."""


class CacheOffWarning(LocalevalWarning):
    """The answer cache cannot be used (its disk full, a write refused): the run goes on without it."""


class _Unusable(Exception):
    """The cache cannot be used: it is turned off, not the run. `full`: for want of room."""

    def __init__(self, reason: object, full: bool = False):
        super().__init__(str(reason))
        self.full = full


def default_cache_dir() -> Path:
    """$LOCALEVAL_CACHE_DIR (a file there is refused before any model loads), else the user's cache folder."""
    return users_folder("LOCALEVAL_CACHE_DIR", lambda: platformdirs.user_cache_path("localeval"),
                        f", or turn the cache off ({switched_off('cache')})")


def default_cache_file() -> Path:
    return default_cache_dir() / "judge-answers.sqlite"


@contextmanager
def _held_where_possible(path: Path) -> Iterator[None]:
    """system_lock(path) held while the block runs (Windows too); on a file system without file locks, where a
    marker file would be left for good by a process killed while it held it, the block runs unlocked."""
    lock = system_lock(path)
    held = acquired(lock)
    try:
        yield
    finally:
        if held:
            lock.release()


def unwritable(path: Path | None = None) -> str | None:
    """Why the cache file at `path` (default: the user's) cannot be written where it is (or made where it would
    be), the error its first write would give, said before any model loads rather than after the judge has
    loaded; None where it can (sqlite writes a journal beside its file: its folder must be writable too).
    Nothing is created: a run refused later leaves the cache folder alone."""
    path = path or default_cache_file()
    reason = unwritable_because(path)
    return None if reason is None else _cannot_write(path, reason)


def _cannot_write(path: Path, reason: object) -> str:
    return (f"the judge-answer cache {path} cannot be written ({reason}); set LOCALEVAL_CACHE_DIR to a "
            f"writable folder, or turn the cache off ({switched_off('cache')})")


class AnswerCache:
    """One cache file, which one AnswerCache may serve to calls from several threads (a service's workers):
    its connection is shared under a lock. sqlite's default ties a connection to the thread that opened it,
    and every call from another thread was a ProgrammingError (a service probe)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path).expanduser() if path is not None else default_cache_file()
        self._lock = threading.RLock()
        self.said: list[str] = []  # what was warned of while scoring (a damaged file set aside, a full disk): kept
        self.off = False  # it could not be used: neither read nor written for the rest of the run
        self._connection: sqlite3.Connection | None = None
        self._file_opened: tuple[int, int] | None = None  # which file the connection reads (_file_at)

    def __getstate__(self) -> dict:
        """What a Ray worker gets (an AnswerCache given to evaluate(ray=...)): the file's path and state; its
        own lock, and a connection of its own, opened on first use."""
        return {**self.__dict__, "_lock": None, "_connection": None, "_file_opened": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    @property
    def _db(self) -> sqlite3.Connection:
        """Opened on first use, so that a run refused before it scores (a bad option, an --out that
        cannot be written) reports that, not the cache, and leaves the cache folder alone."""
        if self._connection is None:
            self._connection = self._past_damage(self._opened, retried=True)
        return self._connection

    def get_many(self, judge: str, requests: list[JudgeRequest]) -> dict[JudgeRequest, JudgeAnswer]:
        with self._lock, self._off_when_unusable():
            if not self.off:
                return self._past_damage(lambda: dict(self._found(judge, requests)), {})
        return {}

    def put_many(self, judge: str, answers: dict[JudgeRequest, JudgeAnswer]) -> None:
        rows = [(judge, r.key(), a.text, a.output_tokens, _choices_json(a)) for r, a in answers.items()
                if a.error is None]

        def insert() -> None:
            with self._db:
                self._db.executemany(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?, ?)", rows)
        with self._lock, self._off_when_unusable():
            if not self.off:
                self._past_damage(insert, retried=True)

    @contextmanager
    def _off_when_unusable(self) -> Iterator[None]:
        """The block's _Unusable turned into a cache that is off, said once; the block's caller goes on without it."""
        try:
            yield
        except _Unusable as unusable:
            self.off = True
            self.close()
            what, fix = (("cannot grow", "free space there") if unusable.full else
                         ("cannot be used", f"turn it off ({switched_off('cache')})"))
            said = (f"the judge-answer cache {self.path} {what} ({unusable}): this run goes on without it, and keeps "
                    f"none of its answers for the next; {fix}, or set LOCALEVAL_CACHE_DIR to another folder")
            self.said.append(said)
            warn(CacheOffWarning(said))

    def _opened(self) -> sqlite3.Connection:
        _made_private(self.path)
        # used under self._lock; waits up to 30 s for another process's write (`localeval cache clear`, a
        # run beside it) before its cache is turned off
        connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self._file_opened = _file_at(self.path)
        try:
            connection.execute(CREATE_TABLE)
        except BaseException:
            connection.close()
            raise
        return connection

    def _found(self, judge: str, requests: list[JudgeRequest]) -> Iterator[tuple[JudgeRequest, JudgeAnswer]]:
        for request in requests:
            row = self._db.execute(f"SELECT text, output_tokens, choices FROM {TABLE} WHERE judge = ? AND request = ?",
                                   (judge, request.key())).fetchone()
            if row is None:
                continue
            try:
                choices = tuple(Choice(key, probabilities) for key, probabilities in json.loads(row[2]))
            except (TypeError, ValueError):  # an entry damaged: asked of the judge again, and written anew
                continue
            if isinstance(row[0], str):
                yield request, JudgeAnswer.parse(row[0], row[1], choices)

    def _past_damage(self, use: Callable[[], T], after_damage: T | None = None, retried: bool = False) -> T:
        """`use()`; where it finds the file damaged, the file set aside and a new one started, then `use()`
        again where `retried` (opening, writing), else `after_damage` (a read: nothing cached). Any other
        failure is _Unusable: the cache is turned off (_off_when_unusable)."""
        try:
            try:
                return use()
            except sqlite3.DatabaseError as error:
                # the extended code's low byte is the primary one (SQLITE_CORRUPT_INDEX is 779); not every
                # raiser sets it
                if _code(error) not in DAMAGED:
                    raise
                self._set_aside(error)
            return use() if retried else after_damage
        # what the machine refuses (sqlite says a quota met as "disk I/O error", no errno)
        except (OSError, sqlite3.DatabaseError) as error:
            if isinstance(error, (sqlite3.ProgrammingError, sqlite3.IntegrityError)):  # a misuse: a bug to show
                raise
            full = getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or \
                getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            raise _Unusable(getattr(error, "strerror", None) or error, full) from None

    def _set_aside(self, error: sqlite3.DatabaseError) -> None:
        """The damaged file and its journals moved beside it, the journals first: one left beside a new file
        would be played into it. Under a lock, and only if the file is still the one this cache opened:
        another process (a Ray worker, a second CI job) that found the damage first has set it aside."""
        self.close()
        aside = self.path.with_name(self.path.name + SET_ASIDE)
        with _held_where_possible(Path(f"{self.path}.lock")):  # beside it, for the processes that share the cache
            if _file_at(self.path) not in (None, self._file_opened):
                return
            try:
                for end in ("-journal", "-wal", "-shm", ""):
                    if Path(f"{self.path}{end}").exists():
                        os.replace(f"{self.path}{end}", f"{aside}{end}")
            except OSError as failure:
                raise _Unusable(f"damaged: {error}; and it could not be set aside: {failure.strerror or failure}; "
                                "remove it") from None
        said = (f"the judge-answer cache {self.path} was damaged ({error}): set aside as {aside}, and a new one "
                "started; its answers are asked of the judge again")
        self.said.append(said)
        warn(DamagedCacheWarning(said))

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


# --- `localeval cache`: what the file holds, and emptying it ----------------------------------

OLDER_TABLES = ("answers",)  # tables of answers no run reads any longer (before the probabilities were kept)
CLEARED_AT_ONCE = 10_000  # answers deleted per transaction: a run beside it waits for one batch, not for all
WAITED = 10.0  # seconds a command waits for a run that holds the file's lock


class CacheContents(NamedTuple):
    by_model: dict[str, int]  # answers a run reads, per judge model
    older: int  # answers in the tables of older versions, which no run reads


def contents(path: Path) -> CacheContents:
    """What the cache file at `path` (which must exist) keeps: a judge's identity's first part names its
    model (engine/judge.py), the rest its weights, dtype and decoding."""
    with _opened_as_is(path, "ro") as connection:
        tables = _tables(connection)
        rows = connection.execute(f"SELECT judge, COUNT(*) FROM {TABLE} GROUP BY judge").fetchall() \
            if TABLE in tables else []
        older = sum(connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                    for table in OLDER_TABLES if table in tables)
    by_model: dict[str, int] = {}
    for judge, count in rows:
        model = str(judge).split("|", 1)[0]
        by_model[model] = by_model.get(model, 0) + count
    return CacheContents(dict(sorted(by_model.items(), key=lambda item: -item[1])), older)


def emptied(path: Path) -> tuple[int, bool]:
    """Every answer of the cache file at `path` deleted, older versions' tables dropped, and the file
    shrunk where no run holds it; (answers deleted, shrunk). In batches, so that a run using the file
    waits a moment at most (a run turns its cache off after waiting 30 s)."""
    gone = 0
    with _opened_as_is(path, "rw") as connection:
        tables = _tables(connection)
        for table in (TABLE, *OLDER_TABLES):
            if table not in tables:
                continue
            while True:
                with connection:
                    deleted = connection.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} "
                                                 f"LIMIT {CLEARED_AT_ONCE})").rowcount
                gone += deleted
                if deleted < CLEARED_AT_ONCE:
                    break
            if table != TABLE:
                with connection:
                    connection.execute(f"DROP TABLE {table}")
        try:
            connection.execute("VACUUM")  # the file keeps its pages otherwise
        except sqlite3.OperationalError as error:
            if _code(error) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            return gone, False  # a run is reading it: it shrinks at the next clear
    return gone, True


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@contextmanager
def _opened_as_is(path: Path, mode: str) -> Iterator[sqlite3.Connection]:
    """The cache file opened as it is, never made (`mode` "ro" or "rw"); what stops it, said for what it is:
    a run holding it, a file that cannot be written, or one damaged (a review: all were "delete it")."""
    connection = None
    try:
        connection = sqlite3.connect(path.resolve().as_uri() + f"?mode={mode}", uri=True, timeout=WAITED)
        yield connection
    except sqlite3.DatabaseError as error:
        raise EnvironmentFailure(_cannot_use(path, error)) from None
    finally:
        if connection is not None:
            connection.close()


def _cannot_use(path: Path, error: sqlite3.DatabaseError) -> str:
    code = _code(error)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return f"the judge-answer cache {path} is in use by a run that is writing to it ({error}); try again when it ends"
    if code in DAMAGED:
        return (f"the judge-answer cache {path} is damaged ({error}): the next run that uses it sets it aside and "
                "starts a new one; or delete it, which loses nothing but the answers")
    return f"the judge-answer cache {path} cannot be {'read' if code == sqlite3.SQLITE_CANTOPEN else 'written'} ({error})"


def _made_private(path: Path) -> None:
    """The cache file made where none is, with its folder's permissions: readable by its owner alone in
    the folder made here (0700) and in the user's own cache folder (an older localeval made it 0755:
    closed now), shared as a folder given as LOCALEVAL_CACHE_DIR is (a team's, 2775: its file 0664, so
    every member's run can write it). Its answers restate the samples (claims, questions and reasons
    quote them), and sqlite made the file 0644 under the usual umask, readable by every user of the
    machine (a security review). sqlite gives its journals the file's mode."""
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # the mode is the last folder's, umask applied
    if _users_own_and_open(folder):
        folder.chmod(0o700)
    try:  # an empty file: sqlite's empty database
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 & folder.stat().st_mode))
    except FileExistsError:
        pass


def _users_own_and_open(folder: Path) -> bool:
    """Whether `folder` is the user's cache folder for localeval (platformdirs'), which localeval alone
    writes, this user's, and open to others (no such modes on Windows)."""
    try:
        if not hasattr(os, "getuid") or folder != platformdirs.user_cache_path("localeval"):
            return False
    except RuntimeError:  # no home folder (paths.users_folder): the cache is where LOCALEVAL_CACHE_DIR says
        return False
    found = folder.stat()
    return found.st_uid == os.getuid() and bool(found.st_mode & 0o077)


def set_aside_copies(path: Path) -> list[Path]:
    """The damaged cache file set aside beside `path` and its journals (_set_aside): answers too, which
    `cache clear` deletes with the rest (a security review: they outlived a clear)."""
    aside = path.with_name(path.name + SET_ASIDE)
    return [Path(f"{aside}{end}") for end in ("", "-journal", "-wal", "-shm") if Path(f"{aside}{end}").is_file()]


def _code(error: sqlite3.Error) -> int:
    """sqlite's primary result code (the extended one's low byte); 0 where the raiser set none."""
    return (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF


def _file_at(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` now (device and inode); None where none is."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _choices_json(answer: JudgeAnswer) -> str:
    return json.dumps([[choice.key, choice.probabilities] for choice in answer.choices])
