"""Put a run in trec_eval order and find each judged row's rank, for all queries at once.

The result, :class:`RankedRows`, is what every ranking metric is computed from. It keeps only the
rows that have a judgment (a few per query, where a run lists a hundred or a thousand): no ranking
metric gets anything from an unjudged row except the count of rows per query, kept in ``size``.
Ranks follow trec_eval: score descending, ties broken by document id descending (byte order, as
its ``strcmp``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from ..data.column_bytes import round8, to_width, trim_heap
from ..data.column_keys import KeyIndex
from ..data.tables import Qrels, Run, row_keys, trec_order

# run rows joined to the qrels per step: for a run grouped by query, the hash table holds only the
# judgments of the step's queries, so it stays cache-sized however large the qrels are
LOOKUP_ROWS = 1 << 17


@dataclass
class RankedRows:
    """The judged rows of a run, sorted by query then rank, and the size of every ranking."""

    group: np.ndarray  # per judged row: index of its query among the evaluated queries
    rank: np.ndarray  # per judged row: 0-based rank within its query
    grade: np.ndarray  # per judged row: its grade in the qrels
    size: np.ndarray  # per evaluated query: how many documents the run lists for it
    query_index: np.ndarray  # per evaluated query: its index in qrels.queries
    run_only: list[str]  # run queries that have no judgments (ignored, as trec_eval does)

    def cumsum_in_query(self, x: np.ndarray) -> np.ndarray:
        """Running sum of ``x`` over the rows of each query (inclusive), restarting at each query."""
        c = np.cumsum(x)
        if len(c):
            starts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])
            c -= np.repeat(np.r_[0, c][starts], np.diff(np.r_[starts, len(c)]))  # the sum before the query
        return c


def query_positions(qrels: Qrels, run: Run) -> np.ndarray:
    """Per query of the run: its index in ``qrels.queries``, or -1 when the qrels do not judge it."""
    position = {q: i for i, q in enumerate(qrels.queries)}
    return np.array([position.get(q, -1) for q in run.queries], dtype=np.int64)


def rank_rows(qrels: Qrels, run: Run, run_to_qrels: np.ndarray | None = None) -> RankedRows:
    """Rank the run's rows and look each one up in the qrels, vectorised over all queries
    (``run_to_qrels``: :func:`query_positions`, when the caller has it already).

    A large run grouped by query (as systems write them) is ranked a slice at a time
    (:func:`query_slices`): the join's and the sort's temporaries are a slice's, not the whole
    run's, and the result is the same."""
    if run_to_qrels is None:
        run_to_qrels = query_positions(qrels, run)
    run_only = [q for q, p in zip(run.queries, run_to_qrels.tolist()) if p < 0]
    size_by_code = np.bincount(run.qidx, minlength=len(run.queries))
    evaluated = np.flatnonzero((run_to_qrels >= 0) & (size_by_code > 0))
    group_of_code = np.full(len(run.queries), -1, dtype=np.int64)
    group_of_code[evaluated] = np.arange(len(evaluated))
    groups, ranks, grades = [], [], []
    for part in query_slices(qrels, run, run_to_qrels):
        code, rank, grade = _ranked(part.qrels, part.run, part.run_to_qrels)
        groups.append(group_of_code[code + part.first_code])
        ranks.append(rank)
        grades.append(grade)
        del code, rank, grade
    group = _joined(groups)
    rank, grade = _joined(ranks), _joined(grades)
    rows = RankedRows(group, rank, grade, size_by_code[evaluated], run_to_qrels[evaluated], run_only)
    trim_heap()  # the join's and the sort's temporaries are gone: the metrics start from a lean heap
    return rows


SLICE_ROWS = 1 << 18  # run rows ranked (and scored) at a time, whole queries, when the run is grouped by query
SLICE_FROM = 1 << 22  # runs of fewer rows go whole: their temporaries are a few hundred MB, one pass is faster


class QuerySlice(NamedTuple):
    """Some queries of a run with their judgments, as tables of their own: ``run`` (its query codes
    are the whole run's minus ``first_code``), ``qrels`` (its query ``i`` is ``qrels_index[i]`` of
    the whole qrels) and ``run_to_qrels`` between the two (:func:`query_positions`)."""

    run: Run
    qrels: Qrels
    first_code: int
    qrels_index: np.ndarray
    run_to_qrels: np.ndarray


def query_slices(qrels: Qrels, run: Run, run_to_qrels: np.ndarray, rows: int | None = None) -> Iterator[QuerySlice]:
    """The work split by queries: for a run grouped by query over ``rows`` rows (default: over
    ``SLICE_FROM`` rows, in slices of ``SLICE_ROWS``), slices of about that many rows cut between
    queries, each with the judgments of its queries alone and query lists of its own (no work per
    slice grows with the number of queries in the whole run); otherwise the whole run and qrels,
    once. A query's values depend on its own rows only, so scoring the slices one by one gives every
    query's values exactly."""
    qidx, n = run.qidx, len(run.qidx)
    whole = n <= (SLICE_FROM if rows is None else rows)
    rows = SLICE_ROWS if rows is None else rows
    if whole or n <= rows or not bool(np.all(qidx[1:] >= qidx[:-1])):
        yield QuerySlice(run, qrels, 0, np.arange(len(qrels.queries)), run_to_qrels)
        return
    in_run = np.flatnonzero(run_to_qrels >= 0)
    qrels_to_run = np.full(len(qrels.queries), -1, dtype=np.int64)
    qrels_to_run[run_to_qrels[in_run]] = in_run
    code = qrels_to_run[qrels.qidx]  # each judgment's query as the run's code (-1: not in the run)
    order = None if bool(np.all(code[1:] >= code[:-1])) else np.argsort(code, kind="stable")
    ordered = code if order is None else code[order]
    del code
    lo = 0
    while lo < n:
        hi = min(n, lo + rows)
        if hi < n:  # end the slice where its last query ends
            hi = int(np.searchsorted(qidx, qidx[hi - 1], "right"))
        first, last = int(qidx[lo]), int(qidx[hi - 1])
        a, b = np.searchsorted(ordered, [first, last + 1])
        at = slice(int(a), int(b)) if order is None else order[a:b]
        local = run_to_qrels[first : last + 1]  # the slice's queries: their places in the whole qrels
        judged = np.flatnonzero(local >= 0)
        local_qrels = np.full(last + 1 - first, -1, dtype=np.int64)
        local_qrels[judged] = np.arange(len(judged))
        yield QuerySlice(
            Run(run.queries[first : last + 1], qidx[lo:hi] - first, run.doc_ids[lo:hi], run.scores[lo:hi], run.name),
            Qrels(
                [run.queries[first + j] for j in judged.tolist()],
                local_qrels[ordered[a:b] - first],
                qrels.doc_ids[at],
                qrels.grades[at],
            ),
            first,
            local[judged],
            local_qrels,
        )
        lo = hi


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts as one array, the list emptied as they are copied (one part's copy at a time); a
    single part (a run ranked whole) is returned as it is, not copied."""
    if len(parts) == 1:
        return parts.pop()
    out = np.empty(sum(len(p) for p in parts), dtype=parts[0].dtype)
    pos = 0
    while parts:
        part = parts.pop(0)
        out[pos : pos + len(part)] = part
        pos += len(part)
    return out


def _ranked(qrels: Qrels, run: Run, run_to_qrels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query code, 0-based rank, grade) of the run's judged rows, in rank order."""
    qidx = run.qidx
    size_by_code = np.bincount(qidx, minlength=len(run.queries))
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
    return code, rank, grade


def _lookup(qrels: Qrels, run: Run, run_to_qrels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The run rows whose (query, document) the qrels judge, ascending, and their grades.

    The run's own row keys (:meth:`Run.row_keys`: kept from the duplicate check of a run in another
    order than by query, made here for a slice of a grouped one) are looked up in a hash table of the
    qrels rows keyed the same way (query as the run's code, document at the run's width), a step of
    rows at a time; every hit is then confirmed by comparing query and document bytes.
    """
    docs = run.doc_ids
    docs = to_width(docs, round8(docs.dtype.itemsize))  # whole 8-byte words (the readers' width already)
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
    if bool(usable.all()) and bool(np.all(code[1:] >= code[:-1])):
        # every judgment usable and already in the run's query order (qrels and run sorted alike,
        # the usual case): the rows as they are, no copies
        judged_rows, qdocs = None, to_width(qrels.doc_ids, width)
    else:
        judged_rows = np.flatnonzero(usable)
        if not len(judged_rows):
            return none
        code = code[judged_rows]
        by_code = np.argsort(code, kind="stable")  # judgments in the run's query order (often already so)
        judged_rows, code = judged_rows[by_code], code[by_code]
        del by_code
        qdocs = to_width(qrels.doc_ids[judged_rows], width)  # never cuts: the bytes past ``width`` are zeros
    qkeys = row_keys(code, qdocs)
    qdoc_words, doc_words = (np.ascontiguousarray(a).view("<u8").reshape(len(a), width // 8) for a in (qdocs, docs))
    keys, qidx = run.row_keys(), run.qidx
    grouped = bool(np.all(qidx[1:] >= qidx[:-1]))  # rows grouped by query, as runs are written
    index: KeyIndex | None = None
    part = (0, len(qkeys))
    rows, grades = [], []
    for lo in range(0, n, LOOKUP_ROWS):
        hi = min(n, lo + LOOKUP_ROWS)
        if grouped:  # this step's queries are one range of codes: a table of their judgments alone
            part = (int(np.searchsorted(code, qidx[lo], "left")), int(np.searchsorted(code, qidx[hi - 1], "right")))
        if index is None or grouped:
            made = _key_index(qkeys[part[0] : part[1]])
            if made is False:
                return _lookup_dict(qrels, run_to_qrels[qidx], docs)  # a true 64-bit collision: be exact instead
            index = made
        if index is None:
            continue  # no judgments for these queries
        rkeys = keys[lo:hi]
        if not rkeys.all():
            rkeys = np.where(rkeys == 0, np.uint64(1), rkeys)  # 0 marks an empty slot; a changed key only misses
        j = index.find(rkeys)
        cand = np.flatnonzero(j >= 0)
        jc = j[cand] + part[0]
        same = code[jc] == qidx[lo:hi][cand]  # confirm the query, then the bytes, a word at a time
        for word in range(width // 8):
            same &= qdoc_words[jc, word] == doc_words[lo:hi, word][cand]
        rows.append(lo + cand[same])
        found = jc[same] if judged_rows is None else judged_rows[jc[same]]
        grades.append(qrels.grades[found].astype(np.int32))  # readers refuse grades past 2**31 - 1
    return (np.concatenate(rows), np.concatenate(grades)) if rows else none


def _key_index(keys: np.ndarray) -> KeyIndex | Literal[False] | None:
    """A hash table of ``keys``; None when there are none, False when two are equal or one is 0
    (a true 64-bit collision, or the empty-slot mark: the caller joins exactly instead)."""
    if not len(keys):
        return None
    index = KeyIndex(keys)
    return index if index.distinct else False


def _lookup_dict(qrels: Qrels, row_query: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    table = {(q, d): g for q, d, g in zip(qrels.qidx.tolist(), qrels.doc_ids.tolist(), qrels.grades.tolist())}
    found = [table.get(k) for k in zip(row_query.tolist(), docs.tolist())]
    at = np.array([i for i, g in enumerate(found) if g is not None], dtype=np.int64)
    return at, np.array([found[i] for i in at.tolist()], dtype=np.int32)
