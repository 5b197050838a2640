"""What a judge run will do, computed without an endpoint: each query's top chunk ids of the run
(:class:`RunTop`), the pairs to judge less those people labelled (:func:`plan_pairs`), and the
whole plan of relevance and coverage items over the outputs as they stand (:func:`plan_judge`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...data.chunk_table import ChunkTable
from ...data.io import coerce_qrels, coerce_run
from ...data.memory import give_back_freed
from ...data.origin import PoolRun
from ...data.pool import pool_digest
from ...data.records import Chunk
from ...errors import InputError
from ...llm import LLMConfig
from ...runtime.engine import Estimate, OutputStore, WorkItem, bulk, estimate, in_shard
from ..coverage import CoverageStage
from ..queries import QueryItem
from .options import JudgeOptions
from .prompt import Judge
from .relevance import RelevanceStage, SharedChunks


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

    def __init__(self, per_query: Mapping[str, list[str]], labelled: set[tuple[str, str]]):
        self._per_query, self._labelled = per_query, labelled
        self._n = sum(len(top) for top in per_query.values()) - sum(1 for q, _ in labelled if q in per_query)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[tuple[str, str]]:
        labelled = self._labelled
        for qid, top in self._per_query.items():
            for cid in top:
                if not labelled or (qid, cid) not in labelled:
                    yield qid, cid

    def __getitem__(self, i: Any) -> Any:
        return list(self)[i]

    def groups(self) -> Iterator[tuple[str, list[str]]]:
        """Each query id with its chunk ids, in the order of iteration (a query with none left out)."""
        labelled = self._labelled
        for qid, top in self._per_query.items():
            if labelled:
                top = [cid for cid in top if (qid, cid) not in labelled]
            if top:
                yield qid, top


def plan_pairs(
    queries: Sequence[QueryItem],
    chunks: Mapping[str, Chunk],
    run,
    depth: int,
    keep: Mapping[str, Mapping[str, int]] | None = None,
):
    """The (query, chunk) pairs to judge: the top ``depth`` of each query in the run, minus pairs
    already labelled in ``keep``. Run chunk ids missing from the chunks file are an error. Returns
    the pairs (a :class:`PairIds`), the pairs people labelled, each query's top ids and the run's queries that
    are not in ``queries``."""
    keep = keep or {}
    qmap = {q.id: q for q in queries}
    missing_queries: list[str] = []
    labelled: list[tuple[str, str]] = []
    per_query: dict[str, list[str]] = {}
    unknown: list[tuple[str, str]] = []
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
            labelled.extend((qid, cid) for cid in known if cid in mine)
        per_query[qid] = known
    if unknown:
        qid, cid = unknown[0]
        raise InputError(
            f"the run lists chunk {cid!r} (query {qid!r}) that is not in the chunks file; "
            f"{len(unknown)} such pair(s){_integer_ids(unknown, chunks)}. Judge against the chunks "
            "the run was made from"
        )
    return PairIds(per_query, set(labelled)), labelled, per_query, missing_queries


def _integer_ids(unknown: list[tuple[str, str]], chunks: Mapping[str, Chunk]) -> str:
    """A word on the run's missing ids when they are integers and the chunks' ids are not: the
    positions of an index, not chunk ids (empty otherwise)."""
    ints = sum(1 for _, cid in unknown if cid.lstrip("-").isdigit())
    if not ints:
        return ""
    sample = [c for c, _ in zip(chunks, range(50))]
    if not sample or any(c.lstrip("-").isdigit() for c in sample):
        return ""
    return (
        f"; {ints} of them are integers while the chunks' ids are not (e.g. {sample[0]!r}): positions in "
        "an index rather than chunk ids?"
    )


def _all_done(store: OutputStore) -> Callable[[WorkItem], bool]:
    """Whether an item is done in ``store``: every record it writes is there."""
    is_done = store.done
    return lambda it: all(map(is_done, it.record_keys))


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
    kept: int  # pairs people labelled (--keep), not judged
    keep: dict
    unknown_queries: list[str]
    queries: dict[str, QueryItem]
    chunks: Mapping[str, Chunk]
    per_query: dict[str, list[str]]
    keep_origin: Any = None  # who made the --keep labels (data/origin.py), carried into the qrels written
    pool: Any = None  # this run as a member of the pool its qrels say (data/origin.PoolRun)

    def estimate(self) -> Estimate:
        """Calls are exact; coverage's are planned from the judgments already in the output (the run
        plans them again after judging, so a nugget source that gains relevant passages is priced
        approximately)."""
        est = estimate(self.relevance_items, _all_done(self.relevance_store), self.judge.configs, self.relevance)
        if self.coverage is not None and self.coverage_store is not None:
            est = est.add(
                estimate(self.coverage_items, _all_done(self.coverage_store), self.judge.configs[:1], self.coverage)
            )
        return est

    def plan_coverage(self, judged: Iterable[dict]) -> None:
        """Coverage items for this run, with nugget sources from ``judged`` (ok judgment records):
        for a query without a reference answer, the passages judged 2 or 3 for it, any run."""
        if self.coverage is None or self.coverage_store is None:
            return
        relevant: dict[str, list[str]] = {}
        pairs = [
            (r["query_id"], r["chunk_id"])
            for r in judged
            if r.get("status") == "ok" and (r.get("grade") or 0) >= 2 and r["chunk_id"] in self.chunks
        ]
        for qid, cid in sorted(pairs):
            relevant.setdefault(qid, []).append(cid)
        known = self.coverage.known_nuggets(self.coverage_store.file_records())
        chunks = self.chunks
        if isinstance(chunks, ChunkTable):  # each read makes a new chunk: one per id, shared by the items
            chunks = SharedChunks(chunks)
        self.coverage_items = self.coverage.plan(
            [
                (self.queries[q], [chunks[c] for c in top], [chunks[c] for c in relevant.get(q, [])[:10]])
                for q, top in self.per_query.items()
            ],
            known,
            self.coverage_store.done,
        )


def plan_judge(
    queries: Sequence[QueryItem],
    chunks: Sequence[Chunk] | Mapping[str, Chunk],
    run,
    configs: Sequence[LLMConfig],
    output: str | Path,
    *,
    options: JudgeOptions | None = None,
    keep=None,
    coverage_out: str | Path | None = None,
    judge: Judge | None = None,
    with_coverage: bool = True,
) -> JudgePlan:
    """Pure: inputs and what ``output`` already holds -> the items and calls of a judge run.

    ``judge``: the :class:`Judge` to plan with, made for these configs and options and not yet used
    (one is made otherwise). ``with_coverage``: plan coverage now, from the judgments the output
    already holds (what an estimate prices); a run passes False, since it plans coverage once its
    own grades are in (:func:`~ragassay.stages.judge.job.execute_judge`)."""
    with bulk():
        return _plan_judge(
            queries,
            chunks,
            run,
            configs,
            output,
            options=options or JudgeOptions(),
            keep=keep,
            coverage_out=coverage_out,
            judge=judge,
            with_coverage=with_coverage,
        )


def _plan_judge(
    queries: Sequence[QueryItem],
    chunks: Sequence[Chunk] | Mapping[str, Chunk],
    run,
    configs: Sequence[LLMConfig],
    output: str | Path,
    *,
    options: JudgeOptions,
    keep,
    coverage_out: str | Path | None,
    judge: Judge | None,
    with_coverage: bool,
) -> JudgePlan:
    if not isinstance(run, RunTop):
        run = RunTop.of(coerce_run(run), options.depth, chunks)
    chunk_map = chunks if isinstance(chunks, Mapping) else {c.id: c for c in chunks}
    keep_qrels = coerce_qrels(keep) if keep is not None else None
    keep_dict = keep_qrels.to_dict() if keep_qrels is not None else {}
    pairs, labelled, per_query, unknown_queries = plan_pairs(queries, chunk_map, run, options.depth, keep_dict)
    if options.shard is not None:  # a query's pairs and its coverage stay on one shard
        labelled = [p for p in labelled if in_shard(p[0], options.shard)]
        per_query = {q: top for q, top in per_query.items() if in_shard(q, options.shard)}
        pairs = PairIds(per_query, set(labelled))
    qmap = {q.id: q for q in queries}
    judge = judge if judge is not None else Judge(configs, options)
    rel = RelevanceStage(judge)
    store = OutputStore(output, rel.identity)
    items = rel.plan_queries(((qmap[q], top) for q, top in pairs.groups()), chunk_map, store.done_flags)
    cov = cov_store = None
    if coverage_out is not None:
        cov = CoverageStage(configs[0], judge.passages, run.name, options.max_tokens * 2)
        cov_store = OutputStore(coverage_out, cov.identity)
    give_back_freed()  # (what planning let go: the keys' encoded parts)
    plan = JudgePlan(
        judge,
        rel,
        items,
        store,
        cov,
        [],
        cov_store,
        len(pairs) + len(labelled),
        len(labelled),
        keep_dict,
        unknown_queries,
        qmap,
        chunk_map,
        per_query,
        getattr(keep_qrels, "origin", None),
    )
    plan.pool = PoolRun(name=run.name or "run", digest=pool_digest(run.top), depth=run.depth)
    if with_coverage:
        plan.plan_coverage(store.records())
    return plan
