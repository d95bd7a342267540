"""Typed evidence: each kind of verdict is written under the keys results.jsonl has always had, and
read back to the same value, so the report and bench see what the metric scored."""

import json

import pytest

from localeval.metrics import METRICS, JudgeSettings
from localeval.metrics.evidence import ChunkVerdict, ClaimVerdict, GeneratedQuestion, SentenceVerdict
from localeval.metrics.scoring import Scoring

KINDS = [
    (SentenceVerdict("Paris is the capital.", 1, "stated in chunk 1", 0.91, chunk=2), "relevant",
     {"chunk": 2, "sentence": "Paris is the capital.", "relevant": 1, "reason": "stated in chunk 1", "probability": 0.91}),
    (SentenceVerdict("It rains.", 0), "supported", {"sentence": "It rains.", "supported": 0}),
    (ChunkVerdict("A chunk.", 1, probability=0.6, rank=3), "useful",
     {"rank": 3, "chunk": "A chunk.", "useful": 1, "probability": 0.6}),
    (ClaimVerdict("The sky is blue.", 0, "not in the context"), "supported",
     {"claim": "The sky is blue.", "supported": 0, "reason": "not in the context"}),
    (GeneratedQuestion("What is the capital?", 0, probability=0.02, similarity=0.83), "noncommittal",
     {"question": "What is the capital?", "noncommittal": 0, "probability": 0.02, "similarity": 0.83}),
]


@pytest.mark.parametrize("verdict, key, written", KINDS, ids=lambda v: type(v).__name__)
def test_each_kind_is_written_under_the_results_keys_and_read_back_unchanged(verdict, key, written):
    row = verdict.to_json(key)
    assert row == written
    assert list(row)[:2] == list(written)[:2]  # where the text sits (if it says) and the text come first
    assert type(verdict).from_json(json.loads(json.dumps(row)), key) == verdict


def test_a_verdict_is_worth_its_probability_only_under_soft_scoring():
    sure, unsure = SentenceVerdict("a.", 1, probability=0.7), SentenceVerdict("b.", 1)
    assert sure.value(Scoring("hard")) == 1.0
    assert sure.value(Scoring("soft")) == 0.7
    assert sure.value(Scoring(threshold=0.8)) == 0.0
    assert unsure.value(Scoring("soft")) == 1.0  # no recorded probability: its 0/1 under every rule


def test_each_metric_scores_its_own_evidence_the_same_once_written_and_read_back():
    verdicts = {
        "context_relevance": [SentenceVerdict("a.", 1, chunk=0), SentenceVerdict("b.", 0, chunk=1)],
        "context_recall": [SentenceVerdict("a.", 1), SentenceVerdict("b.", 0), SentenceVerdict("c.", 1)],
        "answer_supported_precision": [SentenceVerdict("a.", 0)],
        "context_supported_precision": [SentenceVerdict("a.", 1, chunk=0)],
        "context_precision": [ChunkVerdict("x", 0, rank=0), ChunkVerdict("y", 1, rank=1)],
        "faithfulness": [ClaimVerdict("c1", 1), ClaimVerdict("c2", 1), ClaimVerdict("c3", 0)],
        "response_relevancy": [GeneratedQuestion("q?", 0, similarity=0.5), GeneratedQuestion("r?", 0, similarity=0.7)],
    }
    expected = {"context_relevance": 0.5, "context_recall": 2 / 3, "answer_supported_precision": 0.0,
                "context_supported_precision": 1.0, "context_precision": 0.5, "faithfulness": 2 / 3,
                "response_relevancy": 0.6}
    assert set(verdicts) == set(METRICS)
    for name, judged in verdicts.items():
        metric = METRICS[name](JudgeSettings())
        written = json.loads(json.dumps({metric.judged: [v.to_json(metric.verdict_key) for v in judged]}))
        assert metric.verdicts(written) == judged, name
        assert metric.formula(judged) == pytest.approx(expected[name]), name
        assert metric.score(written) == pytest.approx(expected[name]), name


def test_a_null_result_has_no_verdicts_and_no_score():
    for name, cls in METRICS.items():
        assert cls().verdicts({"null_reason": "judge output unusable"}) == [], name  # a loop over rows needs no check
        assert cls().score({"null_reason": "judge output unusable"}) is None, name
