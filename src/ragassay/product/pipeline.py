"""``ragassay run``: the pipeline a project file describes, each step only when its inputs changed.

Steps, in order (``STEPS``): generate questions when the project has none (or, with ``[generate]
sample``, a set beside its queries that no later step reads), retrieve with each retriever, judge the
**pool** (the union of every run's top ``depth`` for each query, as TREC builds its pools: every run is
scored on the same judged set, and a new run costs only its pairs not judged yet), coverage (when
asked), agree (people's qrels against ``[agree] second`` and against the judged pool, each side by
origin), check the answers (without an endpoint, by rule only: the rest wait for a verdict), evaluate
and compare every run, write the report, track the results, gate. A failed step stops the steps after
it, but with ``keep_going`` a failed LLM step does not (the demo's setting: the report is written).
Each step calls the library function its command calls (``api.generate``, ``api.retrieve``,
``api.judge``, ``api.check``, ``agree``, ``evaluate``, ``compare``, ``make_report``, ``track``,
``gate_result``). Before any step the joins are counted once (queries x runs, answers x runs and
qrels: no id in common stops the run before anything is spent) and who labelled each file of labels
is read.

A step is skipped when the digest of its inputs (file contents and settings) equals the one kept in
``.ragassay/state.json`` beside the project file and its outputs exist; its exit code is the one kept.
A dry run prints each step's calls, tokens, cost and time (the LLM stages' own estimates) and calls
nothing; the retrievers run (offline) to know the pool. ``run_project(out=...)`` (``run --out``) writes
every output there and keeps the state and history in ``out/.ragassay``: the project's folder is only
read (``ragassay demo`` runs the installed example's project file so).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, RagassayError, UsageError
from . import step_outcomes as outcomes
from .formatting import fmt_p
from .project import Project, read_project

STEPS = ("generate", "retrieve", "judge", "coverage", "agree", "check", "evaluate", "compare", "report", "track",
         "gate")
LLM_STEPS = ("generate", "judge", "coverage", "check")
FLAG_KEYS = ("model", "base_url", "timeout", "concurrency", "rpm", "tpm", "cache", "no_cache", "price_in",
             "price_out", "max_calls", "max_cost")


@dataclass
class StepResult:
    """One step: ``status`` is ran, up to date, skipped, not selected, estimated or failed."""
    step: str
    status: str
    text: str = ""
    exit_code: int = 0
    estimate: dict | None = None
    result: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "status": self.status, "text": self.text, "exit_code": self.exit_code,
                "estimate": self.estimate, "result": self.result}


@dataclass
class PipelineResult:
    """Every step's result, the joins counted at the start and who labelled each file of labels."""
    project: str
    dry_run: bool
    steps: list[StepResult] = field(default_factory=list)
    joins: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    without_llm: list[str] = field(default_factory=list)  # what was not done for want of an endpoint

    @property
    def report(self) -> str | None:
        """The HTML report this run wrote or kept (None when no report step made one)."""
        made = next((s.result for s in self.steps if s.step == "report"), None)
        return made.get("html") if isinstance(made, dict) else None

    @property
    def exit_code(self) -> int:
        codes = [s.exit_code for s in self.steps]
        return 1 if 1 in codes else 3 if 3 in codes else 0

    @property
    def calls(self) -> int:
        """The calls a dry run predicts (the sum of its steps' estimates)."""
        return sum((s.estimate or {}).get("calls", 0) for s in self.steps)

    def usage_lines(self) -> list[str]:
        """What each LLM step that called a model used: answers, calls, tokens, cost."""
        said = [(s.step, s.result.get("usage_text")) for s in self.steps
                if s.status == "ran" and isinstance(s.result, dict)]
        return [f"usage     {name}: {text}" for name, text in said if text]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "run", "version": 1, "project": self.project, "dry_run": self.dry_run,
                "exit_code": self.exit_code,
                "calls": self.calls if self.dry_run else None, "joins": self.joins, "warnings": self.warnings,
                "origins": self.origins, "without_llm": self.without_llm, "steps": [s.to_dict() for s in self.steps]}

    def text(self, steps: bool = True) -> str:
        """The summary; ``steps``: each step's line too (a log said them as they ended otherwise)."""
        lines = [step_line(s) for s in self.steps] if steps else []
        lines += self.usage_lines()
        if self.dry_run:
            ran = any(s.step == "retrieve" and s.status == "estimated" for s in self.steps)
            bound = any((s.estimate or {}).get("at_most") for s in self.steps)
            lines.append(f"dry run: no model was called{' (the retrievers ran, to know the pool)' if ran else ''}; "
                         f"{'at most ' if bound else ''}{self.calls} calls in all")
        failed = [s for s in self.steps if s.exit_code]
        stopped = outcomes.last_line(self.steps)  # a failed step: "stopped at STEP: reason", last
        if stopped or failed:
            lines.append(stopped or "finished with " + ", ".join(f"{s.step} (exit {s.exit_code})" for s in failed))
        return "\n".join(lines)


# ------------------------------------------------------------------------------------- state

def step_line(s: StepResult) -> str:
    return f"{s.step:<9} {s.status}" + (f": {s.text}" if s.text else "")


class State:
    """The digest of each step's inputs when it last ran, and its exit code (``.ragassay/state.json``)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.steps: dict[str, dict] = json.loads(path.read_text(encoding="utf-8")).get("steps", {})
        except (OSError, ValueError, AttributeError):
            self.steps = {}

    def fresh(self, key: str, digest: str, outputs: list[Path]) -> dict | None:
        """What the step kept when it last ran on these inputs, when its outputs are all there and it
        ended without error records (a rerun retries those, as every command's rerun does)."""
        kept = self.steps.get(key)
        if kept and kept.get("digest") == digest and not kept.get("exit_code") and all(p.exists() for p in outputs):
            return kept
        return None

    def done(self, key: str, digest: str, exit_code: int, text: str, result: Any = None) -> None:
        """Keep a step's digest, exit code, line and result (an up-to-date rerun says them again)."""
        self.steps[key] = {"digest": digest, "exit_code": exit_code, "text": text, "result": result}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"version": 1, "steps": self.steps}, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)


class Digests:
    """File contents' digests, each file read once a run."""

    def __init__(self) -> None:
        self.seen: dict[Path, str] = {}

    def file(self, path: Path | None) -> str | None:
        if path is None or not path.exists():
            return None
        if path not in self.seen:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            self.seen[path] = h.hexdigest()
        return self.seen[path]

    def of(self, *files: Path | None, **settings: Any) -> str:
        parts = {"files": [self.file(f) for f in files], "settings": settings}
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


# ------------------------------------------------------------------------------------ the LLM

def llm_settings(project: Project, flags: Mapping[str, Any]) -> dict[str, Any]:
    """The api functions' LLM keywords: the project's [llm] table, each overridden by a flag given."""
    out = {k: v for k, v in project.llm.items()}
    for key in FLAG_KEYS:
        value = flags.get(key)
        if value is None or value is False:
            continue
        out[key] = value[0] if key == "model" and isinstance(value, list) and len(value) == 1 else value
        if key == "cache":
            out[key] = str(value)
    return out


def endpoint_state(settings: Mapping[str, Any], dry_run: bool) -> str | None:
    """None when the LLM stages can run (a dry run needs a model only); else why they are skipped."""
    from ..llm.config import LLMConfig
    model = settings.get("model")
    config = LLMConfig.from_env(model=model[0] if isinstance(model, list) else model,
                                base_url=settings.get("base_url"), price_in=settings.get("price_in"),
                                price_out=settings.get("price_out"), max_cost=settings.get("max_cost"))
    if not config.model:
        return "no model given ([llm] model in the project file, --model or RAGASSAY_MODEL)"
    if not dry_run and not config.api_key and not config.base_url:
        return "no LLM endpoint configured ([llm] base_url in the project file, --base-url, OPENAI_BASE_URL or " \
               "OPENAI_API_KEY)"
    config.check(endpoint=not dry_run)  # any other setting that cannot work (a URL without a scheme, ...) stops here
    return None


# ---------------------------------------------------------------------------------- pipeline

@dataclass
class Context:
    project: Project
    dry_run: bool
    llm: dict[str, Any]
    no_llm: str | None
    state: State
    digests: Digests
    log: Callable[[str], None]
    append: bool = False
    generating: bool = False                                   # a dry run's generate step will write questions
    judging: bool = False                                      # a dry run's judge step will judge pairs
    pooling: bool = False                                      # a dry run's judge step will write the pool's qrels
    queries: Path | None = None
    runs: dict[str, Path] = field(default_factory=dict)       # every run's file, once it exists
    memory_runs: dict[str, Any] = field(default_factory=dict)  # a dry run's retrievals, not written
    judged: Path | None = None                                 # the pool's qrels, once judged
    without_llm: list[str] = field(default_factory=list)       # what was not done for want of an endpoint
    unjudged: tuple[int, int] | None = None                    # (pairs of the pool not graded, pairs in it), when any
    warnings: list[str] = field(default_factory=list)          # said by the steps, added to the run's
    said: set[str] = field(default_factory=set)                # every warning said so far (each is said once)
    llm_checks_kept: bool = False                              # offline: an LLM's verdicts on these answers stand
    answer_queries: dict[str, str] | None = None               # answer id -> query id, when met by question text
    failed_llm: StepResult | None = None                       # the LLM step that failed (the rest go on without it)
    spent_calls: int = 0                                       # requests the LLM steps of this run sent so far
    spent_cost: float = 0.0                                    # and what they cost (where a price is known)

    @property
    def out(self) -> Path:
        return self.project.out

    def llm_args(self) -> dict[str, Any]:
        """The LLM settings for the next step: ``max_calls`` and ``max_cost`` are the run's, so each
        step gets what the steps before it left (a ceiling holds for the whole run, not per step)."""
        args = dict(self.llm)
        if args.get("max_calls") is not None:
            args["max_calls"] = args["max_calls"] - self.spent_calls
        if args.get("max_cost") is not None:
            args["max_cost"] = args["max_cost"] - self.spent_cost
        return args

    def spent(self) -> str | None:
        """Why no LLM step may run any more (a ceiling of the run reached), or None."""
        calls, cost = self.llm.get("max_calls"), self.llm.get("max_cost")
        if calls is not None and self.spent_calls >= calls:
            return f"the run's --max-calls {calls} is spent ({self.spent_calls} requests sent by the steps before)"
        if cost is not None and self.spent_cost >= cost:
            return f"the run's --max-cost ${cost:g} is spent (${self.spent_cost:.4f} by the steps before)"
        return None

    def spend(self, done: Any) -> None:
        """Count what an LLM step sent (its result's usage: model -> calls, cost)."""
        for numbers in (getattr(done, "usage", None) or {}).values():
            self.spent_calls += int(numbers.get("calls") or 0)
            self.spent_cost += float(numbers.get("cost_usd") or 0.0)

    def pool_qrels(self) -> Path | None:
        """The judged pool's qrels, when the judge graded some pair of it (a judge whose every record
        is an error writes an empty file: nothing to score on)."""
        return self.judged if self.judged is not None and self.judged.exists() and self.judged.stat().st_size \
            else None

    def metric_qrels(self) -> Path | None:
        """What runs are scored on: the judged pool when there is one, else people's qrels."""
        return self.pool_qrels() or self.project.qrels


def _one_step(flag: str, value: str | Sequence[str] | None) -> str | None:
    """The step a flag names (given once, as the CLI's repeatable flag may hold it several times);
    a step misspelt is said with the close match."""
    import difflib
    values = [value] if isinstance(value, str) else list(value or [])
    if len(values) > 1:
        raise UsageError(f"{flag} given {len(values)} times ({', '.join(values)}): give one step "
                         f"(--only STEP runs one, --from STEP the steps from one on)")
    step = values[0] if values else None
    if step is not None and step not in STEPS:
        close = difflib.get_close_matches(step, STEPS, n=1, cutoff=0.6)
        raise UsageError(f"{flag} {step}: no such step" + (f"; did you mean {close[0]!r}?" if close else "")
                         + f" (steps: {', '.join(STEPS)})")
    return step


def run_project(path: str | Path | None = None, *, only: str | Sequence[str] | None = None,
                start: str | Sequence[str] | None = None, dry_run: bool = False, append: bool = False,
                out: str | Path | None = None, flags: Mapping[str, Any] | None = None,
                log: Callable[[str], None] = lambda m: None) -> PipelineResult:
    """Run the project file's pipeline (``ragassay run``). ``only`` one step, or every step from
    ``start`` (each given once: a list of several is an error); ``flags`` the LLM flags (``model``,
    ``base_url``, ``concurrency``, ...) over the [llm] table; ``append`` generates more questions even
    when some exist; ``out`` writes the outputs there instead of the project's ``out``, with the
    state and history in ``out/.ragassay`` (the project's folder is then only read)."""
    only, start = _one_step("--only", only), _one_step("--from", start)
    if only and start:
        raise UsageError("--only and --from: give one of them")
    project = read_project(path)
    if out is not None:
        project = project.moved(out)
    elif not dry_run and _is_bundled_example(project.root):
        raise UsageError(f"{project.path} is the bundled example, inside the installed package: give --out DIR for "
                         "its outputs (or run 'ragassay demo', which writes to ragassay-demo)")
    if append and project.queries is not None:
        raise UsageError("--append grows the questions run generated; this project names its own queries "
                         "([data] queries)")
    settings = llm_settings(project, flags or {})
    ctx = Context(project, dry_run, settings, endpoint_state(settings, dry_run), State(
        project.state_dir / "state.json"), Digests(), log, append)
    result = PipelineResult(str(project.path), dry_run)
    _check_inputs(ctx, result)
    selected = [only] if only else list(STEPS[STEPS.index(start):]) if start else list(STEPS)
    steps: dict[str, Callable[[Context, bool], StepResult]] = {
        "generate": _generate, "retrieve": _retrieve, "judge": _judge, "coverage": _coverage, "agree": _agree,
        "check": _check, "evaluate": _evaluate, "compare": _compare, "report": _report, "track": _track,
        "gate": _gate}
    lock = None if dry_run else _project_lock(project)  # a dry run writes nothing, and reads without a lock
    try:
        if not dry_run:
            ctx.out.mkdir(parents=True, exist_ok=True)
        for name in STEPS:
            try:
                why_not = outcomes.instead(ctx, name, name in selected)
                step = StepResult(name, "skipped", why_not) if why_not else steps[name](ctx, name in selected)
            except (RagassayError, OSError) as e:  # said as the step's failure; after an LLM step's, the steps
                went_on = name in LLM_STEPS and project.keep_going  # that need no model go on (keep_going:
                step = StepResult(name, "failed", str(e), 3 if went_on else 1)  # every step tries it, exit 3)
                if name in LLM_STEPS and not project.keep_going:
                    step = outcomes.go_on_without_model(ctx, step, steps[name])
            step = outcomes.said_after(ctx, step)
            result.steps.append(step)
            log(step_line(step))
            if outcomes.stops_the_run(step, LLM_STEPS):
                break
    finally:
        if lock is not None:
            lock.release()
    result.without_llm = ctx.without_llm
    result.warnings += ctx.warnings
    return result


def _is_bundled_example(folder: Path) -> bool:
    """Whether ``folder`` is the example inside the installed package (a clone's datasets/example links there)."""
    from .demo import example_dir
    try:
        return folder.resolve() == example_dir().resolve()
    except OSError:
        return False


def _project_lock(project: Project) -> Any:
    """The project's state, locked for the whole run: a second run of the same project (or a demo
    into the same folder) stops at once, naming the process that runs it, instead of two runs
    writing one state file and the same outputs."""
    from ..runtime.engine import OutputLock
    try:
        return OutputLock(project.state_dir / "state.json").acquire()
    except RagassayError as e:
        said = re.search(r"is being written by (.*); wait for it", str(e))
        holder = said.group(1) if said else "another process"
        raise RagassayError(f"another run of this project is under way ({holder}); wait for it to finish, or "
                            "give this one its own folder with --out DIR") from None


def _check_inputs(ctx: Context, result: PipelineResult) -> None:
    """The joins, counted once before any step: queries x every run file, answers x runs and people's
    qrels; none in common stops the run here. And who labelled each file of labels."""
    from ..data import io as rio
    from ..data.joins import Join
    from ..data.origin import label_origin, read_origin
    p = ctx.project
    ctx.queries = p.queries
    query_texts = rio.read_queries(p.queries) if p.queries is not None else None
    query_ids = list(query_texts) if query_texts is not None else None
    answer_ids = _answer_ids(p.answers) if p.answers is not None else None
    by_text = None
    if answer_ids is not None and query_texts is not None:  # ids that meet none: the questions' texts may
        from ..data.text_match import answers_to_queries
        by_text = answers_to_queries(_answer_questions(p.answers), query_texts, p.answers_match, p.answers, p.queries)
    human_ids = answer_ids  # people label answers by the answers' own ids
    if by_text is not None:
        ctx.answer_queries = by_text.pairs
        answer_ids = [by_text.pairs.get(a, a) for a in answer_ids]  # each answer by the query it answers
    runs = {name: rio.read_run(f) for name, f in p.runs.items()}
    qrels = rio.read_qrels(p.qrels) if p.qrels is not None else None
    joins = []
    for name, run in runs.items():
        if query_ids is not None:
            joins.append((Join.of("query ids", "the queries", query_ids, f"the run {name}", run.queries, p.queries,
                                  p.runs[name]).require_overlap(), ("left",)))
        if answer_ids is not None:
            joins.append((_answers_met(Join.of("query ids", "the answers", answer_ids, f"the run {name}", run.queries,
                                               p.answers, p.runs[name]), query_texts is not None), ("left",)))
    if qrels is not None:
        if query_ids is not None:
            joins.append((Join.of("query ids", "the queries", query_ids, "the qrels", qrels.queries, p.queries,
                                  p.qrels).require_overlap(), ("right",)))
        if answer_ids is not None:
            joins.append((_answers_met(Join.of("query ids", "the answers", answer_ids, "the qrels", qrels.queries,
                                               p.answers, p.qrels), query_texts is not None), ("left",)))
    if answer_ids is not None and p.human is not None:  # people label some answers: labels of none stop here
        from ..stages.check import read_human_labels
        joins.append((Join.of("answer ids", "the answers", human_ids, "the human labels", read_human_labels(p.human),
                              p.answers, p.human).require_overlap(), ("right",)))
    if answer_ids is not None and query_ids is not None:
        joins.append((Join.of("query ids", "the answers", answer_ids, "the queries", query_ids, p.answers,
                              p.queries).require_overlap(), ("left",)))
    if qrels is not None and p.second_qrels is not None:  # [agree] second: a labelling of the same queries
        joins.append((Join.of("query ids", "the qrels", qrels.queries, "the second qrels",
                              rio.read_qrels(p.second_qrels).queries, p.qrels, p.second_qrels).require_overlap(),
                       ("right",)))
    result.joins = [j.to_dict() for j, _ in joins] + ([by_text.to_dict()] if by_text is not None else [])
    result.warnings = ([by_text.sentence()] if by_text is not None else []) + [
        w for w in (j.warning(sides) for j, sides in joins) if w]
    if p.qrels is not None:
        result.origins[p.qrels.name] = read_origin(p.qrels).describe()
    if p.second_qrels is not None:
        result.origins[p.second_qrels.name] = read_origin(p.second_qrels).describe()
    if p.human is not None:
        result.origins[p.human.name] = label_origin(p.human).describe()
    for name, who in result.origins.items():
        ctx.log(f"labels   {name} by {who}")
    for warning in result.warnings:
        ctx.log(f"warning: {warning}")
        ctx.said.add(warning)


def _answer_ids(path: Path) -> list[str]:
    """The answers' ids (read as check reads them: ragassay, RAGAS or DeepEval fields)."""
    from ..data.peer_files import answer_rows
    return [str(obj["id"]) for _, obj in answer_rows(path)]


def _answers_met(join: Any, queries_named: bool) -> Any:
    """The answers' join with a run or qrels, required to meet; without a queries file, an error says
    that one would let the answers be matched by question text."""
    try:
        return join.require_overlap()
    except InputError as e:
        if queries_named:
            raise
        raise InputError(f"{e.message} If the answers ask the queries' questions under other ids, name the queries "
                         "in [data] queries: the answers are then matched to them by question text", e.path) from None


def _answer_questions(path: Path) -> dict[str, str]:
    """Each answer's question by its id (read as check reads them)."""
    from ..data.peer_files import answer_rows
    return {str(obj["id"]): str(obj["question"]) for _, obj in answer_rows(path)}


def _not_selected(name: str) -> StepResult:
    return StepResult(name, "not selected")


def _estimate_text(e: Any) -> str:
    cost = "cost unknown (no price)" if e.cost_usd is None else f"at most ${e.cost_usd:.4f}"
    time = "" if e.seconds_high is None or not e.calls else \
        f", {e.seconds_low or 0:.0f}-{e.seconds_high:.0f} s one call at a time"
    return (f"{e.calls} calls ({e.done} items done already, {e.cached} answered from the cache), "
            f"{e.input_tokens} input tokens, at most {e.output_tokens} output tokens, {cost}{time}")


def _failures(run: Any) -> str:
    """What a stage's error records were (their commonest reasons) and why it stopped, said after its
    counts; nothing when every record is ok."""
    said = run.failure_text()
    return "; " + said.replace("\n", "; ") if said else ""


def _llm_skip(ctx: Context, name: str) -> StepResult | None:
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


# ------------------------------------------------------------------------------------ steps

def _generate(ctx: Context, selected: bool) -> StepResult:
    from .. import api
    p = ctx.project
    questions = ctx.out / "questions.jsonl"
    if p.queries is not None and not p.generate_sample:
        return StepResult("generate", "skipped", "the project has queries")
    sample = p.queries is not None  # a set to read beside the project's queries: no later step reads it
    if not sample:
        ctx.queries = questions if questions.exists() else None
    if not selected:
        return _not_selected("generate")
    if not sample and not p.generate_limit:
        return StepResult("generate", "skipped", "[generate] limit = 0: no questions are written; name the queries "
                                                 "in [data] queries (or set a limit to generate)")
    if p.chunks is None:
        raise UsageError("no queries and no chunks to write questions from: name them in [data]")
    skip = _llm_skip(ctx, "generate")
    if skip:
        return skip
    limit = p.generate_sample if sample else p.generate_limit
    digest = ctx.digests.of(p.chunks, limit=limit, model=ctx.llm.get("model"))
    kept = None if ctx.append else ctx.state.fresh("generate", digest, [questions])
    if kept:
        return StepResult("generate", "up to date", kept["text"], kept["exit_code"], result=kept.get("result"))
    args = dict(output=questions, limit=limit, append=ctx.append and questions.exists(),
                rejects=ctx.out / "rejects.jsonl", qrels_out=ctx.out / "questions.qrels", **ctx.llm_args())
    key = "[generate] sample" if sample else "[generate] limit"
    try:
        if ctx.dry_run:
            est = api.generate(p.chunks, dry_run=True, **args)
            ctx.generating = not sample
            return StepResult("generate", "estimated", _estimate_text(est), 0, est.to_dict())
        done = api.generate(p.chunks, **args)
        ctx.spend(done)
    except RagassayError as e:  # said in the project file's words: its [generate] limit is generate's --limit
        raise RagassayError(re.sub(r"-{2}limit\b", key, str(e))) from None
    text = (f"a sample of {limit} beside the project's queries (not retrieved): " if sample else "") \
        + f"{len(done.accepted)} questions accepted, {len(done.rejects)} rejected" \
        + "".join(f"; {why}" for why in _generate_shortfall(done))
    if not sample:
        ctx.queries = questions
    ctx.state.done("generate", digest, done.exit_code, text, done.to_dict())
    return StepResult("generate", "ran", text, done.exit_code, result=done.to_dict())


def _generate_shortfall(done: Any) -> list[str]:
    """Why a generate run wrote fewer questions than asked: stopped early, or short of a difficulty."""
    said = [done.stopped] if done.stopped else []
    if done.shortfall and not done.stopped:
        said.append("fell short of the target (" + ", ".join(f"{k} {v} fewer" for k, v in done.shortfall.items())
                    + "); rejects.jsonl says why")
    return said


def _retrieve(ctx: Context, selected: bool) -> StepResult:
    """Each retriever whose code, queries, chunks or k changed since its run file was written (a dry
    run retrieves in memory, offline, to know the pool)."""
    from .. import api
    p = ctx.project
    ctx.runs = dict(p.runs)
    ctx.runs.update({name: path for name in p.retrievers
                     if (path := ctx.out / "runs" / f"{name}.txt").exists()})  # written before: until rerun
    if not p.retrievers:
        return StepResult("retrieve", "skipped", "no retrievers in the project")
    if ctx.queries is None:
        return StepResult("retrieve", "skipped", "no queries yet (generate writes them)")
    if ctx.dry_run and ctx.generating:
        return StepResult("retrieve", "estimated", "after generate writes the questions (offline)")
    said, ran, results = [], 0, {}
    for name, spec in p.retrievers.items():
        path = ctx.out / "runs" / f"{name}.txt"
        file, _, function = spec.rpartition(":")
        digest = ctx.digests.of(Path(file), ctx.queries, p.chunks, function=function, k=p.k)
        kept = ctx.state.fresh(f"retrieve:{name}", digest, [path])
        if kept or not selected:
            if path.exists():
                ctx.runs[name] = path
            results[name] = kept.get("result") if kept else None
            said.append(f"{name} up to date" if kept else f"{name} not selected")
            continue
        if not ctx.dry_run:  # a dry run writes nothing
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            done = api.retrieve(spec, ctx.queries, chunks=p.chunks, k=p.k, name=name, quiet=True,
                                output=None if ctx.dry_run else path)
        except RagassayError as e:
            missing = _missing_module(e)
            if missing is None or name not in p.fallbacks:
                outcomes.retriever_failed(ctx, name, e, said, results)
                continue
            said.append(_fell_back(ctx, name, path, missing))
            results[name] = {"fallback": str(p.fallbacks[name]), "missing_package": missing}
            ctx.warnings.append(f"{said[-1]} (the retriever {name} did not run)")
            ran += 1
            continue
        ran += 1
        results[name] = done.to_dict()
        if ctx.dry_run:
            ctx.memory_runs[name] = done.run
            said.append(f"{name}: would write {len(done.run)} results (offline)")
            continue
        ctx.runs[name] = path
        ctx.state.done(f"retrieve:{name}", digest, 0, "", results[name])
        said.append(f"{name}: {len(done.run)} results for {len(done.run.queries)} queries")
    status = ("estimated" if ctx.dry_run else "ran") if ran else "up to date" if selected else "not selected"
    return outcomes.retrieve_failed(ctx, StepResult("retrieve", status, "; ".join(said), result=results))


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
    import shutil

    from ..data import io as rio
    fallback = ctx.project.fallbacks[name]
    run = rio.read_run(fallback, name=name)
    if ctx.dry_run:
        ctx.memory_runs[name] = run
    else:
        shutil.copyfile(fallback, path)
        ctx.runs[name] = path
    return (f"{name}: {missing} is not installed, so the run file {fallback.name} is read in its place "
            f"({len(run)} results for {len(run.queries)} queries)")


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


def _pool_run(ctx: Context) -> tuple[Any, int, int, tuple] | None:
    """The pool as a run (each query's pool ranked as it was built: the score falls with the order),
    the deepest query's pool, the pairs in all and the runs it was made from (each as a member of the
    pool, for the judged qrels' origin to name); None without runs or queries."""
    from ..data.pool import pooled_run
    from ..data import io as rio
    from ..data.tables import Run
    runs = {name: rio.read_run(f) for name, f in ctx.runs.items()}
    runs.update(ctx.memory_runs)
    if not runs or ctx.queries is None:
        return None
    pooled = pool(runs, ctx.project.depth, list(rio.read_queries(ctx.queries)))
    run = Run.from_dict({q: {c: float(len(cs) - i) for i, c in enumerate(cs)} for q, cs in pooled.items()},
                        name="pool")
    members = tuple(pooled_run(name, r, ctx.project.depth) for name, r in runs.items())
    return run, max((len(cs) for cs in pooled.values()), default=1), sum(len(cs) for cs in pooled.values()), members


def _judge(ctx: Context, selected: bool) -> StepResult:
    """Judge the pool: one judgments file for every run; pairs judged before are skipped (the
    judge's own output store), so a new run costs only its pairs not in the pool yet."""
    from .. import api
    from ..data import io as rio
    p = ctx.project
    out, judged = ctx.out / "judgments.jsonl", ctx.out / "judged.qrels"
    ctx.judged = judged if judged.exists() else None
    if not selected:  # (its pool, as judged when it last ran, scores the runs)
        return _not_selected("judge")
    skip = _llm_skip(ctx, "judge") or _after_generate(ctx, "judge")
    ctx.judged = None  # a pool judged before may miss the runs' pairs now: scored on it only once judged
    if skip:
        ctx.pooling = skip.status == "estimated"
        return skip
    if p.chunks is None:
        return StepResult("judge", "skipped", "the judge reads the chunks: name them in [data] chunks")
    made = _pool_run(ctx)
    if made is None:
        return StepResult("judge", "skipped", "no runs to pool" if ctx.queries is not None else
                          "no queries yet (generate writes them)")
    run, deepest, pairs, members = made
    pooled = sorted((q, c) for q, cs in run.top_ids(deepest).items() for c in cs)
    digest = ctx.digests.of(ctx.queries, p.chunks, pool=pooled, model=ctx.llm.get("model"),
                            base_url=ctx.llm.get("base_url"), prompt=_prompt_id(ctx, "judge"))
    kept = ctx.state.fresh("judge", digest, [out, judged])
    runs = len(set(ctx.runs) | set(ctx.memory_runs))
    pool_of = f"the pool of {runs} run's" if runs == 1 else f"the pool of {runs} runs'"
    if kept:  # every pair of the pool was judged before this run, none now
        ctx.judged = judged
        ctx.unjudged = _unjudged(pooled, judged)
        said = kept.get("result") or {}
        text = (f"{pool_of} top {p.depth}: {len(pooled)} pairs, all {len(pooled)} judged before, "
                f"0 now" + (f", {said['errors']} error{'s' if said['errors'] != 1 else ''}" if said.get("errors") else ""))
        return StepResult("judge", "up to date", text, kept["exit_code"], result=kept.get("result"))
    args = dict(output=out, depth=deepest, qrels_out=judged, prompt=p.judge_prompt, **ctx.llm_args())
    if ctx.dry_run:
        est = api.judge(ctx.queries, p.chunks, run, dry_run=True, **args)
        ctx.judging = est.calls > 0
        ctx.pooling = True
        return StepResult("judge", "estimated", f"{pool_of} top {p.depth}: {pairs} pairs; "
                          + _estimate_text(est), 0, est.to_dict())
    pool_path = ctx.out / "pool.txt"  # what was judged, to read (the judge reads the run it is given)
    rio.write_run(pool_path, run)
    done = api.judge(ctx.queries, p.chunks, pool_path, **args)
    if judged.exists():  # the pool is the project's runs, each to the project's depth (not the file pool.txt)
        from ..data.origin import read_origin, write_origin
        write_origin(judged, read_origin(judged).replace(pool=members))
    ctx.spend(done)
    s = done.summary()
    text = (f"{pool_of} top {p.depth}: {s.pairs} pairs, {s.already_done} judged before, "
            f"{max(s.judged - s.already_done, 0)} now, {s.errors} error{'s' if s.errors != 1 else ''}") + _failures(done.relevance)
    ctx.judged = judged
    ctx.unjudged = _unjudged(pooled, judged)
    ctx.state.done("judge", digest, done.exit_code, text, done.to_dict())
    return StepResult("judge", "ran", text, done.exit_code, result=done.to_dict())


def _prompt_id(ctx: Context, stage: str) -> str:
    """The version of the prompt a stage will use (a prompt file's content, what auto picks for the
    model): a step whose prompt changed is not up to date."""
    from ..llm.prompt_files import choose_prompt
    choice = ctx.project.judge_prompt if stage == "judge" else ctx.project.check_prompt
    return choose_prompt(stage, choice, ctx.llm.get("model"))[0].id


def _unjudged(pooled: list[tuple[str, str]], judged: Path) -> tuple[int, int] | None:
    """(pairs of the pool the judge has not graded, pairs in the pool), or None when it graded all: a
    judge stopped at a ceiling, or whose calls failed, leaves the runs scored on part of the pool."""
    from ..data import io as rio
    graded = {(q, c) for q, c, _ in rio.read_qrels(judged).rows()} if judged.exists() and judged.stat().st_size \
        else set()
    missing = sum((q, c) not in graded for q, c in pooled)
    return (missing, len(pooled)) if missing else None


def _after_generate(ctx: Context, name: str) -> StepResult | None:
    """In a dry run whose generate step will write (more) questions: what the later LLM steps cost
    is known only once they are written."""
    if ctx.dry_run and ctx.generating:
        return StepResult(name, "estimated", "after generate writes the questions: its calls depend on them "
                                             "(a dry run once they are written says)")
    return None


def _coverage(ctx: Context, selected: bool) -> StepResult:
    from .. import api
    p = ctx.project
    if not p.coverage:
        return StepResult("coverage", "skipped", "off ([judge] coverage = true turns it on)")
    if not selected:
        return _not_selected("coverage")
    skip = _llm_skip(ctx, "coverage") or _after_generate(ctx, "coverage")
    if skip:
        return skip
    runs = {**ctx.runs, **ctx.memory_runs}  # a dry run's retrievals that will change: in memory
    if ctx.dry_run and ctx.judging:  # its nuggets come from the passages judged relevant: a ceiling is known
        from ..data import io as rio
        queries = len(rio.read_queries(ctx.queries)) if ctx.queries is not None else 0
        most = queries * (2 + len(runs))
        return StepResult("coverage", "estimated", f"after judge: at most {most} calls (nuggets and their importance "
                          f"for each of {queries} queries, then each of {len(runs)} runs' support), fewer where the "
                          "judge finds no relevant passage (a dry run once the judgments are written says)", 0,
                          {"calls": most, "at_most": True})
    if ctx.queries is None or not runs or p.chunks is None:
        return StepResult("coverage", "skipped", "needs queries, chunks and runs")
    out, judgments = ctx.out / "coverage.jsonl", ctx.out / "judgments.jsonl"
    said, code, estimates, usage = [], 0, [], []
    for name, run in runs.items():
        digest = ctx.digests.of(run if isinstance(run, Path) else None, ctx.queries, p.chunks, ctx.judged,
                                depth=p.depth, model=ctx.llm.get("model"), base_url=ctx.llm.get("base_url"),
                                prompt=_prompt_id(ctx, "judge"))
        kept = ctx.state.fresh(f"coverage:{name}", digest, [out]) if isinstance(run, Path) else None
        if kept:
            said.append(f"{name} up to date")
            code = max(code, kept["exit_code"])
            continue
        skip = _llm_skip(ctx, "coverage")
        if skip:  # the run's ceiling reached by the runs before this one
            said.append(f"{name}: {skip.text}")
            code = max(code, skip.exit_code)
            continue
        args = dict(output=judgments, depth=p.depth, coverage_out=out, prompt=p.judge_prompt, **ctx.llm_args())
        if ctx.dry_run:
            est = api.judge(ctx.queries, p.chunks, run, dry_run=True, **args)
            estimates.append(est)
            said.append(f"{name}: {_estimate_text(est)}")
            continue
        done = api.judge(ctx.queries, p.chunks, run, **args)
        ctx.spend(done)
        code = max(code, done.exit_code)
        usage += [f"{name}: {done.usage_text}"] if done.usage_text else []
        ctx.state.done(f"coverage:{name}", digest, done.exit_code, "")
        said.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in (done.summary().coverage or {}).items())
                    + (_failures(done.coverage) if done.coverage is not None else ""))
    estimate = None
    if len(estimates) > 1:  # each run's estimate counts the nuggets the runs share: a ceiling
        said.append("the nuggets of a query are made once for every run: fewer calls than the sum")
    if estimates:
        total = estimates[0]
        for e in estimates[1:]:
            total = total.add(e)
        estimate = total.to_dict()
    ran = len(said) - sum(s.endswith(" up to date") for s in said)
    status = "up to date" if not ran else "estimated" if ctx.dry_run else "ran"
    return StepResult("coverage", status, "; ".join(said), code, estimate,
                      {"usage_text": "; ".join(usage)} if usage else None)


def _agree(ctx: Context, selected: bool) -> StepResult:
    """People's qrels against a second labelling of the same pairs ([agree] second), and against the
    judged pool when the judge ran: each side named by who made it (a labeller is never measured
    against itself), each written as ``ragassay agree --format json`` writes it, for the report."""
    from ..data import io as rio
    from ..errors import InputError
    from ..metrics.agreement import agree
    p = ctx.project
    if p.qrels is None:
        return StepResult("agree", "skipped", "no people's qrels to measure against ([data] qrels)")
    if not selected:
        return _not_selected("agree")
    sides = [("second", p.second_qrels)] if p.second_qrels is not None else []
    judged = ctx.pool_qrels()
    if judged is not None or ctx.pooling:
        sides.append(("pool", judged))
    if not ctx.dry_run:
        for gone in {"second", "pool"} - {name for name, _ in sides}:  # not measured now: none stale is reported
            (ctx.out / f"agree_{gone}.json").unlink(missing_ok=True)
    if not sides:
        return StepResult("agree", "skipped", "nothing to measure the qrels against: no judged pool (an LLM judges "
                                              "it) and no second labelling ([agree] second)")
    if ctx.dry_run:
        return StepResult("agree", "estimated", f"{p.qrels.name} against " + " and ".join(
            "the judged pool" if name == "pool" else other.name for name, other in sides) + ", offline")
    runs = list(ctx.runs.values()) if len(ctx.runs) > 1 else None  # do they rank the runs alike
    said, results, fresh = [], {}, True
    for name, other in sides:
        path = ctx.out / f"agree_{name}.json"
        digest = ctx.digests.of(p.qrels, other, *(runs or []))
        kept = ctx.state.fresh(f"agree:{name}", digest, [path])
        if kept:
            said.append(kept["text"])
            results[name] = _read_json(path)
            continue
        fresh = False
        path.unlink(missing_ok=True)  # (a comparison that cannot be made leaves none for the report)
        try:
            made = agree(rio.read_qrels(p.qrels), rio.read_qrels(other), runs)
        except InputError as e:
            if name == "second":
                raise
            said.append(f"{p.qrels.name} against the judged pool: not measured, {e.message}")
            continue
        result = made.to_dict()
        _write_json(path, result)
        results[name] = result
        text = _agreement_text(result)
        ctx.state.done(f"agree:{name}", digest, 0, text)
        said.append(text)
    return StepResult("agree", "up to date" if fresh else "ran", "; ".join(said), result=results)


def _agreement_text(a: Mapping[str, Any]) -> str:
    """One agreement as a step says it: both sides by who made them, kappa only between two labellers."""
    ref, cand = a["names"]
    if a.get("same_origin"):
        return f"{ref} vs {cand}: one labeller on both sides, no kappa ({a['pairs']} pairs)"
    ranking = a.get("run_ranking") or {}
    tau = ranking.get("kendall_tau_b")
    from ..metrics.agreement import kappa_words
    return (f"{ref} vs {cand}: {kappa_words(a)} on {a['pairs']} pairs"
            + (f", Kendall tau of the runs {tau:.2f}" if tau is not None else "")
            + (f"; warning: {a['scale_warning']}" if a.get("scale_warning") else ""))


def _check(ctx: Context, selected: bool) -> StepResult:
    from .. import api
    p = ctx.project
    out, summary = _checks_file(ctx), ctx.out / "check.json"
    if p.answers is None:
        return StepResult("check", "skipped", "no answers in the project ([data] answers)")
    if not selected:
        return _not_selected("check")
    if p.chunks is None:
        return StepResult("check", "skipped", "the check reads the chunks the answers cite: name them in [data] chunks")
    rules_only = ctx.no_llm is not None  # without an endpoint the rules decide what they can
    run_name = p.check_run or next(iter(ctx.runs), None)
    run = ctx.runs.get(run_name) if run_name else None
    qrels = ctx.metric_qrels()
    diagnosed = run is not None and qrels is not None
    digest = ctx.digests.of(p.answers, p.chunks, p.human, run if diagnosed else None, qrels if diagnosed else None,
                            depth=p.depth, model=ctx.llm.get("model"), base_url=ctx.llm.get("base_url"),
                            rules_only=rules_only, prompt=_prompt_id(ctx, "check"),
                            **({"by_text": sorted(ctx.answer_queries.items())} if ctx.answer_queries else {}))
    verdicts_of = ctx.digests.of(p.answers, p.chunks)  # what a verdict depends on, whoever gives it
    if rules_only:
        ctx.without_llm.append("check (LLM verdicts)")
        earlier = ctx.state.steps.get("check") or {}
        if (earlier.get("result") or {}).get("verdicts_of") == verdicts_of and not earlier.get("exit_code") \
                and (ctx.out / "checks.jsonl").exists() and summary.exists():
            ctx.llm_checks_kept = True  # an LLM checked these very answers before: its verdicts stand, shown
            return StepResult("check", "up to date", f"{earlier['text']}: the verdicts an LLM gave before "
                              "(checks.jsonl), kept; no endpoint now to check anything again", result=_read_json(summary))
    kept = ctx.state.fresh("check", digest, [out, summary])
    if kept:  # its result is the summary it wrote
        return StepResult("check", "up to date", kept["text"], kept["exit_code"], result=_read_json(summary))
    args = dict(output=out, chunks=p.chunks, human=p.human, depth=p.depth, join_warnings=False,  # said at the start
                prompt=p.check_prompt)
    spent = None if rules_only or ctx.dry_run else ctx.spent()
    if spent:
        return StepResult("check", "skipped", spent, 3)
    args.update({"llm": []} if rules_only else ctx.llm_args())  # no client: the rules run, the others wait for one
    if ctx.dry_run:
        est = api.check(p.answers, dry_run=True, **args)
        said = f"{est.decided_without_call} answers decided by rule, offline; the others need an LLM verdict " \
               f"({ctx.no_llm})" if rules_only else _estimate_text(est)
        return StepResult("check", "estimated", said, 0, None if rules_only else est.to_dict())
    if diagnosed:
        _say_joins(ctx, run_name, run, qrels)
    done = api.check(p.answers, run=run if diagnosed else None, qrels=qrels if diagnosed else None,
                     query_ids=ctx.answer_queries, **args)
    ctx.spend(done)
    _write_json(summary, done.to_dict())
    rates = done.summary.get("summary") or {}
    counts = ", ".join(f"{rates.get('counts', {}).get(k, 0)} {k}"
                       for k in ("correct", "partial", "hallucinated", "abstained"))
    code = 0 if rules_only else done.exit_code  # an answer waiting for a verdict is not an error of this run
    text = f"{rates.get('graded', 0)} of {rates.get('answers', 0)} answers " + (
        f"decided by rule ({counts}); the other {rates.get('waiting', 0)} need an LLM verdict"
        + (f"; {rates['errors']} failed" if rates.get("errors") else "") if rules_only
        else f"graded ({counts})" + _failures(done.run))
    ctx.state.done("check", digest, code, text, None if rules_only else {"verdicts_of": verdicts_of})
    return StepResult("check", "ran", text, code, result=_read_json(summary))  # (as written: no NaN)


def _say_joins(ctx: Context, run_name: str, run: Path, qrels: Path) -> None:
    """How the answers meet the run and qrels the check diagnoses with (a retriever's run, the judged
    pool: not counted at the start), said unless the start said it already."""
    from ..data import io as rio
    from ..data.joins import Join
    ids = [(ctx.answer_queries or {}).get(a, a) for a in _answer_ids(ctx.project.answers)]
    for join in (Join.of("query ids", "the answers", ids, f"the run {run_name}", rio.read_run(run).queries,
                         ctx.project.answers, run),
                 Join.of("query ids", "the answers", ids, "the qrels", rio.read_qrels(qrels).queries,
                         ctx.project.answers, qrels)):
        warning = join.warning(("left",))
        if warning and warning not in ctx.said:
            ctx.said.add(warning)
            ctx.warnings.append(warning)
            ctx.log(f"warning: {warning}")


def _checks_file(ctx: Context) -> Path:
    """The check's records: without an endpoint the rules' own file, so that a run offline never
    replaces the verdicts an LLM gave before (a run with one finds them done and sends nothing)."""
    return ctx.out / ("checks_by_rule.jsonl" if ctx.no_llm and not ctx.llm_checks_kept else "checks.jsonl")


def _read_json(path: Path) -> Any:
    """A result a step wrote (None when it cannot be read: the step's line still says what it did)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: Any) -> None:
    from ..data.results import nan_to_none
    from .formatting import to_json
    path.write_text(to_json(nan_to_none(data)) + "\n", encoding="utf-8")


def _scored(ctx: Context, name: str) -> StepResult | None:
    """Why a metrics step cannot run (no qrels, no runs), or None. In a dry run the judge step
    estimated writes the pool's qrels, and the retrievers after generate write runs."""
    if ctx.metric_qrels() is None and not ctx.pooling:
        return StepResult(name, "skipped", "nothing to score on: no judged pool (an LLM judges it) and no people's "
                                           "qrels ([data] qrels)")
    if not ctx.runs and not ctx.memory_runs and not (ctx.dry_run and ctx.generating and ctx.project.retrievers):
        return StepResult(name, "skipped", "no runs")
    return None


def sidecar(path: Path | None) -> Path | None:
    """The origin file beside a file of labels (its scale and pool change what a score means)."""
    from ..data.origin import sidecar_path
    return sidecar_path(path) if path is not None else None


def _said_scores(name: str, result: Mapping[str, Any] | None) -> str:
    """ "bm25: ndcg@10 0.7935, map 0.6800 [relevant = grade ≥ 2; POOL OF THIS RUN ALONE ...]" """
    from ..metrics.rests_on import rests_on_brief
    r = result or {}
    brief = rests_on_brief(r.get("rests_on"))
    return f"{name}: " + ", ".join(f"{m} {v:.4f}" for m, v in (r.get("aggregate") or {}).items()) + \
        (f" [{brief}]" if brief else "")


def _relevant_said(cmp: Any, metric: str) -> str:
    """ ", relevant = grade ≥ 2" when the metric a compare line shows counts relevance from a grade."""
    from ..metrics.rests_on import rests_on_brief
    brief = rests_on_brief({"relevance": (cmp.rests_on or {}).get("relevance")}, only=[metric])
    return f", {brief}" if brief else ""


def _scored_on(ctx: Context) -> str:
    """What a dry run's metrics steps will score on."""
    qrels = ctx.metric_qrels()
    return "after judge, on the judged pool" if ctx.pooling else f"on {qrels.name}" if qrels is not None else ""


def _evaluate(ctx: Context, selected: bool) -> StepResult:
    from ..metrics.evaluate import evaluate
    if not selected:
        return _not_selected("evaluate")
    cannot = _scored(ctx, "evaluate")
    if cannot or ctx.dry_run:
        runs = len(set(ctx.runs) | set(ctx.memory_runs) | (set(ctx.project.retrievers) if ctx.generating else set()))
        return cannot or StepResult("evaluate", "estimated", f"{runs} runs, {_scored_on(ctx)}, offline")
    qrels = ctx.metric_qrels()
    said, results = [], {}  # each run's result as 'ragassay evaluate --format json' prints it
    for name, run in ctx.runs.items():
        path = ctx.out / "evaluate" / f"{name}.json"
        digest = ctx.digests.of(qrels, sidecar(qrels), run, metrics=ctx.project.metrics, name=name,
                                relevance_level=ctx.project.relevance_level)
        if ctx.state.fresh(f"evaluate:{name}", digest, [path]):
            results[name] = _read_json(path)
            continue
        ev = evaluate(qrels, run, ctx.project.metrics, missing="zero", relevance_level=ctx.project.relevance_level)
        ev.run_name = name  # the project's name for it, as compare, the report, track and history say it
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_json(path, ev.to_dict())
        results[name] = _read_json(path)
        ctx.state.done(f"evaluate:{name}", digest, 0, "")
        said.append(_said_scores(name, results[name]))
    partial = _partial_pool(ctx, qrels)
    shown = said or [_said_scores(name, r) for name, r in results.items()]  # up to date: the kept results, said alike
    return StepResult("evaluate", "ran" if said else "up to date", "; ".join(shown) + f" (on {qrels.name})" + partial,
                      result=results)


def _partial_pool(ctx: Context, qrels: Path | None) -> str:
    """What the metrics steps add when the runs are scored on a pool the judge did not finish."""
    if ctx.unjudged is None or qrels is None or qrels != ctx.pool_qrels():
        return ""
    missing, pairs = ctx.unjudged
    return (f"; PARTIAL: {missing} of the pool's {pairs} pairs are not judged yet, so these scores are of part of "
            "it (a rerun finishes the judge)")


def _compare(ctx: Context, selected: bool) -> StepResult:
    from ..metrics.compare import compare
    if not selected:
        return _not_selected("compare")
    cannot = _scored(ctx, "compare")
    if cannot:
        return cannot
    if len(set(ctx.runs) | set(ctx.memory_runs) | (set(ctx.project.retrievers) if ctx.generating else set())) < 2:
        return StepResult("compare", "skipped", "one run: nothing to compare it with")
    if ctx.dry_run:
        return StepResult("compare", "estimated", f"{_scored_on(ctx)}, offline")
    qrels, path = ctx.metric_qrels(), ctx.out / "compare.json"
    digest = ctx.digests.of(qrels, sidecar(qrels), *ctx.runs.values(), names=list(ctx.runs),
                            metrics=ctx.project.metrics, relevance_level=ctx.project.relevance_level)
    kept = ctx.state.fresh("compare", digest, [path])
    if kept:
        return StepResult("compare", "up to date", kept["text"] + _partial_pool(ctx, qrels), result=_read_json(path))
    cmp = compare(qrels, dict(ctx.runs), ctx.project.metrics, relevance_level=ctx.project.relevance_level)
    _write_json(path, cmp.to_dict())
    first = ctx.project.metrics[0]
    text = "; ".join(f"{t.run} - {cmp.runs[0]} {t.metric} {t.diff:+.4f} (p {_p_said(t.p_randomization)}"
                     + (f", detects {t.mde:.3f} at 80% power" if t.mde is not None else "") + ")"
                     for t in cmp.tests if t.metric == first) + f" (on {qrels.name}{_relevant_said(cmp, first)})"
    ctx.state.done("compare", digest, 0, text)
    return StepResult("compare", "ran", text + _partial_pool(ctx, qrels), result=_read_json(path))


def _report(ctx: Context, selected: bool) -> StepResult:
    from .report import make_report
    if not selected:
        return _not_selected("report")
    if ctx.dry_run:
        return StepResult("report", "estimated", "offline")
    p, out = ctx.project, ctx.out
    evaluated = sorted((out / "evaluate").glob("*.json")) if len(ctx.runs) < 2 else []
    agreed = [out / f"agree_{name}.json" for name in ("second", "pool")] if p.qrels is not None else []
    files = [f for f in (out / "compare.json", out / "check.json", _checks_file(ctx), out / "judgments.jsonl",
                         out / "coverage.jsonl", *agreed, out / "questions.jsonl", out / "rejects.jsonl", *evaluated)
             if f.exists() and f.stat().st_size]
    if len(ctx.runs) >= 2 and not (out / "compare.json").exists():
        files = [f for f in files if f.name != "compare.json"]
    qrels = ctx.metric_qrels()
    runs = dict(ctx.runs) if qrels is not None else {}  # named as the project names them, not by their TREC tags
    people = p.qrels if runs and p.qrels is not None and qrels != p.qrels else None  # beside the judge's pool
    if not files and not runs:
        return StepResult("report", "skipped", "nothing to report yet")
    html, md = out / "report.html", out / "report.md"
    digest = ctx.digests.of(*files, qrels, sidecar(qrels), people, *runs.values(), p.chunks, ctx.queries, p.answers,
                            p.human, title=p.title, names=list(runs), relevance_level=p.relevance_level)
    kept = ctx.state.fresh("report", digest, [html, md])
    if kept:  # said with this run's paths (the kept ones were relative to where that run was started)
        return StepResult("report", "up to date", f"{html} and {md}",
                          result={**(kept.get("result") or {}), "html": str(html), "markdown": str(md)})
    common = dict(qrels=qrels if runs else None, runs=runs, people_qrels=people, chunks=p.chunks, queries=ctx.queries,
                  answers=p.answers, human=p.human, title=p.title or f"ragassay: {p.root.resolve().name}",
                  relevance_level=p.relevance_level)
    written = make_report(files, html, **common)
    make_report(files, md, fmt="markdown", **common)
    text = f"{written.path} and {md}"
    done = {"html": str(html), "markdown": str(md), "warnings": written.warnings}
    ctx.state.done("report", digest, 0, text, done)
    return StepResult("report", "ran", text, 0, result=done)


def _track(ctx: Context, selected: bool) -> StepResult:
    from .tracking import track
    if not selected:
        return _not_selected("track")
    if ctx.dry_run:
        return StepResult("track", "estimated", "offline")
    results = [ctx.out / "evaluate" / f"{name}.json" for name in ctx.runs]
    results = [r for r in results if r.exists()]
    if not results:
        return StepResult("track", "skipped", "no results to track")
    if _partial_pool(ctx, ctx.metric_qrels()):  # a history keeps results to compare over time: not partial ones
        missing, pairs = ctx.unjudged or (0, 0)
        return StepResult("track", "skipped", f"the scores are of part of the pool ({missing} of {pairs} pairs not "
                                              "judged yet): not kept in the history until the judge finishes")
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


def _gate(ctx: Context, selected: bool) -> StepResult:
    from .tracking import gate_result
    p = ctx.project
    if not p.gate_min and not p.gate_max:
        return StepResult("gate", "skipped", "no thresholds ([gate] min / max)")
    if not selected:
        return _not_selected("gate")
    if ctx.dry_run:
        return StepResult("gate", "estimated", "offline")
    if _partial_pool(ctx, ctx.metric_qrels()):  # a threshold is not passed on part of the pool
        missing, pairs = ctx.unjudged or (0, 0)
        return StepResult("gate", "skipped", f"the scores are of part of the pool ({missing} of {pairs} pairs not "
                                             "judged yet): no verdict until the judge finishes", 3)
    from ..metrics.rests_on import rests_on_brief
    names = [p.gate_run] if p.gate_run else list(ctx.runs)
    failures, rests = [], []
    for name in names:
        result = ctx.out / "evaluate" / f"{name}.json"
        if not result.exists():
            failures.append(f"{name}: no result to gate")
            continue
        verdict = gate_result(result, p.gate_min, p.gate_max, None, p.allow_errors)
        failures += [f"{name}: {f}" for f in verdict.failures]
        brief = rests_on_brief(verdict.rests_on, only=[*p.gate_min, *p.gate_max]) if verdict.rests_on else ""
        rests += [f"{name}: {brief}"] if brief else []  # what the gated scores rest on, said with the verdict
    said = f" [{'; '.join(rests)}]" if rests else ""
    if failures:
        return StepResult("gate", "failed", "; ".join(failures) + said, 1)
    return StepResult("gate", "ran", f"passed: {len(p.gate_min) + len(p.gate_max)} threshold(s) hold for "
                                     f"{len(names)} run(s){said}")


def _p_said(p: float) -> str:
    """``= 0.042`` or ``< 0.001``: a p-value is never printed as 0."""
    said = fmt_p(p)
    return said if said.startswith("<") else f"= {said}"
