"""Files the neighbouring tools save, read where their content belongs.

* Samples, test cases and goldens (RAGAS 0.4 ``EvaluationDataset``/``Testset``: ``to_jsonl``,
  ``to_csv``, ``to_list`` dumped as a JSON array; DeepEval 4 ``EvaluationDataset.save_as`` json /
  jsonl / csv and ``model_dump(by_alias=True)`` lines; LlamaIndex ``LabelledRagDataset.save_json``,
  ``QueryResponseDataset.save_json`` and ``EmbeddingQAFinetuneDataset.save_json``): answers for
  ``check``, queries for ``--queries``.
* Qrels and runs (ranx 0.3 ``Qrels.save``/``Run.save`` as json or parquet, ``Qrels``/``Run``
  objects, DataFrames with ranx's or ir_measures' column names, ir_measures' ``Qrel``/``ScoredDoc``
  tuples, LlamaIndex's ``relevant_docs``): for evaluate, compare and the Python API.

**One id rule** for a row that carries no id of its own (the peers' samples have none): the row's
``id`` (or ``query_id``, ``qid``, ``_id``) when it has one; else the ``id`` inside its metadata
(DeepEval's ``additional_metadata``, a test case's ``metadata``: where ragassay's own DeepEval export
keeps each question's id, so a round trip keeps it); else ``line-N``, N the row's position in the
file counted from 1 (a JSONL file: its line number; a JSON array: its element number; a CSV file: its
row number after the header). ``check`` and every queries reader use this rule, so answers and
queries read from the same test set meet by id.

**Lists inside one text cell** are read the way the peer reads its own file back: DeepEval joins
``context`` and ``retrieval_context`` with ``|`` in its CSV and JSONL files and splits them on ``|``
when it loads them (so a passage holding ``|`` comes back as two, in DeepEval and here);
RAGAS writes a list into its CSV as Python's text of it (``['a', 'b']``), read here as that literal
(RAGAS has no CSV loader; a ``|`` inside such a list stays in its passage).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .columns import INT_LIMIT
from .lines import WrittenFloat, check_id, iter_jsonl, parse_json_object, read_bytes_checked
from .tables import Qrels, Run, encode_ids

ID_FIELDS = ("id", "query_id", "qid", "_id")
METADATA_FIELDS = ("additional_metadata", "metadata")
QUESTION_FIELDS = ("question", "query", "text", "user_input", "input")

# DeepEval's camelCase spellings (model_dump(by_alias=True)) of the fields read here
CAMEL_FIELDS = {"actualOutput": "actual_output", "expectedOutput": "expected_output",
                "retrievalContext": "retrieval_context", "additionalMetadata": "additional_metadata",
                "retrievedContexts": "retrieved_contexts", "referenceContexts": "reference_contexts",
                "userInput": "user_input", "retrievedContextIds": "retrieved_context_ids",
                "referenceAnswer": "reference_answer"}
# the fields of a RAGAS sample, a DeepEval test case or golden and a LlamaIndex example, as ragassay names them
PEER_TO_OURS = {"user_input": "question", "input": "question", "query": "question",
                "actual_output": "response",
                "expected_output": "reference", "reference_answer": "reference",
                "retrieved_contexts": "contexts", "retrieval_context": "contexts",
                "retrieved_context_ids": "context_ids"}
# DeepEval joins these lists with "|" in its CSV and JSONL files, and splits them so when it loads them
PIPE_LISTS = frozenset({"context", "retrieval_context"})
# RAGAS writes these lists into its CSV as Python's text of the list
LITERAL_CELLS = frozenset({"retrieved_contexts", "reference_contexts", "retrieved_context_ids",
                           "reference_context_ids", "multi_responses", "rubrics", "reference_tool_calls"})
JSON_CELLS = frozenset({"additional_metadata", "metadata", "custom_column_key_values", "tools_called",
                        "expected_tools", "expectations", "turns", "persona"})
# a text DeepEval writes for a RetrievedContextData: the passage is what follows deepeval_context=
DEEPEVAL_MARKER = "deepeval_source="
DEEPEVAL_CONTEXT = ",deepeval_context="
# the lists a LlamaIndex dataset file keeps its rows under (LabelledRagDataset)
ROW_LISTS = ("examples",)


@dataclass(frozen=True)
class PeerRow:
    """One sample of a peer's file: where it is, and its fields as the peer means them (lists read,
    camelCase spelled in snake_case, nulls left out)."""

    line: int      # where the row starts in the file
    position: int  # N of line-N: the line (JSONL), element (JSON array) or row after the header (CSV)
    where: str     # how a message names it: "line 3", "element 2", "row 4"
    fields: dict[str, Any]

    @property
    def said(self) -> str:
        """The prefix a message gives the row: ``element 2: ``, ``row 4: ``; none for a JSON line,
        whose line the error names already (``a.jsonl:7: line 7`` said it twice)."""
        return "" if self.where == f"line {self.line}" else f"{self.where}: "


# ----------------------------------------------------------------------------------- the id rule

def row_id(obj: Mapping[str, Any], position: int) -> Any:
    """The id of a row (see the module's id rule): its own id field, else the ``id`` in its
    metadata, else ``line-N``. A JSON integer is its digits; anything else is returned as it is,
    for the caller's check to refuse."""
    for name in ID_FIELDS:
        if name in obj:
            return _digits(obj[name])
    for name in METADATA_FIELDS:
        meta = obj.get(name)
        if isinstance(meta, Mapping) and meta.get("id") is not None:
            return _digits(meta["id"])
    return f"line-{position}"


def _digits(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def answer_fields(obj: Mapping[str, Any], position: int) -> dict[str, Any]:
    """An answer in ragassay's fields from ragassay's, RAGAS's, DeepEval's or LlamaIndex's: theirs are
    renamed to ours (``user_input``/``input`` → question, ``actual_output`` → response,
    ``expected_output``/``reference_answer`` → reference, ``retrieved_contexts``/``retrieval_context``
    → contexts), and the id follows the module's rule."""
    out = PeerFields(_snake(dict(obj), None, None))
    for theirs, ours in PEER_TO_OURS.items():
        if theirs in out and ours not in out:
            out[ours] = out.pop(theirs)
            out.spelled[ours] = theirs
    if isinstance(out.get("context_ids"), list):
        out["context_ids"] = [_digits(c) for c in out["context_ids"]]
    out["id"] = row_id(out, position)
    return out


class PeerFields(dict):
    """A row's fields in ragassay's names that remembers how the file spelled each one renamed
    (``spelled``: ours → theirs), so a message names the field the user can find in the file."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spelled: dict[str, str] = {}

    def spelling(self, ours: str) -> str:
        """How the file names ``ours``: its own spelling, or for a field it lacks, every name read as it."""
        if ours in self.spelled:
            return self.spelled[ours]
        if ours in self:
            return ours
        names = [ours] + [t for t, o in PEER_TO_OURS.items() if o == ours]
        return ours if len(names) == 1 else f"{ours} (or {', '.join(names[1:])})"


# ------------------------------------------------------------------------------ sample files

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
        return [PeerRow(no, no, f"line {no}", _fields(obj, path, no, "jsonl"))
                for no, obj in iter_jsonl(data, path)]
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
                raise InputError(f"{r.said}no question (a field named question, user_input, input or query; "
                                 f"it has {', '.join(sorted(r.fields)) or 'none'})", path, r.line)
        except InputError as e:
            if problems is None:
                raise
            problems.add_error(e)
            continue
        out.append((r.line, fields))
    return out


def is_ragassay_queries(data: bytes) -> bool:
    """Whether a queries file is ragassay's own (TSV lines, or JSON Lines whose first object has an id
    and a question/query/text/title): those keep their readers and their messages."""
    stripped = data.lstrip()
    if stripped[:1] not in (b"{", b"["):
        first = stripped.split(b"\n", 1)[0]
        return b"\t" in first or b"," not in first  # (a CSV header has commas and no tab)
    if stripped[:1] == b"[":
        return False
    first = stripped.split(b"\n", 1)[0]
    try:
        obj = parse_json_object(first, None, 1)
    except InputError:
        return False  # an object over several lines: a peer's document
    # (TREC-style topics name their text "title", beside "description" and "narrative")
    return any(k in obj for k in ID_FIELDS) and any(k in obj for k in ("question", "query", "text", "title"))


def single_turn(fields: Mapping[str, Any], row: PeerRow, path: str | Path) -> None:
    """Refuse, by name, a conversation: RAGAS's MultiTurnSample (``user_input`` a list of messages) or
    DeepEval's ConversationalGolden (``scenario``, ``turns``). ragassay reads single-turn samples."""
    if isinstance(fields.get("question"), list) or "scenario" in fields and "question" not in fields:
        raise InputError(f"{row.said}a multi-turn sample (a conversation: user_input as a list of messages, "
                         "or DeepEval's scenario and turns); ragassay reads single-turn samples", path, row.line)


@dataclass(frozen=True)
class PeerQuery:
    """A query of a peer's test set: its id (by the rule), its text and, when the row has one, its
    reference answer."""

    id: str
    text: str
    answer: str | None


def peer_queries(path: str | Path, data: bytes) -> list[PeerQuery]:
    """The queries of a peer's test set or goldens (RAGAS, DeepEval, LlamaIndex; JSONL, JSON, CSV)."""
    document = json_document(data)
    if document is not None and isinstance(document.get("queries"), dict):
        return _keyed_queries(document, path)
    out: list[PeerQuery] = []
    seen: dict[str, str] = {}
    for row in sample_rows(path, data):
        fields = answer_fields(row.fields, row.position)
        qid = check_id(fields["id"], "query id", path, row.line)
        single_turn(fields, row, path)
        text = fields.get("question", fields.get("text"))
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{row.said}the query text is empty", path, row.line)
        if qid in seen:
            raise InputError(f"{row.said}query id {qid!r} appears twice (first at {seen[qid]})", path, row.line)
        seen[qid] = row.where
        ref = fields.get("reference")
        out.append(PeerQuery(qid, text, ref if isinstance(ref, str) and ref.strip() else None))
    if not out:
        raise InputError("no queries in file", path)
    return out


def _keyed_queries(document: dict, path: str | Path) -> list[PeerQuery]:
    """LlamaIndex's EmbeddingQAFinetuneDataset (queries, corpus, relevant_docs) or QueryResponseDataset
    (queries, responses): queries by their own ids, a response as the reference answer."""
    answers = document.get("responses") if isinstance(document.get("responses"), dict) else {}
    out = []
    for qid, text in document["queries"].items():
        check_id(qid, "query id", path, None)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"query {qid!r}: the query text is empty", path)
        answer = answers.get(qid)
        out.append(PeerQuery(qid, text, answer if isinstance(answer, str) and answer.strip() else None))
    if not out:
        raise InputError("no queries in file (its \"queries\" is empty)", path)
    return out


def _row(item: tuple[int, int, dict[str, Any], str | Path]) -> PeerRow:
    line, n, obj, path = item
    return PeerRow(line, n, f"element {n}", _fields(obj, path, line, "json"))


def _object_rows(document: dict, data: bytes, path: str | Path) -> list[PeerRow]:
    for key in ROW_LISTS:
        if isinstance(document.get(key), list):
            return [_row(r) for r in _array_rows(data, path, "element", key)]
    if "queries" in document and isinstance(document["queries"], dict):
        raise InputError("a LlamaIndex dataset of queries (queries, corpus, relevant_docs or responses): it holds no "
                         "answers to check: give it where queries are read (judge, retrieve, generate's sets); its relevant_docs are "
                         "qrels for evaluate", path)
    raise InputError("a JSON object, not a list of samples: expected JSON Lines (one sample a line), a JSON array of "
                     "samples, or a LlamaIndex dataset ({\"examples\": [...]})", path, 1)


def whole_json(data: bytes) -> Any:
    """The file as one JSON value, or None when it is not one (JSON Lines of several objects, or bad
    JSON: the line readers then name the line). Only files that start with ``{`` or ``[`` are tried."""
    if data.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        import orjson  # ranx's files hold millions of pairs: about 3x faster than the standard library
    except ImportError:
        orjson = None
    if orjson is not None:
        try:  # (an integer past 64 bits may come back a float: as a grade it is out of range either way)
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # NaN, a lone surrogate: the standard library reads it or says why not
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def json_document(data: bytes) -> dict[str, Any] | None:
    """The file as one JSON object when it is one document rather than JSON Lines: an object spread
    over lines (as LlamaIndex and ranx save them), or a one-line object holding a list of rows
    (``{"examples": [...]}``) or LlamaIndex's ``queries``. None for JSON Lines, whose first line is a whole object: such a file
    is never parsed whole here."""
    stripped = data.lstrip()
    if stripped[:1] != b"{":
        return None
    first = stripped.split(b"\n", 1)[0]
    if _whole_object(first):
        if not _single_line(data):
            return None
        obj = json.loads(first)
        rows = any(isinstance(obj.get(k), list) for k in ROW_LISTS) or isinstance(obj.get("queries"), dict)
        return obj if rows else None
    document = whole_json(data)
    return document if isinstance(document, dict) else None


def _single_line(data: bytes) -> bool:
    """Whether the file holds one line of content (a one-line JSONL file is JSONL, not a document)."""
    return data.strip().count(b"\n") == 0


def _array_rows(data: bytes, path: str | Path, what: str, key: str | None = None
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
    return j if j >= 0 and not text[i + len(key) + 2:j].strip(" \t\r\n:") else None


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
        raise InputError("cannot tell the format: expected JSON Lines, a JSON array of samples, or a CSV file whose "
                         f"header names a question column ({', '.join(QUESTION_FIELDS)})", path, 1)
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
            out.append(PeerRow(line, n, f"row {n}", _fields(obj, path, line, "csv")))
    except csv.Error as e:
        raise InputError(f"not valid CSV ({e})", path, reader.line_num) from None
    return out


def _fields(obj: dict[str, Any], path: str | Path, line: int, shape: str) -> dict[str, Any]:
    """A peer's row as its tool means it: camelCase keys spelled in snake_case, nulls of peer fields
    left out, lists in text cells read as the tool reads them back."""
    out = _snake(obj, path, line)
    for key in list(out):
        value = out[key]
        if value is None and key not in ("id", "question", "reference", "response", "contexts", "context_ids"):
            del out[key]
        elif key in PIPE_LISTS and isinstance(value, str):
            out[key] = _deepeval_passages(value.split("|") if value else [])
        elif key in PIPE_LISTS and isinstance(value, list):
            out[key] = _deepeval_passages(value)
        elif shape == "csv" and key in LITERAL_CELLS:
            out[key] = _literal(value, key, path, line)
        elif shape == "csv" and key in JSON_CELLS:
            out[key] = _json_cell(value)
    _one_value_per_field(out, path, line)
    return out


def _one_value_per_field(fields: Mapping[str, Any], path: str | Path, line: int) -> None:
    """Refuse a row giving one of ragassay's fields under two spellings with different values (RAGAS's
    ``user_input`` beside DeepEval's ``input``): which one was meant cannot be told. Equal values are one."""
    spellings: dict[str, list[str]] = {}
    for name in fields:
        ours = PEER_TO_OURS.get(name, name)
        if fields[name] is not None and ours in PEER_TO_OURS.values():
            spellings.setdefault(ours, []).append(name)
    for names in spellings.values():
        first = names[0]
        other = next((n for n in names[1:] if fields[n] != fields[first]), None)
        if other is not None:
            raise InputError(f"both {first!r} and {other!r} are given, with different values: keep one", path, line)


def _snake(obj: dict[str, Any], path: str | Path | None, line: int | None) -> dict[str, Any]:
    out = dict(obj)
    for camel, snake in CAMEL_FIELDS.items():
        if camel in out:
            value = out.pop(camel)
            if snake in out and out[snake] is not None and value is not None and out[snake] != value:
                raise InputError(f"both {camel!r} and {snake!r} are given, with different values: keep one", path, line)
            if out.get(snake) is None:
                out[snake] = value
    return out


def _deepeval_passages(items: list[Any]) -> list[Any]:
    """DeepEval's text of a retrieved context with its source (``deepeval_source=S,deepeval_context=T``)
    is the passage T, as DeepEval reads it back."""
    out = []
    for item in items:
        if isinstance(item, str) and item.startswith(DEEPEVAL_MARKER) and DEEPEVAL_CONTEXT in item:
            item = item.split(DEEPEVAL_CONTEXT, 1)[1]
        out.append(item)
    return out


def _literal(value: Any, key: str, path: str | Path, line: int) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InputError(f"column {key}: expected a list as RAGAS writes it (['a', 'b']), got {value[:60]!r}",
                         path, line) from None


def _json_cell(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value  # kept as text: nothing here decides on it


# --------------------------------------------------------------------------- qrels and runs

PARQUET_MAGIC = b"PAR1"
LZ4_MAGIC = b"\x04\x22\x4d\x18"


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
        raise InputError(f"query {cols.queries[i]!r}, document {cols.docs[i]!r}: grade must be an integer within "
                         f"±{INT_LIMIT}, got {_shown(cols.values[i])}{_score_said(grades[i])}", path)
    docs = encode_ids(_checked_ids(cols.docs, "document id", path, cols.table))
    out = Qrels(queries, qidx, docs, grades.astype(np.int64),
                source=None if path is None else str(path))
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
        raise InputError(f"query {cols.queries[i]!r}, document {cols.docs[i]!r}: score must be a finite number, "
                         f"got {_shown(cols.values[i])}", path)
    run = Run(queries, qidx, encode_ids(_checked_ids(cols.docs, "document id", path, cols.table)), scores, name,
              None if path is None else str(path))
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
    if all(issubclass(k, (int, float, np.integer, np.floating)) and not issubclass(k, (bool, np.bool_))
           for k in kinds):
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
        raise InputError(f"an LZ4-compressed file (ranx's kind='lz4'): ragassay does not read LZ4; save the {what} "
                         "with kind='json', 'trec' or 'parquet', or decompress it first", path)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"a Parquet {what} file: reading it needs pyarrow (pip install pyarrow)", path) from None
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow's own errors have no common base but Exception
        raise InputError(f"a Parquet file that cannot be read ({e})", path) from None
    return named_columns({name: table.column(name).to_pylist() for name in table.column_names}, what, path)


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
        raise InputError(f"a {what} table needs a column named one of {', '.join(names)} "
                         f"(it has {', '.join(map(str, columns))})", path)
    q, d = pick(QUERY_COLUMNS), pick(DOC_COLUMNS)
    v = pick(GRADE_COLUMNS if what == "qrels" else SCORE_COLUMNS)
    return TableColumns(_texts(columns[q]), _texts(columns[d]), list(columns[v]), table=True)


def _texts(values: list[Any]) -> list[Any]:
    """Ids as text: an integer is its digits; a null, a fraction or true/false is kept for the check
    to refuse (its text, "None" or "3.5", would be an id nobody wrote)."""
    return values if set(map(type, values)) <= {str} else [_digits(_plain(x)) for x in values]


def json_table_columns(data: bytes, path: str | Path, what: str) -> TableColumns | None:
    """The columns of a qrels or run saved as one JSON document: ranx's ``{query: {doc: value}}``
    (``Qrels.save``/``Run.save`` with kind "json") or, for qrels, LlamaIndex's
    EmbeddingQAFinetuneDataset (its ``relevant_docs``, each grade 1). None for anything else (JSON
    Lines: its reader takes it)."""
    if data.lstrip()[:1] != b"{":
        return None
    first = data.lstrip().split(b"\n", 1)[0]
    if any(f'"{k}"'.encode() in first for k in ("query_id", "qid", "chunk_id", "doc_id", "docid")):
        return None  # ragassay's JSON Lines
    document = whole_json(data)
    if not isinstance(document, dict):
        return None
    if not document:
        raise InputError(f"an empty JSON object: no {'judgments' if what == 'qrels' else 'results'} "
                         f"(expected {_ranx_shape(what)})", path, 1)
    if isinstance(document.get("relevant_docs"), dict) and "queries" in document:
        if what != "qrels":
            raise InputError("a LlamaIndex dataset (queries, corpus, relevant_docs): its relevant_docs are qrels, "
                             "not a run", path)
        bad = next((q for q, docs in document["relevant_docs"].items() if not isinstance(docs, list)), None)
        if bad is not None:
            raise InputError(f"relevant_docs of query {bad!r} must be a list of ids", path)
        # (row by row, not a dict: a document listed twice for a query is named, not collapsed)
        return TableColumns.of_rows((q, d, 1) for q, docs in document["relevant_docs"].items() for d in docs)
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
    return (f"ranx's {{query: {{document: {value}}}}}, e.g. {{\"q1\": {{\"d1\": {1 if what == 'qrels' else 0.5}}}}}, "
            f"or JSON Lines of query_id, chunk_id, {value}")


def _json_kind(value: Any) -> str:
    kind = {list: "a list", str: "a string", bool: "true/false", type(None): "null", int: "a number",
            float: "a number"}.get(type(value), type(value).__name__)
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
            raise InputError(f"query {q!r} is given twice in this JSON object (JSON keeps only the last): "
                             f"keep one {q!r} holding all its documents{_lines_of(data, q)}", path)
        seen.add(q)
        if what == "qrels" and len({d for d, _ in inner}) < len(inner):
            twice = next(d for n, (d, _) in enumerate(inner) if any(d == e for e, _ in inner[:n]))
            raise InputError(f"document {twice!r} is judged twice for query {q!r}{_lines_of(data, twice, q)}; "
                             "keep one judgment per query and document (JSON keeps only the last)", path)
        for d, v in inner:
            queries.append(q)
            docs.append(d)
            values.append(_grade_as_written(v, q, d, path) if what == "qrels" else v)
    return TableColumns(queries, docs, values, empty=[q for q, inner in document if not inner])


def _score_said(value: float) -> str:
    """The evidence a value with a fraction gives: it is a run's score, so the file looks like a run."""
    if value != value or abs(value) == float("inf") or float(value).is_integer():
        return ""
    return " (a value with a fraction is a score: the file looks like a run, not qrels; give it as a RUN)"


def _grade_as_written(value: Any, q: str, d: str, path: str | Path) -> Any:
    """A grade written ``3.0`` is 3; ``1e2`` or ``2.5`` is no integer as written (as in the JSONL reader)."""
    if not isinstance(value, WrittenFloat):
        return value
    m = re.fullmatch(r"([+-]?\d{1,18})(?:\.0*)?", value.text)
    if m is None:
        raise InputError(f"query {q!r}, document {d!r}: grade must be an integer within ±{INT_LIMIT}, "
                         f"got {value.text}{_score_said(float(value))}", path)
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
    lines = [data.count(b"\n", 0, m.start()) + 1
             for m in re.compile(re.escape(needle) + rb"\s*:").finditer(data, start)][:2]
    return f" (lines {lines[0]} and {lines[1]})" if len(lines) == 2 else ""


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


def llamaindex_corpus(path: str | Path) -> dict[str, str] | None:
    """The corpus of a LlamaIndex EmbeddingQAFinetuneDataset (``{id: text}``), or None. Only a file
    whose first line is not a whole JSON object (a document over several lines) is read whole here."""
    if str(path) == "-":
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None  # the chunks reader says what is wrong
    first = head.lstrip().split(b"\n", 1)[0]
    if first[:1] != b"{" or _whole_object(first):  # JSON Lines: the chunks reader's
        return None
    document = whole_json(read_bytes_checked(path))
    if isinstance(document, dict) and isinstance(document.get("corpus"), dict) and "queries" in document:
        return document["corpus"]
    return None


def _whole_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, UnicodeDecodeError):
        return False
