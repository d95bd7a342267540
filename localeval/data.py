"""Reading an evaluation dataset (JSON Lines, JSON, CSV or Parquet) into Samples.

Every problem with the file becomes a DataError naming the file and, where known, the line (or,
for JSON and Parquet, the record) and the field, so the user can go straight to it. Records refused
are refused together: the first one's error names where the others are.

In-memory data (evaluate() from Python) is checked the same way: lists of dicts or Samples, a
pandas DataFrame, or a dataset object with `to_list()` (a Hugging Face datasets.Dataset, a ragas
EvaluationDataset). Fields that are read under no name are reported once per dataset with an
IgnoredFieldsWarning, so a misnamed column is not silently left out.

Limits, each refused with a message saying so: a data file is a regular file (a pipe or a device
would block the read forever) of at most MAX_FILE_BYTES, read whole; a JSON Lines line, or a CSV
cell, is at most MAX_LINE_CHARS; JSON nests no deeper than Python's reader allows (about 1,000 levels).
"""

from __future__ import annotations

import ast
import codecs
import csv
import dataclasses
import io
import json
import os
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from localeval.errors import DataError, LocalevalWarning, UserError, closest, first_few, shortened, warn
from localeval.paths import broken_link
from localeval.samples import FIELD_ALIASES, TEXT_FIELDS, Sample, numpy_like
from localeval.text import LINE_BREAK, language_code, not_split

SUPPORTED_EXTENSIONS = (".jsonl", ".json", ".csv", ".tsv", ".parquet")  # .tsv read as CSV, its separator found
MAX_FILE_BYTES = 1 << 30  # the file is read whole: a larger dataset is split into files of this size
MAX_LINE_CHARS = 16 << 20  # one sample: far beyond any real one, short of exhausting memory on parsing
LIST_FIELD = "retrieved_contexts"
JOINED_ALIAS = "ground_truths"  # ragas 0.1's list of reference strings, read as one reference text
PARQUET_HINT = "reading Parquet needs pyarrow: pip install pyarrow"
TOO_DEEP = "JSON nested deeper than about 1,000 levels; no sample is shaped like that"  # Python's reader's limit
ACCEPTED_DATA = ("a dataset path (.jsonl, .json, .csv or .parquet), a list of dicts, Samples, pydantic models or "
                 "dataclasses, a pandas DataFrame, "
                 "a Hugging Face datasets.Dataset or a ragas EvaluationDataset")
READ_FIELDS = ("id", *TEXT_FIELDS, LIST_FIELD, "language")
# Fields of localeval's labeled format (docs/labeled-data.md): bench and --labels read them, and the
# same file is a valid dataset for run, so they are no surprise there.
LABELED_FIELDS = ("labels",)
KNOWN_FIELDS = frozenset({*READ_FIELDS, *FIELD_ALIASES, *LABELED_FIELDS})
CONTENT_FIELDS = frozenset({*TEXT_FIELDS, LIST_FIELD, *FIELD_ALIASES})  # what a metric reads
MOST_PLACES_NAMED = 5  # of the other records refused, beside the first one's error: the message stays one line

# A sentence that already ends, closing quotes or brackets included, needs no full stop added.
_SENTENCE_END = re.compile(r"[.!?。！？…][\"'”’)\]」』]*$")


class IgnoredFieldsWarning(LocalevalWarning):
    """A dataset has fields localeval reads under no name: a column left out, perhaps misnamed."""


class MissingIdsWarning(LocalevalWarning):
    """Some records give an id and others none: those take their record numbers, ids of another kind."""


class RecordError(DataError):
    """A DataError placed by record number, for formats whose records have no line of their own."""

    def __init__(self, path, message: str, record: int, field: str | None = None):
        super().__init__(path, message, field=field)
        where = f"{path}, record {record}" + (f", field '{field}'" if field else "")
        self.args = (f"{where}: {message}",)
        self.record = record


class _Where(NamedTuple):
    """Where a record sits: the number messages point at, its unit, and the id it gets by default."""

    number: int
    unit: str  # "line" or "record"
    default_id: str

    def error(self, path, message: str, field: str | None = None) -> DataError:
        if self.unit == "record":
            return RecordError(path, message, self.number, field)
        return DataError(path, message, line=self.number, field=field)


def load_samples(path: str | os.PathLike) -> list[Sample]:
    """Read every sample in the dataset at `path`; the format follows the file's extension."""
    readers = {".jsonl": _read_jsonl, ".json": _read_json, ".csv": _read_csv, ".tsv": _read_csv, ".parquet": _read_parquet}
    path = Path(path).expanduser()  # evaluate("~/data.jsonl"), as pandas reads it; no shell expands it there
    if not path.exists():
        if str(path) == "-":  # the usual name for standard input: a run reads a file whole, and digests it for --resume
            raise DataError(path, "standard input is not read; save the data to a file first")
        broken = broken_link(path)
        raise DataError(path, "file not found" if broken is None else f"is {broken}")
    if path.is_dir():
        raise DataError(path, "is a directory, not a data file")
    if not path.is_file():  # checked before opening: reading a pipe or a device would block
        raise DataError(path, "not a regular file (a pipe, device or socket); save the data to a file first")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DataError(path, f"{size / 2**30:.1f} GiB; localeval reads files of at most {MAX_FILE_BYTES >> 30} GiB "
                              "whole: split the data into several files")
    reader = readers.get(path.suffix.lower())
    if reader is None:
        supported = ", ".join(SUPPORTED_EXTENSIONS)
        # Excel's "Unicode Text" is a tab-separated .txt, which may as well hold anything: named, not guessed
        text = "; a tab-separated .txt (Excel's Unicode Text): rename it .tsv" if path.suffix.lower() == ".txt" else ""
        raise DataError(path, f"unsupported file type '{path.suffix}'; use one of {supported}{text}")
    samples = _checked_samples(path, reader(path))
    if not samples:
        raise DataError(path, "no samples")
    return samples


def samples_from_records(records: Iterable[Any], source: str = "samples") -> list[Sample]:
    """Samples from in-memory records (dicts), checked as a file's would be; ids default to 1, 2, ..."""
    numbered = ((_Where(number, "record", str(number)), record) for number, record in enumerate(records, start=1))
    return _checked_samples(source, numbered)


def names_a_file(text: str) -> bool:
    """Whether a string given as data means a path, rather than text passed by mistake."""
    return os.path.exists(os.path.expanduser(text)) or Path(text).suffix.lower() in SUPPORTED_EXTENSIONS  # never raises


def samples_in_memory(data: Any) -> list[Sample]:
    """Samples from Python objects: Samples or dicts, a pandas DataFrame, or a dataset object with
    `to_list()` (datasets.Dataset, ragas EvaluationDataset). Those libraries are recognised by what
    they offer, not imported: neither is a dependency of localeval."""
    if isinstance(data, str):
        raise UserError(f"no data file {shortened(data, 60)!r}; give {ACCEPTED_DATA}")
    if isinstance(data, Mapping):  # iterating would read its keys as records
        raise UserError(f"got a single mapping; give {ACCEPTED_DATA} (one sample is [sample]; a dict of "
                        "columns is pandas.DataFrame(columns))")
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, (pandas.Series, pandas.Index)):  # to_list(): values read as records
        raise UserError(f"got a pandas {type(data).__name__} (a DataFrame's row, column or index); give "
                        f"{ACCEPTED_DATA} (one row as a DataFrame: frame.iloc[[0]], or frame.loc[[label]])")
    if callable(getattr(data, "to_list", None)):  # plain Python values, unlike to_pandas()
        return samples_from_records(map(_plain_record, data.to_list()), type(data).__name__)
    if pandas_of_a_frame(data) is not None:
        return samples_from_records(_frame_records(data), "DataFrame")
    # after to_list(): ragas's EvaluationDataset is a pydantic model too (a review)
    if isinstance(data, Sample) or _record_object(data):  # one record, not a list of them
        raise UserError(f"got a single {type(data).__name__}; give {ACCEPTED_DATA} (one sample is [sample])")
    if isinstance(data, Iterable) and not isinstance(data, bytes):  # bytes iterate as numbers
        return samples_from_records(map(_plain_record, data))
    raise UserError(f"cannot read samples from {_kind(data)}; give {ACCEPTED_DATA}")


def _plain_record(record: Any) -> Any:
    """A record as a DataFrame, numpy or a column-oriented dataset (every record has every column)
    leaves it, as plain values: None and NaN are an absent field, a numpy array a list and a numpy
    number a Python one (they were "expected a string, got a number", "got a ndarray", "got a int64")."""
    if _record_object(record) and not isinstance(record, Sample):  # read as its fields (a probe)
        record = record.model_dump() if callable(getattr(record, "model_dump", None)) else dataclasses.asdict(record)
    if not isinstance(record, dict):
        return record
    return {name: value.tolist() if numpy_like(value) else value for name, value in record.items() if not _missing(value)}


def _record_object(value: Any) -> bool:
    """An application's own record: an instance of a pydantic model or of a dataclass (a Sample is one too)."""
    if isinstance(value, type):
        return False
    return callable(getattr(value, "model_dump", None)) or dataclasses.is_dataclass(value)


def _missing(value: Any) -> bool:
    """None, NaN (a float, numpy's too) or pandas' NA and NaT: what a DataFrame holds for a missing value."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value  # NaN alone is not equal to itself
    pandas = sys.modules.get("pandas")  # its missing values exist only where it is loaded
    return pandas is not None and pandas.api.types.is_scalar(value) and bool(pandas.isna(value))


def pandas_of_a_frame(data: Any) -> Any:
    """pandas, where `data` is a DataFrame; else None. A DataFrame's module is loaded already, so no
    other caller pays for importing it."""
    pandas = sys.modules.get("pandas")
    return pandas if pandas is not None and isinstance(data, pandas.DataFrame) else None


def frame_gives_ids(frame) -> bool:
    """Whether a DataFrame names its samples: an `id` column, or an index named `id`. Else they are
    numbered 1, 2, ... as a file's records are."""
    return "id" in frame.columns or frame.index.name == "id"


def _frame_records(frame) -> Iterator[dict[str, Any]]:
    """A DataFrame's rows as plain records: a missing value (NaN, None, pd.NA) is an absent field, and a
    list held as a numpy array (as Parquet gives them) is a list. An index of ids is the samples' ids."""
    if frame_gives_ids(frame) and "id" not in frame.columns:
        frame = frame.reset_index()
    yield from map(_plain_record, frame.to_dict("records"))


def _checked_samples(path, records: Iterable[tuple[_Where, Any]]) -> list[Sample]:
    samples, first_seen, ignored, with_content, without_id, only_ignored = [], {}, Counter(), 0, [], []
    refused: list[DataError] = []  # every record's, said together: a file of many bad lines was mended one run a line
    for where, record in records:
        try:
            if isinstance(record, _Unparsed):
                raise record.error
            sample, given = _to_sample(path, record, where), _id_given(record)
            if sample.id in first_seen:
                raise where.error(path, _duplicate_id(sample.id, first_seen[sample.id], None if given else where))
        except DataError as error:
            refused.append(error)
            continue
        if not given:
            without_id.append(where)
        first_seen[sample.id] = f"{where.unit} {where.number}" + (
            "" if given else f", which has no id and so takes the id '{where.default_id}'")
        samples.append(sample)
        if isinstance(record, dict):
            # as text: an in-memory record may be named by anything (a DataFrame made from tuples has 0, 1, 2)
            unread = [str(name) for name in record if name not in KNOWN_FIELDS]
            ignored.update(unread)
            has_content = any(name in CONTENT_FIELDS for name in record)
            with_content += has_content
            if unread and not has_content:  # a record of another export among the file's: all its scores null
                only_ignored.append(where)
        else:
            with_content += 1
    if refused:
        raise _all_refused(refused)
    if ignored and not with_content:  # misnamed columns: every metric of every sample would be null
        raise DataError(path, f"no record has a field localeval scores ({', '.join(READ_FIELDS[1:-1])}, or the "
                              f"ragas names {', '.join(FIELD_ALIASES)}); its fields: {', '.join(ignored)}")
    if ignored:
        _warn_ignored(path, ignored, len(samples), only_ignored)
    if 0 < len(without_id) < len(samples):
        _warn_without_id(path, without_id, len(samples))
    return samples


class _Unparsed(NamedTuple):
    """A line of JSON Lines that is no JSON: refused with the other lines' errors, once every line was read."""

    error: DataError


def _all_refused(refused: list[DataError]) -> DataError:
    """The first refused record's error, naming where the others are, so that one pass mends them all."""
    first, others = refused[0], refused[1:]
    if others:
        places = [_place(error) for error in others[:MOST_PLACES_NAMED]]
        if len(others) > MOST_PLACES_NAMED:
            places.append(f"and {len(others) - MOST_PLACES_NAMED:,} more")
        first.args = (f"{first.args[0]} (refused too: {'; '.join(places)})",)
    return first


def _place(error: DataError) -> str:
    """line 7, record 9, field 'response'."""
    where = f"line {error.line}" if error.line is not None else f"record {getattr(error, 'record', '?')}"
    return where + (f", field '{error.field}'" if error.field else "")


def _id_given(record: Any) -> bool:
    return (record.get("id") if isinstance(record, dict) else getattr(record, "id", None)) is not None


def _duplicate_id(sample_id: str, first: str, where_without_id: _Where | None) -> str:
    """Ids default to record numbers, so a clash may involve a record that gave none: say which, and
    the id it took (a CSV row's is its number below the header, not its line's)."""
    this = f"; this {where_without_id.unit} has no id and so takes the id '{where_without_id.default_id}'" \
        if where_without_id else ""
    return f"duplicate id '{sample_id}' (first used at {first}){this}"


def _what_pandas_wrote(name: str) -> str:
    """What a field named as pandas names a frame's saved index is (its own names read as noise), or the field
    it was likely meant as ("User_Input", "reference "): every score of such a file was null, the cause unsaid
    among the warning's names (a paths probe)."""
    if name == "" or re.fullmatch(r"Unnamed: \d+", name):
        return " (the frame's index, as to_csv writes it; index=False leaves it out)"
    if re.fullmatch(r"__index_level_\d+__", name):
        return " (the frame's index, as to_parquet keeps it; name it id to read it as the ids)"
    if name in FRAMEWORK_NAMES:
        framework, field = FRAMEWORK_NAMES[name]
        return f" ({framework}'s name for what localeval reads as {field}: rename it)"
    meant = closest(name, [*READ_FIELDS, *FIELD_ALIASES], cutoff=0.9, normal=lambda field: field.strip().lower())
    return f" (did you mean '{meant}'? names are read as written)" if meant else ""


# What RAG frameworks name the fields of their outputs, and the field localeval reads each as: a LangChain chain's
# {input, context, answer} was read as an answer alone, every other score null (a LangChain probe)
FRAMEWORK_NAMES = {
    "input": ("LangChain", "user_input"), "query": ("LangChain", "user_input"), "query_str": ("LlamaIndex", "user_input"),
    "context": ("LangChain", "retrieved_contexts"), "source_documents": ("LangChain", "retrieved_contexts"),
    "source_nodes": ("LlamaIndex", "retrieved_contexts"), "result": ("LangChain", "response"),
}


def _warn_without_id(path, without_id: list[_Where], total: int) -> None:
    """A missing id (an empty cell, a NaN) takes its record's number: a label or a join that expects
    the others' kind of id would not find it."""
    first = without_id[0]
    warn(MissingIdsWarning(
        f"{path}: {len(without_id)} of {total} records have no id, so each is given one from where it stands "
        f"({first.unit} {first.number} gets the id '{first.default_id}'); give every record an id, or none"))


SHOWN_FIELDS = 10  # ignored fields a warning names


def _warn_ignored(path, ignored: Counter, total: int, only_ignored: list[_Where]) -> None:
    """One warning for the fields left unread, and the records that have nothing else (their scores
    will all be null: a record of another export, say, among the file's)."""
    # the commonest few: a header of 20,000 columns made a warning of 1 MB, kept in summary.json and the report
    fields = ", ".join(f"'{shortened(name, 80)}'{_what_pandas_wrote(name)} ({count} of {total} records)"
                       for name, count in ignored.most_common(SHOWN_FIELDS))
    if len(ignored) > SHOWN_FIELDS:
        fields += f" and {len(ignored) - SHOWN_FIELDS:,} more"
    unscorable = ""
    if only_ignored:
        places = first_few([f"{where.unit} {where.number}" for where in only_ignored], shown=3)
        unscorable = (f"; {len(only_ignored)} of {total} records have no field localeval reads, so every score of "
                      f"theirs will be null ({places})")
    warn(IgnoredFieldsWarning(
        f"{path}: ignored fields, which localeval does not read: {fields}; it reads {', '.join(READ_FIELDS)} "
        f"and the ragas names {', '.join(FIELD_ALIASES)}{unscorable}"))


# --- readers: each yields (where, record) pairs -------------------------------------------------


def _read_jsonl(path: Path) -> Iterator[tuple[_Where, Any]]:
    for number, line in enumerate(LINE_BREAK.split(read_text(path)), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise DataError(path, f"{len(line):,} characters on one line; a sample may take at most "
                                  f"{MAX_LINE_CHARS:,}", line=number)
        if line.strip():
            try:
                record = _parse_json(path, line, number)
            except DataError as error:
                record = _Unparsed(error)
            yield _Where(number, "line", str(number)), record


def _read_json(path: Path) -> Iterator[tuple[_Where, Any]]:
    text = read_text(path)
    if not text.strip():
        return
    try:
        data = _parse_json(path, text)
    except DataError as error:
        if error.message.startswith("malformed JSON: Extra data") and _json_lines(text):  # JSON Lines saved as .json
            raise DataError(path, f"{error.message}; each line holds a JSON object, as in JSON Lines, which "
                                  "localeval reads from a .jsonl file", error.line) from None
        raise
    wrapped = isinstance(data, dict) and "samples" in data
    if wrapped:
        data = data["samples"]
    if not isinstance(data, list):
        got = f"its 'samples' is {_kind(data)}" if wrapped else f"got {_kind(data)}"  # a summary.json has a count there
        if isinstance(data, dict) and data:  # another wrapping ({"data": ...}): its keys say where the list is
            got += f" with the keys {first_few([repr(key) for key in data])}{'' if wrapped else _wrapping_hint(data)}"
        raise DataError(path, f"expected a list of samples or an object with a 'samples' list; {got}")
    for number, record in enumerate(data, start=1):
        yield _Where(number, "record", str(number)), record


def _wrapping_hint(data: dict) -> str:
    """What to do with a JSON object that is not localeval's wrapping: a list under another key, or pandas'
    to_json of a frame by columns (its default), each column an object by row (a ragas probe)."""
    listed = next((key for key, value in data.items() if isinstance(value, list) and value
                   and all(isinstance(item, dict) for item in value)), None)
    if listed is not None:
        return f"; its {listed!r} is a list: name that key 'samples'"
    if all(isinstance(value, dict) for value in data.values()):
        return ("; each key holds an object, as pandas' to_json writes a frame by columns: write it with "
                "to_json(path, orient='records'), a list of samples")
    return ""


def _json_lines(text: str) -> bool:
    """Whether a text that is not one JSON value is JSON Lines: its first two lines each an object."""
    lines = [line for line in LINE_BREAK.split(text, maxsplit=64) if line.strip()][:2]
    try:
        return len(lines) == 2 and all(isinstance(json.loads(line), dict) for line in lines)
    except (ValueError, RecursionError):  # a line nested too deep is no record either
        return False


def _read_csv(path: Path) -> Iterator[tuple[_Where, Any]]:
    # newline="" keeps line breaks inside quoted cells intact and line_num counting physical lines.
    csv.field_size_limit(MAX_LINE_CHARS)  # a cell may hold what a JSON Lines line may (csv's own: 128 KiB)
    # skipinitialspace: "a, b" is a common way to write CSV by hand, and without it a quoted cell
    # after ", " is not read as quoted.
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_csv_separator(text), skipinitialspace=True)
    header = _csv_header(path, reader)
    if header is None:
        return
    columns = _csv_columns(path, header, reader.line_num)
    record_count, last_line = 0, reader.line_num
    try:
        for row in reader:
            where_line, last_line = last_line + 1, reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            record_count += 1
            where = _Where(where_line, "line", str(record_count))
            if len(row) > len(columns):
                raise where.error(path, f"row has {len(row)} cells but the header has {len(columns)}; a cell that "
                                        "holds the separator must be in double quotes")
            if len(row) < len(columns):  # a cell left out shifts no other, but is a broken export or a cut row
                raise where.error(path, f"row has {len(row)} cell{'s' * (len(row) != 1)} but the header has {len(columns)}; "
                                        "end a row with a separator for each empty field (q,a,), and put a cell that "
                                        "holds a line break in double quotes")
            yield where, _csv_record(path, dict(zip(columns, row)), where)
    except csv.Error as exc:
        raise DataError(path, f"malformed CSV: {exc}", line=reader.line_num) from None


def _read_parquet(path: Path) -> Iterator[tuple[_Where, Any]]:
    try:
        import pyarrow.parquet as pq  # optional dependency, only needed here
    except ImportError:
        raise DataError(path, PARQUET_HINT) from None
    try:
        # pyarrow gives plain Python values (None for nulls, lists for arrays), unlike pandas' NaN.
        records = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(path, f"not a readable Parquet file: {exc}") from None
    for number, record in enumerate(records, start=1):
        yield _Where(number, "record", str(number)), record


# --- reading helpers ----------------------------------------------------------------------------


def read_text(path: Path) -> str:
    """A data file's text, as every reader of one takes it: UTF-8 (a BOM dropped) or UTF-16 with its BOM;
    anything else a DataError naming the byte and line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror or exc}") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # before UTF-16's: UTF-32's LE mark begins as it
        raise DataError(path, "UTF-32 text; save it as UTF-8")
    # UTF-16 says so in its first two bytes (Excel's "Unicode Text", Windows tools): read as it says, not
    # refused at its first byte as "not UTF-8"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise DataError(path, "begins as UTF-16 text but is not UTF-16 throughout; save it as UTF-8") from None
    if b"\x00" in data[:4096]:  # valid UTF-8, and no JSON or CSV: it read as "malformed JSON" at column 2
        raise DataError(path, "holds NUL bytes, so it is not UTF-8 text: UTF-16 without its byte-order mark, or not a "
                              "text file; save it as UTF-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The sentinel byte makes splitlines count the line the bad byte is on.
        line = len((data[: exc.start] + b"x").splitlines())
        message = f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        raise DataError(path, message, line=line) from None


class _DuplicateKey(Exception):
    pass


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads keeps the last of a repeated key; a sample with two answers is a mistake to show."""
    record = dict(pairs)
    if len(record) < len(pairs):
        raise _DuplicateKey(next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1))
    return record


def _null_for_nan(constant: str) -> float | None:
    """NaN, which is not JSON but is what json.dumps writes for pandas' missing value, is null, as a
    DataFrame's NaN is to evaluate(); Infinity and -Infinity stay numbers (and are refused as such)."""
    return None if constant == "NaN" else float(constant)


TOO_LONG_A_NUMBER = "a number of more than 4,300 digits, more than Python reads; write it as a string"


def _parse_json(path: Path, text: str, line: int | None = None) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_object_without_repeats, parse_constant=_null_for_nan)
    except _DuplicateKey as exc:
        raise DataError(path, f"key '{exc.args[0]}' appears twice in one object; keep only one", line=line) from None
    except json.JSONDecodeError as exc:
        # A whole .json file reports the error's own line; a .jsonl line reports itself.
        raise DataError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", line=line or exc.lineno) from None
    except RecursionError:
        raise DataError(path, TOO_DEEP, line=line) from None
    except ValueError:  # a whole number of more digits than Python converts (4,300): a traceback, exit 1
        raise DataError(path, TOO_LONG_A_NUMBER, line=line) from None


def _no_list_because(text: str, single: str = "") -> str:
    """What the text of a list field that holds no list localeval reads (_written_list) most likely is, as
    the tools that write CSV write one; `single`, what to write for plain text, where not one chunk."""
    if _numpy_array_text(text):
        return NUMPY_ARRAY_HINT
    if any(quote in text for quote in "\u201c\u201d"):
        return "; its quotes are typographic (\u201c \u201d): JSON's are straight (\")"
    if not _a_lists_text(text):  # plain text: one chunk, or several run together
        return single or '; a single chunk is written ["the chunk"]'
    if _python_list_of_strings(text, apart=False):
        return "; two of its items have no comma between them, which Python would read as one"
    return ""


def _a_lists_text(text: str) -> bool:
    """Whether `text` begins as a list of strings is written, `["`, `['` or `[]`, cut off or not: plain text
    may begin with a bracket too (a Markdown link, `[Upload guide](...)`, a docs chatbot's chunk)."""
    return re.match(r"\s*\[\s*[\"'\]]", text) is not None


# numpy's text of an array, which pandas' to_csv writes for a column read from Parquet: Python reads its
# items, with no commas between them, as one string joined ('a' 'b' is 'ab'), and drops a long one's middle;
# or of a list of numpy's strings (list(array)), np.str_('a'), which is no Python literal
NUMPY_ARRAY_HINT = ("; this is numpy's text of its strings, as pandas' to_csv writes a column of numpy arrays (an "
                    "array's items have no commas between them, and a long one's middle is left out as ...): write "
                    "that column as JSON before to_csv, frame[column].map(lambda chunks: json.dumps(list(chunks)))")


def _written_list(text: str) -> Any:
    """The list a list field's text holds, written as JSON or as Python writes a list of strings (its str:
    what pandas' to_csv writes of a list column, and what pd.read_csv gives back): the text of a list is
    no chunk. None where the text holds neither (plain text: one chunk, or several run together)."""
    try:
        decoded = json.loads(text, strict=False)
    except (ValueError, RecursionError):
        decoded = _python_list_of_strings(text)
    return decoded if isinstance(decoded, list) else None


def _python_list_of_strings(text: str, apart: bool = True) -> list[str] | None:
    """The strings of a list as Python writes one, each written apart (`apart`): numpy's ['a' 'b'], which
    Python would read as ['ab'], is not one (_numpy_array_text)."""
    tokens = _tokens(text) if "'" in text else None  # Python quotes with ' unless a string holds one
    if not tokens or tokens[0].string != "[":
        return None
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    written_apart = sum(token.type == tokenize.STRING for token in tokens) == len(value)
    return value if written_apart or not apart else None


def _numpy_array_text(text: str) -> bool:
    """Whether the text is numpy's str of an array of strings ([, quoted strings with no commas between
    them, a long array's middle left out as ..., ]) or of a list of numpy strings."""
    if text.lstrip().startswith("[np.str_("):
        return True
    tokens = _tokens(text) if "'" in text else None  # numpy quotes as repr does; ["a" "b"] is JSON mistyped
    if not tokens or tokens[0].string != "[" or tokens[-1].string != "]":
        return False
    inside = tokens[1:-1]
    strings = sum(token.type == tokenize.STRING for token in inside)
    elided = any(token.string == "..." for token in inside)
    return all(token.type == tokenize.STRING or token.string == "..." for token in inside) and (strings > 1 or elided)


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    """The text's Python tokens, line breaks left out; None where it is no Python."""
    layout = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    try:
        return [token for token in tokenize.generate_tokens(io.StringIO(text.strip()).readline) if token.type not in layout]
    except (tokenize.TokenError, SyntaxError):
        return None


CSV_SEPARATORS = ",;\t|"


def _csv_separator(text: str) -> str:
    """Excel's hint line's separator ("sep=;"), else the one of , ; tab | that cuts the header into the
    most columns, quotes respected (the comma where they tie): Excel saves "CSV" with semicolons where
    the decimal mark is a comma."""
    first = next((line.strip(" \r\n") for line in io.StringIO(text) if line.strip()), "")  # a tab may be the separator
    if first.lower().startswith("sep=") and len(first) > 4 and first[4] in CSV_SEPARATORS:
        return first[4]
    return max(CSV_SEPARATORS, key=lambda separator: len(next(csv.reader([first], delimiter=separator), [])))


def _csv_header(path: Path, reader) -> list[str] | None:
    """The header row, after any blank lines; Excel's separator hint before it ("sep=;") is skipped."""
    rows = (row for row in reader if row)  # blank lines before it are nothing
    header = next(rows, None)
    if header and header[0].strip().lower().startswith("sep="):  # read with the separator it names (_csv_separator)
        if [cell.strip().lower() for cell in header] != ["sep=", ""]:
            line = reader.dialect.delimiter.join(header)
            raise DataError(path, f"the first line, {line!r}, names no separator localeval reads; it reads , ; tab "
                                  "and |", line=reader.line_num)
        header = next(rows, None)
    return header


def _csv_columns(path: Path, header: list[str], line: int) -> list[str]:
    columns = [name.strip() for name in header]
    if not any(columns):
        raise DataError(path, "the header is empty: the first line of a CSV file names its columns", line=line)
    # counted once: list.count per column took 238 s for a header of 200,000 (a security probe)
    repeated = next((name for name, count in Counter(columns).items() if name and count > 1), None)
    if repeated is not None:
        raise DataError(path, f"column '{repeated}' appears twice in the header", line=line)
    for name in dict.fromkeys(FIELD_ALIASES.values()):
        given = [column for column in columns if FIELD_ALIASES.get(column, column) == name]
        if len(given) > 1:
            raise DataError(path, f"both '{given[0]}' and '{given[1]}' are columns for {name}; keep only one",
                            line=line)
    return columns


_WHOLE_FLOAT = re.compile(r"-?\d+\.0+")


def _csv_record(path: Path, row: dict[str, str], where: _Where) -> dict[str, Any]:
    record = {}
    for name, cell in row.items():
        if not cell.strip():
            continue  # an empty cell means the field is absent
        if name == "id" and _WHOLE_FLOAT.fullmatch(cell.strip()):  # pandas' to_csv of ids with one missing
            cell = cell.strip().split(".")[0]  # the id its Parquet or DataFrame gives (_sample_id)
        if FIELD_ALIASES.get(name, name) == LIST_FIELD or name == JOINED_ALIAS:
            try:  # strict=False: a chunk may hold a line break as typed in a spreadsheet cell (Alt+Enter)
                cell = json.loads(cell, strict=False)
            except json.JSONDecodeError as exc:
                listed = _python_list_of_strings(cell)  # pandas' to_csv of a list column
                if listed is None:
                    raise where.error(path, f'expected a JSON array of strings, e.g. ["first", "second"] ({exc.msg}, '
                                      f'character {exc.pos + 1} of the cell){_no_list_because(cell)}', name) from None
                cell = listed
            except RecursionError:
                raise where.error(path, TOO_DEEP, name) from None
            except ValueError:  # a number of more digits than Python converts
                raise where.error(path, TOO_LONG_A_NUMBER, name) from None
            if not isinstance(cell, list):
                raise where.error(path, f"expected a JSON array of strings, got {_kind(cell)}", name)
        record[name] = cell
    return record


# --- turning a record into a Sample -------------------------------------------------------------


def _to_sample(path: Path, record: Any, where: _Where) -> Sample:
    if isinstance(record, Sample):  # from Python: built without checks, so checked as its fields' record
        record = {name: value for name, value in vars(record).items() if value is not None}
    if not isinstance(record, dict):
        array = where.unit == "line" and isinstance(record, list)  # a .jsonl line holding the records
        raise where.error(path, f"expected a JSON object, got {_kind(record)}"
                                f"{' (a JSON array of records is a .json file)' if array else ''}")
    fields, written = _rename_aliases(path, record, where)
    if written["reference"] == JOINED_ALIAS:
        fields["reference"] = _joined_sentences(path, fields["reference"], where)
    texts = {name: _text(path, fields.get(name), where, written[name]) for name in (*TEXT_FIELDS, "language")}
    texts["language"] = _language(path, texts["language"], where)
    return Sample(
        id=_sample_id(path, fields.get("id"), where),
        retrieved_contexts=_contexts(path, fields.get(LIST_FIELD), where, written[LIST_FIELD]),
        **texts,
    )


def _language(path: Path, tag: str | None, where: _Where) -> str | None:
    """A sample's language as pysbd's code (text.language_code); a blank one is none given, as an empty CSV
    cell is (it was refused in JSON, a probe)."""
    if tag is None or not tag.strip():
        return None
    code = language_code(tag)
    if code is None:
        raise where.error(path, f"'{tag}' is {not_split(tag)}", "language")
    return code


def _rename_aliases(path: Path, record: dict, where: _Where) -> tuple[dict, dict[str, str]]:
    """The record under current field names, and the name the user wrote for each (for messages)."""
    fields = dict(record)
    written = {name: name for name in (*TEXT_FIELDS, LIST_FIELD, "language")}
    for alias, name in FIELD_ALIASES.items():
        if alias not in fields:
            continue
        if name in fields:
            raise where.error(path, f"both '{alias}' and '{written[name]}' are given for {name}; keep only one")
        fields[name] = fields.pop(alias)
        written[name] = alias
    return fields, written


# A 10 MB id (a document pasted into the wrong column) made a 40 MB report; a path or URL fits.
LONGEST_ID = 1000


def _sample_id(path: Path, value: Any, where: _Where) -> str:
    if value is None:
        return where.default_id
    sample_id = _id_text(path, value, where)
    if len(sample_id) > LONGEST_ID:
        raise where.error(path, f"an id of {len(sample_id):,} characters; an id names its sample on every results "
                                f"line and in the report, so it is at most {LONGEST_ID:,}: shorten it, or "
                                "leave ids out to have samples numbered", "id")
    return sample_id


def _id_text(path: Path, value: Any, where: _Where) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():  # pandas stores integer ids as floats once one is missing
        return str(int(value))
    if isinstance(value, str) and value.strip():
        return _whole_characters(path, value, where, "id")
    got = ("an empty string" if isinstance(value, str) else
           f"{value!r}, not a whole number" if isinstance(value, float) else _kind(value))  # "a number" was no answer
    raise where.error(path, f"expected a non-empty string or a whole number, got {got}", "id")


def _text(path: Path, value: Any, where: _Where, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value if value is None else _whole_characters(path, value, where, field)
    raise where.error(path, f"expected a string, got {_kind(value)}{_conversation_hint(value, field)}"
                            f"{_text_inside(value)}", field)


def _text_inside(value: Any) -> str:
    """Where a text field got an object that holds the text (LangChain's AIMessage as the response: its .content;
    LlamaIndex's Response: its .response), its name, to give that instead (a LangChain probe)."""
    if isinstance(value, (str, bytes, int, float, list, tuple)):
        return ""
    for name in ("content", "response", "text"):
        if _text_held(value, name) is not None:
            return f"; it holds its text as {name!r}: give that"
    return ""


def _text_held(item: Any, name: str) -> str | None:
    """The string `item` holds under `name`, as a key or an attribute; None where it holds none there, or where a
    property of its own fails (LlamaIndex's NodeWithScore.text of a node that holds no text)."""
    try:
        held = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
    except Exception:  # noqa: BLE001 - the object's own failure, said as the data's
        return None
    return held if isinstance(held, str) else None


def _conversation_hint(value: Any, field: str) -> str:
    """ragas's multi-turn samples give user_input as a list of messages: said as such (a ragas probe)."""
    conversation = isinstance(value, (list, tuple)) and value and all(isinstance(m, Mapping) and "content" in m
                                                                      for m in value)
    if conversation and FIELD_ALIASES.get(field, field) == "user_input":
        return ("; a conversation (a list of messages, as in ragas's multi-turn samples) is not scored: give its "
                "last question as user_input, and the turns before it among the retrieved contexts if the answer "
                "draws on them")
    return ""


_HALF_A_PAIR = re.compile("[\ud800-\udfff]")


def _whole_characters(path: Path, text: str, where: _Where, field: str, item: int | None = None) -> str:
    """`text`, refused where it holds half of a UTF-16 pair (JSON's "\\udcff" escape alone): no character, it
    could be written in no file, and a run scored every sample, then failed to write it, a traceback (a probe)."""
    found = _HALF_A_PAIR.search(text)
    if found is not None:
        of_item = "" if item is None else f" of item {item}"
        raise where.error(path, f"holds \\u{ord(found.group()):04x} at character {found.start() + 1}{of_item}, half of a "
                                "UTF-16 pair without its other half, which is no character; write the character itself",
                          field)
    return text


def _joined_sentences(path: Path, value: Any, where: _Where) -> str | None:
    """ragas 0.1's `ground_truths` as one reference: the strings joined by spaces, each ended with a
    full stop if it has no sentence end, so that sentence splitting keeps them apart."""
    single = "; a single reference is written 'reference' (or 'ground_truth')"
    texts = [text.strip() for text in _contexts(path, value, where, JOINED_ALIAS, single) or () if text.strip()]
    return " ".join(text if _SENTENCE_END.search(text) else text + "." for text in texts) or None


def _contexts(path: Path, value: Any, where: _Where, field: str, single: str = "") -> tuple[str, ...] | None:
    """The field's list of strings, as given or written as text; `single`, where a plain string is the wrong field's
    value, says which field takes one."""
    if value is None:
        return None
    if isinstance(value, str):  # a list written as text (a frame read from CSV) is that list
        text, value = value, _written_list(value)
        if value is None:  # one chunk or many run together? Only the user knows
            raise where.error(path, f"expected a list of strings, got a string{_no_list_because(text, single)}", field)
    if not isinstance(value, (list, tuple)):
        raise where.error(path, f"expected a list of strings, got {_kind(value)}", field)
    texts = []
    for index, item in enumerate(value, start=1):
        text, why_not = _chunk_text(item)
        if text is None:
            raise where.error(path, f"expected a list of strings, got {_kind(item)} at item {index}{why_not}", field)
        texts.append(_whole_characters(path, text, where, field, index))
    return tuple(texts)


# Where retrieval libraries keep a chunk's text: LangChain's Document (page_content), LlamaIndex's nodes (text),
# Haystack's Document (content), as objects or as the dicts they are saved as. A team's retriever output was
# refused as "an object at item 1" (its metadata, which no metric reads, is left out).
CHUNK_TEXT = ("page_content", "text", "content")
# Where a saved document holds the one with the text: LlamaIndex's NodeWithScore, saved, is {"node": {...}, "score"},
# and LangChain's own serialisation (dumpd, to_json) is {"lc": 1, "kwargs": {"page_content": ...}}
SAVED_INSIDE = ("node", "kwargs")


def _chunk_text(item: Any) -> tuple[str | None, str]:
    """A chunk's text (the string, or a document's text under CHUNK_TEXT), or None and why, for the message."""
    if isinstance(item, str):
        return item, ""
    found = {name: text for name in CHUNK_TEXT if (text := _text_held(item, name)) is not None}
    if len(set(found.values())) > 1:  # Haystack saves its metadata beside the content: a "text" there is not it
        return None, f" that holds {' and '.join(map(repr, found))}: which is the chunk's text? Give it as a string"
    if found:
        return next(iter(found.values())), ""
    for wrapper in SAVED_INSIDE:
        if isinstance(item, Mapping) and isinstance(inside := item.get(wrapper), Mapping):
            return _chunk_text(inside)
    if (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[1], (int, float))
            and _chunk_text(item[0])[0] is not None):  # LangChain's similarity_search_with_score
        return None, " (a document and its score? give the documents alone)"
    if isinstance(item, Mapping) or {"metadata", "meta", *CHUNK_TEXT} & set(dir(item)):  # dir() runs no property
        names = " or ".join(f'"{name}"' for name in CHUNK_TEXT)
        return None, f" (a retrieved document is read by its text, under {names}, which it does not hold as a string)"
    return None, ""


def _kind(value: Any) -> str:
    """How a value's type reads in a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, float) and value != value:  # pandas' mark of a missing value
        return "NaN (a missing value)"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeio' else 'a'} {name}"  # a UUID, a UserDict
