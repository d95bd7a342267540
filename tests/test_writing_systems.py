"""A sample's text in another script than the language it is taken as: Chinese text split and judged as
English (no `language` field, no --language) went unsaid, and its judge wrote English questions (a probe)."""

from __future__ import annotations

import hashlib
import json

import pytest

from localeval.samples import Sample
from localeval.writing_systems import LanguageMisfitWarning, in_another_script, language_misfits

CHINESE = "退货需要多少天？我可以在三十天内退货吗？"
ARABIC = "كم يوما لدي لإرجاع المنتج؟"
ENGLISH = "How many days do I have to return the product?"


def sample(text: str, language: str | None = None, id: str = "1") -> Sample:
    return Sample(id=id, user_input=text, response=text, language=language)


@pytest.mark.parametrize("text, language, found", [
    (CHINESE, "en", "CJK"), (ARABIC, "en", "ARABIC"), (ENGLISH, "zh", "LATIN"),
    (CHINESE, "zh", None), (CHINESE, "ja", None), (ENGLISH, "de", None),  # a Latin script fits any Latin one
    ("iPhone 15 Pro 支持无线充电吗？支持。", "zh", None),  # a product's name in Latin letters: still Chinese
    ("好", "en", None),  # too few letters to tell
])
def test_the_script_of_a_sample_against_its_language(text, language, found):
    assert in_another_script(sample(text), language) == found


def test_a_short_question_and_answer_are_told_together():
    """8 Chinese letters each, fewer than a text needs alone, went unsaid as English (a LangChain probe)."""
    short = Sample(id="1", user_input="法国的首都是哪里？", response="法国的首都是巴黎。")
    assert in_another_script(short, "en") == "CJK"
    assert in_another_script(short, "zh") is None
    assert in_another_script(Sample(id="2", user_input="好吗？", response="好。"), "en") is None  # 3 letters: too few


def test_the_misfits_are_named_with_the_languages_they_may_have_meant():
    samples = [sample(CHINESE, id="a"), sample(CHINESE, id="b"), sample(ENGLISH, id="c"),
               sample(ARABIC, id="d"), sample(ENGLISH, "zh", id="e"), sample(CHINESE, "zh", id="f")]
    said = language_misfits(samples, "en")
    assert said.startswith("ids a, b are in Chinese characters but taken as English (meant ja or zh?); id d is in "
                           "Arabic script but taken as English (meant ar, fa or ur?); id e is in Latin letters but "
                           "taken as Chinese: a sample's language sets how its sentences are split")
    assert said.endswith("give each sample's in a `language` field, or the run's with --language")
    # the run's language is that of every sample without its own
    assert language_misfits(samples, "zh").startswith("ids c, e are in Latin letters but taken as Chinese; id d is in "
                                                       "Arabic script but taken as Chinese (meant ar, fa or ur?):")


def test_the_shipped_data_fits_its_languages():
    from pathlib import Path

    from localeval.data import load_samples

    assert language_misfits(load_samples(Path(__file__).parent.parent / "examples" / "samples.jsonl"), "en") is None


@pytest.mark.nulls_expected
def test_a_run_and_evaluate_say_and_keep_it(tmp_path, tiny_judge, capsys):
    import localeval
    from localeval.cli import main

    data = tmp_path / "zh.jsonl"
    data.write_text(json.dumps({"id": "q1", "user_input": CHINESE, "response": "三十天。",
                                "retrieved_contexts": ["商品可在三十天内退货。"]}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    assert main(["run", str(data), "--judge", str(tiny_judge), "--metrics", "context_recall",
                 "--out", str(tmp_path / "out"), "--quiet"]) == 0
    expected = "warning: id q1 is in Chinese characters but taken as English (meant ja or zh?)"
    assert expected in capsys.readouterr().err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert any(line.startswith(expected) for line in summary["warnings"])
    assert summary["languages"] == {"en": 1}  # as it was taken: the settings' language is only the default
    assert main(["run", str(data), "--judge", str(tiny_judge), "--metrics", "context_recall", "--language", "zh",
                 "--out", str(tmp_path / "zh"), "--quiet"]) == 0
    assert "taken as" not in capsys.readouterr().err
    assert json.loads((tmp_path / "zh" / "summary.json").read_text("utf-8"))["languages"] == {"zh": 1}
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    assert (f"{data}</span> <span class='p' title='sha256 {digest}'>(sha256 {digest[:12]})</span>: 1 sample in Chinese; judge"
            in (tmp_path / "zh" / "report.html").read_text("utf-8"))
    with pytest.warns(LanguageMisfitWarning, match="id q1 is in Chinese characters") as caught:
        result = localeval.evaluate(str(data), ["context_recall"], judge=str(tiny_judge), cache=False)
    assert {w.filename for w in caught if w.category is LanguageMisfitWarning} == {__file__}  # the caller's line
    assert any(line.startswith(expected) for line in result.details["warnings"])


@pytest.mark.parametrize("question, response, context", [
    ("如何在Python中读取文件？", "使用open()函数打开文件，然后调用read()。", "The built-in open() function returns a file object. " * 30),
    ("如何在Python中读取文件？", "with open('data.txt') as f: text = f.read()", None),  # answered in code
    ("Как открыть файл в Python?", "Use open(): with open('a.txt') as f: f.read()", None),  # a Russian question
])
def test_a_question_or_an_answer_in_its_language_is_enough(question, response, context):
    """A Chinese question over English documents, rightly taken as Chinese, was warned of as Latin letters (a
    review): the chunks are not looked at, and the question or the response fitting is enough."""
    language = "ru" if question.startswith("Как") else "zh"
    sample = Sample(id="q", user_input=question, response=response,
                    retrieved_contexts=None if context is None else (context,), language=language)
    assert in_another_script(sample, language) is None
