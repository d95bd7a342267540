"""`localeval compare BEFORE AFTER`: two runs' scores side by side for a nightly job (a QA-lead probe found no way
to compare runs but by hand)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from localeval.cli import EXIT_BELOW_THRESHOLD, EXIT_OK, EXIT_USER, main

SHA = "1e8781255bd932d081ced1ff4110dede9235b3de7e1bf4025f1e3e7f1bdfcdf7"
JUDGE = "smollm2-135m-instruct|b179c9523d0e6a0f|torch.float32+prepacked|greedy"


def write_run(folder: Path, scores: dict[str, float | None], metric: str = "context_recall", **summary) -> Path:
    """A run's folder as `localeval run` writes it (docs/output.md): a results.jsonl line per sample and a summary."""
    folder.mkdir()
    rows = [{"schema_version": 1, "id": sample, metric: score, "evidence": {}} for sample, score in scores.items()]
    (folder / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    scored = [score for score in scores.values() if score is not None]
    row = {"mean": sum(scored) / len(scored) if scored else None, "interval": None, "scored": len(scored),
           "null": len(scores) - len(scored)}
    document = {"schema_version": 1, "metrics": {metric: row}, "samples": len(scores), "data": "d.jsonl",
                "data_sha256": SHA, "results_in_file": len(scores), "models": {"judge": JUDGE, "embedder": None},
                "settings": {"batch_size": 32, "scoring": {metric: "hard"}}, "finished": "2026-11-28T00:00:00+00:00",
                **summary}
    (folder / "summary.json").write_text(json.dumps(document), encoding="utf-8")
    return folder


def compared(capsys, *argv: str) -> tuple[int, dict, str]:
    status = main(["compare", *argv, "--json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if captured.out else {}, captured.err


def test_a_fall_every_sample_shares_is_lower_with_its_interval_and_the_samples_that_fell_most(tmp_path, capsys):
    before = write_run(tmp_path / "before", {str(i): 1.0 for i in range(20)})
    after = write_run(tmp_path / "after", {str(i): 0.5 if i < 10 else 1.0 for i in range(20)})
    status, found, err = compared(capsys, str(before), str(after))
    change = found["scores"]["context_recall"]
    assert status == EXIT_OK and found["notes"] == [] and found["gates_passed"] is None
    assert (change["before"], change["after"], change["paired"], change["paired_change"]) == (1.0, 0.75, 20, -0.25)
    assert change["mean_change"] == -0.25 and found["schema_version"] == 1
    assert change["interval"][1] < 0 and change["direction"] == "lower"
    assert [drop["id"] for drop in change["drops"]] == ["0", "1", "2"]  # three shown, the earliest of equal falls first


def test_a_move_within_noise_is_no_clear_change_few_pairs_name_no_direction_and_identical_runs_are_unchanged(
        tmp_path, capsys):
    before = write_run(tmp_path / "before", {str(i): float(i % 2) for i in range(12)})
    after = write_run(tmp_path / "after", {str(i): float(i % 2 == 0) if i < 4 else float(i % 2) for i in range(12)})
    assert compared(capsys, str(before), str(after))[1]["scores"]["context_recall"]["direction"] == "no clear change"
    assert compared(capsys, str(before), str(before / "summary.json"))[1]["scores"]["context_recall"]["direction"] == "unchanged"
    # two pairs that both fell: a bootstrap of two says nothing (a review: "lower" with [-0.2, -0.1])
    few_before, few_after = write_run(tmp_path / "b2", {"x": 1.0, "y": 1.0}), write_run(tmp_path / "a2", {"x": 0.9, "y": 0.8})
    change = compared(capsys, str(few_before), str(few_after))[1]["scores"]["context_recall"]
    assert change["direction"] == "too few pairs" and change["interval"] is None


def test_max_drop_fails_a_mean_that_fell_beyond_it_and_says_each_gate(tmp_path, capsys):
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 1.0})
    after = write_run(tmp_path / "after", {"a": 0.9, "b": 1.0})
    status, found, err = compared(capsys, str(before), str(after), "--max-drop", "0.02")
    assert status == EXIT_BELOW_THRESHOLD and found["gates_passed"] is False
    assert ("max-drop: context_recall fell by 0.050 over the paired samples, at most 0.02 allowed: FAILED\n"
            "max-drop: 1 of 1 gate FAILED\n") in err
    status, found, err = compared(capsys, str(before), str(after), "--max-drop", "0.02", "--max-drop", "context_recall=0.05")
    gate = found["gates"]["context_recall"]
    assert status == EXIT_OK and gate["passed"] and gate["failed"] is None and gate["max_drop"] == 0.05
    assert gate["drop"] == pytest.approx(0.05) and gate["paired_drop"] == pytest.approx(gate["mean_drop"])
    assert gate["null_rise"] == 0
    nothing = write_run(tmp_path / "nothing", {"a": None, "b": None})  # a build must not pass on nothing
    status, found, err = compared(capsys, str(before), str(nothing), "--max-drop", "0.5")
    assert status == EXIT_BELOW_THRESHOLD and "max-drop: context_recall has no mean after, where it had one before" in err
    # nothing before and after is no fall: a dataset without references failed every night (a CI probe)
    assert compared(capsys, str(nothing), str(nothing), "--max-drop", "0.05")[0] == EXIT_OK
    # nor on fewer samples: one left scored at 1.0 kept the mean where it was (a review); DROP bounds the null share
    fewer = write_run(tmp_path / "fewer", {"a": 1.0, "b": None})
    status, found, err = compared(capsys, str(before), str(fewer), "--max-drop", "0.2")
    assert status == EXIT_BELOW_THRESHOLD and found["scores"]["context_recall"]["lost"] == 1
    assert found["gates"]["context_recall"]["failed"] == "more null"
    assert ("max-drop: context_recall lost 50.0% of its shared samples to null (scored before, null after), at most "
            "0.2 allowed: FAILED") in err
    assert "samples scored before and null after (see their null_reason): context_recall 1" in found["notes"]
    assert compared(capsys, str(before), str(fewer), "--max-drop", "0.5")[0] == EXIT_OK
    # the other way: a sample null before and scored after moved the after mean alone (an upgrade probe)
    found = compared(capsys, str(fewer), str(before))[1]
    assert found["scores"]["context_recall"]["gained"] == 1 and found["scores"]["context_recall"]["lost"] == 0
    assert "samples null before and scored after (in the after mean only): context_recall 1" in found["notes"]


def test_a_gate_keeps_the_larger_of_the_paired_fall_and_the_fall_of_the_means(tmp_path, capsys):
    """One sample of 100 shared held still while the mean collapsed, and passed (a review); on other samples a CI
    gate errs towards failing, and says which fall it read."""
    before = write_run(tmp_path / "before", {str(i): 0.9 for i in range(100)})
    after = write_run(tmp_path / "after", {"0": 0.9, **{f"new{i}": 0.3 for i in range(99)}})
    status, found, err = compared(capsys, str(before), str(after), "--max-drop", "0.05")
    assert status == EXIT_BELOW_THRESHOLD and found["gates"]["context_recall"]["paired_drop"] == 0
    assert "max-drop: context_recall fell by 0.594 mean against mean, at most 0.05 allowed: FAILED" in err
    assert "the runs share 1 of their samples (100 before, 100 after)" in found["notes"][0]
    # nulls are counted on the shared samples: new samples that score null are no loss (a review)
    grown = write_run(tmp_path / "grown", {**{str(i): 0.9 for i in range(100)}, **{f"new{i}": None for i in range(50)}})
    status, found, err = compared(capsys, str(before), str(grown), "--max-drop", "0.05")
    assert status == EXIT_OK and found["gates"]["context_recall"]["null_rise"] == 0


def test_max_drop_given_twice_for_a_score_is_refused_and_a_score_gone_after_fails(tmp_path, capsys):
    before = write_run(tmp_path / "before", {"a": 1.0})
    for twice in (["0.2", "0.05"], ["context_recall=0.2", "context_recall=0.1"]):
        status, _, err = compared(capsys, str(before), str(before), *[f"--max-drop={drop}" for drop in twice])
        assert status == EXIT_USER and "is given a drop twice; keep one" in err
    after = write_run(tmp_path / "after", {"a": 1.0})
    summary = json.loads((after / "summary.json").read_text())
    summary["metrics"] = {"faithfulness": summary["metrics"].pop("context_recall")}
    (after / "summary.json").write_text(json.dumps(summary))
    assert main(["compare", str(before), str(after), "--max-drop", "0.1"]) == EXIT_USER  # nothing shared to compare
    both = write_run(tmp_path / "both", {"a": 1.0})
    summary = json.loads((both / "summary.json").read_text())
    summary["metrics"]["faithfulness"] = summary["metrics"]["context_recall"]
    (both / "summary.json").write_text(json.dumps(summary))
    status, found, err = compared(capsys, str(both), str(before), "--max-drop", "0.1")
    assert status == EXIT_BELOW_THRESHOLD and "max-drop: faithfulness is not among the later run's scores: FAILED" in err


def test_what_makes_two_runs_not_like_for_like_is_noted(tmp_path, capsys):
    before = write_run(tmp_path / "before", {"a": 1.0})
    after = write_run(tmp_path / "after", {"z": 1.0}, data_sha256="0" * 64, data="other.jsonl",
                      models={"judge": "qwen2.5-coder-1.5b-instruct|x|torch.bfloat16+prepacked|greedy", "embedder": None},
                      settings={"batch_size": 8, "scoring": {"context_recall": "soft"}})
    notes = compared(capsys, str(before), str(after))[1]["notes"]
    assert notes == [
        f"the runs scored different data files (d.jsonl, sha256 {SHA[:12]}; other.jsonl, sha256 000000000000)",
        f"another judge: {JUDGE} before, qwen2.5-coder-1.5b-instruct|x|torch.bfloat16+prepacked|greedy after",
        "scoring differs for context_recall: hard before, soft after",  # not the batch size
        "the runs share no sample id: only their means are compared"]


def test_a_run_corrected_by_labels_is_noted_since_compare_compares_the_judges_means(tmp_path, capsys):
    """A labels probe read "unchanged" everywhere between a run without labels and one with, and no note."""
    corrected = {"samples": 1, "labeled": 1, "bias": 0.5, "mean": 0.5, "interval": None}
    before = write_run(tmp_path / "before", {"a": 1.0})
    after = write_run(tmp_path / "after", {"a": 1.0}, labels="labeled.jsonl", metrics={"context_recall": {
        "mean": 1.0, "interval": None, "scored": 1, "null": 0, "corrected": corrected}})
    status, found, _ = compared(capsys, str(before), str(after), "--same-judge")
    assert status == EXIT_OK and found["notes"] == [
        "the after run's means of context_recall were corrected by its --labels (labeled.jsonl): compare compares the "
        "judge's own means (the corrected ones are in its summary.json)"]
    # labels that corrected none of the compared metrics: nothing to note
    other = write_run(tmp_path / "other", {"a": 1.0}, labels="for-other-metrics.jsonl")
    assert compared(capsys, str(before), str(other))[1]["notes"] == []


def test_same_judge_allows_other_answers_and_refuses_another_judge_setting_or_metric_code(tmp_path, capsys):
    """A nightly job's comparison is of the RAG system only while the judge is the same instrument: the notes said
    a judge had changed, and the job passed all the same."""
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 0.5})
    tonight = write_run(tmp_path / "tonight", {"a": 1.0, "c": 0.5}, data_sha256="0" * 64)  # other answers, samples
    assert compared(capsys, str(before), str(tonight), "--same-judge")[0] == EXIT_OK
    rejudged = write_run(tmp_path / "rejudged", {"a": 1.0}, settings={"scoring": {"context_recall": "soft"}},
                         models={"judge": "qwen2.5-coder-1.5b-instruct|x|torch.float32+prepacked|greedy", "embedder": None})
    status, document, error = compared(capsys, str(before), str(rejudged), "--same-judge")
    assert (status, document) == (EXIT_USER, {})
    assert error == (f"localeval: error: compare --same-judge: the runs' scores were measured otherwise (another judge: "
                     f"{JUDGE} before, qwen2.5-coder-1.5b-instruct|x|torch.float32+prepacked|greedy after; scoring "
                     "differs for context_recall: hard before, soft after); score the earlier data again as the later "
                     "run was scored, or compare without --same-judge\n")

    def own(folder: str, sha: str) -> Path:
        return write_run(tmp_path / folder, {"a": 1.0}, metric="mine", metrics_from=[
            {"source": "mine.py", "file": "/x/mine.py", "sha256": sha, "metrics": ["mine"]}])

    one, edited = own("one", "a" * 64), own("edited", "b" * 64)
    status, _, error = compared(capsys, str(one), str(edited), "--same-judge")
    assert status == EXIT_USER and "the code of metric mine differs: its code's sha256 aaaaaaaaaaaa before, " \
                                   "bbbbbbbbbbbb after" in error
    assert compared(capsys, str(one), str(own("again", "a" * 64)), "--same-judge")[0] == EXIT_OK
    assert compared(capsys, str(one), str(edited))[1]["notes"] == [
        "the code of metric mine differs: its code's sha256 aaaaaaaaaaaa before, bbbbbbbbbbbb after"]


def test_a_run_of_fewer_samples_and_metrics_is_noted_as_such_and_not_as_other_settings(tmp_path, capsys):
    """A review: a run of fewer metrics was told its reasons, example and scoring differed, and an embedder
    no shared metric uses was 'another embedder'; runs of 4 and 3 samples compared means unsaid."""
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0},
                       models={"judge": JUDGE, "embedder": "all-minilm-l6-v2"},
                       settings={"scoring": {"context_recall": "hard", "response_relevancy": "hard"}, "questions": 3})
    after = write_run(tmp_path / "after", {"a": 1.0, "b": 1.0, "c": 1.0}, settings={"scoring": {"context_recall": "hard"}})
    assert compared(capsys, str(before), str(after))[1]["notes"] == [
        "the runs share 3 of their samples (4 before, 3 after): the means are of other samples, the paired changes "
        "of those shared"]


def test_the_table_says_each_fall_on_a_line_of_its_own(tmp_path, capsys):
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 1.0, "c\nd": 1.0})
    after = write_run(tmp_path / "after", {"a": 0.5, "b": 0.9, "c\nd": 0.0})
    assert main(["compare", str(before), str(after)]) == EXIT_OK
    out = capsys.readouterr().out
    assert ("the samples that fell most (before -> after):\n  context_recall: c\\nd 1.000 -> 0.000\n"
            "  context_recall: a 1.000 -> 0.500\n  context_recall: b 1.000 -> 0.900\n") in out  # an id's break escaped
    assert "before: " in out and "(3 samples, judge " in out


@pytest.mark.parametrize("given, said", [
    ("missing", "compare: {}: no such folder or file"),
    ("empty", "compare: {} holds no summary.json (a run that did not finish writes none: --resume with the localeval "
              "that scored it finishes it)"),
    ("not-json", "compare: cannot read {}'s run ("),
    ("not-a-row", "compare: {}/summary.json is not a localeval summary (context_recall's row is not a mean from 0 to 1 "
                  "and its counts)"),
    ("mean-7", "compare: {}/summary.json is not a localeval summary (context_recall's row is not a mean from 0 to 1"),
    ("models-text", "compare: {}/summary.json is not a localeval summary (its models is not an object)"),
    ("sha-number", "compare: {}/summary.json is not a localeval summary (its data_sha256 is not text)"),
    ("samples-text", "compare: {}/summary.json is not a localeval summary (its samples is not a count)"),
    ("results-given", "compare: {}/results.jsonl: give the run's --out folder (or its summary.json), not its results.jsonl"),
])
def test_a_folder_without_a_finished_run_is_refused_in_one_line(tmp_path, capsys, given, said):
    good = write_run(tmp_path / "good", {"a": 1.0})
    path = tmp_path / given
    if given != "missing":
        path.mkdir()
    if given == "not-json":
        (path / "summary.json").write_text("{", encoding="utf-8")
    if given == "not-a-row":
        (path / "summary.json").write_text(json.dumps({"schema_version": 1, "metrics": {"context_recall": 0.5}}))
    broken = {"mean-7": ("metrics", {"context_recall": {"mean": 7, "scored": 1, "null": 0}}),
              "models-text": ("models", "x"), "sha-number": ("data_sha256", 5), "samples-text": ("samples", "x")}  # tracebacks, or read as a run (a CI probe)
    if given in broken:
        key, value = broken[given]
        (path / "summary.json").write_text(json.dumps({**json.loads((good / "summary.json").read_text()), key: value}))
    if given == "results-given":
        (path / "results.jsonl").write_text((good / "results.jsonl").read_text())
        path = path / "results.jsonl"
        said = said.format(path.parent)
    status, found, err = compared(capsys, str(good), str(path))
    assert status == EXIT_USER and err.startswith("localeval: error: " + said.format(path)) and err.count("\n") == 1
    assert compared(capsys, str(good), str(good), "--max-drop", "faithfulness=0.1")[0] == EXIT_USER


def test_two_real_runs_of_one_judge_on_one_file_compare_unchanged_in_a_table(tmp_path, capsys, tiny_judge):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "s1", "user_input": "When did the bridge open?", "response": "In 1932.",
                                "retrieved_contexts": ["The bridge opened in 1932."], "reference": "In 1932."}) + "\n",
                    encoding="utf-8")
    for out in ("one", "two"):
        assert main(["run", str(data), "--judge", str(tiny_judge), "--out", str(tmp_path / out), "--quiet",
                     "--no-cache", "--metrics", "context_recall,faithfulness"]) == EXIT_OK
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "one"), str(tmp_path / "two"), "--max-drop", "0"]) == EXIT_OK
    printed = capsys.readouterr()
    assert "localeval: note" not in printed.out  # same data, judge, embedder and settings
    table = printed.out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["score", "before", "after", "change", "paired", "change", "[95%", "CI]", "pairs", "direction"]
    assert [line.split()[0] for line in table[1:]] == ["context_recall", "faithfulness"]
    assert all(line.split()[3] == "+0.000" and line.endswith("unchanged") for line in table[1:])


def test_an_older_summary_without_schema_version_is_read_and_the_runs_order_is_noted(tmp_path, capsys):
    before = write_run(tmp_path / "before", {"a": 1.0}, schema_version=None, finished="2026-11-29T00:00:00+00:00")
    summary = json.loads((before / "summary.json").read_text())
    del summary["schema_version"]  # written before localeval kept one
    (before / "summary.json").write_text(json.dumps(summary))
    after = write_run(tmp_path / "after", {"a": 1.0})
    status, found, _ = compared(capsys, str(before), str(after))
    assert status == EXIT_OK and found["notes"] == [
        "the before run finished after the after run (2026-11-29T00:00:00+00:00 against 2026-11-28T00:00:00+00:00): "
        "swapped?"]
    assert compared(capsys, str(after), str(after))[1]["notes"] == ["the same run is given twice"]
    # a summary older still, without its finish: the table's heading says so, not Python's None (a probe)
    del summary["finished"]
    (before / "summary.json").write_text(json.dumps(summary))
    assert main(["compare", str(before), str(after)]) == EXIT_OK
    assert f"before: {before} (1 sample, judge {JUDGE}, its finish not recorded)" in capsys.readouterr().out


def test_a_summary_without_the_datas_digest_takes_its_run_jsons(tmp_path, capsys):
    """run.json kept the data's sha256 before summary.json did: compare said whether two such runs scored one
    file was unknown, the answer beside it (an upgrade probe)."""
    before = write_run(tmp_path / "before", {"a": 1.0}, data_sha256=None)
    after = write_run(tmp_path / "after", {"a": 1.0})
    unknown = ("a summary written before localeval kept the data's sha256: whether the two runs scored the same data "
               "file is unknown")
    assert compared(capsys, str(before), str(after))[1]["notes"] == [unknown]
    (before / "run.json").write_text(json.dumps({"data_sha256": SHA}), encoding="utf-8")
    assert compared(capsys, str(before), str(after))[1]["notes"] == []
    (before / "run.json").write_text(json.dumps({"data_sha256": "0" * 64}), encoding="utf-8")
    assert compared(capsys, str(before), str(after))[1]["notes"][0].startswith("the runs scored different data files")


def test_lines_of_results_that_are_no_result_are_said_not_blamed_on_a_resume(tmp_path, capsys):
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 1.0})
    after = write_run(tmp_path / "after", {"a": 1.0, "b": 1.0})
    (after / "results.jsonl").write_bytes(b"\x89garbage\n" + (after / "results.jsonl").read_bytes()[:20])
    notes = compared(capsys, str(before), str(after))[1]["notes"]
    assert notes[0] == ("2 lines of the after run's results.jsonl are no result (cut short when a run stopped, "
                        "damaged, or a score outside 0 to 1): those samples are not paired")


def test_a_folder_a_run_is_writing_in_is_refused(tmp_path, capsys):
    from filelock import FileLock

    before = write_run(tmp_path / "before", {"a": 1.0})
    with FileLock(before / ".localeval.lock"):
        status, _, err = compared(capsys, str(before), str(before))
    assert status == EXIT_USER and f"compare: a localeval run is writing in {before} now" in err
    assert compared(capsys, str(before), str(before))[0] == EXIT_OK  # released, as a run's end releases it


@pytest.mark.parametrize("drop, said", [("-0.1", "a drop is a fall of a score, from 0 to 1"),
                                        ("nan", "'nan' is not a number"), ("5%", "'5%' is not a number")])
def test_a_drop_that_is_no_fall_of_a_score_is_refused_saying_why(tmp_path, capsys, drop, said):
    before = write_run(tmp_path / "before", {"a": 1.0})
    status, _, err = compared(capsys, str(before), str(before), "--max-drop", drop)
    assert status == EXIT_USER and said in err


class ReaderGone(io.StringIO):
    """A stdout whose reader stopped early (`| head`): every write fails as a closed pipe's does."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("gate, status", [("0.05", EXIT_BELOW_THRESHOLD), ("1", EXIT_OK), (None, 141)])
def test_a_gates_status_stands_when_stdouts_reader_stops_early(tmp_path, capsys, monkeypatch, gate, status):
    """`compare ... | head -1` gave 141 and no gate line, four times in six (a CI probe); without a gate, 141 is the
    status as for every command."""
    before = write_run(tmp_path / "before", {str(i): 1.0 for i in range(4)})
    after = write_run(tmp_path / "after", {str(i): 0.0 for i in range(4)})
    monkeypatch.setattr(sys, "stdout", ReaderGone())
    assert main(["compare", str(before), str(after), *(["--max-drop", gate] if gate else [])]) == status
    if gate:
        assert "max-drop: context_recall fell by 1.000 over the paired samples" in capsys.readouterr().err


def test_lines_a_hand_or_a_crash_spoiled_are_counted_not_a_traceback(tmp_path, capsys):
    """A score of 400 digits, Infinity, 5, or a line nested 100,000 deep: exit 1 and a traceback, or Infinity in
    --json's output (a review)."""
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0})
    after = write_run(tmp_path / "after", {"a": 1.0})
    spoiled = ['{"schema_version": 1, "id": "b", "context_recall": ' + "9" * 400 + ', "evidence": {}}',
               '{"schema_version": 1, "id": "c", "context_recall": Infinity, "evidence": {}}',
               '{"schema_version": 1, "id": "d", "context_recall": 5, "evidence": {}}', "[" * 100_000 + "]" * 100_000]
    with (after / "results.jsonl").open("a") as results:
        results.write("\n".join(spoiled) + "\n")
    status, found, _ = compared(capsys, str(before), str(after))
    assert status == EXIT_OK and found["scores"]["context_recall"]["paired"] == 1
    assert found["notes"][0].startswith("4 lines of the after run's results.jsonl are no result")
    summary = json.loads((after / "summary.json").read_text())
    (after / "summary.json").write_text(json.dumps({**summary, "metrics": {"context_recall": {
        "mean": 10 ** 400, "scored": 1, "null": 0}}}))
    status, _, err = compared(capsys, str(before), str(after))
    assert status == EXIT_USER and "is not a localeval summary (context_recall's row is not a mean from 0 to 1" in err


def test_a_stopped_resume_duplicate_ids_and_a_threshold_one_run_lacks_are_noted_truly(tmp_path, capsys):
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 1.0},
                       settings={"scoring": {"context_recall": "hard"}, "thresholds": {"faithfulness": 0.6}})
    after = write_run(tmp_path / "after", {"a": 1.0, "b": 1.0})
    lines = (after / "results.jsonl").read_text().splitlines()
    (after / "results.jsonl").write_text("\n".join([*lines, lines[0], lines[1][:15]]))  # a resume stopped mid-line
    notes = compared(capsys, str(before), str(after))[1]["notes"]
    assert notes == [
        "1 line of the after run's results.jsonl is no result (cut short when a run stopped, damaged, or a score "
        "outside 0 to 1): those samples are not paired",
        "the after run's results.jsonl gives 1 of its ids twice: the last result of each is paired",
        "the after run's results.jsonl holds 3 results where its summary counted 2: the summary is of an earlier "
        "invocation (a --resume stopped since?)"]  # no "thresholds differs" for a metric neither compares


def test_a_gate_says_what_happened_as_it_happened(tmp_path, capsys):
    """'has no mean in either run' of a score null before and 0.5 after; 'where it had one before' of one it had
    none of (a review)."""
    empty = write_run(tmp_path / "empty", {"a": None, "b": None})
    half = write_run(tmp_path / "half", {"a": 0.5, "b": 0.5})
    status, _, err = compared(capsys, str(empty), str(half), "--max-drop", "0.05")
    assert status == EXIT_OK and "max-drop: context_recall has no mean before: passed" in err
    status, _, err = compared(capsys, str(half), str(half), "--max-drop", "0.05")
    assert "max-drop: context_recall did not move: passed" in err
    tiny = write_run(tmp_path / "tiny", {"a": 0.4999, "b": 0.5})
    assert "max-drop: context_recall fell by 0.00005 over the paired samples, at most 0 allowed: FAILED" in \
        compared(capsys, str(half), str(tiny), "--max-drop", "0")[2]


def test_every_key_compare_json_writes_is_in_the_output_document(tmp_path, capsys, output_doc_keys, json_keys):
    before = write_run(tmp_path / "before", {"a": 1.0, "b": 1.0})
    after = write_run(tmp_path / "after", {"a": 0.5, "b": None})
    status, found, _ = compared(capsys, str(before), str(after), "--max-drop", "0.1")
    assert status == EXIT_BELOW_THRESHOLD and found["scores"]["context_recall"]["drops"]
    assert json_keys(found, frozenset({"scores", "gates"})) - output_doc_keys == set()
