"""Qrels and runs held as another library's Python objects: ranx's ``Qrels`` and ``Run``, and
ir_measures' ``Qrel`` and ``ScoredDoc`` tuples.
"""

from __future__ import annotations

from typing import Any

from .table_columns import TableColumns


def ranx_columns(x: Any) -> tuple[str, TableColumns, str | None] | None:
    """A ranx ``Qrels`` or ``Run`` as (``qrels`` or ``run``, its columns, its name); None for anything else."""
    kind = type(x).__name__
    if type(x).__module__.startswith("ranx") and kind in ("Qrels", "Run") and hasattr(x, "to_dict"):
        return kind.lower(), TableColumns.of_nested(x.to_dict()), getattr(x, "name", None)
    return None


def tuple_columns(x: Any, what: str) -> TableColumns | None:
    """ir_measures' ``Qrel(query_id, doc_id, relevance)`` / ``ScoredDoc(query_id, doc_id, score)``
    tuples (any list of objects with those attributes); None when ``x`` is not such a list."""
    if not isinstance(x, (list, tuple)) or not x:
        return None
    value = "relevance" if what == "qrels" else "score"
    if not all(hasattr(t, "query_id") and hasattr(t, "doc_id") and hasattr(t, value) for t in x):
        return None
    return TableColumns([str(t.query_id) for t in x], [str(t.doc_id) for t in x], [getattr(t, value) for t in x])
