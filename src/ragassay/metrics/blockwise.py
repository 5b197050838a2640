"""Evaluating a run too large to hold in memory: it is read and scored by blocks of queries, in
memory that does not grow with the number of queries.

Both files are read a piece at a time (:mod:`ragassay.data.column_pieces`, with every check of the
whole-file readers). Each row goes, by a hash of its query id, to one of a number of temporary files
(anonymous, and gone when closed), so all rows of a query land in one partition whatever the order
of the files (grouped by query, sorted, shuffled, or a query split across the file). Each partition
is then one block: a :class:`Run` and a :class:`Qrels` checked for duplicates (naming their lines)
and scored by :func:`ragassay.metrics.evaluate.evaluate`, so that every query's values are exactly
the in-memory ones. The means are summed across blocks with exact partial sums (``math.fsum``), so
that they equal the in-memory means, which are summed exactly too, to the last bit.

A qrels file under ``QRELS_WHOLE`` bytes (most qrels are far smaller than their runs) is read whole
by :func:`ragassay.read_qrels`, in any format, and its rows are partitioned; the result then carries
the same qrels digest as in memory. Bigger qrels, and every run, must be plain TREC or three-column
files to go this way; gzip, JSON Lines, standard input and the peers' formats are read whole. The
temporary files take about as much disk as the two files.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from ..data.column_bytes import trim_heap
from ..data.column_formats import ColumnShape, column_shape
from ..data.column_keys import factorize
from ..data.column_pieces import PIECE_BYTES, Piece, read_pieces
from ..data.column_reading import decode_query_ids
from ..data.origin import UNKNOWN, label_origin
from ..data.pool import PoolDigest
from ..data.qrels_files import read_qrels
from ..data.result_version import evaluate_result
from ..data.run_asked import read_asked
from ..data.tables import Qrels, Run, encode_ids
from ..errors import InputError
from .block_partitions import (
    ExactSum,
    Partitions,
    asked_by_part,
    partition_count,
    partition_judgments,
    table_pieces,
)
from .evaluate import checked_settings, evaluate
from .measures.parsing import Measure
from .rests_on import JUDGED_KEY, PoolStanding, judged_cutoffs, pool_standing, relevance_for
from .rests_on import rests_on as rests_on_of

Missing = Literal["skip", "zero"]

BLOCKWISE_FROM = 1 << 30  # run + qrels bytes from which ``evaluate`` reads by blocks of queries
QRELS_WHOLE = 128 << 20  # a qrels file smaller than this is read whole: its digest is the in-memory one


def blockwise_wanted(
    qrels: str | Path,
    run: str | Path,
    block_queries: int | None = None,
    qrels_format: str = "auto",
    run_format: str = "auto",
) -> bool:
    """Whether :func:`evaluate_files` reads by blocks: when ``block_queries`` is given, or when
    the two files hold ``BLOCKWISE_FROM`` bytes or more; and only when both are plain column files."""
    try:
        size = os.path.getsize(run) + os.path.getsize(qrels)
    except (OSError, TypeError):
        return False
    if block_queries is None and size < BLOCKWISE_FROM:
        return False
    small = os.path.getsize(qrels) < QRELS_WHOLE and Path(qrels).is_file()
    return (small or column_shape(qrels, "qrels", qrels_format, check_role=False) is not None) and column_shape(
        run, "run", run_format, check_role=False
    ) is not None  # (evaluate_files checks roles)


@dataclass
class BlockwiseEvaluation:
    """What :class:`ragassay.metrics.evaluate.Evaluation` says of a run, without every query's
    values in memory: the sums and counts, and (when kept) the per-query values in a temporary
    file, given back a block at a time by :meth:`per_query_blocks` (queries sorted within a block)."""

    run_name: str
    measures: list[Measure]
    sums: dict[str, float]
    evaluated: int
    run_only: int
    missing: int
    no_relevant: int
    missing_policy: Missing
    relevance_level: int
    gain: str
    qrels_file: str
    qrels_origin: Any = None
    relevance: Any = None  # rests_on.Relevance
    standing: Any = None  # rests_on.PoolStanding (the run is not held against the pool: it is not in memory)
    qrels_digest: str | None = None
    blocks: int = 0
    longest_query: int = 0
    spool: IO[bytes] | None = field(default=None, repr=False)
    spooled: int = 0

    @property
    def metric_names(self) -> list[str]:
        return [str(m) for m in self.measures]

    @property
    def aggregate(self) -> dict[str, float]:
        """Means over the evaluated queries; counts (num_ret, ...) totalled, as in ``Evaluation``."""
        summed = {str(m) for m in self.measures if m.summed}
        return {
            name: (total if name in summed else total / self.evaluated) if self.evaluated else 0.0
            for name, total in self.sums.items()
        }

    asked_empty: int = 0  # judged queries the run was asked (its RUN.run.json) that returned nothing

    @property
    def counts(self) -> dict[str, int]:
        return {
            "evaluated": self.evaluated,
            "run_queries_without_qrels": self.run_only,
            "qrels_queries_missing_from_run": self.missing,
            "asked_without_results": self.asked_empty,
            "queries_without_relevant": self.no_relevant,
        }

    def per_query_blocks(self) -> Iterator[tuple[list[str], np.ndarray]]:
        """(query ids, values: one row per query, one column per metric) of each block, in the
        order scored; empty unless the evaluation kept them."""
        if self.spool is None:
            return
        self.spool.seek(0)
        for _ in range(self.spooled):
            ids = np.load(self.spool)
            values = np.load(self.spool)
            yield [q.decode("utf-8") for q in ids.tolist()], values

    def to_dict(self, per_query: bool = True) -> dict:
        """As ``Evaluation.to_dict``; the per-query values (when kept) are all read back for it."""
        rows = {}
        if per_query:
            names = self.metric_names
            rows = {
                q: dict(zip(names, row))
                for ids, values in self.per_query_blocks()
                for q, row in zip(ids, values.tolist())
            }
        return evaluate_result(
            run=self.run_name,
            aggregate=self.aggregate,
            **({"per_query": rows} if per_query else {}),
            counts=self.counts,
            settings={"relevance_level": self.relevance_level, "gain": self.gain, "missing": self.missing_policy},
            qrels={
                "file": self.qrels_file,
                "digest": self.qrels_digest,
                "origin": (self.qrels_origin or UNKNOWN).summary(),
            },
            rests_on=self.rests_on,
        )

    @property
    def rests_on(self) -> dict | None:
        if self.relevance is None or self.standing is None:
            return None
        return rests_on_of(self.relevance, self.standing, self.measures)


def evaluate_files(
    qrels: str | Path,
    run: str | Path,
    metrics: Iterable[str | Measure] | str | None = None,
    *,
    relevance_level: int | None = None,
    gain: str = "linear",
    missing: Missing = "skip",
    qrels_format: str = "auto",
    run_format: str = "auto",
    dedupe: bool = False,
    block_queries: int | None = None,
    keep_per_query: bool = False,
    piece_bytes: int = PIECE_BYTES,
) -> BlockwiseEvaluation:
    """Evaluate the run file against the qrels file by blocks of about ``block_queries`` queries
    (by default, as many as hold about a million run rows), with the values and errors of
    :func:`ragassay.evaluate` on the same files; ``keep_per_query`` keeps every query's values in a
    temporary file (see :meth:`BlockwiseEvaluation.per_query_blocks`)."""
    measures = checked_settings(metrics, missing, gain, relevance_level)
    q_shape, r_shape = _file_shapes(qrels, run, qrels_format, run_format)
    asked = read_asked(run)  # the queries the run was asked: those without a row score 0 in their block
    name = r_shape.tag or Path(run).name.split(".")[0] or "run"
    relevance = relevance_for(label_origin(qrels), relevance_level, qrels)
    relevance_level = relevance.level
    judged_keys = [JUDGED_KEY.format(k=k) for k in judged_cutoffs(measures)]  # beside the scores, as in memory
    pool = label_origin(qrels).pool
    pooled = _PoolTops({m.depth for m in pool}) if pool else None
    out = BlockwiseEvaluation(
        name,
        list(measures),
        {str(m): 0.0 for m in measures},
        0,
        0,
        0,
        0,
        missing,
        int(relevance_level),
        gain,
        str(qrels),
        label_origin(qrels),
    )
    totals = _Totals(measures, judged_keys)
    run_pieces = read_pieces(run, r_shape, "run", piece_bytes)
    first = next(run_pieces, None)
    if first is None:
        raise InputError("no results in file", run)
    parts = partition_count(first, os.path.getsize(run), block_queries, piece_bytes)
    runs, judged = Partitions(parts), Partitions(parts)
    asked_in = asked_by_part(asked.queries if asked is not None else [], parts)
    if keep_per_query:
        out.spool = tempfile.TemporaryFile(prefix="ragassay-per-query-")
    try:  # the qrels next (their errors come before those of the rest of the run), then the rest of the run
        runs.add(first)
        del first
        grades = partition_judgments(_qrels_pieces(qrels, q_shape, qrels_format, piece_bytes, out), judged, qrels)
        for piece in run_pieces:
            runs.add(piece)
            del piece
            trim_heap()
        overlap = False
        for p in range(parts):
            r_rows, q_rows = runs.take(p), judged.take(p)
            block = _score_block(
                r_rows,
                q_rows,
                run,
                qrels,
                name,
                measures,
                evaluate,
                dedupe,
                relevance_level=relevance_level,
                gain=gain,
                missing=missing,
                asked=asked_in[p],
                pooled=pooled,
            )
            del r_rows, q_rows
            if block is not None:
                overlap |= totals.add(out, block)
            trim_heap()
    finally:
        runs.close()
        judged.close()
    if not overlap:
        raise InputError(
            "No queries with both results and relevance info (trec_eval's words): the run's query "
            f"ids in {run} and the qrels' in {qrels} do not overlap",
            run,
        )
    out.sums = totals.sums()
    out.relevance = dataclasses.replace(relevance, grades=grades) if grades is not None else relevance
    out.standing = _block_standing(out, measures, totals, pooled)
    return out


def _block_standing(
    out: BlockwiseEvaluation, measures: Sequence[Measure], totals: _Totals, pooled: _PoolTops | None
) -> PoolStanding:
    """Where the run stands against its labels' pool, known by the fingerprints of its top results."""
    return pool_standing(
        out.qrels_origin,
        None,
        measures,
        totals.judged_means(),
        pooled.digests() if pooled is not None else None,
        pooled.longest if pooled is not None else None,
    )


def _file_shapes(
    qrels: str | Path, run: str | Path, qrels_format: str, run_format: str
) -> tuple[ColumnShape | None, ColumnShape]:
    """The column shapes of the two files (the qrels' None when the file is small enough to read
    whole); refused when either is not a plain file of columns."""
    whole = os.path.getsize(qrels) < QRELS_WHOLE if Path(qrels).is_file() else False
    q_shape = None if whole else column_shape(qrels, "qrels", qrels_format)
    r_shape = column_shape(run, "run", run_format)
    if (q_shape is None and not whole) or r_shape is None:
        raise InputError(
            "reading by blocks takes plain TREC or three-column files (not gzip, JSON Lines or standard input)",
            run if r_shape is None else qrels,
        )
    return q_shape, r_shape


def _qrels_pieces(
    qrels: str | Path, q_shape: ColumnShape | None, qrels_format: str, piece_bytes: int, out: BlockwiseEvaluation
) -> Iterator[Piece]:
    """The judgments a piece at a time; a small qrels file is read as in memory (every format, the
    same checks), so its digest is the same too, and it is kept on ``out``."""
    if q_shape is None:
        table = read_qrels(qrels, format=qrels_format)  # type: ignore[arg-type]
        out.qrels_digest, out.qrels_origin = table.digest(), table.origin
        return table_pieces(table)
    return read_pieces(qrels, q_shape, "qrels", piece_bytes)


class _Totals:
    """What the blocks add up to: the exact sum of each measure and of the share judged at each
    cut-off, with how many queries had a share (the run returned something for them)."""

    def __init__(self, measures: list[Measure], judged_keys: list[str]):
        self.measures, self.judged_keys = measures, judged_keys
        self.values = {str(m): ExactSum() for m in measures}
        self.judged = {key: ExactSum() for key in judged_keys}
        self.judged_counts = dict.fromkeys(judged_keys, 0)

    def add(self, out: BlockwiseEvaluation, block: tuple) -> bool:
        """One block's values and counts added to the totals and to ``out`` (its queries' values spooled
        when kept); whether the block held a query with both results and labels."""
        queries, values, run_only, missing_ids, no_relevant, matched, asked_empty, judged_values = block
        out.run_only += run_only
        out.missing += missing_ids
        out.asked_empty += asked_empty
        out.no_relevant += no_relevant
        if not queries:
            return matched
        out.blocks += 1
        out.evaluated += len(queries)
        out.longest_query = max(out.longest_query, max(map(len, queries)))
        for m in self.measures:
            self.values[str(m)].add(values[str(m)].tolist())
        for key in self.judged_keys:
            shares = judged_values.get(key)
            if shares is not None:
                measured = shares[~np.isnan(shares)]
                self.judged[key].add(measured.tolist())
                self.judged_counts[key] += len(measured)
        if out.spool is not None:
            np.save(out.spool, np.array([q.encode("utf-8") for q in queries]))
            np.save(out.spool, np.stack([values[str(m)] for m in self.measures], axis=1))
            out.spooled += 1
        return matched

    def sums(self) -> dict[str, float]:
        return {k: s.value for k, s in self.values.items()}

    def judged_means(self) -> dict[str, float]:
        """The mean share judged at each cut-off over the queries with a share (none: left out)."""
        return {
            key: self.judged[key].value / self.judged_counts[key] for key in self.judged_keys if self.judged_counts[key]
        }


class _PoolTops:
    """A run's top results at each depth of its labels' pool, fingerprinted block by block (the same
    fingerprint as the run read whole), and its longest ranking."""

    def __init__(self, depths: set[int]):
        self.parts = {d: PoolDigest() for d in sorted(depths)}
        self.longest = 0

    def add(self, run: Run) -> None:
        for depth, digest in self.parts.items():
            for qid, ids in run.iter_top_ids(depth):
                digest.add(qid, ids)
        if len(run.qidx):
            self.longest = max(self.longest, int(np.bincount(run.qidx).max()))

    def digests(self) -> dict[int, str]:
        return {d: p.hexdigest() for d, p in self.parts.items()}


def _block_run(r_rows: Piece | None, run_path: str | Path, name: str, dedupe: bool, asked: Sequence[str]) -> Run | None:
    """The partition's run rows as a run (checked, or deduplicated when asked), with the queries it
    was asked and has no row for; None when it holds neither."""
    run = None
    if r_rows is not None:
        vocab: dict[bytes, int] = {}
        qidx = factorize(r_rows.queries, vocab)
        run = Run(decode_query_ids(vocab, run_path), qidx, r_rows.docs, r_rows.values, name, str(run_path))
        run = run.deduplicated() if dedupe else run.checked(r_rows.lines)
    if asked:
        if run is None:
            run = Run([], np.zeros(0, np.int64), encode_ids([]), np.zeros(0), name, str(run_path))
        known = set(run.queries)
        run.queries = run.queries + [q for q in asked if q not in known]
    return run


def _unmet_block(
    qrels: Qrels, run: Run | None, measures: list[Measure], relevance_level: int, missing: Missing
) -> tuple:
    """A partition whose judged queries the run does not meet: nothing under ``skip``, a 0 for each
    judged query under ``zero``."""
    run_only = 0 if run is None else len(run.queries)
    if missing == "skip":
        return [], {}, run_only, len(qrels.queries), 0, False, 0, {}
    relevant = np.bincount(qrels.qidx[qrels.grades >= relevance_level], minlength=len(qrels.queries))
    order = sorted(range(len(qrels.queries)), key=qrels.queries.__getitem__)
    queries = [qrels.queries[i] for i in order]
    values = {str(m): np.zeros(len(queries)) for m in measures}
    return queries, values, run_only, len(queries), int((relevant == 0).sum()), False, 0, {}


def _score_block(
    r_rows: Piece | None,
    q_rows: Piece | None,
    run_path: str | Path,
    qrels_path: str | Path,
    name: str,
    measures: list[Measure],
    evaluate: Any,
    dedupe: bool,
    *,
    relevance_level: int,
    gain: str,
    missing: Missing,
    asked: Sequence[str] = (),
    pooled: Any = None,
) -> tuple | None:
    """(queries, values by metric, run-only count, missing count, no-relevant count, overlap?, count
    of asked queries without results, the share judged per query) of one partition, or None when it
    holds no row. ``asked``: the partition's queries the run was asked, each a query of the run even
    without a row (it scores 0). ``pooled``: the run's top results fingerprinted, block by block."""
    if r_rows is None and q_rows is None:
        return None
    run = _block_run(r_rows, run_path, name, dedupe, asked)
    if pooled is not None and run is not None:  # the block's rankings, to know the run again in its labels' pool
        pooled.add(run)
    if q_rows is None:
        return [], {}, 0 if run is None else len(run.queries), 0, 0, False, 0, {}
    vocab: dict[bytes, int] = {}
    qidx = factorize(q_rows.queries, vocab)
    qrels = Qrels(decode_query_ids(vocab, qrels_path), qidx, q_rows.docs, q_rows.values, source=str(qrels_path))
    qrels.check_unique(q_rows.lines)
    judged = set(qrels.queries)
    if run is None or not any(q in judged for q in run.queries):
        return _unmet_block(qrels, run, measures, relevance_level, missing)
    ev = evaluate(qrels, run, measures, relevance_level=relevance_level, gain=gain, missing=missing)
    return (
        ev.queries,
        ev.values,
        len(ev.run_only),
        len(ev.missing),
        len(ev.no_relevant),
        True,
        len(ev.asked_empty),
        ev.judged,
    )
