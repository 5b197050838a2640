"""The judge step (the pool judged once for every run) and the coverage step (each run's support for
the nuggets of the passages judged relevant)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ... import api
from ...data import io as rio
from ...data.origin import read_origin, write_origin
from ...runtime.engine import Estimate
from .context import Context
from .llm_steps import after_generate, estimate_text, estimated, failures_said, llm_skip, prompt_id, run_result
from .pool import pool_run, unjudged
from .results import StepResult, not_selected


def judge_step(ctx: Context, selected: bool) -> StepResult:
    """Judge the pool: one judgments file for every run; pairs judged before are skipped (the
    judge's own output store), so a new run costs only its pairs not in the pool yet."""
    p = ctx.project
    out, judged = ctx.out / "judgments.jsonl", ctx.out / "judged.qrels"
    ctx.judged = judged if judged.exists() else None
    if not selected:  # (its pool, as judged when it last ran, scores the runs)
        return not_selected("judge")
    skip = llm_skip(ctx, "judge") or after_generate(ctx, "judge")
    ctx.judged = None  # a pool judged before may miss the runs' pairs now: scored on it only once judged
    if skip:
        ctx.pooling = skip.status == "estimated"
        return skip
    if p.chunks is None:
        return StepResult("judge", "skipped", "the judge reads the chunks: name them in [data] chunks")
    made = pool_run(ctx)
    queries = ctx.queries
    if made is None or queries is None:
        return StepResult("judge", "skipped", "no runs to pool" if ctx.queries is not None else
                          "no queries yet (generate writes them)")
    run, deepest, pairs, members = made
    pooled = sorted((q, c) for q, cs in run.top_ids(deepest).items() for c in cs)
    digest = ctx.digests.of(queries, p.chunks, pool=pooled, model=ctx.llm.get("model"),
                            base_url=ctx.llm.get("base_url"), prompt=prompt_id(ctx, "judge"))
    kept = ctx.state.fresh("judge", digest, [out, judged])
    runs = len(set(ctx.runs) | set(ctx.memory_runs))
    pool_of = f"the pool of {runs} run's" if runs == 1 else f"the pool of {runs} runs'"
    if kept:  # every pair of the pool was judged before this run, none now
        ctx.judged = judged
        ctx.unjudged = unjudged(pooled, judged)
        said = kept.get("result") or {}
        errors = f", {said['errors']} error{'s' if said['errors'] != 1 else ''}" if said.get("errors") else ""
        text = f"{pool_of} top {p.depth}: {len(pooled)} pairs, all {len(pooled)} judged before, 0 now" + errors
        return StepResult("judge", "up to date", text, kept["exit_code"], result=kept.get("result"))
    args: dict[str, Any] = dict(output=out, depth=deepest, qrels_out=judged, prompt=p.judge_prompt,
                                **ctx.llm_args())
    if ctx.dry_run:
        est = estimated(api.judge(ctx.loaded.named_queries(queries), ctx.loaded.chunks_by_id(p.chunks), run,
                                  dry_run=True, **args))
        ctx.judging = est.calls > 0
        ctx.pooling = True
        return StepResult("judge", "estimated", f"{pool_of} top {p.depth}: {pairs} pairs; "
                          + estimate_text(est), 0, est.to_dict())
    pool_path = ctx.out / "pool.txt"  # what was judged, for the user to read (the judge is handed the run itself)
    rio.write_run(pool_path, run)
    run.source = str(pool_path)  # (a message about the pool names the file written)
    done = run_result(api.judge(ctx.loaded.named_queries(queries), ctx.loaded.chunks_by_id(p.chunks), run, **args))
    if judged.exists():  # the pool is the project's runs, each to the project's depth (not the file pool.txt)
        write_origin(judged, read_origin(judged).replace(pool=members))
    ctx.spend(done)
    s = done.summary()
    text = (f"{pool_of} top {p.depth}: {s.pairs} pairs, {s.already_done} judged before, "
            f"{max((s.judged or 0) - (s.already_done or 0), 0)} now, {s.errors} error{'s' if s.errors != 1 else ''}") \
        + failures_said(done.relevance)
    ctx.judged = judged
    ctx.unjudged = unjudged(pooled, judged)
    ctx.state.done("judge", digest, done.exit_code, text, done.to_dict())
    return StepResult("judge", "ran", text, done.exit_code, result=done.to_dict())


def coverage_step(ctx: Context, selected: bool) -> StepResult:
    p = ctx.project
    if not p.coverage:
        return StepResult("coverage", "skipped", "off ([judge] coverage = true turns it on)")
    if not selected:
        return not_selected("coverage")
    skip = llm_skip(ctx, "coverage") or after_generate(ctx, "coverage")
    if skip:
        return skip
    runs = {**ctx.runs, **ctx.memory_runs}  # a dry run's retrievals that will change: in memory
    if ctx.dry_run and ctx.judging:  # its nuggets come from the passages judged relevant: a ceiling is known
        asked = len(ctx.loaded.queries(ctx.queries)) if ctx.queries is not None else 0
        most = asked * (2 + len(runs))
        return StepResult("coverage", "estimated", f"after judge: at most {most} calls (nuggets and their importance "
                          f"for each of {asked} queries, then each of {len(runs)} runs' support), fewer where the "
                          "judge finds no relevant passage (a dry run once the judgments are written says)", 0,
                          {"calls": most, "at_most": True})
    queries = ctx.queries
    if queries is None or not runs or p.chunks is None:
        return StepResult("coverage", "skipped", "needs queries, chunks and runs")
    out, judgments = ctx.out / "coverage.jsonl", ctx.out / "judgments.jsonl"
    said: list[str] = []
    code, estimates, usage = 0, list[Estimate](), list[str]()
    for name, run in runs.items():
        digest = ctx.digests.of(run if isinstance(run, Path) else None, queries, p.chunks, ctx.judged,
                                depth=p.depth, model=ctx.llm.get("model"), base_url=ctx.llm.get("base_url"),
                                prompt=prompt_id(ctx, "judge"))
        kept = ctx.state.fresh(f"coverage:{name}", digest, [out]) if isinstance(run, Path) else None
        if kept:
            said.append(f"{name} up to date")
            code = max(code, kept["exit_code"])
            continue
        skip = llm_skip(ctx, "coverage")
        if skip:  # the run's ceiling reached by the runs before this one
            said.append(f"{name}: {skip.text}")
            code = max(code, skip.exit_code)
            continue
        args: dict[str, Any] = dict(output=judgments, depth=p.depth, coverage_out=out, prompt=p.judge_prompt,
                                    **ctx.llm_args())
        if ctx.dry_run:
            est = estimated(api.judge(ctx.loaded.named_queries(queries), ctx.loaded.chunks_by_id(p.chunks),
                                      _run_of(ctx, run), dry_run=True, **args))
            estimates.append(est)
            said.append(f"{name}: {estimate_text(est)}")
            continue
        done = run_result(api.judge(ctx.loaded.named_queries(queries), ctx.loaded.chunks_by_id(p.chunks),
                                    _run_of(ctx, run), **args))
        ctx.spend(done)
        code = max(code, done.exit_code)
        usage += [f"{name}: {done.usage_text}"] if done.usage_text else []
        ctx.state.done(f"coverage:{name}", digest, done.exit_code, "")
        said.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in (done.summary().coverage or {}).items())
                    + (failures_said(done.coverage) if done.coverage is not None else ""))
    estimate = None
    if len(estimates) > 1:  # each run's estimate counts the nuggets the runs share: a ceiling
        said.append("the nuggets of a query are made once for every run: fewer calls than the sum")
    if estimates:
        total = estimates[0]
        for e in estimates[1:]:
            total = total.add(e)
        estimate = total.to_dict()
    ran = len(said) - sum(s.endswith(" up to date") for s in said)
    status = "up to date" if not ran else "estimated" if ctx.dry_run else "ran"
    return StepResult("coverage", status, "; ".join(said), code, estimate,
                      {"usage_text": "; ".join(usage)} if usage else None)


def _run_of(ctx: Context, run: Any) -> Any:
    """A run as the judge is handed it: a run file read once for the whole run of the pipeline, a dry
    run's retrieval as it is."""
    return ctx.loaded.run(run) if isinstance(run, Path) else run
