"""A question set drawn wave by wave (:class:`Generator`): each wave's candidates run by the engine
(or, in a dry run, walked through with the answers known), accepted until each level's target is
met, a ceiling on calls is reached or the chunks are spent."""

from __future__ import annotations

import random
import re
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

from ...data.records import Chunk, Question
from ...llm import LLM, LLMConfig
from ...llm.cache import Cache
from ...runtime.engine import Estimate, WorkItem, estimate, progress_bar, run_stage
from ..generate_checks import mix_counts, near_duplicate
from .dry_run import Assumed, Decided, PlannedCalls, Simulation, without_waiting
from .journal import AnsweredFirst, AnswerJournal, answers_path, journal_store
from .result import GenerateResult
from .shapes import LEVEL_ORDER, SEED_USES, Difficulty, GenerateOptions, ceiling_for, reject_record
from .stage import GenerateStage
from .writer import QuestionWriter, SeedDraws

_BUDGET_TAIL = re.compile(r"; \d+ generate items not done: rerun with a higher ceiling to go on$")


class Generator(QuestionWriter):
    """Plans and runs a question set. ``llm`` may be None to plan or estimate only (``config`` then
    names the model)."""

    def __init__(
        self,
        llm: LLM | None,
        chunks: Sequence[Chunk],
        options: GenerateOptions,
        config: LLMConfig | None = None,
        existing: Sequence[Question] = (),
    ):
        super().__init__(chunks, options, llm.config if llm is not None else (config or LLMConfig()), existing)
        self.llm = llm

    def estimate(self, output: str | Path | None = None) -> Estimate:
        """Calls, tokens and cost of a run into the questions file ``output``, offline: the run's
        waves drawn by the run's own code (:meth:`_draw`), each call answered from what the set
        holds (the answers earlier runs kept in ``OUTPUT.answers``, the candidates a killed run
        decided) or the answer cache, as the run will answer it; identical requests asked once, as
        the run asks them. An answer not known yet is taken to pass its check: the count is the
        run's when every such answer passes (the module's docstring says how it can be off
        otherwise, the note by how much at most)."""
        stage = GenerateStage(self)
        store = journal_store(output) if output is not None else None
        answers = AnswerJournal(answers_path(output), read_only=True) if output is not None else None
        cache = Cache.read_only(self.config.cache_path) if self.config.use_cache else None
        if cache is not None and not cache.holds_model(self.config.model or ""):
            cache.close()
            cache = None
        ceiling = self.options.max_calls or self.default_ceiling()
        sim = Simulation(self, stage, store, answers, cache)
        try:
            without_waiting(self._draw(stage, sim.decide, lambda: sim.sent, ceiling))
        finally:
            if cache is not None:
                cache.close()
        est = estimate(
            sim.planned, lambda it: not it.payload, [self.config], stage=PlannedCalls(), share=False
        )  # identical requests are counted once already (see Simulation)
        target = mix_counts(self.options.total, self.options.mix)
        worst = sum(int(n * self.options.attempts_per_question) + 1 for n in target.values() if n)
        known = (
            f"; {answers.held} answers are kept in {answers.path.name} from earlier runs"
            if answers is not None and answers.held
            else ""
        )
        est.note = (
            f"target {target}{known}; the calls above are the run's when every answer not known yet passes "
            f"its check; otherwise each rejected candidate costs another try (at most about {worst} "
            f"candidates in all), and a hard question's passage that answers alone one more comparison "
            f"(at most {sim.open_singles}); the upper bound is generate's ceiling of {ceiling} calls "
            + (
                "(--max-calls)"
                if self.options.max_calls
                else "(its default: 3x the calls of every first candidate accepted, --max-calls N to change)"
            )
        )
        return est

    # -- the whole set
    async def run(self, output: str | Path | None = None) -> GenerateResult:
        """Draw candidates wave by wave until the target is met. Each wave is run by the engine, its
        records journalled beside the questions file ``output`` (see :func:`candidates_path`), and
        every answer kept in ``OUTPUT.answers`` (see :class:`AnswerJournal`), so a killed run resumes
        where it stopped and a rerun sends nothing; without ``output``, in a temporary folder."""
        if output is None:
            with tempfile.TemporaryDirectory(prefix="ragassay-generate-") as tmp:
                return await self._run(Path(tmp) / "questions.jsonl")
        return await self._run(output)

    async def _run(self, output: str | Path) -> GenerateResult:
        store = journal_store(output)
        journal = AnswerJournal(answers_path(output))
        llm = AnsweredFirst(self.llm, journal) if self.llm is not None else None
        stage = GenerateStage(self)
        ceiling = self.options.max_calls or self.default_ceiling()
        bar = progress_bar(self.options.total, 0, "generate", self.options.quiet)  # counts accepted questions

        async def decide(items: list[WorkItem]) -> Decided:
            # AnsweredFirst answers as an LLM does (``ask``, ``config``): all the engine asks of one
            wave_run = await run_stage(stage, items, [cast(LLM, llm)], store, quiet=True, keep_journal=True)
            stage.stop_if_dead()
            # a spending ceiling: the candidates it left were not tried, they are no rejects
            stopped = _BUDGET_TAIL.sub("", wave_run.stopped) if wave_run.stopped else None
            if wave_run.pending:  # the wave's next step is exported: the next round goes on from here
                return Decided([], stopped, wave_run.pending)
            return Decided([stage.outcome(record) for record in wave_run.records], stopped)  # plan order

        try:
            result = await self._draw(stage, decide, self.calls_made, ceiling, bar)
        finally:
            journal.close()
            if bar is not None:
                bar.close()
        result.reused, result.asked, result.answers_file = journal.reused, journal.asked, str(journal.path)
        return result

    async def _draw(
        self,
        stage: GenerateStage,
        decide: Callable[[list[WorkItem]], Awaitable[Decided]],
        calls_made: Callable[[], int],
        ceiling: int,
        bar: Any = None,
    ) -> GenerateResult:
        """The waves of a run, each decided by ``decide`` (the engine in a run; what is known of the
        answers in a dry run, where a question not known yet stands as accepted at its level)."""
        opts = self.options
        rng = random.Random(opts.seed)
        target = mix_counts(opts.total, opts.mix)
        seeds = SeedDraws(self.stratified(rng))
        pool = seeds.chunks
        self.reset_styles()
        accepted: list[Question | Assumed] = []
        rejects: list[dict] = []
        stopped: str | None = None

        def have(level: str) -> int:
            return sum(1 for q in accepted if q.difficulty == level)

        for level in LEVEL_ORDER:
            want = target.get(level, 0)
            tries = 0
            max_tries = int(want * opts.attempts_per_question) + 1
            while have(level) < want and tries < max_tries and pool:
                if calls_made() >= ceiling:
                    stopped = (
                        f"stopped at the ceiling of {ceiling} generate calls ({calls_made()} made); "
                        "--max-calls N raises it"
                    )
                    break
                first_draw = seeds.drawn
                wave, used = self.wave(level, min(want - have(level), max_tries - tries), seeds, rng)
                tries += used
                if not wave:
                    if seeds.spent():
                        stopped = (
                            f"stopped: every usable chunk has seeded {SEED_USES} candidates; add chunks or "
                            "lower --limit"
                        )
                    break
                items = [
                    stage.item(level, group, self.next_style(), (first_draw, i), use)
                    for i, (group, use) in enumerate(wave)
                ]
                decided = await decide(items)
                stopped = decided.stopped or stopped
                if decided.pending:
                    return GenerateResult(
                        [q for q in accepted if isinstance(q, Question)],
                        rejects,
                        dict(self.unfit),
                        target,
                        pending=decided.pending,
                    )
                self._take(decided, level, target, accepted, rejects, bar)
                if stopped:
                    break
            if stopped:
                break
        return GenerateResult(
            [q for q in accepted if isinstance(q, Question)], rejects, dict(self.unfit), target, stopped=stopped
        )

    def _take(
        self,
        decided: Decided,
        level: Difficulty,
        target: dict[str, int],
        accepted: list[Question | Assumed],
        rejects: list[dict],
        bar: Any,
    ) -> None:
        """A wave's outcomes into the set, in plan order: a reject kept with its reason, a question
        accepted unless it nearly repeats an earlier one or its level's quota is already full."""

        def have(level: str) -> int:
            return sum(1 for q in accepted if q.difficulty == level)

        for q, rej in decided.outcomes:
            if q is None:
                if rej is not None:
                    rejects.append(rej)
                continue
            earlier = [a.question for a in [*self.existing, *accepted] if a.question is not None]
            dup = near_duplicate(q.question, earlier) if q.question is not None else None
            full = have(q.difficulty) >= target.get(q.difficulty, 0)
            if (dup or full) and isinstance(q, Question):
                reason = dup or f"the {q.difficulty} quota is already full (asked as {level})"
                rejects.append(
                    reject_record(
                        q.chunk_ids, q.difficulty, q.question, q.answer, reason, q.checks, style=q.style, kind=q.kind
                    )
                )
            elif not full:
                accepted.append(q)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(rejected=len(rejects), refresh=False)

    def calls_made(self) -> int:
        """Requests generate has sent so far (its questions and their checks)."""
        if self.llm is None:
            return 0
        usage = self.llm.usage
        return sum(usage.stage(s).calls for s in ("generate", "verify"))

    def default_ceiling(self) -> int:
        """Three times the calls the target needs when every first candidate is accepted: room for
        rejections, never a runaway (a --limit far above what the chunks can give)."""
        stage = GenerateStage(self)
        items = [
            stage.item(level, group, style, draw, use) for level, group, style, draw, use in self.first_candidates()
        ]
        return ceiling_for(estimate(items, lambda it: False, [self.config], stage=stage, share=False).calls)
