"""Hugging Face libraries, imported quietly: their per-tensor progress bars and advice would
bury localeval's own progress bar and error messages."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def quiet() -> None:
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
