"""The commands localeval prints for a user to run, quoted for the shell they will paste them into:
a POSIX shell's single quotes reach cmd.exe as part of the word, so that on Windows every path (its
backslashes and drive letter need quoting) made a printed command fail."""

from __future__ import annotations

import shlex
import subprocess
import sys

WINDOWS = sys.platform == "win32"


def quoted(word: str) -> str:
    """One word of a command, as this system's shell reads it."""
    return subprocess.list2cmdline([word]) if WINDOWS else shlex.quote(word)


def command_line(words: list[str]) -> str:
    """A whole command, as this system's shell reads it."""
    return subprocess.list2cmdline(words) if WINDOWS else shlex.join(words)
