"""report.html and the bench page as a person sees them: the structure of the HTML, and (where a
Chromium is installed) the page rendered headless at 1400 px wide, its own script run.

The run is real but cheap: every metric through localeval.evaluate, with a scripted judge that
calls every sentence of a request wrong when the request mentions Mars, and flat embeddings.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import replace
from html import escape, unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from localeval import DEFAULT_METRICS, JudgeSettings, Sample, evaluate
from localeval.bench.report import html_page
from localeval.engine.scripted import LookupEmbedder, ScriptedJudge
from localeval.gating import caveats, failures, outcomes, undecided
from localeval.metrics import METRICS
from localeval.report import _sub_scores, write_report
from localeval.summary import summarize

DEV_BENCH = Path(__file__).resolve().parent.parent / "docs" / "judges" / "dev-bench.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
WIDTH = 1400

# a verdict's mark, said in words too (a screen reader read ✗ as "x-shaped bullet")
YES = "<span class='yes'><span aria-hidden='true'>✓</span><span class='sr-only'>yes</span></span>"
NO = "<span class='no'><span aria-hidden='true'>✗</span><span class='sr-only'>no</span></span>"
MARS_QUESTION = "Is <b>Mars</b> & the Moon one planet?"  # markup in it must show as text
SAMPLES = [  # in this order in the data; "mars" scores lowest, "seine" has no reference (context_recall null)
    Sample("paris", "What is the capital of France?", ("Paris is the capital of France. It lies on the Seine.",),
           "The capital of France is Paris.", "Paris is the capital of France."),
    Sample("seine", "How long is the Seine?", ("The Seine is 777 km long.",), "It is 777 km long.", " "),  # blank: none
    Sample("mars", MARS_QUESTION, ("Mars is the fourth planet. Its moons are Phobos and Deimos.",),
           "Yes, Mars is the Moon.", "Mars is a planet; the Moon orbits the Earth."),
]


def mars_is_wrong(request) -> dict:
    """Every verdict 0 when the request mentions Mars, else 1; three committal questions."""
    schema = json.loads(request.schema)["properties"]
    if "questions" in schema:
        count = len(schema["questions"]["prefixItems"])
        return {"questions": [{"question": f"question {i}?", "noncommittal": 0} for i in range(1, count + 1)]}
    items = schema["verdicts"]["prefixItems"]
    key = next(k for k in ("relevant", "attributed", "supported") if k in items[0]["properties"])
    verdict = 0 if "Mars" in dict(request.messages)["user"] else 1
    return {"verdicts": [{"sentence": i, "reason": "scripted", key: verdict} for i in range(1, len(items) + 1)]}


def scored_rows(samples: list[Sample] = SAMPLES) -> list[dict]:
    """`samples` scored by every metric: their lines of results.jsonl."""
    return evaluate(samples, DEFAULT_METRICS, ScriptedJudge(mars_is_wrong), LookupEmbedder({}, default=[1.0, 0.0]),
                    device="cpu", settings=JudgeSettings(), cache=False).rows()


def write_run_report(out: Path, rows: list[dict], samples: list[Sample]) -> Path:
    """The report of `rows`, written as the runner writes it."""
    details = {"data": "samples.jsonl", "models": {"judge": "scripted", "embedder": "lookup"}, "device": "cpu",
               "warnings": [], "calibration": None}
    return write_report(out, rows, summarize(rows, list(DEFAULT_METRICS)), details, samples)


class Page(HTMLParser):
    """What the tests read off a page: its URLs, element ids, histograms and the sample table's row order."""

    def __init__(self, html: str):
        super().__init__()
        self.urls: list[str] = []
        self.ids: set[str] = set()
        self.histograms: list[str] = []
        self.sample_links: list[str] = []  # each row's link to its evidence, in table order
        self._in_samples = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.urls += [attrs[name] for name in ("src", "href") if attrs.get(name)]
        self.ids.add(attrs.get("id"))
        if tag == "figure" and attrs.get("class") == "histogram":
            self.histograms.append(attrs["data-metric"])
        self._in_samples = self._in_samples or (tag == "table" and attrs.get("id") == "samples")
        if tag == "a" and self._in_samples:
            self.sample_links.append(attrs["href"])

    def handle_endtag(self, tag):
        self._in_samples = self._in_samples and tag != "table"


def evidence_of(html: str, sample_id: str) -> str:
    """The section of the report that holds a sample's inputs and evidence, found by its heading."""
    return html.split(f"<h3 dir='auto'>{escape(sample_id)}</h3>", 1)[1].split("<section", 1)[0]


def external(urls: list[str]) -> list[str]:
    return [url for url in urls if re.match(r"\s*(https?:)?//", url, re.I)]


def render(page: Path, probe: str, tmp_path: Path) -> dict:
    """Open `page` in headless Chromium, WIDTH px wide; after the page's own scripts, run `probe` (a JS
    function body that returns what it measured) and return that, read back from the dumped DOM."""
    probed = tmp_path / f"probed-{page.name}"
    recorder = ("const out = document.createElement('pre'); out.id = 'probe';"
                f"out.textContent = JSON.stringify((() => {{ {probe} }})()); document.body.append(out);")
    # the probe allowed by its digest beside the page's own script, which runs only if the page's policy names it
    html = page.read_text(encoding="utf-8").replace("script-src ", f"script-src {script_digest(recorder)} ", 1)
    probed.write_text(html + f"<script>{recorder}</script>", encoding="utf-8")
    dom = dumped_dom(probed, tmp_path, f"--window-size={WIDTH},1000")
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, f"no probe result in Chromium's DOM: {dom[:500]!r}"
    return json.loads(unescape(found.group(1)))


def script_digest(script: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'"


def dumped_dom(page: Path, tmp_path: Path, *options: str) -> str:
    """The page's DOM after its scripts ran, from headless Chromium. --no-sandbox: Chromium refuses to run as
    root with its sandbox; the page is our own local file."""
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
               *options, "--dump-dom", page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120).stdout


def needs_chromium():
    if CHROMIUM is None:
        pytest.skip("no chromium binary found")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    return write_run_report(tmp_path_factory.mktemp("report"), scored_rows(), SAMPLES)


# --- the HTML itself (no browser needed) ---------------------------------------------------------


def test_report_shows_each_samples_inputs_with_its_evidence(report):
    html = report.read_text(encoding="utf-8")
    assert escape(MARS_QUESTION) in html and "<b>Mars</b>" not in html
    for sample in SAMPLES:
        evidence = evidence_of(html, sample.id)
        assert escape(sample.user_input) in evidence and escape(sample.response) in evidence
        assert all(f"<li><div dir='auto' lang='en'>{escape(chunk)}</div></li>" in evidence
                   for chunk in sample.retrieved_contexts)
        given = (sample.reference or "").strip()
        reference = f"<dd dir='auto' lang='en'>{escape(sample.reference)}" if given else \
            "<dd><span class='null'>none given</span>"
        assert f"<dt>reference</dt>{reference}" in evidence


def test_report_orders_lowest_first_has_a_histogram_per_metric_and_no_external_url(report):
    page = Page(report.read_text(encoding="utf-8"))
    # mars scores 0; ties keep the data's order; each links by its place in the results (an id may hold a space)
    assert page.sample_links == ["#s-3", "#s-1", "#s-2"]
    assert all(link[1:] in page.ids for link in page.sample_links)  # every row links to its evidence
    assert page.histograms == list(DEFAULT_METRICS)
    counts = re.findall(r"<title>[^<]* to [^<]*: (\d+) (samples?)</title>", report.read_text(encoding="utf-8"))
    assert {"1", "0"} <= {count for count, _ in counts}  # each bar's tooltip counts its samples in words
    assert all(noun == ("sample" if count == "1" else "samples") for count, noun in counts)
    assert external(page.urls) == []
    assert "<link" not in report.read_text(encoding="utf-8")


def test_a_screen_reader_finds_the_parts_of_the_page_by_heading_caption_and_label(report):
    """The warnings, gates and summary had no heading, the tables no caption, and each histogram was read out
    as its axis numbers ("0 4 1 1 1 4 1 0 0.5 1") (a report probe)."""
    html = report.read_text(encoding="utf-8")
    assert re.findall(r"<h2[^>]*>([^<]*)</h2>", html) == ["Scores", "Score distributions", "Samples"]
    assert html.count("<main>") == 1 and html.count("<caption>") == 2
    labels = re.findall(r"<svg [^>]*role='img' aria-label='([^']*)'", html)
    assert len(labels) == len(DEFAULT_METRICS) == html.count("<svg ")
    recall = next(label for label in labels if label.startswith("context_recall"))
    assert recall == "context_recall, 2 scored, 1 null: 0 to 0.1: 1 sample; 0.9 to 1: 1 sample"


def contrast(colour: str) -> float:
    """A text colour's contrast with white (WCAG 2's formula)."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)] if len(colour) == 7 else \
        [int(c * 2, 16) / 255 for c in colour[1:]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 1.05 / (0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2] + 0.05)


def test_every_text_colour_reads_on_white():
    """Null scores and why a score is null were #999 on white, 2.85:1, under WCAG's 4.5:1 (a report probe)."""
    from localeval.report import STYLE

    colours = set(re.findall(r"(?<![-\w])color:(#[0-9a-f]{3,6})\b", STYLE))
    assert "#6e6e6e" in colours and "#999" not in colours
    assert {colour: round(contrast(colour), 2) for colour in colours if contrast(colour) < 4.5} == {}


def test_the_page_says_when_limit_chose_the_samples_and_shows_a_question_on_one_line(tmp_path):
    """A run of --limit 8 on 30 samples read "dev.jsonl: 8 samples", as a whole evaluation (a report probe);
    a question's U+0007 showed as a box, its line breaks broke the table's row."""
    samples = [replace(SAMPLES[0], user_input="What is\nthe capital\u2028of France?\x07"), *SAMPLES[1:]]
    rows = scored_rows(samples)
    details = {"data": "dev.jsonl", "models": {"judge": "scripted", "embedder": "lookup"}, "device": "cpu",
               "warnings": [], "calibration": None, "limit": 3}
    html = write_report(tmp_path, rows, summarize(rows, list(DEFAULT_METRICS)), details, samples).read_text("utf-8")
    assert "<p><span class='path'>dev.jsonl</span>: 3 samples, the data's first 3 at most (--limit 3); judge" in html
    table = html[html.index("<table id='samples'>"):html.index("</table>", html.index("<table id='samples'>"))]
    assert ">What is the capital of France?\\x07</td>" in table and "\x07" not in table
    details.pop("limit")
    html = write_report(tmp_path, rows, summarize(rows, list(DEFAULT_METRICS)), details, samples).read_text("utf-8")
    assert "<p><span class='path'>dev.jsonl</span>: 3 samples; judge" in html


def test_rows_without_their_sample_show_the_inputs_they_carry_or_say_they_are_unknown(tmp_path):
    rows = scored_rows()
    paris = SAMPLES[0]
    rows[0].update(user_input=paris.user_input, retrieved_contexts=list(paris.retrieved_contexts),
                   response=paris.response, reference=paris.reference)  # as `run --with-inputs` writes it
    html = write_run_report(tmp_path, rows, samples=[]).read_text(encoding="utf-8")
    assert escape(paris.user_input) in evidence_of(html, "paris")
    assert html.count("is not in the run's data") == len(SAMPLES) - 1
    assert Page(html).sample_links[0] == "#s-3"  # their scores are still ordered and linked
    rows[0]["language"] = "de"  # the sample's own, as each results line carries it: for a browser's font and voice
    html = write_run_report(tmp_path, rows, samples=[]).read_text(encoding="utf-8")
    assert f"<dd dir='auto' lang='de'>{escape(paris.response)}" in evidence_of(html, "paris")


def test_the_report_names_each_model_and_then_its_identitys_details(tmp_path):
    rows = scored_rows()
    details = {"data": "samples.jsonl", "device": "cpu", "warnings": [], "calibration": None,
               "models": {"judge": "smollm2-135m-instruct|b179c9523d0e6a0f|torch.float32+prepacked|greedy",
                          "embedder": None}}
    html = write_report(tmp_path, rows, summarize(rows, list(DEFAULT_METRICS)), details, SAMPLES).read_text("utf-8")
    assert ("judge <b>smollm2-135m-instruct</b> <span class='p'>(b179c9523d0e6a0f, torch.float32+prepacked, "
            "greedy)</span>, embedder <b>none</b> (no metric needs one)") in html
    assert "<figcaption><b>context_<wbr>supported_<wbr>precision</b>" in html  # wraps where SVG text could not


def test_a_calibrated_metric_shows_the_verdicts_its_score_counted(tmp_path):
    """Under a threshold the score counts a verdict by its probability, not by what the judge wrote:
    the marks must add up to the score, and the verdict the judge wrote is still said."""
    rows = scored_rows()
    mars = rows[2]
    (sentence,) = mars["evidence"]["context_recall"]["sentences"]
    sentence["probability"] = 0.443  # the judge wrote 0, yet 0.443 reaches the threshold below
    mars["context_recall"] = 1.0  # what a calibrated run scores from it
    details = {"data": "samples.jsonl", "models": {"judge": "scripted", "embedder": "lookup"}, "device": "cpu",
               "warnings": [], "calibration": {"path": "calibration.json", "fitted_on": "labeled.jsonl",
                                               "thresholds": {"context_recall": 0.3}}}
    html = write_report(tmp_path, rows, summarize(rows, list(DEFAULT_METRICS)), details, SAMPLES).read_text("utf-8")
    recall = evidence_of(html, "mars").split("context_recall: 1.000 <span class='p'>(threshold 0.3)</span></summary>",
                                             1)[1].split("</details>", 1)[0]
    assert recall.startswith(f"<div>{YES} ")
    assert "(44%)" in recall and "(counted by the calibrated threshold 0.3; the judge wrote 0)" in recall
    uncalibrated = evidence_of(html, "mars").split("context_relevance: ", 1)[1].split("</details>", 1)[0]
    assert "counted by" not in uncalibrated and NO in uncalibrated


def test_a_labeled_samples_cells_show_peoples_score_under_the_judges(tmp_path):
    """Which labeled samples the judge got wrong was in no file of a run: the summary gave only its bias (a
    labels probe)."""
    rows = scored_rows()
    human = {"paris": {"context_recall": 0.25, "answer_supported_precision": None},
             "seine": {"context_recall": 0.5}}  # seine's context_recall is null (a blank reference): shown all the same
    summary = summarize(rows, list(DEFAULT_METRICS), human)
    details = {"data": "samples.jsonl", "models": {"judge": "scripted", "embedder": "lookup"}, "device": "cpu",
               "warnings": [], "calibration": None, "labels": "labeled.jsonl"}
    html = write_report(tmp_path, rows, summary, details, SAMPLES, human).read_text("utf-8")
    paris = re.search(r"<tr [^>]*><th scope='row' dir='auto'><a href='#s-1'>paris</a>.*?</tr>", html).group(0)
    assert paris.count("people ") == 1
    assert "<td class='num' data-value='1.0'>1.000<br><span class='p'>people 0.250</span></td>" in paris
    assert "<td class='num null' data-value=''>null<br><span class='p'>people 0.500</span></td>" in html
    assert html.count("<span class='p'>people ") == 2
    assert "Under a labeled sample's scores, people's (from --labels)" in html
    assert "Under a labeled" not in write_report(tmp_path, rows, summary, details, SAMPLES).read_text("utf-8")


def test_the_report_says_how_each_gate_came_out(tmp_path):
    """A page kept as a CI artifact says why the build failed, in the terminal's words."""
    rows = scored_rows()
    summary = summarize(rows, list(DEFAULT_METRICS))
    gates = {"context_recall": 0.9, "answer_supported_precision": 0.5}
    details = {"data": "samples.jsonl", "models": {"judge": "scripted", "embedder": "lookup"}, "device": "cpu",
               "warnings": [], "calibration": None, "gates": outcomes(summary, gates)}
    html = write_report(tmp_path, rows, summary, details, SAMPLES).read_text("utf-8")
    (failed,) = failures(summary, gates, rows)
    (rests_on,) = caveats(summary, gates)  # "seine" has no reference: context_recall's mean is of two
    assert rests_on.startswith("context_recall: its mean rests on 2 of 3 samples; 1 could not be scored")
    # one gate a line, under a first line that says how the run came out
    assert ("<div class='failed'><h2 class='gates'>--fail-under gates: 1 gate of 2 failed: the run exited 4.</h2>"
            "<ul class='gates'>"
            f"<li>failed: {escape(failed)}</li><li>passed: answer_supported_precision (mean 0.667, at least 0.5)</li>"
            f"<li>note: {escape(rests_on)}</li></ul></div>") in html
    assert failed.startswith("context_recall: mean 0.500 is below 0.9; scores: mars 0.000, paris 1.000")  # lowest first
    details["gates"] = {}
    assert "--fail-under" not in write_report(tmp_path, rows, summary, details, SAMPLES).read_text("utf-8")


def test_the_report_says_where_the_labels_could_not_tell_a_gate(tmp_path):
    """stderr said it, and the page kept as the build's artifact said only "passed"."""
    rows = [{"id": s.id, "context_recall": 0.9} for s in SAMPLES] * 2
    rows = [{**row, "id": f"{row['id']}{i}"} for i, row in enumerate(rows)]
    summary = summarize(rows, ["context_recall"], {rows[i]["id"]: {"context_recall": h}
                                                   for i, h in enumerate((0.2, 1.0, 0.6))})
    gates = {"context_recall": 0.5}
    details = {"data": "samples.jsonl", "models": {"judge": "scripted", "embedder": "lookup"}, "device": "cpu",
               "warnings": [], "calibration": None, "gates": outcomes(summary, gates)}
    html = write_report(tmp_path, [], summary, details, SAMPLES).read_text("utf-8")
    (line,) = undecided(summary, gates)
    assert ("<div class='warning'><h2 class='gates'>--fail-under gates: 1 gate passed.</h2><ul class='gates'><li>passed: "
            "context_recall "
            f"(corrected mean 0.600, at least 0.5)</li><li>note: {escape(line)}</li></ul></div>") in html
    # which people's labels corrected the mean: the page named neither the file nor that it was one (a probe)
    assert "on the samples people labeled (prediction-" in html
    details["labels"] = "labels <3>.jsonl"
    html = write_report(tmp_path, [], summary, details, SAMPLES).read_text("utf-8")
    assert "on the samples people labeled in labels &lt;3&gt;.jsonl (prediction-" in html


def test_the_report_says_why_scores_are_null_beside_the_summary(report):
    """The terminal said why; the page showed only a count, and the reason inside one sample's evidence (a probe)."""
    html = report.read_text(encoding="utf-8")
    summary_part = html.split("<h2>Score distributions</h2>", 1)[0]
    assert "<li>context_recall: 1 sample, empty reference</li>" in summary_part
    assert "the mean and interval leave it out" in summary_part


def test_a_metrics_sub_scores_are_shown_under_their_results_column_names(report, tmp_path):
    """The evidence showed its own keys (chunk_relevance, per_chunk: [0.75]) where the table and
    results.jsonl name them context_relevance_chunks and the like (a probe)."""
    html = report.read_text(encoding="utf-8")
    mars = evidence_of(html, "mars")
    assert "<div class='reason'>context_relevance_chunks: 0.000</div>" in mars
    # context sentences under their chunk's number (a list of 62 lost them: a probe), and a way back up
    relevance = mars.split("context_relevance: ", 1)[1].split("</details>", 1)[0]
    assert relevance.split("</summary>", 1)[1].startswith(f"<div class='p'>chunk 1</div><div>{NO}")
    assert relevance.count("chunk 1</div>") == 1  # once for its two sentences
    two = replace(SAMPLES[0], id="two", retrieved_contexts=("Paris is the capital. It is big.", "It lies on the Seine."))
    html = write_run_report(tmp_path, scored_rows([two]), [two]).read_text(encoding="utf-8")
    relevance = evidence_of(html, "two").split("context_relevance: ", 1)[1].split("</details>", 1)[0]
    assert [line.split("<")[0] for line in relevance.split("<div class='p'>")[1:]] == ["chunk 1", "chunk 2"]
    assert "<a href='#samples'>back to the table</a>" in mars
    assert "<div class='reason'>context_supported_precision_per_chunk: 0.000</div>" in mars
    assert "chunk_relevance:" not in html and "per_chunk: [" not in html and "rank_weighted:" not in html.replace(
        "precision_rank_weighted:", "")
    with_a_blank_chunk = {"id": "x", "context_supported_precision": 0.5, "evidence": {"context_supported_precision": {}},
                          "context_supported_precision_per_chunk": [1.0, None, 0.0]}
    assert _sub_scores(with_a_blank_chunk, METRICS["context_supported_precision"]) == (
        "<div class='reason'>context_supported_precision_per_chunk: 1.000, null, 0.000</div>")  # it said None


def test_text_in_a_right_to_left_script_is_laid_out_in_its_own_direction(tmp_path):
    """A Hebrew question showed its question mark at the line's left end, its start for a reader (a probe)."""
    hebrew = replace(SAMPLES[0], id="rtl-עברית", user_input="מהי בירת צרפת?", response="פריז היא בירת צרפת.")
    html = write_run_report(tmp_path, scored_rows([hebrew]), [hebrew]).read_text(encoding="utf-8")
    assert f"<td dir='auto' lang='en' title='{hebrew.user_input}'>{hebrew.user_input}</td>" in html
    assert f"<dt>response</dt><dd dir='auto' lang='en'>{hebrew.response}</dd>" in html
    assert f"<h3 dir='auto'>{hebrew.id}</h3>" in html
    # a verdict's text and reason isolated: an Arabic sentence turned the line round, "#1" into "1#" (a probe)
    assert f"<bdi lang='en'>{hebrew.response}</bdi> <bdi class='reason'>scripted</bdi></div>" in html


def test_a_samples_texts_carry_its_language_and_the_page_its_own(tmp_path):
    """No lang attribute anywhere: a browser drew Japanese with Chinese glyphs' forms, a screen reader read
    Chinese in an English voice (a probe). The sample's language, else the run's; the page's words are English."""
    chinese = replace(SAMPLES[0], id="zh-1", user_input="法国的首都是哪里？", response="巴黎是法国的首都。", language="zh")
    html = write_run_report(tmp_path, scored_rows([chinese, SAMPLES[1]]), [chinese, SAMPLES[1]]).read_text("utf-8")
    assert html.startswith("<!doctype html><html lang='en'>")
    from localeval.report import _languages
    assert _languages({"languages": {"en": 6, "zh": 2}}) == " (6 in English, 2 in Chinese)"
    assert _languages({"languages": {"en": 6}}) == _languages({}) == ""
    zh, en = evidence_of(html, "zh-1"), evidence_of(html, SAMPLES[1].id)
    assert f"<dt>question</dt><dd dir='auto' lang='zh'>{chinese.user_input}</dd>" in zh
    assert f"<td dir='auto' lang='zh' title='{chinese.user_input}'>{chinese.user_input}</td>" in html  # the table's
    assert f"<bdi lang='zh'>{chinese.response}</bdi>" in zh and "lang='en'" not in zh
    assert "lang='zh'" not in en and f"<dd dir='auto' lang='en'>{escape(SAMPLES[1].response)}</dd>" in en


def test_fenced_code_shows_in_a_fixed_width_font_in_the_inputs_and_the_verdicts(tmp_path):
    """A docs chatbot's code showed as prose, its indentation lost in a proportional font (a probe)."""
    response = "Install it:\n```bash\npip install <pkg>\n  --upgrade\n```\nThen restart.\nDone."
    chunk = "```python\nimport os\nDone.\n```"  # a line of code that equals a prose sentence of the response
    coded = replace(SAMPLES[0], id="code", response=response, retrieved_contexts=(chunk,))
    html = evidence_of(write_run_report(tmp_path, scored_rows([coded]), [coded]).read_text(encoding="utf-8"), "code")
    # the block a box of its own, the line breaks around it its edges; markup in code shown as text
    assert ("<dt>response</dt><dd dir='auto' lang='en'>Install it:<code class='block' dir='ltr'>```bash\npip install "
            "&lt;pkg&gt;\n  --upgrade\n```</code>Then restart.\nDone.</dd>") in html
    assert "<li><div dir='auto' lang='en'><code class='block' dir='ltr'>```python\nimport os\nDone.\n```</code></div></li>" in html
    # a verdict on a line of code shows it as code; on prose, as prose, though the same words are code elsewhere
    assert "<bdi lang='en'><code dir='ltr'>pip install &lt;pkg&gt;</code></bdi>" in html
    assert "<bdi lang='en'><code dir='ltr'>import os</code></bdi>" in html
    assert "<bdi lang='en'>Then restart.</bdi>" in html and "<code dir='ltr'>Then restart.</code>" not in html
    answer = html[html.index("answer_supported_precision:"):]
    assert "<bdi lang='en'>Done.</bdi>" in answer[:answer.index("</details>")]  # the response's prose
    context = html[html.index("context_relevance:"):]
    assert "<bdi lang='en'><code dir='ltr'>Done.</code></bdi>" in context[:context.index("</details>")]  # the chunk's code
    assert "<code class='block'" not in evidence_of(write_run_report(tmp_path, scored_rows(), SAMPLES).read_text(
        encoding="utf-8"), "paris")  # no fence, no code


def test_code_reads_left_to_right_in_a_right_to_left_sample_and_a_whole_chunk_shows_its_blocks():
    """An Arabic answer's block took its direction: `cd ..` read `.. cd`, `--upgrade` `upgrade--` (a review)."""
    from localeval.metrics.evidence import ChunkVerdict
    from localeval.report import _input, _verdict_line

    arabic = "شغّل هذا:\n```bash\ncd ..\n```"
    assert _input("response", arabic, " lang='ar'") == ("<dt>response</dt><dd dir='auto' lang='ar'>شغّل هذا:<code "
                                                        "class='block' dir='ltr'>```bash\ncd ..\n```</code></dd>")
    chunk = ChunkVerdict("Run:\n```\nmake\n```", 1, rank=0)  # context_precision judges a chunk whole
    assert "<bdi>Run:<code class='block' dir='ltr'>```\nmake\n```</code></bdi>" in _verdict_line(chunk)


def test_each_row_links_to_its_own_sample_whatever_its_id(tmp_path):
    """An id with a tab linked to nothing, and "a b" opened the section of "a%20b" (a probe): ids are links by
    the sample's place in the results."""
    samples = [replace(SAMPLES[0], id="a b"), replace(SAMPLES[1], id="a%20b"), replace(SAMPLES[2], id="tab\there")]
    html = write_run_report(tmp_path, scored_rows(samples), samples).read_text(encoding="utf-8")
    page = Page(html)
    assert sorted(page.sample_links) == ["#s-1", "#s-2", "#s-3"] and {"s-1", "s-2", "s-3"} <= page.ids
    for number, sample in enumerate(samples, 1):
        shown = escape(sample.id).replace("\t", "\\t")  # a control character as its escape, as a terminal's
        section = html.split(f"id='s-{number}'>", 1)[1]
        assert section.startswith(f"<h3 dir='auto'>{shown}</h3>")
        row = next(row for row in html.split("<tr") if f"href='#s-{number}'" in row)
        assert f">{shown}</a>" in row


@pytest.mark.nulls_expected
def test_a_sample_that_answered_nothing_comes_first(tmp_path):
    """Its nulls were left out of its lowest score, and a system that answered nothing ranked 7th of 10 (a probe);
    then it came after every sample with a real 0, and unmarked where its retrieval scored 0 (a report probe:
    26th of 45). Among samples that answered nothing, and where none answered (data of retrievals only), the
    scores order."""
    silent = replace(SAMPLES[0], id="silent", response="")
    silent_mars = replace(SAMPLES[2], id="silent-mars", response="")  # its context_relevance a real 0
    samples = [*SAMPLES, silent, silent_mars]
    html = write_run_report(tmp_path, scored_rows(samples), samples).read_text(encoding="utf-8")
    # the two that answered nothing (silent-mars's scores lower), then mars (a real 0.000), then the rest
    assert Page(html).sample_links == ["#s-5", "#s-4", "#s-3", "#s-1", "#s-2"]
    for number in (4, 5):
        row = next(row for row in html.split("<tr") if f"href='#s-{number}'" in row)
        assert "data-lowest='0.0'" in row and "<td class='num' data-value='0.0'>0 <span class='p'>(no answer)" in row
    none_answered = [replace(sample, response="") for sample in SAMPLES]
    html = write_run_report(tmp_path, scored_rows(none_answered), none_answered).read_text(encoding="utf-8")
    assert Page(html).sample_links == ["#s-3", "#s-1", "#s-2"] and "(no answer)" not in html  # mars lowest


def test_the_report_says_how_each_score_was_scored_and_what_it_measures(tmp_path):
    """A soft score stood under marks that did not add up to it, and nothing on the page said it was soft, nor
    what a metric measures (a probe)."""
    rows = scored_rows()
    summary = summarize(rows, [*DEFAULT_METRICS, "context_relevance_chunks"])
    details = {"data": "samples.jsonl", "models": {"judge": "scripted", "embedder": "lookup"}, "device": "cpu",
               "warnings": [], "calibration": None, "localeval": "0.1.0", "finished": "2026-11-27T11:00:00+00:00",
               "settings": {"scoring": {metric: "soft" for metric in DEFAULT_METRICS}}}
    html = write_report(tmp_path, rows, summary, details, SAMPLES).read_text("utf-8")
    table = html.split("<h2>Score distributions</h2>", 1)[0]
    chunks = "<th scope='row'>context_<wbr>relevance_<wbr>chunks</th>"
    assert chunks in table and table.split(chunks, 1)[1].split("</tr>", 1)[0].endswith(
        "<td>soft</td><td class='about'>share of chunks with a sentence needed to answer the question</td>")
    assert ("<td class='about'>share of reference sentences attributable to the context; low: the retrieval (what the "
            "right answer rests on was not retrieved)</td>") in table
    assert "soft: by the same formula from each verdict's probability of ✓" in table
    assert "context_recall: 1.000 <span class='p'>(soft)</span></summary>" in evidence_of(html, "paris")
    assert "localeval 0.1.0, finished 2026-11-27T11:00:00+00:00." in html
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in html


def test_a_generated_question_says_whether_it_is_noncommittal_and_how_sure():
    """"(61%)" beside an unflagged question and "(noncommittal) (55%)" beside a flagged one meant opposite
    probabilities, and nothing on the page said which (a probe)."""
    from localeval.metrics.evidence import GeneratedQuestion
    from localeval.report import _verdict_line

    flagged = GeneratedQuestion(text="What?", verdict=1, probability=0.55, similarity=0.5)
    plain = GeneratedQuestion(text="Where?", verdict=0, probability=0.39, similarity=0.8)
    assert _verdict_line(flagged) == "<div>0.500 · <bdi>What?</bdi> <span class='p'>(noncommittal, 55%)</span></div>"
    assert _verdict_line(plain) == "<div>0.800 · <bdi>Where?</bdi> <span class='p'>(not noncommittal, 61%)</span></div>"


def test_every_bench_table_scrolls_in_its_own_box_with_breakable_headers():
    html = html_page(json.loads(DEV_BENCH.read_text(encoding="utf-8")))
    assert html.count("<table>") == html.count("<div class='wide'><table>") > 0
    assert ".wide{overflow-x:auto" in html
    assert "context_<wbr>supported_<wbr>precision" in html


def test_the_bench_page_speaks_of_a_best_value_only_where_judges_are_compared():
    bench = json.loads(DEV_BENCH.read_text(encoding="utf-8"))
    assert "Bold marks the best soft ρ" in html_page(bench) and "class=best" in html_page(bench)
    alone = html_page({**bench, "judges": bench["judges"][:1]})
    assert "Bold marks" not in alone and "class=best" not in alone  # one judge: nothing is marked best


def test_a_judge_timed_beside_other_work_is_not_marked_fastest_and_dtypes_that_differ_are_named():
    """A probe's bench warned that other work ran beside a judge, and still bolded that judge's speeds; its
    best judge ran in bfloat16 and the others in float32, which only bench.json said."""
    import copy

    from localeval.bench.report import tables

    from localeval.bench.report import context_lines

    bench = copy.deepcopy(json.loads(DEV_BENCH.read_text(encoding="utf-8")))
    for judge, dtype in zip(bench["judges"], ("float32", "float32", "bfloat16")):
        judge["measures"].update(dtype=dtype, other_work_cores=0.0, idle_cores=0.0)
    crowded = bench["judges"][0]["measures"]
    crowded.update(other_work_cores=1.2, samples_per_second=1000.0, load_seconds=0.01)
    main = tables(bench)[0]
    speed = main.headers.index("samples/s")
    rows = {row[0][0]: row for row in main.rows}
    assert rows[bench["judges"][0]["name"]][speed] == ("1000 (float32, shared CPU)", False)
    assert not rows[bench["judges"][0]["name"]][main.headers.index("load s")][1]
    assert rows[bench["judges"][2]["name"]][speed][0].endswith(" (bfloat16)")
    assert any(row[speed][1] for name, row in rows.items() if name != bench["judges"][0]["name"])
    assert "(shared CPU): other work ran beside that judge, so its speeds and load time are not its own" in main.note
    for judge in bench["judges"]:
        judge["measures"].update(dtype="float32")
    assert "(float32" not in str(tables(bench)[0].rows)  # one dtype for all: said once, in the settings
    assert ", dtype auto (float32), " in context_lines({**bench, "settings": {**bench["settings"], "dtype": "auto"}})[2]


def test_a_judge_answered_from_the_cache_is_not_marked_fastest():
    """bench --cache: a judge whose answers were cached had the bold samples/s and memory."""
    import copy

    from localeval.bench.report import tables

    bench = copy.deepcopy(json.loads(DEV_BENCH.read_text(encoding="utf-8")))
    cached = bench["judges"][0]["measures"]
    cached.update(cache_hits=150, samples_per_second=1000.0, peak_memory_mb=1.0, load_seconds=0.01)
    main = tables(bench)[0]
    speed = main.headers.index("samples/s")
    (row,) = [row for row in main.rows if row[0][0] == bench["judges"][0]["name"]]
    assert row[speed] == ("1000 (cached)", False)
    assert not row[main.headers.index("peak MB")][1]
    assert row[main.headers.index("load s")] == ("0.0", True)  # loaded all the same: its load time is its own
    assert any(other[speed][1] for other in main.rows if other is not row)  # the fastest judged afresh
    assert "speed and memory are not its own, and are not marked best" in main.note


# --- rendered in headless Chromium ---------------------------------------------------------------


def test_the_lowest_score_names_the_metric_that_gave_it(tmp_path):
    """Which metric went wrong is a reader's next question, and in a wide table its column was off the screen."""
    rows = scored_rows()
    html = write_run_report(tmp_path, rows, SAMPLES).read_text(encoding="utf-8")
    for number, row in enumerate(rows, 1):
        scores = {metric: row[metric] for metric in DEFAULT_METRICS if isinstance(row.get(metric), float)}
        weakest = min(scores, key=scores.get)
        cell = re.search(rf"href='#s-{number}'>.*?<td class='num' data-value='([^']*)'>[0-9.]+<br><span class='p'>(.*?)</span>",
                         html)
        assert cell, f"no lowest cell for sample {number}"
        assert float(cell.group(1)) == scores[weakest] and cell.group(2).replace("<wbr>", "") == weakest


def test_rendered_report_shows_the_question_lowest_first_and_every_histogram(report, tmp_path):
    needs_chromium()
    seen = render(report, """
        const ids = () => [...document.querySelectorAll('#samples tbody tr')].filter(r => !r.hidden)
                                                                            .map(r => r.cells[0].textContent);
        return {
          text: document.body.innerText,
          rows: ids(),
          histograms: [...document.querySelectorAll('figure.histogram svg')]
                        .filter(chart => chart.getBoundingClientRect().width > 0).length,
          cut_captions: [...document.querySelectorAll('figure.histogram figcaption')]
                          .filter(caption => caption.scrollWidth > caption.clientWidth).map(c => c.textContent),
          filters: !document.querySelector('.filters').hidden,
          external: [...document.querySelectorAll('[src], [href]')]
                      .map(e => e.getAttribute('src') || e.getAttribute('href')),
        };""", tmp_path)
    assert MARS_QUESTION in seen["text"] and "Phobos and Deimos" in seen["text"]
    assert seen["rows"][0] == "mars"
    assert seen["histograms"] == len(DEFAULT_METRICS)
    assert seen["cut_captions"] == []  # a long metric name wraps; it was cut off inside the chart
    assert seen["filters"]  # the script ran: the filter controls are shown
    assert external(seen["external"]) == []


def test_clicking_headers_sorts_with_nulls_last_and_the_filters_hide_rows(report, tmp_path):
    needs_chromium()
    seen = render(report, """
        const ids = () => [...document.querySelectorAll('#samples tbody tr')].filter(r => !r.hidden)
                                                                            .map(r => r.cells[0].textContent);
        const click = name => [...document.querySelectorAll('#samples thead th')].find(th => th.textContent === name).click();
        const seen = {};
        click('context_recall'); seen.recall_up = ids();
        click('context_recall'); seen.recall_down = ids();
        const below = document.getElementById('below');
        below.checked = true; below.dispatchEvent(new Event('change')); seen.below = ids();
        below.checked = false; below.dispatchEvent(new Event('change'));
        const find = document.getElementById('find');
        find.value = 'SEINE'; find.dispatchEvent(new Event('input')); seen.found = ids();
        seen.shown = document.getElementById('shown').textContent;
        find.value = '1.000'; find.dispatchEvent(new Event('input')); seen.by_score = ids();
        find.value = ''; find.dispatchEvent(new Event('input'));
        seen.buttons = [...document.querySelectorAll('#samples thead th')].map(th => th.firstElementChild.tagName);
        seen.status = document.getElementById('shown').getAttribute('role');
        return seen;""", tmp_path)
    assert seen["recall_up"] == ["mars", "paris", "seine"]  # seine's recall is null: last either way
    assert seen["recall_down"] == ["paris", "mars", "seine"]
    assert seen["below"] == ["mars"]
    assert seen["found"] == ["seine"] and seen["shown"] == "1 of 3 samples shown"
    assert seen["by_score"] == []  # it filters by id or question, as it says: "42" found a score of 0.426
    # each header a button that a keyboard and a screen reader know; the count read out as it changes
    assert set(seen["buttons"]) == {"BUTTON"} and seen["status"] == "status"


def test_the_pages_policy_runs_its_own_script_and_no_other(report, tmp_path):
    """Every sample text is escaped; the Content-Security-Policy is the second wall (a security review): a
    script the page does not name by its digest does not run; default-src 'none' loads nothing from anywhere."""
    needs_chromium()
    html = report.read_text(encoding="utf-8")
    assert "default-src 'none'" in html and "script-src 'sha256-" in html
    injected = tmp_path / "injected.html"
    injected.write_text(html + "<script>document.body.dataset.injected = 'ran'</script>", encoding="utf-8")
    dom = dumped_dom(injected, tmp_path)
    assert "class=\"filters\"" in dom and "filters\" hidden" not in dom  # the page's own script ran
    assert "data-injected" not in dom
    assert "<meta http-equiv='Content-Security-Policy'" in html_page(json.loads(DEV_BENCH.read_text(encoding="utf-8")))


def test_sorting_back_by_the_lowest_score_restores_the_pages_order(tmp_path):
    """Rows tied on their lowest score stayed in the order of the last sort (by id: alphabetical), not the
    report's own: samples that answered nothing first (a report probe)."""
    needs_chromium()
    samples = [replace(SAMPLES[2], id=name, response=response) for name, response in
               [("b-answered", SAMPLES[2].response), ("z-silent", ""), ("c-answered", SAMPLES[2].response)]]
    page = write_run_report(tmp_path, scored_rows(samples), samples)
    seen = render(page, """
        const ids = () => [...document.querySelectorAll('#samples tbody tr')].map(r => r.cells[0].textContent);
        const click = name => [...document.querySelectorAll('#samples thead th')].find(th => th.textContent === name).click();
        const first = ids();
        click('id'); click('id'); const by_id = ids(); click('lowest');
        return {first, by_id, again: ids()};""", tmp_path)
    assert seen["first"] == ["z-silent", "b-answered", "c-answered"]  # all three at 0
    assert seen["by_id"] == ["z-silent", "c-answered", "b-answered"] and seen["again"] == seen["first"]


def test_a_printed_report_shows_every_metrics_evidence(report, tmp_path):
    """Printed, every <details> stayed closed: only each metric's summary line reached the paper (a report
    probe), and the inputs' list was cut at its scrolling height."""
    needs_chromium()
    seen = render(report, """
        const closed = () => document.querySelectorAll('details:not([open])').length;
        const before = closed();
        dispatchEvent(new Event('beforeprint')); const printing = closed();
        dispatchEvent(new Event('afterprint'));
        return {before, printing, after: closed()};""", tmp_path)
    assert seen["before"] > 0 and seen["printing"] == 0 and seen["after"] == seen["before"]
    assert "@media print{" in report.read_text(encoding="utf-8")


def test_a_report_printed_without_its_script_still_shows_every_metrics_evidence(report, tmp_path):
    """Only the script opened the <details> for print: without it (scripts off, a mail client's viewer) the
    printed page had each metric's summary line and no evidence, 7 pages of 11 (an accessibility probe)."""
    needs_chromium()
    html = report.read_text(encoding="utf-8")
    scriptless = tmp_path / "scriptless.html"
    scriptless.write_text(re.sub(r"<script>.*?</script>", "", html, flags=re.S), encoding="utf-8")
    assert "<script>" in html and "<script>" not in scriptless.read_text(encoding="utf-8")
    assert printed_pages(scriptless, tmp_path) == printed_pages(report, tmp_path) > 1


def test_a_screen_reader_and_a_keyboard_find_each_rows_name_and_each_wide_table(report):
    """An accessibility probe: the rows' first cells (a metric, a sample id) were plain cells, so a reader moving
    down a score column heard the number without its sample; a box scrolling a wide table took no focus."""
    html = report.read_text(encoding="utf-8")
    body = html.split("<table id='samples'>", 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    assert body.count("<tr") == body.count("<th scope='row' dir='auto'><a href='#s-") == len(SAMPLES)
    assert "<th scope='row'>context_<wbr>recall</th>" in html
    for table in ("metric means", "samples"):
        assert f"<div class='wide' tabindex='0' role='region' aria-label='{table}, scrolling sideways'>" in html
    assert "html{background:#fff;color-scheme:light}" in html  # dark text on a reader's dark default, else


def printed_pages(page: Path, tmp_path: Path) -> int:
    """The pages of `page` printed to PDF by headless Chromium, counted in the file."""
    pdf = tmp_path / f"{page.stem}.pdf"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--print-to-pdf={pdf}", "--no-pdf-header-footer", page.as_uri()], capture_output=True, timeout=120)
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf.read_bytes()))


def test_ids_sort_as_numbers_where_they_are_numbers(tmp_path):
    """Ids 1 to 12 sort 1, 2, ..., 10, not 1, 10, 11, 12, 2."""
    needs_chromium()
    samples = [replace(sample, id=sample_id) for sample, sample_id in zip(SAMPLES, ["10", "2", "Paris-1"])]
    page = write_run_report(tmp_path, scored_rows(samples), samples)
    seen = render(page, """
        const ids = () => [...document.querySelectorAll('#samples tbody tr')].map(r => r.cells[0].textContent);
        const id = [...document.querySelectorAll('#samples thead th')].find(th => th.textContent === 'id');
        id.click(); const up = ids(); id.click();
        return {up, down: ids()};""", tmp_path)
    assert seen == {"up": ["2", "10", "Paris-1"], "down": ["Paris-1", "10", "2"]}


def test_a_long_id_wraps_and_leaves_the_scores_in_view(tmp_path):
    """An id of 160 characters without a space took the sample table's width, pushing every score out of
    view, and its heading widened the whole page (a probe). A short id stays on one line."""
    needs_chromium()
    samples = [replace(SAMPLES[0], id="long-context-" + "y" * 150), replace(SAMPLES[1], id="seed001-einstein")]
    page = write_run_report(tmp_path, scored_rows(samples), samples)
    seen = render(page, """
        const table = document.getElementById('samples'), box = table.parentElement;
        const line = parseFloat(getComputedStyle(table.rows[2].cells[0]).lineHeight);
        return {
          page: document.documentElement.scrollWidth,
          table: table.getBoundingClientRect().width, box: box.clientWidth,
          short_id_lines: Math.round(table.querySelector('a[href="#s-2"]').getBoundingClientRect().height / line),
        };""", tmp_path)
    assert seen["page"] <= WIDTH and seen["table"] <= seen["box"] + 0.5
    assert seen["short_id_lines"] == 1


def test_a_long_unbroken_word_wraps_and_leaves_the_page_its_width(tmp_path):
    """A URL of 1,100 characters in a chunk and a response made the stress report 4,173 px wide in a 1,400 px
    window, its evidence too (a probe)."""
    needs_chromium()
    url = "https://example.org/" + "a" * 1100
    long = replace(SAMPLES[0], id="long", retrieved_contexts=(f"See {url} for more.",), response=f"Read {url}.")
    page = write_run_report(tmp_path, scored_rows([long]), [long])
    seen = render(page, """
        document.querySelectorAll('details').forEach(d => { d.open = true; });
        return {page: document.documentElement.scrollWidth};""", tmp_path)
    assert seen["page"] <= WIDTH


def test_bench_page_tables_fit_1400_px(tmp_path):
    needs_chromium()
    page = tmp_path / "bench.html"
    page.write_text(html_page(json.loads(DEV_BENCH.read_text(encoding="utf-8"))), encoding="utf-8")
    seen = render(page, """
        document.querySelectorAll('details').forEach(d => { d.open = true; });
        return {
          viewport: window.innerWidth,
          page: document.documentElement.scrollWidth,
          overflowing: [...document.querySelectorAll('table')]
                         .filter(t => t.getBoundingClientRect().width > t.parentElement.clientWidth + 0.5)
                         .map(t => t.rows[0].textContent.slice(0, 80)),
        };""", tmp_path)
    assert seen["viewport"] == WIDTH
    assert seen["page"] <= WIDTH and seen["overflowing"] == []


def test_an_id_with_control_or_bidi_characters_shows_them_as_escapes(tmp_path):
    """A U+202E inside an id turned the rest of it round in its cell and heading (`invoice<RLO>txt.exe` read as
    `invoiceexe.txt`): ids are matched and copied by eye, so the report writes such characters as the terminal
    does. The data file's name too."""
    hostile = "invoice\u202etxt.exe\x1b[31m"
    samples = [replace(SAMPLES[0], id=hostile)]
    details = {"data": "data\u202elsnoj.jsonl", "models": {"judge": "scripted", "embedder": "lookup"},
               "device": "cpu", "warnings": [], "calibration": None}
    rows = scored_rows(samples)
    html = write_report(tmp_path, rows, summarize(rows, list(DEFAULT_METRICS)), details, samples).read_text("utf-8")
    assert not any(character in html for character in "\u202e\x1b")
    assert html.count("invoice\\u202etxt.exe\\x1b[31m") == 2  # in the table and in its evidence's heading
    assert "<p><span class='path'>data\\u202elsnoj.jsonl</span>:" in html
