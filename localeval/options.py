"""Options as the user wrote them, so that one message serves both ways in: the command line's
`--gpus-per-worker 2` and evaluate()'s `gpus_per_worker=2`; and the checks that run, bench and
evaluate() share: counting options, and paths given empty.

A check deep in the pipeline (a device, a Ray cluster, the answer cache) cannot know which way it
was reached, and a Python caller told to fix `--workers` has to translate. The command line is the
default; evaluate() runs inside `keyword_arguments()`, and the messages raised meanwhile name its
keywords. A context variable rather than a parameter, because the same checks are reached through
the pipeline's recipe, the engine and Ray's driver and workers, none of which should carry a spelling.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar, overload

from .errors import UnknownKeyword, UserError, closest

Result = TypeVar("Result")
Parameters = ParamSpec("Parameters")

_KEYWORDS: ContextVar[bool] = ContextVar("localeval_keyword_arguments", default=False)


def option(name: str) -> str:
    """`name` (a Python identifier, such as gpus_per_worker) as the user wrote it: --gpus-per-worker
    on the command line, gpus_per_worker= in Python."""
    return f"{name}=" if _KEYWORDS.get() else "--" + name.replace("_", "-")


def given(name: str, value: Any) -> str:
    """The option and its value as the user wrote them: `--device cuda`, or `device='cuda'`."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)  # as typed, not PosixPath('...')
    return f"{name}={value!r}" if _KEYWORDS.get() else f"{option(name)} {value}"


def limit_beyond(limit: int | None, samples: int) -> str | None:
    """Said where --limit asks for more samples than the data has: all are used (a probe's --limit 100 on
    30 went unsaid, as if 100 had been scored)."""
    if limit is None or limit <= samples:
        return None
    return f"{given('limit', limit)} is more than the data holds ({samples}): all of it is used"


def switched_off(name: str) -> str:
    """How the user turns a default-on option off: --no-cache, or cache=False."""
    return f"{name}=False" if _KEYWORDS.get() else "--no-" + name.replace("_", "-")


def keywords_in_use() -> bool:
    """Whether messages now name evaluate()'s keywords (for a Ray worker, which checks again in its own process)."""
    return _KEYWORDS.get()


def check_counts(args: Any, names: tuple[str, ...]) -> None:
    """Options that count something (rows, samples, questions) are at least 1; None is left unset."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UserError(f"{option(name)} must be at least 1")


def check_paths(paths: dict[str, Any]) -> None:
    """Paths given as an empty string, as an unset variable gives them (`--labels "$LABELS"`), are refused:
    read as a path, "" is the current folder; read as true or false, it quietly drops the option.
    None is an option not given."""
    for name, value in paths.items():
        if value is None:
            continue
        if not isinstance(value, (str, os.PathLike)):
            raise UserError(f"{option(name)}: give a path; got {type(value).__name__}")
        if not os.fspath(value).strip():
            raise UserError(f"{option(name)}: it is empty")


@overload
def known_keywords(function: Callable[Parameters, Result], *, elsewhere: Mapping[str, str] | None = None
                   ) -> Callable[Parameters, Result]: ...


@overload
def known_keywords(function: None = None, *, elsewhere: Mapping[str, str] | None = None
                   ) -> Callable[[Callable[Parameters, Result]], Callable[Parameters, Result]]: ...


# typed by overloads, so that a type checker sees the decorated function's own signature (a pytest probe: mypy
# read evaluate() as taking anything and returning Never)
def known_keywords(function: Callable[Parameters, Result] | None = None, *, elsewhere: Mapping[str, str] | None = None
                   ) -> Any:
    """`function` refusing a keyword it does not take with the one it likely meant: Python's own
    TypeError names neither, and came from inside contextlib's frame (a notebook probe's `langauge=`).
    `elsewhere`: another library's keywords for the same call (ragas's `dataset=`, `llm=`), each with what
    to write here instead; a spelling match missed them or offered the wrong one."""
    if function is None:
        return functools.partial(known_keywords, elsewhere=elsewhere)
    elsewhere = elsewhere or {}
    taken = [name for name, parameter in inspect.signature(function).parameters.items()
             if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)]

    @functools.wraps(function)
    def checked(*args: Parameters.args, **kwargs: Parameters.kwargs) -> Result:
        for name in kwargs:
            if name not in taken:
                close = closest(name, taken, 0.6)
                meant = f" ({elsewhere[name]})" if name in elsewhere else f" (did you mean {close}=?)" if close else ""
                raise UnknownKeyword(f"{function.__name__}() takes no keyword {name}={meant}; its keywords: "
                                     f"{', '.join(taken)}") from None
        return function(*args, **kwargs)

    return checked


@contextmanager
def keyword_arguments(keywords: bool = True) -> Iterator[None]:
    """Name options as evaluate()'s keywords (or, given False, as the command line's flags) while the block runs."""
    token = _KEYWORDS.set(keywords)
    try:
        yield
    finally:
        _KEYWORDS.reset(token)
