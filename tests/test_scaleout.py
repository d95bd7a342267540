"""`run --ray`: the same run on a local Ray cluster, with the embedded models, offline, surviving a
killed worker. Skipped where Ray is not installed (it is an extra: pip install 'localeval[ray]';
CI installs it)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'localeval[ray]'); CI installs it")

from localeval import evaluate  # noqa: E402
from localeval.cli import main  # noqa: E402
from localeval.engine.scripted import LookupEmbedder, ScriptedJudge  # noqa: E402
from localeval.errors import UserError  # noqa: E402
from localeval.cluster import Cluster  # noqa: E402
from localeval.scaleout import _windows  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT.parent / "shared" / "data" / "dev.jsonl"
EXAMPLES = ROOT / "examples" / "samples.jsonl"
METRICS = ["context_relevance", "context_recall", "response_relevancy",
           "answer_supported_precision", "context_supported_precision"]


@pytest.fixture(scope="module")
def six_samples(tmp_path_factory) -> Path:
    """Six dev samples where the dev set is at hand, else six of the examples (English and Chinese)."""
    source = DEV if DEV.exists() else EXAMPLES
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()][:6]
    path = tmp_path_factory.mktemp("data") / "six.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def single_process(six_samples, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("local")
    assert main(["run", str(six_samples), "--out", str(out), "--no-cache", "--quiet"]) == 0
    return _rows(out)


def _rows(out: Path) -> dict:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({row["id"] for row in rows}), "a sample was written twice"
    return {row["id"]: row for row in rows}


def _ray_run(data: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The command line in a process of its own, as a user runs it; where this machine allows it,
    in a network namespace that has nothing but loopback, so any connection beyond it would fail."""
    command = [sys.executable, "-m", "localeval", "run", str(data), "--out", str(out), "--ray", "local",
               "--workers", "2", "--no-cache", "--quiet", *extra]
    if _can_isolate_network():
        command = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, **(env or {})})


def _can_isolate_network() -> bool:
    if not (shutil.which("unshare") and shutil.which("ip")):
        return False
    return subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"], capture_output=True).returncode == 0


def _assert_same_scores(ray_rows: dict, local_rows: dict) -> None:
    """Float32 on both sides: the same verdicts, so the same scores. Verdict probabilities may differ
    in the sixth digit, since a worker's one thread sums in another order than two threads do."""
    assert sorted(ray_rows) == sorted(local_rows)
    for sample_id, row in local_rows.items():
        for metric in METRICS:
            assert ray_rows[sample_id][metric] == pytest.approx(row[metric], abs=1e-5), (sample_id, metric)
            assert _verdicts(ray_rows[sample_id], metric) == _verdicts(row, metric), (sample_id, metric)


def _verdicts(row: dict, metric: str) -> list:
    evidence = row["evidence"][metric]
    return [item.get("verdict", item.get("noncommittal")) for item in evidence.get("sentences", evidence.get("questions", []))]


def test_two_ray_workers_give_the_scores_of_one_process_offline_and_resume(six_samples, single_process, tmp_path):
    # RAY_ADDRESS, set on a cluster's nodes, does not stop --ray local from starting a cluster of its own
    for options in (["--limit", "2"], ["--resume"]):  # a run cut short, then resumed
        run = _ray_run(six_samples, tmp_path, *options, env={"RAY_ADDRESS": "127.0.0.1:1"})
        _, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr
    _assert_same_scores(_rows(tmp_path), single_process)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert (summary["samples"], summary["scored_this_run"]) == (6, 4)
    assert summary["device"] == "Ray cluster local: 2 workers, 1 CPU each"
    assert summary["judge"]["requests"] > 0 and summary["timings"]["judge_load_seconds"] > 0
    assert summary["timings"]["workers"] == 2  # whose judge_seconds it adds up


def test_a_worker_killed_mid_run_loses_nothing_and_doubles_nothing(six_samples, single_process, tmp_path):
    run = _ray_run(six_samples, tmp_path, "--json")
    victim = _a_worker_scoring(run)
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr
    assert not _alive(victim)
    _assert_same_scores(_rows(tmp_path), single_process)  # every sample once, scored as without the kill
    # --json's stdout is the summary alone: Ray's note of the lost worker (printed to stdout) goes to stderr
    summary = json.loads(stdout)
    assert summary["samples"] == 6 and "died" in stderr
    restarted = [warning for warning in summary["warnings"] if "was restarted" in warning]  # said and kept
    assert len(restarted) == 1 and f"its process {victim} ended" in restarted[0] and restarted[0] in stderr


def _a_worker_scoring(run: subprocess.Popen, timeout: float = 300) -> int:
    """A Ray worker's process id while it scores a window (Ray titles it after the method it runs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and run.poll() is None:
        scoring = [pid for pid, title in _process_titles() if title.startswith("ray::ScoringWorker.score")]
        if scoring:
            return scoring[0]
        time.sleep(0.2)
    run.kill()
    pytest.fail(f"no Ray worker was seen scoring: {run.communicate()[1][-2000:]}")


def _process_titles():
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                yield int(entry.name), (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # gone meanwhile
                continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- the Python API and what a user gets wrong, with scripted stand-ins (quick) -------------------

def errors_in(stderr: str) -> list[str]:
    """The lines of a run's stderr that are not its warnings."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("localeval: warning:")]


def every_verdict_one(request) -> dict:
    """Every verdict 1 and committal questions (the keys are read off the schema): answers that do not
    depend on what else is in a batch."""
    schema = json.loads(request.schema)["properties"]
    if "questions" in schema:
        count = len(schema["questions"]["prefixItems"])
        return {"questions": [{"question": f"question {i}?", "noncommittal": 0} for i in range(1, count + 1)]}
    return {"verdicts": [{key: spec.get("const", 1 if "enum" in spec else "because")
                          for key, spec in item["properties"].items()} for item in schema["verdicts"]["prefixItems"]]}


def test_evaluate_takes_the_same_options_and_gives_the_same_results():
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests/
    samples = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    judge, embedder = ScriptedJudge(every_verdict_one), LookupEmbedder({}, default=[1.0, 0.0])
    local = evaluate(samples, METRICS, judge, embedder, cache=False, device="cpu")
    spread = evaluate(samples, METRICS, judge, embedder, cache=False, device="cpu", ray="local", workers=2)
    assert len(spread.rows()) == len(samples) > 4
    assert spread.rows() == local.rows()  # in the samples' order, though windows finish in any order
    # where each scored, as summary.json says it
    assert local.details["device"].startswith("CPU (") and "workers" not in local.details["timings"]
    assert (spread.details["device"], spread.details["timings"]["workers"]) == (
        "Ray cluster local: 2 workers, 1 CPU each", 2)


def test_a_cache_a_worker_sets_aside_is_said_and_kept_by_the_driver(tmp_path):
    """A worker's warning reached no one (Ray does not log to the driver): a damaged answer cache was set aside
    unsaid, and summary.json kept no word of it."""
    import ray.cloudpickle

    from localeval.engine.cache import AnswerCache
    from localeval.scaleout import WorkerWarning

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    file = tmp_path / "answers.sqlite"
    file.write_bytes(b"garbage\n")
    samples = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()][:2]
    with pytest.warns(WorkerWarning, match="was damaged") as shown:
        result = evaluate(samples, ["context_recall"], ScriptedJudge(every_verdict_one), cache=AnswerCache(file),
                          device="cpu", ray="local", workers=1)
    said = str(shown[0].message)
    assert said.startswith(f"the judge-answer cache {file} was damaged (file is not a database): set aside")
    assert f"warning: {said}" in result.details["warnings"]
    assert file.with_name("answers.sqlite.damaged").read_bytes() == b"garbage\n"


def test_the_same_warning_from_workers_sharing_a_cache_is_said_and_kept_once():
    """Each worker holds its own AnswerCache of one file: each found it full, and summary.json kept N copies (a
    review)."""
    from types import SimpleNamespace

    from localeval.evaluation import Timings
    from localeval.pipeline import PipelineRecipe
    from localeval.scaleout import RayScorer, WindowResult, WorkerWarning

    driver = SimpleNamespace(evaluator=SimpleNamespace(timings=Timings()), engine=SimpleNamespace(cache_hits=0),
                             judge=None, heard=[])
    scorer = RayScorer(PipelineRecipe(metrics=[]), Cluster("local"), driver)
    with pytest.warns(WorkerWarning) as shown:
        for said in (["the cache is full"], ["the cache is full"], ["another"]):
            scorer._count(WindowResult([], Timings(), 0, {}, said))
    assert [str(warning.message) for warning in shown] == driver.heard == ["the cache is full", "another"]


def test_a_worker_restarted_while_it_loaded_is_said_and_kept(monkeypatch):
    """A worker whose process ended while it loaded (out of memory) came back as a new process before its first
    window, which its windows could not tell: the run said nothing (a review)."""
    from types import SimpleNamespace

    import ray

    from localeval.pipeline import PipelineRecipe
    from localeval.scaleout import RayScorer, ScoringWorker, WorkerWarning

    def worker(restarted: bool):  # a worker's own loaded(), Ray's runtime context saying whether it was restarted
        monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(was_current_actor_reconstructed=restarted))
        itself = object.__new__(ScoringWorker)
        itself.pipeline = SimpleNamespace(judge=SimpleNamespace(identity="j", load_seconds=2.0), embedder=None)
        return SimpleNamespace(loaded=SimpleNamespace(remote=lambda found=itself.loaded(): found))

    driver = SimpleNamespace(judge=SimpleNamespace(identity="j", load_seconds=0.0), embedder=None, heard=[])
    scorer = RayScorer(PipelineRecipe(metrics=[]), Cluster("local"), driver)
    scorer._workers = [worker(False), worker(True)]
    monkeypatch.setattr(RayScorer, "_waited_for", lambda self, ray, loading: loading)
    with pytest.warns(WorkerWarning) as shown:
        scorer._check_loaded(SimpleNamespace(get=lambda loading: loading))
    assert [str(warning.message) for warning in shown] == driver.heard == [
        "Ray worker 2 was restarted while it loaded the models (its first process ended: out of memory, or killed; "
        "Ray restarts a worker up to 3 times, and one short of memory will likely run out again: smaller batches "
        "(--batch-size or --max-batch-tokens), or fewer workers on a node (--workers), need less)"]
    assert scorer._processes == {0: os.getpid(), 1: os.getpid()}  # its later windows compare with this process
    assert driver.judge.load_seconds == 2.0


def test_windows_give_every_worker_work_and_keep_the_dataset_whole():
    samples = list(range(13))
    windows = _windows(samples, window=64, workers=2)
    assert [x for window in windows for x in window] == samples
    assert len(windows) >= 4 and max(map(len, windows)) == 4  # at least two windows per worker
    assert max(map(len, _windows(list(range(1000)), window=64, workers=2))) == 64  # never above --window


def test_no_more_workers_start_than_there_are_windows(monkeypatch):
    """Each worker loads a judge: --workers 1000 on 2 samples started 160 of them and filled the memory."""
    from localeval.pipeline import PipelineRecipe
    from localeval.scaleout import RayScorer

    started = []

    def start(scorer, workers):
        started.append(workers)
        raise RuntimeError("recorded")  # no cluster: what mattered is how many it would start

    monkeypatch.setattr(RayScorer, "_start", start)
    scorer = RayScorer(PipelineRecipe(metrics=[]), Cluster("local", workers=1000), driver=None)
    with pytest.raises(RuntimeError, match="recorded"):
        list(scorer.run(["a", "b"]))
    assert started == [2]


def test_workers_are_placed_where_their_dtype_is_known_on_the_driver():
    from localeval.engine.limits import BatchLimits
    from localeval.pipeline import PipelineRecipe

    recipe = PipelineRecipe(metrics=[])
    assert (Cluster("local").place(recipe).device, Cluster("local").place(recipe).dtype) == ("cpu", "float32")
    on_gpus = Cluster("auto", gpus_per_worker=1).place(recipe)  # a running cluster's GPUs: Ray counts them
    assert (on_gpus.device, on_gpus.dtype) == ("cuda", "bfloat16")
    assert Cluster("local").place(PipelineRecipe(metrics=[], dtype="bfloat16")).dtype == "bfloat16"
    # a judge's bfloat16 CPU default needs the workers' bf16 instructions, which the driver cannot see
    qwen = PipelineRecipe(metrics=[], judge="qwen2.5-coder-1.5b-instruct")
    assert Cluster("local").place(qwen).dtype == "float32"
    # the judge's batch size for the workers' device, decided here, so that the driver records theirs
    assert Cluster("local").place(recipe).limits.batch_size == 16  # SmolLM2 on CPU workers
    assert on_gpus.limits.batch_size == Cluster("local").place(qwen).limits.batch_size == 32
    given = PipelineRecipe(metrics=[], limits=BatchLimits(batch_size=4))
    assert Cluster("auto", gpus_per_worker=1).place(given).limits.batch_size == 4


@pytest.mark.parametrize("options, message", [
    (["--workers", "0"], "--workers must be at least 1"),
    (["--gpus-per-worker", "1"], "--gpus-per-worker 1: the cluster has no GPU; leave --gpus-per-worker out (the "
                                 "workers then run on CPU cores)"),
    (["--gpus-per-worker", "nan"], "--gpus-per-worker and --cpus-per-worker take a number of GPUs and cores; got nan"),
    (["--cpus-per-worker", "inf"], "got 0 and inf"),
    (["--cpus-per-worker", "-1"], "localeval: error: --cpus-per-worker must be above 0\n"),  # it named both options
    (["--device", "cuda"], "needs --gpus-per-worker"),
    (["--ray", "bogus"], "--ray bogus: give local, auto, or a running cluster's HOST:PORT"),  # was exit 3
])
def test_a_cluster_that_cannot_hold_the_workers_is_one_clear_error(options, message, six_samples, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", str(six_samples), "--out", str(out), "--ray", "local", "--quiet", *options])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()  # refused before the folder is made (GPUs: before Ray starts)


def test_a_cluster_too_small_names_both_ways_to_fit():
    with pytest.raises(UserError) as refused:
        Cluster("auto", workers=3, gpus_per_worker=1).check_room("GPU", 1, 2)
    assert str(refused.value) == ("3 workers of 1 GPU each need 3; the cluster has 2: ask for fewer (--workers) or "
                                  "less each (--gpus-per-worker)")
    with pytest.raises(UserError, match="^the cluster has no CPU yet; add nodes with CPUs"):  # a head of --num-cpus=0
        Cluster("auto").check_room("CPU", 1, 0)


def test_a_run_on_fewer_samples_than_workers_says_and_records_the_workers_it_starts(monkeypatch, six_samples,
                                                                                       tmp_path):
    """--workers 8 on 3 samples starts 3: the progress bar, the device line and summary.json's workers said 8 (a
    probe). A resume starts as many as there are samples left, none for none."""
    from localeval.evaluation import SampleResult
    from localeval.metrics import MetricResult
    from localeval.scaleout import RayScorer

    seen = []

    def scored_here(scorer, samples, progress):  # no cluster: what the run said of it is what matters
        seen.append(progress.description)
        yield from (SampleResult(s.id, "en", {"context_relevance": MetricResult(1.0)}) for s in samples)

    def recorded(*resume: str) -> tuple[str, int]:
        assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", "local", "--workers", "8",
                     "--limit", "3", "--metrics", "context_relevance", "--no-cache", *resume]) == 0
        summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
        return summary["device"], summary["timings"]["workers"]

    monkeypatch.setattr(RayScorer, "run", scored_here)
    assert recorded() == ("Ray cluster local: 3 workers, 1 CPU each", 3)
    (tmp_path / "results.jsonl").write_text((tmp_path / "results.jsonl").read_text().splitlines(True)[0])
    assert recorded("--resume") == ("Ray cluster local: 2 workers, 1 CPU each", 2)  # two samples were left
    assert recorded("--resume") == ("Ray cluster local: no worker started (no sample was left to score)", 0)
    assert seen[:2] == ["scoring on 3 Ray workers", "scoring on 2 Ray workers"]


def test_local_cpu_workers_that_need_more_cores_than_the_machine_has_are_warned_of(monkeypatch):
    """Ray starts a local cluster with the cores its workers ask for, however few the machine has."""
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert Cluster("local", workers=4).sharing_cores("cpu") is None  # 4 of 4 cores
    assert Cluster("auto", workers=8).sharing_cores("cpu") is None  # a running cluster's cores are Ray's to count
    assert Cluster("local", workers=8).sharing_cores("cuda") is None
    assert Cluster("local", workers=3, cpus_per_worker=2).sharing_cores("cpu") == (
        "3 workers of 2 CPU each need 6 cores and this machine has 4: they will share cores, each slower; ask for "
        "fewer (--workers) or less each (--cpus-per-worker)")


def test_a_local_cluster_is_started_for_the_workers_the_run_starts_and_warned_of_them(monkeypatch):
    """A resume with one sample left starts one worker: the cluster's cores and the warning of workers sharing
    cores were those of every sample's (a review). The warning is kept for summary.json, as a worker's are."""
    from types import SimpleNamespace

    import ray

    from localeval import scaleout
    from localeval.errors import LocalevalWarning
    from localeval.pipeline import PipelineRecipe

    def resources_checked(scorer, ray, started):  # where the start stops: no cluster was started
        raise RuntimeError(f"{started.workers} started")

    options = []
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **given: options.append(given))
    monkeypatch.setattr(scaleout.RayScorer, "_check_resources", resources_checked)
    driver = SimpleNamespace(heard=[])
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        for workers in (2, 3):
            scorer = scaleout.RayScorer(PipelineRecipe(metrics=[], device="cpu"), Cluster("local", workers=8), driver)
            with pytest.raises(RuntimeError, match=f"^{workers} started$"):
                scorer._start(workers)
    assert [given["num_cpus"] for given in options] == [2, 3]
    # GPUs too: 4 workers of 1 GPU on a 2-GPU machine are refused where all four would start, not where 2 samples
    # are left (the driver checks only that one fits)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    on_gpus = Cluster("local", workers=4, gpus_per_worker=1)
    on_gpus.place(PipelineRecipe(metrics=[]))
    with pytest.raises(RuntimeError, match="^2 started$"):
        scaleout.RayScorer(PipelineRecipe(metrics=[], device="cuda"), on_gpus, driver)._start(2)
    with pytest.raises(UserError, match="^4 workers of 1 GPU each need 4; the cluster has 2"):
        scaleout.RayScorer(PipelineRecipe(metrics=[], device="cuda"), on_gpus, driver)._start(4)
    with pytest.raises(UserError, match=r"^a worker of 3 GPU needs more than the cluster's 2: ask for less "
                                        r"\(--gpus-per-worker\)$"):  # not "1 worker ... ask for fewer"
        Cluster("local", workers=4, gpus_per_worker=3).place(PipelineRecipe(metrics=[]))
    assert len(options) == 3  # refused before Ray started
    assert [str(w.message) for w in warned if issubclass(w.category, LocalevalWarning)] == driver.heard == [
        "3 workers of 1 CPU each need 3 cores and this machine has 2: they will share cores, each slower; ask for "
        "fewer (--workers) or less each (--cpus-per-worker)"]


def test_ray_options_without_ray_are_refused_by_evaluate_as_by_run():
    for options, named in (({"workers": 4}, "workers= applies"),
                           ({"cpus_per_worker": 2, "gpus_per_worker": 1}, "gpus_per_worker= and cpus_per_worker= apply")):
        with pytest.raises(UserError, match=f"^{named} only to a run on Ray; add ray='local'"):
            evaluate([{"user_input": "q"}], ["context_recall"], ScriptedJudge(every_verdict_one), **options)


def test_a_worker_uses_as_many_torch_threads_as_it_has_cores(monkeypatch):
    """Not what OMP_NUM_THREADS said in the driver, which Ray passes on to its workers."""
    from localeval.pipeline import PipelineRecipe
    from localeval.scaleout import ScoringWorker

    monkeypatch.setattr(PipelineRecipe, "build", lambda self, log: type("Loaded", (), {"load": lambda self: None})())
    threads = torch.get_num_threads()
    try:
        for cores in (1, 2):
            ScoringWorker(PipelineRecipe(metrics=[]), threads=cores)
            assert torch.get_num_threads() == cores
    finally:
        torch.set_num_threads(threads)


def test_a_ray_without_its_client_asks_for_it_with_exit_2(monkeypatch, six_samples, tmp_path, capsys):
    import ray

    def without_client(**options):
        raise ValueError("Ray Client requires pip package `ray[client]`. If you installed the minimal Ray ...")

    monkeypatch.setattr(ray, "init", without_client)
    with grpc_server(RAY_CLIENT) as port:  # what answers at a Ray Client address
        address = f"ray://127.0.0.1:{port}"
        assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", address, "--quiet"]) == 2
    assert f"--ray {address}: a ray:// address needs Ray Client: pip install 'localeval[ray]'" in capsys.readouterr().err


def test_a_sigterm_handler_the_process_chose_outlasts_ray_init():
    """ray.init sets a SIGTERM handler that aborted a run; one localeval's CLI set stays. Python's
    default is left to Ray's, which shuts its cluster down."""
    from localeval.scaleout import _sigterm_kept

    def chosen(*args):
        pass

    before = signal.signal(signal.SIGTERM, chosen)
    try:
        with _sigterm_kept():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as ray.init does
        assert signal.getsignal(signal.SIGTERM) is chosen
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with _sigterm_kept():
            signal.signal(signal.SIGTERM, chosen)
        assert signal.getsignal(signal.SIGTERM) is chosen
    finally:
        signal.signal(signal.SIGTERM, before)


def test_sigterm_while_ray_starts_is_an_interrupt_and_leaves_no_cluster():
    """ray.init sets a handler that exits with status 15 as it starts: a scheduler's stop then said
    nothing of what was kept. It is an interrupt, as Ctrl-C, and the cluster is shut down."""
    import threading

    import ray

    from localeval.pipeline import PipelineRecipe
    from localeval.scaleout import RayScorer

    scorer = RayScorer(PipelineRecipe(metrics=[]), Cluster("local", workers=1), driver=None)
    before = signal.signal(signal.SIGTERM, signal.default_int_handler)  # as the CLI sets it
    stop = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        stop.start()
        with pytest.raises(KeyboardInterrupt):
            scorer._start(workers=1)
            time.sleep(30)  # had ray.init been quicker than the timer
    finally:
        stop.cancel()
        scorer.close()
        signal.signal(signal.SIGTERM, before)
    assert not ray.is_initialized()


def test_a_sigterm_once_the_cluster_is_shut_down_is_still_an_interrupt():
    """ray.shutdown leaves the system's default under Python's SIGTERM handler: a scheduler's stop
    while the summary was written killed the run (exit 143), and no summary was written."""
    code = ("import json, os, signal, sys\n"
            "from localeval import evaluate\n"
            "from localeval.engine.scripted import LookupEmbedder, ScriptedJudge\n"
            "def agree(request):\n"
            "    items = json.loads(request.schema)['properties']['verdicts']['prefixItems']\n"
            "    return {'verdicts': [{key: spec.get('const', 1 if 'enum' in spec else 'because')\n"
            "                          for key, spec in item['properties'].items()} for item in items]}\n"
            "signal.signal(signal.SIGTERM, signal.default_int_handler)  # as the CLI sets it\n"
            "samples = [json.loads(line) for line in open(sys.argv[1], encoding='utf-8') if line.strip()][:2]\n"
            "evaluate(samples, ['context_recall'], ScriptedJudge(agree), LookupEmbedder({}), cache=False,\n"
            "         ray='local', workers=1)  # its cluster shut down as it returns\n"
            "try:\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "except KeyboardInterrupt:\n"
            "    print('an interrupt')\n")
    result = subprocess.run([sys.executable, "-c", code, str(EXAMPLES)], capture_output=True, text=True, cwd=ROOT,
                            timeout=300)
    assert (result.returncode, result.stdout) == (0, "an interrupt\n"), result.stderr[-2000:]


def test_stderr_muted_for_rays_shutdown_comes_back_whatever_happens(capfd, monkeypatch):
    from localeval.scaleout import _native_stderr_muted

    with pytest.raises(RuntimeError), _native_stderr_muted():
        os.write(2, b"ray's own log\n")
        raise RuntimeError("the shutdown failed")
    os.write(2, b"ours again\n")
    assert capfd.readouterr().err == "ours again\n"
    monkeypatch.setattr(sys, "stderr", None)  # a process without one: nothing to mute, and the block runs
    ran = []
    with _native_stderr_muted():
        ran.append(True)
    assert ran == [True]


def test_ctrl_c_while_a_worker_scores_leaves_no_ray_lines_on_stderr(tmp_path):
    """Interrupted while a worker held a window, Ray printed a line per task it held before the run's own
    word of what it kept: "(raylet) Task ScoringWorker.score failed. There are 3 retries remaining, so the
    task will be retried" (workers killed one by one), or its core worker's "task_manager.cc: Failed to
    push error to driver" (the cluster shut down with the task running)."""
    started = tmp_path / "scoring"
    code = ("import json, os, signal, sys, threading, time\n"
            "from localeval import evaluate\n"
            "from localeval.engine.scripted import LookupEmbedder, ScriptedJudge\n"
            "def slow(request, started=sys.argv[2]):  # bound here: a worker has argv of its own\n"
            "    open(started, 'w').close()  # a window is being scored\n"
            "    time.sleep(120)\n"
            "def interrupt_once_scoring():\n"
            "    while not os.path.exists(sys.argv[2]):\n"
            "        time.sleep(0.1)\n"
            "    time.sleep(1)\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "threading.Thread(target=interrupt_once_scoring, daemon=True).start()\n"
            "samples = [json.loads(line) for line in open(sys.argv[1], encoding='utf-8') if line.strip()][:2]\n"
            "try:\n"
            "    evaluate(samples, ['context_recall'], ScriptedJudge(slow), LookupEmbedder({}), cache=False,\n"
            "             ray='local', workers=1, progress=False)\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted')\n")
    result = subprocess.run([sys.executable, "-c", code, str(EXAMPLES), str(started)], capture_output=True,
                            text=True, cwd=ROOT, timeout=300)
    assert (result.returncode, result.stdout) == (0, "interrupted\n"), result.stderr[-2000:]
    assert started.exists()  # interrupted while the worker scored, not before
    assert "raylet" not in result.stderr and "task_manager" not in result.stderr, result.stderr[-2000:]


def test_a_worker_lost_for_good_says_what_failed_and_leaves_what_was_kept_to_its_caller(monkeypatch):
    """Ray's restarts used up: what failed, and no advice to --resume (evaluate() keeps nothing, and a
    fresh run may have nothing to resume; run adds what it kept, tests/test_hostile.py)."""
    import ray.util
    from ray.exceptions import ActorDiedError

    from localeval.errors import ScoringStopped
    from localeval.pipeline import PipelineRecipe
    from localeval.samples import Sample
    from localeval.scaleout import RESTARTS, RayScorer

    class DyingPool:  # every worker it holds dies, as after Ray's last restart
        def __init__(self, workers):
            pass

        def map_unordered(self, score, windows):
            raise ActorDiedError()

    monkeypatch.setattr(ray.util, "ActorPool", DyingPool)
    monkeypatch.setattr(RayScorer, "_start", lambda self, workers: None)  # no cluster: the pool above stands in
    with pytest.raises(ScoringStopped) as stopped:
        list(RayScorer(PipelineRecipe(metrics=[]), Cluster("local"), driver=None).run([Sample(id="a")]))
    assert str(stopped.value).startswith("a Ray worker died (") and str(stopped.value).endswith(
        f") and Ray did not restart it (it restarts a worker up to {RESTARTS} times, where the cluster has room)")
    assert "--resume" not in str(stopped.value)


def test_what_a_worker_raises_reaches_the_caller_as_it_was_raised(monkeypatch):
    """A worker's ScoringStopped (a judge's NaN outputs) reached the run as Ray wraps it, its worker's traceback
    and terminal colours first: one line of escapes, not localeval's (a review)."""
    import ray.util
    from ray.exceptions import RayTaskError

    from localeval.errors import ScoringStopped
    from localeval.pipeline import PipelineRecipe
    from localeval.samples import Sample
    from localeval.scaleout import RayScorer

    class FailingPool:  # a worker's score() raising, as Ray hands it to the driver
        def __init__(self, workers):
            pass

        def map_unordered(self, score, windows):
            raise RayTaskError("ScoringWorker.score", "\x1b[36mray::ScoringWorker.score()\x1b[39m\nTraceback ...",
                               ScoringStopped("the judge's outputs are not numbers")).as_instanceof_cause()

    monkeypatch.setattr(ray.util, "ActorPool", FailingPool)
    monkeypatch.setattr(RayScorer, "_start", lambda self, workers: None)
    with pytest.raises(ScoringStopped) as stopped:
        list(RayScorer(PipelineRecipe(metrics=[]), Cluster("local"), driver=None).run([Sample(id="a")]))
    assert str(stopped.value) == "the judge's outputs are not numbers" and type(stopped.value) is ScoringStopped


def test_ctrl_c_while_ray_starts_waits_for_it_to_finish_starting(monkeypatch):
    """Interrupted halfway through ray.init, Ray left its agents running and the process sometimes
    crashed at exit (139): the interrupt now comes once the start is done (interrupts.held)."""
    import ray

    from localeval import scaleout
    from localeval.pipeline import PipelineRecipe

    started = []

    def init(**options):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)  # the signal is handled meanwhile, and the start goes on
        started.append(options["address"])

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(scaleout.RayScorer, "_check_resources", lambda *args: pytest.fail("went on past the start"))
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever ran pytest
    try:
        with pytest.raises(KeyboardInterrupt):
            scaleout.RayScorer(PipelineRecipe(metrics=[]), Cluster("local"), driver=None)._start(1)
        assert started == ["local"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_cluster_address_is_local_auto_or_a_host_and_port():
    for address in ("local", "auto", "ray://head:10001", "10.0.0.1:6379", "[::1]:6379"):
        assert Cluster(address).address == address
    for address in ("bogus", "head:", ":6379", "ray://head", ""):
        with pytest.raises(UserError, match="give local, auto, or a running cluster's HOST:PORT"):
            Cluster(address)
    for address, usual in (("127.0.0.1:99999", "a cluster's own is 6379"), ("ray://head:0", "Ray Client's is 10001")):
        with pytest.raises(UserError, match=re.escape(f"--ray {address}: {address.rpartition(':')[2]} is not a port "
                                                      f"(1 to 65535); {usual}")):  # was "no cluster answers", exit 3
            Cluster(address)
    with pytest.raises(UserError, match="give local, auto, or a running cluster's HOST:PORT"):
        Cluster("head:²")  # a digit to str.isdigit, not to int(): a traceback


def test_an_address_where_no_cluster_listens_fails_at_once_with_exit_3(six_samples, tmp_path, capsys):
    started = time.monotonic()
    code = main(["run", str(six_samples), "--out", str(tmp_path), "--ray", "127.0.0.1:1", "--quiet"])
    assert code == 3
    err = capsys.readouterr().err
    assert "--ray 127.0.0.1:1: no Ray cluster answers there" in err and "Traceback" not in err
    assert time.monotonic() - started < 60  # Ray's own retries took more than five minutes
    assert not (tmp_path / "results.jsonl").exists()


def test_auto_without_a_cluster_says_what_to_give_not_rays_own_flags(six_samples, tmp_path, capsys, monkeypatch):
    """Ray's advice named its `--address` flag, which localeval has not (a probe)."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", "auto", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "--ray auto: no running Ray cluster found" in err and "give its address as HOST:PORT" in err
    assert "--address" not in err and "Traceback" not in err


def test_a_web_address_such_as_the_dashboards_is_refused_before_ray_starts():
    """`--ray http://head:8265` (the dashboard, as Ray Jobs takes it) got a fragment of Ray's advice:
    "cannot connect (  2. Set RAY_ADDRESS to the GCS address instead ...)"."""
    for address in ("http://head:8265", "https://10.0.0.1:8265", "HTTP://head:8265"):
        with pytest.raises(UserError, match=re.escape(f"--ray {address}: that is a web address, such as the Ray "
                                                      "dashboard's (port 8265); give the cluster's own: HOST:6379")):
            Cluster(address)
    assert Cluster("RAY://head:10001").address == "ray://head:10001"  # Ray itself took RAY as a module's name


def test_an_address_where_something_else_answers_fails_in_seconds_with_exit_3(six_samples, tmp_path, capsys):
    """A web server's port (the dashboard's, say) accepts the connection; Ray then retried its GCS
    handshake there without end, printing gcs_client warnings (a probe stopped it after two minutes)."""
    import http.server

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    try:
        started = time.monotonic()
        assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", address, "--quiet"]) == 3
        assert time.monotonic() - started < 30
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert f"--ray {address}: something answers there, but not a Ray cluster (no gRPC handshake in 5 s" in err
    assert "Traceback" not in err and not (tmp_path / "results.jsonl").exists()


# The first call Ray's own client makes at each of a cluster's two ports: its GCS (6379), and Ray Client (10001)
RAY_GCS = ("ray.rpc.NodeInfoGcsService", "GetClusterId")
RAY_CLIENT = ("ray.rpc.RayletDriver", "ClusterInfo")


@contextlib.contextmanager
def grpc_server(*services: tuple[str, str], token: str | None = None, hangs: bool = False) -> Iterator[int]:
    """A gRPC server on a free port of 127.0.0.1 that answers the given calls (a reply of an empty
    message; with a `token`, a refusal unless the call sends it, as a Ray cluster with token authentication
    does; no answer for 8 s where `hangs`) and knows no other; its port."""
    from concurrent import futures

    import grpc

    def answer(request, context):
        if hangs:
            time.sleep(8)
        if token is not None and ("authorization", f"Bearer {token}") not in context.invocation_metadata():
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "no token")
        return b""

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    for service, method in services:
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            service, {method: grpc.unary_unary_rpc_method_handler(answer)})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(None)


def test_a_cluster_that_answers_rays_first_call_passes_the_check(monkeypatch):
    """A cluster's GCS and Ray Client ports pass (a real head's two ports were checked by hand: 0.2 s
    each), a cluster that wants a token too, given it, and with an HTTP proxy in the environment, which Ray's own
    channels do not use (a reviewer's finding: the check went through it, failed)."""
    from localeval.scaleout import _check_reachable

    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # the driver sends its token
    monkeypatch.setenv("RAY_AUTH_TOKEN", "the-clusters-token")
    for token in (None, "the-clusters-token"):
        with grpc_server(RAY_GCS, RAY_CLIENT, token=token) as port:
            _check_reachable(f"127.0.0.1:{port}")
            _check_reachable(f"ray://127.0.0.1:{port}")
            _check_reachable(f"RAY://127.0.0.1:{port}")  # Ray reads it as ray://


@pytest.mark.parametrize("mode, token, said", [
    (None, None, "the cluster asks for a token (it was started with Ray's token authentication): run with "
                 "RAY_AUTH_MODE=token set, and the cluster's token in RAY_AUTH_TOKEN or ~/.ray/auth_token"),
    ("token", "another-token", "the cluster refused the token this process sends (RAY_AUTH_TOKEN, else the file "
                               "RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token): give it the cluster's own, from its head node"),
    ("token", None, "RAY_AUTH_MODE=token is set but no token was found: put the cluster's token in RAY_AUTH_TOKEN or "
                    "~/.ray/auth_token (on its head node, ~/.ray/auth_token)"),
])
def test_a_cluster_that_asks_for_a_token_the_driver_does_not_send_is_said_at_once(monkeypatch, tmp_path, mode, token,
                                                                                    said):
    """A cluster from 'ray start --head' with token authentication on: Ray's driver, not told to send a token or
    sending another, retried the refusal for 27 s, a log line a second, then said only 'cannot connect'; told to
    send one it did not have, it raised a traceback (probes)."""
    from localeval.errors import EnvironmentFailure
    from localeval.scaleout import _check_reachable

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ray/auth_token
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    for name, value in (("RAY_AUTH_MODE", mode), ("RAY_AUTH_TOKEN", token)):
        monkeypatch.setenv(name, value) if value else monkeypatch.delenv(name, raising=False)
    with grpc_server(RAY_GCS, RAY_CLIENT, token="the-clusters-token") as port:
        for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            with pytest.raises(EnvironmentFailure) as failed:
                _check_reachable(address)
            assert str(failed.value) == f"--ray {address}: {said}"


def test_auto_is_checked_at_the_cluster_it_finds_on_this_node(monkeypatch, tmp_path):
    """--ray auto on a node of a cluster with token authentication: Ray, sending another token, retried for 20 s,
    a log line a second, then said 'cannot connect' (a probe); the check now finds the cluster as Ray does."""
    import ray._private.services

    from localeval.errors import EnvironmentFailure
    from localeval.scaleout import _check_reachable

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "another-token")
    with grpc_server(RAY_GCS, token="the-clusters-token") as port:
        monkeypatch.setattr(ray._private.services, "canonicalize_bootstrap_address", lambda address: f"127.0.0.1:{port}")
        with pytest.raises(EnvironmentFailure) as failed:
            _check_reachable("auto")
    assert str(failed.value).startswith(f"--ray auto (the cluster running on this node, 127.0.0.1:{port}): the cluster "
                                        "refused the token this process sends")

    # RAY_AUTH_MODE unset: Ray turns token mode on for the cluster it finds on this node where a token is there to
    # send (the check refused such a cluster, a review)
    monkeypatch.delenv("RAY_AUTH_MODE")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "the-clusters-token")
    with grpc_server(RAY_GCS, token="the-clusters-token") as port:
        monkeypatch.setattr(ray._private.services, "canonicalize_bootstrap_address", lambda address: f"127.0.0.1:{port}")
        _check_reachable("auto")
        with pytest.raises(EnvironmentFailure, match="the cluster asks for a token"):  # an explicit address: never
            _check_reachable(f"127.0.0.1:{port}")


def test_a_grpc_service_that_is_not_ray_is_refused_in_seconds():
    """Any gRPC service completes the handshake the check waited for: Ray then retried the address
    without end, printing gcs_client lines, and Ctrl-C did not stop it (a probe killed it at 320 s).
    The check itself, not a run: a run on the old check would hang the suite."""
    from localeval.errors import EnvironmentFailure
    from localeval.scaleout import _check_reachable

    with grpc_server() as port:
        for address, calls in ((f"127.0.0.1:{port}", "GCS"), (f"ray://127.0.0.1:{port}", "Ray Client")):
            started = time.monotonic()
            with pytest.raises(EnvironmentFailure, match=re.escape(
                    f"--ray {address}: a gRPC service answers there, but not as a Ray cluster's {calls} does (its "
                    "first call: unimplemented)")):
                _check_reachable(address)
            assert time.monotonic() - started < 10
    # one that knows Ray's calls but answers none in time: Ray would wait on it without end (a review)
    with grpc_server(RAY_GCS, RAY_CLIENT, hangs=True) as port:
        with pytest.raises(EnvironmentFailure, match="not as a Ray cluster's GCS does \\(its first call: deadline exceeded\\)"):
            _check_reachable(f"127.0.0.1:{port}")


@pytest.mark.parametrize("answers, given, expected", [
    (RAY_CLIENT, "127.0.0.1:{port}", "that is Ray Client's port; give it as ray://127.0.0.1:{port}"),
    (RAY_GCS, "ray://127.0.0.1:{port}", "that is a cluster's own port, which takes no ray://; give 127.0.0.1:{port}"),
])
def test_one_of_rays_ports_named_as_the_other_is_said_so_with_exit_2(six_samples, tmp_path, capsys, answers, given,
                                                                     expected):
    """Ray Client's port without ray:// (a common slip) took Ray 20 s and 20 lines of gcs_client errors."""
    with grpc_server(answers) as port:
        address = given.format(port=port)
        assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", address, "--quiet"]) == 2
    err = capsys.readouterr().err
    # one error line (beside the data's own warnings: the examples' Chinese samples warn of the embedder)
    assert f"--ray {address}: {expected.format(port=port)}" in err and len(errors_in(err)) == 1


def test_a_tls_cluster_is_left_to_rays_own_client(monkeypatch):
    """With RAY_USE_TLS the handshake is TLS, which a plain check cannot make: what answers is not judged."""
    import http.server

    from localeval.scaleout import _check_reachable

    monkeypatch.setenv("RAY_USE_TLS", "1")
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    try:
        _check_reachable(f"127.0.0.1:{server.server_address[1]}")  # not refused: Ray's client decides
    finally:
        server.server_close()


def test_auto_with_ray_address_where_no_cluster_listens_fails_at_once(six_samples, tmp_path, capsys, monkeypatch):
    """The address on a cluster's nodes: Ray's retries printed warnings for minutes."""
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", "auto", "--quiet"]) == 3
    assert "--ray auto (RAY_ADDRESS=127.0.0.1:1): no Ray cluster answers there" in capsys.readouterr().err


@pytest.mark.parametrize("address, expected", [
    ("127.0.0.1:70000", "70000 is not a port (1 to 65535); a cluster's own is 6379"),
    ("ray://head:0", "0 is not a port (1 to 65535); Ray Client's is 10001"),
    ("http://127.0.0.1:8265", "that is a web address, such as the Ray dashboard's"),
    ("head", "give local, auto, or a running cluster's HOST:PORT"),
])
def test_auto_with_a_ray_address_ray_cannot_read_is_the_users_mistake(six_samples, tmp_path, capsys, monkeypatch,
                                                                      address, expected):
    """A port out of range in RAY_ADDRESS was "no Ray cluster answers there", exit 3, the machine's failure,
    where the same address given to --ray was refused as a mistake, exit 2 (a leftover of a probe)."""
    monkeypatch.setenv("RAY_ADDRESS", address)
    assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", "auto", "--quiet"]) == 2
    error = capsys.readouterr().err
    assert f"--ray auto (RAY_ADDRESS={address}): {expected}" in error and len(errors_in(error)) == 1


def test_without_ray_installed_the_option_says_how_to_get_it(monkeypatch, six_samples, tmp_path, capsys):
    for module in ("ray", "ray.exceptions", "ray.util"):  # imports fail, as where Ray is not installed
        monkeypatch.setitem(sys.modules, module, None)
    assert main(["run", str(six_samples), "--out", str(tmp_path), "--ray", "local", "--quiet"]) == 2
    assert "pip install 'localeval[ray]'" in capsys.readouterr().err


def test_workers_the_cluster_has_no_room_for_yet_are_waited_for_out_loud():
    """A worker a busy cluster had no free CPUs for stayed pending, and the run waited without a word, for ever
    (a probe: a nightly job on a shared cluster blocked until its wall-clock limit). It now says what it waits
    for after a minute (a big judge takes tens of seconds to load), then at each doubling."""
    from localeval.scaleout import RayScorer

    class BusyCluster:  # the two workers load one by one, the second after a minute
        def __init__(self):
            self.timeouts = []

        def wait(self, refs, num_returns, timeout):
            self.timeouts.append(timeout)
            ready = refs[:len(self.timeouts)]
            return ready, refs[len(ready):]

        def available_resources(self):
            return {"CPU": 0.0}

    said = []
    scorer = RayScorer(None, Cluster("local", workers=2, cpus_per_worker=1.0), None, said.append)
    ray = BusyCluster()
    assert scorer._waited_for(ray, ["first", "second"]) == ["first", "second"]
    assert ray.timeouts == [60.0, 60.0]  # until 1 min, then on to 2 min
    assert said == ["1 of 2 Ray workers ready after 60 s; each asks for 1 CPU and the cluster has 0 CPUs free: the "
                    "rest load their models or wait for others' work to end (`ray status` shows what holds them); "
                    "Ctrl-C stops the run"]


@pytest.mark.parametrize("interrupts, tasks_left, finished", [
    (1, True, True),  # a second Ctrl-C while an interrupted run stops: part of the same stop
    (1, False, True),  # one while a finished run stops its cluster: interrupted once the cluster is down
    (2, True, False),  # one more, and a shutdown that hangs is left at once
])
def test_interrupts_while_the_cluster_stops_let_it_stop_whole_and_a_third_gets_out(monkeypatch, interrupts, tasks_left,
                                                                                   finished):
    """A second Ctrl-C or SIGTERM inside ray.shutdown after an interrupt left Ray's agents running and ended the
    process in silence, exit 1 (a probe); held whole, a shutdown that hangs (Ray's does after workers ran out of
    memory, ray-project/ray#29431) then swallowed every Ctrl-C (a review)."""
    import localeval.scaleout as scaleout
    from localeval.scaleout import RayScorer

    class Shutdown:
        finished = False

        def shutdown(self):
            for _ in range(interrupts):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.1)  # each lands inside
            time.sleep(0 if finished else 30)  # hung
            self.finished = True

    ray = Shutdown()
    monkeypatch.setattr(scaleout, "_import_ray", lambda: ray)
    scorer = RayScorer(None, Cluster("local"), None)
    scorer._started_here = True
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt) if not tasks_left else contextlib.nullcontext():
            scorer.close(tasks_left=tasks_left)
    finally:
        signal.signal(signal.SIGINT, before)
    assert ray.finished == finished and not scorer._started_here and time.monotonic() - started < 5


def test_a_metric_from_a_file_no_worker_can_import_is_scored_on_ray(tmp_path, tiny_judge):
    """A --metrics-from file's module, and the module beside it that it imports, exist in the driver alone: they go
    to the workers whole (a worker failed with ModuleNotFoundError for the file's module)."""
    mine, out = tmp_path / "elsewhere" / "mine.py", tmp_path / "out"
    mine.parent.mkdir()
    example = (ROOT / "examples" / "answers_directly.py").read_text(encoding="utf-8")
    wording = re.search(r"^SYSTEM = \(.*?\)\n", example, flags=re.DOTALL | re.MULTILINE).group(0)
    (mine.parent / "mine_wording.py").write_text(wording, encoding="utf-8")
    mine.write_text(example.replace(wording, "import mine_wording\n").replace(
        "JudgeRequest.build(SYSTEM,", "JudgeRequest.build(mine_wording.SYSTEM,"), encoding="utf-8")
    run = _ray_run(EXAMPLES, out, "--workers", "1", "--limit", "2", "--judge", str(tiny_judge),
                   "--metrics-from", str(mine), "--metrics", "answers_directly")
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 0, stderr
    assert sorted(_rows(out)) == ["seed001-einstein", "seed002-superbowl"]
    assert all(row["answers_directly"] in (0.0, 1.0, None) for row in _rows(out).values())


def test_a_metric_holding_what_no_other_process_can_receive_is_one_line_naming_it(tmp_path, tiny_judge):
    """Ray's pickling of a metric with a lock in its globals was a traceback, exit 1 (a review)."""
    mine = tmp_path / "locked.py"
    mine.write_text((ROOT / "examples" / "answers_directly.py").read_text(encoding="utf-8").replace(
        "import localeval\n", "import threading\n\nimport localeval\n\nLOCK = threading.Lock()\n").replace(
        "    def steps(self, sample, language):\n", "    def steps(self, sample, language):\n        with LOCK:\n"
                                                  "            pass\n"), encoding="utf-8")
    run = _ray_run(EXAMPLES, tmp_path / "out", "--workers", "1", "--limit", "1", "--judge", str(tiny_judge),
                   "--metrics-from", str(mine), "--metrics", "answers_directly")
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 2, stderr
    assert stderr.strip().splitlines()[-1] == (
        "localeval: error: metric 'answers_directly' cannot be sent to the Ray workers (cannot pickle '_thread.lock' "
        "object): its code refers to an object no other process can receive (a lock, a loaded model, a connection); "
        "make it inside steps(), or once per process on first use")


def test_a_judge_object_holding_what_no_other_process_can_receive_is_refused_before_the_cluster_starts():
    """A judge of one's own with a lock went to Ray's pickling and failed there in a traceback (a custom-judge
    probe); the check runs before Ray starts."""
    import threading

    from localeval.scaleout import _check_sendable

    class LockedJudge(ScriptedJudge):
        def __init__(self):
            super().__init__(lambda request: {})
            self.lock = threading.Lock()

    with pytest.raises(UserError, match=re.escape("judge=: LockedJudge cannot be sent to the Ray workers (cannot pickle "
                                                  "'_thread.lock' object): it holds an object no other process can "
                                                  "receive")):
        _check_sendable([], {"judge": LockedJudge(), "embedder": None})
    _check_sendable([], {"judge": ScriptedJudge(lambda request: {}), "embedder": "all-minilm-l6-v2"})  # sendable
