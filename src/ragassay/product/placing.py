"""Where ``init`` places a JSON Lines file of texts by id: chunks or queries, told by content.

Field names settle most files: a ``query_id``/``qid`` or a ``query``/``question`` field is a query
(the names ``read_queries`` takes); a ``doc_id`` or ``title`` beside ``text`` is a corpus line (a
chunk, a BEIR or ir_datasets document). What is left, ``{"id", "text"}`` lines (with ``_id`` or
``metadata`` perhaps), is a format both roles use (the README allows it for queries and for
chunks): it is placed by **the ids the folder's other files use**. A file whose ids hold most of
the query ids of a run, the qrels or the answers is the queries; one whose ids hold most of the
chunk ids a run, the qrels, the answers' contexts or a question set names is chunks. When both
or neither hold, ``init`` does not guess: the file is written commented out under both roles,
saying why. One case keeps the old reading: a lone file of texts by id in a folder with no other
file naming ids and no other chunks is the chunks (there is nothing to ask questions of otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

UNDECIDED = "texts"  # the key of a Found whose role the ids decide
ID_READ_BYTES = 64 << 20  # the part of a file whose ids are read (a head of a larger one)
HOLDS = 0.5  # the share of a source's ids a file must hold to be placed by it
QUERY_ID_FIELDS = ("query_id", "qid")
OTHER_ROLES = frozenset({"question", "response", "answer", "score", "grade", "label", "chunk_id", "reference"})


def texts_role(keys: set[str]) -> str | None:
    """The role a JSON line's fields give it: ``queries``, ``chunks``, :data:`UNDECIDED` (id and
    text only: the ids decide), or None (not a file of texts by id: the other rules decide)."""
    if keys & OTHER_ROLES or not keys & {"id", "_id", "doc_id", *QUERY_ID_FIELDS}:
        return None
    if "query" in keys or keys & set(QUERY_ID_FIELDS) and keys & {"text", "title"}:
        return "queries"
    if "text" not in keys:
        return None
    if keys & {"doc_id", "title"}:
        return "chunks"
    return UNDECIDED


class IdSource:
    """The query ids and chunk ids one file of the folder uses, by what it is."""

    def __init__(self, name: str, queries: set[str], chunks: set[str]):
        self.name = name
        self.queries = queries
        self.chunks = chunks


def _head_lines(path: Path) -> Iterator[str]:
    read = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                read += len(line)
                if read > ID_READ_BYTES:
                    return
                if line.strip() and not line.lstrip().startswith("#"):
                    yield line
    except OSError:
        return


def _objects(path: Path) -> Iterator[dict]:
    for line in _head_lines(path):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def _text_id(value: object) -> str | None:
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def source_of(path: Path, table: str, key: str) -> IdSource | None:
    """The ids a placed file uses: a run's or qrels' query and chunk ids, the answers' ids (query ids)
    and context ids, a question set's ids and chunk ids, chunks' ids."""
    if table == "runs" or key == "qrels":
        json_lines = path.suffix.lower() in (".jsonl", ".json")
        queries, chunks = _ranking_json_ids(path) if json_lines else _ranking_column_ids(path)
    elif key in ("answers", "queries"):
        queries, chunks = _question_ids(path)
    elif key == "chunks":
        queries = set()
        chunks = {c for c in (_text_id(o.get("id", o.get("_id", o.get("doc_id")))) for o in _objects(path)) if c}
    else:
        return None
    return IdSource(str(path.name), queries, chunks) if queries or chunks else None


def _ranking_json_ids(path: Path) -> tuple[set[str], set[str]]:
    """The query and chunk ids of a run or qrels in JSON Lines."""
    queries: set[str] = set()
    chunks: set[str] = set()
    for obj in _objects(path):
        q, d = _text_id(obj.get("query_id", obj.get("qid"))), _text_id(obj.get("chunk_id", obj.get("doc_id")))
        queries.update([q] if q else [])
        chunks.update([d] if d else [])
    return queries, chunks


def _ranking_column_ids(path: Path) -> tuple[set[str], set[str]]:
    """The query and chunk ids of a run or qrels in columns: TREC's four or more, or three."""
    queries: set[str] = set()
    chunks: set[str] = set()
    for line in _head_lines(path):
        fields = line.split()
        if len(fields) >= 4:  # TREC run or qrels: query, Q0/0, chunk, ...
            queries.add(fields[0])
            chunks.add(fields[2])
        elif len(fields) == 3 and fields[:3] != ["query-id", "corpus-id", "score"]:
            queries.add(fields[0])
            chunks.add(fields[1])
    return queries, chunks


def _question_ids(path: Path) -> tuple[set[str], set[str]]:
    """The ids of answers or questions (query ids) and the chunk ids they name as context."""
    queries: set[str] = set()
    chunks: set[str] = set()
    for obj in _objects(path):
        own = _text_id(obj.get("id", obj.get("query_id", obj.get("_id"))))
        queries.update([own] if own else [])
        for field in ("context_ids", "chunk_ids"):
            if isinstance(obj.get(field), list):
                chunks.update(c for c in map(_text_id, obj[field]) if c)
    return queries, chunks


def ids_of(path: Path) -> set[str]:
    """The ids of a file of texts by id (``id``, else ``_id``)."""
    return {i for i in (_text_id(o.get("id", o.get("_id"))) for o in _objects(path)) if i}


def _share(ids: set[str], sources: list[tuple[str, set[str]]]) -> tuple[float, str]:
    """The largest share of one source's ids that ``ids`` holds, and that source's name."""
    best = (0.0, "")
    for name, wanted in sources:
        if wanted:
            share = len(wanted & ids) / len(wanted)
            if share > best[0]:
                best = (share, name)
    return best


def decide(path: Path, sources: list[IdSource]) -> tuple[str | None, str]:
    """``queries`` or ``chunks`` for a file of texts by id, with the note that says why; (None,
    why) when the ids do not tell."""
    ids = ids_of(path)
    q, q_from = _share(ids, [(s.name, s.queries) for s in sources])
    d, d_from = _share(ids, [(s.name, s.chunks) for s in sources])
    if q >= HOLDS and d < HOLDS:
        return "queries", f"queries by id: their ids hold {q:.0%} of the query ids of {q_from}"
    if d >= HOLDS and q < HOLDS:
        return "chunks", f"chunk texts by id: their ids hold {d:.0%} of the chunk ids of {d_from}"
    if not sources:
        return (
            None,
            "texts by id (id, text), as chunks and queries both are, and no run, qrels or answers here "
            "use ids to tell which",
        )
    if q >= HOLDS:
        return None, (
            f"texts by id whose ids hold {q:.0%} of the query ids of {q_from} and {d:.0%} of the chunk "
            f"ids of {d_from}: cannot tell chunks from queries"
        )
    return None, (
        "texts by id whose ids meet few ids of the runs, qrels or answers here (at most "
        f"{max(q, d):.0%}): cannot tell chunks from queries"
    )


def shares_no_ids(path: Path, other: Path) -> bool:
    """Whether the texts by id in ``path`` share no id with the file ``other`` (read as far as
    :data:`ID_READ_BYTES`), and hold at least one: a file of other things than those chunks."""

    def ids(p: Path) -> set[str]:
        out = set()
        for obj in _objects(p):
            i = _text_id(obj.get("id", obj.get("_id", obj.get("doc_id"))))
            if i is not None:
                out.add(i)
        return out

    mine = ids(path)
    return bool(mine) and not mine & ids(other)


def chunks_note(path: Path) -> str:
    """What ``init`` says of a file it places as chunks by its fields: chunk texts by id, an
    ir_datasets docs export (no line has an id, every ``doc_id`` unique: the documents are the
    chunks), or chunks the reader will refuse because lines have no ``id`` (a ``doc_id`` that repeats,
    or beside lines that have one, names a document, not a chunk): said here, before ``run``."""
    own, lacking, docs = 0, [], set()
    repeated = None
    for no, obj in enumerate(_objects(path), start=1):
        if "id" in obj or "_id" in obj:
            own += 1
            continue
        lacking.append(no)
        doc = _text_id(obj.get("doc_id"))
        if doc in docs and repeated is None:
            repeated = doc
        docs.add(doc)
    if not lacking:
        return "chunk texts by id"
    if not own and repeated is None and None not in docs:
        return "documents by doc_id (an ir_datasets docs export: each document is one chunk)"
    why = f"doc_id {repeated!r} repeats" if repeated is not None and not own else "other lines have one"
    shown = ", ".join(map(str, lacking[:5])) + (", ..." if len(lacking) > 5 else "")
    records = "records" if len(lacking) > 1 else "record"
    return (
        f"chunks, but {len(lacking)} of {own + len(lacking)} records have no 'id' ({why}; {records} "
        f"{shown}): run will refuse them until each chunk has an 'id'"
    )
