"""What a batch scheduler (Slurm) gives a job: its share of the CPUs, said in the environment or by the
cores the job may run on (an HPC probe)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize(("slurm", "omp", "threads"), [("1", None, "1"), ("1", "2", "2"), ("lots", None, ""),
                                                      ("²", None, "")])
def test_a_slurm_jobs_cpus_are_torchs_threads_unless_omp_num_threads_says_otherwise(slurm, omp, threads):
    """A 1-CPU job on a cluster that does not pin a job to its cores had torch take every core of the node."""
    environment = {name: value for name, value in os.environ.items() if name != "OMP_NUM_THREADS"}
    environment.update(SLURM_CPUS_PER_TASK=slurm, **({"OMP_NUM_THREADS": omp} if omp else {}))
    probe = ("import os; from localeval.cli import main; main(['cache'])\n"  # a command that loads no torch first
             "import torch; print(os.environ.get('OMP_NUM_THREADS', ''), torch.get_num_threads())")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    omp, torch_threads = (done.stdout.splitlines()[-1].split() + [""])[:2] if threads else ("", "")
    assert omp == threads and (not threads or torch_threads == threads)  # torch read it as it loaded: its threads


def test_the_device_line_says_how_many_of_the_machines_cores_the_run_may_use(monkeypatch):
    """A job pinned to 1 core of 2 (taskset, a scheduler's cgroup) read "2 cores, torch threads 1"."""
    from localeval.bench import cpu_share
    from localeval.device import describe

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(cpu_share, "allowed_cores", lambda: 1)
    assert describe("cpu").endswith(", 2 cores, 1 of them allowed, torch threads " + str(_torch_threads()) + ")")
    monkeypatch.setattr(cpu_share, "allowed_cores", lambda: 2)
    assert ", 2 cores, torch threads " in describe("cpu")  # all of them: as before


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


@pytest.fixture
def no_file_locks(monkeypatch):
    """A file system without flock (Lustre mounted without it): the call fails with ENOSYS."""
    import errno

    fcntl = pytest.importorskip("fcntl")  # Unix's

    def flock(fd, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", flock)


def test_without_file_locks_a_folder_a_killed_run_held_is_claimed_again_and_said_to_be_unguarded(tmp_path, no_file_locks):
    """filelock's fallback left a marker that only a process on the same machine clears: a job killed and requeued
    on another node found its --out "in use by another localeval run" for good (an HPC probe)."""
    from localeval.errors import LocalevalWarning
    from localeval.results import LOCK_FILE, claim_folder

    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_FILE).write_text("4242\nnode042\n")  # what a killed run on another node left
    for _ in range(2):  # and again: nothing of the first is left in the way
        with pytest.warns(LocalevalWarning, match="is on a file system without file locks .flock., so another run or "
                                                   "bench aimed at it at once would not be refused: run one at a time"):
            with claim_folder(out):
                (out / "results.jsonl").write_text("{}\n")
    assert (out / LOCK_FILE).read_text() == "4242\nnode042\n"  # never read as a marker: it blocks nothing


def test_without_file_locks_a_model_is_prepared_and_said_to_be_unguarded(tmp_path, monkeypatch, no_file_locks):
    from localeval import models

    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    spec = models.registry()[models.default_model("judge")]
    monkeypatch.setattr(models, "_gguf_parts", lambda spec: [])

    def prepared(spec, parts):
        spec.stored_path.mkdir(parents=True)
        (spec.stored_path / "config.json").write_text("{}")

    monkeypatch.setattr(models, "_assemble_and_convert", prepared)
    leftover = tmp_path / "store" / f".{spec.name}-abcdefgh"  # perhaps another job's, preparing it now
    leftover.mkdir(parents=True)
    said = []
    assert models.prepare(spec, log=said.append) == spec.stored_path
    assert any("is on a file system without file locks (flock), so two processes preparing it at once would not "
               "wait for each other" in line for line in said)
    assert leftover.is_dir()  # unlocked, none is known to be left over: not removed (a review)


def test_without_file_locks_a_damaged_cache_is_set_aside(tmp_path, no_file_locks):
    """The cache's set-aside takes a lock too: with filelock's fallback it waited for good on a marker that a run
    killed there left."""
    from localeval.engine.cache import AnswerCache
    from localeval.requests import JudgeRequest

    damaged = tmp_path / "answers.sqlite"
    damaged.write_bytes(b"garbage\n")
    (tmp_path / "answers.sqlite.lock").write_text("4242\nnode042\n")  # what a killed run on another node left
    cache = AnswerCache(damaged)
    assert cache.get_many("judge", [JudgeRequest.build("system", "user", {"type": "object"}, 8)]) == {}
    assert len(cache.said) == 1 and damaged.with_name("answers.sqlite.damaged").read_bytes() == b"garbage\n"
