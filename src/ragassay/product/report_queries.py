"""Every query in the report: the sortable table of queries (worst first) and, per query, what its page
shows (its question, gold chunks, each run's top chunks with every grader's grade, the coverage, the
reference and the system's answer with its check label), as ids and clipped texts the page's script
draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..data.records import Check
from ..metrics.labels import NO_VERDICT_YET
from . import svg
from .report_inputs import ReportInputs
from .report_model import Section, Table
from .report_stages import judge_grades
from .report_words import clip, labelled_by

TOP_SHOWN = 10  # chunks per run on a query's page
TEXT_CLIP = 600  # characters of a chunk's text kept for a query's page


def page_labels(inp: ReportInputs) -> dict[str, str]:
    """The names the query pages give each file of labels (the script reads them: it names nothing itself)."""
    out = {
        "qrels": labelled_by(inp.qrels.origin if inp.qrels is not None else None),
        "answers": labelled_by(inp.human_origin),
    }
    if inp.people_qrels is not None:
        out["second"] = labelled_by(inp.people_qrels.origin)
    return out


# ------------------------------------------------------------------------------- the table


def queries_section(inp: ReportInputs, evals: list, per: dict, pages: dict) -> list[Section]:
    """One row per query with a page, worst first by the first run's ndcg@10, with the answer's label and
    the coverage when they were given, and a strip plot of every run's ndcg@10 per query."""
    if not pages:
        return []
    runs = [r.name for r in inp.runs]
    labels = _answer_labels(inp)
    cov = _first_run_coverage(inp, runs)
    headers = ["query", "question"] + [f"ndcg@10 {r}" for r in runs]
    if len(runs) == 2:
        headers.append(f"{runs[1]} - {runs[0]}")
    if labels:
        headers.append("answer")
    if cov:
        headers.append("coverage")
    order = sorted(pages, key=lambda q: (per.get(q, {}).get(runs[0], {}).get("ndcg@10", 2.0) if runs else 0, q))
    rows = [_query_row(q, pages[q], runs, per, labels, cov) for q in order]
    plots = []
    if evals:
        plots.append(
            svg.strip_plot(
                [
                    (r.name, [(v, q) for q, v in zip(ev.queries, ev.values["ndcg@10"].tolist())])
                    for r, ev in zip(inp.runs, evals)
                ],
                "ndcg@10 per query (click a dot to open the query)",
            )
        )
    graders = [labelled_by(q.origin) for q in (inp.qrels, inp.people_qrels) if q is not None] + ["the judge"]
    note = (
        f"{len(rows)} queries{_outside_runs(inp, order)}, worst first. Click a row or a dot to open the query: its "
        f"chunks as graded by {', by '.join(graders)}, the answer and its label. Click a column to sort; type to "
        "filter."
    )
    return [Section("Queries", note, plots, [Table(headers, rows, queries=list(order), filter=True)])]


def _answer_labels(inp: ReportInputs) -> dict[str, str]:
    """Each checked answer's label: "waiting" when no verdict could be asked yet, "error" when the check failed."""
    return {c.id: c.label or ("waiting" if NO_VERDICT_YET in (c.error or "") else "error") for c in inp.checks}


def _first_run_coverage(inp: ReportInputs, runs: list[str]) -> dict[str, str]:
    """Each query's coverage as measured for the first run (or for a run the records do not name)."""
    cov: dict[str, str] = {}
    for c in inp.coverage:
        if not runs or c.run in (None, runs[0]):
            cov[c.query_id] = c.coverage or "error"
    return cov


def _query_row(q: str, page: dict, runs: list[str], per: dict, labels: dict[str, str], cov: dict[str, str]) -> list:
    """One query's row: its id, clipped question, each run's ndcg@10, the difference of two runs, its
    answer's label and its coverage (the last three only when the table has those columns)."""
    vals = [per.get(q, {}).get(r, {}).get("ndcg@10") for r in runs]
    row = [q, clip(page.get("question") or "", 120)] + vals
    if len(runs) == 2:
        row.append(None if None in vals else vals[1] - vals[0])
    if labels:
        row.append(labels.get(q, ""))
    if cov:
        row.append(cov.get(q, ""))
    return row


def _outside_runs(inp: ReportInputs, order: list[str]) -> str:
    """How many of the table's queries only other inputs name (none of the runs answered them), with a few."""
    in_runs = {q for r in inp.runs for q in r.queries}
    outside = [q for q in order if in_runs and q not in in_runs]
    if not outside:
        return ""
    return (
        f" ({len(order) - len(outside)} in the runs, {len(outside)} only in other inputs: "
        f"{', '.join(outside[:3])}{', ...' if len(outside) > 3 else ''})"
    )


# ------------------------------------------------------------------------------- the pages


def query_pages(inp: ReportInputs, per: dict) -> dict[str, Any]:
    """Per query, what its page shows (only ids and clipped texts; the page is drawn by the script)."""
    gold = inp.qrels.to_dict() if inp.qrels is not None else {}
    second = inp.people_qrels.to_dict() if inp.people_qrels is not None else None
    ranked = {r.name: r.ranked() for r in inp.runs}
    if not inp.runs and not gold and not second and not inp.answers and not inp.checks:
        return {}
    # the queries file (or a generated set) gives texts, not pages: a page is for a query with results,
    # judgments, an answer or coverage
    ids = (
        set(gold)
        | set(second or {})
        | {q for rk in ranked.values() for q in rk}
        | set(inp.answers)
        | {c.id for c in inp.checks}
        | {c.query_id for c in inp.coverage}
    )
    sources = _PageSources(
        inp,
        per,
        gold,
        second,
        judge_grades(inp),
        ranked,
        {c.id: c for c in inp.checks},
        {q.id: q for q in inp.questions},
        _coverage_by_query(inp),
    )
    return {q: sources.page(q) for q in sorted(ids)}


def _coverage_by_query(inp: ReportInputs) -> dict[str, dict]:
    """Per query and run, the coverage label, its error and the nuggets with their support."""
    coverage: dict[str, dict] = {}
    for c in inp.coverage:
        coverage.setdefault(c.query_id, {})[c.run or "run"] = {
            "label": c.coverage or "error",
            "error": c.error,
            "nuggets": [[n.text, n.vital, n.support] for n in c.nuggets],
        }
    return coverage


@dataclass
class _PageSources:
    """What every query's page is drawn from, gathered once for all the pages."""

    inp: ReportInputs
    per: dict  # query -> run -> the page's metrics
    gold: dict[str, dict[str, int]]  # the qrels
    second: dict[str, dict[str, int]] | None  # the second qrels, when given
    judged: dict[tuple[str, str], int]  # the judge's grades
    ranked: dict[str, dict[str, list]]  # run -> query -> ranked (chunk, score)
    checks: dict[str, Check]
    questions: dict[str, Any]  # a generated set's questions by id
    coverage: dict[str, dict]

    def page(self, q: str) -> dict[str, Any]:
        """One query's page, its keys in the order the script reads them."""
        a = self.inp.answers.get(q)
        page: dict[str, Any] = {"question": self.inp.queries.get(q) or (a.question if a else None)}
        page.update(self._grades(q))
        if q in self.per:
            page["metrics"] = self.per[q]
        if q in self.coverage:
            page["coverage"] = self.coverage[q]
        page.update(self._answer(q, a))
        if q in self.inp.human_labels:
            page["human_label"] = self.inp.human_labels[q]
        return page

    def _grades(self, q: str) -> dict[str, Any]:
        """The query's gold chunks (relevant first) and each run's top chunks with every grader's grade."""
        out: dict[str, Any] = {}
        if self.gold.get(q):
            out["gold"] = _relevant_first(self.gold[q])
        if self.second and self.second.get(q):
            out["second"] = _relevant_first(self.second[q])
        out["runs"] = {
            name: [self._graded(q, d) for d, _ in rk.get(q, [])[:TOP_SHOWN]] for name, rk in self.ranked.items()
        }
        return out

    def _graded(self, q: str, d: str) -> list:
        """A retrieved chunk with the qrels' grade, the judge's and (when given) the second qrels'."""
        return [d, self.gold.get(q, {}).get(d), self.judged.get((q, d))] + (
            [self.second.get(q, {}).get(d)] if self.second is not None else []
        )

    def _answer(self, q: str, a: Any) -> dict[str, Any]:
        """The reference and the system's answer (or a generated question's answer) and the check's verdict."""
        out: dict[str, Any] = {}
        if a is not None:
            out["reference"] = a.reference if isinstance(a.reference, str) else " | ".join(a.reference or [])
            out["response"] = a.response
        elif q in self.questions:
            out["reference"] = self.questions[q].answer
        if q in self.checks:
            c = self.checks[q]
            shown = {
                "label": c.label,
                "grounded": c.grounded,
                "rationale": c.rationale,
                "decided_by": c.decided_by,
                "unsupported_claims": c.unsupported_claims,
                "fault": c.fault,
                "error": c.error,
            }
            out["check"] = {k: v for k, v in shown.items() if v not in (None, [], "")}
        return out


def _relevant_first(grades: dict[str, int]) -> list[list]:
    """A query's graded chunks, the most relevant first (ties by chunk id)."""
    return sorted(([d, g] for d, g in grades.items()), key=lambda x: (-x[1], x[0]))


def chunk_texts(inp: ReportInputs, pages: dict[str, Any]) -> dict[str, str]:
    """The clipped text of every chunk a page shows, so the pages carry each text once."""
    wanted = {d for p in pages.values() for d, _ in p.get("gold", []) + p.get("second", [])}
    wanted |= {row[0] for p in pages.values() for rows in p["runs"].values() for row in rows}
    return {d: clip(inp.chunks[d].text, TEXT_CLIP) for d in sorted(wanted) if d in inp.chunks}
