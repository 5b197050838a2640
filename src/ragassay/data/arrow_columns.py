"""Column files read by pyarrow's CSV parser, when pyarrow is installed.

Only the plain, clean shape goes this way: one delimiter (a single space or a single tab), the same
number of fields on every line, numbers in the numeric column. Anything else (runs of spaces,
comments, a bad value, a duplicate) returns ``None`` and the caller reads the file with the numpy
splitter in :mod:`columns`, which accepts every shape and names the file and line of each error.
So both paths give the same table for the same file, and errors always come from one place.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .column_bytes import TRIM_BYTES, gather, round8, trim_heap
from .column_numbers import INT_LIMIT, parse_plain_integers
from .columns import MAX_FIELD_BYTES

# pyarrow parses on all cores: on the 2-core machine a 73 MB run is evaluated ~17% faster end to end
# for ~26 MB more at the peak (benchmarks/metrics_speed.py); RAGASSAY_ARROW_THREADS=0 parses on one.
ARROW_THREADS = os.environ.get("RAGASSAY_ARROW_THREADS", "1") != "0"


def available() -> bool:
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def _delimiter(data: bytes, skip_lines: int) -> str | None:
    """The one delimiter of the file's first data line, or None when it mixes or repeats them."""
    start = 0
    for _ in range(skip_lines):
        start = data.find(b"\n", start) + 1
        if start == 0:
            return None
    end = data.find(b"\n", start)
    line = data[start : end if end >= 0 else len(data)].rstrip(b"\r")
    if b"\r" in line or not line or line[:1].isspace() or line[-1:].isspace():
        return None
    if b"\t" in line and b" " not in line:
        return "\t"
    if b" " in line and b"\t" not in line and b"  " not in line:
        return " "
    return None


def read(
    source: bytes | str, ncols: int, wanted: Sequence[tuple[int, str]], skip_lines: int = 0, head: bytes | None = None
) -> list[np.ndarray] | None:
    """Columns of a clean file with exactly ``ncols`` fields per line, or None (use the numpy path).
    ``source`` is the file's bytes, or its path (then pyarrow streams it and ``head``, the file's
    first bytes, tells the delimiter): reading by path keeps the whole file out of memory.

    ``wanted`` lists (column index, kind): "id" comes back as a zero-padded ``S`` array (as the numpy
    splitter gives), "codes" as (int64 codes in first-seen order, ``S`` array of the distinct ids),
    "float" as finite float64, "int" as int64 within ``INT_LIMIT`` either side of 0.
    """
    data = source if isinstance(source, bytes) else head
    if data is None or not available() or b"\r" in data[:65536]:
        return None
    delimiter = _delimiter(data, skip_lines)
    if delimiter is None:
        return None
    import pyarrow as pa

    pool = pa.system_memory_pool()  # malloc's: gives memory back, where mimalloc's arenas keep ~100 MB
    table = _parsed_table(source, ncols, wanted, skip_lines, delimiter, pool)
    if table is None:
        return None
    # largest column first, each dropped from the table once converted: its arrow memory goes back
    # before the next one is copied out, and the id column is converted chunk by chunk
    converted: dict[int, Any] = {}
    for c, kind in sorted(wanted, key=lambda w: {"id": 0, "codes": 1}.get(w[1], 2)):
        col = table.column(f"c{c}")
        table = table.drop_columns([f"c{c}"])
        if col.null_count:
            return None
        chunks = col.chunks
        del col
        value = _converted(kind, chunks)
        del chunks
        if value is None:
            return None
        converted[c] = value
        del value
        trim_heap()  # the column's arrow memory is free: give its pages back before the next one
    return [converted[c] for c, _ in wanted]


def _parsed_table(
    source: bytes | str, ncols: int, wanted: Sequence[tuple[int, str]], skip_lines: int, delimiter: str, pool: Any
) -> Any:
    """The wanted columns as pyarrow parses them, or None when pyarrow refuses the file (the numpy
    path then reads it and names the line)."""
    import pyarrow as pa
    import pyarrow.csv as csv

    names = [f"c{i}" for i in range(ncols)]
    # query ids are dictionary-encoded by the parser itself: codes in first-seen order, no id copied per row
    # grades are read as text and parsed as the numpy path parses them: pyarrow's own integer parser
    # takes "0x10" as 16, where the numpy path (and trec_eval) refuse it
    types = {
        "id": pa.binary(),
        "codes": pa.dictionary(pa.int32(), pa.binary()),
        "float": pa.float64(),
        "int": pa.binary(),
    }
    try:
        table = csv.read_csv(
            pa.BufferReader(source) if isinstance(source, bytes) else source,
            read_options=csv.ReadOptions(
                column_names=names, skip_rows=skip_lines, block_size=1 << 22, use_threads=ARROW_THREADS
            ),
            parse_options=csv.ParseOptions(
                delimiter=delimiter,
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            convert_options=csv.ConvertOptions(
                column_types={f"c{c}": types[k] for c, k in wanted},
                include_columns=[f"c{c}" for c, _ in wanted],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
                true_values=[],
                false_values=[],
            ),
            memory_pool=pool,
        )
        return table.unify_dictionaries(memory_pool=pool)  # one dictionary for every chunk of a column
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _converted(kind: str, chunks: list) -> Any:
    """One column's chunks as numpy, as the kind asks; None when the numpy path must judge the file."""
    if kind == "id":
        return _fixed_width(chunks)  # None: not UTF-8, an empty id or one too long: the numpy path names the line
    if kind == "codes":
        return _codes(chunks)
    # straight from the buffers: ChunkedArray.to_numpy would import pandas (0.3 s)
    if kind == "int":  # parsed as the numpy path parses them: [-]digits, nothing else
        values = _plain_integers(chunks)
        if values is None:
            return None  # not a plain decimal integer somewhere: the numpy path judges it, naming the line
    else:
        values = _drain(chunks, np.float64, np.float64)
    if kind == "float" and not np.isfinite(values).all():
        return None
    if kind == "int" and len(values) and int(np.abs(values).max()) > INT_LIMIT:
        return None
    return values


def _codes(chunks: list) -> tuple[np.ndarray, np.ndarray] | None:
    """Query ids: the codes, and the distinct ids in first-seen order."""
    distinct = _fixed_width([chunks[0].dictionary]) if chunks else np.zeros(0, dtype="S8")
    if distinct is None:
        return None
    if len(distinct) and (distinct.view(np.uint8).reshape(len(distinct), -1)[:, 0] == ord("#")).any():
        return None  # '#' comment lines read as rows: the numpy path skips them
    return _drain([a.indices for a in chunks], np.int32, np.int64), distinct


def _plain_integers(chunks: list) -> np.ndarray | None:
    """A binary column of integers written in decimal (``[-]digits``) as int64, a chunk at a time (the
    list is emptied as it is read: a chunk's temporaries at once); None when a value is anything else."""
    out = np.empty(sum(len(c) for c in chunks), dtype=np.int64)
    pos = 0
    while chunks:
        chunk = chunks.pop(0)
        offsets, data = _offsets(chunk), chunk.buffers()[2]
        digits = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]] if data is not None else None
        if digits is not None and bool((np.diff(offsets) == 1).all()) and bool(((digits >= 48) & (digits <= 57)).all()):
            out[pos : pos + len(chunk)] = digits - 48  # every grade one digit (the usual 0-3): read as they are
            pos += len(chunk)
            continue
        text = _fixed_width([chunk])
        if text is None:
            return None
        values, plain = parse_plain_integers(text)
        if not plain.all():
            return None
        out[pos : pos + len(values)] = values
        pos += len(values)
    return out


def _drain(arrays: list, source: type, dtype: type) -> np.ndarray:
    """The values of fixed-width pyarrow arrays (their buffer of ``source`` items) as one numpy
    array of ``dtype``; the list is emptied as it is copied, so each array's memory goes back at once."""
    out: np.ndarray = np.empty(sum(len(a) for a in arrays), dtype=dtype)
    pos = freed = 0
    while arrays:
        arr = arrays.pop(0)
        out[pos : pos + len(arr)] = np.frombuffer(arr.buffers()[1], dtype=source)[arr.offset : arr.offset + len(arr)]
        pos += len(arr)
        freed += arr.nbytes
        del arr
        if freed > TRIM_BYTES:
            trim_heap()
            freed = 0
    return out


def _utf8(arr) -> bool:
    """Whether a binary array's bytes are UTF-8: all ASCII (one scan of the data buffer, no copy),
    or else a validating cast (whose copy is dropped at once)."""
    import pyarrow as pa

    data = arr.buffers()[2]
    buf = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    if not any((buf[i : i + (1 << 22)] >= 0x80).any() for i in range(0, len(buf), 1 << 22)):  # 4 MB at a time
        return True
    try:
        arr.cast(pa.string(), memory_pool=pa.system_memory_pool())
    except pa.ArrowInvalid:
        return False
    return True


def _fixed_width(chunks: list) -> np.ndarray | None:
    """A pyarrow binary column (its list of chunks, emptied as they are copied, so each chunk's
    memory goes back at once) as one zero-padded ``S`` array, through the offsets (no Python
    objects, no joining copy); None when an id is empty, too long or not UTF-8."""
    longest, total = 1, 0
    for chunk in chunks:  # first the width, from the offsets alone
        offsets = _offsets(chunk)
        if len(chunk):
            lengths = offsets[1:] - offsets[:-1]
            if int(lengths.max()) > MAX_FIELD_BYTES or int(lengths.min()) == 0 or not _utf8(chunk):
                return None
            longest = max(longest, int(lengths.max()))
            total += len(chunk)
            del lengths
    out = np.zeros(total, dtype=f"S{round8(longest)}")  # (calloc: its pages are taken as they are written)
    pos = freed = 0
    while chunks:
        chunk = chunks.pop(0)
        offsets, data_buf = _offsets(chunk), chunk.buffers()[2]
        buf = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        gather(buf, offsets[:-1], offsets[1:], out=out[pos : pos + len(chunk)])
        pos += len(chunk)
        freed += chunk.nbytes
        del chunk, offsets, data_buf, buf
        if freed > TRIM_BYTES:  # the copied chunks' pages go back as the output's are taken
            trim_heap()
            freed = 0
    return out


def _offsets(chunk) -> np.ndarray:
    return np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
