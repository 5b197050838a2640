"""ranx's binary saves: Parquet, read by pyarrow when it is installed; LZ4, refused with the reason."""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from .table_columns import TableColumns, named_columns

PARQUET_MAGIC = b"PAR1"
LZ4_MAGIC = b"\x04\x22\x4d\x18"


def binary_table_kind(path: str | Path) -> str | None:
    """``parquet`` or ``lz4`` when the file is one of those (ranx's kinds), else None."""
    if str(path) == "-":
        return None
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError:
        return None  # the text reader says what is wrong
    return "parquet" if magic == PARQUET_MAGIC else "lz4" if magic == LZ4_MAGIC else None


def binary_table_columns(path: str | Path, kind: str, what: str) -> TableColumns:
    """The columns of a Parquet file (ranx's ``kind="parquet"``: q_id, doc_id, score; or ir_measures'
    column names). An LZ4 file (ranx's run ``kind="lz4"``) is refused, saying why."""
    if kind == "lz4":
        raise InputError(
            f"an LZ4-compressed file (ranx's kind='lz4'): ragassay does not read LZ4; save the {what} "
            "with kind='json', 'trec' or 'parquet', or decompress it first",
            path,
        )
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"a Parquet {what} file: reading it needs pyarrow (pip install pyarrow)", path) from None
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow's own errors have no common base but Exception
        raise InputError(f"a Parquet file that cannot be read ({e})", path) from None
    return named_columns({name: table.column(name).to_pylist() for name in table.column_names}, what, path)
