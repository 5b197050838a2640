"""The shape of a report: sections of notes, plots and tables, and the data behind each query's page."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Any]]
    queries: list[str | None] | None = None  # per row: the query it opens (HTML)
    filter: bool = False  # a search box above it (HTML)


@dataclass
class Section:
    title: str
    note: str = ""
    plots: list[str] = field(default_factory=list)  # inline SVG (HTML only)
    tables: list[Table] = field(default_factory=list)


@dataclass
class Report:
    title: str
    sections: list[Section]
    pages: dict[str, Any]  # the data behind every query's page (HTML only)
