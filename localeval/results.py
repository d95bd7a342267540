"""Results on disk: one JSON line per sample, appended as samples complete; the folder they are written in,
claimed, and files replaced whole (summary.py sums the scores up, run_differences.py tells another run).

Appending line by line is what makes a run resumable: whatever is in results.jsonl was fully
scored, and `--resume` skips those ids. What survives a crash, and why:
- Nothing in the output folder is touched until the first result is written, so a run that fails
  before (a bad option, a model that does not load) leaves a previous run's files as they were.
  (A hidden lock file, .localeval.lock, is made at the start: while a run holds it, a second run
  aimed at the same folder is refused instead of interleaving its lines with the first's.)
- Each result is one write of one whole line; a crash in the middle of it leaves a torn last line,
  which `--resume` cuts off before appending (that sample is scored again); a last line whole but
  for its newline is kept, and ended.
- summary.json and report.html are written to a temporary file and renamed over the old one, so
  each is either the old file or the new one, never half of one.
- run.json records what the run is (data digest, judge, embedder, metrics, settings); `--resume`
  refuses to continue a different run in the same folder (run_differences.py says what differs).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple

from filelock import Timeout

from .errors import EnvironmentFailure, LocalevalWarning, UserError, count_of, warn
from .options import given
from .paths import LINK_LOOP, acquired, broken_link, system_lock, umask
from .shell import WINDOWS
from .out_folder import a_result, json_object_with, page_titled, scored_rows
from .run_differences import another_run, dtype_advice
from .samples import Sample
from .scoring_rules import WHAT_CHANGED, other_rules

# Bumped when a field of results.jsonl or summary.json changes meaning or goes away (new fields
# may appear without a bump): what a pipeline reading them checks.
SCHEMA_VERSION = 1
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
RUN_FILE = "run.json"
REPORT_FILE, REPORT_TITLE = "report.html", "localeval report"
REPLACED_BY_A_FRESH_RUN = (SUMMARY_FILE, REPORT_FILE)  # a previous run's, stale once its results go
LOCK_FILE = ".localeval.lock"  # held by the run writing in a folder (claim_folder)
RUN_OUTPUTS = {RESULTS_FILE: scored_rows, SUMMARY_FILE: json_object_with("metrics"),
               RUN_FILE: json_object_with("data_sha256"), REPORT_FILE: page_titled(REPORT_TITLE)}


class ResultWriter:
    """results.jsonl of one run in `out_dir`, written a line per sample as samples complete.

    `identity` is what makes two runs the same run (run.json): `resume` continues only that one. `device`: where
    this run's judge computes, for the --dtype that would resume another (check_same_run).
    """

    def __init__(self, out_dir: Path, resume: bool, identity: dict[str, Any], device: str):
        self.out_dir, self.path, self.identity = out_dir, out_dir / RESULTS_FILE, identity
        self.written = 0
        self._file = None
        self.resuming = resume and count_lines(self.path) > 0  # an empty file holds nothing to resume
        self.done_ids: set[str] = set()
        # What the earlier run's last line needs before this run appends (a crash may have left it without
        # its newline): mended at the first result, as everything else in the folder is changed only then,
        # so that a run refused or stopped before it leaves the file as it found it.
        self.last_line = LastLine()
        # An earlier run's scored samples, which a fresh run replaces at its first result.
        self.replacing = 0 if self.resuming else count_lines(self.path)
        if self.resuming:
            check_same_run(out_dir, identity, device)
            self.done_ids, self.last_line = read_done_ids(self.path)

    def write(self, row: dict[str, Any]) -> None:
        line = json.dumps({"schema_version": SCHEMA_VERSION, **row}, ensure_ascii=False, allow_nan=False) + "\n"
        try:
            if self._file is None:
                self._start()
            self._file.write(line)
            self._file.flush()  # on disk now: an interrupted run keeps every finished sample
        except OSError as error:
            raise self._failed(error) from None
        self.written += 1

    def mend(self) -> None:
        """The earlier run's last line cut off or ended now, where a resumed run has nothing left to score
        (every sample asked for is done: a --limit under the first run's), so no first result does it."""
        try:
            self._mend_last_line()
        except OSError as error:
            raise self._failed(error) from None

    def _failed(self, error: OSError) -> EnvironmentFailure:
        if not self.kept:  # nothing of this run is in the folder: --resume would continue (or refuse) another's
            return EnvironmentFailure(f"cannot write {self.path} ({_reason(error)}); nothing was scored into it: "
                                      f"{_remedy(error, 'rerun the same command')}")
        return EnvironmentFailure(f"cannot write {self.path} ({_reason(error)}); {count_of(self.kept, 'sample')} "
                                  f"scored before it stay saved: {_remedy(error, 'rerun with --resume')}")

    @property
    def kept(self) -> int:
        """The samples in results.jsonl: this run's and, resumed, the earlier ones it continues."""
        return self.written + len(self.done_ids)

    def _start(self) -> None:
        """The first result: only now is a previous run replaced (a fresh run) or continued."""
        if not self.resuming:
            for name in REPLACED_BY_A_FRESH_RUN:
                (self.out_dir / name).unlink(missing_ok=True)
        # results opened (a fresh run's emptied) before run.json names this run: a failure between the two
        # must not leave this run's run.json beside an earlier run's results, which --resume would continue
        self._mend_last_line()
        # never through a link put here since the folder was checked (a review of the security probe's fixes)
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if self.resuming else os.O_TRUNC)
        # lines end in \n on Windows too: there, a file opened without O_BINARY, or with newline=None, wrote \r\n
        flags |= getattr(os, "O_BINARY", 0)
        self._file = os.fdopen(os.open(self.path, flags, 0o666), "w", encoding="utf-8", newline="\n")
        write_atomically(self.out_dir / RUN_FILE, json.dumps(self.identity, indent=2, ensure_ascii=False) + "\n")

    def _mend_last_line(self) -> None:
        if self.last_line.cut_at is not None:
            os.truncate(self.path, self.last_line.cut_at)
        elif self.last_line.unended:
            with self.path.open("ab") as results:
                results.write(b"\n")
        self.last_line = LastLine()  # whole now

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:  # the write that failed already said why
                pass


@contextmanager
def claim_folder(folder: Path) -> Iterator[None]:
    """`folder` made writable (check_writable_folder) and held by this process while the block runs.

    A second localeval run aimed at the same folder is refused at once (exit 2) rather than left
    to interleave its lines with this one's. The lock is the operating system's (filelock: flock
    on Unix), so a run that is killed releases it with its process: no stale lock to clear by hand.
    A folder made here that holds nothing but the lock when the block ends (a run refused or failed
    before its first result) is removed, lock and all, with the parents made for it: a mistyped
    --out left one behind.
    """
    made = _first_missing(folder)  # --out a/b/c may make a and b as well
    check_writable_folder(folder)
    lock = system_lock(folder / LOCK_FILE)
    try:
        held = acquired(lock, timeout=0)
    except Timeout:
        raise UserError(f"{given('out', folder)} is in use by another localeval run; wait for it to end or choose "
                        "another folder") from None
    except OSError as error:
        _remove_made(folder, made)
        raise _no_lock(folder, error) from None
    if not held:
        warn(LocalevalWarning(f"{given('out', folder)} is on a file system without file locks (flock), so another "
                              "run or bench aimed at it at once would not be refused: run one at a time there"))
    try:
        yield
    finally:
        emptied = made is not None and [entry.name for entry in _entries(folder)] == [LOCK_FILE]
        if emptied and not WINDOWS:
            (folder / LOCK_FILE).unlink(missing_ok=True)  # no other run can have it: held, or none may be
        if held:
            lock.release()
        if emptied:
            if WINDOWS:  # which deletes no open file: its PermissionError took the place of the run's own error
                with suppress(OSError):  # open in another run that took the folder since: it stays
                    (folder / LOCK_FILE).unlink(missing_ok=True)
            _remove_made(folder, made)


def folder_in_use(folder: Path) -> bool:
    """Whether a run holds the folder now (claim_folder); False where no lock file is there, or where this
    user cannot open it (a colleague's read-only folder: whoever wrote it is not writing there now). Asking
    holds the lock for an instant: a run starting in that instant is refused, as by any other run."""
    if not (folder / LOCK_FILE).is_file():
        return False
    lock = system_lock(folder / LOCK_FILE)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False


def _no_lock(folder: Path, error: OSError) -> UserError | EnvironmentFailure:
    """Why the folder's lock file could not be opened: one another user's run left (a lock holds nothing, and
    the system releases it with its process) was said as "cannot make its lock file" (an ops probe)."""
    lock = folder / LOCK_FILE
    if lock.is_symlink():  # the lock opens no link (O_NOFOLLOW): its target is safe, and the link in the way
        # put there, as a link in results.jsonl's place is: exit 2 as that one (a security review)
        return UserError(f"{given('out', folder)}: its lock file {lock} is a link; remove it, or choose another --out")
    try:
        owner = lock.stat().st_uid
    except OSError:  # not there: it could not be made
        return EnvironmentFailure(f"{given('out', folder)}: cannot make its lock file ({_reason(error)})")
    whose = "another user's" if owner != getattr(os, "getuid", lambda: owner)() else "not writable"  # no uid on Windows
    return EnvironmentFailure(f"{given('out', folder)}: its lock file {lock} is {whose} and cannot be opened "
                              f"({_reason(error)}); it holds nothing, so where no run is writing in the folder, remove it")


def check_appendable(results: Path) -> None:
    """Before the models load: --resume appends to results.jsonl, so another user's file that this user cannot
    write failed only after the first sample was scored, told to "make room" (an ops probe)."""
    if results.exists() and not os.access(results, os.W_OK):
        raise EnvironmentFailure(f"cannot write {results} (permission denied or a read-only file system), which "
                                 "--resume adds to; make it writable, or give another --out")


def _first_missing(folder: Path) -> Path | None:
    """The outermost of `folder` and its parents that does not exist yet; None if `folder` exists."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            return missing
        missing = path
    return missing


def _remove_made(folder: Path, made: Path | None) -> None:
    """The empty folders from `folder` up to `made`, the outermost this run made; any other stays."""
    if made is None:
        return
    for path in (folder, *folder.parents):
        try:
            path.rmdir()  # only an empty folder goes
        except OSError:
            return
        if path == made:
            return


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:  # the folder went meanwhile
        return []


def check_writable_folder(folder: Path) -> None:
    """`folder` is, or can be made, a folder this process may write in; else one clear error."""
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{given('out', folder)} is a file, not a folder; give a folder (it is created if missing)")
    inside_a_file = next((parent for parent in folder.parents if parent.exists() and not parent.is_dir()), None)
    if inside_a_file is not None:
        raise UserError(f"{given('out', folder)}: {inside_a_file} is a file, not a folder; give a folder path")
    # mkdir failed on a link that leads nowhere with "File exists", as if the machine had stopped the run
    broken = next(((place, why) for place in (folder, *folder.parents) if (why := broken_link(place))), None)
    if broken is not None:
        place, why = broken
        fix = "re-point or remove the link" if why == LINK_LOOP else "make the folder it leads to"
        raise UserError(f"{given('out', folder)}: {place} is {why}; {fix}, or give another")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise EnvironmentFailure(f"{given('out', folder)}: cannot create it ({_reason(error)})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise EnvironmentFailure(f"{given('out', folder)}: cannot write in it (permission denied or a read-only "
                                 "file system); choose another folder")


def check_same_run(out_dir: Path, identity: dict[str, Any], device: str) -> None:
    """--resume continues the run recorded in out_dir's run.json, and no other; `device`: where this run's
    judge computes, for the --dtype that would resume it (dtype_advice)."""
    recorded_path = out_dir / RUN_FILE
    if not recorded_path.exists():
        if count_lines(out_dir / RESULTS_FILE):  # a run writes run.json before its first result: removed since
            raise UserError(f"--resume: {out_dir} holds a {RESULTS_FILE} without its {RUN_FILE} (kept apart, or "
                            "removed), so it cannot be checked to be this run, and it may be another's; keep the "
                            "two files together, run without --resume to score afresh here (replacing them), or "
                            "score into another --out")
        return
    try:
        recorded = json.loads(recorded_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise UserError(f"--resume: {recorded_path} is unreadable, so this cannot be checked to be the same run; "
                        "use another --out") from None
    # other scoring rules first: no option brings them back
    if (rules := recorded.get("scoring_rules")) != (ours := identity.get("scoring_rules")):
        raise UserError(f"--resume: {out_dir} holds a run scored by {other_rules(rules, ours)}, whose scores would not "
                        "mix with this localeval's in one file: score into another --out, or run without --resume to "
                        f"score it afresh here (replacing it); {WHAT_CHANGED}")
    if differences := another_run(recorded, identity):
        raise UserError(f"--resume: {out_dir} holds another run ({differences}); resume it with the same data and "
                        f"options, or score into another --out{dtype_advice(recorded, identity, device)}")


# What a run that could not write its summary or report says to do: its scores are all saved.
RESUME_AFTER_ROOM = "results.jsonl has every scored sample: make room and rerun with --resume"


def write_atomically(path: Path, text: str, then: str = "make room and run it again") -> None:
    """Replace `path` with `text` whole, or leave it as it was (a temporary file, then a rename).
    `then`: what to do when it cannot be written."""
    temporary = None
    try:
        # a new file of a name no one could know beforehand: a link waiting at a fixed name (.summary.json.tmp)
        # was written through, its target overwritten (a review of the security probe's fixes)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        temporary = Path(name)
        # a path given in bytes that are not UTF-8 (a file named data\xff.jsonl) comes as a half pair that UTF-8
        # cannot hold: written as its escape, which a JSON reader reads back as it was, not a traceback after the
        # run had scored every sample (an ops probe)
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as file:
            file.write(text)
        os.chmod(temporary, 0o666 & ~umask())  # mkstemp's is the owner's alone; the file it replaces was not
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        # "the previous one is kept" only where there was one: a fresh --out has none
        kept = f"the previous {path.name} is kept" if path.exists() else "nothing was written in its place"
        raise EnvironmentFailure(f"cannot write {path} ({_reason(error)}); {kept}; {then}") from None


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while block := data.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _remedy(error: OSError, then: str) -> str:
    """What lets the file be written again, then `then`: room only where room ran out (a file of another user's
    was told to "make room", an ops probe)."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"make room and {then}"
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"make it writable and {then}"
    return f"once it can be written, {then}"


def _reason(error: OSError) -> str:
    if error.errno == errno.ENOSPC:
        return "the disk is full"
    if error.errno == errno.EROFS:
        return "read-only file system"
    return error.strerror or str(error)


class LastLine(NamedTuple):
    """The last line of results.jsonl where a crash left it without its newline, as read_done_ids found it."""

    cut_at: int | None = None  # where it starts, when it is no whole result: cut off there
    torn: bool = False  # it held part of a result, dropped (its sample scored again), not just blanks
    unended: bool = False  # a whole result lacking only its newline: ended, and kept


def read_done_ids(path: Path) -> tuple[set[str], LastLine]:
    """The ids results.jsonl holds, and what its last line needs before more are appended."""
    done, offset, last = set(), 0, LastLine()
    with path.open("rb") as lines:  # bytes: a line cut inside a character is no result, not an error
        for number, line in enumerate(lines, 1):
            row = _json_or_none(line)
            whole = a_result(row)
            if not line.endswith(b"\n"):  # only the last line can lack it
                last = LastLine(unended=True) if whole else LastLine(cut_at=offset, torn=bool(line.strip()))
            elif line.strip() and not whole:
                raise UserError(f"{path}, line {number}: not a localeval result; delete that line to resume, or "
                                "score into another --out")
            if whole:
                done.add(str(row["id"]))
            offset += len(line)
    return done, last


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past what the parser follows
        return None


def result_of(line: bytes) -> dict[str, Any] | None:
    """One line of results.jsonl as its result; None for a line that is none (cut short, damaged)."""
    row = _json_or_none(line)
    return row if a_result(row) else None


def count_lines(path: Path) -> int:
    """Non-blank lines of a results file (0 if there is none): the samples it holds."""
    if not path.is_file():
        return 0
    with path.open("rb") as lines:
        return sum(1 for line in lines if line.strip())


def sample_inputs(sample: Sample) -> dict[str, Any]:
    """A sample's inputs under their ragas names, for a results line (--with-inputs)."""
    contexts = sample.retrieved_contexts
    return {"user_input": sample.user_input, "retrieved_contexts": None if contexts is None else list(contexts),
            "response": sample.response, "reference": sample.reference}


def read_results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():  # nothing scored yet
        return []
    with path.open("rb") as lines:
        # a line cut short by an interruption (perhaps inside a character) is no result
        return [row for row in map(result_of, lines) if row is not None]


