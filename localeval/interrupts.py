"""Ctrl-C (and any signal with a Python handler) held while torch and its company are imported, and
raised the moment they are whole.

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
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any


@contextmanager
def held(give_way_after: int | None = None) -> Iterator[None]:
    """Within the block, every signal with a Python handler (Ctrl-C's KeyboardInterrupt, SIGTERM's and
    SIGHUP's where the CLI made them stop a run, a caller's own: a test's timeout alarm) is noted instead,
    and its own handler run once the block is done. A timeout's alarm landing in the first evaluate()'s
    imports broke every later call as Ctrl-C had (a notebook probe). Signals without one (SIG_IGN under
    nohup, SIG_DFL) are left alone, as is every signal outside the main thread, where Python runs no
    handler. `give_way_after`: that many held, the next is handled at once, so that a block that may hang
    (Ray's shutdown) can still be left."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous: dict[int, Any] = {}

    def note(number: int, frame: Any) -> None:
        if previous[number] is hung_up:  # at once: whatever the block writes must not fail on a dead terminal
            away_from_terminal()
        if give_way_after is not None and len(noted) >= give_way_after:
            previous[number](number, frame)  # the user insists: handled now, out of the block
        noted.append(number)

    handled = [number for number in signal.valid_signals() if callable(_handler(number))]
    with _signals_blocked(handled):  # none handled mid-swap: a handler swapped in and not recorded would stay
        for number in handled:
            previous[number] = signal.getsignal(number)
            signal.signal(number, note)
    try:
        yield
    finally:
        with _signals_blocked(handled):
            for number, handler in previous.items():
                signal.signal(number, handler)
    # called, not raised again: asyncio's wakeup fd heard each as it came, and would hear it twice (a review)
    for number in dict.fromkeys(noted):  # once each, in the order they came; the first to raise ends the rest
        previous[number](number, sys._getframe())


def _handler(number: int) -> Any:
    """The signal's handler; None for one Python cannot ask about (SIGKILL's, on some systems)."""
    try:
        return signal.getsignal(number)
    except (OSError, ValueError):
        return None


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
def _signals_blocked(numbers: list[int]) -> Iterator[None]:
    """The signals `numbers` kept pending while the block runs (where the system can block them)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, numbers)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def import_whole(name: str) -> ModuleType:
    """importlib.import_module, with interrupts held until the module is whole."""
    with held():
        return importlib.import_module(name)
