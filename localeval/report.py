"""report.html: one self-contained page a person can open to see the scores and why each is what it is."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

REPORT_FILE = "report.html"

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.null{color:#999}
details{margin:.2em 0 .8em 1em}summary{cursor:pointer}.yes{color:#176f2c}.no{color:#b3261e}
.reason{color:#666;font-size:12px}h3{margin-bottom:.2em}
"""

VERDICT_KEYS = ("relevant", "attributed", "supported")


def write_report(out_dir: Path, rows: list[dict[str, Any]], summary: dict[str, Any], details: dict[str, Any]) -> Path:
    metrics = list(summary)
    parts = [
        f"<!doctype html><meta charset='utf-8'><title>localeval report</title><style>{STYLE}</style>",
        "<h1>localeval report</h1>",
        f"<p>{escape(str(details.get('data', '')))}: {len(rows)} samples; judge <b>{escape(details['models']['judge'])}</b>, "
        f"embedder <b>{escape(details['models']['embedder'])}</b>, on {escape(details['device'])}.</p>",
        _summary_table(summary),
        "<h2>Samples</h2>",
        _sample_table(rows, metrics),
        *(_sample_evidence(row, metrics) for row in rows),
    ]
    path = out_dir / REPORT_FILE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _score(value) -> str:
    return "<td class='num null'>null</td>" if value is None else f"<td class='num'>{value:.3f}</td>"


def _summary_table(summary) -> str:
    head = "<table><tr><th>metric</th><th>mean</th><th>scored</th><th>null</th></tr>"
    body = "".join(
        f"<tr><td>{escape(name)}</td>{_score(row['mean'])}<td class='num'>{row['scored']}</td>"
        f"<td class='num'>{row['null']}</td></tr>"
        for name, row in summary.items()
    )
    return head + body + "</table>"


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
        reason = f" <span class='reason'>{escape(item['reason'])}</span>" if item.get("reason") else ""
        lines.append(f"<div>{mark}{escape(item['sentence'])}{reason}</div>")
    for q in evidence.get("questions", []):
        flag = " (noncommittal)" if q["noncommittal"] else ""
        lines.append(f"<div>{q['similarity']:.3f} · {escape(q['question'])}{flag}</div>")
    for key in ("reason", "chunk_relevance", "per_chunk", "rank_weighted"):
        if key in evidence:
            lines.append(f"<div class='reason'>{key}: {escape(str(evidence[key]))}</div>")
    return "".join(lines)
