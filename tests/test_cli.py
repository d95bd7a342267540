"""The command line as a user meets it: help, clear errors with exit status 2, the models list."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from localeval.cli import build_parser, main
from localeval.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USER
from localeval.metrics import DEFAULT_METRICS, METRICS, resolve_metrics

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "samples.jsonl"
LABELED = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localeval", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_standard_output_on_a_full_disk_is_one_error_line_and_exit_3():
    """`run ... --json > /full/disk/scores.json` was a traceback and exit 1, "a bug"."""
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "localeval", "models"], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=300)
    assert result.returncode == EXIT_ENVIRONMENT
    assert result.stderr.strip() == ("localeval: error: cannot write to standard output (No space left on device); "
                                     "free space where it is sent, or send it elsewhere")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("quiet", [[], ["--quiet", "--json"]])
def test_standard_error_on_a_full_disk_loses_its_messages_not_the_run(tmp_path, tiny_judge, quiet):
    """`run ... 2>/full/log` ended at the first progress line in a traceback no one saw, exit 1, with neither
    summary.json nor the report written, and --json printed nothing (a probe)."""
    command = [sys.executable, "-m", "localeval", "run", str(EXAMPLES), "--limit", "2", "--judge", str(tiny_judge),
               "--metrics", "context_recall", "--out", str(tmp_path / "out"), *quiet]
    with open("/dev/full", "w") as full:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=full, text=True, timeout=300)
    assert result.returncode == EXIT_OK
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert summary["samples"] == 2 and (tmp_path / "out" / "report.html").exists()
    if quiet:
        assert json.loads(result.stdout)["metrics"] == summary["metrics"]


@pytest.mark.parametrize("where", ["data", "out", "labels"])
def test_a_name_longer_than_the_file_system_allows_is_one_error_line(tmp_path, capsys, where):
    """--out or DATA with a 300-character name was OSError "File name too long", a traceback, exit 1 (an ops probe)."""
    long = str(tmp_path / ("x" * 300))
    paths = {"data": str(EXAMPLES), "out": str(tmp_path / "out"), "labels": None, where: long}
    command = ["run", paths["data"], "--out", paths["out"], *(["--labels", long] if paths["labels"] else [])]
    assert main(command) == EXIT_USER
    said = capsys.readouterr().err
    assert said.splitlines()[-1] == (f"localeval: error: {long}: a name in this path is longer than the file system "
                                     "allows; give a shorter one")
    assert "Traceback" not in said


def test_a_path_under_a_folder_this_user_cannot_enter_is_one_error_line(tmp_path, capsys, monkeypatch):
    """DATA under a home folder closed to others: Path.exists raised PermissionError, a traceback, exit 1 (a last
    check as nobody). Root enters every folder, so the refusal is raised here as Python raises it."""
    from localeval import data

    hidden = "/home/alice/data.jsonl"

    def closed(path):
        raise PermissionError(errno.EACCES, "Permission denied", hidden)

    monkeypatch.setattr(data.Path, "exists", closed)
    assert main(["run", hidden, "--out", str(tmp_path / "out")]) == EXIT_USER
    assert capsys.readouterr().err == (f"localeval: error: {hidden}: permission denied: this user cannot read it, or "
                                       "enter a folder above it\n")


def test_a_command_with_its_standard_output_closed_runs_and_says_nothing_there():
    """`localeval models >&-` was an AttributeError: Python leaves a closed stdout None."""
    result = subprocess.run([sys.executable, "-m", "localeval", "models"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, timeout=300, preexec_fn=lambda: os.close(1))
    assert (result.returncode, result.stderr) == (EXIT_OK, "")


def test_a_run_asked_for_json_with_its_standard_output_closed_is_refused_before_it_scores(tmp_path):
    """Its document went nowhere and the run ended 0, as if a pipeline had it (a note's gap)."""
    result = subprocess.run([sys.executable, "-m", "localeval", "run", str(EXAMPLES), "--json",
                             "--out", str(tmp_path / "out")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, timeout=300, preexec_fn=lambda: os.close(1))
    assert result.returncode == EXIT_USER
    assert result.stderr.splitlines()[-1] == ("localeval: error: --json: standard output is closed (>&-), so the "
                                              "document would be lost; send it to a file or a pipe, or leave --json "
                                              "out (summary.json holds the same) (`localeval run --help` lists the "
                                              "options)")
    assert not (tmp_path / "out").exists()


def test_help_lists_commands_metrics_and_examples():
    top = run_cli("--help")
    assert top.returncode == 0
    assert "run" in top.stdout and "models" in top.stdout and "examples:" in top.stdout
    run_help = run_cli("run", "--help")
    for metric in ("context_relevance", "context_recall", "response_relevancy",
                   "answer_supported_precision", "context_supported_precision", "--resume", "--batch-size"):
        assert metric in run_help.stdout


def test_every_help_gives_the_exit_statuses_of_its_command():
    """docs --help gave none, and the top-level one left out 1 (a bug; bench: a judge failed) and 141 (`| head`);
    cache, compare and docs left out 130, and cache 141 (a review)."""
    helps = {" ".join(command) or "localeval": " ".join(run_cli(*command, "--help").stdout.split())
             for command in ([], ["run"], ["bench"], ["models"], ["docs"], ["cache"], ["compare"])}
    for command, text in helps.items():
        statuses = text.partition("exit status")[2]
        assert statuses, f"{command} --help gives no exit status"
        assert re.search(r"\b0 (done|printed|every judge ran|compared)", statuses) and "2 a" in statuses, command
        assert "141 what it printed was read no further" in statuses, command  # every command prints: `| head` stops it
        assert re.search(r"\b130 interrupted", statuses), command  # Ctrl-C stops any of them
    assert "1 a bug" in helps["localeval"] and "130 interrupted" in helps["localeval"]
    assert "2 a topic it does not have" in helps["docs"]


def test_every_document_the_help_names_is_one_that_docs_prints(capsys):
    """--help said docs/NAME.md, which a wheel does not carry: it names `localeval docs NAME` now."""
    from localeval import manual

    helps = [run_cli(*command, "--help").stdout for command in ([], ["run"], ["bench"], ["models"], ["docs"])]
    named = set(re.findall(r"localeval docs (?!python )([a-z-]+)", " ".join(" ".join(helps).split())))  # not the topic-less example before another
    assert named >= {"labeled-data", "judges", "benchmarks", "readme"}
    assert named <= set(manual.topics())
    assert "docs/" not in "".join(helps)
    assert main(["docs", "judges"]) == EXIT_OK
    assert capsys.readouterr().out == (Path(manual.__file__).parent.parent / "docs/judges.md").read_text("utf-8")
    assert main(["docs", "judges"]) == EXIT_OK
    judges = capsys.readouterr().out
    for linked in ("docs/judges.md", "judges.md", "judges.md#choosing-a-judge"):  # as the documents link each other
        assert main(["docs", linked]) == EXIT_OK and capsys.readouterr().out == judges
    assert main(["docs", "docs/judges/labeled-data.md"]) == EXIT_USER  # no such page, though its last part is one
    capsys.readouterr()
    assert main(["docs", "judge"]) == EXIT_USER
    assert "no document named 'judge'; `localeval docs` lists them: readme," in capsys.readouterr().err


def test_a_terminal_that_cannot_show_rho_gets_it_spelled_out_not_a_traceback():
    """PYTHONIOENCODING=ascii (LANG=C, a Windows console): printing ρ was a UnicodeEncodeError, exit 1;
    then "mean ?" (a portability review); a letter with no spelling of its own is a '?'."""
    result = subprocess.run([sys.executable, "-m", "localeval", "docs", "judges"], capture_output=True, timeout=300,
                            env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert result.returncode == EXIT_OK and result.stderr == b""
    assert "mean Spearman rho" in result.stdout.decode("ascii")
    assert "ρ ≥ 0.5 → é".encode("cp1252", "localeval.spelled_out") == b"rho >= 0.5 -> \xe9"  # cp1252 has é
    assert "é 中".encode("ascii", "localeval.spelled_out") == b"? ?"
    refused = subprocess.run([sys.executable, "-m", "localeval", "docs", "ρ"], capture_output=True, timeout=300,
                             env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert refused.returncode == EXIT_USER  # stderr keeps Python's escapes: a '?' would lose what was typed
    assert b"no document named '\\u03c1'" in refused.stderr


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"", "no samples"),
        (b'{"user_input": "q", "retrieved_contexts": ["c"]}\n{"user_input": \n', "line 2"),
        (b'{"user_input": "q", "retrieved_contexts": 5}\n', "field 'retrieved_contexts'"),
        (b'\xff\xfe not utf-8\n', "UTF-8"),
    ],
)
def test_bad_data_is_one_clear_line_and_exit_2(tmp_path, content, expected):
    data = tmp_path / "data.jsonl"
    data.write_bytes(content)
    result = run_cli("run", str(data), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert expected in result.stderr and "data.jsonl" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.jsonl")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.parametrize("option, expected", [
    (["--metrics", "faithfulnes"], "unknown metric 'faithfulnes'"),
    (["--judge", "gpt-9"], "unknown judge 'gpt-9'"),
    (["--judge", "./models/my-judge"], "judge './models/my-judge': no such folder; give a local model directory"),
    (["--judge", str(EXAMPLES)], f"judge '{EXAMPLES}' is a file: give the folder that holds the model's files"),
    (["--embedder", "smollm2-135m-instruct"], "is a registered judge, not an embedder"),
    # an unset variable ("$JUDGE"): it ran the default embedder, or read the judge from the current folder
    (["--judge", ""], "--judge: the name is empty"),
    (["--embedder", " "], "--embedder: the name is empty"),
    (["--labels", ""], "--labels: it is empty"),  # it was dropped: --fail-under gated the raw mean
    (["--calibration", ""], "--calibration: it is empty"),
    # Ray's options: refused only once torch had loaded, after the data was read
    (["--ray", "local", "--workers", "0"], "--workers must be at least 1"),
    (["--ray", "http://head:8265"], "that is a web address, such as the Ray dashboard's"),
    (["--ray", "local", "--cpus-per-worker", "0"], "--cpus-per-worker must be above 0"),
])
def test_a_mistyped_option_is_answered_before_the_engine_is_imported(tmp_path, option, expected):
    """The engine brings torch and transformers (seconds): a typo must not wait for them."""
    assert _exit_and_heavy_imports(["run", str(EXAMPLES), *option, "--out", str(tmp_path)], expected) == "2 []"


@pytest.mark.parametrize("arguments, expected", [
    (["missing.jsonl"], "missing.jsonl: file not found"),
    ([str(LABELED), "--judges", "gpt-9"], "unknown judge 'gpt-9'"),
    ([str(LABELED), "--metrics", "faithfulnes"], "unknown metric 'faithfulnes'"),
    ([str(LABELED), "--limit", "0"], "--limit"),
    ([str(LABELED), "--judges", ""], "--judges: name at least one judge"),  # it ran the default judge
    ([str(LABELED), "--embedder", ""], "--embedder: the name is empty"),
    (["--data", ""], "--data: it is empty"),  # a traceback
    # a judge of one's own: its folder's kind (transformers, torch) is read only once the data is
    (["missing.jsonl", "--judges", str(Path(__file__).resolve().parent)], "missing.jsonl: file not found"),
])
def test_bench_answers_a_mistake_before_the_engine_is_imported(tmp_path, arguments, expected):
    """bench's judges run in processes of their own: the one that checks the command needs no torch."""
    assert _exit_and_heavy_imports(["bench", *arguments, "--out", str(tmp_path / "b")], expected) == "2 []"


def _exit_and_heavy_imports(argv: list[str], expected: str) -> str:
    """`localeval ARGV` in a fresh interpreter: its exit code and which heavy modules it imported,
    once its one-line error has been checked for `expected`."""
    code = ("import sys; from localeval.cli import main; "
            f"code = main({argv!r}); "
            "print(code, [m for m in ('torch', 'transformers', 'localeval.pipeline') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert expected in done.stderr, done.stderr
    return " ".join(done.stdout.split())


def test_a_registered_judges_name_is_that_judge_whatever_folder_of_that_name_is_here(tmp_path, monkeypatch):
    """An --out folder named after a judge, in the working folder, made bench take the name for that folder
    (refused: "not a model directory"), where resolve() and run take the registered judge."""
    from localeval import models
    from localeval.bench.command import parse_judges

    monkeypatch.chdir(tmp_path)
    (tmp_path / "smollm2-135m-instruct").mkdir()
    assert models.judge_name("smollm2-135m-instruct") == "smollm2-135m-instruct"
    assert parse_judges("smollm2-135m-instruct") == ["smollm2-135m-instruct"]


def test_an_empty_out_is_refused_not_read_as_the_current_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for argv in (["run", str(EXAMPLES)], ["bench", str(LABELED)]):
        assert main([*argv, "--out", ""]) == 2
        assert "--out: it is empty" in capsys.readouterr().err
    for argv, expected in ((["run", ""], "DATA: it is empty"), (["bench", " "], "LABELED: it is empty")):
        assert main(argv) == 2
        assert expected in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_metrics_all_names_every_metric():
    assert [m.name for m in resolve_metrics("all")] == list(METRICS)
    assert [m.name for m in resolve_metrics(["all"])] == list(METRICS)
    assert [m.name for m in resolve_metrics(None)] == list(DEFAULT_METRICS)


def test_unknown_metric_and_unknown_model(tmp_path, capsys):
    assert main(["run", str(EXAMPLES), "--metrics", "faithfulnes", "--out", str(tmp_path)]) == 2
    assert "unknown metric 'faithfulnes'" in capsys.readouterr().err
    assert main(["run", str(EXAMPLES), "--judge", "gpt-9", "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "unknown judge 'gpt-9'" in error and "smollm2-135m-instruct" in error
    assert main(["run", str(EXAMPLES), "--judge", "all-minilm-l6-v2", "--out", str(tmp_path)]) == 2
    assert "is a registered embedder, not a judge" in capsys.readouterr().err


def test_bad_numbers_and_language(tmp_path, capsys):
    assert main(["run", str(EXAMPLES), "--batch-size", "0", "--out", str(tmp_path)]) == 2
    assert "--batch-size must be at least 1" in capsys.readouterr().err
    assert main(["run", str(EXAMPLES), "--language", "xx", "--out", str(tmp_path)]) == 2
    assert "--language xx" in capsys.readouterr().err


def test_a_registry_entry_localeval_cannot_read_is_said_naming_it_and_its_key(tmp_path, monkeypatch):
    """A contributor's entry: a key misspelt ("cpu_batchsize") was ignored, a missing license a bare KeyError, an
    agreement without mean_spearman broke every judge's weak-judge warning (a review)."""
    from localeval import models

    entries = json.loads(models.REGISTRY_PATH.read_text(encoding="utf-8"))
    assert models.registry()["smollm2-135m-instruct"].cpu_batch_size == 16  # the shipped registry reads whole
    judge = dict(entries["smollm2-135m-instruct"], cpu_batchsize=8, agreement={"spearman": 0.2})
    del judge["license"]
    (tmp_path / "registry.json").write_text(json.dumps({**entries, "my-judge": judge}), encoding="utf-8")
    monkeypatch.setattr(models, "REGISTRY_PATH", tmp_path / "registry.json")
    with pytest.raises(ValueError, match=re.escape(
            "the entry 'my-judge' is not one localeval reads: it lacks 'license'; 'cpu_batchsize' is no key of an "
            "entry (did you mean 'cpu_batch_size'?); its agreement gives no number as 'mean_spearman'")):
        models.registry()
    unmeasured = dict(entries["smollm2-135m-instruct"], agreement=None, default=False)  # null: not measured
    (tmp_path / "again.json").write_text(json.dumps({**entries, "my-judge": unmeasured}), encoding="utf-8")
    monkeypatch.setattr(models, "REGISTRY_PATH", tmp_path / "again.json")
    assert models.registry()["my-judge"].agreement is None
    (tmp_path / "listed.json").write_text(json.dumps({**entries, "my-judge": dict(unmeasured, agreement=[0.5])}))
    monkeypatch.setattr(models, "REGISTRY_PATH", tmp_path / "listed.json")
    with pytest.raises(ValueError, match="its agreement gives no number as 'mean_spearman'"):  # not an AttributeError
        models.registry()


def test_models_lists_registry_with_status(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct", "all-minilm-l6-v2"):
        assert name in out
    embedder_line = next(line for line in out.splitlines() if line.startswith("all-minilm-l6-v2"))
    assert "ready" in embedder_line
    # each judge's measured agreement with people, where choosing one; an embedder has none
    rho_at = out.splitlines()[0].index("rho")
    names = ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct", "all-minilm-l6-v2")
    rows = {line.split()[0]: line[rho_at:].split()[0] for line in out.splitlines() if line.startswith(names)}
    assert rows == {"smollm2-135m-instruct": "0.23", "qwen2.5-coder-0.5b-instruct": "0.59",
                    "qwen2.5-coder-1.5b-instruct": "0.85", "all-minilm-l6-v2": "-"}
    assert "\nrho: a judge's agreement with people" in out


def test_models_with_a_store_under_a_file_is_one_error_line_and_no_table(tmp_path, capsys, monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "a-file" / "store"))
    assert main(["models"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # not the table's header, cut off by the error
    assert captured.err.startswith(f"localeval: error: LOCALEVAL_MODEL_STORE={tmp_path / 'a-file' / 'store'} is not")


@pytest.mark.parametrize("variable", ["LOCALEVAL_MODEL_STORE", "LOCALEVAL_CACHE_DIR"])
def test_a_folder_variable_naming_a_link_to_nowhere_says_so(tmp_path, capsys, monkeypatch, variable):
    """The cache was turned off as "cannot be used (File exists)", the store failed "preparing ...: File exists"
    (a paths probe)."""
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    monkeypatch.setenv(variable, str(tmp_path / "link"))
    assert main(["models"] if variable == "LOCALEVAL_MODEL_STORE" else ["run", str(EXAMPLES), "--out",
                                                                          str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.endswith(f"localeval: error: {variable}={tmp_path / 'link'} is a link to "
                                            f"{tmp_path / 'gone'}, which is not there; name a folder, or make the one "
                                            "it leads to\n")


def test_a_reader_that_stops_early_gets_no_traceback():
    """`localeval models | head -1`: the pipe closes before localeval has written everything."""
    process = subprocess.Popen([sys.executable, "-m", "localeval", "models"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()  # before a byte is read: the first write meets a closed pipe
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr  # as a shell reports a tool stopped by SIGPIPE
    assert stderr == ""


def test_models_prepare_unknown_name(capsys):
    assert main(["models", "prepare", "nope"]) == 2
    assert "choose one of" in capsys.readouterr().err


def test_example_dataset_loads_with_aliases_and_chinese():
    from localeval.data import load_samples

    samples = load_samples(EXAMPLES)
    assert len(samples) == 8
    assert sum(s.language == "zh" for s in samples) == 2
    legacy = next(s for s in samples if s.id == "legacy-names-no-reference")
    assert legacy.user_input.startswith("Which planet") and legacy.reference is None
    assert json.loads(EXAMPLES.read_text(encoding="utf-8").splitlines()[0])["id"] == "seed001-einstein"


def test_a_changed_model_directory_changes_the_judge_identity(tmp_path):
    from localeval.models import resolve

    model = tmp_path / "my-judge"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "tokenizer.json").write_text("{}")
    (model / "tokenizer_config.json").write_text("{}")
    (model / "localeval-model.json").write_text('{"gguf_sha256": "ab12"}')  # copied from the store with the rest
    (model / "model.safetensors").write_bytes(b"weights v1")
    before = resolve(str(model), "judge").fingerprint()
    (model / "model.safetensors").write_bytes(b"weights v2, retrained")
    assert resolve(str(model), "judge").fingerprint() != before
    # retrained to the same size under the same time (an image's fixed times, `touch -d`, `cp -p`): answered
    # from the cache of the weights before (a probe)
    weights = model / "model.safetensors"
    weights.write_bytes(b"weights v3, same size!")
    os.utime(weights, ns=(0, 0))
    before = resolve(str(model), "judge").fingerprint()
    weights.write_bytes(b"weights v4, same size!")
    os.utime(weights, ns=(0, 0))
    assert resolve(str(model), "judge").fingerprint() != before


def test_a_file_of_a_judge_folder_no_one_may_read_leaves_its_identity_known(tmp_path, monkeypatch):
    """Reading a sample of the files' bytes met a root-owned notes.txt of mode 000: a traceback, exit 1 (a review)."""
    from pathlib import Path as P

    from localeval.models import resolve

    model = tmp_path / "my-judge"
    model.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (model / name).write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "notes.txt").write_text("mine")
    opened = P.open

    def refused(path, *args, **kwargs):
        if path.name == "notes.txt":
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(P, "open", refused)
    assert len(resolve(str(model), "judge").fingerprint()) == 16


def test_help_teaches_scoring_calibration_and_labels():
    run_help = run_cli("run", "--help").stdout
    for option in ("--scoring", "--calibration", "--labels", "prediction-powered"):
        assert option in run_help
    assert "--calibrate" in run_cli("bench", "--help").stdout


def test_trust_options_fail_with_one_clear_line_and_exit_2(tmp_path):
    other = tmp_path / "calibration.json"
    other.write_text(json.dumps({"localeval_calibration": 1, "judges": {"qwen2.5-coder-1.5b-instruct": {}}}))
    stranger = tmp_path / "labels.jsonl"
    record = json.loads(EXAMPLES.read_text(encoding="utf-8").splitlines()[0])
    from localeval.text import split_sentences

    attributed = [True] * len(split_sentences(record["reference"]))
    labels = {"reference_sentences_attributed": attributed}
    stranger.write_text(json.dumps({**record, "id": "not-in-the-data", "labels": labels}) + "\n")
    impostor = tmp_path / "impostor.jsonl"  # the right id, another sample: labels must not be paired by id alone
    impostor.write_text(json.dumps({**record, "user_input": "Another question?", "labels": labels}) + "\n")
    cases = [
        (["--calibration", str(tmp_path / "missing.json")], "cannot read"),
        (["--calibration", str(other)], "no thresholds for judge 'smollm2-135m-instruct'"),
        (["--labels", str(stranger), "--metrics", "context_recall"], "not among the samples scored"),
        (["--labels", str(impostor), "--metrics", "context_recall"],
         "has another user_input than the sample of that id in the data (from character 1: 'Another qu' in the "
         f"labels, {record['user_input'][:10]!r} in the data); labels hold only for the texts"),
        (["--scoring", "fuzzy"], "invalid choice: 'fuzzy'"),
    ]
    for extra, expected in cases:
        out = tmp_path / "out"
        result = run_cli("run", str(EXAMPLES), "--out", str(out), *extra)
        assert result.returncode == 2, (extra, result.stderr)
        assert expected in result.stderr and "Traceback" not in result.stderr
        assert not (out / "results.jsonl").exists()  # refused before any work


def test_few_labels_are_counted_per_metric():
    """10 labeled records with no human score for one metric on one of them correct that metric with 9,
    and the note was silent, counting records (a probe's finding)."""
    from localeval.trust import few_labels

    def corrected(labeled: int, samples: int) -> dict:
        return {"mean": 0.5, "corrected": {"labeled": labeled, "samples": samples}}

    summary = {"context_recall": corrected(10, 30), "context_supported_precision": corrected(9, 30), "faithfulness": {}}
    assert few_labels(summary) == (
        "fewer than ten labeled samples correct context_supported_precision (9): with so few, the corrected 95% "
        "intervals covered people's mean less often on the dev set (localeval docs labeled-data); label at least ten")
    assert few_labels({"context_recall": corrected(4, 4)}) is None  # every sample labeled: people's mean is known


def test_the_summary_reads_the_rows_in_the_datas_order_whatever_order_they_were_written_in():
    """The bootstrap draws by position: Ray's windows, written as they finish, gave other intervals than
    one process for the same scores (a probe). Rows of samples this run left out (--limit) are dropped."""
    import random

    from localeval.summary import summarize
    from localeval.runner import _in_data_order
    from localeval.samples import Sample

    samples = [Sample(f"s{i}", "q", ("c",), "r") for i in range(10)]
    draw = random.Random(1)
    rows = [{"id": sample.id, "m": round(draw.random(), 3)} for sample in samples]
    written = [*rows[5:], {"id": "left-out", "m": 0.0}, *rows[:5]]
    random.Random(0).shuffle(written)
    assert _in_data_order(written, samples) == rows
    assert summarize(_in_data_order(written, samples), ["m"]) == summarize(rows, ["m"])
    shuffled = [row for row in written if row["id"] != "left-out"]
    assert summarize(shuffled, ["m"]) != summarize(rows, ["m"])  # the order alone does move the interval


@pytest.mark.parametrize("argv", [["run", "data.jsonl", "--fail-unde", "context_recall=0.5"],
                                  ["bench", "--dat", "labeled.jsonl"]])
def test_a_mistyped_option_is_refused_not_read_as_the_option_it_begins(capsys, argv):
    """argparse read --fail-unde as --fail-under (a CI probe); the README says a mistyped option is refused."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert f"unrecognized arguments: {argv[-2]}" in capsys.readouterr().err


def test_bench_takes_judge_as_run_does_and_once(capsys):
    args = build_parser().parse_args(["bench", "--data", "labeled.jsonl", "--judge", "qwen2.5-coder-0.5b-instruct"])
    assert args.judges == "qwen2.5-coder-0.5b-instruct"
    with pytest.raises(SystemExit) as stopped:  # the last alone was benched, unsaid (a probe)
        build_parser().parse_args(["bench", "--data", "labeled.jsonl", "--judge", "a", "--judges", "b"])
    assert stopped.value.code == 2
    assert ("--judges b: the judges are given already (a); --judge and --judges are one option: name every judge in "
            "one, comma-separated") in capsys.readouterr().err


@pytest.mark.nulls_expected
def test_a_registered_name_that_is_also_a_folder_here_says_the_folder_is_passed_over(tmp_path, monkeypatch, capsys):
    """One's own fine-tune saved as ./smollm2-135m-instruct, and `--judge smollm2-135m-instruct`: the registered
    judge scored, and nothing said that the folder was not it (a note's gap)."""
    import localeval
    from localeval.engine.scripted import ScriptedJudge

    monkeypatch.chdir(tmp_path)
    (tmp_path / "smollm2-135m-instruct").mkdir()
    (tmp_path / "all-minilm-l6-v2").mkdir()
    assert main(["run", str(EXAMPLES), "--judge", "smollm2-135m-instruct", "--metrics", "context_recall", "--limit",
                 "1", "--out", "out", "--quiet", "--no-cache"]) == EXIT_OK
    assert json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))["limit"] == 1  # said, for a reader
    said = capsys.readouterr().err
    assert ("localeval: warning: smollm2-135m-instruct is the registered judge, not the folder of that name here; to "
            "use the folder, give it as a path: --judge ./smollm2-135m-instruct") in said
    assert "--embedder ./all-minilm-l6-v2" not in said  # not named: the default is meant, whatever is here
    from localeval import models
    assert models.folder_passed_over("smollm2-135m-instruct", "judge", "judges").endswith(
        "--judges ./smollm2-135m-instruct")  # as bench names it
    assert main(["bench", str(LABELED), "--metrics", "context_recall", "--limit", "1", "--out", "bench",
                 "--quiet"]) == EXIT_OK
    assert "not the folder of that name here" not in capsys.readouterr().err  # bench's default judge, not named
    with pytest.warns(localeval.LocalevalWarning, match=re.escape("give it as a path: embedder='./all-minilm-l6-v2'")):
        localeval.evaluate(str(EXAMPLES), ["context_recall"], judge=ScriptedJudge(lambda request: {}),
                           embedder="all-minilm-l6-v2", cache=False)


def test_cache_shows_where_it_is_what_it_keeps_per_judge_and_clears(tmp_path, monkeypatch, capsys):
    """The answer cache grew without end and nothing said where, how large, or how to empty it (a service
    probe: about 1 KB a sample scored anew)."""
    import sqlite3

    from localeval.engine.cache import CREATE_TABLE, TABLE

    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "cache" / "judge-answers.sqlite"
    assert main(["cache"]) == EXIT_OK
    assert capsys.readouterr().out == f"judge-answer cache: none yet at {path} (set by LOCALEVAL_CACHE_DIR); a run makes it\n"
    assert not path.parent.exists()  # asking made nothing
    from localeval import paths  # a folder a run cannot write: not promised a cache (an HPC probe's read-only
    with monkeypatch.context() as read_only:  # folder; root writes anywhere, so the folder's answer is given here)
        read_only.setattr(paths, "unwritable_because", lambda path: "permission denied or a read-only file system")
        assert main(["cache"]) == EXIT_OK
    assert capsys.readouterr().out.endswith("; a run cannot make it (permission denied or a read-only file system), "
                                            "and stops at once, exit 3, unless run with --no-cache\n")
    path.parent.mkdir()
    with sqlite3.connect(path) as connection:
        connection.execute(CREATE_TABLE)
        rows = [(f"{model}|weights|torch.float32|greedy", f"request {n}", "{}" * 200, 3, "[]")
                for model, count in (("judge-a", 5), ("judge-b", 12000)) for n in range(count)]
        connection.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?)", rows)
        # an older localeval's table, which no run reads: it kept the file large, unsaid (a review)
        connection.execute("CREATE TABLE answers (judge TEXT, request TEXT, text TEXT, output_tokens INTEGER)")
        connection.executemany("INSERT INTO answers VALUES (?, ?, ?, ?)", [row[:4] for row in rows[:7]])
    connection.close()
    size = path.stat().st_size
    assert main(["cache"]) == EXIT_OK
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith(f"judge-answer cache: {path} (") and "MB; set by LOCALEVAL_CACHE_DIR)" in shown[0]
    assert shown[1:5] == ["  answers  judge", "   12,000  judge-b", "        5  judge-a",
                          "        7  answers of an older localeval, which no run reads"]
    assert main(["cache", "clear"]) == EXIT_OK  # in batches: 12,000 is more than one
    assert capsys.readouterr().out == (f"cleared the judge-answer cache {path}: 12012 answers deleted; a run asks "
                                       "the judge again\n")
    assert path.stat().st_size < size / 10
    assert main(["cache"]) == EXIT_OK and capsys.readouterr().out.endswith(")\nit keeps no answers\n")


def test_a_damaged_cache_set_aside_is_listed_and_deleted_by_cache_clear(tmp_path, monkeypatch, capsys):
    """A run sets a damaged cache aside beside the new one: its answers outlived `cache clear`, while `cache`
    said "it keeps no answers" (a security review: erasure rules)."""
    from localeval.engine.cache import AnswerCache, DamagedCacheWarning

    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path))
    path = tmp_path / "judge-answers.sqlite"
    path.write_bytes(b"not a database" * 100)
    cache = AnswerCache(path)
    with pytest.warns(DamagedCacheWarning, match="set aside as"):
        cache.put_many("judge", {})  # as a run's first write finds it
    cache.close()
    aside = tmp_path / "judge-answers.sqlite.damaged"
    assert aside.read_bytes() == b"not a database" * 100
    assert main(["cache"]) == EXIT_OK
    assert capsys.readouterr().out.endswith(f"it keeps no answers\na damaged copy of it, set aside by a run that found "
                                            f"it damaged: {aside} (1.4 KB); no run reads it, and cache clear deletes it\n")
    assert main(["cache", "clear"]) == EXIT_OK
    assert capsys.readouterr().out == (f"cleared the judge-answer cache {path}: 0 answers deleted; its damaged copy set "
                                       f"aside, {aside}, deleted; a run asks the judge again\n")
    assert not aside.exists() and path.exists()
    assert main(["cache"]) == EXIT_OK and "set aside" not in capsys.readouterr().out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_the_answer_cache_is_made_readable_by_its_owner_alone(tmp_path, monkeypatch):
    """Its answers restate the samples (claims, questions, reasons quote them), and under umask 022 sqlite made
    the file readable by every user of the machine (a security review). The file takes its folder's modes: the
    folder made here is 0700, the user's own cache folder is closed where an older localeval left it 0755,
    and a team's folder given as LOCALEVAL_CACHE_DIR keeps its sharing, so every member can write (a review)."""
    import stat

    from localeval.engine import cache as cache_module

    own, shared = tmp_path / "own", tmp_path / "shared"
    for folder, mode in ((own, 0o755), (shared, 0o2775)):
        folder.mkdir()
        folder.chmod(mode)
    monkeypatch.setattr(cache_module.platformdirs, "user_cache_path", lambda name: own)
    mode_of = lambda path: stat.S_IMODE(path.stat().st_mode)  # noqa: E731
    for folder, umask in ((tmp_path / "new", 0o022), (own, 0o022), (shared, 0o002)):
        mask = os.umask(umask)
        try:
            cache = cache_module.AnswerCache(folder / "judge-answers.sqlite")
            cache.put_many("judge", {})
            cache.close()
        finally:
            os.umask(mask)
    assert [mode_of(folder) for folder in (tmp_path / "new", own, shared)] == [0o700, 0o700, 0o2775]
    files = [mode_of(folder / "judge-answers.sqlite") for folder in (tmp_path / "new", own, shared)]
    assert files == [0o600, 0o600, 0o664]


def test_cache_says_what_stops_it_a_run_holding_it_a_damaged_file_or_a_folder(tmp_path, monkeypatch, capsys):
    """Each was "cannot be read ... or delete it", a file in use included; a folder where the file belongs was
    "none yet", exit 0 (a review)."""
    import sqlite3

    from localeval.engine import cache

    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "WAITED", 0.1)
    path = tmp_path / "judge-answers.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute(cache.CREATE_TABLE)
    holder.execute("BEGIN EXCLUSIVE")  # a run writing
    assert main(["cache", "clear"]) == EXIT_ENVIRONMENT
    assert capsys.readouterr().err == (f"localeval: error: the judge-answer cache {path} is in use by a run that is "
                                       "writing to it (database is locked); try again when it ends\n")
    holder.execute("ROLLBACK")
    holder.close()
    path.write_bytes(b"not a database" * 100)
    assert main(["cache"]) == EXIT_ENVIRONMENT
    assert f"{path} is damaged (file is not a database): the next run that uses it sets it aside" in \
        capsys.readouterr().err
    path.unlink()
    path.mkdir()
    assert main(["cache"]) == EXIT_ENVIRONMENT
    assert capsys.readouterr().err == (f"localeval: error: the judge-answer cache {path} is a folder, where its file "
                                       "belongs: remove it, or change LOCALEVAL_CACHE_DIR\n")
