"""The report step: the HTML and Markdown report of every result the steps wrote."""

from __future__ import annotations

from pathlib import Path

from ...data.lines import iter_jsonl
from ...data.origin import Origin, origin_with_records
from ..report import report_of
from ..report_inputs import ReportInputs, load_inputs
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
    read = _read_once(ctx, files)
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
    inputs = _report_inputs(ctx, files, read, qrels if runs else None, runs, people)
    title = p.title or f"ragassay: {p.root.resolve().name}"
    written = report_of(inputs, html, title=title, relevance_level=p.relevance_level)
    report_of(inputs, md, fmt="markdown", title=title, relevance_level=p.relevance_level)
    text = f"{written.path} and {md}"
    done = {"html": str(html), "markdown": str(md), "warnings": written.warnings}
    ctx.state.done("report", digest, 0, text, done)
    return StepResult("report", "ran", text, 0, result=done)


def _read_once(ctx: Context, files: list[Path]) -> dict[Path, bytes]:
    """The bytes of the reported files that no step handed over (its records), read once: the
    state's digest is taken from them, and the report parses the same bytes."""
    read = {f: f.read_bytes() for f in files if f not in ctx.results}
    for f, data in read.items():
        ctx.digests.heard(f, data)
    return read


def _report_inputs(
    ctx: Context,
    files: list[Path],
    read: dict[Path, bytes],
    qrels: Path | None,
    runs: dict[str, Path],
    people: Path | None,
) -> ReportInputs:
    """What the report shows, from the objects the steps before read (each input read once a run,
    then written out twice): the results the steps wrote are handed over, and the record files read
    for the digest (``read``) are parsed from the same bytes."""
    p, loaded = ctx.project, ctx.loaded
    chunks = loaded.chunks(p.chunks) if p.chunks is not None else []
    return load_inputs(
        files,
        qrels=loaded.qrels(qrels) if qrels is not None else None,
        runs={name: loaded.named_run(f, name) for name, f in runs.items()},
        people_qrels=loaded.qrels(people) if people is not None else None,
        chunks=chunks,
        queries=loaded.queries(ctx.queries) if ctx.queries is not None else None,
        answers=loaded.answers(p.answers, {c.id: c for c in chunks} or None) if p.answers is not None else None,
        human=loaded.human_labels(p.human) if p.human is not None else None,
        human_origin=human_origin(ctx, p.human) if p.human is not None else None,
        results=ctx.results,
        read=read,
    )


def human_origin(ctx: Context, human: Path) -> Origin:
    """Who made people's labels, as the report says it (``read_labels_origin``): the sidecar the run
    read at the start, else what the labels' lines say (read only then)."""
    return origin_with_records(ctx.loaded.origin(human), (obj for _, obj in iter_jsonl(human)))
