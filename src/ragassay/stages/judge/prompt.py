"""The judge's prompts and how its answers become records (:class:`Judge`): the answer shapes the
model fills, the keys of its pairs, the calls of a pair (samples and jurors) and the median that
combines their votes. It knows the models by their configs only, so one object serves a dry run and
a real run alike."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ...data.chunk_table import ChunkTable
from ...data.records import Chunk, Judgment
from ...llm import LLMConfig, LLMError
from ...llm.prompt_files import choose_prompt, full_schema
from ...llm.prompts import delimit, load_prompt, shown_id
from ...llm.reading import Decision, Explanation
from ...runtime.engine import Call
from ..queries import Passages, QueryItem
from ..short_answers import ShortRelevance
from .keys import TAILS_KEPT, dumps, texts_json
from .options import JudgeOptions

# ----------------------------------------------------------------------------- answer shapes


class RelevanceAnswer(BaseModel):
    """The model reasons in order (aspects of the need, match to each, trust) before it grades."""

    intent: Explanation = Field(description="the aspects of the need, one by one")
    match: Explanation = Field(description="for each aspect, whether and how well the passage meets it")
    trust: Explanation = Field(description="whether the passage can be trusted for it")
    grade: Decision = Field(ge=0, le=3)


class BatchItem(BaseModel):
    """One passage's judgment in a batch answer, named by the id the prompt showed."""

    chunk_id: str
    intent: Explanation
    match: Explanation
    trust: Explanation
    grade: Decision = Field(ge=0, le=3)


class BatchAnswer(BaseModel):
    """A batch answer: the judgments of the passages shown together, in any order."""

    judgments: list[BatchItem]


# ---------------------------------------------------------------------------------- voting


def median_grade(grades: Sequence[int], tie: str = "lower") -> int:
    """The median of ordinal grades. With an even number of votes the two middle grades may differ:
    ``lower`` takes the lower (the cautious reading, the default), ``higher`` the higher,
    ``round-half-even`` their mean rounded to the even grade (1 and 2 give 2, 2 and 3 give 2)."""
    ordered = sorted(grades)
    n = len(ordered)
    if n % 2:
        return ordered[n // 2]
    a, b = ordered[n // 2 - 1], ordered[n // 2]
    if tie == "lower":
        return a
    if tie == "higher":
        return b
    return round((a + b) / 2)  # Python rounds halves to even


# ---------------------------------------------------------------------------------- the stage


class Judge:
    """The prompts and how answers become records; knows the models by their configs only, so the
    same object plans a dry run (no endpoint) and a real run."""

    def __init__(self, configs: Sequence[LLMConfig], options: JudgeOptions | None = None):
        if not configs:
            raise ValueError("judge needs at least one model")
        self.configs = list(configs)
        self.options = options or JudgeOptions()
        self.rel_prompt, self.prompt_reason = self._chosen_prompt()
        self.full = full_schema("judge", self.rel_prompt)  # else the short schema: a grade, reasoning optional
        if self.full and self.options.cache_friendly:
            self.rel_prompt = load_prompt("judge_relevance_examples")
        self.answer_model: type[BaseModel] = RelevanceAnswer if self.full else ShortRelevance
        self.batch_prompt = load_prompt("judge_relevance_batch")
        self.passages = Passages(self.options.max_chunk_chars)
        self.batch_fallbacks = 0
        self._tails: dict[str, tuple[Chunk | None, bytes]] = {}  # chunk id -> the chunk and its key's last part
        self._settings_part: bytes | None = None  # the keys' last part: "\n" and the settings' JSON

    def _chosen_prompt(self):
        """The pointwise prompt (options.prompt) and why it was chosen; batches and the cache-friendly
        form exist for the full prompt only."""
        o = self.options
        full_only = (
            f"--batch {o.batch} grades several passages in one call"
            if o.batch > 1
            else "--cache-friendly opens the full prompt with worked examples"
            if o.cache_friendly
            else None
        )
        return choose_prompt("judge", o.prompt, [c.model for c in self.configs], full_only=full_only)

    def filled(self, **values: str) -> dict[str, str]:
        """The values the relevance prompt has placeholders for (a user's prompt may leave the
        optional ones out)."""
        used = self.rel_prompt.placeholders
        return {k: v for k, v in values.items() if k in used}

    @property
    def truncated(self) -> set[str]:
        return self.passages.truncated

    @property
    def model_names(self) -> str:
        return ",".join(c.model or "" for c in self.configs)

    def relevance_messages(
        self, query: QueryItem, chunk: Chunk, window: tuple[int, int] | None = None
    ) -> list[dict[str, str]]:
        return self.rel_prompt.messages(
            **self.filled(**self.query_values(query), passage=self.passage_block(chunk, window))
        )

    def query_values(self, query: QueryItem) -> dict[str, str]:
        if self.full:
            return {
                "query": delimit("QUERY", query.text),
                "need": query.need_block(),
                "expected": query.expected_block(),
            }
        # a short prompt or a user's: a need or note the query lacks is left out, not said absent
        need = "\n".join(t for t in (query.description, query.narrative) if t)
        return {
            "query": delimit("QUERY", query.text),
            "need": delimit("NEED", need) if need else "",
            "expected": delimit("WHAT A GOOD ANSWER CONTAINS", query.answer) if query.answer else "",
        }

    def passage_block(self, chunk: Chunk, window: tuple[int, int] | None = None) -> str:
        return delimit("PASSAGE", self.passages.text(chunk, window))

    def batch_messages(self, query: QueryItem, chunks: Sequence[Chunk]) -> list[dict[str, str]]:
        return self.batch_prompt.messages(
            query=delimit("QUERY", query.text),
            need=query.need_block(),
            expected=query.expected_block(),
            passages=self.passages.blocks(list(chunks)),
            ids=", ".join(shown_id(c.id) for c in chunks),
        )

    def windows(self, chunk: Chunk) -> list[tuple[int, int]] | None:
        """Overlapping windows covering a chunk longer than the budget (None when it fits, or when
        long chunks are cut instead)."""
        o = self.options
        if len(chunk.text) <= o.max_chunk_chars or o.long_chunks != "windows":
            return None
        step = max(1, o.max_chunk_chars - o.window_overlap)
        starts = list(range(0, max(1, len(chunk.text) - o.window_overlap), step))
        return [(s, min(len(chunk.text), s + o.max_chunk_chars)) for s in starts]

    # -- keys and calls
    def temperature(self, model: int) -> float:
        base = self.configs[model].temperature
        return max(base, self.options.sample_temperature) if self.options.samples > 1 else base

    def settings(self) -> dict[str, Any]:
        """The answer-changing parameters every key includes."""
        o = self.options
        return {
            "models": [c.model for c in self.configs],
            "samples": o.samples,
            "temperatures": [self.temperature(i) for i in range(len(self.configs))],
            "seed": o.seed,
            "tie": o.tie,
            "max_chunk_chars": o.max_chunk_chars,
            "long_chunks": o.long_chunks,
            "max_tokens": o.max_tokens,
        }

    def pair_fingerprint(self, query: QueryItem, chunk: Chunk, prompt_id: str) -> str:
        """The key of one pair's record: its identity (query id, chunk id) and everything that
        changes its grade. Two chunks with the same text under two ids are two records; their
        identical requests are asked once (the engine shares them)."""
        return self.query_keys(query, [chunk.id], prompt_id, {chunk.id: chunk})[0]

    def query_keys(
        self, query: QueryItem, ids: Sequence[str], prompt_id: str, chunks: Mapping[str, Chunk]
    ) -> list[str]:
        """The keys of one query's pairs with the chunks ``ids`` names in ``chunks`` (each
        :meth:`pair_fingerprint`), the query's part hashed once: a plan goes query by query."""
        tails = self._tails
        if len(tails) + len(ids) > TAILS_KEPT:  # bounded: each is as long as its chunk's text
            tails.clear()
        if self._settings_part is None:  # (encoded once, not once a query)
            self._settings_part = b"\n" + dumps(self.settings()).encode()
        settings = self._settings_part
        head = hashlib.sha256(f"judge\n{prompt_id}\n".encode())
        head.update(texts_json([query.id, query.text, query.description, query.narrative, query.answer]) + b"\n")
        # a table read from a file gives each id one content for the whole run: its part is kept by id;
        # chunks given as objects are checked to be the ones encoded (an edited chunk under its id is new)
        fixed = isinstance(chunks, ChunkTable)
        keys: list[str] = []
        get, copy, add = tails.get, head.copy, keys.append
        for cid in ids:
            held = get(cid)
            if held is not None and (fixed or held[0] is chunks[cid]):
                tail = held[1]
            else:
                chunk = chunks[cid]
                tail = texts_json([chunk.id, chunk.title, chunk.text]) + settings
                tails[cid] = (None if fixed else chunk, tail)
            h = copy()
            h.update(tail)
            add(h.hexdigest()[:24])
        return keys

    def forget_key_parts(self) -> None:
        """Drop the parts of keys kept while a plan is made (each chunk's is as long as its text)."""
        self._tails.clear()

    def seed(self, sample: int) -> int | None:
        """Each sample of several sends its own seed (a single answer sends none, as before)."""
        return self.options.seed + sample if self.options.samples > 1 else None

    def relevance_calls(
        self, messages: list[dict[str, str]], response_model: type[BaseModel], max_tokens: int
    ) -> list[Call]:
        return [
            Call.of(m, messages, response_model, "judge", max_tokens, self.temperature(m), seed=self.seed(s), sample=s)
            for m in range(len(self.configs))
            for s in range(self.options.samples)
        ]

    def combine(self, votes: list[int]) -> tuple[int, dict[str, int] | None]:
        """The pair's grade: each juror's median over its samples, then the median over jurors,
        ties by the stated rule. Also each juror's grade when there is a jury."""
        per = self.options.samples
        jurors = [median_grade(votes[i : i + per], self.options.tie) for i in range(0, len(votes), per)]
        grade = median_grade(jurors, self.options.tie)
        names = [c.model or str(i) for i, c in enumerate(self.configs)]
        return grade, (dict(zip(names, jurors)) if len(jurors) > 1 else None)

    def from_votes(self, qid: str, cid: str, votes: list[int], answers: list[Any], prompt: str, key: str) -> Judgment:
        grade, jurors = self.combine(votes)
        chosen = min(zip(answers, votes), key=lambda av: abs(av[1] - grade))[0]  # a reasoning that fits the grade
        reasoning = (
            f"intent: {chosen.intent}\nmatch: {chosen.match}\ntrust: {chosen.trust}"
            if hasattr(chosen, "intent")
            else chosen.reasoning
        )  # the short schema's is optional
        sampled: dict[str, Any] = {}  # only sampled votes and juries have these
        if self.options.samples > 1:
            sampled.update(seeds=[self.seed(s) for s in range(self.options.samples)], temperature=self.temperature(0))
        if jurors is not None:
            sampled["juror_grades"] = jurors
        return self.record(qid, cid, grade, votes, reasoning, "llm", prompt, key, **sampled)

    def record(
        self,
        qid: str,
        cid: str,
        grade: int,
        votes: list[int],
        reasoning: str,
        decided_by: Literal["rule", "llm"],
        prompt: str,
        key: str,
        **sampled: Any,
    ) -> Judgment:
        return Judgment(
            query_id=qid,
            chunk_id=cid,
            key=key,
            grade=grade,
            reasoning=reasoning,
            status="ok",
            error=None,
            model=self.model_names,
            prompt=prompt,
            samples=votes,
            decided_by=decided_by,
            truncated=cid in self.truncated,
            **sampled,
        )

    def error_record(self, qid: str, cid: str, e: LLMError, key: str) -> Judgment:
        return Judgment(
            query_id=qid,
            chunk_id=cid,
            key=key,
            grade=None,
            reasoning=None,
            status="error",
            error=e.reason,
            model=self.model_names,
            prompt=None,
            samples=[],
            decided_by=None,
        )
