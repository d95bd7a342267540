"""torch's CPU threads across a fork.

torch computes on a CPU with OpenMP threads, which a fork does not copy: a process forked from one that had
loaded a model (multiprocessing's default start method on Linux before Python 3.14, as a Pool or a
ProcessPoolExecutor uses it) hung at its first computation, silently and for ever (a notebook probe). Such
a child computes on one thread, which needs none of them, and each pipeline it builds says so, with the
way to have every core.
"""

from __future__ import annotations

import os
import sys

_loaded_a_model = False  # and so computed with torch's threads
_forked_after_computing = False


def computing() -> None:
    """Noted as a model loads (hf.load): from now on a fork of this process must not use torch's threads."""
    global _loaded_a_model
    _loaded_a_model = True


def forked_warning() -> str | None:
    """In a child forked from a process that had loaded a model, what a pipeline it builds says."""
    if not _forked_after_computing:
        return None
    return ("this process was forked from one that had loaded a model (multiprocessing's 'fork' start method, "
            "Linux's default before Python 3.14): torch's threads do not survive a fork, and using them hung, so "
            "it computes on one thread; to use every core, start it with multiprocessing.get_context('spawn')")


def _after_fork_in_child() -> None:
    global _forked_after_computing
    torch = sys.modules.get("torch")
    if _loaded_a_model and torch is not None:
        torch.set_num_threads(1)  # a single thread enters no OpenMP parallel region
        _forked_after_computing = True


if hasattr(os, "register_at_fork"):  # none on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
