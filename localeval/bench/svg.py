"""Charts as inline SVG, drawn here: the bench page must open offline, with no plotting library.

Three kinds: grouped bars (one group per metric, one bar per judge), a scatter panel (human
score across, judge score up, one colour and one marker shape per judge), and a histogram (how many scores fall in each bin;
the run report draws one per metric). Every mark carries a <title>, so hovering
shows the exact number without any script.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from ..errors import count_of

# Okabe and Ito's colours, darkened to 3.8:1 or more against white, told apart with red-green colour blindness
# too (red and green were not, and three of the last palette's were under 3:1: an accessibility probe)
PALETTE = ("#0072b2", "#d55e00", "#007a5a", "#a4588a", "#b07800", "#3a3a3a", "#6a3d9a", "#8c564b")
SHAPES = ("circle", "square", "triangle", "diamond", "down", "cross")  # a judge's marker: not by colour alone
HISTOGRAM_WIDTH = 210  # pixels: five fit side by side in the report
FONT = "font-family='system-ui,sans-serif'"


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def marker(index: int, x: float, y: float, r: float = 4.0) -> str:
    """The `index`th judge's mark at (x, y): its colour and its shape, outlined in white where marks overlap."""
    fill, shape = colour(index), SHAPES[index % len(SHAPES)]
    paint = f"fill='{fill}' stroke='#fff' stroke-width='.8'"
    if shape == "circle":
        return f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r:.1f}' {paint}/>"
    corners = {"square": [(-.9, -.9), (.9, -.9), (.9, .9), (-.9, .9)], "triangle": [(0, -1.2), (1.1, .8), (-1.1, .8)],
               "diamond": [(0, -1.25), (1.1, 0), (0, 1.25), (-1.1, 0)], "down": [(0, 1.2), (1.1, -.8), (-1.1, -.8)],
               "cross": [(-.35, -1.1), (.35, -1.1), (.35, -.35), (1.1, -.35), (1.1, .35), (.35, .35), (.35, 1.1),
                         (-.35, 1.1), (-.35, .35), (-1.1, .35), (-1.1, -.35), (-.35, -.35)]}[shape]
    points = " ".join(f"{x + dx * r:.1f},{y + dy * r:.1f}" for dx, dy in corners)
    return f"<polygon points='{points}' {paint}/>"


def legend(names: Sequence[str]) -> str:
    """The judges, each by its colour and marker shape, as HTML to place above the charts."""
    return "".join(
        f"<span style='margin-right:1.2em'><svg width='14' height='14' viewBox='0 0 14 14' aria-hidden='true' "
        f"style='vertical-align:-.15em;margin-right:.3em'>{marker(i, 7, 7, 5)}</svg>{escape(name)}</span>"
        for i, name in enumerate(names)
    )


def grouped_bars(title: str, groups: Sequence[str], series: Sequence[str], values: dict[str, Sequence[float | None]],
                 low: float, high: float, ticks: Sequence[float], reference: tuple[float, str] | None = None) -> str:
    """Bars of `values[series][group]` on a [low, high] axis; a missing value is written 'n/a' in place of its bar."""
    group_width, left, top, plot_height, bottom = 150, 44, 30, 200, 62
    width, height = left + group_width * len(groups) + 10, top + plot_height + bottom
    y = _scale(low, high, top + plot_height, top)
    bar = min(28.0, (group_width - 30) / max(len(series), 1))
    said = "; ".join(f"{group}: " + ", ".join(f"{name} {'n/a' if values[name][g] is None else f'{values[name][g]:.2f}'}"
                                             for name in series) for g, group in enumerate(groups))
    parts = [_open(width, height, f"{title}. {said}"), _text(left, 16, title, weight="bold")]  # its values, said
    parts += _y_axis(ticks, y, left, width - 10)
    if reference is not None:
        parts.append(f"<line x1='{left}' x2='{width - 10}' y1='{y(reference[0]):.1f}' y2='{y(reference[0]):.1f}' "
                     f"stroke='#888' stroke-dasharray='4 3'><title>{escape(reference[1])}</title></line>")
        parts.append(_text(width - 12, y(reference[0]) - 3, reference[1], size=10, anchor="end", fill="#666"))
    baseline = y(min(max(0.0, low), high))
    for g, group in enumerate(groups):
        start = left + g * group_width + (group_width - bar * len(series)) / 2
        for s, name in enumerate(series):
            x, value = start + s * bar, values[name][g]
            if value is None:
                parts.append(_text(x + bar / 2, baseline - 4, "n/a", size=9, anchor="middle", fill="#999"))
                continue
            top_y, bottom_y = sorted((y(value), baseline))
            tip = f"{name} · {group}: {value:.3f}"
            parts.append(f"<rect x='{x + 1:.1f}' y='{top_y:.1f}' width='{bar - 2:.1f}' height='{max(bottom_y - top_y, 0.5):.1f}' "
                         f"fill='{colour(s)}'><title>{escape(tip)}</title></rect>")
            label_y = top_y - 3 if value >= 0 else bottom_y + 10
            parts.append(_text(x + bar / 2, label_y, f"{value:.2f}", size=9, anchor="middle"))
            if bar >= 10:  # the judge's marker at the bar's foot: bars told apart by shape as well as colour
                parts.append(marker(s, x + bar / 2, baseline + (5 if value >= 0 else -5), min(3.5, bar / 4)))
        # Below the lowest value label a bar at the axis minimum can have.
        parts.append(_label_lines(left + g * group_width + group_width / 2, top + plot_height + 28, group))
    parts.append("</svg>")
    return "".join(parts)


def scatter(title: str, series: Sequence[str], points: dict[str, Sequence[tuple[float, float, str]]],
            notes: dict[str, str] | None = None) -> str:
    """One panel: (human, judge, sample id) points per series, with the line where judge = human.

    Human scores are few distinct values (shares of a few sentences), so each judge's points
    are shifted a little sideways from the others' to keep them all visible.
    """
    size, pad, margin = 250, 36, 0.05  # margin: points on 0 and 1 stay inside the frame
    top = 22 + 13 * math.ceil(len(series) / 3)  # title, then the notes three to a line
    judge_low = min([0.0, *(p[1] for pts in points.values() for p in pts)])
    x = _scale(-margin, 1 + margin, pad, size - 10)
    y = _scale(judge_low - margin, 1 + margin, size - pad, top)
    said = ", ".join(f"{name} {notes[name]}" if notes and name in notes else name for name in series)
    counts = ", ".join(str(len(points.get(name, ()))) for name in series)
    parts = [_open(size, size, f"{title}, judge score against human score: {said}; points per judge {counts}"),
             _text(pad, 14, title, weight="bold", size=12)]
    for s, name in enumerate(series):
        if notes and name in notes:  # the judge's marker, then its note in text dark enough to read
            parts.append(marker(s, pad + 4 + 70 * (s % 3), 24 + 13 * (s // 3), 3.5))
            parts.append(_text(pad + 11 + 70 * (s % 3), 27 + 13 * (s // 3), notes[name], size=10))
    parts.append(f"<rect x='{pad}' y='{top}' width='{size - 10 - pad}' height='{size - pad - top}' fill='none' "
                 f"stroke='#ccc'/>")
    parts.append(f"<line x1='{x(0):.1f}' y1='{y(0):.1f}' x2='{x(1):.1f}' y2='{y(1):.1f}' stroke='#aaa' "
                 f"stroke-dasharray='4 3'><title>judge = human</title></line>")
    for value in (0.0, 0.5, 1.0):
        parts.append(_text(x(value), size - pad + 12, f"{value:g}", size=9, anchor="middle"))
        parts.append(_text(pad - 4, y(value) + 3, f"{value:g}", size=9, anchor="end"))
    if judge_low < 0:
        parts.append(_text(pad - 4, y(judge_low) + 3, f"{judge_low:.2f}", size=9, anchor="end"))
    parts.append(_text((pad + size) / 2, size - 6, "human score", size=10, anchor="middle", fill="#555"))
    middle = (size - pad + top) / 2
    parts.append(f"<text x='10' y='{middle:.0f}' font-size='10' fill='#555' {FONT} text-anchor='middle' "
                 f"transform='rotate(-90 10 {middle:.0f})'>judge score</text>")
    for s, name in enumerate(series):
        shift = (s - (len(series) - 1) / 2) * 4
        for human, judge, sample_id in points.get(name, ()):
            tip = f"{name} · {sample_id}: judge {judge:.3f}, human {human:.3f}"
            parts.append(f"<g>{marker(s, x(human) + shift, y(judge), 3.5)}<title>{escape(tip)}</title></g>")
    parts.append("</svg>")
    return "".join(parts)


def histogram(values: Sequence[float], low: float, high: float, step: float, unit: str = "value", name: str = "") -> str:
    """Counts of `values` in bins of width `step` from `low` to `high` (the last bin includes `high`);
    each bin's tooltip counts them in `unit`s. Untitled: the page captions it in HTML, which wraps a
    long metric name where SVG text would be cut off; `name` and the bins that hold any are its text
    for a screen reader."""
    bins = max(1, round((high - low) / step))
    counts = [0] * bins
    for value in values:
        # The tolerance puts a value on a bin's edge in the bin it starts, despite float error (0.3 / 0.1 < 3).
        counts[min(max(math.floor((value - low) / step + 1e-9), 0), bins - 1)] += 1
    width, left, top, plot_height, bottom = HISTOGRAM_WIDTH, 24, 14, 80, 22  # top: the tallest bar's count
    x = _scale(low, high, left, width - 10)
    y = _scale(0, max(max(counts), 1), top + plot_height, top)
    # bin edges rounded: -0.3 + 3 * 0.1 is 5.6e-17, which a screen reader now reads out
    tips = [f"{round(low + i * step, 9):.2g} to {round(low + (i + 1) * step, 9):.2g}: {count_of(count, unit)}"
            for i, count in enumerate(counts)]
    said = "; ".join(tip for tip, count in zip(tips, counts) if count) or f"no {unit}s"
    parts = [_open(width, top + plot_height + bottom, f"{name}: {said}" if name else said)]
    parts += _y_axis(sorted({0, max(counts)}), y, left, width - 10)
    for i, (count, tip) in enumerate(zip(counts, tips)):
        start, end = low + i * step, low + (i + 1) * step
        parts.append(f"<rect x='{x(start) + 1:.1f}' y='{y(count):.1f}' width='{x(end) - x(start) - 2:.1f}' "
                     f"height='{y(0) - y(count):.1f}' fill='{colour(0)}'><title>{escape(tip)}</title></rect>")
        if count:
            parts.append(_text((x(start) + x(end)) / 2, y(count) - 3, str(count), size=9, anchor="middle"))
    for tick in sorted({low, (low + high) / 2, high}):
        parts.append(_text(x(tick), top + plot_height + 13, f"{tick:g}", size=9, anchor="middle", fill="#555"))
    parts.append("</svg>")
    return "".join(parts)


# --- drawing helpers ---------------------------------------------------------------------------


def _scale(low: float, high: float, start: float, end: float):
    span = (high - low) or 1.0
    return lambda value: start + (min(max(value, low), high) - low) / span * (end - start)


def _open(width: float, height: float, label: str) -> str:
    """`label`: what a screen reader says of the chart (role img hides its parts; unnamed, it read out the
    axis numbers, "0 4 1 1 1 4 1 0 0.5 1", a report probe)."""
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
            f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' aria-label='{escape(label)}'>")


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "start", fill: str = "#222",
          weight: str = "normal") -> str:
    return (f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' font-weight='{weight}' fill='{fill}' {FONT} "
            f"text-anchor='{anchor}'>{escape(text)}</text>")


def _y_axis(ticks: Sequence[float], y, left: float, right: float) -> list[str]:
    parts = []
    for tick in ticks:
        stroke = "#999" if tick == 0 else "#e4e4e4"
        parts.append(f"<line x1='{left}' x2='{right}' y1='{y(tick):.1f}' y2='{y(tick):.1f}' stroke='{stroke}'/>")
        parts.append(_text(left - 5, y(tick) + 3, f"{tick:g}", size=9, anchor="end", fill="#555"))
    return parts


def _label_lines(x: float, y: float, label: str, width: int = 18) -> str:
    """A metric name on up to three lines, broken at underscores, so long names fit under their group."""
    lines, current = [], ""
    for word in label.split("_"):
        candidate = f"{current} {word}".strip()
        if current and len(candidate) > width:
            lines.append(current)
            candidate = word
        current = candidate
    lines.append(current)
    spans = "".join(f"<tspan x='{x:.1f}' dy='{0 if i == 0 else 12}'>{escape(line)}</tspan>" for i, line in enumerate(lines))
    return f"<text x='{x:.1f}' y='{y:.1f}' font-size='10' fill='#333' {FONT} text-anchor='middle'>{spans}</text>"
