"""Measures named by ir_measures and ranx that trec_eval's own set lacks, each computed the way the
tool that named it computes it, vectorised over all queries like the rest of the metrics core.

Each function takes the judged rows of a ranking (:class:`ranking.RankedRows`, in the order the
peer ranks: see :mod:`peer_order`) and returns one value per evaluated query.
"""

from __future__ import annotations

import numpy as np

from ..data.tables import Qrels
from .ranking import RankedRows

CWL_DEPTH = 1000  # cwl_eval (ir_measures' RBP and INST) scores the first 1000 ranks, padded with no gain
INFAP_EPSILON = 0.00001  # trec_eval's
INST_BLOCK = 2048  # queries scored at a time by INST (a block is INST_BLOCK x 1000 floats)


def interpolated_precision(
    rows: RankedRows, rel: np.ndarray, rel_before: np.ndarray, num_rel: np.ndarray, n: int, recall: float
) -> np.ndarray:
    """trec_eval's iprec_at_recall: the best precision at or below the rank where the run holds
    ``floor(recall * R + 0.9)`` relevant documents (at least one); 0 when it never holds that many."""
    need = np.maximum(np.floor(recall * num_rel + 0.9), 1.0)
    ok = rel & (rel_before >= need[rows.group])
    out = np.zeros(n)
    np.maximum.at(out, rows.group[ok], rel_before[ok] / (rows.rank[ok] + 1.0))
    return out


def inferred_ap(rows: RankedRows, level: int, num_rel: np.ndarray, n: int) -> np.ndarray:
    """trec_eval's infAP. A document the qrels do not hold is outside the pool and skipped; grade -1
    (or -2) is pooled but unjudged; 0 up to the level is non-relevant; every other grade counts as
    relevant, as trec_eval's loop has it."""
    g = rows.grade
    pooled_unjudged = (g == -1) | (g == -2)
    nonrel = (g >= 0) & (g < level)
    relevant = ~pooled_unjudged & ~nonrel
    rel_so_far = rows.cumsum_in_query(relevant.astype(np.int64)).astype(np.float64)
    nonrel_above = rows.cumsum_in_query(nonrel.astype(np.int64)).astype(np.float64)
    unjudged_above = rows.cumsum_in_query(pooled_unjudged.astype(np.int64)).astype(np.float64)
    j = rows.rank.astype(np.float64)
    safe_j = np.where(j > 0, j, 1.0)
    before = rel_so_far - 1.0
    term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((before + nonrel_above + unjudged_above) / safe_j) * (
        (before + INFAP_EPSILON) / (before + nonrel_above + 2 * INFAP_EPSILON)
    )
    term = np.where(j == 0, 1.0, term)
    total = np.bincount(rows.group[relevant], weights=term[relevant], minlength=n)
    return np.where(num_rel > 0, total / np.where(num_rel > 0, num_rel, 1.0), total)


def cwl_rbp(rows: RankedRows, level: int, p: float, n: int) -> np.ndarray:
    """ir_measures' RBP(p, rel) as its cwl_eval provider computes it: a binary gain (grade, negatives as
    0, at least the level), weights p^(i-1) over the first 1000 ranks, divided by their sum."""
    gain = (np.maximum(rows.grade, 0) >= level) & (rows.rank < CWL_DEPTH)
    w = np.power(p, rows.rank[gain].astype(np.float64))
    return np.bincount(rows.group[gain], weights=w, minlength=n) * ((1.0 - p) / (1.0 - p**CWL_DEPTH))


def cwl_gains(grades: np.ndarray, min_rel: int, max_rel: int) -> np.ndarray:
    """cwl_eval's graded gain: the grade (negatives as 0) clipped to [min_rel, max_rel], scaled to 0..1."""
    g = np.clip(np.maximum(grades, 0), min_rel, max_rel)
    return (g - min_rel) / float(max_rel - min_rel)


def cwl_utility(rows: RankedRows, gain: np.ndarray, n: int, go_on) -> np.ndarray:
    """cwl_eval's expected utility per item over the first 1000 ranks (gains padded with 0, an unjudged
    document's gain 0): W_i is the chance of reaching rank i, the product of the chances of going on
    past every rank above it; the value is sum(W_i * g_i) / sum(W_i). ``go_on(gains, gain_so_far,
    rank)`` gives the chance of going on past each rank (1-based), for a block of queries at once."""
    keep = rows.rank < CWL_DEPTH
    group, rank, gain = rows.group[keep], rows.rank[keep].astype(np.int64), gain[keep]
    out = np.zeros(n)
    position = np.arange(1, CWL_DEPTH + 1, dtype=np.float64)
    for lo in range(0, n, INST_BLOCK):
        hi = min(n, lo + INST_BLOCK)
        inside = (group >= lo) & (group < hi)
        gains = np.zeros((hi - lo, CWL_DEPTH))
        gains[group[inside] - lo, rank[inside]] = gain[inside]
        c = go_on(gains, np.cumsum(gains, axis=1), position)
        reach = np.ones_like(gains)
        reach[:, 1:] = np.cumprod(c[:, :-1], axis=1)
        out[lo:hi] = (reach * gains).sum(axis=1) / reach.sum(axis=1)
    return out


def cwl_measure(
    name: str,
    rows: RankedRows,
    n: int,
    *,
    min_rel: int,
    max_rel: int,
    t: float = 1.0,
    p: float = 0.9,
    k: int | None = None,
) -> np.ndarray:
    """ir_measures' C/W/L measures on graded gains, as cwl_eval defines each one's chance of going
    on past rank i (G_i the gain so far, g_i the gain at i):

    - INST(T): ((i + 2T - G_i - 1) / (i + 2T - G_i))^2; INSQ(T): ((i + 2T - 1) / (i + 2T))^2
    - NERR8@k: 1 - g_i before rank k, then 0; NERR9@k: i / (i + 1) * (1 - g_i) before rank k
    - NERR10(p): p * (1 - g_i); NERR11(T): INSQ's chance times (1 - g_i)
    - SDCG@k: log2(i + 1) / log2(i + 2) before rank k (a scaled DCG@k)
    - BPM(T)@k: 1 while G_i < T and i < k (the static Bejewelled player, one unit of cost a document)
    """

    def before_k(position: np.ndarray) -> np.ndarray:
        return position < (k or 0)

    def insq(position: np.ndarray) -> np.ndarray:
        return ((position + 2.0 * t - 1.0) / (position + 2.0 * t)) ** 2

    rules = {
        "inst": lambda g, cum, i: ((i + 2.0 * t - cum - 1.0) / (i + 2.0 * t - cum)) ** 2,
        "insq": lambda g, cum, i: np.broadcast_to(insq(i), g.shape),
        "nerr8": lambda g, cum, i: np.where(before_k(i), 1.0 - g, 0.0),
        "nerr9": lambda g, cum, i: np.where(before_k(i), i / (i + 1.0) * (1.0 - g), 0.0),
        "nerr10": lambda g, cum, i: p * (1.0 - g),
        "nerr11": lambda g, cum, i: insq(i) * (1.0 - g),
        "sdcg": lambda g, cum, i: np.broadcast_to(
            np.where(before_k(i), np.log2(i + 1.0) / np.log2(i + 2.0), 0.0), g.shape
        ),
        "bpm": lambda g, cum, i: ((cum < t) & before_k(i)).astype(np.float64),
    }
    return cwl_utility(rows, cwl_gains(rows.grade, min_rel, max_rel), n, rules[name])


def ranx_gains(grades: np.ndarray, level: int, burges: bool) -> np.ndarray:
    """ranx's gain of a judged document: its grade (Järvelin) or 2^grade - 1 (Burges) when the grade
    is at least the relevance level, else 0 (ranx drops judgments below its rel_lvl)."""
    g = grades.astype(np.float64)
    gain = np.exp2(g) - 1.0 if burges else g
    return np.where(grades >= level, gain, 0.0)


def ranx_dcg(rows: RankedRows, level: int, k: int | None, burges: bool, n: int) -> np.ndarray:
    """ranx's dcg@k / dcg_burges@k: gains over log2(rank + 1), the top k of the run."""
    in_k = rows.rank < k if k is not None else np.ones(len(rows.rank), dtype=bool)
    w = ranx_gains(rows.grade[in_k], level, burges) / np.log2(rows.rank[in_k] + 2.0)
    return np.bincount(rows.group[in_k], weights=w, minlength=n)


def ranx_ideal_dcg(qrels: Qrels, rows: RankedRows, level: int, k: int | None, burges: bool) -> np.ndarray:
    """The DCG of ranx's ideal ranking: the query's judgments at or above the level, best first."""
    keep = qrels.grades >= level
    qq, gg = qrels.qidx[keep], qrels.grades[keep]
    order = np.lexsort((-gg, qq))
    qq, gg = qq[order], gg[order]
    starts = np.flatnonzero(np.r_[True, qq[1:] != qq[:-1]]) if len(qq) else np.zeros(0, dtype=np.int64)
    rank = np.arange(len(qq)) - np.repeat(starts, np.diff(np.r_[starts, len(qq)]))
    w = ranx_gains(gg, level, burges) / np.log2(rank + 2.0)
    if k is not None:
        w = np.where(rank < k, w, 0.0)
    return np.bincount(qq, weights=w, minlength=len(qrels.queries))[rows.query_index]


def ranx_rbp(rows: RankedRows, level: int, p: float, n: int) -> np.ndarray:
    """ranx's rbp: (1 - p) * sum of grade * p^(i-1) over the judgments at or above the level, the whole
    ranking (the grade itself, not 0/1, is the gain ranx adds)."""
    keep = rows.grade >= level
    w = rows.grade[keep] * np.power(p, rows.rank[keep].astype(np.float64))
    return (1.0 - p) * np.bincount(rows.group[keep], weights=w, minlength=n)


def compatibility(
    rows: RankedRows, qrels_row: np.ndarray, row_scores: np.ndarray, qrels: Qrels, p: float, normalize: bool, n: int
) -> np.ndarray:
    """ir_measures' Compat: rank-biased overlap of the ranking (``rows`` in ir_measures' order) with the
    ideal one, to the depth of the longer of the two, over the ideal's own overlap when normalised.

    The ideal ranking holds the query's documents graded above 0, best grade first, then by the run's
    score (0.0 for a document the run lacks), then in the qrels' order. Overlap at depth d is the
    number of documents in both top-d lists: a document counts from depth max(its two ranks) on,
    so the sum over depths is, per document, a tail of the weights p^d / (d + 1).
    """
    # the ideal ranking: positive judgments of the evaluated queries, ordered as ir_measures orders them
    score_of = np.zeros(len(qrels))
    score_of[qrels_row] = row_scores
    positive = np.flatnonzero(qrels.grades > 0)
    order = np.lexsort((positive, -score_of[positive], -qrels.grades[positive], qrels.qidx[positive]))
    ideal = positive[order]
    iq = qrels.qidx[ideal]
    starts = np.flatnonzero(np.r_[True, iq[1:] != iq[:-1]]) if len(iq) else np.zeros(0, dtype=np.int64)
    ideal_rank = np.empty(len(qrels), dtype=np.int64)
    ideal_rank[ideal] = np.arange(len(ideal)) - np.repeat(starts, np.diff(np.r_[starts, len(ideal)]))
    ideal_size = np.bincount(qrels.qidx[positive], minlength=len(qrels.queries))[rows.query_index]

    depth = np.maximum(rows.size, ideal_size).astype(np.int64)
    top = int(depth.max()) if len(depth) else 0
    d = np.arange(top, dtype=np.float64)
    weight = np.power(p, d)
    tail = np.r_[0.0, np.cumsum(weight / (d + 1.0))]  # tail[t] = sum of p^d / (d+1) for d < t
    mass = np.r_[0.0, np.cumsum(weight)]  # mass[t] = sum of p^d for d < t

    both = rows.grade > 0  # relevant and retrieved: in both lists
    deepest = np.maximum(rows.rank[both], ideal_rank[qrels_row[both]])
    group = rows.group[both]
    overlap = np.bincount(group, weights=tail[depth[group]] - tail[deepest], minlength=n)
    if not normalize:
        return np.divide(overlap, mass[depth], out=np.zeros(n), where=mass[depth] > 0)
    best = mass[ideal_size] + ideal_size * (tail[depth] - tail[ideal_size])
    return np.divide(overlap, best, out=np.zeros(n), where=best > 0)
