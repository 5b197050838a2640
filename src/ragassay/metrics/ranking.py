"""Put a run in trec_eval order and attach each row's judgment, for all queries at once.

The result, :class:`RankedRows`, is what every ranking metric is computed from: rows grouped by
query, ranked by score descending with ties broken by document id descending (byte order, as
trec_eval's ``strcmp``), each with its 0-based rank and its grade in the qrels (if judged).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.columns import KeyIndex, hash_bytes, mix, trim_heap
from ..data.tables import Qrels, Run, same_width, trec_order


LOOKUP_ROWS = 1 << 18  # run rows joined to the qrels per step


@dataclass
class RankedRows:
    group: np.ndarray        # per row: index of its query among the evaluated queries
    rank: np.ndarray         # per row: 0-based rank within its query
    judged: np.ndarray       # per row: the document has a judgment for this query
    grade: np.ndarray        # per row: its grade (0 when unjudged)
    query_index: np.ndarray  # per evaluated query: its index in qrels.queries
    run_only: list[str]      # run queries that have no judgments (ignored, as trec_eval does)


def rank_rows(qrels: Qrels, run: Run) -> RankedRows:
    """Rank the run's rows and look each one up in the qrels, vectorised over all queries."""
    position = {q: i for i, q in enumerate(qrels.queries)}
    run_to_qrels = np.array([position.get(q, -1) for q in run.queries], dtype=np.int64)
    run_only = [q for q, p in zip(run.queries, run_to_qrels.tolist()) if p < 0]

    qidx, docs, scores = run.qidx, run.doc_ids, run.scores
    if run_only:
        keep = run_to_qrels[qidx] >= 0
        qidx, docs, scores = qidx[keep], docs[keep], scores[keep]

    # join each row to its judgment in file order (the join does not care about order), then put
    # the small per-row results in rank order: no reordered copy of the document ids is made
    judged, grade = _lookup(qrels, run_to_qrels, qidx, docs)
    order = trec_order(qidx, scores, docs)
    if order is not None:
        qidx, judged, grade = qidx[order], judged[order], grade[order]
    del docs, scores
    n = len(qidx)
    change = np.ones(n, dtype=bool)
    if n:
        change[1:] = qidx[1:] != qidx[:-1]
    starts = np.flatnonzero(change)
    group = np.cumsum(change)  # int64: np.bincount takes it as it is (an int32 copy per metric would cost)
    group -= 1
    small = np.int32 if n < 2**31 else np.int64  # ranks in half the memory
    rank = np.arange(n, dtype=small)
    rank -= starts[group].astype(small)
    rows = RankedRows(group, rank, judged, grade, run_to_qrels[qidx[starts]] if n else
                      np.zeros(0, dtype=np.int64), run_only)
    trim_heap()  # the join's and the sort's temporaries are gone: the metrics start from a lean heap
    return rows


def _lookup(qrels: Qrels, run_to_qrels: np.ndarray, qidx: np.ndarray,
            docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grade of each (query, document) row in the qrels, by 64-bit hash then byte comparison
    (``run_to_qrels[qidx]`` is each row's query in the qrels)."""
    n = len(docs)
    if n == 0 or len(qrels) == 0:
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64)
    qdocs, rdocs = same_width(qrels.doc_ids, docs)
    qkeys = mix(hash_bytes(qdocs), qrels.qidx)
    sorted_keys = np.sort(qkeys)
    if bool(np.any(sorted_keys[1:] == sorted_keys[:-1])) or sorted_keys[0] == 0:
        return _lookup_dict(qrels, run_to_qrels[qidx], docs)  # a true 64-bit collision: be exact instead
    index = KeyIndex(qkeys)
    judged = np.zeros(n, dtype=bool)
    grade = np.zeros(n, dtype=np.int32)  # grades fit: readers refuse any beyond 2**31 - 1
    for lo in range(0, n, LOOKUP_ROWS):  # in steps: the hashing and probing temporaries stay small
        hi = min(n, lo + LOOKUP_ROWS)
        rq = run_to_qrels[qidx[lo:hi]]
        rkeys = mix(hash_bytes(rdocs[lo:hi]), rq)
        rkeys[rkeys == 0] = 1  # 0 marks an empty slot; a changed key only misses, and misses are exact
        j = index.find(rkeys)
        cand = np.flatnonzero(j >= 0)
        jc = j[cand]
        same = (qrels.qidx[jc] == rq[cand]) & (qdocs[jc] == rdocs[lo:hi][cand])  # confirm the bytes
        judged[lo + cand[same]] = True
        grade[lo + cand[same]] = qrels.grades[jc[same]]
    return judged, grade


def _lookup_dict(qrels: Qrels, row_query: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    table = {(q, d): g for q, d, g in zip(qrels.qidx.tolist(), qrels.doc_ids.tolist(), qrels.grades.tolist())}
    found = [table.get(k) for k in zip(row_query.tolist(), docs.tolist())]
    judged = np.array([g is not None for g in found], dtype=bool)
    grade = np.array([g or 0 for g in found], dtype=np.int64)
    return judged, grade
