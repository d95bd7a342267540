"""The folders localeval keeps its files in, and the paths a user gives it: a folder an environment
variable names, the user's own folders where none is named, and a link that leads nowhere."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import EnvironmentFailure, UserError


def folder_from_environment(variable: str) -> Path | None:
    """The folder an environment variable names (None where it is unset), refused at once where it or
    a folder above it is a file: else it failed later, as "File exists" read as a full disk."""
    if not os.environ.get(variable):
        return None
    folder = Path(os.environ[variable]).expanduser().absolute()  # said in full: a relative one moves with the shell
    # os.path's, which say no for a path under a folder this user cannot enter: Path's raised (a review)
    not_a_folder = next((path for path in (folder, *folder.parents) if os.path.exists(path) and not os.path.isdir(path)),
                        None)
    if not_a_folder is not None:
        where = "" if not_a_folder == folder else f" ({not_a_folder} is a file)"
        raise UserError(f"{variable}={folder} is not a folder{where}; name a folder (it is created if absent)")
    if (why := broken_link(folder)) is not None:  # it was "cannot be used (File exists)" (a paths probe)
        raise UserError(f"{variable}={folder} is {why}; name a folder, or make the one it leads to")
    return folder


LINK_LOOP = "a link that leads round in a loop of links"


def broken_link(path: Path) -> str | None:
    """What is wrong with `path` where it is a link that leads nowhere: to a place not there, or round in a
    loop (said as "not there" and "file not found", an ops probe); None where it is no such link."""
    if not path.is_symlink() or path.exists():
        return None
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return LINK_LOOP
    return f"a link to {path.parent / os.readlink(path)}, which is not there"  # read from its own folder


def users_folder(variable: str, platforms_folder: Callable[[], Path], remedy: str = "",
                 wanted: str = "a folder it can write") -> Path:
    """The folder `variable` names, else the user's own that platformdirs gives (`platforms_folder`): for a
    user with no home folder (HOME unset and no entry in the user list, as a container run under a random
    uid is), platformdirs' RuntimeError was a traceback on every command (an ops probe)."""
    named = folder_from_environment(variable)
    if named is not None:
        return named
    try:
        return platforms_folder()
    except RuntimeError:
        raise NoHomeFolder([f"{variable} to {wanted}{remedy}"]) from None


class NoHomeFolder(EnvironmentFailure):
    """No home folder to find a folder in: each of `asked` says which variable to set instead, and to what."""

    def __init__(self, asked: list[str]):
        self.asked = asked
        super().__init__(f"this user has no home folder (HOME is unset or not an absolute path, and the user list has "
                         f"no entry for uid {os.getuid()}): set {'; and set '.join(asked)}")

    def __reduce__(self):  # pickled (a Ray worker's error) by what it was made of, not by its message (a review)
        return type(self), (self.asked,)


def users_folders(*folders: Callable[[], Path]) -> None:
    """Find each folder, and where this user has no home folder, say every one that must be named instead in
    one message: a run named the cache, then on the next try the model store (a container probe)."""
    asked = []
    for folder in folders:
        try:
            folder()
        except NoHomeFolder as missing:
            asked += missing.asked
    if asked:
        raise NoHomeFolder(asked)


# flock refused by the file system itself (Lustre mounted without it, NFS without its lock daemon)
NO_FILE_LOCKS = frozenset({errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP})  # two on macOS


def system_lock(path: Path | str) -> FileLock:
    """A lock the operating system holds (flock), released with its process, a killed one too; never filelock's
    fallback where the file system has no flock, a marker file that only a process on the same machine clears
    once its writer is dead: a Slurm job killed and requeued on another node found its --out folder, and the
    model it had been preparing, "in use" for good (an HPC probe). Taken with `acquired`."""
    return FileLock(path, fallback_to_soft=False)


def acquired(lock: FileLock, timeout: float = -1) -> bool:
    """`lock` (system_lock's) taken: True; False where the file system has no file locks, and the caller goes on
    without, saying so. filelock's Timeout, and any other OSError, are the caller's."""
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise
    except OSError as error:
        if error.errno not in NO_FILE_LOCKS:
            raise
        return False
    return True


def unwritable_because(path: Path) -> str | None:
    """Why a file at `path`, and others beside it, cannot be written where it is or made where it would be;
    None where they can. Nothing is created."""
    try:
        existing = next(place for place in (path, *path.parents) if place.exists())
        if existing == path and not path.is_file():
            return "a folder is where its file belongs" if path.is_dir() else "it is not a regular file"
        folder = path.parent if existing == path else existing
        if not folder.is_dir():
            return f"{folder} is a file, not a folder"
        if not os.access(folder, os.W_OK | os.X_OK) or (existing == path and not os.access(path, os.W_OK)):
            if folder != path.parent:  # HOME set to a folder that is not there (a batch job's)
                return f"{path.parent} is not there, and {folder} cannot be written to make it"
            return "permission denied or a read-only file system"
    except OSError as error:  # a folder on the way that cannot be looked into, a name too long
        return error.strerror or str(error)
    return None


def check_temporary_folder() -> None:
    """Refuse at once where no temporary folder can be written: torch takes one on import, and without
    it a run was a traceback after seconds (a container whose root file system is read-only and has
    nothing mounted at /tmp, a probe)."""
    try:
        tempfile.gettempdir()
    except FileNotFoundError as error:  # Python tried TMPDIR, TEMP, TMP, /tmp, /var/tmp, /usr/tmp, the working folder
        raise EnvironmentFailure(f"no temporary folder this user can write ({error.strerror or error}): torch needs "
                                 "one; set TMPDIR to a folder it can write (in a container whose root file system is "
                                 "read-only, mount one at /tmp)") from None


def umask() -> int:
    """The process's umask: what a file it makes may not grant (a temporary file's own 0600 would pass on)."""
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask
