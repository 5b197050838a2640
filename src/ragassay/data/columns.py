"""Fast splitting of whitespace-separated files, the TREC runs and qrels, into numpy columns.

A run of two million lines would cost hundreds of megabytes and many seconds if every token became
a Python object, so none does. The file's bytes become a uint8 array, numpy finds where the tokens
begin and end, and each column is gathered into one fixed-width bytes array (``S`` dtype). This module
cuts the file into blocks and its lines into rows; the byte columns are gathered and joined by
:mod:`.column_bytes`, their numbers read by :mod:`.column_numbers`, and their ids turned into codes
and keys by :mod:`.column_keys`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..errors import InputError
from .column_bytes import gather, join_pieces
from .column_problems import every_bad_line

BLOCK_BYTES = 1 << 21
THREADS = int(os.environ.get("RAGASSAY_THREADS", "2"))  # split work into 2 MB blocks to bound temporary memory


Converter = Callable[[np.ndarray, np.ndarray, "str | Path"], np.ndarray]

MAX_FIELD_BYTES = 4096  # an id or number longer than this is not one: the file is not what it claims


def read_columns(
    data: bytes | list[bytes],
    ncols: int,
    path: str | Path,
    wanted: Sequence[tuple[int, Converter | None]],
    skip_lines: int = 0,
    max_cols: int | None | bool = False,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Split a whitespace-separated file whose lines all have ``ncols`` fields into columns
    (``max_cols``: lines may have from ``ncols`` up to this many fields, None for any number; the
    fields past ``ncols`` are ignored).

    ``wanted`` lists (column index, converter): with no converter the column comes back as a
    zero-padded ``S`` array, otherwise as ``converter(S array, line numbers, path)``. Also returns
    the 1-based line number of each row. Blank lines are skipped; a line with another number of
    fields raises :class:`InputError` naming the file and the line. The file is cut into 2 MB
    blocks processed on two threads (numpy releases the GIL for most of the work).

    ``data`` may be a one-item list holding the bytes: the list is emptied, and the bytes are
    freed as soon as they are split, before the columns are joined (a lower peak of memory).
    """
    if isinstance(data, list):
        data = data.pop()
    most = ncols if max_cols is False else max_cols
    buf_all = np.frombuffer(data, dtype=np.uint8)
    blocks = _cut_blocks(data, skip_lines)

    work = partial(_split_block, buf_all, ncols, most, path, wanted)

    try:
        if len(blocks) > 1 and THREADS > 1:
            with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
                parts = list(pool.map(work, blocks))
        else:
            parts = [work(b) for b in blocks]
    except InputError as e:  # said again with every bad line in file order, from the failing block on
        block = next((b for b in reversed(blocks) if e.line is not None and b[2] <= e.line), blocks[0])
        raise every_bad_line(data, block[0], block[2], ncols, most, wanted, path, e, MAX_FIELD_BYTES) from None
    del data, buf_all, work  # split: the file's bytes go now (when the caller handed them over), not after the join
    parts = [p for p in parts if len(p[1])]
    if not parts:
        return [np.zeros(0, dtype="S8") if conv is None else np.zeros(0) for _, conv in wanted], np.zeros(0, np.int64)
    columns = []
    for _ in wanted:  # each part's first column left is this one: taken out, so it is freed once joined
        columns.append(join_pieces([p[0].pop(0) for p in parts]))
    return columns, join_pieces([p[1] for p in parts])


def _split_block(
    buf_all: np.ndarray,
    ncols: int,
    most: int | None,
    path: str | Path,
    wanted: Sequence[tuple[int, Converter | None]],
    block: tuple[int, int, int],
) -> tuple[list[np.ndarray], np.ndarray]:
    """One block's wanted columns (converted) and each row's line number."""
    start, end, first_line = block
    buf = buf_all[start:end]
    starts, ends, row_lines = _block_rows(buf, ncols, most, path, first_line)
    lines = first_line + row_lines
    for c, _ in wanted:
        long = np.flatnonzero(ends[:, c] - starts[:, c] > MAX_FIELD_BYTES)
        if len(long):
            raise InputError(
                f"a field of {int(ends[long[0], c] - starts[long[0], c])} bytes: not an id or a "
                "number (is this the right file?)",
                path,
                int(lines[long[0]]),
            )
    tail = buf_all[start:]
    cols = []
    for c, convert in wanted:
        col = gather(tail, starts[:, c], ends[:, c])
        cols.append(col if convert is None else convert(col, lines, path))
    return cols, lines


def _cut_blocks(data: bytes, skip_lines: int) -> list[tuple[int, int, int]]:
    """The file cut into blocks of about ``BLOCK_BYTES`` at line ends, past the lines skipped: (start,
    end, first line number) of each."""
    n = len(data)
    pos, line_no = 0, 1
    for _ in range(skip_lines):
        nl = data.find(b"\n", pos)
        pos = n if nl < 0 else nl + 1
        line_no += 1
    blocks = []
    while pos < n:
        end = min(n, pos + BLOCK_BYTES)
        if end < n:
            nl = data.rfind(b"\n", pos, end)
            if nl < 0:  # one line longer than a block
                nl = data.find(b"\n", end)
            end = n if nl < 0 else nl + 1
        blocks.append((pos, end, line_no))
        line_no += data.count(b"\n", pos, end)
        pos = end
    return blocks


def _block_rows(
    buf: np.ndarray, ncols: int, most: int | None, path: str | Path, first_line: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The start and end of each row's fields in a block, and each row's 0-based line in it; a line
    with the wrong number of fields raises, naming it."""
    padded = np.ones(len(buf) + 2, dtype=np.int8)
    np.less_equal(buf, 32, out=padded[1:-1].view(bool))
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # alternating token starts and ends
    newlines = np.flatnonzero(buf == 10)
    row_lines, width = _row_lines(edges[0::2], newlines, ncols), ncols
    if row_lines is None and most != ncols:  # lines may have more fields: the same number on all?
        k = len(edges) // 2 // max(len(newlines) + (buf[-1] != 10 if len(buf) else 0), 1)
        if k > ncols and (most is None or k <= most):
            row_lines, width = _row_lines(edges[0::2], newlines, k), k
    if row_lines is not None:
        return edges[0::2].reshape(-1, width), edges[1::2].reshape(-1, width), row_lines
    if most != ncols:
        return _variable_rows(edges[0::2], edges[1::2], newlines, ncols, most, buf, path, first_line)
    _raise_bad_line(buf, edges[0::2], newlines, ncols, path, first_line)


def _row_lines(starts: np.ndarray, newlines: np.ndarray, ncols: int) -> np.ndarray | None:
    """0-based line of each row if every non-blank line has exactly ``ncols`` tokens, else None.

    Checks only each row's first and last token: they must sit on the same line, and rows on
    strictly increasing lines.
    """
    if len(starts) % ncols:
        return None
    grid = starts.reshape(-1, ncols)
    rows = len(grid)
    if rows and len(newlines) in (rows, rows - 1):  # no blank line: row i must lie on line i
        after = np.empty(rows, dtype=np.int64)
        after[: len(newlines)] = newlines[:rows]
        after[len(newlines) :] = np.iinfo(np.int64).max  # a last line without its newline
        if bool((grid[1:, 0] > after[:-1]).all()) and bool((grid[:, -1] < after).all()):
            return np.arange(rows, dtype=np.int64)
    first = np.searchsorted(newlines, grid[:, 0])
    if ncols > 1 and not np.array_equal(first, np.searchsorted(newlines, grid[:, -1])):
        return None
    if len(first) > 1 and not bool(np.all(first[1:] > first[:-1])):
        return None
    return first


def _variable_rows(
    tok_starts: np.ndarray,
    tok_ends: np.ndarray,
    newlines: np.ndarray,
    ncols: int,
    most: int | None,
    buf: np.ndarray,
    path: str | Path,
    line_no: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of lines with ``ncols`` to ``most`` fields: the first ``ncols`` fields of each."""
    token_line = np.searchsorted(newlines, tok_starts)
    first = np.flatnonzero(np.r_[True, token_line[1:] != token_line[:-1]]) if len(token_line) else np.zeros(0, np.int64)
    counts = np.diff(np.r_[first, len(token_line)])
    bad = np.flatnonzero((counts < ncols) | ((counts > most) if most is not None else False))
    if len(bad):
        i = int(token_line[first[bad[0]]])
        lo = 0 if i == 0 else int(newlines[i - 1]) + 1
        hi = int(newlines[i]) if i < len(newlines) else len(buf)
        text = bytes(buf[lo:hi]).decode("utf-8", "replace").strip()
        want = f"{ncols} or more" if most is None else f"{ncols} to {most}"
        raise InputError(
            f"expected {want} whitespace-separated columns, found {int(counts[bad[0]])}: {text[:120]!r}",
            path,
            line_no + i,
        )
    take = first[:, None] + np.arange(ncols)
    return tok_starts[take], tok_ends[take], token_line[first]


def _raise_bad_line(
    buf: np.ndarray, starts: np.ndarray, newlines: np.ndarray, ncols: int, path: str | Path, line_no: int
) -> NoReturn:
    """The first line with another number of fields than ``ncols``, raised with its text."""
    token_line = np.searchsorted(newlines, starts)
    n_lines = len(newlines) + (1 if len(buf) and buf[-1] != 10 else 0)
    counts = np.bincount(token_line, minlength=n_lines)
    i = int(np.flatnonzero((counts != 0) & (counts != ncols))[0])
    lo = 0 if i == 0 else int(newlines[i - 1]) + 1
    hi = int(newlines[i]) if i < len(newlines) else len(buf)
    text = bytes(buf[lo:hi]).decode("utf-8", "replace").strip()
    raise InputError(
        f"expected {ncols} whitespace-separated columns, found {int(counts[i])}: {text[:120]!r}", path, line_no + i
    )
