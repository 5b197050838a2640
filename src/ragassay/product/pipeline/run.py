"""``run_project``: the steps in order, each run or skipped, under the project's lock; a failed step
stops the ones after it unless the steps that need no model can go on without it."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...data.lines import watching_reads
from ...errors import RagassayError, UsageError
from ...runtime.engine import OutputLock
from .. import step_outcomes as outcomes
from ..bundled_example import example_dir
from ..project import Project, read_project
from .agree import agree_step
from .check import check_step
from .context import Context, endpoint_state, llm_settings
from .generate import generate_step
from .history import gate_step, track_step
from .inputs import check_inputs
from .judge import coverage_step, judge_step
from .report import report_step
from .results import PipelineResult, StepResult, step_line
from .retrieve import retrieve_step
from .scores import compare_step, evaluate_step
from .state import Digests, State

STEPS = (
    "generate",
    "retrieve",
    "judge",
    "coverage",
    "agree",
    "check",
    "evaluate",
    "compare",
    "report",
    "track",
    "gate",
)
LLM_STEPS = ("generate", "judge", "coverage", "check")


def one_step(flag: str, value: str | Sequence[str] | None) -> str | None:
    """The step a flag names (given once, as the CLI's repeatable flag may hold it several times);
    a step misspelt is said with the close match."""
    values = [value] if isinstance(value, str) else list(value or [])
    if len(values) > 1:
        raise UsageError(
            f"{flag} given {len(values)} times ({', '.join(values)}): give one step "
            f"(--only STEP runs one, --from STEP the steps from one on)"
        )
    step = values[0] if values else None
    if step is not None and step not in STEPS:
        close = difflib.get_close_matches(step, STEPS, n=1, cutoff=0.6)
        raise UsageError(
            f"{flag} {step}: no such step"
            + (f"; did you mean {close[0]!r}?" if close else "")
            + f" (steps: {', '.join(STEPS)})"
        )
    return step


def run_project(
    path: str | Path | None = None,
    *,
    only: str | Sequence[str] | None = None,
    start: str | Sequence[str] | None = None,
    dry_run: bool = False,
    append: bool = False,
    out: str | Path | None = None,
    flags: Mapping[str, Any] | None = None,
    log: Callable[[str], None] = lambda m: None,
) -> PipelineResult:
    """Run the project file's pipeline (``ragassay run``). ``only`` one step, or every step from
    ``start`` (each given once: a list of several is an error); ``flags`` the LLM flags (``model``,
    ``base_url``, ``concurrency``, ...) over the [llm] table; ``append`` generates more questions even
    when some exist; ``out`` writes the outputs there instead of the project's ``out``, with the
    state and history in ``out/.ragassay`` (the project's folder is then only read)."""
    only, start = one_step("--only", only), one_step("--from", start)
    if only and start:
        raise UsageError("--only and --from: give one of them")
    project = _project(path, out, dry_run)
    if append and project.queries is not None:
        raise UsageError(
            "--append grows the questions run generated; this project names its own queries ([data] queries)"
        )
    settings = llm_settings(project, flags or {})
    ctx = Context(
        project,
        dry_run,
        settings,
        endpoint_state(settings, dry_run),
        State(project.state_dir / "state.json"),
        Digests(),
        log,
        append,
    )
    result = PipelineResult(str(project.path), dry_run)
    with watching_reads(ctx.digests.heard):  # a file's digest is taken from the read that parsed it
        check_inputs(ctx, result)
        _run_steps(ctx, result, [only] if only else list(STEPS[STEPS.index(start) :]) if start else list(STEPS))
    result.without_llm = ctx.without_llm
    result.warnings += ctx.warnings
    return result


def _run_steps(ctx: Context, result: PipelineResult, selected: list[str]) -> None:
    """Every step in order, run or skipped, under the project's lock, until one stops the run."""
    lock = None if ctx.dry_run else project_lock(ctx.project)  # a dry run writes nothing, and reads without a lock
    try:
        if not ctx.dry_run:
            ctx.out.mkdir(parents=True, exist_ok=True)
        for name in STEPS:
            step = _step(ctx, name, name in selected)
            result.steps.append(step)
            ctx.log(step_line(step))
            if outcomes.stops_the_run(step, LLM_STEPS):
                break
    finally:
        if lock is not None:
            lock.release()


STEP_FUNCTIONS: dict[str, Callable[[Context, bool], StepResult]] = {
    "generate": generate_step,
    "retrieve": retrieve_step,
    "judge": judge_step,
    "coverage": coverage_step,
    "agree": agree_step,
    "check": check_step,
    "evaluate": evaluate_step,
    "compare": compare_step,
    "report": report_step,
    "track": track_step,
    "gate": gate_step,
}


def _project(path: str | Path | None, out: str | Path | None, dry_run: bool) -> Project:
    """The project file read, its outputs moved to ``out`` when given (the bundled example is never
    written into)."""
    project = read_project(path)
    if out is not None:
        project = project.moved(out)
    elif not dry_run and is_bundled_example(project.root):
        raise UsageError(
            f"{project.path} is the bundled example, inside the installed package: give --out DIR for "
            "its outputs (or run 'ragassay demo', which writes to ragassay-demo)"
        )
    return project


def _step(ctx: Context, name: str, selected: bool) -> StepResult:
    """One step run (or skipped, with why), its failure said as its result: after an LLM step's
    failure the steps that need no model go on (with ``keep_going`` every step tries, exit 3)."""
    keep_going = ctx.project.keep_going
    try:
        why_not = outcomes.instead(ctx, name, selected)
        step = StepResult(name, "skipped", why_not) if why_not else STEP_FUNCTIONS[name](ctx, selected)
    except (RagassayError, OSError) as e:  # said as the step's failure; after an LLM step's, the steps
        went_on = name in LLM_STEPS and keep_going  # that need no model go on (keep_going:
        step = StepResult(name, "failed", str(e), 3 if went_on else 1)  # every step tries it, exit 3)
        if name in LLM_STEPS and not keep_going:
            step = outcomes.go_on_without_model(ctx, step, STEP_FUNCTIONS[name])
    return outcomes.said_after(ctx, step)


def is_bundled_example(folder: Path) -> bool:
    """Whether ``folder`` is the example inside the installed package (a clone's datasets/example links there)."""
    try:
        return folder.resolve() == example_dir().resolve()
    except OSError:
        return False


def project_lock(project: Project) -> Any:
    """The project's state, locked for the whole run: a second run of the same project (or a demo
    into the same folder) stops at once, naming the process that runs it, instead of two runs
    writing one state file and the same outputs."""
    try:
        return OutputLock(project.state_dir / "state.json").acquire()
    except RagassayError as e:
        said = re.search(r"is being written by (.*); wait for it", str(e))
        holder = said.group(1) if said else "another process"
        raise RagassayError(
            f"another run of this project is under way ({holder}); wait for it to finish, or "
            "give this one its own folder with --out DIR"
        ) from None
