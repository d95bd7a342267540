"""A metric of a user's own (docs/custom-metrics.md): registered, checked, and scored through the same engine as
the built-in metrics, by the scripted judge and by the real embedded one. The document's own code is run."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import localeval
from localeval import UserError
from localeval.cli import main
from localeval.errors import EXIT_OK, EXIT_USER, DataError
from localeval.metrics import (METRICS, EmbedRequest, JudgeRequest, Metric, MetricResult, judge_failure,
                               max_output_tokens, read_verdicts, verdict_list)
from localeval.metrics.sources import load_metric_sources
from localeval.testing import ScriptedJudge

ROOT = Path(__file__).resolve().parent.parent
DOC, EXAMPLE, EXAMPLES = ROOT / "docs" / "custom-metrics.md", ROOT / "examples" / "answers_directly.py", ROOT / "examples" / "samples.jsonl"
SAMPLE = {"id": "bridge", "user_input": "When did the bridge open?", "response": "The bridge opened in 1932.",
          "retrieved_contexts": ["The bridge opened in 1932 after six years of work."],
          "reference": "It opened in 1932."}


def _code_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def _documented_metric() -> None:
    """The document's example metric, registered as --metrics-from registers it (its own evaluate() run, under
    `if __name__ == "__main__":`, left out as a loaded file's is: the real judge is run below on one sample)."""
    (source,) = load_metric_sources([str(EXAMPLE)])
    assert source.metrics == ("answers_directly",) and source.file == str(EXAMPLE)


def test_the_documents_whole_example_is_the_example_file_word_for_word():
    assert _code_blocks()[0] == EXAMPLE.read_text(encoding="utf-8")


def test_the_documented_kit_is_one_cheap_import():
    """Every name the contract says localeval.metrics gives is there, and importing them with the test's judge
    loads no torch: a metric file is loaded before a run's models, and its helpers were spread over four
    internal modules (a review)."""
    kit = DOC.read_text(encoding="utf-8").split("## The contract", 1)[1].split("**The class.**", 1)[0]
    names = re.findall(r"`(\w+)`", kit.split("Its test's judge", 1)[0])
    assert {"Metric", "JudgeRequest", "EmbedRequest", "judge_failure", "read_verdicts"} <= set(names)
    assert set(names) <= set(localeval.metrics.__all__)
    code = (f"import sys; from localeval.metrics import {', '.join(names)}; from localeval.testing import ScriptedJudge; "
            "print('torch' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"


def test_the_documented_metric_is_scored_with_a_built_in_one_and_its_test_passes():
    _documented_metric()
    assert METRICS["answers_directly"].__name__ == "AnswersDirectly"
    testing = next(block for block in _code_blocks() if "ScriptedJudge(script)" in block)
    exec(compile(testing, str(DOC), "exec"), {"localeval": localeval})  # the document's own assert
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


@pytest.mark.nulls_expected
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


VERDICT = {"type": "object", "additionalProperties": False, "required": ["v"], "properties": {"v": {"enum": [0, 1]}}}


def _metric(**attributes) -> type[Metric]:
    def steps(self, sample, language):
        (answer,) = yield [JudgeRequest.build("s", "u", VERDICT, 8)]
        return MetricResult(float(answer.data["v"]))
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
    ({"steps": "score it"}, "Mine: steps must be a method: a generator that yields lists of requests"),
    ({"part_names": ("context_relevance_chunks",)}, "'context_relevance_chunks' is already a score of metric "
                                                    "'context_relevance'"),
    # a sub-score named language overwrote each row's, and means by language grouped by the score (a review)
    ({"part_names": ("language",)}, "its sub-score 'language' would overwrite a results line's own 'language'"),
    ({"list_part_names": ("id",)}, "its sub-score 'id' would overwrite a results line's own 'id'"),
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
            localeval.evaluate([SAMPLE], metrics=[given], judge=ScriptedJudge(lambda r: {"v": 1}), embedder=None)
        assert str(refused.value).endswith("localeval.register_metric(Mine) (localeval docs custom-metrics)")
    with pytest.raises(UserError) as refused:
        localeval.evaluate([SAMPLE], metrics=[type("Thing", (), {"name": "zzz"})], judge=ScriptedJudge(lambda r: {"v": 1}),
                           embedder=None)
    assert str(refused.value) == "metrics: give metrics by name, not as a metric class"  # no dangling ";"


def _scored_by(steps, **attributes) -> list[float | None]:
    localeval.register_metric(_metric(steps=steps, **attributes))
    return localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: {"v": 1}), embedder=None)["mine"]


def test_a_step_or_result_of_the_wrong_kind_stops_the_call_naming_the_metric():
    def one_request(self, sample, language):
        yield JudgeRequest.build("s", "u", VERDICT, 8)
        return MetricResult(1.0)

    def not_an_object(self, sample, language):
        yield [JudgeRequest.build("s", "u", {"enum": [0, 1]}, 4)]  # every answer was null, "not a JSON object"
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

    def stops(self, sample, language):  # a plain function, asking nothing, whose next() ran out
        return MetricResult(float(next(word for word in sample.response.split() if len(word) > 30)))

    def returns_none(self, sample, language):
        return None

    def numpy_evidence(self, sample, language):  # run: a traceback, exit 1, once the sample was scored (a review)
        yield []
        return MetricResult(0.5, {"words": __import__("numpy").int64(3)})

    for steps, said in [(stops, "metric 'mine' on sample bridge failed: " + __file__ + ", line "),
                        (returns_none, "metric 'mine' on sample bridge: steps() must return a MetricResult; it "
                                       "returned NoneType None"),
                        (one_request, "metric 'mine' on sample bridge: each step must yield a list of JudgeRequest"),
                        (not_an_object, "metric 'mine' on sample bridge failed: " + __file__ + ", line "),
                        (not_an_object, ": ValueError: a judge request's schema describes a JSON object: "),
                        (a_float, "metric 'mine' on sample bridge: steps() must return a MetricResult; it returned float 0.5"),
                        (too_high, "metric 'mine' on sample bridge: a score is a number from 0 to 1, or None (with a null_reason"),
                        (embeddings_unasked, "metric 'mine' on sample bridge: it asks for embeddings: set uses_embedder = True"),
                        (a_part_unnamed, "metric 'mine' on sample bridge: its result has sub-scores 'other' that its part_names"),
                        (a_part_too_high, "metric 'mine' on sample bridge: sub-score 'mine_part' is a number from 0 to 1"),
                        (numpy_evidence, "metric 'mine' on sample bridge: its evidence must hold plain JSON values "
                                         "(str, int, float, bool, None, lists and dicts of them), as results.jsonl "
                                         "keeps them: Object of type int64 is not JSON serializable")]:
        with pytest.raises(UserError, match=re.escape(said)):
            _scored_by(steps, part_names=("mine_part",))


def test_the_documented_verdict_helpers_ask_and_read_a_verdict_per_sentence():
    """verdict_list's schema, read back by read_verdicts as docs/custom-metrics.md says: it read a class attribute
    the docs did not name, verdict_key, and failed (a review)."""

    def steps(self, sample, language):
        sentences = ("The bridge opened.", "In 1932.")
        schema = verdict_list(len(sentences), "ok", self.settings)
        (answer,) = yield [JudgeRequest.build("s", "u", schema, max_output_tokens(schema))]
        verdicts = read_verdicts(answer, self, sentences)
        return MetricResult(sum(v.verdict for v in verdicts) / len(verdicts))

    localeval.register_metric(_metric(steps=steps, verdict_key="ok"))
    judge = ScriptedJudge(lambda request: {"verdicts": [{"sentence": 1, "ok": 1}, {"sentence": 2, "ok": 0}]})
    assert localeval.evaluate([SAMPLE], metrics=["mine"], judge=judge, embedder=None)["mine"] == [0.5]


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
    result = localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: {"v": 1}), embedder=None)
    assert result.summary()["mine"]["scored"] == 1 and json.dumps(result.rows())


@pytest.mark.nulls_expected
def test_a_null_score_without_a_reason_is_given_one():
    def no_reason(self, sample, language):
        yield []
        return MetricResult(None)

    assert _scored_by(no_reason) == [None]
    result = localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: {"v": 1}), embedder=None)
    assert result.summary()["mine"]["null_reasons"] == {"mine gave no reason": 1}


@pytest.mark.nulls_expected
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
    result = localeval.evaluate([SAMPLE], metrics=["mine"], judge=ScriptedJudge(lambda r: {"v": 1}))
    assert 0.3 < result["mine"][0] <= 1.0  # a question and its answer, by all-MiniLM-L6-v2


# --metrics-from: the command line's way to the same metrics

@pytest.mark.filterwarnings("ignore::localeval.trust.WeakJudgeWarning")
def test_run_scores_a_metric_from_a_file_beside_a_built_in_one_with_the_real_judge_and_names_the_file(tmp_path):
    out = tmp_path / "out"
    assert main(["run", str(EXAMPLES), "--metrics-from", str(EXAMPLE), "--metrics", "answers_directly,context_recall",
                 "--limit", "2", "--no-cache", "--quiet", "--out", str(out)]) == EXIT_OK
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["answers_directly"] for row in rows] and all(row["answers_directly"] in (0.0, 1.0) for row in rows)
    assert all(isinstance(row["evidence"]["answers_directly"]["reason"], str) for row in rows)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    digest = load_metric_sources([str(EXAMPLE)])[0].sha256
    assert summary["metrics"]["answers_directly"]["scored"] == 2
    assert summary["metrics_from"] == [{"source": str(EXAMPLE), "file": str(EXAMPLE), "sha256": digest,
                                        "metrics": ["answers_directly"]}]
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["metrics_from"] == {"answers_directly": digest}
    assert "answers_directly" in (out / "report.html").read_text(encoding="utf-8")


def test_a_metric_file_changed_since_is_another_run_that_resume_refuses(tmp_path, tiny_judge, capsys):
    mine, out = tmp_path / "mine.py", tmp_path / "out"
    mine.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    command = ["run", str(EXAMPLES), "--metrics-from", str(mine), "--metrics", "answers_directly", "--limit", "1",
               "--judge", str(tiny_judge), "--no-cache", "--quiet", "--out", str(out)]
    assert main(command) == EXIT_OK
    assert main([*command, "--resume"]) == EXIT_OK  # the same file: the same run
    mine.write_text(mine.read_text(encoding="utf-8").replace("a short reason", "one short reason"), encoding="utf-8")
    capsys.readouterr()
    assert main([*command, "--resume"]) == EXIT_USER
    assert ("holds another run (the code of metric answers_directly changed since, its --metrics-from file or a "
            "module beside it; metrics_from.answers_directly: ") in capsys.readouterr().err


BROKEN = {
    "syntax.py": ("x = (\n", "syntax.py, line 1: SyntaxError: '(' was never closed"),
    "missing.py": ("import localeval\nimport not_a_module_anywhere\n",
                   "missing.py, line 2: ModuleNotFoundError: No module named 'not_a_module_anywhere'"),
    "nothing.py": ("x = 1\n", "it registered no metric; decorate each of its Metric classes with "
                              "@localeval.register_metric"),
    "unguarded.py": ('import localeval\nlocaleval.evaluate([{"id": "1", "user_input": "q?"}])\n',
                     "unguarded.py, line 2: it calls localeval.evaluate() as it is loaded: put that call under "
                     "`if __name__ == "),
    # the line that register_metric refused, beside its reason (it was the reason alone)
    "builtin.py": (None, "builtin.py, line {decorated}: register_metric: 'faithfulness' is a built-in metric's name; "
                         "give AnswersDirectly another"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_metric_file_that_fails_as_it_loads_is_one_line_naming_it_before_any_model_loads(name, tmp_path, capsys):
    content, said = BROKEN[name]
    path, out = tmp_path / name, tmp_path / "out"
    path.write_text(content or EXAMPLE.read_text(encoding="utf-8").replace('"answers_directly"', '"faithfulness"'),
                    encoding="utf-8")
    assert main(["run", str(EXAMPLES), "--metrics-from", str(path), "--out", str(out)]) == EXIT_USER
    error = capsys.readouterr().err
    lines = path.read_text(encoding="utf-8").splitlines()
    decorated = lines.index("@localeval.register_metric") + 1 if "@localeval.register_metric" in lines else None
    assert error.startswith(f"localeval: error: --metrics-from {path}: ") and said.format(decorated=decorated) in error
    assert error.count("\n") == 1 and "Traceback" not in error and not out.exists()


@pytest.mark.parametrize("given, said", [
    ("nowhere.py", "no such file (looked for in {here}); give a Python file (.py) or an installed module's name"),
    ("no_such_module", "no such file, nor an installed module of that name (looked for in {here})"),
    ("mine", "no such file; mine.py is there"),
    ("a folder", "a folder; give a Python file (.py) or an installed module's name"),
    ("json", "it registered no metric"),  # an installed module, run, with no metric in it
    ("twice", f"metric 'answers_directly' was registered by {EXAMPLE} too; give each metric one name"),
])
def test_a_source_that_is_not_one_is_told_what_to_give(given, said, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a folder").mkdir()
    (tmp_path / "mine.py").write_text("", encoding="utf-8")
    said = said.format(here=tmp_path)
    sources = [given]
    if given == "twice":
        shutil.copy(EXAMPLE, tmp_path / "copy.py")
        sources = [str(EXAMPLE), "copy.py"]
    assert main(["run", str(EXAMPLES), *(part for source in sources for part in ("--metrics-from", source)),
                 "--out", str(tmp_path / "out")]) == EXIT_USER
    error = capsys.readouterr().err
    assert error.startswith(f"localeval: error: --metrics-from {sources[-1]}: {said}"), error


def test_a_metric_that_raises_while_scoring_stops_the_run_naming_its_line_and_keeps_what_was_scored(
        tmp_path, tiny_judge, capsys):
    """A user's metric raising mid-run was a traceback through the engine, exit 1."""
    mine, out = tmp_path / "mine.py", tmp_path / "out"
    failing = 'user = (sample.nope if sample.id == "seed002-superbowl" else "") + f"Question'
    mine.write_text(EXAMPLE.read_text(encoding="utf-8").replace('user = f"Question', failing), encoding="utf-8")
    line = next(number for number, text in enumerate(mine.read_text(encoding="utf-8").splitlines(), 1)
                if "sample.nope" in text)
    assert main(["run", str(EXAMPLES), "--metrics-from", str(mine), "--metrics", "answers_directly", "--window", "1",
                 "--judge", str(tiny_judge), "--no-cache", "--quiet", "--out", str(out)]) == EXIT_USER
    error = capsys.readouterr().err
    assert error == (f"localeval: error: metric 'answers_directly' on sample seed002-superbowl failed: {mine}, line {line}: AttributeError: "
                     "'Sample' object has no attribute 'nope'; 1 sample saved in "
                     f"{out / 'results.jsonl'}, by the metric as it was; mend it and score again without --resume, "
                     "or into another --out\n")
    assert [json.loads(row)["id"] for row in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()] == [
        "seed001-einstein"]


def test_labels_give_a_metric_of_ones_own_a_score_from_0_to_1_and_correct_its_mean():
    """People's score of a sample for a metric of one's own is labels.<its name>; --labels (labels=) with such a
    metric was a KeyError traceback."""
    labeled = _labeled_for_mine({"dev-020": 0.0, "dev-021": True, "dev-028": 0.25, "dev-029": None})
    localeval.register_metric(_metric())

    def script(request):
        schema = json.loads(request.schema)
        if "v" in schema["properties"]:  # mine
            return {"v": 1}
        return {"verdicts": [{"sentence": n, "attributed": 1}
                             for n in range(1, len(schema["properties"]["verdicts"]["prefixItems"]) + 1)]}

    with pytest.warns(localeval.FewLabelsWarning, match=r"fewer than ten labeled samples correct mine \(3\)"):
        result = localeval.evaluate(labeled, metrics=["mine", "context_recall"], judge=ScriptedJudge(script),
                                    embedder=None, labels=labeled)
    summary = result.summary()
    assert summary["mine"]["mean"] == 1.0 and summary["mine"]["corrected"]["labeled"] == 3  # the null left out
    assert summary["mine"]["corrected"]["bias"] == pytest.approx(1 - (0.0 + 1.0 + 0.25) / 3)
    assert summary["context_recall"]["corrected"]["labeled"] == 4


@pytest.mark.parametrize("label, said", [
    (1.5, "field 'labels.mine': sample dev-020: expected a score from 0 to 1 (or true, false, null) for mine; got 1.5 "
          "(on another scale, rescale every label to 0-1: a rating from 1 to 5 as (rating - 1) / 4, a percentage as "
          "/ 100)"),
    (80, "for mine; got 80 (on another scale, rescale every label to 0-1"),
    (-1, "for mine; got -1"),
    ("yes", "expected a score from 0 to 1 (or true, false, null) for mine; got \"yes\""),
])
def test_a_label_of_ones_own_metric_that_is_no_score_is_refused_naming_the_record(label, said):
    labeled = _labeled_for_mine({"dev-020": label})
    localeval.register_metric(_metric())
    with pytest.raises(UserError, match=re.escape(said)):
        localeval.evaluate(labeled, metrics=["mine"], judge=ScriptedJudge(lambda r: {"v": 1}), embedder=None,
                           labels=labeled)


def test_bench_needs_a_metric_of_ones_own_labeled_on_every_sample(tmp_path):
    """run --labels may leave it out on some samples; bench compares every sample, so it may not."""
    from localeval.bench.labels import read_labeled

    localeval.register_metric(_metric())
    with pytest.raises(DataError, match=re.escape("field 'labels.mine': sample dev-020: missing: a metric of your own "
                                                  "is labeled with its name, a score from 0 to 1 (needed for mine;")):
        read_labeled(_labeled_for_mine({"dev-020": ...}), ["mine"])
    assert [item.human_score("mine") for item in read_labeled(_labeled_for_mine({"dev-020": ...}), ["mine"],
                                                                partial=True)] == [None, 0.5, 0.5, 0.5]


def _labeled_for_mine(scores: dict) -> Path:
    """tests/data/labeled_small.jsonl with labels.mine set to each sample's score in `scores` (... : left out)."""
    records = [json.loads(line) for line in (ROOT / "tests" / "data" / "labeled_small.jsonl").read_text(
        encoding="utf-8").splitlines()]
    for record in records:
        if scores.get(record["id"], 0.5) is not ...:
            record["labels"]["mine"] = scores.get(record["id"], 0.5)
    path = Path(tempfile.mkdtemp()) / "labeled.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path

def test_reasons_and_scoring_are_recorded_only_for_a_metric_that_reads_them(tmp_path, tiny_judge):
    """--scoring soft --reasons off were recorded as applied to the example metric, which scores hard with a reason
    whatever they say; the report marked its score "(soft)" (a probe)."""
    out = tmp_path / "out"
    assert main(["run", str(EXAMPLES), "--metrics-from", str(EXAMPLE), "--metrics", "answers_directly,context_recall",
                 "--scoring", "soft", "--reasons", "off", "--limit", "1", "--judge", str(tiny_judge), "--no-cache",
                 "--quiet", "--out", str(out)]) == EXIT_OK
    settings = json.loads((out / "summary.json").read_text(encoding="utf-8"))["settings"]
    assert settings["scoring"] == {"context_recall": "soft"} and settings["reasons"] == {"context_recall": False}

    class Reads(METRICS["answers_directly"]):
        name, uses_scoring, asks_reasons = "reads_them", True, True

    localeval.register_metric(Reads)
    assert (Reads.uses_scoring, Reads.asks_reasons, Reads.has_example) == (True, True, False)
    assert METRICS["context_recall"].uses_scoring and METRICS["context_recall"].asks_reasons  # built-ins untouched


def test_a_metric_loaded_that_metrics_does_not_name_is_warned_of_and_kept_in_the_summary(tmp_path, tiny_judge,
                                                                                         capsys):
    out = tmp_path / "out"
    assert main(["run", str(EXAMPLES), "--metrics-from", str(EXAMPLE), "--metrics", "context_recall", "--limit", "1",
                 "--judge", str(tiny_judge), "--no-cache", "--out", str(out)]) == EXIT_OK
    assert ("localeval: warning: --metrics-from registered answers_directly, which --metrics does not name: add it to "
            "--metrics (or give --metrics all) to score it\n") in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert list(summary["metrics"]) == ["context_recall"] and "metrics_from" not in json.loads(
        (out / "run.json").read_text(encoding="utf-8"))
    assert any("which --metrics does not name" in warning for warning in summary["warnings"])


def test_bench_measures_a_judge_on_a_metric_of_ones_own_against_peoples_scores_and_resume_knows_its_code(
        tmp_path, tiny_judge, capsys):
    """bench could compare the built-in metrics only: 'which judge agrees best with people' had no answer for a
    metric of one's own. People's score of a sample is labels.<name>; the judge runs in a child process of its
    own, where the file is loaded again."""
    labeled, out, mine = _labeled_for_mine({"dev-020": 1.0, "dev-021": 0.0, "dev-028": 1, "dev-029": None}), \
        tmp_path / "bench", tmp_path / "mine.py"
    mine.write_text(EXAMPLE.read_text(encoding="utf-8").replace('"answers_directly"', '"mine"'), encoding="utf-8")
    # beside it, a module named as a standard one: it replaced that in the judge's spawned process, which then died
    (tmp_path / "copy.py").write_text("raise ImportError('the standard copy module was replaced')\n", encoding="utf-8")
    command = ["bench", str(labeled), "--judges", str(tiny_judge), "--metrics-from", str(mine), "--metrics",
               "mine,context_recall", "--out", str(out), "--quiet"]
    assert main(command) == EXIT_OK, capsys.readouterr().err
    bench = json.loads((out / "bench.json").read_text(encoding="utf-8"))
    (judge,) = bench["judges"]
    compared = judge["metrics"]["mine"]["scores"]
    assert (compared["samples"], compared["human_mean"]) == (3, pytest.approx(2 / 3))  # the null label left out
    assert "scorings" not in judge["metrics"]["mine"] and "scorings" in judge["metrics"]["context_recall"]
    assert [row["mine"]["human"] for row in judge["per_sample"]] == [1.0, 0.0, 1.0, None]
    assert bench["settings"]["metrics_from"] == {"mine": load_metric_sources([str(mine)])[0].sha256}
    assert "mine" in (out / "bench.md").read_text(encoding="utf-8")
    assert "labels.mine null (dev-029)" in capsys.readouterr().err
    mine.write_text(mine.read_text(encoding="utf-8").replace("a short reason", "one short reason"), encoding="utf-8")
    assert main([*command, "--resume"]) == EXIT_USER
    assert "metrics_from.mine" in capsys.readouterr().err
    # a metric loaded and not named is said first, before what the labels lack for the default metrics (a probe
    # read "localeval reads none of 'mine'" for each record)
    assert main(["bench", str(labeled), "--judges", str(tiny_judge), "--metrics-from", str(mine), "--out",
                 str(tmp_path / "default"), "--quiet"]) == EXIT_OK
    assert capsys.readouterr().err.startswith(
        "localeval: warning: --metrics-from registered mine, which --metrics does not name")


def _split_example(folder: Path, helper: str) -> Path:
    """The example metric with its instructions in a module of their own beside it, imported by name."""
    example = EXAMPLE.read_text(encoding="utf-8")
    wording = re.search(r"^SYSTEM = \(.*?\)\n", example, flags=re.DOTALL | re.MULTILINE).group(0)
    (folder / f"{helper}.py").write_text(wording, encoding="utf-8")
    mine = folder / "mine.py"
    mine.write_text(example.replace(wording, f"from {helper} import SYSTEM\n"), encoding="utf-8")
    return mine


def test_the_code_digest_covers_the_modules_beside_the_file_and_not_where_it_is_or_the_packages_it_uses(tmp_path):
    """--resume checked the named file's bytes alone: an edited helper beside it mixed two versions' scores (a
    review). A virtual environment inside the metric's folder holds installed packages, not the metric's code."""
    from localeval.metrics.sources import own_modules

    site = tmp_path / ".venv" / "site-packages"
    (site / "fakelib").mkdir(parents=True)
    (site / "fakelib" / "__init__.py").write_text("VERSION = 1\n", encoding="utf-8")
    sys.path.append(str(site))  # as the environment's own entry is (conftest restores sys.path)
    mine = _split_example(tmp_path, "wording_for_digest")
    mine.write_text("import fakelib\n" + mine.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_metric_sources([str(EXAMPLE)])[0].sha256 == hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()  # alone
    (first,) = load_metric_sources([str(mine)])
    assert {module.__name__ for module in own_modules()} >= {"wording_for_digest"}
    assert "fakelib" not in {module.__name__ for module in own_modules()}
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path, moved, ignore=shutil.ignore_patterns(".venv", "__pycache__"))
    sys.path.remove(str(tmp_path))  # as in another process, which has only the moved folder
    for name in ("wording_for_digest", "fakelib"):
        sys.modules.pop(name, None)
    assert load_metric_sources([str(moved / "mine.py")])[0].sha256 == first.sha256  # the same code elsewhere
    sys.modules.pop("wording_for_digest")
    helper = moved / "wording_for_digest.py"
    helper.write_text(helper.read_text(encoding="utf-8").replace("short reason", "brief reason"), encoding="utf-8")
    assert load_metric_sources([str(moved / "mine.py")])[0].sha256 != first.sha256


def test_a_package_is_named_from_its_own_folder_and_its_failures_are_one_line(tmp_path, monkeypatch):
    """`--metrics-from mypkg` from the project's root was 'a folder'; a package whose __init__ failed was a
    traceback, or 'no such module' for a dependency it lacks (a review)."""
    package = tmp_path / "evalpkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "checks.py").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (source,) = load_metric_sources(["evalpkg_for_test.checks"])
    assert source.metrics == ("answers_directly",) and source.file == str(package / "checks.py")
    with pytest.raises(UserError, match=re.escape("--metrics-from evalpkg_for_test.checks: given twice (as "
                                                  "evalpkg_for_test.checks too); give each source once")):
        load_metric_sources(["evalpkg_for_test.checks", "evalpkg_for_test.checks"])
    with pytest.raises(UserError, match=re.escape(f"--metrics-from {EXAMPLE}: given twice (as {EXAMPLE} too)")):
        load_metric_sources([str(EXAMPLE), str(EXAMPLE)])
    broken = tmp_path / "brokenpkg_for_test"
    broken.mkdir()
    (broken / "__init__.py").write_text("import not_installed_anywhere\n", encoding="utf-8")
    (broken / "checks.py").write_text("", encoding="utf-8")
    with pytest.raises(UserError) as refused:
        load_metric_sources(["brokenpkg_for_test.checks"])
    assert str(refused.value) == (f"--metrics-from brokenpkg_for_test.checks: {broken / '__init__.py'}, line 1: "
                                  "ModuleNotFoundError: No module named 'not_installed_anywhere'")


def test_the_documented_metric_that_asks_no_model_loads_no_judge_and_is_not_warned_of_as_a_weak_ones(tmp_path, capsys):
    """A metric that asks nothing needed a dead `yield` after its `return` (a probe guessed it), and its scores were
    said to be a weak judge's, 'a check of the pipeline'."""
    block = next(block for block in _code_blocks() if "class ShortEnough" in block)
    mine, out = tmp_path / "short.py", tmp_path / "out"
    mine.write_text("import localeval\nfrom localeval import Metric, MetricResult\n\n" + block, encoding="utf-8")
    assert main(["run", str(EXAMPLES), "--metrics-from", str(mine), "--metrics", "short_enough", "--no-cache",
                 "--out", str(out)]) == EXIT_OK  # the default judge, known to agree poorly
    assert "agrees poorly" not in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"]["short_enough"]["scored"] == 8 and summary["timings"]["judge_load_seconds"] == 0.0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(row["short_enough"] == float(row["evidence"]["short_enough"]["words"] <= 60) for row in rows)
    words = rows[0]["evidence"]["short_enough"]["words"]  # its evidence, its own keys, in the report too
    assert f"<div class='reason'>words: {words}</div>" in (out / "report.html").read_text(encoding="utf-8")
    mine.write_text(mine.read_text(encoding="utf-8").replace("words = len(", "words = 1 / 0 + len("), encoding="utf-8")
    assert main(["run", str(EXAMPLES), "--metrics-from", str(mine), "--metrics", "short_enough", "--out",
                 str(tmp_path / "failed")]) == EXIT_USER
    assert (f"localeval: error: metric 'short_enough' on sample seed001-einstein failed: {mine}, line "
            in capsys.readouterr().err)


def test_a_generator_behind_a_decorator_or_a_helper_is_run_as_one():
    """A steps wrapped by functools.wraps, or returning a helper's generator, looked like a metric that asks nothing,
    and failed as 'must return a MetricResult; it returned generator' (a review)."""
    import functools

    def logged(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return function(*args, **kwargs)
        return wrapper

    def asking(self, sample, language):
        (answer,) = yield [JudgeRequest.build("s", "u", VERDICT, 8)]
        return MetricResult(float(answer.data["v"]))

    for steps, name in [(logged(asking), "decorated"), (lambda self, sample, language: asking(self, sample, language),
                                                        "by_a_helper")]:
        localeval.register_metric(_metric(name=name, steps=steps))
        result = localeval.evaluate([SAMPLE], metrics=[name], judge=ScriptedJudge(lambda r: {"v": 1}), embedder=None)
        assert result[name] == [1.0]
    assert METRICS["decorated"].asks_a_model()


def test_each_source_is_credited_its_own_metrics_and_a_shared_helper_is_in_both_digests_whichever_runs_first(
        tmp_path, monkeypatch):
    """A package whose __init__ imports its modules credited both metrics to the first named, then refused the
    second as a clash; a helper two files share was in the digest of the first to run only (a review)."""
    package = tmp_path / "twopkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("from . import first, second\n", encoding="utf-8")
    for module in ("first", "second"):
        (package / f"{module}.py").write_text(EXAMPLE.read_text(encoding="utf-8").replace(
            '"answers_directly"', f'"{module}_metric"'), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sources = load_metric_sources(["twopkg_for_test.first", "twopkg_for_test.second"])
    assert [source.metrics for source in sources] == [("first_metric",), ("second_metric",)]

    def both(order: list[str]) -> dict[str, str]:
        for name in [name for name in sys.modules if name == "shared_for_test" or name.startswith("localeval_metrics_from_")]:
            del sys.modules[name]
        return {source.given: source.sha256 for source in load_metric_sources(order)}

    files = tmp_path / "files"
    files.mkdir()
    (files / "shared_for_test.py").write_text("LIMIT = 60\n", encoding="utf-8")
    for name in ("a", "b"):
        (files / f"{name}.py").write_text("import shared_for_test\n" + EXAMPLE.read_text(encoding="utf-8").replace(
            '"answers_directly"', f'"{name}_metric"'), encoding="utf-8")
    a, b = str(files / "a.py"), str(files / "b.py")
    assert both([a, b]) == both([b, a])
    assert both([a, b])[b] != hashlib.sha256((files / "b.py").read_bytes()).hexdigest()  # the helper is in it


def test_a_judges_process_refuses_a_metric_file_edited_since_bench_started(tmp_path):
    """Each judge's process runs the file again: one edited while earlier judges ran scored the later judges with
    other code than bench.json's digest records, unsaid (a leftover of the last stop)."""
    from localeval.bench.worker import JudgeJob, run_judge

    mine = tmp_path / "mine.py"
    mine.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    sources = tuple(load_metric_sources([str(mine)]))
    mine.write_text(mine.read_text(encoding="utf-8").replace("a short reason", "one short reason"), encoding="utf-8")
    job = JudgeJob(ScriptedJudge(lambda request: {}), samples=(), metrics=("answers_directly",), settings={}, metric_sources=sources)
    run = run_judge(job)
    assert run.metric_failed and run.error.startswith(
        f"--metrics-from {mine}: its code changed while bench ran (sha256 {sources[0].sha256[:12]} when bench started")
    mine.write_text("x = (\n", encoding="utf-8")  # an edit that no longer loads: every judge would fail on it
    run = run_judge(job)
    assert run.metric_failed and run.error.startswith(f"--metrics-from {mine}: {mine}, line 1: SyntaxError")
    assert run.error.endswith("(it loaded when bench started: did it change while bench ran?)")


def test_bench_stops_at_a_metric_that_fails_and_refuses_to_calibrate_metrics_of_ones_own_alone(tmp_path, tiny_judge,
                                                                                                capsys):
    """A metric's bug failed every judge in turn, each after loading, then 'no judge finished', exit 1 (a bug of
    localeval's); --calibrate of metrics of one's own alone said no threshold had passed (a review)."""
    labeled, mine = _labeled_for_mine({}), tmp_path / "mine.py"
    mine.write_text("import localeval\nfrom localeval import Metric, MetricResult\n\n\n@localeval.register_metric\n"
                    "class Mine(Metric):\n    name = 'mine'\n    description = 'd'\n    requires = ('response',)\n\n"
                    "    def steps(self, sample, language):\n        return MetricResult(1 / 0)\n", encoding="utf-8")
    command = ["bench", str(labeled), "--judges", f"{tiny_judge},smollm2-135m-instruct", "--metrics-from", str(mine),
               "--metrics", "mine", "--out", str(tmp_path / "bench")]
    assert main(command) == EXIT_USER
    error = capsys.readouterr().err
    assert f"localeval: error: metric 'mine' on sample dev-020 failed: {mine}, line 12: ZeroDivisionError: " \
           "division by zero; the bench stopped at judge 1/2" in error
    assert "judge 1/2" in error.splitlines()[0] and "judge 2/2" not in error
    assert main([*command, "--calibrate"]) == EXIT_USER
    assert "--calibrate fits thresholds on the built-in metrics' verdicts" in capsys.readouterr().err
