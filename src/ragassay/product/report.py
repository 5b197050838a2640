"""One self-contained report (HTML a person explores, or Markdown for a pull request).

Sections are built from whatever inputs were given (see ``report_inputs``): runs and metrics, every
query in a sortable table, comparisons (forest and per-query difference plots), the judge (grade
mix, coverage, agreement heatmap and the widest disagreements), answers (label rates, diagnosis,
agreement with people) and a generated set's mix. In HTML every query in a table row or a plot
point opens that query's page: its question, gold chunks, each run's top chunks with the qrels'
grades and the judge's, coverage nuggets, the reference and the system's answer with its check label.

Every grade and label is named by who made it, read from its file's origin (``FILE.origin.json``,
else what its lines say): "people (alice)" only when people made them, the model's name when a
model did, "unknown" when the file says nothing. The judge's pool qrels are never "people's".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..data.lines import write_lines_atomic
from ..data.result_models import ReportResult
from ..errors import InputError
from .report_inputs import ReportInputs, RunFiles, load_inputs
from .report_joins import input_joins, joins_section
from .report_model import Report, Section, Table
from .report_page import render_html, render_markdown
from .report_queries import chunk_texts, page_labels, queries_section, query_pages
from .report_runs import compare_sections, per_query, runs_section
from .report_stages import (
    calibration_sections,
    check_sections,
    generate_sections,
    judge_sections,
    labellers_section,
)
from .report_words import labelled_by

__all__ = ["ReportInputs", "Section", "Table", "build_report", "labelled_by", "load_inputs", "write_report"]


# ------------------------------------------------------------------------------------ assembly


def build_report(inp: ReportInputs, title: str = "ragassay report", joins: list | None = None) -> Report:
    joins = input_joins(inp) if joins is None else joins
    evals, per = per_query(inp)
    pages = query_pages(inp, per)
    sections = (
        joins_section(joins)
        + labellers_section(inp)
        + runs_section(inp, evals)
        + queries_section(inp, evals, per, pages)
        + compare_sections(inp, evals)
        + judge_sections(inp)
        + calibration_sections(inp)
        + check_sections(inp)
        + generate_sections(inp)
    )
    if not sections:
        raise InputError(
            "nothing to report: give --qrels and --run, or result files from evaluate, compare, judge, "
            "check or generate"
        )
    return Report(
        title,
        sections,
        {
            "runs": [r.name for r in inp.runs],
            "labels": page_labels(inp),
            "queries": pages,
            "chunks": chunk_texts(inp, pages) if pages else {},
        },
    )


def write_report(
    inp: ReportInputs, output: str | Path, fmt: str = "html", title: str = "ragassay report", joins: list | None = None
) -> Path:
    report = build_report(inp, title, joins)
    text = render_html(report) if fmt == "html" else render_markdown(report)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_lines_atomic(out, [text])
    return out


@dataclass
class ReportFile:
    """A report written: where, in which format, how large."""

    path: Path
    format: str
    bytes: int
    warnings: list[str] = field(default_factory=list)  # joins that met in part (the report shows them too)

    def to_dict(self) -> dict:
        return ReportResult(output=str(self.path), format=self.format, bytes=self.bytes).to_dict()


def make_report(
    files: Sequence[str | Path],
    output: str | Path,
    *,
    qrels: str | Path | None = None,
    runs: RunFiles = (),
    chunks: str | Path | None = None,
    queries: str | Path | None = None,
    answers: str | Path | None = None,
    human: str | Path | None = None,
    fmt: str | None = None,
    title: str = "ragassay report",
    people_qrels: str | Path | None = None,
    relevance_level: int | None = None,
) -> ReportFile:
    """Read ragassay's outputs (``files``, with the qrels, runs and texts they refer to) and write
    one report to ``output``: ``fmt`` html or markdown, else by the output's suffix (.md is markdown).

    ``runs``: a mapping {name: path} names each run; a sequence of paths names each by its TREC tag
    (else its file name). ``people_qrels``: a second qrels shown beside ``qrels`` (see ``load_inputs``).
    ``relevance_level``: the grade binary measures count from (default: the qrels' own, else 1)."""
    inputs = load_inputs(
        files,
        qrels=qrels,
        runs=runs,
        chunks=chunks,
        queries=queries,
        answers=answers,
        human=human,
        people_qrels=people_qrels,
    )
    return report_of(inputs, output, fmt=fmt, title=title, relevance_level=relevance_level)


def report_of(
    inputs: ReportInputs,
    output: str | Path,
    *,
    fmt: str | None = None,
    title: str = "ragassay report",
    relevance_level: int | None = None,
) -> ReportFile:
    """Write one report of inputs already read (:func:`make_report` reads them from files): the
    pipeline reads its inputs once and writes the HTML and the Markdown report from the same ones."""
    inputs.relevance_level = relevance_level
    file_format = (
        fmt
        if fmt in ("html", "markdown")
        else ("markdown" if Path(output).suffix.lower() in (".md", ".markdown") else "html")
    )
    joins = input_joins(inputs)  # counted once: for the report's section and for the warnings said
    path = write_report(inputs, output, file_format, title, joins)
    warnings = [w for w in (j.warning(sides) for j, sides in joins) if w]
    return ReportFile(path, file_format, path.stat().st_size, warnings)
