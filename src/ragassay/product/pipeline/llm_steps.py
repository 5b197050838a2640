"""What the steps that call a model share: when they are skipped (no endpoint, the run's ceiling
spent, a dry run before generate has written the questions), how an estimate and a stage's failures
are said, and which prompt version makes a step out of date."""

from __future__ import annotations

from typing import Any, TypeVar

from ...llm.prompt_files import choose_prompt
from ...runtime.engine import Estimate
from .context import Context
from .results import StepResult

T = TypeVar("T")


def estimate_text(e: Any) -> str:
    cost = "cost unknown (no price)" if e.cost_usd is None else f"at most ${e.cost_usd:.4f}"
    time = (
        ""
        if e.seconds_high is None or not e.calls
        else f", {e.seconds_low or 0:.0f}-{e.seconds_high:.0f} s one call at a time"
    )
    return (
        f"{e.calls} calls ({e.done} items done already, {e.cached} answered from the cache), "
        f"{e.input_tokens} input tokens, at most {e.output_tokens} output tokens, {cost}{time}"
    )


def failures_said(run: Any) -> str:
    """What a stage's error records were (their commonest reasons) and why it stopped, said after its
    counts; nothing when every record is ok."""
    said = run.failure_text()
    return "; " + said.replace("\n", "; ") if said else ""


def llm_skip(ctx: Context, name: str) -> StepResult | None:
    """The step skipped: no endpoint (exit 0: the offline steps are the run), or the run's spending
    ceiling reached by the steps before (exit 3, as a stage stopped at its ceiling: a rerun with a
    higher one goes on)."""
    spent = None if ctx.dry_run else ctx.spent()
    if spent:
        return StepResult(name, "skipped", spent, 3)
    if not ctx.no_llm:
        return None
    ctx.without_llm.append(name)
    return StepResult(name, "skipped", ctx.no_llm)


def after_generate(ctx: Context, name: str) -> StepResult | None:
    """In a dry run whose generate step will write (more) questions: what the later LLM steps cost
    is known only once they are written."""
    if ctx.dry_run and ctx.generating:
        return StepResult(
            name,
            "estimated",
            "after generate writes the questions: its calls depend on them (a dry run once they are written says)",
        )
    return None


def prompt_id(ctx: Context, stage: str) -> str:
    """The version of the prompt a stage will use (a prompt file's content, what auto picks for the
    model): a step whose prompt changed is not up to date."""
    choice = ctx.project.judge_prompt if stage == "judge" else ctx.project.check_prompt
    return choose_prompt(stage, choice, ctx.llm.get("model"))[0].id


def estimated(result: object) -> Estimate:
    """What a stage's function returned for ``dry_run=True``: its estimate (the function's result type
    depends on that flag, so the type is checked here rather than assumed)."""
    if not isinstance(result, Estimate):
        raise TypeError(f"a dry run returned {type(result).__name__}, not an Estimate")
    return result


def run_result(result: T | Estimate) -> T:
    """What a stage's function returned for a run: its result, never an estimate."""
    if isinstance(result, Estimate):
        raise TypeError("a run returned an Estimate")
    return result
