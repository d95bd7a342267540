"""Ctrl-C held while torch and its company are imported, and raised the moment they are whole.

An interrupt that lands inside `import torch` (or transformers', or sentence-transformers') leaves
a module half built in sys.modules, and every later import in that process fails deep inside the
library ("partially initialized module 'torch' has no attribute 'fx'", "Could not import module
'AttentionInterface'"): in a notebook, until the kernel restarts (a probe pressed Ctrl-C during a
first evaluate()). Held for the seconds an import takes, the interrupt still stops the call, as
the user meant, and leaves the libraries whole for the next.
"""

from __future__ import annotations

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
    SIGHUP's where the CLI made them do so) are noted instead; after it, the first one noted is
    handled, and raises. A second of the same kind interrupts at once: an import stuck on a dead
    network mount can still be stopped. Signals with handlers of their own (SIG_IGN under nohup)
    are left alone, as is every signal outside the main thread, where Python runs no handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous: dict[int, Any] = {}

    def note(number: int, frame: Any) -> None:
        noted.append(number)
        signal.signal(number, previous[number])

    try:  # handlers swapped one by one inside it: one that interrupts the swapping still restores them
        for number in _stopping_signals():
            if signal.getsignal(number) in (signal.default_int_handler, hung_up):
                previous[number] = signal.signal(number, note)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if noted:
        previous[noted[0]](noted[0], None)  # raises KeyboardInterrupt (hung_up first sends the output nowhere)


def hung_up(number: int, frame: Any) -> None:
    """SIGHUP's handler in the CLI: a closed terminal or a dropped ssh session stops a run as Ctrl-C does.
    Its terminal is gone, so every write to it would fail (EIO), and the run would end in a traceback
    no one sees, exit 1: what it says of its end goes nowhere instead, and it ends as interrupted."""
    away_from_terminal()
    raise KeyboardInterrupt


def away_from_terminal(fds: tuple[int, ...] = (1, 2)) -> None:
    """Each of `fds` that is a terminal sent to the null device (a file or pipe it writes to stays)."""
    with open(os.devnull, "wb") as nowhere:
        for fd in fds:
            if os.isatty(fd):
                os.dup2(nowhere.fileno(), fd)


def import_whole(name: str) -> ModuleType:
    """importlib.import_module, with interrupts held until the module is whole."""
    with held():
        return importlib.import_module(name)


def _stopping_signals() -> list[int]:
    return [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
