"""What judge and coverage show the model: a query with its need, and passages cut visibly."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..data.io import dataset_member, read_queries
from ..data.line_problems import LineProblems
from ..data.lines import check_id, iter_jsonl, read_bytes_checked
from ..data.peer_files import is_ragassay_queries, peer_queries
from ..data.records import Chunk
from ..data.roles import query_line_evidence, refuse_role
from ..errors import InputError
from ..llm.prompts import clip, delimit, shown_id


@dataclass(slots=True)
class QueryItem:
    """A query, and when known the need behind it: a TREC-style description and narrative, and a
    reference answer (from generate, or written by people)."""

    id: str
    text: str
    answer: str | None = None
    description: str | None = None
    narrative: str | None = None

    def need_block(self) -> str:
        need = "\n".join(t for t in (self.description, self.narrative) if t)
        return delimit("NEED", need) if need else "(no description of the need was given)"

    def expected_block(self) -> str:
        if not self.answer:
            return "(no note on what a good answer contains was given)"
        return delimit("WHAT A GOOD ANSWER CONTAINS", self.answer)


def _text(obj: dict, *names: str) -> str | None:
    for n in names:
        v = obj.get(n)
        if isinstance(v, str) and v.strip():
            return v
    return None


def read_query_items(path: str | Path) -> list[QueryItem]:
    """Queries as ``{id, text}`` lines or TSV, a questions.jsonl from generate (its answers become
    the note on what a good answer contains), or TREC-style topics with ``description`` and
    ``narrative``."""
    path = dataset_member(path, "queries")
    data = read_bytes_checked(path)
    if not is_ragassay_queries(data):  # a RAGAS test set, DeepEval goldens, a LlamaIndex dataset
        return [QueryItem(q.id, q.text, q.answer) for q in peer_queries(path, data)]
    if not data.lstrip().startswith(b"{"):
        return [QueryItem(q, t) for q, t in read_queries(path).items()]
    items: list[QueryItem] = []
    seen: dict[str, int] = {}  # query id -> the line it was first on
    problems = LineProblems(path)  # every bad line, said at the end
    for no, obj in iter_jsonl(data, path, problems=problems):  # (the bytes already read: not read twice)
        evidence = query_line_evidence(obj)
        if evidence is not None and not items and not problems:
            raise refuse_role(
                path,
                no,
                "chunks, not queries",
                f"the line {evidence}",
                "give it as --chunks (queries: id and question, query or text)",
            )
        qid = obj.get("id", obj.get("query_id", obj.get("_id", obj.get("qid"))))
        text = _text(obj, "question", "query", "text", "title")
        try:
            if text is None or not any(k in obj for k in ("id", "query_id", "_id", "qid")):
                raise InputError(
                    "each line needs an id (id, query_id, _id or qid) and a text (question, query, "
                    f"text or title); its fields: {', '.join(sorted(obj)) or 'none'}",
                    path,
                    no,
                )
            qid = check_id(qid, "query id", path, no)
            if qid in seen:
                raise InputError(f"query id {qid!r} appears twice (first on line {seen[qid]})", path, no)
        except InputError as e:
            problems.add_error(e)
            continue
        seen[qid] = no
        items.append(
            QueryItem(qid, text, _text(obj, "answer", "reference"), _text(obj, "description"), _text(obj, "narrative"))
        )
    problems.raise_if_any()
    return items


@dataclass
class Passages:
    """Renders chunks for a prompt within a character budget; a cut is marked where it happens and
    remembered (the records say ``truncated``), with one warning per chunk."""

    max_chars: int
    truncated: set[str] = field(default_factory=set)

    def text(self, chunk: Chunk, window: tuple[int, int] | None = None) -> str:
        if window is not None:  # one window of a long chunk, said as such
            start, end = window
            body = (
                f"[part of a longer passage: characters {start + 1:,}-{end:,} of {len(chunk.text):,}]\n"
                + chunk.text[start:end]
            )
        else:
            body, cut = clip(chunk.text, self.max_chars)
            if cut and chunk.id not in self.truncated:
                self.truncated.add(chunk.id)
                print(
                    f"warning: chunk {chunk.id!r} has {len(chunk.text)} characters; judged on its first "
                    f"{self.max_chars}",
                    file=sys.stderr,
                )
        return f"{chunk.title}\n{body}" if chunk.title else body

    def block(self, chunk: Chunk, with_id: bool = True) -> str:
        return delimit(f"PASSAGE id={shown_id(chunk.id)}" if with_id else "PASSAGE", self.text(chunk))

    def blocks(self, chunks: list[Chunk]) -> str:
        return "\n\n".join(self.block(c) for c in chunks)
