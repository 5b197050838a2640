"""Fast, vectorised splitting of whitespace-separated files (TREC runs and qrels).

A 2-million-line run is split without creating one Python object per token: the file's bytes
become a uint8 array, token boundaries are found with numpy, and each column is gathered into a
fixed-width bytes array (``S`` dtype). Widths are rounded up to 8 bytes so columns can be hashed
as uint64 words (see :func:`hash_bytes`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .errors import InputError

BLOCK_BYTES = 1 << 23  # split work into ~8 MB blocks to bound temporary memory


def _round8(n: int) -> int:
    return max(8, (n + 7) // 8 * 8)


def gather(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Copy byte ranges ``buf[starts[i]:ends[i]]`` into a zero-padded ``S`` array."""
    lens = ends - starts
    width = _round8(int(lens.max()) if len(lens) else 1)
    out = np.zeros((len(starts), width), dtype=np.uint8)
    for j in range(int(lens.max()) if len(lens) else 0):
        live = lens > j
        if live.all():
            out[:, j] = buf[starts + j]
        else:
            out[live, j] = buf[starts[live] + j]
    return out.view(f"S{width}").ravel()


def to_width(a: np.ndarray, width: int) -> np.ndarray:
    return a if a.dtype.itemsize == width else a.astype(f"S{width}")


def hash_bytes(a: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each element of an ``S`` array whose width is a multiple of 8.

    Used only to find candidate matches quickly; every match is then confirmed by comparing the
    bytes themselves, so a collision can never change a result.
    """
    width = a.dtype.itemsize
    if width % 8:
        a = to_width(a, _round8(width))
        width = a.dtype.itemsize
    words = np.ascontiguousarray(a).view(np.uint64).reshape(len(a), width // 8)
    h = np.full(len(a), 0x9E3779B97F4A7C15, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h ^= words[:, j]
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
    return h


def mix(h: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Combine a hash with small integer codes (query positions) into one 64-bit key."""
    with np.errstate(over="ignore"):
        k = h ^ (codes.astype(np.uint64) * np.uint64(0x94D049BB133111EB))
        k *= np.uint64(0xD6E8FEB86659FD93)
        k ^= k >> np.uint64(32)
    return k


class Block:
    """Token boundaries of one block of lines: row i, column c is ``buf[starts[i, c]:ends[i, c]]``."""

    __slots__ = ("buf", "starts", "ends", "first_line")

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, first_line: int):
        self.buf = buf
        self.starts = starts  # shape (n_lines, n_cols)
        self.ends = ends
        self.first_line = first_line

    def column(self, c: int) -> np.ndarray:
        return gather(self.buf, self.starts[:, c], self.ends[:, c])

    def __len__(self) -> int:
        return self.starts.shape[0]


def iter_blocks(data: bytes, ncols: int, path: str | Path, skip_lines: int = 0) -> Iterator[tuple[Block, np.ndarray]]:
    """Yield blocks of rows with exactly ``ncols`` whitespace-separated fields.

    Blank lines are skipped. A line with another number of fields raises :class:`InputError`
    naming the file and the line. Also yields, per block, the 1-based line number of each row.
    """
    buf_all = np.frombuffer(data, dtype=np.uint8)
    n = len(buf_all)
    pos = 0
    line_no = 1
    if skip_lines:
        for _ in range(skip_lines):
            nl = data.find(b"\n", pos)
            pos = n if nl < 0 else nl + 1
            line_no += 1
    while pos < n:
        end = min(n, pos + BLOCK_BYTES)
        if end < n:
            nl = data.rfind(b"\n", pos, end)
            if nl < 0:  # one line longer than a block
                nl = data.find(b"\n", end)
            end = n if nl < 0 else nl + 1
        buf = buf_all[pos:end]
        is_ws = buf <= 32
        padded = np.empty(len(buf) + 2, dtype=np.int8)
        padded[0] = 1
        padded[-1] = 1
        padded[1:-1] = is_ws
        edges = np.diff(padded)
        starts = np.flatnonzero(edges == -1)
        ends = np.flatnonzero(edges == 1)
        newlines = np.flatnonzero(buf == 10)
        token_line = np.searchsorted(newlines, starts)  # 0-based line within block
        n_lines_block = len(newlines) + (1 if len(buf) and buf[-1] != 10 else 0)
        counts = np.bincount(token_line, minlength=n_lines_block)
        bad = np.flatnonzero((counts != 0) & (counts != ncols))
        if len(bad):
            i = int(bad[0])
            lo = 0 if i == 0 else int(newlines[i - 1]) + 1
            hi = int(newlines[i]) if i < len(newlines) else len(buf)
            text = bytes(buf[lo:hi]).decode("utf-8", "replace").strip()
            raise InputError(
                f"expected {ncols} whitespace-separated columns, found {int(counts[i])}: {text[:120]!r}",
                path, line_no + i)
        nonblank = np.flatnonzero(counts)
        if len(starts):
            yield (Block(buf, starts.reshape(-1, ncols), ends.reshape(-1, ncols), line_no),
                   line_no + nonblank)
        line_no += len(newlines)
        pos = end


def parse_floats(col: np.ndarray, lines: np.ndarray, path: str | Path, what: str) -> np.ndarray:
    try:
        values = col.astype(np.float64)
    except ValueError:
        values = None
    if values is not None and np.isfinite(values).all():
        return values
    for i, raw in enumerate(col.tolist()):
        try:
            v = float(raw)
        except ValueError:
            raise InputError(f"{what} is not a number: {raw.decode('utf-8', 'replace')!r}", path, int(lines[i])) from None
        if not np.isfinite(v):
            raise InputError(f"{what} must be finite, got {raw.decode('utf-8', 'replace')!r}", path, int(lines[i]))
    raise AssertionError("unreachable")  # pragma: no cover


def parse_ints(col: np.ndarray, lines: np.ndarray, path: str | Path, what: str) -> np.ndarray:
    try:
        return col.astype(np.int64)
    except (ValueError, OverflowError):
        pass
    for i, raw in enumerate(col.tolist()):
        try:
            int(raw)
        except ValueError:
            raise InputError(f"{what} must be an integer, got {raw.decode('utf-8', 'replace')!r}", path, int(lines[i])) from None
    raise InputError(f"{what} out of range", path)  # pragma: no cover


def factorize(col: np.ndarray, vocab: dict[bytes, int]) -> np.ndarray:
    """Integer codes for an ``S`` column, extending ``vocab`` in first-seen order.

    Runs and qrels are usually grouped by query, so only the heads of runs of equal values
    go through the dict; the codes are then repeated.
    """
    n = len(col)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(col[1:], col[:-1], out=change[1:])
    heads = np.flatnonzero(change)
    head_codes = np.fromiter((vocab.setdefault(v, len(vocab)) for v in col[heads].tolist()),
                             dtype=np.int64, count=len(heads))
    return np.repeat(head_codes, np.diff(np.append(heads, n)))
