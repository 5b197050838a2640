"""The queries reader: ragassay's JSON Lines or TSV, a BEIR folder, or a peer's test set."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from . import roles
from .beir_folders import dataset_member
from .column_formats import first_line
from .line_problems import LineProblems
from .lines import check_id, iter_jsonl, read_bytes_checked, required_field
from .peer_files.peer_queries import is_ragassay_queries, peer_queries


def read_queries(path: str | Path) -> dict[str, str]:
    """Read queries as ``{query id: text}``.

    Accepts JSONL with ``id``/``query_id``/``_id`` and ``question``/``query``/``text`` (so a
    questions file from ``generate`` works as is), or TSV lines ``id<TAB>text``; a BEIR folder gives
    its queries.jsonl.
    """
    path = dataset_member(path, "queries")
    return queries_in(read_bytes_checked(path), path)


def queries_in(data: bytes, path: str | Path, objects: dict[str, dict] | None = None) -> dict[str, str]:
    """The queries in a file's bytes, which the caller has read already, by the rules of
    :func:`read_queries`. When ``objects`` is given and the file is ragassay's JSON Lines, it receives
    each query's whole line by id, so that a caller who wants the other fields of a line (the test-set
    report wants generate's) neither reads nor parses the file a second time."""
    if not is_ragassay_queries(data):  # RAGAS, DeepEval, LlamaIndex: ids by peer_files' rule
        return {q.id: q.text for q in peer_queries(path, data)}
    line, _ = first_line(data)
    return _jsonl_queries(data, path, objects) if line.startswith("{") else _tsv_queries(data, path)


def _jsonl_queries(data: bytes, path: str | Path, objects: dict[str, dict] | None = None) -> dict[str, str]:
    """ragassay's JSON Lines queries (an id and a question, query or text on each line), every bad line
    said at the end; a line that reads as a chunk before any query is read refuses the file as chunks.
    ``objects``, when given, receives each query's line by id."""
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    problems = LineProblems(path)  # every bad line, said at the end
    for no, obj in iter_jsonl(data, path, problems=problems):
        evidence = roles.query_line_evidence(obj)
        if evidence is not None and not out and not problems:
            raise roles.refuse_role(
                path,
                no,
                "chunks, not queries",
                f"the line {evidence}",
                "give it as --chunks (queries: id and question, query or text)",
            )
        try:
            qid = check_id(required_field(obj, ("id", "query_id", "_id", "qid"), path, no), "query id", path, no)
            text = required_field(obj, ("question", "query", "text"), path, no)
            if not isinstance(text, str) or not text.strip():
                raise InputError("query text is empty", path, no)
            if str(qid) in out:
                raise InputError(f"query id {qid!r} appears twice (first on line {first[qid]})", path, no)
        except InputError as e:
            problems.add_error(e)
            continue
        out[str(qid)] = text
        first[str(qid)] = no
        if objects is not None:
            objects[str(qid)] = obj
    problems.raise_if_any()
    return out


def _tsv_queries(data: bytes, path: str | Path) -> dict[str, str]:
    """Queries as TSV lines ``id<TAB>text``, every bad line said at the end."""
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    problems = LineProblems(path)  # every bad line, said at the end
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("not valid UTF-8 text", path, data.count(b"\n", 0, e.start) + 1) from None
    # lines end at \n (or \r\n) only, as in every other reader: not str.splitlines(), which also
    # ends a line at \x0b, \x0c, \x1c-\x1e, \x85, U+2028 and U+2029, characters a query's text may hold
    for no, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")  # (read_bytes_checked refuses a \r that does not end a line)
        if not raw.strip():
            continue
        parts = raw.split("\t", 1)
        try:
            if len(parts) != 2 or not parts[1].strip():
                raise InputError("expected 'query id<TAB>query text'", path, no)
            check_id(parts[0], "query id", path, no)
            if parts[0] in out:
                raise InputError(f"query id {parts[0]!r} appears twice (first on line {first[parts[0]]})", path, no)
        except InputError as e:
            problems.add_error(e)
            continue
        out[parts[0].strip()] = parts[1].strip()
        first[parts[0]] = no
    problems.raise_if_any()
    return out
