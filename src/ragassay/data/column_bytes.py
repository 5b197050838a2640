"""Fixed-width byte columns: tokens gathered out of a file's bytes, padded to whole 8-byte words,
and block pieces joined with the heap trimmed as they are freed.

A column's width is rounded up to 8 bytes so that it can be compared and hashed as uint64 words
(see :mod:`.column_keys`), which is many times faster than comparing it byte by byte.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np


def trim_heap() -> None:
    """Give memory that was freed back to the system (glibc keeps freed heap pages otherwise, and
    they count in the process's peak). Called between phases that free large temporaries; a few
    milliseconds; a no-op where malloc_trim does not exist."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
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
