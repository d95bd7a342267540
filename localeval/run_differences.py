"""What differs between a run a folder records (its run.json) and the run asked for now, said as a reader
needs it: the innermost setting that changed, the part of a judge's identity, the code that moved. `--resume`
refuses another run with it, and so does bench's resume."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import count_of, shortened


def another_run(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """"" where a folder's recorded run is the one asked for now; else what differs ("settings.dtype: float32
    there, bfloat16 now"), preceded by the code or judge folder that changed, where one did. The metrics'
    order changes no score; where the metrics differ, what follows only from them is left out."""
    recorded, now = _metrics_in_any_order(recorded), _metrics_in_any_order(now)
    if recorded.get("metrics") != now.get("metrics"):  # named first, without what only follows from it
        recorded, now = _apart_from_metrics(recorded, now)
    shown = said_differences(recorded, now)
    return f"{_code_changed(recorded, now)}{_folder_changed(recorded, now)}{shown}" if shown else ""


def _code_changed(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """"the code of metric X changed since; " for a --metrics-from metric whose digest moved: the digests alone
    did not say what had happened (a probe)."""
    there, here = recorded.get("metrics_from"), now.get("metrics_from")
    if not (isinstance(there, dict) and isinstance(here, dict)):
        return ""
    changed = [name for name in here if name in there and there[name] != here[name]]
    return (f"the code of metric {', '.join(changed)} changed since, its --metrics-from file or a module beside it; "
            if changed else "")


def _folder_changed(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """"the judge folder X changed since; " where the same folder's weights or files did: the ids alone, cut
    short, did not say so (a probe bringing its own judge, retrained)."""
    there, here = _identity_parts(recorded.get("judge")), _identity_parts(now.get("judge"))
    folder = bool(there) and Path(there[0]).is_absolute()  # a folder is named by its absolute path
    if folder and here and there[0] == here[0] and there[1] != here[1]:
        return f"the judge folder {there[0]} changed since, its files or weights; "
    return ""


def said_differences(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """Where what a folder records differs from what is asked now, the first three differences
    ("settings.dtype: float32 there, bfloat16 now"); "" where nothing differs. Metrics first: a
    change of metrics explains the rest."""
    differing = [key for key in sorted(set(recorded) | set(now), key=lambda key: (key != "metrics", key))
                 if recorded.get(key) != now.get(key)]
    found = [found for key in differing for found in _differences(key, recorded.get(key, NOT_SET), now.get(key, NOT_SET))]
    shown = "; ".join(f"{path}: {_short(there)} there, {_short(here)} now" for path, there, here in found[:3])
    if len(found) > 3:
        shown += f"; {count_of(len(found) - 3, 'more difference')}"
    return shown


def _metrics_in_any_order(run: dict[str, Any]) -> dict[str, Any]:
    """The metrics' order changes no score: the same metrics named in another order are the same run."""
    return {**run, "metrics": sorted(run["metrics"])} if isinstance(run.get("metrics"), list) else run


def _apart_from_metrics(recorded: dict[str, Any], identity: dict[str, Any]) -> tuple[dict, dict]:
    """Two runs of different metrics, less what differs only because of their metrics: an embedder
    one of them needs and the other does not, settings for the metrics one of them lacks."""
    shared = set(recorded.get("metrics") or ()) & set(identity.get("metrics") or ())
    recorded, identity = ({**run, "settings": _settings_of(run.get("settings"), shared)} for run in (recorded, identity))
    if None in (recorded.get("embedder"), identity.get("embedder")):
        recorded, identity = ({**run, "embedder": None} for run in (recorded, identity))
    return recorded, identity


def _settings_of(settings: Any, metrics: set[str]) -> Any:
    """A run's settings ({setting: {metric: choice}} and run-wide values) for these metrics only."""
    if not isinstance(settings, dict):
        return settings
    return {name: {m: choice for m, choice in value.items() if m in metrics} if isinstance(value, dict) else value
            for name, value in settings.items()}


def _differences(path: str, there: Any, now: Any) -> Iterator[tuple[str, Any, Any]]:
    """Where two recorded values differ, down to the innermost keys of dicts (settings are nested:
    the one choice that changed is what a reader needs, not both dicts cut at the same point)."""
    if isinstance(there, dict) and isinstance(now, dict):
        for key in sorted(set(there) | set(now)):
            if there.get(key, NOT_SET) != now.get(key, NOT_SET):
                yield from _differences(f"{path}.{key}", there.get(key, NOT_SET), now.get(key, NOT_SET))
    elif path == "judge" and _identity_parts(there) and _identity_parts(now):
        # the part that changed ("judge dtype: torch.float32+prepacked there, torch.bfloat16+prepacked now"),
        # not both ids cut at 60 characters, before the part that differs (a --dtype on --resume)
        differing = [(f"judge {part}", was, is_now)
                     for part, was, is_now in zip(JUDGE_IDENTITY, _identity_parts(there), _identity_parts(now))
                     if was != is_now]
        yield from differing[:1] if differing[0][0] == "judge model" else differing  # another model differs in all
    else:
        yield path, there, now


NOT_SET = object()  # a key one run records and the other does not (with_inputs is recorded only when on)


JUDGE_IDENTITY = ("model", "weights", "dtype", "decoding")  # the parts of a judge's identity (engine/judge.py)


def dtype_advice(recorded: dict[str, Any], now: dict[str, Any], device: str) -> str:
    """How to resume, on `device`, a run whose judge (the same weights) computes otherwise here: `--dtype auto`
    chooses by the machine, and a job requeued onto another kind of node was refused with nothing but
    "torch.float32+prepacked there, torch.bfloat16+prepacked now" (an HPC probe). The --dtype it was scored in,
    where giving it here computes as it did (engine/judge.computed_as_asked); else a machine of its kind.
    "" where the judge computes as it did."""
    there, here = _identity_parts(recorded.get("judge")), _identity_parts(now.get("judge"))
    if not (there and here) or there[:2] != here[:2] or there[2] == here[2]:
        return ""
    from .device import DTYPES, INT8  # torch: loaded by now, with the judge whose run is resumed
    from .engine.judge import computed_as_asked

    name = INT8 if "+int8-weights" in there[2] else there[2].split("+")[0].removeprefix("torch.")
    if name in DTYPES and computed_as_asked(device, name, "+torch-attention" in there[2]) == there[2]:
        return f"; the run was scored in {name}: resume it with --dtype {name}"
    return (f"; the run was scored as {there[2]}, which no --dtype gives on this machine: resume it on a machine "
            "like the one it began on")


def _identity_parts(identity: Any) -> list[str] | None:
    parts = identity.split("|") if isinstance(identity, str) else []
    return parts if len(parts) == len(JUDGE_IDENTITY) else None


def _short(value: Any) -> str:
    if value is NOT_SET:
        return "not set"
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return f"[{', '.join(value)}]"  # metric names, whole: which one differs is the point
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return shortened(text, 60)
