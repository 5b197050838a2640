"""Fast splitting of whitespace-separated files, the TREC runs and qrels, into numpy columns.

A run of two million lines would cost hundreds of megabytes and many seconds if every token became
a Python object, so none does. The file's bytes become a uint8 array, numpy finds where the tokens
begin and end, and each column is gathered into one fixed-width bytes array (``S`` dtype). The
widths are rounded up to 8 bytes so that a column can be compared and hashed as uint64 words
(see :func:`hash_bytes`), which is many times faster than comparing it byte by byte.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ..errors import InputError
from .column_problems import every_bad_line

BLOCK_BYTES = 1 << 21
THREADS = int(os.environ.get("RAGASSAY_THREADS", "2"))  # split work into 2 MB blocks to bound temporary memory


def trim_heap() -> None:
    """Give memory that was freed back to the system (glibc keeps freed heap pages otherwise, and
    they count in the process's peak). Called between phases that free large temporaries; a few
    milliseconds; a no-op where malloc_trim does not exist."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM: Any = None  # libc.malloc_trim once looked up; False where there is none


def round8(n: int) -> int:
    return max(8, (n + 7) // 8 * 8)


TRIM_BYTES = 16 << 20  # bytes of pieces freed between two heap trims while joining
GATHER_ROWS = 1 << 18  # rows per step of ``gather``: bounds its temporary arrays to a few MB
_LOW_BYTES = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [(1 << 64) - 1], dtype="<u8")  # first i bytes


def gather(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Copy byte ranges ``buf[starts[i]:ends[i]]`` into a zero-padded ``S`` array (into ``out``, a
    zeroed ``S`` array wide enough, when given: pieces of one column then need no joining copy).

    The result is built 8 bytes at a time: each 8-byte word of every row is one gather from a
    little-endian uint64 view of ``buf`` at byte stride (unaligned reads, a little past the token),
    masked to the bytes the token has. In steps of ``GATHER_ROWS`` rows so temporaries stay small;
    the few rows too close to the end of ``buf`` for a full word are copied one by one.
    """
    n = len(starts)
    if out is None:
        out = np.zeros(n, dtype=f"S{round8(int((ends - starts).max()) if n else 1)}")
    if n == 0:
        return out
    width = out.dtype.itemsize
    nwords = width // 8
    result, out = out, out.view("<u8").reshape(n, nwords)
    last = len(buf) - 8  # the last offset a whole word can be read from
    in_order = bool(np.all(starts[1:] >= starts[:-1]))  # tokens in file order: the usual case
    # rows whose words all lie inside buf: then a prefix, read without clamping the offsets
    safe = int(np.searchsorted(starts, len(buf) - width, side="right")) if in_order else n
    if last >= 0:
        words = np.ndarray(shape=(last + 1,), dtype="<u8", buffer=buf, offset=0, strides=(1,))
        for lo in range(0, safe, GATHER_ROWS):
            hi = min(safe, lo + GATHER_ROWS)
            s, lens = starts[lo:hi], ends[lo:hi] - starts[lo:hi]
            shortest = int(lens.min())
            for j in range(nwords):
                at = s + 8 * j if j else s
                word = words[at if in_order else np.minimum(at, last)]
                if shortest < 8 * (j + 1):  # some rows end inside this word: keep only their bytes
                    word &= _LOW_BYTES[np.clip(lens - 8 * j, 0, 8)]
                out[lo:hi, j] = word
    flat = out.view(np.uint8).reshape(n, width)
    near_end = range(safe, n) if in_order else np.flatnonzero(ends - 1 > last).tolist()
    for i in near_end:  # rows whose last word would reach past buf (a few, at its end): byte by byte
        flat[i] = 0
        flat[i, : ends[i] - starts[i]] = buf[starts[i] : ends[i]]
    return result


def to_width(a: np.ndarray, width: int) -> np.ndarray:
    return a if a.dtype.itemsize == width else a.astype(f"S{width}")


def hash_bytes(a: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each element of an ``S`` array whose width is a multiple of 8.

    Used only to find candidate matches quickly; every match is then confirmed by comparing the
    bytes themselves, so a collision can never change a result.
    """
    width = a.dtype.itemsize
    if width % 8:
        a = to_width(a, round8(width))
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


Converter = Callable[[np.ndarray, np.ndarray, "str | Path"], np.ndarray]


INT_LIMIT = 2**31 - 1  # grades beyond this are not grades (and would overflow as int64 sums)
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


def join_pieces(pieces: list[np.ndarray]) -> np.ndarray:
    """Concatenate block pieces into one array, freeing each piece once it is copied: the pages of
    ``np.empty`` are only touched as they are filled, so memory never holds two whole copies."""
    if len(pieces) == 1:
        return pieces[0]
    dtype = pieces[0].dtype
    if dtype.kind == "S":
        dtype = np.dtype(f"S{max(x.dtype.itemsize for x in pieces)}")
    out = np.empty(sum(len(x) for x in pieces), dtype=dtype)
    pos = freed = 0
    pieces.reverse()
    while pieces:  # each piece taken out of the list as it is copied, so it is freed then
        x = pieces.pop()
        out[pos : pos + len(x)] = x
        pos += len(x)
        freed += x.nbytes
        del x
        if freed > TRIM_BYTES:  # pieces sit in the heap: hand their pages back as the output grows
            trim_heap()
            freed = 0
    return out


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


_POW10_FLOAT = 10.0 ** np.arange(16)
PLAIN_DIGITS = 15  # an integer of up to 15 digits is below 2**53: exact as a float64


def _plain_number(col: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(digits as an integer, digits after the dot, dots, minus sign, plain form) per row of an
    ``S`` column; plain is ``[-]digits[.digits]`` with at most 15 digits in all."""
    n, width = len(col), col.dtype.itemsize
    b = np.ascontiguousarray(col).view(np.uint8).reshape(n, width)
    mantissa = np.zeros(n, dtype=np.int64)
    ndigits = np.zeros(n, dtype=np.int64)
    after_dot = np.zeros(n, dtype=np.int64)
    dots = np.zeros(n, dtype=np.int64)
    minus = b[:, 0] == 45
    ok = np.ones(n, dtype=bool)
    with np.errstate(over="ignore"):  # a row of 19+ digits may wrap: it is not plain anyway
        for j in range(width):  # byte by byte over all rows at once (Horner's rule for the digits)
            c = b[:, j]
            d = c - np.uint8(48)  # bytes below '0' wrap around to large values
            digit = d < 10
            dot = c == 46
            ok &= digit | dot | (c == 0) | (minus if j == 0 else False)  # 0 bytes are the padding
            mantissa = np.where(digit, mantissa * 10 + d, mantissa)
            ndigits += digit
            after_dot += digit & (dots > 0)
            dots += dot
    ok &= (dots <= 1) & (ndigits >= 1) & (ndigits <= PLAIN_DIGITS)
    return mantissa, after_dot, dots, minus, ok


def parse_plain_decimals(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values of the plain decimals in an ``S`` column (``[-]digits[.digits]``, at most 15 digits
    in all) and a mask of the rows that are in that form (the others are left 0 for the caller).

    Each value is the digits as an exact integer divided by an exact power of ten: one correctly
    rounded division of exact operands, so it equals ``float(text)`` bit for bit (the fast path of
    Clinger's algorithm) at a fraction of the cost of ``astype(float)``, which parses text per row.
    """
    mantissa, after_dot, _, minus, ok = _plain_number(col)
    values = mantissa.astype(np.float64) / _POW10_FLOAT[np.minimum(after_dot, PLAIN_DIGITS)]
    np.negative(values, out=values, where=minus)
    values[~ok] = 0.0
    return values, ok


def parse_plain_integers(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values of the plain integers in an ``S`` column (``[-]digits``, at most 15 digits) and a
    mask of the rows in that form (the others are left 0 for the caller)."""
    mantissa, _, dots, minus, ok = _plain_number(col)
    ok &= dots == 0
    np.negative(mantissa, out=mantissa, where=minus)
    mantissa[~ok] = 0
    return mantissa, ok


def parse_floats(col: np.ndarray, lines: np.ndarray, path: str | Path, what: str) -> np.ndarray:
    """Parse an ``S`` column of numbers; a bad or non-finite value raises naming file and line.
    Plain decimals take the vectorised exact path; any other row goes through numpy's parser."""
    values, ok = parse_plain_decimals(col)
    if ok.all():
        return values
    rest = np.flatnonzero(~ok)
    values[rest] = _parse_floats_slowly(col[rest], lines[rest], path, what)
    return values


def _parse_floats_slowly(col: np.ndarray, lines: np.ndarray, path: str | Path, what: str) -> np.ndarray:
    for i, raw in enumerate(col.tolist()):  # Python reads "1_000" as 1000, trec_eval as 1: neither is guessed
        if b"_" in raw:
            raise InputError(f"{what} is not a number: {raw.decode('utf-8', 'replace')!r}", path, int(lines[i]))
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
            raise InputError(
                f"{what} is not a number: {raw.decode('utf-8', 'replace')!r}", path, int(lines[i])
            ) from None
        if not np.isfinite(v):
            raise InputError(f"{what} must be finite, got {raw.decode('utf-8', 'replace')!r}", path, int(lines[i]))
    raise AssertionError("unreachable")  # pragma: no cover


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
    width = col.dtype.itemsize
    if width % 8 == 0 and col.flags.c_contiguous:  # compared as 8-byte words: ~20x faster than as bytes
        words = col.view(np.uint64).reshape(n, width // 8)
        np.not_equal(words[1:, 0], words[:-1, 0], out=change[1:])
        for j in range(1, width // 8):
            change[1:] |= words[1:, j] != words[:-1, j]
    else:
        np.not_equal(col[1:], col[:-1], out=change[1:])
    heads = np.flatnonzero(change)
    head_codes = np.fromiter(
        (vocab.setdefault(v, len(vocab)) for v in col[heads].tolist()), dtype=np.int64, count=len(heads)
    )
    return np.repeat(head_codes, np.diff(np.append(heads, n)))


def _key_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys)`` for 64-bit keys, by one sort of plain numbers where it can: each key's
    high bits with its position in the low bits (sorting numbers is several times faster than an
    argsort). Exact: when two keys share their high bits the order of their low bits is not known,
    and the argsort is used instead (about once in ten thousand tables of a hundred thousand keys)."""
    n = len(keys)
    bits = max(1, (n - 1).bit_length())
    if n < 2 or bits > 40:
        return np.argsort(keys)
    low = np.uint64((1 << bits) - 1)
    packed = np.sort((keys & ~low) | np.arange(n, dtype=np.uint64))
    high = packed & ~low
    if bool(np.any(high[1:] == high[:-1])):
        return np.argsort(keys)
    return (packed & low).astype(np.int64)


class KeyIndex:
    """A hash table from non-zero 64-bit keys to their positions, laid out in key order.

    Linear probing where a key's home slot is its top bits: placing the keys in sorted order, each
    in the first free slot at or after its home, is one running maximum (no rounds of scattering),
    and every run of occupied slots holds its keys in increasing order, so a probe for an absent key
    stops at the first larger key as well as at an empty slot. Built and probed with vectorised
    numpy, it joins millions of run rows to their judgments without a per-row Python lookup.
    ``distinct`` is False when two keys are equal or one is 0 (0 marks an empty slot): the table
    must not be used then (callers fall back to an exact join).
    """

    def __init__(self, keys: np.ndarray):
        n = len(keys)
        bits = max(4, int(2 * max(n, 1) - 1).bit_length())  # at least twice as many slots as keys
        self.shift = np.uint64(64 - bits)
        order = _key_order(keys)
        ordered = keys[order]
        self.distinct = not n or bool(ordered[0] != 0 and not np.any(ordered[1:] == ordered[:-1]))
        step = np.arange(n, dtype=np.int64)
        place = np.maximum.accumulate((ordered >> self.shift).astype(np.int64) - step) + step if n else step
        size = max(1 << bits, int(place[-1]) + 1 if n else 0) + 1  # a free slot past the last: probes stop
        self.slot_keys = np.zeros(size, dtype=np.uint64)
        self.slot_keys[place] = ordered
        small = np.int32 if n < 2**31 else np.int64
        self.slot_pos = np.zeros(size, dtype=small)
        self.slot_pos[place] = order

    def find(self, query: np.ndarray) -> np.ndarray:
        """Position of each query key in the indexed keys, or -1 when absent."""
        slot = (query >> self.shift).astype(np.int64)
        found = self.slot_keys[slot]
        hit = found == query
        out = np.full(len(query), -1, dtype=np.int64)
        at = np.flatnonzero(hit)
        out[at] = self.slot_pos[slot[at]]  # positions read for the hits only (most run rows miss)
        todo = np.flatnonzero((found != 0) & (found < query))  # a smaller key sits there: probe on
        del found, hit, at
        while len(todo):
            slot_t = slot[todo] + 1
            slot[todo] = slot_t
            found = self.slot_keys[slot_t]
            q = query[todo]
            hit = found == q
            out[todo[hit]] = self.slot_pos[slot_t[hit]]
            todo = todo[(found != 0) & (found < q)]
        return out
