"""Coming from ragas: its data, its dataset objects, its result columns and its metric names work here.

Neither `datasets` nor `ragas` is installed (nor a dependency), so their dataset classes are
played by small stand-ins below that offer the same methods localeval may call; pandas is real.
Scores come from a scripted judge and fixed embeddings: no model is loaded.
"""

from __future__ import annotations

import inspect
import re
import json
import subprocess
import sys
import uuid
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pydantic
import pytest

import localeval
from localeval import NothingScoredWarning
from localeval.api import _per_metric, as_samples
from localeval.data import IgnoredFieldsWarning, MissingIdsWarning
from localeval.engine.limits import BatchLimits
from localeval.engine.scripted import LookupEmbedder, ScriptedJudge
from localeval.errors import DataError, LocalevalWarning, UserError
from localeval.metrics import METRICS, JudgeSettings, resolve_metrics
from localeval.tuning import metric_settings
from localeval.samples import Sample
from localeval.scoring_rules import SCORING_RULES
from localeval.text import split_sentences

QUESTION = "What is the capital of France?"
CONTEXTS = ["Paris is the capital of France.", "It lies on the Seine."]
# ragas 0.1's column names, ground_truths a list of strings
RAGAS_01 = {"question": QUESTION, "contexts": CONTEXTS, "answer": "Paris.",
            "ground_truths": ["Paris is the capital of France", "It lies on the Seine!"]}
# ragas 0.2's names, as EvaluationDataset.to_list() gives them
RAGAS_02 = {"user_input": QUESTION, "retrieved_contexts": CONTEXTS, "response": "Paris.",
            "reference": "Paris is the capital of France."}


class HFDatasetStandIn:
    """Plays datasets.Dataset: to_list() gives the rows as dicts, to_pandas() a DataFrame."""

    def __init__(self, rows):
        self.rows = rows

    def to_list(self):
        return [dict(row) for row in self.rows]

    def to_pandas(self):
        return pd.DataFrame(self.rows)


class EvaluationDatasetStandIn:
    """Plays ragas's EvaluationDataset: iterating gives sample objects (not dicts), and to_list()
    gives dicts without the fields a sample leaves unset, as ragas does."""

    def __init__(self, rows):
        self.samples = [SimpleNamespace(**row) for row in rows]

    def __iter__(self):
        return iter(self.samples)

    def to_list(self):
        return [{k: v for k, v in vars(sample).items() if v is not None} for sample in self.samples]


class PydanticEvaluationDatasetStandIn(pydantic.BaseModel):
    """ragas 0.2's EvaluationDataset is a pydantic model with model_dump, which a check for one record alone
    took it for (a review)."""

    samples: list[dict]

    def __init__(self, rows):
        super().__init__(samples=rows)

    def __iter__(self):
        return iter(self.samples)

    def to_list(self):
        return [{k: v for k, v in sample.items() if v is not None} for sample in self.samples]


def every_verdict_one(asked: list):
    """A judge script that keeps each request and answers every verdict 1 (the keys are read off the schema)."""

    def answer(request):
        asked.append(request)
        items = json.loads(request.schema)["properties"]["verdicts"]["prefixItems"]
        return {"verdicts": [{key: spec.get("const", 1 if "enum" in spec else "because")
                              for key, spec in item["properties"].items()} for item in items]}

    return answer


def scripted_evaluate(data, metrics, asked=None):
    return localeval.evaluate(data, metrics, judge=ScriptedJudge(every_verdict_one([] if asked is None else asked)),
                              embedder=LookupEmbedder({}, default=[1.0, 0.0]), device="cpu", cache=False)


# --- 1. ragas 0.1's ground_truths ------------------------------------------------------------


def test_ground_truths_become_one_reference_with_each_string_a_sentence():
    (sample,) = as_samples([RAGAS_01])
    assert sample.reference == "Paris is the capital of France. It lies on the Seine!"
    assert split_sentences(sample.reference, "en") == ("Paris is the capital of France.", "It lies on the Seine!")
    assert sample.user_input == QUESTION and sample.retrieved_contexts == tuple(CONTEXTS)


def test_ragas_01_data_scores_context_recall_instead_of_null():
    asked = []
    result = scripted_evaluate([RAGAS_01], ["context_recall"], asked)
    assert result.rows()[0]["context_recall"] == 1.0
    (request,) = asked
    assert len(json.loads(request.schema)["properties"]["verdicts"]["prefixItems"]) == 2  # one per ground truth


@pytest.mark.parametrize("other", ["reference", "ground_truth"])
def test_ground_truths_beside_another_reference_is_an_error(other):
    with pytest.raises(DataError) as info:
        as_samples([{**RAGAS_01, other: "Paris."}])
    assert "record 1" in str(info.value)
    assert "'ground_truths'" in str(info.value) and f"'{other}'" in str(info.value)


def test_ground_truths_must_be_a_list():
    with pytest.raises(DataError, match=r"record 1, field 'ground_truths': expected a list of strings, got a string"):
        as_samples([{**RAGAS_01, "ground_truths": "Paris is the capital."}])


# --- 2. ignored fields are reported ---------------------------------------------------------------


def test_fields_read_under_no_name_are_warned_once_with_their_counts():
    rows = [{**RAGAS_02, "episode_done": True, "rubrics": {}}, {**RAGAS_02, "episode_done": False}]
    with pytest.warns(IgnoredFieldsWarning) as caught:
        as_samples(rows)
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith("samples: ignored fields")
    assert "'episode_done' (2 of 2 records), 'rubrics' (1 of 2 records)" in message


def test_evaluate_warns_of_ignored_fields_at_the_callers_line():
    """It pointed at localeval/data.py, where a notebook user cannot act on it."""
    with pytest.warns(IgnoredFieldsWarning) as caught:
        localeval.evaluate([{**RAGAS_02, "notes": "x"}], ["answer_supported_precision"],
                           judge=ScriptedJudge(every_verdict_one([])), cache=False)
    assert [warning.filename for warning in caught if warning.category is IgnoredFieldsWarning] == [__file__]


def test_a_misspelt_field_made_an_error_stops_the_call_before_any_judge_is_asked():
    """The README's recipe for a service that answers 400 to a misspelt field: the warning, made an error
    by the public name, raises out of evaluate() (a notebook probe found the name not exported)."""
    asked = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", localeval.IgnoredFieldsWarning)
        with pytest.raises(localeval.IgnoredFieldsWarning, match="ignored fields.*'responce'"):
            localeval.evaluate([{"user_input": QUESTION, "retrieved_contexts": CONTEXTS, "responce": "Paris."}],
                               ["answer_supported_precision"], judge=ScriptedJudge(asked.append), cache=False)
    assert asked == []


def test_a_sample_made_with_a_list_of_contexts_holds_a_tuple_and_hashes():
    sample = Sample(id="1", user_input=QUESTION, retrieved_contexts=list(CONTEXTS), response="Paris.")
    assert sample.retrieved_contexts == tuple(CONTEXTS)
    assert hash(sample) == hash(Sample(id="1", user_input=QUESTION, retrieved_contexts=tuple(CONTEXTS), response="Paris."))


def test_a_sample_made_with_an_array_or_a_series_of_contexts_holds_a_tuple_and_is_scored():
    """A frame's cell holds a numpy array (a Parquet column of lists) and a row's column a Series: a Sample made
    with either could not be hashed, and evaluate() refused it as "a ndarray" (a review)."""
    import numpy as np
    import pandas as pd

    plain = Sample(id="1", user_input=QUESTION, retrieved_contexts=tuple(CONTEXTS), response="Paris.")
    for given in (np.array(CONTEXTS), pd.Series(CONTEXTS)):
        sample = Sample(id="1", user_input=QUESTION, retrieved_contexts=given, response="Paris.")
        assert sample == plain and hash(sample) == hash(plain)
        assert all(type(chunk) is str for chunk in sample.retrieved_contexts)
    asked = []
    result = scripted_evaluate([Sample(id="1", user_input=QUESTION, retrieved_contexts=np.array(CONTEXTS),
                                       response="Paris.")], ["context_relevance"], asked)
    assert result["context_relevance"] == [1.0]
    assert all(chunk in asked[0].messages[-1][1] for chunk in CONTEXTS)


class NodeWithoutText:
    """LlamaIndex's NodeWithScore of a node that holds no text: its text property raises."""
    metadata: dict = {}

    @property
    def text(self):
        raise ValueError("Node must be a TextNode to get text.")


@pytest.mark.parametrize("name", ["page_content", "text", "content"], ids=["langchain", "llamaindex", "haystack"])
def test_a_retrievers_document_objects_are_read_by_their_text(name):
    """Retrievers give document objects (LangChain's page_content, LlamaIndex's text, Haystack's content, with
    metadata): passed as they are, each is its text, as a string would be."""
    documents = [SimpleNamespace(**{name: text, "metadata": {"source": "wiki"}}) for text in CONTEXTS]
    (sample,) = as_samples([{"user_input": QUESTION, "retrieved_contexts": documents, "response": "Paris."}])
    assert sample.retrieved_contexts == tuple(CONTEXTS)


@pytest.mark.parametrize(("record", "said"), [
    ({"response": SimpleNamespace(content="Paris.", type="ai")},  # LangChain's AIMessage
     "field 'response': expected a string, got a SimpleNamespace; it holds its text as 'content': give that"),
    ({"retrieved_contexts": [(SimpleNamespace(page_content="Paris."), 0.82)]},  # similarity_search_with_score
     "expected a list of strings, got a list at item 1 (a document and its score? give the documents alone)"),
    ({"id": uuid.UUID(int=1)}, "field 'id': expected a non-empty string or a whole number, got a UUID"),
], ids=["message", "document-and-score", "uuid"])
def test_what_a_framework_hands_over_in_place_of_a_text_is_named(record, said):
    """A LangChain probe: an AIMessage as the response, (document, score) pairs as the contexts, a run_id."""
    with pytest.raises(UserError) as refused:
        as_samples([{"user_input": QUESTION, "retrieved_contexts": CONTEXTS, "response": "Paris.", **record}])
    assert str(refused.value).endswith(said)


def test_a_document_whose_text_cannot_be_read_is_the_datas_error_not_a_traceback():
    """A service answers 400 to a UserError; the property's ValueError would have been a 500."""
    with pytest.raises(UserError, match=r"got a NodeWithoutText at item 1 \(a retrieved document is read by its text"):
        as_samples([{"user_input": QUESTION, "retrieved_contexts": [NodeWithoutText()], "response": "Paris."}])


def test_every_name_localeval_reads_loads_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredFieldsWarning)
        as_samples([{**RAGAS_01, "id": "a", "language": "en", "labels": {}}, {**RAGAS_02, "id": "b"}])


def test_the_command_line_shows_the_warning_and_the_metric_hint(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({**RAGAS_02, "notes": "x"}) + "\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "localeval", "run", str(data), "--metrics", "answer_relevancy",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    assert "localeval: warning:" in run.stderr and "'notes' (1 of 1 records)" in run.stderr
    assert "warnings.warn" not in run.stderr  # one line, as errors are, not Python's two
    assert "unknown metric 'answer_relevancy'; did you mean 'response_relevancy'" in run.stderr


# --- 3. what evaluate() takes ----------------------------------------------------------------------


def test_a_dataframe_with_missing_values_and_legacy_names():
    frame = pd.DataFrame({"id": [1, 2], "question": [QUESTION, "Second?"], "contexts": [CONTEXTS, None],
                          "answer": ["Paris.", np.nan], "ground_truth": [None, "Lyon."]})
    assert as_samples(frame) == [
        Sample(id="1", user_input=QUESTION, retrieved_contexts=tuple(CONTEXTS), response="Paris."),
        Sample(id="2", user_input="Second?", reference="Lyon."),
    ]


def test_integer_ids_that_pandas_made_floats_because_one_is_missing_are_read_as_integers():
    frame = pd.DataFrame([{"id": 7, "user_input": QUESTION}, {"id": None, "user_input": "Second?"}])
    assert frame["id"].dtype == float  # 7.0 and NaN
    assert [sample.id for sample in as_samples(frame)] == ["7", "2"]  # the missing one: its record number


def test_a_dataframe_read_from_parquet_holds_lists_as_numpy_arrays(tmp_path):
    pytest.importorskip("pyarrow")
    pd.DataFrame([RAGAS_02]).to_parquet(tmp_path / "data.parquet")
    frame = pd.read_parquet(tmp_path / "data.parquet")
    assert isinstance(frame["retrieved_contexts"][0], np.ndarray)
    assert as_samples(frame) == [Sample(id="1", **{**RAGAS_02, "retrieved_contexts": tuple(CONTEXTS)})]


def test_a_bad_dataframe_row_is_placed_by_record():
    frame = pd.DataFrame({"user_input": [QUESTION, QUESTION], "retrieved_contexts": [CONTEXTS, "one chunk"]})
    with pytest.raises(DataError, match=r"^DataFrame, record 2, field 'retrieved_contexts': expected a list"):
        as_samples(frame)


@pytest.mark.parametrize("stand_in", [HFDatasetStandIn, EvaluationDatasetStandIn, PydanticEvaluationDatasetStandIn])
def test_dataset_objects_are_read_through_to_list(stand_in):
    samples = as_samples(stand_in([RAGAS_02, {**RAGAS_02, "reference": None}]))
    assert samples == [Sample(id="1", **{**RAGAS_02, "retrieved_contexts": tuple(CONTEXTS)}),
                       Sample(id="2", **{**RAGAS_02, "retrieved_contexts": tuple(CONTEXTS), "reference": None})]


def test_a_dataset_object_error_names_its_class():
    with pytest.raises(DataError, match=r"^EvaluationDatasetStandIn, record 1, field 'response'"):
        as_samples(EvaluationDatasetStandIn([{**RAGAS_02, "response": ["Paris."]}]))


@pytest.mark.parametrize("data, said", [
    ("What is the capital of France?", "no data file 'What is the capital of France?'"),
    ({"question": [QUESTION], "answer": ["Paris."]}, "pandas.DataFrame(columns)"),
    (42, "cannot read samples from a number"),
    # one row of a frame read its values as records: "expected a JSON object, got an int64" (a probe)
    (pd.DataFrame([{**RAGAS_02, "id": 7}]).iloc[0], "got a pandas Series (a DataFrame's row, column or index)"),
    (pd.DataFrame([{**RAGAS_02, "id": 7}]).columns, "got a pandas Index (a DataFrame's row, column or index)"),
])
def test_anything_else_is_one_error_naming_what_is_accepted(data, said):
    with pytest.raises(UserError) as info:
        as_samples(data)
    message = str(info.value)
    assert said in message and not isinstance(info.value, DataError)
    for accepted in ("dataset path", "list of dicts, Samples, pydantic models or dataclasses", "pandas DataFrame", "datasets.Dataset",
                     "ragas EvaluationDataset"):
        assert accepted in message


def test_a_string_that_looks_like_a_path_is_still_read_as_one(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        as_samples(str(tmp_path / "missing.jsonl"))


# --- 4. to_pandas ----------------------------------------------------------------------------------


def test_each_row_has_the_language_its_sample_was_split_in_for_means_by_language():
    """A team scoring several languages had to join the input file back to get means by language (a probe)."""
    records = [{**RAGAS_02, "id": "a", "language": "de-DE"}, {**RAGAS_02, "id": "b"}]
    result = scripted_evaluate(records, ["context_recall"])
    assert [row["language"] for row in result.rows()] == ["de", "en"]
    assert sorted(result.to_pandas().groupby("language").mean(numeric_only=True).index) == ["de", "en"]


def test_to_pandas_has_the_inputs_beside_the_scores_indexed_by_id():
    records = [{**RAGAS_02, "id": "a"}, {**RAGAS_02, "id": "b", "reference": None}]  # a frame's: its own index
    table = scripted_evaluate(records, ["context_recall", "answer_supported_precision"]).to_pandas()
    assert list(table.columns) == ["user_input", "retrieved_contexts", "response", "reference", "language",
                                   "context_recall", "answer_supported_precision"]
    assert table["language"].tolist() == ["en", "en"]  # means by language: table.groupby("language")
    assert list(table.index) == ["a", "b"] and table.index.name == "id"
    assert table.loc["a", "retrieved_contexts"] == CONTEXTS
    assert table.loc["a", "context_recall"] == 1.0 and table.loc["b", "answer_supported_precision"] == 1.0
    assert pd.isna(table.loc["b", "reference"]) and pd.isna(table.loc["b", "context_recall"])


def test_a_score_no_sample_could_give_is_a_float_column_of_nan():
    """It was a column of None (object), beside float64 ones."""
    frame = pd.DataFrame([{**RAGAS_02, "id": "a", "reference": None}])
    with pytest.warns(NothingScoredWarning, match="context_recall scored no sample"):
        table = scripted_evaluate(frame, ["context_recall", "answer_supported_precision"]).to_pandas()
    assert str(table["context_recall"].dtype) == str(table["answer_supported_precision"].dtype) == "float64"
    assert table["context_recall"].isna().all()
    # a metric with sub-scores that no sample gave: their columns are there, null (a KeyError once)
    unscored = {k: v for k, v in RAGAS_02.items() if k != "retrieved_contexts"}
    with pytest.warns(NothingScoredWarning, match="context_relevance scored no sample"):
        table = scripted_evaluate(pd.DataFrame([unscored]), ["context_relevance"]).to_pandas()
    assert table["context_relevance"].isna().all() and table["context_relevance_chunks"].isna().all()
    assert str(table["context_relevance_chunks"].dtype) == "float64"
    assert table["context_relevance_per_chunk"].isna().all()


def test_a_score_by_name_is_every_sample_s_in_order_as_ragas_gives_it():
    """`result["context_recall"]` was a TypeError ("not subscriptable"): ragas's result gives the list."""
    records = [{**RAGAS_02, "id": "b"}, {**RAGAS_02, "id": "a", "reference": None}]
    result = scripted_evaluate(records, ["context_recall", "context_supported_precision"])
    assert result["context_recall"] == [1.0, None]
    assert result["context_supported_precision_rank_weighted"] == list(
        result.to_pandas()["context_supported_precision_rank_weighted"])


@pytest.mark.parametrize("name, said", [
    ("context_recal", "did you mean 'context_recall'?"),
    # ragas's name: localeval's is said, and that it was not scored ("did you mean" offered a name that fails too)
    ("answer_relevancy", "'answer_relevancy' is ragas's name for localeval's 'response_relevancy', not scored in this "
                         "call, whose scores are context_recall"),
    ("faithfulness", "'faithfulness' was not scored in this call, whose scores are context_recall"),
    (0, "give a score's name, one of: context_recall; got 0"),
])
def test_a_name_that_is_not_a_score_says_which_are(name, said):
    result = scripted_evaluate([RAGAS_02], ["context_recall"])
    with pytest.raises(KeyError) as info:
        result[name]
    assert isinstance(info.value, UserError) and said in str(info.value)
    assert str(info.value) == info.value.args[0]  # not quoted, as a KeyError's message is


def test_a_result_is_not_a_sequence_of_scores():
    with pytest.raises(TypeError, match="not iterable"):
        list(scripted_evaluate([RAGAS_02], ["context_recall"]))


@pytest.mark.parametrize("index", [pd.RangeIndex(3), pd.Index(["q-a", "q-b", "q-c"], name="question"),
                                   pd.Index([10, 20, 30]), pd.RangeIndex(1, 4)])
def test_samples_from_a_frame_without_ids_come_back_on_its_own_index(index):
    """Their ids are their numbers (1, 2, 3), which lined up with no default index: a join gave NaN."""
    frame = pd.DataFrame([RAGAS_02, {**RAGAS_02, "reference": None}, RAGAS_02], index=index)
    table = scripted_evaluate(frame, ["context_recall"]).to_pandas()
    assert table.index.equals(frame.index) and table.index.name == frame.index.name
    assert list(table["id"]) == ["1", "2", "3"]
    joined = frame.join(table[["context_recall"]])
    assert list(joined["context_recall"].isna()) == [False, True, False]
    with pytest.warns(IgnoredFieldsWarning):  # the scores are no inputs; the id column is the ids
        assert [sample.id for sample in as_samples(table)] == ["1", "2", "3"]


def test_a_frame_whose_index_repeats_a_label_gets_the_ids_as_index():
    """A join on a repeated label pairs each of its rows with every other: the ids stay the index."""
    frame = pd.DataFrame([RAGAS_02, RAGAS_02, RAGAS_02], index=[0, 0, 1])
    table = scripted_evaluate(frame, ["context_recall"]).to_pandas()
    assert list(table.index) == ["1", "2", "3"] and table.index.name == "id"


def test_a_result_keeps_what_the_call_warned_of_as_summary_json_does():
    """A notebook's warnings filter may hide them; a run's summary.json keeps them, and now the result."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = scripted_evaluate([{**RAGAS_02, "source": "wiki"}], ["context_recall"])
    (warning,) = result.details["warnings"]
    assert warning.startswith("warning: samples: ignored fields, which localeval does not read: 'source'")
    details = scripted_evaluate([RAGAS_02], ["context_recall"]).details
    assert details["warnings"] == []
    # plain JSON, as summary.json's: the timings were a dataclass, which json.dumps refused (a notebook probe)
    assert json.loads(json.dumps(details))["timings"]["judge_requests"] == 1
    assert details["scoring_rules"] == SCORING_RULES  # as summary.json records them: two calls compare under one


def test_a_result_shows_itself_in_a_line_not_its_evidence():
    """A notebook cell ending in the result printed every sample's evidence: 11 kB for 20 samples."""
    result = scripted_evaluate([RAGAS_02] * 20 + [{**RAGAS_02, "reference": None}],
                               ["context_recall", "answer_supported_precision"])
    assert repr(result) == ("<EvaluationResult: 21 samples; means: context_recall 1.000 (1 null), "
                            "answer_supported_precision 1.000>")
    # a notebook's display: the line and run's table of means and intervals, escaped; len() is the samples
    shown = result._repr_html_()
    assert shown.startswith("<pre>&lt;EvaluationResult: 21 samples;") and shown.endswith("</pre>")
    assert re.search(r"^context_recall\s+1\.000\s+\[1\.000, 1\.000\]\s+20\s+1$", shown, re.M), shown
    assert len(result) == 21


@pytest.mark.parametrize("as_index", [False, True])
def test_a_frames_integer_ids_stay_integers_so_a_join_on_them_matches(as_index):
    """Ids are strings inside; an int id column joined against them raised pandas' "merge on int64 and
    str columns", the README's own advice (join on the id) included."""
    frame = pd.DataFrame([{**RAGAS_02, "id": 101}, {**RAGAS_02, "id": 102, "reference": None}])
    frame = frame.set_index("id") if as_index else frame
    table = scripted_evaluate(frame, ["context_recall"]).to_pandas()
    ids = list(table.index) if as_index else list(table["id"])
    assert ids == [101, 102] and (table.index.name == "id") == as_index
    joined = frame.join(table[["context_recall"]])
    assert list(joined["context_recall"].isna()) == [False, True]
    merged = frame.reset_index().merge(table.reset_index()[["id", "context_recall"]], on="id")  # by id, as well
    assert list(merged["context_recall"].isna()) == [False, True]
    assert [sample.id for sample in as_samples(table.drop(columns=["context_recall"]))] == ["101", "102"]


def test_ragas_metric_objects_and_class_names_are_answered_with_the_names_to_give():
    """ragas's metrics=[faithfulness] (dataclass objects, unhashable) failed in a bare TypeError, and its 0.2
    class names and FAITHFULNESS got no suggestion (a ragas probe)."""
    import dataclasses

    @dataclasses.dataclass
    class Faithfulness:  # as ragas defines its metrics: a dataclass with a name
        name: str = "faithfulness"

    cases = [([Faithfulness()], "give metrics by name, not as objects (Faithfulness); did you mean 'faithfulness'?"),
             ([["faithfulness"]], "give metric names (strings), comma-separated or as a list; got an item of type list "
                                  "among them"),
             (["FAITHFULNESS"], "did you mean 'faithfulness'?"), (["All"], "did you mean 'all'?"),
             (["LLMContextRecall"], "did you mean 'context_recall', the share of reference sentences attributable to "
                                    "the context, nearest to ragas's LLMContextRecall?"),
             (["LLMContextPrecisionWithoutReference"], "did you mean 'context_precision', "),
             (["answer_relevancy"], "did you mean 'response_relevancy', ")]
    for metrics, expected in cases:
        with pytest.raises(UserError) as raised:
            scripted_evaluate([RAGAS_02], metrics)
        assert expected in str(raised.value), (metrics, str(raised.value))
    with pytest.raises(UserError) as raised:  # a three-letter name is not close to every three-letter word
        scripted_evaluate([RAGAS_02], ["ball"])
    assert "did you mean" not in str(raised.value)


def test_ragas_metrics_without_a_counterpart_say_so_instead_of_offering_a_look_alike():
    """context_entity_recall was answered "did you mean 'context_recall'?", a spelling match to another question,
    and answer_correctness or FactualCorrectness with nothing but the list (a ragas probe)."""
    cases = {"context_entity_recall": "ragas's context_entity_recall has no counterpart in localeval: it counts the "
                                      "reference's named entities found in the context; choose from: ",
             "FactualCorrectness": "ragas's factual_correctness has no counterpart in localeval: it compares",
             "answer_correctness": "ragas's answer_correctness has no counterpart in localeval: it compares",
             # ragas 0.2's other names of the same metrics: each said as given, with its twin's description
             "AspectCritic": "ragas's aspect_critic has no counterpart in localeval: it asks a yes/no question of your own",
             "SemanticSimilarity": "ragas's semantic_similarity has no counterpart in localeval: it is the embedding "
                                   "similarity of the response and the reference"}
    for name, expected in cases.items():
        with pytest.raises(UserError) as raised:
            scripted_evaluate([RAGAS_02], [name])
        assert expected in str(raised.value) and "did you mean" not in str(raised.value), str(raised.value)


def test_context_precision_over_samples_with_and_without_a_reference_says_it_mixes_two_metrics(tmp_path, capsys,
                                                                                               tiny_judge):
    """Rows with a reference are judged against it, rows without against the response: one mean of two of
    ragas's metrics, with nothing but each sample's evidence to show it (a ragas probe)."""
    from localeval.cli import main

    mixed = [RAGAS_02, {**RAGAS_02, "reference": None}, {**RAGAS_02, "reference": ""}]
    said = ("context_precision judges 2 of the 3 samples it can judge against the response, having no reference, and "
            "the others against their reference: its mean mixes ragas's context precision without and with a "
            "reference (score them apart to compare with ragas)")
    with pytest.warns(LocalevalWarning, match=re.escape(said)):
        result = scripted_evaluate(mixed, ["context_precision"])
    assert f"warning: {said}" in result.details["warnings"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # all with a reference, or none: one metric, nothing to say
        scripted_evaluate([RAGAS_02, RAGAS_02], ["context_precision"])
        scripted_evaluate(mixed, ["context_recall"])
        unscored = [RAGAS_02, {"user_input": "q?", "response": "r."}]  # no contexts: context_precision is null
        scripted_evaluate(unscored, ["context_precision"])
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps({**row, "id": f"s{n}"}) + "\n" for n, row in enumerate(mixed)))
    assert main(["run", str(data), "--metrics", "context_precision", "--out", str(tmp_path / "out"), "--quiet",
                 "--no-cache", "--judge", str(tiny_judge)]) == 0
    assert capsys.readouterr().err.count(f"localeval: warning: {said}") == 1  # before the scoring, once
    assert f"warning: {said}" in json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))["warnings"]


def test_samples_that_retrieved_nothing_are_said_scored_0_by_rule():
    """contexts [] or all blank scored 0 on every metric reading the context, unsaid: a retriever that began
    returning nothing only lowered the means (a ragas probe). A sample without contexts is null, said apart."""
    from localeval.trust import NothingScoredWarning, RetrievedNothingWarning

    rows = [{**RAGAS_02, "id": "a", "retrieved_contexts": []}, {**RAGAS_02, "id": "b", "retrieved_contexts": [" ", ""]},
            {**RAGAS_02, "id": "c"}]
    said = ("2 of the 3 samples (a, b) retrieved nothing (retrieved_contexts empty, or every chunk blank), so "
            "context_recall, answer_supported_precision, context_supported_precision score them 0, as nothing retrieved "
            "supports nothing, and their means count those 0s")
    with pytest.warns(RetrievedNothingWarning, match=re.escape(said)):
        result = scripted_evaluate(rows, ["context_recall", "answer_supported_precision", "context_supported_precision"])
    assert f"warning: {said}" in result.details["warnings"]
    assert [row["context_recall"] for row in result.rows()][:2] == [0.0, 0.0]
    assert [row["context_supported_precision"] for row in result.rows()][:2] == [0.0, 0.0]  # seed 004's 0, not null
    # a sample without a reference is null for context_recall, whatever it retrieved: not counted as its 0 (a review)
    rows[0] = {**rows[0], "reference": None}
    said = ("2 of the 3 samples (a, b) retrieved nothing (retrieved_contexts empty, or every chunk blank), so "
            "context_recall (b), answer_supported_precision (a, b) score them 0,")
    with pytest.warns(RetrievedNothingWarning, match=re.escape(said)):
        result = scripted_evaluate(rows, ["context_recall", "answer_supported_precision"])
    assert [row["context_recall"] for row in result.rows()][:2] == [None, 0.0]
    with warnings.catch_warnings():
        # contexts not given: null, not retrieved nothing, so nothing to say
        warnings.simplefilter("ignore", NothingScoredWarning)  # the sample without contexts: null, said apart
        warnings.simplefilter("error", RetrievedNothingWarning)
        scripted_evaluate([{"user_input": "q?", "response": "r."}], ["context_recall"])


def test_a_metric_that_scored_no_sample_is_said_not_only_counted(tmp_path, capsys, tiny_judge):
    """Misnamed columns: every sample null on both metrics, exit 0 and means of null, said only in the null
    counts (a ragas probe). A note now says it, in Python and in summary.json."""
    from localeval.cli import main
    from localeval.trust import NothingScoredWarning

    rows = [{"user_input": "When?", "context": ["It was in 1967."], "answers": "In 1967.", "id": "a"}]
    said = ("context_recall, answer_supported_precision scored no sample: their means are null (the null scores' "
            "reasons say why)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IgnoredFieldsWarning)
        with pytest.warns(NothingScoredWarning, match=re.escape(said)):
            result = scripted_evaluate(rows, ["context_recall", "answer_supported_precision"])
    assert f"note: {said}" in result.details["warnings"]
    data = tmp_path / "typo.jsonl"
    data.write_text(json.dumps(rows[0]) + "\n")
    run = ["run", str(data), "--metrics", "context_recall", "--out", str(tmp_path / "out"), "--quiet", "--no-cache",
           "--judge", str(tiny_judge)]
    assert main(run) == 0
    note = "note: context_recall scored no sample: its mean is null (the null scores' reasons say why)"
    assert f"localeval: {note}" in capsys.readouterr().err  # after the table, with the other warnings
    assert note in json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))["warnings"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IgnoredFieldsWarning)
        warnings.simplefilter("error", NothingScoredWarning)  # one sample scored: nothing to say
        scripted_evaluate([*rows, {**RAGAS_02, "id": "b"}], ["context_recall"])


def test_a_frames_ids_that_look_like_its_index_do_not_shift_a_join():
    """Ids 1, 2, 3 in a column of a frame on 0, 1, 2: to_pandas() was indexed by the ids, and the join a ragas
    user types, on the frame's index, put each score a row off without a word (a ragas probe)."""
    frame = pd.DataFrame([{**RAGAS_02, "id": 1, "reference": None}, {**RAGAS_02, "id": 2}, {**RAGAS_02, "id": 3}])
    joined = frame.join(scripted_evaluate(frame, ["context_recall"]).to_pandas()[["context_recall"]])
    assert list(joined["context_recall"].isna()) == [True, False, False]
    both = frame.set_axis(pd.Index([3, 1, 2], name="id"))  # an index named id beside the id column, which names them
    joined = both.join(scripted_evaluate(both, ["context_recall"]).to_pandas()[["context_recall"]])
    assert list(joined["context_recall"].isna()) == [True, False, False]


def test_whole_number_float_ids_come_back_as_floats_so_a_join_on_them_matches():
    """An int column that a merge turned to floats (1.0, 2.0) is read as ids '1', '2': to_pandas() gave
    them back as strings, and the README's join on="id" raised pandas' "merge on float64 and str" (a probe)."""
    frame = pd.DataFrame([{**RAGAS_02, "id": 1.0}, {**RAGAS_02, "id": 2.0, "reference": None}])
    table = scripted_evaluate(frame, ["context_recall"]).to_pandas()
    assert list(table["id"]) == [1.0, 2.0]
    assert list(frame.merge(table[["id", "context_recall"]], on="id")["context_recall"].isna()) == [False, True]
    halves = pd.DataFrame([{**RAGAS_02, "id": 1.5}, {**RAGAS_02, "id": 2.0}])  # not ids pandas reads as whole
    with pytest.raises(UserError, match="expected a non-empty string or a whole number"):
        scripted_evaluate(halves, ["context_recall"])


def test_nullable_integer_ids_with_a_missing_one_stay_strings():
    """pandas' Int64 is an integer dtype that holds <NA>: that sample is named by its place ('2')."""
    frame = pd.DataFrame([{**RAGAS_02, "id": 101}, {**RAGAS_02, "id": None}]).astype({"id": "Int64"})
    with pytest.warns(MissingIdsWarning):
        table = scripted_evaluate(frame, ["context_recall"]).to_pandas()
    assert list(table["id"]) == ["101", "2"]


def test_to_pandas_goes_back_into_evaluate_with_its_ids():
    frame = pd.DataFrame([{**RAGAS_02, "id": "a"}, {**RAGAS_02, "id": "b"}])
    table = scripted_evaluate(frame, ["context_recall"]).to_pandas()
    with pytest.warns(IgnoredFieldsWarning, match="'context_recall'"):  # the score column is not an input
        again = as_samples(table)
    assert [sample.id for sample in again] == ["a", "b"] and again[0].reference == RAGAS_02["reference"]


def test_a_datasets_empty_cells_are_absent_fields_as_in_a_dataframe():
    """A column-oriented dataset gives every row every column: None where a row has no value."""
    rows = [{**RAGAS_01, "reference": None}, {**RAGAS_02, "ground_truths": None}]
    samples = as_samples(HFDatasetStandIn(rows))
    assert samples[0].reference == "Paris is the capital of France. It lies on the Seine!"
    assert samples[1].reference == RAGAS_02["reference"]


# --- 5. ragas metric names -------------------------------------------------------------------------


@pytest.mark.parametrize("asked, meant", [
    ("answer_relevancy", "response_relevancy"),
    ("context_utilization", "context_supported_precision"),
    ("faithfullness", "faithfulness"),  # a typo of a name both have
    ("context_recal", "context_recall"),  # a typo of a localeval name
])
def test_unknown_metric_says_which_one_was_meant(asked, meant):
    with pytest.raises(UserError, match=rf"unknown metric '{asked}'; did you mean '{meant}'"):
        resolve_metrics([asked])


def test_unknown_metric_with_nothing_close_lists_the_choices_only():
    with pytest.raises(UserError) as info:
        resolve_metrics(["bleu"])
    assert "did you mean" not in str(info.value) and "choose from: context_relevance" in str(info.value)


def test_evaluate_refuses_a_ragas_metric_name_with_the_hint():
    with pytest.raises(UserError, match="did you mean 'response_relevancy'"):
        scripted_evaluate([RAGAS_02], ["answer_relevancy"])


def test_evaluate_refuses_a_metric_object_whose_own_settings_would_pass_over_the_judges():
    """METRICS[name]() (the README builds one to read verdicts) given to metrics= scored with default settings,
    scoring='soft' unheard, and other scores than the name gave, without a word (a probe)."""
    with pytest.raises(UserError, match=re.escape("metrics=: give metrics by name ('context_recall'), not as objects")):
        scripted_evaluate([RAGAS_02], ["answer_supported_precision", METRICS["context_recall"]()])
    with pytest.raises(UserError, match="not as objects"):  # however they are given
        scripted_evaluate([RAGAS_02], (metric for metric in [METRICS["context_recall"]()]))


def test_ragas_headline_metrics_exist_by_their_own_names():
    assert [m.name for m in resolve_metrics(["faithfulness", "context_precision"])] == ["faithfulness",
                                                                                      "context_precision"]


@pytest.mark.parametrize(("samples", "options", "expected"), [
    ([], {}, "no samples to evaluate"),  # an empty result would fail later, in to_pandas()
    ([RAGAS_02], {"language": "klingon"}, "language='klingon': not a language pysbd splits into sentences; choose from am, "),  # else all null
    # each of these crashed deep inside, some only after the models had loaded
    ([RAGAS_02], {"window": 0}, "window=: give a whole number of samples, at least 1 (or None: the device's); got 0"),
    ([RAGAS_02], {"window": "3"}, "window=: give a whole number of samples, at least 1 (or None: the device's); got '3'"),
    ([RAGAS_02], {"limits": (4, 100)}, "limits=: give a localeval.BatchLimits; got tuple"),
    ([RAGAS_02], {"progress": "no"}, "progress=: give True or False; got 'no'"),  # it showed the bar
    ([RAGAS_02], {"settings": "soft"}, "settings=: give a JudgeSettings, or a dict of metric name -> JudgeSettings"),
    ([RAGAS_02], {"cache": "no"}, "cache=: give True, False or a localeval.AnswerCache; got str"),  # was taken as True
    ([RAGAS_02], {"judge": 42}, "judge=: give a registered model name, a model folder or an object with generate()"),
    ([RAGAS_02], {"embedder": 3}, "embedder=: give a registered model name, a model folder or an object with embed()"),
    # the class for an object: its unbound generate passed the check, and the run failed deep inside
    ([RAGAS_02], {"judge": ScriptedJudge}, "judge=: give an object with generate(), not the class ScriptedJudge itself"),
    ([RAGAS_02], {"judge": ""}, "judge=: the name is empty"),  # read as a path: the current folder
    ([RAGAS_02], {"labels": ""}, "labels=: it is empty"),  # dropped: the corrected means left out
    ([RAGAS_02], {"calibration": False}, "calibration=: give a path; got bool"),  # a TypeError
    # named as the Python caller wrote them, not as the CLI's options
    ([RAGAS_02], {"scoring": "medium"}, "scoring='medium': choose from auto, hard, soft"),
    ([RAGAS_02], {"labels": "/nowhere/labels.jsonl"}, "labels='/nowhere/labels.jsonl': file not found"),
    ([RAGAS_02], {"calibration": "/nowhere/calibration.json"}, "calibration='/nowhere/calibration.json': cannot read it"),
    # a misspelt metric would quietly leave the metric on other settings
    ([RAGAS_02], {"settings": {"answer_supported_precison": JudgeSettings()}},
     "settings=: 'answer_supported_precison' is not a metric; choose from context_relevance"),
    ([RAGAS_02], {"settings": {3: JudgeSettings(), "x": JudgeSettings()}}, "settings=: 3, 'x' are not metrics"),
    ([RAGAS_02], {"device": None}, "device=: give its name as a string, such as \"auto\"; got None"),
    ([RAGAS_02], {"ray": "local", "workers": 1.5}, "workers=: give a whole number of Ray workers; got 1.5"),
    # the checks shared with the CLI, deeper in, name the keywords too
    ([RAGAS_02], {"ray": "nowhere"}, "ray='nowhere': give local, auto, or a running cluster's HOST:PORT"),
    ([RAGAS_02], {"ray": "local", "workers": 0}, "workers= must be at least 1"),
    ([RAGAS_02], {"ray": "local", "gpus_per_worker": -1}, "gpus_per_worker= must be at least 0"),
])
def test_evaluate_refuses_what_run_refuses(samples, options, expected):
    arguments = {"judge": ScriptedJudge(every_verdict_one([])), "embedder": LookupEmbedder({}, default=[1.0, 0.0]),
                 "device": "cpu", "cache": False, **options}
    with pytest.raises(UserError, match=re.escape(expected)):
        localeval.evaluate(samples, ["answer_supported_precision"], **arguments)


class BrokenJudge(ScriptedJudge):
    """A judge of one's own that breaks its contract as `how` says (a custom-judge probe found each a traceback deep
    inside, or a wrong answer in the user's cache)."""

    def __init__(self, how: str):
        super().__init__(every_verdict_one([]))
        self.how, self.cacheable = how, True

    def generate(self, requests, admission=None, on_answer=lambda index, answer: None):
        if self.how in ("announce-as-0", "swapped"):
            answers = super().generate(requests, admission)
            for answer in answers:
                on_answer(0, answer) if self.how == "announce-as-0" else on_answer(answer, 0)
            return answers
        answers = super().generate(requests, admission, on_answer)
        return {"one-short": answers[:-1], "text": [answer.text for answer in answers], "none": None}[self.how]


@pytest.mark.parametrize(("how", "expected"), [
    ("one-short", "judge=: BrokenJudge.generate() returned 1 answer for 2 requests; return a list of one "
                  "localeval.JudgeAnswer per request, in the requests' order"),
    ("text", "judge=: BrokenJudge.generate() gave str for request 0; give a localeval.JudgeAnswer (JudgeAnswer.parse"),
    ("none", "judge=: BrokenJudge.generate() returned None for 2 requests"),
    ("swapped", "judge=: BrokenJudge.generate() called on_answer with JudgeAnswer for the index; call "
                "on_answer(index, answer)"),
    ("announce-as-0", "judge=: BrokenJudge.generate() called on_answer with index 0: announced already; give each of "
                      "its 2 requests' index once"),
])
def test_a_judge_of_ones_own_that_breaks_its_contract_is_told_how(tmp_path, how, expected):
    cache = localeval.AnswerCache(tmp_path / "cache")
    sample = {**RAGAS_02, "response": "Paris is the capital. It lies on the Seine."}  # two sentences, two requests
    with pytest.raises(UserError, match=re.escape(expected)):
        localeval.evaluate([sample], ["answer_supported_precision", "context_recall"], judge=BrokenJudge(how),
                           device="cpu", cache=cache)
    # the cache holds no answer under another request's key (the second announcement was refused before it was
    # cached): a judge of the same identity that keeps its contract is answered from it, and scores
    kept = BrokenJudge("kept")
    kept.generate = lambda requests, admission=None, on_answer=lambda index, answer: None: ScriptedJudge.generate(
        kept, requests, admission, on_answer)
    result = localeval.evaluate([sample], ["answer_supported_precision", "context_recall"], judge=kept, device="cpu",
                                cache=cache)
    assert result.rows()[0]["answer_supported_precision"] == 1.0 and result.rows()[0]["context_recall"] == 1.0


@pytest.mark.parametrize(("member", "value", "expected"), [
    ("identity", None, "judge=: Judge.identity must be a non-empty string naming the model and everything that "
                       "changes its answers (the answer cache's key); got None"),
    ("identity", 42, "got 42"),
    ("prompt_tokens", None, "judge=: Judge lacks prompt_tokens() of the judge interface"),
    ("context_tokens", ..., "judge=: Judge lacks context_tokens (None for no limit) of the judge interface"),
])
def test_a_judge_of_ones_own_without_its_members_is_refused_before_anything_runs(member, value, expected):
    members = {"identity": "mine", "prompt_tokens": len, "prompt_length": len, "context_tokens": None,
               "generate": lambda *args: []}
    members = {name: staticmethod(given) if callable(given) else given for name, given in members.items()}
    if value is ...:
        del members[member]
    else:
        members[member] = value
    judge = type("Judge", (), members)()
    with pytest.raises(UserError, match=re.escape(expected)):
        localeval.evaluate([RAGAS_02], ["answer_supported_precision"], judge=judge, device="cpu", cache=False)



def test_a_mistyped_keyword_names_the_one_meant():
    """Python's own "got an unexpected keyword argument 'langauge'" named neither the keyword meant nor the
    ones taken, from contextlib's frame (a notebook probe); still a TypeError, for code that catches one."""
    with pytest.raises(UserError) as raised:
        localeval.evaluate([RAGAS_02], langauge="en")
    assert isinstance(raised.value, TypeError)
    assert str(raised.value).startswith("evaluate() takes no keyword langauge= (did you mean language=?); its keywords: "
                                        "samples, metrics, judge, embedder, language, ")
    with pytest.raises(TypeError, match=re.escape("load_judge() takes no keyword dtyp= (did you mean dtype=?); its "
                                                  "keywords: judge, device, dtype")):
        localeval.load_judge(dtyp="float32")
    with pytest.raises(UserError, match=r"load_embedder\(\) takes no keyword colour=; its keywords: embedder, device$"):
        localeval.load_embedder(colour="blue")
    assert list(inspect.signature(localeval.evaluate).parameters)[:2] == ["samples", "metrics"]  # help() still says them


def test_ragas_keywords_are_answered_with_localevals():
    """ragas's evaluate(dataset=..., llm=..., column_map=...) got "takes no keyword" and the list alone: no
    spelling is near enough to say samples=, judge= or that columns are renamed (a ragas probe)."""
    for keyword, expected in {"dataset": "(ragas's dataset= is samples= here, the first argument)",
                              "llm": "(ragas's llm= is judge= here: a registered judge's name or a model folder)",
                              "column_map": "(no column map here: rename the columns; ragas's own names are read"}.items():
        with pytest.raises(TypeError) as raised:
            localeval.evaluate([RAGAS_02], **{keyword: None})
        assert str(raised.value).startswith(f"evaluate() takes no keyword {keyword}= {expected}"), str(raised.value)


def test_after_evaluate_the_same_checks_name_the_command_lines_options_again():
    from localeval.device import dtype_name
    from localeval.options import given, option

    with pytest.raises(UserError, match=re.escape("workers= must be at least 1")):
        localeval.evaluate([RAGAS_02], judge=ScriptedJudge(every_verdict_one([])), ray="local", workers=0)
    assert (option("gpus_per_worker"), given("device", "cuda")) == ("--gpus-per-worker", "--device cuda")
    with pytest.raises(UserError, match=re.escape("--dtype int8 is for CPUs")):
        dtype_name("cuda", "int8")


def test_an_answer_cache_that_cannot_be_written_says_how_to_turn_it_off_in_python(monkeypatch, tmp_path):
    import sqlite3

    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sqlite3, "connect", refuse)
    judge = ScriptedJudge(every_verdict_one([]))
    judge.cacheable = True  # as a model is (a script is kept out of the cache)
    # turned off for the call, said with the keyword (not --no-cache): it was an EnvironmentFailure, the call lost
    with pytest.warns(localeval.LocalevalWarning, match=r"cannot be used .* turn it off \(cache=False\)"):
        result = localeval.evaluate([RAGAS_02], ["answer_supported_precision"], judge)
    assert result["answer_supported_precision"] == [1.0]


def test_evaluate_warns_of_a_judge_known_to_agree_poorly_and_names_the_best_by_keyword():
    judge = ScriptedJudge(every_verdict_one([]))
    judge.name = "smollm2-135m-instruct"  # a Judge object goes by the name it was loaded under
    with pytest.warns(localeval.WeakJudgeWarning, match=re.escape("use judge='qwen2.5-coder-1.5b-instruct'")) as caught:
        localeval.evaluate([RAGAS_02], ["answer_supported_precision"], judge, cache=False)
    assert caught[0].filename == __file__  # pointed at the caller's line, not at localeval's
    with warnings.catch_warnings():
        warnings.simplefilter("error", localeval.WeakJudgeWarning)  # a judge never measured: nothing to say
        localeval.evaluate([RAGAS_02], ["answer_supported_precision"], ScriptedJudge(every_verdict_one([])), cache=False)


@pytest.mark.parametrize(("field", "value"), [("reasons", "no"), ("example", 1), ("questions", 0), ("questions", -1),
                                               ("reason_chars", 2.5), ("scoring", "soft")])
def test_judge_settings_that_would_quietly_ask_something_else_are_refused(field, value):
    with pytest.raises(UserError, match=f"JudgeSettings {field}="):
        JudgeSettings(**{field: value})


@pytest.mark.parametrize(("field", "value"), [("batch_size", 0), ("max_batch_tokens", -1), ("batch_size", 2.5),
                                               ("max_batch_tokens", True)])
def test_batch_limits_that_would_fail_in_the_engine_or_judge_one_by_one_are_refused(field, value):
    unset = " (or None, the judge's own)" if field == "batch_size" else ""  # None: models.batch_size decides
    with pytest.raises(UserError, match=re.escape(f"BatchLimits {field}=: give a whole number, at least 1{unset}; "
                                                  f"got {value!r}")):
        BatchLimits(**{field: value})
    assert BatchLimits().batch_size is None and BatchLimits(batch_size=None).max_batch_tokens > 0


def test_a_metric_left_out_of_a_settings_dict_keeps_the_judges_measured_settings():
    asked = {"answer_supported_precision": JudgeSettings(reasons=True)}
    settings = _per_metric(asked, "qwen2.5-coder-1.5b-instruct")
    assert settings["answer_supported_precision"] == asked["answer_supported_precision"]
    assert settings["context_recall"] == metric_settings("qwen2.5-coder-1.5b-instruct")["context_recall"]


@pytest.mark.parametrize(("metrics", "expected"), [
    (123, "metrics: give metric names, comma-separated or as a list; got int"),
    ({"faithfulness": 0.8}, "metrics: give metric names, comma-separated or as a list; got dict"),  # ran its keys
    (["all", "faithfulness"], "metric 'all' already means every metric: give it alone"),
    ("context_recall, context_recall", "metric 'context_recall' is given twice"),  # its run record would say it twice
])
def test_metric_lists_that_name_nothing_clearly_are_refused(metrics, expected):
    with pytest.raises(UserError, match=re.escape(expected)):
        resolve_metrics(metrics)


def test_evaluate_says_what_it_prepares_on_stderr_not_on_its_callers_stdout(tiny_judge, monkeypatch, capsys):
    """A first evaluate() on a fresh machine converts the judge: a library must not write that into
    the stdout its caller may be piping JSON through."""
    from localeval import models

    def prepare(spec, log):
        log(f"preparing {spec.name}: checking and converting its GGUF once")
        return tiny_judge

    monkeypatch.setattr(models.ModelSpec, "local_path", lambda spec: None)  # not installed yet
    monkeypatch.setattr(models, "prepare", prepare)
    result = localeval.evaluate([RAGAS_02], ["answer_supported_precision"], judge="smollm2-135m-instruct", cache=False)
    assert result.summary()["answer_supported_precision"]["scored"] == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "preparing smollm2-135m-instruct" in captured.err


def test_a_judge_folder_may_be_given_as_a_path(tiny_judge):
    from pathlib import Path

    result = localeval.evaluate([RAGAS_02], ["answer_supported_precision"], judge=Path(tiny_judge), cache=False)
    assert result.summary()["answer_supported_precision"]["scored"] == 1


def test_a_scripted_judge_is_never_answered_from_the_users_cache():
    """Every script is "scripted": a later script, in another process too, got an earlier one's answers."""
    def scored(attributed: int) -> float:
        script = ScriptedJudge(lambda request: {"verdicts": [{"sentence": 1, "attributed": attributed}]})
        sample = {**RAGAS_02, "reference": "One sentence."}
        return localeval.evaluate([sample], ["context_recall"], judge=script, progress=False).rows()[0]["context_recall"]

    assert (scored(1), scored(0)) == (1.0, 0.0)  # cache=True, the default


def test_paths_given_to_evaluate_with_a_tilde_are_the_users_own(tmp_path, monkeypatch):
    """evaluate("~/data.jsonl") was "file not found": no shell expands it there (pandas does)."""
    import json

    from localeval.calibration import fitted_with, write_calibration

    monkeypatch.setenv("HOME", str(tmp_path))
    sample = {**RAGAS_02, "id": "a", "reference": "One sentence."}
    (tmp_path / "data.jsonl").write_text(json.dumps(sample) + "\n")
    write_calibration(tmp_path / "calibration.json", {"scripted": {"context_recall": {"threshold": 0.3,
                                                                                        "helps_both_halves": True}}},
                      "x", [], {"scripted": fitted_with(None, None, {})})
    script = ScriptedJudge(lambda request: {"verdicts": [{"sentence": 1, "attributed": 1}]})
    result = localeval.evaluate("~/data.jsonl", ["context_recall"], judge=script, progress=False,
                                calibration="~/calibration.json")
    assert [row["id"] for row in result.rows()] == ["a"]


def test_evaluate_warns_of_other_scoring_rules_only_for_thresholds_it_applies(tmp_path):
    """Thresholds fitted under other rules for metrics the call does not score move nothing: evaluate() warned
    of them beside its note that the file applied no threshold (a review)."""

    from localeval.calibration import CalibrationWarning, fitted_with, write_calibration

    path = tmp_path / "calibration.json"
    write_calibration(path, {"scripted": {"context_recall": {"threshold": 0.3, "helps_both_halves": True}}}, "x", [],
                      {"scripted": {**fitted_with(None, None, {}), "scoring_rules": "2026-01-01"}})
    script = ScriptedJudge(lambda request: {"verdicts": [{"sentence": 1, "attributed": 1, "supported": 1}]})
    sample = {**RAGAS_02, "id": "a", "reference": "One sentence."}
    with pytest.warns(CalibrationWarning) as said:
        result = localeval.evaluate([sample], ["answer_supported_precision"], judge=script, calibration=path)
    assert not any("other scoring rules" in str(warning.message) for warning in said)
    assert not any("other scoring rules" in line for line in result.details["warnings"])
    with pytest.warns(CalibrationWarning, match="for context_recall were fitted by a localeval of other scoring rules"):
        localeval.evaluate([sample], ["context_recall"], judge=script, calibration=path)


def test_records_from_a_dataframe_to_dict_read_as_the_dataframe_does():
    """NaN for a missing reference, numpy arrays of contexts and numpy ids, as to_dict("records") and
    numpy leave them: each was refused ("expected a string, got a number", "got a ndarray", "got a int64")."""
    import numpy as np

    from localeval.data import samples_in_memory

    records = [{"id": np.int64(7), "user_input": "Where?", "retrieved_contexts": np.array(["In Paris."]),
                "response": "Paris.", "reference": float("nan")},
               {"id": 8, "user_input": "When?", "retrieved_contexts": ["In 1932."], "response": "1932.",
                "reference": np.float64("nan"), "language": "en"}]
    first, second = samples_in_memory(records)
    assert (first.id, first.retrieved_contexts, first.reference) == ("7", ("In Paris.",), None)
    assert (second.id, second.reference) == ("8", None)

    class Item:
        pass

    with pytest.raises(UserError, match="expected a string, got an Item"):  # not "a Item"
        samples_in_memory([{"user_input": Item()}])


def test_a_judge_loaded_once_serves_call_after_call_and_scores_as_by_its_folder(tiny_judge, monkeypatch, tmp_path):
    """Given a name, evaluate() loads the judge on every call: seconds each time in a notebook."""
    from localeval import hf

    sample = {**RAGAS_02, "id": "a"}
    options = dict(metrics=["context_recall", "faithfulness"], cache=False)
    by_folder = localeval.evaluate([sample], judge=str(tiny_judge), **options).rows()
    judge = localeval.load_judge(tiny_judge, device="cpu")
    # a notebook shows it: "<localeval.engine.judge.TransformersJudge object at 0x...>" said nothing (a probe)
    assert repr(judge) == f"<TransformersJudge {tiny_judge.resolve()} on cpu, float32; loaded>"
    loads = []
    original = hf.load
    monkeypatch.setattr(hf, "load", lambda loader, *args, **kwargs: loads.append(loader.__self__.__name__)
                        or original(loader, *args, **kwargs))
    assert [localeval.evaluate([sample], judge=judge, **options).rows() for _ in range(2)] == [by_folder, by_folder]
    assert set(loads) <= {"AutoConfig"}  # neither weights nor tokenizer again (its context length, read once)
    with pytest.raises(UserError, match="ray=: a judge or embedder loaded in this process"):
        localeval.evaluate([sample], judge=judge, ray="local", **options)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "tokenizer_config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes((tiny_judge / "model.safetensors").read_bytes())
    with pytest.raises(UserError, match="cannot be loaded as a model"):  # said by load_judge, not later
        localeval.load_judge(tmp_path)
    with pytest.raises(UserError, match="judge=: give a registered model name or a model folder; got ScriptedJudge"):
        localeval.load_judge(ScriptedJudge(every_verdict_one([])))  # was an AttributeError


def test_a_loaded_judge_shared_by_threads_and_kept_for_days_stays_right_and_bounded(tiny_judge, monkeypatch):
    """Threads sharing one loaded judge take turns on it (its caches and counters are one caller's; a
    race there did not show with this tiny judge, so this checks the answers, not the lock), and its
    token memo, which grew with every request ever judged, stays bounded."""
    from concurrent.futures import ThreadPoolExecutor

    from localeval.engine import judge as judge_module

    monkeypatch.setattr(judge_module, "REMEMBERED_PROMPTS", 3)
    judge = localeval.load_judge(tiny_judge, device="cpu")
    samples = [{**RAGAS_02, "id": str(i), "response": f"{RAGAS_02['response']} {i}."} for i in range(3)]
    options = dict(metrics=["context_recall", "faithfulness"], cache=False, judge=judge)
    alone = localeval.evaluate(samples, **options).rows()
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda _: localeval.evaluate(samples, **options).rows(), range(2)))
    assert together == [alone, alone]
    assert len(judge._prompt_ids) == 3


def test_a_loaded_judge_refuses_another_dtype_than_it_was_loaded_in(tiny_judge):
    """evaluate(judge=load_judge(...), dtype="bfloat16") scored in float32, the dtype asked for passed over
    without a word (a probe)."""
    judge = localeval.load_judge(tiny_judge, device="cpu", dtype="float32")
    with pytest.raises(UserError, match=re.escape("dtype='bfloat16': the judge given was loaded in float32 and scores "
                                                  "in it; leave dtype= out, or load it in bfloat16")):
        localeval.evaluate([RAGAS_02], ["context_recall"], judge=judge, dtype="bfloat16", cache=False)
    assert localeval.evaluate([RAGAS_02], ["context_recall"], judge=judge, dtype="float32", cache=False).rows()
    with pytest.raises(UserError, match="unknown dtype 'fp16'"):  # not "load it in fp16"
        localeval.evaluate([RAGAS_02], ["context_recall"], judge=judge, dtype="fp16", cache=False)


def test_thresholds_fitted_on_a_judge_folder_apply_to_it_loaded_once(tiny_judge, tmp_path, monkeypatch):
    """load_judge's judge is named by its folder as given; the calibration, by the folder bench was given."""
    from localeval import models
    from localeval.calibration import fitted_with, write_calibration

    folder = str(tiny_judge.resolve())
    weights = models.folder_weights(tiny_judge)
    write_calibration(tmp_path / "calibration.json", {"./tiny": {"context_recall": {"threshold": 0.2,
                                                                                     "helps_both_halves": True}}},
                      "x", [], {"./tiny": fitted_with(weights, folder, {})})
    judge = localeval.load_judge(tiny_judge, device="cpu")
    result = localeval.evaluate([{**RAGAS_02, "id": "a"}], ["context_recall"], judge=judge, cache=False,
                                calibration=tmp_path / "calibration.json")
    assert result.rows()[0]["context_recall"] is not None  # found, applied: no "has no thresholds" error
    said = result.details["calibration"]  # which file and thresholds, as run's summary.json says them
    assert said["path"] == str(tmp_path / "calibration.json") and said["judge"] == "./tiny"
    assert said["thresholds"] == {"context_recall": 0.2} and len(said["sha256"]) == 64
    uncalibrated = localeval.evaluate([{**RAGAS_02, "id": "a"}], ["context_recall"], judge=judge, cache=False)
    assert "calibration" not in uncalibrated.details
    from localeval.calibration import CalibrationWarning

    with pytest.warns(CalibrationWarning, match="context_recall scored by the thresholds of calibration="):
        soft = localeval.evaluate([{**RAGAS_02, "id": "a"}], ["context_recall"], judge=judge, cache=False,
                                  calibration=tmp_path / "calibration.json", scoring="soft")  # the thresholds decide
    assert any("scored by the thresholds of calibration=" in warning for warning in soft.details["warnings"])
    write_calibration(tmp_path / "other.json", {"./tiny": {"context_recall": {"threshold": 0.2,
                                                                               "helps_both_halves": True}}},
                      "x", [], {"./tiny": fitted_with("another model", "/another/folder", {})})
    with pytest.raises(UserError, match="has no thresholds for judge"):  # neither its folder nor its weights
        localeval.evaluate([{**RAGAS_02, "id": "a"}], ["context_recall"], judge=judge, cache=False,
                           calibration=tmp_path / "other.json")


FORKED_AFTER_SCORING = """
import multiprocessing, sys, torch, localeval
data = [{"id": "1", "user_input": "When did it open?", "retrieved_contexts": ["It opened in 1932."],
         "response": "In 1932."}]
localeval.evaluate(data, ["answer_supported_precision"], judge=sys.argv[1], cache=False)
torch.ones(1024, 1024) @ torch.ones(1024, 1024)  # the parent's threads at work, as a real judge's are

def child(_):
    result = localeval.evaluate(data, ["answer_supported_precision"], judge=sys.argv[1], cache=False)
    torch.ones(1024, 1024) @ torch.ones(1024, 1024)
    return torch.get_num_threads(), result.details["warnings"]

with multiprocessing.get_context("fork").Pool(1) as pool:  # a child that hangs is ended with the pool
    threads, said = pool.map_async(child, [0]).get(timeout=90)[0]
print(threads, [line for line in said if "forked" in line])
"""


def test_evaluate_in_a_process_forked_after_scoring_computes_on_one_thread_and_says_so(tiny_judge):
    """A multiprocessing Pool (fork, Linux's default) after an evaluate() in the parent hung at the child's first
    computation, silently and for ever: torch's OpenMP threads do not survive a fork (a notebook probe)."""
    result = subprocess.run([sys.executable, "-c", FORKED_AFTER_SCORING, str(tiny_judge)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    threads, said = result.stdout.strip().split(" ", 1)
    assert threads == "1"
    assert "warning: this process was forked from one that had loaded a model" in said
    assert "multiprocessing.get_context('spawn')" in said


def test_fields_named_by_something_other_than_text_are_said_as_text():
    """A DataFrame made from tuples (columns 0, 1, 2) or a dict keyed by a number raised a TypeError from inside
    the message that was to name them (a notebook probe)."""
    q, contexts, a = "When did it open?", ["It opened in 1932."], "In 1932."
    with pytest.raises(DataError, match=r"no record has a field localeval scores .*; its fields: 0, 1, 2$"):
        as_samples(pd.DataFrame([[q, contexts, a]]))
    with pytest.warns(IgnoredFieldsWarning, match=r"ignored fields, which localeval does not read: '1' \(1 of 1"):
        (sample,) = as_samples([{1: q, "user_input": q, "response": a, "retrieved_contexts": contexts}])
    assert sample.user_input == q


QUIET_WHILE_LOADING = """
import sys, localeval
from transformers.utils import logging
logging.set_verbosity_info()
localeval.evaluate([{"user_input": "When did it open?", "retrieved_contexts": ["It opened in 1932."],
                     "response": "In 1932."}], ["answer_supported_precision"], judge=sys.argv[1], cache=False)
print(logging.get_verbosity() == logging.INFO, logging.is_progress_bar_enabled())
"""


def test_transformers_warnings_and_bars_are_as_they_were_after_a_call(tiny_judge):
    """Turned off for good by the first evaluate(), they stayed off for a notebook's own from_pretrained (a notebook
    probe): localeval quiets them only while it loads. In a process of its own: the first load is the one."""
    result = subprocess.run([sys.executable, "-c", QUIET_WHILE_LOADING, str(tiny_judge)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_dir_of_the_package_names_each_public_name_once():
    """A name looked up was listed twice, from the module's globals and from its exports (a notebook probe)."""
    localeval.evaluate  # noqa: B018  (looked up: now a global too)
    names = dir(localeval)
    assert len(names) == len(set(names)) and "evaluate" in names and "UnmeasuredJudgeWarning" in names


def test_a_results_rows_are_copies_and_results_compare_by_identity():
    """Editing rows()'s evidence changed the result's own (a notebook probe), and == on two results raised for a
    DataFrame's index, or was False for the same scores, their timings apart."""
    frame = pd.DataFrame([RAGAS_02])
    result = localeval.evaluate(frame, ["answer_supported_precision"], ScriptedJudge(every_verdict_one([])),
                                cache=False)
    rows = result.rows()
    rows[0]["evidence"]["answer_supported_precision"]["sentences"][0]["supported"] = 0
    assert result.rows()[0]["evidence"]["answer_supported_precision"]["sentences"][0]["supported"] == 1
    again = localeval.evaluate(frame, ["answer_supported_precision"], ScriptedJudge(every_verdict_one([])),
                               cache=False)
    assert result == result and result != again and result.rows() == again.rows()
