"""context_precision and faithfulness, as ragas defines them: formulas on hand-worked examples
(ragas's own documented ones where they exist), what each asks the judge, and the human scores
bench derives for them from the labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localeval import NothingScoredWarning, evaluate
from localeval.bench.labels import read_labeled
from localeval.engine.scripted import LookupEmbedder, ScriptedJudge
from localeval.metrics import DEFAULT_METRICS, METRICS
from localeval.metrics.context_precision import average_precision
from localeval.metrics.faithfulness import CLAIMS_PER_SENTENCE, MAX_CLAIMS

LABELED = Path(__file__).resolve().parent / "data" / "labeled_small.jsonl"
EIFFEL = {"id": "eiffel", "user_input": "Where is the Eiffel Tower located?",
          "reference": "The Eiffel Tower is located in Paris.",
          "response": "The Eiffel Tower is located in Paris. It was built in 1889.",
          "retrieved_contexts": ["The Eiffel Tower is located in Paris.", "The Brandenburg Gate is located in Berlin."]}


# --- context_precision -----------------------------------------------------------------------------


@pytest.mark.parametrize("useful, expected", [
    ([1], 1.0),  # ragas's example: the one context is useful
    ([1, 0], 1.0),  # ragas's example: the useful chunk first, a distractor after it
    ([0, 1], 0.5),  # the same chunks, the distractor first: precision@2 = 1/2
    ([1, 0, 1], (1 + 2 / 3) / 2),  # precision@1 = 1, precision@3 = 2/3
    ([0, 0, 1, 1], (1 / 3 + 2 / 4) / 2),
    ([0, 0], 0.0),  # nothing useful
    ([], 0.0),
    ([0.5, 1.0], (0.5 * 0.5 + 1.0 * 1.5 / 2) / 1.5),  # soft: each rank weighted by its probability
])
def test_average_precision_by_hand(useful, expected):
    assert average_precision(useful) == pytest.approx(expected)


def passages_useful(*verdicts: int, asked: list | None = None):
    """A judge script: the passages' verdicts in order; every request kept in `asked`."""
    def answer(request):
        if asked is not None:
            asked.append(request)
        items = json.loads(request.schema)["properties"]["verdicts"]["prefixItems"]
        return {"verdicts": [{"passage": i, "useful": v} for i, v in enumerate(verdicts[:len(items)], 1)]}
    return answer


def run(samples, metrics, script):
    return evaluate(samples, metrics, ScriptedJudge(script), LookupEmbedder({}, default=[1.0, 0.0]),
                    device="cpu", cache=False).rows()


def test_context_precision_judges_each_chunk_against_the_reference_in_one_request():
    asked = []
    (row,) = run([EIFFEL], ["context_precision"], passages_useful(0, 1, asked=asked))
    assert row["context_precision"] == 0.5
    evidence = row["evidence"]["context_precision"]
    assert evidence["against"] == "reference"
    assert [(c["rank"], c["chunk"], c["useful"]) for c in evidence["chunks"]] == [
        (0, EIFFEL["retrieved_contexts"][0], 0), (1, EIFFEL["retrieved_contexts"][1], 1)]
    (request,) = asked
    user = dict(request.messages)["user"]
    assert "Answer: The Eiffel Tower is located in Paris." in user and "It was built" not in user
    assert "[Passage 2]\nThe Brandenburg Gate" in user


def test_context_precision_without_a_reference_judges_against_the_response():
    asked = []
    sample = {**EIFFEL, "reference": None}
    (row,) = run([sample], ["context_precision"], passages_useful(1, 0, asked=asked))
    assert row["context_precision"] == 1.0 and row["evidence"]["context_precision"]["against"] == "response"
    assert "It was built in 1889." in dict(asked[0].messages)["user"]


def test_context_precision_needs_a_reference_or_a_response():
    with pytest.warns(NothingScoredWarning, match="context_precision scored no sample"):
        (row,) = run([{**EIFFEL, "reference": None, "response": None}], ["context_precision"], passages_useful(1, 1))
    assert row["context_precision"] is None
    assert "missing reference and response" in row["evidence"]["context_precision"]["null_reason"]


def test_an_empty_chunk_is_not_asked_about_and_counts_as_not_useful():
    asked = []
    sample = {**EIFFEL, "retrieved_contexts": ["  ", "The Eiffel Tower is located in Paris."]}
    (row,) = run([sample], ["context_precision"], passages_useful(1, asked=asked))
    assert len(json.loads(asked[0].schema)["properties"]["verdicts"]["prefixItems"]) == 1
    assert [c["useful"] for c in row["evidence"]["context_precision"]["chunks"]] == [0, 1]
    assert row["context_precision"] == 0.5  # the useful chunk sits at rank 2


# --- faithfulness ----------------------------------------------------------------------------------


def claims_then_verdicts(claims: list[str], verdicts: list[int], asked: list | None = None):
    def answer(request):
        if asked is not None:
            asked.append(request)
        schema = json.loads(request.schema)["properties"]
        if "claims" in schema:
            return {"claims": claims}
        return {"verdicts": [{"claim": i, "supported": v} for i, v in enumerate(verdicts, 1)]}
    return answer


def test_faithfulness_is_the_share_of_claims_the_context_supports():
    """ragas's documented example: "Einstein was born in Germany on 20th March 1879" against a context
    giving 14 March 1879 is two claims, one supported: 0.5."""
    asked = []
    sample = {"id": "einstein", "user_input": "Where and when was Einstein born?",
              "retrieved_contexts": ["Albert Einstein (born 14 March 1879) was a German-born theoretical physicist."],
              "response": "Einstein was born in Germany on 20th March 1879."}
    claims = ["Einstein was born in Germany.", "Einstein was born on 20th March 1879."]
    (row,) = run([sample], ["faithfulness"], claims_then_verdicts(claims, [1, 0], asked))
    assert row["faithfulness"] == 0.5
    assert row["evidence"]["faithfulness"]["claims"] == [
        {"claim": claims[0], "supported": 1}, {"claim": claims[1], "supported": 0}]
    listing, checking = asked
    assert "Einstein was born in Germany on 20th March 1879." in dict(listing.messages)["user"]
    assert "1. Einstein was born in Germany." in dict(checking.messages)["user"]
    assert "14 March 1879" in dict(checking.messages)["user"]


def test_the_claims_are_a_bounded_list_of_bounded_strings():
    asked = []
    run([EIFFEL], ["faithfulness"], claims_then_verdicts(["a claim"], [1], asked))
    claims = json.loads(asked[0].schema)["properties"]["claims"]
    assert claims["minItems"] == 1 and claims["maxItems"] == min(MAX_CLAIMS, CLAIMS_PER_SENTENCE * 2)
    assert claims["items"]["maxLength"] == 150


def test_faithfulness_against_an_empty_context_is_zero_without_a_second_call():
    from localeval.trust import RetrievedNothingWarning

    asked = []
    with pytest.warns(RetrievedNothingWarning, match="the sample eiffel retrieved nothing .*, so faithfulness scores it 0, "
                                                     "as nothing retrieved supports nothing, and its mean counts that 0"):
        (row,) = run([{**EIFFEL, "retrieved_contexts": [""]}], ["faithfulness"],
                     claims_then_verdicts(["The tower is in Paris."], [1], asked))
    assert row["faithfulness"] == 0.0 and len(asked) == 1


def test_a_response_without_sentences_has_no_faithfulness():
    with pytest.warns(NothingScoredWarning, match="faithfulness scored no sample"):
        (row,) = run([{**EIFFEL, "response": " "}], ["faithfulness"], claims_then_verdicts(["x"], [1]))
    assert row["faithfulness"] is None


# --- where they stand among the metrics, and what people's labels say of them ------------------------


def test_the_default_run_stays_the_five_seed_metrics():
    assert len(DEFAULT_METRICS) == 5 and "faithfulness" not in DEFAULT_METRICS
    assert {"faithfulness", "context_precision"} <= set(METRICS)


def test_bench_derives_the_human_scores_from_the_labels():
    """context_precision: a chunk is useful when people marked one of its sentences relevant, scored
    by the metric's own formula; faithfulness: the share of response sentences people found supported."""
    items = read_labeled(LABELED, ["context_precision", "faithfulness"])
    for item in items:
        useful = [float(any(chunk)) for chunk in item.chunks("context_relevance")]
        assert item.human_score("context_precision") == pytest.approx(average_precision(useful))
        supported = item.sentences["answer_supported_precision"]
        assert item.human_score("faithfulness") == pytest.approx(sum(supported) / len(supported))
    record = json.loads(LABELED.read_text(encoding="utf-8").splitlines()[0])
    relevant = record["labels"]["context_sentences_relevant"]
    assert [list(chunk) for chunk in items[0].chunks("context_relevance")] == relevant
