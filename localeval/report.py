"""report.html: one self-contained page a person can open to see the scores and why each is what it is."""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Callable, Iterable
from html import escape
from pathlib import Path
from typing import Any, NamedTuple

from .bench import svg
from .errors import count_of, for_terminal, shortened
from .gating import caveats, failures
from .metrics import BUILT_IN, METRICS, Metric, metric_of
from .metrics.evidence import ChunkVerdict, GeneratedQuestion, SentenceVerdict, Verdict
from .metrics.scoring import Scoring
from .results import REPORT_FILE, REPORT_TITLE, RESUME_AFTER_ROOM, write_atomically
from .summary import null_reasons
from .samples import Sample
from .text import DEFAULT_LANGUAGE, LANGUAGE_NAMES, code_units, fenced_code


# What this report and bench's page both set (an accessibility probe): their own background, for a reader whose
# browser's is dark, and the class of text said to a screen reader alone
PAGE_BASICS = ("html{background:#fff;color-scheme:light}"
               ".sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}")
STYLE = PAGE_BASICS + """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222}.path{overflow-wrap:anywhere}
tbody th{font-weight:inherit;vertical-align:inherit}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.null{color:#6e6e6e}
details{margin:.2em 0 .8em 1em}summary{cursor:pointer}.yes{color:#176f2c}.no{color:#b3261e}
.reason{color:#666;font-size:12px}h3{margin-bottom:.2em}.p{color:#555;font-size:12px}
.warning{background:#fff4e5;border-left:4px solid #e8a33d;padding:.5em 1em}
.failed{background:#fdecea;border-left:4px solid #b3261e;padding:.5em 1em}
.panels{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}.wide{overflow-x:auto}
figcaption{font-size:12px;line-height:1.25;margin-bottom:2px}figcaption b{display:block}
th{vertical-align:bottom}th[data-type=number]{text-align:right}caption{text-align:left;font-weight:600}
th button{font:inherit;font-weight:600;color:inherit;background:none;border:0;padding:0;cursor:pointer;text-align:inherit}
th[aria-sort=ascending] button::after{content:" ▲";content:" ▲"/""}th[aria-sort=descending] button::after{content:" ▼";content:" ▼"/""}
#samples td:nth-child(2){min-width:14em;overflow-wrap:anywhere}#samples th[scope=row]{min-width:10em;max-width:20em;overflow-wrap:anywhere}
h3{overflow-wrap:anywhere}ul.gates{margin:.3em 0}.filters input[type=search]{width:22em}#shown{color:#666;margin-left:1em}
section.sample{border-top:1px solid #ddd;margin-top:1.2em}section.sample:target h3{background:#eef5ff}
.inputs dt{font-weight:600;margin-top:.4em}.inputs dd{margin:0 0 0 1em;white-space:pre-wrap}
.inputs ol{margin:0;padding-left:1.6em;max-height:20em;overflow:auto}.inputs li{white-space:pre-wrap;margin:.2em 0}
.inputs dd,.inputs li,section.sample details div{overflow-wrap:anywhere}td.about{min-width:12em;font-size:12px;color:#444}
h2.gates{font-size:inherit;margin:0}
code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}code.block{display:block;background:#f6f8fa;padding:2px 6px}
@media print{body{max-width:none;margin:0}.wide{overflow:visible}.filters{display:none}table{font-size:10px}
td,th{padding:2px 4px}#samples td:nth-child(2){min-width:0}.inputs ol{max-height:none;overflow:visible}
#samples tr[hidden]{display:table-row}}
@media print{details::details-content{content-visibility:visible;display:block}}
"""  # the last: a printed page opens every <details> without the script too (its own rule: older browsers drop it)
STYLE += f"figure.histogram{{width:{svg.HISTOGRAM_WIDTH}px;display:flex;flex-direction:column;justify-content:space-between}}"  # its caption wraps within the chart's width


LOW_SCORE = 0.5  # the filter's "below" threshold: under half is where a sample most likely went wrong
# a null's reasons where the response is blank or absent (evaluation.py), each one of a list
NO_ANSWER = ("empty response", "missing response")
QUESTION_CHARS = 90  # of the question in the sample table; the full one is in the evidence

# Sorting and filtering the sample table: a few lines inline, so the page works offline and from a file.
# Score cells carry their exact value in data-value ('' for null, always sorted last).
SCRIPT = """
(() => {
  const table = document.getElementById('samples'), body = table.tBodies[0];
  const number = text => text === '' ? null : Number(text);
  const words = new Intl.Collator(undefined, {numeric: true, sensitivity: 'base'});  // ids 2 before 10
  const key = (row, column, numeric) =>
    numeric ? number(row.cells[column].dataset.value) : row.cells[column].textContent;
  const order = (a, b) => typeof a === 'string' ? words.compare(a, b) : (a < b ? -1 : 1);
  const compare = (a, b, ascending) =>
    a === b ? 0 : a === null ? 1 : b === null ? -1 : order(a, b) * (ascending ? 1 : -1);
  const rank = row => Number(row.dataset.rank);  // the page's own order breaks ties, so sorting back restores it
  [...table.tHead.rows[0].cells].forEach((header, column) => {
    const button = document.createElement('button');  // a control a keyboard and a screen reader know
    button.type = 'button';
    button.append(...header.childNodes);
    header.append(button);
    header.addEventListener('click', () => {  // the button's click too, and a click beside it in the cell
      const ascending = header.getAttribute('aria-sort') !== 'ascending';
      const numeric = header.dataset.type === 'number';
      for (const other of header.parentNode.cells) other.removeAttribute('aria-sort');
      header.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      body.append(...[...body.rows].sort((a, b) =>
        compare(key(a, column, numeric), key(b, column, numeric), ascending) || rank(a) - rank(b)));
    });
  });
  const find = document.getElementById('find'), below = document.getElementById('below');
  const filter = () => {
    const text = find.value.trim().toLowerCase();
    let shown = 0;
    for (const row of body.rows) {
      const lowest = number(row.dataset.lowest);
      // the id and the whole question: not the scores, which "42" also matched
      const searched = (row.cells[0].textContent + ' ' + row.cells[1].title).toLowerCase();
      const visible = searched.includes(text) && (!below.checked || (lowest !== null && lowest < Number(below.value)));
      row.hidden = !visible;
      shown += visible;
    }
    document.getElementById('shown').textContent = `${shown} of ${body.rows.length} samples shown`;
  };
  find.addEventListener('input', filter);
  below.addEventListener('change', filter);
  document.querySelector('.filters').hidden = false;  // useless without this script, so hidden until it runs
  filter();
  // a printed page shows every metric's evidence, which a closed <details> would leave out
  let closed = [];
  addEventListener('beforeprint', () => {
    closed = [...document.querySelectorAll('details:not([open])')];
    for (const details of closed) details.open = true;
  });
  addEventListener('afterprint', () => { for (const details of closed) details.open = false; });
})();
"""



def content_policy(script: str = "") -> str:
    """The page's Content-Security-Policy: nothing loaded from anywhere, no script but its own (by its
    digest). Every text from the samples is escaped; this is the second wall, should one ever not be
    (a security review), and it keeps a page opened from a share from reaching out."""
    allowed = f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'" if script else "'none'"
    return (f"<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
            f"img-src data:; script-src {allowed}; form-action 'none'; base-uri 'none'\">")


def write_report(out_dir: Path, rows: list[dict[str, Any]], summary: dict[str, Any], details: dict[str, Any],
                 samples: Iterable[Sample] = (), human: dict[str, dict[str, float | None]] | None = None) -> Path:
    """The page for `rows` (results.jsonl); `samples` are the run's inputs, shown with each sample's
    evidence (a row whose sample is not among them shows the inputs it carries, if any); `human`, people's
    scores from --labels by sample id, shown under the judge's."""
    metrics = list(summary)
    given = {str(sample.id): sample for sample in samples}
    inputs = {str(row["id"]): given.get(str(row["id"])) or _carried_sample(row) for row in rows}
    thresholds = _thresholds(details)
    scored_as = _scored_as(summary, details, thresholds)
    run_language = details.get("settings", {}).get("language", DEFAULT_LANGUAGE)
    parts = [
        f"<!doctype html><html lang='en'><meta charset='utf-8'>{content_policy(SCRIPT)}"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{REPORT_TITLE}</title><style>{STYLE}</style>",
        f"<main><h1>{REPORT_TITLE}</h1>",
        f"<p><span class='path'>{escape(for_terminal(str(details.get('data', ''))))}</span>{_digest(details)}: {count_of(len(rows), 'sample')}"
        f"{_limited(details)}"
        f"{_languages(details)}; judge {_model(details['models']['judge'])}, embedder "
        f"{_model(details['models']['embedder'])}, on {escape(details['device'])}{_made_by(details)}.</p>",
        _gates_note(summary, details.get("gates"), rows),  # first: what a CI job's reader opens the page for
        _warnings(details.get("warnings", [])),
        "<h2>Scores</h2>",
        _calibration_note(details.get("calibration")),
        _summary_table(summary, scored_as, details.get("labels")),
        _null_note(summary),
        _histograms(rows, metrics),
        "<h2>Samples</h2>",
        _sample_table(rows, metrics, inputs, run_language, human or {}),
        *(_sample_evidence(row, number, metrics, inputs.get(str(row["id"])), thresholds, scored_as, run_language)
          for number, row in enumerate(rows, 1)),
        f"</main><script>{SCRIPT}</script>",
    ]
    path = out_dir / REPORT_FILE
    write_atomically(path, "\n".join(parts), RESUME_AFTER_ROOM)
    return path


def _digest(details: dict[str, Any]) -> str:
    """The data file's sha256, shortened, in small print: which file of that name a shared page is of."""
    digest = details.get("data_sha256")  # absent from a summary written before it was kept
    return "" if not digest else f" <span class='p' title='sha256 {digest}'>(sha256 {digest[:12]})</span>"


def _limited(details: dict[str, Any]) -> str:
    """Where --limit chose the samples: a page of the first 8 read as one of the whole data (a probe)."""
    limit = details.get("limit")
    return "" if limit is None else f", the data's first {limit} at most (--limit {limit})"


def _warnings(warnings: list[str]) -> str:
    if not warnings:
        return ""
    return "<h2>Warnings</h2>" + "".join(f"<p class='warning'>{escape(w)}</p>" for w in warnings)


def _model(identity: str | None) -> str:
    """A model's name in bold, then the rest of its identity (weights' digest, dtype, decoding) in small print."""
    if identity is None:
        return "<b>none</b> (no metric needs one)"
    name, _, rest = identity.partition("|")
    return f"<b>{escape(name)}</b>" + (f" <span class='p'>({escape(rest.replace('|', ', '))})</span>" if rest else "")


def _score(value) -> str:
    return "<td class='num null'>null</td>" if value is None else f"<td class='num'>{value:.3f}</td>"


def _calibration_note(calibration: dict[str, Any] | None) -> str:
    if not calibration or not calibration["thresholds"]:  # an empty one is among the warnings
        return ""
    thresholds = ", ".join(f"{escape(m)} {t:.3g}" for m, t in calibration["thresholds"].items())
    return (f"<p>Calibrated verdict thresholds from {escape(calibration['path'])} "
            f"(fitted on {escape(str(calibration.get('fitted_on')))}): {thresholds}.</p>")


def _gates_note(summary, gates: dict[str, dict[str, Any]] | None, rows: list[dict[str, Any]]) -> str:
    """The --fail-under gates and how each came out: a page kept as a CI artifact says why its build
    failed, in the words the terminal used."""
    if not gates:
        return ""
    lowest = {metric: gate["at_least"] for metric, gate in gates.items()}
    failed, weak = failures(summary, lowest, rows), caveats(summary, lowest)
    passed = [f"{metric} ({gate['compared']} {gate['value']:.3f}, at least {gate['at_least']:g})"
              for metric, gate in gates.items() if gate["passed"]]
    said = [*(f"failed: {line}" for line in failed), *(f"passed: {line}" for line in passed),
            *(f"note: {line}" for line in weak)]
    outcome = (f"{count_of(len(failed), 'gate')} of {len(gates)} failed: the run exited 4" if failed else
               f"{'all ' if len(gates) > 1 else ''}{count_of(len(gates), 'gate')} passed")
    items = "".join(f"<li>{escape(line)}</li>" for line in said)
    marked = " class='failed'" if failed else " class='warning'" if weak else ""
    return f"<div{marked}><h2 class='gates'>--fail-under gates: {outcome}.</h2><ul class='gates'>{items}</ul></div>"


def _null_note(summary) -> str:
    """Why some scores are null, as the terminal says it: a reader of the table sees only how many."""
    lines = null_reasons(summary)
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return ("<p class='reason'>Null: a score the metric could not give for a sample (its evidence says why); "
            f"the mean and interval leave it out. Why, here:</p><ul class='reason'>{items}</ul>")


def _interval(interval) -> str:
    return "<td class='num null'>-</td>" if not interval else f"<td class='num'>{interval[0]:.3f} – {interval[1]:.3f}</td>"


def _summary_table(summary, scored_as: dict[str, str], labels: str | None = None) -> str:
    """`labels`: the file of people's labels that corrected the means, named under the table."""
    corrected = any("corrected" in row for row in summary.values())
    extra = "<th>labeled</th><th>bias</th><th>corrected mean</th><th>95% interval (corrected)</th>" if corrected else ""
    how = "<th>scored as</th>" if any(scored_as.values()) else ""  # unknown to a summary without settings
    head = (f"<table><caption>Each metric's mean over the samples</caption><thead><tr><th>metric</th><th>mean</th>"
            f"<th>95% interval</th><th>scored</th><th>null</th>{extra}{how}"
            "<th>what it measures; what a low score points at</th></tr></thead>")
    body = "".join(
        f"<tr><th scope='row'>{breakable(name)}</th>{_score(row['mean'])}{_interval(row.get('interval'))}"
        f"<td class='num'>{row['scored']}</td><td class='num'>{row['null']}</td>{_corrected_cells(row, corrected)}"
        + (f"<td>{escape(scored_as.get(name, ''))}</td>" if how else "")
        + f"<td class='about'>{escape(_about(name))}</td></tr>"
        for name, row in summary.items()
    )
    note = ("<p class='reason'>95% interval: bootstrap over samples. Scored as hard: by each metric's formula from "
            "the ✓/✗ verdicts as the judge wrote them; soft: by the same formula from each verdict's probability of "
            "✓, so a soft score need not follow the marks shown; a threshold: ✓ where that probability reaches it "
            "(run --calibration). Beside each verdict, (93%): the judge's probability of the verdict shown.")
    if corrected:
        source = f" in {escape(for_terminal(str(labels)))}" if labels else ""
        note += (f" Corrected: the judge's mean minus its bias on the samples people labeled{source} (prediction-"
                 "powered inference), kept within 0 to 1 as every score is; its interval needs two labels or more"
                 " (- where there are fewer; a sub-score, which labels do not correct, has - in all four).")
    note += "</p>"
    return scrolling("metric means") + head + "<tbody>" + body + "</tbody></table></div>" + note


def _scored_as(summary, details: dict[str, Any], thresholds: dict[str, float]) -> dict[str, str]:
    """Per score (sub-scores as their metric): hard, soft, or the calibrated threshold its verdicts count by."""
    scoring = details.get("settings", {}).get("scoring", {})
    found = {}
    for name in summary:
        metric = metric_of(name)
        found[name] = (f"threshold {thresholds[metric]:.3g}" if metric in thresholds else scoring.get(metric, ""))
    return found


def _about(name: str) -> str:
    """What a score measures and, for a metric, what a low one points at."""
    metric = METRICS.get(metric_of(name))
    if metric is None:
        return ""
    if name != metric.name:
        return metric.part_descriptions.get(name, "")
    return f"{metric.description}; low: {metric.low_means}" if metric.low_means else metric.description


def _made_by(details: dict[str, Any]) -> str:
    """"; localeval 0.1.0, finished ..." where the details say (a run's do): which run a kept page shows."""
    version = f"; localeval {escape(str(details['localeval']))}" if details.get("localeval") else ""
    return version + (f", finished {escape(details['finished'])}" if details.get("finished") else "")


def _corrected_cells(row: dict[str, Any], shown: bool) -> str:
    if not shown:
        return ""
    fix = row.get("corrected")
    if fix is None:
        return "<td class='num null'>-</td>" * 4
    return (f"<td class='num'>{fix['labeled']}</td><td class='num'>{fix['bias']:+.3f}</td>{_score(fix['mean'])}"
            f"{_interval(fix['interval'])}")


def breakable(name: str) -> str:
    """`name` escaped, with a line-break opportunity after each underscore, so a table of long metric
    names can narrow its headers instead of overflowing the page."""
    return escape(name).replace("_", "_<wbr>")


def _histograms(rows: list[dict[str, Any]], metrics: list[str]) -> str:
    figures = "".join(_histogram(metric, [row.get(metric) for row in rows]) for metric in metrics)
    return f"<h2>Score distributions</h2><div class='panels'>{figures}</div>"


def _histogram(metric: str, values: list[Any]) -> str:
    scores = [v for v in values if _is_score(v)]
    # Bins of 0.1 from 0, or from below 0 when a score is (a cosine similarity can be negative).
    low = min(0.0, math.floor(min(scores, default=0.0) * 10) / 10)
    note = f"{len(scores)} scored, {len(values) - len(scores)} null"
    chart = svg.histogram(scores, low, 1.0, 0.1, unit="sample", name=f"{metric}, {note}")
    return (f"<figure class='histogram' data-metric='{escape(metric)}'><figcaption><b>{breakable(metric)}</b>"
            f"<span class='p'>{note}</span></figcaption>{chart}</figure>")


def _is_score(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Standing(NamedTuple):
    """Where a sample stands in the table: `lowest`, its lowest score as the table orders it, and `weakest`,
    the metric that gave it (None when all are null); `unanswered`: it answered nothing, a score null for
    that counting as 0 (a system that answered nothing went wrong most of all: a probe's ranked 7th of 10);
    `scored`: its lowest of the scores alone, which orders the samples at 0 that answered nothing."""

    lowest: float | None
    weakest: str | None
    unanswered: bool
    scored: float | None


def _standing(row: dict[str, Any], metrics: list[str], unanswered_zero: bool) -> _Standing:
    scores = [(row[m], m) for m in metrics if _is_score(row.get(m))]
    unanswered = [(0.0, m) for m in metrics if unanswered_zero and _unanswered(row, m)]
    lowest, weakest = min(unanswered + scores, key=lambda pair: pair[0], default=(None, None))
    return _Standing(lowest, weakest, bool(unanswered), min((score for score, _ in scores), default=None))


def _unanswered(row: dict[str, Any], metric: str) -> bool:
    reason = row.get("evidence", {}).get(metric_of(metric), {}).get("null_reason") or ""
    return any(part in NO_ANSWER for part in reason.split(", "))


def _unanswered_first(rows: list[dict[str, Any]], metrics: list[str]) -> bool:
    """Whether samples that answered nothing go first: not where none answered (data of retrievals only),
    where it would say nothing and leave the order to chance."""
    return any(not any(_unanswered(row, m) for m in metrics) for row in rows)


def _languages(details: dict[str, Any]) -> str:
    """The languages the samples were taken as, where any is not English: " (6 in English, 2 in Chinese)"."""
    languages = details.get("languages") or {}
    if set(languages) <= {"en"}:
        return ""
    if len(languages) == 1:
        (code,) = languages
        return f" in {LANGUAGE_NAMES.get(code, code)}"
    return " (" + ", ".join(f"{count} in {LANGUAGE_NAMES.get(code, code)}" for code, count in languages.items()) + ")"


def _sample_table(rows, metrics, inputs: dict[str, Sample | None], run_language: str,
                  human: dict[str, dict[str, float | None]]) -> str:
    """Lowest-scoring samples first (the ones to look at), then by their own lowest score; null-only samples
    last. Each row links to its sample's evidence by the sample's number in the results (an id may hold
    what an anchor cannot). A labeled sample's cells show people's score under the judge's: which labeled
    samples the judge got wrong was in no file of a run (a labels probe)."""
    unanswered_zero = _unanswered_first(rows, metrics)
    standings = [(number, row, _standing(row, metrics, unanswered_zero)) for number, row in enumerate(rows, 1)]

    def lowest_first(entry):
        # among the zeros, a sample that answered nothing first: its own scores (the retrieval's) say nothing
        # of it, and put it after every real 0 (a probe: 26th of 45)
        standing = entry[2]
        return (standing.lowest is None, standing.lowest or 0.0, not standing.unanswered,
                standing.scored is None, standing.scored or 0.0)

    head = ("<thead><tr><th data-type='text'>id</th><th data-type='text'>question</th>"
            "<th data-type='number' aria-sort='ascending'>lowest</th>"
            + "".join(f"<th data-type='number'>{breakable(m)}</th>" for m in metrics) + "</tr></thead>")
    body = "".join(_sample_row(number, rank, row, metrics, inputs.get(str(row["id"])), standing, run_language,
                               human.get(str(row["id"]), {}))
                   for rank, (number, row, standing) in enumerate(sorted(standings, key=lowest_first)))
    zero = " (a sample that answered nothing counts as 0, before the others at 0)" if unanswered_zero else ""
    return (f"<p class='filters' hidden><input type='search' id='find' placeholder='filter by id or question' "
            f"aria-label='filter by id or question'> <label><input type='checkbox' id='below' value='{LOW_SCORE}'> "
            f"only samples with a lowest score below {LOW_SCORE}</label> <span id='shown' role='status'></span><br>"
            "Click a column header to sort by it.</p>"
            f"<p class='reason'>Ordered by each sample's lowest score, lowest first{zero}; all null: last. An id "
            f"opens the sample's evidence.{PEOPLE_NOTE if human else ''}</p>"
            f"{scrolling('samples')}<table id='samples'><caption>Samples, the lowest-scoring first</caption>{head}"
            f"<tbody>{body}</tbody></table></div>")


def scrolling(what: str = "", labelled_by: str = "") -> str:
    """A box that scrolls a wide table or chart sideways, focusable and named, as `what` or by the element whose id
    is `labelled_by`: a keyboard can then scroll it where the browser does not (an accessibility probe)."""
    named = f"aria-labelledby='{labelled_by}'" if labelled_by else f"aria-label='{what}, scrolling sideways'"
    return f"<div class='wide' tabindex='0' role='region' {named}>"


def _sample_row(number: int, rank: int, row, metrics, sample: Sample | None, standing: _Standing,
                run_language: str, people: dict[str, float | None]) -> str:
    """`rank`: the row's place in the table as written. The lowest score's cell names its metric: which
    one went wrong is the next question, and a wide table hides it (a leftover of a readers' probe)."""
    sample_id = _shown_id(row["id"])
    # one line, its other control and bidi characters as escapes, as in the id: a U+0007 showed as a box
    question = for_terminal(" ".join(sample.user_input.split())) if sample is not None and sample.user_input else ""
    short = question if len(question) <= QUESTION_CHARS else question[:QUESTION_CHARS - 1] + "…"
    lowest = standing.lowest
    return (f"<tr data-lowest='{'' if lowest is None else repr(lowest)}' data-rank='{rank}'>"
            f"<th scope='row' dir='auto'><a href='#s-{number}'>{sample_id}</a></th>"
            f"<td dir='auto'{_lang_attribute(sample, run_language)} title='{escape(question)}'>{escape(short)}</td>"
            f"{_lowest_cell(standing)}"
            + "".join(_sortable_score(row.get(m), _people(people.get(m))) for m in metrics) + "</tr>")


PEOPLE_NOTE = " Under a labeled sample's scores, people's (from --labels): where the judge and they part."


def _people(score: float | None) -> str:
    """People's score of a labeled sample, under the judge's in its cell."""
    return "" if score is None else f"<br><span class='p'>people {score:.3f}</span>"


def _lowest_cell(standing: _Standing) -> str:
    if standing.unanswered:
        return "<td class='num' data-value='0.0'>0 <span class='p'>(no answer)</span></td>"
    weakest = "" if standing.weakest is None else f"<br><span class='p'>{breakable(standing.weakest)}</span>"
    return _sortable_score(standing.lowest, weakest)


def _shown_id(sample_id: object) -> str:
    """An id as the report shows it: its control and bidi characters written as escapes, as a terminal's
    messages have them, since an id is matched and copied by eye, and a U+202E inside one turned the rest
    of it round in its cell (a security probe: `invoice\u202etxt.exe`)."""
    return escape(for_terminal(str(sample_id)))


def _sortable_score(value, after: str = "") -> str:
    """A score cell that also carries its exact value, which the table sorts by; `after`: markup after
    the score (the lowest score's metric, people's score)."""
    if not _is_score(value):
        return f"<td class='num null' data-value=''>null{after}</td>"
    return f"<td class='num' data-value='{value!r}'>{value:.3f}{after}</td>"


def _thresholds(details: dict[str, Any]) -> dict[str, float]:
    """The calibrated verdict threshold of each metric that has one (run --calibration)."""
    calibration = details.get("calibration")
    return dict(calibration["thresholds"]) if calibration else {}


def _sample_evidence(row, number: int, metrics, sample: Sample | None, thresholds: dict[str, float],
                     scored_as: dict[str, str], run_language: str) -> str:
    sample_id = _shown_id(row["id"])
    lang_attribute = _lang_attribute(sample, run_language)
    blocks = [f"<section class='sample' id='s-{number}'><h3 dir='auto'>{sample_id}</h3>",
              _inputs(sample, lang_attribute)]
    for metric in (m for m in metrics if m in row["evidence"]):  # sub-scores show in their metric's evidence
        evidence = row["evidence"][metric]
        score = "null" if row.get(metric) is None else f"{row[metric]:.3f}"
        how = f" <span class='p'>({escape(scored_as[metric])})</span>" if scored_as.get(metric) else ""
        is_code = _code_test(sample, METRICS.get(metric), run_language)
        body = (_evidence_body(evidence, METRICS.get(metric), thresholds.get(metric), lang_attribute, is_code)
                + _sub_scores(row, METRICS.get(metric)))
        blocks.append(f"<details><summary>{escape(metric)}: {score}{how}</summary>{body}</details>")
    blocks.append("<p class='p'><a href='#samples'>back to the table</a></p></section>")
    return "\n".join(blocks)


def _lang_attribute(sample: Sample | None, run_language: str) -> str:
    """The attribute that gives a sample's texts its language (its own, else the run's), for a browser's font
    (Chinese and Japanese draw some characters apart) and a screen reader's voice; the page's words are English."""
    return f" lang='{escape(sample.language if sample is not None and sample.language else run_language)}'"


def _carried_sample(row: dict[str, Any]) -> Sample | None:
    """The inputs a results line carries itself (run --with-inputs); None when it has none."""
    if "user_input" not in row:
        return None
    contexts = row.get("retrieved_contexts")
    return Sample(str(row["id"]), row.get("user_input"), None if contexts is None else tuple(contexts),
                  row.get("response"), row.get("reference"), row.get("language"))


def _inputs(sample: Sample | None, lang_attribute: str = "") -> str:
    """What the sample asked, retrieved, answered and expected: what every verdict below is about."""
    if sample is None:
        return "<p class='null'>This sample is not in the run's data, so its question and answer are not known.</p>"
    if sample.retrieved_contexts is None:
        contexts = "<span class='null'>none given</span>"
    elif not sample.retrieved_contexts:
        contexts = "<span class='null'>none retrieved</span>"
    else:
        # the chunk in its own direction inside the item, so that the list's number stays where the list puts it
        contexts = "<ol>" + "".join(f"<li><div dir='auto'{lang_attribute}>{_marked_up(chunk)}</div></li>"
                                    for chunk in sample.retrieved_contexts) + "</ol>"
    return ("<dl class='inputs'>" + _input("question", sample.user_input, lang_attribute)
            + f"<dt>retrieved contexts</dt><dd>{contexts}</dd>"
            + _input("response", sample.response, lang_attribute)
            + _input("reference", sample.reference, lang_attribute) + "</dl>")


def _input(label: str, text: str | None, lang_attribute: str) -> str:
    # blank text is missing to the metrics too (Sample.missing): shown as such, not as an empty line
    if text is None or not text.strip():
        return f"<dt>{label}</dt><dd><span class='null'>none given</span></dd>"
    return f"<dt>{label}</dt><dd dir='auto'{lang_attribute}>{_marked_up(text)}</dd>"


def _marked_up(text: str) -> str:
    """`text` escaped, its fenced code blocks (text.fenced_code) in a fixed-width font, as a reader of Markdown
    sees them: a docs chatbot's code read as prose, its indentation lost in a proportional font (a probe).
    A block is a box of its own, so the line breaks around it are its edges."""
    shown, at = [], 0
    for start, end in fenced_code(text):
        shown += [escape(text[at:start].removesuffix("\n")),
                  f"<code class='block' dir='ltr'>{escape(text[start:end])}</code>"]
        at = end + text.startswith("\n", end)
    return "".join(shown) + escape(text[at:])


def _code_test(sample: Sample | None, metric: type[Metric] | None, run_language: str) -> Callable[[Verdict], bool]:
    """Whether a verdict of `metric` on `sample` is on a line of code (text.code_units) of the text it was split
    from: a context sentence's chunk, or the field the metric splits (a prose sentence that equals a line of code
    elsewhere is prose). A whole chunk (context_precision) shows its own blocks (_marked_up)."""
    if sample is None:
        return lambda verdict: False
    language, field = sample.language or run_language, getattr(metric, "text_field", None)
    chunks = sample.retrieved_contexts or ()

    def source(verdict: Verdict) -> str | None:
        if not isinstance(verdict, SentenceVerdict):
            return None
        if verdict.chunk is not None:
            return chunks[verdict.chunk] if 0 <= verdict.chunk < len(chunks) else None
        return getattr(sample, field) if field else None

    return lambda verdict: bool(text := source(verdict)) and verdict.text in code_units(text, language)


def _evidence_body(evidence: dict[str, Any], metric: type[Metric] | None, threshold: float | None,
                   lang_attribute: str = "", is_code: Callable[[Verdict], bool] = lambda verdict: False) -> str:
    """`is_code`: whether a verdict is on a line of code (_code_test), which it then shows as code."""
    lines = []
    if "null_reason" in evidence:
        lines.append(f"<p class='null'>null: {escape(evidence['null_reason'])}</p>")
    if metric is not None:
        chunk = None
        for verdict in metric().verdicts(evidence):
            # context sentences under their chunk's number, as the retrieved contexts above are numbered
            if isinstance(verdict, SentenceVerdict) and verdict.chunk is not None and verdict.chunk != chunk:
                chunk = verdict.chunk
                lines.append(f"<div class='p'>chunk {chunk + 1}</div>")
            lines.append(_verdict_line(verdict, threshold, lang_attribute, is_code(verdict)))
    for key in ("reason", "against") if metric is not None and metric.name in BUILT_IN else _own_evidence(evidence):
        if key in evidence:
            lines.append(f"<div class='reason'>{escape(str(key))}: {escape(_shown_value(evidence[key]))}</div>")
    return "".join(lines)


def _own_evidence(evidence: dict[str, Any]) -> list[str]:
    """A metric of one's own: its evidence is its own, every key shown (a probe's word count went unseen)."""
    return [key for key in evidence if key != "null_reason"]


def _shown_value(value: Any) -> str:
    return value if isinstance(value, str) else shortened(json.dumps(value, ensure_ascii=False), 600)


def _sub_scores(row: dict[str, Any], metric: type[Metric] | None) -> str:
    """The metric's sub-scores as results.jsonl holds them, under its column names (a chunk without
    sentences has none: null); nothing for a null score, whose sub-scores are null too."""
    names = () if metric is None else (*metric.part_names, *metric.list_part_names)
    return "".join(f"<div class='reason'>{escape(name)}: {_number_or_list(row[name])}</div>"
                   for name in names if row.get(name) is not None)


def _number_or_list(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(_number_or_list, value))
    return f"{value:.3f}" if _is_score(value) else "null"


def _verdict_line(verdict: Verdict, threshold: float | None = None, lang_attribute: str = "",
                  is_code: bool = False) -> str:
    """One judged text (a sentence, a chunk, a claim, a generated question) with its verdict, the
    judge's confidence and reason; a question with its similarity, flagged when noncommittal.

    Under a calibrated `threshold` the verdict shown is the one the score counted (its probability
    against the threshold), so the marks add up to the score; where the judge wrote the other, that
    is said beside it."""
    counted = verdict.verdict if threshold is None else int(verdict.value(Scoring(threshold=threshold)))
    confidence = _confidence(counted, verdict.probability)
    overruled = "" if counted == verdict.verdict else \
        f"<span class='p'>(counted by the calibrated threshold {threshold:.3g}; the judge wrote {verdict.verdict})</span> "
    if isinstance(verdict, GeneratedQuestion):
        flag = _noncommittal_flag(counted, verdict.probability)
        return (f"<div>{verdict.similarity:.3f} · <bdi{lang_attribute}>{escape(verdict.text)}</bdi>{flag}"
                f"{' ' + overruled.strip() if overruled else ''}</div>")
    # said in words too: a screen reader reads ✗ as "x-shaped bullet" (an accessibility probe)
    mark = ("<span class='yes'><span aria-hidden='true'>✓</span><span class='sr-only'>yes</span></span> " if counted
            else "<span class='no'><span aria-hidden='true'>✗</span><span class='sr-only'>no</span></span> ")
    rank = f"#{verdict.rank + 1} " if isinstance(verdict, ChunkVerdict) else ""
    reason = f" <bdi class='reason'>{escape(verdict.reason)}</bdi>" if verdict.reason else ""
    # the text and the reason isolated (<bdi>): an Arabic sentence turned the line round, "#1" into "1#"
    # the text in the sample's language (`lang_attribute`); the judge's reason in whatever it wrote
    # code left to right whatever the sample's script: an Arabic answer's `cd ..` read `.. cd` (a review)
    text = (f"<code dir='ltr'>{escape(verdict.text)}</code>" if is_code else
            _marked_up(verdict.text) if isinstance(verdict, ChunkVerdict) else escape(verdict.text))
    return f"<div>{mark}{confidence}{overruled}{rank}<bdi{lang_attribute}>{text}</bdi>{reason}</div>"


def _noncommittal_flag(noncommittal: int | None, probability: float | None) -> str:
    """A generated question's flag said in words with the judge's probability of it: "(61%)" alone read as
    the same thing beside a flagged question and an unflagged one, where it meant opposite ones."""
    sure = "" if (shown := _sure(noncommittal, probability)) is None else f", {100 * shown:.0f}%"
    if noncommittal:
        return f" <span class='p'>(noncommittal{sure})</span>"
    return f" <span class='p'>(not noncommittal{sure})</span>" if sure else ""


def _confidence(verdict: int | None, probability: float | None) -> str:
    """The judge's probability of the verdict it gave, e.g. "(93%)"; nothing when it was not recorded."""
    if (sure := _sure(verdict, probability)) is None:
        return ""
    return f"<span class='p' title='the judge&#39;s probability of this verdict'>({100 * sure:.0f}%)</span> "


def _sure(verdict: int | None, probability: float | None) -> float | None:
    """The judge's probability of the verdict it gave, from its probability of 1; None where not recorded."""
    if verdict is None or probability is None:
        return None
    return probability if verdict else 1 - probability
