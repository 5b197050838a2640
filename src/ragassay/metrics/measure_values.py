"""The value of each measure for every evaluated query, from the run's judged rows in the order the
measure ranks in: trec_eval's core set, and the measures named by trec_eval's longer list, ir_measures
or ranx (their arithmetic in :mod:`peer_measures`, their tie orders in :mod:`peer_order`).

Every measure is a handful of numpy operations over all queries at once (``bincount`` by query). Sums
run in rank order, as trec_eval's loops do, so values match trec_eval to the last few bits.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..data.tables import Qrels, Run
from . import peer_measures as peer
from .measures.parsing import Measure, gains_table
from .measures.registry import CWL_GRADED, TIE_ORDER
from .peer_order import PeerRows, judged_only_rows, peer_ranking
from .ranking import RankedRows

Gain = Literal["linear", "exponential"]


class MeasureViews:
    """The run's judged rows in each order a measure asks for, and the per-query quantities of each
    (order, relevance level), made once: trec_eval's order (``trec``), with unjudged documents removed
    (``judged_only``), and the orders of ir_measures' and ranx's own code (:mod:`peer_order`)."""

    def __init__(self, qrels: Qrels, run: Run, rows: RankedRows, gain: Gain):
        self.qrels, self.run, self.gain = qrels, run, gain
        self.rows: dict[str, RankedRows] = {"trec": rows}
        self.peer: dict[str, PeerRows] = {}
        self._stats: dict[tuple, _QueryStats] = {}

    def ranked(self, order: str) -> RankedRows:
        if order not in self.rows:
            if order == "judged_only":
                self.rows[order] = judged_only_rows(self.rows["trec"])
            else:
                self.peer[order] = peer_ranking(self.qrels, self.run, order)  # type: ignore[arg-type]
                self.rows[order] = self.peer[order].rows
        return self.rows[order]

    def stats(self, order: str, level: int, gains: dict[int, int] | None = None) -> _QueryStats:
        """``gains``: ir_measures' nDCG(gains={grade: gain}), the judgments' grades mapped through the
        table (the qrels' too, for the ideal ranking), the gain then being the mapped grade."""
        key = (order, level, tuple(sorted(gains.items())) if gains else ())
        if key not in self._stats:
            rows, qrels = self.ranked(order), self.qrels
            if gains:  # mapped first, as ir_measures hands trec_eval the mapped qrels; -J then drops what is below 0
                rows = self.ranked("trec" if order == "judged_only" else order)
                rows = RankedRows(
                    rows.group, rows.rank, _mapped(rows.grade, gains), rows.size, rows.query_index, rows.run_only
                )
                rows = judged_only_rows(rows) if order == "judged_only" else rows
                qrels = Qrels(qrels.queries, qrels.qidx, qrels.doc_ids, _mapped(qrels.grades, gains))
            self._stats[key] = _QueryStats(qrels, rows, level, "linear" if gains else self.gain)
        return self._stats[key]


def _mapped(grades: np.ndarray, table: dict[int, int]) -> np.ndarray:
    """The grades mapped through a gains table; a grade the table does not name keeps its value."""
    out = grades.copy()
    for grade, gain in table.items():
        out[grades == grade] = gain
    return out


def _order_of(m: Measure) -> str:
    """The order a measure ranks tied scores in: its own peer's, else trec_eval's."""
    if m.judged_only:
        return "judged_only"
    if m.name == "judged" and m.k is not None:  # ir_measures' Judged@k: the top k in its order
        return "id_ascending"
    return TIE_ORDER.get(m.name, "trec")


class _QueryStats:
    """Per-query quantities shared by several metrics, computed once and lazily."""

    def __init__(self, qrels: Qrels, rows: RankedRows, level: int, gain: Gain):
        self.qrels, self.rows, self.gain_kind = qrels, rows, gain
        nq = len(qrels.queries)
        self.num_rel_all = np.bincount(qrels.qidx, weights=qrels.grades >= level, minlength=nq)
        self.num_rel = self.num_rel_all[rows.query_index]
        self.rel = rows.grade >= level  # every row in ``rows`` is judged
        self.level = level
        self._cache: dict = {}

    def gains(self, grades: np.ndarray) -> np.ndarray:
        g = np.maximum(grades, 0).astype(np.float64)
        return np.exp2(g) - 1.0 if self.gain_kind == "exponential" else g

    def cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def rel_before(self) -> np.ndarray:
        """Per row: relevant documents at this rank or above (inclusive), within its query."""
        return self.cached("rel_before", lambda: self.rows.cumsum_in_query(self.rel.astype(np.int64)))

    def ideal_dcg(self, k: int | None) -> np.ndarray:
        def build():
            q = self.qrels
            qq, gg = _ideal_order(q.qidx, q.grades, len(q.queries))
            gg = self.gains(gg)
            change = np.r_[True, qq[1:] != qq[:-1]] if len(qq) else np.zeros(0, bool)
            starts = np.flatnonzero(change)
            rank = np.arange(len(qq)) - np.repeat(starts, np.diff(np.r_[starts, len(qq)]))
            w = gg / np.log2(rank + 2.0)
            if k is not None:
                w = np.where(rank < k, w, 0.0)
            return np.bincount(qq, weights=w, minlength=len(q.queries))[self.rows.query_index]

        return self.cached(("idcg", k), build)


def _ideal_order(qidx: np.ndarray, grades: np.ndarray, nq: int) -> tuple[np.ndarray, np.ndarray]:
    """(query, grade) of every positive judgment, by query, best grade first: each query's ideal
    ranking. With few distinct grades (the usual 1-3) it is built from counts per query and grade,
    without sorting the judgments."""
    keep = grades > 0
    qq, gg = qidx[keep], grades[keep]
    top = int(gg.max()) if len(gg) else 0
    if len(gg) and nq * top <= 4 * len(gg) + 4096:
        counts = np.bincount(qq * top + (top - gg), minlength=nq * top)  # per query: grade top, top-1, ..., 1
        return (
            np.repeat(np.repeat(np.arange(nq, dtype=np.int64), top), counts),
            np.repeat(np.tile(np.arange(top, 0, -1, dtype=np.int64), nq), counts),
        )
    order = np.lexsort((-gg, qq))
    return qq[order], gg[order]


def count_rows(rows: RankedRows, mask: np.ndarray, n: int) -> np.ndarray:
    """Per query, how many of its rows the mask keeps (as floats, ready to divide)."""
    return np.bincount(rows.group[mask], minlength=n).astype(np.float64)


def ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b, and 0 where b is 0 (a query with nothing to divide by scores 0, as in trec_eval)."""
    out = np.zeros_like(a, dtype=np.float64)
    np.divide(a, b, out=out, where=b > 0)
    return out


def _harmonic(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The harmonic mean of precision and recall (F1), 0 where both are 0."""
    return ratio(2 * p * r, p + r)


def compute_measure(m: Measure, views: MeasureViews, level: int, n: int) -> np.ndarray:
    """One measure for every evaluated query, from the judged rows in the order the measure ranks in
    (an unjudged row adds nothing to any of these measures beyond the size of its ranking)."""
    order = _order_of(m)
    s = views.stats(order, level, gains_table(m))
    if m.name in _PEER_MEASURES:
        return _compute_peer(m, views, order, s, level, n)
    return _compute_trec(m, s.rows, s, n)


_PEER_MEASURES = (
    frozenset(
        {
            "set_ap",
            "set_relative_p",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "num_q",
            "iprec",
            "infap",
            "rbp",
            "ranx_rbp",
            "dcg",
            "dcg_burges",
            "ndcg_burges",
            "compat",
        }
    )
    | CWL_GRADED
)


def _compute_peer(m: Measure, views: MeasureViews, order: str, s: _QueryStats, level: int, n: int) -> np.ndarray:
    """The measures trec_eval's core set lacks, named by trec_eval's longer list, ir_measures or ranx."""
    rows, name, k = s.rows, m.name, m.k
    if name == "num_ret":
        return rows.size.astype(np.float64)
    if name == "num_rel":
        return s.num_rel.astype(np.float64)
    if name == "num_rel_ret":
        return count_rows(rows, s.rel, n)
    if name == "num_q":
        return np.ones(n)
    if name == "set_ap":
        hits = count_rows(rows, s.rel, n)
        return ratio(hits, rows.size.astype(np.float64)) * ratio(hits, s.num_rel)
    if name == "set_relative_p":
        return ratio(count_rows(rows, s.rel, n), np.minimum(rows.size, s.num_rel).astype(np.float64))
    if name == "iprec":
        return peer.interpolated_precision(rows, s.rel, s.rel_before(), s.num_rel, n, float(m.required("recall")))
    if name == "infap":
        return peer.inferred_ap(rows, level, s.num_rel, n)
    if name == "rbp":
        return peer.cwl_rbp(rows, level, float(m.required("p")), n)
    if name in CWL_GRADED:
        return peer.cwl_measure(
            name,
            rows,
            n,
            min_rel=int(m.required("min_rel")),
            max_rel=int(m.required("max_rel")),
            t=float(m.param("t", "1.0")),
            p=float(m.param("p", "0.9")),
            k=k,
        )
    if name == "ranx_rbp":
        return peer.ranx_rbp(rows, level, float(m.required("p")), n)
    if name in ("dcg", "dcg_burges", "ndcg_burges"):
        burges = name != "dcg"
        dcg = peer.ranx_dcg(rows, level, k, burges, n)
        return dcg if name != "ndcg_burges" else ratio(dcg, peer.ranx_ideal_dcg(views.qrels, rows, level, k, burges))
    if name == "compat":
        found = views.peer[order]
        return peer.compatibility(
            rows,
            found.qrels_row,
            views.run.scores[found.run_row],
            views.qrels,
            float(m.required("p")),
            m.param("normalize", "true") == "true",
            n,
        )
    raise AssertionError(f"no implementation for {m}")  # every name of _PEER_MEASURES is handled above


def _compute_trec(m: Measure, rows: RankedRows, s: _QueryStats, n: int) -> np.ndarray:
    """The measures of trec_eval's core set (and hits, judged, err), from the judged rows."""
    name, k = m.name, m.k
    in_k = (rows.rank < k) if k is not None else np.ones(len(rows.rank), dtype=bool)
    if name == "p":
        return count_rows(rows, s.rel & in_k, n) / k
    if name == "recall":
        return ratio(count_rows(rows, s.rel & in_k, n), s.num_rel)
    if name == "f1":
        hits = count_rows(rows, s.rel & in_k, n)
        return _harmonic(hits / k, ratio(hits, s.num_rel))
    if name == "hit_rate":
        return (count_rows(rows, s.rel & in_k, n) > 0).astype(np.float64)
    if name == "mrr":
        idx = np.flatnonzero(s.rel & in_k)
        g = rows.group[idx]
        first = np.r_[True, g[1:] != g[:-1]] if len(g) else np.zeros(0, bool)
        out = np.zeros(n)
        out[g[first]] = 1.0 / (rows.rank[idx[first]] + 1.0)
        return out
    if name == "map":
        hit = s.rel & in_k
        prec = s.rel_before()[hit] / (rows.rank[hit] + 1.0)
        return ratio(np.bincount(rows.group[hit], weights=prec, minlength=n), s.num_rel)
    if name == "ndcg":
        w = s.gains(rows.grade[in_k]) / np.log2(rows.rank[in_k] + 2.0)
        return ratio(np.bincount(rows.group[in_k], weights=w, minlength=n), s.ideal_dcg(k))
    if name == "r_precision":
        return ratio(count_rows(rows, s.rel & (rows.rank < s.num_rel[rows.group]), n), s.num_rel)
    if name == "hits":
        return count_rows(rows, s.rel & in_k, n)
    if name == "judged":  # over what was retrieved in the top k (a run shorter than k is not penalised)
        retrieved = rows.size if k is None else np.minimum(rows.size, k)
        return ratio(count_rows(rows, in_k, n), retrieved.astype(np.float64))
    if name == "bpref":
        return _bpref(rows, s, n)
    if name == "err":
        return _err(rows, in_k, n)
    if name in ("set_p", "set_recall", "set_f1"):
        hits = count_rows(rows, s.rel, n)
        p = ratio(hits, rows.size.astype(np.float64))
        r = ratio(hits, s.num_rel)
        return {"set_p": p, "set_recall": r, "set_f1": _harmonic(p, r)}[name]
    raise AssertionError(f"no implementation for {m}")  # every parsed name is handled above


def _bpref(rows: RankedRows, s: _QueryStats, n: int) -> np.ndarray:
    """trec_eval's bpref: each relevant retrieved document loses the share of judged non-relevant
    documents ranked above it (at most R of them, out of min(R, N))."""
    q = s.qrels
    judged_nonrel = (q.grades < s.level) & (q.grades >= 0)
    num_nonrel = np.bincount(q.qidx, weights=judged_nonrel, minlength=len(q.queries))[rows.query_index]
    nonrel_row = ((rows.grade < s.level) & (rows.grade >= 0)).astype(np.int64)
    above = rows.cumsum_in_query(nonrel_row) - nonrel_row  # judged non-relevant rows ranked above this one
    R, N = s.num_rel[rows.group], num_nonrel[rows.group]
    denom = np.minimum(R, N)
    penalty = np.zeros(len(above))
    np.divide(np.minimum(above, R), denom, out=penalty, where=(above > 0) & (denom > 0))
    total = np.bincount(rows.group, weights=np.where(s.rel, 1.0 - penalty, 0.0), minlength=n)
    return ratio(total, s.num_rel)


ERR_MAX_GRADE = 4  # gdeval's MAX_JUDGMENT: the stop probability of a grade g is (2^g - 1) / 2^4


def _err(rows: RankedRows, in_k: np.ndarray, n: int) -> np.ndarray:
    """Expected reciprocal rank as gdeval computes it: sum over ranks of r_i / i times the chance
    the user did not stop earlier, r = (2^grade - 1) / 16, grades below 0 as 0 and above 4 as 4.
    An unjudged row has r = 0: it neither adds nor changes the chance of going on."""
    g = np.clip(rows.grade, 0, ERR_MAX_GRADE).astype(np.float64)
    r = (np.exp2(g) - 1.0) / 2.0**ERR_MAX_GRADE
    keep = np.log1p(-np.where(in_k, r, 0.0))  # log of the chance of going on past each row
    before = rows.cumsum_in_query(keep) - keep  # log P(not stopped above this row)
    w = np.where(in_k, r * np.exp(before) / (rows.rank + 1.0), 0.0)
    return np.bincount(rows.group, weights=w, minlength=n)
