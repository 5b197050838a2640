"""Qrels and runs that other tools hold as (query, document, value) columns, checked and made into
ragassay's tables: each bad id or value is one error naming its query and document (or its row).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from ..column_numbers import INT_LIMIT
from ..lines import check_id
from ..tables import Qrels, Run, encode_ids
from .sample_fields import digits


@dataclass
class TableColumns:
    """(query, document, value) rows as three columns: how a qrels or run from another tool is held
    before it becomes a :class:`~ragassay.data.tables.Qrels` or :class:`~ragassay.data.tables.Run`."""

    queries: list[Any]
    docs: list[Any]
    values: list[Any]
    table: bool = False  # rows of a table (Parquet, a DataFrame): a bad id is named by its row
    empty: list[Any] = field(default_factory=list)  # queries given with no row ({"q1": {}}: a run's empty ranking)

    @classmethod
    def of_rows(cls, rows: Iterable[tuple[Any, Any, Any]]) -> TableColumns:
        rows = list(rows)
        return cls([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

    @classmethod
    def of_nested(cls, d: Mapping[Any, Mapping[Any, Any]]) -> TableColumns:
        """From ``{query: {doc: value}}`` (ranx's and pytrec_eval's dicts)."""
        queries: list[Any] = []
        docs: list[Any] = []
        values: list[Any] = []
        for q, inner in d.items():
            if not isinstance(inner, Mapping):
                raise InputError(f"query {q!r}: expected an object of document: value, got {type(inner).__name__}")
            queries += [q] * len(inner)
            docs += list(inner)
            values += list(inner.values())
        return cls(queries, docs, values, empty=[q for q, inner in d.items() if not inner])


def qrels_from_columns(cols: TableColumns, path: str | Path | None = None) -> Any:
    """Qrels from columns whose grades are integers (3.0 is 3); any other value, an id that is not a
    string or that TREC files cannot hold, or a pair given twice is one error naming it."""
    queries, qidx = _codes(_checked_ids(cols.queries, "query id", path, cols.table))
    grades = _numbers(cols, path, "grade")
    if not (np.floor(grades) == grades).all() or (np.abs(grades) > INT_LIMIT).any():
        i = int(np.flatnonzero((np.floor(grades) != grades) | (np.abs(grades) > INT_LIMIT))[0])
        raise InputError(
            f"query {cols.queries[i]!r}, document {cols.docs[i]!r}: grade must be an integer within "
            f"±{INT_LIMIT}, got {_shown(cols.values[i])}{score_said(grades[i])}",
            path,
        )
    docs = encode_ids(_checked_ids(cols.docs, "document id", path, cols.table))
    out = Qrels(queries, qidx, docs, grades.astype(np.int64), source=None if path is None else str(path))
    if not len(out.grades):
        raise InputError("no judgments", path)
    out.check_unique()
    return out


def run_from_columns(cols: TableColumns, name: str, path: str | Path | None = None, dedupe: bool = False) -> Any:
    """A run from columns whose scores are finite numbers; anything else is one error naming it."""
    queries, qidx = _codes(_checked_ids(cols.queries, "query id", path, cols.table))
    scores = _numbers(cols, path, "score")
    if not np.isfinite(scores).all():
        i = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise InputError(
            f"query {cols.queries[i]!r}, document {cols.docs[i]!r}: score must be a finite number, "
            f"got {_shown(cols.values[i])}",
            path,
        )
    run = Run(
        queries,
        qidx,
        encode_ids(_checked_ids(cols.docs, "document id", path, cols.table)),
        scores,
        name,
        None if path is None else str(path),
    )
    if not len(run.scores):
        raise InputError("no results", path)
    known = set(run.queries)  # a query given with an empty ranking stays a query of the run (it scores 0)
    run.queries = run.queries + [q for q in _checked_ids(cols.empty, "query id", path) if q not in known]
    return run.deduplicated() if dedupe else run.checked()


_SPACE = re.compile(r"\s")


def _checked_ids(ids: list[Any], what: str, path: str | Path | None, table: bool = False) -> list[str]:
    """The ids as strings, checked in one pass when all are plain (a JSON integer is its digits); the
    first bad one is named by :func:`~ragassay.data.io.check_id` (and, in a ``table``, its row from 1)."""
    kinds = set(map(type, ids))
    if kinds <= {str} and all(ids) and not _SPACE.search("\x00".join(ids)):
        return ids
    out = []
    for n, i in enumerate(ids, start=1):
        try:
            out.append(check_id(_plain(i), what, path, None))
        except InputError as e:
            if not table:
                raise
            raise InputError(f"row {n}: {e.message}", path) from None
    return out


def _codes(ids: list[str]) -> tuple[list[str], np.ndarray]:
    index = {q: n for n, q in enumerate(dict.fromkeys(ids))}
    return list(index), np.fromiter((index[q] for q in ids), dtype=np.int64, count=len(ids))


def _numbers(cols: TableColumns, path: str | Path | None, what: str) -> np.ndarray:
    """The values as floats when every one is a number (not a boolean); else an error naming the first
    that is not."""
    kinds = set(map(type, cols.values))
    if all(issubclass(k, (int, float, np.integer, np.floating)) and not issubclass(k, (bool, np.bool_)) for k in kinds):
        return np.array(cols.values, dtype=np.float64)
    for q, d, v in zip(cols.queries, cols.docs, cols.values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            article = "an integer" if what == "grade" else "a finite number"
            raise InputError(f"query {q!r}, document {d!r}: {what} must be {article}, got {_shown(v)}", path)
    return np.array(cols.values, dtype=np.float64)


def _shown(v: Any) -> str:
    v = _plain(v)
    return json.dumps(v) if isinstance(v, (bool, str, type(None))) else repr(v)


def _plain(value: Any) -> Any:
    """A numpy value (ranx's and pandas' values) as the Python value it holds."""
    return value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value


QUERY_COLUMNS = ("query_id", "qid", "q_id", "query-id")
DOC_COLUMNS = ("chunk_id", "doc_id", "docid", "corpus-id", "corpus_id")
GRADE_COLUMNS = ("grade", "relevance", "label", "score")
SCORE_COLUMNS = ("score",)


def named_columns(columns: Mapping[str, list[Any]], what: str, path: str | Path | None = None) -> TableColumns:
    """The query, document and value columns among named ones: ragassay's, trec_eval's, ranx's (q_id,
    doc_id, score) or ir_measures' (query_id, doc_id, relevance or score) names, any case. Ids are
    taken as their text (an integer column's 7 is "7")."""
    cols = {str(c).lower(): c for c in columns}

    def pick(names: tuple[str, ...]) -> Any:
        for n in names:
            if n in cols:
                return cols[n]
        raise InputError(
            f"a {what} table needs a column named one of {', '.join(names)} (it has {', '.join(map(str, columns))})",
            path,
        )

    q, d = pick(QUERY_COLUMNS), pick(DOC_COLUMNS)
    v = pick(GRADE_COLUMNS if what == "qrels" else SCORE_COLUMNS)
    return TableColumns(_texts(columns[q]), _texts(columns[d]), list(columns[v]), table=True)


def _texts(values: list[Any]) -> list[Any]:
    """Ids as text: an integer is its digits; a null, a fraction or true/false is kept for the check
    to refuse (its text, "None" or "3.5", would be an id nobody wrote)."""
    return values if set(map(type, values)) <= {str} else [digits(_plain(x)) for x in values]


def score_said(value: float) -> str:
    """The evidence a value with a fraction gives: it is a run's score, so the file looks like a run."""
    if value != value or abs(value) == float("inf") or float(value).is_integer():
        return ""
    return " (a value with a fraction is a score: the file looks like a run, not qrels; give it as a RUN)"
