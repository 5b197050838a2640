"""Small inline SVG plots for the report, written by hand so the report needs no plotting library.

Every text from the data goes through ``esc``; a point or bar that stands for a query links to it
(``href="#q=<id>"``), which the report's script opens as that query's page.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from urllib.parse import quote

PALETTE = ("#3b6fb6", "#e07b39", "#3a9a5b", "#b8463f", "#7b5ea7", "#8a6d3b", "#c45ca2", "#6b7384")
LABEL_COLOURS = {"correct": "#3a9a5b", "partial": "#e0a030", "hallucinated": "#b8463f", "abstained": "#8c8c8c"}
FONT = "font-family='system-ui,sans-serif' font-size='11'"


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def query_href(query_id: str) -> str:
    return "#q=" + quote(str(query_id), safe="")


def _open(width: float, height: float, label: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width:.0f} {height:.0f}' width='{width:.0f}' "
        f"role='img' aria-label='{esc(label)}' {FONT}>"
    )


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, v = [], first
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _fmt(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 100 else f"{v:.0f}"


class Frame:
    """A plotting area with linear x and y scales and its axes."""

    def __init__(
        self,
        width: float,
        height: float,
        x: tuple[float, float],
        y: tuple[float, float],
        left: float = 46,
        right: float = 12,
        top: float = 22,
        bottom: float = 34,
    ):
        self.w, self.h, self.left, self.right, self.top, self.bottom = width, height, left, right, top, bottom
        self.x0, self.x1 = x if x[1] > x[0] else (x[0] - 1, x[0] + 1)
        self.y0, self.y1 = y if y[1] > y[0] else (y[0] - 1, y[0] + 1)

    def sx(self, v: float) -> float:
        return self.left + (v - self.x0) / (self.x1 - self.x0) * (self.w - self.left - self.right)

    def sy(self, v: float) -> float:
        return self.h - self.bottom - (v - self.y0) / (self.y1 - self.y0) * (self.h - self.top - self.bottom)

    def axes(self, xlabel: str = "", ylabel: str = "", xticks: bool = True, yticks: bool = True) -> str:
        parts = []
        if yticks:
            for t in _ticks(self.y0, self.y1):
                y = self.sy(t)
                parts.append(
                    f"<line x1='{self.left}' x2='{self.w - self.right}' y1='{y:.1f}' y2='{y:.1f}' stroke='#e6e8ec'/>"
                    f"<text x='{self.left - 5}' y='{y + 4:.1f}' text-anchor='end' fill='#555'>{_fmt(t)}</text>"
                )
        if xticks:
            for t in _ticks(self.x0, self.x1):
                x = self.sx(t)
                parts.append(
                    f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{self.h - self.bottom}' y2='{self.h - self.bottom + 4}' "
                    "stroke='#888'/>"
                    f"<text x='{x:.1f}' y='{self.h - self.bottom + 16}' text-anchor='middle' "
                    f"fill='#555'>{_fmt(t)}</text>"
                )
        parts.append(
            f"<line x1='{self.left}' x2='{self.w - self.right}' y1='{self.h - self.bottom}' "
            f"y2='{self.h - self.bottom}' stroke='#888'/>"
        )
        if xlabel:
            parts.append(
                f"<text x='{(self.left + self.w - self.right) / 2:.0f}' y='{self.h - 4}' "
                f"text-anchor='middle'>{esc(xlabel)}</text>"
            )
        if ylabel:
            parts.append(
                f"<text transform='translate(12 {(self.top + self.h - self.bottom) / 2:.0f}) rotate(-90)' "
                f"text-anchor='middle'>{esc(ylabel)}</text>"
            )
        return "".join(parts)


def line_chart(
    series: dict[str, Sequence[tuple[float, float]]],
    title: str,
    xlabel: str,
    ylabel: str = "",
    width: float = 440,
    height: float = 240,
) -> str:
    """Lines with markers, one per series, y from 0 to 1."""
    xs = [x for pts in series.values() for x, _ in pts] or [0, 1]
    f = Frame(width, height, (min(xs), max(xs)), (0, 1))
    out = [
        _open(width, height, title),
        f"<text x='{f.left}' y='14' font-weight='600'>{esc(title)}</text>",
        f.axes(xlabel, ylabel),
    ]
    for i, (name, pts) in enumerate(series.items()):
        c = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{f.sx(x):.1f},{f.sy(y):.1f}" for x, y in pts)
        out.append(f"<polyline fill='none' stroke='{c}' stroke-width='1.8' points='{path}'/>")
        out += [
            f"<circle cx='{f.sx(x):.1f}' cy='{f.sy(y):.1f}' r='2.4' fill='{c}'><title>{esc(name)}: {y:.4f} at "
            f"{x:g}</title></circle>"
            for x, y in pts
        ]
        out.append(
            f"<rect x='{width - f.right - 110}' y='{f.top + 4 + 14 * i}' width='10' height='3' fill='{c}'/>"
            f"<text x='{width - f.right - 96}' y='{f.top + 9 + 14 * i}'>{esc(name)}</text>"
        )
    return "".join(out) + "</svg>"


def strip_plot(rows: Sequence[tuple[str, Sequence[tuple[float, str]]]], xlabel: str, width: float = 900) -> str:
    """One row of dots per run, each dot a query linked to its page; the middle half and median drawn."""
    height = 40 + 34 * len(rows)
    f = Frame(width, height, (0, 1), (0, len(rows)), left=90, top=8)
    out = [_open(width, height, xlabel), f.axes(xlabel, yticks=False)]
    for i, (name, points) in enumerate(rows):
        yc = f.sy(len(rows) - i - 0.5)
        vals = sorted(v for v, _ in points)
        out.append(f"<text x='{f.left - 8}' y='{yc + 4:.1f}' text-anchor='end'>{esc(name)}</text>")
        if vals:
            q1, med, q3 = (vals[int(p * (len(vals) - 1))] for p in (0.25, 0.5, 0.75))
            out.append(
                f"<rect x='{f.sx(q1):.1f}' y='{yc - 5:.1f}' width='{max(1.0, f.sx(q3) - f.sx(q1)):.1f}' height='10' "
                "fill='#dfe3ea'/>"
                f"<line x1='{f.sx(med):.1f}' x2='{f.sx(med):.1f}' y1='{yc - 9:.1f}' y2='{yc + 9:.1f}' "
                "stroke='#1d2330' stroke-width='2'/>"
            )
        c = PALETTE[i % len(PALETTE)]
        for j, (v, qid) in enumerate(points):
            jitter = ((j * 7) % 11 - 5) * 1.3
            out.append(
                f"<a href='{esc(query_href(qid))}'><circle cx='{f.sx(v):.1f}' cy='{yc + jitter:.1f}' r='3.2' "
                f"fill='{c}' "
                f"fill-opacity='.65'><title>{esc(qid)}: {v:.4f}</title></circle></a>"
            )
    return "".join(out) + "</svg>"


def difference_plot(diffs: Sequence[tuple[str, float]], title: str, width: float = 900, height: float = 220) -> str:
    """Per-query differences sorted by effect: one bar per query, linked to its page."""
    n = max(1, len(diffs))
    lim = max([abs(d) for _, d in diffs] + [1e-9])
    f = Frame(width, height, (0, n), (-lim, lim), left=46, top=22)
    bw = (width - f.left - f.right) / n
    out = [
        _open(width, height, title),
        f"<text x='{f.left}' y='14' font-weight='600'>{esc(title)}</text>",
        f.axes("queries, sorted by difference", "difference", xticks=False),
    ]
    zero = f.sy(0)
    out.append(f"<line x1='{f.left}' x2='{width - f.right}' y1='{zero:.1f}' y2='{zero:.1f}' stroke='#555'/>")
    for i, (qid, d) in enumerate(diffs):
        y, h = (f.sy(d), zero - f.sy(d)) if d >= 0 else (zero, f.sy(d) - zero)
        colour = "#3a9a5b" if d > 0 else "#b8463f" if d < 0 else "#999"
        out.append(
            f"<a href='{esc(query_href(qid))}'><rect x='{f.left + i * bw:.2f}' y='{y:.1f}' "
            f"width='{max(bw - 0.6, 0.6):.2f}' "
            f"height='{max(h, 0.8):.1f}' fill='{colour}'><title>{esc(qid)}: {d:+.4f}</title></rect></a>"
        )
    return "".join(out) + "</svg>"


def forest_plot(rows: Sequence[tuple[str, float, float, float, float | None]], title: str, width: float = 900) -> str:
    """Differences with their intervals; rows are (label, diff, low, high, adjusted p)."""
    height = 46 + 24 * len(rows)
    lim = max([abs(v) for _, d, lo, hi, _ in rows for v in (d, lo, hi)] + [1e-9]) * 1.1
    f = Frame(width, height, (-lim, lim), (0, len(rows)), left=220, right=130, top=22)
    out = [
        _open(width, height, title),
        f"<text x='8' y='14' font-weight='600'>{esc(title)}</text>",
        f.axes("difference from the baseline", yticks=False),
        f"<line x1='{f.sx(0):.1f}' x2='{f.sx(0):.1f}' y1='{f.top}' y2='{height - f.bottom}' stroke='#555' "
        "stroke-dasharray='3 3'/>",
        f"<text x='{width - 8}' y='14' text-anchor='end' fill='#555'>p (Holm)</text>",
    ]
    for i, (label, d, lo, hi, p) in enumerate(rows):
        y = f.sy(len(rows) - i - 0.5)
        colour = "#1d2330" if p is None or p >= 0.05 else ("#3a9a5b" if d > 0 else "#b8463f")
        ptext = "" if p is None else ("< 0.001" if p < 0.001 else f"{p:.3f}")
        out.append(
            f"<text x='{f.left - 8}' y='{y + 4:.1f}' text-anchor='end'>{esc(label)}</text>"
            f"<line x1='{f.sx(lo):.1f}' x2='{f.sx(hi):.1f}' y1='{y:.1f}' y2='{y:.1f}' stroke='{colour}' "
            "stroke-width='2'/>"
            f"<rect x='{f.sx(d) - 4:.1f}' y='{y - 4:.1f}' width='8' height='8' fill='{colour}'>"
            f"<title>{esc(label)}: {d:+.4f} [{lo:+.4f}, {hi:+.4f}]</title></rect>"
            f"<text x='{width - 8}' y='{y + 4:.1f}' text-anchor='end'>{d:+.4f}  p {esc(ptext)}</text>"
        )
    return "".join(out) + "</svg>"


def bars_with_intervals(
    items: Sequence[tuple[str, float, float | None, float | None]],
    title: str,
    ylabel: str,
    width: float = 440,
    height: float = 220,
) -> str:
    """Bars (label, value, low, high) with their intervals, y from 0 to 1."""
    f = Frame(width, height, (0, max(1, len(items))), (0, 1), top=22)
    bw = (width - f.left - f.right) / max(1, len(items))
    out = [
        _open(width, height, title),
        f"<text x='{f.left}' y='14' font-weight='600'>{esc(title)}</text>",
        f.axes("", ylabel, xticks=False),
    ]
    for i, (label, v, lo, hi) in enumerate(items):
        x = f.left + i * bw
        colour = LABEL_COLOURS.get(label, PALETTE[i % len(PALETTE)])
        out.append(
            f"<rect x='{x + bw * 0.18:.1f}' y='{f.sy(v):.1f}' width='{bw * 0.64:.1f}' "
            f"height='{f.sy(0) - f.sy(v):.1f}' fill='{colour}'>"
            f"<title>{esc(label)}: {v:.3f}</title></rect>"
            f"<text x='{x + bw / 2:.1f}' y='{height - f.bottom + 16}' text-anchor='middle'>{esc(label)}</text>"
        )
        if lo is not None and hi is not None:
            cx = x + bw / 2
            out.append(
                f"<path d='M{cx - 5:.1f} {f.sy(lo):.1f}H{cx + 5:.1f}M{cx:.1f} {f.sy(lo):.1f}V{f.sy(hi):.1f}"
                f"M{cx - 5:.1f} {f.sy(hi):.1f}H{cx + 5:.1f}' stroke='#1d2330' fill='none'/>"
            )
    return "".join(out) + "</svg>"


def counts_bars(items: Sequence[tuple[str, int]], title: str, width: float = 440, height: float = 200) -> str:
    top = max([c for _, c in items] + [1])
    f = Frame(width, height, (0, max(1, len(items))), (0, top), top=22)
    bw = (width - f.left - f.right) / max(1, len(items))
    out = [
        _open(width, height, title),
        f"<text x='{f.left}' y='14' font-weight='600'>{esc(title)}</text>",
        f.axes("", "", xticks=False),
    ]
    for i, (label, c) in enumerate(items):
        x = f.left + i * bw
        out.append(
            f"<rect x='{x + bw * 0.18:.1f}' y='{f.sy(c):.1f}' width='{bw * 0.64:.1f}' "
            f"height='{f.sy(0) - f.sy(c):.1f}' "
            f"fill='{LABEL_COLOURS.get(label, PALETTE[0])}'><title>{esc(label)}: {c}</title></rect>"
            f"<text x='{x + bw / 2:.1f}' y='{height - f.bottom + 16}' text-anchor='middle'>{esc(label)}</text>"
        )
    return "".join(out) + "</svg>"


def heatmap(
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    matrix: Sequence[Sequence[int]],
    row_title: str,
    col_title: str,
    cell: float = 54,
) -> str:
    """A confusion matrix as shaded cells with counts; the diagonal (agreement) outlined."""
    cell = max(cell, 7.5 * max([len(str(x)) for x in col_labels] + [1]) + 10)  # room for the column labels
    left = max(60, 7 * max([len(str(x)) for x in row_labels] + [1]) + 36)
    top = 44
    width, height = left + cell * len(col_labels) + 10, top + cell * len(row_labels) + 10
    peak = max([v for row in matrix for v in row] + [1])
    out = [
        _open(width, height, f"{row_title} against {col_title}"),
        f"<text x='{left + cell * len(col_labels) / 2:.0f}' y='14' text-anchor='middle' "
        f"font-weight='600'>{esc(col_title)}</text>",
        f"<text transform='translate(16 {top + cell * len(row_labels) / 2:.0f}) rotate(-90)' text-anchor='middle' "
        f"font-weight='600'>{esc(row_title)}</text>",
    ]
    for j, lab in enumerate(col_labels):
        out.append(f"<text x='{left + cell * (j + 0.5):.0f}' y='{top - 8}' text-anchor='middle'>{esc(lab)}</text>")
    for i, (rl, row) in enumerate(zip(row_labels, matrix)):
        y = top + i * cell
        out.append(f"<text x='{left - 8}' y='{y + cell / 2 + 4:.0f}' text-anchor='end'>{esc(rl)}</text>")
        for j, v in enumerate(row):
            share = v / peak
            fill = f"rgba(59,111,182,{0.06 + 0.9 * share:.3f})"
            stroke = "#1d2330" if i == j else "#fff"
            out.append(
                f"<rect x='{left + j * cell}' y='{y}' width='{cell - 2}' height='{cell - 2}' fill='{fill}' "
                f"stroke='{stroke}'>"
                f"<title>{esc(rl)} / {esc(col_labels[j])}: {v}</title></rect>"
                f"<text x='{left + j * cell + cell / 2 - 1:.0f}' y='{y + cell / 2 + 4:.0f}' text-anchor='middle' "
                f"fill='{'#fff' if share > 0.55 else '#1d2330'}'>{v}</text>"
            )
    return "".join(out) + "</svg>"
