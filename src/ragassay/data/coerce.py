"""Qrels and runs from whatever a Python caller holds: ragassay's tables, dicts, DataFrames, ranx
objects, ir_measures' tuples or a file path; and records as a DataFrame (pandas is optional).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .peer_files.python_objects import ranx_columns, tuple_columns
from .peer_files.table_columns import named_columns, qrels_from_columns, run_from_columns
from .qrels_files import read_qrels
from .run_files import read_run
from .tables import Qrels, Run


def _frame_columns(df: Any, kind: str) -> Any:
    """The query, document and value columns of a pandas DataFrame with ragassay's, trec_eval's, ranx's
    or ir_measures' column names (query_id/qid/q_id, chunk_id/doc_id/docid, grade/relevance or score)."""
    return named_columns({c: df[c].tolist() for c in df.columns}, kind)


def _is_frame(x: Any) -> bool:
    return hasattr(x, "columns") and hasattr(x, "iloc")


def coerce_qrels(q: Qrels | Mapping | str | Path | Any) -> Qrels:
    """Qrels from a Qrels, a ``{query: {doc: grade}}`` dict, a pandas DataFrame or a file path."""
    if isinstance(q, Qrels):
        return q
    if isinstance(q, Mapping):
        return Qrels.from_dict(q)
    ranx = ranx_columns(q)
    if ranx is not None and ranx[0] == "qrels":  # a ranx Qrels
        return qrels_from_columns(ranx[1])
    tuples = tuple_columns(q, "qrels")  # ir_measures' Qrel tuples
    if _is_frame(q) or tuples is not None:
        return qrels_from_columns(_frame_columns(q, "qrels") if tuples is None else tuples)
    return read_qrels(q)


def coerce_run(r: Run | Mapping | str | Path | Any, name: str | None = None) -> Run:
    """A Run from a Run, a ``{query: {doc: score}}`` dict, a pandas DataFrame or a file path."""
    if isinstance(r, Run):
        return r
    if isinstance(r, Mapping):
        return Run.from_dict(r, name or "run")
    ranx = ranx_columns(r)
    if ranx is not None and ranx[0] == "run":  # a ranx Run keeps its name
        return run_from_columns(ranx[1], name or ranx[2] or "run")
    tuples = tuple_columns(r, "run")  # ir_measures' ScoredDoc tuples
    if _is_frame(r) or tuples is not None:
        return run_from_columns(_frame_columns(r, "run") if tuples is None else tuples, name or "run")
    return read_run(r)


def to_dataframe(records: list[dict] | list[Any], columns: list[str] | None = None) -> Any:
    """A pandas DataFrame of records (pandas is optional: ``pip install 'ragassay[notebook]'``)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            "to_dataframe() needs pandas: pip install 'ragassay[notebook]' (or pip install pandas)"
        ) from None
    rows = [r.model_dump(mode="json") if hasattr(r, "model_dump") else r for r in records]
    return pd.DataFrame(rows, columns=columns)
