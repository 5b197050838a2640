"""``judge``: graded 0-3 relevance of a run's top chunks (coverage of the answer: coverage.py).

The model sees the query, and when known the need behind it (description, narrative) and what a
good answer contains; it lists the aspects of the need, how the passage meets each and whether it
can be trusted, then grades. Samples send their own seed and are combined by the median (ties by a
stated rule); a jury of models is combined the same way, and agreement between jurors is reported.
A chunk longer than the budget is judged in windows and takes its best window's grade. A pair that
cannot be judged becomes a ``status: error`` record with the reason, never grade 0.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..data.chunk_table import ChunkTable
from ..data.coerce import coerce_qrels, coerce_run
from ..data.joins import Join
from ..data.memory import give_back_freed
from ..data.origin import (
    JUDGE_RELEVANT_FROM,
    JUDGE_SCALE,
    Labeller,
    Origin,
    PoolRun,
    endpoint_host,
    merged,
    read_origin,
)
from ..data.pool import pool_digest
from ..data.records import Chunk, Judgment
from ..data.result_models import JudgeSummary
from ..data.writers import write_qrels
from ..errors import InputError
from ..llm import LLM, LLMConfig, LLMError
from ..llm.prompt_files import choose_prompt, full_schema
from ..llm.prompts import delimit, echoed_id, load_prompt, shown_id
from ..llm.reading import Decision, Explanation
from ..llm.usage import estimate_tokens
from ..metrics.agreement import cohen_kappa
from ..runtime.engine import (
    Call,
    CallText,
    Estimate,
    Items,
    OutputStore,
    Stage,
    StageRun,
    WorkItem,
    bulk,
    estimate,
    fingerprint,
    in_shard,
    run_stage,
)
from ..runtime.scaffold import StageJob
from ..runtime.store import Records
from .coverage import CoverageStage
from .queries import Passages, QueryItem
from .short_answers import ShortRelevance

# ----------------------------------------------------------------------------- answer shapes


class RelevanceAnswer(BaseModel):
    """The model reasons in order (aspects of the need, match to each, trust) before it grades."""

    intent: Explanation = Field(description="the aspects of the need, one by one")
    match: Explanation = Field(description="for each aspect, whether and how well the passage meets it")
    trust: Explanation = Field(description="whether the passage can be trusted for it")
    grade: Decision = Field(ge=0, le=3)


class BatchItem(BaseModel):
    chunk_id: str
    intent: Explanation
    match: Explanation
    trust: Explanation
    grade: Decision = Field(ge=0, le=3)


class BatchAnswer(BaseModel):
    judgments: list[BatchItem]


# ---------------------------------------------------------------------------------- inputs


@dataclass
class JudgeOptions:
    depth: int = 10
    samples: int = 1
    batch: int = 1                 # 1 = pointwise (one call per pair)
    max_chunk_chars: int = 6000    # longer chunks: judged in windows of this size (or cut, with long_chunks="cut")
    long_chunks: Literal["windows", "cut"] = "windows"
    window_overlap: int = 300
    max_tokens: int = 600
    sample_temperature: float = 0.7
    seed: int = 0                  # sample i sends seed + i, so votes can be reproduced
    tie: Literal["lower", "higher", "round-half-even"] = "lower"   # the median of an even number of votes
    quiet: bool = False
    shard: tuple[int, int] | None = None  # judge only the queries of this slice (i, n): see engine.in_shard
    # pointwise prompts with six worked examples in their fixed part, which then passes the 1,024
    # tokens a provider's prompt cache needs (benchmarks/judge_prompt_cost.py): cheaper on models
    # whose cached tokens cost a tenth, dearer where they cost half
    cache_friendly: bool = False
    # "auto" (short for a model whose name says it is small), "full", "short" or a prompt file's path:
    # see llm/prompt_files.py; every prompt but the full one is answered in the short schema
    prompt: str = "auto"


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _texts_json(values: list[str | None]) -> bytes:
    """``_dumps(values).encode()`` for a list of texts, by orjson when installed (the same bytes for
    every character, checked over all of Unicode; five times as fast: a plan encodes each query and
    chunk once). A lone surrogate, which no reader lets in, is kept as it is rather than refused."""
    if _orjson is not None:
        try:
            return _orjson.dumps(values)
        except TypeError:
            pass
    return _dumps(values).encode("utf-8", "surrogatepass")


try:
    import orjson as _orjson
except ImportError:  # optional (the ``fast`` extra)
    _orjson = None


def pair_key(query_id: str, chunk_id: str) -> str:
    return f"{query_id}\t{chunk_id}"


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
        full_only = (f"--batch {o.batch} grades several passages in one call" if o.batch > 1 else
                     "--cache-friendly opens the full prompt with worked examples" if o.cache_friendly else None)
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

    def relevance_messages(self, query: QueryItem, chunk: Chunk,
                           window: tuple[int, int] | None = None) -> list[dict[str, str]]:
        return self.rel_prompt.messages(**self.filled(**self.query_values(query),
                                                      passage=self.passage_block(chunk, window)))

    def query_values(self, query: QueryItem) -> dict[str, str]:
        if self.full:
            return {"query": delimit("QUERY", query.text), "need": query.need_block(),
                    "expected": query.expected_block()}
        # a short prompt or a user's: a need or note the query lacks is left out, not said absent
        need = "\n".join(t for t in (query.description, query.narrative) if t)
        return {"query": delimit("QUERY", query.text), "need": delimit("NEED", need) if need else "",
                "expected": delimit("WHAT A GOOD ANSWER CONTAINS", query.answer) if query.answer else ""}

    def passage_block(self, chunk: Chunk, window: tuple[int, int] | None = None) -> str:
        return delimit("PASSAGE", self.passages.text(chunk, window))

    def batch_messages(self, query: QueryItem, chunks: Sequence[Chunk]) -> list[dict[str, str]]:
        return self.batch_prompt.messages(query=delimit("QUERY", query.text), need=query.need_block(),
                                          expected=query.expected_block(), passages=self.passages.blocks(list(chunks)),
                                          ids=", ".join(shown_id(c.id) for c in chunks))

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
        return {"models": [c.model for c in self.configs], "samples": o.samples,
                "temperatures": [self.temperature(i) for i in range(len(self.configs))], "seed": o.seed, "tie": o.tie,
                "max_chunk_chars": o.max_chunk_chars, "long_chunks": o.long_chunks, "max_tokens": o.max_tokens}

    def pair_fingerprint(self, query: QueryItem, chunk: Chunk, prompt_id: str) -> str:
        """The key of one pair's record: its identity (query id, chunk id) and everything that
        changes its grade. Two chunks with the same text under two ids are two records; their
        identical requests are asked once (the engine shares them)."""
        return self.query_keys(query, [chunk.id], prompt_id, {chunk.id: chunk})[0]

    def query_keys(self, query: QueryItem, ids: Sequence[str], prompt_id: str,
                   chunks: Mapping[str, Chunk]) -> list[str]:
        """The keys of one query's pairs with the chunks ``ids`` names in ``chunks`` (each
        :meth:`pair_fingerprint`), the query's part hashed once: a plan goes query by query."""
        tails = self._tails
        if len(tails) + len(ids) > TAILS_KEPT:  # bounded: each is as long as its chunk's text
            tails.clear()
        if self._settings_part is None:  # (encoded once, not once a query)
            self._settings_part = b"\n" + _dumps(self.settings()).encode("utf-8")
        settings = self._settings_part
        head = hashlib.sha256(f"judge\n{prompt_id}\n".encode())
        head.update(_texts_json([query.id, query.text, query.description, query.narrative, query.answer]) + b"\n")
        # a table read from a file gives each id one content for the whole run: its part is kept by id;
        # chunks given as objects are checked to be the ones encoded (an edited chunk under its id is new)
        fixed = isinstance(chunks, ChunkTable)
        keys = []
        get, copy, add = tails.get, head.copy, keys.append
        for cid in ids:
            held = get(cid)
            if held is not None and (fixed or held[0] is chunks[cid]):
                tail = held[1]
            else:
                chunk = chunks[cid]
                tail = _texts_json([chunk.id, chunk.title, chunk.text]) + settings
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

    def relevance_calls(self, messages: list[dict[str, str]], response_model: type[BaseModel],
                        max_tokens: int) -> list[Call]:
        return [Call.of(m, messages, response_model, "judge", max_tokens, self.temperature(m), seed=self.seed(s),
                        sample=s)
                for m in range(len(self.configs)) for s in range(self.options.samples)]

    def combine(self, votes: list[int]) -> tuple[int, dict[str, int] | None]:
        """The pair's grade: each juror's median over its samples, then the median over jurors,
        ties by the stated rule. Also each juror's grade when there is a jury."""
        per = self.options.samples
        jurors = [median_grade(votes[i:i + per], self.options.tie) for i in range(0, len(votes), per)]
        grade = median_grade(jurors, self.options.tie)
        names = [c.model or str(i) for i, c in enumerate(self.configs)]
        return grade, (dict(zip(names, jurors)) if len(jurors) > 1 else None)

    def from_votes(self, qid: str, cid: str, votes: list[int], answers: list[Any], prompt: str,
                   key: str) -> Judgment:
        grade, jurors = self.combine(votes)
        chosen = min(zip(answers, votes), key=lambda av: abs(av[1] - grade))[0]  # a reasoning that fits the grade
        reasoning = (f"intent: {chosen.intent}\nmatch: {chosen.match}\ntrust: {chosen.trust}"
                     if hasattr(chosen, "intent") else chosen.reasoning)  # the short schema's is optional
        sampled: dict[str, Any] = {}  # only sampled votes and juries have these
        if self.options.samples > 1:
            sampled.update(seeds=[self.seed(s) for s in range(self.options.samples)], temperature=self.temperature(0))
        if jurors is not None:
            sampled["juror_grades"] = jurors
        return self.record(qid, cid, grade, votes, reasoning, "llm", prompt, key, **sampled)

    def record(self, qid: str, cid: str, grade: int, votes: list[int], reasoning: str, decided_by: str,
               prompt: str, key: str, **sampled: Any) -> Judgment:
        return Judgment(query_id=qid, chunk_id=cid, key=key, grade=grade, reasoning=reasoning, status="ok", error=None,
                        model=self.model_names, prompt=prompt, samples=votes, decided_by=decided_by,
                        truncated=cid in self.truncated, **sampled)

    def error_record(self, qid: str, cid: str, e: LLMError, key: str) -> Judgment:
        return Judgment(query_id=qid, chunk_id=cid, key=key, grade=None, reasoning=None, status="error",
                        error=e.reason, model=self.model_names, prompt=None, samples=[], decided_by=None)


def _by_query(pairs: Iterable[tuple[QueryItem, Chunk]]) -> Iterator[tuple[QueryItem, list[Chunk]]]:
    """Runs of pairs of one query, as (query, its chunks), in order."""
    query: QueryItem | None = None
    chunks: list[Chunk] = []
    for q, c in pairs:
        if q is not query and chunks:
            yield query, chunks  # type: ignore[misc]
            chunks = []
        query = q
        chunks.append(c)
    if chunks:
        yield query, chunks  # type: ignore[misc]


def _never(key: str) -> bool:
    return False


TAILS_KEPT = 20_000  # chunks whose key part a plan keeps (a corpus larger than this is encoded again as met)
_SLOT = "<<<the passage goes here>>>"  # no block holds three '<' (delimit defuses them), nor does the prompt


@dataclass(slots=True)
class _Pair:
    query: QueryItem
    chunk: Chunk
    key: str
    windows: list[tuple[int, int]] | None = None  # a long chunk, judged window by window


class RelevanceStage(Stage):
    """Grades 0-3, one item per pair (pointwise) or per group of pairs of one query (--batch)."""

    name = "judge"
    record_model = Judgment

    def __init__(self, judge: Judge):
        self.judge = judge
        self._said: dict[str, Any] = {}  # call_texts' blocks of the current query and recent passages

    def identity(self, record: dict) -> str:
        return pair_key(record["query_id"], record["chunk_id"])

    def _pointwise(self, q: QueryItem, c: Chunk, done: Callable[[str], bool] = lambda key: False,
                   key: str | None = None) -> WorkItem:
        """One pair alone: no call for an empty chunk; one set of calls per window of a long one. A
        pair already done keeps its place in the plan (its record is this run's too) but no prompt
        is built for it: a rerun of a finished judgment costs its keys only."""
        j = self.judge
        key = key or j.pair_fingerprint(q, c, j.rel_prompt.id)
        if done(key):  # never finished nor asked again: no payload either
            return WorkItem(key, [])
        windows = j.windows(c)
        if not c.text or c.text.isspace():  # (not strip(): no copy of every chunk's text)
            return WorkItem(key, [], [_Pair(q, c, key, windows)])

        return WorkItem(key, payload=[_Pair(q, c, key, windows)], build=partial(self._pointwise_calls, q, c, windows))

    def call_texts(self, item: WorkItem) -> list[CallText] | None:
        """A pair judged alone, as texts (the engine's estimate counts them without building the
        prompts): the same pieces :meth:`Judge.relevance_messages` joins, a query's and a passage's
        blocks made once and reused while the plan goes query by query."""
        j = self.judge
        if j.options.batch > 1 or not isinstance(item.payload, list) or len(item.payload) != 1:
            return None  # batches: built (their groups are not one pair's)
        p: _Pair = item.payload[0]
        if not p.chunk.text or p.chunk.text.isspace():  # decided by a rule, as _pointwise plans it
            return []
        memo = self._said
        if memo.get("query_id") != p.query.id:  # this query's messages around its passage, made once
            memo["query_id"] = p.query.id
            memo["around"] = tuple((role, "".join(texts).split(_SLOT)) for role, texts in
                                   j.rel_prompt.pieces(**j.filled(**j.query_values(p.query), passage=_SLOT)))
        passages = memo.setdefault("passages", {})
        if len(passages) > 20_000:  # bounded: a plan goes query by query, passages recur at random
            passages.clear()
        shapes = memo.get("shapes")
        if shapes is None:  # (model, temperature, seed, sample) of each call of one prompt
            shapes = memo["shapes"] = [(m, j.temperature(m), j.seed(smp), smp) for m in range(len(j.configs))
                                       for smp in range(j.options.samples)]
        out = []
        max_tokens = j.options.max_tokens
        for window in (p.windows or (None,)):
            block = passages.get((p.chunk.id, window))
            if block is None:
                block = passages[(p.chunk.id, window)] = j.passage_block(p.chunk, window)
            pieces = tuple([(role, tuple(x for i, part in enumerate(parts) for x in ((block, part) if i else (part,))))
                            for role, parts in memo["around"]])  # (a prompt file may show the passage twice)
            for m, temperature, seed, smp in shapes:
                out.append(CallText(m, pieces, j.answer_model, "judge", max_tokens, temperature, seed, smp))
        return out

    def _pointwise_item(self, q: QueryItem, chunk_id: str, key: str) -> WorkItem:
        return self._pointwise(q, self.chunks[chunk_id], _never, key)

    def _pointwise_calls(self, q: QueryItem, c: Chunk, windows: list[tuple[int, int]] | None) -> list[Call]:
        """One pair's prompts: made when its item is estimated or sent, not when it is planned."""
        j = self.judge
        if windows is None:
            return j.relevance_calls(j.relevance_messages(q, c), j.answer_model, j.options.max_tokens)
        return [call for w in windows
                for call in j.relevance_calls(j.relevance_messages(q, c, w), j.answer_model, j.options.max_tokens)]

    def plan_queries(self, groups: Iterable[tuple[QueryItem, Sequence[str]]], chunks: Mapping[str, Chunk],
                     done_flags: Callable[[Sequence[str]], list[bool]]) -> Items:
        """What :meth:`plan` makes of the pairs of each query with its chunks (named by id, looked
        up in ``chunks``), in order, when pairs are judged alone (no ``--batch``): a query's keys
        made and looked up together (a rerun of a finished judgment costs little more than its
        keys), a pair to do held as its key, its query and its chunk's id (the chunk is looked up
        when the item is made: a large chunks file is not held). ``done_flags``: whether each key
        is done."""
        j = self.judge
        if j.options.batch > 1:  # (a batch holds its chunks: from a table, each read once and shared)
            held = _Shared(chunks) if isinstance(chunks, ChunkTable) else chunks
            return self.plan(((q, held[c]) for q, ids in groups for c in ids), lambda key: done_flags([key])[0])
        self.chunks = chunks
        items = Items(make=self._pointwise_item)
        prompt_id = j.rel_prompt.id
        seen: set[str] = set()  # query ids: a key is a hash of its query's and its chunk's ids among the rest
        distinct = True
        for q, ids in groups:
            distinct = distinct and q.id not in seen and len(set(ids)) == len(ids)
            seen.add(q.id)
            keys = j.query_keys(q, ids, prompt_id, chunks)
            flags = done_flags(keys)
            if all(flags):
                items.add_done_keys(keys)
                continue
            for cid, key, done in zip(ids, keys, flags):
                if done:
                    items.add_done(key)
                else:
                    items.add_lazy(key, q, cid)  # made when it is estimated or sent
        j.forget_key_parts()
        items.distinct_keys = distinct
        return items

    def plan(self, pairs: Iterable[tuple[QueryItem, Chunk]], done: Callable[[str], bool]) -> Items:
        """The items of ``pairs`` (read once, as they come), in order; a pair already done keeps its
        place (its record is this run's too) as its key alone."""
        j, o = self.judge, self.judge.options
        items = Items(make=self._pointwise_item)
        if o.batch <= 1:
            given: dict[str, Chunk] = {}  # (by id: the first chunk given under an id is its chunk)
            groups = ((q, [given.setdefault(c.id, c).id for c in chunks]) for q, chunks in _by_query(pairs))
            return self.plan_queries(groups, given, lambda keys: list(map(done, keys)))
        # batches are formed from the pairs not yet done, so a resumed run asks only what is missing
        by_query: dict[str, list[_Pair]] = {}
        queries: dict[str, QueryItem] = {}
        for q, c in pairs:
            if j.windows(c) is not None:  # too long to share a call: judged alone, window by window
                items.add(self._pointwise(q, c, done))
                continue
            p = _Pair(q, c, j.pair_fingerprint(q, c, j.batch_prompt.id))
            if done(p.key):  # never regrouped
                items.add_done(p.key)
                continue
            by_query.setdefault(q.id, []).append(p)
            queries[q.id] = q
        for qid, ps in by_query.items():
            for p in [p for p in ps if not p.chunk.text.strip()]:  # empty chunks: a rule, no call
                items.add(WorkItem(p.key, [], [p]))
            live = [p for p in ps if p.chunk.text.strip()]
            for i in range(0, len(live), o.batch):
                group = live[i:i + o.batch]
                # shown in an order fixed by the group's content, not the run's ranking, so the rank a
                # retriever gave a chunk does not become a position effect on its grade
                random.Random(fingerprint(*[p.key for p in group])).shuffle(group)
                messages = j.batch_messages(queries[qid], [p.chunk for p in group])
                calls = j.relevance_calls(messages, BatchAnswer, o.max_tokens * len(group))
                items.add(WorkItem(fingerprint(*[p.key for p in group]), calls, group,
                                   record_keys=[p.key for p in group]))
        return items

    async def finish(self, item: WorkItem, answers: list[BaseModel], llms: Sequence[LLM]) -> list[Judgment]:
        j = self.judge
        pairs: list[_Pair] = item.payload
        if not pairs:  # planned as done (see _pointwise): the engine never runs such an item
            raise LLMError("internal", "this pair was planned as already judged but its record is missing; rerun")
        if not item.calls:
            p = pairs[0]
            if p.chunk.text.strip():  # planned as done (no prompt built), yet asked: never a made-up grade
                raise LLMError("internal", "this pair was planned as already judged but its record is missing; "
                                           "rerun to judge it")
            prompt = j.rel_prompt.id if j.options.batch <= 1 else j.batch_prompt.id
            return [j.record(p.query.id, p.chunk.id, 0, [], "empty chunk: graded 0 without a call", "rule",
                             prompt, p.key)]
        if pairs[0].windows is not None:
            return [self._best_window(pairs[0], answers)]
        if len(pairs) == 1 and item.calls[0].response_model is not BatchAnswer:
            p = pairs[0]
            return [j.from_votes(p.query.id, p.chunk.id, [a.grade for a in answers], answers, j.rel_prompt.id,
                                 p.key)]
        batch_answers = answers[:len(item.calls)]
        votes, reasons, missing = self._batch_votes(pairs, batch_answers)
        alone = iter(self._alone(answers[len(item.calls):], len(missing)))
        out = []
        for position, p in enumerate(pairs):
            cid = p.chunk.id
            if cid not in missing:
                record = j.from_votes(p.query.id, cid, votes[cid], reasons[cid], j.batch_prompt.id, p.key)
                out.append(record.model_copy(update={"batch_position": position, "batch_size": len(pairs)}))
                continue
            mine = next(alone)  # this pair's own calls, asked in the step after the batch (next_calls)
            out.append(j.from_votes(p.query.id, cid, [a.grade for a in mine], mine, j.rel_prompt.id, p.key))
        return out

    @staticmethod
    def _batch_votes(pairs: Sequence[_Pair], answers: Sequence[Any]) -> tuple[dict, dict, list[str]]:
        """Each pair's votes from the batch answers, and the chunk ids an answer left out or graded
        twice (which grade would be meant?), in the group's order."""
        votes: dict[str, list[int]] = {p.chunk.id: [] for p in pairs}
        reasons: dict[str, list[Any]] = {p.chunk.id: [] for p in pairs}
        missing: set[str] = set()
        for a in answers:
            # an id the prompt showed defused (marker text, line breaks) is matched back as shown
            meant = [(echoed_id(it.chunk_id, votes), it) for it in a.judgments]
            seen = Counter(cid for cid, _ in meant)
            got = {cid: it for cid, it in meant if cid is not None and seen[cid] == 1}
            for cid in votes:
                if cid in got:
                    votes[cid].append(got[cid].grade)
                    reasons[cid].append(got[cid])
                else:
                    missing.add(cid)
        return votes, reasons, [p.chunk.id for p in pairs if p.chunk.id in missing]

    def _alone(self, answers: Sequence[Any], n_pairs: int) -> list[list[Any]]:
        """The pointwise answers of the pairs a batch missed, split per pair."""
        per = len(self.judge.configs) * self.judge.options.samples
        return [list(answers[i * per:(i + 1) * per]) for i in range(n_pairs)]

    def next_calls(self, item: WorkItem, answers: Sequence[BaseModel | None]) -> list[Call]:
        """After a batch answer: each pair it missed is asked alone (part of the plan, so a batch
        or export backend defers these calls like any other). A dry run cannot know which pairs an
        answer will miss: it plans none (the estimate says so)."""
        if not item.calls or item.calls[0].response_model is not BatchAnswer or len(answers) != len(item.calls):
            return []
        if any(a is None for a in answers):
            return []
        j = self.judge
        pairs: list[_Pair] = item.payload
        _, _, missing = self._batch_votes(pairs, answers)
        j.batch_fallbacks += len(missing)
        by_id = {p.chunk.id: p for p in pairs}
        return [call for cid in missing for call in
                j.relevance_calls(j.relevance_messages(by_id[cid].query, by_id[cid].chunk), j.answer_model,
                                  j.options.max_tokens)]

    def _best_window(self, p: _Pair, answers: list[BaseModel]) -> Judgment:
        """A long chunk is as useful as its most useful part: the grade of its best window."""
        j = self.judge
        per = len(answers) // len(p.windows)
        records = [j.from_votes(p.query.id, p.chunk.id, [a.grade for a in answers[i:i + per]], answers[i:i + per],
                                j.rel_prompt.id, p.key) for i in range(0, len(answers), per)]
        best = max(range(len(records)), key=lambda i: records[i].grade or 0)
        start, end = p.windows[best]
        # "samples" keeps the best window's votes (samples and jurors): windows are parts of one
        # passage, not votes, and must not count as disagreement
        return records[best].model_copy(update={"windows": len(p.windows), "window_grades": [r.grade for r in records],
                                                "best_window": [start, end]})

    def error_records(self, item: WorkItem, error: LLMError) -> list[Judgment]:
        return [self.judge.error_record(p.query.id, p.chunk.id, error, p.key) for p in item.payload or []]


# ---------------------------------------------------------------------------------- driver


class RunTop:
    """Each query's top chunk ids in a run (trec_eval's order) down to a depth, and the run's name:
    all a judgment reads of a run, so the run's table (a million rows) is not kept through it. An
    id is the chunks' own string for it where the chunks hold it (one string per chunk)."""

    def __init__(self, name: str, top: dict[str, list[str]], depth: int):
        self.name, self.top, self.depth = name, top, depth

    @classmethod
    def of(cls, run, depth: int, chunks: Mapping[str, Chunk] | Sequence[Chunk]) -> RunTop:
        if isinstance(chunks, ChunkTable):
            table = chunks
            own = lambda cid: table.id_of(cid) if cid in table else cid  # noqa: E731
        else:
            by_id = chunks if isinstance(chunks, Mapping) else {c.id: c for c in chunks}
            own = lambda cid: by_id[cid].id if cid in by_id else cid  # noqa: E731
        return cls(run.name, {qid: [own(cid) for cid in top] for qid, top in run.iter_top_ids(depth)}, depth)

    def iter_top_ids(self, depth: int) -> Iterator[tuple[str, list[str]]]:
        if depth > self.depth:
            raise ValueError(f"the top {self.depth} was kept, not the top {depth}")
        for qid, top in self.top.items():
            yield qid, top if depth == self.depth else top[:depth]


class PairIds(Sequence):
    """The (query id, chunk id) pairs to judge, in plan order, read from each query's top list as
    they are iterated (a million pairs are not a million tuples)."""

    def __init__(self, per_query: Mapping[str, list[str]], kept: set[tuple[str, str]]):
        self._per_query, self._kept = per_query, kept
        self._n = sum(len(top) for top in per_query.values()) - sum(1 for q, _ in kept if q in per_query)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[tuple[str, str]]:
        kept = self._kept
        for qid, top in self._per_query.items():
            for cid in top:
                if not kept or (qid, cid) not in kept:
                    yield qid, cid

    def __getitem__(self, i: Any) -> Any:
        return list(self)[i]

    def groups(self) -> Iterator[tuple[str, list[str]]]:
        """Each query id with its chunk ids, in the order of iteration (a query with none left out)."""
        kept = self._kept
        for qid, top in self._per_query.items():
            if kept:
                top = [cid for cid in top if (qid, cid) not in kept]
            if top:
                yield qid, top


def plan_pairs(queries: Sequence[QueryItem], chunks: Mapping[str, Chunk], run, depth: int,
               keep: Mapping[str, Mapping[str, int]] | None = None):
    """The (query, chunk) pairs to judge: the top ``depth`` of each query in the run, minus pairs
    already labelled in ``keep``. Run chunk ids missing from the chunks file are an error. Returns
    the pairs (a :class:`PairIds`), the kept pairs, each query's top ids and the run's queries that
    are not in ``queries``."""
    keep = keep or {}
    qmap = {q.id: q for q in queries}
    missing_queries: list[str] = []
    kept: list[tuple[str, str]] = []
    per_query: dict[str, list[str]] = {}
    unknown = []
    for qid, top in run.iter_top_ids(depth):  # one query's ids at a time
        if qid not in qmap:
            missing_queries.append(qid)
            continue
        if all(map(chunks.__contains__, top)):
            known = top
        else:
            known = [cid for cid in top if cid in chunks]
            unknown.extend((qid, cid) for cid in top if cid not in chunks)
        mine = keep.get(qid)
        if mine:
            kept.extend((qid, cid) for cid in known if cid in mine)
        per_query[qid] = known
    if unknown:
        qid, cid = unknown[0]
        raise InputError(f"the run lists chunk {cid!r} (query {qid!r}) that is not in the chunks file; "
                         f"{len(unknown)} such pair(s){_integer_ids(unknown, chunks)}. Judge against the chunks the run "
                         "was made from")
    return PairIds(per_query, set(kept)), kept, per_query, missing_queries


def _integer_ids(unknown: list[tuple[str, str]], chunks: Mapping[str, Chunk]) -> str:
    """A word on the run's missing ids when they are integers and the chunks' ids are not: the
    positions of an index, not chunk ids (empty otherwise)."""
    ints = sum(1 for _, cid in unknown if cid.lstrip("-").isdigit())
    if not ints:
        return ""
    sample = [c for c, _ in zip(chunks, range(50))]
    if not sample or any(c.lstrip("-").isdigit() for c in sample):
        return ""
    return (f"; {ints} of them are integers while the chunks' ids are not (e.g. {sample[0]!r}): positions in "
            "an index rather than chunk ids?")


@dataclass
class JudgePlan:
    """Everything a judge run will do, computed without an endpoint."""

    judge: Judge
    relevance: RelevanceStage
    relevance_items: Sequence[WorkItem]  # an Items: a pair already done is its key alone
    relevance_store: OutputStore
    coverage: CoverageStage | None
    coverage_items: list[WorkItem]
    coverage_store: OutputStore | None
    pairs: int
    kept: int
    keep: dict
    unknown_queries: list[str]
    queries: dict[str, QueryItem]
    chunks: dict[str, Chunk]
    per_query: dict[str, list[str]]
    keep_origin: Any = None  # who made the --keep labels (data/origin.py), carried into the qrels written
    pool: Any = None  # this run as a member of the pool its qrels say (data/origin.PoolRun)

    def estimate(self) -> Estimate:
        """Calls are exact; coverage's are planned from the judgments already in the output (the run
        plans them again after judging, so a nugget source that gains relevant passages is priced
        approximately)."""
        def done(store):
            done = store.done
            return lambda it: all(map(done, it.record_keys))
        est = estimate(self.relevance_items, done(self.relevance_store), self.judge.configs, self.relevance)
        if self.coverage is not None:
            est = est.add(estimate(self.coverage_items, done(self.coverage_store), self.judge.configs[:1],
                                   self.coverage))
        return est

    def plan_coverage(self, judged: Iterable[dict]) -> None:
        """Coverage items for this run, with nugget sources from ``judged`` (ok judgment records):
        for a query without a reference answer, the passages judged 2 or 3 for it, any run."""
        if self.coverage is None:
            return
        relevant: dict[str, list[str]] = {}
        pairs = [(r["query_id"], r["chunk_id"]) for r in judged
                 if r.get("status") == "ok" and (r.get("grade") or 0) >= 2 and r["chunk_id"] in self.chunks]
        for qid, cid in sorted(pairs):
            relevant.setdefault(qid, []).append(cid)
        known = self.coverage.known_nuggets(self.coverage_store.file_records())
        chunks = self.chunks
        if isinstance(chunks, ChunkTable):  # each read makes a new chunk: one per id, shared by the items
            chunks = _Shared(chunks)
        self.coverage_items = self.coverage.plan([
            (self.queries[q], [chunks[c] for c in top], [chunks[c] for c in relevant.get(q, [])[:10]])
            for q, top in self.per_query.items()], known, self.coverage_store.done)


class _Shared(dict):
    """The chunks of a table, each read once and then shared (a coverage plan holds its items'
    chunks: a chunk in many queries' tops is one object, as when the chunks are held)."""

    def __init__(self, table: ChunkTable):
        super().__init__()
        self.table = table

    def __missing__(self, chunk_id: str) -> Chunk:
        chunk = self[chunk_id] = self.table[chunk_id]
        return chunk


def plan_judge(queries: Sequence[QueryItem], chunks: Sequence[Chunk] | Mapping[str, Chunk], run,
               configs: Sequence[LLMConfig], output: str | Path, *, options: JudgeOptions | None = None,
               keep=None, coverage_out: str | Path | None = None) -> JudgePlan:
    """Pure: inputs and what ``output`` already holds -> the items and calls of a judge run."""
    with bulk():
        return _plan_judge(queries, chunks, run, configs, output, options=options, keep=keep, coverage_out=coverage_out)


def _plan_judge(queries: Sequence[QueryItem], chunks: Sequence[Chunk] | Mapping[str, Chunk], run,
                configs: Sequence[LLMConfig], output: str | Path, *, options: JudgeOptions | None = None,
                keep=None, coverage_out: str | Path | None = None) -> JudgePlan:
    options = options or JudgeOptions()
    if not isinstance(run, RunTop):
        run = RunTop.of(coerce_run(run), options.depth, chunks)
    chunk_map = chunks if isinstance(chunks, Mapping) else {c.id: c for c in chunks}
    keep_qrels = coerce_qrels(keep) if keep is not None else None
    keep_dict = keep_qrels.to_dict() if keep_qrels is not None else {}
    pairs, kept, per_query, unknown_queries = plan_pairs(queries, chunk_map, run, options.depth, keep_dict)
    if options.shard is not None:  # a query's pairs and its coverage stay on one shard
        kept = [p for p in kept if in_shard(p[0], options.shard)]
        per_query = {q: top for q, top in per_query.items() if in_shard(q, options.shard)}
        pairs = PairIds(per_query, set(kept))
    qmap = {q.id: q for q in queries}
    judge = Judge(configs, options)
    rel = RelevanceStage(judge)
    store = OutputStore(output, rel.identity)
    items = rel.plan_queries(((qmap[q], top) for q, top in pairs.groups()), chunk_map, store.done_flags)
    cov = cov_store = None
    if coverage_out is not None:
        cov = CoverageStage(configs[0], judge.passages, run.name, options.max_tokens * 2)
        cov_store = OutputStore(coverage_out, cov.identity)
    give_back_freed()  # (what planning let go: the keys' encoded parts)
    plan = JudgePlan(judge, rel, items, store, cov, [], cov_store, len(pairs) + len(kept), len(kept), keep_dict,
                     unknown_queries, qmap, chunk_map, per_query, getattr(keep_qrels, "origin", None))
    plan.pool = PoolRun(name=run.name or "run", digest=pool_digest(run.top), depth=run.depth)
    plan.plan_coverage(store.records())
    return plan


@dataclass
class JudgeResult:
    """What a judge run did, for this run's pairs only (other records in the files are not counted)."""

    relevance: StageRun
    coverage: StageRun | None
    pairs: int
    kept: int
    truncated: int
    batch_fallbacks: int
    usage: dict[str, Any] = field(default_factory=dict)  # model -> calls, tokens and cost (Usage.to_dict())
    usage_text: str = ""  # the same, as the line the command prints
    coverage_waits: bool = False  # coverage was not run: judgments still wait for batch answers
    batch_note: str = ""  # what a run on batch files or the Batch API left to do (set by the scaffold)
    join: dict | None = None  # how the queries met the run by id (data/joins.py)

    @property
    def pending(self) -> int:
        """Items waiting for batch answers (relevance and coverage)."""
        return self.relevance.pending + (self.coverage.pending if self.coverage else 0)

    @property
    def records(self) -> Sequence[dict]:
        """This run's judgments, one per pair in plan order (parsed as they are read)."""
        return self.relevance.records

    def to_dataframe(self) -> Any:
        """The judgments of this run as a pandas DataFrame (coverage: ``result.coverage.to_dataframe()``)."""
        return self.relevance.to_dataframe()

    def __repr__(self) -> str:
        return f"JudgeResult({self.pairs} pairs, relevance={self.relevance!r}, coverage={self.coverage!r})"

    _TALLY = "judge summary 1"  # the name of the tally kept in the output's index (see _tally)

    def _tally(self) -> dict[str, Any]:
        """What the summary says of this run's records, read in one pass (a large run's records are
        parsed one at a time, never all held), and kept: in this result, and in the output's index
        for the next run with the same records in an unchanged output (a rerun of finished work
        then reads none of them)."""
        tally = self.__dict__.get("_tally_cache")
        if tally is None:
            records = self.relevance.records
            remembered = records.memo(self._TALLY) if isinstance(records, Records) else None
            tally = _tally_from_json(remembered) if remembered is not None else None
            if tally is None:
                tally = _tally_of(records)
                if isinstance(records, Records):
                    records.remember(self._TALLY, _tally_to_json(tally))
            self.__dict__["_tally_cache"] = tally
        return tally

    @property
    def grades(self) -> Counter:
        return Counter(self._tally()["grades"])

    @property
    def errors(self) -> int:
        return self.relevance.errors + (self.coverage.errors if self.coverage else 0)

    @property
    def sample_disagreement(self) -> float | None:
        """The flip rate: the share of pairs whose votes were not all the same grade."""
        return self._tally()["sample_disagreement"]

    @property
    def mean_vote_spread(self) -> float | None:
        """Per-pair disagreement: the mean of (highest vote - lowest vote), 0 to 3."""
        return self._tally()["mean_vote_spread"]

    @property
    def juror_agreement(self) -> dict[str, dict[str, float]] | None:
        """For each pair of jurors: exact agreement and linear-weighted Cohen's kappa of their grades."""
        return self._tally()["juror_agreement"]

    @property
    def exit_code(self) -> int:
        codes = [self.relevance.exit_code] + ([self.coverage.exit_code] if self.coverage else [])
        if all(c == 0 for c in codes):
            return 0
        ok = self.relevance.ok + (self.coverage.ok if self.coverage else 0)
        stopped = self.relevance.stopped or (self.coverage.stopped if self.coverage else None)
        return 1 if ok == 0 and not stopped else 3

    def to_dict(self) -> dict[str, Any]:
        return self.summary().to_dict()

    def summary(self) -> JudgeSummary:
        """The typed result (kind ``judge``): counts, grades, coverage labels, usage as numbers."""
        cov = Counter(r["coverage"] for r in self.coverage.records if r["status"] == "ok") if self.coverage else None
        return JudgeSummary(
            pairs=self.pairs, kept=self.kept, judged=self.relevance.ok, errors=self.errors,
            already_done=self.relevance.skipped_done, decided_by_rule=self._tally()["decided_by_rule"],
            grades={str(g): self._tally()["grades"].get(g, 0) for g in range(4)},
            coverage=None if cov is None else {k: cov.get(k, 0) for k in ("FULL", "PARTIAL", "NONE")},
            sample_disagreement=self.sample_disagreement, mean_vote_spread=self.mean_vote_spread,
            juror_agreement=self.juror_agreement, truncated=self.truncated, windowed=self._tally()["windowed"],
            batch_fallbacks=self.batch_fallbacks, pending=self.pending,
            error_reasons=dict((self.relevance.error_reasons + (self.coverage.error_reasons if self.coverage
                                                                else Counter())).most_common(5)),
            usage=self.usage, usage_text=self.usage_text, join=self.join)

    def text(self) -> str:
        d = self.summary()
        j = self.join
        lines = [] if not j else [f"queries: {j['left']['matched']} of {j['left']['ids']} in the queries file are in "
                                  f"the run ({j['right']['ids']} queries)"]
        lines += [f"pairs: {self.pairs} ({self.kept} kept from --keep, {d.already_done} already done, "
                 f"{d.decided_by_rule} decided by rule, {self.relevance.errors} "
                 f"error{'s' if self.relevance.errors != 1 else ''})",
                 "grades: " + ", ".join(f"{g}: {n}" for g, n in d.grades.items())]
        if self.coverage is not None:
            lines.append("coverage: " + ", ".join(f"{k}: {v}" for k, v in d.coverage.items())
                         + (f", errors: {self.coverage.errors}" if self.coverage.errors else ""))
        if self.sample_disagreement is not None:
            lines.append(f"votes disagreed on {self.sample_disagreement:.1%} of judged pairs (flip rate); "
                         f"mean spread {self.mean_vote_spread:.2f} grades")
        for jurors, a in (self.juror_agreement or {}).items():
            kappa = "n/a" if a["kappa_linear"] is None else f"{a['kappa_linear']:.3f}"
            lines.append(f"jurors {jurors}: same grade on {a['agreement']:.1%} of {a['pairs']} pairs, "
                         f"linear kappa {kappa}")
        if d.windowed:
            lines.append(f"{d.windowed} long chunks were judged in windows (the best window's grade)")
        if self.truncated:
            lines.append(f"{self.truncated} chunks were cut to the length budget")
        if self.batch_fallbacks:
            lines.append(f"{self.batch_fallbacks} pairs fell back to pointwise after a batch answer missed them")
        if self.relevance.pending:
            lines.append(f"{self.relevance.pending} judge items wait for batch answers"
                         + ("; coverage runs once they are in" if self.coverage_waits else ""))
        if self.coverage is not None and self.coverage.pending:
            lines.append(f"{self.coverage.pending} coverage items wait for batch answers (one step per round)")
        for stage in (self.relevance, self.coverage):
            if stage is not None and (stage.errors or stage.stopped):
                lines.append(stage.failure_text())
        if self.usage_text:
            lines.append(self.usage_text)
        return "\n".join(lines)


def _tally_of(records: Iterable[dict]) -> dict[str, Any]:
    """The summary's figures from judgment records: grades of the ok ones, how many a rule decided
    and how many were judged in windows, and, where there were several votes or jurors, how much
    they disagreed."""
    grades: Counter = Counter()
    votes: list[list[int]] = []
    jurors: list[dict[str, int]] = []
    rule = windowed = 0
    for r in records:
        rule += r.get("decided_by") == "rule"
        windowed += bool(r.get("windows"))
        if r["status"] != "ok":
            continue
        grades[r["grade"]] += 1
        if len(r.get("samples") or []) > 1:
            votes.append(r["samples"])
        if r.get("juror_grades"):
            jurors.append(r["juror_grades"])
    return {"grades": dict(grades), "decided_by_rule": rule, "windowed": windowed,
            "sample_disagreement": sum(1 for v in votes if len(set(v)) > 1) / len(votes) if votes else None,
            "mean_vote_spread": sum(max(v) - min(v) for v in votes) / len(votes) if votes else None,
            "juror_agreement": _juror_agreement(jurors)}


def _juror_agreement(rows: list[dict[str, int]]) -> dict[str, dict[str, Any]] | None:
    if not rows:
        return None
    names = list(rows[0])
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            x, y = [r[a] for r in rows], [r[b] for r in rows]
            kappa = cohen_kappa(x, y, "linear")
            out[f"{a} vs {b}"] = {"pairs": len(rows), "agreement": sum(u == v for u, v in zip(x, y)) / len(rows),
                                  "kappa_linear": None if kappa != kappa else kappa}
    return out


def _tally_to_json(tally: dict[str, Any]) -> dict[str, Any]:
    """A tally as JSON keeps it: grades as [grade, count] pairs (a grade may be None)."""
    return {**tally, "grades": [[g, n] for g, n in tally["grades"].items()]}


def _tally_from_json(value: Any) -> dict[str, Any] | None:
    """:func:`_tally_to_json` read back; None when it is not one (the tally is then counted again)."""
    try:
        grades = {g: int(n) for g, n in value["grades"]}
        out = {"grades": grades, "decided_by_rule": int(value["decided_by_rule"]), "windowed": int(value["windowed"]),
               "sample_disagreement": value["sample_disagreement"], "mean_vote_spread": value["mean_vote_spread"],
               "juror_agreement": value["juror_agreement"]}
    except (KeyError, TypeError, ValueError):
        return None
    return out


async def execute_judge(plan: JudgePlan, llms: Sequence[LLM], *, qrels_out: str | Path | None = None,
                        announce_unknown: bool = True) -> JudgeResult:
    """Run a plan made by :func:`plan_judge` with one LLM per config; write qrels when asked.
    ``announce_unknown``: warn of run queries missing from the queries (a job has said it with counts)."""
    if plan.unknown_queries and announce_unknown:
        print(f"warning: {len(plan.unknown_queries)} run queries are not in the queries file and are not judged "
              f"(first: {plan.unknown_queries[0]!r})", file=sys.stderr)
    options = plan.judge.options
    concurrency = llms[0].config.concurrency if llms else 8
    rel = await run_stage(plan.relevance, plan.relevance_items, llms, plan.relevance_store,
                          concurrency=concurrency, quiet=options.quiet)
    if rel.pending:  # judgments wait for a batch: no qrels yet, and coverage (whose sources use them) waits too
        return JudgeResult(rel, None, plan.pairs, plan.kept, len(plan.judge.truncated), plan.judge.batch_fallbacks,
                           *_usage(llms), coverage_waits=plan.coverage is not None)
    if qrels_out is not None:
        # the qrels say what the judgments file says: every pair judged into it, by this run or an
        # earlier one (another retriever's run judged into the same files), and people's labels
        union: dict[str, dict[str, int]] = {}
        graders: set[tuple[str, str]] = set()
        for r in plan.relevance_store.output_records():
            if r["status"] == "ok":
                union.setdefault(r["query_id"], {})[r["chunk_id"]] = int(r["grade"])
                graders.add((r["model"], r["prompt"]))
        for q, docs in plan.keep.items():
            union.setdefault(q, {}).update(docs)  # a person's label always wins
        before = read_origin(qrels_out) if Path(qrels_out).exists() else None  # earlier runs judged into these
        write_qrels(qrels_out, union, origin=_qrels_origin(graders, llms, plan, before))
    cov = None
    if plan.coverage is not None:
        plan.plan_coverage(plan.relevance_store.records())  # with this run's grades too
        cov = await run_stage(plan.coverage, plan.coverage_items, llms[:1], plan.coverage_store,
                              concurrency=concurrency, quiet=options.quiet)
    return JudgeResult(rel, cov, plan.pairs, plan.kept, len(plan.judge.truncated), plan.judge.batch_fallbacks,
                       *_usage(llms))


def _qrels_origin(graders: set[tuple[str, str]], llms: Sequence[LLM], plan: JudgePlan, before: Any = None):
    """Who made the qrels judge writes: each (model, prompt) that graded a pair in the judgments
    file (the endpoint's host for this run's models), and whoever made the --keep labels; on the
    judge's scale; and the pool: this run to its depth, with the runs judged into the file before."""
    hosts = {llm.config.model: endpoint_host(llm.config.base_url) for llm in llms}
    one_host = next(iter(set(hosts.values()))) if len(set(hosts.values())) == 1 else None  # a jury at one endpoint
    mine = Origin(labellers=tuple(Labeller(by="model", name=m, prompt=p, endpoint=hosts.get(m, one_host))
                                  for m, p in sorted(graders, key=lambda g: (str(g[0]), str(g[1])))))
    earlier = tuple(before.pool or ()) if before is not None and before.command == "judge" else ()
    pool = tuple({(p.name, p.digest, p.depth): p for p in (*earlier, *([plan.pool] if plan.pool else []))}.values())
    mine = mine.replace(scale=JUDGE_SCALE, relevant_from=JUDGE_RELEVANT_FROM, pool=pool or None)
    if not plan.keep:
        return merged(mine, command="judge")
    kept = plan.keep_origin if plan.keep_origin is not None and plan.keep_origin.known else \
        Origin(labellers=(Labeller(by="unknown", name="--keep labels of unknown origin"),))
    return merged(mine, kept, command="judge")


def _usage(llms: Sequence[LLM]) -> tuple[dict[str, Any], str]:
    """What each juror used: as numbers, and as the line the command prints."""
    return ({llm.config.model: llm.usage.to_dict() for llm in llms},
            "; ".join(f"{llm.config.model}: {llm.usage.summary()}" for llm in llms))


async def judge_run(queries: Sequence[QueryItem], chunks: Sequence[Chunk] | Mapping[str, Chunk], run,
                    llms: Sequence[LLM], output: str | Path, *, options: JudgeOptions | None = None,
                    keep=None, qrels_out: str | Path | None = None,
                    coverage_out: str | Path | None = None) -> JudgeResult:
    """Judge the top of ``run``; write judgments (and qrels, coverage) and return what was done."""
    plan = plan_judge(queries, chunks, run, [llm.config for llm in llms], output, options=options, keep=keep,
                      coverage_out=coverage_out)
    return await execute_judge(plan, llms, qrels_out=qrels_out)


def build_llms(config: LLMConfig, models: Sequence[str] | None) -> list[LLM]:
    return [LLM(c) for c in model_configs(config, models)]


def model_configs(config: LLMConfig, models: Sequence[str] | None) -> list[LLMConfig]:
    """One config per model of a jury (``--model`` repeated), the rest shared."""
    names = list(models) if models else [config.model]
    return [dataclasses.replace(config, model=m) for m in names]


class JudgeJob(StageJob[JudgeResult]):
    """A judge run for the scaffold (:func:`ragassay.runtime.scaffold.run_llm_stage`): planned again
    on every round, since a batch round changes what the outputs hold."""

    def __init__(self, queries: Sequence[QueryItem], chunks: Mapping[str, Chunk], run, configs: Sequence[LLMConfig],
                 output: str | Path, *, options: JudgeOptions, keep=None, qrels_out: str | Path | None = None,
                 coverage_out: str | Path | None = None, sources: tuple[str | None, str | None] = (None, None)):
        self.queries, self.chunks, self.keep = queries, chunks, keep
        self.run = RunTop.of(coerce_run(run), options.depth, chunks)  # (the table itself is let go)
        give_back_freed()
        # the queries meet the run by id: counted, and none in common is an error before any call
        self.join = Join.of("query ids", "the queries", (q.id for q in queries), "the run", self.run.top,
                            sources[0], sources[1] or getattr(run, "source", None)).require_overlap()
        self.join.warn()
        self.configs, self.output, self.options = list(configs), Path(output), options
        self.qrels_out, self.coverage_out = qrels_out, coverage_out

    def plan(self) -> JudgePlan:
        return plan_judge(self.queries, self.chunks, self.run, self.configs, self.output, options=self.options,
                          keep=self.keep, coverage_out=self.coverage_out)

    def estimate(self) -> Estimate:
        return self.plan().estimate()

    async def execute(self, llms: Sequence[LLM]) -> JudgeResult:
        context = await llms[0].known_context() if llms else None
        fitted = fit_to_context(self.options, context, self._fixed_tokens())
        if fitted is not self.options:
            self.options = fitted
            if not fitted.quiet:
                print(f"judge: the server's context is {context:,} tokens: chunks longer than "
                      f"{fitted.max_chunk_chars:,} characters are judged in windows of that size", file=sys.stderr)
        result = await execute_judge(self.plan(), llms, qrels_out=self.qrels_out, announce_unknown=False)
        result.join = self.join.to_dict()
        return result

    def pending(self, result: JudgeResult) -> int:
        return result.pending

    def _fixed_tokens(self) -> int:
        """Tokens of a relevance prompt around its passage, for the longest query (an estimate)."""
        if not self.queries:
            return 0
        judge = Judge(self.configs, self.options)
        longest = max(self.queries, key=lambda q: len(q.text) + len(q.need_block()) + len(q.expected_block()))
        return sum(estimate_tokens(m["content"]) for m in judge.relevance_messages(longest, Chunk(id="x", text="")))


CHARS_PER_TOKEN_AT_LEAST = 3.0  # English runs near 4 characters a token; 3 leaves room for other text
MIN_WINDOW_CHARS = 400  # a context with less room than this for the passage: windows cannot help


def fit_to_context(options: JudgeOptions, context: int | None, fixed_tokens: int) -> JudgeOptions:
    """Options whose windows fit a server's context: the room left by the prompt's fixed part and
    the answer's budget, in characters (at ``CHARS_PER_TOKEN_AT_LEAST``, shared by a batch's
    passages), when that is less than ``max_chunk_chars``; the same object otherwise. A context too
    small even for a short window is left to the client, which sends no prompt that cannot fit."""
    if context is None or options.long_chunks != "windows":
        return options
    room = context - options.max_tokens - fixed_tokens
    chars = int(room * CHARS_PER_TOKEN_AT_LEAST) // max(1, options.batch)
    if chars >= options.max_chunk_chars or chars < MIN_WINDOW_CHARS:
        return options
    return dataclasses.replace(options, max_chunk_chars=chars, window_overlap=min(options.window_overlap, chars // 5))
