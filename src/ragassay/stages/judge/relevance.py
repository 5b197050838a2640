"""The judge's stage on the engine (:class:`RelevanceStage`).

A pair is judged alone, or a group of one query's pairs is judged in one call (``--batch``). The
plan is made from the keys, without building a prompt for a pair that is already done, so that a
rerun of finished work costs little. The answers are turned into judgment records: a long chunk is
graded by its best window, and a pair that a batched answer left out is asked again on its own.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel

from ...data.chunk_table import ChunkTable
from ...data.records import Chunk, Judgment
from ...llm import LLM, LLMError
from ...llm.prompts import echoed_id
from ...runtime.engine import Call, CallText, Items, Stage, WorkItem, fingerprint
from ..queries import QueryItem
from .keys import pair_key
from .prompt import BatchAnswer, Judge


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
    """No key is done: an item made from the plan's record of a pair to do."""
    return False


_SLOT = "<<<the passage goes here>>>"  # no block holds three '<' (delimit defuses them), nor does the prompt


@dataclass(slots=True)
class _Pair:
    """One pair as an item holds it: its query, its chunk, its key and a long chunk's windows."""

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
        self._text_memo: dict[str, Any] = {}  # call_texts' blocks of the current query and recent passages

    def identity(self, record: dict) -> str:
        return pair_key(record["query_id"], record["chunk_id"])

    def _pointwise(
        self, q: QueryItem, c: Chunk, is_done: Callable[[str], bool] = lambda key: False, key: str | None = None
    ) -> WorkItem:
        """One pair alone: no call for an empty chunk; one set of calls per window of a long one. A
        pair already done keeps its place in the plan (its record is this run's too) but no prompt
        is built for it: a rerun of a finished judgment costs its keys only."""
        j = self.judge
        key = key or j.pair_fingerprint(q, c, j.rel_prompt.id)
        if is_done(key):  # never finished nor asked again: no payload either
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
        memo = self._text_memo
        if memo.get("query_id") != p.query.id:  # this query's messages around its passage, made once
            memo["query_id"] = p.query.id
            memo["around"] = tuple(
                (role, "".join(texts).split(_SLOT))
                for role, texts in j.rel_prompt.pieces(**j.filled(**j.query_values(p.query), passage=_SLOT))
            )
        passages = memo.setdefault("passages", {})
        if len(passages) > 20_000:  # bounded: a plan goes query by query, passages recur at random
            passages.clear()
        shapes = memo.get("shapes")
        if shapes is None:  # (model, temperature, seed, sample) of each call of one prompt
            shapes = memo["shapes"] = [
                (m, j.temperature(m), j.seed(smp), smp)
                for m in range(len(j.configs))
                for smp in range(j.options.samples)
            ]
        out = []
        max_tokens = j.options.max_tokens
        for window in p.windows or (None,):
            block = passages.get((p.chunk.id, window))
            if block is None:
                block = passages[(p.chunk.id, window)] = j.passage_block(p.chunk, window)
            pieces = tuple(
                [
                    (role, tuple(x for i, part in enumerate(parts) for x in ((block, part) if i else (part,))))
                    for role, parts in memo["around"]
                ]
            )  # (a prompt file may show the passage twice)
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
        return [
            call
            for w in windows
            for call in j.relevance_calls(j.relevance_messages(q, c, w), j.answer_model, j.options.max_tokens)
        ]

    def plan_queries(
        self,
        groups: Iterable[tuple[QueryItem, Sequence[str]]],
        chunks: Mapping[str, Chunk],
        done_flags: Callable[[Sequence[str]], list[bool]],
    ) -> Items:
        """What :meth:`plan` makes of the pairs of each query with its chunks (named by id, looked
        up in ``chunks``), in order, when pairs are judged alone (no ``--batch``): a query's keys
        made and looked up together (a rerun of a finished judgment costs little more than its
        keys), a pair to do held as its key, its query and its chunk's id (the chunk is looked up
        when the item is made: a large chunks file is not held). ``done_flags``: whether each key
        is done."""
        j = self.judge
        if j.options.batch > 1:  # (a batch holds its chunks: from a table, each read once and shared)
            held = SharedChunks(chunks) if isinstance(chunks, ChunkTable) else chunks
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
            for cid, key, already in zip(ids, keys, flags):
                if already:
                    items.add_done(key)
                else:
                    items.add_lazy(key, q, cid)  # made when it is estimated or sent
        j.forget_key_parts()
        items.distinct_keys = distinct
        return items

    def plan(self, pairs: Iterable[tuple[QueryItem, Chunk]], is_done: Callable[[str], bool]) -> Items:
        """The items of ``pairs`` (read once, as they come), in order; a pair already done keeps its
        place (its record is this run's too) as its key alone."""
        j, o = self.judge, self.judge.options
        items = Items(make=self._pointwise_item)
        if o.batch <= 1:
            given: dict[str, Chunk] = {}  # (by id: the first chunk given under an id is its chunk)
            groups = ((q, [given.setdefault(c.id, c).id for c in chunks]) for q, chunks in _by_query(pairs))
            return self.plan_queries(groups, given, lambda keys: list(map(is_done, keys)))
        # batches are formed from the pairs not yet done, so a resumed run asks only what is missing
        by_query: dict[str, list[_Pair]] = {}
        queries: dict[str, QueryItem] = {}
        for q, c in pairs:
            if j.windows(c) is not None:  # too long to share a call: judged alone, window by window
                items.add(self._pointwise(q, c, is_done))
                continue
            p = _Pair(q, c, j.pair_fingerprint(q, c, j.batch_prompt.id))
            if is_done(p.key):  # never regrouped
                items.add_done(p.key)
                continue
            by_query.setdefault(q.id, []).append(p)
            queries[q.id] = q
        for qid, ps in by_query.items():
            for p in [p for p in ps if not p.chunk.text.strip()]:  # empty chunks: a rule, no call
                items.add(WorkItem(p.key, [], [p]))
            live = [p for p in ps if p.chunk.text.strip()]
            for i in range(0, len(live), o.batch):
                group = live[i : i + o.batch]
                # shown in an order fixed by the group's content, not the run's ranking, so the rank a
                # retriever gave a chunk does not become a position effect on its grade
                random.Random(fingerprint(*[p.key for p in group])).shuffle(group)
                messages = j.batch_messages(queries[qid], [p.chunk for p in group])
                calls = j.relevance_calls(messages, BatchAnswer, o.max_tokens * len(group))
                items.add(
                    WorkItem(fingerprint(*[p.key for p in group]), calls, group, record_keys=[p.key for p in group])
                )
        return items

    async def finish(self, item: WorkItem, answers: list[Any], llms: Sequence[LLM]) -> list[BaseModel | dict]:
        j = self.judge
        pairs: list[_Pair] = item.payload
        if not pairs:  # planned as done (see _pointwise): the engine never runs such an item
            raise LLMError("internal", "this pair was planned as already judged but its record is missing; rerun")
        if not item.calls:
            p = pairs[0]
            if p.chunk.text.strip():  # planned as done (no prompt built), yet asked: never a made-up grade
                raise LLMError(
                    "internal", "this pair was planned as already judged but its record is missing; rerun to judge it"
                )
            prompt = j.rel_prompt.id if j.options.batch <= 1 else j.batch_prompt.id
            return [
                j.record(p.query.id, p.chunk.id, 0, [], "empty chunk: graded 0 without a call", "rule", prompt, p.key)
            ]
        first = pairs[0]
        if first.windows is not None:
            return [self._best_window(first, first.windows, answers)]
        if len(pairs) == 1 and item.calls[0].response_model is not BatchAnswer:
            p = pairs[0]
            return [j.from_votes(p.query.id, p.chunk.id, [a.grade for a in answers], answers, j.rel_prompt.id, p.key)]
        batch_answers = answers[: len(item.calls)]
        votes, reasons, missing = self._batch_votes(pairs, batch_answers)
        alone = iter(self._alone(answers[len(item.calls) :], len(missing)))
        out: list[BaseModel | dict] = []
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
        return [list(answers[i * per : (i + 1) * per]) for i in range(n_pairs)]

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
        return [
            call
            for cid in missing
            for call in j.relevance_calls(
                j.relevance_messages(by_id[cid].query, by_id[cid].chunk), j.answer_model, j.options.max_tokens
            )
        ]

    def _best_window(self, p: _Pair, windows: list[tuple[int, int]], answers: list[Any]) -> Judgment:
        """A long chunk is as useful as its most useful part: the grade of its best window."""
        j = self.judge
        per = len(answers) // len(windows)
        records = [
            j.from_votes(
                p.query.id,
                p.chunk.id,
                [a.grade for a in answers[i : i + per]],
                answers[i : i + per],
                j.rel_prompt.id,
                p.key,
            )
            for i in range(0, len(answers), per)
        ]
        best = max(range(len(records)), key=lambda i: records[i].grade or 0)
        start, end = windows[best]
        # "samples" keeps the best window's votes (samples and jurors): windows are parts of one
        # passage, not votes, and must not count as disagreement
        return records[best].model_copy(
            update={"windows": len(windows), "window_grades": [r.grade for r in records], "best_window": [start, end]}
        )

    def error_records(self, item: WorkItem, error: LLMError) -> list[BaseModel | dict]:
        return [self.judge.error_record(p.query.id, p.chunk.id, error, p.key) for p in item.payload or []]


# ---------------------------------------------------------------------------------- driver


class SharedChunks(dict):
    """The chunks of a table, each read once and then shared (a coverage plan holds its items'
    chunks: a chunk in many queries' tops is one object, as when the chunks are held)."""

    def __init__(self, table: ChunkTable):
        super().__init__()
        self.table = table

    def __missing__(self, chunk_id: str) -> Chunk:
        chunk = self[chunk_id] = self.table[chunk_id]
        return chunk
