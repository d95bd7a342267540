"""Metrics of a user's own from a Python file or an installed module (`--metrics-from`), for the command line.

Loading one runs it: the classes it decorates with @localeval.register_metric (custom.py) become
metrics of that name. What went wrong while it ran (a syntax error, an import missing, a class
register_metric refused) is one line naming the file and its line, not a traceback through
importlib. A source is recorded with its code's digest (the file, and the modules beside it that it
imports as it loads), so that --resume does not add to results scored by another version of the metric.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
import sysconfig
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError, where_raised
from ..results import file_digest

_loading: list[str] = []  # the source being run, for evaluate() to refuse being called by it
_folders: set[str] = set()  # the folders of the files run, on sys.path for the modules beside them
_own_modules: set[str] = set()  # files run, and the modules beside them they imported: no Ray worker can import them


@dataclass(frozen=True)
class MetricSource:
    """One --metrics-from: as given, the file that was run, its code's digest and the metrics it registered."""

    given: str
    file: str
    sha256: str
    metrics: tuple[str, ...]

    def recorded(self) -> dict:
        return {"source": self.given, "file": self.file, "sha256": self.sha256, "metrics": list(self.metrics)}


def code_of(sources: list[MetricSource], metrics: list[str]) -> dict[str, dict[str, str]]:
    """{"metrics_from": {metric: its code's sha256}} for the metrics of `sources` that a run or bench scores, part
    of what makes its scores these scores wherever the files are read from; {} where none is (recorded only
    then, so that a run.json written before reads as what it was)."""
    digests = {name: source.sha256 for source in sources for name in source.metrics if name in metrics}
    return {"metrics_from": digests} if digests else {}


def load_metric_sources(given: list[str]) -> list[MetricSource]:
    """Run each source in turn; every one must register a metric, and no two the same name. Each is recorded
    with its code's digest once all have run: a helper two files share is in both digests, whichever ran first."""
    from . import METRICS

    loaded: list[tuple[str, _Loaded, tuple[str, ...]]] = []
    for source in given:
        before = dict(METRICS)
        with _running(source):
            this = _run(source)
        if twice := next((earlier for earlier, that, _ in loaded if that.file == this.file), None):
            raise UserError(f"--metrics-from {source}: given twice (as {twice} too); give each source once")
        added = _registered_by(this, before, METRICS)
        if not added:
            raise UserError(f"--metrics-from {source}: it registered no metric; decorate each of its Metric classes "
                            "with @localeval.register_metric (`localeval docs custom-metrics`)")
        if clash := next(((name, earlier) for earlier, _, names in loaded for name in added if name in names), None):
            raise UserError(f"--metrics-from {source}: metric {clash[0]!r} was registered by {clash[1]} too; give each "
                            "metric one name")
        loaded.append((source, this, added))
    return [MetricSource(source, str(this.file), _code_digest(this.code()), added) for source, this, added in loaded]


def _registered_by(loaded: _Loaded, before: dict, metrics: dict) -> tuple[str, ...]:
    """The metrics a source registered: those its module defines, where it is an installed module (its package may
    have registered its siblings' too, or registered them before); else those new since it ran."""
    if loaded.module is not None and (own := tuple(name for name, cls in metrics.items()
                                                   if cls.__module__ == loaded.module)):
        return own
    return tuple(name for name, cls in metrics.items() if before.get(name) is not cls)


def unscored(sources: list[MetricSource], metrics: list) -> str | None:
    """A warning for the metrics loaded that the run does not score: --metrics left alone scores the built-in five."""
    chosen = {metric.name for metric in metrics}
    if left := [name for source in sources for name in source.metrics if name not in chosen]:
        return (f"--metrics-from registered {', '.join(left)}, which --metrics does not name: add "
                f"{'it' if len(left) == 1 else 'them'} to --metrics (or give --metrics all) to score "
                f"{'it' if len(left) == 1 else 'them'}")
    return None


def own_modules() -> list:
    """The modules of the files --metrics-from ran, and of the files beside them that they imported: a Ray
    worker has none of them to import, so their classes and functions go to it whole."""
    return [sys.modules[name] for name in sorted(_own_modules) if name in sys.modules]


@dataclass(frozen=True)
class _Loaded:
    file: Path  # resolved
    module: str | None = None  # an installed module's name; None for a file run

    def code(self) -> dict[str, Path]:
        """Its code's files by module name: a file run and the modules beside it the files run imported (under a
        name of no place: its module's name holds its path's hash); an installed module's package, every module of
        it imported by now."""
        if self.module is None:
            return {"": self.file, **_files({name for name in _own_modules if not name.startswith(FILE_MODULES)})}
        top = self.module.split(".")[0]
        return _files({name for name in sys.modules if name == top or name.startswith(top + ".")})


FILE_MODULES = "localeval_metrics_from_"  # the prefix of the module name a file run is given


def _files(names: set[str]) -> dict[str, Path]:
    return {name: file for name in names if name in sys.modules and (file := _file_of(sys.modules[name])) is not None}


def _code_digest(files: dict[str, Path]) -> str:
    """A file alone: its sha256, as sha256sum gives it. Several: one sha256 of every module's name and bytes, in
    name order: an edit of a helper beside a metric changes it, and where the files are does not."""
    if len(files) == 1:
        return file_digest(next(iter(files.values())))
    digest = hashlib.sha256()
    for name in sorted(files):
        code = files[name].read_bytes()
        digest.update(f"{name}\0{len(code)}\0".encode() + code)
    return digest.hexdigest()


def _file_of(module) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if file and Path(file).is_file() else None


def loading() -> str | None:
    """The --metrics-from source being run now, if any."""
    return _loading[-1] if _loading else None


@contextmanager
def _running(source: str) -> Iterator[None]:
    _loading.append(source)
    try:
        yield
    finally:
        _loading.pop()


def _run(source: str) -> _Loaded:
    """Run the file or import the module `source` names. A dotted name is a module's unless none is installed
    (a package run from its own folder is a folder there too)."""
    if not source.endswith(".py") and "/" not in source and "\\" not in source and _names_a_module(source):
        return _import_module(source)
    path = Path(source).expanduser()
    if not path.is_file():
        raise UserError(f"--metrics-from {source}: {_not_a_file(source, path)}; give a Python file (.py) or an "
                        "installed module's name")
    return _run_file(source, path)


def _not_a_file(source: str, path: Path) -> str:
    """What `path` is instead, and where a relative one was looked for (a probe's run from another folder)."""
    if path.is_dir():
        return "a folder"
    if path.with_name(path.name + ".py").is_file():
        return f"no such file; {source}.py is there"
    what = "no such file" if source.endswith(".py") or not all(part.isidentifier() for part in source.split(".")) \
        else "no such file, nor an installed module of that name"
    return what if path.is_absolute() else f"{what} (looked for in {Path.cwd()})"


def _run_file(source: str, path: Path) -> _Loaded:
    path = path.resolve()
    # a name of its own, so that two files called metrics.py do not replace each other in sys.modules
    name = FILE_MODULES + re.sub(r"\W", "_", path.stem) + "_" + hashlib.sha1(str(path).encode()).hexdigest()[:8]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"--metrics-from {source}: Python cannot load it as a module; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a class's module up here
    folder = str(path.parent)
    # the modules beside it import by their names, as under `python FILE`, but after the installed ones: first, its
    # copy.py replaced the standard module in every process spawned later (bench's judges), which then failed
    if folder not in sys.path:
        sys.path.append(folder)
    before = set(sys.modules)
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        del sys.modules[name]
        _raise_failure(source, path, error)
    _folders.add(folder)
    beside = {new for new in set(sys.modules) - before
              if (file := _file_of(sys.modules[new])) is not None and _found_through(file) in _folders}
    _own_modules.update({name, *beside})
    return _Loaded(path)


def _found_through(file: Path) -> str | None:
    """The sys.path entry a module's file was imported through: the longest that holds it (a virtual environment
    inside the metric's folder is its own entry, and its packages are installed ones, not the metric's)."""
    holding = [entry for entry in sys.path if entry and file.is_relative_to(Path(entry).resolve())]
    return max(holding, key=len, default=None)


def _names_a_module(source: str) -> bool:
    """Whether `source` is an installed module's dotted name. Finding a submodule runs its packages' code: what
    that raises is the source's failure, not "no such module"."""
    if not all(part.isidentifier() for part in source.split(".")):
        return False
    try:
        return importlib.util.find_spec(source) is not None
    except ModuleNotFoundError as missing:
        parents = {".".join(source.split(".")[:n]) for n in range(1, source.count(".") + 2)}
        if missing.name in parents:  # the package itself is not installed
            return False
        _raise_failure(source, None, missing)
    except Exception as error:  # noqa: BLE001  (a package's own code failing as it is found)
        _raise_failure(source, None, error)


def _import_module(source: str) -> _Loaded:
    try:
        module = importlib.import_module(source)
    except BaseException as error:
        _raise_failure(source, None, error)
    file = _file_of(module)
    if file is None:
        raise UserError(f"--metrics-from {source}: the module has no Python file to run (a namespace package?); give "
                        "a module of the package, or its .py file")
    return _Loaded(file, source)


def _line_of_own_code(error: BaseException) -> str:
    """'FILE, line N: ' of the user's deepest line that led to a refusal of localeval's (a decorator, a call to
    evaluate()): in neither localeval nor Python's own library and import machinery; '' if there is none."""
    ours = [Path(__file__).resolve().parents[1], *(Path(sysconfig.get_path(name)).resolve()
                                                   for name in ("stdlib", "platstdlib"))]
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if not frame.filename.startswith("<")
              and not any(Path(frame.filename).resolve().is_relative_to(folder) for folder in ours)]
    return f"{frames[-1].filename}, line {frames[-1].lineno}: " if frames else ""


def _raise_failure(source: str, path: Path | None, error: BaseException):
    """One line for what stopped the source while it ran; a Ctrl-C stays a Ctrl-C."""
    if isinstance(error, KeyboardInterrupt):
        raise error
    if isinstance(error, UserError):  # register_metric's refusal, or evaluate()'s of being called here
        raise UserError(f"--metrics-from {source}: {_line_of_own_code(error)}{error}") from error
    raise UserError(f"--metrics-from {source}: {where_raised(error, path)}") from error
