"""The retrieve step: each retriever run again only when its code, queries, chunks or k changed, and
a retriever whose package is missing replaced by its fallback run file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ...data import io as rio
from ...errors import RagassayError
from ...stages.retrieve import retrieve_texts
from .. import step_outcomes as outcomes
from .context import Context
from .results import StepResult


def retrieve_step(ctx: Context, selected: bool) -> StepResult:
    """Each retriever whose code, queries, chunks or k changed since its run file was written (a dry
    run retrieves in memory, offline, to know the pool)."""
    p = ctx.project
    ctx.runs = dict(p.runs)
    ctx.runs.update(
        {name: path for name in p.retrievers if (path := ctx.out / "runs" / f"{name}.txt").exists()}
    )  # written before: until rerun
    if not p.retrievers:
        return StepResult("retrieve", "skipped", "no retrievers in the project")
    if ctx.queries is None:
        return StepResult("retrieve", "skipped", "no queries yet (generate writes them)")
    if ctx.dry_run and ctx.generating:
        return StepResult("retrieve", "estimated", "after generate writes the questions (offline)")
    said: list[str] = []
    results: dict[str, Any] = {}
    ran = sum(_retrieve_one(ctx, name, spec, selected, said, results) for name, spec in p.retrievers.items())
    status = ("estimated" if ctx.dry_run else "ran") if ran else "up to date" if selected else "not selected"
    return outcomes.retrieve_failed(ctx, StepResult("retrieve", status, "; ".join(said), result=results))


def _retrieve_one(ctx: Context, name: str, spec: str, selected: bool, said: list[str], results: dict[str, Any]) -> bool:
    """One retriever run (or kept, or its fallback run file read), said in ``said`` and its result
    kept in ``results``; whether it ran (a fallback counts as a run, a failure does not)."""
    p = ctx.project
    assert ctx.queries is not None  # (said by retrieve_step otherwise)
    path = ctx.out / "runs" / f"{name}.txt"
    file, _, function = spec.rpartition(":")
    digest = ctx.digests.of(Path(file), ctx.queries, p.chunks, function=function, k=p.k)
    kept = ctx.state.fresh(f"retrieve:{name}", digest, [path])
    if kept or not selected:
        if path.exists():
            ctx.runs[name] = path
        results[name] = kept.get("result") if kept else None
        said.append(f"{name} up to date" if kept else f"{name} not selected")
        return False
    if not ctx.dry_run:  # a dry run writes nothing
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        done = retrieve_texts(  # the queries and chunks as the run read them once, for every retriever
            spec,
            ctx.loaded.queries(ctx.queries),
            chunk_ids=None if p.chunks is None else ctx.loaded.chunks_by_id(p.chunks),
            chunks_file=p.chunks,
            queries_file=ctx.queries,
            queries_digest=None if ctx.dry_run else ctx.digests.queries_digest(ctx.queries),
            k=p.k,
            name=name,
            quiet=True,
            output=None if ctx.dry_run else path,
        )
    except RagassayError as e:
        missing = _missing_module(e)
        if missing is None or name not in p.fallbacks:
            outcomes.retriever_failed(ctx, name, e, said, results)
            return False
        said.append(_fell_back(ctx, name, path, missing))
        results[name] = {"fallback": str(p.fallbacks[name]), "missing_package": missing}
        ctx.warnings.append(f"{said[-1]} (the retriever {name} did not run)")
        return True
    results[name] = done.to_dict()
    if ctx.dry_run:
        ctx.memory_runs[name] = done.run
        said.append(f"{name}: would write {len(done.run)} results (offline)")
        return True
    ctx.runs[name] = path
    ctx.state.done(f"retrieve:{name}", digest, 0, "", results[name])
    said.append(f"{name}: {len(done.run)} results for {len(done.run.queries)} queries")
    return True


def _missing_module(error: BaseException) -> str | None:
    """The package a retriever could not import (the error's causes, followed), or None when it
    failed otherwise: only a package that is not installed sends a run to its fallback file."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ImportError):
            return e.name or str(e)
        e = e.__cause__ or e.__context__
    return None


def _fell_back(ctx: Context, name: str, path: Path, missing: str) -> str:
    """The retriever ``name`` needs a package that is not installed: its fallback run file is read
    in its place (copied to where the retriever writes), and the state is left unchanged, so the
    retriever runs once the package is installed."""

    fallback = ctx.project.fallbacks[name]
    run = rio.read_run(fallback, name=name)
    if ctx.dry_run:
        ctx.memory_runs[name] = run
    else:
        shutil.copyfile(fallback, path)
        ctx.runs[name] = path
    return (
        f"{name}: {missing} is not installed, so the run file {fallback.name} is read in its place "
        f"({len(run)} results for {len(run.queries)} queries)"
    )
