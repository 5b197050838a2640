"""Read a JSON Lines file of ragassay's records into their models, knowing its kind from its lines.

A record names its kind in ``record`` (``judgment@1``), so one line is enough to know a file: a
questions or rejects file of a single record is read as what it is. Files written before records
carried ``record`` are recognised by the fields their kind requires (:data:`LEGACY_FIELDS`), the
only place where a kind is told from keys.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError, UsageError
from .lines import iter_jsonl
from .record_validation import validation_message
from .records import RECORD_FIELD, RECORDS, WrittenRecord, parse_tag, record_model

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


def parse_record(
    obj: dict[str, Any], path: str | Path | None = None, line: int | None = None, kind: str | None = None
) -> WrittenRecord:
    """One line as its model: by its own ``record``, else as ``kind`` (a legacy line of a file whose
    kind is known). A line that breaks its kind's contract is an error naming file and line."""
    try:
        model = record_model(obj[RECORD_FIELD]) if RECORD_FIELD in obj else RECORDS[kind or ""]
    except (ValueError, KeyError):
        if RECORD_FIELD in obj:
            raise InputError(
                f"{RECORD_FIELD!r} is {obj[RECORD_FIELD]!r}, not a kind of record ragassay writes "
                f"({', '.join(RECORDS)})",
                path,
                line,
            ) from None
        raise InputError(
            f"not a ragassay record (no {RECORD_FIELD!r} field, and not the fields of any kind: {', '.join(RECORDS)})",
            path,
            line,
        ) from None
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        raise InputError(
            f"breaks the {model.KIND} record contract: {validation_message(e.errors()[0])}", path, line
        ) from None


def read_record_file(
    path: str | Path, lines: Iterable[tuple[int, dict[str, Any]]] | None = None, kinds: Iterable[str] | None = None
) -> tuple[str, list[WrittenRecord]]:
    """The kind of a records file and its records, each parsed into that kind's model. Every line
    must be of one kind (the first line's); ``kinds`` limits which are accepted. ``lines`` are the
    file's parsed lines when the caller has read them already."""
    allowed = tuple(kinds) if kinds is not None else tuple(RECORDS)
    kind: str | None = None
    first_line = 0
    out: list[WrittenRecord] = []
    for no, obj in lines if lines is not None else iter_jsonl(path):
        record = parse_record(obj, path, no, kind or legacy_kind(obj))
        if kind is None:
            if record.KIND not in allowed:
                raise InputError(f"a file of {record.KIND} records; this reads {', '.join(allowed)} records", path, no)
            kind, first_line = record.KIND, no
        elif record.KIND != kind:
            raise InputError(
                f"a {record.KIND} record in a file of {kind} records (line {first_line}): one kind per file", path, no
            )
        out.append(record)
    if kind is None:
        raise InputError("no records in file", path)
    return kind, out


def check_output_kind(path: str | Path, kind: str, journal: bool = False) -> None:
    """Refuse (a usage error) to write ``kind`` records into ``path`` when it exists and holds
    something else: records of another kind, JSON lines that are no ragassay records, or text that
    is not JSON Lines at all (qrels, a run). Its first record line tells (every line of a file is of
    its first line's kind), so only the head of the file is read. ``journal``: ``path`` is the
    journal of an unfinished run (said so in the message)."""
    held = file_holds(path, kind)
    if held is not None:
        where = f"{path} (the journal of an unfinished run)" if journal else str(path)
        raise UsageError(
            f"{where} holds {held}, not the {kind} records this command writes there: give "
            "another output file (or move that one away)"
        )


def file_holds(path: str | Path, kind: str) -> str | None:
    """What ``path`` holds, in words, when it is not ``kind`` records; None when it is missing, empty,
    of that kind, or when its first line is broken JSON (a line edited, or cut by a kill mid-write:
    the store names that line itself, or drops it from a journal)."""
    found = _first_text_line(Path(path))
    if found is None:
        return None
    no, line = found
    if not line.startswith(b"{"):
        return f"{_what_text(line)} (line {no} reads {_shown(line)})"
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None  # a line in the shape of a record, edited or cut: the store says which line
    if RECORD_FIELD in obj:
        try:
            theirs, _ = parse_tag(obj[RECORD_FIELD])
        except ValueError:
            theirs = None
        if theirs == kind:
            return None
        if theirs in RECORDS:
            return f"{theirs} records (line {no}: {RECORD_FIELD!r} is {obj[RECORD_FIELD]!r})"
        return f"records no ragassay writes (line {no}: {RECORD_FIELD!r} is {obj[RECORD_FIELD]!r})"
    theirs = legacy_kind(obj)
    if theirs == kind:
        return None  # written before records carried their kind
    if theirs is not None:
        return f"{theirs} records (line {no}, written before records named their kind)"
    fields = ", ".join(sorted(obj)[:8]) or "none"
    return f"JSON lines that are no ragassay records (line {no} has no {RECORD_FIELD!r} field; its fields: {fields})"


_HEAD_LIMIT = 64 << 20  # a first line longer than this is not looked for further: the store reads the file


def _first_text_line(path: Path) -> tuple[int, bytes] | None:
    """The number and bytes (stripped) of the first non-blank line of a file (gzip undone, a UTF-8
    byte-order mark dropped); None when there is none, or no file."""
    try:
        f = open(path, "rb")
    except OSError:
        return None  # missing (or unreadable: the store says so, naming the file)
    with f:
        try:
            stream = gzip.GzipFile(fileobj=f) if f.read(2) == b"\x1f\x8b" else f
            f.seek(0)
            no = 0
            for raw in _lines(stream):
                no += 1
                if no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                if raw.strip():
                    return no, raw.strip()
        except (OSError, EOFError, zlib.error):
            return None  # a broken gzip: the store says so, naming the file
    return None


def _lines(stream: Any) -> Any:
    read = 0
    while read < _HEAD_LIMIT:
        raw = stream.readline(_HEAD_LIMIT - read)
        if not raw:
            return
        read += len(raw)
        yield raw


def _what_text(line: bytes) -> str:
    """What a line that is not JSON seems to be, for the message: TREC qrels, a TREC run, or text."""
    fields = line.split()
    numeric = _number(fields[-1]) if fields else False
    if len(fields) == 4 and numeric and fields[-1].lstrip(b"-").isdigit():
        return "what looks like TREC qrels"
    if len(fields) >= 5 and fields[1].upper() == b"Q0" and _number(fields[4]):
        return "what looks like a TREC run"
    if len(fields) == 3 and numeric:
        return "what looks like qrels or a run in three columns"
    return "text that is not JSON Lines"


def _number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return repr(text if len(text) <= 60 else text[:60] + "...")


__all__ = ["LEGACY_FIELDS", "check_output_kind", "file_holds", "legacy_kind", "parse_record", "read_record_file"]
