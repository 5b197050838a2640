"""The judge step (the pool judged once for every run) and the coverage step (each run's support for
the nuggets of the passages judged relevant)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import api
from ...data import io as rio
from ...data.origin import read_origin, write_origin
from ...runtime.engine import Estimate
from ...stages.judge import JudgeOptions
from .context import Context
from .llm_steps import after_generate, estimate_text, estimated, failures_said, llm_skip, prompt_id, run_result
from .pool import pool_run, unjudged
from .results import StepResult, not_selected


def judge_step(ctx: Context, selected: bool) -> StepResult:
    """Judge the pool: one judgments file for every run; pairs judged before are skipped (the
    judge's own output store), so a new run costs only its pairs not in the pool yet."""
    judged = ctx.out / "judged.qrels"
    ctx.judged = judged if judged.exists() else None
    if not selected:  # (its pool, as judged when it last ran, scores the runs)
        return not_selected("judge")
    skip = llm_skip(ctx, "judge") or after_generate(ctx, "judge")
    ctx.judged = None  # a pool judged before may miss the runs' pairs now: scored on it only once judged
    if skip:
        ctx.pooling = skip.status == "estimated"
        return skip
    if ctx.project.chunks is None:
        return StepResult("judge", "skipped", "the judge reads the chunks: name them in [data] chunks")
    made = pool_run(ctx)
    if made is None or ctx.queries is None:
        return StepResult(
            "judge",
            "skipped",
            "no runs to pool" if ctx.queries is not None else "no queries yet (generate writes them)",
        )
    return _judge_pool(ctx, _Pool(*made))


@dataclass
class _Pool:
    """The pool as a run, its deepest query's pool, the pairs in all and the runs it was made from."""

    run: Any
    deepest: int
    pairs: int
    members: tuple

    def pooled(self) -> list[tuple[str, str]]:
        """Every (query, chunk) pair of the pool, sorted (what the judge step's digest and the
        count of pairs not judged yet are made of)."""
        return sorted((q, c) for q, cs in self.run.top_ids(self.deepest).items() for c in cs)


def _judge_pool(ctx: Context, made: _Pool) -> StepResult:
    """The pool judged (or estimated in a dry run), up to date when every pair was judged before."""
    p = ctx.project
    assert ctx.queries is not None and p.chunks is not None  # (said by judge_step otherwise)
    out, judged = ctx.out / "judgments.jsonl", ctx.out / "judged.qrels"
    pooled = made.pooled()
    digest = ctx.digests.of(
        ctx.queries,
        p.chunks,
        pool=pooled,
        model=ctx.llm.get("model"),
        base_url=ctx.llm.get("base_url"),
        prompt=prompt_id(ctx, "judge"),
    )
    kept = ctx.state.fresh("judge", digest, [out, judged])
    runs = len(set(ctx.runs) | set(ctx.memory_runs))
    pool_of = f"the pool of {runs} run's top {p.depth}" if runs == 1 else f"the pool of {runs} runs' top {p.depth}"
    if kept:  # every pair of the pool was judged before this run, none now
        ctx.judged = judged
        ctx.unjudged = unjudged(ctx, pooled, judged)
        said = kept.get("result") or {}
        errors = f", {said['errors']} error{'s' if said['errors'] != 1 else ''}" if said.get("errors") else ""
        text = f"{pool_of}: {len(pooled)} pairs, all {len(pooled)} judged before, 0 now" + errors
        return StepResult("judge", "up to date", text, kept["exit_code"], result=kept.get("result"))
    args: dict[str, Any] = dict(
        output=out,
        qrels_out=judged,
        **ctx.llm_args(),
        options=JudgeOptions(depth=made.deepest, prompt=p.judge_prompt, quiet=True),
    )
    queries, chunks = ctx.loaded.named_queries(ctx.queries), ctx.loaded.chunks_by_id(p.chunks)
    if ctx.dry_run:
        est = estimated(api.judge(queries, chunks, made.run, dry_run=True, **args))
        ctx.judging = est.calls > 0
        ctx.pooling = True
        return StepResult(
            "judge", "estimated", f"{pool_of}: {made.pairs} pairs; " + estimate_text(est), 0, est.to_dict()
        )
    pool_path = ctx.out / "pool.txt"  # what was judged, for the user to read (the judge is handed the run itself)
    rio.write_run(pool_path, made.run)
    made.run.source = str(pool_path)  # (a message about the pool names the file written)
    done = run_result(api.judge(queries, chunks, made.run, **args))
    if judged.exists():  # the pool is the project's runs, each to the project's depth (not the file pool.txt)
        write_origin(judged, read_origin(judged).replace(pool=made.members))
    ctx.spend(done)
    s = done.summary()
    text = (
        f"{pool_of}: {s.pairs} pairs, {s.already_done} judged before, "
        f"{max((s.judged or 0) - (s.already_done or 0), 0)} now, {s.errors} error{'s' if s.errors != 1 else ''}"
    ) + failures_said(done.relevance)
    ctx.judged = judged
    ctx.unjudged = unjudged(ctx, pooled, judged)
    ctx.state.done("judge", digest, done.exit_code, text, done.to_dict())
    return StepResult("judge", "ran", text, done.exit_code, result=done.to_dict())


def coverage_step(ctx: Context, selected: bool) -> StepResult:
    """Each run's support for the nuggets of the passages judged relevant, run by run (a run whose
    inputs did not change is up to date); a dry run adds the runs' estimates into one."""
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
        return _coverage_ceiling(ctx, len(runs))
    if ctx.queries is None or not runs or p.chunks is None:
        return StepResult("coverage", "skipped", "needs queries, chunks and runs")
    covered = _Covered()
    for name, run in runs.items():
        _cover(ctx, name, run, covered)
    return covered.result(ctx.dry_run)


def _coverage_ceiling(ctx: Context, runs: int) -> StepResult:
    """A dry run's coverage when the judge will run first: at most so many calls."""
    asked = len(ctx.loaded.queries(ctx.queries)) if ctx.queries is not None else 0
    most = asked * (2 + runs)
    return StepResult(
        "coverage",
        "estimated",
        f"after judge: at most {most} calls (nuggets and their importance "
        f"for each of {asked} queries, then each of {runs} runs' support), fewer where the "
        "judge finds no relevant passage (a dry run once the judgments are written says)",
        0,
        {"calls": most, "at_most": True},
    )


@dataclass
class _Covered:
    """What the coverage step said of each run, its exit code, a dry run's estimates and the usage."""

    said: list[str] = field(default_factory=list)
    code: int = 0
    estimates: list[Estimate] = field(default_factory=list)
    usage: list[str] = field(default_factory=list)

    def result(self, dry_run: bool) -> StepResult:
        estimate = None
        if len(self.estimates) > 1:  # each run's estimate counts the nuggets the runs share: a ceiling
            self.said.append("the nuggets of a query are made once for every run: fewer calls than the sum")
        if self.estimates:
            total = self.estimates[0]
            for e in self.estimates[1:]:
                total = total.add(e)
            estimate = total.to_dict()
        ran = len(self.said) - sum(s.endswith(" up to date") for s in self.said)
        status = "up to date" if not ran else "estimated" if dry_run else "ran"
        return StepResult(
            "coverage",
            status,
            "; ".join(self.said),
            self.code,
            estimate,
            {"usage_text": "; ".join(self.usage)} if self.usage else None,
        )


def _cover(ctx: Context, name: str, run: Any, covered: _Covered) -> None:
    """One run's coverage: kept when up to date, skipped at the run's ceiling, estimated or judged."""
    p = ctx.project
    assert ctx.queries is not None and p.chunks is not None  # (said by coverage_step otherwise)
    out, judgments = ctx.out / "coverage.jsonl", ctx.out / "judgments.jsonl"
    digest = ctx.digests.of(
        run if isinstance(run, Path) else None,
        ctx.queries,
        p.chunks,
        ctx.judged,
        depth=p.depth,
        model=ctx.llm.get("model"),
        base_url=ctx.llm.get("base_url"),
        prompt=prompt_id(ctx, "judge"),
    )
    kept = ctx.state.fresh(f"coverage:{name}", digest, [out]) if isinstance(run, Path) else None
    if kept:
        covered.said.append(f"{name} up to date")
        covered.code = max(covered.code, kept["exit_code"])
        return
    skip = llm_skip(ctx, "coverage")
    if skip:  # the run's ceiling reached by the runs before this one
        covered.said.append(f"{name}: {skip.text}")
        covered.code = max(covered.code, skip.exit_code)
        return
    args: dict[str, Any] = dict(
        output=judgments,
        coverage_out=out,
        **ctx.llm_args(),
        options=JudgeOptions(depth=p.depth, prompt=p.judge_prompt, quiet=True),
    )
    queries, chunks = ctx.loaded.named_queries(ctx.queries), ctx.loaded.chunks_by_id(p.chunks)
    if ctx.dry_run:
        est = estimated(api.judge(queries, chunks, _run_of(ctx, run), dry_run=True, **args))
        covered.estimates.append(est)
        covered.said.append(f"{name}: {estimate_text(est)}")
        return
    done = run_result(api.judge(queries, chunks, _run_of(ctx, run), **args))
    ctx.spend(done)
    covered.code = max(covered.code, done.exit_code)
    covered.usage += [f"{name}: {done.usage_text}"] if done.usage_text else []
    ctx.state.done(f"coverage:{name}", digest, done.exit_code, "")
    covered.said.append(
        f"{name}: "
        + ", ".join(f"{k} {v}" for k, v in (done.summary().coverage or {}).items())
        + (failures_said(done.coverage) if done.coverage is not None else "")
    )


def _run_of(ctx: Context, run: Any) -> Any:
    """A run as the judge is handed it: a run file read once for the whole run of the pipeline, a dry
    run's retrieval as it is."""
    return ctx.loaded.run(run) if isinstance(run, Path) else run
