"""The report step: the HTML and Markdown report of every result the steps wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..report import make_report
from .context import Context
from .files import checks_file, sidecar
from .results import StepResult, not_selected


def _reported_files(ctx: Context) -> list[Path]:
    """The results the steps wrote that the report shows (those not empty): with two runs or more,
    their comparison, else the one run's scores."""
    p, out = ctx.project, ctx.out
    evaluated = sorted((out / "evaluate").glob("*.json")) if len(ctx.runs) < 2 else []
    agreed = [out / f"agree_{name}.json" for name in ("second", "pool")] if p.qrels is not None else []
    return [
        f
        for f in (
            out / "compare.json",
            out / "check.json",
            checks_file(ctx),
            out / "judgments.jsonl",
            out / "coverage.jsonl",
            *agreed,
            out / "questions.jsonl",
            out / "rejects.jsonl",
            *evaluated,
        )
        if f.exists() and f.stat().st_size
    ]


def report_step(ctx: Context, selected: bool) -> StepResult:
    if not selected:
        return not_selected("report")
    if ctx.dry_run:
        return StepResult("report", "estimated", "offline")
    p, out = ctx.project, ctx.out
    files = _reported_files(ctx)
    qrels = ctx.metric_qrels()
    runs = dict(ctx.runs) if qrels is not None else {}  # named as the project names them, not by their TREC tags
    people = p.qrels if runs and p.qrels is not None and qrels != p.qrels else None  # beside the judge's pool
    if not files and not runs:
        return StepResult("report", "skipped", "nothing to report yet")
    html, md = out / "report.html", out / "report.md"
    digest = ctx.digests.of(
        *files,
        qrels,
        sidecar(qrels),
        people,
        *runs.values(),
        p.chunks,
        ctx.queries,
        p.answers,
        p.human,
        title=p.title,
        names=list(runs),
        relevance_level=p.relevance_level,
    )
    kept = ctx.state.fresh("report", digest, [html, md])
    if kept:  # said with this run's paths (the kept ones were relative to where that run was started)
        return StepResult(
            "report",
            "up to date",
            f"{html} and {md}",
            result={**(kept.get("result") or {}), "html": str(html), "markdown": str(md)},
        )
    common: dict[str, Any] = dict(
        qrels=qrels if runs else None,
        runs=runs,
        people_qrels=people,
        chunks=p.chunks,
        queries=ctx.queries,
        answers=p.answers,
        human=p.human,
        title=p.title or f"ragassay: {p.root.resolve().name}",
        relevance_level=p.relevance_level,
    )
    written = make_report(files, html, **common)
    make_report(files, md, fmt="markdown", **common)
    text = f"{written.path} and {md}"
    done = {"html": str(html), "markdown": str(md), "warnings": written.warnings}
    ctx.state.done("report", digest, 0, text, done)
    return StepResult("report", "ran", text, 0, result=done)
