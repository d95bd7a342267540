"""The same run on a Ray cluster: a pool of actors, each holding one whole pipeline, fed windows.

This is Ray's batch-inference pattern as it fits the engine: a worker (one Ray actor) builds the
pipeline that a local run builds (pipeline.py) from a picklable `PipelineRecipe`, resolving the
registered model names on its own node, loads the judge and embedder once, on its own GPU or CPU
slots, and scores the windows of samples it is given, batching within each window as a local run
does. The driver keeps everything that must happen once: it hands out windows (Ray's ActorPool, a
window to whichever worker is free), and writes each window's results as it comes back, so
progress, `--resume` and the summary behave as in a local run. Results arrive in the order
windows finish, not the dataset's order; every line carries its sample's id.

A worker that dies (its process killed, its node lost) is restarted by Ray, which loads the models
again and re-runs the window it held (`max_restarts`, `max_task_retries`). A window's results reach
results.jsonl only when the whole window is back, so a window re-run never doubles a sample. A
worker that dies more often than that ends the run with what was written kept for `--resume`.

Nothing here reaches beyond the cluster: Ray's usage statistics are switched off, a local cluster
starts without its dashboard's web server, and each worker sets the offline switches before it
loads a model. (Ray's servers still listen on every interface, and address each other by the
machine's own network address, not 127.0.0.1, which Ray 2.60 replaces with it: README says so.)
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import torch

from .cluster import Cluster, check_address, host_and_port, through_client
from .errors import EnvironmentFailure, LocalevalWarning, ScoringStopped, UserError, one_line, warn
from .evaluation import SampleResult, Timings, window_for
from .interrupts import held
from .options import given, keyword_arguments, keywords_in_use, option
from .pipeline import Log, Pipeline, PipelineRecipe
from .progress import NoProgress, Progress
from .samples import Sample

RESTARTS = 3  # times Ray restarts a dead worker (and re-runs its window) before the run gives up
WINDOWS_PER_WORKER = 2  # at least this many windows per worker, so a fast one takes a slow one's share
CONNECT_TIMEOUT_S = 10.0  # for a cluster's address to accept a connection
# How a Ray server answers its client's first call: a reply, or a refusal for want of a token (a
# cluster started with authentication); anything else (unknown call, no answer in time) is not Ray.
RAY_ANSWERS = frozenset({"OK", "UNAUTHENTICATED", "PERMISSION_DENIED"})
WAITING_SAID_AFTER_S = 60.0  # how long workers may take to load before the run says what it waits for, then doubled
HANDSHAKE_TIMEOUT_S = 5.0  # for what answers there to complete a gRPC handshake, then to answer Ray's first call
STATS_SUMMED = ("requests", "batches", "prompt_tokens", "output_tokens")  # judge counters the summary shows


def _why_restarted() -> str:
    """Why a worker's process ends, and what to do (named as the caller names options, so not a constant)."""
    smaller = ("limits=BatchLimits(batch_size=..., max_batch_tokens=...)" if keywords_in_use() else
               "--batch-size or --max-batch-tokens")
    return (f"out of memory, or killed; Ray restarts a worker up to {RESTARTS} times, and one short of memory will "
            f"likely run out again: smaller batches ({smaller}), or fewer workers on a node ({option('workers')}), "
            "need less")


class WorkerWarning(LocalevalWarning):
    """What a Ray worker warned of while scoring (its answer cache found damaged, say), said by the driver."""


class Loaded(NamedTuple):
    """What a worker says once it has loaded its models."""

    identities: dict[str, str | None]  # checked against the driver's: one run's results come from one judge
    load_seconds: dict[str, float]  # the judge's and the embedder's
    process: int  # its process id: a later window from another was scored after a restart
    restarted: bool  # Ray restarted it to get here: a process of it ended while it loaded


@dataclass
class WindowResult:
    results: list[SampleResult]
    timings: Timings  # this window's share
    cache_hits: int
    judge_stats: dict[str, int]
    said: list[str]  # what the worker warned of while scoring it: its own warnings reach no one
    worker: tuple[int, int] = (0, 0)  # which worker scored it, and in which process (a restart takes another)


class ScoringWorker:
    """One Ray actor: a pipeline loaded once, scoring one window per call."""

    def __init__(self, recipe: PipelineRecipe, keywords: bool = False, threads: int = 1, index: int = 0):
        from .offline import defaults_for_the_command_line

        self.index = index  # the same after Ray restarts it: its process id is not

        defaults_for_the_command_line()  # this process is localeval's alone, like the CLI's
        # Its cores, whatever OMP_NUM_THREADS the driver had (Ray sets it only where it is unset).
        torch.set_num_threads(threads)
        with keyword_arguments(keywords):  # what it refuses reaches the driver's caller, named as they named it
            self.pipeline = recipe.build(log=lambda message: None)  # a worker's messages would reach no one
            self.pipeline.load()

    def loaded(self) -> Loaded:
        import ray

        times = {part: getattr(getattr(self.pipeline, part), "load_seconds", 0.0) for part in ("judge", "embedder")}
        return Loaded(_identities(self.pipeline), times, os.getpid(),
                      bool(ray.get_runtime_context().was_current_actor_reconstructed))

    def score(self, samples: list[Sample]) -> WindowResult:
        pipeline = self.pipeline
        timings, hits, stats = replace(pipeline.evaluator.timings), pipeline.engine.cache_hits, _judge_stats(pipeline)
        said = len(pipeline.said_while_scoring())
        results = list(pipeline.run(samples))
        return WindowResult(results, pipeline.evaluator.timings - timings, pipeline.engine.cache_hits - hits,
                            {k: v - stats[k] for k, v in _judge_stats(pipeline).items()},
                            pipeline.said_while_scoring()[said:], (self.index, os.getpid()))


class RayScorer:
    """Scores samples on a Ray cluster with the driver's pipeline recipe; counts what the workers did
    into the driver's own (unloaded) pipeline, so a run's summary reads the same either way."""

    def __init__(self, recipe: PipelineRecipe, cluster: Cluster, driver: Pipeline, log: Log = print):
        self.recipe, self.cluster, self.driver, self.log = recipe, cluster, driver, log
        self._started_here = False
        self._workers: list[Any] = []
        self._processes: dict[int, int] = {}  # each worker's process id, as its windows last said

    def run(self, samples: list[Sample], progress: Progress = NoProgress()) -> Iterator[SampleResult]:
        if not samples:
            return
        _import_ray()  # one clear message where Ray is not installed
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayTaskError
        from ray.util import ActorPool

        done = False
        try:  # closed however it ends: a refused or failed start leaves no cluster or worker behind
            windows = _windows(samples, window_for(self.recipe.window, self.recipe.device), self.cluster.workers)
            # a worker with no window would load a judge for nothing (a resume with few samples left)
            self._start(min(self.cluster.workers, len(windows)))
            progress.expect(len(samples))
            pool = ActorPool(self._workers)
            for window in pool.map_unordered(lambda worker, chunk: worker.score.remote(chunk), windows):
                self._count(window)
                progress.advance(len(window.results))
                yield from window.results
            done = True
        except RayTaskError as error:  # what a worker raised, as Ray wraps it: its traceback and colours said first
            if isinstance(error.cause, (UserError, EnvironmentFailure)):  # a judge's NaN outputs: one line, as here
                raise error.cause from None
            raise
        except (ActorDiedError, ActorUnavailableError) as error:
            # said so whether it died its last time or its node took it, which Ray does not restart
            raise ScoringStopped(f"a Ray worker died ({_gist(error)}) and Ray did not restart it (it restarts a "
                                 f"worker up to {RESTARTS} times, where the cluster has room)") from None
        finally:
            self.close(tasks_left=not done)

    def _start(self, workers: int) -> None:
        ray = _import_ray()
        # before the cluster starts (seconds): Ray's own failure was a traceback
        _check_sendable(self.recipe.metrics, {"judge": self.recipe.judge, "embedder": self.recipe.embedder})
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray would report usage to its makers
        # the workers this run starts, not those asked for: a resume with one sample left starts one
        started = replace(self.cluster, workers=workers)
        if started.address == "local":  # this machine's GPUs are the cluster's: refused before Ray starts (seconds)
            started.check_room("GPU", started.gpus_per_worker, torch.cuda.device_count())
        self._say(started.sharing_cores(self.recipe.device), LocalevalWarning)
        if not ray.is_initialized():
            _check_reachable(self.cluster.address)
            self._started_here = True
            try:
                # Ray stopped halfway through starting a cluster left its agents running, and the process could
                # crash at exit (a probe: exit 139 in 3 of 17 interrupts 9-10 s into a run on 2 cores)
                with held(), _sigterm_kept():
                    ray.init(**_init_options(started))
            except SystemExit as stop:  # ray.init's own SIGTERM handler, set as it starts, exits
                if stop.code != signal.SIGTERM:
                    raise
                raise KeyboardInterrupt from None  # as Ctrl-C: the run says what it kept, and shuts Ray down
            except (ConnectionError, RuntimeError, ValueError) as error:
                if "ray[client]" in str(error):  # a Ray installed without its client, which ray:// needs
                    raise UserError(f"{given('ray', self.cluster.address)}: a ray:// address needs Ray Client: "
                                    "pip install 'localeval[ray]' (it brings ray[client])") from None
                if "Could not find any running Ray instance" in str(error):  # Ray's advice names its own flags
                    raise EnvironmentFailure(
                        f"{given('ray', self.cluster.address)}: no running Ray cluster found (auto finds one "
                        "started on this node with 'ray start', or RAY_ADDRESS's); give its address as HOST:PORT, or "
                        f"use {given('ray', 'local')}") from None
                raise EnvironmentFailure(f"{given('ray', self.cluster.address)}: cannot connect ({_gist(error)})") from None
        self._check_resources(ray, started)
        actor = ray.remote(num_cpus=self.cluster.cpus_per_worker, num_gpus=self.cluster.gpus_per_worker,
                           max_restarts=RESTARTS, max_task_retries=RESTARTS)(ScoringWorker)
        threads = max(1, math.floor(self.cluster.cpus_per_worker))
        self._workers = [actor.remote(self.recipe, keywords_in_use(), threads, index) for index in range(workers)]
        self._check_loaded(ray)

    def _check_resources(self, ray, started: Cluster) -> None:
        total = ray.cluster_resources()
        for name, each in (("CPU", started.cpus_per_worker), ("GPU", started.gpus_per_worker)):
            started.check_room(name, each, total.get(name, 0))

    def _check_loaded(self, ray) -> None:
        """Every worker loaded the models the driver expects: one run's results come from one judge. The
        driver's load times become the slowest worker's (they load side by side)."""
        from ray.exceptions import RayActorError

        try:
            found = ray.get(self._waited_for(ray, [worker.loaded.remote() for worker in self._workers]))
        except RayActorError as error:
            raise EnvironmentFailure(f"a Ray worker could not load the models: {_cause(error)}") from None
        expected = _identities(self.driver)
        self._processes = {index: worker.process for index, worker in enumerate(found)}
        for worker in found:
            if worker.identities != expected:
                raise UserError(f"a Ray worker loaded other models than this run names ({worker.identities} there, "
                                f"{expected} here): every node needs the same model store contents")
        for index, worker in enumerate(found):
            if worker.restarted:  # its windows cannot tell: they all come from the process that loaded
                self._say(f"Ray worker {index + 1} was restarted while it loaded the models (its first process ended: "
                          f"{_why_restarted()})", WorkerWarning)
        for part in ("judge", "embedder"):
            model = getattr(self.driver, part)
            if hasattr(model, "load_seconds"):  # a real model (None has no such attribute, nor a stand-in)
                model.load_seconds = max(worker.load_seconds[part] for worker in found)

    def _waited_for(self, ray, loading: list[Any]) -> list[Any]:
        """`loading` once every worker has loaded its models, saying what it waits for while it waits: a worker
        the cluster has no free CPUs or GPUs for stays pending, and the run waited without a word, for ever (a
        probe: a shared cluster busy with another job)."""
        waited, said_after = 0.0, WAITING_SAID_AFTER_S
        while True:
            ready, pending = ray.wait(loading, num_returns=len(loading), timeout=said_after - waited)
            if not pending:
                return loading
            waited = said_after
            free, gpus = ray.available_resources(), self.cluster.gpus_per_worker
            asks = _units(self.cluster.cpus_per_worker, "CPU") + (f" and {_units(gpus, 'GPU')}" if gpus else "")
            has = _units(free.get("CPU", 0), "CPU") + (f" and {_units(free.get('GPU', 0), 'GPU')}" if gpus else "")
            self.log(f"{len(ready)} of {len(loading)} Ray workers ready after {waited:.0f} s; each asks for {asks} "
                     f"and the cluster has {has} free: the rest load their models or wait for others' work to end "
                     "(`ray status` shows what holds them); Ctrl-C stops the run")
            said_after = waited * 2  # 1 min, 2 min, 4 min, ...

    def _count(self, window: WindowResult) -> None:
        self.driver.evaluator.timings += window.timings
        self.driver.engine.cache_hits += window.cache_hits
        stats = getattr(self.driver.judge, "stats", None)
        for name, value in window.judge_stats.items() if stats is not None else ():
            setattr(stats, name, getattr(stats, name) + value)
        for message in [*window.said, self._restart(window)]:
            self._say(message, WorkerWarning)

    def _say(self, message: str | None, category: type[LocalevalWarning]) -> None:
        """A warning of the scoring, shown and kept for summary.json as one given in this process would be;
        once, though workers sharing a cache each find it so."""
        if message and message not in self.driver.heard:
            warn(category(message))
            self.driver.heard.append(message)

    def _restart(self, window: WindowResult) -> str | None:
        """Said where a worker's window came from another process than its last: Ray restarted it (its process
        ended: out of memory, or killed) and scored again what it held, which went unsaid (a probe)."""
        index, process = window.worker
        before = self._processes.get(index, process)
        if before == process:
            return None
        self._processes[index] = process
        return (f"Ray worker {index + 1} was restarted (its process {before} ended: {_why_restarted()}): the window it "
                "held was scored again, none twice")

    def close(self, tasks_left: bool = False) -> None:
        """The workers ended, and the connection if this run made it. `tasks_left`: stopped with windows
        still being scored (Ctrl-C, a failure), whose end Ray's core worker would log on stderr."""
        if not (self._workers or self._started_here):
            return
        ray = _import_ray()
        if not self._started_here:  # the caller's connection lives on: its workers are ended here
            for worker in self._workers:
                ray.kill(worker)
        # else they end with the connection (an actor dies with its job): killed one by one first, each
        # task they held said, in Ray's words on stdout, that it would be retried
        self._workers = []
        if self._started_here:
            self._started_here = False
            try:
                # whole: a second Ctrl-C or SIGTERM inside it left Ray's agents running and ended the process
                # in silence, exit 1 (a probe); it comes after, where the run is not stopping already, and a
                # third gets out at once, should the shutdown hang (Ray's does after workers ran out of memory)
                # ray.shutdown left SIGTERM to the system's default: exit 143, no summary
                with held(give_way_after=1), _sigterm_kept(), _native_stderr_muted() if tasks_left else nullcontext():
                    ray.shutdown()
            except KeyboardInterrupt:
                if not tasks_left:
                    raise


@contextmanager
def _native_stderr_muted() -> Iterator[None]:
    """The process's stderr (file descriptor 2) sent nowhere while Ray shuts down. Its core worker, C++ in
    this process, logs there each task a Ctrl-C left running ("task_manager.cc: Failed to push error to
    driver for task 32d9..."), between the progress line and the run's own word of what it kept."""
    try:
        sys.stderr.flush()
        kept = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no stderr, or a closed one: nothing to mute
        kept = None
    if kept is None:
        yield
        return
    try:
        with open(os.devnull, "wb") as nowhere:
            os.dup2(nowhere.fileno(), 2)
        yield
    finally:
        os.dup2(kept, 2)
        os.close(kept)


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """A SIGTERM handler the process chose (or SIG_IGN) stays after ray.init, which sets its own (one
    that aborted the process in the middle of a run), and after ray.shutdown, which leaves the system's
    default underneath Python's handler (its core worker's teardown resets it), so that a SIGTERM while
    the summary is written killed the process. Python's default is left to Ray: its handler then shuts
    the cluster down, where the default would leave it running."""
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if previous not in (None, signal.SIG_DFL) and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UserError(f"{option('ray')} needs Ray, an optional part of localeval: pip install 'localeval[ray]'") from None
    return ray


def _check_reachable(address: str) -> None:
    """Fail fast where no cluster listens: Ray itself retries such an address for minutes on end.
    One TCP connection to the host and port, with a timeout, finds out first. Addresses without a
    port ("local", "auto") are left to Ray, which needs no connection or fails at once for them, unless
    RAY_ADDRESS or a cluster running on this node names the cluster that "auto" means."""
    named, found_on_this_node = given("ray", address), False
    if address == "auto" and os.environ.get("RAY_ADDRESS"):
        address = os.environ["RAY_ADDRESS"]
        named += f" (RAY_ADDRESS={address})"
        check_address(address, named)
    elif address == "auto" and (running := _running_on_this_node()):
        address, found_on_this_node = running, True
        named += f" (the cluster running on this node, {address})"
    found = host_and_port(address)
    if found is None or (":" in found[0] and not found[0].startswith("[")):  # no port, or bare IPv6
        return
    host, port = found
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as error:
        raise EnvironmentFailure(
            f"{named}: no Ray cluster answers there ({error.strerror or error}). Start one with "
            f"'ray start --head' and pass the address it prints, or use {given('ray', 'local')}") from None
    if not _tls():  # Ray would retry anything else without end, printing gcs_client lines, deaf to Ctrl-C
        _check_speaks_ray(named, f"{host}:{port}", through_client(address), found_on_this_node)


def _running_on_this_node() -> str | None:
    """HOST:PORT of the cluster Ray's "auto" finds on this node ('ray start' records it), or None: ray.init
    then says it found none."""
    from ray._private.services import canonicalize_bootstrap_address

    try:
        return canonicalize_bootstrap_address("auto")
    except (ConnectionError, ValueError):
        return None


def _tls() -> bool:
    """A cluster that speaks TLS (RAY_USE_TLS, with its certificates in RAY_TLS_*): left to Ray's own client."""
    return os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")


def _check_speaks_ray(named: str, target: str, client: bool, found_on_this_node: bool = False) -> None:
    """What listens at HOST:PORT answers the first call Ray's own client makes there: the GCS's cluster id
    (HOST:6379), or Ray Client's ping (ray://HOST:10001). A gRPC handshake alone is not enough: any gRPC
    service gives one, and Ray then retried it without end (a probe). Never through an HTTP proxy the
    environment names, as Ray's own channels do not go through one. grpc comes with Ray."""
    import grpc

    channel = grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)])
    try:
        try:
            grpc.channel_ready_future(channel).result(timeout=HANDSHAKE_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            raise EnvironmentFailure(
                f"{named}: something answers there, but not a Ray cluster (no gRPC handshake in "
                f"{HANDSHAKE_TIMEOUT_S:g} s, as a cluster's port 6379 and Ray Client's 10001 give; the dashboard's 8265 "
                "is a web server). Pass the address 'ray start --head' prints") from None
        token = _token_sent(named, found_on_this_node)
        answer = _first_call(channel, client, token)
        if answer.name == "UNAUTHENTICATED":
            # Ray's driver retries a refusal for half a minute, a log line a second, then says only "cannot
            # connect" (a probe: a cluster from 'ray start --head', which turned authentication on)
            raise EnvironmentFailure(
                f"{named}: the cluster refused the token this process sends (RAY_AUTH_TOKEN, else the file "
                "RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token): give it the cluster's own, from its head node" if token else
                f"{named}: the cluster asks for a token (it was started with Ray's token authentication): run with "
                "RAY_AUTH_MODE=token set, and the cluster's token in RAY_AUTH_TOKEN or ~/.ray/auth_token")
        if answer.name in RAY_ANSWERS:
            return
        host = target.rpartition(":")[0]
        if answer is grpc.StatusCode.UNIMPLEMENTED and _first_call(channel, not client).name in RAY_ANSWERS:
            # the other of Ray's two ports, named the other way: the user's slip
            raise UserError(f"{named}: that is a cluster's own port, which takes no ray://; give {target} (from "
                            "one of the cluster's nodes), or Ray Client's port as ray://HOST:10001" if client else
                            f"{named}: that is Ray Client's port; give it as ray://{target}, or the cluster's own "
                            f"port as {host}:6379 from one of its nodes")
        raise EnvironmentFailure(
            f"{named}: a gRPC service answers there, but not as a Ray cluster's {'Ray Client' if client else 'GCS'} "
            f"does (its first call: {answer.name.lower().replace('_', ' ')}). Pass the address 'ray start --head' prints")
    finally:
        channel.close()


def _token_sent(named: str, found_on_this_node: bool) -> tuple[tuple[str, str], ...]:
    """The token Ray's driver will send, as gRPC metadata, found by Ray's own loader where Ray looks
    (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token): with RAY_AUTH_MODE=token, or, for the cluster
    "auto" found on this node, with RAY_AUTH_MODE unset and a token there (Ray then turns token mode on)."""
    from ray._raylet import AuthenticationTokenLoader

    mode = os.environ.get("RAY_AUTH_MODE")
    if not (mode is None and found_on_this_node or (mode or "").lower() == "token"):
        return ()
    loader = AuthenticationTokenLoader.instance()
    loader.reset_cache()  # read now, as this run's ray.init will
    token = tuple(loader.get_token_for_http_header(ignore_auth_mode=True).items())
    if not token and mode is not None:
        # else Ray's AuthenticationError, a traceback
        raise EnvironmentFailure(f"{named}: RAY_AUTH_MODE=token is set but no token was found: put the cluster's "
                                 "token in RAY_AUTH_TOKEN or ~/.ray/auth_token (on its head node, ~/.ray/auth_token)")
    return token


def _first_call(channel: Any, client: bool, token: tuple[tuple[str, str], ...] = ()) -> Any:
    """How the server behind `channel` answers the first call Ray's own client makes: Ray Client's ping
    (`client`), or the GCS's cluster id, with the `token` it would send; a grpc.StatusCode."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc, ray_client_pb2, ray_client_pb2_grpc

    try:
        if client:
            ping = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
            ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(ping, timeout=HANDSHAKE_TIMEOUT_S,
                                                                      metadata=token)
        else:
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(), timeout=HANDSHAKE_TIMEOUT_S, metadata=token)
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def _init_options(cluster: Cluster) -> dict[str, Any]:
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if cluster.address != "local":
        return {"address": cluster.address, **quiet}
    needed = cluster.workers * cluster.cpus_per_worker
    # address "local": a new cluster even where RAY_ADDRESS names another (as on a cluster's nodes)
    return {"address": "local", "num_cpus": max(os.cpu_count() or 1, math.ceil(needed)), **quiet}


def _units(count: float, unit: str) -> str:
    """0.5 CPUs, 1 CPU, 2 GPUs."""
    return f"{count:g} {unit}" + ("" if count == 1 else "s")


def _check_sendable(metrics, models: dict[str, Any]) -> None:
    """Every metric, and a judge or embedder object of one's own, can go to the workers: each is sent whole
    (_send_whole), with what its code refers to, and a lock or a loaded model among that cannot be copied to
    another process (a custom-judge probe's unpicklable judge was a traceback of Ray's)."""
    from ray import cloudpickle

    from .metrics import BUILT_IN

    objects = {role: model for role, model in models.items() if model is not None and not isinstance(model, str)}
    # localeval's own classes (a ScriptedJudge, a LookupEmbedder) go by name: every worker has localeval
    theirs = [model for model in objects.values() if type(model).__module__.partition(".")[0] != "localeval"]
    _send_whole([*(metric for metric in metrics if metric.name not in BUILT_IN), *theirs])
    for role, model in objects.items():
        try:
            cloudpickle.dumps(model)
        except Exception as error:  # noqa: BLE001  (as for a metric, below)
            raise UserError(f"{role}=: {type(model).__name__} cannot be sent to the Ray workers "
                            f"({one_line(str(error))}): it holds an object no other process can receive (a lock, a "
                            "loaded model, a connection); load what it needs inside it on first use, or give a "
                            "registered name or a model folder") from None
    for metric in metrics:
        try:
            cloudpickle.dumps(metric)
        except Exception as error:  # noqa: BLE001  (pickling fails as TypeError, PicklingError, or the object's own)
            raise UserError(f"metric {metric.name!r} cannot be sent to the Ray workers ({one_line(str(error))}): "
                            "its code refers to an object no other process can receive (a lock, a loaded model, a "
                            "connection); make it inside steps(), or once per process on first use") from None


def _send_whole(objects) -> None:
    """A user's own metric, judge or embedder goes to the workers as its class, not as the name of a module to
    import there: a file run by --metrics-from (and the modules beside it that it imports), or a script's module,
    is on no worker's path (cloudpickle sends a __main__ class whole by itself). One of an installed package goes
    by name, as the package must be installed on the workers."""
    from ray import cloudpickle

    from .metrics.sources import own_modules

    names = {type(one).__module__ for one in objects} - {"__main__"}
    scripts = [sys.modules[name] for name in names if name in sys.modules and not _installed(sys.modules[name])]
    for module in {*scripts, *own_modules()}:
        cloudpickle.register_pickle_by_value(module)


def _installed(module) -> bool:
    """Whether a module comes from a site-packages folder (installed by pip, editable installs aside)."""
    import site
    import sysconfig

    file = getattr(module, "__file__", None)
    folders = {*site.getsitepackages(), site.getusersitepackages(), *(sysconfig.get_paths()[key]
                                                                     for key in ("purelib", "platlib"))}
    return bool(file) and any(os.path.abspath(file).startswith(os.path.abspath(folder) + os.sep) for folder in folders)


def _windows(samples: list[Sample], window: int, workers: int) -> list[list[Sample]]:
    """At most `window` samples each, and at least WINDOWS_PER_WORKER windows per worker when there are
    enough samples: a whole dataset in one window would keep every other worker idle."""
    size = max(1, min(window, math.ceil(len(samples) / (workers * WINDOWS_PER_WORKER))))
    return [samples[start:start + size] for start in range(0, len(samples), size)]


def _identities(pipeline: Pipeline) -> dict[str, str | None]:
    return {"judge": pipeline.judge.identity, "embedder": None if pipeline.embedder is None else pipeline.embedder.identity}


def _judge_stats(pipeline: Pipeline) -> dict[str, int]:
    stats = getattr(pipeline.judge, "stats", None)
    return {name: getattr(stats, name) for name in STATS_SUMMED} if stats is not None else {}


def _cause(error: Exception) -> str:
    """The worker's own error, not Ray's wrapping of it."""
    cause = getattr(error, "cause", None) or getattr(error, "error_msg", None) or error
    return _gist(cause)


def _gist(error: object) -> str:
    """The line that says what happened: Ray puts the worker's traceback first and its error last."""
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
