"""The agree step: people's qrels against a second labelling and against the judged pool, each side
named by who made it (a labeller is never measured against itself)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError
from ...metrics.agreement import agree, kappa_words
from .context import Context
from .files import read_json, write_json
from .results import StepResult, not_selected


def agree_step(ctx: Context, selected: bool) -> StepResult:
    """People's qrels against a second labelling of the same pairs ([agree] second), and against the
    judged pool when the judge ran: each side named by who made it (a labeller is never measured
    against itself), each written as ``ragassay agree --format json`` writes it, for the report."""
    p = ctx.project
    if p.qrels is None:
        return StepResult("agree", "skipped", "no people's qrels to measure against ([data] qrels)")
    if not selected:
        return not_selected("agree")
    sides = _sides(ctx)
    if not sides:
        return StepResult(
            "agree",
            "skipped",
            "nothing to measure the qrels against: no judged pool (an LLM judges "
            "it) and no second labelling ([agree] second)",
        )
    if ctx.dry_run:
        return StepResult(
            "agree",
            "estimated",
            f"{p.qrels.name} against "
            + " and ".join(
                "the judged pool" if name == "pool" or other is None else other.name for name, other in sides
            )
            + ", offline",
        )
    runs = list(ctx.runs.values()) if len(ctx.runs) > 1 else None  # do they rank the runs alike
    said, results, fresh = [], {}, True
    for name, other in sides:
        text, result, kept = _measured(ctx, name, other, runs)
        said.append(text)
        fresh = fresh and kept
        if result is not None:
            results[name] = result
    return StepResult("agree", "up to date" if fresh else "ran", "; ".join(said), result=results)


def _sides(ctx: Context) -> list[tuple[str, Path | None]]:
    """What people's qrels are measured against: [agree] second, and the judged pool (None in a dry
    run whose judge will write it). A side not measured now leaves no stale result for the report."""
    p = ctx.project
    sides: list[tuple[str, Path | None]] = [("second", p.second_qrels)] if p.second_qrels is not None else []
    judged = ctx.pool_qrels()
    if judged is not None or ctx.pooling:
        sides.append(("pool", judged))
    if not ctx.dry_run:
        for gone in {"second", "pool"} - {name for name, _ in sides}:  # not measured now: none stale is reported
            (ctx.out / f"agree_{gone}.json").unlink(missing_ok=True)
    return sides


def _measured(ctx: Context, name: str, other: Path | None, runs: list[Path] | None) -> tuple[str, Any, bool]:
    """People's qrels against one side: the step's words for it, the result written (None when it
    cannot be measured against the judged pool) and whether it was up to date."""
    p = ctx.project
    assert p.qrels is not None  # (said by agree_step otherwise)
    path = ctx.out / f"agree_{name}.json"
    digest = ctx.digests.of(p.qrels, other, *(runs or []))
    kept = ctx.state.fresh(f"agree:{name}", digest, [path])
    if kept:
        return kept["text"], read_json(ctx, path), True
    path.unlink(missing_ok=True)  # (a comparison that cannot be made leaves none for the report)
    try:
        assert other is not None  # (only a dry run measures against a pool not judged yet)
        ranked = [ctx.loaded.run(r) for r in runs] if runs else None
        made = agree(ctx.loaded.qrels(p.qrels), ctx.loaded.qrels(other), ranked)
    except InputError as e:
        if name == "second":
            raise
        return f"{p.qrels.name} against the judged pool: not measured, {e.message}", None, False
    result = made.to_dict()
    write_json(ctx, path, result)
    text = _agreement_text(result)
    ctx.state.done(f"agree:{name}", digest, 0, text)
    return text, result, False


def _agreement_text(a: dict[str, Any]) -> str:
    """One agreement as a step says it: both sides by who made them, kappa only between two labellers."""
    ref, cand = a["names"]
    if a.get("same_origin"):
        return f"{ref} vs {cand}: one labeller on both sides, no kappa ({a['pairs']} pairs)"
    ranking = a.get("run_ranking") or {}
    tau = ranking.get("kendall_tau_b")
    return (
        f"{ref} vs {cand}: {kappa_words(a)} on {a['pairs']} pairs"
        + (f", Kendall tau of the runs {tau:.2f}" if tau is not None else "")
        + (f"; warning: {a['scale_warning']}" if a.get("scale_warning") else "")
    )
