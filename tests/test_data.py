"""Tests for localeval.data: every format loads, and every bad file gives a message that places the fault."""

import re
import builtins
import json
import warnings
from pathlib import Path

import pytest

from localeval.bench.labels import read_labeled
from localeval.data import (NUMPY_ARRAY_HINT, PARQUET_HINT, IgnoredFieldsWarning, MissingIdsWarning, load_samples,
                            samples_from_records)
from localeval.errors import DataError, UserError
from localeval.samples import Sample

DEV_SET = Path("/work/shared/data/dev.jsonl")
LABELED = Path(__file__).parent / "data" / "labeled_small.jsonl"

FULL = {
    "id": "q1",
    "user_input": "What is the capital of France?",
    "retrieved_contexts": ["Paris is the capital of France.", "France is in Europe."],
    "response": "Paris.",
    "reference": "Paris is the capital.",
}
EXPECTED = Sample(
    id="q1",
    user_input="What is the capital of France?",
    retrieved_contexts=("Paris is the capital of France.", "France is in Europe."),
    response="Paris.",
    reference="Paris is the capital.",
)


def write_jsonl(tmp_path, *lines, name="data.jsonl"):
    """Write each line as given if it is a string, else as JSON."""
    path = tmp_path / name
    path.write_text("\n".join(l if isinstance(l, str) else json.dumps(l) for l in lines) + "\n", encoding="utf-8")
    return path


def write_csv(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def load_error(path) -> str:
    with pytest.raises(DataError) as info:
        load_samples(path)
    return str(info.value)


# --- formats ------------------------------------------------------------------------------------


def test_jsonl_loads(tmp_path):
    path = write_jsonl(tmp_path, FULL, {**FULL, "id": "q2", "language": "zh"})
    samples = load_samples(path)
    assert samples == [EXPECTED, Sample(**{**EXPECTED.__dict__, "id": "q2", "language": "zh"})]
    assert isinstance(samples[0].retrieved_contexts, tuple)


def test_accepts_str_path(tmp_path):
    assert load_samples(str(write_jsonl(tmp_path, FULL))) == [EXPECTED]


def test_json_list_loads(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps([FULL, {"user_input": "second"}]), encoding="utf-8")
    samples = load_samples(path)
    assert samples[0] == EXPECTED
    assert samples[1] == Sample(id="2", user_input="second")


def test_json_samples_object_loads(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"samples": [FULL], "meta": {"source": "x"}}), encoding="utf-8")
    assert load_samples(path) == [EXPECTED]


def test_csv_loads_with_json_array_cell(tmp_path):
    contexts = json.dumps(FULL["retrieved_contexts"]).replace('"', '""')
    text = (
        "id,user_input,retrieved_contexts,response,reference\n"
        f'q1,{FULL["user_input"]},"{contexts}",{FULL["response"]},{FULL["reference"]}\n'
    )
    assert load_samples(write_csv(tmp_path, text)) == [EXPECTED]


def test_csv_empty_cell_is_absent_and_default_id_is_record_number(tmp_path):
    text = 'user_input,retrieved_contexts,response\n"a",,\n"b","[""c""]",r\n'
    samples = load_samples(write_csv(tmp_path, text))
    assert samples == [
        Sample(id="1", user_input="a"),
        Sample(id="2", user_input="b", retrieved_contexts=("c",), response="r"),
    ]


def test_csv_multiline_cell_keeps_line_numbers(tmp_path):
    text = 'user_input,retrieved_contexts\n"two\nlines","[""ok""]"\nthird,not json\n'
    message = load_error(write_csv(tmp_path, text))
    # The header is line 1, the first row spans lines 2-3, so the bad row starts on line 4.
    assert message.startswith(f"{tmp_path / 'data.csv'}, line 4, field 'retrieved_contexts':")
    assert "JSON array" in message


def test_csv_written_by_hand_with_spaces_after_commas_and_a_line_break_in_a_chunk(tmp_path):
    """Two ways people write CSV that were refused as "not a JSON array" though they hold one: a quoted
    cell after ", " (read as unquoted without skipinitialspace), and a chunk with a line break typed
    into its cell (a raw control character, which strict JSON refuses)."""
    text = ('id, user_input, retrieved_contexts, response\n'
            '1, What is X?, "[""X is a cat.""]", X is a cat.\n'
            '2, And Y?, "[""Y is a dog.\nIt barks.""]", Y is a dog.\n')
    samples = load_samples(write_csv(tmp_path, text))
    assert samples[0] == Sample(id="1", user_input="What is X?", retrieved_contexts=("X is a cat.",),
                                response="X is a cat.")
    assert samples[1].retrieved_contexts == ("Y is a dog.\nIt barks.",)


def test_every_refused_record_is_named_in_the_one_message(tmp_path):
    """A file of many bad lines was mended one run a line (a probe): the first one's fault is said, and where
    every other is, up to five, then how many more."""
    bad = [{"user_input": "q", "response": 5}, "not json", {**FULL, "retrieved_contexts": [1]}, {"user_input": 3}]
    path = write_jsonl(tmp_path, FULL, *bad, *[{"user_input": "q", "response": 5}] * 3, {**FULL, "id": "q1"})
    assert load_error(path) == (
        f"{path}, line 2, field 'response': expected a string, got a number (refused too: line 3; line 4, field "
        "'retrieved_contexts'; line 5, field 'user_input'; line 6, field 'response'; line 7, field 'response'; and 2 "
        "more)")
    assert load_error(write_jsonl(tmp_path, FULL, "not json", FULL)) == (
        f"{path}, line 2: malformed JSON: Expecting value (column 1) (refused too: line 3)")  # the duplicate id
    with pytest.raises(UserError, match=r"^samples, record 1, field 'response': .* \(refused too: record 2, field "
                                        r"'user_input'\)$"):
        samples_from_records([{"user_input": "q", "response": 5}, {"user_input": 3}])


def test_csv_list_cell_that_is_not_json_says_where_it_broke(tmp_path):
    message = load_error(write_csv(tmp_path, 'user_input,retrieved_contexts\nq,"[""a"" ""b""]"\n'))
    assert message.endswith("expected a JSON array of strings, e.g. [\"first\", \"second\"] "
                            "(Expecting ',' delimiter, character 6 of the cell)")


def test_csv_list_cell_that_is_json_but_not_array(tmp_path):
    message = load_error(write_csv(tmp_path, 'user_input,retrieved_contexts\nq,"""just text"""\n'))
    assert "data.csv, line 2, field 'retrieved_contexts'" in message
    assert "got a string" in message


def test_csv_alias_columns_and_extra_columns(tmp_path):
    text = 'question,contexts,answer,ground_truth,labels\nq,"[""c""]",a,g,whatever\n'
    assert load_samples(write_csv(tmp_path, text)) == [
        Sample(id="1", user_input="q", retrieved_contexts=("c",), response="a", reference="g")
    ]


def test_csv_alias_and_name_columns(tmp_path):
    message = load_error(write_csv(tmp_path, "question,user_input\na,b\n"))
    assert "data.csv, line 1" in message
    assert "'question'" in message and "'user_input'" in message


def test_csv_two_aliases_of_one_field(tmp_path):
    message = load_error(write_csv(tmp_path, 'ground_truth,ground_truths\na,"[""b""]"\n'))
    assert "data.csv, line 1" in message
    assert "'ground_truth'" in message and "'ground_truths'" in message


def test_csv_ground_truths_cell_is_a_json_array(tmp_path):
    text = 'question,ground_truths\nq,"[""Paris is the capital"", ""It is large.""]"\n'
    assert load_samples(write_csv(tmp_path, text)) == [
        Sample(id="1", user_input="q", reference="Paris is the capital. It is large.")
    ]


def test_csv_row_with_too_many_cells(tmp_path):
    message = load_error(write_csv(tmp_path, "user_input,response\na,b\nc,d,e\n"))
    assert "data.csv, line 3" in message and "3 cells" in message


def test_csv_header_only_has_no_samples(tmp_path):
    assert "no samples" in load_error(write_csv(tmp_path, "user_input,response\n"))


# --- field names, ids -----------------------------------------------------------------------------


def test_aliases_map_to_current_names(tmp_path):
    legacy = {"question": "q", "contexts": ["c1", "c2"], "answer": "a", "ground_truth": "g"}
    assert load_samples(write_jsonl(tmp_path, legacy)) == [
        Sample(id="1", user_input="q", retrieved_contexts=("c1", "c2"), response="a", reference="g")
    ]


@pytest.mark.parametrize(
    "alias, name", [("question", "user_input"), ("contexts", "retrieved_contexts"), ("answer", "response"),
                    ("ground_truth", "reference"), ("ground_truths", "reference")]
)
def test_alias_and_name_together_is_an_error(tmp_path, alias, name):
    message = load_error(write_jsonl(tmp_path, {"user_input": "q"}, {alias: None, name: None}))
    assert "data.jsonl, line 2" in message
    assert f"'{alias}'" in message and f"'{name}'" in message


def test_extra_fields_are_ignored_with_one_warning_naming_them(tmp_path):
    record = {**FULL, "labels": {"response_relevant": True}, "notes": 3}
    path = write_jsonl(tmp_path, record, {**FULL, "id": "q2", "notes": 4, "source": "web"})
    with pytest.warns(IgnoredFieldsWarning) as caught:
        samples = load_samples(path)
    assert samples[0] == EXPECTED
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith(f"{path}: ignored fields")
    assert "'notes' (2 of 2 records), 'source' (1 of 2 records)" in message
    assert "labels" not in message  # a field of localeval's labeled format


def test_a_file_whose_fields_are_all_unknown_is_refused_naming_them(tmp_path):
    """Misnamed columns would make every metric of every sample null: a run that "succeeds" at that
    helps nobody."""
    message = load_error(write_csv(tmp_path, "q,ctx,ans\nwhat,some,thing\n"))
    assert "no record has a field localeval scores" in message and "its fields: q, ctx, ans" in message
    with pytest.warns(IgnoredFieldsWarning):  # one known field: read, the other named as ignored
        assert load_samples(write_csv(tmp_path, "q,user_input\nwhat,why\n"))[0].user_input == "why"


@pytest.mark.parametrize("contexts", ['["Paris is the capital.", "France is in Europe."]',
                                      "['Paris is the capital.', 'France is in Europe.']"])
def test_a_list_written_as_text_where_the_contexts_list_belongs_is_read_as_that_list(tmp_path, contexts):
    """A list turned to text, by json.dumps or as pandas' read_csv gives back its to_csv of a list column, is
    that list: a ragas probe's files and frames were refused with a hint to decode them first."""
    sample = load_samples(write_jsonl(tmp_path, {**FULL, "retrieved_contexts": contexts}))[0]
    assert sample.retrieved_contexts == ("Paris is the capital.", "France is in Europe.")


@pytest.mark.parametrize("contexts, hint", [
    ("['Paris is the capital.' 'France is in Europe.']", NUMPY_ARRAY_HINT.removeprefix("; ")),
    ("[np.str_('Paris is the capital.')]", NUMPY_ARRAY_HINT.removeprefix("; ")),
    ("['Paris is the capital.', 'France is' 'in Europe.']", "two of its items have no comma between them, which "
                                                            "Python would read as one"),
    ("Paris is the capital.", 'a single chunk is written ["the chunk"]'),
    # a chunk that starts with a bracket, a Markdown link's, is plain text too (a probe: a docs chatbot's)
    ("[Upload guide](https://acme.dev/upload) explains it.", 'a single chunk is written ["the chunk"]'),
])
def test_a_string_where_the_contexts_list_belongs_gets_the_hint_for_what_it_holds(tmp_path, contexts, hint):
    """Text of a list that is not read as one: numpy's (Python would join its items, with no commas between
    them, into one chunk: ast.literal_eval, which this hint once offered, did so for a ragas probe), or
    plain text (one chunk or many run together: only the user knows)."""
    message = load_error(write_jsonl(tmp_path, {**FULL, "retrieved_contexts": contexts}))
    assert message.endswith(f"field 'retrieved_contexts': expected a list of strings, got a string; {hint}"), message


def test_a_list_cut_off_is_not_told_to_be_written_as_one_chunk(tmp_path):
    """A CSV cell cut at a spreadsheet's 32,767 characters begins as a list: the single-chunk hint, which a
    Markdown link's bracket now gets, would mislead (a review)."""
    message = load_error(write_jsonl(tmp_path, {**FULL, "retrieved_contexts": '["Paris is the capital.", "France is in Eur'}))
    assert message.endswith("field 'retrieved_contexts': expected a list of strings, got a string"), message
    without_reference = {key: value for key, value in FULL.items() if key != "reference"}
    message = load_error(write_jsonl(tmp_path, {**without_reference, "ground_truths": "[Upload guide](https://acme.dev) "
                                                                                      "explains it."}))
    assert message.endswith("a single reference is written 'reference' (or 'ground_truth')"), message


def test_a_record_of_another_export_among_the_files_is_named_in_the_warning(tmp_path):
    """A record with none of the fields read (query/context/generated_answer among user_input/...) was
    scored as all nulls, said only as a field count among the ignored ones."""
    other = {"id": "x", "query": "q", "context": ["c"], "generated_answer": "a"}
    path = write_jsonl(tmp_path, FULL, other, {**FULL, "id": "q3"})
    with pytest.warns(IgnoredFieldsWarning) as caught:
        assert len(load_samples(path)) == 3
    (warning,) = caught
    assert str(warning.message).endswith("; 1 of 3 records have no field localeval reads, so every score of "
                                         "theirs will be null (line 2)")


def test_a_frameworks_field_names_are_said_with_the_names_to_give_them(tmp_path):
    """A LangChain chain's output ({input, context, answer}) was read as an answer alone, every other score null,
    and 'context' got "did you mean 'contexts'?", a ragas name (a LangChain probe)."""
    path = write_jsonl(tmp_path, {"input": "q", "context": [{"page_content": "c."}], "answer": "a.",
                                  "source_nodes": [], "query_str": "q"})
    with pytest.warns(IgnoredFieldsWarning) as caught:
        load_samples(path)
    message = str(caught[0].message)
    assert "'input' (LangChain's name for what localeval reads as user_input: rename it)" in message
    assert "'context' (LangChain's name for what localeval reads as retrieved_contexts: rename it)" in message
    assert "'source_nodes' (LlamaIndex's name for what localeval reads as retrieved_contexts: rename it)" in message
    assert "'query_str' (LlamaIndex's name for what localeval reads as user_input: rename it)" in message


def test_an_ignored_field_close_to_one_read_names_it(tmp_path):
    """A header "User_Input" was listed among the ignored fields, and every score was null, exit 0 (a paths
    probe); "question_id", a field of its own, is not taken for "question"."""
    path = tmp_path / "data.csv"
    path.write_text('User_Input, Contexts,response,question_id\nq,"[""c.""]",r.,7\n', encoding="utf-8")
    with pytest.warns(IgnoredFieldsWarning) as caught:
        load_samples(path)
    (warning,) = caught
    assert ("'User_Input' (did you mean 'user_input'? names are read as written) (1 of 1 records), 'Contexts' (did "
            "you mean 'contexts'? names are read as written) (1 of 1 records), 'question_id' (1 of 1 records);") \
        in str(warning.message)


def test_labeled_data_loads_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredFieldsWarning)
        assert load_samples(LABELED)
        assert read_labeled(LABELED, ["context_recall"])


def test_default_id_is_physical_line_in_jsonl(tmp_path):
    path = write_jsonl(tmp_path, {"user_input": "a"}, "", "   ", {"user_input": "b"})
    assert [s.id for s in load_samples(path)] == ["1", "4"]


def test_int_id_becomes_str(tmp_path):
    assert load_samples(write_jsonl(tmp_path, {"id": 7}))[0].id == "7"


def test_duplicate_id(tmp_path):
    message = load_error(write_jsonl(tmp_path, {"id": "a"}, {"id": "b"}, {"id": "a"}))
    assert "data.jsonl, line 3" in message
    assert "duplicate id 'a'" in message and "line 1" in message


def test_a_clash_with_a_default_id_says_which_record_gave_none(tmp_path):
    message = load_error(write_jsonl(tmp_path, {"user_input": "q"}, {"id": "1", "user_input": "q"}))
    assert "duplicate id '1' (first used at line 1, which has no id and so takes the id '1')" in message
    message = load_error(write_jsonl(tmp_path, {"id": 2, "user_input": "q"}, {"user_input": "q"}))
    assert "data.jsonl, line 2" in message and "this line has no id and so takes the id '2'" in message
    assert "which has no id" not in load_error(write_jsonl(tmp_path, {"id": "a"}, {"id": "a"}))


def test_a_csv_clash_with_a_default_id_names_the_id_it_took_not_its_line_number(tmp_path):
    """A CSV row's default id is its number below the header, not its line's (line 2 takes '1')."""
    message = load_error(write_csv(tmp_path, "id,user_input\n,q\n1,q2\n"))
    assert "data.csv, line 3: duplicate id '1' (first used at line 2, which has no id and so takes the id '1')" \
        in message
    message = load_error(write_csv(tmp_path, 'id,user_input\n2,"two\nlines"\n,q\n'))
    assert "line 4: duplicate id '2' (first used at line 2); this line has no id and so takes the id '2'" in message


@pytest.mark.parametrize(("text", "expected"), [
    (",,\nq,a,b\n", "line 1: the header is empty"),
    ("sep=:\nuser_input:response\nq:a\n", "line 1: the first line, 'sep=:', names no separator localeval reads; "
                                         "it reads , ; tab and |"),
    ("sep=;;\nuser_input;response\nq;a\n", "line 1: the first line, 'sep=;;', names no separator"),
    ("sep=\nuser_input,response\nq,a\n", "line 1: the first line, 'sep=', names no separator"),
    ("user_input,retrieved_contexts\nq,\"['a' 'b']\"\n", "this is numpy's text of its strings, as pandas' to_csv "
                                                         "writes a column of numpy arrays"),
    ("user_input,retrieved_contexts\nq,\"['a' 'b'\n 'c']\"\n", "write that column as JSON before to_csv, "
                                                             "frame[column].map(lambda chunks: json.dumps(list(chunks)))"),
    ("user_input,retrieved_contexts\nq,\"['a' ... 'z']\"\n", "this is numpy's text of its strings"),
    ("user_input,retrieved_contexts\nq,[\u201ca\u201d]\n", "its quotes are typographic"),
    ("user_input,retrieved_contexts\nq,The tower is tall.\n", "character 1 of the cell); a single chunk is "
                                                              'written ["the chunk"]'),
    ("user_input,retrieved_contexts\nq," + "[" * 100_000 + "]" * 100_000 + "\n", "line 2, field 'retrieved_contexts': "
     "JSON nested deeper than about 1,000 levels"),
])
def test_what_spreadsheets_and_pandas_write_instead_of_localevals_csv_is_explained(tmp_path, text, expected):
    assert expected in load_error(write_csv(tmp_path, text))


def test_a_conversation_where_the_question_belongs_is_said_to_be_one(tmp_path):
    """ragas's multi-turn samples give user_input as a list of messages: "expected a string, got a list" said
    nothing of what to do (a ragas probe)."""
    turns = [{"content": "Which tower?", "type": "human"}, {"content": "The Eiffel tower.", "type": "ai"}]
    message = load_error(write_jsonl(tmp_path, {**FULL, "user_input": turns}))
    assert message.endswith("field 'user_input': expected a string, got a list; a conversation (a list of messages, as "
                            "in ragas's multi-turn samples) is not scored: give its last question as user_input, and "
                            "the turns before it among the retrieved contexts if the answer draws on them")
    assert load_error(write_jsonl(tmp_path, {**FULL, "user_input": ["a", "b"]})).endswith("expected a string, got a list")
    # a conversation where the response belongs is no question to move (a review)
    assert load_error(write_jsonl(tmp_path, {**FULL, "response": turns})).endswith("expected a string, got a list")


def test_pandas_to_csv_of_list_columns_is_read_as_the_lists_it_wrote(tmp_path):
    """pandas writes a list column as Python writes a list ('it''s' in double quotes): every ragas export saved
    with to_csv was refused, each user told to rewrite the file (a ragas probe). The lists come back as they
    were, ground_truths joined as from JSON; read_csv's frame of the same file gives the same samples."""
    pandas = pytest.importorskip("pandas")
    contexts = ["The game was played on January 15, 1967.", "It's at the Coliseum, \"the\" stadium."]
    path = tmp_path / "ragas.csv"
    pandas.DataFrame([{"question": "When?", "contexts": contexts, "answer": "In 1967.",
                       "ground_truths": ["January 15, 1967", "At the Coliseum"]}]).to_csv(path, index=False)
    sample = load_samples(path)[0]
    assert sample.retrieved_contexts == tuple(contexts)
    assert sample.reference == "January 15, 1967. At the Coliseum."
    from localeval.api import as_samples

    assert as_samples(pandas.read_csv(path)) == [sample]


def test_json_lines_saved_as_json_and_other_shapes_are_told_apart(tmp_path):
    """JSON Lines named .json read as 'Extra data' on line 2; a list on a .jsonl line, an object that
    wraps the list under another key: each said what it got and no more."""
    lines = write_jsonl(tmp_path, FULL, {**FULL, "id": "q2"}, name="data.json")
    assert load_error(lines).endswith("data.json, line 2: malformed JSON: Extra data (column 1); each line holds a "
                                      "JSON object, as in JSON Lines, which localeval reads from a .jsonl file")
    array = write_jsonl(tmp_path, [FULL, {**FULL, "id": "q2"}])
    assert load_error(array).endswith("line 1: expected a JSON object, got a list (a JSON array of records is a "
                                      ".json file)")
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"data": {"samples": [FULL]}, "version": 2}), encoding="utf-8")
    assert load_error(wrapped).endswith("expected a list of samples or an object with a 'samples' list; got an "
                                        "object with the keys 'data', 'version'")
    # the list under another key; pandas' to_json by columns, its default (a ragas probe): each said what to do
    wrapped.write_text(json.dumps({"data": [FULL]}), encoding="utf-8")
    assert load_error(wrapped).endswith("got an object with the keys 'data'; its 'data' is a list: name that key "
                                        "'samples'")
    # no such hint inside 'samples', nor for a list of other things (bench.json's judges' names) (a review)
    for other in ({"samples": {"data": [FULL]}}, {"judges": ["a", "b"], "metrics": {}}):
        wrapped.write_text(json.dumps(other), encoding="utf-8")
        assert "name that key" not in load_error(wrapped)
    wrapped.write_text(json.dumps({"user_input": {"0": "q"}, "response": {"0": "r"}}), encoding="utf-8")
    assert load_error(wrapped).endswith("; each key holds an object, as pandas' to_json writes a frame by columns: "
                                        "write it with to_json(path, orient='records'), a list of samples")
    broken = tmp_path / "broken.json"
    broken.write_text('[{"user_input": "q",}]', encoding="utf-8")
    assert "JSON Lines" not in load_error(broken)  # a plain mistake in a JSON file gets no such hint
    twice = write_jsonl(tmp_path, '{"user_input": "q", "user_input": "r"}', FULL, name="twice.json")
    assert load_error(twice).endswith("key 'user_input' appears twice in one object; keep only one")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "\n{}\n", encoding="utf-8")
    assert "JSON nested deeper than about 1,000 levels" in load_error(deep)  # not a RecursionError


@pytest.mark.parametrize("text", [
    # Excel where the decimal mark is a comma
    "user_input;retrieved_contexts;response\nq;\"[\"\"a, b\"\", \"\"c\"\"]\";r\n",
    "sep=;\nuser_input;retrieved_contexts;response\nq;[\"a, b\", \"c\"];r\n",  # with Excel's hint line
    "\ufeffuser_input\tretrieved_contexts\tresponse\nq\t[\"a, b\", \"c\"]\tr\n",  # tabs, after a byte-order mark
    "user_input|retrieved_contexts|response\nq|[\"a, b\", \"c\"]|r\n",
    "sep=\t\nuser_input\tretrieved_contexts\tresponse\nq\t[\"a, b\", \"c\"]\tr\n",  # the hint naming a tab
    'user_input;retrieved_contexts;"response, final"\nq;["a, b", "c"];r\n',  # a quoted name holding a comma
])
def test_csv_with_another_separator_is_read_as_excel_writes_it(tmp_path, text):
    """Excel saves "CSV" with semicolons where the decimal mark is a comma: "save it with commas" asked
    for a change of the system's settings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IgnoredFieldsWarning)  # "response, final": a column of the user's own
        (sample,) = load_samples(write_csv(tmp_path, text))
    assert (sample.user_input, sample.retrieved_contexts) == ("q", ("a, b", "c"))
    assert sample.response == (None if "final" in text else "r")


def test_a_one_column_tab_separated_csv_is_not_read_as_commas(tmp_path):
    """pandas' to_csv(sep="\t") of a one-column frame writes its index column first: "\tuser_input"."""
    samples = load_samples(write_csv(tmp_path, "\tuser_input\n0\tq\n1\tr\n"))
    assert [sample.user_input for sample in samples] == ["q", "r"]


def test_csv_ids_pandas_wrote_as_floats_are_the_ids_its_parquet_gives(tmp_path):
    """pandas stores an integer column with a missing value as floats, and to_csv writes 1.0."""
    with pytest.warns(MissingIdsWarning) as warned:  # the empty cell: an id of another kind than the others
        samples = load_samples(write_csv(tmp_path, "id,user_input\n1.0,a\n,b\n3.0,c\nv1.0,d\n"))
    assert [sample.id for sample in samples] == ["1", "2", "3", "v1.0"]
    assert str(warned[0].message).endswith(": 1 of 4 records have no id, so each is given one from where it stands "
                                           "(line 3 gets the id '2'); give every record an id, or none")


@pytest.mark.parametrize(("header", "named"), [
    (",user_input", "'' (the frame's index, as to_csv writes it; index=False leaves it out) (1 of 1 records)"),
    ("__index_level_0__,user_input", "'__index_level_0__' (the frame's index, as to_parquet keeps it; name it id"),
])
def test_a_saved_pandas_index_is_named_for_what_it_is(tmp_path, header, named):
    with pytest.warns(IgnoredFieldsWarning) as warned:
        load_samples(write_csv(tmp_path, f"{header}\n0,q\n"))
    assert named in str(warned[0].message)


def test_records_that_all_give_an_id_or_all_none_are_not_warned_of(tmp_path, recwarn):
    assert [s.id for s in load_samples(write_csv(tmp_path, "user_input\na\nb\n"))] == ["1", "2"]
    assert [s.id for s in load_samples(write_csv(tmp_path, "id,user_input\nx,a\ny,b\n"))] == ["x", "y"]
    assert not [w for w in recwarn if issubclass(w.category, MissingIdsWarning)]


@pytest.mark.parametrize("before", ["sep=,\r\n", "SEP=,\r\n", "\r\n\r\n", "\r\nsep=,\r\n", "sep=,\r\n\r\n"])
def test_excels_separator_hint_and_blank_lines_before_the_header_are_skipped(tmp_path, before):
    (sample,) = load_samples(write_csv(tmp_path, before + 'user_input,response\r\nq,a\r\n'))
    assert (sample.id, sample.user_input, sample.response) == ("1", "q", "a")


def test_duplicate_id_in_json_names_record(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps([{"id": 1}, {"id": "1"}]), encoding="utf-8")
    message = load_error(path)
    assert "data.json, record 2" in message and "duplicate id '1'" in message


@pytest.mark.parametrize("value, kind", [(True, "true/false"), (1.5, "got 1.5, not a whole number"), ("", "an empty string"), ("  ", "an empty string"), ([1], "a list")])
def test_bad_id(tmp_path, value, kind):
    message = load_error(write_jsonl(tmp_path, {"id": value}))
    assert "data.jsonl, line 1, field 'id'" in message and kind in message


# --- field types ----------------------------------------------------------------------------------


def test_single_string_context_is_refused_with_the_list_to_write(tmp_path):
    # one chunk, or several run together? Only the user knows: the documented type is a list
    message = load_error(write_jsonl(tmp_path, {"retrieved_contexts": "only one"}))
    assert "field 'retrieved_contexts'" in message and "got a string" in message and '["the chunk"]' in message


def test_null_fields_are_absent(tmp_path):
    record = {name: None for name in ("user_input", "retrieved_contexts", "response", "reference", "language")}
    assert load_samples(write_jsonl(tmp_path, record)) == [Sample(id="1")]


def test_nan_as_json_dumps_writes_pandas_missing_value_reads_as_null(tmp_path):
    """It was "expected a string, got a number", where evaluate() on the same frame takes NaN as absent."""
    path = tmp_path / "data.jsonl"
    path.write_text('{"user_input": "q", "retrieved_contexts": ["c."], "response": NaN}\n'
                    '{"user_input": "q", "retrieved_contexts": ["c."], "response": Infinity}\n', encoding="utf-8")
    assert load_error(path).endswith("line 2, field 'response': expected a string, got a number")
    path.write_text('{"user_input": "q", "retrieved_contexts": ["c."], "response": NaN}\n', encoding="utf-8")
    assert load_samples(path) == [Sample(id="1", user_input="q", retrieved_contexts=("c.",))]


@pytest.mark.parametrize(
    "value, kind",
    [(3, "a number"), ({"a": "b"}, "an object"), (["ok", 2], "a number at item 2"), ([["x"]], "a list at item 1")],
)
def test_bad_contexts(tmp_path, value, kind):
    message = load_error(write_jsonl(tmp_path, {"user_input": "q"}, {}, {"retrieved_contexts": value}))
    assert message == f"{tmp_path / 'data.jsonl'}, line 3, field 'retrieved_contexts': expected a list of strings, got {kind}"


@pytest.mark.parametrize("document", [
    {"page_content": "Paris is in France.", "metadata": {"source": "wiki"}},  # LangChain's Document, saved
    {"text": "Paris is in France.", "id_": "n1", "metadata": {}},  # LlamaIndex's node
    {"content": "Paris is in France.", "meta": {}, "score": 0.8},  # Haystack's Document
    {"node": {"id_": "n1", "text": "Paris is in France.", "metadata": {}}, "score": 0.87},  # NodeWithScore.model_dump()
    {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "document", "Document"],  # dumpd(document)
     "kwargs": {"page_content": "Paris is in France.", "metadata": {}}},
], ids=["langchain", "llamaindex", "haystack", "llamaindex-node-with-score", "langchain-dumpd"])
def test_a_retrieved_document_saved_as_its_library_saves_it_is_read_by_its_text(tmp_path, document):
    path = write_jsonl(tmp_path, {"user_input": "q", "retrieved_contexts": [document, "Lyon is too."]})
    (sample,) = load_samples(path)
    assert sample.retrieved_contexts == ("Paris is in France.", "Lyon is too.")


def test_a_document_without_its_text_is_refused_naming_where_the_text_is_looked_for(tmp_path):
    message = load_error(write_jsonl(tmp_path, {"retrieved_contexts": [{"source": "wiki", "text": 3}]}))
    assert message.endswith('expected a list of strings, got an object at item 1 (a retrieved document is read by '
                            'its text, under "page_content" or "text" or "content", which it does not hold as a string)')


def test_a_document_with_two_texts_is_refused_rather_than_one_guessed(tmp_path):
    """Haystack saves a Document's metadata beside its content: a metadata field "text" is not the chunk."""
    message = load_error(write_jsonl(tmp_path, {"retrieved_contexts": [{"content": "The chunk.", "text": "a label"}]}))
    assert message.endswith("got an object at item 1 that holds 'text' and 'content': which is the chunk's text? "
                            "Give it as a string")
    (sample,) = load_samples(write_jsonl(tmp_path, {"retrieved_contexts": [{"content": "The chunk.", "text": "The chunk."}]}))
    assert sample.retrieved_contexts == ("The chunk.",)  # the same text twice says one thing


def test_bad_contexts_message_uses_the_alias_written(tmp_path):
    message = load_error(write_jsonl(tmp_path, {"contexts": 3}))
    assert "line 1, field 'contexts'" in message


@pytest.mark.parametrize("field", ["user_input", "response", "reference", "language"])
@pytest.mark.parametrize("value, kind", [(1, "a number"), (["a"], "a list"), (False, "true/false")])
def test_bad_text_field(tmp_path, field, value, kind):
    message = load_error(write_jsonl(tmp_path, {field: value}))
    assert message == f"{tmp_path / 'data.jsonl'}, line 1, field '{field}': expected a string, got {kind}"


def test_bad_field_in_json_names_record(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"samples": [FULL, {"response": 5}]}), encoding="utf-8")
    message = load_error(path)
    assert message == f"{path}, record 2, field 'response': expected a string, got a number"


# --- malformed files ------------------------------------------------------------------------------


@pytest.mark.parametrize("line, kind", [("[1, 2]", "a list"), ('"text"', "a string"), ("null", "null")])
def test_record_not_an_object(tmp_path, line, kind):
    message = load_error(write_jsonl(tmp_path, FULL, line))
    assert "data.jsonl, line 2" in message and f"expected a JSON object, got {kind}" in message


def test_json_record_not_an_object(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps([FULL, {"id": "x"}, 3]), encoding="utf-8")
    assert "data.json, record 3: expected a JSON object, got a number" in load_error(path)


def test_malformed_jsonl(tmp_path):
    message = load_error(write_jsonl(tmp_path, FULL, "", '{"user_input": "q",}'))
    assert "data.jsonl, line 3" in message and "malformed JSON" in message
    assert len(message) < 200


def test_a_key_given_twice_is_refused_not_silently_overwritten(tmp_path):
    message = load_error(write_jsonl(tmp_path, FULL, '{"user_input": "q", "response": "a", "response": "b"}'))
    assert "data.jsonl, line 2" in message and "key 'response' appears twice" in message
    path = tmp_path / "data.json"
    path.write_text('{"samples": [{"user_input": "q"}], "samples": []}', encoding="utf-8")
    assert "key 'samples' appears twice" in load_error(path)


def test_malformed_json_reports_line(tmp_path):
    path = tmp_path / "data.json"
    path.write_text('[\n  {"user_input": "a"},\n  {"user_input": "b"\n]\n', encoding="utf-8")
    message = load_error(path)
    assert "data.json, line 4" in message and "malformed JSON" in message


def test_json_top_level_not_a_list(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"rows": []}), encoding="utf-8")
    assert "expected a list of samples" in load_error(path)


def test_raw_line_separator_inside_jsonl_string(tmp_path):
    # U+2028 is legal unescaped inside a JSON string; it must not split the line.
    path = tmp_path / "data.jsonl"
    path.write_text('{"user_input": "a\u2028b"}\n{"user_input": "c"}\n', encoding="utf-8")
    assert [s.id for s in load_samples(path)] == ["1", "2"]


@pytest.mark.parametrize(
    "name, content, line",
    [
        ("data.jsonl", b'{"id": 1}\n\n{"user_input": "caf\xe9"}\n', 3),
        ("data.json", b'[{"id": 1},\n {"user_input": "caf\xe9"}]', 2),
        ("data.csv", b"user_input\r\nfine\r\ncaf\xe9\r\n", 3),
    ],
)
def test_not_utf8(tmp_path, name, content, line):
    path = tmp_path / name
    path.write_bytes(content)  # the \xe9 is Latin-1 for "e" with an accent
    message = load_error(path)
    assert message.startswith(f"{path}, line {line}: not UTF-8 text")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_that_says_so_is_read(tmp_path, encoding):
    """Excel's "Unicode Text" and Windows tools write UTF-16 with its mark: it was "not UTF-8 text (byte 0xff)"."""
    path = tmp_path / "data.csv"
    bom = "\ufeff" if encoding == "utf-16-be" else ""  # utf-16 writes its own mark; utf-16-be none
    path.write_bytes((bom + "id,user_input,response\nq1,Wann öffnet es?,Um neun.\n").encode(encoding))
    (sample,) = load_samples(path)
    assert (sample.id, sample.user_input, sample.response) == ("q1", "Wann öffnet es?", "Um neun.")
    path.write_bytes("id,user_input\nq1,x\n".encode("utf-16") + b"\x00\xd8")  # a lone surrogate at the end
    assert load_error(path) == f"{path}: begins as UTF-16 text but is not UTF-16 throughout; save it as UTF-8"
    path.write_bytes("id,user_input\nq1,x\n".encode("utf-32"))  # its mark begins as UTF-16's: "malformed JSON"
    assert load_error(path) == f"{path}: UTF-32 text; save it as UTF-8"


def test_utf8_bom_is_accepted(tmp_path):
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps(FULL).encode())
    csv_file = write_csv(tmp_path, "\ufeffid,user_input\nq1,hi\n")
    assert load_samples(jsonl) == [EXPECTED]
    assert load_samples(csv_file) == [Sample(id="q1", user_input="hi")]


@pytest.mark.parametrize("name, content", [("data.jsonl", "\n\n  \n"), ("data.json", ""), ("data.json", "[]"),
                                           ("data.json", '{"samples": []}'), ("data.csv", ""), ("data.jsonl", "\ufeff")])
def test_empty_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert load_error(path) == f"{path}: no samples"


def test_missing_file(tmp_path):
    assert load_error(tmp_path / "nope.jsonl") == f"{tmp_path / 'nope.jsonl'}: file not found"


def test_directory(tmp_path):
    folder = tmp_path / "data.jsonl"
    folder.mkdir()
    assert "is a directory" in load_error(folder)


def test_unknown_extension(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("hello", encoding="utf-8")
    message = load_error(path)
    assert "data.txt" in message and "'.txt'" in message
    for ext in (".jsonl", ".json", ".csv", ".tsv", ".parquet"):
        assert ext in message
    assert message.endswith("; a tab-separated .txt (Excel's Unicode Text): rename it .tsv")


def test_a_tsv_file_is_read_as_csv(tmp_path):
    """Excel's "Unicode Text", UTF-16 and tab-separated, renamed .tsv: refused by its name (a paths probe)."""
    path = tmp_path / "data.tsv"
    path.write_text('user_input\tretrieved_contexts\tresponse\nq\t["c."]\tr.\n', encoding="utf-16")
    (sample,) = load_samples(path)
    assert (sample.user_input, sample.retrieved_contexts, sample.response) == ("q", ("c.",), "r.")


def test_extension_is_case_insensitive(tmp_path):
    assert load_samples(write_jsonl(tmp_path, FULL, name="DATA.JSONL")) == [EXPECTED]


# --- parquet --------------------------------------------------------------------------------------


def test_parquet_without_pandas_or_pyarrow(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def failing_import(name, *args, **kwargs):
        if name.split(".")[0] == "pyarrow":  # pandas is not needed, so it may stay
            raise ImportError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing_import)
    path = tmp_path / "data.parquet"
    path.write_bytes(b"PAR1")
    message = load_error(path)
    assert message == f"{path}: {PARQUET_HINT}"
    assert message.endswith("reading Parquet needs pyarrow: pip install pyarrow")


def test_parquet_round_trip(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    # Every row carries every key: from_pylist infers the schema from the first row alone.
    rows = [{**FULL, "language": None}, {**dict.fromkeys(FULL), "id": "q2", "user_input": "second", "language": "zh"}]
    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert load_samples(path) == [EXPECTED, Sample(id="q2", user_input="second", language="zh")]


def test_parquet_unreadable(tmp_path):
    pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "data.parquet"
    path.write_bytes(b"not parquet at all")
    assert "not a readable Parquet file" in load_error(path)


# --- the shared development set ------------------------------------------------------------------


@pytest.mark.skipif(not DEV_SET.exists(), reason="shared dev set not present")
def test_dev_set_loads():
    samples = load_samples(DEV_SET)
    assert len(samples) == 30
    assert [s.id for s in samples] == [f"dev-{n:03d}" for n in range(1, 31)]
    assert sum(s.language == "zh" for s in samples) == 4
    assert all(s.language in (None, "zh") for s in samples)
    assert all(s.user_input and s.response and s.reference and s.retrieved_contexts for s in samples)
    assert not hasattr(samples[0], "labels")


def test_in_memory_records_are_checked_like_a_file():
    from localeval.api import as_samples
    from localeval.errors import DataError

    samples = as_samples([{"question": "q?", "contexts": ("a", "b"), "answer": "r."}, {"id": 7, "user_input": "x"}])
    assert [s.id for s in samples] == ["1", "7"]
    assert samples[0].user_input == "q?" and samples[0].retrieved_contexts == ("a", "b")
    with pytest.raises(DataError, match="samples, record 2, field 'retrieved_contexts'"):
        as_samples([{"user_input": "q"}, {"user_input": "q", "retrieved_contexts": 5}])
    with pytest.raises(DataError, match="duplicate id '1'"):
        as_samples([{"id": "1"}, {"id": 1}])


def test_samples_and_records_can_be_mixed_and_ids_stay_unique():
    from localeval.api import as_samples
    from localeval.errors import DataError
    from localeval.samples import Sample

    mixed = as_samples([Sample(id="a", user_input="q"), {"question": "q2"}])
    assert [s.id for s in mixed] == ["a", "2"] and mixed[1].user_input == "q2"
    with pytest.raises(DataError, match="duplicate id 'a'"):
        as_samples([Sample(id="a"), {"id": "a"}])


@pytest.mark.parametrize(("fields", "expected"), [
    # a string of contexts would be read character by character, each a chunk: silently wrong scores
    ({"retrieved_contexts": "x is y. z."}, "field 'retrieved_contexts': expected a list of strings, got a string"),
    ({"retrieved_contexts": ("x", None)}, "field 'retrieved_contexts': expected a list of strings, got null at item 2"),
    ({"retrieved_contexts": ("x", float("nan"))},  # pandas' missing value in a list: "got a number" misled
     "field 'retrieved_contexts': expected a list of strings, got NaN (a missing value) at item 2"),
    ({"response": 5}, "field 'response': expected a string, got a number"),
    ({"id": ""}, "field 'id': expected a non-empty string or a whole number, got an empty string"),
    ({"id": 1.5}, "field 'id': expected a non-empty string or a whole number, got 1.5, not a whole number"),
    # a document pasted into the id's column: a 10 MB id made a 40 MB report
    ({"id": "x" * 1001}, "field 'id': an id of 1,001 characters; an id names its sample on every results line"),
    ({"id": 10 ** 1001}, "field 'id': an id of 1,002 characters; an id names its sample on every results line"),
    ({"language": "xx"}, "field 'language': 'xx' is not a language pysbd splits into sentences; choose from"),
    ({"language": "th-TH"}, "field 'language': 'th-TH' is not a language pysbd splits into sentences; choose from"),
])
def test_sample_objects_are_checked_as_their_fields_would_be_in_a_record(fields, expected):
    from localeval.api import as_samples
    from localeval.errors import DataError
    from localeval.samples import Sample

    with pytest.raises(DataError, match=re.escape(f"samples, record 1, {expected}")):
        as_samples([Sample(**{"id": "a", "user_input": "q?", "response": "r.", **fields})])
    good = Sample(id="a", user_input="q?", retrieved_contexts=("x",), response="r.", language="zh")
    assert as_samples([good]) == [good]
    long_id = Sample(id="x" * 1000, user_input="q?")  # a path or a URL fits
    assert as_samples([long_id]) == [long_id]


@pytest.mark.parametrize("record, said", [
    ({"id": "q1", "user_input": "q\\ud800?", "response": "r"}, "field 'user_input': holds \\ud800 at character 2, "),
    ({"id": "a\\udcff", "user_input": "q"}, "field 'id': holds \\udcff at character 2, "),
    ({"id": "q1", "user_input": "q", "retrieved_contexts": ["c", "x\\udcffy"]},
     "field 'retrieved_contexts': holds \\udcff at character 2 of item 2, "),
])
def test_half_of_a_utf16_pair_is_refused_where_it_is(tmp_path, record, said):
    """JSON's "\\udcff" escape alone is no character: a run scored every sample, then could not write it, a
    UnicodeEncodeError traceback, and --resume met it again (a probe)."""
    line = json.dumps(record).replace("\\\\u", "\\u")  # the escape as a JSON file holds it, not a backslash
    path = write_jsonl(tmp_path, line)
    assert load_error(path) == (f"{path}, line 1, {said}half of a UTF-16 pair without its other half, which is no "
                                "character; write the character itself")


def test_a_number_too_long_to_read_is_one_error_where_it_is(tmp_path):
    """A 10,000-digit number, even in an ignored field, was json's ValueError, a traceback, exit 1 (a security probe)."""
    path = write_jsonl(tmp_path, {"id": "q1", "user_input": "q"}, '{"id": "q2", "user_input": "q", "n": ' + "9" * 10_000 + "}")
    assert load_error(path) == f"{path}, line 2: a number of more than 4,300 digits, more than Python reads; write it as a string"
    csv = tmp_path / "data.csv"
    csv.write_text('id,user_input,retrieved_contexts\nq1,q,"[' + "9" * 10_000 + ']"\n', encoding="utf-8")
    assert load_error(csv).startswith(f"{csv}, line 2, field 'retrieved_contexts': a number of more than 4,300 digits")


def test_a_header_of_many_columns_is_read_in_linear_time_and_warned_of_in_one_short_line(tmp_path):
    """A header of 200,000 columns took 238 s before its one error (list.count per column), and 20,000 ignored
    columns made a warning of 1 MB, kept in summary.json and the report (a security probe)."""
    import time

    path = tmp_path / "data.csv"
    count = 60_000
    path.write_text(",".join(f"f{i}" for i in range(count)) + ",user_input\n" + "x," * count + "q\n", encoding="utf-8")
    started = time.perf_counter()
    with pytest.warns(IgnoredFieldsWarning) as warned:
        (sample,) = load_samples(path)
    assert time.perf_counter() - started < 8  # about 0.2 s; the count per column took about 20 s
    message = str(warned[0].message)
    assert sample.user_input == "q" and f"'f9' (1 of 1 records) and {count - 10:,} more" in message and len(message) < 800


def test_pydantic_models_and_dataclasses_are_read_as_their_fields_and_one_alone_is_told_to_be_a_list():
    """"expected a JSON object, got a P" for an application's own sample models (a custom-metric probe)."""
    import dataclasses

    import pydantic

    from localeval.data import samples_in_memory
    from localeval.samples import Sample

    class Asked(pydantic.BaseModel):
        user_input: str
        response: str

    @dataclasses.dataclass
    class Answered:
        user_input: str
        response: str

    read = samples_in_memory([Asked(user_input="q?", response="a."), Answered("q2?", "b.")])
    assert [(s.id, s.user_input, s.response) for s in read] == [("1", "q?", "a."), ("2", "q2?", "b.")]
    for one in (Asked(user_input="q?", response="a."), Answered("q?", "a."), Sample(id="1", user_input="q?")):
        with pytest.raises(UserError, match=rf"got a single {type(one).__name__}; give .* \(one sample is \[sample\]\)"):
            samples_in_memory(one)


@pytest.mark.parametrize(("tag", "code"), [("de-DE", "de"), ("zh-Hans", "zh"), ("zh_CN", "zh"), ("EN", "en"),
                                          (" ja ", "ja"), ("", None), ("  ", None)])
def test_a_language_tag_is_read_by_its_language_and_a_blank_one_is_none(tag, code):
    """A system's own tags (BCP 47's de-DE, zh-Hans) were refused, each with "did you mean"; a region or a
    script changes no sentence end. A blank one is none given, in JSON as in a CSV's empty cell (a probe)."""
    from localeval.api import as_samples

    from localeval.text import check_language

    (sample,) = as_samples([{"id": "a", "user_input": "q?", "language": tag}])
    assert sample.language == code
    if code is not None:  # --language and evaluate(language=) read it alike
        assert check_language(tag) == code


def test_a_language_that_is_not_text_is_one_clear_error():
    """evaluate(language=None) failed with an AttributeError from inside (a review)."""
    from localeval import evaluate

    with pytest.raises(UserError, match=re.escape("language=None: give a language code, such as en (the default)")):
        evaluate([{"id": "a", "user_input": "q?"}], language=None)


def test_the_readme_lists_every_language_pysbd_splits():
    """The codes a sample may name were in no document, only in the error that refused one (a probe)."""
    from localeval.text import SUPPORTED_LANGUAGES

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"A sample's language is pysbd's: `([a-z ]+)`", readme).group(1).split()
    assert listed == sorted(SUPPORTED_LANGUAGES)
