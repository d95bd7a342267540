"""A metric of a user's own (docs/custom-metrics.md): registered, checked, and scored through the same engine as
the built-in metrics, by the scripted judge and by the real embedded one. The document's own code is run."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

import localeval
from localeval import JudgeRequest, Metric, MetricResult, UserError
from localeval.engine.scripted import ScriptedJudge
from localeval.metrics import BUILT_IN, METRICS
from localeval.metrics.base import judge_failure
from localeval.metrics.schemas import max_output_tokens
from localeval.requests import EmbedRequest

DOC = Path(__file__).resolve().parent.parent / "docs" / "custom-metrics.md"
SAMPLE = {"id": "bridge", "user_input": "When did the bridge open?", "response": "The bridge opened in 1932.",
          "retrieved_contexts": ["The bridge opened in 1932 after six years of work."],
          "reference": "It opened in 1932."}


@pytest.fixture(autouse=True)
def registry_as_built():
    """Each test registers its own metrics; none outlives it."""
    yield
    for name in set(METRICS) - BUILT_IN:
        del METRICS[name]


def _code_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def _documented_metric() -> dict:
    """The document's example metric, defined and registered as a reader's script would (its evaluate() line,
    which runs the default judge over the example data, left out: the real judge is run below on one sample)."""
    example = _code_blocks()[0].split("\nresult = ")[0]
    namespace: dict = {}
    exec(compile(example, str(DOC), "exec"), namespace)
    return namespace


def test_the_documented_metric_is_scored_with_a_built_in_one_and_its_test_passes():
    namespace = _documented_metric()
    assert METRICS["answers_directly"] is namespace["AnswersDirectly"]
    exec(compile(_code_blocks()[1], str(DOC), "exec"), {"localeval": localeval})  # the document's own assert
    asked = []

    def script(request: JudgeRequest):
        asked.append(request)
        if "direct" in json.loads(request.schema)["properties"]:
            return {"reason": "no", "direct": 0}
        return {"verdicts": [{"sentence": 1, "attributed": 1}]}

    result = localeval.evaluate([SAMPLE], metrics=["answers_directly", "context_recall"], judge=ScriptedJudge(script),
                                embedder=None)
    assert result["answers_directly"] == [0.0] and result["context_recall"] == [1.0]
    assert result.summary()["answers_directly"]["mean"] == 0.0
    assert result.rows()[0]["evidence"]["answers_directly"] == {"reason": "no", "probability": None}
    assert "answers_directly" in result.to_pandas().columns
    assert len(asked) == 2  # one request each, in one engine call


@pytest.mark.filterwarnings("ignore::localeval.trust.WeakJudgeWarning")
def test_the_documented_metric_is_scored_by_the_real_embedded_judge_its_answer_held_to_its_schema(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args[:2]}")

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    _documented_metric()
    result = localeval.evaluate([SAMPLE], metrics=["answers_directly"], cache=False)
    (score,), evidence = result["answers_directly"], result.rows()[0]["evidence"]["answers_directly"]
    assert score in (0.0, 1.0)  # the grammar let the judge write nothing but 0 or 1
    assert isinstance(evidence["reason"], str) and len(evidence["reason"]) <= 120
    assert 0.0 <= evidence["probability"] <= 1.0 and (evidence["probability"] >= 0.5) == (score == 1.0)


@pytest.mark.filterwarnings("ignore::localeval.trust.WeakJudgeWarning")
def test_a_budget_too_small_for_the_answer_is_said_as_such_by_the_real_judge():
    schema = {"type": "object", "additionalProperties": False, "required": ["reason"],
              "properties": {"reason": {"type": "string", "maxLength": 100}}}

    def steps(self, sample, language):
        (answer,) = yield [JudgeRequest.build("Say why.", sample.response, schema, 5)]
        return judge_failure(answer) if answer.data is None else MetricResult(1.0)

    localeval.register_metric(_metric(steps=steps))
    result = localeval.evaluate([SAMPLE], metrics=["mine"], cache=False)
    assert result["mine"] == [None]
    assert result.rows()[0]["evidence"]["mine"]["null_reason"].startswith(
        "judge output unusable: cut off at the request's max_new_tokens (5) before its JSON closed (")


def _metric(**attributes) -> type[Metric]:
    def steps(self, sample, language):
        (answer,) = yield [JudgeRequest.build("s", "u", {"enum": [0, 1]}, 4)]
        return MetricResult(float(answer.data))
    body = {"name": "mine", "description": "mine", "requires": ("response",), "steps": steps, **attributes}
    return type("Mine", (Metric,), body)


@pytest.mark.parametrize("attributes, said", [
    ({"name": "faithfulness"}, "'faithfulness' is a built-in metric's name; give Mine another"),
    ({"name": "My Metric"}, "Mine.name must be a name of lower-case letters"),
    ({"name": "id"}, "'id' is a key results already have"),  # it overwrote each row's id (a review)
    ({"name": "evidence"}, "'evidence' is a key results already have"),
    ({"name": "response"}, "'response' is a key results already have"),
    ({"name": "all"}, "'all' is a key results already have (or, for 'all', every metric)"),
    ({"description": ""}, "Mine: set description"),
    ({"requires": ["response"]}, "Mine: set requires, a tuple of the sample fields"),
    ({"requires": ("answer",)}, "Mine: requires names 'answer', not a sample field; choose from user_input, "
                                "retrieved_contexts, response, reference"),
    ({"steps": lambda self, sample, language: MetricResult(1.0)}, "Mine: steps() must be a generator function"),
    ({"part_names": ("context_relevance_chunks",)}, "'context_relevance_chunks' is already a score of metric "
                                                    "'context_relevance'"),
])
def test_a_class_that_gets_the_contract_wrong_is_refused_when_registered_saying_what_to_write(attributes, said):
    with pytest.raises(UserError, match=re.escape(said)):
        localeval.register_metric(_metric(**attributes))
    assert "mine" not in METRICS


def test_a_name_registered_again_is_replaced_as_a_notebook_cell_run_twice_would_have_it():
    first, second = localeval.register_metric(_metric()), localeval.register_metric(_metric())
    assert METRICS["mine"] is second is not first
    with pytest.raises(UserError, match="give a class derived from localeval.Metric"):
        localeval.register_metric(lambda: None)


def test_a_metric_given_as_a_class_or_object_is_told_how_to_register_it_and_nothing_is_cut_off():
    mine = _metric()
    for given in (mine, mine()):
        with pytest.raises(UserError) as refused:
            localeval.evaluate([SAMPLE], metrics=[given], judge=ScriptedJudge(lambda r: 1), embedder=None)
        assert str(refused.value).endswith("localeval.register_metric(Mine) (localeval docs custom-metrics)")
    with pytest.raises(UserError) as refused:
        localeval.evaluate([SAMPLE], metrics=[type("Thing", (), {"name": "zzz"})], judge=ScriptedJudge(lambda r: 1),
                           embedder=None)
    assert str(refused.value) == "metrics: give metrics by name, not as a metric class"  # no dangling ";"


def _scored_by(steps, **attributes) -> list[float | None]:
    localeval.register_metric(_metric(steps=steps, **attributes))
    return localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: 1), embedder=None)["mine"]


def test_a_step_or_result_of_the_wrong_kind_stops_the_call_naming_the_metric():
    def one_request(self, sample, language):
        yield JudgeRequest.build("s", "u", {"enum": [0, 1]}, 4)
        return MetricResult(1.0)

    def a_float(self, sample, language):
        yield []
        return 0.5

    def too_high(self, sample, language):
        yield []
        return MetricResult(1.5)

    def embeddings_unasked(self, sample, language):
        yield [EmbedRequest(("a text",))]
        return MetricResult(1.0)

    def a_part_unnamed(self, sample, language):
        yield []
        return MetricResult(0.5, parts={"other": 0.5})

    def a_part_too_high(self, sample, language):
        yield []
        return MetricResult(0.5, parts={"mine_part": 7.0})

    for steps, said in [(one_request, "metric 'mine': each step must yield a list of JudgeRequest"),
                        (a_float, "metric 'mine': steps() must return a MetricResult; it returned float 0.5"),
                        (too_high, "metric 'mine': a score is a number from 0 to 1, or None (with a null_reason"),
                        (embeddings_unasked, "metric 'mine' asks for embeddings: set uses_embedder = True"),
                        (a_part_unnamed, "metric 'mine': its result has sub-scores 'other' that its part_names"),
                        (a_part_too_high, "metric 'mine': sub-score 'mine_part' is a number from 0 to 1")]:
        with pytest.raises(UserError, match=re.escape(said)):
            _scored_by(steps, part_names=("mine_part",))


def test_a_numpy_score_and_a_float_error_past_one_are_made_plain_scores():
    """np.float32 counted as null in the summary and failed json.dumps(rows()) (a review)."""
    import numpy as np

    def numpy_score(self, sample, language):
        yield []
        return MetricResult(np.float32(0.25))

    def past_one(self, sample, language):
        yield []
        return MetricResult(1 + 5e-10)

    assert _scored_by(numpy_score) == [0.25] and type(_scored_by(numpy_score)[0]) is float
    assert _scored_by(past_one) == [1.0]
    result = localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: 1), embedder=None)
    assert result.summary()["mine"]["scored"] == 1 and json.dumps(result.rows())


def test_a_null_score_without_a_reason_is_given_one():
    def no_reason(self, sample, language):
        yield []
        return MetricResult(None)

    assert _scored_by(no_reason) == [None]
    result = localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: 1), embedder=None)
    assert result.summary()["mine"]["null_reasons"] == {"mine gave no reason": 1}


def test_a_schema_the_grammar_cannot_hold_the_judge_to_nulls_its_metric_alone():
    """A pattern with a look-ahead compiled under no grammar: the whole call was lost mid-batch with a real judge,
    and the scripted judge let it pass (a probe). Every judge now meets the same check, before decoding."""
    schema = {"type": "object", "additionalProperties": False, "required": ["id"],
              "properties": {"id": {"type": "string", "pattern": "(?=P)P[0-9]", "maxLength": 4}}}

    def steps(self, sample, language):
        (answer,) = yield [JudgeRequest.build("s", "u", schema, max_output_tokens(schema))]
        return judge_failure(answer) if answer.data is None else MetricResult(1.0)

    localeval.register_metric(_metric(steps=steps))
    script = {"mine": {"id": "P1"}, "recall": {"verdicts": [{"sentence": 1, "attributed": 1}]}}
    result = localeval.evaluate([SAMPLE], metrics=["mine", "context_recall"], embedder=None, judge=ScriptedJudge(
        lambda r: script["mine" if "id" in json.loads(r.schema)["properties"] else "recall"]))
    assert result["mine"] == [None] and result["context_recall"] == [1.0]
    assert result.rows()[0]["evidence"]["mine"]["null_reason"] == (
        "the judge cannot be held to this request's schema: look-around, including look-ahead and look-behind, "
        "is not supported")


def test_a_schema_with_an_unbounded_string_is_told_it_needs_a_max_length():
    with pytest.raises(ValueError, match="every string of a judge's schema needs a maxLength"):
        max_output_tokens({"type": "object", "properties": {"why": {"type": "string"}}})


def test_a_metric_that_asks_for_embeddings_gets_one_unit_vector_per_text_from_the_real_embedder():
    def steps(self, sample, language):
        (vectors,) = yield [EmbedRequest((sample.user_input, sample.response))]
        return MetricResult(max(0.0, float(vectors[0] @ vectors[1])))

    localeval.register_metric(_metric(steps=steps, uses_embedder=True, requires=("user_input", "response")))
    result = localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: 1))
    assert 0.3 < result["mine"][0] <= 1.0  # a question and its answer, by all-MiniLM-L6-v2
