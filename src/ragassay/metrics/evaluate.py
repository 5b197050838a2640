"""Ranking metrics over all queries at once, with trec_eval's conventions.

Every metric is a handful of numpy operations over the judged rows of the whole run (``bincount``
by query), never a Python loop per query (:mod:`measure_values`), so that a run of millions of rows
is scored quickly. Sums run in rank order, as trec_eval's loops do, so that the values match
trec_eval's to the last few bits. This module takes the inputs, scores the run one slice of queries
at a time, adds the queries the run left out, and says what the scores rest on.
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
from .measure_values import Gain, MeasureViews, compute_measure, count_rows, ratio
from .measures.parsing import DEFAULT_MEASURES, Measure, parse_measures
from .ranking import RankedRows, query_positions, query_slices, rank_rows
from .rests_on import JUDGED_KEY, PoolStanding, Relevance, judged_cutoffs, pool_standing, relevance_for
from .rests_on import rests_on as rests_on_of

Missing = Literal["skip", "zero"]


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
    standing: Any = None  # rests_on.PoolStanding: the pool the labels were judged from, and the share judged
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
        summed = {str(m) for m in self.measures if m.summed}
        return {
            name: (float(v.sum()) if name in summed else math.fsum(v.tolist()) / len(v)) if len(v) else 0.0
            for name, v in self.values.items()
        }

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
            run=self.run_name,
            aggregate=self.aggregate,
            **({"per_query": self.per_query} if per_query else {}),
            counts=self.counts,
            settings={"relevance_level": self.relevance_level, "gain": self.gain, "missing": self.missing_policy},
            qrels=self.qrels.describe() if self.qrels is not None else None,
            rests_on=self.rests_on,
        )


EXPONENT_LIMIT = 512  # 2 ** 1024 is past the largest float: grades below 512 keep every sum of gains finite
DIGEST_SOON_ROWS = 1 << 20  # qrels this large have their digest made on another thread while the run is scored


def checked_settings(
    metrics: str | Iterable[str | Measure] | None, missing: str, gain: str, relevance_level: Any
) -> list:
    """The measures asked for (the default ones when none), once the other settings are checked:
    what every way of evaluating (in memory, by blocks) takes the same way."""
    measures = (
        DEFAULT_MEASURES if metrics is None else parse_measures(metrics if isinstance(metrics, str) else list(metrics))
    )
    if missing not in ("skip", "zero"):
        raise ValueError(f"missing must be 'skip' or 'zero', got {missing!r}")
    if gain not in ("linear", "exponential"):
        raise ValueError(f"gain must be 'linear' or 'exponential', got {gain!r}")
    if relevance_level is None:  # the labels' own relevant grade, else trec_eval's (rests_on.relevance_for)
        return measures
    if isinstance(relevance_level, bool) or int(relevance_level) != relevance_level:
        raise ValueError(f"relevance_level must be an integer, got {relevance_level!r}")
    if relevance_level < 1:  # trec_eval's and pytrec_eval's too: a grade of 0 or below is never relevant
        raise ValueError(
            f"relevance_level must be at least 1 (grades of 0 and below are not relevant), got {relevance_level!r}"
        )
    return measures


def evaluate(
    qrels: Qrels | Mapping | str | Path,
    run: Run | Mapping | str | Path,
    metrics: Iterable[str | Measure] | str | None = None,
    *,
    relevance_level: int | None = None,
    gain: Gain = "linear",
    missing: Missing = "skip",
) -> Evaluation:
    """Evaluate a run against qrels.

    ``qrels`` and ``run`` may be objects from :func:`read_qrels` / :func:`read_run`, file paths,
    or pytrec_eval-style dicts. ``metrics`` are names in any accepted spelling (default: p@5,
    p@10, recall@10, recall@100, f1@10, hit_rate@10, mrr, mrr@10, ndcg@10, map).

    ``relevance_level``: a document is relevant when its grade is at least this; by default the
    grade the labels say they count from (the judge's 0-3 scale: 2; a ``FILE.origin.json`` beside
    people's qrels may say ``relevant_from``), else 1 as in trec_eval. As in trec_eval it does not
    change NDCG gains. The result's ``rests_on`` says which grade was used and why, and the pool.
    ``gain``: ``linear`` (gain = grade) or
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
    relevance = _relevance(qrels, relevance_level, gain)
    level = relevance.level
    cutoffs = judged_cutoffs(measures)  # how much of the top k was judged: said beside the scores (rests_on)
    run_to_qrels = query_positions(qrels, run)
    run_only = [q for q, p in zip(run.queries, run_to_qrels.tolist()) if p < 0]
    query_index, values = _score_slices(qrels, run, run_to_qrels, measures, cutoffs, level, gain)
    judged_queries = {q: i for i, q in enumerate(qrels.queries)}
    if not len(query_index) and not any(q in judged_queries for q in run.queries):
        _refuse_no_overlap(qrels, run)
    unscored = _Unscored.of(qrels, run, query_index, judged_queries, missing)
    queries, values = unscored.added(qrels.queries, query_index, values)

    no_relevant = _without_relevant(qrels, queries, level)
    judged = _judged_shares(values, cutoffs, queries, set(unscored.empty) | set(unscored.missing))
    standing = _standing(qrels, run, measures, judged)
    return Evaluation(
        run.name,
        list(measures),
        queries,
        values,
        run_only,
        unscored.missing,
        sorted(no_relevant),
        missing,
        int(level),
        gain,
        qrels,
        sorted(unscored.empty),
        relevance=relevance,
        standing=standing,
        judged=judged,
    )


def _relevance(qrels: Qrels, relevance_level: int | None, gain: Gain) -> Relevance:
    """The relevant grade and why (said in the result's ``rests_on``), once exponential gains are
    known to fit a float; the qrels' digest of a large file starts here, beside the scoring."""
    grades = (int(qrels.grades.min()), int(qrels.grades.max())) if len(qrels.grades) else None
    relevance = relevance_for(qrels.origin, relevance_level, qrels.source, grades)
    if gain == "exponential":
        _refuse_overflowing_gains(qrels)
    if qrels.source is not None and len(qrels) >= DIGEST_SOON_ROWS:
        qrels.digest_soon()  # the result names the qrels by digest: made beside the scoring
    return relevance


def _without_relevant(qrels: Qrels, queries: list[str], level: int) -> list[str]:
    """The evaluated queries whose labels hold no relevant chunk at this level."""
    relevant = np.bincount(qrels.qidx, weights=qrels.grades >= level, minlength=len(qrels.queries))
    evaluated = set(queries)
    return [q for q, nr in zip(qrels.queries, (relevant == 0).tolist()) if nr and q in evaluated]


def _judged_shares(
    values: dict[str, np.ndarray], cutoffs: Sequence[int], queries: list[str], absent: set[str]
) -> dict[str, np.ndarray]:
    """The shares judged at each cut-off, taken out of ``values``; a query the run returned nothing
    for has no share judged (not 0), so it is left out of the mean."""
    judged = {key: values.pop(key) for key in [JUDGED_KEY.format(k=k) for k in cutoffs]}
    if absent:
        mask = np.array([q in absent for q in queries], dtype=bool)
        for v in judged.values():
            v[mask] = np.nan
    return judged


def _standing(qrels: Qrels, run: Run, measures: Sequence[Measure], judged: Mapping[str, np.ndarray]) -> PoolStanding:
    """Where the run stands against the pool; when no id of the run meets the labels (every score
    is 0), a few ids of each side are kept to say so."""
    standing = pool_standing(qrels.origin, run, measures, judged_means(judged))
    if standing.judged and not any(standing.judged.values()):
        ran = list(dict.fromkeys(d for _, ids in run.iter_top_ids(3) for d in ids))[:3]
        labelled = list(dict.fromkeys(d for _, d, _ in qrels.rows()))[:3]
        standing.unmet = (ran, labelled)
    return standing


def _refuse_overflowing_gains(qrels: Qrels) -> None:
    """An exponential gain of a grade of 512 or more is more than a float holds: refused, naming the grade."""
    if len(qrels.grades) and int(qrels.grades.max()) >= EXPONENT_LIMIT:
        at = int(np.argmax(qrels.grades))
        raise InputError(
            f"grade {int(qrels.grades[at])} (query {qrels.queries[qrels.qidx[at]]!r}) makes an "
            "exponential "
            f"gain of 2^{int(qrels.grades[at])} - 1, more than a float holds: use linear gain, or grades "
            f"under {EXPONENT_LIMIT}",
            qrels.source,
        )


def _score_slices(
    qrels: Qrels,
    run: Run,
    run_to_qrels: np.ndarray,
    measures: Sequence[Measure],
    cutoffs: Sequence[int],
    level: int,
    gain: Gain,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every measure (and the share judged at each cut-off) of every query the run and the qrels share,
    with each value's query as its position in the qrels. Scored a slice of queries at a time (one slice
    unless the run is large and grouped by query): each query's values come from its own rows, and the
    temporaries stay a slice's."""
    indexes, parts = [], []
    for part in query_slices(qrels, run, run_to_qrels):
        rows = rank_rows(part.qrels, part.run, part.run_to_qrels)
        views = MeasureViews(part.qrels, part.run, rows, gain)
        n = len(rows.query_index)
        parts.append({str(m): compute_measure(m, views, level if m.rel is None else m.rel, n) for m in measures})
        parts[-1].update({JUDGED_KEY.format(k=k): _judged_share(rows, k, n) for k in cutoffs})
        indexes.append(part.qrels_index[rows.query_index])
        del rows, views
    query_index = np.concatenate(indexes)
    values = (
        {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        if parts
        else {key: np.zeros(0) for key in [str(m) for m in measures] + [JUDGED_KEY.format(k=k) for k in cutoffs]}
    )
    return query_index, values


def _refuse_no_overlap(qrels: Qrels, run: Run) -> None:
    """No query with both results and labels: refused in trec_eval's words, with a few ids of each side."""
    run_file = f" in {run.source}" if run.source else ""
    qrels_file = f" in {qrels.source}" if qrels.source else ""
    raise InputError(
        "No queries with both results and relevance info (trec_eval's words): the run's query "
        f"ids{run_file} ({_sample(run.queries)}) and the qrels'{qrels_file} ({_sample(qrels.queries)}) "
        "do not overlap",
        run.source or qrels.source,
    )


@dataclass
class _Unscored:
    """The judged queries the run gave no scored row for: those it was asked and answered with nothing
    (``empty``: they score 0 whatever the missing policy, as ranx counts them, unlike a query the run
    never mentions) and those it never mentions (``missing``: scored 0 only when ``zero`` is asked)."""

    empty: set[str]
    missing: list[str]
    zero_missing: bool

    @classmethod
    def of(
        cls, qrels: Qrels, run: Run, query_index: np.ndarray, judged_queries: dict[str, int], missing: Missing
    ) -> _Unscored:
        present = set(query_index.tolist())
        asked = [q for q in run.queries if q in judged_queries]
        empty_ids = {q for q in asked if judged_queries[q] not in present} if len(asked) > len(present) else set()
        missing_ids = [q for i, q in enumerate(qrels.queries) if i not in present and q not in empty_ids]
        return cls(empty_ids, missing_ids, missing == "zero")

    def added(
        self, qrels_queries: list[str], query_index: np.ndarray, values: dict[str, np.ndarray]
    ) -> tuple[list[str], dict[str, np.ndarray]]:
        """The evaluated queries, sorted, and their values: the scored ones, then a 0 for each query
        the run answered with nothing and (when ``zero`` is asked) for each it never mentions."""
        qids = [qrels_queries[i] for i in query_index.tolist()]
        if self.empty:
            qids = qids + sorted(self.empty)
            values = {k: np.concatenate([v, np.zeros(len(self.empty))]) for k, v in values.items()}
        if self.zero_missing and self.missing:
            qids = qids + self.missing
            values = {k: np.concatenate([v, np.zeros(len(self.missing))]) for k, v in values.items()}
        order = sorted(range(len(qids)), key=qids.__getitem__)
        idx = np.array(order, dtype=np.int64)
        return [qids[i] for i in order], {k: v[idx] for k, v in values.items()}


def _judged_share(rows: RankedRows, k: int, n: int) -> np.ndarray:
    """Per query, the share of what the run returned in its top ``k`` (trec_eval's order) that the
    labels judge: 1.0 when every chunk it returned there was judged, however few it returned; NaN
    when it returned nothing (no share to speak of)."""
    returned = np.minimum(rows.size, k).astype(np.float64)
    share = ratio(count_rows(rows, rows.rank < k, n), returned)
    share[returned == 0] = np.nan
    return share


def judged_means(judged: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The mean share judged at each cut-off over the queries the run returned something for (a
    cut-off where it returned nothing for any query is left out)."""
    out = {}
    for key, v in judged.items():
        measured = v[~np.isnan(v)]
        if len(measured):
            out[key] = math.fsum(measured.tolist()) / len(measured)
    return out


def _sample(ids: list[str]) -> str:
    """A few ids of a side, for an error that names both sides."""
    return ", ".join(repr(q) for q in ids[:3]) + (", ..." if len(ids) > 3 else "") if ids else "none"
