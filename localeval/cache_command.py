"""`localeval cache`: where the judge-answer cache is, what it holds, and `cache clear` to empty it."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import EXIT_OK, EnvironmentFailure, count_of, for_terminal


def cache_command(args) -> int:
    from .engine.cache import default_cache_file, set_aside_copies

    path = default_cache_file()
    chosen = "set by LOCALEVAL_CACHE_DIR" if os.environ.get("LOCALEVAL_CACHE_DIR") else "set LOCALEVAL_CACHE_DIR to choose another"
    if path.exists() and not path.is_file():  # as a run refuses it (engine/cache.py: unwritable)
        raise EnvironmentFailure(f"the judge-answer cache {path} is a folder, where its file belongs: remove it, "
                                 f"or {chosen.replace('set by', 'change')}")
    aside = set_aside_copies(path)
    if args.action == "clear":
        return _cleared(path, aside, chosen)
    if path.exists():
        _describe_cache(path, chosen)
    else:
        print(f"judge-answer cache: none yet at {path} ({chosen}); {_made_by_a_run(path)}")
    if aside:  # earlier answers too: said, where a reader of this listing would think them gone
        size = sum(copy.stat().st_size for copy in aside)
        print(f"a damaged copy of it, set aside by a run that found it damaged: {for_terminal(str(aside[0]))} "
              f"({_size(size)}); no run reads it, and cache clear deletes it")
    return EXIT_OK


def _made_by_a_run(path: Path) -> str:
    """"a run makes it", or why a run cannot (it stops at once, exit 3): a read-only folder was promised a
    cache (an HPC probe)."""
    from .paths import unwritable_because

    reason = unwritable_because(path)
    return ("a run makes it" if reason is None else
            f"a run cannot make it ({reason}), and stops at once, exit 3, unless run with --no-cache")


def _cleared(path: Path, aside: list[Path], chosen: str) -> int:
    """Every answer deleted, the damaged copies set aside included (a security review: they outlived a clear)."""
    from .engine.cache import emptied

    try:
        for copy in aside:
            copy.unlink(missing_ok=True)
    except OSError as error:
        raise EnvironmentFailure(f"the judge-answer cache's damaged copy {error.filename} cannot be deleted "
                                 f"({error.strerror}); delete it yourself") from None
    deleted = f"; its damaged copy set aside, {for_terminal(str(aside[0]))}, deleted" if aside else ""
    if not path.exists():
        print(f"judge-answer cache: none yet at {path} ({chosen}); a run makes it{deleted}")
        return EXIT_OK
    gone, shrunk = emptied(path)
    print(f"cleared the judge-answer cache {path}: {count_of(gone, 'answer')} deleted{deleted}; a run asks the judge "
          "again" + ("" if shrunk else " (a run is reading it: the file keeps its size until the next clear)"))
    return EXIT_OK


def _describe_cache(path: Path, chosen: str) -> None:
    from .engine.cache import contents

    kept = contents(path)
    print(f"judge-answer cache: {path} ({_size(path.stat().st_size)}; {chosen})")
    if kept.by_model:
        print(f"{'answers':>9}  judge")
        for model, count in kept.by_model.items():
            print(f"{count:>9,}  {for_terminal(model)}")
    else:
        print("it keeps no answers")
    if kept.older:
        print(f"{kept.older:>9,}  answers of an older localeval, which no run reads")
    if kept.by_model or kept.older:
        print("clear it: python -m localeval cache clear (it holds nothing else; a run asks the judge again)")


def _size(size: float) -> str:
    if size < 1024:
        return f"{size:.0f} bytes"
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            return f"{size:.1f} {unit}"
