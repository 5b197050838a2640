"""Put a run in trec_eval order and find each judged row's rank, for all queries at once.

The result, :class:`RankedRows`, is what every ranking metric is computed from. It keeps only the
rows that have a judgment (a few per query, where a run lists a hundred or a thousand): no ranking
metric gets anything from an unjudged row except the count of rows per query, kept in ``size``.
Ranks follow trec_eval: score descending, ties broken by document id descending (byte order, as
its ``strcmp``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.columns import KeyIndex, to_width, trim_heap
from ..data.tables import Qrels, Run, row_keys, trec_order


LOOKUP_ROWS = 1 << 18  # run rows joined to the qrels per step


@dataclass
class RankedRows:
    """The judged rows of a run, sorted by query then rank, and the size of every ranking."""

    group: np.ndarray        # per judged row: index of its query among the evaluated queries
    rank: np.ndarray         # per judged row: 0-based rank within its query
    grade: np.ndarray        # per judged row: its grade in the qrels
    size: np.ndarray         # per evaluated query: how many documents the run lists for it
    query_index: np.ndarray  # per evaluated query: its index in qrels.queries
    run_only: list[str]      # run queries that have no judgments (ignored, as trec_eval does)

    def cumsum_in_query(self, x: np.ndarray) -> np.ndarray:
        """Running sum of ``x`` over the rows of each query (inclusive), restarting at each query."""
        c = np.cumsum(x)
        if len(c):
            starts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])
            c -= np.repeat(np.r_[0, c][starts], np.diff(np.r_[starts, len(c)]))  # the sum before the query
        return c


def rank_rows(qrels: Qrels, run: Run) -> RankedRows:
    """Rank the run's rows and look each one up in the qrels, vectorised over all queries."""
    position = {q: i for i, q in enumerate(qrels.queries)}
    run_to_qrels = np.array([position.get(q, -1) for q in run.queries], dtype=np.int64)
    run_only = [q for q, p in zip(run.queries, run_to_qrels.tolist()) if p < 0]
    qidx = run.qidx
    size_by_code = np.bincount(qidx, minlength=len(run.queries))
    evaluated = np.flatnonzero((run_to_qrels >= 0) & (size_by_code > 0))

    # join each row to its judgment in file order (the join does not care about order), then find
    # the rank of the judged rows only: the order of the others never matters
    at, grade = _lookup(qrels, run, run_to_qrels)
    small = np.int32 if len(qidx) < 2**31 else np.int64  # places and ranks in half the memory
    order = trec_order(qidx, run.scores, run.doc_ids)
    if order is None:  # the usual case: the file is in rank order already
        where = at
    else:
        where = np.empty(len(order), dtype=small)
        where[order] = np.arange(len(order), dtype=small)
        where = where[at]  # each judged row's place in rank order
        del order
        by_place = np.argsort(where, kind="stable")
        at, grade, where = at[by_place], grade[by_place], where[by_place]
    # in rank order the queries come by code, ascending: a code's rows start after all smaller codes'
    start_by_code = np.cumsum(size_by_code) - size_by_code
    code = qidx[at]
    rank = (where - start_by_code[code]).astype(small)
    group_of_code = np.full(len(run.queries), -1, dtype=np.int64)
    group_of_code[evaluated] = np.arange(len(evaluated))
    rows = RankedRows(group_of_code[code], rank, grade, size_by_code[evaluated],
                      run_to_qrels[evaluated], run_only)
    trim_heap()  # the join's and the sort's temporaries are gone: the metrics start from a lean heap
    return rows


def _lookup(qrels: Qrels, run: Run, run_to_qrels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The run rows whose (query, document) the qrels judge, ascending, and their grades.

    The run's own row keys (:meth:`Run.row_keys`, made once for its duplicate check) are looked up
    in a hash table of the qrels rows keyed the same way (query as the run's code, document at the
    run's width); every hit is then confirmed by comparing query and document bytes.
    """
    docs = run.doc_ids
    n, width = len(docs), docs.dtype.itemsize
    none = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    if n == 0 or len(qrels) == 0:
        return none
    in_run = np.flatnonzero(run_to_qrels >= 0)
    qrels_to_run = np.full(len(qrels.queries), -1, dtype=np.int64)
    qrels_to_run[run_to_qrels[in_run]] = in_run
    code = qrels_to_run[qrels.qidx]
    usable = code >= 0  # judgments of queries the run has
    if qrels.doc_ids.dtype.itemsize > width:  # ids longer than any run id cannot match: left out
        usable &= ~qrels.doc_ids.view(np.uint8).reshape(len(qrels), -1)[:, width:].any(axis=1)
    judged_rows = np.flatnonzero(usable)
    if not len(judged_rows):
        return none
    code = code[judged_rows]
    qdocs = to_width(qrels.doc_ids[judged_rows], width)  # never cuts: the bytes past ``width`` are zeros
    qkeys = row_keys(code, qdocs)
    sorted_keys = np.sort(qkeys)
    if bool(np.any(sorted_keys[1:] == sorted_keys[:-1])) or sorted_keys[0] == 0:
        return _lookup_dict(qrels, run_to_qrels[run.qidx], docs)  # a true 64-bit collision: be exact instead
    del sorted_keys
    index = KeyIndex(qkeys)
    keys = run.row_keys()
    rows, grades = [], []
    for lo in range(0, n, LOOKUP_ROWS):  # in steps: the probing temporaries stay small
        hi = min(n, lo + LOOKUP_ROWS)
        rkeys = keys[lo:hi]
        if not rkeys.all():
            rkeys = np.where(rkeys == 0, np.uint64(1), rkeys)  # 0 marks an empty slot; a changed key only misses
        j = index.find(rkeys)
        cand = np.flatnonzero(j >= 0)
        jc = j[cand]
        same = (code[jc] == run.qidx[lo:hi][cand]) & (qdocs[jc] == docs[lo:hi][cand])  # confirm the bytes
        rows.append(lo + cand[same])
        grades.append(qrels.grades[judged_rows[jc[same]]].astype(np.int32))  # readers refuse grades past 2**31 - 1
    return np.concatenate(rows), np.concatenate(grades)


def _lookup_dict(qrels: Qrels, row_query: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    table = {(q, d): g for q, d, g in zip(qrels.qidx.tolist(), qrels.doc_ids.tolist(), qrels.grades.tolist())}
    found = [table.get(k) for k in zip(row_query.tolist(), docs.tolist())]
    at = np.array([i for i, g in enumerate(found) if g is not None], dtype=np.int64)
    return at, np.array([found[i] for i in at.tolist()], dtype=np.int32)
