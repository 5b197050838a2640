"""How the columns of a clean TREC or TSV file are split: pyarrow's parser for large files when it
is installed, numpy's splitter otherwise; both give the same tables.

The fast path is taken only when nothing in the file needs the whole-file read to name a line: a
scan on another thread looks for a lone carriage return or bytes that are not UTF-8 while pyarrow
parses. Grades and scores are parsed here, a bad value named with its line.
"""

from __future__ import annotations

import codecs
import os
import re
from pathlib import Path

import numpy as np

from ..errors import InputError
from . import arrow_columns
from .background import Background
from .column_numbers import INT_LIMIT, parse_floats, parse_plain_integers

GRADE_LIMIT = INT_LIMIT


ARROW_MIN_BYTES = 4 << 20  # smaller files: the numpy splitter is as fast, and pyarrow's import is saved


def reader_path(size: int | None = None) -> str:
    """Which splitter reads clean TREC/TSV files (of ``size`` bytes, when known): ``arrow``
    (pyarrow's parser, when installed, for files of 4 MB and more) or ``numpy``.
    ``RAGASSAY_PARSER=numpy`` or ``=arrow`` forces one (both give the same tables)."""
    wanted = os.environ.get("RAGASSAY_PARSER", "auto")
    if wanted == "numpy" or (wanted != "arrow" and size is not None and size < ARROW_MIN_BYTES):
        return "numpy"
    return "arrow" if arrow_columns.available() else "numpy"


def arrow_table_columns(
    source: bytes | str, ncols: int, wanted: list[tuple[int, str]], skip: int, head: bytes | None = None
) -> list[np.ndarray] | None:
    if reader_path(len(source) if isinstance(source, bytes) else Path(source).stat().st_size) != "arrow":
        return None
    cols = arrow_columns.read(source, ncols, wanted, skip, head)
    if cols is None:
        return None
    first = cols[0][0] if isinstance(cols[0], tuple) else cols[0]
    return cols if len(first) else None  # no rows: the numpy path says so, naming the file


def plain_file_head(path: str | Path) -> bytes | None:
    """The first 64 KB of a plain (not gzipped, not empty, text) file when pyarrow will read it, else
    None: then the whole file goes through ``read_bytes_checked`` and its one clear error per case."""
    if str(path) == "-":
        return None
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size == 0 or reader_path(p.stat().st_size) != "arrow":
            return None
        with open(p, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    if head[:2] == b"\x1f\x8b" or head.startswith(b"\xef\xbb\xbf") or b"\x00" in head or not head.strip():
        return None
    if len(head) == 1 << 16:
        head = head[: head.rfind(b"\n") + 1]  # whole lines only
    if not head.strip() or b"\r" in head:
        return None  # a first line longer than 64 KB, or line ends with \r: the full path judges them
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return None  # bytes not UTF-8: the full path names the line
    return head


class WholeReadScan:
    """:func:`whole_read_needed` of a file on another thread, while pyarrow parses the same file (its
    parse lets go of the GIL, the scan reads at memchr speed): the scan costs no time of its own."""

    def __init__(self, path: str | Path):
        self._scan = Background(lambda: whole_read_needed(Path(path)), "whole-read scan")

    def needed(self) -> bool:
        """Whether the whole-file read must judge the file (also when the scan itself failed)."""
        return self._scan.result() is not False


def whole_read_needed(path: Path) -> bool:
    """Whether the file holds what pyarrow would read where the whole-file read refuses it: a \r not
    followed by \n (pyarrow ends a line there) or bytes that are not UTF-8 in any column (pyarrow
    reads only the columns it is asked for). Read 8 MB at a time into one buffer, scanned at memchr
    speed; the UTF-8 check only decodes buffers that are not all ASCII."""
    buf = bytearray(8 << 20)
    view = memoryview(buf)
    utf8 = codecs.getincrementaldecoder("utf-8")()
    after_cr = False  # the block before ended with a \r: this one must start with \n
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                try:
                    utf8.decode(b"", final=True)  # a sequence cut by the end of the file
                except UnicodeDecodeError:
                    return True
                return after_cr
            if after_cr and buf[0] != 0x0A:
                return True
            at = buf.find(b"\r", 0, n)
            while 0 <= at < n - 1:
                if buf[at + 1] != 0x0A:
                    return True
                at = buf.find(b"\r", at + 2, n)
            after_cr = buf[n - 1] == 0x0D
            ascii_only = buf.isascii() if n == len(buf) else buf[:n].isascii()  # (a copy for the last block only)
            if not ascii_only or utf8.getstate()[0]:  # (or a sequence the block before began)
                try:
                    utf8.decode(view[:n])
                except UnicodeDecodeError:
                    return True


def parse_scores(col: np.ndarray, lines: np.ndarray, path: str | Path) -> np.ndarray:
    return parse_floats(col, lines, path, "score")


def parse_grades(col: np.ndarray, lines: np.ndarray, path: str | Path) -> np.ndarray:
    parsed, plain = parse_plain_integers(col)
    if plain.all() and (not len(parsed) or int(np.abs(parsed).max()) <= GRADE_LIMIT):
        return parsed  # the usual case; anything else is judged below, with its line
    values: np.ndarray | None = None
    underscores = any(b"_" in raw for raw in col[~plain].tolist())  # numpy reads "1_0" as 10: judged below
    if not underscores:
        if col.dtype.itemsize > 8:  # a field of 9+ bytes: may be too big for a grade (numpy would wrap it)
            long = np.flatnonzero(np.char.str_len(col) > 10)
            if len(long):
                i = int(long[0])
                raise InputError(
                    f"grade {col[i].decode('utf-8', 'replace')!r} is out of range (at most "
                    f"{GRADE_LIMIT} either side of 0)",
                    path,
                    int(lines[i]),
                )
        try:
            values = col.astype(np.int64)
        except (ValueError, OverflowError):
            values = None
    if values is not None:
        big = np.flatnonzero(np.abs(values) > GRADE_LIMIT)
        if len(big):
            i = int(big[0])
            raise InputError(
                f"grade {int(values[i])} is out of range (at most {GRADE_LIMIT} either side of 0)", path, int(lines[i])
            )
        return values
    # not all plain integers: "3.0" is an integer written as a float; anything else ("1e2", "2.5",
    # "three") is named with its line. trec_eval would read "1e2" as 1, a float reader as 100:
    # neither is what was meant, so neither is guessed
    out = np.empty(len(col), dtype=np.int64)
    for i, raw in enumerate(col.tolist()):
        m = INTEGRAL.fullmatch(raw)
        if m is None:
            raise InputError(f"grade must be an integer, got {raw.decode('utf-8', 'replace')!r}", path, int(lines[i]))
        out[i] = int(m.group(1))
    big = np.flatnonzero(np.abs(out) > GRADE_LIMIT)
    if len(big):
        i = int(big[0])
        raise InputError(
            f"grade {int(out[i])} is out of range (at most {GRADE_LIMIT} either side of 0)", path, int(lines[i])
        )
    return out


INTEGRAL = re.compile(rb"\s*([+-]?\d{1,18})(?:\.0*)?\s*")  # 3, +3, -3, 3.0, 3.


def decode_query_ids(vocab: dict[bytes, int], path: str | Path) -> list[str]:
    """The query ids of a splitter's vocabulary (bytes in first-seen order) as text."""
    return decode_vocab(vocab, path)


def decode_ids(ids: np.ndarray, path: str | Path) -> list[str]:
    try:
        return [k.decode("utf-8") for k in ids.tolist()]
    except UnicodeDecodeError:
        raise InputError("query ids are not valid UTF-8", path) from None


def decode_vocab(vocab: dict[bytes, int], path: str | Path) -> list[str]:
    try:
        return [k.decode("utf-8") for k in vocab]
    except UnicodeDecodeError:
        raise InputError("query ids are not valid UTF-8", path) from None
