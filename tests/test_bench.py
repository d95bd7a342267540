"""`localeval bench`: the agreement statistics by hand, labeled-data checks, and the whole pipeline.

The pipeline runs with scripted judges that answer from the human labels (an oracle, and a
contrarian that says the opposite), so every agreement number is known in advance; once in
this process and once in child processes, as the CLI runs it. The real embedded judge runs
last, through the CLI, on four labeled records copied from the development set.
"""

from __future__ import annotations

import hashlib
import json
import re
import math
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from localeval import models
from localeval.bench import agreement
from localeval.bench.command import assemble, best_judge, run_judges
from localeval.bench.agreement import untied
from localeval.bench.compare import compare
from localeval.bench.labels import LabeledSample, read_labeled, warn_of_samples_left_out
from localeval.bench.cpu_share import Sharing
from localeval.bench.report import headline, html_page, markdown_table, tables, write_reports
from localeval.bench.worker import JudgeJob, JudgeRun, run_judge
from localeval.cli import main
from localeval.engine.scripted import LookupEmbedder, ScriptedJudge
from localeval.errors import DataError, LocalevalWarning, UserError
from localeval.metrics import DEFAULT_METRICS, JudgeSettings, resolve_metrics
from localeval.requests import Choice, JudgeAnswer, JudgeRequest
from localeval.results import file_digest
from localeval.scoring_rules import SCORING_RULES
from localeval.text import split_chunks
from localeval.tuning import measured_settings, metric_settings

SMALL = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"
METRICS = list(DEFAULT_METRICS)
# Human scores of labeled_small.jsonl, worked out by hand from its labels.
HUMAN = {
    "dev-020": {"context_relevance": 1.0, "context_recall": 1.0, "answer_supported_precision": 0.0,
                "context_supported_precision": 0.0, "response_relevancy": 1.0},
    "dev-021": {"context_relevance": 0.2, "context_recall": 1.0, "answer_supported_precision": 0.0,
                "context_supported_precision": 0.0, "response_relevancy": 0.0},
    "dev-028": {"context_relevance": 0.0, "context_recall": 0.0, "answer_supported_precision": 0.0,
                "context_supported_precision": 0.0, "response_relevancy": 1.0},
    "dev-029": {"context_relevance": 2 / 3, "context_recall": 1.0, "answer_supported_precision": 1.0,
                "context_supported_precision": 1 / 3, "response_relevancy": 0.0},
}


# --- statistics, against hand-computed values --------------------------------------------------

JUDGE = [True, True, False, False, True]
PEOPLE = [True, False, False, True, True]


def test_accuracy_balanced_accuracy_and_f1_by_hand():
    assert agreement.accuracy(JUDGE, PEOPLE) == pytest.approx(3 / 5)
    # recall on true: 2 of 3; on false: 1 of 2
    assert agreement.balanced_accuracy(JUDGE, PEOPLE) == pytest.approx((2 / 3 + 1 / 2) / 2)
    # tp 2, fp 1, fn 1
    assert agreement.f1(JUDGE, PEOPLE) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))


def test_balanced_accuracy_with_one_human_class_is_that_class_recall():
    assert agreement.balanced_accuracy([True, False, True, True], [True] * 4) == pytest.approx(0.75)
    assert agreement.balanced_accuracy([True, False], [False, False]) == pytest.approx(0.5)


def test_undefined_sentence_statistics_are_none():
    assert agreement.accuracy([], []) is None
    assert agreement.balanced_accuracy([], []) is None
    assert agreement.f1([False, False], [False, False]) is None  # nobody said true: F1 has no base
    with pytest.raises(ValueError):
        agreement.accuracy([True], [True, False])


def test_average_ranks_share_ties():
    assert agreement.average_ranks([10, 20, 20, 30]).tolist() == [1, 2.5, 2.5, 4]
    assert agreement.average_ranks([3, 1, 3, 3]).tolist() == [3, 1, 3, 3]


def test_spearman_with_ties_by_hand():
    # ranks x: 1, 2.5, 2.5, 4; y: 1, 3, 2, 4 -> centred products 4.5 over sqrt(4.5 * 5)
    assert agreement.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(3 / math.sqrt(10))
    assert agreement.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert agreement.spearman([0.1, 0.2, 0.4], [1, 5, 9]) == pytest.approx(1.0)  # ranks, not values


def test_scores_equal_but_for_float_noise_are_ties():
    noisy = (0.1 + 0.1 + 0.1) / 3  # 0.10000000000000002
    assert agreement.spearman([0.1, noisy, 0.1, 0.4], [0, 0, 0, 1]) == pytest.approx(1.0)


def test_spearman_is_none_when_undefined_and_skips_missing_pairs():
    assert agreement.spearman([0.5, 0.5, 0.5], [0.0, 0.5, 1.0]) is None  # constant judge
    assert agreement.spearman([0.1, 0.9], [1.0, 1.0]) is None  # constant humans
    assert agreement.spearman([0.3], [0.1]) is None
    assert agreement.spearman([], []) is None
    assert agreement.spearman([0.1, None, 0.3, float("nan"), 0.5], [1, 2, 2, 3, 3]) == pytest.approx(1.0)


def test_mean_absolute_error_skips_missing_pairs():
    assert agreement.mean_absolute_error([0.5, None, 1.0], [0.0, 0.3, 0.5]) == pytest.approx(0.5)
    assert agreement.mean_absolute_error([None], [1.0]) is None


def test_roc_auc_counts_ties_half():
    # positives 0.9, 0.8 vs negatives 0.8, 0.3: wins 1 + 1 + 0.5 + 1 of 4 pairs
    assert agreement.roc_auc([0.9, 0.8, 0.8, 0.3], [True, True, False, False]) == pytest.approx(0.875)
    assert agreement.roc_auc([0.5, 0.5, 0.5], [True, False, False]) == pytest.approx(0.5)
    assert agreement.roc_auc([0.1, 0.2, 0.9], [True, True, False]) == pytest.approx(0.0)
    assert agreement.roc_auc([0.9, None, 0.1], [True, False, False]) == pytest.approx(1.0)


def test_roc_auc_is_none_with_one_class():
    assert agreement.roc_auc([0.2, 0.4], [True, True]) is None
    assert agreement.roc_auc([], []) is None


# --- labeled data ----------------------------------------------------------------------------


def test_labels_are_read_flattened_and_scored_with_the_metric_formulas():
    labeled = read_labeled(SMALL, METRICS)
    assert [item.sample.id for item in labeled] == list(HUMAN)
    dev021 = labeled[1]
    assert dev021.sentences["context_relevance"] == (False, False, False, False, True)  # three chunks, in order
    assert dev021.response_relevant is False and dev021.response_noncommittal is True
    assert labeled[2].sample.language == "zh"
    for item in labeled:
        for metric in METRICS:
            assert item.human_score(metric) == pytest.approx(HUMAN[item.sample.id][metric])


def test_empty_context_scores_as_the_metrics_do():
    item = LabeledSample(labeled_sample().sample, {"context_relevance": (), "context_supported_precision": ()})
    for metric in ["context_relevance", "context_supported_precision"]:  # their rule: no context sentences is 0
        assert item.human_score(metric) == 0.0, metric


def labeled_sample() -> LabeledSample:
    return read_labeled(SMALL, METRICS)[0]


def write_records(tmp_path: Path, edit) -> Path:
    """labeled_small.jsonl with `edit(records)` applied."""
    records = [json.loads(line) for line in SMALL.read_text(encoding="utf-8").splitlines()]
    edit(records)
    path = tmp_path / "labeled.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda r: r[1].pop("labels"), r"line 2, field 'labels': sample dev-021 has no 'labels': .*; a labeled file "
                                       r"holds only labeled samples"),
        # the labels beside the sample's fields, and labels under names of the labeler's own (a probe's)
        (lambda r: r[1].update(r[1].pop("labels")),
         r"sample dev-021 has no 'labels': .*; its context_sentences_relevant, reference_sentences_attributed \.\.\. are "
         r"beside the sample's fields: put them in a 'labels' object"),
        (lambda r: r[0]["labels"].update(supported=r[0]["labels"].pop("response_sentences_supported"), notes="ok"),
         r"sample dev-020: missing \(needed for answer_supported_precision; .*\); localeval reads none of 'supported', "
         r"'notes'"),
        (lambda r: r[0]["labels"].pop("response_sentences_supported"),
         r"line 1, field 'labels.response_sentences_supported': sample dev-020: missing"),
        (lambda r: r[0]["labels"]["response_sentences_supported"].pop(),
         r"line 1, .*sample dev-020: 2 labels, but localeval splits the response into 3 sentences \(localeval.text"),
        (lambda r: r[1]["labels"]["context_sentences_relevant"].pop(),
         r"line 2, .*sample dev-021: 2 chunk lists for 3 retrieved_contexts chunks"),
        (lambda r: r[2]["labels"]["context_sentences_supported_by_response"][0].append(False),
         r"line 3, .*sample dev-028: chunk 1 has 3 labels, but localeval splits it into 2 sentences"),
        (lambda r: r[3]["labels"].update(reference_sentences_attributed=[1, 1]),
         r"line 4, .*sample dev-029: expected a list of true/false, one per sentence; got \[1, 1\] \(write true and "
         r"false, not 1 and 0\)"),
        (lambda r: r[1]["labels"].update(context_sentences_relevant=[True, False, False]),
         r"line 2, .*sample dev-021: expected one list of true/false per retrieved_contexts chunk, \[\[\.\.\.\], "
         r"\[\.\.\.\]\]; got a single list"),
        (lambda r: r[3]["labels"].update(response_relevant="yes"),
         r"line 4, field 'labels.response_relevant': sample dev-029: expected true or false \(needed for "
         r"response_relevancy\); got \"yes\""),
        (lambda r: r[3]["labels"].update(response_relevant=True, response_noncommittal=True),
         r"line 4, field 'labels.response_relevant': sample dev-029: response_relevant and response_noncommittal are "
         r"both true, but a noncommittal response is never relevant: label it response_relevant: false"),
        (lambda r: r[0].update(labels=[True]), r"line 1, field 'labels': sample dev-020: expected an object"),
        # the probe's: 1 for true on a flag, a null that is no missing key, labels for a text that is not there
        (lambda r: r[3]["labels"].update(response_relevant=1),
         r"got 1 \(write true and false, not 1 and 0\)"),
        (lambda r: r[0]["labels"].update(reference_sentences_attributed=None),
         r"sample dev-020: null, where context_recall needs a list of true/false"),
        (lambda r: r[0].pop("reference"),
         r"sample dev-020: 2 labels, but the sample has no reference; give it \"reference_sentences_attributed\": \[\]"),
        # no reference to label: the message said it was missing, not what to write (a probe)
        (lambda r: (r[0].pop("reference"), r[0]["labels"].pop("reference_sentences_attributed")),
         r"line 1, field 'labels.reference_sentences_attributed': sample dev-020: missing \(needed for context_recall; "
         r"--metrics chooses the metrics that need labels\); the sample has no reference to label, so give it "
         r"\"reference_sentences_attributed\": \[\]"),
        # blank chunks: a list per chunk all the same, which "[]" was not
        (lambda r: (r[1].update(retrieved_contexts=["", " ", ""]), r[1]["labels"].pop("context_sentences_relevant"),
                    r[1]["labels"].update(context_sentences_supported_by_response=[[], [], []])),
         r"sample dev-021: missing .*; the sample has no context to label, so give it "
         r"\"context_sentences_relevant\": \[\[\], \[\], \[\]\]"),
        # nothing retrieved supports nothing: the judge's 0 by rule was "corrected" up by the labeler's slip
        (lambda r: r[0].update(retrieved_contexts=[" "], labels={**r[0]["labels"], "context_sentences_relevant": [[]],
                                                                 "context_sentences_supported_by_response": [[]]}),
         r"line 1, field 'labels.reference_sentences_attributed': sample dev-020: a reference sentence is labeled true, "
         r"but the sample retrieved nothing \(its retrieved_contexts are empty\) to support it: label every one false"),
        (lambda r: (retrieved_nothing(r), r[0]["labels"].update(response_sentences_supported=[False, True, False])),
         r"field 'labels.response_sentences_supported': sample dev-020: a response sentence is labeled true, but"),
        (lambda r: r[0]["labels"].update(response_sentence_supported=r[0]["labels"].pop("response_sentences_supported")),
         r"line 1, field 'labels.response_sentences_supported': sample dev-020: missing \(needed for "
         r"answer_supported_precision; --metrics chooses the metrics that need labels\); 'response_sentence_supported' is "
         r"there: did you mean 'response_sentences_supported'\?"),
    ],
)
def test_labels_that_do_not_line_up_are_refused_naming_the_record(tmp_path, edit, expected):
    with pytest.raises(DataError, match=expected):
        read_labeled(write_records(tmp_path, edit), METRICS)


def test_a_labels_key_of_the_labelers_own_stays_and_a_missing_label_names_its_metric(tmp_path):
    for theirs in ({"annotator": "kim"}, {"response_relevant_v2": True}, {"context_sentences_relevant_old": []}):
        assert read_labeled(write_records(tmp_path, lambda r: r[0]["labels"].update(theirs)), METRICS)
    path = write_records(tmp_path, lambda r: r[0]["labels"].pop("reference_sentences_attributed"))
    with pytest.raises(DataError, match=r"sample dev-020: missing \(needed for context_recall; --metrics chooses"):
        read_labeled(path, METRICS)


def test_a_sample_with_nothing_to_judge_for_a_metric_is_said_to_drop_out_of_its_agreement(tmp_path):
    path = write_records(tmp_path, lambda r: r[0].update(reference="", labels={**r[0]["labels"],
                                                                              "reference_sentences_attributed": []}))
    labeled = read_labeled(path, METRICS)
    assert labeled[0].human_score("context_recall") is None  # what the warning is about: no ρ without a score
    with pytest.warns(LocalevalWarning) as caught:
        warn_of_samples_left_out(path, labeled, METRICS)
    (message,) = [str(w.message) for w in caught]
    assert message == (f"{path}: context_recall: 1 of 4 labeled samples give it no sentence to judge (dev-020): no "
                       "human score, left out of its agreement with people")


def retrieved_nothing(records: list[dict]) -> None:
    """dev-020 as a retrieval that found nothing: no context, and so no context sentence to label."""
    labels = records[0]["labels"]
    records[0].update(retrieved_contexts=[], labels={
        **labels, "context_sentences_relevant": [], "context_sentences_supported_by_response": [],
        # nothing retrieved supports nothing: a true there is refused (test_labels_that_do_not_line_up...)
        "reference_sentences_attributed": [False] * len(labels["reference_sentences_attributed"]),
        "response_sentences_supported": [False] * len(labels["response_sentences_supported"])})


def test_a_sample_that_retrieved_nothing_is_said_to_drop_out_of_the_metrics_a_rule_decides(tmp_path):
    """Its verdicts are 0 by rule, whatever the judge: counted, they were agreement the judge never gave
    (a probe's bench showed a balanced accuracy of 1.000 resting on one such verdict)."""
    path = write_records(tmp_path, retrieved_nothing)
    with pytest.warns(LocalevalWarning) as caught:
        warn_of_samples_left_out(path, read_labeled(path, METRICS), METRICS)
    said = [str(w.message) for w in caught]
    for metric in ("context_relevance", "context_recall", "answer_supported_precision", "context_supported_precision"):
        assert (f"{path}: {metric}: 1 of 4 labeled samples retrieved nothing (dev-020): their verdicts are 0 by rule, "
                "not the judge's, so they are left out of its agreement with people") in said
    assert not any("response_relevancy" in message for message in said)  # it reads no context


def test_limit_warns_only_of_the_samples_it_benchmarks(tmp_path):
    """`--limit 1` warned of a second sample that it never benchmarked (a probe's finding)."""
    import warnings

    from localeval.bench.command import _read_and_checked

    path = write_records(tmp_path, lambda r: r[1].update(reference="", labels={
        **r[1]["labels"], "reference_sentences_attributed": []}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(_read_and_checked(str(path), METRICS, 1)) == 1
        assert caught == []
        assert len(_read_and_checked(str(path), METRICS, None)) == 4
    assert ["dev-021" in str(w.message) for w in caught] == [True]


def test_verdicts_set_by_rule_are_left_out_of_a_judges_agreement(tmp_path):
    labeled = read_labeled(write_records(tmp_path, retrieved_nothing), METRICS)
    run = run_judge(jobs_for(labeled, [scripted("oracle", LabelJudge(labeled))])[0])
    assert run.rows[0]["context_recall"] == 0.0  # scored by the rule, as a run scores it
    compared = compare(labeled, run, METRICS)
    recall = compared["metrics"]["context_recall"]
    assert recall["scores"]["by_rule"] == 1 and recall["scores"]["samples"] == 3 and recall["scores"]["null"] == 0
    assert compared["metrics"]["context_relevance"]["scores"]["by_rule"] == 1  # scored 0 unasked, as a reviewer found
    # the scatter plots (per_sample) show only the pairs the agreement rests on
    assert compared["per_sample"][0]["context_recall"] == {**compared["per_sample"][0]["context_recall"], "human": None}
    assert compared["per_sample"][1]["context_recall"]["human"] is not None
    everyone = compare(read_labeled(SMALL, METRICS), run_judge(jobs_for(read_labeled(SMALL, METRICS),
                       [scripted("oracle", LabelJudge(read_labeled(SMALL, METRICS)))])[0]), METRICS)
    dev_020_sentences = 2
    assert recall["sentences"]["sentences"] == (everyone["metrics"]["context_recall"]["sentences"]["sentences"]
                                                - dev_020_sentences)


def test_only_the_labels_of_the_chosen_metrics_are_needed(tmp_path):
    path = write_records(tmp_path, lambda r: [record["labels"].pop("response_relevant") for record in r])
    with pytest.raises(DataError, match="response_relevant"):
        read_labeled(path, METRICS)
    labeled = read_labeled(path, ["context_recall"])
    assert list(labeled[0].sentences) == ["context_recall"] and labeled[0].response_relevant is None


def test_labeled_data_file_errors(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        read_labeled(tmp_path / "none.jsonl", METRICS)
    csv = tmp_path / "labeled.csv"
    csv.write_text("user_input\nq\n")
    with pytest.raises(DataError, match=r"must be .jsonl or .json \(its labels are lists of true/false per sentence, "
                       "which a spreadsheet's cells do not hold"):
        read_labeled(csv, METRICS)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(SMALL.read_text(encoding="utf-8").splitlines()[0] + "\n{\"user_input\": \n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2"):  # the sample loader's own check and message
        read_labeled(broken, METRICS)


def test_a_json_list_of_labeled_records_is_read_too(tmp_path):
    records = [json.loads(line) for line in SMALL.read_text(encoding="utf-8").splitlines()]
    path = tmp_path / "labeled.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    assert [item.sample.id for item in read_labeled(path, METRICS)] == list(HUMAN)
    records[1]["labels"]["reference_sentences_attributed"] = []
    path.write_text(json.dumps({"samples": records}, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DataError, match="record 2, .*dev-021: 0 labels"):
        read_labeled(path, METRICS)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_labeled_data_in_utf16_is_read_as_the_samples_are(tmp_path, suffix):
    """The samples of a UTF-16 file (Excel's "Unicode Text") were read, and its labels then raised a
    UnicodeDecodeError, exit 1 (a paths probe)."""
    text = SMALL.read_text(encoding="utf-8")
    if suffix == ".json":
        text = json.dumps([json.loads(line) for line in text.splitlines()], ensure_ascii=False)
    path = tmp_path / f"labeled{suffix}"
    path.write_text(text, encoding="utf-16")  # with its byte-order mark
    assert [item.sample.id for item in read_labeled(path, METRICS)] == list(HUMAN)


# --- scripted judges that answer from the labels -----------------------------------------------


class LabelJudge:
    """A judge script that answers as the labelers did ("oracle"), the opposite ("contrarian"), or
    yes to every verdict ("yes-man": right only on context relevance, the same questions for
    every response).

    It knows each request by building it with the metrics' own code beforehand, so the test does
    not depend on how prompts or schemas are worded. A module-level class, so that a child
    process can unpickle it.
    """

    def __init__(self, labeled: list[LabeledSample], mode: str = "oracle"):
        self.mode = mode
        self.answers: dict[JudgeRequest, dict] = {}
        self.requests: dict[tuple[str, str], list[JudgeRequest]] = {}  # (sample id, metric) -> its requests
        for item in labeled:
            # As its job will ask: a scripted judge is unregistered, so it gets the unmeasured settings.
            for metric in resolve_metrics(METRICS, metric_settings("scripted")):
                requests = next(metric.steps(item.sample, item.sample.language or "en"), None)
                if requests is None:  # scored without asking (a rule: nothing retrieved)
                    continue
                self.requests[(item.sample.id, metric.name)] = requests
                self.answers.update(zip(requests, self._answers(metric, item)))

    def __call__(self, request: JudgeRequest) -> dict:
        return self.answers[request]

    def _answers(self, metric, item: LabeledSample) -> list[dict]:
        if metric.name == "response_relevancy":
            return [self._questions(item)]
        flags = [self._verdict(metric.name, flag) for flag in item.sentences[metric.name]]
        key, reasons = metric.verdict_key, metric.settings.reasons
        if metric.name != "context_supported_precision":
            return [verdict_list(key, flags, reasons)]
        answers, start = [], 0  # one request per chunk that has sentences, in chunk order
        for chunk in split_chunks(item.sample.retrieved_contexts, item.sample.language or "en"):
            if chunk:
                answers.append(verdict_list(key, flags[start:start + len(chunk)], reasons))
                start += len(chunk)
        return answers

    def _verdict(self, metric: str, flag: bool) -> bool:
        if self.mode == "yes-man":
            return flag if metric == "context_relevance" else True
        return flag != (self.mode == "contrarian")

    def _questions(self, item: LabeledSample) -> dict:
        if self.mode == "yes-man":
            question, noncommittal = "q?", False
        else:
            flip = self.mode == "contrarian"
            relevant, noncommittal = item.response_relevant != flip, item.response_noncommittal != flip
            question = item.sample.user_input if relevant else "an unrelated question?"
        n = JudgeSettings().questions
        return {"questions": [{"question": question, "noncommittal": int(noncommittal)}] * n}


def verdict_list(key: str, flags: list[bool], reasons: bool) -> dict:
    """The answer a schema asks for: a reason before each verdict only where the schema has one
    (its objects are closed, so an extra key makes the answer unfit)."""
    reason = {"reason": "labels"} if reasons else {}
    return {"verdicts": [{"sentence": i, **reason, key: int(f)} for i, f in enumerate(flags, 1)]}


class Failing:
    def __call__(self, request):
        raise RuntimeError("this judge always breaks")


class Dying:
    def __call__(self, request):
        os._exit(3)  # as a process killed mid-run


# The user input embeds as [1, 0] (the default), the unrelated question as [0, 1]: similarity 1 or 0.
EMBEDDER = LookupEmbedder({"an unrelated question?": [0.0, 1.0]}, default=[1.0, 0.0])


def scripted(name: str, script) -> ScriptedJudge:
    judge = ScriptedJudge(script)
    judge.identity = name
    return judge


def jobs_for(labeled, judges) -> list[JudgeJob]:
    samples = tuple(item.sample for item in labeled)
    return [JudgeJob(judge, samples, tuple(METRICS), metric_settings(judge), embedder=EMBEDDER) for judge in judges]


@pytest.fixture(autouse=True)
def an_idle_machine(monkeypatch):
    """bench warns of other work beside a judge, read from the CPU it took and the load average: these tests
    run beside others."""
    from localeval.bench import command

    monkeypatch.setattr(command, "sharing", lambda before, after: Sharing(0.0, 0.0))
    monkeypatch.setattr(command, "load_average", lambda: 0.0)


@pytest.fixture(autouse=True)
def judges_installed(request, monkeypatch):
    """bench refuses a registered judge that is not installed before any runs, and most tests here name
    registered judges whose runs they script (agreeing_child): CI installs the default judge alone. The
    tests of that refusal are marked `installed_check` and meet the real one."""
    if "installed_check" not in request.keywords:
        monkeypatch.setattr(models, "check_preparable", lambda spec: None)


def agreeing_child(job: JudgeJob) -> JudgeRun:
    """A judge's run as its worker process gives it, answered from SMALL's labels (no model loads)."""
    judge = scripted(job.name, LabelJudge(read_labeled(SMALL, METRICS)))
    judge.fingerprint = models.weights_now(job.name)  # a folder judge's weights, as the worker's judge has them
    return run_judge(replace(job, judge=judge, embedder=EMBEDDER, settings=metric_settings("scripted")))


def failed_child(job: JudgeJob) -> JudgeRun:
    return JudgeRun(job.name, error="UserError: not installed")


def bench_with(labeled, judges, isolate: bool, out: Path) -> dict:
    started = time.perf_counter()
    jobs = jobs_for(labeled, judges)
    bench = assemble(labeled, run_judges(jobs, lambda line: None, isolate=isolate), jobs, data=SMALL,
                     data_sha256=file_digest(SMALL), started=started)
    write_reports(out, bench)
    return bench


@pytest.fixture(scope="module")
def labeled() -> list[LabeledSample]:
    return read_labeled(SMALL, METRICS)


@pytest.fixture(scope="module")
def in_process(labeled, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    judges = [scripted("oracle", LabelJudge(labeled)), scripted("contrarian", LabelJudge(labeled, "contrarian"))]
    return bench_with(labeled, judges, isolate=False, out=out), out


def test_a_judge_that_answers_as_the_labelers_agrees_perfectly(in_process, labeled):
    bench, _ = in_process
    oracle = next(j for j in bench["judges"] if j["name"] == "oracle")
    assert oracle["status"] == "ok"
    for metric in METRICS:
        scores = oracle["metrics"][metric]["scores"]
        assert scores["spearman"] == pytest.approx(1.0) and scores["mae"] == pytest.approx(0.0)
        assert scores["samples"] == 4 and scores["null"] == 0
        human = [item.human_score(metric) for item in labeled]
        assert scores["human_untied"] == 4 - max(human.count(h) for h in human)  # those off people's commonest
        if metric != "response_relevancy":
            sentences = oracle["metrics"][metric]["sentences"]
            assert sentences["accuracy"] == sentences["balanced_accuracy"] == 1.0
    relevancy = oracle["metrics"]["response_relevancy"]
    assert relevancy["auc"] == 1.0
    assert relevancy["noncommittal"] == {"samples": 4, "human_flagged": 1, "judge_flagged": 1, "agreement": 1.0,
                                         "balanced_accuracy": 1.0}
    assert oracle["summary"]["mean_spearman"] == pytest.approx(1.0)
    assert oracle["summary"]["pooled_support_balanced_accuracy"] == 1.0
    assert oracle["summary"]["valid_json_rate"] == 1.0
    per_sample = {row["id"]: row for row in oracle["per_sample"]}
    for sample_id, scores in HUMAN.items():
        for metric, human in scores.items():
            assert per_sample[sample_id][metric]["human"] == pytest.approx(human)
            assert per_sample[sample_id][metric]["judge"] == pytest.approx(human)


def test_a_judge_that_says_the_opposite_agrees_nowhere(in_process):
    bench, _ = in_process
    contrarian = next(j for j in bench["judges"] if j["name"] == "contrarian")
    for metric in ("context_relevance", "context_recall", "answer_supported_precision", "context_supported_precision"):
        assert contrarian["metrics"][metric]["sentences"]["balanced_accuracy"] == 0.0
    # Its flags make dev-020, 028, 029 noncommittal (score 0) and dev-021 relevant (1): the relevant
    # ones (020, 028) lose to 021 and tie with 029, so 2 halves of 4 pairs.
    assert contrarian["metrics"]["response_relevancy"]["auc"] == 0.25
    assert contrarian["metrics"]["response_relevancy"]["noncommittal"]["agreement"] == 0.0
    assert contrarian["summary"]["pooled_support_balanced_accuracy"] == 0.0


def test_bench_json_names_the_winner_and_how_it_ran(in_process):
    _, out = in_process
    saved = json.loads((out / "bench.json").read_text(encoding="utf-8"))
    # on 4 samples a resampling repeats the few it has: no certainty is claimed (the headline says chance)
    assert saved["best_judge"] == {"name": "oracle", "mean_spearman": pytest.approx(1.0), "spearman_defined": 5}
    assert saved["dataset"] == {"path": str(SMALL), "samples": 4, "languages": {"en": 2, "zh": 2},
                                "sha256": hashlib.sha256(SMALL.read_bytes()).hexdigest()}  # what --resume checks
    assert saved["settings"]["metrics"] == METRICS and saved["settings"]["cache"] is False
    assert saved["settings"]["embedder"] == "lookup"
    # a scripted judge was never measured: it gets the unmeasured choice, which mixes on and off
    assert (saved["settings"]["reasons"], saved["settings"]["example"]) == ("auto", "auto")
    assert saved["judges"][0]["settings"] == {option: {m: v for m, v in chosen.items() if m in METRICS}
                                              for option, chosen in measured_settings(models.best_judge()).items()}
    measures = saved["judges"][0]["measures"]
    for key in ("samples_per_second", "valid_json_rate", "answered", "invalid", "peak_memory_mb", "wall_seconds"):
        assert measures[key] is not None
    assert measures["answered"] > 0 and measures["invalid"] == 0
    assert measures["output_tokens_per_second"] is None  # a scripted judge counts no tokens


def test_what_reading_the_labeled_data_warned_of_is_kept_in_the_bench_files(tmp_path, tiny_judge, capsys):
    """It was said on stderr only: bench.json and the reports, which a reader looks in, had none of it."""
    records = [json.loads(line) for line in SMALL.read_text(encoding="utf-8").splitlines()]
    del records[1]["id"]
    records[0].update(reference="", labels={**records[0]["labels"], "reference_sentences_attributed": []})
    data = tmp_path / "labeled.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["bench", "--data", str(data), "--judges", str(tiny_judge), "--metrics", "context_recall",
                 "--out", str(out), "--quiet", "--device", "cpu"]) == 0
    without_id, no_human_score = json.loads((out / "bench.json").read_text(encoding="utf-8"))["warnings"]
    assert without_id.startswith(f"warning: {data}: 1 of 4 records have no id")
    assert no_human_score.startswith(f"warning: {data}: context_recall: 1 of 4 labeled samples give it no sentence")
    err = capsys.readouterr().err
    for warning in (without_id, no_human_score):
        assert f"- {warning}" in (out / "bench.md").read_text(encoding="utf-8")
        assert warning in err  # said as it was read, too


def test_bench_markdown_bolds_the_best_value_per_column(in_process):
    _, out = in_process
    text = (out / "bench.md").read_text(encoding="utf-8")
    assert "**Best judge: oracle, mean Spearman ρ = 1.000 across 5 metrics" in text
    assert "Dataset:" in text and "Device:" in text and "time taken:" in text
    assert "Settings: reasons auto, example auto," in text
    assert ("oracle: reasons on for context_supported_precision; off for context_relevance, context_recall, "
            "answer_supported_precision. example on for context_recall, answer_supported_precision; off for "
            "context_relevance. scoring soft for context_relevance; hard for context_recall") in text
    agreement_table = text.split("## ")[1].splitlines()
    rows = {line.split("|")[1].strip(): line for line in agreement_table if line.startswith("| ")}
    assert rows["oracle"].startswith("| oracle | **1.000** | **1.000** |") and "**1.000**" not in rows["contrarian"]
    errors_table = text.split("## ")[3]
    assert "| oracle | **0.000** |" in errors_table  # lower is better there
    header = rows["judge"]
    for metric in METRICS:
        assert metric in header
    assert "samples/s" in header and "valid JSON" in header


def test_bench_html_is_self_contained_with_charts_for_every_metric(in_process):
    _, out = in_process
    page = (out / "bench.html").read_text(encoding="utf-8")
    assert "Best judge: oracle" in page.split("<svg", 1)[0]  # stated before any chart
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and "<link" not in page
    assert page.count("role='img'") == 2 + len(METRICS)  # two bar charts, one scatter panel per metric
    points = re.findall(r"<g><(circle|polygon) [^>]*/><title>", page)  # judge x sample x metric, a shape per judge
    assert len(points) == 2 * 4 * len(METRICS) and points.count("circle") == points.count("polygon")
    assert "oracle · dev-028: judge 0.000, human 0.000" in page  # each point says what it is
    # a screen reader is told which value is best, and each chart's values
    assert "<td class=best>1.000<span class='sr-only'> (best)</span></td>" in page
    assert re.search(r"aria-label='context_recall, judge score against human score: oracle ρ 1.00, [^']*; points per", page)
    assert "<html lang='en'>" in page and "<main>" in page and "<th scope='row'>oracle</th>" in page


def test_a_judge_that_always_says_yes_is_at_chance_and_its_mean_rho_says_over_how_many(labeled, tmp_path):
    bench = bench_with(labeled, [scripted("yes-man", LabelJudge(labeled, "yes-man"))], isolate=False, out=tmp_path)
    (judge,) = bench["judges"]
    for metric in ("context_recall", "answer_supported_precision", "context_supported_precision"):
        assert judge["metrics"][metric]["sentences"]["balanced_accuracy"] == 0.5
        assert judge["metrics"][metric]["scores"]["spearman"] is None  # the same score for every sample
    assert judge["metrics"]["response_relevancy"]["auc"] == 0.5
    # Right on one metric, constant on four: the undefined four count as 0, not as missing.
    assert judge["summary"]["spearman_defined"] == 1 and judge["summary"]["mean_spearman"] == pytest.approx(0.2)
    text = (tmp_path / "bench.md").read_text(encoding="utf-8")
    assert "mean Spearman ρ = 0.200 across 5 metrics (4 undefined, counted as 0)" in text
    assert "| yes-man | 0.200 (1 of 5) | 1.000 | — | — | — | — |" in text


class HedgingJudge(LabelJudge):
    """Knows every answer but never dares say 1: its probability of 1 is 0.4 where people said true
    and 0.1 where they said false, so each greedy verdict is 0. Its questions are the oracle's."""

    def __call__(self, request: JudgeRequest) -> JudgeAnswer:
        data = self.answers[request]
        if "questions" in data:
            return JudgeAnswer.parse(json.dumps(data))
        key = next(k for k in data["verdicts"][0] if k not in ("sentence", "reason"))
        probabilities = [0.4 if item[key] else 0.1 for item in data["verdicts"]]
        hedged = {"verdicts": [{**item, key: 0} for item in data["verdicts"]]}
        choices = tuple(Choice(key, {"0": 1 - p, "1": p}) for p in probabilities)
        return JudgeAnswer.parse(json.dumps(hedged), 0, choices)


def test_bench_measures_both_scorings_and_calibrates_a_judge_that_hedges(labeled, tmp_path):
    started = time.perf_counter()
    jobs = jobs_for(labeled, [scripted("hedger", HedgingJudge(labeled))])
    runs = run_judges(jobs, lambda line: None, isolate=False)
    bench = assemble(labeled, runs, jobs, data=SMALL, data_sha256=file_digest(SMALL), started=started,
                     calibrate_judges=True)
    write_reports(tmp_path, bench)
    (judge,) = bench["judges"]
    for metric in ("context_relevance", "context_recall", "answer_supported_precision", "context_supported_precision"):
        scorings = judge["metrics"][metric]["scorings"]
        human = [HUMAN[i][metric] for i in sorted(HUMAN)]
        if len(set(human)) > 1:
            assert scorings["hard"]["spearman"] is None  # every verdict 0: the same score for every sample
            assert scorings["soft"]["spearman"] == pytest.approx(1.0)  # 0.1 + 0.3 x the people's share
        assert judge["metrics"][metric]["sentences"]["probability_auc"] == 1.0
        fitted = judge["calibration"][metric]
        assert 0.1 < fitted["threshold"] <= 0.4
        assert fitted["balanced_accuracy_at_0.5"] == 0.5 and fitted["balanced_accuracy_fitted"] == 1.0
    per_sample = {row["id"]: row for row in judge["per_sample"]}
    assert per_sample["dev-029"]["context_relevance"]["soft"] == pytest.approx(0.1 + 0.3 * 2 / 3)
    page = (tmp_path / "bench.md").read_text(encoding="utf-8")
    assert "Spearman ρ soft" in page and "Calibration (bench --calibrate)" in page
    for fitted in judge["calibration"].values():  # each cell says whether run --calibration applies it, or why not
        said = "applied" if fitted["helps_both_halves"] else f"not applied: {fitted['not_applied_because']}"
        assert f"{fitted['threshold']:.2f}: " in page and f"({said})" in page


def test_calibration_leaves_out_metrics_whose_human_scores_are_derived(labeled):
    """context_precision's chunks and faithfulness's claims have no label each: nothing to fit a threshold to."""
    from localeval.bench.compare import verdict_probabilities

    item = labeled[0]
    evidence = {"context_precision": {"against": "reference", "chunks": [{"rank": 0, "chunk": "x", "useful": 1, "probability": 0.9}]},
                "faithfulness": {"claims": [{"claim": "c", "supported": 0, "probability": 0.2}]}}
    row = {"id": item.sample.id, "context_precision": 1.0, "faithfulness": 0.0, "evidence": evidence}
    assert verdict_probabilities([item], [row], "context_precision") == []
    assert verdict_probabilities([item], [row], "faithfulness") == []


def test_a_judge_sentence_count_that_does_not_match_the_labels_names_the_sample(labeled):
    run = run_judge(jobs_for(labeled, [scripted("oracle", LabelJudge(labeled))])[0])
    shifted = list(labeled)
    item = shifted[2]
    shifted[2] = LabeledSample(item.sample, {**item.sentences, "context_recall": (False, False)},
                               item.response_relevant, item.response_noncommittal)
    with pytest.raises(UserError, match="sample dev-028, context_recall: the judge judged 1 sentences but the labels have 2"):
        compare(shifted, run, METRICS)


def test_a_null_score_is_counted_and_left_out(labeled):
    oracle = LabelJudge(labeled)
    (broken,) = oracle.requests[("dev-021", "context_recall")]

    def unreadable_recall(request):
        return "not json" if request == broken else oracle(request)

    run = run_judge(jobs_for(labeled, [scripted("patchy", unreadable_recall)])[0])
    result = compare(labeled, run, METRICS)
    recall = result["metrics"]["context_recall"]
    assert recall["scores"]["null"] == 1 and recall["scores"]["samples"] == 3
    assert recall["sentences"]["sentences"] == 5  # dev-021's one reference sentence left out
    assert run.measures["invalid"] == 1
    assert result["summary"]["valid_json_rate"] == pytest.approx(1 - 1 / run.measures["answered"])


def test_the_answer_cache_is_bypassed_unless_asked_for(labeled):
    judge = scripted("cached-oracle", LabelJudge(labeled))
    judge.cacheable = True  # as a model is: a script is not, unless its identity names it, as here
    job = jobs_for(labeled, [judge])[0]
    first, second = run_judge(replace(job, cache=True)), run_judge(replace(job, cache=True))
    assert first.measures["cache_hits"] == 0 and first.measures["answered"] > 0
    assert second.measures["cache_hits"] == first.measures["answered"] and second.measures["answered"] == 0
    assert second.measures["valid_json_rate"] is None  # nothing fresh to judge the grammar by
    bypassed = run_judge(job)  # the default: every answer fresh, so the speeds are the judge's
    assert bypassed.measures["cache_hits"] == 0 and bypassed.measures["answered"] == first.measures["answered"]


def test_judges_in_child_processes_agree_with_in_process_and_failures_stay_alone(labeled, in_process, tmp_path):
    judges = [scripted("oracle", LabelJudge(labeled)), scripted("broken", Failing()), scripted("killed", Dying())]
    bench = bench_with(labeled, judges, isolate=True, out=tmp_path)
    oracle, broken, killed = bench["judges"]
    assert oracle["status"] == "ok"
    same = next(j for j in in_process[0]["judges"] if j["name"] == "oracle")
    assert oracle["metrics"] == same["metrics"] and oracle["per_sample"] == same["per_sample"]
    assert oracle["measures"]["peak_memory_mb"] > 0
    assert broken == {**broken, "status": "failed", "error": "RuntimeError: this judge always breaks"}
    assert "Traceback" in broken["traceback"]
    assert killed["status"] == "failed" and "exit status 3" in killed["error"]
    assert bench["best_judge"]["name"] == "oracle"
    text = (tmp_path / "bench.md").read_text(encoding="utf-8")
    assert "## Failed judges" in text and "- broken: RuntimeError: this judge always breaks" in text
    assert "| broken | failed |" in text


# --- the command line --------------------------------------------------------------------------


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localeval", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_bench_help_teaches_with_examples():
    result = run_cli("bench", "--help")
    assert result.returncode == 0
    for words in ("--judges", "--data", "--cache", "balanced accuracy", "Spearman", "examples:",
                  "localeval docs labeled-data", "exit status"):
        assert words in result.stdout
    assert "bench" in run_cli("--help").stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--data", "{tmp}/none.jsonl"], "none.jsonl: file not found"),
        (["--data", "{unlabeled}"], "has no 'labels'"),
        (["--data", "{misaligned}"], "localeval splits the response into 3 sentences"),
        (["--data", str(SMALL), "--judges", "gpt-9"], "unknown judge 'gpt-9': give a registered name"),
        (["--data", str(SMALL), "--judges", "qwen2.5-coder-05b-instruct"],  # no "did you mean" then (a probe)
         "unknown judge 'qwen2.5-coder-05b-instruct' (did you mean qwen2.5-coder-0.5b-instruct?)"),
        (["--data", str(SMALL), "--judges", "all-minilm-l6-v2"], "'all-minilm-l6-v2' is a registered embedder, not a judge"),
        (["--data", str(SMALL), "--judges", "smollm2-135m-instruct,smollm2-135m-instruct"], "listed twice"),
        # its store folder is the same judge, and run --calibration looks it up by name
        (["--data", str(SMALL), "--judges", "{store}/smollm2-135m-instruct,smollm2-135m-instruct"],
         "smollm2-135m-instruct listed twice (a registered judge's store folder is that judge)"),
        # bench names its judges with --judges, and says so
        (["--data", str(SMALL), "--judges", "{embedder_folder}"],
         "is a sentence-transformers embedder, not a judge: give it as --embedder, and as --judges a registered judge"),
        (["--data", str(SMALL), "--embedder", "{judge_folder}"],
         "is a model that generates text (LlamaForCausalLM), not a sentence-transformers embedder: give it as --judges"),
        (["--data", str(SMALL), "--embedder", "nope"], "unknown embedder 'nope'"),
        (["--data", str(SMALL), "--metrics", "faithfulnes"], "unknown metric 'faithfulnes'"),
        (["--data", str(SMALL), "--limit", "0"], "--limit must be at least 1"),
        (["--data", str(SMALL), "--dtype", "float8"], "unknown dtype 'float8'"),
        (["{tmp}/given-as-run-takes-it.jsonl"], "given-as-run-takes-it.jsonl: file not found"),  # read as --data
        ([str(SMALL), "--data", str(SMALL)], "give the labeled dataset once"),
        ([], "give the labeled dataset (it is required)"),
        # a threshold fitted on two samples a half "helps both halves" by luck
        (["--data", str(SMALL), "--calibrate"], "--calibrate needs at least 10 labeled samples"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, expected):
    unlabeled = write_records(tmp_path, lambda r: r[0].pop("labels"))
    misaligned = tmp_path / "misaligned.jsonl"
    misaligned.write_text(SMALL.read_text(encoding="utf-8").replace('"response_sentences_supported": [false, false, false]',
                                                                    '"response_sentences_supported": [false]', 1),
                          encoding="utf-8")
    store = tmp_path / "store"
    (store / "smollm2-135m-instruct").mkdir(parents=True)
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(store))
    embedder_folder = tmp_path / "my-embedder"
    embedder_folder.mkdir()
    for name in ("config.json", "modules.json"):
        (embedder_folder / name).write_text("{}")
    judge_folder = tmp_path / "my-judge"
    judge_folder.mkdir()
    (judge_folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}')
    args = [a.format(tmp=tmp_path, unlabeled=unlabeled, misaligned=misaligned, store=store,
                     embedder_folder=embedder_folder, judge_folder=judge_folder) for a in args]
    assert main(["bench", *args, "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert expected in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_no_judge_is_called_best_when_none_ranks_anything_or_two_tie():
    def entry(name: str, mean: float, defined: int) -> dict:
        return {"name": name, "status": "ok", "summary": {"mean_spearman": mean, "spearman_defined": defined}}

    constant = [entry("flat", 0.0, 0), entry("flatter", 0.0, 0)]  # undefined rho counts as 0 in the mean
    assert best_judge(constant) is None
    assert best_judge([*constant, entry("weak", -0.1, 1)])["name"] == "weak"
    tied = [entry("x", 0.5, 2), entry("y", 0.5, 2), entry("z", 0.1, 2)]
    assert best_judge(tied) is None  # bench.json names no best judge either
    bench = {"best_judge": None, "judges": tied, "settings": {"metrics": ["a", "b"]}, "dataset": {"samples": 30}}
    assert headline(bench) == "No best judge: x and y tie, mean Spearman ρ = 0.500 across 2 metrics"
    ranked = {**bench, "best_judge": tied[0], "judges": [tied[0], tied[2]]}
    assert headline(ranked) == "Best judge: x, mean Spearman ρ = 0.500 across 2 metrics (next: z, 0.100)"
    # a lead that resampling the samples may reverse is not called best (a probe: "Best judge" from -0.23 to +0.67)
    ahead = {"next": "z", "resamples": 1000, "second_better": 0.18, "tied": 0.0, "gap_interval": [-0.23, 0.67]}
    undecided = {**ranked, "best_judge": {**tied[0], "ahead_of_next": ahead}}
    assert headline(undecided) == (
        "Ahead here, not decisively: x, mean Spearman ρ = 0.500 across 2 metrics (next: z, 0.100, which does better "
        "in 18% of 1,000 resamplings of the samples; the lead's 95% interval -0.23 to +0.67, which holds 0: label more "
        "samples to tell the two apart)")
    # on three samples a rho takes one of a handful of values: the ranking is said to be chance
    assert headline({**ranked, "dataset": {"samples": 3}}) == (
        "Best judge: x, mean Spearman ρ = 0.500 across 2 metrics (next: z, 0.100). On 3 labeled samples this "
        "ranking is mostly chance: label 10 or more (localeval docs labeled-data)")
    # the other judge ran but ranks nothing (likely on 3 samples): still a ranking by chance
    one_ranked = {**ranked, "judges": [tied[0], constant[0]], "dataset": {"samples": 3}}
    assert headline(one_ranked).endswith("On 3 labeled samples this ranking is mostly chance: label 10 or more "
                                         "(localeval docs labeled-data)")
    alone = {**ranked, "judges": [tied[0]], "dataset": {"samples": 2}}  # one judge: its own rho is chance
    assert headline(alone).endswith("On 2 labeled samples its ρ is mostly chance: label 10 or more "
                                    "(localeval docs labeled-data)")
    assert headline({**bench, "judges": constant}) == ("No judge has a defined mean Spearman (each score was constant, "
                                                       "or paired on fewer than two samples).")


def test_no_value_at_chance_or_shared_by_every_judge_is_marked_best_and_relevancy_has_no_error_column():
    """A probe's bench bolded a balanced accuracy of 0.500 (every sentence called attributed), 0.500 for both
    judges, and the least error on response_relevancy for the judge whose ρ there was -0.41."""
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    for judge, accuracy in zip(bench["judges"], (0.5, 0.45, 0.3)):
        judge["metrics"]["context_recall"]["sentences"]["balanced_accuracy"] = accuracy
        judge["metrics"]["response_relevancy"]["noncommittal"]["balanced_accuracy"] = 0.75
    per_sentence = next(t for t in tables(bench) if t.title.startswith("Per sentence"))
    marked = {header: [row[i][1] for row in per_sentence.rows] for i, header in enumerate(per_sentence.headers)}
    assert not any(marked["context_recall"]) and not any(marked["noncommittal"])
    assert any(marked["context_relevance"])  # the others are still ranked
    errors = next(t for t in tables(bench) if t.title.startswith("Per sample: mean absolute error"))
    assert "response_relevancy" not in errors.headers and "answer_supported_precision" in errors.headers
    assert errors.note == "response_relevancy has none: its score is a similarity, its label a 0 or 1"


def test_a_judges_mean_and_peoples_are_taken_over_the_same_samples():
    """A judge's null left its sample in people's mean and out of its own: a judge scoring exactly as people do
    showed a leniency (a review)."""
    from localeval.bench.compare import score_agreement

    labeled = read_labeled(SMALL, ["context_recall"])
    human = [item.human_score("context_recall") for item in labeled]
    scores = score_agreement(labeled, [None, *human[1:]], "context_recall")
    assert scores["judge_mean"] == scores["human_mean"] == pytest.approx(sum(human[1:]) / 3)


def test_how_lenient_each_judge_is_has_a_table_of_its_own():
    """A probe's judge called every sentence attributed (a mean of 1.0 against people's 0.54): bench.json alone
    said so, and it is what most tells a judge's scores from people's."""
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    leniency = next(t for t in tables(bench) if t.title.startswith("Per sample: how lenient the judge is"))
    assert "response_relevancy" not in leniency.headers  # a similarity's mean is no score a person gives
    recall = bench["judges"][1]["metrics"]["answer_supported_precision"]["scores"]
    row = next(row for row in leniency.rows if row[0][0] == bench["judges"][1]["name"])
    judge, human = recall["judge_mean"], recall["human_mean"]
    assert row[leniency.headers.index("answer_supported_precision")] == (
        f"{judge - human:+.2f} ({judge:.2f} vs {human:.2f})", False)  # not ranked
    assert "run --labels corrects a run's means" in leniency.note


def test_the_per_sentence_note_explains_only_the_columns_the_bench_has():
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    bench["settings"]["metrics"] = ["context_recall"]
    note = next(t.note for t in tables(bench) if t.title.startswith("Per sentence: balanced accuracy"))
    assert note == ("pooled support: the attributed/supported verdicts of context_recall together. "
                    "Accuracy and F1 are in bench.json.")  # no other metric, and no AUC column to explain


def test_a_quiet_bench_still_says_why_a_judge_failed(tmp_path, capsys, monkeypatch):
    from localeval.bench import command

    monkeypatch.setattr(command, "run_in_child",
                        lambda job: failed_child(job) if job.name == "smollm2-135m-instruct" else agreeing_child(job))
    assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(tmp_path / "out"),
                 "--judges", "smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct"]) == 1
    captured = capsys.readouterr()
    assert "| smollm2-135m-instruct | failed |" in captured.out  # the table has no room for the reason
    assert captured.err.strip() == "failed: smollm2-135m-instruct: UserError: not installed"


@pytest.mark.installed_check
def test_registered_judges_not_installed_are_refused_before_any_judge_runs(tmp_path, capsys, monkeypatch):
    """A judge not installed was found at its turn, after the judges before it had run for minutes (a probe)."""
    from localeval.bench import command

    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "store"))
    monkeypatch.setattr(models, "_package_dir", lambda module: None)  # no model's package here
    ran = []
    monkeypatch.setattr(command, "run_in_child", lambda job: ran.append(job.name) or agreeing_child(job))
    judges = "smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct"
    argv = ["bench", "--data", str(SMALL), "--metrics", "context_recall", "--out", str(tmp_path / "out")]
    assert main([*argv, "--judges", judges]) == 2
    error = capsys.readouterr().err
    assert error.startswith("localeval: error: 2 models are not ready: smollm2-135m-instruct is not installed: "
                            "python -m localeval models install smollm2-135m-instruct")
    assert "; qwen2.5-coder-0.5b-instruct is not installed: python -m localeval models install" in error
    assert ran == [] and not (tmp_path / "out").exists()
    # the default embedder too, where a metric needs it (a review: it was checked only when named)
    assert main(["bench", "--data", str(SMALL), "--metrics", "response_relevancy", "--out", str(tmp_path / "out"),
                 "--judges", "smollm2-135m-instruct"]) == 2
    assert "; all-minilm-l6-v2 is not installed: python -m localeval models install all-minilm-l6-v2" in \
        capsys.readouterr().err
    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: tmp_path)  # both ready: both run
    assert main([*argv, "--judges", judges, "--quiet"]) == 0 and ran == judges.split(",")


def test_a_limit_beyond_the_data_is_said_by_bench_and_run(tmp_path, capsys, monkeypatch):
    """--limit 100 on a file of 4 went unsaid, as if 100 had been scored (a probe)."""
    from localeval import runner
    from localeval.bench import command
    from localeval.cli import build_parser

    monkeypatch.setattr(command, "run_in_child", agreeing_child)
    assert main(["bench", "--data", str(SMALL), "--limit", "100", "--quiet", "--out", str(tmp_path / "out")]) == 0
    assert "--limit 100 is more than the data holds (4): all of it is used" in capsys.readouterr().err
    with pytest.warns(LocalevalWarning, match=r"^--limit 100 is more than the data holds \(4\): all of it is used$"):
        plan = runner._plan(build_parser().parse_args(["run", str(SMALL), "--limit", "100", "--out", str(tmp_path)]))
    assert "warning: --limit 100 is more than the data holds (4): all of it is used" in plan.option_warnings
    plan = runner._plan(build_parser().parse_args(["run", str(SMALL), "--limit", "4", "--out", str(tmp_path)]))
    assert not any("--limit" in said for said in plan.option_warnings)  # all 4 asked for: nothing to say


def test_a_resumed_bench_needs_installed_only_the_judges_it_runs(tmp_path, capsys, monkeypatch):
    """A judge kept by --resume is not run again: its model uninstalled since refused the bench (a review)."""
    from localeval.bench import command

    monkeypatch.setattr(command, "run_in_child", agreeing_child)
    argv = ["bench", "--data", str(SMALL), "--metrics", "context_recall", "--out", str(tmp_path / "out"), "--quiet"]
    monkeypatch.setattr(models, "check_preparable", lambda spec: None)
    assert main([*argv, "--judges", "smollm2-135m-instruct"]) == 0

    def smollm2_gone(spec):
        if spec.name == "smollm2-135m-instruct":
            raise UserError("smollm2-135m-instruct is not installed")

    monkeypatch.setattr(models, "check_preparable", smollm2_gone)
    both = ["--judges", "smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct"]
    assert main([*argv, *both, "--resume"]) == 0  # smollm2 kept, qwen run
    capsys.readouterr()
    assert main([*argv, *both]) == 2  # afresh, smollm2 would run
    assert capsys.readouterr().err.startswith("localeval: error: smollm2-135m-instruct is not installed")


def test_speeds_measured_beside_other_work_are_said_not_comparable(tmp_path, capsys, monkeypatch):
    """One judge's samples/s fell 20-fold with a test suite on the same 2 cores, and the report named the
    fastest judge all the same (a probe). Read from the CPU other work took while the judge ran: a judge
    2.8x slower beside other work went unwarned at a load average of 1.27 (a probe); where that is not
    measured, from the load average."""
    from localeval.bench import command

    monkeypatch.setattr(command, "run_in_child", agreeing_child)
    monkeypatch.setattr(command, "allowed_cores", lambda: 2)
    out = tmp_path / "out"

    def warning(shared: Sharing | None, load: float | None) -> str | None:
        monkeypatch.setattr(command, "sharing", lambda before, after: shared)
        monkeypatch.setattr(command, "load_average", lambda: load)
        assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(out)]) == 0
        said = [line.removeprefix("localeval: ") for line in capsys.readouterr().err.splitlines() if "other work" in line]
        bench = json.loads((out / "bench.json").read_text("utf-8"))
        measures = bench["judges"][0]["measures"]
        assert (measures["other_work_cores"], measures["idle_cores"]) == ((None, None) if shared is None else
                                                                          (shared.others, shared.idle))
        assert [line for line in bench["warnings"] if "other work" in line] == said
        assert all(line in (out / "bench.md").read_text("utf-8") for line in said)
        return said[0] if said else None

    assert warning(Sharing(1.0, 0.1), 1.27) == (
        "warning: other work ran beside a judge, so the speeds measured then are not comparable (cores other work "
        "kept busy on average while a judge ran, smollm2-135m-instruct: 1.0, of 2 cores, more than stood idle); "
        "bench on an otherwise idle machine to compare speeds")
    assert warning(Sharing(0.1, 0.0), 3.4) is None  # what was measured outweighs the load average, a minute's
    assert warning(Sharing(1.0, 30.0), 3.4) is None  # fitted in cores the judge left idle (a machine of many)
    assert warning(None, 3.4) == (
        "warning: other work ran beside a judge, so the speeds measured then are not comparable (load average over the "
        "minute before a judge ended, smollm2-135m-instruct: 3.4, on 2 cores, which a judge alone keeps about busy); "
        "bench on an otherwise idle machine to compare speeds")
    assert warning(None, 2.2) is None  # the judge's own threads, and a little
    monkeypatch.undo()  # the real readings, of a system that has neither (Windows): no warning, no crash
    monkeypatch.setattr(command, "run_in_child", agreeing_child)
    monkeypatch.delattr(os, "getloadavg")
    monkeypatch.setattr("localeval.bench.cpu_share.STAT", tmp_path / "no-proc-stat")
    assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(out)]) == 0
    measures = json.loads((out / "bench.json").read_text("utf-8"))["judges"][0]["measures"]
    assert measures["load_average"] is None and measures["other_work_cores"] is None


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="measured from Linux's /proc/stat")
def test_the_cpu_other_work_takes_is_counted_and_a_judges_own_is_not(tmp_path, monkeypatch):
    """cpu_share counts what other processes take of the cores, not this process's time or that of the judges'
    processes it waited for; and measures nothing where /proc/stat is not the machine's."""
    from localeval.bench import cpu_share
    from localeval.bench.cpu_share import read_clock, sharing

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # started
        before = read_clock()
        time.sleep(1.5)
        after = read_clock()
    finally:
        busy.kill()
        busy.wait()
    assert sharing(before, after).others >= 0.6  # a whole core, less what a busy machine's scheduler shares out
    before = read_clock()
    subprocess.run([sys.executable, "-c", "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass"],
                   check=True)  # a judge's process: waited for, so its time is this bench's own
    waited = sharing(before, read_clock())
    assert waited.others < 0.6 or waited.idle < 0.2  # not counted, unless other work really took a core meanwhile
    assert sharing(None, after) is None
    stat = tmp_path / "stat"  # lxcfs numbers a container's cores from 0 where the affinity gives the host's
    stat.write_text("cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    monkeypatch.setattr(cpu_share, "STAT", stat)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {4, 5})
    assert read_clock() is None
    quota = tmp_path / "cpu.max"  # a container held to 2 cores: /proc/stat is the host's
    quota.write_text("200000 100000\n")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert read_clock() is not None
    monkeypatch.setattr(cpu_share, "QUOTAS", (quota,))
    assert read_clock() is None


def test_a_bench_where_no_judge_finished_writes_no_report_and_keeps_the_earlier_one(tmp_path, capsys, monkeypatch):
    """Every judge failed, and a report of no judge replaced the bench already in --out, its results and its
    calibration with it, though bench had said it would replace them "once a judge finishes" (a probe)."""
    from localeval.bench import command

    out = tmp_path / "out"
    monkeypatch.setattr(command, "run_in_child", agreeing_child)
    assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(out)]) == 0
    before = {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    monkeypatch.setattr(command, "run_in_child", failed_child)
    capsys.readouterr()
    assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "failed: smollm2-135m-instruct: UserError: not installed",
        f"no judge finished, no report written; the bench already in {out} is kept"]
    assert {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before


def test_the_terminal_table_says_what_its_columns_are(tmp_path, capsys, monkeypatch):
    from localeval.bench import command

    monkeypatch.setattr(command, "run_in_child", agreeing_child)
    main(["bench", "--data", str(SMALL), "--quiet", "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    title, table = printed.split("Agreement with people (Spearman ρ of judge vs human score per sample) and speed\n")
    assert table.startswith("| judge | mean ρ |")
    assert ("\nρ: 1, the judge orders the samples as people do; 0, its order is unrelated to theirs; -1, the reverse. "
            "A mean ρ below 0.5 says little of a RAG system (localeval docs labeled-data, \"Reading the numbers\"). "
            "mean ρ: an undefined ρ (the judge, or people, gave every sample the same score") in table  # (a probe)


def test_people_who_gave_every_sample_one_score_are_told_so():
    """Every label alike: the headline said "no defined mean Spearman (each score was constant ...)" and then
    "its ρ is mostly chance", of a ρ that did not exist, not that the labels were the trouble (a probe)."""
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    for judge in bench["judges"]:
        judge["summary"]["spearman_defined"] = 0
        for metric in judge["metrics"].values():
            metric["scores"].update(spearman=None, human_untied=0)
    bench["dataset"]["samples"] = 4
    assert headline(bench) == (
        "No judge has a defined mean Spearman: people gave every sample the same score in every metric, so there is "
        "no order of theirs to compare a judge's with; label answers of better and worse quality (localeval docs "
        "labeled-data).")


def test_the_html_details_name_measures_as_people_do_and_a_missing_score_as_a_dash(labeled, tmp_path):
    oracle = LabelJudge(labeled)
    (broken,) = oracle.requests[("dev-021", "context_recall")]
    patchy = scripted("patchy", lambda request: "not json" if request == broken else oracle(request))
    bench_with(labeled, [patchy], isolate=False, out=tmp_path)
    details = (tmp_path / "bench.html").read_text(encoding="utf-8").split("<details>")[1]
    assert "<td>dev-021</td><td>0.200 / 0.200</td><td>— / 1.000</td>" in details  # its recall was unreadable
    assert "null" not in details
    assert ("—: in a score, none (no human label for the metric, or no valid answer from the judge); in how it ran, "
            "not measured") in details
    assert "<td>load (s)</td>" in details and "<td>samples/s</td>" in details and "<td>peak memory (MB)</td>" in details
    assert "load_seconds" not in details


def test_user_error_from_the_shell_has_no_traceback(tmp_path):
    result = run_cli("bench", "--data", str(tmp_path / "none.jsonl"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"localeval: error: {tmp_path / 'none.jsonl'}: file not found"


# --- the real path: the embedded judge, through the CLI, in a child process --------------------


def test_real_judge_bench_end_to_end(tmp_path):
    """Three records (one Chinese) with the embedded SmolLM2 judge; a weak judge, so only the
    shape of the report is asserted, and that the grammar kept every answer valid JSON."""
    out = tmp_path / "bench"
    out.mkdir()
    (out / "calibration.json").write_text('{"localeval_calibration": 1, "judges": {}}')  # an earlier bench's
    (out / "results").mkdir()
    (out / "results" / "2-another-judge.jsonl").write_text('{"id": "a", "evidence": {}}\n')  # its second judge
    (out / "results" / "notes.jsonl").write_text('{"note": "mine"}\n')  # a person's own, kept
    result = run_cli("bench", "--data", str(SMALL), "--limit", "3", "--no-reasons", "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    assert not (out / "calibration.json").exists()  # it would pass for this bench's
    assert sorted(path.name for path in (out / "results").iterdir()) == ["1-smollm2-135m-instruct.jsonl",
                                                                          "notes.jsonl"]
    assert "1 judge on 3 samples in " in result.stdout
    assert "judge 1/1 smollm2-135m-instruct: starting" in result.stderr
    assert "judge 1/1 smollm2-135m-instruct: done in" in result.stderr
    assert "One judge: smollm2-135m-instruct" in result.stdout
    for name in ("bench.json", "bench.md", "bench.html"):
        assert (out / name).is_file()
    bench = json.loads((out / "bench.json").read_text(encoding="utf-8"))
    assert bench["dataset"]["samples"] == 3 and bench["dataset"]["languages"] == {"en": 2, "zh": 1}
    (judge,) = bench["judges"]
    assert judge["status"] == "ok", judge.get("error")
    assert judge["measures"]["model"].startswith("smollm2-135m-instruct")
    assert judge["summary"]["valid_json_rate"] == 1.0
    measures = judge["measures"]
    assert measures["load_seconds"] > 0 and measures["output_tokens_per_second"] > 0
    assert measures["prompt_tokens_per_second"] > 0 and measures["peak_memory_mb"] > 0
    for metric in METRICS:
        scores = judge["metrics"][metric]["scores"]
        assert scores["samples"] == 3 and scores["mae"] is not None
        assert scores["spearman"] is None or -1.0 <= scores["spearman"] <= 1.0
        if metric != "response_relevancy":
            sentences = judge["metrics"][metric]["sentences"]
            assert sentences["balanced_accuracy"] is not None and sentences["accuracy"] is not None
    assert judge["metrics"]["response_relevancy"]["auc"] is not None
    assert judge["metrics"]["response_relevancy"]["noncommittal"]["agreement"] is not None


def test_run_labels_of_samples_left_out_by_limit_wait_and_strangers_are_refused():
    """`run --labels L --limit N`: the labels of the data's samples past N are not used (a quick
    check with --limit must not be refused), but a labeled sample that is nowhere in the data is."""
    from localeval.bench.labels import human_scores
    from localeval.data import load_samples

    samples = load_samples(SMALL)
    scored, rest = samples[:1], frozenset(s.id for s in samples[1:])
    with pytest.warns(LocalevalWarning, match=f"{len(rest)} of its {len(samples)} labeled samples are beyond --limit "
                      "and not used; the corrections rest on the 1 within it"):
        assert set(human_scores(SMALL, scored, ["context_recall"], left_out=rest)) == {samples[0].id}
    with pytest.raises(UserError, match="not among the samples scored"):
        human_scores(SMALL, scored, ["context_recall"])
    with pytest.raises(UserError, match="none of its labeled samples is among the 1 scored"):  # never silently unused
        human_scores(SMALL, scored, ["context_recall"], left_out=frozenset(s.id for s in samples))


def test_a_judge_with_no_defined_spearman_has_no_mean_not_zero(tmp_path, tiny_judge):
    """Two samples' context_recall: the table showed mean rho 0.000 where the headline said none was defined."""
    from localeval.bench.compare import mean_spearman
    from localeval.cli import main

    assert mean_spearman([None, None]) is None and mean_spearman([]) is None
    assert mean_spearman([None, 0.5]) == 0.25  # an undefined one among defined ones counts as 0
    out = tmp_path / "bench"
    assert main(["bench", str(SMALL), "--judges", str(tiny_judge), "--limit", "2", "--metrics", "context_recall",
                 "--out", str(out), "--quiet"]) == 0
    (judge,) = json.loads((out / "bench.json").read_text())["judges"]
    assert judge["summary"]["mean_spearman"] is None and judge["summary"]["spearman_defined"] == 0
    row = next(line for line in (out / "bench.md").read_text().splitlines() if line.startswith(f"| {tiny_judge} |"))
    assert row.split("|")[2].strip() == "— (0 of 1)"  # was "0.000 (0 of 1)"


def test_the_soft_and_hard_means_each_say_how_many_rhos_they_rest_on():
    """The soft/hard table's hard mean counted an undefined ρ as 0 without the "(1 of 2)" the main table
    gives (a probe): 0.348 read as a mean of two."""
    from localeval.bench.report import _scorings_mean_note

    def entry(soft: list, hard: list, hard_mean: float | None) -> dict:
        metrics = {f"m{i}": {"scorings": {"soft": {"spearman": a}, "hard": {"spearman": b}}}
                   for i, (a, b) in enumerate(zip(soft, hard))}
        return {"metrics": metrics, "summary": {"mean_spearman_hard": hard_mean}}

    assert _scorings_mean_note(entry([0.5, 0.2], [0.696, None], 0.348)) == " (0.348, 1 of 2)"
    assert _scorings_mean_note(entry([0.5, None], [0.4, 0.2], 0.3)) == " (1 of 2) (0.300)"
    assert _scorings_mean_note(entry([0.5, 0.2], [None, None], None)) == " (—, 0 of 2)"


def test_an_interrupted_bench_reports_the_judges_that_finished(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the second judge threw away the first one's finished run ("no report written"),
    and bench has no --resume: minutes of a slow judge lost (a probe's finding)."""
    from localeval.bench import command

    def first_then_interrupted(job):
        if job.name == "qwen2.5-coder-0.5b-instruct":
            raise KeyboardInterrupt
        return agreeing_child(job)

    monkeypatch.setattr(command, "run_in_child", first_then_interrupted)
    out = tmp_path / "out"
    assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(out),
                 "--judges", "smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct"]) == 130
    bench = json.loads((out / "bench.json").read_text(encoding="utf-8"))
    assert [judge["name"] for judge in bench["judges"]] == ["smollm2-135m-instruct"]
    assert bench["not_run"] == ["qwen2.5-coder-0.5b-instruct"]
    assert "Interrupted before qwen2.5-coder-0.5b-instruct finished: not compared" in (out / "bench.md").read_text("utf-8")
    captured = capsys.readouterr()
    assert "1 judge on 4 samples in" in captured.out
    assert captured.err.strip().endswith("interrupted: the report holds the 1 judge that finished; not run: "
                                         "qwen2.5-coder-0.5b-instruct (the same command with --resume runs only those)")

    monkeypatch.setattr(command, "run_in_child", lambda job: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(tmp_path / "none")]) == 130
    assert "interrupted: no judge finished, no report written" in capsys.readouterr().err
    assert not (tmp_path / "none" / "bench.json").exists()
    # a first judge that failed has not finished: "the report holds the 1 judge that finished" was that one
    monkeypatch.setattr(command, "run_in_child", lambda job: failed_child(job) if job.name == "smollm2-135m-instruct"
                        else (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(["bench", "--data", str(SMALL), "--quiet", "--out", str(out),
                 "--judges", "smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct"]) == 130
    assert capsys.readouterr().err.strip().endswith(f"interrupted: no judge finished, no report written; the bench "
                                                    f"already in {out} is kept")
    assert [judge["name"] for judge in json.loads((out / "bench.json").read_text("utf-8"))["judges"]] == [
        "smollm2-135m-instruct"]  # the earlier one's


TWO_JUDGES = ["--judges", "smollm2-135m-instruct,qwen2.5-coder-0.5b-instruct"]


def judges_called(monkeypatch, answer=agreeing_child) -> list[str]:
    """The judges bench runs from now on, in order (each answered by `answer`)."""
    from localeval.bench import command

    called = []
    monkeypatch.setattr(command, "run_in_child", lambda job: called.append(job.name) or answer(job))
    return called


def test_a_resumed_bench_keeps_the_judges_that_finished_and_runs_only_the_rest(tmp_path, capsys, monkeypatch):
    """bench had no --resume: Ctrl-C in a quarter of an hour's last judge cost every judge (a leftover
    of the probes)."""
    from localeval.bench import command

    out = tmp_path / "out"
    monkeypatch.setattr(command, "run_in_child", lambda job: agreeing_child(job) if job.name == "smollm2-135m-instruct"
                        else (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES]) == 130
    assert capsys.readouterr().err.strip().endswith("(the same command with --resume runs only those)")
    first = json.loads((out / "bench.json").read_text("utf-8"))

    called = judges_called(monkeypatch)
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--resume"]) == 0
    assert called == ["qwen2.5-coder-0.5b-instruct"]
    assert (f"--resume: keeping 1 judge from the bench started {first['started']} (smollm2-135m-instruct); "
            "running qwen2.5-coder-0.5b-instruct") in capsys.readouterr().err
    bench = json.loads((out / "bench.json").read_text("utf-8"))
    kept, ran = bench["judges"]
    assert (kept["name"], ran["name"]) == ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct")
    assert kept["measures"] == first["judges"][0]["measures"] and kept["per_sample"] == first["judges"][0]["per_sample"]
    assert (kept["measured_in"], ran["measured_in"]) == (first["started"], bench["started"])
    assert bench["not_run"] == [] and bench["resumed"] == {"kept": {"smollm2-135m-instruct": first["started"]}}
    assert sorted(path.name for path in (out / "results").iterdir()) == [
        "1-smollm2-135m-instruct.jsonl", "2-qwen2.5-coder-0.5b-instruct.jsonl"]
    assert (f"Resumed (--resume), keeping smollm2-135m-instruct as the bench started {first['started']} measured it; "
            "the time taken is this run's alone" in (out / "bench.md").read_text("utf-8"))

    # all finished: nothing runs again, and each judge keeps the start of the bench that measured it
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--resume"]) == 0
    assert called == ["qwen2.5-coder-0.5b-instruct"]
    captured = capsys.readouterr()
    assert "every judge named had finished: writing the reports again" in captured.err
    assert "2 judges (2 kept from an earlier bench, --resume) on 4 samples in" in captured.out
    assert json.loads((out / "bench.json").read_text("utf-8"))["resumed"]["kept"] == {
        "smollm2-135m-instruct": first["started"], "qwen2.5-coder-0.5b-instruct": bench["started"]}


def test_a_resume_runs_again_a_judge_that_failed_or_whose_results_do_not_fit(tmp_path, capsys, monkeypatch):
    from localeval.bench import command

    out = tmp_path / "out"
    monkeypatch.setattr(command, "run_in_child", lambda job: agreeing_child(job) if job.name == "smollm2-135m-instruct"
                        else failed_child(job))
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--quiet"]) == 1
    called = judges_called(monkeypatch)
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--resume"]) == 0
    assert called == ["qwen2.5-coder-0.5b-instruct"]  # the failed one, not the one that finished

    # another --limit is another bench, refused as another option is (it ran every judge again, said only as
    # "results of other samples": a probe)
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--resume", "--limit", "2"]) == 2
    assert "holds another bench (samples: 4 there, 2 now)" in capsys.readouterr().err
    # results gone: run again, said
    (out / "results" / "2-qwen2.5-coder-0.5b-instruct.jsonl").unlink()
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--resume"]) == 0
    assert called[1:] == ["qwen2.5-coder-0.5b-instruct"]
    assert "--resume: qwen2.5-coder-0.5b-instruct runs again: its results in" in capsys.readouterr().err

    # asked otherwise then (its measured settings changed with an upgrade, say): runs again, said
    bench = json.loads((out / "bench.json").read_text("utf-8"))
    bench["judges"][0]["settings"]["reasons"] = {"context_recall": "never asked so"}
    (out / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--resume"]) == 0
    assert called[2:] == ["smollm2-135m-instruct"]
    assert ("--resume: smollm2-135m-instruct runs again: it was asked otherwise then (its measured settings changed "
            "since)") in capsys.readouterr().err

    # a finished judge this bench leaves out would be dropped from the report, its results deleted: refused
    before = (out / "bench.json").read_bytes()
    assert main(["bench", str(SMALL), "--out", str(out), "--resume", "--judges", "qwen2.5-coder-0.5b-instruct"]) == 2
    assert (f"--resume: the bench in {out} finished smollm2-135m-instruct, which --judges leaves out; name it in "
            "--judges too (a folder judge by the path it ran from), or bench into another --out") in capsys.readouterr().err
    assert (out / "bench.json").read_bytes() == before and len(called) == 3

    # --calibrate is part of the bench: a resume without it removed calibration.json, unsaid (a probe)
    calibrated = json.loads(before)
    calibrated["settings"]["calibrate"] = True  # as a bench of 10 samples or more with --calibrate records it
    (out / "bench.json").write_text(json.dumps(calibrated), encoding="utf-8")
    assert main(["bench", str(SMALL), "--out", str(out), *TWO_JUDGES, "--resume"]) == 2
    assert "holds another bench (settings.calibrate: true there, false now)" in capsys.readouterr().err


def test_a_resume_follows_the_judges_as_named_and_a_folder_judge_that_changed(tmp_path, capsys, monkeypatch, tiny_judge):
    """Results files are numbered by --judges, so a resume in another order renumbers them and leaves no stale
    one; a folder judge whose files changed runs again; data given as a quoted ~ path is hashed where it is
    (it crashed once every judge had run); a bench.json edited into another shape is refused, not a traceback."""
    import shutil

    folder = tmp_path / "my-judge"
    shutil.copytree(tiny_judge, folder)
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copy(SMALL, tmp_path / "labeled.jsonl")
    out, called = tmp_path / "out", judges_called(monkeypatch)
    given = ["bench", "~/labeled.jsonl", "--out", str(out), "--quiet", "--resume"]
    assert main([*given, "--judges", f"smollm2-135m-instruct,{folder}"]) == 0
    assert sorted(path.name for path in (out / "results").iterdir()) == ["1-smollm2-135m-instruct.jsonl", "2-my-judge.jsonl"]
    assert main([*given, "--judges", f"{folder},smollm2-135m-instruct"]) == 0 and len(called) == 2  # kept, both
    assert sorted(path.name for path in (out / "results").iterdir()) == ["1-my-judge.jsonl", "2-smollm2-135m-instruct.jsonl"]
    bench = json.loads((out / "bench.json").read_text("utf-8"))
    assert [(judge["name"], judge["results_file"]) for judge in bench["judges"]] == [
        (str(folder), "1-my-judge.jsonl"), ("smollm2-135m-instruct", "2-smollm2-135m-instruct.jsonl")]
    os.utime(folder / "config.json", (1, 1))  # retrained in place, say
    assert main([*given, "--judges", f"{folder},smollm2-135m-instruct"]) == 0
    assert called[2:] == [str(folder)]
    bench = json.loads((out / "bench.json").read_text("utf-8"))
    for damage in (lambda b: b.update(dataset=[]), lambda b: b["judges"][0].update(measures=None)):
        edited = json.loads(json.dumps(bench))
        damage(edited)
        (out / "bench.json").write_text(json.dumps(edited), encoding="utf-8")
        assert main([*given, "--judges", f"{folder},smollm2-135m-instruct"]) == 2
        assert "bench.json cannot be read, so no judge of it can be kept" in capsys.readouterr().err


def test_a_resume_of_another_bench_is_refused_and_keeps_it(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    called = judges_called(monkeypatch)
    assert main(["bench", str(SMALL), "--out", str(out), "--resume"]) == 0  # nothing to resume: every judge runs
    assert f"--resume: nothing to resume in {out} (no bench.json); running every judge" in capsys.readouterr().err
    before = (out / "bench.json").read_bytes()
    edited = tmp_path / "edited.jsonl"
    edited.write_text(SMALL.read_text("utf-8").replace("Paris", "Lyon", 1), encoding="utf-8")
    for args, expected in [(["--batch-size", "3"], "settings.batch_size: 32 there, 3 now"),
                           (["--limit", "3"], "samples: 4 there, 3 now"),
                           (["--metrics", "context_recall"], "metrics: [answer_supported_precision, "),
                           (["--data", str(edited)], "data_sha256: ")]:
        data = [] if "--data" in args else [str(SMALL)]
        assert main(["bench", *data, "--out", str(out), "--resume", *args]) == 2
        error = capsys.readouterr().err
        assert f"--resume: {out} holds another bench ({expected}" in error and len(error.strip().splitlines()) == 1
    assert called == ["smollm2-135m-instruct"] and (out / "bench.json").read_bytes() == before
    bench = json.loads(before)
    del bench["scoring_rules"]  # as a bench before the scoring rules were recorded: its judges measured by others
    (out / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    assert main(["bench", str(SMALL), "--out", str(out), "--resume"]) == 2
    assert ("holds a bench measured by a localeval before 2026-11-29, which recorded no scoring rules: bench without "
            "--resume (it replaces that bench) or into another --out; `localeval docs changes` says what changed"
            ) in capsys.readouterr().err
    bench["scoring_rules"] = "2026-01-01"  # or other rules
    (out / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    assert main(["bench", str(SMALL), "--out", str(out), "--resume"]) == 2
    assert (f"measured by a localeval of other scoring rules (2026-01-01; this one's are {SCORING_RULES})"
            in capsys.readouterr().err)
    del bench["dataset"]["sha256"]  # as a bench before the digest was recorded
    (out / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    assert main(["bench", str(SMALL), "--out", str(out), "--resume"]) == 2
    assert (f"--resume: the bench in {out} was written by an earlier localeval, which did not record its data's "
            "digest, so it cannot be checked to be this bench") in capsys.readouterr().err
    (out / "bench.json").write_text('{"judges": [{}]}', encoding="utf-8")  # localeval's, cut short
    assert main(["bench", str(SMALL), "--out", str(out), "--resume"]) == 2
    assert "bench.json cannot be read, so no judge of it can be kept" in capsys.readouterr().err


def test_a_headline_of_several_sentences_has_one_period_between_them():
    """"...fewer than two samples).. On 1 labeled sample" (a probe's finding)."""
    constant = {"name": "c", "status": "ok", "summary": {"mean_spearman": None, "spearman_defined": 0}}
    bench = {"best_judge": None, "judges": [constant], "settings": {"metrics": ["a"]}, "dataset": {"samples": 1}}
    assert headline(bench) == ("No judge has a defined mean Spearman (each score was constant, or paired on fewer "
                               "than two samples). On 1 labeled sample no ρ can be measured (it pairs two samples "
                               "or more): label 10 or more (localeval docs labeled-data)")  # not "mostly chance"


def test_labels_without_ids_that_match_no_sample_are_said_to_be_matched_by_line_number(tmp_path):
    """A labels file without ids got "not among the samples scored (matched by id): 1, 2, 3", which did
    not say where those ids came from (a probe's finding)."""
    import dataclasses

    from localeval.bench.labels import human_scores
    from localeval.data import load_samples

    path = write_records(tmp_path, lambda records: [record.pop("id") for record in records])
    scored = [dataclasses.replace(sample, id=f"q{n}") for n, sample in enumerate(load_samples(SMALL))]
    with pytest.raises(UserError, match=re.escape(
            "(matched by id): 1, 2, 3, 4; a file without ids is matched by line number, so give both files the "
            "same ids")):
        human_scores(path, scored, ["context_recall"])


def test_a_labeled_id_near_one_of_the_datas_is_named_with_it(tmp_path):
    """An id in another Unicode form (é as e and an accent, as a Mac may save it) looked the same as the
    data's in "not among the samples scored: café", and nothing said why it did not match; nor for an id
    padded with another zero."""
    import dataclasses
    import unicodedata

    from localeval.bench.labels import human_scores
    from localeval.data import load_samples

    composed = [dataclasses.replace(sample, id=f"café-{n}") for n, sample in enumerate(load_samples(SMALL))]
    path = write_records(tmp_path, lambda records: [record.update(id=unicodedata.normalize("NFD", f"café-{n}"))
                                                   for n, record in enumerate(records)])
    with pytest.raises(UserError, match="-3; 'cafe\u0301-0' is the data's 'café-0' written another way: the "
                                        "same letters in other Unicode code points"):
        human_scores(path, composed, ["context_recall"])
    padded = [dataclasses.replace(sample, id=f"q-0{n}") for n, sample in enumerate(load_samples(SMALL))]
    path = write_records(tmp_path, lambda records: [record.update(id=f"q-{n}") for n, record in enumerate(records)])
    with pytest.raises(UserError, match=r"q-3; 'q-0' is the data's 'q-00' written another way$"):
        human_scores(path, padded, ["context_recall"])


def test_a_file_without_any_labels_is_said_once_and_a_mistyped_label_beside_the_right_one_is_warned_of(tmp_path):
    """A probe's data file given as labels repeated one long sentence per record; its "response_relevent": true,
    beside the "response_relevant" that is read, went unsaid."""
    path = write_records(tmp_path, lambda records: [record.pop("labels") for record in records])
    with pytest.raises(DataError, match=r"none of its 4 samples has 'labels': a labeled file gives each sample "
                                        r"people's labels \(format: .*\); is it the data rather than its labels\?$"):
        read_labeled(path, METRICS)
    path = write_records(tmp_path, lambda records: [record["labels"].update(response_relevent=True, notes="ok")
                                                   for record in records[:2]])
    with pytest.warns(LocalevalWarning, match="labels localeval does not read, each close to one it does: "
                                              "'response_relevent' \\(2 records\\): did you mean 'response_relevant'\\?$"):
        assert len(read_labeled(path, METRICS)) == 4  # read all the same: the key is the labeler's own


def test_a_rankings_certainty_is_the_share_of_resamplings_the_next_judge_does_better_in():
    from localeval.bench.agreement import resampled_gap

    human = [float(i % 7) for i in range(30)]
    right = [(human, human)]
    noisy = [([h if i % 3 else 6 - h for i, h in enumerate(human)], human)]  # every third sample reversed
    assert resampled_gap(right, right) == {"resamples": 1000, "second_better": 0.0, "tied": 1.0,
                                           "gap_interval": [0.0, 0.0]}
    sure = resampled_gap(right, noisy)
    assert (sure["second_better"], sure["tied"]) == (0.0, 0.0) and 0 < sure["gap_interval"][0] < sure["gap_interval"][1] < 1.5
    assert resampled_gap(noisy, right)["second_better"] == 1.0
    # one pair of 20 swapped: never behind, tied whenever the draw misses the pair (a reviewer's case: counted
    # as "first in 42%" when ties were losses)
    ranks = [float(i) for i in range(20)]
    swapped = [(ranks[:9] + [ranks[10], ranks[9]] + ranks[11:], ranks)]
    close = resampled_gap([(ranks, ranks)], swapped)
    assert close["second_better"] == 0.0 and 0.4 < close["tied"] < 0.8 and close["gap_interval"][0] == 0.0
    assert resampled_gap(right, noisy, seed=1) != sure  # drawn again, as sure
    assert resampled_gap([(human, [None] * 30)], [(human, [None] * 30)])["tied"] == 1.0  # no pairs: ρ counts 0


def test_a_balanced_accuracy_over_one_class_of_labels_is_marked_and_explained():
    """People who labeled every sentence true make balanced accuracy the hit rate on true: 0.000 read as
    "always wrong" on a table titled "0.5 = chance" (a probe's finding)."""
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    table = next(t for t in tables(bench) if t.title.startswith("Per sentence: balanced accuracy"))
    assert "(one class)" not in markdown_table(table) and "(one class)" not in table.note
    for judge in bench["judges"]:
        if judge["status"] == "ok":
            sentences = judge["metrics"]["context_recall"]["sentences"]
            sentences["human_true"] = sentences["sentences"]
    table = next(t for t in tables(bench) if t.title.startswith("Per sentence: balanced accuracy"))
    recall = table.headers.index("context_recall")
    assert all(row[recall][0].endswith(" (one class)") for row in table.rows)
    assert "(one class): people gave every sentence (or response) compared the same verdict" in table.note
    assert "· context_recall (one class): " in html_page(bench)  # its bar too, under the chart's chance line (a probe)


def test_a_rho_over_people_s_scores_nearly_all_tied_is_marked_and_explained():
    """People who gave 29 of 30 samples the same score leave a ρ that says where the judge ranks one
    sample: it stood in the table beside the others unmarked (a probe's finding)."""
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    main_table = tables(bench)[0]
    assert "(rests on" not in markdown_table(main_table) and "(rests on" not in main_table.note  # written before
    for judge in bench["judges"]:
        if judge["status"] == "ok":
            judge["metrics"]["context_recall"]["scores"]["human_untied"] = 1
            judge["metrics"]["context_relevance"]["scores"]["human_untied"] = 3  # enough to rest on
    main_table = tables(bench)[0]
    recall, relevance = main_table.headers.index("context_recall"), main_table.headers.index("context_relevance")
    assert all(row[recall][0].endswith(" (rests on 1)") for row in main_table.rows)
    assert not any("rests on" in row[relevance][0] for row in main_table.rows)
    assert "(rests on n): people gave all but n of the samples compared the same score" in main_table.note
    assert untied([0.5, 0.5, 1.0, 0.5]) == 1 and untied([0.0, 1.0]) == 1 and untied([]) == 0
    assert untied([0.3] * 28 + [0.1 + 0.2, 1.0]) == 1  # float noise is a tie, as ρ's ranks count it (a review's case)
    for judge in bench["judges"]:  # three samples, each scored otherwise by people: no tie to rest on (a probe's case)
        if judge["status"] == "ok":
            judge["metrics"]["context_recall"]["scores"].update(samples=3, human_untied=untied([1.0, 0.667, 0.0]))
    assert not any("rests on" in row[recall][0] for row in tables(bench)[0].rows)


def test_a_rho_that_pairs_few_samples_of_many_is_said_to_be_chance():
    """6 of 10 labeled samples had no reference: context_recall's ρ paired 4, and the headline, which counted
    the bench's samples, said nothing of chance (a probe's finding)."""
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    assert "mostly chance" not in headline(bench)
    for judge in bench["judges"]:
        if judge["status"] == "ok":
            judge["metrics"]["context_recall"]["scores"]["samples"] = 4
    assert headline(bench).endswith(
        ". The ρ of context_recall rests on 4 samples (the others had no label or no score for it), so it is mostly "
        "chance: label 10 or more for it (localeval docs labeled-data)")
    bench["judges"][0]["metrics"]["faithfulness"] = {"scores": {"samples": 6, "spearman": 0.2}}
    bench["settings"]["metrics"].append("faithfulness")
    assert headline(bench).endswith(
        ". The ρ of context_recall (4), faithfulness (6) rest on fewer than 10 samples each (the others had no "
        "label or no score for it), so they are mostly chance: label 10 or more for each (localeval docs labeled-data)")


def test_a_labeled_text_that_differs_from_the_data_says_where():
    """A double space in one response was "has another response" with nothing to find it by (a probe)."""
    from localeval.bench.labels import _first_difference

    assert _first_difference("The cat  sat.", "The cat sat.") == " (from character 9: 'The cat  sat.' in the labels, " \
        "'The cat sat.' in the data)"
    assert _first_difference(("a", "b c"), ("a", "b  c")) == " (chunk 2, from character 3: 'b c' in the labels, " \
        "'b  c' in the data)"
    assert _first_difference(("a",), ("a", "b")) == " (1 chunk in the labels, 2 in the data)"
    assert _first_difference(["a"], ("a",)) == ""  # the same chunks, held otherwise: nothing to point at
    assert _first_difference("caf\u00e9", "cafe\u0301") == " (from character 4: 'caf\\xe9' in the labels, " \
        "'cafe\\u0301' in the data)"  # alike on a screen, and not alike
    assert _first_difference(None, "a reference") == ""


def test_labels_made_on_other_texts_name_every_field_and_sample_that_differ(tmp_path):
    """Only the first field of the first sample was named: a data file made again was mended one run at a time."""
    from localeval.bench.labels import human_scores
    from localeval.data import load_samples

    records = [json.loads(line) for line in SMALL.read_text().splitlines()]
    data = tmp_path / "data.jsonl"

    def refused(edited: list[dict]) -> str:
        data.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "labels"}) + "\n" for r in edited))
        with pytest.raises(UserError) as refusal:
            human_scores(SMALL, load_samples(data), ["context_recall"])
        return str(refusal.value)

    edited = [{**records[0], "user_input": "Another question?", "response": "Another answer."}, *records[1:]]
    first = records[0]["id"]
    assert (f"sample {first} has another user_input than the sample of that id in the data (from character 1: "
            f"{records[0]['user_input'][:10]!r} in the labels, 'Another qu' in the data), and another response; labels "
            "hold only for the texts they were made on (label it again, ") in refused(edited)
    edited[2] = {**records[2], "reference": "Another reference."}
    edited[3] = {**records[3], "reference": "Another.", "retrieved_contexts": ["Other."]}
    message = refused(edited)
    assert f": 3 labeled samples have other texts than the samples of their ids in the data: {first} has another " \
           "user_input (from character 1: " in message
    assert (f"in the data), and another response; also {records[2]['id']} (reference), {records[3]['id']} "
            "(retrieved_contexts, reference); labels hold only for the texts they were made on (label them again, or "
            "score the data they were labeled on; ") in message


def test_the_noncommittal_flag_is_measured_by_balanced_accuracy_not_agreement():
    """A judge that never flags scored 90% "agreement" where people flagged one response of ten, in a table
    titled "balanced accuracy (0.5 = chance)" (a probe's finding): SmolLM2's 76.7% on the dev set is 0.460."""
    bench = json.loads((Path(__file__).resolve().parent.parent / "docs/judges/dev-bench.json").read_text("utf-8"))
    table = next(t for t in tables(bench) if t.title.startswith("Per sentence: balanced accuracy"))
    column = table.headers.index("noncommittal")
    assert [row[column][0] for row in table.rows] == ["0.460", "0.500", "1.000"]
    assert "noncommittal: the judge's flag" in table.note and "(one class)" not in table.note
    bench["judges"][0]["metrics"]["response_relevancy"]["noncommittal"]["human_flagged"] = 0
    table = next(t for t in tables(bench) if t.title.startswith("Per sentence: balanced accuracy"))
    assert table.rows[0][column][0].endswith(" (one class)") and "every sentence (or response)" in table.note


def test_a_bench_into_a_folder_with_an_earlier_one_says_it_replaces_it(tmp_path, capsys, monkeypatch):
    """run says so of an earlier run's results; bench replaced an earlier bench, calibration included,
    unsaid (a probe's finding)."""
    from localeval.bench import command

    monkeypatch.setattr(command, "run_in_child", agreeing_child)
    out = tmp_path / "out"
    main(["bench", "--data", str(SMALL), "--out", str(out)])
    assert "holds the bench of" not in capsys.readouterr().err
    started = json.loads((out / "bench.json").read_text(encoding="utf-8"))["started"]
    main(["bench", "--data", str(SMALL), "--out", str(out)])
    assert (f"note: {out / 'bench.json'} holds the bench of {started}: smollm2-135m-instruct; this one replaces it, "
            "and its results and calibration, once a judge finishes (--resume keeps its finished judges, another "
            "--out keeps it all)") in capsys.readouterr().err


def test_a_bench_of_enough_samples_says_how_sure_its_ranking_is(tmp_path):
    records = [json.loads(line) for line in SMALL.read_text(encoding="utf-8").splitlines()]
    copies = [{**record, "id": f"{record['id']}-{n}"} for n in range(3) for record in records]  # 12 samples
    path = tmp_path / "labeled.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in copies), encoding="utf-8")
    labeled = read_labeled(path, METRICS)
    judges = [scripted("oracle", LabelJudge(labeled)), scripted("contrarian", LabelJudge(labeled, "contrarian"))]
    bench = bench_with(labeled, judges, isolate=False, out=tmp_path / "out")
    ahead = bench["best_judge"]["ahead_of_next"]
    assert ahead["next"] == "contrarian" and ahead["resamples"] == 1000
    assert (ahead["second_better"], ahead["tied"]) == (0.0, 0.0) and 0 < ahead["gap_interval"][0] <= ahead["gap_interval"][1] <= 2
    low, high = ahead["gap_interval"]
    # how good, said with how sure: the oracle agrees wherever a ρ is defined, but a draw of 12 samples may
    # leave a metric one human score (its ρ undefined, counted 0)
    oracle = bench["judges"][0]["summary"]["mean_spearman_interval"]
    assert 0 < oracle[0] < oracle[1] == 1.0
    assert f"mean Spearman ρ = 1.000 (95% interval {oracle[0]:.2f} to 1.00) across 5 metrics" in headline(bench)
    assert headline(bench).endswith(f"(next: contrarian, {bench['judges'][1]['summary']['mean_spearman']:.3f}, "
                                    f"which does better in 0% of 1,000 resamplings of the samples; the lead's 95% "
                                    f"interval {low:+.2f} to {high:+.2f})")
    # and per metric: "is this judge good enough for context_recall?" (the mean's interval alone could not say)
    for judge in bench["judges"]:
        for metric, compared in judge["metrics"].items():
            low, high = compared["scores"]["spearman_interval"]
            assert -1 <= low <= compared["scores"]["spearman"] <= high <= 1, (judge["name"], metric)
    contrarian = bench["judges"][1]["metrics"]["context_relevance"]["scores"]
    sure = next(table for table in tables(bench) if table.title.startswith("How sure each ρ is"))
    assert sure.rows[1][sure.headers.index("context_relevance")] == (
        f"{contrarian['spearman']:.3f} [{contrarian['spearman_interval'][0]:.2f}, "
        f"{contrarian['spearman_interval'][1]:.2f}]", False)


def test_every_labeled_records_problem_is_said_at_once(tmp_path):
    """Labels from several people have several problems; they came one per run (a probe's finding)."""
    def mess(records):
        records[1]["labels"]["reference_sentences_attributed"] = [1, 1]
        records[3]["labels"]["response_relevant"] = "yes"

    path = write_records(tmp_path, mess)
    with pytest.raises(DataError) as caught:
        read_labeled(path, METRICS)
    message = str(caught.value)
    assert message.startswith(f"{path}: 2 labeled records have problems: line 2, field "
                              "'labels.reference_sentences_attributed': sample dev-021: expected a list of true/false")
    assert "(write true and false, not 1 and 0); line 4, field 'labels.response_relevant': sample dev-029: " in message
    assert message.endswith('got "yes"')


def test_a_judge_name_is_plain_text_in_bench_md():
    """A judge folder named `<img src=x onerror=...>` with backticks was written into bench.md as HTML and markup,
    raw in a failed judge's line and in the data's warnings too (a security probe and its review); the registered
    names read as they did."""
    from localeval.bench.report import markdown

    bench = json.loads((Path(__file__).resolve().parent.parent / "docs" / "judges" / "dev-bench.json").read_text())
    plain = markdown(bench)
    assert all(judge["name"] in plain for judge in bench["judges"])
    hostile = "/models/<img src=x onerror=alert(1)>`code`*b*\nnext"
    if bench["best_judge"] == bench["judges"][0]["name"]:
        bench["best_judge"] = hostile
    bench["judges"][0]["name"] = hostile
    bench["judges"][1].update(status="failed", error=f"{hostile}: its weights do not match")  # named in its error
    bench.setdefault("warnings", []).append("ignored fields: '<script>x</script>'")  # the data's, in a warning
    text = markdown(bench)
    assert "\\<img src=x onerror=alert(1)\\>\\`code\\`*b* next" in text
    assert "<img" not in text.replace("\\<img", "") and "`code`" not in text and "<script>" not in text
    failed = text.split("## Failed judges")[1]
    assert failed.count("onerror") == 1  # named once, as failure_of names it


def test_a_failed_judge_is_named_once_where_its_error_names_it():
    """"failed: /x/judge: /x/judge: its weights do not match ..." (a probe bringing its own judge)."""
    from localeval.bench.report import failure_of

    assert failure_of("/x/judge", "/x/judge: its weights do not match") == "/x/judge: its weights do not match"
    assert failure_of("smollm2-135m-instruct", "out of memory") == "smollm2-135m-instruct: out of memory"
