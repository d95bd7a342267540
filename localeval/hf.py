"""Every Hugging Face load localeval makes goes through `load`: quiet, offline, local files only.

Quiet, because their per-tensor progress bars and advice would bury localeval's own progress
and error messages; offline, because no load may ever reach the network (offline.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, TypeVar

from .offline import hub_offline

Loaded = TypeVar("Loaded")


@lru_cache(maxsize=1)
def quiet() -> None:
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def load(loader: Callable[..., Loaded], *args: Any, **kwargs: Any) -> Loaded:
    """`loader(*args, **kwargs)` (a from_pretrained, a SentenceTransformer) from local files only."""
    quiet()
    with hub_offline():
        return loader(*args, local_files_only=True, **kwargs)
