"""``generate``: easy, medium and hard questions from the user's own chunks, with evidence.

For each planned question: pick chunk(s) (stratified across documents; related chunks for hard),
ask the model for a question, answer, kind and verbatim evidence, then drop it, with the reason,
unless every check passes: text checks (self-contained, not copied, length, language, not a
near-duplicate), evidence found in the gold chunks, an independent answerability check from the
gold chunks alone, and for hard questions, not answerable from any single gold chunk. The BM25 rank
and word overlap of each gold chunk are kept in ``checks``; a label they contradict is relabelled
(medium -> easy) or dropped (hard).

Chunk ids in, the same ids out. The question file is written at the end in one atomic step;
every model call is cached, so rerunning an interrupted run costs nothing and gives the same set.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .generate_checks import (BM25, evidence_found, mix_counts, near_duplicate, overlap, question_problems,
                              unfit_chunk)
from ..data.io import write_jsonl, write_lines_atomic, write_qrels
from ..llm import LLM, LLMConfig, LLMError
from ..llm.batch import Deferred
from .engine import Call, Estimate, StageAborted, WorkItem, estimate, fingerprint, progress_bar
from ..llm.prompts import delimit, echoed_id, load_prompt, shown_id
from ..data.records import Chunk, Question, Reject
from ..data.result_models import GenerateSummary

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
    reason: str


class SameAnswer(BaseModel):
    same: bool
    reason: str


class Critique(BaseModel):
    self_contained: int = Field(ge=1, le=5)
    clear: int = Field(ge=1, le=5)
    realistic: int = Field(ge=1, le=5)
    reason: str


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
        return "\n".join(lines)

    @property
    def shortfall(self) -> dict[str, int]:
        per_level = Counter(q.difficulty for q in self.accepted)
        return {k: n - per_level.get(k, 0) for k, n in self.target.items() if per_level.get(k, 0) < n}

    @property
    def exit_code(self) -> int:
        """0 the target was met; 3 some questions are missing; 1 none was accepted."""
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
            unfit_chunks=len(self.unfit_chunks), stopped=self.stopped).to_dict()


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
        self.failures: list[LLMError] = []
        self.budget_stop: str | None = None  # a spending ceiling (--max-calls/--max-cost) stopped a call
        self.answered = False
        self._style_counts: dict[str, int] = {}
        self.chunks = {c.id: c for c in chunks}
        self.order = [c.id for c in chunks]
        self.unfit = {c.id: why for c in chunks if (why := unfit_chunk(c.text))}
        self.fit = [cid for cid in self.order if cid not in self.unfit]
        self.index = BM25(self.order, [self.chunks[c].text for c in self.order])
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
        rng = random.Random(self.options.seed)
        pool, cursor = self.stratified(rng), [0]
        out = []
        for level in LEVEL_ORDER:
            want = mix_counts(self.options.total, self.options.mix).get(level, 0)
            out += [(level, g, self.next_style()) for g in self._wave(level, want, pool, cursor, rng)[0]]
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

    def _wave(self, level: str, n: int, pool: list[str], cursor: list[int], rng: random.Random) -> tuple[list[list[str]], int]:
        """The next ``n`` candidate groups of a level (fewer when a hard group cannot be formed), and
        how many tries that used."""
        wave, tries = [], 0
        for _ in range(n if pool else 0):
            if cursor[0] >= len(pool) * SEED_USES:
                break  # every chunk has seeded its share of candidates: the chunks are spent
            cid = pool[cursor[0] % len(pool)]
            cursor[0] += 1
            tries += 1
            group = self.group_for(cid, rng) if level == "hard" else [cid]
            if group:
                wave.append(group)
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

    def candidate_calls(self, chunk_ids: list[str], difficulty: str, style: str = "question",
                        generated: GeneratedQuestion | None = None, blind: BlindAnswer | None = None) -> list[Call]:
        """The calls one accepted candidate makes: generate; answer it blind from its gold chunks;
        compare the two answers; a critic scores it; for hard, answer blind from each cited chunk
        alone (which must fail). Later calls hold earlier answers; before those exist they are sized with empty ones."""
        q, a = (generated.question, generated.answer) if generated is not None else ("", "")
        gold = cited(generated, chunk_ids) if generated is not None else chunk_ids
        calls = [Call.of(0, self.question_messages(chunk_ids, difficulty, style), GeneratedQuestion, "generate", 600,
                         max(self.config.temperature, 0.7)),
                 Call.of(0, self.blind_messages(q, gold), BlindAnswer, "verify", 400),
                 Call.of(0, self.compare_messages(q, a, blind.own_answer if blind else ""), SameAnswer, "verify", 200),
                 Call.of(0, self.critic_messages(q, style), Critique, "verify", 200)]
        if difficulty == "hard":
            calls += [Call.of(0, self.blind_messages(q, [c]), BlindAnswer, "verify", 400) for c in gold]
        return calls

    def estimate(self) -> Estimate:
        """Calls, tokens and cost if every first candidate is accepted (each rejection costs one
        more candidate, up to ``attempts_per_question`` per wanted question)."""
        from ..llm.cache import Cache
        from ..llm.client import request_key
        cache = Cache.read_only(self.config.cache_path) if self.config.use_cache else None
        items = []
        def cached(call: Call, model: type[BaseModel]) -> BaseModel | None:
            if cache is None:
                return None
            hit = cache.get(request_key(self.config.model or "", call.message_list, call.response_model,
                                        call.params(self.config.temperature), self.config.base_url))
            try:
                return None if hit is None else model.model_validate(hit["answer"])
            except ValueError:
                return None

        for level, group, style in self.first_waves():
            calls = self.candidate_calls(group, level, style)
            generated = cached(calls[0], GeneratedQuestion)
            if generated is not None:  # the question is known: the later messages are exact
                calls = self.candidate_calls(group, level, style, generated)
                blind = cached(calls[1], BlindAnswer)
                if blind is not None:
                    calls = self.candidate_calls(group, level, style, generated, blind)
            items.append(WorkItem(fingerprint(level, group), calls, None))
        if cache is not None:
            cache.close()
        est = estimate(items, lambda it: False, [self.config], share=False)  # placeholders look alike
        worst = int(len(items) * self.options.attempts_per_question) + len(LEVEL_ORDER)
        ceiling = self.options.max_calls or ceiling_for(est.calls)
        est.note = (f"target {mix_counts(self.options.total, self.options.mix)}; each rejected candidate costs "
                    f"another try, at most about {worst} candidates in all; generate stops at {ceiling} calls "
                    f"({'--max-calls' if self.options.max_calls else 'its default ceiling: 3x these, --max-calls N to change'})")
        return est

    # -- one candidate
    async def candidate(self, chunk_ids: list[str], difficulty: str,
                        style: str = "question") -> tuple[Question | None, dict | None]:
        texts = [self.chunks[c].text for c in chunk_ids]
        llms = [self.llm]
        g = await self.candidate_calls(chunk_ids, difficulty, style)[0].ask(llms)
        self.answered = True
        for ev in g.evidence:  # an id shown defused (marker text, line breaks) is read back as the real id
            ev.chunk_id = echoed_id(ev.chunk_id, chunk_ids) or ev.chunk_id
        base = {"chunk_ids": chunk_ids, "difficulty": difficulty, "question": g.question, "answer": g.answer,
                "style": style, "kind": g.kind}

        def reject(reason: str, **scores) -> tuple[None, dict]:
            return None, {**base, "reason": reason, "scores": scores}

        problems = question_problems(g.question, g.answer, texts)
        if problems:
            return reject("; ".join(problems))
        for ev in g.evidence:
            if ev.chunk_id not in chunk_ids:
                return reject(f"evidence cites a chunk it was not given ({ev.chunk_id!r})")
            if not evidence_found(ev.quote, self.chunks[ev.chunk_id].text):
                return reject(f"evidence quote not found in chunk {ev.chunk_id!r}: {ev.quote[:80]!r}")
        gold = cited(g, chunk_ids)
        if difficulty == "hard":
            if g.kind not in MULTI_HOP:
                return reject(f"hard question of no multi-hop type (kind {g.kind!r}; expected bridge, comparison or "
                              "aggregation)")
            if len(gold) < 2:
                return reject("hard question that cites one passage")
        elif g.kind in MULTI_HOP:
            return reject(f"a {difficulty} question of a multi-hop kind ({g.kind!r})")
        ranks = {c: self.index.rank_of(g.question, c) for c in gold}
        overlaps = {c: round(overlap(g.question, self.chunks[c].text), 3) for c in gold}
        checks: dict = {"bm25_rank": ranks, "word_overlap": overlaps}
        if len(gold) < len(chunk_ids):
            checks["offered_not_cited"] = [c for c in chunk_ids if c not in gold]
        label = difficulty
        easy_looking = any(ranks[c] == 1 and overlaps[c] >= 0.7 for c in gold)
        if difficulty == "hard" and easy_looking:
            return reject("label contradicted by evidence: a gold chunk is BM25 rank 1 with most of the words",
                          **checks)
        if difficulty == "medium" and easy_looking:
            label = "easy"
            checks["relabelled"] = "medium -> easy: gold chunk is BM25 rank 1 with most of the question's words"
        # blind verification: answer from the gold passages without seeing the proposed answer
        blind = await self.candidate_calls(chunk_ids, difficulty, style, g)[1].ask(llms)
        checks["answerable"] = blind.answerable
        checks["blind_answer"] = blind.own_answer
        if not blind.answerable:
            return reject(f"not answerable from its gold chunks: {blind.reason}", **checks)
        later = self.candidate_calls(chunk_ids, difficulty, style, g, blind)
        same = await later[2].ask(llms)
        checks["answer_supported"] = same.same
        if not same.same:
            return reject(f"the blind answer differs from the proposed one: {same.reason}", **checks)
        critique = await later[3].ask(llms)
        scores = {"self_contained": critique.self_contained, "clear": critique.clear, "realistic": critique.realistic}
        checks["critic"] = {**scores, "reason": critique.reason}
        low = [k for k, v in scores.items() if v < CRITIC_MIN]
        if low:
            return reject(f"the critic scored it low on {', '.join(low)}: {critique.reason}", **checks)
        if difficulty == "hard":
            singles = {}
            for c, call in zip(gold, later[4:]):
                alone = await call.ask(llms)
                agrees = False
                if alone.answerable:  # it says it can: does it give the same answer?
                    agrees = (await Call.of(0, self.compare_messages(g.question, g.answer, alone.own_answer), SameAnswer,
                                            "verify", 200).ask(llms)).same
                singles[c] = agrees
            checks["single_chunk_answerable"] = singles
            if any(singles.values()):
                one = next(c for c, ok in singles.items() if ok)
                return reject(f"fake multi-hop: answerable from chunk {one!r} alone", **checks)
        grades = gold_grades(g, gold)
        q = Question(id=_qid(gold, label, g.question), question=g.question.strip(), answer=g.answer.strip(),
                     difficulty=label, kind=g.kind, chunk_ids=gold, grades=grades, style=style,
                     evidence=[e.quote for e in g.evidence], checks=checks, model=self.config.model,
                     prompt=self.q_prompt.id)
        return q, None

    # -- the whole set
    async def run(self) -> GenerateResult:
        opts = self.options
        rng = random.Random(opts.seed)
        target = mix_counts(opts.total, opts.mix)
        pool, cursor = self.stratified(rng), [0]
        bar = progress_bar(opts.total, 0, "generate", opts.quiet)  # counts accepted questions
        accepted: list[Question] = []
        rejects: list[dict] = []
        ceiling = opts.max_calls or self.default_ceiling()
        stopped: str | None = None
        for level in LEVEL_ORDER:
            want = target.get(level, 0)
            tries = 0
            max_tries = int(want * opts.attempts_per_question) + 1
            while sum(1 for q in accepted if q.difficulty == level) < want and tries < max_tries and pool:
                need = want - sum(1 for q in accepted if q.difficulty == level)
                if self.calls_made() >= ceiling:
                    stopped = (f"stopped at the ceiling of {ceiling} generate calls ({self.calls_made()} made); "
                               "--max-calls N raises it")
                    break
                wave, used = self._wave(level, min(need, max_tries - tries), pool, cursor, rng)
                tries += used
                if not wave:
                    if cursor[0] >= len(pool) * SEED_USES:
                        stopped = (f"stopped: every usable chunk has seeded {SEED_USES} candidates; add chunks or "
                                   "lower --limit")
                    break
                results = await asyncio.gather(*(self._safe(g, level, self.next_style()) for g in wave))
                self._stop_if_dead()
                if self.budget_stop:
                    stopped = self.budget_stop
                    results = [r for r in results if r != (None, None)]
                waiting = sum(1 for q, rej in results if q is None and rej is None)
                if waiting:  # the wave's next step is exported: the next round goes on from here
                    if bar is not None:
                        bar.close()
                    return GenerateResult(accepted, rejects, dict(self.unfit), target, pending=waiting)
                for q, rej in results:  # in plan order, so the set does not depend on timing
                    if q is None:
                        rejects.append(rej)
                        continue
                    dup = near_duplicate(q.question, [a.question for a in [*self.existing, *accepted]])
                    full = sum(1 for a in accepted if a.difficulty == q.difficulty) >= target.get(q.difficulty, 0)
                    if dup or full:
                        reason = dup or f"the {q.difficulty} quota is already full (asked as {level})"
                        rejects.append({"chunk_ids": q.chunk_ids, "difficulty": q.difficulty, "question": q.question,
                                        "answer": q.answer, "reason": reason, "scores": q.checks})
                    else:
                        accepted.append(q)
                        if bar is not None:
                            bar.update(1)
                            bar.set_postfix(rejected=len(rejects), refresh=False)
                if stopped:
                    break
            if stopped:
                break
        if bar is not None:
            bar.close()
        return GenerateResult(accepted, rejects, dict(self.unfit), target, stopped=stopped)

    def calls_made(self) -> int:
        """Requests generate has sent so far (its questions and their checks)."""
        if self.llm is None:
            return 0
        usage = self.llm.usage
        return sum(usage.stage(s).calls for s in ("generate", "verify"))

    def default_ceiling(self) -> int:
        """Three times the calls the target needs when every first candidate is accepted: room for
        rejections, never a runaway (a --limit far above what the chunks can give)."""
        return ceiling_for(self.estimate().calls)

    def _stop_if_dead(self) -> None:
        """The first calls all failed the same way: say so now instead of trying every candidate."""
        kinds = {e.kind for e in self.failures}
        if (not self.answered and len(self.failures) >= 1 and len(kinds) == 1
                and kinds <= {"transport", "auth", "request"}):
            raise StageAborted(f"stopped early: the first {len(self.failures)} generate calls all failed the same "
                               f"way: {self.failures[0]}. Nothing more was sent; fix this and rerun")

    async def _safe(self, group: list[str], level: str, style: str = "question"):
        try:
            return await self.candidate(group, level, style)
        except Deferred:
            return None, None  # waits for a batch answer
        except LLMError as e:
            if e.kind == "budget":  # a spending ceiling: this candidate was not tried, it is no reject
                self.budget_stop = str(e)
                return None, None
            self.failures.append(e)
            return None, {"chunk_ids": group, "difficulty": level, "question": None, "answer": None,
                          "reason": f"model call failed: {e.reason}", "scores": {}}


def write_outputs(result: GenerateResult, output: str | Path, rejects: str | Path | None = None,
                  qrels_out: str | Path | None = None, existing: Sequence[Question] = ()) -> None:
    """Write the set (after ``existing`` questions, when growing one), its rejects and its qrels."""
    known = {q.id for q in existing}
    result = dataclasses.replace(result, accepted=[*existing, *(q for q in result.accepted if q.id not in known)])
    write_jsonl(output, result.accepted)
    if rejects is not None:
        write_jsonl(rejects, [Reject.model_validate(r) for r in result.rejects]
                    + [Reject(chunk_ids=[c], reason=f"chunk unfit: {why}") for c, why in result.unfit_chunks.items()])
    if qrels_out is not None:
        write_qrels(qrels_out, {q.id: q.grades or {c: 3 for c in q.chunk_ids} for q in result.accepted})


# Each export is named after what loads it: (the files it writes, how to load them, the package).
EXPORTS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "beir": (("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"),
             "beir.datasets.data_loader.GenericDataLoader(DIR).load(split='test'), or ragassay's own readers", "beir"),
    "llamaindex-embedding-qa": (("llamaindex_embedding_qa.json",),
                                "llama_index.finetuning.EmbeddingQAFinetuneDataset.from_json(PATH)",
                                "llama-index-finetuning (llama-index-core 0.14 no longer has the class)"),
    "ragas-evaluation-dataset": (("ragas_evaluation_dataset.jsonl",), "ragas.EvaluationDataset.from_jsonl(PATH)",
                                 "ragas"),
    "ragas-testset": (("ragas_testset.jsonl",),
                      "ragas.testset.synthesizers.testset_schema.Testset.from_jsonl(PATH)", "ragas"),
    "deepeval-goldens": (("deepeval_goldens.json",),
                         "deepeval.dataset.EvaluationDataset().add_goldens_from_json_file(PATH)", "deepeval"),
}
EXPORT_FORMATS = tuple(EXPORTS)
# the names of earlier releases, still taken: each meant what its new name says
EXPORT_ALIASES = {"llamaindex": "llamaindex-embedding-qa", "ragas": "ragas-evaluation-dataset",
                  "deepeval": "deepeval-goldens"}


def export_format(name: str) -> str:
    """The export called ``name`` (or by an earlier release's name); ValueError naming the choices."""
    fmt = EXPORT_ALIASES.get(name, name)
    if fmt not in EXPORTS:
        raise ValueError(f"--export format must be one of {', '.join(EXPORT_FORMATS)}, got {name!r}")
    return fmt


def export(questions: Sequence[Question], chunks: Sequence[Chunk], fmt: str, directory: str | Path) -> list[Path]:
    """Write the set for another tool, in the shape its loader reads (see :data:`EXPORTS`): BEIR
    (corpus, queries, qrels/test.tsv), LlamaIndex's EmbeddingQAFinetuneDataset ({queries, corpus,
    relevant_docs, mode}), RAGAS's EvaluationDataset (one SingleTurnSample a line: user_input,
    reference, reference_contexts), RAGAS's Testset (the same with synthesizer_name, here
    ``ragassay:DIFFICULTY:KIND``) or DeepEval goldens (input, expected_output, context,
    additional_metadata)."""
    fmt = export_format(fmt)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    files = [d / f for f in EXPORTS[fmt][0]]
    if fmt == "beir":
        (d / "qrels").mkdir(exist_ok=True)
        write_lines_atomic(files[0], [json.dumps({"_id": c.id, "title": c.title or "", "text": c.text},
                                                 ensure_ascii=False) for c in chunks])
        write_lines_atomic(files[1], [json.dumps({"_id": q.id, "text": q.question}, ensure_ascii=False)
                                      for q in questions])
        write_lines_atomic(files[2], ["query-id\tcorpus-id\tscore"] +
                           [f"{q.id}\t{c}\t{q.grades.get(c, 1)}" for q in questions for c in q.chunk_ids])
        return files
    if fmt == "llamaindex-embedding-qa":
        data = {"queries": {q.id: q.question for q in questions}, "corpus": {c.id: c.text for c in chunks},
                "relevant_docs": {q.id: list(q.chunk_ids) for q in questions}, "mode": "text"}
        write_lines_atomic(files[0], [json.dumps(data, ensure_ascii=False, indent=1)])
        return files
    texts = {c.id: c.text for c in chunks}
    if fmt in ("ragas-evaluation-dataset", "ragas-testset"):
        samples = [{"user_input": q.question, "reference": q.answer, "reference_contexts": [texts[c] for c in q.chunk_ids]}
                   for q in questions]
        if fmt == "ragas-testset":
            samples = [{**s, "synthesizer_name": f"ragassay:{q.difficulty}:{q.kind}"}
                       for s, q in zip(samples, questions)]
        write_lines_atomic(files[0], [json.dumps(s, ensure_ascii=False) for s in samples])
        return files
    goldens = [{"input": q.question, "expected_output": q.answer, "context": [texts[c] for c in q.chunk_ids],
                "additional_metadata": {"id": q.id, "difficulty": q.difficulty, "chunk_ids": q.chunk_ids}}
               for q in questions]
    write_lines_atomic(files[0], [json.dumps(goldens, ensure_ascii=False, indent=1)])
    return files
