"""The files a command would replace in its --out folder: each must be one localeval wrote.

`--out .` or `--out analysis/` may hold a person's own results.jsonl or report.html. A command
that would replace one (or delete it as an earlier run's) is refused before anything is written,
naming the file. A file is localeval's by how it begins, as each writer writes it now and as
earlier versions did; an empty file holds nothing to lose. A link is never localeval's: writing
through it changed the file it leads to, anywhere (a security probe).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from .errors import UserError

Recogniser = Callable[[bytes], bool]  # a file's bytes (its first line, for .jsonl) -> localeval's?
HEAD_BYTES = 1024  # enough for an HTML page's title


def a_result(row: object) -> bool:
    """A line of results.jsonl, parsed: an object with the sample's id and its evidence (every line
    localeval writes has both)."""
    return isinstance(row, dict) and "id" in row and isinstance(row.get("evidence"), dict)


def scored_rows(first_line: bytes) -> bool:
    """JSON Lines of results, by their first line. A line a crash cut short (the file's only one) is
    recognised by its first key, as written now or before schema_version."""
    try:
        row = json.loads(first_line)
    except ValueError:
        return not first_line.endswith(b"\n") and first_line.startswith((b'{"schema_version": ', b'{"id": '))
    return a_result(row)


def json_object_with(key: str) -> Recogniser:
    def recognise(text: bytes) -> bool:
        try:
            return key in json.loads(text)
        except (ValueError, TypeError):  # not JSON, or JSON that is not an object
            return False
    return recognise


def page_titled(title: str) -> Recogniser:
    return lambda head: f"<title>{title}</title>".encode() in head[:HEAD_BYTES]


def markdown_titled(title: str) -> Recogniser:
    return lambda head: head.startswith(f"# {title}\n".encode())


def check_not_a_link(path: Path) -> None:
    """`path`, where localeval writes, is no link: one to another run's results.jsonl was written through, and
    bench's results/ as a link had the files where it led deleted as an earlier bench's (a security probe)."""
    if path.is_symlink():
        raise UserError(f"{path} is a link (to {path.parent / os.readlink(path)}): localeval writes its own files in "
                        "place, never through a link, which would change what it leads to; remove the link or choose "
                        "another --out")


def is_ours(path: Path, recognise: Recogniser) -> bool:
    """Whether `path` is missing, empty or recognised; a folder, a link or an unreadable file is one clear error."""
    check_not_a_link(path)
    if not path.exists():
        return True
    if path.is_dir():
        raise UserError(f"{path} is a folder where this command writes a file; choose another --out")
    try:
        with path.open("rb") as file:
            text = file.readline() if path.suffix == ".jsonl" else file.read()  # a line is a whole record
    except OSError as error:
        raise UserError(f"{path} cannot be read ({error.strerror or error}), so it cannot be checked to be "
                        "localeval's before it is replaced; choose another --out") from None
    if not text.strip():  # empty, or a blank first line: ours only where nothing follows it
        return path.stat().st_size == len(text)
    return recognise(text)


def check_ours(folder: Path, files: Mapping[str, Recogniser], appended: Collection[str] = ()) -> None:
    """Every one of `files` in `folder` that exists was written by localeval; else one clear error.
    `appended`: the files this command adds to rather than replaces (--resume's results.jsonl)."""
    for name, recognise in files.items():
        if not is_ours(folder / name, recognise):
            would = "add its results to it" if name in appended else "replace it"
            raise UserError(f"{folder / name} was not written by localeval, and this command would {would}; "
                            f"choose another --out (it writes {', '.join(files)} there) or move that file")
