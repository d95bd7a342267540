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
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


@contextmanager
def held() -> Iterator[None]:
    """Within the block, the signals that would raise KeyboardInterrupt (Ctrl-C's, and SIGTERM's and
    SIGHUP's where the CLI made them do so) are noted instead; after it, one noted is raised. Signals
    with handlers of their own are left alone, as is every signal outside the main thread, where
    Python runs no handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    raising = [number for number in _stopping_signals() if signal.getsignal(number) is signal.default_int_handler]
    previous = {number: signal.signal(number, lambda received, frame: noted.append(received)) for number in raising}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if noted:
        raise KeyboardInterrupt


def import_whole(name: str) -> ModuleType:
    """importlib.import_module, with interrupts held until the module is whole."""
    with held():
        return importlib.import_module(name)


def _stopping_signals() -> list[int]:
    return [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
