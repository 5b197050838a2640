"""The samples of a peer's file of answers, test cases, goldens or a test set: JSON Lines, a JSON
array, a LlamaIndex dataset or a CSV file with a header, each row with the line where it starts.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..lines import iter_jsonl, read_bytes_checked
from .json_documents import json_document
from .sample_fields import PIPE_LISTS, QUESTION_FIELDS, ROW_LISTS, PeerRow, answer_fields, peer_fields


def sample_rows(path: str | Path, data: bytes | None = None) -> list[PeerRow]:
    """The samples of a file of answers, test cases, goldens or a test set: JSON Lines, a JSON array,
    a LlamaIndex dataset (``{"examples": [...]}``) or a CSV file with a header. Each row's fields are
    read as its tool means them (see the module); nothing is renamed to ragassay's names yet."""
    if data is None:
        data = read_bytes_checked(path)
    head = data.lstrip()[:1]
    if head == b"[":
        return [_row(r) for r in _array_rows(data, path, "element")]
    if head == b"{":
        document = json_document(data)
        if document is not None:
            return _object_rows(document, data, path)
        return [
            PeerRow(no, no, f"line {no}", peer_fields(obj, path, no, "jsonl")) for no, obj in iter_jsonl(data, path)
        ]
    return _csv_rows(data, path)


def answer_rows(path: str | Path, problems: Any = None) -> list[tuple[int, dict[str, Any]]]:
    """Answers to check as (line, fields renamed to ragassay's with the id rule applied), from any file
    :func:`sample_rows` reads. With ``problems`` (a :class:`~ragassay.data.line_problems.LineProblems`)
    a bad row is kept there and left out, so every bad row is said; else the first raises."""
    rows = sample_rows(path)
    if not rows:
        raise InputError("no answers in file", path)
    out = []
    for r in rows:
        fields = answer_fields(r.fields, r.position)
        try:
            single_turn(fields, r, path)
            if "question" not in fields:
                raise InputError(
                    f"{r.message_prefix}no question (a field named question, user_input, input or query; "
                    f"it has {', '.join(sorted(r.fields)) or 'none'})",
                    path,
                    r.line,
                )
        except InputError as e:
            if problems is None:
                raise
            problems.add_error(e)
            continue
        out.append((r.line, fields))
    return out


def single_turn(fields: Mapping[str, Any], row: PeerRow, path: str | Path) -> None:
    """Refuse, by name, a conversation: RAGAS's MultiTurnSample (``user_input`` a list of messages) or
    DeepEval's ConversationalGolden (``scenario``, ``turns``). ragassay reads single-turn samples."""
    if isinstance(fields.get("question"), list) or "scenario" in fields and "question" not in fields:
        raise InputError(
            f"{row.message_prefix}a multi-turn sample (a conversation: user_input as a list of messages, "
            "or DeepEval's scenario and turns); ragassay reads single-turn samples",
            path,
            row.line,
        )


def _row(item: tuple[int, int, dict[str, Any], str | Path]) -> PeerRow:
    line, n, obj, path = item
    return PeerRow(line, n, f"element {n}", peer_fields(obj, path, line, "json"))


def _object_rows(document: dict, data: bytes, path: str | Path) -> list[PeerRow]:
    for key in ROW_LISTS:
        if isinstance(document.get(key), list):
            return [_row(r) for r in _array_rows(data, path, "element", key)]
    if "queries" in document and isinstance(document["queries"], dict):
        raise InputError(
            "a LlamaIndex dataset of queries (queries, corpus, relevant_docs or responses): it holds no "
            "answers to check: give it where queries are read (judge, retrieve, generate's sets); "
            "its relevant_docs are qrels for evaluate",
            path,
        )
    raise InputError(
        "a JSON object, not a list of samples: expected JSON Lines (one sample a line), a JSON array of "
        'samples, or a LlamaIndex dataset ({"examples": [...]})',
        path,
        1,
    )


def _array_rows(
    data: bytes, path: str | Path, what: str, key: str | None = None
) -> Iterator[tuple[int, int, dict[str, Any], str | Path]]:
    """(line, element number, object, path) of each element of a JSON array (or of the array under
    ``key`` in a JSON object), each element's line found as it is parsed."""
    text = data.decode("utf-8")
    decoder = json.JSONDecoder()
    if key is not None:
        document = json.loads(text)
        start = _find_key_array(text, key)
        if start is None:  # (the array is there: json.loads found it; its offset alone is unknown)
            for n, obj in enumerate(document[key], start=1):
                yield 1, n, _object(obj, path, 1, n, what), path
            return
        at = start
    else:
        at = len(text) - len(text.lstrip())
    at += 1  # past "["
    n = 0
    line, counted = 1, 0  # the line of offset ``counted``: lines are counted once, forward

    def line_of(offset: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, offset)
        counted = offset
        return line

    while True:
        at = _skip_space(text, at)
        if at < len(text) and text[at] == "]" and n == 0:
            return
        try:
            obj, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON ({e.msg})", path, line_of(max(e.pos, counted))) from None
        n += 1
        start = line_of(at)
        yield start, n, _object(obj, path, start, n, what), path
        at = _skip_space(text, end)
        if at < len(text) and text[at] == ",":
            at += 1
            continue
        if at < len(text) and text[at] == "]":
            rest = _skip_space(text, at + 1)
            if key is None and rest < len(text):
                raise InputError("not valid JSON (more after the array's closing ']')", path, line_of(rest))
            return
        raise InputError("not valid JSON (expected ',' or ']' after an element)", path, line_of(at))


def _find_key_array(text: str, key: str) -> int | None:
    i = text.find(f'"{key}"')
    if i < 0:
        return None
    j = text.find("[", i)
    return j if j >= 0 and not text[i + len(key) + 2 : j].strip(" \t\r\n:") else None


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _object(obj: Any, path: str | Path, line: int, n: int, what: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise InputError(f"{what} {n}: expected a JSON object (one sample), got {type(obj).__name__}", path, line)
    return obj


def _csv_rows(data: bytes, path: str | Path) -> list[PeerRow]:
    """The rows of a CSV file with a header (RAGAS's ``to_csv``, DeepEval's ``save_as('csv')``)."""
    text = data.decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        header = []
    if len(header) < 2 or not any(h.strip() in QUESTION_FIELDS for h in header):
        raise InputError(
            "cannot tell the format: expected JSON Lines, a JSON array of samples, or a CSV file whose "
            f"header names a question column ({', '.join(QUESTION_FIELDS)})",
            path,
            1,
        )
    names = [h.strip() for h in header]
    out = []
    previous = reader.line_num
    try:
        for n, cells in enumerate(reader, start=1):
            line = previous + 1
            previous = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(names):
                raise InputError(f"row {n}: {len(cells)} cells under a header of {len(names)}", path, line)
            # an empty cell: the field was None, or (DeepEval's joined lists) an empty list, as DeepEval reads it
            # (a column without a name is pandas' index, written by DataFrame.to_csv: not a field)
            obj = {k: v for k, v in zip(names, cells) if k and (v != "" or k in PIPE_LISTS)}
            out.append(PeerRow(line, n, f"row {n}", peer_fields(obj, path, line, "csv")))
    except csv.Error as e:
        raise InputError(f"not valid CSV ({e})", path, reader.line_num) from None
    return out
