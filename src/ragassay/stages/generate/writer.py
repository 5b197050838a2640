"""What a question set is written from (:class:`QuestionWriter`).

The writer decides which chunks are fit to ask about and the order in which candidates are drawn:
documents in proportion to their size, no document too often, groups of related chunks for hard
questions, and styles in their shares, so that a set covers the corpus rather than its largest
document. It also builds the prompts and calls of each step and runs the checks on a written
question that need no model.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ...data.records import Chunk, Question
from ...llm import LLMConfig
from ...llm.prompts import Prompt, delimit, load_prompt, shown_id
from ...runtime.engine import Call
from ..generate_checks import BM25, evidence_found, mix_counts, overlap, question_problems, unfit_chunk
from .journal import corpus_digest
from .no_answer import (
    SEARCH_DEPTH,
    FalsePremiseQuestion,
    UnanswerableQuestion,
    searched,
    verification_call,
    verify_messages,
)
from .shapes import (
    LEVEL_ORDER,
    MULTI_HOP,
    SEED_USES,
    STYLES,
    BlindAnswer,
    Critique,
    Difficulty,
    GeneratedQuestion,
    GenerateOptions,
    SameAnswer,
    cited,
)


@dataclass
class SeedDraws:
    """The chunks that seed candidates, in their stratified order, and how many seeds have been drawn
    from them. Each chunk seeds at most ``SEED_USES`` candidates, so the draws walk the list that many
    times; the count is shared by every wave of a run, which is why it is an object the waves update
    and not a number each wave would have to hand back."""

    chunks: list[str]
    drawn: int = 0

    def spent(self) -> bool:
        """Whether every chunk has seeded its share of candidates."""
        return self.drawn >= len(self.chunks) * SEED_USES


class QuestionWriter:
    """The chunks, prompts and checks of a question set, without a model: what a candidate's calls
    are made from and its written question checked against (:class:`~.generator.Generator` adds
    the model and the run)."""

    def __init__(
        self, chunks: Sequence[Chunk], options: GenerateOptions, config: LLMConfig, existing: Sequence[Question] = ()
    ):
        self.existing = list(existing)  # a set being grown (--append): no duplicate of these, their chunks last
        self.config = config
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
        self.unanswerable_prompt = load_prompt("generate_unanswerable")
        self.false_premise_prompt = load_prompt("generate_false_premise")
        self.premise_prompt = load_prompt("generate_premise_check")
        self.search_prompt = load_prompt("generate_search_check")

    def prompts_of(self, level: str) -> list[Prompt]:
        """The prompts a candidate of ``level`` is asked with, in the order of its steps."""
        if level == "unanswerable":
            return [self.unanswerable_prompt, self.search_prompt, self.critic_prompt]
        if level == "false_premise":
            return [self.false_premise_prompt, self.premise_prompt, self.critic_prompt]
        return [self.q_prompt, self.v_prompt, self.c_prompt, self.critic_prompt]

    # -- planning
    def stratified(self, rng: random.Random) -> list[str]:
        """Fit chunks in the order candidates are drawn: documents in proportion to their size (a
        200-chunk document is drawn about 100 times as often as a 2-chunk one), but no document more
        than ``max_per_doc`` times before every other document has run out."""
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
        first: list[str] = []
        rest: list[str] = []
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

    def first_waves(self) -> list[tuple[Difficulty, list[str], str]]:
        """(difficulty, chunk ids, style) of every candidate a run tries when each one is accepted:
        the same code path as :meth:`run`, so the dry run's plan is the run's."""
        return [(level, group, style) for level, group, style, _, _ in self.first_candidates()]

    def first_candidates(self) -> list[tuple[Difficulty, list[str], str, tuple[int, int], int]]:
        """:meth:`first_waves` with each candidate's draw (where its wave began, its place in it)
        and how many times its first chunk seeded a candidate before, as :meth:`run` numbers them."""
        rng = random.Random(self.options.seed)
        seeds = SeedDraws(self.stratified(rng))
        out = []
        for level in LEVEL_ORDER:
            want = mix_counts(self.options.total, self.options.mix).get(level, 0)
            first_draw = seeds.drawn
            out += [
                (level, g, self.next_style(), (first_draw, i), use)
                for i, (g, use) in enumerate(self.wave(level, want, seeds, rng)[0])
            ]
        self.reset_styles()
        return out

    def reset_styles(self) -> None:
        """Start the styles' round robin again: a run's first candidate takes the first style."""
        self._style_counts.clear()

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

    def wave(self, level: str, n: int, seeds: SeedDraws, rng: random.Random) -> tuple[list[tuple[list[str], int]], int]:
        """The next ``n`` candidates of a level (fewer when a hard group cannot be formed), each as
        its chunk ids and how many times its first chunk seeded a candidate before; and how many
        tries that used."""
        wave, tries = [], 0
        pool = seeds.chunks
        for _ in range(n if pool else 0):
            if seeds.spent():
                break  # every chunk has seeded its share of candidates: the chunks are spent
            use, at = divmod(seeds.drawn, len(pool))
            cid = pool[at]
            seeds.drawn += 1
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
        return self.c_prompt.messages(
            question=delimit("QUESTION", question),
            first=delimit("FIRST ANSWER", proposed),
            second=delimit("SECOND ANSWER", blind),
        )

    def critic_messages(self, question: str, style: str) -> list[dict[str, str]]:
        return self.critic_prompt.messages(style=STYLES[style], question=delimit("QUESTION", question))

    def question_call(self, chunk_ids: list[str], difficulty: str, style: str, sample: int = 0) -> Call:
        """``sample``: a chunk's second try as a seed is another sample of the same prompt, not the
        same request (which the answer cache, and the set's own answers, would answer alike)."""
        return Call.of(
            0,
            self.question_messages(chunk_ids, difficulty, style),
            GeneratedQuestion,
            "generate",
            600,
            max(self.config.temperature, 0.7),
            sample=sample,
        )

    def no_answer_call(self, seed: str, level: str, style: str, sample: int = 0) -> Call:
        """The first call of an unanswerable or false-premise candidate: the question written from its seed."""
        unanswerable = level == "unanswerable"
        prompt = self.unanswerable_prompt if unanswerable else self.false_premise_prompt
        shape = UnanswerableQuestion if unanswerable else FalsePremiseQuestion
        return Call.of(
            0,
            prompt.messages(passages=self._passages([seed]), style=STYLES[style]),
            shape,
            "generate",
            600,
            max(self.config.temperature, 0.7),
            sample=sample,
        )

    def no_answer_search(
        self, level: str, written: UnanswerableQuestion | FalsePremiseQuestion | None, seed: str
    ) -> list[str]:
        """The chunks a candidate with no answer is verified against: its seed, then what BM25 finds for
        the question (unanswerable) or the premise (false premise). While the question is not known (a
        dry run) the seed's own text is the query: as many chunks, of the corpus's lengths, as the run
        will read, so that the estimate counts the tokens of a verification, not of one chunk."""
        if written is None:
            query = self.chunks[seed].text
        else:
            query = written.question if isinstance(written, UnanswerableQuestion) else written.premise
        return searched(self.index, query, SEARCH_DEPTH, first=seed)

    def verify_no_answer_call(
        self, level: str, written: UnanswerableQuestion | FalsePremiseQuestion | None, found: list[str]
    ) -> Call:
        prompt = self.search_prompt if level == "unanswerable" else self.premise_prompt
        return verification_call(prompt.messages(**verify_messages(level, written, self._passages(found))), level)

    def blind_call(self, question: str, chunk_ids: list[str]) -> Call:
        return Call.of(0, self.blind_messages(question, chunk_ids), BlindAnswer, "verify", 400)

    def compare_call(self, question: str, proposed: str, blind: str) -> Call:
        return Call.of(0, self.compare_messages(question, proposed, blind), SameAnswer, "verify", 200)

    def critic_call(self, question: str, style: str) -> Call:
        return Call.of(0, self.critic_messages(question, style), Critique, "verify", 200)

    def _dropped_by_text(
        self, g: GeneratedQuestion, chunk_ids: list[str], difficulty: Difficulty, gold: list[str]
    ) -> str | None:
        """Why a generated question is dropped before its scores are looked at: problems of its text,
        evidence that is not in the chunks given, or a kind that does not fit its difficulty."""
        problems = question_problems(g.question, g.answer, [self.chunks[c].text for c in chunk_ids])
        if problems:
            return "; ".join(problems)
        for ev in g.evidence:
            if ev.chunk_id not in chunk_ids:
                return f"evidence cites a chunk it was not given ({ev.chunk_id!r})"
            if not evidence_found(ev.quote, self.chunks[ev.chunk_id].text):
                return f"evidence quote not found in chunk {ev.chunk_id!r}: {ev.quote[:80]!r}"
        if difficulty == "hard":
            if g.kind not in MULTI_HOP:
                return (
                    f"hard question of no multi-hop type (kind {g.kind!r}; expected bridge, comparison or aggregation)"
                )
            if len(gold) < 2:
                return "hard question that cites one passage"
        elif g.kind in MULTI_HOP:
            return f"a {difficulty} question of a multi-hop kind ({g.kind!r})"
        return None

    def text_checks(
        self, g: GeneratedQuestion, chunk_ids: list[str], difficulty: Difficulty
    ) -> tuple[str | None, dict, Difficulty]:
        """The checks that need no model, on a generated question: (why it is dropped or None, the
        scores kept in ``checks``, its label: medium relabelled easy when a gold chunk gives it away)."""
        gold = cited(g, chunk_ids)
        dropped = self._dropped_by_text(g, chunk_ids, difficulty, gold)
        if dropped is not None:
            return dropped, {}, difficulty
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
