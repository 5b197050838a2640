"""A run ranked the way a peer ranks it, where the peer breaks tied scores unlike trec_eval.

trec_eval (and so every measure ragassay shares with it) takes tied scores by document id
descending. Measures named by another tool follow that tool's order instead:

- ``id_ascending``: ir_measures' own providers (Judged, Compat) sort with Python by
  ``(-score, doc_id)``: tied scores by document id ascending.
- ``run_order``: cwl_eval (ir_measures' RBP and INST) sorts by score with Python's stable sort, and
  ranx sorts each ranking of up to 15 documents with an insertion sort: tied scores keep the order
  the run lists them in. (ranx sorts longer rankings with numba's quicksort, which is not stable:
  its order of tied scores there follows no rule that can be written down.)

The result is the judged rows of :func:`ranking.rank_rows` in that order, with each row's place
in the qrels and in the run, so a measure can read a judgment's grade and a row's score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..data.tables import Qrels, Run
from .ranking import RankedRows, rank_rows

TieOrder = Literal["id_ascending", "run_order"]


@dataclass
class PeerRows:
    """Judged rows ranked in a peer's order: ``rows`` as :func:`rank_rows` gives them (same queries,
    same groups), and per row its index in the qrels (``qrels_row``) and in the run (``run_row``)."""

    rows: RankedRows
    qrels_row: np.ndarray
    run_row: np.ndarray


def peer_ranking(qrels: Qrels, run: Run, ties: TieOrder) -> PeerRows:
    """Rank ``run`` by score descending with ties broken as ``ties`` says, for all queries at once.

    The run is sorted once into that order and handed to :func:`rank_rows` with strictly falling
    scores, so its own tie rule never applies; the qrels are handed over with each judgment's row
    number as its grade, which brings every judged row's place in the qrels back with it.
    """
    n = len(run)
    if ties == "id_ascending":
        order = np.lexsort((run.doc_ids, -run.scores, run.qidx))
    else:
        order = np.lexsort((-run.scores, run.qidx))  # lexsort is stable: ties keep the run's order
    ranked = Run(run.queries, run.qidx[order], run.doc_ids[order], -np.arange(n, dtype=np.float64), run.name)
    numbered = Qrels(qrels.queries, qrels.qidx, qrels.doc_ids, np.arange(len(qrels), dtype=np.int64))
    found = rank_rows(numbered, ranked)
    qrels_row = found.grade.astype(np.int64)
    # where each evaluated query's rows start in the sorted run, to find each judged row's run row
    position = {q: i for i, q in enumerate(qrels.queries)}
    run_to_qrels = np.array([position.get(q, -1) for q in run.queries], dtype=np.int64)
    size_by_code = np.bincount(run.qidx, minlength=len(run.queries))
    evaluated = np.flatnonzero((run_to_qrels >= 0) & (size_by_code > 0))
    start = (np.cumsum(size_by_code) - size_by_code)[evaluated]
    run_row = order[start[found.group] + found.rank] if len(found.group) else np.zeros(0, dtype=np.int64)
    rows = RankedRows(
        found.group, found.rank, qrels.grades[qrels_row].astype(np.int32), found.size, found.query_index, found.run_only
    )
    return PeerRows(rows, qrels_row, run_row)


def judged_only_rows(rows: RankedRows) -> RankedRows:
    """The ranking with every unjudged document removed, as trec_eval -J (ir_measures' judged_only=True)
    scores it: a judgment below 0 (trec_eval's "pooled but unjudged") goes too; a kept row's rank
    counts only the kept rows above it, a ranking's size only its kept rows."""
    keep = rows.grade >= 0
    judged = RankedRows(rows.group[keep], rows.rank[keep], rows.grade[keep], rows.size, rows.query_index, rows.run_only)
    rank = judged.cumsum_in_query(np.ones(len(judged.group), dtype=np.int64)) - 1
    size = np.bincount(judged.group, minlength=len(rows.size)).astype(rows.size.dtype)
    return RankedRows(judged.group, rank.astype(rows.rank.dtype), judged.grade, size, rows.query_index, rows.run_only)
