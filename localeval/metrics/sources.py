"""Metrics of a user's own from a Python file or an installed module (`--metrics-from`), for the command line.

Loading one runs it: the classes it decorates with @localeval.register_metric (custom.py) become
metrics of that name. What went wrong while it ran (a syntax error, an import missing, a class
register_metric refused) is one line naming the file and its line, not a traceback through
importlib. A source is recorded with its file's digest, so that --resume does not add to results
scored by another version of the metric.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError, where_raised

_loading: list[str] = []  # the source being run, for evaluate() to refuse being called by it
_own_modules: set[str] = set()  # files run, and the modules beside them they imported: no Ray worker can import them


@dataclass(frozen=True)
class MetricSource:
    """One --metrics-from: as given, the file that was run, its digest and the metrics it registered."""

    given: str
    file: str
    sha256: str
    metrics: tuple[str, ...]

    def recorded(self) -> dict:
        return {"source": self.given, "file": self.file, "sha256": self.sha256, "metrics": list(self.metrics)}


def files_scoring(sources: list[MetricSource], metrics: list[str]) -> dict[str, str]:
    """{metric: its file's sha256} for the metrics of `sources` a run scores: part of what makes its scores
    these scores, wherever the file is read from."""
    return {name: source.sha256 for source in sources for name in source.metrics if name in metrics}


def load_metric_sources(given: list[str]) -> list[MetricSource]:
    """Run each source in turn; every one must register a metric, and no two the same name."""
    from . import METRICS

    sources: list[MetricSource] = []
    for source in given:
        before = dict(METRICS)
        with _running(source):
            file = _run(source)
        added = tuple(name for name, cls in METRICS.items() if before.get(name) is not cls)
        if not added:
            raise UserError(f"--metrics-from {source}: it registered no metric; decorate each of its Metric classes "
                            "with @localeval.register_metric (`localeval docs custom-metrics`)")
        if twice := next((name for name in added for earlier in sources if name in earlier.metrics), None):
            raise UserError(f"--metrics-from {source}: metric {twice!r} was registered by {_earlier(sources, twice)} "
                            "too; give each metric one name")
        sources.append(MetricSource(source, str(file.resolve()), _digest(file), added))
    return sources


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


def _inside(module, folder: Path) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and Path(file).resolve().is_relative_to(folder)


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


def _run(source: str) -> Path:
    """Run the file or import the module `source` names; the file that ran."""
    path = Path(source).expanduser()
    if path.suffix == ".py" or "/" in source or "\\" in source or path.exists():
        return _run_file(source, path)
    return _import_module(source)


def _run_file(source: str, path: Path) -> Path:
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise UserError(f"--metrics-from {source}: {what}; give a Python file (.py) or an installed module's name")
    # a name of its own, so that two files called metrics.py do not replace each other in sys.modules
    name = "localeval_metrics_from_" + re.sub(r"\W", "_", path.stem) + "_" + hashlib.sha1(
        str(path.resolve()).encode()).hexdigest()[:8]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"--metrics-from {source}: Python cannot load it as a module; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a class's module up here
    folder = path.resolve().parent
    # the modules beside it import by their names, as under `python FILE`, but after the installed ones: first, its
    # copy.py replaced the standard module in every process spawned later (bench's judges), which then failed
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    before = set(sys.modules)
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        del sys.modules[name]
        _raise_failure(source, path, error)
    _own_modules.update(new for new in set(sys.modules) - before if _inside(sys.modules[new], folder))
    _own_modules.add(name)
    return path


def _import_module(source: str) -> Path:
    if not all(part.isidentifier() for part in source.split(".")):
        raise UserError(f"--metrics-from {source}: no such file, nor a module name; give a Python file (.py) or an "
                        "installed module's name (mypackage.metrics)")
    try:
        spec = importlib.util.find_spec(source)
    except (ImportError, ValueError):  # a parent package missing
        spec = None
    if spec is None or spec.origin is None or not Path(spec.origin).is_file():
        raise UserError(f"--metrics-from {source}: no such file, nor an installed module of that name")
    try:
        importlib.import_module(source)
    except BaseException as error:
        _raise_failure(source, Path(spec.origin), error)
    return Path(spec.origin)


def _raise_failure(source: str, path: Path, error: BaseException):
    """One line for what stopped the source while it ran; a Ctrl-C stays a Ctrl-C."""
    if isinstance(error, KeyboardInterrupt):
        raise error
    if isinstance(error, UserError):  # register_metric's refusal, or evaluate()'s of being called here
        raise UserError(f"--metrics-from {source}: {error}") from error
    raise UserError(f"--metrics-from {source}: {where_raised(error, path)}") from error


def _earlier(sources: list[MetricSource], name: str) -> str:
    return next(source.given for source in sources if name in source.metrics)


def _digest(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()

