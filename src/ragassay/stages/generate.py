"""``generate``: easy, medium and hard questions from the user's own chunks, with evidence.

For each planned question: pick chunk(s) (stratified across documents; related chunks for hard),
ask the model for a question, answer, kind and verbatim evidence, then drop it, with the reason,
unless every check passes: text checks (self-contained, not copied, length, language, not a
near-duplicate), evidence found in the gold chunks, an independent answerability check from the
gold chunks alone, and for hard questions, not answerable from any single chunk offered. The BM25 rank
and word overlap of each gold chunk are kept in ``checks``; a label they contradict is relabelled
(medium -> easy) or dropped (hard).

Chunk ids in, the same ids out. Each candidate is a work item of the stage engine
(:class:`GenerateStage`): its calls are steps of the engine's ``next_calls``, its outcome (a
question or a reject) a record in the engine's journal beside the question file
(``OUTPUT.candidates.journal``, spent once the set is written). Candidates are drawn in waves, each
from what the last decided. Every answer a call of the set receives is kept, as it comes, in
``OUTPUT.answers`` (:class:`AnswerJournal`), keyed by the exact request as the answer cache is: a
request made again, in this run or a later one, is answered from there and not sent. So a rerun of
a finished set sends nothing, with or without the answer cache, and rebuilds the same set from the
answers (every check that needs no model made again on the chunks as they are now); a killed or
stopped run goes on without asking again for any answer it received; a chunk changed since asks
only the requests that hold its text, and what follows from their answers. Deleting
``OUTPUT.answers`` makes the next run ask the model again. The question file is written at the end
in one atomic step.

A dry run (:meth:`Generator.estimate`) draws the waves with the same code as the run, answering
each call from what the set and the answer cache hold; an answer not known yet is taken to pass
its check. It counts exactly the calls the run makes when every answer not known yet passes.
Otherwise a rejected candidate (another try) or a hard question's passage that answers alone (one
more comparison) costs calls it did not count; and a call that follows an answer not known yet
is counted even when that answer turns it into a request the set already holds (a chunk edited
in a way the model's question does not show), which the run does not send.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..data.coerce import to_dataframe
from ..data.origin import JUDGE_RELEVANT_FROM, JUDGE_SCALE, endpoint_host, origin_of_records, today, write_origin
from ..data.records import CandidateRecord, Chunk, Question, Reject
from ..data.result_models import GenerateSummary
from ..data.writers import write_jsonl, write_qrels
from ..llm import LLM, LLMConfig, LLMError
from ..llm.cache import Cache
from ..llm.client import request_key
from ..llm.prompts import delimit, echoed_id, load_prompt, shown_id
from ..llm.reading import Decision, Explanation
from ..runtime.engine import (
    EARLY_FAILURES,
    Call,
    Estimate,
    OutputStore,
    Stage,
    StageAborted,
    WorkItem,
    estimate,
    failing_alike,
    fingerprint,
    progress_bar,
    run_stage,
)
from ..runtime.store import journal_path, record_line
from .exports import EXPORT_ALIASES, EXPORT_FORMATS, EXPORTS, export, export_format  # noqa: F401 (callers import them from here)
from .generate_checks import BM25, evidence_found, mix_counts, near_duplicate, overlap, question_problems, unfit_chunk

Difficulty = Literal["easy", "medium", "hard"]
LEVEL_ORDER = ("hard", "medium", "easy")  # hardest to fill first; relabels land in easy
SEED_USES = 2  # each usable chunk seeds at most this many candidates in a run: then the chunks are spent


def ceiling_for(estimated_calls: int) -> int:
    """generate's default ceiling: three times the calls of the target when every first candidate is
    accepted (room for rejections), and a little more for a tiny target."""
    return 3 * max(1, estimated_calls) + 20


class Evidence(BaseModel):
    chunk_id: str
    quote: str
    role: Literal["answer", "bridge"]


MULTI_HOP = ("bridge", "comparison", "aggregation")


class GeneratedQuestion(BaseModel):
    question: str
    answer: str
    kind: Literal["factoid", "yes_no", "how_to", "conditional", "multi_fact", "bridge", "comparison", "aggregation"]
    evidence: list[Evidence] = Field(min_length=1)


class BlindAnswer(BaseModel):
    """An answer from the passages alone, written without seeing the proposed answer."""

    own_answer: str
    answerable: bool
    reason: Explanation


class SameAnswer(BaseModel):
    same: bool
    reason: Explanation


class Critique(BaseModel):
    self_contained: Decision = Field(ge=1, le=5)
    clear: Decision = Field(ge=1, le=5)
    realistic: Decision = Field(ge=1, le=5)
    reason: Explanation


CRITIC_MIN = 3  # a question scoring below this on any point is dropped


# what each style asks for: the forms real users type into a search box
STYLES = {
    "question": "a well-formed question in a full sentence.",
    "keywords": "a short keyword query of 3 to 6 words, no question mark, the way people type into a search box "
                "(e.g. 'refund time gift card').",
    "lowercase": "a casual question typed quickly: all lower case, little punctuation, one small typo.",
    "task": "a task the user wants to get done, starting 'how do i' or 'how can i' (e.g. 'how do i return a "
            "gift').",
}


@dataclass
class GenerateOptions:
    total: int = 30
    mix: dict[str, float] = field(default_factory=lambda: {"easy": 0.4, "medium": 0.4, "hard": 0.2})
    seed: int = 0
    attempts_per_question: float = 2.0   # candidate chunks tried per wanted question, at most
    max_calls: int | None = None         # a ceiling on generate's requests (default: 3x the target's estimate)
    max_per_doc: int | None = None       # candidates per document before others run out (default: total / 4)
    styles: dict[str, float] = field(default_factory=lambda: {"question": 0.4, "keywords": 0.25, "lowercase": 0.15,
                                                             "task": 0.2})
    quiet: bool = False


@dataclass
class GenerateResult:
    accepted: list[Question]
    rejects: list[dict]
    unfit_chunks: dict[str, str]
    target: dict[str, int]
    pending: int = 0  # candidates waiting for batch answers: the set is not finished, nothing is written
    stopped: str | None = None  # why generation stopped before the target: a ceiling, or chunks spent
    # set by a run through the scaffold (ragassay.generate, the command):
    usage: dict[str | None, dict[str, Any]] = field(default_factory=dict)  # model -> calls, tokens, cost
    usage_text: str = ""  # the same, as the line the command prints
    batch_note: str = ""  # what a run on batch files or the Batch API left to do
    kept: int = 0  # questions of the set being grown (--append) written before the new ones
    exported: list[tuple[str, list[Path]]] = field(default_factory=list)  # (format, files) of each --export
    # answers of this set's calls: taken from what earlier runs kept in OUTPUT.answers, and asked now
    # (of the endpoint or its cache)
    reused: int = 0
    asked: int = 0
    answers_file: str = ""

    def summary(self) -> str:
        per_level = Counter(q.difficulty for q in self.accepted)
        kinds = Counter(q.kind for q in self.accepted)
        reasons = Counter(r["reason"].split(":")[0].split(" (")[0] for r in self.rejects)
        lines = [f"accepted {len(self.accepted)}: " + ", ".join(
            f"{k} {per_level.get(k, 0)}/{self.target.get(k, 0)}" for k in ("easy", "medium", "hard")),
            "kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
            "styles: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(q.style for q in self.accepted).items())),
            f"rejected {len(self.rejects)}" + (": " + "; ".join(f"{k} {v}" for k, v in reasons.most_common()) if reasons else ""),
            f"chunks unfit to ask about: {len(self.unfit_chunks)}"]
        failed = Counter(r["reason"].split(": ", 1)[1] for r in self.rejects
                         if r["reason"].startswith("model call failed: "))
        if failed:  # say why the model's answers were unusable, not only that they were
            why, n = failed.most_common(1)[0]
            lines.append(f"model calls failed {sum(failed.values())} times; commonest ({n}): {why[:300]}")
        relabelled = sum(1 for q in self.accepted if q.checks.get("relabelled"))
        if relabelled:
            lines.append(f"relabelled: {relabelled} asked as medium are easy (a gold chunk is BM25 rank 1 with most "
                         "of the question's words); see checks.relabelled")
        short = self.shortfall
        if short:
            lines.append("fell short of the target: " + ", ".join(f"{k} {v} fewer" for k, v in short.items())
                         + "; the rejects above say why (a rerun with --limit or another --seed tries other chunks)")
        if self.stopped:
            lines.append(self.stopped)
        if self.reused and not self.asked:
            lines.append(f"nothing was sent: all {self.reused} answers this set needs were kept by an earlier run in "
                         f"{self.answers_file} (delete it to ask the model again)")
        elif self.reused:
            lines.append(f"{self.reused} answers kept by an earlier run in {self.answers_file} were used, not asked "
                         f"again; {self.asked} asked now")
        return "\n".join(lines)

    @property
    def shortfall(self) -> dict[str, int]:
        per_level = Counter(q.difficulty for q in self.accepted)
        return {k: n - per_level.get(k, 0) for k, n in self.target.items() if per_level.get(k, 0) < n}

    @property
    def exit_code(self) -> int:
        """0 the target was met, or the set waits for batch answers; 3 some questions are missing; 1
        none was accepted."""
        if self.pending:
            return 0
        if not self.accepted:
            return 1
        return 3 if self.shortfall else 0

    def to_dict(self) -> dict:
        per_level = Counter(q.difficulty for q in self.accepted)
        return GenerateSummary(
            accepted=len(self.accepted), target=dict(self.target),
            delivered={k: per_level.get(k, 0) for k in ("easy", "medium", "hard")}, shortfall=self.shortfall,
            rejected=len(self.rejects), relabelled=sum(1 for q in self.accepted if q.checks.get("relabelled")),
            kinds=dict(Counter(q.kind for q in self.accepted)), styles=dict(Counter(q.style for q in self.accepted)),
            reject_reasons=dict(Counter(r["reason"].split(":")[0].split(" (")[0] for r in self.rejects)),
            unfit_chunks=len(self.unfit_chunks), stopped=self.stopped, usage=self.usage,
            usage_text=self.usage_text).to_dict()


    def to_dataframe(self) -> Any:
        """The accepted questions as a pandas DataFrame (pandas is optional)."""
        return to_dataframe(list(self.accepted))


def cited(generated: GeneratedQuestion, offered: Sequence[str]) -> list[str]:
    """The chunks the evidence cites, in the order offered: only these are gold."""
    used = {e.chunk_id for e in generated.evidence}
    return [c for c in offered if c in used]


def gold_grades(generated: GeneratedQuestion, gold: Sequence[str]) -> dict[str, int]:
    """Grade 3 for a chunk that states the answer, 2 for one that only supports a hop."""
    roles: dict[str, set[str]] = {}
    for e in generated.evidence:
        roles.setdefault(e.chunk_id, set()).add(e.role)
    return {c: 3 if "answer" in roles.get(c, {"answer"}) else 2 for c in gold}


def _qid(chunk_ids: Sequence[str], difficulty: str, question: str) -> str:
    h = hashlib.sha256(json.dumps([list(chunk_ids), difficulty, question]).encode()).hexdigest()[:10]
    return f"q-{h}"


class Generator:
    """Plans and runs a question set. ``llm`` may be None to plan or estimate only (``config`` then
    names the model)."""

    def __init__(self, llm: LLM | None, chunks: Sequence[Chunk], options: GenerateOptions,
                 config: LLMConfig | None = None, existing: Sequence[Question] = ()):
        self.llm = llm
        self.existing = list(existing)  # a set being grown (--append): no duplicate of these, their chunks last
        self.config = llm.config if llm is not None else (config or LLMConfig())
        self.options = options
        self._style_counts: dict[str, int] = {}
        self.chunks = {c.id: c for c in chunks}
        self.order = [c.id for c in chunks]
        self.unfit = {c.id: why for c in chunks if (why := unfit_chunk(c.text))}
        self.fit = [cid for cid in self.order if cid not in self.unfit]
        self.index = BM25(self.order, [self.chunks[c].text for c in self.order])
        self.corpus = corpus_digest(chunks)  # a candidate's checks rank its chunks against all of them
        self.q_prompt = load_prompt("generate_question")
        self.v_prompt = load_prompt("generate_verify")
        self.c_prompt = load_prompt("generate_compare")
        self.critic_prompt = load_prompt("generate_critic")

    # -- planning
    def stratified(self, rng: random.Random) -> list[str]:
        """Fit chunks in the order candidates are drawn: documents in proportion to their size (a
        200-chunk document is drawn about 100 times as often as a 2-chunk one), but no document more
        than ``max_per_doc`` times before every other document has run out."""
        import heapq
        by_doc: dict[str, list[str]] = {}
        for cid in self.fit:
            by_doc.setdefault(self.chunks[cid].doc_id or cid, []).append(cid)
        docs = list(by_doc)
        rng.shuffle(docs)
        for d in docs:
            rng.shuffle(by_doc[d])
        # weighted round robin: the next draw goes to the document furthest below its share
        heap = [(0.5 / len(by_doc[d]), i, d) for i, d in enumerate(docs)]
        heapq.heapify(heap)
        taken = dict.fromkeys(docs, 0)
        order = []
        while heap:
            _, i, d = heapq.heappop(heap)
            order.append(by_doc[d][taken[d]])
            taken[d] += 1
            if taken[d] < len(by_doc[d]):
                heapq.heappush(heap, ((taken[d] + 0.5) / len(by_doc[d]), i, d))
        cap = self.options.max_per_doc or max(2, -(-self.options.total // 4))
        seen: dict[str, int] = {}
        first, rest = [], []
        for cid in order:
            d = self.chunks[cid].doc_id or cid
            seen[d] = seen.get(d, 0) + 1
            (first if seen[d] <= cap else rest).append(cid)
        used = {c for q in self.existing for c in q.chunk_ids}
        ordered = first + rest
        return [c for c in ordered if c not in used] + [c for c in ordered if c in used]

    def group_for(self, cid: str, rng: random.Random) -> list[str] | None:
        """2-3 related chunks for a hard question: BM25 neighbours on the chunk's distinctive terms,
        from any document (bridges and comparisons often cross documents), then the same document."""
        doc = self.chunks[cid].doc_id
        near = [c for c, _ in self.index.neighbours(cid, 4) if c in self.fit]
        same = [c for c in self.fit if c != cid and doc and self.chunks[c].doc_id == doc and c not in near]
        partners = (near + same)[:2]
        if not partners:
            return None
        return [cid] + partners[: 1 if rng.random() < 0.5 else 2]

    def first_waves(self) -> list[tuple[str, list[str], str]]:
        """(difficulty, chunk ids, style) of every candidate a run tries when each one is accepted:
        the same code path as :meth:`run`, so the dry run's plan is the run's."""
        return [(level, group, style) for level, group, style, _, _ in self.first_candidates()]

    def first_candidates(self) -> list[tuple[str, list[str], str, tuple[int, int], int]]:
        """:meth:`first_waves` with each candidate's draw (where its wave began, its place in it)
        and how many times its first chunk seeded a candidate before, as :meth:`run` numbers them."""
        rng = random.Random(self.options.seed)
        pool, cursor = self.stratified(rng), [0]
        out = []
        for level in LEVEL_ORDER:
            want = mix_counts(self.options.total, self.options.mix).get(level, 0)
            first_draw = cursor[0]
            out += [(level, g, self.next_style(), (first_draw, i), use)
                    for i, (g, use) in enumerate(self._wave(level, want, pool, cursor, rng)[0])]
        self._style_counts.clear()
        return out

    def next_style(self) -> str:
        """The style furthest below its share so far (a deterministic weighted round robin)."""
        mix = {k: v for k, v in self.options.styles.items() if v > 0}
        n = sum(self._style_counts.values()) + 1
        total = sum(mix.values())

        def behind(k: str) -> float:  # how far this style is below its share after the next draw
            return mix[k] * n / total - self._style_counts.get(k, 0)
        style = max(mix, key=behind)  # ties: the first in the mix
        self._style_counts[style] = self._style_counts.get(style, 0) + 1
        return style

    def _wave(self, level: str, n: int, pool: list[str], cursor: list[int],
              rng: random.Random) -> tuple[list[tuple[list[str], int]], int]:
        """The next ``n`` candidates of a level (fewer when a hard group cannot be formed), each as
        its chunk ids and how many times its first chunk seeded a candidate before; and how many
        tries that used."""
        wave, tries = [], 0
        for _ in range(n if pool else 0):
            if cursor[0] >= len(pool) * SEED_USES:
                break  # every chunk has seeded its share of candidates: the chunks are spent
            use, at = divmod(cursor[0], len(pool))
            cid = pool[at]
            cursor[0] += 1
            tries += 1
            group = self.group_for(cid, rng) if level == "hard" else [cid]
            if group:
                wave.append((group, use))
        return wave, tries

    def _passages(self, chunk_ids: list[str]) -> str:
        def one(c: str) -> str:
            chunk = self.chunks[c]
            return delimit(f"PASSAGE id={shown_id(c)}", f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text)
        return "\n\n".join(one(c) for c in chunk_ids)

    def question_messages(self, chunk_ids: list[str], difficulty: str, style: str = "question") -> list[dict[str, str]]:
        return self.q_prompt.messages(difficulty=difficulty, passages=self._passages(chunk_ids), style=STYLES[style])

    def blind_messages(self, question: str, chunk_ids: list[str]) -> list[dict[str, str]]:
        """Answer the question from the passages: the proposed answer is not shown."""
        return self.v_prompt.messages(question=delimit("QUESTION", question), passages=self._passages(chunk_ids))

    def compare_messages(self, question: str, proposed: str, blind: str) -> list[dict[str, str]]:
        return self.c_prompt.messages(question=delimit("QUESTION", question), first=delimit("FIRST ANSWER", proposed),
                                      second=delimit("SECOND ANSWER", blind))

    def critic_messages(self, question: str, style: str) -> list[dict[str, str]]:
        return self.critic_prompt.messages(style=STYLES[style], question=delimit("QUESTION", question))

    def question_call(self, chunk_ids: list[str], difficulty: str, style: str, sample: int = 0) -> Call:
        """``sample``: a chunk's second try as a seed is another sample of the same prompt, not the
        same request (which the answer cache, and the set's own answers, would answer alike)."""
        return Call.of(0, self.question_messages(chunk_ids, difficulty, style), GeneratedQuestion, "generate", 600,
                       max(self.config.temperature, 0.7), sample=sample)

    def blind_call(self, question: str, chunk_ids: list[str]) -> Call:
        return Call.of(0, self.blind_messages(question, chunk_ids), BlindAnswer, "verify", 400)

    def compare_call(self, question: str, proposed: str, blind: str) -> Call:
        return Call.of(0, self.compare_messages(question, proposed, blind), SameAnswer, "verify", 200)

    def critic_call(self, question: str, style: str) -> Call:
        return Call.of(0, self.critic_messages(question, style), Critique, "verify", 200)

    def text_checks(self, g: GeneratedQuestion, chunk_ids: list[str], difficulty: str) -> tuple[str | None, dict, str]:
        """The checks that need no model, on a generated question: (why it is dropped or None, the
        scores kept in ``checks``, its label: medium relabelled easy when a gold chunk gives it away)."""
        problems = question_problems(g.question, g.answer, [self.chunks[c].text for c in chunk_ids])
        if problems:
            return "; ".join(problems), {}, difficulty
        for ev in g.evidence:
            if ev.chunk_id not in chunk_ids:
                return f"evidence cites a chunk it was not given ({ev.chunk_id!r})", {}, difficulty
            if not evidence_found(ev.quote, self.chunks[ev.chunk_id].text):
                return f"evidence quote not found in chunk {ev.chunk_id!r}: {ev.quote[:80]!r}", {}, difficulty
        gold = cited(g, chunk_ids)
        if difficulty == "hard":
            if g.kind not in MULTI_HOP:
                return (f"hard question of no multi-hop type (kind {g.kind!r}; expected bridge, comparison or "
                        "aggregation)"), {}, difficulty
            if len(gold) < 2:
                return "hard question that cites one passage", {}, difficulty
        elif g.kind in MULTI_HOP:
            return f"a {difficulty} question of a multi-hop kind ({g.kind!r})", {}, difficulty
        ranks = {c: self.index.rank_of(g.question, c) for c in gold}
        overlaps = {c: round(overlap(g.question, self.chunks[c].text), 3) for c in gold}
        checks: dict = {"bm25_rank": ranks, "word_overlap": overlaps}
        if len(gold) < len(chunk_ids):
            checks["offered_not_cited"] = [c for c in chunk_ids if c not in gold]
        easy_looking = any(ranks[c] == 1 and overlaps[c] >= 0.7 for c in gold)
        if difficulty == "hard" and easy_looking:
            why = "label contradicted by evidence: a gold chunk is BM25 rank 1 with most of the words"
            return why, checks, difficulty
        if difficulty == "medium" and easy_looking:
            checks["relabelled"] = "medium -> easy: gold chunk is BM25 rank 1 with most of the question's words"
            return None, checks, "easy"
        return None, checks, difficulty

    def estimate(self, output: str | Path | None = None) -> Estimate:
        """Calls, tokens and cost of a run into the questions file ``output``, offline: the run's
        waves drawn by the run's own code (:meth:`_draw`), each call answered from what the set
        holds (the answers earlier runs kept in ``OUTPUT.answers``, the candidates a killed run
        decided) or the answer cache, as the run will answer it; identical requests asked once, as
        the run asks them. An answer not known yet is taken to pass its check: the count is the
        run's when every such answer passes (the module's docstring says how it can be off
        otherwise, the note by how much at most)."""
        stage = GenerateStage(self)
        store = _journal_store(output) if output is not None else None
        answers = AnswerJournal(answers_path(output), read_only=True) if output is not None else None
        cache = Cache.read_only(self.config.cache_path) if self.config.use_cache else None
        if cache is not None and not cache.holds_model(self.config.model or ""):
            cache.close()
            cache = None
        ceiling = self.options.max_calls or self.default_ceiling()
        sim = _Simulation(self, stage, store, answers, cache)
        try:
            _without_waiting(self._draw(stage, sim.decide, lambda: sim.sent, ceiling))
        finally:
            if cache is not None:
                cache.close()
        est = estimate(sim.planned, lambda it: not it.payload, [self.config], stage=_PlannedCalls(),
                       share=False)  # identical requests are counted once already (see _Simulation)
        target = mix_counts(self.options.total, self.options.mix)
        worst = sum(int(n * self.options.attempts_per_question) + 1 for n in target.values() if n)
        known = (f"; {answers.held} answers are kept in {answers.path.name} from earlier runs"
                 if answers is not None and answers.held else "")
        est.note = (f"target {target}{known}; the calls above are the run's when every answer not known yet passes "
                    f"its check; otherwise each rejected candidate costs another try (at most about {worst} "
                    f"candidates in all), and a hard question's passage that answers alone one more comparison "
                    f"(at most {sim.open_singles}); the upper bound is generate's ceiling of {ceiling} calls "
                    + ("(--max-calls)" if self.options.max_calls else
                       "(its default: 3x the calls of every first candidate accepted, --max-calls N to change)"))
        return est

    # -- the whole set
    async def run(self, output: str | Path | None = None) -> GenerateResult:
        """Draw candidates wave by wave until the target is met. Each wave is run by the engine, its
        records journalled beside the questions file ``output`` (see :func:`candidates_path`), and
        every answer kept in ``OUTPUT.answers`` (see :class:`AnswerJournal`), so a killed run resumes
        where it stopped and a rerun sends nothing; without ``output``, in a temporary folder."""
        if output is None:
            import tempfile
            with tempfile.TemporaryDirectory(prefix="ragassay-generate-") as tmp:
                return await self._run(Path(tmp) / "questions.jsonl")
        return await self._run(output)

    async def _run(self, output: str | Path) -> GenerateResult:
        store = _journal_store(output)
        journal = AnswerJournal(answers_path(output))
        llm = AnsweredFirst(self.llm, journal) if self.llm is not None else None
        stage = GenerateStage(self)
        ceiling = self.options.max_calls or self.default_ceiling()
        bar = progress_bar(self.options.total, 0, "generate", self.options.quiet)  # counts accepted questions

        async def decide(items: list[WorkItem]) -> _Decided:
            done = await run_stage(stage, items, [llm], store, quiet=True, keep_journal=True)
            stage.stop_if_dead()
            # a spending ceiling: the candidates it left were not tried, they are no rejects
            stopped = _BUDGET_TAIL.sub("", done.stopped) if done.stopped else None
            if done.pending:  # the wave's next step is exported: the next round goes on from here
                return _Decided([], stopped, done.pending)
            return _Decided([stage.outcome(record) for record in done.records], stopped)  # plan order
        try:
            result = await self._draw(stage, decide, self.calls_made, ceiling, bar)
        finally:
            journal.close()
            if bar is not None:
                bar.close()
        result.reused, result.asked, result.answers_file = journal.reused, journal.asked, str(journal.path)
        return result

    async def _draw(self, stage: GenerateStage, decide: Callable[[list[WorkItem]], Awaitable[_Decided]],
                    calls_made: Callable[[], int], ceiling: int, bar: Any = None) -> GenerateResult:
        """The waves of a run, each decided by ``decide`` (the engine in a run; what is known of the
        answers in a dry run, where a question not known yet stands as accepted at its level)."""
        opts = self.options
        rng = random.Random(opts.seed)
        target = mix_counts(opts.total, opts.mix)
        pool, cursor = self.stratified(rng), [0]
        self._style_counts.clear()
        accepted: list[Question | _Assumed] = []
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
                    stopped = (f"stopped at the ceiling of {ceiling} generate calls ({calls_made()} made); "
                               "--max-calls N raises it")
                    break
                first_draw = cursor[0]
                wave, used = self._wave(level, min(want - have(level), max_tries - tries), pool, cursor, rng)
                tries += used
                if not wave:
                    if cursor[0] >= len(pool) * SEED_USES:
                        stopped = (f"stopped: every usable chunk has seeded {SEED_USES} candidates; add chunks or "
                                   "lower --limit")
                    break
                items = [stage.item(level, group, self.next_style(), (first_draw, i), use)
                         for i, (group, use) in enumerate(wave)]
                decided = await decide(items)
                stopped = decided.stopped or stopped
                if decided.pending:
                    return GenerateResult([q for q in accepted if isinstance(q, Question)], rejects, dict(self.unfit),
                                          target, pending=decided.pending)
                for q, rej in decided.outcomes:
                    if q is None:
                        rejects.append(rej)
                        continue
                    earlier = [a.question for a in [*self.existing, *accepted] if a.question is not None]
                    dup = near_duplicate(q.question, earlier) if q.question is not None else None
                    full = have(q.difficulty) >= target.get(q.difficulty, 0)
                    if (dup or full) and isinstance(q, Question):
                        reason = dup or f"the {q.difficulty} quota is already full (asked as {level})"
                        rejects.append(reject_record(q.chunk_ids, q.difficulty, q.question, q.answer, reason, q.checks,
                                                     style=q.style, kind=q.kind))
                    elif not full:
                        accepted.append(q)
                        if bar is not None:
                            bar.update(1)
                            bar.set_postfix(rejected=len(rejects), refresh=False)
                if stopped:
                    break
            if stopped:
                break
        return GenerateResult([q for q in accepted if isinstance(q, Question)], rejects, dict(self.unfit), target,
                              stopped=stopped)

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
        items = [stage.item(level, group, style, draw, use) for level, group, style, draw, use in self.first_candidates()]
        return ceiling_for(estimate(items, lambda it: False, [self.config], stage=stage, share=False).calls)


_BUDGET_TAIL = re.compile(r"; \d+ generate items not done: rerun with a higher ceiling to go on$")


def candidates_path(output: str | Path) -> Path:
    """Where the engine keeps the candidates of a run writing the questions file ``output``: only
    their journal (``OUTPUT.candidates.journal``) is ever written, and removed with the set written.
    Not the questions file itself: that holds questions, whatever was there before is replaced."""
    return Path(f"{output}.candidates")


def _journal_store(output: str | Path) -> OutputStore:
    """The engine's store of candidate records for the questions file ``output``."""
    return OutputStore(candidates_path(output), lambda r: r["key"])


def answers_path(output: str | Path) -> Path:
    """Where the answers of the calls made for the questions file ``output`` are kept
    (``OUTPUT.answers``, see :class:`AnswerJournal`)."""
    return Path(f"{output}.answers")


def corpus_digest(chunks: Sequence[Chunk]) -> str:
    """A fingerprint of every chunk (id, title, text), in order."""
    h = hashlib.sha256()
    for c in chunks:
        for part in (c.id, c.title or "", c.text):
            data = part.encode("utf-8", "surrogatepass")
            h.update(b"%d:" % len(data) + data)
    return h.hexdigest()[:24]


class AnswerJournal:
    """The answers the calls of one question set received, one JSON line each
    (``{"request": KEY, "answer": {...}}``, KEY the answer cache's key of the exact request: model,
    endpoint, messages, schema, sampling), appended and flushed as each comes, so a kill loses
    none received. A request found here is answered from here (:class:`AnsweredFirst`), in the run
    that asked it (identical requests of several waves are asked once, as the engine asks them once
    in a wave) and in every later run into the same questions file: the set's own record of its
    answers, kept with ``--no-cache`` as without it. A last line cut short by a kill is dropped, and
    cut off before this run appends; a line that does not read as an answer is ignored (asked again)."""

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self._lines: dict[str, bytes] = {}  # request key -> its line
        self._end = 0  # where the last whole line ends
        self._f: Any = None
        self.reused = 0  # answers kept by an earlier run, used by this one
        self.asked = 0  # answers this run asked for (and kept)
        self._earlier: set[str] = set()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        self._size = len(data)
        at = 0
        while True:
            nl = data.find(b"\n", at)
            if nl < 0:
                break
            line = data[at:nl]
            at = self._end = nl + 1
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("request"), str) and isinstance(entry.get("answer"), dict):
                self._lines[entry["request"]] = line
        self._earlier = set(self._lines)

    @property
    def held(self) -> int:
        """Answers held (kept by earlier runs and this one)."""
        return len(self._lines)

    def get(self, key: str, response_model: type[BaseModel]) -> BaseModel | None:
        line = self._lines.get(key)
        if line is None:
            return None
        try:
            answer = response_model.model_validate(json.loads(line)["answer"])
        except (ValueError, ValidationError):
            return None  # the answer's model changed shape since: asked again
        if key in self._earlier:
            self._earlier.discard(key)  # counted once: a repeat within this run is not another earlier answer
            self.reused += 1
        return answer

    def put(self, key: str, answer: BaseModel) -> None:
        if self.read_only:
            raise RuntimeError("a read-only answer journal")
        line = record_line({"request": key, "answer": answer.model_dump(mode="json")}).encode("utf-8", "surrogatepass")
        if self._f is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(self.path, "ab")
            if self._f.tell() == self._size and self._end < self._size:
                self._f.truncate(self._end)  # a line a kill cut short: this run's lines start on their own
                self._f.seek(self._end)
        self._f.write(line + b"\n")
        self._f.flush()
        self._lines[key] = line
        self.asked += 1

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


class AnsweredFirst:
    """The run's LLM as the engine sees it: a request the set's :class:`AnswerJournal` holds is
    answered from it; any other is asked of ``llm`` (its cache, batch files or endpoint) and its
    answer kept there before it is used."""

    def __init__(self, llm: LLM, journal: AnswerJournal):
        self.llm, self.journal = llm, journal
        self.config = llm.config

    async def ask(self, messages: list[dict[str, str]], response_model: type[BaseModel], *, stage: str = "default",
                  max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None,
                  sample: int = 0) -> BaseModel:
        key = self.llm.request_key(messages, response_model, self.llm.params(max_tokens, temperature, seed, sample))
        answer = self.journal.get(key, response_model)
        if answer is None:
            answer = await self.llm.ask(messages, response_model, stage=stage, max_tokens=max_tokens,
                                        temperature=temperature, seed=seed, sample=sample)
            self.journal.put(key, answer)
        return answer


@dataclass(frozen=True)
class _Assumed:
    """A dry run's candidate whose question is not known yet: taken as accepted at its level."""

    difficulty: str
    question: None = None


@dataclass
class _Decided:
    """What one wave decided: each candidate's (question, None) or (None, reject), in plan order."""

    outcomes: list[tuple[Question | _Assumed | None, dict | None]]
    stopped: str | None = None
    pending: int = 0


class _Simulation:
    """A dry run's waves: each candidate walked through its steps with the answers known (the set's
    :class:`AnswerJournal`, the answer cache) and None for the rest, as the run will walk it, and
    the calls it will make kept step by step (``planned``: one item a candidate, its steps its
    payload) for the engine's estimate to count and price. A candidate a killed run decided is
    read from the candidates journal; a request met before in the run is not made again (the run
    answers it from its journal, or shares it within a wave). Calls built from an answer not known
    yet hold placeholders: they are counted each, never taken for one another."""

    def __init__(self, gen: Generator, stage: GenerateStage, store: OutputStore | None, answers: AnswerJournal | None,
                 cache: Cache | None):
        self.gen, self.stage, self.store, self.answers, self.cache = gen, stage, store, answers, cache
        self.planned: list[WorkItem] = []
        self.sent = 0  # requests the run sends (not answered by the set's answers or the cache)
        self.open_singles = 0  # single-chunk checks of hard questions not known yet: each may need a comparison
        self._met: dict[bytes, BaseModel | None] = {}

    async def decide(self, items: list[WorkItem]) -> _Decided:
        outcomes: list[tuple[Question | _Assumed | None, dict | None]] = []
        for it in items:
            if self.store is not None and self.store.done(it.key):
                outcomes.append(self.stage.outcome(self.store.record(it.key)))
                self.planned.append(WorkItem(it.key, [], payload=[]))
                continue
            cand: Candidate = it.payload
            steps: list[list[Call]] = []
            answers: list[BaseModel | None] = []
            calls, known = it.calls, True
            while calls:
                to_make = []
                for call in calls:
                    answer, make = self._answer(call, known)
                    if make:
                        to_make.append(call)
                    answers.append(answer)
                if to_make:
                    steps.append(to_make)
                known = known and all(a is not None for a in answers)
                calls = self.stage.next_calls(it, answers)
            if cand.level == "hard":
                self.open_singles += sum(1 for a in answers[4:4 + len(cand.group)] if a is None)
            walk = self.stage.walk(cand, answers)
            self.stage.forget(cand)
            if walk.reject is not None:
                outcomes.append((None, walk.reject))
            else:
                outcomes.append((walk.question or _Assumed(cand.level), None))
            self.planned.append(WorkItem(it.key, steps[0] if steps else [], payload=steps))
        return _Decided(outcomes)

    def _answer(self, call: Call, known: bool) -> tuple[BaseModel | None, bool]:
        """The answer to ``call`` if it is known, and whether the run makes the call (to the cache or
        the endpoint). ``known``: every earlier answer of its candidate is known (the call is the
        real request, not one with placeholders)."""
        if not known:
            self.sent += 1
            return None, True
        digest = call.digest()
        if digest in self._met:
            return self._met[digest], False
        cfg = self.gen.config
        key = request_key(cfg.model or "", call.message_list, call.response_model, call.params(cfg.temperature),
                          cfg.base_url)
        answer = self.answers.get(key, call.response_model) if self.answers is not None else None
        if answer is not None:
            self._met[digest] = answer
            return answer, False
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            try:
                answer = call.response_model.model_validate(hit["answer"])
            except ValidationError:
                answer = None
        if answer is None:
            self.sent += 1
        self._met[digest] = answer
        return answer, True


class _PlannedCalls(Stage):
    """generate as its dry run hands it to the engine's estimate: each item's payload is the calls
    the run makes for one candidate, step by step (see :class:`_Simulation`)."""

    name = "generate"
    record_model = CandidateRecord

    def next_calls(self, item: WorkItem, answers: Sequence[BaseModel | None]) -> list[Call]:
        made = 0
        for i, step in enumerate(item.payload):
            made += len(step)
            if made >= len(answers):
                return item.payload[i + 1] if i + 1 < len(item.payload) else []
        return []


def _without_waiting(coroutine: Awaitable[Any]) -> Any:
    """The value of a coroutine that never waits (a dry run's waves), run without an event loop."""
    try:
        coroutine.send(None)  # type: ignore[attr-defined]
    except StopIteration as done:
        return done.value
    coroutine.close()  # type: ignore[attr-defined]
    raise RuntimeError("a dry run's waves waited for something")


def reject_record(chunk_ids: Sequence[str], difficulty: str | None, question: str | None, answer: str | None,
                  reason: str, scores: dict | None = None, style: str | None = None, kind: str | None = None) -> dict:
    """A reject, in the one shape every cause of a reject shares (:class:`Reject`)."""
    return Reject(chunk_ids=list(chunk_ids), difficulty=difficulty, question=question, answer=answer, style=style,
                  kind=kind, reason=reason, scores=scores or {}).model_dump(mode="json")


@dataclass(frozen=True)
class Candidate:
    """One planned candidate: its difficulty, the chunks offered, the style asked for."""

    level: str
    group: tuple[str, ...]
    style: str


@dataclass
class _Walk:
    """Where a candidate stands after the answers so far: the next calls, or its outcome."""

    calls: list[Call] = field(default_factory=list)
    question: Question | None = None
    reject: dict | None = None


class GenerateStage(Stage):
    """generate on the engine: one work item per candidate, its steps through :meth:`next_calls`
    (question -> blind answer -> compare -> critic -> for hard, each chunk offered alone -> compare
    the answers a single chunk gave). Every decision is made from the answers alone, so a dry run
    (answers unknown: the accepted path) and a resumed run plan exactly what a run sends."""

    name = "generate"
    record_model = CandidateRecord

    def __init__(self, generator: Generator):
        self.gen = generator
        self.failures: list[LLMError] = []
        self.answered = False
        # the text checks of a candidate's question, made once: each step walks its answers again, and
        # ranking the gold chunks by BM25 scores the whole corpus
        self._checked: dict[tuple[Candidate, str], tuple[str | None, dict, str]] = {}

    def identity(self, record: dict) -> str:
        return record["key"]  # a candidate is its draw: the key says which

    def item(self, level: str, group: Sequence[str], style: str, draw: Any = 0, use: int = 0) -> WorkItem:
        """A candidate's work item. Its key holds the draw (the candidate's place in the run), so a
        chunk that seeds two candidates alike gets two tries, as two draws (``use``: the first
        chunk's tries before this one, each asked as another sample); and the corpus, which its
        checks rank its chunks against."""
        g = self.gen
        cand = Candidate(level, tuple(group), style)
        key = fingerprint("generate", level, list(group), style, draw, [g.chunks[c].text for c in group],
                          [g.chunks[c].title for c in group], g.config.model, g.config.temperature,
                          [p.id for p in (g.q_prompt, g.v_prompt, g.c_prompt, g.critic_prompt)], use, g.corpus)
        return WorkItem(key, payload=cand, build=lambda: [g.question_call(list(group), level, style, use)])

    def next_calls(self, item: WorkItem, answers: Sequence[BaseModel | None]) -> list[Call]:
        return self.walk(item.payload, answers).calls

    async def finish(self, item: WorkItem, answers: list[BaseModel], llms: Sequence[LLM]) -> list[dict]:
        walk = self.walk(item.payload, answers)
        self.forget(item.payload)
        if walk.question is not None:
            return [{"key": item.key, "status": "ok", "question": walk.question.model_dump(mode="json")}]
        return [{"key": item.key, "status": "ok", "reject": walk.reject}]

    def error_records(self, item: WorkItem, error: LLMError) -> list[dict]:
        if not self.answered and isinstance(error, EARLY_FAILURES):
            self.failures.append(error)
        c: Candidate = item.payload
        return [{"key": item.key, "status": "error", "error": error.reason,
                 "reject": reject_record(c.group, c.level, None, None, f"model call failed: {error.reason}")}]

    def forget(self, cand: Candidate) -> None:
        """Drop the text checks kept for a candidate whose outcome is known."""
        for k in [k for k in self._checked if k[0] == cand]:
            del self._checked[k]

    @staticmethod
    def outcome(record: dict) -> tuple[Question | None, dict | None]:
        """A journalled candidate as (its question, None) or (None, its reject)."""
        rec = CandidateRecord.model_validate(record)
        if rec.question is not None:
            return rec.question, None
        return None, rec.reject.model_dump(mode="json") if rec.reject is not None else None

    def stop_if_dead(self) -> None:
        """The engine's abort rule across waves (a wave may be smaller than the rule's count): the
        first calls all failed the same way, and nothing has answered yet."""
        if not self.answered and failing_alike(self.failures):
            raise StageAborted(f"stopped early: the first {len(self.failures)} generate calls all failed the same "
                               f"way: {str(self.failures[0]).rstrip('.')}. Nothing more was sent; fix this and rerun")

    def walk(self, cand: Candidate, answers: Sequence[BaseModel | None]) -> _Walk:
        """The candidate after ``answers`` (in call order): the calls of its next step, or its
        question or reject. An answer not known (None, in a dry run) is taken to pass its check."""
        g = self.gen
        group, level, style = list(cand.group), cand.level, cand.style
        generated = answers[0]
        if generated is not None:
            self.answered = True
            generated = _echoed(generated, group)
        base = {"chunk_ids": group, "difficulty": level, "style": style,
                "question": generated.question if generated else None,
                "answer": generated.answer if generated else None, "kind": generated.kind if generated else None}

        def reject(reason: str, **scores: Any) -> _Walk:
            return _Walk(reject=reject_record(base["chunk_ids"], level, base["question"], base["answer"], reason,
                                              scores, style=style, kind=base["kind"]))

        checks: dict = {}
        label = level
        if generated is not None:
            why, checks, label = self._text_checks(cand, generated)
            if why is not None:
                return reject(why, **checks)
            gold, q, a = cited(generated, group), generated.question, generated.answer
        else:
            gold, q, a = group, "", ""
        n = len(answers)
        if n == 1:
            return _Walk([g.blind_call(q, gold)])
        blind = answers[1]
        if blind is not None:
            checks["answerable"] = blind.answerable
            checks["blind_answer"] = blind.own_answer
            if not blind.answerable:
                return reject(f"not answerable from its gold chunks: {blind.reason}", **checks)
        if n == 2:
            return _Walk([g.compare_call(q, a, blind.own_answer if blind is not None else "")])
        same = answers[2]
        if same is not None:
            checks["answer_supported"] = same.same
            if not same.same:
                return reject(f"the blind answer differs from the proposed one: {same.reason}", **checks)
        if n == 3:
            return _Walk([g.critic_call(q, style)])
        critique = answers[3]
        if critique is not None:
            scores = {"self_contained": critique.self_contained, "clear": critique.clear,
                      "realistic": critique.realistic}
            checks["critic"] = {**scores, "reason": critique.reason}
            low = [k for k, v in scores.items() if v < CRITIC_MIN]
            if low:
                return reject(f"the critic scored it low on {', '.join(low)}: {critique.reason}", **checks)
        if level == "hard":
            # each chunk offered, alone, must not answer it: the cited ones (gold), and one offered but not cited
            # (an answer there means a gold chunk missed); so the calls do not hang on what the model cites, and
            # a dry run counts them exactly
            if n == 4:
                return _Walk([g.blind_call(q, [c]) for c in group])
            alone = answers[4:4 + len(group)]
            answering = [(c, s) for c, s in zip(group, alone) if s is not None and s.answerable]
            if n == 4 + len(group) and answering:  # it says it can: does it give the same answer?
                return _Walk([g.compare_call(q, a, s.own_answer) for _, s in answering])
            verdicts = iter(answers[4 + len(group):])
            singles = {c: bool(s is not None and s.answerable and getattr(next(verdicts), "same", False))
                       for c, s in zip(group, alone)}
            checks["single_chunk_answerable"] = singles
            if any(singles.values()):
                one = next(c for c, ok in singles.items() if ok)
                aside = "" if one in gold else " (offered, not cited: the gold chunks miss it)"
                return reject(f"fake multi-hop: answerable from chunk {one!r} alone{aside}", **checks)
        if generated is None:
            return _Walk()  # a dry run's accepted path: nothing more is asked
        question = Question(id=_qid(gold, label, generated.question), question=generated.question.strip(),
                            answer=generated.answer.strip(), difficulty=label, kind=generated.kind, chunk_ids=gold,
                            grades=gold_grades(generated, gold), style=style,
                            evidence=[e.quote for e in generated.evidence], checks=checks, model=g.config.model,
                            prompt=g.q_prompt.id)
        return _Walk(question=question)


    def _text_checks(self, cand: Candidate, generated: GeneratedQuestion) -> tuple[str | None, dict, str]:
        memo = (cand, generated.model_dump_json())
        if memo not in self._checked:
            self._checked[memo] = self.gen.text_checks(generated, list(cand.group), cand.level)
        why, checks, label = self._checked[memo]
        return why, copy.deepcopy(checks), label  # a copy: the walk adds to it


def _echoed(generated: GeneratedQuestion, chunk_ids: Sequence[str]) -> GeneratedQuestion:
    """The answer with each evidence id shown defused (marker text, line breaks) read back as the
    real id; a copy, so the answer shared with other items stays as it came."""
    out = generated.model_copy(deep=True)
    for ev in out.evidence:
        ev.chunk_id = echoed_id(ev.chunk_id, chunk_ids) or ev.chunk_id
    return out


def write_outputs(result: GenerateResult, output: str | Path, rejects: str | Path | None = None,
                  qrels_out: str | Path | None = None, existing: Sequence[Question] = (),
                  endpoint: tuple[str, str | None] | None = None) -> None:
    """Write the set (after ``existing`` questions, when growing one), its rejects and its qrels;
    ``endpoint`` (model, base URL) of this run names the host beside the gold qrels' origin."""
    known = {q.id for q in existing}
    result = dataclasses.replace(result, accepted=[*existing, *(q for q in result.accepted if q.id not in known)])
    write_jsonl(output, result.accepted)
    if rejects is not None:
        write_jsonl(rejects, result.rejects + [reject_record([c], None, None, None, f"chunk unfit: {why}")
                                               for c, why in result.unfit_chunks.items()])
    if qrels_out is not None:
        # the gold chunks were chosen by the model that wrote each question (with its prompt)
        origin = origin_of_records(({"model": q.model, "prompt": q.prompt} for q in result.accepted), command="generate")
        if endpoint is not None:  # this run's model was asked at this host (a grown set's older questions: unknown)
            host = endpoint_host(endpoint[1])
            origin = origin.replace(labellers=tuple(
                lab.replace(endpoint=host) if lab.name == endpoint[0] else lab for lab in origin.labellers))
        write_qrels(qrels_out, {q.id: q.grades or {c: 3 for c in q.chunk_ids} for q in result.accepted},
                    origin=origin.replace(date=today(), scale=JUDGE_SCALE, relevant_from=JUDGE_RELEVANT_FROM))
    if endpoint is not None:  # the set itself holds gold chunks: its sidecar keeps the host its lines cannot
        host = endpoint_host(endpoint[1])
        said = origin_of_records(({"model": q.model, "prompt": q.prompt} for q in result.accepted), command="generate")
        write_origin(output, said.replace(date=today(), labellers=tuple(
            lab.replace(endpoint=host) if lab.name == endpoint[0] else lab for lab in said.labellers)))
    journal_path(candidates_path(output)).unlink(missing_ok=True)  # the set is written: its journal is spent
