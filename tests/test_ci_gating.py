"""A CI pipeline gating on scores: --fail-under, --json on stdout, schema versions, --with-inputs,
assert_scores for pytest, and progress that does not fill a log."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import pytest

from localeval.cli import main
from localeval.errors import EXIT_BELOW_THRESHOLD, EXIT_OK, EXIT_USER, UserError
from localeval.gating import (caveats, corrected_but_not_gated, failures, gated_value, outcomes, parse_gates,
                              undecided)
from localeval.progress import LineProgress, progress_for
from localeval.results import SCHEMA_VERSION
from localeval.summary import format_null_reasons, summarize
from localeval.testing import assert_scores

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "samples.jsonl"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Two samples with a reference and one without (its context_recall is null)."""
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    with_reference = [r for r in rows if r.get("reference") or r.get("ground_truth")][:2]
    without = {**with_reference[0], "id": "no-reference"}
    without.pop("reference", None), without.pop("ground_truth", None)
    path = tmp_path_factory.mktemp("data") / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*with_reference, without]), encoding="utf-8")
    return path


def run(tmp_path, data, judge, *extra: str) -> int:
    return main(["run", str(data), "--judge", str(judge), "--out", str(tmp_path / "out"), "--quiet", "--no-cache",
                 "--metrics", "context_relevance,context_recall", *extra])


def test_fail_under_exits_4_naming_the_metric_and_keeps_every_result(tmp_path, data, tiny_judge, capsys):
    assert run(tmp_path, data, tiny_judge, "--fail-under", "context_relevance=1") == EXIT_BELOW_THRESHOLD
    err = capsys.readouterr().err
    assert "fail-under: context_relevance: mean" in err and "is below 1" in err
    assert re.search(r"is below 1; scores: [^ ]+ \d\.\d{3}, [^ ]+ \d\.\d{3}, [^ ]+ \d\.\d{3}\n", err)
    assert len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == 3


def test_fail_under_passes_when_every_mean_reaches_its_value(tmp_path, data, tiny_judge, capsys):
    assert run(tmp_path, data, tiny_judge, "--fail-under", "context_relevance=0") == EXIT_OK
    assert "fail-under: 1 gate passed" in capsys.readouterr().err


def test_gating_on_a_weak_judge_is_said_before_the_scoring(tmp_path, data, tiny_judge, capsys, monkeypatch):
    """The default judge's context_recall was 0 on every dev sample: a CI job gating on it gated on noise,
    and the weak-judge line came after minutes of scoring, under the table. With gates it comes first."""
    from localeval import runner

    weak = "the judge tiny agrees poorly with people (mean Spearman rho 0.23 on labeled data)"
    monkeypatch.setattr(runner, "weak_judge_warning", lambda judge: weak)
    assert run(tmp_path, data, tiny_judge, "--fail-under", "context_relevance=0", "--resume") == EXIT_OK
    err = capsys.readouterr().err
    said = f"localeval: warning: {weak}; the --fail-under gates compare these scores"
    assert said in err and err.index(said) < err.index("--resume: nothing to resume")  # before the scoring
    assert err.count(weak) == 1  # not again under the table
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert [w for w in summary["warnings"] if weak in w] == [f"warning: {weak}; the --fail-under gates compare these scores"]
    # without gates: after the table, on stderr as every warning (a batch job's stderr log missed it: an HPC probe)
    assert run(tmp_path, data, tiny_judge) == EXIT_OK
    out, err = capsys.readouterr()
    assert f"\nlocaleval: warning: {weak}" in err and weak not in out  # the prefix of every warning (a CI probe)
    # with labels the gates compare corrected means, and it says so (it said "these scores": a probe)
    labeled = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"
    assert run(tmp_path, labeled, tiny_judge, "--fail-under", "context_relevance=0", "--labels", str(labeled)) == EXIT_OK
    assert (f"localeval: warning: {weak}; the --fail-under gates compare its means corrected by --labels, where "
            "the labels allow it") in capsys.readouterr().err
    # summary.json records which labels corrected the means
    import hashlib
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["labels"] == str(labeled) and summary["labels_sha256"] == hashlib.sha256(labeled.read_bytes()).hexdigest()
    # the report shows people's scores under the judge's, for the labeled samples
    assert re.search(r"<span class='p'>people \d\.\d{3}</span>", (tmp_path / "out" / "report.html").read_text("utf-8"))


def test_what_setting_up_warns_of_is_kept_in_the_summary_and_evaluates_details(tmp_path, data, tiny_judge, capsys,
                                                                              monkeypatch):
    """Emulated bfloat16 was warned of as the models were found, and kept neither in summary.json nor in
    evaluate()'s details["warnings"], which the README says keep them."""
    import localeval
    from localeval import api, pipeline
    from localeval.errors import LocalevalWarning, warn

    said = "this CPU has no bf16 instructions: bfloat16 is emulated, slower than float32"
    real = pipeline.build_scoring

    def warning_first(*args, **kwargs):
        warn(LocalevalWarning(said))
        return real(*args, **kwargs)

    for caller in (pipeline, api):  # where run and evaluate() reach it
        monkeypatch.setattr(caller, "build_scoring", warning_first)
    assert run(tmp_path, data, tiny_judge) == EXIT_OK
    assert capsys.readouterr().err.count(said) == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert f"warning: {said}" in summary["warnings"]
    with pytest.warns(LocalevalWarning, match=said):
        result = localeval.evaluate(str(data), ["context_recall"], judge=str(tiny_judge), cache=False)
    assert f"warning: {said}" in result.details["warnings"]


def test_the_json_says_which_gates_passed(tmp_path, data, tiny_judge, capsys):
    """A CI step reading --json had only the exit status and stderr to tell which gate failed."""
    assert run(tmp_path, data, tiny_judge, "--json", "--fail-under", "context_relevance=1",
               "--fail-under", "context_recall=0") == EXIT_BELOW_THRESHOLD
    document = json.loads(capsys.readouterr().out)
    relevance, recall = (document["metrics"][m]["mean"] for m in ("context_relevance", "context_recall"))
    assert relevance < 1  # as the test above found: the gate that fails
    assert document["gates"] == {
        "context_relevance": {"at_least": 1, "compared": "mean", "value": relevance, "interval": None,
                              "passed": False, "undecided": None, "scored": 3, "null": 0},
        "context_recall": {"at_least": 0, "compared": "mean", "value": recall, "interval": None, "passed": True,
                           "undecided": None, "scored": 2, "null": 1}}  # the sample without a reference
    assert document["gates_passed"] is False  # the exit status, kept for a later step (no verdict of its own: a probe)
    assert run(tmp_path, data, tiny_judge, "--json", "--fail-under", "context_recall=0") == EXIT_OK
    assert json.loads(capsys.readouterr().out)["gates_passed"] is True
    assert run(tmp_path, data, tiny_judge, "--json") == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    assert document["gates_passed"] is None
    # which run a kept file is (a probe), and the report says how the run's own settings scored each metric
    from datetime import datetime
    assert datetime.fromisoformat(document["finished"]).tzinfo is not None
    took = datetime.fromisoformat(document["finished"]) - datetime.fromisoformat(document["started"])
    assert abs(took.total_seconds() - document["timings"]["total_seconds"]) <= 1  # when this invocation began
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert f"localeval {document['localeval']}, finished {document['finished']}." in report
    recall = report.split("<th scope='row'>context_<wbr>recall</th>", 1)[1].split("</tr>", 1)[0]
    assert f"<td>{document['settings']['scoring']['context_recall']}</td>" in recall


def test_a_gate_says_when_its_mean_rests_on_some_of_the_samples(tmp_path, data, tiny_judge, capsys):
    """A build whose answers went empty passed on the mean of what was left, and nothing said so."""
    assert run(tmp_path, data, tiny_judge, "--fail-under", "context_recall=0",
               "--fail-under", "context_relevance=0") == EXIT_OK
    err = capsys.readouterr().err
    assert ("fail-under: context_recall: its mean rests on 2 of 3 samples; 1 could not be scored (missing reference)\n"
            "fail-under: all 2 gates passed") in err
    assert "fail-under: context_relevance:" not in err  # every sample scored: nothing to say


def test_a_gate_on_a_metric_nothing_could_score_fails(tmp_path, tiny_judge, capsys):
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()][:2]
    for row in rows:
        row.pop("reference", None), row.pop("ground_truth", None)
    data = tmp_path / "no-references.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert run(tmp_path, data, tiny_judge, "--fail-under", "context_recall=0") == EXIT_BELOW_THRESHOLD
    assert "context_recall: no sample could be scored (missing reference)" in capsys.readouterr().err


def test_null_scores_say_why_on_the_terminal_and_in_the_summary(tmp_path, data, tiny_judge, capsys):
    assert run(tmp_path, data, tiny_judge) == EXIT_OK
    assert "null scores, and why:\n  context_recall: 1 sample, missing reference\n" in capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))["metrics"]
    assert summary["context_recall"]["null_reasons"] == {"missing reference": 1}
    assert "null_reasons" not in summary["context_relevance"]  # every sample scored


def test_a_null_sub_score_gives_its_metrics_reason():
    """context_relevance_chunks has no evidence of its own: it is null when its metric is."""
    rows = [{"id": "1", "context_relevance": None, "context_relevance_chunks": None,
             "evidence": {"context_relevance": {"null_reason": "missing retrieved_contexts"}}}]
    summary = summarize(rows, ["context_relevance", "context_relevance_chunks"])
    assert summary["context_relevance_chunks"]["null_reasons"] == {"missing retrieved_contexts": 1}


def test_null_reasons_are_counted_and_the_rarest_folded():
    rows = [{"id": str(i), "m": None, "evidence": {"m": {"null_reason": reason}}}
            for i, reason in enumerate(["a", "a", "a", "b", "b", "c", "d", "e"])]
    rows.append({"id": "scored", "m": 0.5, "evidence": {"m": {}}})
    summary = summarize(rows, ["m"])
    assert summary["m"]["null_reasons"] == {"a": 3, "b": 2, "c": 1, "d": 1, "e": 1}
    assert format_null_reasons(summary).splitlines() == [
        "null scores, and why:", "  m: 3 samples, a", "  m: 2 samples, b", "  m: 1 sample, c",
        "  m: 2 samples, other reasons (results.jsonl, evidence)"]
    assert format_null_reasons(summarize(rows[-1:], ["m"])) == ""


@pytest.mark.parametrize("gate, expected", [
    ("context_recall", "write METRIC=VALUE"),
    ("faithfulness=0.5", "faithfulness is not among this run's scores (context_recall); add faithfulness to "
                         "--metrics to gate on it"),
    ("context_recal=0.5", "context_recal is no metric's score; did you mean 'context_recall'? this run's scores: "
                          "context_recall"),
    ("answer_relevancy=0.5", "answer_relevancy is no metric's score; did you mean 'response_relevancy', the "),
    ("answer_similarity=0.5", "answer_similarity is no metric's score; ragas's answer_similarity has no counterpart "
                              "in localeval: it is the embedding similarity of the response and the reference; this "),
    # a list per chunk: it said "no metric's score" (a CI probe)
    ("context_supported_precision_per_chunk=0.5", "context_supported_precision_per_chunk is a list, a number per "
                                                  "chunk, not a score a gate can compare; gate on "
                                                  "context_supported_precision"),
    ("context_recall=high", "'high' is not a number"),
    # a sub-score's name mistyped, in any case: its own name suggested, not its metric's (a review)
    ("Context_Relevance_Chunk=0.5", "did you mean 'context_relevance_chunks'?"),
    ("context_recall=0.5,context_relevance=0.9", "'0.5,context_relevance=0.9' is not a number (one gate per "
                                                 "--fail-under: repeat the option for each metric)"),  # a probe's
    ("context_recall=0,7", "'0,7' is not a number (write a decimal point: 0.7)"),  # not two gates (a review's)
    ("context_recall=70", "a score lies between 0 and 1"),
    ("context_recall=nan", "a score lies between 0 and 1"),
    ("context_recall=-0.5", "a score lies between 0 and 1"),  # every score is at least 0: it never failed
])
def test_a_bad_gate_is_refused_before_anything_runs(tmp_path, data, capsys, gate, expected):
    assert main(["run", str(data), "--out", str(tmp_path / "out"), "--metrics", "context_recall",
                 "--fail-under", gate]) == EXIT_USER
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_json_on_a_stdout_that_cannot_encode_a_path_loses_no_character(tmp_path, data, tiny_judge):
    """With a '?' in place of what an ASCII stdout cannot encode, --json printed valid JSON that was wrong."""
    import os
    import subprocess
    import sys

    named = tmp_path / "données-ρ.jsonl"
    named.write_bytes(data.read_bytes())
    result = subprocess.run([sys.executable, "-m", "localeval", "run", str(named), "--judge", str(tiny_judge), "--out",
                             str(tmp_path / "out"), "--quiet", "--no-cache", "--metrics", "context_recall", "--json"],
                            capture_output=True, timeout=600, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert result.returncode == EXIT_OK
    assert json.loads(result.stdout.decode("ascii"))["data"] == str(named)


def test_json_prints_the_summary_alone_on_stdout(tmp_path, data, tiny_judge, capsys):
    assert run(tmp_path, data, tiny_judge, "--json") == EXIT_OK
    captured = capsys.readouterr()
    printed = json.loads(captured.out)  # nothing but the JSON
    on_disk = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert printed["metrics"] == on_disk["metrics"] and printed["schema_version"] == SCHEMA_VERSION
    assert "context_relevance" in captured.err  # the table went to stderr


def test_every_results_line_has_the_schema_version_and_only_the_id_unless_asked(tmp_path, data, tiny_judge):
    page = (Path(__file__).resolve().parent.parent / "docs" / "output.md").read_text(encoding="utf-8")
    table = page.split("## results.jsonl", 1)[1].split("\n## ", 1)[0]
    results_doc_order = [key for cell in re.findall(r"^\| ([^|]+) \|", table, flags=re.MULTILINE)
                         for key in re.findall(r"`([a-z_0-9]+)`", cell)]
    assert run(tmp_path, data, tiny_judge) == EXIT_OK
    plain = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert all(row["schema_version"] == SCHEMA_VERSION and "user_input" not in row for row in plain)
    assert run(tmp_path / "inputs", data, tiny_judge, "--with-inputs") == EXIT_OK
    rows = [json.loads(line) for line in (tmp_path / "inputs" / "out" / "results.jsonl").read_text().splitlines()]
    given = {r["id"]: r for r in map(json.loads, data.read_text().splitlines())}
    for row in rows:
        assert list(row)[:7] == results_doc_order[:7]  # as docs/output.md orders them
        assert row["user_input"] == given[row["id"]]["user_input"]
        assert row["retrieved_contexts"] == given[row["id"]]["retrieved_contexts"]
    assert rows[-1]["reference"] is None  # the sample without one


def test_gates_read_the_corrected_mean_where_labels_gave_one():
    # The judge says 0.9 on average; people, on the two samples they labeled, 0.3 below it.
    rows = [{"id": str(i), "context_recall": 0.9, "context_relevance": 0.8} for i in range(4)]
    human = {"0": {"context_recall": 0.6}, "1": {"context_recall": 0.6}}
    summary = summarize(rows, ["context_recall", "context_relevance"], human)
    assert summary["context_recall"]["corrected"]["mean"] == pytest.approx(0.6)
    assert failures(summary, {"context_recall": 0.7, "context_relevance": 0.7}) == [
        "context_recall: corrected mean 0.600 is below 0.7"]


def test_a_corrected_mean_on_one_label_is_not_what_a_gate_compares():
    """A judge's 0.0 passed a gate at 0.9 because one sample's label said 1.0."""
    rows = [{"id": str(i), "context_recall": 0.0} for i in range(4)]
    summary = summarize(rows, ["context_recall"], {"0": {"context_recall": 1.0}})
    assert summary["context_recall"]["corrected"]["mean"] == 1.0
    assert outcomes(summary, {"context_recall": 0.9})["context_recall"] == {
        "at_least": 0.9, "compared": "mean", "value": 0.0, "interval": None, "passed": False, "undecided": None,
        "scored": 4, "null": 0}
    assert corrected_but_not_gated(summary, ["context_recall"]) == ["context_recall"]
    # every sample labeled: people's mean is known, however few
    alone = summarize(rows[:1], ["context_recall"], {"0": {"context_recall": 1.0}})
    assert gated_value(alone["context_recall"]) == (1.0, "corrected mean")


def test_a_gate_on_a_corrected_mean_whose_interval_is_not_clipped_goes_into_the_json():
    """numpy's square root made the interval's ends numpy floats, and the gate's `undecided` a numpy bool:
    summary.json could not be written, exit 1 with a traceback, whenever the interval's top was not
    clipped to 1 (a probe: --labels with --fail-under, the README's way to gate)."""
    rows = [{"id": str(i), "context_recall": 0.5} for i in range(6)]
    summary = summarize(rows, ["context_recall"], {str(i): {"context_recall": h} for i, h in enumerate((0.3, 0.5, 0.4))})
    low, high = summary["context_recall"]["corrected"]["interval"]
    assert 0 < low < 0.4 < high < 1 and type(low) is float and type(high) is float
    outcome = outcomes(summary, {"context_recall": 0.4})
    assert outcome["context_recall"]["undecided"] is True
    assert json.loads(json.dumps({"metrics": summary, "gates": outcome}))["gates"]["context_recall"]["undecided"] is True


def steady_summary() -> dict:
    """A judge whose scores vary a little (0.85, 0.9) and three labels each 0.3 below it: the corrected
    mean 0.575, with a narrow interval (about 0.54 to 0.61) that a gate at 0.5 is not inside."""
    rows = [{"id": str(i), "context_recall": 0.9 if i % 2 else 0.85} for i in range(6)]
    labels = {row["id"]: {"context_recall": row["context_recall"] - 0.3} for row in rows[:3]}
    summary = summarize(rows, ["context_recall"], labels)
    low, high = summary["context_recall"]["corrected"]["interval"]
    assert 0.5 < low < 0.575 < high < 0.65
    return summary


def test_a_gate_no_label_corrects_is_said_to_compare_the_judges_mean_where_labels_corrected_others():
    """One label was said; none (a sub-score, or labels only on samples a metric cannot score) passed in
    silence (a CI probe)."""
    rows = [{"id": str(i), "context_recall": 0.9, "context_relevance_chunks": 0.5} for i in range(6)]
    summary = summarize(rows, ["context_recall", "context_relevance_chunks"],
                        {str(i): {"context_recall": 0.6} for i in range(3)})
    assert caveats(summary, {"context_relevance_chunks": 0.1}) == [
        "context_relevance_chunks: no label corrects its mean (sub-scores are not labeled; or the labels leave it "
        "out, or no labeled sample gives it a score); the judge's mean is compared"]
    assert caveats(summarize(rows, ["context_relevance_chunks"]), {"context_relevance_chunks": 0.1}) == []  # no labels


def test_a_gate_inside_its_corrected_means_interval_is_said_to_rest_on_too_few_labels():
    """With 3 labels a corrected mean of 0.5 in [0, 1] passed a gate at 0.5, and nothing said the labels could not tell."""
    rows = [{"id": str(i), "context_recall": 0.9} for i in range(6)]
    scattered = summarize(rows, ["context_recall"], {str(i): {"context_recall": h} for i, h in enumerate((0.2, 1.0, 0.6))})
    low, high = scattered["context_recall"]["corrected"]["interval"]
    assert low < 0.5 < high and scattered["context_recall"]["corrected"]["mean"] == pytest.approx(0.6)
    outcome = outcomes(scattered, {"context_recall": 0.5})["context_recall"]  # summary.json's, for a CI step
    assert outcome["interval"] == (low, high) and outcome["undecided"] and outcome["passed"]
    assert undecided(scattered, {"context_recall": 0.5}) == [
        f"context_recall: its corrected mean 0.600 passed 0.5, but its 95% interval ({low:.3f} to {high:.3f}, from 3 "
        "labels) holds values that pass it and values that fail it: more labels narrow it"]
    # the interval's low end at the gate, give or take float rounding: all of it passes, nothing to say
    at_gate = {"context_recall": {**scattered["context_recall"], "corrected": {
        **scattered["context_recall"]["corrected"], "interval": (0.6999999999999998, 0.9)}}}
    assert undecided(at_gate, {"context_recall": 0.7}) == []
    assert outcomes(at_gate, {"context_recall": 0.7})["context_recall"]["undecided"] is False
    # shown to as many decimals as put the mean and the low end below the gate they fail
    near = {"context_recall": {**scattered["context_recall"], "corrected": {
        **scattered["context_recall"]["corrected"], "mean": 0.4996, "interval": (0.4996, 0.9)}}}
    assert "its corrected mean 0.4996 failed 0.5, but its 95% interval (0.4996 to 0.900" in \
        undecided(near, {"context_recall": 0.5})[0]
    # the same bias on every label of a judge whose scores vary a little: a narrow interval that decides
    steady = steady_summary()
    assert undecided(steady, {"context_recall": 0.5}) == [] and not failures(steady, {"context_recall": 0.5})
    assert undecided(summarize(rows, ["context_recall"]), {"context_recall": 0.5}) == []  # no labels: no interval


def test_assert_scores_warns_of_a_pass_and_names_a_failure_the_labels_could_not_tell():
    """run said it on stderr; a pytest gate passed without a word, and its failure did not say how little it
    rested on."""
    from localeval.testing import GateWarning

    rows = [{"id": str(i), "context_recall": 0.9} for i in range(6)]
    scattered = summarize(rows, ["context_recall"], {str(i): {"context_recall": h} for i, h in enumerate((0.2, 1.0, 0.6))})
    with pytest.warns(GateWarning, match="assert_scores: context_recall: its corrected mean 0.600 passed 0.5"):
        assert_scores(scattered, {"context_recall": 0.5})
    with pytest.raises(AssertionError, match=r"(?s)below 0.65\nwhat the outcome rests on:\n  context_recall: its "
                       "corrected mean 0.600 failed 0.65"):
        assert_scores(scattered, {"context_recall": 0.65})
    steady = steady_summary()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_scores(steady, {"context_recall": 0.5})  # an interval that decides: nothing to warn of
    assert outcomes(summarize(rows, ["context_recall"]), {"context_recall": 0.5})["context_recall"]["undecided"] is None


def test_assert_scores_warns_of_a_pass_on_a_few_of_the_samples():
    """Three of four responses empty: the mean of the one left passed a pytest gate without a word, where
    --fail-under said what it rested on (a probe)."""
    from localeval.testing import GateWarning

    empty = {"evidence": {"answer_supported_precision": {"null_reason": "empty response"}}}
    rows = [{"id": "a", "answer_supported_precision": 1.0},
            *({"id": i, "answer_supported_precision": None, **empty} for i in "bcd")]
    summary = summarize(rows, ["answer_supported_precision"])
    one_label = summarize([{"id": str(i), "context_recall": 0.0} for i in range(4)], ["context_recall"],
                          {"0": {"context_recall": 1.0}})
    with pytest.warns(GateWarning, match="context_recall: its corrected mean rests on 1 label, too few to correct"):
        assert_scores(one_label, {"context_recall": 0.0})  # as run says it on stderr
    with pytest.warns(GateWarning, match=r"answer_supported_precision: its mean rests on 1 of 4 samples; 3 could not "
                                         r"be scored \(empty response\)"):
        assert_scores(summary, {"answer_supported_precision": 0.8})


def test_a_metric_gated_twice_is_refused():
    assert parse_gates(["context_recall=0.7"], ["context_recall"]) == {"context_recall": 0.7}
    with pytest.raises(UserError, match="gated twice"):
        parse_gates(["context_recall=0.7", "context_recall=0.8"], ["context_recall"])


def test_assert_scores_names_every_metric_below(tmp_path, data, tiny_judge):
    assert run(tmp_path, data, tiny_judge) == EXIT_OK
    assert_scores(tmp_path / "out", {"context_relevance": 0.0})
    # the folder's results.jsonl names the samples
    with pytest.raises(AssertionError, match="^gates failed: context_relevance, context_relevance_chunks:\n"
                                             "  context_relevance: mean .* below 1; scores: .*\n"
                                             "  context_relevance_chunks: mean .* below 1; scores: "):
        assert_scores(tmp_path / "out", {"context_relevance": 1.0, "context_relevance_chunks": 1.0})
    # a results file holding lines the summary did not count (a resume appending to it) names no sample
    first = json.loads((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    with (tmp_path / "out" / "results.jsonl").open("a", encoding="utf-8") as results:
        results.write(json.dumps({**first, "id": "later", "context_relevance": 0.0}) + "\n")
    with pytest.raises(AssertionError) as failed:
        assert_scores(tmp_path / "out" / "summary.json", {"context_relevance": 1.0})
    assert "is below 1\n" in str(failed.value) + "\n" and "scores:" not in str(failed.value)


@pytest.mark.parametrize(("given", "lowest", "expected"), [
    ("out", {"context_relevance": "0.4"}, "context_relevance='0.4': expected a number, got a string"),
    ("out", {}, "give the thresholds as a dict of at least one metric and its lowest mean, such as "
                "{'context_recall': 0.7}; got an empty dict"),  # it said "a value of type dict"
    ("out", [("context_relevance", 0.4)], "give the thresholds as a dict of at least one metric and its lowest mean"),
    ("out/run.json", {"context_relevance": 0.4}, "run.json is not a localeval summary"),
    ("out", {"context_relevance": 2}, "context_relevance=2: a score lies between 0 and 1"),
    ("out", {"context_relevnce": 0.4}, "context_relevnce is not a metric of this result (context_relevance, "),
    ("out/results.jsonl", {"context_relevance": 0.4}, "results.jsonl is not a localeval summary; give what"),
    ("nowhere", {"context_relevance": 0.4}, "nowhere: no such file or folder; give what"),
    ("empty", {"context_relevance": 0.4}, "empty holds no summary.json (a run that has not finished?)"),
    ("out", {"context_relevance": -0.5}, "context_relevance=-0.5: a score lies between 0 and 1"),  # it never failed
])
def test_a_mistake_in_the_assertion_itself_is_a_value_error(tmp_path, data, tiny_judge, given, lowest, expected):
    assert run(tmp_path, data, tiny_judge) == EXIT_OK
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=re.escape(expected)):
        assert_scores(tmp_path / given, lowest)


def test_assert_scores_takes_a_summary_mapping_and_numpy_numbers_and_refuses_other_objects(tmp_path, data, tiny_judge):
    import numpy as np

    assert run(tmp_path, data, tiny_judge) == EXIT_OK
    document = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert_scores(document, {"context_relevance": np.float32(0.0)})
    assert_scores(document["metrics"], {"context_relevance": 0})
    with pytest.raises(AssertionError, match="context_relevance: mean"):
        assert_scores(document["metrics"], {"context_relevance": 1})
    for wrong, kind in [(None, "None"), ([document], "a value of type list"), (3, "a value of type int")]:
        with pytest.raises(ValueError, match=f"cannot read scores from {kind}; give what evaluate"):
            assert_scores(wrong, {"context_relevance": 0.5})
    with pytest.raises(ValueError, match="the mapping given is not a localeval summary"):
        assert_scores({"context_relevance": 0.5}, {"context_relevance": 0.5})


def test_a_mean_that_equals_its_gate_but_for_float_rounding_passes():
    """Three samples of 0.7 average to 0.6999999999999998: the gate at 0.7 failed while the table said 0.700."""
    summary = summarize([{"id": str(i), "answer_supported_precision": 0.7} for i in range(3)],
                        ["answer_supported_precision"])
    assert summary["answer_supported_precision"]["mean"] < 0.7  # what float addition gives
    assert failures(summary, {"answer_supported_precision": 0.7}) == []
    assert outcomes(summary, {"answer_supported_precision": 0.7})["answer_supported_precision"]["passed"] is True
    assert failures(summary, {"answer_supported_precision": 0.7000001}) != []  # a real shortfall still fails


def test_a_failed_gate_shows_the_mean_with_the_decimals_that_put_it_below():
    rows = [{"id": str(i), "context_recall": score} for i, score in enumerate([1.0] + [0.0] * 6)]  # mean 1/7
    summary = summarize(rows, ["context_recall"])
    assert failures(summary, {"context_recall": 0.143}) == ["context_recall: mean 0.1429 is below 0.143"]
    assert failures(summary, {"context_recall": 0.2}) == ["context_recall: mean 0.143 is below 0.2"]
    # the gate as given, not cut to 6 digits: "0.142857 is below 0.142857" contradicted itself
    assert failures(summary, {"context_recall": 0.1428572}) == ["context_recall: mean 0.142857 is below 0.1428572"]
    assert failures(summary, {"context_recall": np.float64(0.2)}) == ["context_recall: mean 0.143 is below 0.2"]
    # as float32 holds 0.2 (0.20000000298...), not as a Python float prints it (a probe)
    assert failures(summary, {"context_recall": np.float32(0.2)}) == ["context_recall: mean 0.143 is below 0.2"]
    by_hand = {"context_recall": {"mean": float("nan")}}  # assert_scores takes a summary built by hand
    assert failures(by_hand, {"context_recall": 0.5}) == ["context_recall: mean is not a number; needs at least 0.5"]
    assert parse_gates([" context_recall =0.5"], ["context_recall"]) == {"context_recall": 0.5}


def test_assert_scores_takes_what_evaluate_returns():
    from localeval import evaluate
    from localeval.engine.scripted import ScriptedJudge

    sample = {"id": "a", "user_input": "Where is Paris?", "retrieved_contexts": ["Paris is in France."],
              "response": "In France."}
    result = evaluate([sample], ["answer_supported_precision"], ScriptedJudge(
        lambda request: {"verdicts": [{"sentence": 1, "supported": 0}]}), cache=False)
    with pytest.raises(AssertionError, match="answer_supported_precision: mean 0.000 is below 0.5"):
        assert_scores(result, {"answer_supported_precision": 0.5})


def test_a_failed_assert_scores_names_its_metric_first_and_the_lowest_samples():
    """pytest's short summary showed "scores below their thresholds:" for every gate, and the samples that pulled
    a mean down had to be looked up in the rows (a pytest probe)."""
    from localeval import evaluate
    from localeval.engine.scripted import ScriptedJudge

    samples = [{"id": name, "user_input": "Where is Paris?", "retrieved_contexts": ["Paris is in France."],
                "response": "In France." if name.startswith("good") else "In Spain."} for name in
               ("good-1", "bad-2", "good-3", "bad-4", "good-5")]
    result = evaluate(samples, ["answer_supported_precision"], ScriptedJudge(lambda request: {"verdicts": [
        {"sentence": 1, "supported": int("Spain" not in request.messages[-1][1])}]}), cache=False)
    assert result["answer_supported_precision"] == [1.0, 0.0, 1.0, 0.0, 1.0]
    with pytest.raises(AssertionError) as failed:
        assert_scores(result, {"answer_supported_precision": 0.9})
    first, *rest = str(failed.value).splitlines()
    assert first == "gate failed: answer_supported_precision:"
    assert rest == ["  answer_supported_precision: mean 0.600 is below 0.9; lowest: bad-2 0.000, bad-4 0.000, "
                    "good-1 1.000, and 2 more at 1.000 (of 5 scored)"]


def test_the_lowest_samples_keep_the_datas_order_among_ties_and_show_ids_safely():
    from localeval.gating import lowest_scored

    rows = [{"id": number, "m": 0.0} for number in range(1, 12)] + [{"id": "x\x1b]0;owned\x07", "m": None}]
    assert lowest_scored(rows, "m") == "; lowest: 1 0.000, 2 0.000, 3 0.000, and 8 more at 0.000 (of 11 scored)"
    assert lowest_scored([{"id": "a\x1b[2Jb" + "z" * 60, "m": 0.5}], "m", corrected=True) == \
        "; the judge's scores: a\\x1b[2Jbzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz... 0.500"
    assert lowest_scored(rows, "other") == "" and lowest_scored([], "m") == ""


def test_assert_scores_hides_its_own_frame_from_pytests_traceback(tmp_path):
    test = tmp_path / "test_gate.py"
    test.write_text("from localeval.testing import assert_scores\n\n"
                    "def test_gate():\n"
                    "    assert_scores({'context_recall': {'mean': 0.5, 'scored': 2, 'null': 0}}, {'context_recall': 0.7})\n",
                    encoding="utf-8")
    shown = subprocess.run([sys.executable, "-m", "pytest", str(test), "-p", "no:cacheprovider", "--tb=long"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 1 and "gate failed: context_recall" in shown.stdout
    assert "assert_scores({'context_recall'" in shown.stdout  # the test's own line
    assert "_summary_and_rows" not in shown.stdout  # not the body of assert_scores


def test_progress_is_plain_lines_when_not_a_terminal():
    log = io.StringIO()
    progress = progress_for("judging 2 samples", log)
    assert isinstance(progress, LineProgress)
    progress.expect(4)
    progress.advance(2)
    progress.finished(1)
    progress.advance(2)
    progress.finished(1)
    progress.close()
    progress.close()  # a second close (the runner's finally after Ctrl-C) writes nothing more
    # at the end, and not on every answer; with the samples done, since the requests' total grows as they go
    assert log.getvalue() == "judging 2 samples: 2 done, 4/4 requests, 0 s\n"


def test_a_terminals_bar_counts_the_samples_with_the_requests_beside_it_and_keeps_its_clock_running(monkeypatch):
    """A bar over requests showed 100% and nothing left at the end of every metric step, 2 of 4 samples done;
    and it stood still through a first batch of minutes, its time frozen (a long-run probe)."""
    from localeval.progress import BarProgress

    monkeypatch.setattr(BarProgress, "REDRAW_EVERY", 0.02)
    screen = io.StringIO()
    bar = BarProgress("judging 4 samples", screen, samples=4)
    bar.expect(12)
    bar.advance(12)  # a step's requests all answered: the samples are not done
    frames = screen.getvalue().split("\r")
    assert "0/4" in frames[-1] and "12/12 requests" in frames[-1] and "100%" not in frames[-1]
    drawn = screen.getvalue().count("\r")
    deadline = time.monotonic() + 10
    while screen.getvalue().count("\r") < drawn + 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert screen.getvalue().count("\r") >= drawn + 3  # redrawn with nothing answered meanwhile
    bar.finished(2)
    bar.expect(11)
    assert "2/4" in screen.getvalue().split("\r")[-1] and "12/23 requests" in screen.getvalue().split("\r")[-1]
    bar.finished(2)
    bar.close()
    bar.close()  # the runner's finally after Ctrl-C
    assert "4/4" in screen.getvalue()


# A Jupyter kernel as tqdm.autonotebook recognises one (ipykernel.zmqshell loaded), without ipywidgets
KERNEL_WITHOUT_WIDGETS = """
import importlib.machinery, sys, types, warnings
def stub(name, **attributes):
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__dict__.update(attributes)
    sys.modules[name] = module
class Shell:
    config = {"IPKernelApp": {}}
stub("IPython", get_ipython=Shell)
stub("IPython.display", display=print)
stub("ipykernel")
stub("ipykernel.zmqshell")
sys.modules["ipywidgets"] = None  # not installed
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    CODE
print(sorted({str(warning.message)[:40] for warning in caught}))
"""


@pytest.mark.parametrize(("code", "warned"), [
    ("import tqdm.auto", True),  # the stand-in kernel is one tqdm warns in
    ("import localeval; localeval.evaluate", False),  # its first use imports transformers, which imports tqdm.auto
    ("from localeval.progress import BarProgress; BarProgress('judging', samples=1).close()", False),
])
def test_a_notebook_without_ipywidgets_is_spared_tqdms_warning(code, warned):
    """tqdm.auto warned "IProgress not found" in a notebook without ipywidgets, as transformers imported it or
    the bar was drawn: a warning the user cannot act on (a notebook probe)."""
    shown = subprocess.run([sys.executable, "-c", KERNEL_WITHOUT_WIDGETS.replace("CODE", code)],
                           capture_output=True, text=True, check=True, timeout=300).stdout
    assert ("IProgress not found" in shown) is warned, shown


def test_a_bar_says_its_pace_in_seconds_per_sample_in_plain_words():
    """tqdm's own format wrote a slow run's pace as "4.00s/ samples"; a bar over requests alone (bench) counts requests."""
    from localeval.progress import BarProgress

    screen = io.StringIO()
    bar = BarProgress("judging 4 samples", screen, samples=4)
    bar.expect(8)
    bar.finished(1)
    bar.close()
    last = screen.getvalue().split("\r")[-1]
    assert "1/4 samples [" in last and "s/sample, 0/8 requests]" in last and "s/ samples" not in last
    screen = io.StringIO()
    bar = BarProgress("qwen: judging", screen)
    bar.expect(8)
    bar.advance(3)
    bar.close()
    assert "3/8 requests [" in screen.getvalue().split("\r")[-1] and "s/request]" in screen.getvalue()


def test_a_run_on_a_cpu_saves_and_knows_its_time_left_every_8_samples_and_bench_scores_in_one_window(monkeypatch):
    """At 64 samples a window, a long CPU run showed no time left and saved nothing for a quarter of an hour, and
    a Ctrl-C lost it all (a long-run probe); 8 fill a CPU's batches about as well. bench keeps the one window
    its judges were measured in."""
    from localeval.bench import worker
    from localeval.engine.scripted import ScriptedJudge
    from localeval.evaluation import window_for
    from localeval.metrics import resolve_metrics
    from localeval.pipeline import build_pipeline

    assert (window_for(None, "cpu"), window_for(None, "cuda:1"), window_for(3, "cuda")) == (8, 64, 3)
    pipeline = build_pipeline(resolve_metrics("context_recall"), ScriptedJudge(lambda r: {}), device="cpu")
    assert pipeline.evaluator.window == 8
    asked = {}

    def recorded(*args, **kwargs):
        asked.update(kwargs)
        raise RuntimeError("recorded")

    monkeypatch.setattr("localeval.pipeline.build_pipeline", recorded)
    job = worker.JudgeJob("scripted", (), ("context_recall",), {}, None, "cpu", "float32", worker.BatchLimits(), False)
    with pytest.raises(RuntimeError, match="recorded"):
        worker._evaluate(job)
    assert asked["window"] == 64


def test_progress_counts_the_samples_done_in_a_run_and_in_evaluate(tmp_path, data, tiny_judge, capsys):
    """A CI log showed "0/30 requests, 30 s" then "30/30", a total that grows as the metrics' steps reveal their
    requests, and no count of the samples done (a CI probe). Counted where samples are scored, so that
    evaluate(progress=True) and bench's judges count them too."""
    import localeval

    assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(tmp_path / "out"), "--no-cache",
                 "--metrics", "context_relevance,context_recall"]) == EXIT_OK  # not --quiet
    assert re.search(r"^judging 3 samples: 3 done, (\d+)/\1 requests, \d+ s$", capsys.readouterr().err, re.MULTILINE)
    localeval.evaluate(str(data), ["context_recall"], judge=str(tiny_judge), cache=False, progress=True)
    assert re.search(r"^judging: 3 done, (\d+)/\1 requests, \d+ s$", capsys.readouterr().err, re.MULTILINE)


def test_progress_lines_keep_coming_while_no_request_is_answered():
    """A first batch can take minutes: the log must still show the run is alive."""
    log = io.StringIO()
    progress = LineProgress("judging 2 samples", log, every=0.02)
    progress.expect(4)
    deadline = time.monotonic() + 10
    while log.getvalue().count("\n") < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    progress.close()
    lines = log.getvalue().splitlines()
    assert len(lines) >= 4 and all(re.fullmatch(r"judging 2 samples: 0 done, 0/4 requests, \d+ s", line) for line in lines)
    assert "\r" not in log.getvalue()


def test_progress_lines_say_about_how_long_the_rest_takes_at_the_samples_pace(monkeypatch):
    """A nightly job of 5,000 samples said "0 done, 82/143 requests" and nothing of its five hours (a probe):
    the requests' total grows as the metrics' steps reveal them, the samples' count does not."""
    import localeval.progress as progress_module

    now = [1000.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    log = io.StringIO()
    local = LineProgress("judging 5,000 samples", log, every=3600, samples=5000)
    ray = LineProgress("scoring on 2 Ray workers", log, every=3600, unit="samples")
    ray.expect(100)
    for progress in (local, ray):
        progress.expect(10)
        progress._line()  # none done yet: no pace to go by
    now[0] += 120
    local.finished(40)
    ray.advance(50)
    for progress in (local, ray):
        progress._line()
    local.finished(4960)
    local._line()
    local.close()
    ray.close()
    assert log.getvalue().splitlines()[:5] == [
        "judging 5,000 samples: 0 done, 0/10 requests, 0 s",
        "scoring on 2 Ray workers: 0/110 samples, 0 s",
        "judging 5,000 samples: 40 done, 0/10 requests, 120 s, about 4 h 8 min left",
        "scoring on 2 Ray workers: 50/110 samples, 120 s, about 2 min left",
        "judging 5,000 samples: 5000 done, 0/10 requests, 120 s"]
