"""Read a JSON Lines file of ragassay's records into their models, knowing its kind from its lines.

A record names its kind in ``record`` (``judgment@1``), so one line is enough to know a file: a
questions or rejects file of a single record is read as what it is. Files written before records
carried ``record`` are recognised by the fields their kind requires (:data:`LEGACY_FIELDS`), the
only place where a kind is told from keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from .records import RECORD_FIELD, RECORDS, WrittenRecord, record_model

# the fields that identify each kind in a file written before records carried their kind, most
# specific first (a judgment has a query id and a grade, a question an answer and a difficulty)
LEGACY_FIELDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("judgment", frozenset({"query_id", "chunk_id", "grade", "status"})),
    ("coverage", frozenset({"query_id", "coverage", "status"})),
    ("check", frozenset({"id", "label", "status"})),
    ("question", frozenset({"id", "question", "answer", "difficulty", "chunk_ids"})),
    ("reject", frozenset({"reason"})),
)


def legacy_kind(obj: dict[str, Any]) -> str | None:
    """The kind of a record without ``record``, from the fields its kind requires; None: no kind's."""
    fields = obj.keys()
    return next((kind for kind, need in LEGACY_FIELDS if need <= fields), None)


def parse_record(obj: dict[str, Any], path: str | Path | None = None, line: int | None = None,
                 kind: str | None = None) -> WrittenRecord:
    """One line as its model: by its own ``record``, else as ``kind`` (a legacy line of a file whose
    kind is known). A line that breaks its kind's contract is an error naming file and line."""
    try:
        model = record_model(obj[RECORD_FIELD]) if RECORD_FIELD in obj else RECORDS[kind or ""]
    except (ValueError, KeyError):
        if RECORD_FIELD in obj:
            raise InputError(f"{RECORD_FIELD!r} is {obj[RECORD_FIELD]!r}, not a kind of record ragassay writes "
                             f"({', '.join(RECORDS)})", path, line) from None
        raise InputError(f"not a ragassay record (no {RECORD_FIELD!r} field, and not the fields of any kind: "
                         f"{', '.join(RECORDS)})", path, line) from None
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        from .io import validation_message
        raise InputError(f"breaks the {model.KIND} record contract: {validation_message(e.errors()[0])}", path,
                         line) from None


def read_record_file(path: str | Path, lines: Iterable[tuple[int, dict[str, Any]]] | None = None,
                     kinds: Iterable[str] | None = None) -> tuple[str, list[WrittenRecord]]:
    """The kind of a records file and its records, each parsed into that kind's model. Every line
    must be of one kind (the first line's); ``kinds`` limits which are accepted. ``lines`` are the
    file's parsed lines when the caller has read them already."""
    from .io import iter_jsonl
    allowed = tuple(kinds) if kinds is not None else tuple(RECORDS)
    kind: str | None = None
    first_line = 0
    out: list[WrittenRecord] = []
    for no, obj in (lines if lines is not None else iter_jsonl(path)):
        record = parse_record(obj, path, no, kind or legacy_kind(obj))
        if kind is None:
            if record.KIND not in allowed:
                raise InputError(f"a file of {record.KIND} records; this reads {', '.join(allowed)} records", path, no)
            kind, first_line = record.KIND, no
        elif record.KIND != kind:
            raise InputError(f"a {record.KIND} record in a file of {kind} records (line {first_line}): one kind "
                             "per file", path, no)
        out.append(record)
    if kind is None:
        raise InputError("no records in file", path)
    return kind, out


__all__ = ["LEGACY_FIELDS", "legacy_kind", "parse_record", "read_record_file"]
