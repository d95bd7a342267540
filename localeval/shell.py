"""The commands localeval prints for a user to run, quoted for the shell they will paste them into:
a POSIX shell's single quotes reach cmd.exe as part of the word, so that on Windows every path (its
backslashes and drive letter need quoting) made a printed command fail."""

from __future__ import annotations

import shlex
import subprocess
import sys

WINDOWS = sys.platform == "win32"
# what cmd.exe and PowerShell read as their own outside double quotes (a review: C:\R&D\judge came out
# bare, and cmd.exe split the command at the &)
CMD_SPECIAL = frozenset("&|<>^()%!;,=")


def quoted(word: str) -> str:
    """One word of a command, as this system's shell reads it."""
    return _windows_word(word) if WINDOWS else shlex.quote(word)


def command_line(words: list[str]) -> str:
    """A whole command, as this system's shell reads it."""
    return " ".join(_windows_word(word) for word in words) if WINDOWS else shlex.join(words)


def _windows_word(word: str) -> str:
    """subprocess.list2cmdline's word (quoted for spaces, its quotes escaped), in double quotes too where
    it holds a character the shell reads; a trailing backslash doubled, else it escapes the closing quote."""
    line = subprocess.list2cmdline([word])
    if line.startswith('"') or not CMD_SPECIAL & set(word):
        return line
    trailing = "\\" * (len(line) - len(line.rstrip("\\")))
    return f'"{line}{trailing}"'
