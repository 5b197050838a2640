"""Render result tables as aligned text, Markdown, CSV or JSON. No numbers are computed here."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

TABLE_FORMATS = ("table", "json", "csv", "markdown")


def fmt_value(v: Any, digits: int = 4) -> str:
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v)
    if isinstance(v, float):
        if v != v:  # nan
            return "nan"
        text = f"{v:.{digits}f}"
        return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0000"
    return str(v)


def fmt_p(p: float | None, digits: int = 3) -> str:
    """A p-value as it may be printed: under the last digit shown it is ``< 0.001``, never
    ``0.000`` (a permutation test's p-value is at least 1/(permutations + 1), never zero)."""
    if p is None or p != p:
        return "nan" if p is not None else ""
    floor = 10.0**-digits
    return f"< {floor:.{digits}f}" if p < floor else f"{p:.{digits}f}"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "table", digits: int = 4) -> str:
    """Render rows under headers; numbers right-aligned, text left-aligned."""
    if fmt == "csv":
        return _csv_table(headers, rows)
    cells = [[fmt_value(v, digits) for v in r] for r in rows]
    numeric = [_numeric_column(rows, i) for i in range(len(headers))]
    if fmt == "markdown":
        return _markdown_table(headers, cells, numeric)
    return _text_table(headers, cells, numeric)


def _csv_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """The rows as CSV, floats in full (``repr``) and None as an empty field."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(headers)
    for r in rows:
        w.writerow([("" if v is None else repr(v) if isinstance(v, float) else v) for v in r])
    return buf.getvalue().rstrip("\n")


def _numeric_column(rows: Sequence[Sequence[Any]], i: int) -> bool:
    """Whether column ``i`` holds numbers only (None aside), so it is aligned right."""
    return all(
        isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows if r[i] is not None
    ) and bool(rows)


def _markdown_table(headers: Sequence[str], cells: list[list[str]], numeric: list[bool]) -> str:
    lines = [
        "| " + " | ".join(markdown_cell(h) for h in headers) + " |",
        "|" + "|".join("---:" if numeric[i] else ":---" for i in range(len(headers))) + "|",
    ]
    lines += ["| " + " | ".join(markdown_cell(c) for c in r) + " |" for r in cells]
    return "\n".join(lines)


def _text_table(headers: Sequence[str], cells: list[list[str]], numeric: list[bool]) -> str:
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)
        ).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


def markdown_cell(text: str) -> str:
    """Text that stays one Markdown table cell (or one line) whatever it holds: line breaks become
    spaces, pipes and angle brackets are escaped, so no data can end a row or open an HTML tag."""
    text = " ".join(str(text).splitlines())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False, default=_default)


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"cannot serialise {type(o).__name__}")
