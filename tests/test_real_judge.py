"""The real path, in CI: the embedded SmolLM2 judge and MiniLM embedder, end to end, offline.

Slow for a unit test (the model is converted once, then each run takes seconds per sample on
two cores), so the samples are few; they still cover English and Chinese and every metric.
"""

from __future__ import annotations

import json
import math
import socket
from html import escape
from pathlib import Path

import pytest

from localeval import models
from localeval.cli import main
from localeval.text import split_chunks, split_sentences

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "samples.jsonl"
LABELED = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"  # four dev samples, labeled
METRICS = ["context_relevance", "context_recall", "response_relevancy",
           "answer_supported_precision", "context_supported_precision"]
PICKED = ["seed001-einstein", "zh-great-wall", "legacy-names-no-reference"]


class NetworkUsed(AssertionError):
    pass


@pytest.fixture(scope="module")
def no_network():
    """Any attempt to open a connection or resolve a name fails the test."""
    def refuse(*args, **kwargs):
        raise NetworkUsed(f"network access attempted: {args[:2]}")

    patch = pytest.MonkeyPatch()
    patch.setattr(socket.socket, "connect", refuse)
    patch.setattr(socket.socket, "connect_ex", refuse)
    patch.setattr(socket, "create_connection", refuse)
    patch.setattr(socket, "getaddrinfo", refuse)
    yield
    patch.undo()


@pytest.fixture(scope="module")
def picked_data(tmp_path_factory) -> Path:
    lines = [line for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if json.loads(line)["id"] in PICKED]
    path = tmp_path_factory.mktemp("data") / "picked.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def cli_run(no_network, picked_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert main(["run", str(picked_data), "--out", str(out), "--quiet"]) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return out, {row["id"]: row for row in rows}


def test_every_sample_has_a_score_or_a_reasoned_null(cli_run):
    _, rows = cli_run
    assert sorted(rows) == sorted(PICKED)
    for row in rows.values():
        for metric in METRICS:
            score = row[metric]
            if score is None:
                assert row["evidence"][metric]["null_reason"]
            else:
                assert isinstance(score, float) and not math.isnan(score)
                assert -1.0 <= score <= 1.0
    # No reference: context_recall is null for that reason, and the other metrics still score.
    legacy = rows["legacy-names-no-reference"]
    assert legacy["context_recall"] is None
    assert "reference" in legacy["evidence"]["context_recall"]["null_reason"]
    assert all(legacy[m] is not None for m in METRICS if m != "context_recall")
    # The judge never failed to produce valid JSON for the others.
    for sample_id in ("seed001-einstein", "zh-great-wall"):
        assert all(rows[sample_id][m] is not None for m in METRICS)


def test_evidence_has_one_verdict_per_pysbd_sentence(cli_run, picked_data):
    from localeval.data import load_samples

    _, rows = cli_run
    for sample in load_samples(picked_data):
        language = sample.language or "en"
        evidence = rows[sample.id]["evidence"]
        n_context = sum(map(len, split_chunks(sample.retrieved_contexts, language)))
        assert len(evidence["context_relevance"]["sentences"]) == n_context
        assert len(evidence["context_supported_precision"]["sentences"]) == n_context
        assert len(evidence["answer_supported_precision"]["sentences"]) == len(split_sentences(sample.response, language))
        if sample.reference:
            assert len(evidence["context_recall"]["sentences"]) == len(split_sentences(sample.reference, language))
        questions = evidence["response_relevancy"]["questions"]
        assert len(questions) == 3 and all(q["question"] for q in questions)
        # The score is exactly what the evidence says.
        verdicts = [s["supported"] for s in evidence["answer_supported_precision"]["sentences"]]
        assert rows[sample.id]["answer_supported_precision"] == pytest.approx(sum(verdicts) / len(verdicts))


def test_summary_names_models_device_and_counts(cli_run):
    out, _ = cli_run
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["models"]["judge"].startswith("smollm2-135m-instruct")
    assert summary["models"]["embedder"] == "all-minilm-l6-v2"
    assert "CPU" in summary["device"] or "NVIDIA" in summary["device"]
    assert summary["metrics"]["context_recall"] == {**summary["metrics"]["context_recall"], "scored": 2, "null": 1,
                                                    "null_reasons": {"missing reference": 1}}
    assert summary["judge"]["requests"] > 0 and summary["timings"]["total_seconds"] > 0
    assert "workers" not in summary["timings"]  # one process: its seconds are its own
    # no --batch-size: the embedded judge's own on a CPU, measured faster than the default 32 (docs/benchmarks.md)
    assert summary["settings"]["batch_size"] == (16 if "CPU" in summary["device"] else 32)
    # --reasons / --example auto: the embedded judge's measured choice from the registry, per metric
    registered = models.registry()["smollm2-135m-instruct"].settings
    for option in ("reasons", "example"):  # for the metrics the run scored (the default five)
        assert summary["settings"][option] == {m: v for m, v in registered[option].items() if m in METRICS}


def test_the_summary_is_the_same_whatever_order_the_results_were_written_in(cli_run, picked_data, tmp_path):
    """Ray writes windows as they finish, and a resume appends: the bootstrap drew by line order, so a
    Ray run's intervals differed from one process's for the same scores (a probe)."""
    import shutil

    out, _ = cli_run
    shuffled = tmp_path / "shuffled"
    shutil.copytree(out, shuffled)
    lines = (shuffled / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (shuffled / "results.jsonl").write_text("".join(reversed(lines)), encoding="utf-8")
    assert main(["run", str(picked_data), "--out", str(shuffled), "--resume", "--quiet"]) == 0
    summary = json.loads((shuffled / "summary.json").read_text(encoding="utf-8"))["metrics"]
    assert summary == json.loads((out / "summary.json").read_text(encoding="utf-8"))["metrics"]


def test_verdicts_carry_a_reason_exactly_where_the_judge_was_asked_for_one(cli_run):
    out, rows = cli_run
    reasons = json.loads((out / "summary.json").read_text(encoding="utf-8"))["settings"]["reasons"]
    assert set(reasons.values()) == {True, False}  # the embedded judge mixes them, so both are checked
    for row in rows.values():
        for metric, asked in reasons.items():
            for verdict in row["evidence"][metric].get("sentences", []):
                assert ("reason" in verdict) == asked, (metric, verdict)


def test_resume_scores_only_what_is_missing_and_rerun_hits_the_cache(cli_run, picked_data, capsys):
    out, rows = cli_run
    results = out / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines()
    results.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # as if interrupted
    capsys.readouterr()
    assert main(["run", str(picked_data), "--out", str(out), "--resume", "--quiet"]) == 0
    printed = capsys.readouterr()
    assert "2 of 3 samples already scored" in printed.err
    assert "(1 of them by this run)" in printed.out
    again = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in again] == [json.loads(line)["id"] for line in lines]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["judge"]["cache_hits"] == summary["judge"]["requests"] > 0  # nothing re-judged
    # The judge's answers come back identical from the cache; embeddings of a smaller encode
    # batch may differ in the last float digits, so scores are compared to 1e-6.
    before, after = rows[again[-1]["id"]], again[-1]
    for metric in METRICS:
        assert after[metric] == pytest.approx(before[metric], abs=1e-6)
        if metric != "response_relevancy":
            assert after["evidence"][metric] == before["evidence"][metric]
    questions = lambda row: [q["question"] for q in row["evidence"]["response_relevancy"]["questions"]]  # noqa: E731
    assert questions(after) == questions(before)


def test_python_api_batched_equals_one_at_a_time(no_network, picked_data):
    """Batching must not change a score: float32, the same requests, batch size 32 vs 1."""
    import localeval
    from localeval.engine.limits import BatchLimits

    metrics = ["context_recall", "answer_supported_precision"]
    kwargs = dict(metrics=metrics, dtype="float32", cache=False)
    batched = localeval.evaluate(picked_data, **kwargs)
    single = localeval.evaluate(picked_data, limits=BatchLimits(batch_size=1), **kwargs)
    for a, b in zip(batched.samples, single.samples):
        for metric in metrics:
            if a.score(metric) is None:
                assert b.score(metric) is None
            else:
                assert a.score(metric) == pytest.approx(b.score(metric), abs=1e-6)
    assert batched.summary()["context_recall"]["scored"] == 2


def test_report_page_shows_every_sample_and_its_verdicts(cli_run):
    out, rows = cli_run
    page = (out / "report.html").read_text(encoding="utf-8")
    for number, sample_id in enumerate(rows, 1):  # each sample's section, linked by its place in the results
        assert f"<h3 dir='auto'>{escape(sample_id)}</h3>" in page and f"id='s-{number}'" in page
    assert "null: missing reference" in page
    assert page.count("✓") + page.count("✗") >= sum(
        len(rows[i]["evidence"]["answer_supported_precision"]["sentences"]) for i in rows)


# --- probabilities, scoring, calibration, labels: the run of a user who wants to trust the numbers ---


def test_every_verdict_carries_a_probability_that_agrees_with_it(cli_run):
    _, rows = cli_run
    checked = 0
    for row in rows.values():
        for metric in METRICS:
            evidence = row["evidence"][metric]
            for item in evidence.get("sentences", []) + evidence.get("questions", []):
                key = next(k for k in ("relevant", "attributed", "supported", "noncommittal") if k in item)
                assert 0.0 <= item["probability"] <= 1.0
                assert item[key] == int(item["probability"] > 0.5)  # greedy took the likelier value
                checked += 1
    assert checked > 20


def test_summary_gives_every_mean_an_interval_and_warns_about_the_weak_default_judge(cli_run):
    out, _ = cli_run
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    for metric in METRICS:
        low, high = summary["metrics"][metric]["interval"]
        assert low <= summary["metrics"][metric]["mean"] <= high
    # the weak judge's, and where the data has Chinese samples, the English embedder's
    weak = [warning for warning in summary["warnings"] if "smollm2-135m-instruct agrees poorly" in warning]
    languages = [warning for warning in summary["warnings"] if "was trained on English alone" in warning]
    assert len(weak) == 1 and "--judge qwen2.5-coder-1.5b-instruct" in weak[0]
    assert len(languages) == (1 if set(summary["languages"]) - {"en"} else 0)
    assert len(summary["warnings"]) == len(weak) + len(languages)
    for warning in summary["warnings"]:
        assert warning in (out / "report.html").read_text(encoding="utf-8").replace("&#x27;", "'")


def test_soft_scoring_is_the_mean_probability_of_the_same_answers(no_network, picked_data, cli_run):
    import localeval

    _, rows = cli_run
    with pytest.warns(localeval.WeakJudgeWarning, match="use judge='qwen2.5-coder-1.5b-instruct'"):  # the default judge
        soft = localeval.evaluate(picked_data, metrics=["context_recall", "answer_supported_precision"], scoring="soft")
    for result in soft.samples:
        for metric in ("context_recall", "answer_supported_precision"):
            if result.score(metric) is None:
                continue
            probabilities = [s["probability"] for s in rows[result.sample_id]["evidence"][metric]["sentences"]]
            assert result.score(metric) == pytest.approx(sum(probabilities) / len(probabilities))


@pytest.fixture(scope="module")
def labeled_run(no_network, tmp_path_factory):
    """The four labeled dev samples, scored with their own labels and a calibration for context_recall."""
    from localeval import models
    from localeval.calibration import fitted_with, write_calibration

    folder = tmp_path_factory.mktemp("labeled")
    calibration = folder / "calibration.json"
    weights = models.resolve("smollm2-135m-instruct", "judge").fingerprint()  # the real judge's own: applied
    write_calibration(calibration, {"smollm2-135m-instruct": {"context_recall": {"threshold": 0.3,
                                                                                   "helps_both_halves": True}}},
                      "hand-written for the test", [], {"smollm2-135m-instruct": fitted_with(weights, None, {})})
    out = folder / "out"
    argv = ["run", str(LABELED), "--out", str(out), "--quiet", "--labels", str(LABELED),
            "--calibration", str(calibration)]
    assert main(argv) == 0
    rows = {json.loads(line)["id"]: json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()}
    return out, rows, calibration


def test_labels_correct_each_mean_to_the_peoples_when_every_sample_is_labeled(labeled_run):
    from localeval.bench.labels import read_labeled

    out, _, _ = labeled_run
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    labeled = read_labeled(LABELED, METRICS)
    for metric in METRICS:
        corrected = summary["metrics"][metric]["corrected"]
        people = [item.human_score(metric) for item in labeled]
        assert corrected["labeled"] == corrected["samples"] == 4
        # every sample labeled: the estimate is the people's mean, with no uncertainty left
        assert corrected["mean"] == pytest.approx(sum(people) / 4)
        assert corrected["interval"] == pytest.approx([corrected["mean"]] * 2)
        assert corrected["bias"] == pytest.approx(summary["metrics"][metric]["mean"] - sum(people) / 4)
    assert summary["labels"] == str(LABELED)


def test_fewer_than_ten_labels_are_noted_unless_every_sample_is_labeled(labeled_run, tmp_path):
    out, _, _ = labeled_run
    every = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert not any("labeled sample" in warning for warning in every["warnings"])  # people's mean is known
    labels = tmp_path / "two.jsonl"
    labels.write_text("".join(LABELED.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    argv = ["run", str(LABELED), "--out", str(tmp_path / "out"), "--quiet", "--metrics", "context_recall",
            "--labels", str(labels)]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"]["context_recall"]["corrected"]["labeled"] == 2
    (note,) = [warning for warning in summary["warnings"] if "labeled sample" in warning]
    assert note.startswith("note: fewer than ten labeled samples correct context_recall (2): ")
    assert note.endswith("label at least ten")


def test_a_gate_on_a_corrected_mean_writes_its_outcome_in_the_summary(tmp_path):
    """--labels with --fail-under, the README's way to gate a build: summary.json could not be written
    (a numpy bool in the gate's outcome), exit 1 with a traceback (a probe)."""
    labels = tmp_path / "three.jsonl"  # its interval's low end is not clipped to 0: a numpy float, as it was
    labels.write_text("".join(LABELED.read_text(encoding="utf-8").splitlines(keepends=True)[:3]), encoding="utf-8")
    argv = ["run", str(LABELED), "--out", str(tmp_path / "out"), "--quiet", "--metrics", "context_recall",
            "--labels", str(labels), "--fail-under", "context_recall=0"]
    assert main(argv) == 0
    gate = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))["gates"]["context_recall"]
    assert gate["compared"] == "corrected mean" and gate["passed"] is True and gate["undecided"] is False
    assert (tmp_path / "out" / "report.html").is_file()


def test_a_calibrated_metric_counts_verdicts_whose_probability_reaches_the_threshold(labeled_run):
    out, rows, calibration = labeled_run
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["calibration"]["path"] == str(calibration)
    assert summary["calibration"]["thresholds"] == {"context_recall": 0.3}
    assert summary["settings"]["scoring"]["context_recall"] == "calibrated"
    for row in rows.values():
        probabilities = [s["probability"] for s in row["evidence"]["context_recall"]["sentences"]]
        assert row["context_recall"] == pytest.approx(sum(p >= 0.3 for p in probabilities) / len(probabilities))
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Calibrated verdict thresholds" in page and "corrected mean" in page
    assert "%)</span>" in page  # each verdict shows the judge's confidence in it


def test_the_peers_headline_metrics_run_on_the_real_judge_in_english_and_chinese(no_network, picked_data, tmp_path):
    """context_precision and faithfulness, asked by name: every sample scored (the one without a
    reference judged against its response), with their evidence in results.jsonl, the report and
    to_pandas()."""
    from localeval import evaluate

    assert main(["run", str(picked_data), "--out", str(tmp_path), "--metrics", "context_precision,faithfulness",
                 "--quiet"]) == 0
    rows = {row["id"]: row for row in map(json.loads, (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    assert set(rows) == set(PICKED)
    for sample_id, row in rows.items():
        precision, faithfulness = row["evidence"]["context_precision"], row["evidence"]["faithfulness"]
        assert 0.0 <= row["context_precision"] <= 1.0 and 0.0 <= row["faithfulness"] <= 1.0, sample_id
        assert [chunk["rank"] for chunk in precision["chunks"]] == list(range(len(precision["chunks"])))
        assert faithfulness["claims"] and all(claim["claim"].strip() for claim in faithfulness["claims"])
        assert all(0.0 <= claim["probability"] <= 1.0 for claim in faithfulness["claims"])
    assert rows["legacy-names-no-reference"]["evidence"]["context_precision"]["against"] == "response"
    assert rows["zh-great-wall"]["evidence"]["context_precision"]["against"] == "reference"
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "context_precision" in report and "faithfulness" in report
    frame = evaluate(str(picked_data), ["context_precision", "faithfulness"]).to_pandas()  # the cache answers
    assert frame.loc["zh-great-wall", "faithfulness"] == pytest.approx(rows["zh-great-wall"]["faithfulness"])
