"""A hostile but fair user: bad files, bad options, a full disk, kills at any moment.

Every case ends in one line on stderr and its documented exit status (cli.EXIT_CODES): 2 for the
user's mistakes, 3 for the machine's, never a traceback, never a hang; and nothing already written
is destroyed. A tiny random-weight judge (conftest.tiny_judge) runs the real path in milliseconds.
"""

from __future__ import annotations

import errno
import hashlib
import html
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localeval import data as data_module
from localeval import models
from localeval.cli import EXIT_ENVIRONMENT, EXIT_INTERRUPTED, EXIT_OK, EXIT_USER, main

GOOD = {"id": "s1", "user_input": "When did the bridge open?", "retrieved_contexts": ["The bridge opened in 1932."],
        "response": "It opened in 1932.", "reference": "The bridge opened in 1932."}


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def fails(capsys, argv: list[str], status: int, expected: str) -> str:
    """Run the CLI in this process: the exit status, and one error line on stderr (after any progress
    line such as "resuming: ...") holding `expected`; no traceback."""
    assert main(argv) == status
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert [line for line in lines if line.startswith("localeval: error:")] == lines[-1:], err
    assert expected in lines[-1] and "Traceback" not in err, err
    return err


# --- bad data files: (file name, content, what the message says) -----------------------------------

DATA_CASES = {
    "empty": ("d.jsonl", b"", "no samples"),
    "blank lines only": ("d.jsonl", b"\n  \n\t\n", "no samples"),
    "malformed line": ("d.jsonl", jsonl(GOOD) + b'{"user_input": \n', "line 2: malformed JSON"),
    "truncated object": ("d.jsonl", b'{"id": "a", "user_input": "q"', "malformed JSON"),
    "not UTF-8": ("d.jsonl", b'{"user_input": "caf\xe9"}\n', "not UTF-8"),
    # UTF-16 without its byte-order mark (with it, it is read: test_data.py)
    "UTF-16": ("d.jsonl", '{"user_input": "q"}\n'.encode("utf-16-le"), "not UTF-8 text: UTF-16 without its"),
    "json top-level number": ("d.json", b"42", "expected a list of samples"),
    "json top-level string": ("d.json", b'"samples"', "expected a list of samples"),
    "json object without samples": ("d.json", b'{"rows": []}', "expected a list of samples"),
    "json samples not a list": ("d.json", b'{"samples": {"a": 1}}', "'samples' list; its 'samples' is an object"),
    # a summary.json given as data: "got a number" described the file as a number
    "json samples a count": ("d.json", b'{"samples": 6}', "'samples' list; its 'samples' is a number"),
    "record a list": ("d.jsonl", b'["q", "a"]\n', "expected a JSON object, got a list"),
    "record null": ("d.jsonl", b"null\n", "expected a JSON object, got null"),
    "record a number": ("d.jsonl", b"7\n", "expected a JSON object, got a number"),
    "user_input a number": ("d.jsonl", jsonl({**GOOD, "user_input": 5}), "field 'user_input': expected a string"),
    "user_input a list": ("d.jsonl", jsonl({**GOOD, "user_input": ["q"]}), "field 'user_input': expected a string"),
    "response an object": ("d.jsonl", jsonl({**GOOD, "response": {"text": "a"}}), "field 'response'"),
    "reference true": ("d.jsonl", jsonl({**GOOD, "reference": True}), "field 'reference'"),
    "user_input Infinity": ("d.jsonl", b'{"user_input": Infinity}\n', "field 'user_input': expected a string"),  # NaN is null
    "contexts a number": ("d.jsonl", jsonl({**GOOD, "retrieved_contexts": 3}), "expected a list of strings"),
    "contexts a string": ("d.jsonl", jsonl({**GOOD, "retrieved_contexts": "one"}), "got a string"),
    "contexts with a number": ("d.jsonl", jsonl({**GOOD, "retrieved_contexts": ["a", 2]}), "at item 2"),
    "contexts nested": ("d.jsonl", jsonl({**GOOD, "retrieved_contexts": [["a"]]}), "a list at item 1"),
    "id empty": ("d.jsonl", jsonl({**GOOD, "id": " "}), "field 'id'"),
    "id a float": ("d.jsonl", jsonl({**GOOD, "id": 1.5}), "field 'id'"),
    "id an object": ("d.jsonl", jsonl({**GOOD, "id": {"n": 1}}), "field 'id'"),
    "duplicate id": ("d.jsonl", jsonl(GOOD, GOOD), "duplicate id 's1'"),
    "alias and name": ("d.jsonl", jsonl({**GOOD, "question": "q"}), "both 'question' and 'user_input'"),
    "contexts alias and name": ("d.jsonl", jsonl({**GOOD, "contexts": ["c"]}), "both 'contexts'"),
    "unknown language": ("d.jsonl", jsonl({**GOOD, "language": "xx"}), "'xx' is not a language pysbd splits"),
    "language a number": ("d.jsonl", jsonl({**GOOD, "language": 1}), "field 'language'"),
    "nested 200,000 deep": ("d.jsonl", b"[" * 200_000 + b"]" * 200_000 + b"\n", "nested deeper than"),
    "nested deep in a .json": ("d.json", b'{"samples": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "nested deeper"),
    "unsupported extension": ("d.txt", jsonl(GOOD), "unsupported file type '.txt'"),
    "no extension": ("data", jsonl(GOOD), "unsupported file type ''"),
    "csv duplicate column": ("d.csv", b"user_input,user_input\nq,q\n", "column 'user_input' appears twice"),
    "csv alias and name": ("d.csv", b"question,user_input\nq,q\n", "both 'question' and 'user_input'"),
    "csv too many cells": ("d.csv", b"user_input,response\nq,a,extra\n", "row has 3 cells"),
    # a line break in an unquoted cell cuts a row in two: it was read as two samples missing fields
    "csv too few cells": ("d.csv", b"user_input,response,reference\nq,a first line\nsecond line,r\n",
                          "line 2: row has 2 cells but the header has 3; end a row with a separator for each "
                          "empty field (q,a,), and put a cell that holds a line break in double quotes"),
    "csv contexts not JSON": ("d.csv", b"user_input,retrieved_contexts\nq,plain text\n", "expected a JSON array"),
    "csv contexts an object": ("d.csv", b'user_input,retrieved_contexts\nq,"{""a"": 1}"\n', "got an object"),
    "parquet garbage": ("d.parquet", b"PAR1 this is not parquet", "not a readable Parquet file"),
}


@pytest.mark.parametrize("case", sorted(DATA_CASES))
def test_a_bad_data_file_is_one_line_and_exit_2(tmp_path, capsys, case):
    name, content, expected = DATA_CASES[case]
    path = tmp_path / name
    path.write_bytes(content)
    err = fails(capsys, ["run", str(path), "--out", str(tmp_path / "out")], EXIT_USER, expected)
    assert str(path) in err
    assert not (tmp_path / "out").exists()  # refused before --out was touched


def test_a_line_longer_than_the_limit_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(data_module, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "d.jsonl"
    path.write_bytes(jsonl(GOOD, {**GOOD, "id": "s2", "response": "x" * 2000}))
    fails(capsys, ["run", str(path)], EXIT_USER, "line 2: 2,1")


def test_a_csv_cell_larger_than_the_limit_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(data_module, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "d.csv"
    path.write_text("user_input,response\nq," + "x" * 2000 + "\n")
    fails(capsys, ["run", str(path)], EXIT_USER, "malformed CSV: field larger than field limit (1000)")


def test_a_file_larger_than_the_limit_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(data_module, "MAX_FILE_BYTES", 100)
    path = tmp_path / "d.jsonl"
    path.write_bytes(jsonl(GOOD, {**GOOD, "id": "s2"}))
    fails(capsys, ["run", str(path)], EXIT_USER, "split the data into several files")


@pytest.mark.parametrize("kind", ["missing", "directory", "device"])
def test_what_is_not_a_data_file(tmp_path, capsys, kind):
    path = {"missing": tmp_path / "nope.jsonl", "directory": tmp_path, "device": Path("/dev/null")}[kind]
    expected = {"missing": "file not found", "directory": "is a directory", "device": "not a regular file"}[kind]
    fails(capsys, ["run", str(path)], EXIT_USER, expected)


def test_a_dash_for_standard_input_is_told_to_save_the_data_first(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no file named "-" here
    assert main(["run", "-"]) == EXIT_USER
    assert capsys.readouterr().err.strip() == ("localeval: error: -: standard input is not read; save the data to "
                                               "a file first")


def test_a_fifo_is_refused_instead_of_blocking_forever(tmp_path):
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)  # nobody will ever write to it: reading it would wait forever
    result = subprocess.run([sys.executable, "-m", "localeval", "run", str(fifo)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == EXIT_USER and "not a regular file" in result.stderr


# --- bad options ----------------------------------------------------------------------------------

OPTION_CASES = {
    "unknown metric": (["--metrics", "faithfulnes"], "unknown metric 'faithfulnes'"),
    "unknown metric, all named": (["--metrics", "nope"], "faithfulness, or all"),
    "no metric": (["--metrics", ","], "no metrics chosen"),
    "unknown judge": (["--judge", "gpt-9"], "unknown judge 'gpt-9'"),
    "embedder as judge": (["--judge", "all-minilm-l6-v2"], "is a registered embedder, not a judge"),
    "judge as embedder": (["--embedder", "smollm2-135m-instruct"], "is a registered judge, not an embedder"),
    "gate without a metric": (["--fail-under", "=0.5"], "write METRIC=VALUE"),
    "directory without a model": (["--judge", "{tmp}"], "is not a model directory"),
    "unknown device": (["--device", "tpu"], "unknown device 'tpu'"),
    "unknown dtype": (["--dtype", "int3"], "unknown dtype 'int3'"),
    "batch size 0": (["--batch-size", "0"], "--batch-size must be at least 1"),
    "batch size negative": (["--batch-size", "-5"], "--batch-size must be at least 1"),
    "batch tokens 0": (["--max-batch-tokens", "0"], "--max-batch-tokens must be at least 1"),
    "questions 0": (["--questions", "0"], "--questions must be at least 1"),
    "limit 0": (["--limit", "0"], "--limit must be at least 1"),
    "window 0": (["--window", "0"], "--window must be at least 1"),
    "unknown language": (["--language", "xx"], "--language xx: not a language pysbd splits into sentences; choose"),
    "unknown language with a region": (["--language", "pt-BR"], "--language pt-BR: not a language pysbd splits"),
    "calibration missing": (["--calibration", "{tmp}/none.json"], "cannot read"),
    "calibration of another kind": (["--calibration", "{data}"], "not a localeval calibration file"),
    "labels missing file": (["--labels", "{tmp}/none.jsonl"], "--labels {tmp}/none.jsonl: file not found"),
    "labels without labels": (["--labels", "{data}"], "has no 'labels'"),
    "a worker without ray": (["--workers", "0"], "--workers applies only to a run on Ray; add --ray local"),
    "workers without ray": (["--workers", "4", "--cpus-per-worker", "2"], "--workers and --cpus-per-worker apply only"),
}


@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_a_bad_option_is_one_line_and_exit_2(tmp_path, capsys, case):
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(GOOD))
    extra, expected = OPTION_CASES[case]
    argv = [arg.format(tmp=tmp_path, data=data) for arg in extra]
    fails(capsys, ["run", str(data), "--out", str(tmp_path / "out"), *argv], EXIT_USER,
          expected.format(tmp=tmp_path, data=data))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["gate without a metric", "labels missing file", "calibration missing"])
def test_a_quick_refusal_is_not_buried_under_the_samples_warnings(tmp_path, capsys, case):
    """The embedder's long warning about samples in Chinese came first, the one line that stopped the run after it
    (a container probe)."""
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(GOOD, {**GOOD, "id": "s2", "user_input": "大桥是哪一年开通的？", "response": "大桥于1932年开通。",
                                         "language": "zh"}))
    extra, expected = OPTION_CASES[case]
    argv = ["run", str(data), "--out", str(tmp_path / "out"), *[arg.format(tmp=tmp_path, data=data) for arg in extra]]
    said = fails(capsys, argv, EXIT_USER, expected.format(tmp=tmp_path, data=data))
    assert "Chinese" not in said
    from localeval.data import load_samples
    from localeval.metrics import resolve_metrics
    from localeval.trust import embedder_language_warning

    # where the run goes on, these samples are warned of
    assert "in Chinese" in embedder_language_warning(None, load_samples(data), "en", resolve_metrics("all", {}))


@pytest.mark.parametrize(("argv", "expected"), [
    (["run", "d.jsonl", "--scoring", "fuzzy"], "argument --scoring: invalid choice: 'fuzzy'"),
    (["run", "d.jsonl", "--reasons", "maybe"], "argument --reasons: invalid choice"),
    (["run", "d.jsonl", "--batch-size", "many"], "argument --batch-size: invalid int value: 'many'"),
    (["run"], "the following arguments are required: data"),
    (["score", "d.jsonl"], "invalid choice: 'score'"),
    (["models", "list", "extra"], "did you mean `localeval models install extra`?"),
    (["models", "install"], "models install needs a model name"),
    (["models", "convert", "m.gguf"], "models convert needs a GGUF file and a new folder"),
    (["models", "prepare", "smollm2-135m-instruct", "dir"], "models prepare takes one model name; a folder is for"),
    (["models", "list", "--index-url", "http://mirror"], "--index-url and --find-links apply only to `models install`"),
    # the command's own --help lists its options, the top-level one does not
    (["run", "d.jsonl", "--frobnicate"], "unrecognized arguments: --frobnicate (`localeval run --help` lists"),
    (["bench", "d.jsonl", "--frobnicate"], "unrecognized arguments: --frobnicate (`localeval bench --help` lists"),
])
def test_an_option_argparse_refuses_is_one_line_and_exit_2(capsys, argv, expected):
    """argparse's refusals read like localeval's other errors: one line, no usage block."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == EXIT_USER and err.count("\n") == 1, err
    assert err.startswith("localeval: error: ") and expected in err and "--help` lists the options" in err


def test_out_naming_a_file_is_refused_and_the_file_kept(tmp_path, capsys, tiny_judge):
    data, out = tmp_path / "d.jsonl", tmp_path / "out"
    data.write_bytes(jsonl(GOOD))
    out.write_text("precious")
    fails(capsys, ["run", str(data), "--judge", str(tiny_judge), "--out", str(out)], EXIT_USER, "is a file, not a folder")
    assert out.read_text() == "precious"


@pytest.mark.nulls_expected
def test_an_embedder_no_chosen_metric_uses_does_not_stop_the_run_and_a_bad_name_is_warned_of(tmp_path, tiny_judge,
                                                                                              capsys):
    """As before the name checks moved ahead of loading: a bad --embedder cannot stop a run that needs none.
    But a typo went unseen until a metric that needs it was added (a probe): it is warned of, and kept."""
    import localeval
    from localeval.engine.scripted import ScriptedJudge

    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(GOOD))
    base = ["run", str(data), "--judge", str(tiny_judge), "--metrics", "context_recall", "--out", str(tmp_path / "out"),
            "--quiet", "--no-cache"]
    assert main([*base, "--embedder", str(tmp_path / "no-such-embedder")]) == EXIT_OK
    warning = (f"embedder '{tmp_path / 'no-such-embedder'}': no such folder; give a local model directory, or a "
               "registered name (all-minilm-l6-v2) (no chosen metric uses an embedder, so none is loaded)")
    assert f"localeval: warning: {warning}" in capsys.readouterr().err.splitlines()
    assert f"warning: {warning}" in json.loads((tmp_path / "out" / "summary.json").read_text())["warnings"]
    assert main([*base, "--embedder", "all-minilm-l6-v2"]) == EXIT_OK
    assert "warning" not in capsys.readouterr().err

    judge = ScriptedJudge(lambda request: {"verdicts": [{"sentence": 1, "reason": "r", "attributed": 1}]})
    with pytest.warns(localeval.LocalevalWarning, match="unknown embedder 'minilm': .* so none is loaded"):
        result = localeval.evaluate([GOOD], judge=judge, embedder="minilm", metrics=["context_recall"], progress=False)
    assert any("unknown embedder 'minilm'" in said for said in result.details["warnings"])


def test_out_inside_a_file_is_the_users_mistake_and_the_file_kept(tmp_path, capsys):
    data, blocking = tmp_path / "d.jsonl", tmp_path / "results"
    data.write_bytes(jsonl(GOOD))
    blocking.write_text("precious")
    fails(capsys, ["run", str(data), "--out", str(blocking / "run-1")], EXIT_USER, f"{blocking} is a file, not a folder")
    assert blocking.read_text() == "precious"


def test_out_through_a_link_to_nothing_is_the_users_mistake(tmp_path, capsys):
    """A dangling link was "cannot create it (File exists)", exit 3, which CI retries as the machine's fault
    (a CI probe)."""
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(GOOD))
    (tmp_path / "dangle").symlink_to("nowhere")
    for out in (tmp_path / "dangle", tmp_path / "dangle" / "run-1"):
        fails(capsys, ["run", str(data), "--out", str(out)], EXIT_USER,
              f"--out {out}: {tmp_path / 'dangle'} is a link to {tmp_path / 'nowhere'}, which is not there; make the "
              "folder it leads to, or give another")
    assert not (tmp_path / "nowhere").exists()
    # a loop of links was said as a link to a place "not there", and as DATA, "file not found" (an ops probe)
    (tmp_path / "loop-a").symlink_to("loop-b")
    (tmp_path / "loop-b").symlink_to("loop-a")
    fails(capsys, ["run", str(data), "--out", str(tmp_path / "loop-a")], EXIT_USER,
          f"{tmp_path / 'loop-a'} is a link that leads round in a loop of links; re-point or remove the link, or give another")
    fails(capsys, ["run", str(tmp_path / "loop-a")], EXIT_USER,
          f"{tmp_path / 'loop-a'}: is a link that leads round in a loop of links")
    fails(capsys, ["run", str(tmp_path / "dangle")], EXIT_USER,
          f"{tmp_path / 'dangle'}: is a link to {tmp_path / 'nowhere'}, which is not there")


def test_bench_refuses_an_out_that_is_a_file_before_any_judge_runs(tmp_path, capsys):
    labeled = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"
    out = tmp_path / "bench-out"
    out.write_text("precious")
    fails(capsys, ["bench", "--data", str(labeled), "--out", str(out)], EXIT_USER, "is a file, not a folder")
    assert out.read_text() == "precious"


@pytest.mark.parametrize("name", ["bench.md", "bench.json", "bench.html", "calibration.json",
                                  "results/1-smollm2-135m-instruct.jsonl"])  # the judge's results: replaced once
def test_bench_refuses_to_replace_a_file_localeval_did_not_write_before_any_judge_runs(tmp_path, capsys, name):
    labeled = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_text("# my notes\n")
    fails(capsys, ["bench", "--data", str(labeled), "--out", str(tmp_path)], EXIT_USER,
          f"{tmp_path / name} was not written by localeval")
    assert (tmp_path / name).read_text() == "# my notes\n"


@pytest.mark.parametrize("command", ["run", "bench"])
def test_a_file_or_folder_localeval_writes_that_is_a_link_is_refused_and_its_target_kept(tmp_path, capsys, command):
    """results.jsonl as a link to another run's was written through, cut to this run's rows, and bench's results/
    as a link had the files where it led deleted as an earlier bench's (a security probe)."""
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    (victim / "results.jsonl").write_text('{"id": "1", "evidence": {}}\n{"id": "2", "evidence": {}}\n')
    out = tmp_path / "out"
    out.mkdir()
    if command == "run":
        (out / "results.jsonl").symlink_to(victim / "results.jsonl")
        data = tmp_path / "d.jsonl"
        data.write_bytes(jsonl(GOOD))
        argv = ["run", str(data), "--out", str(out)]
        link = out / "results.jsonl"
    else:
        (out / "results").symlink_to(victim)
        argv = ["bench", "--data", str(Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"), "--out", str(out)]
        link = out / "results"
    fails(capsys, argv, EXIT_USER, f"{link} is a link (to {link.parent / os.readlink(link)}): localeval writes its own "
                                   "files in place, never through a link")
    assert (victim / "results.jsonl").read_text().count("\n") == 2


def test_a_link_waiting_where_a_file_is_written_is_never_written_through(tmp_path):
    """A link at the temporary file's fixed name (.summary.json.tmp) had its target overwritten, and results.jsonl
    was opened minutes after it was checked, following a link put there since (a review)."""
    from localeval.errors import EnvironmentFailure
    from localeval.results import ResultWriter, write_atomically

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".summary.json.tmp").symlink_to(victim)
    write_atomically(out / "summary.json", "{}\n")
    assert victim.read_text() == "precious\n" and (out / "summary.json").read_text() == "{}\n"
    assert not (out / "summary.json").is_symlink() and oct((out / "summary.json").stat().st_mode & 0o077) != "0o0"
    writer = ResultWriter(out, False, {}, "cpu")
    (out / "results.jsonl").symlink_to(victim)  # after the folder was checked
    with pytest.raises(EnvironmentFailure):
        writer.write({"id": "x", "evidence": {}})
    assert victim.read_text() == "precious\n"


def test_a_file_whose_first_line_is_blank_is_ours_only_where_nothing_follows(tmp_path):
    """A person's file beginning with a blank line passed for an empty one: replaced by run, deleted by bench as an
    earlier bench's results (a security probe)."""
    from localeval.out_folder import is_ours, scored_rows

    for text, ours in (("", True), ("\n", True), ("\nmy notes\n", False), ("  \n\n", False)):
        (tmp_path / "x.jsonl").write_text(text)
        assert is_ours(tmp_path / "x.jsonl", scored_rows) is ours, text


def test_bench_refuses_a_judge_folder_that_is_no_model_before_any_judge_runs(tmp_path, capsys):
    """run refused it at once (exit 2); bench ran it as a judge, which failed (exit 1, "a bug" in the table),
    and replaced the bench already in --out with a report of no judge (a probe)."""
    labeled = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"
    (tmp_path / "notamodel").mkdir()
    (tmp_path / "out").mkdir()
    earlier = tmp_path / "out" / "bench.json"
    earlier.write_text('{"judges": [], "started": "then"}')
    fails(capsys, ["bench", "--data", str(labeled), "--judges", str(tmp_path / "notamodel"), "--out",
                   str(tmp_path / "out")], EXIT_USER, f"{tmp_path / 'notamodel'} is not a model directory (no config.json)")
    assert earlier.read_text() == '{"judges": [], "started": "then"}'
    # and a folder given as the embedder, which failed inside every judge
    fails(capsys, ["bench", "--data", str(labeled), "--embedder", str(tmp_path / "notamodel"), "--out",
                   str(tmp_path / "out")], EXIT_USER, f"{tmp_path / 'notamodel'} is not a model directory (no config.json)")


def test_bench_refuses_a_fifo_as_labeled_data(tmp_path):
    fifo = tmp_path / "labeled.jsonl"
    os.mkfifo(fifo)
    result = subprocess.run([sys.executable, "-m", "localeval", "bench", "--data", str(fifo)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == EXIT_USER and "not a regular file" in result.stderr


# --- a finished run is never destroyed by one that fails ------------------------------------------


@pytest.fixture
def finished(tmp_path, tiny_judge):
    """A folder holding a finished two-sample run of the tiny judge."""
    data, out = tmp_path / "d.jsonl", tmp_path / "out"
    data.write_bytes(jsonl(GOOD, {**GOOD, "id": "s2", "response": "It opened in 1930."}))
    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--quiet", "--no-cache"]) == 0
    return data, out, {name: (out / name).read_bytes() for name in ("results.jsonl", "summary.json", "report.html")}


@pytest.mark.parametrize(("extra", "status", "expected"), [
    (["--judge", "no-such-judge"], EXIT_USER, "unknown judge"),
    (["--device", "tpu"], EXIT_USER, "unknown device"),
    (["--dtype", "int3"], EXIT_USER, "unknown dtype"),
    (["--metrics", "nope"], EXIT_USER, "unknown metric"),
    (["--calibration", "/nonexistent.json"], EXIT_USER, "cannot read"),
])
def test_a_refused_run_leaves_a_finished_run_untouched(capsys, finished, extra, status, expected):
    data, out, before = finished
    capsys.readouterr()
    fails(capsys, ["run", str(data), "--out", str(out), *extra], status, expected)
    assert {name: (out / name).read_bytes() for name in before} == before


def test_resume_into_another_runs_folder_is_refused(capsys, finished, tiny_judge):
    data, out, before = finished
    capsys.readouterr()
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume", "--no-cache"]
    # context_recall alone needs no embedder, so the embedder differs too: the metrics, its cause, are named alone
    err = fails(capsys, [*argv, "--metrics", "context_recall"], EXIT_USER, "holds another run (metrics: ")
    assert "[context_recall] now)" in err and "embedder" not in err and "settings" not in err
    # a second cause that does not follow from the metrics is named beside them
    err = fails(capsys, [*argv, "--metrics", "context_recall", "--language", "zh"], EXIT_USER,
                "holds another run (metrics: ")
    assert "; settings.language: " in err  # the setting that changed, not the whole settings cut short
    err = fails(capsys, [*argv, "--scoring", "soft"], EXIT_USER, "holds another run (settings.scoring.")
    assert "..." not in err and ": hard there, soft now" in err
    assert err.count(": hard there, soft now") == 3 and "; 1 more difference)" in err  # not silently cut short
    # lines with and without the sample's inputs in one results.jsonl would break whatever reads it
    fails(capsys, [*argv, "--with-inputs"], EXIT_USER, "holds another run (with_inputs: not set there, true now)")
    other = data.with_name("other.jsonl")
    other.write_bytes(jsonl({**GOOD, "response": "changed"}))
    fails(capsys, ["run", str(other), *argv[2:]], EXIT_USER, "holds another run (data_sha256:")
    assert {name: (out / name).read_bytes() for name in before} == before


def test_resume_into_a_folder_whose_run_json_is_gone_is_refused(capsys, finished, tiny_judge):
    """A CI job that kept only results.jsonl resumed into it with other data: one results.jsonl held two runs."""
    data, out, before = finished
    (out / "run.json").unlink()
    other = data.with_name("other.jsonl")
    other.write_bytes(jsonl({**GOOD, "id": "other-1"}))
    capsys.readouterr()
    fails(capsys, ["run", str(other), "--judge", str(tiny_judge), "--out", str(out), "--resume", "--no-cache"],
          EXIT_USER, f"--resume: {out} holds a results.jsonl without its run.json (kept apart, or removed)")
    assert {name: (out / name).read_bytes() for name in before} == before


def test_a_fresh_run_whose_results_cannot_be_opened_leaves_no_run_json_of_its_own(finished, monkeypatch):
    """run.json was written before results.jsonl was opened: a failure between the two left this run's
    run.json beside the earlier run's results, and --resume then took that run's samples as its own."""
    from localeval.errors import EnvironmentFailure, UserError
    from localeval.results import ResultWriter, check_same_run
    from localeval.scoring_rules import SCORING_RULES

    _, out, _ = finished
    opened = os.open

    def results_refused(path, *args, **kwargs):
        if Path(path).name == "results.jsonl":
            raise OSError(5, "Input/output error")
        return opened(path, *args, **kwargs)

    identity, earlier = {"data_sha256": "another run's", "scoring_rules": SCORING_RULES}, (out / "run.json").read_bytes()
    writer = ResultWriter(out, False, identity, "cpu")
    monkeypatch.setattr(os, "open", results_refused)
    with pytest.raises(EnvironmentFailure, match=r"Input/output error\); nothing was scored into it: once it can be "
                                                  "written, rerun the same command"):  # not --resume: another run's
        writer.write({"id": "x"})
    monkeypatch.undo()
    assert (out / "run.json").read_bytes() == earlier  # still the earlier run's, beside its results
    assert json.loads((out / "results.jsonl").read_text().splitlines()[0])["id"] == "s1"
    with pytest.raises(UserError, match="holds another run"):  # so --resume does not take them as this run's
        check_same_run(out, identity, "cpu")


def test_resume_with_nothing_to_resume_says_so_and_scores_from_the_start(capsys, tmp_path, tiny_judge):
    """A CI job that passes --resume on every run said "resuming: 0 of 1 samples already scored" on its first."""
    argv = one_sample_run(tmp_path, tiny_judge, "--resume", "--no-cache", "--quiet")
    assert main(argv) == EXIT_OK
    assert f"--resume: nothing to resume in {tmp_path / 'out'} (no results.jsonl); scoring from the start" in \
        capsys.readouterr().err


def test_a_resumed_run_interrupted_before_a_new_result_counts_what_it_kept(capsys, finished, tiny_judge, monkeypatch):
    """It said "no sample scored yet", with the earlier samples saved in the folder it resumed."""
    from localeval.engine.judge import TransformersJudge

    data, out, _ = finished
    first = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[0]
    (out / "results.jsonl").write_text(first, encoding="utf-8")  # killed after its first sample
    monkeypatch.setattr(TransformersJudge, "generate", raising(KeyboardInterrupt()))
    capsys.readouterr()
    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume", "--no-cache"]) == \
        EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines()[-1] == (f"interrupted: 1 sample saved in {out / 'results.jsonl'} "
                                                        "(all from before this run); rerun with --resume to continue")
    assert (out / "results.jsonl").read_text(encoding="utf-8") == first


def test_resume_takes_the_same_metrics_named_in_another_order(capsys, finished, tiny_judge):
    """The order changes no score; it was refused as another run's."""
    from localeval.metrics import DEFAULT_METRICS

    data, out, before = finished
    reversed_order = ",".join(reversed(DEFAULT_METRICS))
    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume", "--no-cache",
                 "--quiet", "--metrics", reversed_order]) == EXIT_OK
    assert (out / "results.jsonl").read_bytes() == before["results.jsonl"]  # nothing left to score


def test_a_fresh_run_interrupted_before_its_first_result_says_to_rerun_it_not_to_resume(capsys, finished, tiny_judge,
                                                                                         monkeypatch):
    """The folder still holds the earlier run, which --resume would refuse as another run's."""
    from localeval.engine.judge import TransformersJudge

    data, out, before = finished
    other = data.with_name("other.jsonl")
    other.write_bytes(jsonl({**GOOD, "response": "changed"}))
    monkeypatch.setattr(TransformersJudge, "generate", raising(KeyboardInterrupt()))
    capsys.readouterr()
    assert main(["run", str(other), "--judge", str(tiny_judge), "--out", str(out), "--no-cache"]) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "interrupted: no sample scored yet; rerun the same command to start again"
    assert {name: (out / name).read_bytes() for name in before} == before


def test_a_run_interrupted_while_torch_loads_says_nothing_was_written(capsys, finished, tiny_judge, monkeypatch):
    """Ctrl-C in the seconds of importing the engine said only "localeval: interrupted"."""
    from localeval import pipeline

    data, out, before = finished
    monkeypatch.setattr(pipeline, "build_scoring", raising(KeyboardInterrupt()))
    capsys.readouterr()
    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--no-cache"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines()[-1] == (f"interrupted before the first sample was scored: nothing was "
                                                        f"written in {out}")
    assert {name: (out / name).read_bytes() for name in before} == before


def test_resume_with_a_line_that_is_not_a_result_is_refused(capsys, finished, tiny_judge):
    data, out, _ = finished
    with (out / "results.jsonl").open("a") as results:
        results.write("this is not a result\n")
    capsys.readouterr()
    fails(capsys, ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume"], EXIT_USER,
          "not a localeval result")


def test_resume_with_a_results_file_localeval_did_not_write_is_refused(capsys, finished, tiny_judge):
    """A line with an id and a score but no evidence is someone else's: refused before anything is
    written, not read into the summary (or the report, which needs the evidence)."""
    data, out, before = finished
    (out / "results.jsonl").write_text('{"id": "zzz", "context_recall": 0.9}\n')
    capsys.readouterr()
    fails(capsys, ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume"], EXIT_USER,
          f"{out / 'results.jsonl'} was not written by localeval")
    assert (out / "summary.json").read_bytes() == before["summary.json"]


@pytest.mark.parametrize(("name", "text"), [
    ("results.jsonl", '{"my": "own data"}\n'),
    ("summary.json", '{"total": 3}\n'),
    ("report.html", "<html><body>my notes</body></html>"),
    ("run.json", '{"steps": []}'),
])
@pytest.mark.parametrize("resume", [False, True])
def test_a_run_refuses_to_replace_a_file_localeval_did_not_write(tmp_path, capsys, tiny_judge, name, text, resume):
    """--out . or --out analysis/ may hold the user's own results.jsonl or report.html: a run
    that would replace one is refused before anything is written, and says which file."""
    out = tmp_path / "analysis"
    out.mkdir()
    (out / name).write_text(text)
    argv = ["run", str(tmp_path / "d.jsonl"), "--judge", str(tiny_judge), "--out", str(out), "--no-cache"]
    (tmp_path / "d.jsonl").write_bytes(jsonl(GOOD))
    err = fails(capsys, argv + ["--resume"] * resume, EXIT_USER, f"{out / name} was not written by localeval")
    appended = resume and name == "results.jsonl"  # --resume adds to results.jsonl: "replace" misled
    assert f"this command would {'add its results to' if appended else 'replace'} it; choose another --out" in err
    assert sorted(p.name for p in out.iterdir()) == sorted([name, ".localeval.lock"])
    assert (out / name).read_text() == text


@pytest.mark.parametrize(("name", "text"), [
    ("results.jsonl", '{"id": "a", "context_recall": 1.0, "evidence": {"context_recall": {}}}\n'),  # before schema_version
    ("results.jsonl", '{"schema_version": 1, "id": "a", "user_input": "q", "evidence": {}}\n'),  # --with-inputs
    ("results.jsonl", '{"schema_version": 1, "id": "a", "context_rec'),  # the only line, cut short by a crash
    ("results.jsonl", ""),
    ("summary.json", '{\n  "metrics": {}\n}\n'),  # before schema_version
    ("summary.json", '{"schema_version": 1, "metrics": {}, "samples": 2}'),  # as --json prints it
    ("run.json", '{"data_sha256": "ab", "judge": "j"}'),
    ("report.html", "<!doctype html><meta charset='utf-8'><title>localeval report</title><p>"),
    ("report.html", " \n"),
])
def test_what_localeval_wrote_in_any_version_is_recognised_as_its_own(tmp_path, name, text):
    from localeval.out_folder import check_ours
    from localeval.results import RUN_OUTPUTS

    (tmp_path / name).write_text(text)
    check_ours(tmp_path, RUN_OUTPUTS)  # no error


def test_a_folder_where_a_run_writes_a_file_is_exit_2(tmp_path, capsys, tiny_judge):
    (tmp_path / "out" / "report.html").mkdir(parents=True)
    fails(capsys, one_sample_run(tmp_path, tiny_judge), EXIT_USER, "report.html is a folder where this command writes")


def test_fields_left_unread_are_said_on_the_terminal_and_kept_in_the_summary_and_report(tmp_path, capsys, tiny_judge):
    """`Response` for `response`: every metric null, and the reader of summary.json or the report
    is told why, not only the terminal."""
    data, out = tmp_path / "d.jsonl", tmp_path / "out"
    data.write_bytes(jsonl({**GOOD, "Notes": "checked by Ann"}))
    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--quiet", "--no-cache"]) == 0
    captured = capsys.readouterr()
    said = f"{data}: ignored fields, which localeval does not read: 'Notes' (1 of 1 records)"
    assert f"localeval: warning: {said}" in captured.err
    assert captured.err.count(said) == 1 and said not in captured.out  # once, as it is read: not again by the table
    warnings = json.loads((out / "summary.json").read_text(encoding="utf-8"))["warnings"]
    assert any(warning.startswith(f"warning: {said}") for warning in warnings)
    assert said.replace("'", "&#x27;") in (out / "report.html").read_text(encoding="utf-8")


def test_a_resumed_run_summarizes_only_the_samples_it_was_asked_for(capsys, finished, tiny_judge):
    data, out, _ = finished
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume", "--no-cache", "--quiet"]
    assert main([*argv, "--limit", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert {m["scored"] + m["null"] for m in summary["metrics"].values()} == {1}
    assert len((out / "results.jsonl").read_text().splitlines()) == 2  # the other sample's line is kept
    # and said, in summary.json and the report: means over the file differed from the summary's (a probe)
    assert summary["samples"] == 1 and summary["results_in_file"] == 2
    assert summary["data_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    beyond = ("note: results.jsonl holds 2 results, 1 of them for samples this run left out (an earlier run scored "
              "them; --limit); the summary and the report are of this run's 1 sample")
    assert beyond in summary["warnings"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert html.escape(beyond) in page and f"(sha256 {summary['data_sha256'][:12]})" in page


def test_a_fresh_run_into_a_finished_folder_says_it_replaces_the_earlier_results(capsys, finished, tiny_judge):
    data, out, _ = finished
    capsys.readouterr()
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--no-cache", "--quiet"]
    assert main([*argv, "--limit", "1"]) == 0
    err = capsys.readouterr().err
    assert f"note: {out / 'results.jsonl'} holds 2 scored samples of an earlier run; this run replaces them" in err
    assert len((out / "results.jsonl").read_text().splitlines()) == 1  # replaced, as the note said
    assert main([*argv, "--limit", "1", "--resume"]) == 0
    assert "replaces" not in capsys.readouterr().err  # --resume keeps them


def test_a_context_whose_verdict_list_cannot_fit_is_refused_before_decoding(capsys, tmp_path, tiny_judge):
    """A long legal context of many short sentences fits the judge's 8,192 tokens, but one verdict for each of
    its sentences does not: it was decoded for a minute to the limit, then null (a probe, 214 sentences)."""
    clauses = " ".join(f"Clause {i} applies." for i in range(1, 601))
    data = tmp_path / "data.jsonl"
    data.write_bytes(jsonl({**GOOD, "id": "statute", "retrieved_contexts": [clauses]}))
    out = tmp_path / "out"
    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--no-cache", "--quiet",
                 "--metrics", "context_relevance"]) == EXIT_OK
    row = json.loads((out / "results.jsonl").read_text())
    reason = row["evidence"]["context_relevance"]["null_reason"]
    found = re.fullmatch(r"too long for the judge: its prompt \(([\d,]+) tokens\) leaves no room for its answer "
                         r"\(at least ([\d,]+)\) in the 8,192 tokens the judge reads \(shorten .*\)", reason)
    prompt, answer = (int(found.group(n).replace(",", "")) for n in (1, 2))
    assert prompt + 256 <= 8192 < prompt + answer  # the old check let it through
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge"]["output_tokens"] == 0  # refused, not decoded


def test_a_sample_longer_than_the_judge_reads_is_null_and_says_why(capsys, tmp_path, tiny_judge):
    """SmolLM2 (the tiny judge's config) reads 8,192 tokens; a model past them writes nonsense, slowly."""
    long = {**GOOD, "id": "long", "retrieved_contexts": ["The bridge opened in 1932 after years of work. " * 1000]}
    data = tmp_path / "data.jsonl"
    data.write_bytes(jsonl(GOOD, long))
    out = tmp_path / "out"
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--no-cache", "--quiet",
            "--metrics", "answer_supported_precision,response_relevancy"]
    assert main(argv) == EXIT_OK
    stdout = capsys.readouterr().out
    assert re.search(r"too long for the judge: its prompt \([\d,]+ tokens\) leaves no room for its answer \(at least "
                     r"[\d,]+\) in the 8,192 tokens", stdout)
    rows = {row["id"]: row for row in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert rows["long"]["answer_supported_precision"] is None  # its prompt holds the context
    assert rows["long"]["evidence"]["answer_supported_precision"]["null_reason"].startswith("too long for the judge")
    assert rows["long"]["response_relevancy"] is not None  # its prompt does not: still scored
    assert rows["s1"]["answer_supported_precision"] is not None


@pytest.mark.parametrize("broken", ["not a model", "no chat template", "no tokenizer.json", "more layers than weights",
                                    "an embedder", "not generative", "weights of another shape", "weights cut short",
                                    "no tokenizer_config.json", "no weights"])
def test_a_judge_folder_that_is_not_an_instruct_model_is_one_line_and_exit_2(capsys, tmp_path, tiny_judge, broken):
    import shutil

    from localeval import models

    judge = tmp_path / "judge"
    if broken == "an embedder":  # a sentence-transformers folder: it failed only once judging began
        judge = models.resolve("all-minilm-l6-v2", "embedder").path
        expected = f"{judge} is a sentence-transformers embedder, not a judge: give it as --embedder"
    elif broken == "not generative":  # an encoder with a chat template copied in: transformers' own words
        shutil.copytree(tiny_judge, judge)
        config = json.loads((judge / "config.json").read_text())
        (judge / "config.json").write_text(json.dumps({**config, "architectures": ["BertModel"], "model_type": "bert"}))
        expected = f"{judge} is a model that does not generate text, not a judge"
    elif broken == "not a model":
        judge.mkdir()
        (judge / "config.json").write_text("{}")
        for name in ("tokenizer.json", "tokenizer_config.json", "model.safetensors"):
            shutil.copy(tiny_judge / name, judge)
        expected = f"{judge} cannot be loaded as a model: "
    elif broken == "weights of another shape":  # transformers raised a RuntimeError: a traceback, exit 1
        shutil.copytree(tiny_judge, judge)
        config = json.loads((judge / "config.json").read_text())
        (judge / "config.json").write_text(json.dumps({**config, "intermediate_size": 48}))
        expected = (f"{judge}: its weights do not match its config.json (6 of another shape, such as "
                    "model.layers.0.mlp.down_proj.weight is (16, 32) where config.json makes it (16, 48))")
    elif broken == "more layers than weights":  # transformers gives the third layer random weights
        shutil.copytree(tiny_judge, judge)
        config = json.loads((judge / "config.json").read_text())
        (judge / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))
        expected = f"{judge}: its weights do not match its config.json (9 missing, such as model.layers.2."
    elif broken == "no tokenizer.json":  # a Qwen folder without it: transformers made a tokenizer of 3 tokens
        shutil.copytree(tiny_judge, judge)
        (judge / "tokenizer.json").unlink()
        config = json.loads((judge / "tokenizer_config.json").read_text())
        (judge / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "Qwen2Tokenizer"}))
        expected = f"{judge}: its tokenizer file, tokenizer.json, is missing"
    elif broken == "no weights":  # bench ran the other judges first, then failed this one, exit 1 (a probe)
        shutil.copytree(tiny_judge, judge)
        (judge / "model.safetensors").unlink()
        expected = f"{judge}: no weights file (model.safetensors, or pytorch_model.bin) beside its config.json"
    elif broken == "no tokenizer_config.json":  # no end-of-text token: a TypeError deep in decoding (a probe)
        shutil.copytree(tiny_judge, judge)
        (judge / "tokenizer_config.json").unlink()
        expected = (f"{judge}: its tokenizer names no end-of-text token (eos_token), so no answer could end; its "
                    "tokenizer_config.json is missing or lacks one")
    elif broken == "weights cut short":  # a copy from a USB stick that stopped: safetensors' error, a traceback
        shutil.copytree(tiny_judge, judge)
        weights = judge / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
        expected = f"{judge} cannot be loaded as a model: a weights file is damaged or incomplete ("
    else:
        shutil.copytree(tiny_judge, judge)
        (judge / "chat_template.jinja").unlink()
        expected = f"{judge} has no chat template: a judge must be an instruct (chat) model"
    data = tmp_path / "data.jsonl"
    data.write_bytes(jsonl(GOOD))
    fails(capsys, ["run", str(data), "--judge", str(judge), "--out", str(tmp_path / "out"), "--no-cache", "--quiet",
                   "--metrics", "answer_supported_precision"], EXIT_USER, expected)


def test_a_judge_whose_chat_template_has_no_system_role_gets_its_instructions_in_the_user_message(
        capsys, tmp_path, tiny_judge):
    """Gemma's and Mistral's templates raise on a system message: that was a traceback, exit 1."""
    import shutil

    from localeval.engine.judge import TransformersJudge

    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    (judge / "chat_template.jinja").write_text(
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}<turn>{{ m['role'] }}\n{{ m['content'] }}</turn>\n{% endfor %}<turn>model\n")
    loaded = TransformersJudge(str(judge))
    prompt = loaded.tokenizer.decode(loaded._ids([("system", "Judge each sentence."), ("user", "The sentences.")]))
    assert prompt == "<turn>user\nJudge each sentence.\n\nThe sentences.</turn>\n<turn>model"
    data = tmp_path / "data.jsonl"
    data.write_bytes(jsonl(GOOD))
    assert main(["run", str(data), "--judge", str(judge), "--out", str(tmp_path / "out"), "--no-cache", "--quiet",
                 "--metrics", "answer_supported_precision"]) == EXIT_OK


# --- two runs aimed at one folder -----------------------------------------------------------------

HOLD_FOLDER = """
import sys, time
from pathlib import Path
from localeval.results import claim_folder
with claim_folder(Path(sys.argv[1])):
    print("holding", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def held_by_another_process():
    """Hold a folder the way a running localeval does, from another process; the process, to kill."""
    held = []

    def hold(folder: Path) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-c", HOLD_FOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
        held.append(process)
        assert process.stdout.readline().strip() == "holding"
        return process

    yield hold
    for process in held:
        process.kill()
        process.wait()


def test_a_second_run_into_a_folder_in_use_is_refused_and_the_first_runs_files_kept(
        capsys, finished, tiny_judge, held_by_another_process):
    data, out, before = finished
    holder = held_by_another_process(out)
    capsys.readouterr()
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--quiet", "--no-cache"]
    fails(capsys, argv, EXIT_USER, "is in use by another localeval run")
    fails(capsys, [*argv, "--resume"], EXIT_USER, "is in use by another localeval run")
    assert {name: (out / name).read_bytes() for name in before} == before
    holder.kill()  # a run killed mid-way: its lock goes with its process, nothing to clear by hand
    holder.wait()
    assert main(argv) == 0
    assert main(argv) == 0  # and a finished run releases it too


def test_a_second_run_into_a_folder_in_use_is_refused_before_torch_is_imported(tmp_path, held_by_another_process):
    """It imported torch and found its models first: refused only after 16-22 s on 2 cores."""
    out = tmp_path / "busy"
    out.mkdir()
    held_by_another_process(out)
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(GOOD))
    probe = ("import sys; from localeval.cli import main; status = main(sys.argv[1:]); "
             "print(status, 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe, "run", str(data), "--out", str(out)], capture_output=True,
                            text=True, timeout=300)
    assert result.stdout.split() == [str(EXIT_USER), "False"], result.stderr
    assert "is in use by another localeval run" in result.stderr


def test_a_run_that_fails_before_its_first_result_leaves_no_folder_it_made(tmp_path, capsys, tiny_judge):
    """A mistyped --out, or a model refused once torch had loaded, left a folder holding only the lock file."""
    from localeval import models

    embedder = models.resolve("all-minilm-l6-v2", "embedder").path
    argv = one_sample_run(tmp_path, tiny_judge, "--no-cache", "--embedder", str(tiny_judge), out="new/folder")
    fails(capsys, argv, EXIT_USER, "is a model that generates text")  # refused inside the claimed folder
    assert not (tmp_path / "new").exists()  # nor the parent made for it
    kept = tmp_path / "kept"
    kept.mkdir()
    fails(capsys, one_sample_run(tmp_path, embedder, "--no-cache", out="kept"), EXIT_USER, "not a judge")
    assert kept.is_dir()  # a folder the user made stays, lock file and all: it was theirs
    assert main(one_sample_run(tmp_path, tiny_judge, "--no-cache", "--quiet", out="made")) == 0
    assert (tmp_path / "made" / "results.jsonl").is_file()  # a run that scored keeps its folder


def test_a_second_bench_into_a_folder_in_use_is_refused_before_any_judge_runs(tmp_path, capsys,
                                                                             held_by_another_process):
    labeled = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"
    out = tmp_path / "bench-out"
    out.mkdir()
    held_by_another_process(out)
    fails(capsys, ["bench", "--data", str(labeled), "--out", str(out)], EXIT_USER, "is in use by another localeval run")
    assert [path.name for path in out.iterdir()] == [".localeval.lock"]


# --- the machine: a full disk, a read-only folder, no memory (exit 3) ------------------------------


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def full_at(monkeypatch, *prefixes: str) -> None:
    """A disk full as the temporary file of each file whose name `prefixes` begin is made (write_atomically's)."""
    import tempfile

    mkstemp = tempfile.mkstemp

    def full_for_these(*args, prefix: str = "", **kwargs):
        return full_disk() if prefix.startswith(prefixes) else mkstemp(*args, prefix=prefix, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", full_for_these)


def test_a_disk_that_fills_while_results_are_written_keeps_what_was_saved(tmp_path, capsys, tiny_judge, monkeypatch):
    from localeval import results

    data, out = tmp_path / "d.jsonl", tmp_path / "out"
    data.write_bytes(jsonl(*({**GOOD, "id": f"s{i}"} for i in range(4))))
    original = results.ResultWriter.write
    calls = []

    def write_then_fill(self, row):
        calls.append(row["id"])
        if len(calls) == 3:
            self._file.write = full_disk
        return original(self, row)

    monkeypatch.setattr(results.ResultWriter, "write", write_then_fill)
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--quiet", "--no-cache", "--window", "1"]
    fails(capsys, argv, EXIT_ENVIRONMENT, "the disk is full); 2 samples scored before it stay saved")
    saved = [json.loads(line)["id"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert saved == ["s0", "s1"]
    monkeypatch.undo()
    assert main([*argv, "--resume"]) == 0  # room again: the run goes on from there
    assert [json.loads(line)["id"] for line in (out / "results.jsonl").read_text().splitlines()] == [
        "s0", "s1", "s2", "s3"]


def test_a_disk_full_at_the_summary_keeps_the_previous_summary_whole(capsys, finished, tiny_judge, monkeypatch):
    data, out, before = finished
    full_at(monkeypatch, ".summary.json.", ".report.html.")  # every sample is scored: only these are written
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume", "--quiet", "--no-cache"]
    capsys.readouterr()
    fails(capsys, argv, EXIT_ENVIRONMENT, "the previous summary.json is kept")
    assert (out / "summary.json").read_bytes() == before["summary.json"]
    assert not list(out.glob(".*.tmp"))


def test_a_disk_full_at_the_first_summary_does_not_speak_of_a_previous_one(tmp_path, capsys, tiny_judge, monkeypatch):
    """"the previous report.html is kept" was said in a fresh --out, which had none."""
    full_at(monkeypatch, ".summary.json.")
    fails(capsys, one_sample_run(tmp_path, tiny_judge, "--quiet", "--no-cache"), EXIT_ENVIRONMENT,
          "summary.json (the disk is full); nothing was written in its place; results.jsonl has every scored sample: "
          "make room and rerun with --resume")
    assert len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == 1


def one_sample_run(tmp_path: Path, judge: Path, *extra: str, out: str = "out") -> list[str]:
    """The command line of a run of `judge` over one good sample, into tmp_path/out."""
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(GOOD))
    return ["run", str(data), "--judge", str(judge), "--out", str(tmp_path / out), *extra]


def test_a_judge_whose_outputs_are_not_numbers_stops_with_one_line(tmp_path, capsys, tiny_judge):
    """Weights with 256 KB overwritten inside (the store's check reads headers and sizes only): `run` ended in
    a traceback ("Out of range float values are not JSON compliant") and evaluate() gave every verdict 0 with
    a NaN probability, unsaid (an air-gap probe). A norm of NaNs gives the same outputs."""
    import localeval
    import torch
    from safetensors.torch import load_file, save_file
    from localeval.errors import ScoringStopped

    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    weights = load_file(judge / "model.safetensors")
    norm = next(name for name in weights if name.endswith("norm.weight"))
    save_file({**weights, norm: torch.full_like(weights[norm], float("nan"))}, judge / "model.safetensors",
              metadata={"format": "pt"})
    fails(capsys, one_sample_run(tmp_path, judge, "--no-cache", "--quiet"), EXIT_ENVIRONMENT,
          "localeval: error: the judge's outputs are not numbers (NaN) where it gives a verdict: its weights are "
          "damaged (bytes changed inside a file: copy the model folder again, or install it again) or overflow in "
          "its dtype (try --dtype float32); no sample scored yet")
    with pytest.raises(ScoringStopped, match=r"overflow in its dtype \(try dtype='float32'\)"):
        localeval.evaluate([GOOD], ["context_recall"], judge=str(judge), cache=False, progress=False)


def raising(error: BaseException):
    """A stand-in for whatever the machine fails in: it raises `error` however it is called."""
    def fail(*args, **kwargs):
        raise error

    return fail


@pytest.mark.parametrize("failure", [errno.EROFS, errno.EACCES])
def test_an_out_folder_that_cannot_be_created_is_exit_3(tmp_path, capsys, tiny_judge, monkeypatch, failure):
    argv = one_sample_run(tmp_path, tiny_judge, out="new")
    monkeypatch.setattr(Path, "mkdir", raising(OSError(failure, os.strerror(failure))))
    fails(capsys, argv, EXIT_ENVIRONMENT, "cannot create it")


@pytest.mark.parametrize("when, failure, full", [
    ("opened", "database or disk is full", True), ("written", "database or disk is full", True),
    ("opened", "attempt to write a readonly database", False),
    ("written", "disk I/O error", False),  # how sqlite says a disk quota met: no errno, not SQLITE_FULL
])
def test_an_answer_cache_that_cannot_be_used_is_turned_off_not_the_run(tmp_path, capsys, tiny_judge, monkeypatch,
                                                                       when, failure, full):
    """It stopped the run, exit 3, and the judge's minutes of answers were lost for want of a place to keep a copy
    (an ops probe; a quota, a review): it is only a cache."""
    import sqlite3

    error = sqlite3.OperationalError(failure)
    error.sqlite_errorcode = sqlite3.SQLITE_FULL if full else sqlite3.SQLITE_IOERR
    connect = sqlite3.connect

    class FailsOnWrite:  # a connection that fails as `error` says when answers are written
        def __init__(self, *args, **kwargs):
            self._connection = connect(*args, **kwargs)

        def executemany(self, *args):
            raise error

        def __getattr__(self, name):
            return getattr(self._connection, name)

        def __enter__(self):
            return self

        def __exit__(self, *args):
            return False

    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sqlite3, "connect", raising(error) if when == "opened" else FailsOnWrite)
    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet")) == EXIT_OK
    what, fix = ("cannot grow", "free space there") if full else ("cannot be used", "turn it off (--no-cache)")
    said = (f"the judge-answer cache {tmp_path / 'cache' / 'judge-answers.sqlite'} {what} ({failure}): this run goes "
            f"on without it, and keeps none of its answers for the next; {fix}, or set LOCALEVAL_CACHE_DIR to another "
            "folder")
    assert capsys.readouterr().err.count(said) == 1  # said once, though every window would write
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert f"warning: {said}" in summary["warnings"] and summary["metrics"]


# how running out of memory reads on a CPU: a MemoryError, torch's allocator, torch's mapping of a model file
# under a memory limit (a probe's `prlimit --as`: both were tracebacks, exit 1)
OUT_OF_MEMORY = [MemoryError(),
                 RuntimeError("[enforce fail at alloc_cpu.cpp:127] data. DefaultCPUAllocator: can't allocate memory: "
                              "you tried to allocate 268435456 bytes. Error code 12 (Cannot allocate memory)"),
                 RuntimeError("unable to mmap 269060552 bytes from file </store/model.safetensors>: Cannot allocate "
                              "memory (12)"),
                 OSError(errno.ENOMEM, "Cannot allocate memory")]


@pytest.mark.parametrize("error", OUT_OF_MEMORY, ids=["MemoryError", "allocator", "mmap", "ENOMEM"])
def test_running_out_of_memory_is_exit_3_and_keeps_what_was_scored(tmp_path, capsys, tiny_judge, monkeypatch, error):
    from localeval.engine.judge import TransformersJudge

    argv = one_sample_run(tmp_path, tiny_judge, "--no-cache")
    monkeypatch.setattr(TransformersJudge, "generate", raising(error))
    err = fails(capsys, argv, EXIT_ENVIRONMENT, "out of memory on cpu; no sample scored yet")
    assert "and rerun the same command" in err  # nothing of this run to resume


@pytest.mark.parametrize("error", OUT_OF_MEMORY[1:], ids=["allocator", "mmap", "ENOMEM"])
def test_running_out_of_memory_before_scoring_is_exit_3(tmp_path, capsys, tiny_judge, monkeypatch, error):
    """Outside scoring, which says what it kept (reading a dataset larger than memory, say)."""
    from localeval import runner

    monkeypatch.setattr(runner, "_load", raising(error))
    err = fails(capsys, one_sample_run(tmp_path, tiny_judge, "--no-cache"), EXIT_ENVIRONMENT, "out of memory (")
    assert "give the process more memory or lower --batch-size or --max-batch-tokens" in err
    assert str(error).splitlines()[-1][:40] in err  # torch's words say how much it asked for


def test_a_runtime_error_that_is_not_memory_stays_a_bug():
    from localeval.errors import out_of_memory

    assert not out_of_memory(RuntimeError("expected scalar type Float but found BFloat16"))
    assert not out_of_memory(OSError(errno.ENOSPC, "No space left on device"))
    assert not out_of_memory(FileNotFoundError(errno.ENOENT, "No such file or directory", "out of memory.jsonl"))
    assert out_of_memory(OSError("Cannot allocate memory (os error 12)"))  # safetensors' words, with no errno
    assert all(out_of_memory(error) for error in OUT_OF_MEMORY)


def test_a_bare_memory_error_in_a_bench_judge_says_no_empty_detail(monkeypatch):
    from types import SimpleNamespace

    from localeval.bench import worker

    monkeypatch.setattr(worker, "_evaluate", raising(MemoryError()))
    run = worker.run_judge(SimpleNamespace(name="smollm2-135m-instruct", device="cpu"))
    assert run.error == "out of memory on cpu; try a smaller --batch-size"


def test_the_rows_decoded_together_are_recorded_as_given_or_as_the_judge_s_own(tmp_path, tiny_judge, monkeypatch):
    """summary.json's settings.batch_size: --batch-size where given, else the judge's own for the device
    (models.batch_size: 16 for SmolLM2 on a CPU), as the engine used it."""
    def recorded(*extra: str, out: str) -> int:
        assert main(one_sample_run(tmp_path, tiny_judge, "--no-cache", "--quiet", *extra, out=out)) == EXIT_OK
        return json.loads((tmp_path / out / "summary.json").read_text("utf-8"))["settings"]["batch_size"]

    assert recorded("--batch-size", "5", out="given") == 5
    monkeypatch.setattr(models, "batch_size", lambda judge, device: 7)
    assert recorded(out="own") == 7


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_end_a_run_as_ctrl_c_does(tmp_path, capsys, tiny_judge, monkeypatch, stop):
    """How a scheduler stops a job (SIGTERM), and a closed terminal or dropped ssh session (SIGHUP,
    which ended a run silently): what was kept is said, exit 130, and the handler is put back."""
    from localeval.engine.judge import TransformersJudge

    number = getattr(signal, stop)
    judged = TransformersJudge.generate

    def stopped_in_the_second_window(self, *args, **kwargs):
        if tmp_path.joinpath("out", "results.jsonl").exists():
            os.kill(os.getpid(), number)
            time.sleep(10)  # the handler interrupts this
            raise AssertionError(f"{stop} did not stop the run")
        return judged(self, *args, **kwargs)

    data, out = tmp_path / "d.jsonl", tmp_path / "out"
    data.write_bytes(jsonl(GOOD, {**GOOD, "id": "s2"}))
    monkeypatch.setattr(TransformersJudge, "generate", stopped_in_the_second_window)
    before = signal.signal(number, signal.SIG_DFL)  # as in a terminal (a test runner under nohup ignores SIGHUP)
    try:
        argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--no-cache", "--window", "1"]
        assert main(argv) == EXIT_INTERRUPTED
        assert capsys.readouterr().err.splitlines()[-1] == (f"interrupted: 1 sample saved in {out / 'results.jsonl'}; "
                                                            "rerun with --resume to continue")
        assert [json.loads(line)["id"] for line in (out / "results.jsonl").read_text().splitlines()] == ["s1"]
        assert signal.getsignal(number) is signal.SIG_DFL
    finally:
        signal.signal(number, before)


def test_a_stop_while_the_interpreter_shuts_down_keeps_the_commands_exit_status():
    """A second SIGTERM within a second of the first (srun forwards one, a batch script's trap another) met
    Python's default handler once main had returned: an interrupted run that said so ended 143, not 130."""
    code = ("import atexit, os, signal, time\n"
            "from localeval import cli\n"
            "cli.main = lambda: 130  # a run that was interrupted, and said so\n"
            "atexit.register(lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.5)))  # the second stop\n"
            "cli.console()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_INTERRUPTED, (done.returncode, done.stderr[-2000:])


def test_a_run_under_nohup_outlives_its_terminal(tmp_path, capsys, tiny_judge, monkeypatch):
    """nohup ignores SIGHUP so that a run goes on once its terminal closes: localeval leaves that so."""
    from localeval.engine.judge import TransformersJudge

    judged = TransformersJudge.generate

    def hung_up(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGHUP)
        return judged(self, *args, **kwargs)

    monkeypatch.setattr(TransformersJudge, "generate", hung_up)
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert main(one_sample_run(tmp_path, tiny_judge, "--no-cache")) == 0
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_judge_folder_given_as_the_embedder_is_refused_before_anything_loads(tmp_path, capsys, tiny_judge, monkeypatch):
    """sentence-transformers pools any transformer: a judge's folder ran, with every similarity about 0.997."""
    from localeval.engine.judge import TransformersJudge

    argv = one_sample_run(tmp_path, tiny_judge, "--no-cache", "--embedder", str(tiny_judge))
    monkeypatch.setattr(TransformersJudge, "generate", raising(AssertionError("the judge was asked")))
    fails(capsys, argv, EXIT_USER, f"{tiny_judge} is a model that generates text (LlamaForCausalLM), not a "
                                   "sentence-transformers embedder: give it as --judge")


def test_a_loaders_reason_that_ends_in_a_colon_keeps_the_list_it_announces():
    """transformers' "Couldn't instantiate the backend tokenizer from one of:" was cut there."""
    from localeval.hf import _first_sentence

    error = ValueError("Couldn't instantiate the backend tokenizer from one of: \n(1) a `tokenizers` library "
                       "serialization file, \n(2) a slow tokenizer instance to convert or \n(3) an equivalent slow "
                       "tokenizer class to instantiate and convert.")
    assert _first_sentence(error) == ("Couldn't instantiate the backend tokenizer from one of: (1) a `tokenizers` "
                                      "library serialization file, (2) a slow tokenizer instance to convert or (3) an "
                                      "equivalent slow tokenizer class to instantiate and convert.")
    assert _first_sentence(ValueError("Unrecognized model in x.\nShould have a model_type")) == "Unrecognized model in x."
    assert _first_sentence(ValueError("")) == "ValueError"


def test_an_embedder_folder_that_does_not_load_fails_before_any_judging(tmp_path, capsys, tiny_judge, monkeypatch):
    """It was loaded on first use: after a whole window of judging, which was then lost."""
    from localeval.engine.judge import TransformersJudge

    broken = tmp_path / "embedder"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    argv = one_sample_run(tmp_path, tiny_judge, "--no-cache", "--embedder", str(broken))
    monkeypatch.setattr(TransformersJudge, "generate", raising(AssertionError("the judge was asked")))
    fails(capsys, argv, EXIT_USER, f"{broken} cannot be loaded as a model")


def test_a_run_stopped_midway_says_what_it_kept_and_how_to_go_on(tmp_path, capsys, tiny_judge, monkeypatch):
    """A Ray worker lost for good says only what failed; the run adds what it kept, as for running
    out of memory (before, it said "rerun with --resume" with nothing of this run to resume)."""
    from localeval.engine.judge import TransformersJudge
    from localeval.errors import ScoringStopped

    argv = one_sample_run(tmp_path, tiny_judge, "--no-cache")
    monkeypatch.setattr(TransformersJudge, "generate", raising(ScoringStopped("a Ray worker died (killed) and Ray did not restart it")))
    fails(capsys, argv, EXIT_ENVIRONMENT,
          "a Ray worker died (killed) and Ray did not restart it; no sample scored yet; rerun the same command to start again")


# --- kills at any moment ----------------------------------------------------------------------------


def kill_data(path: Path, n: int) -> None:
    path.write_bytes(jsonl(*({**GOOD, "id": f"k{i:02d}", "response": f"It opened in {1900 + i}. It is long."}
                             for i in range(n))))


def cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "localeval", "run", *argv]


def scores_by_id(out: Path) -> dict[str, dict]:
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)), "a sample was written twice"
    return {row["id"]: row for row in rows}


def test_killed_at_random_moments_then_resumed_scores_every_sample_once_as_an_uninterrupted_run(tmp_path, tiny_judge):
    """SIGKILL at random points of a run (loading, judging, writing), then --resume until it is done:
    every sample is scored exactly once, with the scores of a run that was never interrupted. One
    request at a time in float32, so a sample's computation is the same whatever ran beside it."""
    data = tmp_path / "d.jsonl"
    kill_data(data, 12)
    common = ["--judge", str(tiny_judge), "--quiet", "--no-cache", "--window", "1", "--batch-size", "1",
              "--dtype", "float32"]
    durations = []
    for reference in (tmp_path / "reference", tmp_path / "reference-again"):
        started = time.perf_counter()
        subprocess.run(cli(str(data), "--out", str(reference), *common), check=True, capture_output=True, timeout=600)
        durations.append(time.perf_counter() - started)
    # The faster run is the run's length: the first may pay for a cold disk or a busy machine, and
    # kills timed against a slow run would come after the run is done.
    duration = min(durations)
    expected = scores_by_id(tmp_path / "reference")
    assert scores_by_id(tmp_path / "reference-again") == expected

    rng = __import__("random").Random(7)
    kills = 0
    # Until three kills have landed: how many land in a round is chance (a resumed run is shorter than
    # the sleeps drawn for it, and a busy machine moves every timing), so a round with fewer is
    # checked, then another is run into a fresh folder.
    for round_ in range(5):
        out = tmp_path / f"killed-{round_}"
        kills += _killed_until_done(cli(str(data), "--out", str(out), *common), duration, rng)
        assert scores_by_id(out) == expected
        if kills >= 3:
            break
    assert kills >= 3


def _killed_until_done(argv: list[str], duration: float, rng) -> int:
    """Run `argv`, SIGKILL it after a random moment of up to `duration`, rerun it with --resume, and so
    on until a run finishes; the number of kills that landed."""
    kills = 0
    for attempt in range(40):
        process = subprocess.Popen([*argv, *(["--resume"] if attempt else [])], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, duration))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait(timeout=600)
        if process.returncode == 0:
            return kills
        assert process.returncode == -signal.SIGKILL, process.stderr.read().decode()
    subprocess.run([*argv, "--resume"], check=True, capture_output=True, timeout=600)
    return kills


def _scored_then_cut(tmp_path, tiny_judge, cut):
    """A run of 3 samples whose results.jsonl is then cut inside its last line (`cut`: bytes kept of
    that line, a fraction of it, or counted from its end); the run's argv, and its scores uncut."""
    data, out = tmp_path / "d.jsonl", tmp_path / "out"
    kill_data(data, 3)
    argv = ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--quiet", "--no-cache",
            "--batch-size", "1", "--dtype", "float32"]
    assert main(argv) == 0
    whole = scores_by_id(out)
    results = (out / "results.jsonl").read_bytes()
    last_start = results.rstrip(b"\n").rfind(b"\n") + 1
    length = len(results) - last_start
    keep = last_start + (int(cut * length) if isinstance(cut, float) else cut % length)
    (out / "results.jsonl").write_bytes(results[:keep])
    return argv, whole


@pytest.mark.parametrize("cut", [1, 17, 0.5, -2])
def test_a_line_torn_by_a_crash_is_cut_off_before_resuming(tmp_path, tiny_judge, cut, capsys):
    """A crash in the middle of a write leaves part of a line: --resume drops it, says so, scores that
    sample again, and never appends to the fragment."""
    argv, whole = _scored_then_cut(tmp_path, tiny_judge, cut)
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    out = tmp_path / "out"
    assert scores_by_id(out) == whole
    assert (f"resuming: 2 of 3 samples already scored in {out / 'results.jsonl'} (its last line, cut short when the "
            "run stopped, is dropped: that sample is scored again)") in capsys.readouterr().err


def test_a_last_line_whole_but_for_its_newline_is_kept_and_ended(tmp_path, tiny_judge, capsys):
    """A result whose newline alone is missing (a crash between the two, or an editor) was dropped as
    torn and scored again: it is a whole result, kept, and the next one starts on a line of its own."""
    argv, whole = _scored_then_cut(tmp_path, tiny_judge, -1)
    results = tmp_path / "out" / "results.jsonl"
    first, second, _ = results.read_bytes().split(b"\n")
    results.write_bytes(first + b"\n" + second)  # the third sample unscored, the second without its newline
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    assert "resuming: 2 of 3 samples already scored" in capsys.readouterr().err
    assert results.read_bytes().startswith(first + b"\n" + second + b"\n")
    assert scores_by_id(tmp_path / "out") == whole


@pytest.mark.parametrize("cut", [0.5, -1])
def test_a_resume_with_nothing_left_to_score_still_mends_the_last_line(tmp_path, tiny_judge, cut, capsys):
    """The last line is mended at the first new result; a resume that has none to write (--limit under
    the crashed run's samples) left a torn fragment, or a result without its newline, while it said the
    line was dropped: a file of JSON lines that a reader line by line could not parse."""
    argv, whole = _scored_then_cut(tmp_path, tiny_judge, cut)
    results = tmp_path / "out" / "results.jsonl"
    capsys.readouterr()
    assert main([*argv, "--limit", "2", "--resume"]) == 0
    rows = [json.loads(line) for line in results.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]
    assert results.read_bytes().endswith(b"\n") and len(rows) == len(results.read_bytes().splitlines())
    torn = cut == 0.5
    assert {row["id"] for row in rows} == ({"k00", "k01"} if torn else set(whole))
    said = capsys.readouterr().err
    assert ("(its last line, cut short when the run stopped, is dropped)" in said) == torn  # not "scored again"
    assert "scored again" not in said


def test_a_last_line_of_blanks_without_its_newline_is_no_torn_result(tmp_path, tiny_judge, capsys):
    argv, whole = _scored_then_cut(tmp_path, tiny_judge, 0)  # the last result removed whole
    results = tmp_path / "out" / "results.jsonl"
    results.write_bytes(results.read_bytes() + b"  ")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    assert "cut short" not in capsys.readouterr().err
    assert scores_by_id(tmp_path / "out") == whole


def test_a_refused_resume_leaves_a_torn_last_line_as_it_found_it(tmp_path, tiny_judge, capsys):
    """--resume cut a torn last line before it read the rest of the file, and then refused a line it could
    not read: the file it refused was no longer the file it was given."""
    argv, _ = _scored_then_cut(tmp_path, tiny_judge, 0.5)
    results = tmp_path / "out" / "results.jsonl"
    lines = results.read_bytes().split(b"\n")
    results.write_bytes(b"\n".join([lines[0], b"not a result", *lines[1:]]))
    before = results.read_bytes()
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 2
    assert "line 2: not a localeval result" in capsys.readouterr().err
    assert results.read_bytes() == before


def test_evaluate_called_from_two_threads_at_once_scores_as_it_does_alone(tiny_judge):
    """A notebook's thread pool: the threads shared pysbd's splitter and got each other's sentences."""
    from concurrent.futures import ThreadPoolExecutor

    import localeval

    samples = [GOOD, {**GOOD, "id": "s2", "reference": "It opened in 1932. It is long. It is red."}]
    options = dict(judge=str(tiny_judge), metrics=["context_recall", "faithfulness"], cache=False, progress=False)
    alone = localeval.evaluate(samples, **options).rows()
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda _: localeval.evaluate(samples, **options).rows(), range(2)))
    assert together == [alone, alone]


def test_warnings_of_calls_in_two_threads_stay_each_with_its_call_and_leave_python_warning():
    """Each call swapped Python's process-wide warning state (warnings.catch_warnings) while it read its
    data: two threads at once got each other's warnings in their results, and the last to end left every
    later warning of the process, the user's own included, recorded into a list and never shown (a probe)."""
    import warnings
    from concurrent.futures import ThreadPoolExecutor

    from localeval.api import as_samples
    from localeval.errors import said_and_kept

    extra = [{**GOOD, "id": f"x{i}", "notes": "kept by the team"} for i in range(1500)]  # read for a while
    clean = [{**GOOD, "id": f"c{i}"} for i in range(1500)]
    shown_before, filters_before = warnings.showwarning, list(warnings.filters)

    def read(records):
        return said_and_kept(lambda: as_samples(records))[1]  # shown on stderr, as a command shows them

    with ThreadPoolExecutor(2) as pool:
        for _ in range(4):
            from_extra, from_clean = pool.map(read, [extra, clean])
            assert [w.split(":")[1].strip() for w in from_extra] == ["samples"] and "ignored fields" in from_extra[0]
            assert from_clean == []
    assert warnings.showwarning is shown_before and warnings.filters == filters_before
    with pytest.warns(UserWarning, match="still shown"):
        warnings.warn("still shown")


def test_a_warning_said_and_kept_inside_another_is_the_outer_ones_to_show_and_a_kind_left_unsaid_is_dropped():
    import warnings

    from localeval.errors import LocalevalWarning, left_unsaid, said_and_kept, warn

    class Quiet(LocalevalWarning):
        pass

    def inner():
        warn(LocalevalWarning("inner"))
        with left_unsaid(Quiet):
            warn(Quiet("dropped"))
        return said_and_kept(lambda: warn(LocalevalWarning("nested")))[1]

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        nested, kept = said_and_kept(inner, caller_level=1)
    assert nested == ["warning: nested"] and kept == ["warning: inner", "warning: nested"]
    assert [str(w.message) for w in shown] == ["inner", "nested"]  # once each, by the outer call
    assert all(w.filename == __file__ for w in shown)  # at its caller's line, not inside localeval
    with pytest.warns(Quiet):  # dropped only inside the block
        warn(Quiet("said"))


def test_a_judge_shared_by_threads_decodes_for_one_caller_at_a_time(monkeypatch):
    """load_judge's judge given to evaluate() from a thread pool: two calls decoding at once would
    interleave its prefix cache and counters, so each waits for the one before it to end."""
    from concurrent.futures import ThreadPoolExecutor

    from localeval.engine.judge import TransformersJudge

    decoding, most = [0], [0]

    def one_call(self, *args):  # the decoding itself, as long as a real call's, without a model
        decoding[0] += 1
        most[0] = max(most[0], decoding[0])
        time.sleep(0.05)
        decoding[0] -= 1
        return []

    monkeypatch.setattr(TransformersJudge, "_generate", one_call)
    judge = TransformersJudge("no-model-is-loaded")
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: judge.generate([]), range(8))) == [[]] * 8
    assert most[0] == 1


def test_an_answer_cache_that_cannot_be_written_is_found_before_the_models_load(tmp_path, capsys, tiny_judge,
                                                                                monkeypatch):
    """A read-only cache folder failed the first write, after the judge had loaded (a CI probe's finding)."""
    from localeval import hf
    from localeval.engine.cache import unwritable

    cache = tmp_path / "cache"
    (cache / "judge-answers.sqlite").mkdir(parents=True)  # a folder where the cache's file belongs
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(cache))
    monkeypatch.setattr(hf, "load", raising(AssertionError("a model was loaded")))
    fails(capsys, one_sample_run(tmp_path, tiny_judge), EXIT_ENVIRONMENT,
          f"the judge-answer cache {cache / 'judge-answers.sqlite'} cannot be written (a folder is where its file "
          "belongs); set LOCALEVAL_CACHE_DIR to a writable folder, or turn the cache off (--no-cache)")
    assert not (tmp_path / "out").exists()
    # Path.exists() raises it: said, no traceback
    assert "(File name too long)" in unwritable(tmp_path / ("a" * 300) / "judge-answers.sqlite")


def test_a_cache_and_a_model_store_that_cannot_be_written_are_named_together_before_the_models_load(
        tmp_path, capsys, monkeypatch):
    """HOME set to a folder that is not there (a batch job's): the run named the cache; the next, after seconds of
    imports, the store its judge had to be prepared in (an HPC probe). Root writes anywhere, so the folders'
    answers are given here: a place `unwritable_because` turns down."""
    from localeval import hf, models
    from localeval.engine import cache

    store, answers = tmp_path / "store", tmp_path / "cache"
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(store))  # empty: the default judge is to be prepared there
    monkeypatch.setattr(models.ModelSpec, "installed", lambda spec: True)  # from its packages, wherever they are
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(answers))
    denied = lambda path: "permission denied or a read-only file system"  # noqa: E731
    monkeypatch.setattr(cache, "unwritable_because", denied)
    monkeypatch.setattr(models, "unwritable_because", denied)
    monkeypatch.setattr(hf, "load", raising(AssertionError("a model was loaded")))
    data = tmp_path / "data.jsonl"
    data.write_bytes(jsonl(GOOD))
    argv = ["run", str(data), "--out", str(tmp_path / "out")]
    judge = models.default_model("judge")
    fails(capsys, argv, EXIT_ENVIRONMENT,
          f"the judge-answer cache {answers / 'judge-answers.sqlite'} cannot be written (permission denied or a "
          "read-only file system); set LOCALEVAL_CACHE_DIR to a writable folder, or turn the cache off (--no-cache); "
          f"and the model store {store} cannot be written (permission denied or a read-only file system), and {judge} "
          f"must be prepared in it first; set LOCALEVAL_MODEL_STORE to a folder this user can write, or prepare it "
          f"where one can (`localeval models prepare {judge}`) and copy the store")
    fails(capsys, [*argv, "--no-cache"], EXIT_ENVIRONMENT, f"localeval: error: the model store {store} cannot be written")
    assert not (tmp_path / "out").exists() and not store.exists()


def test_an_answer_cache_folder_that_is_a_file_is_refused_before_any_judging(tmp_path, capsys, tiny_judge, monkeypatch):
    """It failed once the judge had loaded and a window was judged, as exit 3, "free space"."""
    from localeval.engine.judge import TransformersJudge

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "a-file"))
    monkeypatch.setattr(TransformersJudge, "generate", raising(AssertionError("the judge was asked")))
    fails(capsys, one_sample_run(tmp_path, tiny_judge), EXIT_USER,
          f"LOCALEVAL_CACHE_DIR={tmp_path / 'a-file'} is not a folder; name a folder (it is created if absent)")


@pytest.mark.parametrize("damage", ["not a database", "cut short"])
def test_a_damaged_answer_cache_is_set_aside_and_the_run_goes_on(tmp_path, capsys, tiny_judge, monkeypatch, damage):
    """A CI cache restored cut short failed every later run with exit 3, "free space", after the models had
    loaded (a CI probe). It is only a cache: set aside beside itself, said, and a new one started."""
    cache = tmp_path / "cache"
    file = cache / "judge-answers.sqlite"
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(cache))
    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet", out="first")) == 0
    first = (tmp_path / "first" / "results.jsonl").read_text("utf-8")
    broken = b"garbage\n" if damage == "not a database" else file.read_bytes()[:6000]
    file.write_bytes(broken)
    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet")) == 0
    reason = "file is not a database" if damage == "not a database" else "database disk image is malformed"
    said = (f"the judge-answer cache {file} was damaged ({reason}): set aside as {file}.damaged, and a new one "
            "started; its answers are asked of the judge again")
    assert f"localeval: warning: {said}" in capsys.readouterr().err
    assert f"warning: {said}" in json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))["warnings"]
    assert (tmp_path / "out" / "results.jsonl").read_text("utf-8") == first  # asked again, the same answers
    assert (cache / "judge-answers.sqlite.damaged").read_bytes() == broken  # kept to look at, not destroyed
    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet", out="third")) == 0  # the new cache is whole
    assert "damaged" not in capsys.readouterr().err


def test_a_damaged_cache_entry_is_asked_again(tmp_path, capsys, tiny_judge, monkeypatch):
    """An entry whose probabilities could not be read failed the run with a JSONDecodeError traceback, exit 1."""
    import sqlite3

    from localeval.engine.cache import TABLE

    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet", out="first")) == 0
    with sqlite3.connect(tmp_path / "cache" / "judge-answers.sqlite") as connection:
        assert connection.execute(f"UPDATE {TABLE} SET choices = '{{bad'").rowcount > 0
    connection.close()
    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet")) == 0
    assert (tmp_path / "out" / "results.jsonl").read_text("utf-8") == \
        (tmp_path / "first" / "results.jsonl").read_text("utf-8")


@pytest.mark.nulls_expected
def test_damage_found_while_a_cache_writes_is_set_aside_and_kept_with_the_run_s_warnings(tmp_path):
    """A cache damaged past its first pages is found by a later write, mid-run: the same remedy, and the warning
    kept in the run's details (it was only shown), its journal moved with it."""
    import sqlite3

    import localeval
    from localeval.engine.cache import TABLE, AnswerCache, DamagedCacheWarning
    from localeval.engine.scripted import ScriptedJudge

    cache = AnswerCache(tmp_path / "answers.sqlite")
    real_opened, damaged = cache._opened, []

    def opened_then_damaged():  # the first connection fails its first write as sqlite does on a damaged page
        connection = real_opened()
        if damaged:
            return connection
        damaged.append(True)

        def write_failing(*args):  # the journal as the failed write left it
            (tmp_path / "answers.sqlite-journal").write_bytes(b"a journal of the damaged file")
            malformed = sqlite3.DatabaseError("database disk image is malformed")
            malformed.sqlite_errorcode = 779  # SQLITE_CORRUPT_INDEX: an extended code of SQLITE_CORRUPT
            raise malformed
        return type("Damaged", (), {"__enter__": lambda self: self, "__exit__": lambda self, *a: False,
                                    "execute": connection.execute, "executemany": write_failing,
                                    "close": connection.close})()
    cache._opened = opened_then_damaged
    judge = ScriptedJudge(lambda request: {"verdicts": [{"sentence": 1, "reason": "r", "attributed": 1}]})
    with pytest.warns(DamagedCacheWarning, match="database disk image is malformed"):
        result = localeval.evaluate([GOOD], ["context_recall"], judge=judge, cache=cache)
    said = [line for line in result.details["warnings"] if "was damaged" in line]
    assert len(said) == 1 and said[0].startswith(f"warning: the judge-answer cache {tmp_path / 'answers.sqlite'} ")
    assert (tmp_path / "answers.sqlite.damaged").exists() and (tmp_path / "answers.sqlite.damaged-journal").exists()
    assert not (tmp_path / "answers.sqlite-journal").exists()
    with sqlite3.connect(tmp_path / "answers.sqlite") as written:  # the write, done again into the new file
        assert written.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] == 1
    written.close()


def test_a_damaged_cache_another_process_set_aside_first_is_not_set_aside_again(tmp_path):
    """Two processes sharing a damaged cache (Ray workers, two CI jobs): the second to find the damage must not
    move the first's new, whole file over the damaged one."""
    import sqlite3

    from localeval.engine.cache import AnswerCache

    damaged = tmp_path / "answers.sqlite"
    damaged.write_bytes(b"garbage\n")
    first, second = AnswerCache(damaged), AnswerCache(damaged)
    with pytest.raises(sqlite3.DatabaseError):
        second._opened()  # the second opened the damaged file before the first moved it
    from localeval.requests import JudgeRequest

    request = JudgeRequest.build("system", "user", {"type": "object"}, 8)
    first.get_many("judge", [request])  # opens: sets the damaged file aside, starts a new one
    assert len(first.said) == 1 and damaged.with_name("answers.sqlite.damaged").read_bytes() == b"garbage\n"
    malformed = sqlite3.DatabaseError("file is not a database")
    malformed.sqlite_errorcode = sqlite3.SQLITE_NOTADB
    second._set_aside(malformed)
    assert second.said == [] and damaged.with_name("answers.sqlite.damaged").read_bytes() == b"garbage\n"
    assert second.get_many("judge", [request]) == {} and second.said == []  # the first's new file, whole


INTERRUPTED_FIRST_USE = """
import os, signal, sys, threading, time
import localeval

threading.Timer(float(sys.argv[1]), lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    localeval.evaluate  # its first use imports torch and transformers, for seconds
    time.sleep(30)  # an interrupt not raised by now was lost
except KeyboardInterrupt:
    print("interrupted", flush=True)
import torch.fx
from transformers import AutoModelForCausalLM
from localeval import evaluate, load_judge
print("whole", flush=True)
"""


@pytest.mark.parametrize("after_s", [0.3, 1.0])
def test_ctrl_c_during_the_first_import_leaves_the_libraries_whole(after_s):
    """Ctrl-C in the first second of a notebook's first evaluate() left torch half imported: every later
    call failed with "partially initialized module 'torch' has no attribute 'fx'" or "Could not import
    module 'AttentionInterface'" until the kernel restarted (a probe)."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_FIRST_USE, str(after_s)], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["interrupted", "whole"], done.stderr[-2000:]


INTERRUPTED_IN_THE_MODELS_MODULE = """
import sys
import torch, transformers  # whole: the interrupt lands in the load
from localeval import load_judge

lines = 0
def trace(frame, event, arg):  # Ctrl-C at the k-th top-level line of the model's own module, as it is imported
    if not frame.f_code.co_filename.endswith("modeling_llama.py") or frame.f_code.co_name != "<module>":
        return None
    def line(frame, event, arg):
        global lines
        lines += event == "line"
        if lines == int(sys.argv[2]):
            sys.settrace(None)
            raise KeyboardInterrupt
        return line
    return line

sys.settrace(trace)
try:
    load_judge(sys.argv[1]).load()
except KeyboardInterrupt:
    print("interrupted", flush=True)
sys.settrace(None)
load_judge(sys.argv[1]).load()
print("loaded", flush=True)
"""


@pytest.mark.parametrize("at_line", [1, 40])
def test_ctrl_c_while_a_judge_imports_its_own_module_leaves_the_next_load_whole(tiny_judge, at_line):
    """The model's module (modeling_llama) is imported by the load, outside interrupts.held: an interrupt
    midway must not leave it half built for the next load, as one in `import torch` did. Python drops a
    module whose import failed, and transformers imports it again: checked here, not assumed."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IN_THE_MODELS_MODULE, str(tiny_judge), str(at_line)],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["interrupted", "loaded"], done.stderr[-2000:]


def test_an_embedder_folder_copied_without_its_subfolders_is_one_line_and_exit_2(capsys, tmp_path):
    """`cp model/* dest/` leaves out 1_Pooling/: sentence-transformers then failed in a TypeError, exit 1
    (an air-gapped user's probe). Normalize's folder, which all-MiniLM-L6-v2 does without, is not asked for."""
    import shutil

    from localeval import models

    registered = models.resolve("all-minilm-l6-v2", "embedder").path
    whole, files_only = tmp_path / "whole", tmp_path / "files-only"
    shutil.copytree(registered, whole)
    files_only.mkdir()
    for file in registered.iterdir():
        if file.is_file():
            shutil.copy(file, files_only)
    models.check_folder(whole, "embedder")  # no 2_Normalize/ there either, and none needed
    data = tmp_path / "data.jsonl"
    data.write_bytes(jsonl(GOOD))
    fails(capsys, ["run", str(data), "--embedder", str(files_only), "--out", str(tmp_path / "out"), "--no-cache",
                   "--quiet", "--metrics", "response_relevancy"], EXIT_USER,
          f"{files_only}: 1_Pooling, which its modules.json lists, is missing (a copy of the folder's files without its "
          "subfolders, as cp without -r makes); copy the whole folder")


def test_a_folder_that_holds_a_model_another_way_says_what_to_give(capsys, tmp_path):
    """A snapshot copied with `cp -a` without its blobs, or the models--ORG--NAME folder itself: "not a model
    directory (no config.json)", where config.json was there as a link to nothing (an air-gapped probe)."""
    cache = tmp_path / "models--org--judge"
    snapshot = cache / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to("../../blobs/0f1e2d")
    studio = tmp_path / "lmstudio"  # LM Studio keeps a model as a folder of one GGUF
    studio.mkdir()
    (studio / "judge-Q8_0.gguf").write_bytes(b"GGUF")
    data = tmp_path / "data.jsonl"
    data.write_bytes(jsonl(GOOD))
    for folder, expected in [(snapshot, "its config.json is a link to a file that is not there, as in a Hugging Face "
                                        "cache snapshot copied without the blobs it links to: copy the snapshot with "
                                        "its links followed (cp -rL)"),
                             (cache, f"it is a Hugging Face cache folder: give one of its snapshots, "
                                     f"{cache / 'snapshots' / 'REVISION'}"),
                             (studio, f"it holds a GGUF: convert it once (python -m localeval models convert "
                                      f"{studio / 'judge-Q8_0.gguf'} DIR), then give DIR")]:
        fails(capsys, ["run", str(data), "--judge", str(folder), "--out", str(tmp_path / "out")], EXIT_USER,
              f"{folder} is not a model directory (no config.json); {expected}")


def test_interrupts_held_come_once_the_block_is_done():
    """interrupts.held, as imports, Ray's start and bench's files use it: the block finishes, then one
    KeyboardInterrupt, however many came; the handlers are put back; SIGTERM, which the CLI makes a
    KeyboardInterrupt, is held too; an ignored Ctrl-C (nohup) stays ignored."""
    from localeval.interrupts import held

    before = {number: signal.signal(number, signal.default_int_handler) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        for number in (signal.SIGINT, signal.SIGTERM):
            reached = []
            with pytest.raises(KeyboardInterrupt):
                with held():
                    for _ in range(2):
                        os.kill(os.getpid(), number)
                        time.sleep(0.1)  # handled meanwhile, and the block goes on
                        reached.append("on")
            assert reached == ["on", "on"] and signal.getsignal(number) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def test_a_callers_own_signal_handler_runs_once_the_import_is_whole(tmp_path, monkeypatch):
    """A per-test timeout (pytest-timeout's SIGALRM, signal.alarm) landing in the first evaluate()'s imports left
    torch half built, and every later call failed ("partially initialized module 'torch' has no attribute 'fx'"),
    as Ctrl-C had before it was held (a notebook probe). Its handler now runs as the import ends."""
    from localeval.interrupts import import_whole

    (tmp_path / "slow_to_import.py").write_text("import time\ntime.sleep(0.5)\nWHOLE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def timed_out(number, frame):
        raise TimeoutError("the caller's timeout")

    before = signal.signal(signal.SIGALRM, timed_out)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)  # inside the import's half second
        with pytest.raises(TimeoutError, match="the caller's timeout"):
            import_whole("slow_to_import")
        assert sys.modules["slow_to_import"].WHOLE and signal.getsignal(signal.SIGALRM) is timed_out
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
        sys.modules.pop("slow_to_import", None)


def test_a_signal_asyncio_watches_reaches_its_loop_once_when_held():
    """asyncio hears a signal through its wakeup fd as it comes; raised again after the block, it heard it twice,
    and a callback ran twice (a review)."""
    import asyncio

    from localeval.interrupts import held

    heard = []
    loop = asyncio.new_event_loop()
    try:
        loop.add_signal_handler(signal.SIGUSR1, heard.append, "usr1")
        with held():
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.1)
        loop.run_until_complete(asyncio.sleep(0.2))
        loop.remove_signal_handler(signal.SIGUSR1)
    finally:
        loop.close()
    assert heard == ["usr1"]


def test_a_callers_timeout_while_a_model_loads_stays_a_timeout():
    """TimeoutError is an OSError without an errno, as transformers' "not a model" is: a caller's timeout landing in
    from_pretrained was said as "cannot be loaded as a model: alarm", blaming the folder (a notebook probe)."""
    from localeval import hf

    def times_out(path, **options):
        raise TimeoutError("alarm")

    with pytest.raises(TimeoutError, match="alarm"):
        hf.load(times_out, "/models/judge")


def test_after_a_hang_up_what_goes_to_the_terminal_goes_nowhere(tmp_path):
    """A closed terminal fails every write (EIO): the run's last words ended it in a traceback no one saw,
    exit 1, not 130. A terminal that hung up is sent to the null device; a live one (a SIGHUP sent by
    hand) and a file stay."""
    import pty

    from localeval.interrupts import away_from_terminal

    null = os.stat(os.devnull)
    log = (tmp_path / "log").open("wb")
    live_controller, live = pty.openpty()
    gone_controller, gone = pty.openpty()
    os.close(gone_controller)  # as the terminal of a dropped ssh session
    try:
        away_from_terminal((live, gone, log.fileno()))
        assert (os.fstat(gone).st_rdev, os.fstat(gone).st_ino) == (null.st_rdev, null.st_ino)
        assert os.isatty(live) and os.fstat(log.fileno()).st_ino == (tmp_path / "log").stat().st_ino
    finally:
        log.close()
        for fd in (live, gone, live_controller):
            os.close(fd)


@pytest.mark.parametrize("command, variable, wanted", [
    # a store only read need not be writable (a container's read-only store, a probe: it was "a folder it can write")
    (["models"], "LOCALEVAL_MODEL_STORE", "the folder of prepared models (one it can only read will do"),
    (["run", "DATA", "--metrics", "context_recall"], "LOCALEVAL_CACHE_DIR", "a folder it can write"),
])
def test_a_user_without_a_home_folder_is_told_which_folder_to_name(tmp_path, capsys, monkeypatch, tiny_judge,
                                                                   command, variable, wanted):
    """A container run under a random uid (no HOME, no entry in the user list) got platformdirs' RuntimeError,
    a traceback on every command (an ops probe)."""
    without_a_home_folder(monkeypatch)
    if command[0] == "run":
        command = [*one_sample_run(tmp_path, tiny_judge), *command[2:]]
        monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    assert main(command) == EXIT_ENVIRONMENT
    out, said = capsys.readouterr()
    if command == ["models"]:  # the names are still listed: they are what a user needs next
        assert all(f"{name} " in out for name in models.registry())
        assert "smollm2-135m-instruct          judge     no model store" in out  # the embedder's is in its package
        assert "all-minilm-l6-v2               embedder  no model store" not in out
    assert f"localeval: error: this user has no home folder (HOME is unset or not an absolute path, and the user list " \
           f"has no entry for uid {os.getuid()}): set {variable} to {wanted}" in said
    assert "Traceback" not in said
    if command[0] == "run":
        assert said.rstrip().endswith("or turn the cache off (--no-cache)")
        assert main([*command, "--no-cache", "--quiet"]) == 0


def without_a_home_folder(monkeypatch) -> None:
    """platformdirs as it is for a user with no home folder, and neither of localeval's folders named."""
    import platformdirs

    def no_home(*args, **kwargs):
        raise RuntimeError("could not determine the home directory for '~/.local/share'")

    for folder in ("user_data_path", "user_cache_path"):
        monkeypatch.setattr(platformdirs, folder, no_home)
    monkeypatch.delenv("LOCALEVAL_MODEL_STORE", raising=False)
    monkeypatch.delenv("LOCALEVAL_CACHE_DIR", raising=False)


def test_a_run_without_a_home_folder_names_every_folder_it_needs_at_once(tmp_path, capsys, monkeypatch, tiny_judge):
    """A container probe: the cache was named, then on the next try, after seconds of imports, the model store;
    and a run of one's own judge, which needs no store, was refused for want of one."""
    import pickle

    from localeval.paths import NoHomeFolder

    without_a_home_folder(monkeypatch)
    run = [*one_sample_run(tmp_path, tiny_judge), "--judge", "smollm2-135m-instruct"]  # a registered judge: stored
    assert main(run) == EXIT_ENVIRONMENT
    said = capsys.readouterr().err
    assert said.count("localeval: error:") == 1 and "set LOCALEVAL_MODEL_STORE to the folder of prepared models" in said
    assert "; and set LOCALEVAL_CACHE_DIR to a folder it can write, or turn the cache off (--no-cache)" in said
    assert main([*run, "--no-cache"]) == EXIT_ENVIRONMENT
    said = capsys.readouterr().err
    assert "set LOCALEVAL_MODEL_STORE" in said and "LOCALEVAL_CACHE_DIR" not in said
    # one's own judge, and the registered embedder, whose ready folder is in its package: no store asked for
    own = one_sample_run(tmp_path, tiny_judge, "--no-cache", "--quiet", out="own")
    assert main(own) == EXIT_OK, capsys.readouterr().err
    # as a Ray worker's error comes back: pickled, and read as it was made (it was "set t; and set h; ...")
    error = NoHomeFolder(["A to a", "B to b"])
    assert str(pickle.loads(pickle.dumps(error))) == str(error) and str(error).endswith("set A to a; and set B to b")


def test_a_data_file_named_in_bytes_that_are_not_utf8_is_scored_and_summarised(tmp_path, tiny_judge):
    """data\\xff.jsonl: every sample was scored, then summary.json could not be written (UnicodeEncodeError, a
    traceback), and --resume failed the same way (an ops probe)."""
    data = tmp_path / os.fsdecode(b"data\xff.jsonl")
    data.write_bytes(jsonl(GOOD))
    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert summary["data"] == str(data)  # its escape read back as the name Python knows the file by
    assert "data\\udcff.jsonl" in (tmp_path / "out" / "report.html").read_text("utf-8")


def test_another_users_files_in_out_are_said_as_such_before_the_models_load(tmp_path, capsys, tiny_judge, monkeypatch):
    """An ops probe, running as another user in a shared folder: a lock file left by root was "cannot make its lock
    file", and a results.jsonl it could not append to failed only after a sample was scored, told to "make room"."""
    import filelock

    from localeval import results
    from localeval.engine.judge import TransformersJudge
    from localeval.results import ResultWriter

    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet", "--no-cache")) == 0
    out = tmp_path / "out"
    lock = out / ".localeval.lock"
    lock.touch()
    monkeypatch.setattr(filelock.UnixFileLock, "_acquire", raising(PermissionError(errno.EACCES, "Permission denied")))
    stat = Path.stat

    def owned_by(owner: int):
        def stat_as_owned(path, *args, **kwargs):  # the lock's owner as given: st_uid is the 5th field
            found = stat(path, *args, **kwargs)
            return os.stat_result((*found[:4], owner, *found[5:])) if path == lock else found
        return stat_as_owned

    for owner, whose in ((os.getuid(), "not writable"), (os.getuid() + 1, "another user's")):
        monkeypatch.setattr(Path, "stat", owned_by(owner))
        fails(capsys, one_sample_run(tmp_path, tiny_judge, "--resume"), EXIT_ENVIRONMENT,
              f"--out {out}: its lock file {lock} is {whose} and cannot be opened (Permission denied); it holds "
              "nothing, so where no run is writing in the folder, remove it")
    monkeypatch.undo()
    access = os.access
    monkeypatch.setattr(results.os, "access", lambda path, mode: not str(path).endswith("results.jsonl")
                        and access(path, mode))
    monkeypatch.setattr(TransformersJudge, "load", raising(AssertionError("the models were loaded")))
    fails(capsys, one_sample_run(tmp_path, tiny_judge, "--resume"), EXIT_ENVIRONMENT,
          f"cannot write {out / 'results.jsonl'} (permission denied or a read-only file system), which --resume adds "
          "to; make it writable, or give another --out")
    writer = ResultWriter(out, True, json.loads((out / "run.json").read_text("utf-8")), "cpu")
    failure = writer._failed(PermissionError(errno.EACCES, "Permission denied"))
    assert str(failure).endswith("1 sample scored before it stay saved: make it writable and rerun with --resume")


def test_a_damaged_cache_that_cannot_be_set_aside_is_turned_off_not_the_run(tmp_path, capsys, tiny_judge,
                                                                              monkeypatch):
    """It stopped the run, exit 3: the cache is only a cache."""
    from localeval.engine import cache

    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "judge-answers.sqlite").write_bytes(b"garbage\n")
    replace = os.replace

    def refused_for_the_cache(source, target):
        if "judge-answers" in str(source):
            raise PermissionError(errno.EACCES, "Permission denied")
        replace(source, target)

    monkeypatch.setattr(cache.os, "replace", refused_for_the_cache)
    assert main(one_sample_run(tmp_path, tiny_judge, "--quiet")) == EXIT_OK
    assert ("cannot be used (damaged: file is not a database; and it could not be set aside: Permission denied; "
            "remove it): this run goes on without it") in capsys.readouterr().err
    assert (tmp_path / "cache" / "judge-answers.sqlite").read_bytes() == b"garbage\n"  # left as it was


@pytest.mark.parametrize("part", ["model", "tokenizer"])
def test_a_judge_folder_that_names_code_of_its_own_is_refused_and_its_code_never_runs(tmp_path, tiny_judge, part):
    """transformers asked "Do you wish to run the custom code? [y/N]" and a `y` ran the folder's Python (a security
    probe); a tokenizer's code ran and the run ended 0, its scores the code's to change."""
    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    if part == "model":
        config = json.loads((judge / "config.json").read_text())
        config.update(model_type="evilmodel", auto_map={"AutoConfig": "configuration_evil.EvilConfig",
                                                        "AutoModelForCausalLM": "modeling_evil.EvilModel"})
        (judge / "config.json").write_text(json.dumps(config))
        (judge / "configuration_evil.py").write_text(code + "from transformers import LlamaConfig\n"
                                                     "class EvilConfig(LlamaConfig):\n    model_type = 'evilmodel'\n")
        (judge / "modeling_evil.py").write_text(code)
    else:
        config = json.loads((judge / "tokenizer_config.json").read_text())
        config.update(tokenizer_class="EvilTok", auto_map={"AutoTokenizer": [None, "tokenization_evil.EvilTok"]})
        (judge / "tokenizer_config.json").write_text(json.dumps(config))
        (judge / "tokenization_evil.py").write_text(code + "from transformers import PreTrainedTokenizerFast\n"
                                                    "class EvilTok(PreTrainedTokenizerFast):\n    pass\n")
    result = subprocess.run([sys.executable, "-m", "localeval", *one_sample_run(tmp_path, judge, "--no-cache")],
                            input="y\n" * 5, capture_output=True, text=True, timeout=300)
    assert not marker.exists()
    assert result.returncode == EXIT_USER, result.stderr
    assert (f"localeval: error: {judge} cannot be loaded as a model: it names Python code of its own to run (auto_map "
            "in its config.json or tokenizer_config.json, or a module of its own in modules.json), which localeval "
            "never runs") in result.stderr
    assert "[y/N]" not in result.stdout + result.stderr


def test_weights_pickled_with_code_to_run_are_refused_in_one_line(tmp_path, tiny_judge):
    """torch refused to run the pickle's os.system (weights_only), but the user got its traceback, exit 1, and its
    advice to load with weights_only=False (a security probe)."""
    import pickle

    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    for weights in judge.glob("*.safetensors*"):
        weights.unlink()
    marker = tmp_path / "ran"

    class RunsCode:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (judge / "pytorch_model.bin").write_bytes(pickle.dumps(RunsCode()))
    result = subprocess.run([sys.executable, "-m", "localeval", *one_sample_run(tmp_path, judge, "--no-cache")],
                            capture_output=True, text=True, timeout=300)
    assert not marker.exists()
    assert result.returncode == EXIT_USER, result.stderr
    assert result.stderr.strip().endswith(f"localeval: error: {judge} cannot be loaded as a model: its pickled weights "
                                          "(.bin) hold something other than plain tensors (code to run, which localeval "
                                          "never runs, or damage); give the model's weights as safetensors")


def test_pickled_weights_cut_short_are_said_in_one_line(tmp_path, tiny_judge):
    """torch's zip reader raised a RuntimeError ("failed finding central directory"): a traceback, exit 1, for a
    copy that stopped (as safetensors cut short already had its line)."""
    import torch
    from safetensors.torch import load_file

    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    weights = judge / "pytorch_model.bin"
    torch.save(load_file(judge / "model.safetensors"), weights)
    (judge / "model.safetensors").unlink()
    with open(weights, "r+b") as file:
        file.truncate(weights.stat().st_size // 2)
    result = subprocess.run([sys.executable, "-m", "localeval", *one_sample_run(tmp_path, judge, "--no-cache")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == EXIT_USER, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"localeval: error: {judge} cannot be loaded as a model: a weights file (.bin) is damaged or incomplete "
        "(PytorchStreamReader failed reading zip archive")  # its first sentence: the rest is advice for torch's users
    assert result.stderr.strip().endswith("directory); copy the model folder again") and "Traceback" not in result.stderr


def test_control_characters_from_a_data_file_reach_the_terminal_as_escapes(tmp_path, capsys):
    """A hostile id set the terminal's title, coloured its text and wrote over its line (ESC, BEL, CR) in an error
    and in a warning (a security probe)."""
    hostile = "a\x1b]0;PWNED\x07\x1b[31mRED\rFAKE\u202eTXT"
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": hostile, "user_input": "q"}) + "\n" + json.dumps({"id": hostile, "user_input": "q"})
                    + "\n", encoding="utf-8")
    assert main(["run", str(data), "--out", str(tmp_path / "out")]) == EXIT_USER
    said = capsys.readouterr().err
    assert "duplicate id 'a\\x1b]0;PWNED\\x07\\x1b[31mRED\\rFAKE\\u202eTXT'" in said
    assert not any(character in said for character in "\x1b\x07\r\u202e")
    data.write_text(json.dumps({"id": "1", "user_input": "q", "response": "r", f"x{hostile}": 1}) + "\n",
                    encoding="utf-8")
    # stopped at once after the data's warning: --metrics names none
    assert main(["run", str(data), "--metrics", "nothing", "--out", str(tmp_path / "out")]) == EXIT_USER
    said = capsys.readouterr().err
    assert "xa\\x1b]0;PWNED" in said and not any(character in said for character in "\x1b\x07\r\u202e")


def test_a_judge_folder_whose_weights_are_in_a_folder_of_their_own_says_where(tmp_path, capsys, tiny_judge):
    """It said "copy the model folder whole" of a folder copied whole (a probe bringing its own judge)."""
    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    (judge / "weights").mkdir()
    for weights in judge.glob("*.safetensors"):
        weights.rename(judge / "weights" / weights.name)
    fails(capsys, one_sample_run(tmp_path, judge), EXIT_USER,
          f"{judge}: no weights file (model.safetensors, or pytorch_model.bin) beside its config.json: "
          "weights/ holds its weights; move them beside config.json")
    shutil.copy(judge / "config.json", judge / "weights" / "config.json")  # a trainer's checkpoint-500/
    fails(capsys, one_sample_run(tmp_path, judge), EXIT_USER, "weights/ holds a model of its own; give that folder as "
                                                             "the judge")


def test_installing_a_folder_says_it_needs_no_installing(tmp_path, capsys, tiny_judge):
    """`models install /path/my-judge` said "unknown model; choose one of ..." (a probe bringing its own judge)."""
    for action in ("install", "prepare"):
        fails(capsys, ["models", action, str(tiny_judge)], EXIT_USER,
              f"models {action} NAME: {tiny_judge} is a folder, which needs no installing or preparing: give it as "
              f"--judge {tiny_judge} (or --embedder)")


def test_a_data_path_with_a_tilde_no_shell_expanded_is_the_users_file(tmp_path, monkeypatch, capsys, tiny_judge):
    """'~/data.jsonl' quoted (or from a CI variable) was read from the home folder, then its digest taken of
    ./~/data.jsonl: a FileNotFoundError traceback, or, with a folder named ~ here, another file's digest for
    --resume to check (a paths probe)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "d.jsonl").write_bytes(jsonl(GOOD))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert main(["run", "~/d.jsonl", "--judge", str(tiny_judge), "--out", str(out), "--quiet", "--no-cache",
                 "--metrics", "context_recall"]) == EXIT_OK
    recorded = json.loads((out / "run.json").read_text(encoding="utf-8"))["data_sha256"]
    assert recorded == hashlib.sha256(jsonl(GOOD)).hexdigest()


def test_an_out_folder_with_control_characters_is_shown_escaped_on_the_last_line(tmp_path, capsys, tiny_judge):
    """"results in o^[[32mz/results.jsonl": the run's last line wrote an --out's ESC to the terminal raw, where the
    warnings escaped it (a paths probe)."""
    assert main(one_sample_run(tmp_path, tiny_judge, "--no-cache", "--metrics", "context_recall",
                               out="o\x1b[32mz")) == EXIT_OK
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "\x1b" not in last and "o\\x1b[32mz/results.jsonl" in last


def test_resuming_with_another_dtype_names_the_dtype(capsys, finished, tiny_judge):
    """It said "judge: smollm2-135m-instruct|b179c9523d0e6a0f|torch.float32+prep... there, ...", the part that
    differed cut off."""
    data, out, before = finished
    err = fails(capsys, ["run", str(data), "--judge", str(tiny_judge), "--out", str(out), "--resume", "--no-cache",
                         "--dtype", "bfloat16"], EXIT_USER, "holds another run (judge dtype: torch.float32")
    assert "torch.bfloat16" in err and "..." not in err
    # --dtype auto chooses by the machine: a job requeued onto another kind of node is told what to give
    assert err.strip().endswith("; the run was scored in float32: resume it with --dtype float32")
    assert {name: (out / name).read_bytes() for name in before} == before
    from localeval.run_differences import dtype_advice

    def advice(there: str, here: str, weights: str = "1") -> str:  # on this machine's CPU
        return dtype_advice({"judge": f"j|1|{there}|greedy"}, {"judge": f"j|{weights}|{here}|greedy"}, "cpu")

    # an int8 run resumed with --dtype auto (a review: it was told of "another kind of device")
    assert advice("torch.bfloat16+int8-weights", "torch.float32+prepacked") == (
        "; the run was scored in int8: resume it with --dtype int8")
    assert advice("torch.float16", "torch.float32+prepacked") == (
        "; the run was scored in float16: resume it with --dtype float16")
    # unprepacked float32 (a GPU's, or an older torch's) is what no --dtype gives on this CPU
    assert advice("torch.float32", "torch.float32+prepacked") == (
        "; the run was scored as torch.float32, which no --dtype gives on this machine: resume it on a machine like "
        "the one it began on")
    assert advice("torch.float32", "torch.float32") == ""
    assert advice("torch.bfloat16+int8-weights", "torch.float32+prepacked", weights="2") == ""  # no dtype helps
    from localeval.run_differences import said_differences  # another model: that alone, not its weights and dtype beside it

    assert said_differences({"judge": "a|1|torch.float32|greedy", "metrics": ["m"]},
                            {"judge": "b|2|torch.bfloat16|greedy", "metrics": ["m"]}) == "judge model: a there, b now"


def test_resuming_after_the_judge_folder_changed_says_so(tmp_path, capsys, tiny_judge):
    """It said "holds another run (judge: /x/judge|c455...|torch.float32+pr... there, ...)", ids cut short, never
    that the folder's files had changed (a probe bringing its own judge, retrained)."""
    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    assert main(one_sample_run(tmp_path, judge, "--quiet", "--no-cache")) == EXIT_OK
    (judge / "generation_config.json").write_text("{}")  # retrained, in a file of its own
    fails(capsys, one_sample_run(tmp_path, judge, "--resume", "--no-cache"), EXIT_USER,
          f"holds another run (the judge folder {judge} changed since, its files or weights; judge weights: ")


def test_a_lock_file_that_is_a_link_is_said_as_such(tmp_path, capsys, tiny_judge):
    """"its lock file ... is not writable and cannot be opened (Too many levels of symbolic links)" (a review);
    exit 2, as for a link in results.jsonl's place, not 3 (a security review)."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".localeval.lock").symlink_to(victim)
    fails(capsys, one_sample_run(tmp_path, tiny_judge), EXIT_USER,
          f"its lock file {tmp_path / 'out' / '.localeval.lock'} is a link; remove it, or choose another --out")
    assert victim.read_text() == "precious\n"


def test_what_localeval_says_in_lines_of_its_own_keeps_them_and_escapes_the_rest(capsys):
    """Judges' names from bench.json or a folder reached the terminal raw in bench's lines (a review)."""
    from localeval.errors import for_terminal
    from localeval.progress import to_stderr

    to_stderr("\nnote: /x/\x1b[31mjudge\r runs again")
    assert capsys.readouterr().err == "\nnote: /x/\\x1b[31mjudge\\r runs again\n"
    assert for_terminal("a\nb") == "a\\nb" and for_terminal("a\nb", lines=True) == "a\nb"


def _forty_facts_judged(tmp_path, tiny_judge, positions: int, reasons: str) -> dict:
    """The results line of a response of 40 sentences, a verdict each (answer_supported_precision), judged by the
    tiny judge told it reads `positions` tokens."""
    from localeval.cli import main

    judge = tmp_path / "judge"
    shutil.copytree(tiny_judge, judge)
    config = json.loads((judge / "config.json").read_text())
    (judge / "config.json").write_text(json.dumps({**config, "max_position_embeddings": positions}))
    response = " ".join(f"Fact number {i} is that the bridge has {i} lamps." for i in range(1, 41))
    data = tmp_path / "long.jsonl"
    data.write_bytes(jsonl({"id": "long", "user_input": "How many lamps?", "response": response,
                            "retrieved_contexts": ["The bridge has lamps."]}))
    assert main(["run", str(data), "--judge", str(judge), "--metrics", "answer_supported_precision", "--reasons",
                 reasons, "--out", str(tmp_path / "out"), "--quiet", "--no-cache"]) == 0
    return json.loads((tmp_path / "out" / "results.jsonl").read_text().splitlines()[0])


@pytest.mark.parametrize("positions, scored", [(1463, True), (1462, False)])
def test_the_least_answer_is_not_overcounted_an_answer_of_that_length_is_decoded(tmp_path, tiny_judge, positions,
                                                                                   scored):
    """Without reasons this judge writes the shortest answer the schema allows, 397 tokens after a 1,066-token
    prompt: in 1,463 positions it fits and scores (its end is read off its last token), in one fewer it is refused
    undecoded. A count one too high refused requests that fit."""
    row = _forty_facts_judged(tmp_path, tiny_judge, positions, reasons="off")
    assert (row["answer_supported_precision"] is not None) == scored
    if not scored:
        assert row["evidence"]["answer_supported_precision"]["null_reason"].startswith(
            "too long for the judge: its prompt (1,066 tokens) leaves no room for its answer (at least 397)")


def test_an_answer_cut_off_at_the_judges_limit_is_said_as_too_long_not_as_bad_json(tmp_path, tiny_judge):
    """A response of hundreds of sentences, a verdict each: the prompt fit, the answer was stopped where the
    judge's positions end, and its null said "judge output is not valid JSON", blaming the judge (a probe)."""
    # fits the prompt and the shortest answer (1,107 + 517 tokens, which the engine would refuse undecoded), not the
    # reasons this judge writes (1,197 tokens in all)
    row = _forty_facts_judged(tmp_path, tiny_judge, 1700, reasons="on")
    evidence = row["evidence"]["answer_supported_precision"]
    assert row["answer_supported_precision"] is None
    assert evidence["null_reason"] == ("too long for the judge: its answer did not fit in the 1,700 tokens the judge "
                                       "reads and was cut off (shorten the sample's texts, or use a judge that reads "
                                       "more)")
    assert evidence["judge_output"].startswith('{"verdicts":[')  # what it wrote before the limit, to look at


def test_every_key_a_run_writes_is_in_the_output_document(tmp_path, tiny_judge, output_doc_keys, json_keys):
    """A QA lead's scripts read results.jsonl and summary.json by key, and much of them was written nowhere (a
    probe): docs/output.md names every key of a run of every metric, with the inputs, labels, a gate and a
    calibration, each in a table row of its own."""
    labeled, out = tmp_path / "labeled.jsonl", tmp_path / "out"
    records = [json.loads(line) for line in (Path(__file__).resolve().parent / "data" / "labeled_small.jsonl")
               .read_text(encoding="utf-8").splitlines()]
    for record in records:  # people's score for the example metric of one's own, as bench reads it
        record["labels"]["answers_directly"] = 1
    labeled.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    assert main(["run", str(labeled), "--judge", str(tiny_judge), "--out", str(out), "--quiet", "--no-cache",
                 "--metrics", "all", "--with-inputs", "--labels", str(labeled), "--limit", "2",
                 "--metrics-from", str(Path(__file__).resolve().parent.parent / "examples" / "answers_directly.py"),
                 "--fail-under", "faithfulness=0", "--calibration", str(_calibration_of(tiny_judge, tmp_path))]) == EXIT_OK
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    written = set().union(*(json_keys(document, NAMED_MAPS) for document in (summary, rows, run)))
    assert {"corrected", "at_least", "user_input", "fitted_on", "sha256"} <= written  # what the run was for
    assert written - output_doc_keys == {"answers_directly"}  # a metric of one's own: keyed by its name, as documented


def _calibration_of(judge: Path, tmp_path: Path) -> Path:
    """A calibration file with a threshold for this judge folder's context_recall, as bench --calibrate writes one."""
    from localeval.calibration import fitted_with, write_calibration
    from localeval.models import folder_weights
    from localeval.samples import Sample

    path, folder = tmp_path / "calibration.json", str(judge.resolve())
    write_calibration(path, {folder: {"context_recall": {"threshold": 0.4, "helps_both_halves": True}}}, "dev.jsonl",
                      [Sample(str(n), f"question {n}?") for n in range(20)],
                      {folder: fitted_with(folder_weights(folder), folder, {})})
    return path


def test_a_calibration_that_applies_no_threshold_is_said_by_evaluate_as_by_run(tmp_path, tiny_judge):
    """Its thresholds are for context_recall, and the call asks answer_supported_precision: run noted it, evaluate()
    said nothing (a review)."""
    import localeval
    from localeval import CalibrationWarning

    calibration = str(_calibration_of(tiny_judge, tmp_path))
    with pytest.warns(CalibrationWarning, match=r"applies no threshold to .*\(its thresholds, for context_recall, are "
                      r"for none of the metrics chosen\); every metric is scored as scoring= says"):
        result = localeval.evaluate([GOOD], ["answer_supported_precision"], judge=str(tiny_judge),
                                    calibration=calibration, cache=False)
    assert any(w.startswith("note: ") and "scored as scoring= says" in w for w in result.details["warnings"])
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(GOOD))
    assert main(["run", str(data), "--judge", str(tiny_judge), "--metrics", "answer_supported_precision", "--out",
                 str(tmp_path / "out"), "--quiet", "--no-cache", "--calibration", calibration]) == EXIT_OK
    warnings_kept = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))["warnings"]
    assert any(w.startswith("note: ") and "scored as --scoring says" in w for w in warnings_kept)


# maps whose keys are names from the data or the run (metrics, languages, null reasons, gates), not fixed keys
NAMED_MAPS = frozenset({"metrics", "languages", "null_reasons", "gates", "evidence", "reasons", "example", "scoring",
                        "thresholds", "metrics_from"})


def test_no_writable_temporary_folder_is_exit_3_at_once(tmp_path, capsys, tiny_judge, monkeypatch):
    """A container with a read-only root file system and nothing mounted at /tmp: torch's import found no
    temporary folder, a traceback and exit 1 after seconds (a probe). Python's own search is run, on
    folders that are not there (as root every folder can be written)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # what Python found first is kept: searched again
    monkeypatch.setattr(tempfile, "_candidate_tempdir_list", lambda: [str(tmp_path / "none"), str(tmp_path / "nor")])
    err = fails(capsys, one_sample_run(tmp_path, tiny_judge, "--no-cache"), EXIT_ENVIRONMENT,
                "no temporary folder this user can write (No usable temporary directory found in")
    assert "set TMPDIR to a folder it can write" in err
    assert not (tmp_path / "out").exists()
