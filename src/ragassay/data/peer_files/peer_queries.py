"""Queries from a peer's test set or goldens, and the corpus of LlamaIndex's finetuning dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..lines import check_id, parse_json_object, read_bytes_checked
from .json_documents import json_document, whole_json, whole_object
from .sample_fields import ID_FIELDS, answer_fields
from .sample_files import sample_rows, single_turn


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
            raise InputError(f"{row.message_prefix}the query text is empty", path, row.line)
        if qid in seen:
            raise InputError(
                f"{row.message_prefix}query id {qid!r} appears twice (first at {seen[qid]})", path, row.line
            )
        seen[qid] = row.where
        ref = fields.get("reference")
        out.append(PeerQuery(qid, text, ref if isinstance(ref, str) and ref.strip() else None))
    if not out:
        raise InputError("no queries in file", path)
    return out


def _keyed_queries(document: dict, path: str | Path) -> list[PeerQuery]:
    """LlamaIndex's EmbeddingQAFinetuneDataset (queries, corpus, relevant_docs) or QueryResponseDataset
    (queries, responses): queries by their own ids, a response as the reference answer."""
    answers: dict[str, Any] = document["responses"] if isinstance(document.get("responses"), dict) else {}
    out = []
    for qid, text in document["queries"].items():
        check_id(qid, "query id", path, None)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"query {qid!r}: the query text is empty", path)
        answer = answers.get(qid)
        out.append(PeerQuery(qid, text, answer if isinstance(answer, str) and answer.strip() else None))
    if not out:
        raise InputError('no queries in file (its "queries" is empty)', path)
    return out


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
    if first[:1] != b"{" or whole_object(first):  # JSON Lines: the chunks reader's
        return None
    document = whole_json(read_bytes_checked(path))
    if isinstance(document, dict) and isinstance(document.get("corpus"), dict) and "queries" in document:
        return document["corpus"]
    return None
