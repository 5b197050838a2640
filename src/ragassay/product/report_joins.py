"""How the report's files meet by id: each pair of inputs joined and counted, the counts shown in a
section and the partial joins said as warnings."""

from __future__ import annotations

import numpy as np

from ..data.joins import Join
from ..data.text_match import answers_to_queries
from .report_inputs import ReportInputs
from .report_model import Section, Table


def input_joins(inp: ReportInputs) -> list:
    """How the report's files meet by id (each run with the qrels, the answers and checks with the
    first run, the judgments with the qrels, people's answer labels with the checks), each counted
    with the sides whose unmatched ids deserve a warning (a run over every query answered in part is
    not one); a pair with no id in common is an error naming both files."""
    joins = _qrels_joins(inp) + _page_joins(inp) + _answer_joins(inp)
    for j, _ in joins:
        j.require_overlap()
    return joins


def _qrels_joins(inp: ReportInputs) -> list[tuple[Join, tuple[str, ...]]]:
    """Each run, the second qrels and the judgments met with the qrels by query id."""
    joins: list[tuple[Join, tuple[str, ...]]] = []
    if inp.qrels is None:
        return joins
    for r in inp.runs:
        joins.append(
            (
                Join.of(
                    "query ids",
                    f"the run {r.name}",
                    r.queries,
                    "the qrels",
                    inp.qrels.queries,
                    r.source,
                    inp.qrels.source,
                ),
                ("left", "right"),
            )
        )
    if inp.people_qrels is not None:
        joins.append(
            (
                Join.of(
                    "query ids",
                    "the second qrels",
                    inp.people_qrels.queries,
                    "the qrels",
                    inp.qrels.queries,
                    inp.people_qrels.source,
                    inp.qrels.source,
                ),
                (),
            )
        )
    if inp.judgments:
        joins.append(
            (
                Join.of(
                    "query ids",
                    "the judgments",
                    {j.query_id for j in inp.judgments},
                    "the qrels",
                    inp.qrels.queries,
                    None,
                    inp.qrels.source,
                ),
                ("left",),
            )
        )
    return joins


def _page_joins(inp: ReportInputs) -> list[tuple[Join, tuple[str, ...]]]:
    """The runs met with the texts the query pages show: the questions and the chunks."""
    joins: list[tuple[Join, tuple[str, ...]]] = []
    if inp.queries and inp.runs:  # the query pages' questions
        asked = {q for r in inp.runs for q in r.queries}
        joins.append((Join.of("query ids", "the runs", asked, "the queries", list(inp.queries), None, None), ("left",)))
    if inp.chunks and inp.runs:  # the chunk texts the pages show beside each run's results
        retrieved = {d.decode("utf-8") for r in inp.runs for d in np.unique(r.doc_ids).tolist()}
        joins.append(
            (
                Join.of("chunk ids", "the runs' results", retrieved, "the chunks", list(inp.chunks), None, None),
                ("left",),
            )
        )
    return joins


def _answer_joins(inp: ReportInputs) -> list[tuple[Join, tuple[str, ...]]]:
    """The answers (or their checks) met with the first run, and people's answer labels with the checks."""
    joins: list[tuple[Join, tuple[str, ...]]] = []
    answered = _answered_queries(inp)
    if answered and inp.runs:
        joins.append(
            (
                Join.of(
                    "query ids",
                    "the checked answers" if inp.checks else "the answers",
                    answered,
                    f"the run {inp.runs[0].name}",
                    inp.runs[0].queries,
                    None,
                    inp.runs[0].source,
                ),
                ("left",),
            )
        )
    if inp.human_labels and inp.checks:
        joins.append(
            (
                Join.of(
                    "answer ids",
                    "the checks",
                    {c.id for c in inp.checks},
                    "the answer labels",
                    inp.human_labels,
                    None,
                    None,
                ),
                (),
            )
        )  # people label a sample: counts only
    return joins


def _answered_queries(inp: ReportInputs) -> set[str]:
    """The query ids the checks (else the answers) answer; answers under other ids than the queries'
    are met by question text, as run meets them."""
    answered = {c.id for c in inp.checks} or set(inp.answers)
    if answered and inp.runs and inp.answers and inp.queries:
        by_text = answers_to_queries({a.id: a.question for a in inp.answers.values()}, inp.queries)
        if by_text is not None:
            answered = {by_text.pairs.get(a, a) for a in answered}
    return answered


def joins_section(joins: list) -> list[Section]:
    """The counts of every join, so a reader sees what met before reading a number."""
    if not joins:
        return []
    rows = [[j.what, j.left.role, len(j.left.ids), j.right.role, len(j.right.ids), j.matched] for j, _ in joins]
    warnings = [w for w in (j.warning(sides) for j, sides in joins) if w]
    note = "How the files met by id: each side's count and how many met." + (
        " " + " ".join(w[0].upper() + w[1:] + "." for w in warnings) if warnings else ""
    )
    return [Section("Inputs: what met", note, tables=[Table(["ids", "side", "ids", "other side", "ids", "met"], rows)])]
