"""Ctrl-C held while torch and its company are imported, and raised the moment they are whole.

An interrupt that lands inside `import torch` (or transformers', or sentence-transformers') leaves
a module half built in sys.modules, and every later import in that process fails deep inside the
library ("partially initialized module 'torch' has no attribute 'fx'", "Could not import module
'AttentionInterface'"): in a notebook, until the kernel restarts (a probe pressed Ctrl-C during a
first evaluate()). Held for the seconds an import takes, the interrupt still stops the call, as
the user meant, and leaves the libraries whole for the next. Ray's start and bench's files are held
the same way. Here too: SIGHUP's handler for the CLI, which stops a run whose terminal is gone.
"""

from __future__ import annotations

import errno
import importlib
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any


@contextmanager
def held() -> Iterator[None]:
    """Within the block, the signals that would raise KeyboardInterrupt (Ctrl-C's, and SIGTERM's and
    SIGHUP's where the CLI made them do so) are noted instead, and one noted raises it after the
    block. Signals with handlers of their own (SIG_IGN under nohup) are left alone, as is every
    signal outside the main thread, where Python runs no handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous: dict[int, Any] = {}

    def note(number: int, frame: Any) -> None:
        noted.append(number)
        if previous[number] is hung_up:  # at once: whatever the block writes must not fail on a dead terminal
            away_from_terminal()

    with _signals_blocked():  # none handled mid-swap: a handler swapped in and not recorded would stay for good
        for number in _stopping_signals():
            if (handler := signal.getsignal(number)) in (signal.default_int_handler, hung_up):
                previous[number] = handler
                signal.signal(number, note)
    try:
        yield
    finally:
        with _signals_blocked():
            for number, handler in previous.items():
                signal.signal(number, handler)
    if noted:
        raise KeyboardInterrupt


def hung_up(number: int, frame: Any) -> None:
    """SIGHUP's handler in the CLI: a closed terminal or a dropped ssh session stops a run as Ctrl-C does.
    Its terminal is gone, so every write to it would fail (EIO), and the run would end in a traceback
    no one sees, exit 1: what it says of its end goes nowhere instead, and it ends as interrupted."""
    away_from_terminal()
    raise KeyboardInterrupt


def away_from_terminal(fds: tuple[int, ...] = (1, 2)) -> None:
    """Each of `fds` that writes to a terminal that hung up sent to the null device; a live terminal
    (a SIGHUP sent by hand), a file or a pipe stays."""
    with open(os.devnull, "wb") as nowhere:
        for fd in fds:
            if _hung_up_terminal(fd):
                os.dup2(nowhere.fileno(), fd)


def _hung_up_terminal(fd: int) -> bool:
    """Whether `fd` is a terminal that hung up: isatty() no longer says so (the kernel marks the terminal
    hung up before it sends SIGHUP), but asking for its settings fails with EIO, as every write does."""
    import termios  # not on Windows, which has no SIGHUP either

    try:
        termios.tcgetattr(fd)
    except termios.error as error:
        return error.args[0] == errno.EIO
    return False


@contextmanager
def _signals_blocked() -> Iterator[None]:
    """The stopping signals kept pending while the block runs (where the system can block them)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _stopping_signals())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def import_whole(name: str) -> ModuleType:
    """importlib.import_module, with interrupts held until the module is whole."""
    with held():
        return importlib.import_module(name)


def _stopping_signals() -> list[int]:
    return [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
