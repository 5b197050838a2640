"""The generate step: questions written from the chunks when the project names no queries (or, with
``[generate] sample``, a set beside its queries that no later step reads)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ... import api
from ...errors import RagassayError, UsageError
from ...stages.generate import GenerateOptions
from .context import Context
from .llm_steps import estimate_text, estimated, llm_skip, run_result
from .results import StepResult, not_selected


def generate_step(ctx: Context, selected: bool) -> StepResult:
    p = ctx.project
    questions = ctx.out / "questions.jsonl"
    if p.queries is not None and not p.generate_sample:
        return StepResult("generate", "skipped", "the project has queries")
    sample = p.queries is not None  # a set to read beside the project's queries: no later step reads it
    if not sample:
        ctx.queries = questions if questions.exists() else None
    if not selected:
        return not_selected("generate")
    if not sample and not p.generate_limit:
        return StepResult(
            "generate",
            "skipped",
            "[generate] limit = 0: no questions are written; name the queries "
            "in [data] queries (or set a limit to generate)",
        )
    if p.chunks is None:
        raise UsageError("no queries and no chunks to write questions from: name them in [data]")
    skip = llm_skip(ctx, "generate")
    if skip:
        return skip
    try:
        return _generated(ctx, questions, sample)
    except RagassayError as e:  # said in the project file's words: its [generate] limit is generate's --limit
        key = "[generate] sample" if sample else "[generate] limit"
        raise RagassayError(re.sub(r"-{2}limit\b", key, str(e))) from None


def _generated(ctx: Context, questions: Path, sample: bool) -> StepResult:
    """The questions written (or estimated), up to date when the chunks, the number asked and the
    model did not change (``--append`` always writes more)."""
    p = ctx.project
    assert p.chunks is not None  # (said by generate_step otherwise)
    limit = p.generate_sample if sample else p.generate_limit
    chunks = ctx.loaded.chunks(p.chunks)  # read before the digest, which is taken from this read
    digest = ctx.digests.of(p.chunks, limit=limit, model=ctx.llm.get("model"))
    kept = None if ctx.append else ctx.state.fresh("generate", digest, [questions])
    if kept:
        return StepResult("generate", "up to date", kept["text"], kept["exit_code"], result=kept.get("result"))
    args = dict(
        output=questions,
        append=ctx.append and questions.exists(),
        rejects=ctx.out / "rejects.jsonl",
        qrels_out=ctx.out / "questions.qrels",
        **ctx.llm_args(),
        options=GenerateOptions(limit=limit, quiet=True),
    )
    if ctx.dry_run:
        est = estimated(api.generate(chunks, dry_run=True, **args))
        ctx.generating = not sample
        return StepResult("generate", "estimated", estimate_text(est), 0, est.to_dict())
    done = run_result(api.generate(chunks, **args))
    ctx.spend(done)
    text = (
        (f"a sample of {limit} beside the project's queries (not retrieved): " if sample else "")
        + f"{len(done.accepted)} questions accepted, {len(done.rejects)} rejected"
        + "".join(f"; {why}" for why in _generate_shortfall(done))
    )
    if not sample:
        ctx.queries = questions
    ctx.state.done("generate", digest, done.exit_code, text, done.to_dict())
    return StepResult("generate", "ran", text, done.exit_code, result=done.to_dict())


def _generate_shortfall(done: Any) -> list[str]:
    """Why a generate run wrote fewer questions than asked: stopped early, or short of a difficulty."""
    said = [done.stopped] if done.stopped else []
    if done.shortfall and not done.stopped:
        said.append(
            "fell short of the target ("
            + ", ".join(f"{k} {v} fewer" for k, v in done.shortfall.items())
            + "); rejects.jsonl says why"
        )
    return said
