"""The check step: the answers graded by an LLM, or without an endpoint by rule only (the rest wait
for a verdict, and verdicts an LLM gave before on the same answers stand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ... import api
from ...data.joins import Join
from ...stages.check import CheckOptions
from .context import Context
from .files import checks_file, read_json, write_json
from .inputs import read_answer_ids
from .llm_steps import estimate_text, estimated, failures_said, prompt_id, run_result
from .results import StepResult, not_selected


def check_step(ctx: Context, selected: bool) -> StepResult:
    """Check the answers, diagnosed with a run and the qrels the runs are scored on when both exist;
    without an endpoint the rules decide what they can and write their own file."""
    p = ctx.project
    cannot = _cannot_check(ctx, selected)
    if cannot is not None:
        return cannot
    assert p.answers is not None and p.chunks is not None  # (said by _cannot_check otherwise)
    out, summary = checks_file(ctx), ctx.out / "check.json"
    rules_only = ctx.no_llm is not None  # without an endpoint the rules decide what they can
    run_name, run, qrels = _diagnosed_with(ctx)
    digest = ctx.digests.of(
        p.answers,
        p.chunks,
        p.human,
        run,
        qrels,
        depth=p.depth,
        model=ctx.llm.get("model"),
        base_url=ctx.llm.get("base_url"),
        rules_only=rules_only,
        prompt=prompt_id(ctx, "check"),
        **({"by_text": sorted(ctx.answer_queries.items())} if ctx.answer_queries else {}),
    )
    verdicts_of = ctx.digests.of(p.answers, p.chunks)  # what a verdict depends on, whoever gives it
    if rules_only:
        ctx.without_llm.append("check (LLM verdicts)")
        earlier = _llm_verdicts_kept(ctx, verdicts_of, summary)
        if earlier is not None:
            return earlier
    kept = ctx.state.fresh("check", digest, [out, summary])
    if kept:  # its result is the summary it wrote
        return StepResult("check", "up to date", kept["text"], kept["exit_code"], result=read_json(ctx, summary))
    args: dict[str, Any] = dict(
        output=out,
        chunks=ctx.loaded.chunks(p.chunks),
        human=p.human,
        depth=p.depth,
        warn=None,  # (the run said every join at the start, naming its files)
        options=CheckOptions(prompt=p.check_prompt, quiet=True),
    )
    spent = None if rules_only or ctx.dry_run else ctx.spent()
    if spent:
        return StepResult("check", "skipped", spent, 3)
    args.update({"llm": []} if rules_only else ctx.llm_args())  # no client: the rules run, the others wait for one
    if ctx.dry_run:
        return _estimated(ctx, p.answers, args, rules_only)
    if run_name is not None and run is not None and qrels is not None:
        _say_joins(ctx, p.answers, run_name, run, qrels)
    done = _checked(ctx, p.answers, run, qrels, args)
    ctx.spend(done)
    written = write_json(ctx, summary, done.to_dict())
    code = 0 if rules_only else done.exit_code  # an answer waiting for a verdict is not an error of this run
    text = _checked_text(done, rules_only)
    ctx.state.done("check", digest, code, text, None if rules_only else {"verdicts_of": verdicts_of})
    return StepResult("check", "ran", text, code, result=written)  # (as written: no NaN)


def _checked(ctx: Context, answers: Path, run: Path | None, qrels: Path | None, args: dict[str, Any]) -> Any:
    """The answers checked, handed the run and qrels the pipeline read (each read once a run)."""
    return run_result(
        api.check(
            answers,
            run=None if run is None else ctx.loaded.run(run),
            qrels=None if qrels is None else ctx.loaded.qrels(qrels),
            query_ids=ctx.answer_queries,
            **args,
        )
    )


def _cannot_check(ctx: Context, selected: bool) -> StepResult | None:
    """Why the check step does not run: no answers, not selected, or no chunks for them to cite."""
    if ctx.project.answers is None:
        return StepResult("check", "skipped", "no answers in the project ([data] answers)")
    if not selected:
        return not_selected("check")
    if ctx.project.chunks is None:
        return StepResult("check", "skipped", "the check reads the chunks the answers cite: name them in [data] chunks")
    return None


def _diagnosed_with(ctx: Context) -> tuple[str | None, Path | None, Path | None]:
    """The run (by its name and file) and the qrels a wrong answer is diagnosed with: the project's
    ``[check] run`` (else its first run) and the qrels the runs are scored on, both or neither."""
    run_name = ctx.project.check_run or next(iter(ctx.runs), None)
    run = ctx.runs.get(run_name) if run_name else None
    qrels = ctx.metric_qrels()
    if run is None or qrels is None:
        return run_name, None, None
    return run_name, run, qrels


def _llm_verdicts_kept(ctx: Context, verdicts_of: str, summary: Path) -> StepResult | None:
    """Offline, the verdicts an LLM gave before on these very answers stand (shown, not replaced by
    the rules' own file); None when there are none to keep."""
    earlier = ctx.state.steps.get("check") or {}
    if (
        (earlier.get("result") or {}).get("verdicts_of") == verdicts_of
        and not earlier.get("exit_code")
        and (ctx.out / "checks.jsonl").exists()
        and summary.exists()
    ):
        ctx.llm_checks_kept = True  # an LLM checked these very answers before: its verdicts stand, shown
        return StepResult(
            "check",
            "up to date",
            f"{earlier['text']}: the verdicts an LLM gave before "
            "(checks.jsonl), kept; no endpoint now to check anything again",
            result=read_json(ctx, summary),
        )
    return None


def _estimated(ctx: Context, answers: Path, args: dict[str, Any], rules_only: bool) -> StepResult:
    """A dry run's check: its calls, or offline what the rules decide without one."""
    est = estimated(api.check(answers, dry_run=True, **args))
    said = (
        f"{est.decided_without_call} answers decided by rule, offline; the others need an LLM verdict ({ctx.no_llm})"
        if rules_only
        else estimate_text(est)
    )
    return StepResult("check", "estimated", said, 0, None if rules_only else est.to_dict())


def _checked_text(done: Any, rules_only: bool) -> str:
    """The step's line: how many answers were graded and how, or decided by rule and left waiting."""
    rates = done.summary.get("summary") or {}
    counts = ", ".join(
        f"{rates.get('counts', {}).get(k, 0)} {k}" for k in ("correct", "partial", "hallucinated", "abstained")
    )
    if rules_only:
        return (
            f"{rates.get('graded', 0)} of {rates.get('answers', 0)} answers decided by rule ({counts}); "
            f"the other {rates.get('waiting', 0)} need an LLM verdict"
            + (f"; {rates['errors']} failed" if rates.get("errors") else "")
        )
    return f"{rates.get('graded', 0)} of {rates.get('answers', 0)} answers graded ({counts})" + failures_said(done.run)


def _say_joins(ctx: Context, answers: Path, run_name: str, run: Path, qrels: Path) -> None:
    """How the answers meet the run and qrels the check diagnoses with (a retriever's run, the judged
    pool: not counted at the start), said unless the start said it already."""
    ids = [(ctx.answer_queries or {}).get(a, a) for a in read_answer_ids(ctx, answers)]
    for join in (
        Join.of(
            "query ids",
            "the answers",
            ids,
            f"the run {run_name}",
            ctx.loaded.run(run).queries,
            ctx.project.answers,
            run,
        ),
        Join.of(
            "query ids", "the answers", ids, "the qrels", ctx.loaded.qrels(qrels).queries, ctx.project.answers, qrels
        ),
    ):
        warning = join.warning(("left",))
        if warning and warning not in ctx.said:
            ctx.said.add(warning)
            ctx.warnings.append(warning)
            ctx.log(f"warning: {warning}")
