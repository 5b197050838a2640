"""How a run or qrels too large for memory is cut into blocks of queries: each row goes, by a hash
of its query id (:func:`partition_of`), to one of a number of anonymous temporary files, so that every
row of a query lands in one block whatever the order of the file. Also here: how many blocks a run
needs, the judgments partitioned with their range of grades, and an exactly rounded running sum, so
that means summed block by block equal the in-memory ones to the last bit. :mod:`.blockwise` scores
the blocks."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from ..data.column_bytes import join_pieces, trim_heap
from ..data.column_pieces import Piece
from ..data.tables import Qrels, encode_ids
from ..errors import InputError

BLOCK_ROWS = 1_000_000  # run rows a block holds when the number of queries per block is not given
MAX_PARTS = 4096


class Partitions:
    """Rows sent to ``parts`` anonymous temporary files by a hash of their query id."""

    def __init__(self, parts: int):
        self.parts = parts
        self.files: list[IO[bytes] | None] = [None] * parts
        self.groups = [0] * parts

    def add(self, piece: Piece) -> None:
        part = partition_of(piece.queries, self.parts)
        order = np.argsort(part.astype(np.int16 if self.parts < 1 << 15 else np.int64), kind="stable")  # radix
        bounds = np.searchsorted(part[order], np.arange(self.parts + 1))
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            take = order[bounds[p] : bounds[p + 1]]
            f = self.files[p]
            if f is None:
                f = self.files[p] = tempfile.TemporaryFile(prefix="ragassay-block-")
            for column in piece:
                np.save(f, column[take])
            self.groups[p] += 1

    def take(self, p: int) -> Piece | None:
        """The rows of partition ``p`` in file order (its file is closed: it takes no more rows)."""
        f = self.files[p]
        if f is None:
            return None
        f.seek(0)
        groups = [Piece(*(np.load(f) for _ in range(4))) for _ in range(self.groups[p])]
        f.close()
        self.files[p] = None
        return Piece(*(join_pieces([g[i] for g in groups]) for i in range(4)))

    def close(self) -> None:
        for f in self.files:
            if f is not None:
                f.close()


def partition_of(ids: np.ndarray, parts: int) -> np.ndarray:
    """The partition (0 to ``parts``-1) of each id of a zero-padded ``S`` array: a hash of its
    8-byte words, skipping words of zeros, so an id hashes alike whatever the padding of its array."""
    width = ids.dtype.itemsize
    if width % 8:
        ids = ids.astype(f"S{(width + 7) // 8 * 8}")
        width = ids.dtype.itemsize
    words = np.ascontiguousarray(ids).view(np.uint64).reshape(len(ids), width // 8)
    h = np.full(len(ids), 0x9E3779B97F4A7C15, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            w = words[:, j]
            mixed = (h ^ w) * np.uint64(0xBF58476D1CE4E5B9)
            mixed ^= mixed >> np.uint64(31)
            h = np.where(w != 0, mixed, h)
        h ^= h >> np.uint64(29)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(32)
    return (h % np.uint64(parts)).astype(np.int64)


class ExactSum:
    """A running sum held exactly, as floats whose sum is the exact total (each the rounded rest of
    the ones before), so the total read at the end is the correctly rounded sum of every value, as
    ``math.fsum`` gives it for the whole column in memory."""

    def __init__(self) -> None:
        self.parts: list[float] = []

    def add(self, values: list[float]) -> None:
        terms = self.parts + values
        parts: list[float] = []
        while True:  # a few rounds: each takes about 53 more bits of the exact total
            rest = math.fsum(terms + [-p for p in parts])
            if rest == 0.0:
                break
            parts.append(rest)
        self.parts = parts

    @property
    def value(self) -> float:
        return math.fsum(self.parts)


def asked_by_part(asked: Sequence[str], parts: int) -> list[list[str]]:
    """The queries the run was asked, each in the partition its id hashes to."""
    asked_in: list[list[str]] = [[] for _ in range(parts)]
    if asked:
        for q, p in zip(asked, partition_of(encode_ids(list(asked)), parts).tolist()):
            asked_in[p].append(q)
    return asked_in


def partition_judgments(pieces: Iterator[Piece], judged: Partitions, qrels: str | Path) -> tuple[int, int] | None:
    """Every judgment put in its partition, a piece at a time; the labels' lowest and highest grade
    (for what the relevant grade says), None when no judgment holds a grade. No judgment at all is an error."""
    any_judgment = False
    low: int | None = None
    high: int | None = None
    for piece in pieces:
        judged.add(piece)
        any_judgment = True
        if len(piece.values):  # the labels' range of grades, for what the relevant grade says
            lo, hi = int(piece.values.min()), int(piece.values.max())
            low, high = lo if low is None else min(low, lo), hi if high is None else max(high, hi)
        del piece  # (before the next is read) and its pages back at once: the peak is that of one piece
        trim_heap()
    if not any_judgment:
        raise InputError("no judgments in file", qrels)
    return (low, high) if low is not None and high is not None else None


def table_pieces(table: Qrels, rows: int = 1 << 20) -> Iterator[Piece]:
    """The rows of qrels read whole, as pieces (their duplicates were refused, with their lines, as
    they were read: the line numbers given here are 0)."""
    ids = encode_ids(table.queries)
    for lo in range(0, len(table), rows):
        hi = min(len(table), lo + rows)
        yield Piece(ids[table.qidx[lo:hi]], table.doc_ids[lo:hi], table.grades[lo:hi], np.zeros(hi - lo, np.int64))


def partition_count(first: Piece, run_bytes: int, block_queries: int | None, piece_bytes: int) -> int:
    """How many partitions, from the first piece of the run: about ``block_queries`` queries each
    (by default about ``BLOCK_ROWS`` run rows each)."""
    rows_here = len(first.lines)
    queries_here = len(np.unique(first.queries))
    scale = max(1.0, run_bytes / max(piece_bytes, 1))
    rows = rows_here * scale
    if block_queries is None:
        return int(min(MAX_PARTS, max(1, math.ceil(rows / BLOCK_ROWS))))
    queries = min(queries_here * scale, rows)
    return int(min(MAX_PARTS, max(1, math.ceil(queries / block_queries))))
