"""Pydantic's account of a bad ``ragassay.toml``, said in the file's words: one error, the first a
reader would meet, as ``ragassay.toml:LINE: key: why``.

Pydantic names where a value went wrong by its location (``("gate", "min", 0)``); the line is found
from that location (``toml_file.line_at``), and the words from the ``Says`` declared beside the key in
``sections``, or from the validator that refused the value. A key that is not declared is named with
the table's known keys and, when one is spelt nearly the same, that one as the likely meaning."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ...errors import InputError
from .sections import ProjectFile, Says, Section
from .toml_file import line_at

TABLE_ERRORS = {"model_type", "dict_type"}
RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def first_error(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error a reader meets first: an unknown key outside the tables, then a table that is not one,
    then the tables in the order they are checked, within a table an unknown key before a bad value."""
    order = list(ProjectFile.model_fields)

    def rank(indexed: tuple[int, ErrorDetails]) -> tuple[int, int, int, int]:
        at, error = indexed
        loc, kind = error["loc"], error["type"]
        if len(loc) == 1 and kind == "extra_forbidden":
            return (0, 0, 0, at)
        if len(loc) == 1 and kind in TABLE_ERRORS:
            return (1, 0, 0, at)
        field = order.index(loc[0]) if loc and loc[0] in order else len(order)
        return (2, field, 0 if kind == "extra_forbidden" else 1, at)

    return min(enumerate(errors), key=rank)[1]


def said(error: ValidationError, path: Path) -> InputError:
    """``error`` as the one message a reader of the file gets: the key, why, and the key's line."""
    first = first_error(error.errors())
    key, why = explain(first)
    return InputError(f"{key}: {why}", path, line_at(path, first["loc"]))


def explain(error: ErrorDetails) -> tuple[str, str]:
    """The key an error names and what it says of it."""
    kind, value = error["type"], error["input"]
    where = walk(error["loc"])
    key = where.entry or where.key
    if kind == "value_error":  # a validator's own words
        return key, str((error.get("ctx") or {}).get("error", error["msg"]))
    if kind == "extra_forbidden":
        return key, where.table.unknown_key() + close_key(key, where.table)
    if where.says is None:  # (every key declares its words: this is one the models forgot)
        return key, error["msg"]
    words = where.says.why
    if kind in RANGE_ERRORS and where.says.range is not None:
        words = where.says.range
    elif where.in_list and where.says.item is not None:
        words = where.says.item
    return key, words.format(value=value, key=key)


@dataclass
class Where:
    """Where an error lies in the models: the table (``Section``) its key belongs to, the words
    declared for the key, the key, the entry that names errors inside it (a retriever's name), and
    whether it is about an item of a list."""

    table: type[Section] = ProjectFile
    says: Says | None = None
    key: str = ""
    entry: str | None = None
    in_list: bool = False


def walk(loc: tuple[int | str, ...]) -> Where:
    """Follow ``loc`` down the models' types, from the whole file to the value that went wrong."""
    where = Where()
    node: Any = ProjectFile
    for part in loc:
        if isinstance(part, str):
            where.key = part
        node = _step(node, part, where)
        if node is None:
            break
    return where


def _step(node: Any, part: int | str, where: Where) -> Any:
    """The type one step of a location leads to from ``node`` (a table's key, a dict's key or a list's
    index), noting on ``where`` what that step says; None where the types end (an undeclared key)."""
    says: Says | None = None
    if isinstance(node, type) and issubclass(node, Section):
        where.table = node
        field = node.model_fields.get(part) if isinstance(part, str) else None
        if field is None:  # a key the table does not declare
            return None
        where.says = _says(field.metadata) or where.says
        node, says = _unwrap(field.annotation)
    elif get_origin(node) is dict and isinstance(part, str):
        node, says = _unwrap(get_args(node)[1])
        if isinstance(node, type) and issubclass(node, Section) and node.NAMED_BY_ENTRY:
            where.entry = part
    elif get_origin(node) is list and isinstance(part, int):
        node, says = _unwrap(get_args(node)[0])
        where.in_list = True
    else:
        return None
    where.says = says or where.says
    return node


def _says(metadata: Iterable[Any]) -> Says | None:
    return next((m for m in metadata if isinstance(m, Says)), None)


def _unwrap(annotation: Any) -> tuple[Any, Says | None]:
    """A type without its ``Annotated`` layers and ``| None``, and the ``Says`` those layers declared."""
    says = None
    while True:
        if get_origin(annotation) is Annotated:
            inner, *metadata = get_args(annotation)
            says = _says(metadata) or says
            annotation = inner
        elif get_origin(annotation) in (Union, UnionType):
            rest = [a for a in get_args(annotation) if a is not type(None)]
            if len(rest) != 1:
                return annotation, says
            annotation = rest[0]
        else:
            return annotation, says


def close_key(key: str, table: type[Section]) -> str:
    """``; did you mean 'depth'?`` for a key spelt nearly as a known one, else nothing."""
    close = difflib.get_close_matches(key, list(table.model_fields), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""
