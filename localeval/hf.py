"""Every Hugging Face load localeval makes goes through `load`: quiet, offline, local files only, and
never a model folder's own code.

Quiet, because their per-tensor progress bars and advice would bury localeval's own progress
and error messages; offline, because no load may ever reach the network (offline.py). A folder
whose config.json or tokenizer_config.json names Python code of its own (`auto_map`) is refused:
transformers asked "Do you wish to run the custom code? [y/N]", and a `y` ran it (a probe), as do
weights pickled with code that torch refuses to run (weights_only).
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, Callable, TypeVar

from . import forking
from .errors import UserError, shortened
from .offline import hub_offline

Loaded = TypeVar("Loaded")


@contextmanager
def quiet() -> Iterator[None]:
    """transformers' warnings and progress bars off while the block loads, and as they were after: set for
    good, they stayed off for a notebook's own from_pretrained after its first evaluate() (a probe)."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


@contextmanager
def gguf_bar_hidden() -> Iterator[None]:
    """transformers draws its per-tensor bar while it reads a GGUF with tqdm itself, past the switch
    quiet() turns off: it would cross a run's own progress (and `--quiet`). A transformers that
    no longer has it there draws nothing to hide."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_loading
    except ImportError:
        gguf_loading = None
    drawn = getattr(gguf_loading, "tqdm", None)
    if drawn is None:
        yield
        return
    gguf_loading.tqdm = partial(drawn, disable=True)
    try:
        yield
    finally:
        gguf_loading.tqdm = drawn


# transformers' from_pretrained keeps process-wide state while it builds a model: two judges loaded
# by two threads at once (evaluate() from a thread pool) came out with an untied lm_head, missing.
# Loads gain nothing from running side by side, so they take turns.
_one_load_at_a_time = threading.RLock()


def load(loader: Callable[..., Loaded], path: Any, *args: Any, shown_as: Any = None, **kwargs: Any) -> Loaded:
    """`loader(path, *args, **kwargs)` (a from_pretrained, a SentenceTransformer) from local files only.
    A folder the library cannot read as that kind of model is the user's error: one line, exit 2, naming
    `shown_as` (a GGUF file read from its folder) or else `path`."""
    from safetensors import SafetensorError  # a dependency of transformers'

    forking.computing()
    shown_as = path if shown_as is None else shown_as
    with _one_load_at_a_time, hub_offline(), quiet():
        try:
            return loader(path, *args, local_files_only=True, trust_remote_code=False, **kwargs)
        except SafetensorError as error:  # a weights file cut short (a copy that stopped) or overwritten
            raise UserError(f"{shown_as} cannot be loaded as a model: a weights file is damaged or incomplete "
                            f"({error}); copy the model folder again") from None
        except pickle.UnpicklingError:  # torch's weights_only refusing what a pickle would run, or a damaged file
            raise UserError(f"{shown_as} cannot be loaded as a model: its pickled weights (.bin) hold something other "
                            "than plain tensors (code to run, which localeval never runs, or damage); give the "
                            "model's weights as safetensors") from None
        except RuntimeError as error:  # torch's zip reader on a .bin cut short (a copy that stopped); else a bug
            if "PytorchStreamReader" not in str(error):
                raise
            raise UserError(f"{shown_as} cannot be loaded as a model: a weights file (.bin) is damaged or incomplete "
                            f"({_first_sentence(error).split('. ')[0]}); copy the model folder again") from None
        except (ValueError, OSError) as error:  # transformers' words for "not a model of this kind"
            if isinstance(error, OSError) and (error.errno is not None or isinstance(error, TimeoutError)):
                raise  # the system's own failure (a read error), or a caller's timeout: not the folder's contents
            if "trust_remote_code" in str(error):
                raise UserError(f"{shown_as} cannot be loaded as a model: it names Python code of its own to run "
                                "(auto_map in its config.json or tokenizer_config.json, or a module of its own in "
                                "modules.json), which localeval never runs; give a model that its library reads "
                                "without it") from None
            raise UserError(f"{shown_as} cannot be loaded as a model: {_first_sentence(error)}") from None


def _first_sentence(error: Exception) -> str:
    """The library's reason, its first line: the lines after it list model types, or ways out. A line
    that ends in ':' is only half a sentence ("... from one of:"), so its list follows, joined."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    if lines[0].endswith(":"):
        return shortened(" ".join(lines), 400)
    return lines[0]
