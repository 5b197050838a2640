"""Ranking metrics over all queries at once, with trec_eval's conventions.

Every metric is a handful of numpy operations over the judged rows of the whole run (``bincount``
by query), never a Python loop per query. Sums run in rank order, as trec_eval's loops do, so
values match trec_eval to the last few bits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..data.coerce import coerce_qrels, coerce_run, to_dataframe
from ..data.result_version import evaluate_result
from ..data.roles import refuse_grades_as_run
from ..data.tables import Qrels, Run
from ..errors import InputError
from . import peer_measures as peer
from .measures import DEFAULT_MEASURES, Measure, gains_table, parse_measures
from .peer_order import PeerRows, judged_only_rows, peer_ranking
from .ranking import RankedRows, query_positions, query_slices, rank_rows
from .rests_on import JUDGED_KEY, judged_cutoffs, pool_standing, relevance_for
from .rests_on import rests_on as rests_on_of

Missing = Literal["skip", "zero"]
Gain = Literal["linear", "exponential"]


@dataclass
class Evaluation:
    """Per-query values of each metric for one run, and what was (not) evaluated.

    ``aggregate`` maps metric name -> mean over the evaluated queries; ``per_query`` maps query
    id -> metric name -> value. ``values`` holds the same numbers as arrays aligned with
    ``queries`` (sorted query ids), which is what significance tests use.
    """

    run_name: str
    measures: list[Measure]
    queries: list[str]
    values: dict[str, np.ndarray]
    run_only: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    no_relevant: list[str] = field(default_factory=list)
    missing_policy: Missing = "skip"
    relevance_level: int = 1
    gain: Gain = "linear"
    qrels: Any = field(default=None, repr=False)  # the qrels scored against: named in the JSON (file, digest, origin)
    asked_empty: list[str] = field(default_factory=list)  # judged queries the run was asked that returned nothing
    relevance: Any = None  # rests_on.Relevance: the relevant grade and where it comes from
    standing: Any = None   # rests_on.PoolStanding: the pool the labels were judged from, and the share judged
    judged: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # that share per query, by cut-off

    @property
    def rests_on(self) -> dict | None:
        """What the scores rest on (the relevant grade, the pool, the share judged), as the JSON says it."""
        if self.relevance is None or self.standing is None:
            return None
        return rests_on_of(self.relevance, self.standing, self.measures)

    @property
    def metric_names(self) -> list[str]:
        return [str(m) for m in self.measures]

    @property
    def aggregate(self) -> dict[str, float]:
        """The mean of each metric over the queries; the counts (num_ret, num_rel, num_rel_ret, num_q)
        are totalled instead, as trec_eval and ir_measures total them. The sum is exact (``math.fsum``),
        so a mean does not hang on the order of the queries: metrics/blockwise.py's equal these."""
        import math
        summed = {str(m) for m in self.measures if m.summed}
        return {name: (float(v.sum()) if name in summed else math.fsum(v.tolist()) / len(v)) if len(v) else 0.0
                for name, v in self.values.items()}

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        cols = {name: v.tolist() for name, v in self.values.items()}
        return {q: {name: cols[name][i] for name in cols} for i, q in enumerate(self.queries)}

    @property
    def counts(self) -> dict[str, int]:
        """How many queries were evaluated and how many were left out, and why."""
        return {
            "evaluated": len(self.queries),
            "run_queries_without_qrels": len(self.run_only),
            "qrels_queries_missing_from_run": len(self.missing),
            "asked_without_results": len(self.asked_empty),
            "queries_without_relevant": len(self.no_relevant),
        }

    def to_dataframe(self) -> Any:
        """One row per query (and a row "all" with the means), one column per metric."""
        rows = [{"query_id": q, **v} for q, v in self.per_query.items()] + [{"query_id": "all", **self.aggregate}]
        return to_dataframe(rows).set_index("query_id")

    def to_dict(self, per_query: bool = True) -> dict:
        """The result as JSON-ready data; ``per_query=False`` leaves out the per-query values."""
        return evaluate_result(
            run=self.run_name, aggregate=self.aggregate,
            **({"per_query": self.per_query} if per_query else {}),
            counts=self.counts,
            settings={"relevance_level": self.relevance_level, "gain": self.gain, "missing": self.missing_policy},
            qrels=self.qrels.describe() if self.qrels is not None else None,
            rests_on=self.rests_on,
        )


EXPONENT_LIMIT = 512  # 2 ** 1024 is past the largest float: grades below 512 keep every sum of gains finite
DIGEST_SOON_ROWS = 1 << 20  # qrels this large have their digest made on another thread while the run is scored


def checked_settings(metrics: str | Sequence[str] | None, missing: str, gain: str, relevance_level: Any) -> list:
    """The measures asked for (the default ones when none), once the other settings are checked:
    what every way of evaluating (in memory, by blocks) takes the same way."""
    measures = DEFAULT_MEASURES if metrics is None else parse_measures(
        metrics if isinstance(metrics, str) else list(metrics))
    if missing not in ("skip", "zero"):
        raise ValueError(f"missing must be 'skip' or 'zero', got {missing!r}")
    if gain not in ("linear", "exponential"):
        raise ValueError(f"gain must be 'linear' or 'exponential', got {gain!r}")
    if relevance_level is None:  # the labels' own relevant grade, else trec_eval's (rests_on.relevance_for)
        return measures
    if isinstance(relevance_level, bool) or int(relevance_level) != relevance_level:
        raise ValueError(f"relevance_level must be an integer, got {relevance_level!r}")
    if relevance_level < 1:  # trec_eval's and pytrec_eval's too: a grade of 0 or below is never relevant
        raise ValueError(f"relevance_level must be at least 1 (grades of 0 and below are not relevant), "
                         f"got {relevance_level!r}")
    return measures


def evaluate(qrels: Qrels | Mapping | str | Path, run: Run | Mapping | str | Path,
             metrics: Iterable[str | Measure] | str | None = None, *, relevance_level: int | None = None,
             gain: Gain = "linear", missing: Missing = "skip") -> Evaluation:
    """Evaluate a run against qrels.

    ``qrels`` and ``run`` may be objects from :func:`read_qrels` / :func:`read_run`, file paths,
    or pytrec_eval-style dicts. ``metrics`` are names in any accepted spelling (default: p@5,
    p@10, recall@10, recall@100, f1@10, hit_rate@10, mrr, mrr@10, ndcg@10, map).

    ``relevance_level``: a document is relevant when its grade is at least this; by default the
    grade the labels say they count from (the judge's 0-3 scale: 2; a ``FILE.origin.json`` beside
    people's qrels may say ``relevant_from``), else 1 as in trec_eval. As in trec_eval it does not
    change NDCG gains. The result's ``rests_on`` says which grade was used and why, and the pool. ``gain``: ``linear`` (gain = grade) or
    ``exponential`` (2^grade - 1). ``missing``: ``skip`` leaves qrels queries absent from the run
    out (trec_eval's default); ``zero`` scores them 0 on every metric (trec_eval -c).

    The relevance level moves the binary measures and leaves NDCG's gains alone:

    >>> qrels, run = {"q1": {"a": 2, "b": 1}}, {"q1": {"b": 2.0, "a": 1.0}}
    >>> {m: round(v, 4) for m, v in evaluate(qrels, run, "ndcg@10,mrr,P_5").aggregate.items()}
    {'ndcg@10': 0.8597, 'mrr': 1.0, 'p@5': 0.4}
    >>> {m: round(v, 4) for m, v in evaluate(qrels, run, "ndcg@10,mrr,P_5", relevance_level=2).aggregate.items()}
    {'ndcg@10': 0.8597, 'mrr': 0.5, 'p@5': 0.2}
    """
    qrels = coerce_qrels(qrels)
    run = refuse_grades_as_run(qrels, coerce_run(run)) if isinstance(run, (str, Path)) else coerce_run(run)
    measures = checked_settings(metrics, missing, gain, relevance_level)
    grades = (int(qrels.grades.min()), int(qrels.grades.max())) if len(qrels.grades) else None
    relevance = relevance_for(qrels.origin, relevance_level, qrels.source, grades)
    relevance_level = relevance.level
    cutoffs = judged_cutoffs(measures)  # how much of the top k was judged: said beside the scores (rests_on)
    if gain == "exponential" and len(qrels.grades) and int(qrels.grades.max()) >= EXPONENT_LIMIT:
        at = int(np.argmax(qrels.grades))
        raise InputError(f"grade {int(qrels.grades[at])} (query {qrels.queries[qrels.qidx[at]]!r}) makes an exponential "
                         f"gain of 2^{int(qrels.grades[at])} - 1, more than a float holds: use linear gain, or grades "
                         f"under {EXPONENT_LIMIT}", qrels.source)

    if qrels.source is not None and len(qrels) >= DIGEST_SOON_ROWS:
        qrels.digest_soon()  # the result names the qrels by digest: made beside the scoring
    # scored a slice of queries at a time (one slice unless the run is large and grouped by query):
    # each query's values come from its own rows, and the temporaries stay a slice's
    run_to_qrels = query_positions(qrels, run)
    run_only = [q for q, p in zip(run.queries, run_to_qrels.tolist()) if p < 0]
    indexes, parts = [], []
    for part in query_slices(qrels, run, run_to_qrels):
        rows = rank_rows(part.qrels, part.run, part.run_to_qrels)
        views = _Views(part.qrels, part.run, rows, gain)
        n = len(rows.query_index)
        parts.append({str(m): _compute(m, views, relevance_level if m.rel is None else m.rel, n) for m in measures})
        parts[-1].update({JUDGED_KEY.format(k=k): _judged_share(rows, k, n) for k in cutoffs})
        indexes.append(part.qrels_index[rows.query_index])
        del rows, views
    query_index = np.concatenate(indexes)
    values = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]} if parts else \
        {key: np.zeros(0) for key in [str(m) for m in measures] + [JUDGED_KEY.format(k=k) for k in cutoffs]}
    del parts
    judged_queries = {q: i for i, q in enumerate(qrels.queries)}
    if not len(query_index) and not any(q in judged_queries for q in run.queries):
        run_file = f" in {run.source}" if run.source else ""
        qrels_file = f" in {qrels.source}" if qrels.source else ""
        raise InputError("No queries with both results and relevance info (trec_eval's words): the run's query "
                         f"ids{run_file} ({_sample(run.queries)}) and the qrels'{qrels_file} ({_sample(qrels.queries)}) "
                         "do not overlap", run.source or qrels.source)

    qids = [qrels.queries[i] for i in query_index.tolist()]
    present = set(query_index.tolist())
    # a query the run holds with an empty ranking was asked and answered with nothing: it scores 0
    # whatever the missing policy (as ranx counts it), unlike a query the run never mentions
    asked = [q for q in run.queries if q in judged_queries]
    empty_ids = {q for q in asked if judged_queries[q] not in present} if len(asked) > len(present) else set()
    if empty_ids:
        qids = qids + sorted(empty_ids)
        values = {k: np.concatenate([v, np.zeros(len(empty_ids))]) for k, v in values.items()}
    missing_ids = [q for i, q in enumerate(qrels.queries) if i not in present and q not in empty_ids]
    if missing == "zero" and missing_ids:
        qids = qids + missing_ids
        values = {k: np.concatenate([v, np.zeros(len(missing_ids))]) for k, v in values.items()}
    order = sorted(range(len(qids)), key=qids.__getitem__)
    queries = [qids[i] for i in order]
    idx = np.array(order, dtype=np.int64)
    values = {k: v[idx] for k, v in values.items()}

    relevant = np.bincount(qrels.qidx, weights=qrels.grades >= relevance_level, minlength=len(qrels.queries))
    evaluated = set(queries)
    no_relevant = [q for q, nr in zip(qrels.queries, (relevant == 0).tolist()) if nr and q in evaluated]
    judged = {key: values.pop(key) for key in [JUDGED_KEY.format(k=k) for k in cutoffs]}
    absent = set(empty_ids) | set(missing_ids)
    if absent:  # a query the run returned nothing for has no share judged (not 0): left out of the mean
        mask = np.array([q in absent for q in queries], dtype=bool)
        for v in judged.values():
            v[mask] = np.nan
    standing = pool_standing(qrels.origin, run, measures, judged_means(judged))
    if standing.judged and not any(standing.judged.values()):  # ids that never meet score 0: say it, with ids
        ran = list(dict.fromkeys(d for _, ids in run.iter_top_ids(3) for d in ids))[:3]
        labelled = list(dict.fromkeys(d for _, d, _ in qrels.rows()))[:3]
        standing.unmet = (ran, labelled)
    return Evaluation(run.name, list(measures), queries, values, run_only, missing_ids,
                      sorted(no_relevant), missing, int(relevance_level), gain, qrels, sorted(empty_ids),
                      relevance=relevance, standing=standing, judged=judged)


def _judged_share(rows: RankedRows, k: int, n: int) -> np.ndarray:
    """Per query, the share of what the run returned in its top ``k`` (trec_eval's order) that the
    labels judge: 1.0 when every chunk it returned there was judged, however few it returned; NaN
    when it returned nothing (no share to speak of)."""
    returned = np.minimum(rows.size, k).astype(np.float64)
    share = _ratio(_count(rows, rows.rank < k, n), returned)
    share[returned == 0] = np.nan
    return share


def judged_means(judged: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The mean share judged at each cut-off over the queries the run returned something for (a
    cut-off where it returned nothing for any query is left out)."""
    out = {}
    for key, v in judged.items():
        kept = v[~np.isnan(v)]
        if len(kept):
            out[key] = math.fsum(kept.tolist()) / len(kept)
    return out


class _Views:
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
                rows = RankedRows(rows.group, rows.rank, _mapped(rows.grade, gains), rows.size, rows.query_index,
                                  rows.run_only)
                rows = judged_only_rows(rows) if order == "judged_only" else rows
                qrels = Qrels(qrels.queries, qrels.qidx, qrels.doc_ids, _mapped(qrels.grades, gains))
            self._stats[key] = _QueryStats(qrels, rows, level, "linear" if gains else self.gain)
        return self._stats[key]


def _mapped(grades: np.ndarray, table: dict[int, int]) -> np.ndarray:
    out = grades.copy()
    for grade, gain in table.items():
        out[grades == grade] = gain
    return out


# ir_measures' C/W/L measures on graded gains (cwl_eval's): peer_measures.cwl_measure
CWL_GRADED = frozenset({"inst", "insq", "nerr8", "nerr9", "nerr10", "nerr11", "sdcg", "bpm"})

# the order each measure named by a peer ranks in (every other measure: trec_eval's)
_ORDER = {"compat": "id_ascending", "rbp": "run_order", "ranx_rbp": "run_order", "dcg": "run_order",
          "dcg_burges": "run_order", "ndcg_burges": "run_order", **{name: "run_order" for name in CWL_GRADED}}


def _order_of(m: Measure) -> str:
    if m.judged_only:
        return "judged_only"
    if m.name == "judged" and m.k is not None:  # ir_measures' Judged@k: the top k in its order
        return "id_ascending"
    return _ORDER.get(m.name, "trec")


def _sample(ids: list[str]) -> str:
    return ", ".join(repr(q) for q in ids[:3]) + (", ..." if len(ids) > 3 else "") if ids else "none"


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
        return (np.repeat(np.repeat(np.arange(nq, dtype=np.int64), top), counts),
                np.repeat(np.tile(np.arange(top, 0, -1, dtype=np.int64), nq), counts))
    order = np.lexsort((-gg, qq))
    return qq[order], gg[order]


def _count(rows: RankedRows, mask: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(rows.group[mask], minlength=n).astype(np.float64)


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a, dtype=np.float64)
    np.divide(a, b, out=out, where=b > 0)
    return out


def _harmonic(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    return _ratio(2 * p * r, p + r)


def _compute(m: Measure, views: _Views, level: int, n: int) -> np.ndarray:
    """One measure for every evaluated query, from the judged rows in the order the measure ranks in
    (an unjudged row adds nothing to any of these measures beyond the size of its ranking)."""
    order = _order_of(m)
    s = views.stats(order, level, gains_table(m))
    if m.name in _PEER_MEASURES:
        return _compute_peer(m, views, order, s, level, n)
    return _compute_trec(m, s.rows, s, n)


_PEER_MEASURES = frozenset({"set_ap", "set_relative_p", "num_ret", "num_rel", "num_rel_ret", "num_q", "iprec", "infap", "rbp",
                            "ranx_rbp", "dcg", "dcg_burges", "ndcg_burges", "compat"}) | CWL_GRADED


def _compute_peer(m: Measure, views: _Views, order: str, s: _QueryStats, level: int, n: int) -> np.ndarray:
    """The measures trec_eval's core set lacks, named by trec_eval's longer list, ir_measures or ranx."""
    rows, name, k = s.rows, m.name, m.k
    if name == "num_ret":
        return rows.size.astype(np.float64)
    if name == "num_rel":
        return s.num_rel.astype(np.float64)
    if name == "num_rel_ret":
        return _count(rows, s.rel, n)
    if name == "num_q":
        return np.ones(n)
    if name == "set_ap":
        hits = _count(rows, s.rel, n)
        return _ratio(hits, rows.size.astype(np.float64)) * _ratio(hits, s.num_rel)
    if name == "set_relative_p":
        return _ratio(_count(rows, s.rel, n), np.minimum(rows.size, s.num_rel).astype(np.float64))
    if name == "iprec":
        return peer.interpolated_precision(rows, s.rel, s.rel_before(), s.num_rel, n, float(m.param("recall")))
    if name == "infap":
        return peer.inferred_ap(rows, level, s.num_rel, n)
    if name == "rbp":
        return peer.cwl_rbp(rows, level, float(m.param("p")), n)
    if name in CWL_GRADED:
        return peer.cwl_measure(name, rows, n, min_rel=int(m.param("min_rel")), max_rel=int(m.param("max_rel")),
                                t=float(m.param("t", "1.0")), p=float(m.param("p", "0.9")), k=k)
    if name == "ranx_rbp":
        return peer.ranx_rbp(rows, level, float(m.param("p")), n)
    if name in ("dcg", "dcg_burges", "ndcg_burges"):
        burges = name != "dcg"
        dcg = peer.ranx_dcg(rows, level, k, burges, n)
        return dcg if name != "ndcg_burges" else _ratio(dcg, peer.ranx_ideal_dcg(views.qrels, rows, level, k, burges))
    if name == "compat":
        found = views.peer[order]
        return peer.compatibility(rows, found.qrels_row, views.run.scores[found.run_row], views.qrels,
                                  float(m.param("p")), m.param("normalize", "true") == "true", n)
    raise AssertionError(f"no implementation for {m}")  # every name of _PEER_MEASURES is handled above


def _compute_trec(m: Measure, rows: RankedRows, s: _QueryStats, n: int) -> np.ndarray:
    """The measures of trec_eval's core set (and hits, judged, err), from the judged rows."""
    name, k = m.name, m.k
    in_k = (rows.rank < k) if k is not None else np.ones(len(rows.rank), dtype=bool)
    if name == "p":
        return _count(rows, s.rel & in_k, n) / k
    if name == "recall":
        return _ratio(_count(rows, s.rel & in_k, n), s.num_rel)
    if name == "f1":
        hits = _count(rows, s.rel & in_k, n)
        return _harmonic(hits / k, _ratio(hits, s.num_rel))
    if name == "hit_rate":
        return (_count(rows, s.rel & in_k, n) > 0).astype(np.float64)
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
        return _ratio(np.bincount(rows.group[hit], weights=prec, minlength=n), s.num_rel)
    if name == "ndcg":
        w = s.gains(rows.grade[in_k]) / np.log2(rows.rank[in_k] + 2.0)
        return _ratio(np.bincount(rows.group[in_k], weights=w, minlength=n), s.ideal_dcg(k))
    if name == "r_precision":
        return _ratio(_count(rows, s.rel & (rows.rank < s.num_rel[rows.group]), n), s.num_rel)
    if name == "hits":
        return _count(rows, s.rel & in_k, n)
    if name == "judged":  # over what was retrieved in the top k (a run shorter than k is not penalised)
        retrieved = rows.size if k is None else np.minimum(rows.size, k)
        return _ratio(_count(rows, in_k, n), retrieved.astype(np.float64))
    if name == "bpref":
        return _bpref(rows, s, n)
    if name == "err":
        return _err(rows, in_k, n)
    if name in ("set_p", "set_recall", "set_f1"):
        hits = _count(rows, s.rel, n)
        p = _ratio(hits, rows.size.astype(np.float64))
        r = _ratio(hits, s.num_rel)
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
    return _ratio(total, s.num_rel)


ERR_MAX_GRADE = 4  # gdeval's MAX_JUDGMENT: the stop probability of a grade g is (2^g - 1) / 2^4


def _err(rows: RankedRows, in_k: np.ndarray, n: int) -> np.ndarray:
    """Expected reciprocal rank as gdeval computes it: sum over ranks of r_i / i times the chance
    the user did not stop earlier, r = (2^grade - 1) / 16, grades below 0 as 0 and above 4 as 4.
    An unjudged row has r = 0: it neither adds nor changes the chance of going on."""
    g = np.clip(rows.grade, 0, ERR_MAX_GRADE).astype(np.float64)
    r = (np.exp2(g) - 1.0) / 2.0 ** ERR_MAX_GRADE
    keep = np.log1p(-np.where(in_k, r, 0.0))  # log of the chance of going on past each row
    before = rows.cumsum_in_query(keep) - keep  # log P(not stopped above this row)
    w = np.where(in_k, r * np.exp(before) / (rows.rank + 1.0), 0.0)
    return np.bincount(rows.group, weights=w, minlength=n)
