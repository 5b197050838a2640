"""The judged pool: the union of every run's top ``depth`` for each query, as TREC builds its pools,
so every run is scored on the same judged set and a new run costs only its pairs not judged yet."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...data.pool import pooled_run
from ...data.tables import Run
from .context import Context


def pool(runs: Mapping[str, Any], depth: int, queries: list[str] | None = None) -> dict[str, list[str]]:
    """The union of every run's top ``depth`` for each query (of ``queries`` when given), each
    query's chunk ids in the order they first appear, run by run."""
    out: dict[str, list[str]] = {}
    keep = set(queries) if queries is not None else None
    for run in runs.values():
        for qid, ids in run.top_ids(depth).items():
            if keep is not None and qid not in keep:
                continue
            have = out.setdefault(qid, [])
            seen = set(have)
            have += [i for i in ids if i not in seen]
    return out


def pool_run(ctx: Context) -> tuple[Any, int, int, tuple] | None:
    """The pool as a run (each query's pool ranked as it was built: the score falls with the order),
    the deepest query's pool, the pairs in all and the runs it was made from (each as a member of the
    pool, for the judged qrels' origin to name); None without runs or queries."""
    runs: dict[str, Any] = {name: ctx.loaded.run(f) for name, f in ctx.runs.items()}
    runs.update(ctx.memory_runs)
    if not runs or ctx.queries is None:
        return None
    pooled = pool(runs, ctx.project.depth, list(ctx.loaded.queries(ctx.queries)))
    run = Run.from_dict({q: {c: float(len(cs) - i) for i, c in enumerate(cs)} for q, cs in pooled.items()}, name="pool")
    members = tuple(pooled_run(name, r, ctx.project.depth) for name, r in runs.items())
    return run, max((len(cs) for cs in pooled.values()), default=1), sum(len(cs) for cs in pooled.values()), members


def unjudged(ctx: Context, pooled: list[tuple[str, str]], judged: Path) -> tuple[int, int] | None:
    """(pairs of the pool the judge has not graded, pairs in the pool), or None when it graded all: a
    judge stopped at a ceiling, or whose calls failed, leaves the runs scored on part of the pool. The
    judged qrels are read once, for this and every later step."""
    graded = (
        {(q, c) for q, c, _ in ctx.loaded.qrels(judged).rows()} if judged.exists() and judged.stat().st_size else set()
    )
    missing = sum((q, c) not in graded for q, c in pooled)
    return (missing, len(pooled)) if missing else None
