"""A large column file (TREC run or qrels) read a piece at a time, never held whole.

Each piece is a run of whole lines (about ``piece_bytes``, 16 MB) split by the numpy splitter of
:mod:`columns` with the same checks as a whole-file read (:func:`io.read_bytes_checked` and
:func:`io.read_qrels` / :func:`io.read_run`): a lone carriage return, bytes that are not UTF-8, a
line with the wrong number of fields, a grade that is not an integer as written, a score that is
not a finite number. Every error names the file and its line in the whole file, not in the piece.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np

from ..errors import InputError
from . import arrow_columns
from .column_formats import ColumnShape, blank_comments
from .column_numbers import parse_floats
from .column_reading import parse_grades, reader_path
from .columns import read_columns
from .lines import UTF8_BOM

PIECE_BYTES = 16 << 20  # a piece and its columns: a few tens of MB at the peak, whatever the file size


class Piece(NamedTuple):
    """The rows of one piece: query ids and document ids (zero-padded ``S`` arrays), the values
    (int64 grades or float64 scores) and each row's line number in the file."""

    queries: np.ndarray
    docs: np.ndarray
    values: np.ndarray
    lines: np.ndarray


def _scores(col: np.ndarray, lines: np.ndarray, path: str | Path) -> np.ndarray:
    return parse_floats(col, lines, path, "score")


def read_pieces(
    path: str | Path, shape: ColumnShape, kind: Literal["qrels", "run"], piece_bytes: int = PIECE_BYTES
) -> Iterator[Piece]:
    """The pieces of a plain column file laid out as ``shape`` (see :func:`io.column_shape`), in
    file order; pieces holding no row (blank or comment lines only) are not given."""
    convert = parse_grades if kind == "qrels" else _scores
    wanted = [(shape.q_col, None), (shape.d_col, None), (shape.v_col, convert)]
    before = 0  # lines of the file before this piece
    rest = b""
    first = True
    with open(path, "rb") as f:
        while True:
            chunk = f.read(piece_bytes)
            if not chunk and not rest:
                break
            if chunk:
                end = chunk.rfind(b"\n") + 1
                if end == 0:  # no line ends in this chunk (a very long line): read on until one does
                    rest += chunk
                    continue
                data, rest = rest + memoryview(chunk)[:end], chunk[end:]  # one copy of the piece, not two
            else:
                data, rest = rest, b""
            last = not chunk
            del chunk
            if first:
                data = data.removeprefix(UTF8_BOM)
            _check_text(data, path, before)
            count = data.count(b"\n") + (not data.endswith(b"\n"))
            skip = shape.skip if first else 0
            fast = _arrow_piece(data, shape, kind, skip)
            if fast is not None and len(fast[0]) == count - skip:  # no blank line: row i is on line i
                first = False
                piece = Piece(*fast, np.arange(before + skip + 1, before + count + 1, dtype=np.int64))
                del fast, data  # only the piece is held while the caller works on it, and not after
                yield piece
                del piece
                before += count
                if last:
                    break
                continue
            del fast
            try:
                (queries, docs, values), lines = read_columns(
                    blank_comments(data),
                    shape.ncols,
                    path,
                    wanted,
                    skip_lines=shape.skip if first else 0,
                    max_cols=shape.max_cols,
                )
            except InputError as e:
                raise InputError(e.message, path, None if e.line is None else e.line + before) from None
            first = False
            del data
            if len(lines):
                piece = Piece(queries, docs, values, lines + before)
                del queries, docs, values, lines
                yield piece
                del piece
            before += count
            if last:
                break


def _arrow_piece(
    data: bytes, shape: ColumnShape, kind: str, skip: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The columns of a clean piece read by pyarrow's parser (see :mod:`arrow_columns`), or None:
    then the numpy splitter reads it, and names the line of anything wrong."""
    if reader_path(len(data)) != "arrow" or b"\n\n" in data or data.startswith(b"\n") or b"#" in data:
        return None
    ncols = 6 if shape.fmt == "trec" and kind == "run" else shape.ncols
    columns = arrow_columns.read(
        data,
        ncols,
        [(shape.q_col, "id"), (shape.d_col, "id"), (shape.v_col, "int" if kind == "qrels" else "float")],
        skip,
    )
    if columns is None:
        return None
    queries, docs, values = columns
    return queries, docs, values


def _check_text(data: bytes, path: str | Path, before: int) -> None:
    """What :func:`io.read_bytes_checked` refuses in a whole file, refused in a piece of one."""
    crs = data.count(b"\r")
    if crs and crs != data.count(b"\r\n"):
        at = next(i for i in range(len(data)) if data[i] == 13 and data[i + 1 : i + 2] != b"\n")
        raise InputError(
            "has lines ended by a lone carriage return (\\r, old Mac style), which would be read as "
            "one long line; convert the line ends to \\n",
            path,
            before + data.count(b"\n", 0, at) + 1,
        )
    if b"\x00" in data:
        raise InputError(
            "a binary file, expected text (JSON Lines, TREC or TSV)",
            path,
            before + data.count(b"\n", 0, data.index(b"\x00")) + 1,
        )
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(
                f"not valid UTF-8 text (byte 0x{data[e.start]:02x}); save the file as UTF-8",
                path,
                before + data.count(b"\n", 0, e.start) + 1,
            ) from None
