"""Air-gapped by construction: every Hugging Face call localeval makes runs with the Hub switched off.

The switches are set only around localeval's own calls (and restored after them), so importing
localeval changes nothing for the rest of an application. Two layers, because either alone can
be undone by someone else's setting: the Hub's offline flag, read by huggingface_hub whenever it
would open a connection, and `local_files_only=True` on every load (the callers pass it). The
command line, whose whole process is localeval's, also sets the environment switches as
defaults (`defaults_for_the_command_line`), never overriding a value the user set.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager

from .process_setting import ProcessSetting

OFFLINE_SWITCHES = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "DO_NOT_TRACK": "1",
}


def defaults_for_the_command_line() -> None:
    """Before any Hugging Face import, in the CLI's process: both libraries read these once."""
    for name, value in OFFLINE_SWITCHES.items():
        os.environ.setdefault(name, value)
    # tokenizers warns after a fork if its threads ran; the CLI's children are spawned, not forked.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _hub():
    import huggingface_hub.constants as hub

    return hub


def _set_hub_offline(value: bool) -> None:
    _hub().HF_HUB_OFFLINE = value  # what huggingface_hub.is_offline_mode() returns, read at each call


# loads in progress across threads: the flag is restored when the last one ends
_HUB_OFFLINE = ProcessSetting(lambda: _hub().HF_HUB_OFFLINE, _set_hub_offline, True)


def hub_offline() -> AbstractContextManager[None]:
    """The Hub's offline flag on for the duration of a localeval load, then as it was."""
    return _HUB_OFFLINE.holding()
