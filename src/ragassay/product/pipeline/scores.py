"""The evaluate and compare steps: every run scored on the judged pool (else people's qrels), each
score said with what it rests on, and scores on a pool the judge did not finish marked partial."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...metrics.compare import compare
from ...metrics.evaluate import evaluate
from ...metrics.rests_on import rests_on_brief
from ..formatting import fmt_p
from .context import Context
from .files import read_json, sidecar, write_json
from .results import StepResult, not_selected


def _scored(ctx: Context, name: str) -> StepResult | None:
    """Why a metrics step cannot run (no qrels, no runs), or None. In a dry run the judge step
    estimated writes the pool's qrels, and the retrievers after generate write runs."""
    if ctx.metric_qrels() is None and not ctx.pooling:
        return StepResult(
            name,
            "skipped",
            "nothing to score on: no judged pool (an LLM judges it) and no people's qrels ([data] qrels)",
        )
    if not ctx.runs and not ctx.memory_runs and not (ctx.dry_run and ctx.generating and ctx.project.retrievers):
        return StepResult(name, "skipped", "no runs")
    return None


def _said_scores(name: str, result: Mapping[str, Any] | None) -> str:
    """ "bm25: ndcg@10 0.7935, map 0.6800 [relevant = grade ≥ 2; POOL OF THIS RUN ALONE ...]" """
    r = result or {}
    brief = rests_on_brief(r.get("rests_on"))
    return (
        f"{name}: "
        + ", ".join(f"{m} {v:.4f}" for m, v in (r.get("aggregate") or {}).items())
        + (f" [{brief}]" if brief else "")
    )


def _relevant_said(cmp: Any, metric: str) -> str:
    """ ", relevant = grade ≥ 2" when the metric a compare line shows counts relevance from a grade."""
    brief = rests_on_brief({"relevance": (cmp.rests_on or {}).get("relevance")}, only=[metric])
    return f", {brief}" if brief else ""


def scored_on(ctx: Context) -> str:
    """What a dry run's metrics steps will score on."""
    qrels = ctx.metric_qrels()
    return "after judge, on the judged pool" if ctx.pooling else f"on {qrels.name}" if qrels is not None else ""


def evaluate_step(ctx: Context, selected: bool) -> StepResult:
    if not selected:
        return not_selected("evaluate")
    cannot = _scored(ctx, "evaluate")
    if cannot or ctx.dry_run:
        runs = len(set(ctx.runs) | set(ctx.memory_runs) | (set(ctx.project.retrievers) if ctx.generating else set()))
        return cannot or StepResult("evaluate", "estimated", f"{runs} runs, {scored_on(ctx)}, offline")
    qrels = ctx.metric_qrels()
    assert qrels is not None  # (only a dry run scores on a pool not judged yet)
    said, results = [], {}  # each run's result as 'ragassay evaluate --format json' prints it
    for name, run in ctx.runs.items():
        path = ctx.out / "evaluate" / f"{name}.json"
        digest = ctx.digests.of(
            qrels,
            sidecar(qrels),
            run,
            metrics=ctx.project.metrics,
            name=name,
            relevance_level=ctx.project.relevance_level,
        )
        if ctx.state.fresh(f"evaluate:{name}", digest, [path]):
            results[name] = read_json(ctx, path)
            continue
        ev = evaluate(
            ctx.loaded.qrels(qrels),
            ctx.loaded.run(run),
            ctx.project.metrics,
            missing="zero",
            relevance_level=ctx.project.relevance_level,
        )
        ev.run_name = name  # the project's name for it, as compare, the report, track and history say it
        path.parent.mkdir(parents=True, exist_ok=True)
        results[name] = write_json(ctx, path, ev.to_dict())
        ctx.state.done(f"evaluate:{name}", digest, 0, "")
        said.append(_said_scores(name, results[name]))
    partial = partial_pool(ctx, qrels)
    shown = said or [_said_scores(name, r) for name, r in results.items()]  # up to date: the kept results, said alike
    return StepResult(
        "evaluate", "ran" if said else "up to date", "; ".join(shown) + f" (on {qrels.name})" + partial, result=results
    )


def partial_pool(ctx: Context, qrels: Path | None) -> str:
    """What the metrics steps add when the runs are scored on a pool the judge did not finish."""
    if ctx.unjudged is None or qrels is None or qrels != ctx.pool_qrels():
        return ""
    missing, pairs = ctx.unjudged
    return (
        f"; PARTIAL: {missing} of the pool's {pairs} pairs are not judged yet, so these scores are of part of "
        "it (a rerun finishes the judge)"
    )


def compare_step(ctx: Context, selected: bool) -> StepResult:
    if not selected:
        return not_selected("compare")
    cannot = _scored(ctx, "compare")
    if cannot:
        return cannot
    if len(set(ctx.runs) | set(ctx.memory_runs) | (set(ctx.project.retrievers) if ctx.generating else set())) < 2:
        return StepResult("compare", "skipped", "one run: nothing to compare it with")
    if ctx.dry_run:
        return StepResult("compare", "estimated", f"{scored_on(ctx)}, offline")
    qrels, path = ctx.metric_qrels(), ctx.out / "compare.json"
    assert qrels is not None  # (only a dry run scores on a pool not judged yet)
    digest = ctx.digests.of(
        qrels,
        sidecar(qrels),
        *ctx.runs.values(),
        names=list(ctx.runs),
        metrics=ctx.project.metrics,
        relevance_level=ctx.project.relevance_level,
    )
    kept = ctx.state.fresh("compare", digest, [path])
    if kept:
        return StepResult("compare", "up to date", kept["text"] + partial_pool(ctx, qrels), result=read_json(ctx, path))
    cmp = compare(
        ctx.loaded.qrels(qrels),
        {name: ctx.loaded.run(f) for name, f in ctx.runs.items()},  # (named by the keys, as a file was)
        ctx.project.metrics,
        relevance_level=ctx.project.relevance_level,
    )
    written = write_json(ctx, path, cmp.to_dict())
    first = ctx.project.metrics[0]
    text = (
        "; ".join(
            f"{t.run} - {cmp.runs[0]} {t.metric} {t.diff:+.4f} (p {_p_said(t.p_randomization)}"
            + (f", detects {t.mde:.3f} at 80% power" if t.mde is not None else "")
            + ")"
            for t in cmp.tests
            if t.metric == first
        )
        + f" (on {qrels.name}{_relevant_said(cmp, first)})"
    )
    ctx.state.done("compare", digest, 0, text)
    return StepResult("compare", "ran", text + partial_pool(ctx, qrels), result=written)


def _p_said(p: float) -> str:
    """``= 0.042`` or ``< 0.001``: a p-value is never printed as 0."""
    said = fmt_p(p)
    return said if said.startswith("<") else f"= {said}"
