"""Tests for the metrics, their schemas and the judge engine, with a scripted judge and fixed embeddings.

The scripted judge stands in for the model: it answers each request from the request itself
(which metric asked is read off the schema and the prompt), so the tests check the metric math,
the shape of what the judge is asked, and how the engine batches, deduplicates and caches.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from outlines_core.json_schema import build_regex_from_schema

from localeval.engine.cache import AnswerCache
from localeval.engine.grammar import schema_grammar
from localeval.engine.limits import BatchLimits
from localeval.engine.scheduler import JudgeEngine
from localeval.engine.scripted import LookupEmbedder, ScriptedJudge
from localeval.pipeline import build_pipeline
from localeval.metrics import (
    DEFAULT_METRICS,
    JudgeSettings,
    prompts,
    resolve_metrics,
    schemas,
)
from localeval.metrics.context_relevance import ContextRelevance
from localeval.requests import JudgeRequest
from localeval.samples import Sample
from localeval.text import split_chunks, split_sentences

# --- seed examples, verbatim ---------------------------------------------------------------

# Seed 001 (context_recall): the question, the context, and the answer used there as reference.
EINSTEIN_QUESTION = "What can you tell me about albert Albert Einstein?"
EINSTEIN_CONTEXT = (
    "Albert Einstein (14 March 1879 - 18 April 1955) was a German-born theoretical physicist, widely held to be one "
    "of the greatest and most influential scientists of all time. Best known for developing the theory of relativity, "
    "he also made important contributions to quantum mechanics, and was thus a central figure in the revolutionary "
    "reshaping of the scientific understanding of nature that modern physics accomplished in the first decades of the "
    "twentieth century. His mass-energy equivalence formula E = mc2, which arises from relativity theory, has been "
    "called 'the world's most famous equation'. He received the 1921 Nobel Prize in Physics 'for his services to "
    "theoretical physics, and especially for his discovery of the law of the photoelectric effect', a pivotal step in "
    "the development of quantum theory. His work is also known for its influence on the philosophy of science. In a "
    "1999 poll of 130 leading physicists worldwide by the British journal Physics World, Einstein was ranked the "
    "greatest physicist of all time. His intellectual achievements and originality have made Einstein synonymous with "
    "genius."
)
EINSTEIN_REFERENCE = (
    "Albert Einstein born in 14 March 1879 was  German-born theoretical physicist, widely held to be one of the "
    "greatest and most influential scientists of all time. He received the 1921 Nobel Prize in Physics for his "
    "services to theoretical physics. He published 4 papers in 1905.  Einstein moved to Switzerland in 1895"
)
EINSTEIN_SENTENCES = (
    "Albert Einstein born in 14 March 1879 was  German-born theoretical physicist, widely held to be one of the "
    "greatest and most influential scientists of all time.",
    "He received the 1921 Nobel Prize in Physics for his services to theoretical physics.",
    "He published 4 papers in 1905.",
    "Einstein moved to Switzerland in 1895",
)

# Seed 002 (response_relevancy): the France example and the questions it reverse-engineers.
FRANCE_QUESTION = "Where is France and what is it's capital?"
FRANCE_LOW_RESPONSE = "France is in western Europe."
FRANCE_GENERATED = (
    "In which part of Europe is France located?",
    "What is the geographical location of France within Europe?",
    "Can you identify the region of Europe where France is situated?",
)

# Seed 004 (answer/context_supported_precision): a Chinese query, answer and three retrieved docs.
ZH_QUERY = "美国最高法院关于堕胎的裁决对全球有什么影响?"
ZH_ANSWER = (
    "美国最高法院关于堕胎的裁决具有重要的全球影响。该裁决导致在堕胎访问受到限制的州,三分之一的生育年龄女性和女孩无法获得堕胎服务。"
    "那些州的母婴健康支持也较弱,母亲死亡率较高,儿童贫困率也较高。此外,裁决的影响超出了国界,由于美国在全球的地缘政治和文化影响力,"
    "这一裁决也产生了跨国影响。全球的组织和活动家担心这一裁决可能会激励其他国家出台反堕胎的立法和政策。裁决还妨碍了某些非洲国家的进步法律改革和"
    "堕胎指南的实施。此外,该裁决在国际政策领域造成了寒蝉效应,使得反堕胎的力量能够削弱人权保护。"
)
ZH_DOCS = (
    "- 2022年,美国最高法院作出裁决,推翻了50年的判例法,取消了宪法堕胎权。\n"
    "- 这一裁决产生了巨大影响:三分之一的生育年龄女性和女孩现在生活在堕胎服务几乎完全无法获得的州。\n"
    "- 这些堕胎法律最为严格的州,母婴健康支持最为薄弱,母亲死亡率较高,儿童贫困率较高。\n"
    "- 美国最高法院的裁决还通过美国在全球的地缘政治和文化影响力,超越国界产生了影响。\n"
    "- 全球的SRR组织和活动家对这一裁决可能为其他国家的反堕胎立法和政策攻击铺路表示担忧。\n"
    "- 观察者还注意到该裁决对某些非洲国家的进步法律改革产生了影响,导致堕胎指导方针的 adoption 和执行停滞不前。\n"
    "- 该裁决在国际政策领域产生了寒蝉效应,助长了反堕胎的国家和非国家行为体破坏人权保护的势头。",
    "美国最高法院的堕胎裁决不仅在国内引发了激烈的辩论和讨论,也在全球范围内引发了广泛关注。"
    "许多国家将美国视为法律和社会问题的领导者,因此这一裁决可能会影响其他国家对堕胎的政策和态度。",
    "这一裁决还可能对国际组织和非政府组织(NGO)产生影响,尤其是那些致力于生育权和妇女健康问题的团体。"
    "根据裁决的结果,可能会出现资金、倡导工作和与美国同行的合作发生变化,进而在全球范围内引发生育正义斗争的连锁反应。",
)

# A small English sample with every field: 3 + 2 context sentences, 2 response and 2 reference sentences.
PARIS_CONTEXTS = (
    "Paris is the capital of France. It has about two million inhabitants. The Seine flows through it.",
    "Lyon is the third largest city of France. It lies at the confluence of the Rhone and the Saone.",
)


# --- helpers -------------------------------------------------------------------------------


def make_sample(sample_id: str = "s1", **fields) -> Sample:
    """The Paris sample, with any field replaced (pass None to drop one)."""
    values = {
        "user_input": "What is the capital of France?",
        "retrieved_contexts": PARIS_CONTEXTS,
        "response": "The capital of France is Paris. Paris lies on the Seine.",
        "reference": "Paris is the capital of France. About two million people live there.",
    }
    values.update(fields)
    return Sample(id=sample_id, **values)


def einstein_sample(**fields) -> Sample:
    values = {
        "user_input": EINSTEIN_QUESTION,
        "retrieved_contexts": (EINSTEIN_CONTEXT,),
        "reference": EINSTEIN_REFERENCE,
    }
    values.update(fields)
    return Sample(id="einstein", **values)


def zh_sample() -> Sample:
    return Sample(id="zh", user_input=ZH_QUERY, retrieved_contexts=ZH_DOCS, response=ZH_ANSWER)


def schema_of(request: JudgeRequest) -> dict:
    return json.loads(request.schema)


def user_text(request: JudgeRequest) -> str:
    return dict(request.messages)["user"]


def system_text(request: JudgeRequest) -> str:
    """The instructions: the same for every request of a metric, so the judge can share them."""
    return dict(request.messages)["system"]


def metric_of(request: JudgeRequest) -> str:
    """Which metric sent the request, read off its schema and prompt."""
    properties = schema_of(request)["properties"]
    if "questions" in properties:
        return "response_relevancy"
    verdict_keys = properties["verdicts"]["prefixItems"][0]["properties"]
    if "relevant" in verdict_keys:
        return "context_relevance"
    if "attributed" in verdict_keys:
        return "context_recall"
    if "Response, sentence by sentence:" in user_text(request):
        return "answer_supported_precision"
    assert "of the retrieved context, sentence by sentence:" in user_text(request)
    return "context_supported_precision"


def verdict_count(request: JudgeRequest) -> int:
    return len(schema_of(request)["properties"]["verdicts"]["prefixItems"])


def passage_rank(request: JudgeRequest) -> int:
    """The 1-based chunk a context_supported_precision request is about."""
    return int(re.search(r"^Passage (\d+) of the retrieved context", user_text(request), re.M).group(1))


def verdicts(key: str, values) -> dict:
    return {"verdicts": [{"sentence": i, "reason": f"reason {i}", key: v} for i, v in enumerate(values, 1)]}


def questions(texts, noncommittal=None) -> dict:
    noncommittal = noncommittal or [0] * len(texts)
    return {"questions": [{"question": q, "noncommittal": n} for q, n in zip(texts, noncommittal)]}


class Script:
    """A judge script: one handler per metric (a dict/str answer, or a function of the request).

    Unset metrics get a default answer: every verdict 1 (every context sentence relevant), and
    three committal questions. Every request the script sees is kept in `seen`.
    """

    def __init__(self, **handlers):
        self.handlers = handlers
        self.seen: list[JudgeRequest] = []

    def __call__(self, request: JudgeRequest):
        self.seen.append(request)
        metric = metric_of(request)
        handler = self.handlers.get(metric)
        if handler is None:
            return self.default(metric, request)
        return handler(request) if callable(handler) else handler

    @staticmethod
    def default(metric: str, request: JudgeRequest) -> dict:
        if metric == "response_relevancy":
            n = len(schema_of(request)["properties"]["questions"]["prefixItems"])
            return questions([f"generated question {i}?" for i in range(1, n + 1)])
        key = {"context_relevance": "relevant", "context_recall": "attributed"}.get(metric, "supported")
        return verdicts(key, [1] * verdict_count(request))

    def asked(self, metric: str) -> list[JudgeRequest]:
        return [r for r in self.seen if metric_of(r) == metric]


FLAT = LookupEmbedder({}, default=[1.0, 0.0])


def evaluate(samples, metrics, script, *, embedder=FLAT, language="en", limits=BatchLimits(), cache=None,
             settings=None, window=64):
    """Score `samples` through the pipeline a run builds; returns the results (in order) and the judge, for its
    batch record."""
    judge = ScriptedJudge(script)
    evaluator = scripted_pipeline(metrics, judge, embedder, limits=limits, cache=cache, settings=settings,
                                  language=language, window=window).evaluator
    results = list(evaluator.run(list(samples)))
    return results, judge


def scripted_pipeline(metrics, judge, embedder=FLAT, *, limits=BatchLimits(), cache=None, settings=None,
                      language="en", window=64):
    """build_pipeline's pipeline, as a run's, for a scripted judge and embedder."""
    return build_pipeline(resolve_metrics(metrics, settings), judge, embedder, limits=limits, cache=cache or False,
                          language=language, window=window)


def score_one(sample, metrics, script, **kwargs):
    """The results of one sample, as a dict of metric name -> MetricResult."""
    (result,), _ = evaluate([sample], metrics, script, **kwargs)
    return result.metrics


def walk(schema):
    """Every sub-schema of a JSON schema, depth first."""
    yield schema
    if isinstance(schema, dict):
        for value in schema.values():
            if isinstance(value, (dict, list)):
                yield from walk(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from walk(value)


# --- sentence splitting of the seed examples ---------------------------------------------


def test_pysbd_splits_seed_001_reference_into_its_four_sentences():
    assert split_sentences(EINSTEIN_REFERENCE, "en") == EINSTEIN_SENTENCES


def test_sentences_split_in_several_threads_at_once_are_each_text_s_own():
    """evaluate() from a thread pool shared one pysbd Segmenter, which keeps its text on itself:
    texts came back with no sentences or another's, and the cache kept the wrong split."""
    from concurrent.futures import ThreadPoolExecutor

    split_sentences.cache_clear()
    texts = [f"Sentence number {i} is here. And another one for {i}." for i in range(400)]
    with ThreadPoolExecutor(4) as pool:
        splits = list(pool.map(split_sentences, texts))
    expected = [(f"Sentence number {i} is here.", f"And another one for {i}.") for i in range(400)]
    assert [i for i, (got, want) in enumerate(zip(splits, expected)) if got != want] == []


def test_a_line_break_inside_a_sentence_reads_as_a_space_and_other_breaks_end_their_line():
    """Chunks from PDFs and Markdown wrap at a fixed width: pysbd made each line a sentence."""
    wrapped = ("It was built as the entrance\narch to the 1889 World's Fair in Paris. Including its antennas, the\r\n"
               "tower now stands about 330 metres tall.")
    assert split_sentences(wrapped) == ("It was built as the entrance arch to the 1889 World's Fair in Paris.",
                                        "Including its antennas, the tower now stands about 330 metres tall.")
    kept = "Introduction\nThe tower is tall:\n- one item\n- another item\n\nA new paragraph.\napples\nbananas"
    assert split_sentences(kept) == ("Introduction", "The tower is tall:", "- one item", "- another item",
                                     "A new paragraph.", "apples", "bananas")


def test_a_chinese_or_japanese_line_wrapped_mid_sentence_is_joined_without_a_space():
    """A Japanese PDF's wrapped line ended its sentence at the break (a probe): no letter case tells wrapped
    text there, so a line of 20 characters or more that ends between two of its characters is joined."""
    wrapped = ("ログイン画面の「パスワードを忘れた方」をクリック\nしてください。リンクの有効期限は24時間です。")
    assert split_sentences(wrapped, "ja") == ("ログイン画面の「パスワードを忘れた方」をクリックしてください。",
                                              "リンクの有効期限は24時間です。")
    zh = "根据本公司的退款政策，所有退款申请都将在收到退货后的七个工作日\n内处理完毕。"
    assert split_sentences(zh, "zh") == ("根据本公司的退款政策，所有退款申请都将在收到退货后的七个工作日内处理完毕。",)
    kept = "第三章\n退款政策\n退款申请将在七个工作日内处理。\n如有问题请联系客服。"  # a heading, ended sentences
    assert split_sentences(kept, "zh") == ("第三章", "退款政策", "退款申请将在七个工作日内处理。", "如有问题请联系客服。")


def test_a_long_line_goes_to_pysbd_in_pieces_cut_where_pysbd_ends_a_sentence(monkeypatch):
    """pysbd's time grows with the square of its input (a 112,000-character line took 18 s): a long
    line is split piece by piece, with the sentences pysbd would find in the whole line."""
    import pysbd

    from localeval import text

    facts = [f"Fact {i} says the sky was a bright colour that day." for i in range(400)]
    before = next(n for n in range(400) if len(" ".join(facts[:n + 1])) > text.PIECE - 40)
    pad = text.PIECE - len(" ".join(facts[:before])) - len(" After a lng wait he met Dr")
    met = f"After a l{'o' * pad}ng wait he met Dr. Smith at the gate."  # its full stop after Dr at PIECE
    line = " ".join([*facts[:before], met, *facts[before:]])
    # the first full stop after PIECE characters is the abbreviation's: a piece cut there must be mended
    assert line.index("Dr.") + 2 == text._LIKELY_END.search(line, text.PIECE).start()
    whole = tuple(s.strip() for s in pysbd.Segmenter(language="en", clean=False).segment(line))
    assert whole[before] == met and len(whole) == 401

    given: list[int] = []
    segment = pysbd.Segmenter.segment
    monkeypatch.setattr(pysbd.Segmenter, "segment", lambda self, piece: given.append(len(piece)) or segment(self, piece))
    split_sentences.cache_clear()
    assert split_sentences(line) == whole
    assert len(given) > 5 and max(given) <= text.LONG_LINE


@pytest.mark.parametrize("line", [
    "   " + " ".join(f"Fact {i} says the sky was a bright colour that day." for i in range(120)),  # pysbd drops
    "\t\t" + " ".join(f"Fact {i} says the sky was a bright colour that day." for i in range(120)),  # leading space
    # a sentence of 2,500 characters whose first full stop after PIECE is the "e." of "e.g.": no cut inside it
    "This sentence runs on " + "and " * 500 + "such as e.g. these " + "and " * 100 + "it ends here. "
    + " ".join(f"Fact {i} says the sky was a bright colour that day." for i in range(120)),
])
def test_a_long_lines_sentences_are_pysbds_whatever_its_pieces_start_or_cut_into(line):
    import pysbd

    split_sentences.cache_clear()
    assert split_sentences(line) == tuple(s.strip() for s in pysbd.Segmenter(language="en", clean=False).segment(line))


def test_only_the_line_breaks_pysbd_ends_a_sentence_at_split_a_text():
    """str.splitlines also broke at a form feed (pdftotext's page break), which pysbd reads inside one."""
    assert split_sentences("It was built for the fair\x0cand it still stands.") == (
        "It was built for the fair\x0cand it still stands.",)


def test_pysbd_splits_seed_004_answer_and_each_doc_on_its_own():
    answer = split_sentences(ZH_ANSWER, "zh")
    assert len(answer) == 7
    assert all(s.endswith("。") for s in answer)
    assert "".join(answer) == ZH_ANSWER
    # chunk by chunk: 7 bullet lines, then 2 and 2 sentences; 11 in all, the denominator of seed 004's 6/11
    assert [len(c) for c in split_chunks(ZH_DOCS, "zh")] == [7, 2, 2]


@pytest.mark.parametrize("text, language, sentences", [
    # pysbd: "他说：“可以退货吗？" and "”我说可以。"; the closing quote is the first sentence's (a probe)
    ("他说：“可以退货吗？”我说可以。", "zh", ("他说：“可以退货吗？”", "我说可以。")),
    ("他说：“可以。” ", "zh", ("他说：“可以。”",)),
    # after a space it is no closing quote: Dutch's "’s Avonds" ("in the evening"), English "’Twas"
    ("Ik werk overdag. ’s Avonds lees ik.", "nl", ("Ik werk overdag.", "’s Avonds lees ik.")),
    ("It was cold. ’Twas winter.", "en", ("It was cold.", "’Twas winter.")),
    ("He left. (Later he came back.) Fine.", "en", ("He left.", "(Later he came back.)", "Fine.")),
    # pysbd's Arabic ends a piece at its comma: "نعم،" ("yes,") was a sentence of its own
    ("نعم، يمكنك الإرجاع خلال ثلاثين يوما. ثم ننتظر.", "ar", ("نعم، يمكنك الإرجاع خلال ثلاثين يوما.", "ثم ننتظر.")),
])
def test_a_closing_quote_stays_with_its_sentence_and_a_comma_ends_none(text, language, sentences):
    assert split_sentences(text, language) == sentences


@pytest.mark.parametrize("text, sentences", [
    # pysbd ends a sentence at a dot that begins a word, with no space after it (a probe: a docs chatbot)
    ("Copy .env.example to .env and edit it. Then run it.", ("Copy .env.example to .env and edit it.", "Then run it.")),
    ("Run `source ~/.bashrc` or `APP_CONFIG=./dev.yaml` first.", ("Run `source ~/.bashrc` or `APP_CONFIG=./dev.yaml` first.",)),
    ("Use .NET 8 or node.js 20.", ("Use .NET 8 or node.js 20.",)),
    # code in a fence is no wrapped prose: its lines stay apart, and its fences and wordless lines are no sentences
    ("Use this one to fetch items:\n```python\nsession = requests.Session()\nresp = session.get(url, timeout=10)\n"
     "{\n}\n```\nThat is all.",
     ("Use this one to fetch items:", "session = requests.Session()", "resp = session.get(url, timeout=10)",
      "That is all.")),
    ("```bash\npip install acme-cli==2.3.1\ncd ..\nls ../src. Then x.\n```", ("pip install acme-cli==2.3.1", "cd ..",
                                                                             "ls ../src. Then x.")),
    ("| a | b |\n|---|:---:|\n| 1 | 2 |", ("| a | b |", "| 1 | 2 |")),  # a table's delimiter row, anywhere
    ("## Install\r\n\r\n```bash\r\npip install acme-cli==2.3.1\r\n```\r\n\r\nThen run it.",  # Windows' line breaks
     ("## Install", "pip install acme-cli==2.3.1", "Then run it.")),
    # a fence that names a language left open runs to the end (an answer cut off in its code); a bare one left
    # open is no code: a chunk cut inside a block begins with its closing fence, and prose follows (a review)
    ("```python\nthe first line of code here\ncontinues here", ("the first line of code here", "continues here")),
    ("    npm run build\n```\n\nThen start the server. It listens on port 8080.",
     ("npm run build", "```", "Then start the server.", "It listens on port 8080.")),
    ("~~~ The End ~~~\nIt was over. We left.", ("~~~ The End ~~~", "It was over.", "We left.")),  # prose, no fence
    # a fence closes only on one of its kind at least as long, with nothing after it; the line after a closing
    # fence is not joined to it
    ("````markdown\n```python\nx = compute_the_value(a, b)\nprint(x)\n```\nthe outer block goes on here\n````\nDone.",
     ("x = compute_the_value(a, b)", "print(x)", "the outer block goes on here", "Done.")),
    ("~~~~~~~~~~~~~~~~~~~~~~~~\nprint(x)\n~~~~~~~~~~~~~~~~~~~~~~~~\nnext line is prose here.",
     ("print(x)", "next line is prose here.")),
    ("a line of wrapped prose that goes\non to the next line.", ("a line of wrapped prose that goes on to the next line.",)),
])
def test_markdown_and_code_split_into_units_a_judge_can_judge(text, sentences):
    assert split_sentences(text) == sentences


@pytest.mark.parametrize("text, language", [
    # labels are counted on pysbd's sentences: outside code its every piece stays one, wordless or not (a review)
    ("太好了！！！谢谢。", "zh"), ("好的。。。我知道了。", "zh"), ("すごい！！！ありがとう。", "ja"), ("Look! ... There!", "en"),
    ("Thanks! :)", "en"), ("It works! 🎉", "en"), ("Yes.\n---\nNo.", "en"), ("Er schwieg. ... Dann sprach er.", "de"),
    ("नहीं। । आया।", "hi"),
    # a dot typed after a space still ends a sentence before a capital, or before another dot
    ("He went home .I stayed.", "en"), ("The answer is . Next one.", "en"), ("Okay .... Fine.", "en"),
    ("I'm not sure .. maybe.", "en"), ("A sentence. .Another one.", "en"), ("Он ушёл домой .Потом вернулся.", "ru"),
    ("他回家了 .第二天又来了.", "zh"),
    # a dot after inline code or a web address, a sentence's end where the next touches it (Chinese, Japanese)
    ("请先运行`npm install`.然后运行`npm start`.", "zh"), ("打开https://example.com/.然后点击登录.", "zh"),
    ("Press `Enter`.Then type `ls`.", "en"),
])
def test_prose_splits_as_pysbd_splits_it(text, language):
    import pysbd

    plain = pysbd.Segmenter(language=language, clean=False).segment(text)
    assert split_sentences(text, language) == tuple(piece.strip() for piece in plain if piece.strip())


@pytest.mark.parametrize(
    ("text", "language"),
    [(EINSTEIN_REFERENCE, "en"), (EINSTEIN_CONTEXT, "en"), (ZH_ANSWER, "zh"), (ZH_DOCS[0], "zh"),
     ("Some <b>bold</b> text. Done.", "en"), ("他说：“可以退货吗？”我说可以。", "zh"),
     ("أولاً، يجب تقديم الطلب. ثم ننتظر.", "ar")],
)
def test_sentences_are_verbatim_pieces_of_the_text(text, language):
    # clean=False: pysbd must not rewrite what the judge reads (clean=True would drop the <b> tags)
    sentences = split_sentences(text, language)
    assert sentences
    position = 0
    for sentence in sentences:
        position = text.index(sentence, position) + len(sentence)
    assert text[position:].strip() == ""


# --- context_recall (seed 001) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [((1, 1, 0, 0), 0.5), ((1, 1, 1, 1), 1.0), ((0, 0, 0, 0), 0.0), ((0, 0, 0, 1), 0.25)],
)
def test_context_recall_is_the_share_of_attributed_reference_sentences(pattern, expected):
    script = Script(context_recall=verdicts("attributed", pattern))
    result = score_one(einstein_sample(), ["context_recall"], script)["context_recall"]
    assert result.score == pytest.approx(expected)
    assert result.null_reason is None


def test_context_recall_seed_001_asks_one_verdict_per_sentence_and_keeps_the_evidence():
    script = Script(context_recall=verdicts("attributed", [1, 1, 0, 0]))
    result = score_one(einstein_sample(), ["context_recall"], script)["context_recall"]

    (request,) = script.asked("context_recall")
    assert verdict_count(request) == 4
    prompt = user_text(request)
    assert EINSTEIN_QUESTION in prompt
    assert "[Passage 1]\n" + EINSTEIN_CONTEXT in prompt
    for number, sentence in enumerate(EINSTEIN_SENTENCES, 1):
        assert f"{number}. {sentence}" in prompt

    rows = result.evidence["sentences"]
    assert [r["sentence"] for r in rows] == list(EINSTEIN_SENTENCES)
    assert [r["attributed"] for r in rows] == [1, 1, 0, 0]
    assert [r["reason"] for r in rows] == ["reason 1", "reason 2", "reason 3", "reason 4"]


def test_context_recall_without_reference_is_null_while_other_metrics_score():
    sample = make_sample(reference=None)
    script = Script(context_relevance=selection(1))
    results = score_one(sample, ["context_recall", "context_relevance", "answer_supported_precision"], script)

    recall = results["context_recall"]
    assert recall.score is None
    assert "reference" in recall.null_reason
    assert "missing" in recall.null_reason
    assert script.asked("context_recall") == []  # nothing was asked for it

    assert results["context_relevance"].score == pytest.approx(1 / 5)
    assert results["answer_supported_precision"].score == pytest.approx(1.0)


def test_context_recall_with_blank_reference_is_null():
    result = score_one(make_sample(reference="  \n "), ["context_recall"], Script())["context_recall"]
    assert result.score is None
    assert "reference" in result.null_reason


def test_a_null_result_has_every_sub_score_key_as_null():
    """README: a line has one key per metric and one per sub-score; a null metric's sub-scores are
    null, so every line has the same keys and a column read by name exists."""
    metrics = ["context_relevance", "context_supported_precision"]
    samples = [make_sample(), make_sample("s2", retrieved_contexts=None)]
    scored, unscored = evaluate(samples, metrics, Script())[0]  # every verdict 1
    row, null_row = scored.to_json(), unscored.to_json()
    sub_scores = {"context_relevance_chunks", "context_relevance_per_chunk",
                  "context_supported_precision_rank_weighted", "context_supported_precision_per_chunk"}
    assert sub_scores <= row.keys() and null_row.keys() == row.keys()
    assert {name: null_row[name] for name in sub_scores} == dict.fromkeys(sub_scores)
    assert all(row[name] is not None for name in sub_scores)


def test_null_reason_is_in_the_json_of_a_result():
    (result,), _ = evaluate([make_sample(reference=None)], ["context_recall"], Script())
    row = result.to_json()
    assert row["id"] == "s1"
    assert row["context_recall"] is None
    assert "reference" in row["evidence"]["context_recall"]["null_reason"]


# --- answer_supported_precision / context_supported_precision (seed 004) -----------------


def test_answer_supported_precision_seed_004_all_supported_is_one():
    script = Script()
    result = score_one(zh_sample(), ["answer_supported_precision"], script, language="zh")["answer_supported_precision"]

    (request,) = script.asked("answer_supported_precision")
    expected_sentences = split_sentences(ZH_ANSWER, "zh")
    assert verdict_count(request) == len(expected_sentences) == 7
    # seed 004's form: the context and the answer, not the question (support does not depend on it)
    assert ZH_QUERY not in user_text(request)
    assert all(f"[Passage {i}]" in user_text(request) for i in (1, 2, 3))

    assert result.score == pytest.approx(1.0)
    assert [r["sentence"] for r in result.evidence["sentences"]] == list(expected_sentences)
    assert all(r["supported"] == 1 for r in result.evidence["sentences"])


def test_answer_supported_precision_counts_unsupported_sentences():
    script = Script(answer_supported_precision=verdicts("supported", [1, 0, 1, 1, 0, 1, 1]))
    result = score_one(zh_sample(), ["answer_supported_precision"], script, language="zh")["answer_supported_precision"]
    assert result.score == pytest.approx(5 / 7)


def context_supported_script(pattern_by_rank: dict[int, list[int]]) -> Script:
    """context_supported_precision answers chosen by the passage each request is about."""
    return Script(context_supported_precision=lambda r: verdicts("supported", pattern_by_rank[passage_rank(r)]))


def test_context_supported_precision_seed_004_asks_once_per_chunk():
    # The answer restates bullet lines 2-7 of the first doc and nothing of the other two: 6 of 11.
    script = context_supported_script({1: [0, 1, 1, 1, 1, 1, 1], 2: [0, 0], 3: [0, 0]})
    result = score_one(zh_sample(), ["context_supported_precision"], script, language="zh")[
        "context_supported_precision"
    ]

    requests = script.asked("context_supported_precision")
    assert sorted(passage_rank(r) for r in requests) == [1, 2, 3]
    assert {passage_rank(r): verdict_count(r) for r in requests} == {1: 7, 2: 2, 3: 2}
    for r in requests:
        assert ZH_ANSWER in user_text(r)

    assert result.score == pytest.approx(6 / 11)  # the 0.5454... of seed 004
    assert result.evidence["per_chunk"] == pytest.approx([6 / 7, 0.0, 0.0])
    rows = result.evidence["sentences"]
    assert [r["chunk"] for r in rows] == [0] * 7 + [1] * 2 + [2] * 2
    assert [r["sentence"] for r in rows] == [s for chunk in split_chunks(ZH_DOCS, "zh") for s in chunk]


def test_context_supported_precision_rank_weighted_mean():
    script = context_supported_script({1: [1, 1, 1, 0, 0, 0, 0], 2: [1, 0], 3: [1, 1]})
    result = score_one(zh_sample(), ["context_supported_precision"], script, language="zh")[
        "context_supported_precision"
    ]

    per_chunk = [3 / 7, 1 / 2, 1.0]
    weights = [1.0, 1 / 2, 1 / 3]
    expected = sum(w * s for w, s in zip(weights, per_chunk)) / sum(weights)
    assert result.evidence["per_chunk"] == pytest.approx(per_chunk)
    assert result.evidence["rank_weighted"] == pytest.approx(expected)
    assert result.score == pytest.approx(6 / 11)  # the plain score pools the sentences
    assert result.evidence["rank_weighted"] != pytest.approx(result.score)


def test_context_supported_precision_blank_chunk_keeps_its_rank():
    sample = make_sample(retrieved_contexts=("Paris is the capital.", "   ", "Lyon is large. Nice is sunny."))
    script = context_supported_script({1: [1], 3: [0, 1]})
    result = score_one(sample, ["context_supported_precision"], script)["context_supported_precision"]

    assert sorted(passage_rank(r) for r in script.asked("context_supported_precision")) == [1, 3]
    assert result.evidence["per_chunk"] == [1.0, None, 0.5]
    assert result.evidence["rank_weighted"] == pytest.approx((1 * 1.0 + 0.5 / 3) / (1 + 1 / 3))
    assert result.score == pytest.approx(2 / 3)


# --- language ----------------------------------------------------------------------------


GERMAN = "Er kam am 3. Mai an. Dann ging er."  # 2 sentences for pysbd "de", 3 for "en"


def test_split_of_the_german_text_depends_on_the_language():
    assert len(split_sentences(GERMAN, "de")) == 2
    assert len(split_sentences(GERMAN, "en")) == 3


@pytest.mark.parametrize(("sample_language", "run_language", "n"), [(None, "en", 3), (None, "de", 2), ("de", "en", 2)])
def test_the_sample_language_overrides_the_run_language(sample_language, run_language, n):
    sample = make_sample(response=GERMAN, language=sample_language)
    script = Script()
    score_one(sample, ["answer_supported_precision"], script, language=run_language)
    (request,) = script.asked("answer_supported_precision")
    assert verdict_count(request) == n


def test_unsupported_language_is_null_with_reason():
    results = score_one(make_sample(language="xx"), ["context_relevance", "context_recall"], Script())
    for result in results.values():
        assert result.score is None
        assert "xx" in result.null_reason


# --- context_relevance (seeds 000, 003) ---------------------------------------------------


def selection(*numbers, total: int = 5) -> dict:
    """The verdicts of a judge that finds exactly these context sentences relevant."""
    return verdicts("relevant", [int(i in numbers) for i in range(1, total + 1)])


@pytest.mark.parametrize(
    ("selected", "score", "chunk_relevant"),
    [((1,), 1 / 5, [1, 0]), ((1, 2), 2 / 5, [1, 0]), ((1, 4), 2 / 5, [1, 1]), ((4, 5), 2 / 5, [0, 1]),
     ((1, 2, 3, 4, 5), 1.0, [1, 1])],
)
def test_context_relevance_is_relevant_over_all_sentences(selected, score, chunk_relevant):
    result = score_one(make_sample(), ["context_relevance"], Script(context_relevance=selection(*selected)))[
        "context_relevance"
    ]
    assert result.score == pytest.approx(score)
    assert result.evidence["chunk_relevant"] == chunk_relevant
    assert result.evidence["chunk_relevance"] == pytest.approx(sum(chunk_relevant) / 2)
    assert result.evidence["insufficient_information"] is False
    assert [r["relevant"] for r in result.evidence["sentences"]] == [int(i in selected) for i in range(1, 6)]
    assert [r["reason"] for r in result.evidence["sentences"]] == [f"reason {i}" for i in range(1, 6)]


def test_context_relevance_numbers_sentences_across_chunks():
    script = Script()
    score_one(make_sample(), ["context_relevance"], script)
    (request,) = script.asked("context_relevance")
    prompt = user_text(request)
    assert "What is the capital of France?" in prompt
    assert "[Passage 1]\n1. Paris is the capital of France.\n2. It has about two million inhabitants." in prompt
    assert "[Passage 2]\n4. Lyon is the third largest city of France.\n5. It lies at" in prompt
    assert verdict_count(request) == 5


def test_context_relevance_evidence_rows_carry_chunk_and_sentence():
    result = score_one(make_sample(), ["context_relevance"], Script(context_relevance=selection(3)))[
        "context_relevance"
    ]
    rows = result.evidence["sentences"]
    assert [(r["chunk"], r["sentence"]) for r in rows] == [
        (0, "Paris is the capital of France."),
        (0, "It has about two million inhabitants."),
        (0, "The Seine flows through it."),
        (1, "Lyon is the third largest city of France."),
        (1, "It lies at the confluence of the Rhone and the Saone."),
    ]
    assert [r["relevant"] for r in rows] == [0, 0, 1, 0, 0]


def test_context_relevance_with_no_relevant_sentence_is_insufficient_information():
    result = score_one(make_sample(), ["context_relevance"], Script(context_relevance=selection()))[
        "context_relevance"
    ]
    assert result.score == 0.0
    assert result.evidence["insufficient_information"] is True
    assert result.evidence["chunk_relevant"] == [0, 0]
    assert result.evidence["chunk_relevance"] == 0.0


def test_context_relevance_blank_chunk_counts_as_irrelevant_at_chunk_level():
    """A blank chunk is not asked about, and it is a retrieved chunk without a relevant sentence: 0, as
    context_precision counts it, not left out of the share (which rose for retrieving it)."""
    sample = make_sample(retrieved_contexts=("Paris is the capital. It is big.", " \n\t", "Lyon is large."))
    script = Script(context_relevance=selection(1, total=3))
    result = score_one(sample, ["context_relevance"], script)["context_relevance"]
    (request,) = script.asked("context_relevance")
    assert verdict_count(request) == 3
    assert "[Passage 3]\n3. Lyon is large." in user_text(request)
    assert result.score == pytest.approx(1 / 3)
    assert result.evidence["chunk_relevant"] == [1, 0, 0]
    assert result.evidence["chunk_relevance"] == pytest.approx(1 / 3)


CONTEXT_METRICS = ("context_relevance", "context_supported_precision", "context_recall", "answer_supported_precision")
EMPTY_RETRIEVALS = pytest.mark.parametrize(
    "contexts", [(), ("",), ("   ",), (" ", "\n\t")], ids=["empty-list", "empty-chunk", "blank-chunk", "blank-chunks"]
)


@EMPTY_RETRIEVALS
def test_an_empty_retrieval_is_not_missing(contexts):
    # A retrieval that found nothing is an outcome to score, not a gap in the data.
    assert make_sample(retrieved_contexts=contexts).missing(("retrieved_contexts",)) == []
    assert make_sample(retrieved_contexts=None).missing(("retrieved_contexts",)) == ["retrieved_contexts"]


@EMPTY_RETRIEVALS
def test_an_empty_retrieval_is_scored_without_asking_the_judge(contexts):
    sample = make_sample(retrieved_contexts=contexts)
    script = Script()
    results = score_one(sample, [*CONTEXT_METRICS, "response_relevancy"], script)

    for name in CONTEXT_METRICS:
        assert script.asked(name) == []
    assert [metric_of(r) for r in script.seen] == ["response_relevancy"]

    # context_relevance: the seed's rule, no context sentences scores 0
    relevance = results["context_relevance"]
    assert relevance.score == 0.0
    assert relevance.null_reason is None
    assert relevance.evidence["sentences"] == []

    # context_supported_precision: seed 004's calculate_precision gives 0 where there is no verdict (it was
    # null, so a retriever that found nothing left this mean as it was while the others' fell)
    supported = results["context_supported_precision"]
    assert supported.score == 0.0 and supported.null_reason is None
    assert supported.evidence["sentences"] == [] and supported.evidence["rank_weighted"] == 0.0
    assert supported.parts["context_supported_precision_rank_weighted"] == 0.0
    assert supported.parts["context_supported_precision_per_chunk"] == [None] * len(contexts)

    # context_recall and answer_supported_precision: nothing can be attributed to or supported by nothing
    for name, key, text in [("context_recall", "attributed", make_sample().reference),
                            ("answer_supported_precision", "supported", make_sample().response)]:
        result = results[name]
        assert result.score == 0.0
        assert result.null_reason is None
        assert result.evidence["sentences"] == [
            {"sentence": s, key: 0, "reason": "the retrieved context is empty"} for s in split_sentences(text)
        ]
        assert len(result.evidence["sentences"]) == 2

    assert results["response_relevancy"].score == pytest.approx(1.0)  # needs no context; FLAT embeds alike


@EMPTY_RETRIEVALS
def test_an_empty_retrieval_in_the_json_of_a_result(contexts):
    (result,), _ = evaluate([make_sample(retrieved_contexts=contexts)], list(CONTEXT_METRICS), Script())
    row = result.to_json()
    assert row["context_relevance"] == row["context_recall"] == row["answer_supported_precision"] == 0.0
    assert row["context_supported_precision"] == row["context_supported_precision_rank_weighted"] == 0.0
    assert "null_reason" not in row["evidence"]["context_supported_precision"]


def test_absent_retrieved_contexts_is_still_missing():
    script = Script()
    results = score_one(make_sample(retrieved_contexts=None), [*CONTEXT_METRICS, "response_relevancy"], script)
    for name in CONTEXT_METRICS:
        assert results[name].score is None
        assert results[name].null_reason == "missing retrieved_contexts"
    assert [metric_of(r) for r in script.seen] == ["response_relevancy"]
    assert results["response_relevancy"].score == pytest.approx(1.0)


def test_an_empty_retrieval_does_not_hide_a_missing_or_empty_reference_or_response():
    results = score_one(make_sample(retrieved_contexts=(), reference=None, response=" "),
                        ["context_recall", "answer_supported_precision"], Script())
    assert results["context_recall"].null_reason == "missing reference"
    assert results["answer_supported_precision"].null_reason == "empty response"  # said apart from an absent one


def test_context_relevance_with_no_context_sentences_scores_zero_when_called_directly():
    # The seed's rule, in the metric itself: no context sentences is 0 and asks the judge nothing.
    steps = ContextRelevance().steps(make_sample(retrieved_contexts=(" ",)), "en")
    with pytest.raises(StopIteration) as done:
        next(steps)
    assert done.value.value.score == 0.0


# --- response_relevancy (seed 002) --------------------------------------------------------


def cosine(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_response_relevancy_is_mean_cosine_to_the_user_input():
    table = {
        "What is the capital of France?": [1.0, 0.0, 0.0],
        "q1?": [1.0, 1.0, 0.0],
        "q2?": [0.0, 1.0, 0.0],
        "q3?": [3.0, 0.0, 4.0],
    }
    script = Script(response_relevancy=questions(["q1?", "q2?", "q3?"]))
    result = score_one(make_sample(), ["response_relevancy"], script, embedder=LookupEmbedder(table, [0.0, 0.0, 1.0]))[
        "response_relevancy"
    ]
    expected = [cosine(table["What is the capital of France?"], table[q]) for q in ("q1?", "q2?", "q3?")]
    assert expected == pytest.approx([np.sqrt(0.5), 0.0, 0.6])
    assert result.score == pytest.approx(np.mean(expected), abs=1e-6)
    rows = result.evidence["questions"]
    assert [r["question"] for r in rows] == ["q1?", "q2?", "q3?"]
    assert [r["similarity"] for r in rows] == pytest.approx(expected, abs=1e-6)
    assert [r["noncommittal"] for r in rows] == [0, 0, 0]


def test_response_relevancy_all_noncommittal_is_zero():
    table = {"What is the capital of France?": [1.0, 0.0]}
    script = Script(response_relevancy=questions(["a?", "b?", "c?"], [1, 1, 1]))
    result = score_one(make_sample(), ["response_relevancy"], script, embedder=LookupEmbedder(table, [1.0, 0.0]))[
        "response_relevancy"
    ]
    assert result.score == 0.0
    # the similarities are still shown, so a user can see why
    assert [r["similarity"] for r in result.evidence["questions"]] == pytest.approx([1.0, 1.0, 1.0])


@pytest.mark.parametrize("noncommittal", [[0, 0, 0], [1, 1, 1]])
def test_response_relevancy_of_questions_pointing_away_from_the_user_input_is_zero_not_negative(noncommittal):
    table = {"What is the capital of France?": [1.0, 0.0]}
    script = Script(response_relevancy=questions(["a?", "b?", "c?"], noncommittal))
    result = score_one(make_sample(), ["response_relevancy"], script, embedder=LookupEmbedder(table, [-1.0, 0.2]))[
        "response_relevancy"
    ]
    assert math.copysign(1.0, result.score) == 1.0 and result.score == 0.0  # not -0.98, nor -0.0 ("-0.000")
    assert all(r["similarity"] < 0 for r in result.evidence["questions"])  # the evidence keeps the cosines


def test_response_relevancy_of_questions_the_same_as_the_user_input_is_one_not_above():
    """float32's rounding made such a cosine 1.0000001, and results.jsonl and the summary held a score above 1,
    which a CI job checking the documented 0-1 range refused (a probe)."""
    same = np.random.default_rng(0).standard_normal((4, 384)).astype(np.float32)[3].tolist()  # rounds above 1
    script = Script(response_relevancy=questions(["a?", "b?", "c?"]))
    result = score_one(make_sample(), ["response_relevancy"], script, embedder=LookupEmbedder({}, same))[
        "response_relevancy"
    ]
    assert result.score == 1.0 and [r["similarity"] for r in result.evidence["questions"]] == [1.0, 1.0, 1.0]


def test_response_relevancy_some_noncommittal_keeps_the_mean():
    table = {"What is the capital of France?": [1.0, 0.0], "a?": [1.0, 0.0], "b?": [0.0, 1.0]}
    script = Script(response_relevancy=questions(["a?", "b?", "a?"], [1, 0, 0]))
    result = score_one(make_sample(), ["response_relevancy"], script, embedder=LookupEmbedder(table, [0.0, 1.0]))[
        "response_relevancy"
    ]
    assert result.score == pytest.approx(2 / 3)


def test_response_relevancy_seed_002_example():
    # The "low relevance" answer of seed 002: questions about where France is, none about its capital.
    table = {
        FRANCE_QUESTION: [0.8, 0.6, 0.0],
        FRANCE_GENERATED[0]: [1.0, 0.0, 0.0],
        FRANCE_GENERATED[1]: [0.6, 0.0, 0.8],
        FRANCE_GENERATED[2]: [0.9, 0.1, 0.2],
    }
    sample = Sample(id="fr", user_input=FRANCE_QUESTION, response=FRANCE_LOW_RESPONSE)
    script = Script(response_relevancy=questions(FRANCE_GENERATED))
    result = score_one(sample, ["response_relevancy"], script, embedder=LookupEmbedder(table, [0.0, 0.0, 1.0]))[
        "response_relevancy"
    ]

    (request,) = script.asked("response_relevancy")
    assert FRANCE_LOW_RESPONSE in user_text(request)
    assert "Write 3 different questions" in system_text(request)
    questions_schema = schema_of(request)["properties"]["questions"]
    assert questions_schema["minItems"] == questions_schema["maxItems"] == len(questions_schema["prefixItems"]) == 3

    e_o = np.array(table[FRANCE_QUESTION])
    sims = [float(np.dot(table[q], e_o) / (np.linalg.norm(table[q]) * np.linalg.norm(e_o))) for q in FRANCE_GENERATED]
    assert result.score == pytest.approx(sum(sims) / 3, abs=1e-6)
    assert 0.0 < result.score < 1.0


def test_response_relevancy_asks_for_questions_in_the_language_of_a_response_not_in_english():
    script = Script()
    score_one(zh_sample(), ["response_relevancy"], script, language="zh")
    score_one(make_sample(), ["response_relevancy"], script)
    chinese, english = script.asked("response_relevancy")
    assert user_text(chinese).endswith("Write the questions in Chinese.")
    assert "Write the questions" not in user_text(english)  # English: the prompt as measured before
    assert system_text(chinese) == system_text(english)  # the shared instructions stay shared


def test_response_relevancy_question_count_follows_settings():
    script = Script()
    result = score_one(make_sample(), ["response_relevancy"], script, settings=JudgeSettings(questions=5))[
        "response_relevancy"
    ]
    (request,) = script.asked("response_relevancy")
    assert "Write 5 different questions" in system_text(request)
    assert len(schema_of(request)["properties"]["questions"]["prefixItems"]) == 5
    assert len(result.evidence["questions"]) == 5


def test_metrics_other_than_response_relevancy_need_no_embedder():
    metrics = [m for m in DEFAULT_METRICS if m != "response_relevancy"]
    (result,), _ = evaluate([make_sample()], metrics, Script(), embedder=None)
    assert all(result.score(m) is not None for m in metrics)


def test_response_relevancy_needs_no_context():
    sample = make_sample(retrieved_contexts=None, reference=None)
    results = score_one(sample, ["response_relevancy", "answer_supported_precision"], Script())
    assert results["response_relevancy"].score == pytest.approx(1.0)  # FLAT embeds every text alike
    assert "retrieved_contexts" in results["answer_supported_precision"].null_reason


# --- the schemas the judge receives -------------------------------------------------------


def all_requests(settings=None) -> list[JudgeRequest]:
    """Every judge request of all metrics for the Paris sample."""
    script = Script()
    score_one(make_sample(), list(DEFAULT_METRICS), script, settings=settings)
    return script.seen


def test_every_metric_sends_the_judge_a_request():
    assert {metric_of(r) for r in all_requests()} == set(DEFAULT_METRICS)


def test_verdict_schema_has_exactly_one_item_per_sentence():
    sentences = split_sentences(make_sample().reference)
    script = Script()
    score_one(make_sample(), ["context_recall"], script)
    (request,) = script.asked("context_recall")
    verdict_list = schema_of(request)["properties"]["verdicts"]
    n = len(sentences)
    assert n == 2
    assert verdict_list["minItems"] == verdict_list["maxItems"] == len(verdict_list["prefixItems"]) == n
    assert verdict_list["items"] is False
    for number, item in enumerate(verdict_list["prefixItems"], 1):
        assert item["properties"]["sentence"] == {"const": number}
        assert item["properties"]["attributed"] == {"enum": [0, 1]}
        assert list(item["properties"]) == ["sentence", "reason", "attributed"]  # reason before the verdict
        assert set(item["required"]) == set(item["properties"])


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_verdict_list_schema_for_n_sentences(n):
    schema = schemas.verdict_list(n, "supported", JudgeSettings())
    verdict_list = schema["properties"]["verdicts"]
    assert verdict_list["minItems"] == verdict_list["maxItems"] == n
    assert [item["properties"]["sentence"]["const"] for item in verdict_list["prefixItems"]] == list(range(1, n + 1))


def test_context_relevance_asks_one_verdict_per_sentence_of_every_chunk():
    (request,) = [r for r in all_requests() if metric_of(r) == "context_relevance"]
    items = schema_of(request)["properties"]["verdicts"]["prefixItems"]
    assert [item["properties"]["sentence"]["const"] for item in items] == [1, 2, 3, 4, 5]
    assert all(item["properties"]["relevant"] == schemas.BINARY for item in items)


def test_every_string_in_every_schema_is_bounded():
    settings = JudgeSettings(reason_chars=77, question_chars=99)
    strings = [
        (metric_of(request), sub)
        for request in all_requests(settings)
        for sub in walk(schema_of(request))
        if isinstance(sub, dict) and sub.get("type") == "string"
    ]
    assert {metric for metric, _ in strings} == set(DEFAULT_METRICS)
    for metric, sub in strings:
        assert sub["maxLength"] == (99 if metric == "response_relevancy" else 77)


def test_reasons_off_removes_reason_field_and_instruction():
    requests = all_requests(JudgeSettings(reasons=False))
    for request in requests:
        assert "reason" not in request.schema
        assert "First give a short reason" not in system_text(request)
    assert any("First give a short reason" in system_text(r) for r in all_requests(JudgeSettings(reasons=True)))


def test_every_request_asks_for_the_schema_token_bound():
    for request in all_requests():
        assert request.max_new_tokens == schemas.max_output_tokens(schema_of(request))


def compact_json(value) -> str:
    """JSON exactly as the grammar writes it: no whitespace anywhere (grammar.COMPACT_JSON)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


WIDE = "\x1f"  # a control character: JSON writes it as the escape \u001f, 6 bytes, the widest a character takes


@pytest.fixture(scope="module")
def grammar_accepts():
    """Whether the engine's grammar for a schema accepts a text, tokenized by the embedded judge's tokenizer."""
    import llguidance
    import llguidance.hf
    from transformers import AutoTokenizer

    from localeval import models

    tokenizer = AutoTokenizer.from_pretrained(models.resolve("smollm2-135m-instruct", "judge", log=lambda _: None).path)
    grammar_tokenizer = llguidance.hf.from_tokenizer(tokenizer)

    def accepts(schema: dict, text: str) -> bool:
        matcher = llguidance.LLMatcher(grammar_tokenizer, schema_grammar(json.dumps(schema)))
        return matcher.consume_tokens(tokenizer.encode(text, add_special_tokens=False)) and matcher.is_accepting()

    return accepts


def longest_answer(schema: dict):
    """A valid answer as long as the schema allows: full strings of 6-byte escapes, full lists."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return max(schema["enum"], key=lambda v: len(str(v)))
    if schema["type"] == "string":
        return WIDE * schema["maxLength"]
    if schema["type"] == "object":
        return {k: longest_answer(sub) for k, sub in schema["properties"].items()}
    items = schema.get("prefixItems") or [schema["items"]] * schema["maxItems"]
    return [longest_answer(item) for item in items]


@pytest.mark.parametrize(
    "schema",
    [
        schemas.verdict_list(1, "supported", JudgeSettings()),
        schemas.verdict_list(9, "attributed", JudgeSettings(reason_chars=40)),
        schemas.verdict_list(12, "supported", JudgeSettings(reasons=False)),
        schemas.verdict_list(120, "relevant", JudgeSettings(reasons=False)),
        schemas.question_list(JudgeSettings()),
        schemas.question_list(JudgeSettings(questions=6, question_chars=10)),
    ],
    ids=["verdicts-1", "verdicts-9", "verdicts-12-no-reason", "verdicts-120-no-reason", "questions-3",
         "questions-6"],
)
def test_token_bound_covers_the_longest_valid_answer(schema, grammar_accepts):
    text = compact_json(longest_answer(schema))
    # it is valid: the grammar the engine compiles accepts it
    assert grammar_accepts(schema, text)
    assert json.loads(text) == longest_answer(schema)
    # a token is at least one byte, and the end-of-sequence token comes on top
    assert schemas.max_output_tokens(schema) >= len(text.encode("utf-8")) + 1


VERDICTS_2 = schemas.verdict_list(2, "supported", JudgeSettings(reason_chars=12))


@pytest.mark.parametrize(("text", "valid"), [
    ('{"verdicts":[{"sentence":1,"reason":"It says so.","supported":1},{"sentence":2,"reason":"","supported":0}]}', True),
    ('{"verdicts":[{"sentence":1,"reason":"Le texte dit: «oui».","supported":1},{"sentence":2,"reason":"x","supported":1}]}', False),  # 20 characters
    ('{"verdicts":[{"sentence":1,"reason":"a\\"b","supported":1},{"sentence":2,"reason":"x","supported":1}]}', True),
    ('{"verdicts": [{"sentence":1,"reason":"a","supported":1},{"sentence":2,"reason":"x","supported":1}]}', False),  # whitespace
    ('{"verdicts":[{"sentence":2,"reason":"a","supported":1},{"sentence":1,"reason":"x","supported":1}]}', False),  # numbering
    ('{"verdicts":[{"sentence":1,"reason":"a","supported":2},{"sentence":2,"reason":"x","supported":1}]}', False),  # not 0/1
    ('{"verdicts":[{"sentence":1,"reason":"a","supported":1}]}', False),  # one verdict short
    ('{"verdicts":[{"sentence":1,"supported":1,"reason":"a"},{"sentence":2,"reason":"x","supported":1}]}', False),  # key order
    ('{"verdicts":[{"sentence":1,"reason":"a","supported":1,"note":"n"},{"sentence":2,"reason":"x","supported":1}]}', False),
    ('{"verdicts":[{"sentence":1,"reason":"éééééééééééé","supported":1},{"sentence":2,"reason":"x","supported":1}]}', True),  # 12 characters, 24 bytes
], ids=["valid", "reason-too-long", "escaped-quote", "whitespace", "numbering", "not-binary", "short", "key-order",
        "extra-key", "length-in-characters"])
def test_the_engine_grammar_means_what_outlines_regex_means(text, valid, grammar_accepts):
    # The engine compiles schemas with llguidance's JSON compiler (engine/grammar.py); Outlines' regex for
    # the same schema is the reference: both accept and refuse the same answers, escapes apart (below).
    outlines_regex = build_regex_from_schema(json.dumps(VERDICTS_2), "")
    assert bool(re.fullmatch(outlines_regex, text)) is valid
    assert grammar_accepts(VERDICTS_2, text) is valid


@pytest.mark.parametrize(("reason", "regex_accepts", "grammar_accepts_it"), [
    ("a\\u0001b", False, True),  # a control character written as an escape: JSON allows it, Outlines' regex not
    ("a\x85b", False, True),  # a raw C1 control character
    ("a\\/b", True, False),  # an escaped slash: llguidance writes "/" only one way
], ids=["control-character-escape", "raw-c1-character", "escaped-slash"])
def test_where_the_engine_grammar_and_outlines_regex_differ_escapes_only(reason, regex_accepts, grammar_accepts_it,
                                                                       grammar_accepts):
    """Where the two grammars part: ways to write a character that a judge's reason has no use for,
    and which the conformance check (jsonschema) takes either way."""
    text = ('{"verdicts":[{"sentence":1,"reason":"' + reason + '","supported":1},'
            '{"sentence":2,"reason":"x","supported":1}]}')
    assert bool(re.fullmatch(build_regex_from_schema(json.dumps(VERDICTS_2), ""), text)) is regex_accepts
    assert grammar_accepts(VERDICTS_2, text) is grammar_accepts_it
    assert json.loads(text)["verdicts"][0]["reason"]  # valid JSON either way


def test_every_verdict_task_names_its_verdict_key_in_its_instructions():
    # the key the schema and evidence use is the one the judge is told about
    for task in (prompts.CONTEXT_RELEVANCE, prompts.CONTEXT_RECALL, prompts.ANSWER_SUPPORTED,
                 prompts.CONTEXT_SUPPORTED):
        assert task.verdict and f'"{task.verdict}"' in task.instructions


# --- worked examples in the instructions ----------------------------------------------------


EXAMPLED = [(prompts.CONTEXT_RELEVANCE, "relevant"), (prompts.CONTEXT_RECALL, "attributed"),
            (prompts.ANSWER_SUPPORTED, "supported")]


@pytest.mark.parametrize("reasons", [False, True], ids=["no-reasons", "reasons"])
@pytest.mark.parametrize(("task", "key"), EXAMPLED, ids=["context_relevance", "context_recall",
                                                          "answer_supported_precision"])
def test_the_example_answer_is_what_the_grammar_would_write(task, key, reasons, grammar_accepts):
    settings = JudgeSettings(reasons=reasons, example=True)
    system, _ = task.messages(settings, context="c", question="q", sentences="s")
    answer = re.search(r"^Answer: (.*)$", system, re.M).group(1)
    schema = schemas.verdict_list(len(task.example.verdicts), key, settings)
    assert grammar_accepts(schema, answer)
    items = json.loads(answer)["verdicts"]
    assert [item[key] for item in items] == list(task.example.verdicts)
    assert all(("reason" in item) == reasons for item in items)


@pytest.mark.parametrize("example", [False, True])
def test_examples_are_shown_only_when_asked_and_only_in_the_shared_instructions(example):
    for request in all_requests(JudgeSettings(example=example)):
        system, user = system_text(request), user_text(request)
        assert "Harbor Bridge" not in user
        has_one = metric_of(request) in ("context_relevance", "context_recall", "answer_supported_precision")
        assert ("Example (a different subject)" in system) == (example and has_one)


# --- judge output that cannot be used -----------------------------------------------------


def test_judge_output_that_is_not_json_is_null_and_leaves_other_metrics_alone():
    script = Script(context_recall="Sure! Here is my answer: attributed")
    results = score_one(make_sample(), ["context_recall", "context_relevance", "answer_supported_precision"], script)
    recall = results["context_recall"]
    assert recall.score is None
    assert "not valid JSON" in recall.null_reason
    assert recall.evidence["judge_output"] == "Sure! Here is my answer: attributed"
    assert results["context_relevance"].score == pytest.approx(1.0)
    assert results["answer_supported_precision"].score == pytest.approx(1.0)


def test_judge_output_that_is_a_json_list_is_null():
    result = score_one(make_sample(), ["context_relevance"], Script(context_relevance="[1, 2]"))["context_relevance"]
    assert result.score is None
    assert "not a JSON object" in result.null_reason


def test_wrong_number_of_verdicts_is_null_and_leaves_other_metrics_alone():
    script = Script(answer_supported_precision=verdicts("supported", [1, 1, 1]))  # the response has 2 sentences
    results = score_one(make_sample(), ["answer_supported_precision", "context_recall"], script)
    bad = results["answer_supported_precision"]
    assert bad.score is None
    assert "does not fit its schema at verdicts: Expected at most 2 items but found 1 extra" in bad.null_reason
    assert results["context_recall"].score == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("metric", "answer"),
    [
        ("context_relevance", {"reason": "no list"}),
        ("context_relevance", {"verdicts": 3}),
        ("context_recall", {"verdicts": [{"sentence": 1}, {"sentence": 2}]}),
        ("response_relevancy", {"answers": []}),
        ("response_relevancy", {"questions": ["just a string", "b", "c"]}),
    ],
)
def test_answers_of_the_wrong_shape_are_null(metric, answer):
    results = score_one(make_sample(), [metric, "answer_supported_precision"], Script(**{metric: answer}))
    assert results[metric].score is None
    assert "does not fit its schema" in results[metric].null_reason
    assert results["answer_supported_precision"].score == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("metric", "answer", "why"),
    [
        ("context_relevance", verdicts("relevant", [1, 0, 2, 0, 0]), "verdicts/2/relevant: 2 is not one of [0, 1]"),
        ("context_relevance", selection(1, total=7), "Expected at most 5 items but found 2 extra"),  # only 5 exist
        ("context_recall", verdicts("attributed", [2, 1]), "verdicts/0/attributed: 2 is not one of [0, 1]"),
        ("answer_supported_precision", verdicts("supported", [1, -1]), "-1 is not one of [0, 1]"),
        ("context_supported_precision", lambda r: verdicts("supported", [3] * verdict_count(r)),
         "3 is not one of [0, 1]"),
        ("response_relevancy", questions(["a?", "b?"]), "is too short"),
        ("response_relevancy", questions(["a?", "b?", "c?", "d?"]), "Expected at most 3 items but found 1 extra"),
        ("response_relevancy", questions([]), "questions: [] is too short"),
    ],
    ids=["relevant-2", "relevant-too-many", "verdict-2", "verdict-minus-1", "chunk-verdict-3",
         "two-questions", "four-questions", "no-questions"],
)
def test_answers_outside_the_schema_values_are_not_scored(metric, answer, why):
    # The grammar forbids these answers; a judge that ignores it is not scored, and the other metrics are.
    results = score_one(make_sample(), list(dict.fromkeys([metric, "context_relevance"])), Script(**{metric: answer}))
    result = results[metric]
    assert result.score is None
    assert "does not fit its schema" in result.null_reason
    assert why in result.null_reason
    if metric != "context_relevance":
        assert results["context_relevance"].score == pytest.approx(1.0)


def test_response_relevancy_question_count_is_checked_against_the_settings():
    settings = JudgeSettings(questions=5)
    three = score_one(make_sample(), ["response_relevancy"], Script(response_relevancy=questions(["a?", "b?", "c?"])),
                      settings=settings)["response_relevancy"]
    assert three.score is None
    assert "is too short" in three.null_reason  # the schema asks for exactly five
    five = score_one(make_sample(), ["response_relevancy"], Script(response_relevancy=questions(["q?"] * 5)),
                     settings=settings)["response_relevancy"]
    assert five.score == pytest.approx(1.0)
    assert len(five.evidence["questions"]) == 5


def test_one_bad_chunk_answer_makes_context_supported_precision_null():
    def answer(request):
        return "oops" if passage_rank(request) == 2 else verdicts("supported", [1] * verdict_count(request))

    script = Script(context_supported_precision=answer)
    result = score_one(make_sample(), ["context_supported_precision"], script)["context_supported_precision"]
    assert result.score is None
    assert "not valid JSON" in result.null_reason
    assert result.evidence["judge_output"] == "oops"


def test_a_bad_answer_for_one_sample_leaves_the_next_sample_alone():
    samples = [make_sample("a", user_input="Which city is the capital?"), make_sample("b")]
    script = Script(context_relevance=lambda r: "garbage" if "Which city" in user_text(r) else selection(1, 2))
    results, _ = evaluate(samples, ["context_relevance"], script)
    assert [r.sample_id for r in results] == ["a", "b"]
    assert results[0].score("context_relevance") is None
    assert results[1].score("context_relevance") == pytest.approx(2 / 5)


# --- the engine ---------------------------------------------------------------------------


def test_duplicate_requests_are_sent_to_the_judge_once():
    samples = [make_sample("a"), make_sample("b"), make_sample("c")]  # same content, three ids
    script = Script(context_recall=verdicts("attributed", [1, 0]))
    results, judge = evaluate(samples, ["context_recall", "context_relevance"], script)
    assert len(script.seen) == 2
    assert sum(judge.batches) == 2
    assert [r.sample_id for r in results] == ["a", "b", "c"]
    assert {r.score("context_recall") for r in results} == {0.5}
    assert {r.score("context_relevance") for r in results} == {1.0}


def test_engine_answers_in_request_order_and_asks_each_request_once():
    requests = [
        JudgeRequest.build("sys", " ".join(["word"] * n) + f" #{n}", {"type": "object"}, 5) for n in (9, 1, 5, 1, 9, 3)
    ]
    asked = []
    judge = ScriptedJudge(lambda r: asked.append(r) or {"echo": user_text(r)})
    answers = JudgeEngine(judge, BatchLimits(batch_size=2)).answer(requests)
    assert [a.data["echo"] for a in answers] == [user_text(r) for r in requests]
    assert len(asked) == len(set(asked)) == 4  # 6 requests, 4 distinct
    assert judge.batches == [2, 2]
    # shortest prompts first, so a batch pads little
    assert [judge.prompt_tokens(r) for r in asked] == [3, 5, 7, 11]


def test_a_judge_that_does_not_announce_its_answers_still_has_them_cached_and_counted(tmp_path):
    class QuietJudge(ScriptedJudge):
        def generate(self, requests, admission=None, on_answer=None):
            return super().generate(requests, admission)  # never calls on_answer

    requests = sized_requests([3, 4, 5], max_new_tokens=5)
    cache = AnswerCache(tmp_path / "answers.sqlite")
    engine = JudgeEngine(QuietJudge(lambda r: {"ok": 1}), BatchLimits(32), cache)
    engine.answer(requests)
    assert engine.answered == 3
    assert len(cache.get_many("scripted", requests)) == 3
    cache.close()


def test_one_answer_cache_serves_calls_from_several_threads(tmp_path):
    """A service built one AnswerCache and passed it to its worker threads: every call from a thread other than
    the first was sqlite's ProgrammingError (a service probe)."""
    from concurrent.futures import ThreadPoolExecutor

    requests = sized_requests([3, 4, 5, 6], max_new_tokens=5)
    cache = AnswerCache(tmp_path / "answers.sqlite")
    engine = JudgeEngine(ScriptedJudge(lambda r: {"ok": 1}), BatchLimits(32), cache)
    engine.answer(requests[:1])  # opened in this thread
    with ThreadPoolExecutor(3) as pool:
        found = list(pool.map(lambda request: (cache.put_many("scripted", {request: engine.answer([request])[0]}),
                                               len(cache.get_many("scripted", requests)))[1], requests[1:]))
    assert all(1 < count <= 4 for count in found) and len(cache.get_many("scripted", requests)) == 4
    assert not cache.off and cache.said == []
    cache.close()


def test_the_shortest_answer_a_schema_admits_is_what_any_answer_costs_at_least():
    from localeval.engine.shortest import shortest_answer
    from localeval.metrics.base import JudgeSettings
    from localeval.metrics.schemas import string_list, verdict_list

    assert shortest_answer(json.dumps(verdict_list(2, "verdict", JudgeSettings()))) == (
        '{"verdicts":[{"sentence":1,"reason":"","verdict":0},{"sentence":2,"reason":"","verdict":0}]}')
    assert shortest_answer(json.dumps(string_list("statements", most=5, chars=80))) == '{"statements":["x"]}'
    # keys not required may be left out, lists without a least length left empty
    assert shortest_answer('{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "number"}}}}') == "{}"
    # a lower bound wherever a value could be written shorter: one character of a string (a token may hold many),
    # true before false, 0 for a value of any type (a review)
    assert shortest_answer('{"type": "array", "prefixItems": [{"type": "string", "minLength": 40}, {"type": "boolean"},'
                           ' {}, {"type": "null"}], "minItems": 4}') == '["x",true,0,null]'
    # a least length no judge could hold is written out only so far: arrays of a million arrays filled memory
    huge = {"type": "array", "minItems": 10**6, "items": {"type": "array", "minItems": 10**6, "items": {}}}
    assert shortest_answer(json.dumps(huge)).count(",") < 50_000
    # a type passed over spends none of that budget (a review: b's three items were left out)
    either = {"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": ["array", "null"], "minItems": 60_000}, "b": {"type": "array", "minItems": 3}}}
    assert shortest_answer(json.dumps(either)) == '{"a":null,"b":[0,0,0]}'


def test_the_least_answer_never_stops_a_judge_call():
    """A schema of several types crashed every request of the call; a judge of one's own without answer_length
    raised AttributeError (a review): the estimate falls back to the plain room."""
    schema = {"type": "object", "properties": {"a": {"type": ["string", "null"], "maxLength": 5}}, "required": ["a"],
              "additionalProperties": False}
    request = JudgeRequest.build("s", "u", schema, 50)
    engine = JudgeEngine(ScriptedJudge(lambda r: {"a": None}, context_tokens=8192), BatchLimits(4))
    assert engine.answer([request])[0].data == {"a": None}

    class OwnJudge(ScriptedJudge):
        answer_length = property(lambda self: (_ for _ in ()).throw(AttributeError("answer_length")))

    assert JudgeEngine(OwnJudge(lambda r: {"a": None}, context_tokens=8192), BatchLimits(4)).answer([request])[0].data


def test_a_request_longer_than_the_judge_reads_is_refused_not_decoded(tmp_path):
    requests = sized_requests([3, 8, 5], max_new_tokens=4)  # 3 + 4 and 5 + 4 fit in 9; 8 + 4 does not
    asked = []
    cache = AnswerCache(tmp_path / "answers.sqlite")
    engine = JudgeEngine(ScriptedJudge(lambda r: asked.append(r) or {"ok": 1}, context_tokens=9), BatchLimits(32), cache)
    answers = engine.answer(requests)
    assert asked == [requests[0], requests[2]]
    assert answers[1].refused and answers[1].data is None and answers[1].error == (
        "too long for the judge: its prompt (8 tokens) leaves no room for its answer (at least 4) in the 9 tokens the "
        "judge reads (shorten the sample's texts, or use a judge that reads more)")
    assert [a.data for a in answers[::2]] == [{"ok": 1}] * 2
    assert (engine.answered, engine.invalid) == (2, 0)  # a refusal is not a bad answer of the judge
    assert requests[1] not in cache.get_many("scripted", requests)  # a longer-reading judge may answer it
    cache.close()


def sized_requests(prompt_words: list[int], max_new_tokens: int) -> list[JudgeRequest]:
    """Requests whose ScriptedJudge prompt size is exactly the given word count (system 'sys' is 1 word)."""
    return [
        JudgeRequest.build("sys", " ".join([f"w{i}"] * (words - 1)), {"type": "object"}, max_new_tokens)
        for i, words in enumerate(prompt_words)
    ]


def admitted(judge: ScriptedJudge, requests: list[JudgeRequest], limits: BatchLimits) -> list[list[JudgeRequest]]:
    """The requests each admission took when the engine answered `requests` under `limits`."""
    JudgeEngine(judge, limits.with_batch_size(32)).answer(requests)
    return judge.admitted


def test_batches_are_cut_by_the_token_budget():
    judge = ScriptedJudge(lambda r: {})
    requests = sized_requests([40, 10, 30, 20], max_new_tokens=0)
    assert [judge.prompt_tokens(r) for r in requests] == [40, 10, 30, 20]
    batches = admitted(judge, requests, BatchLimits(batch_size=32, max_batch_tokens=60))
    # shortest first; a row joins while rows x longest prompt stays within 60
    assert [[judge.prompt_tokens(r) for r in b] for b in batches] == [[10, 20], [30], [40]]


@pytest.mark.parametrize("max_new_tokens", [0, 10, 1_000])
def test_token_budget_counts_prompts_and_not_the_output_bound(max_new_tokens):
    judge = ScriptedJudge(lambda r: {})
    requests = sized_requests([10] * 7, max_new_tokens=max_new_tokens)
    # 6 rows x 10 prompt tokens = 60 fits (the budget is inclusive), a 7th would make 70; the output
    # bound, even 100 times the budget, changes nothing
    assert [len(b) for b in admitted(judge, requests, BatchLimits(batch_size=32, max_batch_tokens=60))] == [6, 1]


@pytest.mark.parametrize("max_new_tokens", [0, 1_000])
def test_a_request_wider_than_the_budget_still_gets_a_batch_of_its_own(max_new_tokens):
    judge = ScriptedJudge(lambda r: {})
    requests = sized_requests([5, 500, 6, 101, 7], max_new_tokens=max_new_tokens)
    batches = admitted(judge, requests, BatchLimits(max_batch_tokens=100))
    # each prompt over 100 is sent alone rather than dropped; the short ones still share a batch
    assert [[judge.prompt_tokens(r) for r in b] for b in batches] == [[5, 6, 7], [101], [500]]


def test_batches_are_cut_by_rows_and_by_tokens_whichever_comes_first():
    judge = ScriptedJudge(lambda r: {})
    requests = sized_requests([10, 10, 10, 10, 10, 30, 30], max_new_tokens=500)
    batches = admitted(judge, requests, BatchLimits(batch_size=3, max_batch_tokens=60))
    # rows cut the 10s at 3; the next 10, 10 cannot take a 30 (3 x 30 = 90 > 60); the two 30s share one (2 x 30 = 60)
    assert [[judge.prompt_tokens(r) for r in b] for b in batches] == [[10, 10, 10], [10, 10], [30, 30]]


def padded_cost(judge, batch) -> int:
    """What a batch costs as BatchLimits defines it: rows x longest prompt (output bounds not counted)."""
    return len(batch) * max(judge.prompt_tokens(r) for r in batch)


@pytest.mark.parametrize(
    ("batch_size", "max_batch_tokens"),
    # the prompts here are 80 to 160 words: budgets from 1,500 down cut by tokens (200: pairs of the shortest only)
    [(1, 10**9), (2, 10**9), (3, 10**9), (32, 8_000), (5, 12_000), (32, 24_576), (32, 1_500), (8, 600), (32, 200)],
)
def test_batches_of_a_real_run_respect_the_limits(batch_size, max_batch_tokens):
    samples = [
        make_sample(f"s{i}", user_input=f"Question number {i} about France?", response=f"Paris, answer {i}.")
        for i in range(6)
    ]
    script = Script()
    limits = BatchLimits(batch_size=batch_size, max_batch_tokens=max_batch_tokens)
    results, judge = evaluate(samples, list(DEFAULT_METRICS), script, limits=limits)

    # 6 samples x (1 + 1 + 1 + 1 + 2 chunks) requests, all distinct and each answered once
    assert sum(judge.batches) == len(script.seen) == len(set(script.seen)) == 36
    for batch in judge.admitted:
        assert 1 <= len(batch) <= batch_size
        assert len(batch) == 1 or padded_cost(judge, batch) <= max_batch_tokens
    # every request came in one engine call: shortest prompts first, and a batch is cut only
    # where the next row would break a limit
    widths = [judge.prompt_tokens(r) for batch in judge.admitted for r in batch]
    assert widths == sorted(widths)
    for batch, following in zip(judge.admitted, judge.admitted[1:]):
        assert len(batch) == batch_size or padded_cost(judge, batch + following[:1]) > max_batch_tokens
    if batch_size > 1:
        assert max(judge.batches) > 1  # the limits do let rows share a batch
    assert all(r.score(m) is not None for r in results for m in DEFAULT_METRICS)


@pytest.mark.parametrize(("max_batch_tokens", "sizes"), [(80, [2]), (79, [1, 1])])
def test_token_budget_pads_every_row_to_the_longest_prompt(max_batch_tokens, sizes):
    judge = ScriptedJudge(lambda r: {})
    short_prompt_long_output = JudgeRequest.build("sys", " ".join(["a"] * 9), {"type": "object"}, 400)  # 10 prompt
    long_prompt_short_output = JudgeRequest.build("sys", " ".join(["b"] * 39), {"type": "object"}, 10)  # 40 prompt
    batches = admitted(judge, [long_prompt_short_output, short_prompt_long_output],
                       BatchLimits(batch_size=32, max_batch_tokens=max_batch_tokens))
    # together they pad to 2 rows x 40 prompt tokens = 80, not 10 + 40 = 50 (that would fit 79);
    # the 400-token output bound is not counted (counted, it would cut even at 80)
    assert [len(b) for b in batches] == sizes
    assert [judge.prompt_tokens(r) for b in batches for r in b] == [10, 40]  # shortest first


def test_batch_size_one_gives_batches_of_one():
    script = Script()
    _, judge = evaluate([make_sample()], list(DEFAULT_METRICS), script, limits=BatchLimits(batch_size=1))
    assert judge.batches == [1] * 6


def test_requests_of_different_schemas_share_a_batch():
    script = Script()
    limits = BatchLimits(batch_size=64, max_batch_tokens=10**9)
    _, judge = evaluate([make_sample(), zh_sample()], list(DEFAULT_METRICS), script, limits=limits)
    assert len(judge.batches) == 1  # every metric's first step is answered in one round, one batch
    (batch,) = judge.admitted
    assert {metric_of(r) for r in batch} == set(DEFAULT_METRICS)
    assert len({r.schema for r in batch}) >= 5


def test_window_scores_samples_a_window_at_a_time():
    samples = [make_sample(f"s{i}", user_input=f"Question {i}?") for i in range(5)]
    results, judge = evaluate(samples, ["context_relevance"], Script(), window=2)
    assert judge.batches == [2, 2, 1]
    assert [r.sample_id for r in results] == ["s0", "s1", "s2", "s3", "s4"]


def test_answer_cache_makes_the_second_run_free(tmp_path):
    samples = [make_sample("a"), zh_sample(), einstein_sample()]
    metrics = list(DEFAULT_METRICS)
    script = Script(
        context_relevance=selection(1),
        context_recall=lambda r: verdicts("attributed", [1, 0] + [1] * (verdict_count(r) - 2)),
    )
    cache = AnswerCache(tmp_path / "answers.sqlite")
    first, judge = evaluate(samples, metrics, script, cache=cache)
    cache.close()
    asked = sum(judge.batches)
    assert asked == len(script.seen) > 0

    def must_not_be_called(request):
        raise AssertionError("the judge was asked despite the cache")

    cache = AnswerCache(tmp_path / "answers.sqlite")
    judge2 = ScriptedJudge(must_not_be_called)
    pipeline = scripted_pipeline(metrics, judge2, cache=cache)
    engine, second = pipeline.engine, list(pipeline.evaluator.run(samples))
    cache.close()

    assert judge2.batches == []
    assert engine.cache_hits == asked
    assert [r.to_json() for r in second] == [r.to_json() for r in first]
    assert first[2].score("context_recall") == pytest.approx(0.75)


def test_requests_are_counted_once_however_many_samples_ask_them():
    """Two samples with the same texts ask the same requests: the judge answers each once, and the
    count summary.json shows is the one the progress line shows."""
    judge = ScriptedJudge(Script())
    evaluator = scripted_pipeline(["context_recall"], judge).evaluator
    list(evaluator.run([make_sample("a"), make_sample("b")]))
    assert evaluator.timings.judge_requests == sum(judge.batches) > 0
    single = scripted_pipeline(["context_recall"], ScriptedJudge(Script())).evaluator
    list(single.run([make_sample("a")]))
    assert single.timings.judge_requests == evaluator.timings.judge_requests


def test_answer_cache_does_not_keep_unusable_answers(tmp_path):
    path = tmp_path / "answers.sqlite"
    cache = AnswerCache(path)
    first, _ = evaluate([make_sample()], ["context_relevance"], Script(context_relevance="not json"), cache=cache)
    assert first[0].score("context_relevance") is None

    script = Script(context_relevance=selection(1, 2, 3))
    second, judge = evaluate([make_sample()], ["context_relevance"], script, cache=cache)
    cache.close()
    assert judge.batches == [1]  # asked again
    assert second[0].score("context_relevance") == pytest.approx(3 / 5)


def test_answer_cache_is_keyed_by_judge_identity(tmp_path):
    cache = AnswerCache(tmp_path / "answers.sqlite")
    evaluate([make_sample()], ["context_relevance"], Script(), cache=cache)

    class OtherJudge(ScriptedJudge):
        identity = "another model"

    judge = OtherJudge(Script())
    list(scripted_pipeline(["context_relevance"], judge, cache=cache).evaluator.run([make_sample()]))
    cache.close()
    assert judge.batches == [1]


def test_a_sample_without_a_question_still_gets_the_metrics_whose_prompt_has_none():
    # answer_supported_precision and context_supported_precision judge the response against the
    # context alone; context_relevance and context_recall show the judge the question.
    script = Script()
    results = score_one(make_sample(user_input=None), list(CONTEXT_METRICS), script)
    for name in ("answer_supported_precision", "context_supported_precision"):
        assert results[name].score is not None, name
    for name in ("context_relevance", "context_recall"):
        assert results[name].null_reason == "missing user_input"
    assert {metric_of(r) for r in script.seen} == {"answer_supported_precision", "context_supported_precision"}
