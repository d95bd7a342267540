"""Verdict probabilities, from the decoder's choice points to a metric's score: hard, soft, calibrated.

A scripted judge returns whole JudgeAnswers here, so each verdict's probability is set by hand
and every score below is worked out by hand. The real model's probabilities are checked against
a plain softmax of its logits in test_decode.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import localeval
from localeval import UserError
from localeval.engine.cache import AnswerCache
from localeval.engine.choices import keyed_choices
from localeval.engine.decode import ChoicePoint, choice_probabilities
from localeval.engine.scripted import LookupEmbedder, ScriptedJudge
from localeval.evaluation import BENCH_WINDOW
from localeval.pipeline import build_pipeline
from localeval.metrics import DEFAULT_METRICS, METRICS, JudgeSettings, resolve_metrics
from localeval.metrics.scoring import Scoring, any_of
from localeval.requests import Choice, JudgeAnswer, JudgeRequest
from localeval.samples import Sample

# --- the decoder's choice points -------------------------------------------------------------


def test_choice_points_are_where_only_a_few_tokens_are_allowed():
    inf = float("-inf")
    masked = np.full((3, 20), inf, dtype=np.float32)
    masked[0, [4, 7]] = [0.0, math.log(3)]  # a 0/1 choice: probabilities 1/4 and 3/4
    masked[1, 5] = 2.0  # a single forced token: no choice
    masked[2, :] = 0.0  # free text: every token open
    import torch

    found = choice_probabilities(torch.tensor(masked), [[4, 7], [5], None])
    assert found[0] == pytest.approx({4: 0.25, 7: 0.75})
    assert found[1] is None and found[2] is None


def test_choice_points_become_the_json_keys_they_decided():
    vocabulary = {1: '{"verdicts":[{"sentence":1,"supported":', 2: "0", 3: "1", 4: '},{"sentence":2,"reason":"',
                  5: "no", 6: '","supported":', 7: "}]}"}

    def decode(ids):
        return "".join(vocabulary[i] for i in ids)

    tokens = [1, 3, 4, 5, 6, 2, 7]
    points = [ChoicePoint(1, {2: 0.2, 3: 0.8}), ChoicePoint(3, {5: 0.5, 2: 0.5}), ChoicePoint(5, {2: 0.9, 3: 0.1})]
    choices = keyed_choices(tokens, points, decode)
    # the point inside the reason string is not a keyed value: dropped
    assert choices == (Choice("supported", {"0": 0.2, "1": 0.8}), Choice("supported", {"0": 0.9, "1": 0.1}))
    answer = JudgeAnswer.parse(decode(tokens), len(tokens), choices)
    assert answer.probabilities("supported") == pytest.approx([0.8, 0.1])
    assert answer.probabilities("relevant") is None


def test_cached_answers_keep_their_probabilities(tmp_path):
    cache = AnswerCache(tmp_path / "answers.sqlite")
    request = JudgeRequest.build("system", "user", {"type": "object"}, 10)
    answer = JudgeAnswer.parse('{"a":1}', 5, (Choice("a", {"0": 0.25, "1": 0.75}),))
    cache.put_many("judge", {request: answer})
    assert cache.get_many("judge", [request])[request] == answer


# --- scoring rules ---------------------------------------------------------------------------


def test_a_verdict_counts_its_01_its_probability_or_the_threshold_it_passes():
    assert Scoring("hard").value(1, 0.6) == 1.0
    assert Scoring("soft").value(1, 0.6) == 0.6
    assert Scoring("soft", threshold=0.7).value(1, 0.6) == 0.0
    assert Scoring("hard", threshold=0.3).value(0, 0.4) == 1.0  # a calibrated threshold overrides the greedy 0
    assert Scoring("soft").value(1, None) == 1.0  # no probability recorded: the verdict itself
    assert Scoring("soft", 0.4).name == "calibrated" and Scoring("soft").name == "soft"
    with pytest.raises(UserError, match="Scoring mode 'Soft': choose from hard, soft"):  # a caller's: one line
        localeval.Scoring("Soft")
    assert localeval.Scoring is Scoring  # as JudgeSettings' message names it


def test_any_of_is_any_for_verdicts_and_the_chance_of_one_for_probabilities():
    assert any_of([0.0, 1.0, 0.0]) == 1.0 and any_of([0.0, 0.0]) == 0.0
    assert any_of([0.5, 0.5]) == pytest.approx(0.75)


# --- metrics scored from scripted probabilities -----------------------------------------------

SAMPLE = Sample(id="s", user_input="When did the Harbor Bridge open?",
                retrieved_contexts=("The Harbor Bridge opened in 1932. It carries eight lanes.", "A film is named after it."),
                response="It opened in 1932. It was designed by John Bradfield.",
                reference="The bridge opened in 1932. It has eight lanes.")
# P(1) per verdict, in sentence order; the greedy verdict is the likelier value.
P_ONE = {"relevant": [0.9, 0.4, 0.2], "attributed": [0.8, 0.3], "supported": [0.7, 0.45], "noncommittal": [0.6, 0.7, 0.1]}
P_CONTEXT_SUPPORTED = [[0.95, 0.35], [0.1]]  # context_supported_precision asks chunk by chunk


def probable_answer(request: JudgeRequest) -> JudgeAnswer:
    """A verdict list (or question list) whose every value has the probability in P_ONE."""
    import json

    schema = json.loads(request.schema)
    if "questions" in schema["properties"]:
        flags = P_ONE["noncommittal"]
        data = {"questions": [{"question": f"q{i}?", "noncommittal": int(p > 0.5)} for i, p in enumerate(flags)]}
        choices = [Choice("noncommittal", {"0": 1 - p, "1": p}) for p in flags]
        return JudgeAnswer(json.dumps(data), data, None, 0, tuple(choices))
    items = schema["properties"]["verdicts"]["prefixItems"]
    key = [k for k in items[0]["properties"] if k not in ("sentence", "reason")][0]
    probabilities = P_ONE[key] if key != "supported" or "Response:" not in request.messages[1][1] else None
    if probabilities is None:  # context_supported_precision: one request per chunk
        chunk = int(request.messages[1][1].split("Passage ")[1].split()[0]) - 1
        probabilities = P_CONTEXT_SUPPORTED[chunk]
    data = {"verdicts": [{"sentence": i, key: int(p > 0.5)} for i, p in enumerate(probabilities, 1)]}
    choices = [Choice(key, {"0": 1 - p, "1": p}) for p in probabilities]
    return JudgeAnswer(json.dumps(data), data, None, 0, tuple(choices))


def score_all(scoring: Scoring) -> dict[str, float]:
    settings = JudgeSettings(reasons=False, scoring=scoring)
    embedder = LookupEmbedder({"q0?": [1.0, 0.0], "q1?": [0.6, 0.8], "q2?": [0.0, 1.0]}, default=[1.0, 0.0])
    evaluator = build_pipeline(resolve_metrics(None, settings), ScriptedJudge(probable_answer), embedder,
                               window=BENCH_WINDOW).evaluator
    (result,) = evaluator.run([SAMPLE])
    return {name: result.score(name) for name in DEFAULT_METRICS}, result


@pytest.mark.parametrize(("scoring", "expected"), [
    (Scoring("hard"), {"context_relevance": 1 / 3, "context_recall": 1 / 2, "answer_supported_precision": 1 / 2,
                       "context_supported_precision": 1 / 3, "response_relevancy": (1 + 0.6 + 0) / 3}),
    (Scoring("soft"), {"context_relevance": 1.5 / 3, "context_recall": 1.1 / 2, "answer_supported_precision": 1.15 / 2,
                       "context_supported_precision": 1.4 / 3,
                       # similarities 1, 0.6, 0: mean 0.5333, weighed by 1 - 0.6 * 0.7 * 0.1
                       "response_relevancy": 1.6 / 3 * (1 - 0.042)}),
    (Scoring("hard", threshold=0.3), {"context_relevance": 2 / 3, "context_recall": 2 / 2,
                                      "answer_supported_precision": 2 / 2, "context_supported_precision": 2 / 3,
                                      "response_relevancy": 1.6 / 3}),  # flags 0.6, 0.7 pass 0.3; 0.1 does not
], ids=["hard", "soft", "calibrated"])
def test_each_metric_scores_its_verdicts_by_the_rule_hand_worked(scoring, expected):
    scores, _ = score_all(scoring)
    assert scores == pytest.approx(expected)


def test_each_verdict_in_the_evidence_carries_its_probability_and_rescoring_the_evidence_agrees():
    scores, result = score_all(Scoring("soft"))
    evidence = result.metrics["context_relevance"].evidence
    assert [row["probability"] for row in evidence["sentences"]] == pytest.approx(P_ONE["relevant"])
    assert [row["relevant"] for row in evidence["sentences"]] == [1, 0, 0]  # the greedy verdicts stay
    # chunk level: chance that a sentence of the chunk is relevant
    assert evidence["chunk_relevant"] == pytest.approx([1 - 0.1 * 0.6, 0.2])
    supported = result.metrics["context_supported_precision"].evidence
    assert supported["per_chunk"] == pytest.approx([1.3 / 2, 0.1])
    assert supported["rank_weighted"] == pytest.approx((1.3 / 2 + 0.1 / 2) / 1.5)
    questions = result.metrics["response_relevancy"].evidence["questions"]
    assert [q["probability"] for q in questions] == pytest.approx(P_ONE["noncommittal"])
    # bench re-scores the stored evidence with the same formula: the same score under the same rule
    for name, metric_result in result.metrics.items():
        rescorer = METRICS[name](JudgeSettings(scoring=Scoring("soft")))
        assert rescorer.score(metric_result.to_json()) == pytest.approx(scores[name])


def test_probabilities_that_do_not_line_up_with_the_verdicts_are_left_out_not_misplaced():
    from localeval.metrics.verdicts import read_verdicts

    metric = METRICS["answer_supported_precision"](JudgeSettings(scoring=Scoring("soft")))
    data = {"verdicts": [{"sentence": 1, "supported": 1}, {"sentence": 2, "supported": 0}]}
    one_choice = (Choice("supported", {"0": 0.3, "1": 0.7}),)  # a value written without a choice point of its own
    answer = JudgeAnswer(json.dumps(data), data, None, 0, one_choice)
    verdicts = read_verdicts(answer, metric, ("a.", "b."))
    assert [v.probability for v in verdicts] == [None, None]
    assert metric.formula(verdicts) == 0.5  # the 0/1 verdicts, under every scoring


def test_settings_and_scoring_together_are_refused():
    import localeval
    from localeval.errors import UserError

    with pytest.raises(UserError, match="not both"):
        localeval.evaluate([SAMPLE], judge=ScriptedJudge(probable_answer), settings=JudgeSettings(), scoring="soft")
