"""What a batch scheduler (Slurm) gives a job: its share of the CPUs, said in the environment or by the
cores the job may run on (an HPC probe)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize(("slurm", "omp", "threads"), [("1", None, "1"), ("1", "2", "2"), ("lots", None, "")])
def test_a_slurm_jobs_cpus_are_torchs_threads_unless_omp_num_threads_says_otherwise(slurm, omp, threads):
    """A 1-CPU job on a cluster that does not pin a job to its cores had torch take every core of the node."""
    environment = {name: value for name, value in os.environ.items() if name != "OMP_NUM_THREADS"}
    environment.update(SLURM_CPUS_PER_TASK=slurm, **({"OMP_NUM_THREADS": omp} if omp else {}))
    probe = ("import os; from localeval.cli import main; main(['cache'])\n"  # a command that loads no torch
             "print(os.environ.get('OMP_NUM_THREADS', ''))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == threads  # torch reads it as it loads: its threads


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
