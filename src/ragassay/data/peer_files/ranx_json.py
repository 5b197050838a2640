"""ranx's ``{query: {doc: value}}`` JSON saves (and LlamaIndex's ``relevant_docs``) read as columns:
by the fast reader when no key is given twice, otherwise exactly, every pair and grade as written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..column_numbers import INT_LIMIT
from ..lines import WrittenFloat
from .json_documents import whole_json
from .table_columns import TableColumns, score_said


def json_table_columns(data: bytes, path: str | Path, what: str) -> TableColumns | None:
    """The columns of a qrels or run saved as one JSON document: ranx's ``{query: {doc: value}}``
    (``Qrels.save``/``Run.save`` with kind "json") or, for qrels, LlamaIndex's
    EmbeddingQAFinetuneDataset (its ``relevant_docs``, each grade 1). None for anything else (JSON
    Lines: its reader takes it)."""
    document = _one_json_object(data)
    if document is None:
        return None
    if not document:
        raise InputError(
            f"an empty JSON object: no {'judgments' if what == 'qrels' else 'results'} (expected {_ranx_shape(what)})",
            path,
            1,
        )
    if isinstance(document.get("relevant_docs"), dict) and "queries" in document:
        return _relevant_docs_columns(document, path, what)
    return _nested_columns(document, data, path, what)


def _one_json_object(data: bytes) -> dict[str, Any] | None:
    """The file as one JSON object, or None when it is not one: it does not start with ``{``, its first
    line names ragassay's JSON Lines fields, or it does not parse as a whole."""
    if data.lstrip()[:1] != b"{":
        return None
    first = data.lstrip().split(b"\n", 1)[0]
    if any(f'"{k}"'.encode() in first for k in ("query_id", "qid", "chunk_id", "doc_id", "docid")):
        return None  # ragassay's JSON Lines
    document = whole_json(data)
    return document if isinstance(document, dict) else None


def _relevant_docs_columns(document: dict[str, Any], path: str | Path, what: str) -> TableColumns:
    """LlamaIndex's ``relevant_docs`` as qrels, each listed document of grade 1 (never a run)."""
    if what != "qrels":
        raise InputError(
            "a LlamaIndex dataset (queries, corpus, relevant_docs): its relevant_docs are qrels, not a run", path
        )
    bad = next((q for q, docs in document["relevant_docs"].items() if not isinstance(docs, list)), None)
    if bad is not None:
        raise InputError(f"relevant_docs of query {bad!r} must be a list of ids", path)
    # (row by row, not a dict: a document listed twice for a query is named, not collapsed)
    return TableColumns.of_rows((q, d, 1) for q, docs in document["relevant_docs"].items() for d in docs)


def _nested_columns(document: dict[str, Any], data: bytes, path: str | Path, what: str) -> TableColumns:
    """ranx's ``{query: {doc: value}}`` as columns: as parsed when no key can have been given twice and
    no grade was written with a fraction, else by the exact reader."""
    bad = next((q for q, v in document.items() if not isinstance(v, dict)), None)
    if bad is not None:
        raise InputError(f"expected {_ranx_shape(what)}; found {bad!r}: {_json_kind(document[bad])}", path)
    floats = what == "qrels" and any(type(v) is float for inner in document.values() for v in inner.values())
    pairs = len(document) + sum(map(len, document.values()))
    if not floats and (data.count(b":") == pairs or len(_KEY.findall(data)) == pairs):
        # every pair of an object has one ':' outside strings: as many ':' as pairs read means no key
        # was given twice (ids holding ':' are told apart by counting the keys as written, with a
        # regex about 6x cheaper than the exact reader; a key given twice sends the file to it)
        return TableColumns.of_nested(document)
    return _exact_ranx_columns(data, path, what)


# a JSON string followed by ':' (a key; every string of a ranx file is one), escapes included
_KEY = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"\s*:')


def _ranx_shape(what: str) -> str:
    value = "grade" if what == "qrels" else "score"
    return (
        f'ranx\'s {{query: {{document: {value}}}}}, e.g. {{"q1": {{"d1": {1 if what == "qrels" else 0.5}}}}}, '
        f"or JSON Lines of query_id, chunk_id, {value}"
    )


def _json_kind(value: Any) -> str:
    kind = {
        list: "a list",
        str: "a string",
        bool: "true/false",
        type(None): "null",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)
    return f"{kind} ({json.dumps(value, ensure_ascii=False, default=str)[:60]})"


class _Pairs(list):
    """A JSON object as the (key, value) pairs written, a key given twice kept twice."""


def _exact_ranx_columns(data: bytes, path: str | Path, what: str) -> TableColumns:
    """ranx's ``{query: {doc: value}}`` read by the standard library keeping what the fast reader
    loses: a key given twice, and (qrels) each number as written, so ``1e2`` is not a grade of 100."""
    try:
        document = json.loads(data, object_pairs_hook=_Pairs, parse_float=WrittenFloat if what == "qrels" else None)
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"not valid JSON ({e})", path) from None
    queries: list[Any] = []
    docs: list[Any] = []
    values: list[Any] = []
    seen: set[str] = set()
    for q, inner in document:
        if q in seen:
            raise InputError(
                f"query {q!r} is given twice in this JSON object (JSON keeps only the last): "
                f"keep one {q!r} holding all its documents{_lines_of(data, q)}",
                path,
            )
        seen.add(q)
        if what == "qrels" and len({d for d, _ in inner}) < len(inner):
            twice = next(d for n, (d, _) in enumerate(inner) if any(d == e for e, _ in inner[:n]))
            raise InputError(
                f"document {twice!r} is judged twice for query {q!r}{_lines_of(data, twice, q)}; "
                "keep one judgment per query and document (JSON keeps only the last)",
                path,
            )
        for d, v in inner:
            queries.append(q)
            docs.append(d)
            values.append(_grade_as_written(v, q, d, path) if what == "qrels" else v)
    return TableColumns(queries, docs, values, empty=[q for q, inner in document if not inner])


def _grade_as_written(value: Any, q: str, d: str, path: str | Path) -> Any:
    """A grade written ``3.0`` is 3; ``1e2`` or ``2.5`` is no integer as written (as in the JSONL reader)."""
    if not isinstance(value, WrittenFloat):
        return value
    m = re.fullmatch(r"([+-]?\d{1,18})(?:\.0*)?", value.text)
    if m is None:
        raise InputError(
            f"query {q!r}, document {d!r}: grade must be an integer within ±{INT_LIMIT}, "
            f"got {value.text}{score_said(float(value))}",
            path,
        )
    return int(m.group(1))


def _lines_of(data: bytes, key: str, within: str | None = None) -> str:
    """`` (lines A and B)``: where a key is written as a key (after the object of key ``within``
    starts), when that is cheap to find; else nothing."""
    start = 0
    if within is not None:
        outer = re.search(re.escape(json.dumps(within, ensure_ascii=False).encode()) + rb"\s*:\s*\{", data)
        if outer is None:
            return ""
        start = outer.end()
    needle = json.dumps(key, ensure_ascii=False).encode()
    lines = [
        data.count(b"\n", 0, m.start()) + 1 for m in re.compile(re.escape(needle) + rb"\s*:").finditer(data, start)
    ][:2]
    return f" (lines {lines[0]} and {lines[1]})" if len(lines) == 2 else ""
