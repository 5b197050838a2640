"""The track and gate steps: each run's result kept in the project's history, and the project's
thresholds checked (neither on scores of a pool the judge did not finish)."""

from __future__ import annotations

import re

from ...errors import RagassayError
from ...metrics.rests_on import rests_on_brief
from ..tracking import gate_result, track
from .context import Context
from .results import StepResult, not_selected
from .scores import partial_pool


def track_step(ctx: Context, selected: bool) -> StepResult:
    if not selected:
        return not_selected("track")
    if ctx.dry_run:
        return StepResult("track", "estimated", "offline")
    results = [ctx.out / "evaluate" / f"{name}.json" for name in ctx.runs]
    results = [r for r in results if r.exists()]
    if not results:
        return StepResult("track", "skipped", "no results to track")
    if partial_pool(ctx, ctx.metric_qrels()):  # a history keeps results to compare over time: not partial ones
        missing, pairs = ctx.unjudged or (0, 0)
        return StepResult(
            "track",
            "skipped",
            f"the scores are of part of the pool ({missing} of {pairs} pairs not "
            "judged yet): not kept in the history until the judge finishes",
        )
    db = ctx.project.state_dir / "history.sqlite"
    said = []
    for result in results:
        digest = ctx.digests.of(result)
        if ctx.state.fresh(f"track:{result.stem}", digest, [db]):
            continue
        try:
            tracked = track(result, db)
        except RagassayError as e:  # the history is run's own file, not a flag of run's
            raise RagassayError(re.sub(r"-{2}db\b", str(db), str(e))) from None
        ctx.state.done(f"track:{result.stem}", digest, 0, "")
        said.append(f"#{tracked.id} {result.stem}")
    return StepResult("track", "ran" if said else "up to date", (", ".join(said) + f" in {db}") if said else "")


def gate_step(ctx: Context, selected: bool) -> StepResult:
    p = ctx.project
    if not p.gate_min and not p.gate_max:
        return StepResult("gate", "skipped", "no thresholds ([gate] min / max)")
    if not selected:
        return not_selected("gate")
    if ctx.dry_run:
        return StepResult("gate", "estimated", "offline")
    if partial_pool(ctx, ctx.metric_qrels()):  # a threshold is not passed on part of the pool
        missing, pairs = ctx.unjudged or (0, 0)
        return StepResult(
            "gate",
            "skipped",
            f"the scores are of part of the pool ({missing} of {pairs} pairs not "
            "judged yet): no verdict until the judge finishes",
            3,
        )
    names = [p.gate_run] if p.gate_run else list(ctx.runs)
    failures, rests = [], []
    for name in names:
        result = ctx.out / "evaluate" / f"{name}.json"
        if not result.exists():
            failures.append(f"{name}: no result to gate")
            continue
        verdict = gate_result(result, p.gate_min, p.gate_max, None, p.allow_errors)
        failures += [f"{name}: {f}" for f in verdict.failures or []]
        brief = rests_on_brief(verdict.rests_on, only=[*p.gate_min, *p.gate_max]) if verdict.rests_on else ""
        rests += [f"{name}: {brief}"] if brief else []  # what the gated scores rest on, said with the verdict
    said = f" [{'; '.join(rests)}]" if rests else ""
    if failures:
        return StepResult("gate", "failed", "; ".join(failures) + said, 1)
    return StepResult(
        "gate", "ran", f"passed: {len(p.gate_min) + len(p.gate_max)} threshold(s) hold for {len(names)} run(s){said}"
    )
