"""What differs on Windows and macOS, simulated on Linux: the modules and calls those systems lack, and
the file rules and shells they have (a portability review; no Windows machine runs these tests)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localeval import results, shell
from localeval.errors import EnvironmentFailure, UserError
from localeval.results import LOCK_FILE, claim_folder


def test_bench_loads_where_there_is_no_resource_module_and_says_no_peak_memory():
    """Windows has no `resource`: worker.py imported it, and every `bench` was a traceback at import."""
    probe = ("import sys; sys.modules['resource'] = None\n"
             "import localeval.bench.command\n"
             "from localeval.bench.worker import _peak_memory\n"
             "print(_peak_memory('cpu'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'peak_memory_mb': None, 'peak_memory_kind': None, 'peak_rss_mb': None}"


@pytest.fixture
def windows_files(monkeypatch):
    """Windows' rule that an open file cannot be deleted, for the lock files claim_folder holds."""
    from filelock import FileLock

    held: set[Path] = set()
    acquire, release, unlink = FileLock.acquire, FileLock.release, Path.unlink

    def acquiring(self, *args, **kwargs):
        taken = acquire(self, *args, **kwargs)
        held.add(Path(self.lock_file))
        return taken

    def releasing(self, *args, **kwargs):
        held.discard(Path(self.lock_file))
        return release(self, *args, **kwargs)

    def unlinking(self, missing_ok=False):
        if self in held:
            raise PermissionError(errno.EACCES, "The process cannot access the file because it is being used by "
                                                "another process", str(self))
        return unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(FileLock, "acquire", acquiring)
    monkeypatch.setattr(FileLock, "release", releasing)
    monkeypatch.setattr(Path, "unlink", unlinking)
    monkeypatch.setattr(results, "WINDOWS", True)


def test_on_windows_a_run_that_fails_before_its_first_result_keeps_its_error_and_leaves_no_folder(tmp_path,
                                                                                                 windows_files):
    """The lock was deleted while held, which Windows refuses: every failure before the first result (an
    unknown judge, Ctrl-C while the model loaded) became "permission denied", exit 2, and the folder stayed."""
    with pytest.raises(UserError, match="no such judge"), claim_folder(tmp_path / "made" / "out"):
        raise UserError("no such judge")
    assert not (tmp_path / "made").exists()
    with pytest.raises(KeyboardInterrupt), claim_folder(tmp_path / "out"):
        raise KeyboardInterrupt
    assert not (tmp_path / "out").exists()


def test_a_lock_file_that_cannot_be_opened_is_said_where_there_are_no_user_ids(tmp_path, monkeypatch):
    """`os.getuid` is not on Windows: the message about a lock file in the way was an AttributeError."""
    monkeypatch.delattr(os, "getuid")
    (tmp_path / "out" / LOCK_FILE).mkdir(parents=True)
    with pytest.raises(EnvironmentFailure, match=f"its lock file .*{LOCK_FILE} is not writable and cannot be opened"):
        with claim_folder(tmp_path / "out"):
            pass


def test_commands_printed_for_the_user_are_quoted_for_the_systems_shell(monkeypatch):
    """A POSIX shell's single quotes reach cmd.exe as part of the word: every Windows path got them (its
    backslashes and colon), and the printed command failed where it was pasted."""
    from localeval import models

    folder = r"C:\Users\me\my judge"
    assert shell.quoted(folder) == "'C:\\Users\\me\\my judge'"  # a POSIX shell here
    monkeypatch.setattr(shell, "WINDOWS", True)
    assert shell.quoted(folder) == '"C:\\Users\\me\\my judge"'
    assert shell.command_line(["python", "-m", "pip", "install", folder]) == \
        'python -m pip install "C:\\Users\\me\\my judge"'
    assert shell.quoted("C:\\R&D\\judge") == '"C:\\R&D\\judge"'  # cmd.exe split the command at the &
    assert shell.quoted("C:\\(v2)\\") == '"C:\\(v2)\\\\"'  # the last backslash must not escape the quote
    assert shell.quoted("C:\\plain\\judge") == "C:\\plain\\judge"
    monkeypatch.setattr(models, "_own_folder", lambda name: True)
    with pytest.raises(UserError, match=r'give it as --judge "C:\\Users\\me\\my judge"'):
        models.registered(folder, "models install")


def test_ctrl_break_stops_a_command_as_ctrl_c_does(monkeypatch):
    """Windows' Ctrl-Break (SIGBREAK) kept its default, which ends the process at once: no summary, no report."""
    from localeval.cli import _stopped_as_by_ctrl_c

    stand_in = signal.SIGUSR1  # SIGBREAK is Windows' alone
    monkeypatch.setattr(signal, "SIGBREAK", stand_in, raising=False)
    before = signal.getsignal(stand_in)
    with _stopped_as_by_ctrl_c():
        assert signal.getsignal(stand_in) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), stand_in)
            time.sleep(5)  # not reached: the handler runs as soon as the signal comes
    assert signal.getsignal(stand_in) is before


def test_a_pipe_whose_reader_is_gone_on_windows_is_a_broken_pipe_not_a_full_disk(monkeypatch):
    """Windows says EINVAL where Linux says EPIPE: it was "free space where it is sent", exit 3."""
    from localeval import cli

    gone = OSError(errno.EINVAL, "Invalid argument")
    with pytest.raises(cli.StdoutFailure):  # on Linux, EINVAL is no pipe's: said as it is
        cli._stdout_failed(sys.stdout, gone)
    monkeypatch.setattr(cli, "WINDOWS", True)
    with pytest.raises(BrokenPipeError):
        cli._stdout_failed(sys.stdout, gone)
