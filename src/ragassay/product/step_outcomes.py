"""What ``run`` does once an LLM step has failed, and how it says so.

A dead endpoint fails the first LLM step that calls it (generate or judge, mostly). What does not
need the model still stands: people's qrels can score the runs, the rules can decide the answers
they can, the report can show both. So the steps after a failed LLM step go on without a model (as
a run with no endpoint does: the LLM steps are skipped saying why, the check decides by rule), a
step whose input the failed step was to write says so when it is skipped, the metrics steps say
which labels they scored on instead of the judged pool, and no gate gives a verdict on a run that
did not finish. The run's last line names the step it stopped at and the step's own reason, and
its exit code is the failed step's (1: nothing of that step succeeded).

A project with ``keep_going = true`` (the demo's) keeps its way: every LLM step tries the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import RagassayError

# the steps that read what an LLM step writes, each with the words its skip says when that is missing:
# skipped so after the LLM step failed, it says the failure was the cause
NEEDS = {
    "generate": {
        "retrieve": "no queries",
        "agree": "no judged pool",
        "evaluate": "nothing to score on",
        "compare": "nothing to score on",
        "track": "no results",
        "report": "nothing to report",
    },
    "judge": {
        "agree": "no judged pool",
        "evaluate": "nothing to score on",
        "compare": "nothing to score on",
        "track": "no results",
        "report": "nothing to report",
    },
}


def short_reason(text: str, limit: int = 240) -> str:
    """A failed step's reason as the run's last line says it: its first sentence, without the
    engine's "stopped early: " and the advice that follows."""
    reason = text.strip().removeprefix("stopped early: ")
    reason = reason.split(". Nothing more was sent")[0].split("\n")[0].rstrip(".")
    return reason if len(reason) <= limit else reason[: limit - 1].rstrip() + "…"


def go_on_without_model(ctx: Any, failed: Any, rerun: Callable[[Any, bool], Any]) -> Any:
    """After the LLM step ``failed`` (a StepResult): the steps after it run without a model
    (``ctx.no_llm`` says why), and a failed check decides by rule what the rules can (``rerun``
    is the check step, run again without the model); the result is still the failed step's, its
    line saying what the rules did."""
    if failed.step == "generate" and ctx.project.queries is not None:
        return failed  # a sample beside the project's queries, read by no later step: they go on as they would
    ctx.no_llm = f"{failed.step} failed before it ({short_reason(failed.text)}); no model is called after a failed step"
    ctx.failed_llm = failed
    if failed.step != "check":
        return failed
    try:
        by_rule = rerun(ctx, True)
    except (RagassayError, OSError) as e:  # the rules could not run either: the first reason stands
        failed.text += f"; by rule instead: not done either ({e})"
        return failed
    failed.text += f"; by rule instead: {by_rule.text}"
    failed.result = by_rule.result
    return failed


def instead(ctx: Any, name: str, selected: bool) -> str | None:
    """Why a step is skipped after a failed LLM step; None: run it. Only the gate: a threshold holds
    or fails for a run as designed, not for one that stopped part way."""
    failed = getattr(ctx, "failed_llm", None)
    p = ctx.project
    if failed is None or name != "gate" or not selected or not (p.gate_min or p.gate_max):
        return None
    return f"no verdict: the run stopped at {failed.step} (a rerun that finishes gives one)"


def said_after(ctx: Any, step: Any) -> Any:
    """A step's line after a failed LLM step: a step skipped for want of what the failed step writes
    says so; the metrics steps scored on the project's qrels say they are not the judged pool."""
    failed = getattr(ctx, "failed_llm", None)
    if failed is None or step is failed:
        return step
    cause = f"{failed.step} failed"
    if step.step == "check" and step.status in ("ran", "up to date") and cause not in step.text:
        step.text += f" (no model asked: {cause} before it)"
    missing = NEEDS.get(failed.step, {}).get(step.step)
    if missing is None:
        return step
    if step.status == "skipped" and missing in step.text and cause not in step.text:
        step.text += f" ({cause} before it, so what it writes is missing)"
    elif (
        failed.step == "judge"
        and step.step in ("evaluate", "compare")
        and step.status in ("ran", "up to date")
        and ctx.project.qrels is not None
        and ctx.metric_qrels() == ctx.project.qrels
    ):
        step.text += "; not on the judged pool: judge failed"
    return step


def last_line(steps: Sequence[Any]) -> str | None:
    """The run's last line when a step failed: "stopped at STEP: REASON" (the first failed step),
    and the other steps that ended with an exit code; None when none failed."""
    failed = [s for s in steps if s.status == "failed"]
    if not failed:
        return None
    first = failed[0]
    others = [s for s in steps if s.exit_code and s is not first]
    return f"stopped at {first.step}: {short_reason(first.text)} (exit {first.exit_code})" + (
        "; also " + ", ".join(f"{s.step} ({s.status}, exit {s.exit_code})" for s in others) if others else ""
    )


# ------------------------------------------------------------------- a retriever that failed


def retriever_failed(ctx: Any, name: str, error: BaseException, step_lines: list[str], results: dict) -> None:
    """One retriever of several failed (it raised, or returned what is no ranking): the others' runs
    still stand and go on to be judged and scored. This one is named with its reason, and its run
    file from before (if any) is not scored as if it were today's."""
    ctx.runs.pop(name, None)
    reason = short_reason(str(error))
    step_lines.append(f"{name} FAILED: {reason}")
    results[name] = {"failed": reason}
    failures = getattr(ctx, "failed_retrievers", None)
    if failures is None:
        failures = ctx.failed_retrievers = {}
    failures[name] = reason


def retrieve_failed(ctx: Any, step: Any) -> Any:
    """The retrieve step as a failure (exit 1) when a retriever failed: its text opens with the
    failed ones ("NAME: reason", which the run's last line repeats) and keeps what the others did."""
    failures = getattr(ctx, "failed_retrievers", None)
    if not failures:
        return step
    named = "; ".join(f"{name}: {reason}" for name, reason in failures.items())
    step.status, step.exit_code = "failed", 1
    stood = [n for n in ctx.project.retrievers if n not in failures and n in ctx.runs] + [
        n for n in ctx.runs if n not in ctx.project.retrievers
    ]
    step.text = f"{named}\n(the other runs stand: {', '.join(stood) or 'none'}; {step.text})"
    step.runs_stand = bool(stood)
    return step


def stops_the_run(step: Any, llm_steps: Sequence[str]) -> bool:
    """Whether a failed step ends the run: a step that is no LLM step's, unless it is retrieve with
    runs that stand (a failed retriever does not hide the others' scores)."""
    if step.status != "failed" or step.step in llm_steps:
        return False
    return not getattr(step, "runs_stand", False)
