"""Errors that end a run with one clear line and a documented exit status (cli.EXIT_CODES).

UserError: something the user can fix in what they asked for (exit 2). EnvironmentFailure: the
machine stopped the run, a full disk, a read-only folder, no memory (exit 3). Neither is a bug, so
neither shows a traceback. LocalevalWarning: what the user should know that stops nothing.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import threading
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

# The exit statuses the command line documents (cli.EXIT_CODES); 1 is left to Python: a bug.
EXIT_OK, EXIT_USER, EXIT_ENVIRONMENT, EXIT_BELOW_THRESHOLD, EXIT_INTERRUPTED = 0, 2, 3, 4, 130
EXIT_BROKEN_PIPE = 141  # what a shell reports for a tool stopped by SIGPIPE (`... | head`)
EXIT_JUDGE_FAILED = 1  # bench: a judge failed, the others reported; 1 as bench has always said it (its --help)


class UserError(Exception):
    """Something the user can fix: a bad file, an unknown metric, a missing model."""


class UnknownKeyword(UserError, TypeError):
    """A keyword argument that evaluate() (or load_judge, load_embedder) does not take: a UserError like
    every mistake of the caller's, and the TypeError Python raises for it, for code that catches that."""


class UnknownScore(UserError, KeyError):
    """`result[name]` for a name that is not one of the result's scores: a UserError, and the KeyError a
    mapping raises, for code that catches that. Shown as written (a KeyError's message is quoted)."""

    __str__ = Exception.__str__


class MetricFailed(UserError):
    """A metric's code broke its contract or raised while scoring: a user's own metric (metrics/custom.py)."""


class DataError(UserError):
    """A dataset that cannot be read, with the place it went wrong."""

    def __init__(self, path, message: str, line: int | None = None, field: str | None = None):
        where = ""
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{path}{where}: {message}")
        self.path, self.line, self.field, self.message = path, line, field, message
        self.after_path = f"{where}: {message}"  # for a message that names the file its own way


class EnvironmentFailure(Exception):
    """The machine, not the request, stopped the run: a full disk, a folder that cannot be written,
    too little memory. What was already written is kept; the message says how to go on."""


# How running out of memory reads where it is not a MemoryError: torch's CPU allocator ("can't allocate
# memory"), its mapping of a model file ("unable to mmap ...: Cannot allocate memory (12)"), CUDA's
# OutOfMemoryError ("CUDA out of memory"), a RuntimeError each
_OUT_OF_MEMORY = re.compile(r"out of memory|can'?t allocate memory|cannot allocate memory", re.IGNORECASE)


def out_of_memory(error: BaseException) -> bool:
    """Whether `error` says the machine ran out of memory (a run ends exit 3 then, not with a traceback)."""
    if isinstance(error, MemoryError):
        return True
    if isinstance(error, OSError) and error.errno == errno.ENOMEM:
        return True
    # its words, not str(): an OSError's text holds its file's name, which may say anything
    return isinstance(error, (RuntimeError, OSError)) and bool(_OUT_OF_MEMORY.search(" ".join(map(str, error.args))))


class ScoringStopped(EnvironmentFailure):
    """The machine stopped the scoring midway (a Ray worker lost more often than Ray restarts it). The
    message says what failed; the caller adds what it kept (run: its results.jsonl) and how to go on."""


class LocalevalWarning(UserWarning):
    """Something the user should know that does not stop the run; the CLI shows it as one line."""


# The warnings the said_and_kept running in this thread collects (None: none runs). Per thread, not
# warnings.catch_warnings, which swaps process-wide state: two threads' evaluate() calls swapped each
# other's warnings, and the last to end left Python's warnings recorded into a list, shown no more.
_collected_here = threading.local()


def warn(warning: LocalevalWarning, stacklevel: int = 1) -> None:
    """How localeval warns: collected by the said_and_kept this thread runs inside (before any warning
    filter: said_and_kept's caller decides), else warned as Python warns, `stacklevel` counted from the
    caller as warnings.warn counts it. A kind left_unsaid in this thread is dropped."""
    if isinstance(warning, getattr(_collected_here, "unsaid", ())):
        return
    collected = getattr(_collected_here, "warnings", None)
    if collected is not None:
        collected.append(warning)
    else:
        warnings.warn(warning, stacklevel=stacklevel + 1)  # + this function's own frame


@contextmanager
def left_unsaid(kind: type[LocalevalWarning]) -> Iterator[None]:
    """Warnings of `kind` dropped in this thread while the block runs (a filter of warnings.catch_warnings
    would be every thread's)."""
    before = getattr(_collected_here, "unsaid", ())
    _collected_here.unsaid = (*before, kind)
    try:
        yield
    finally:
        _collected_here.unsaid = before


def said_and_kept(read: Callable[[], T], caller_level: int | None = None) -> tuple[T, list[str]]:
    """What `read()` returns, and the LocalevalWarnings it gave: shown now, as any warning is, and kept
    as "warning: ..." lines for the files a reader of the output looks in (summary.json, bench.json).

    A command shows each, whatever the warning filters say. A library function gives its `caller_level`
    (the stack level, from it, of the code that called it): each is then warned at the caller's line,
    where the caller's own warning filters decide whether it shows. Inside another said_and_kept, they
    are that one's to show. Collected are the warnings of this thread: one that read() starts warns
    as Python does."""
    outer = getattr(_collected_here, "warnings", None)
    _collected_here.warnings = collected = []
    try:
        result = read()
    finally:
        _collected_here.warnings = outer
    kept = [kept_warning(warning) for warning in collected]
    if outer is not None:
        outer.extend(collected)
        return result, kept
    for warning in collected:
        if caller_level is None:
            warnings.showwarning(warning, type(warning), "localeval", 0)
        else:
            warnings.warn(warning, stacklevel=caller_level + 1)  # + this function's own frame
    return result, kept


def warned(messages: Iterable[str | None], kind: type[LocalevalWarning],
           caller_level: int | None = None) -> list[str]:
    """Each message (None: nothing to say) warned as `kind` and kept, as said_and_kept shows and keeps
    the warnings of reading a file; `caller_level` as there, from the function that calls this one."""
    def warn_each() -> None:
        for message in filter(None, messages):
            warn(kind(message))
    return said_and_kept(warn_each, None if caller_level is None else caller_level + 1)[1]  # + this function's frame


def kept_warning(message: object) -> str:
    """A warning as the files a reader looks in keep it (summary.json, bench.json, a result's details)."""
    return f"warning: {message}"


# C0 and C1 control characters, and the bidi embeddings, overrides and isolates; the same but the line break
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSHOWABLE_IN_LINES = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def for_terminal(message: str, lines: bool = False) -> str:
    """`message` as a terminal may show it: a control character written as its escape, the line break too
    unless `lines` (a message of several lines, its breaks localeval's own). An id or a field name from a
    hostile data file set the terminal's title, coloured its text, and wrote over its lines (ESC, CR), or
    turned the rest of the line round (U+202E) (a security probe)."""
    unshowable = _UNSHOWABLE_IN_LINES if lines else _UNSHOWABLE
    return unshowable.sub(lambda found: ascii(found.group())[1:-1], message)


def count_of(n: int, noun: str) -> str:
    """'1 sample', '2 samples'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def shortened(text: str, limit: int) -> str:
    """`text` for a message, cut to `limit` characters with "..." where it was longer."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def closest(name: str, candidates: Iterable[str], cutoff: float, normal: Callable[[str], str] = str) -> str | None:
    """A message's "did you mean": the candidate nearest `name` (difflib's ratio at least `cutoff`), both
    compared in their `normal` form (lower case, say), the candidate given back as it is; None if none is."""
    by_normal = {normal(candidate): candidate for candidate in candidates}
    close = difflib.get_close_matches(normal(name), list(by_normal), n=1, cutoff=cutoff)
    return by_normal[close[0]] if close else None


def first_few(items: list[str], shown: int = 5) -> str:
    """The first `shown` of `items` for a message, comma-separated, with " ..." where more were left out."""
    return ", ".join(items[:shown]) + (" ..." if len(items) > shown else "")


def one_line(text: str) -> str:
    """A message as one line, its runs of whitespace one space: a validator's or pickler's runs over several."""
    return " ".join(text.split())


def where_raised(error: BaseException, path: str | os.PathLike | None = None) -> str:
    """'FILE, line N: Kind: message', at the deepest line of `path` (else of any file) the error passed: a
    user's own code's mistake said where it is, in one line."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}, line {error.lineno}: SyntaxError: {error.msg}"
    frames = traceback.extract_tb(error.__traceback__)
    ours = [frame for frame in frames if path is not None and _same_file(frame.filename, path)] or frames
    where = f"{ours[-1].filename}, line {ours[-1].lineno}: " if ours else ""
    said = one_line(str(error))
    return where + (f"{type(error).__name__}: {said}" if said else type(error).__name__)


def _same_file(name: str, path: str | os.PathLike) -> bool:
    try:
        return os.path.samefile(name, path)
    except OSError:  # "<string>", a file since removed
        return False
