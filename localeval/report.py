"""report.html: one self-contained page a person can open to see the scores and why each is what it is."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from .results import write_atomically

REPORT_FILE = "report.html"

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.null{color:#999}
details{margin:.2em 0 .8em 1em}summary{cursor:pointer}.yes{color:#176f2c}.no{color:#b3261e}
.reason{color:#666;font-size:12px}h3{margin-bottom:.2em}.p{color:#555;font-size:12px}
.warning{background:#fff4e5;border-left:4px solid #e8a33d;padding:.5em 1em}
"""

VERDICT_KEYS = ("relevant", "attributed", "supported")


def write_report(out_dir: Path, rows: list[dict[str, Any]], summary: dict[str, Any], details: dict[str, Any]) -> Path:
    metrics = list(summary)
    parts = [
        f"<!doctype html><meta charset='utf-8'><title>localeval report</title><style>{STYLE}</style>",
        "<h1>localeval report</h1>",
        f"<p>{escape(str(details.get('data', '')))}: {len(rows)} samples; judge <b>{escape(details['models']['judge'])}</b>, "
        f"embedder <b>{escape(details['models']['embedder'])}</b>, on {escape(details['device'])}.</p>",
        *(f"<p class='warning'>{escape(w)}</p>" for w in details.get("warnings", [])),
        _calibration_note(details.get("calibration")),
        _summary_table(summary),
        "<h2>Samples</h2>",
        _sample_table(rows, metrics),
        *(_sample_evidence(row, metrics) for row in rows),
    ]
    path = out_dir / REPORT_FILE
    write_atomically(path, "\n".join(parts))
    return path


def _score(value) -> str:
    return "<td class='num null'>null</td>" if value is None else f"<td class='num'>{value:.3f}</td>"


def _calibration_note(calibration: dict[str, Any] | None) -> str:
    if not calibration or not calibration["thresholds"]:  # an empty one is among the warnings
        return ""
    thresholds = ", ".join(f"{escape(m)} {t:.3g}" for m, t in calibration["thresholds"].items())
    return (f"<p>Calibrated verdict thresholds from {escape(calibration['path'])} "
            f"(fitted on {escape(str(calibration.get('fitted_on')))}): {thresholds}.</p>")


def _interval(interval) -> str:
    return "<td class='num null'>-</td>" if not interval else f"<td class='num'>{interval[0]:.3f} – {interval[1]:.3f}</td>"


def _summary_table(summary) -> str:
    corrected = any("corrected" in row for row in summary.values())
    extra = "<th>labeled</th><th>bias</th><th>corrected mean</th><th>95% interval (corrected)</th>" if corrected else ""
    head = f"<table><tr><th>metric</th><th>mean</th><th>95% interval</th><th>scored</th><th>null</th>{extra}</tr>"
    body = "".join(
        f"<tr><td>{escape(name)}</td>{_score(row['mean'])}{_interval(row.get('interval'))}"
        f"<td class='num'>{row['scored']}</td><td class='num'>{row['null']}</td>{_corrected_cells(row, corrected)}</tr>"
        for name, row in summary.items()
    )
    note = "<p class='reason'>95% interval: bootstrap over samples."
    if corrected:
        note += " Corrected: the judge's mean minus its bias on the samples people labeled (prediction-powered inference)."
    note += "</p>"
    return head + body + "</table>" + note


def _corrected_cells(row: dict[str, Any], shown: bool) -> str:
    if not shown:
        return ""
    fix = row.get("corrected")
    if fix is None:
        return "<td class='num null'>-</td>" * 4
    return (f"<td class='num'>{fix['labeled']}</td><td class='num'>{fix['bias']:+.3f}</td>{_score(fix['mean'])}"
            f"{_interval(fix['interval'])}")


def _sample_table(rows, metrics) -> str:
    head = "<table><tr><th>id</th>" + "".join(f"<th>{escape(m)}</th>" for m in metrics) + "</tr>"
    body = "".join(
        f"<tr><td><a href='#s-{escape(str(row['id']))}'>{escape(str(row['id']))}</a></td>"
        + "".join(_score(row.get(m)) for m in metrics) + "</tr>"
        for row in rows
    )
    return head + body + "</table>"


def _sample_evidence(row, metrics) -> str:
    blocks = [f"<h3 id='s-{escape(str(row['id']))}'>{escape(str(row['id']))}</h3>"]
    for metric in metrics:
        evidence = row["evidence"].get(metric, {})
        score = "null" if row.get(metric) is None else f"{row[metric]:.3f}"
        blocks.append(f"<details><summary>{escape(metric)}: {score}</summary>{_evidence_body(evidence)}</details>")
    return "\n".join(blocks)


def _evidence_body(evidence: dict[str, Any]) -> str:
    lines = []
    if "null_reason" in evidence:
        lines.append(f"<p class='null'>null: {escape(evidence['null_reason'])}</p>")
    for item in evidence.get("sentences", []):
        key = next((k for k in VERDICT_KEYS if k in item), None)
        mark = "" if key is None else ("<span class='yes'>✓</span> " if item[key] else "<span class='no'>✗</span> ")
        mark += _confidence(item.get(key), item.get("probability"))
        reason = f" <span class='reason'>{escape(item['reason'])}</span>" if item.get("reason") else ""
        lines.append(f"<div>{mark}{escape(item['sentence'])}{reason}</div>")
    for q in evidence.get("questions", []):
        flag = " (noncommittal)" if q["noncommittal"] else ""
        flag += f" {_confidence(q['noncommittal'], q.get('probability'))}" if "probability" in q else ""
        lines.append(f"<div>{q['similarity']:.3f} · {escape(q['question'])}{flag}</div>")
    for key in ("reason", "chunk_relevance", "per_chunk", "rank_weighted"):
        if key in evidence:
            lines.append(f"<div class='reason'>{key}: {escape(str(evidence[key]))}</div>")
    return "".join(lines)


def _confidence(verdict: int | None, probability: float | None) -> str:
    """The judge's probability of the verdict it gave, e.g. "(93%)"; nothing when it was not recorded."""
    if verdict is None or probability is None:
        return ""
    sure = probability if verdict else 1 - probability
    return f"<span class='p' title='the judge&#39;s probability of this verdict'>({100 * sure:.0f}%)</span> "
