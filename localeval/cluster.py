"""Where a run on Ray scores: the cluster asked for (`--ray`, `ray=`), its address and the workers'
shares checked as soon as the command is read, before the data, torch or Ray load. Reaching the
cluster and starting its workers is scaleout.py's job."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import models
from .errors import UserError, count_of
from .options import given, option
from .progress import Progress, progress_for

if TYPE_CHECKING:
    from .pipeline import PipelineRecipe


@dataclass(frozen=True)
class Cluster:
    """Where to score: `address` is "local" (a cluster on this machine, started and stopped here) or
    a running cluster's address (e.g. "ray://head:10001", or "auto" on one of its nodes)."""

    address: str
    workers: int = 2  # at least 1 as asked (cluster_for checks it); 0 only from for_samples(0), a run that starts none
    gpus_per_worker: float = 0.0
    cpus_per_worker: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.address, str) and through_client(self.address):  # Ray takes only ray:// itself
            object.__setattr__(self, "address", "ray://" + self.address[6:])
        check_address(self.address, given("ray", self.address))
        if not (math.isfinite(self.gpus_per_worker) and math.isfinite(self.cpus_per_worker)):
            raise UserError(f"{option('gpus_per_worker')} and {option('cpus_per_worker')} take a number of GPUs and "
                            f"cores; got {self.gpus_per_worker:g} and {self.cpus_per_worker:g}")
        if self.gpus_per_worker < 0:
            raise UserError(f"{option('gpus_per_worker')} must be at least 0")
        if self.cpus_per_worker <= 0:
            raise UserError(f"{option('cpus_per_worker')} must be above 0")

    def for_samples(self, count: int) -> Cluster:
        """At most one worker per sample: a worker with none would load a judge for nothing (--workers 1000
        on 2 samples filled memory), and the run's progress, device line and summary said 1000 workers. No
        worker for no sample: a resume with every sample scored starts none (`workers` is then 0)."""
        return replace(self, workers=min(self.workers, count))

    def describe(self) -> str:
        if not self.workers:  # for_samples(0): a resume with nothing left
            return f"Ray cluster {self.address}: no worker started (no sample was left to score)"
        each = f"{self.gpus_per_worker:g} GPU" if self.gpus_per_worker else f"{self.cpus_per_worker:g} CPU"
        return f"Ray cluster {self.address}: {count_of(self.workers, 'worker')}, {each} each"

    def progress(self) -> Progress:
        """The bar of a run here: samples, as windows come back (no requests reach the driver)."""
        return progress_for(f"scoring on {count_of(self.workers, 'Ray worker')}", unit="samples")

    def check_room(self, name: str, each: float, total: float) -> None:
        """The workers' `each` of the resource `name` fit in the cluster's `total`."""
        if not each or total >= each * self.workers:
            return
        per_worker = option(f"{name.lower()}s_per_worker")
        if not total and name == "CPU":  # a head started with --num-cpus=0, before workers join
            raise UserError("the cluster has no CPU yet; add nodes with CPUs to it (ray start --address HEAD:PORT)")
        if not total:
            raise UserError(f"{given(f'{name.lower()}s_per_worker', f'{each:g}')}: the cluster has no {name}; leave "
                            f"{per_worker} out" + (" (the workers then run on CPU cores)" if name == "GPU" else ""))
        if self.workers == 1:  # none fits: fewer is no way out
            raise UserError(f"a worker of {each:g} {name} needs more than the cluster's {total:g}: ask for less "
                            f"({per_worker})")
        raise UserError(f"{count_of(self.workers, 'worker')} of {each:g} {name} each need {each * self.workers:g}; "
                        f"the cluster has {total:g}: ask for fewer ({option('workers')}) or less each ({per_worker})")

    def place(self, recipe: PipelineRecipe) -> PipelineRecipe:
        """The workers' device and dtype, decided here rather than on each node, so that the driver
        names the run (its identity holds the dtype) as the workers will score it."""
        import torch  # loaded by now, with the driver's pipeline

        from .device import dtype_name

        device = recipe.device if recipe.device != "auto" else "cuda" if self.gpus_per_worker else "cpu"
        if self.address == "local":  # this machine's GPUs are the cluster's: a machine without refused now, before
            # the models are found; whether all the workers fit, once a resume knows how many it starts (RayScorer)
            self.for_samples(1).check_room("GPU", self.gpus_per_worker, torch.cuda.device_count())
        if device.startswith("cuda") and not self.gpus_per_worker:
            raise UserError(f"{given('device', device)} on Ray needs {option('gpus_per_worker')}: Ray gives a worker "
                            "only the GPUs it asks for")
        # No judge's measured CPU choice here: a bfloat16 default needs bf16 instructions on the CPUs that
        # run it, which the driver cannot see, so CPU workers take float32 unless --dtype says otherwise.
        # the judge's batch size for the workers' device, so that the driver's engine records theirs
        limits = recipe.limits.with_batch_size(models.batch_size(recipe.judge, device))
        return replace(recipe, device=device, dtype=dtype_name(device, recipe.dtype), limits=limits)

    def sharing_cores(self, device: str) -> str | None:
        """Said where CPU workers of a local cluster need more cores than this machine has: Ray starts them all
        the same (the local cluster is given as many as they ask), and they run slower side by side."""
        needed, cores = self.workers * self.cpus_per_worker, os.cpu_count() or 1
        if self.address != "local" or device != "cpu" or needed <= cores:
            return None
        return (f"{count_of(self.workers, 'worker')} of {self.cpus_per_worker:g} CPU each need {needed:g} cores and "
                f"this machine has {cores}: they will share cores, each slower; ask for fewer ({option('workers')}) "
                f"or less each ({option('cpus_per_worker')})")


def cluster_for(address: str | None, workers: int | None = None, gpus_per_worker: float | None = None,
                cpus_per_worker: float | None = None) -> Cluster | None:
    """The cluster `run --ray` and `evaluate(ray=...)` ask for, Cluster's defaults where a value is None;
    None without an address (a local run), where a worker's option would do nothing and is refused."""
    asked = {"workers": workers, "gpus_per_worker": gpus_per_worker, "cpus_per_worker": cpus_per_worker}
    if address is None and (named := [option(name) for name, value in asked.items() if value is not None]):
        raise UserError(f"{' and '.join(named)} {'applies' if len(named) == 1 else 'apply'} only to a run on Ray; add "
                        f"{given('ray', 'local')} (or a cluster's address)")
    if workers is not None and workers < 1:  # checked here, not by Cluster: for_samples(0) is a run that starts none
        raise UserError(f"{option('workers')} must be at least 1")
    return None if address is None else Cluster(address, **{k: v for k, v in asked.items() if v is not None})


def scored_on(device: str, cluster: Cluster | None) -> str:
    """Where the samples were scored, as summary.json's "device" and evaluate()'s details say it: this process's
    device, or the Ray workers the run started."""
    from .device import describe  # torch, loaded by now with the models

    return describe(device) if cluster is None else cluster.describe()


def check_address(address: Any, named: str) -> None:
    """An address Ray can read, or a UserError naming it as `named` (the option, or RAY_ADDRESS under it)."""
    if isinstance(address, str) and _web_address(address):  # Ray answered with a fragment of advice
        raise UserError(f"{named}: that is a web address, such as the Ray dashboard's (port 8265); give the "
                        "cluster's own: HOST:6379 as 'ray start --head' prints it, or ray://HOST:10001 through Ray Client")
    if not _an_address(address):  # else Ray's own complaint would read as the machine's failure
        raise UserError(f"{named}: give local, auto, or a running cluster's HOST:PORT (ray://HOST:PORT through Ray Client)")
    if (found := host_and_port(address)) and not 0 < int(found[1]) < 65536:  # else Ray's "refused", exit 3
        usual = ("Ray Client's is 10001 unless 'ray start --head --ray-client-server-port' chose another"
                 if through_client(address) else
                 "a cluster's own is 6379 unless 'ray start --head --port' chose another")
        raise UserError(f"{named}: {found[1]} is not a port (1 to 65535); {usual}")


def _an_address(address: Any) -> bool:
    """Whether `address` names a cluster as Ray reads one: local, auto, or a host and a port."""
    if not isinstance(address, str):
        return False
    return address in ("local", "auto") or host_and_port(address) is not None


def _web_address(address: str) -> bool:
    """http://..., https://...: a URL with a scheme other than Ray Client's."""
    scheme, separator, _ = address.partition("://")
    return bool(separator) and scheme.lower() != "ray"


def through_client(address: str) -> bool:
    """ray://HOST:PORT, Ray Client's address; RAY:// too, which Ray reads as ray://."""
    return address[:6].lower() == "ray://"


def host_and_port(address: str) -> tuple[str, str] | None:
    """HOST:PORT or ray://HOST:PORT split in two (the host as written, brackets kept); None without both."""
    if through_client(address):
        address = address[6:]
    host, colon, port = address.rpartition(":")
    return (host, port) if colon and host.strip("[]") and port.isascii() and port.isdigit() else None
