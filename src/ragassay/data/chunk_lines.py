"""Chunk lines read one at a time, with the id rule and every bad line said at the end.

**No id is invented.** A chunk's id is its ``id`` (or BEIR's ``_id``). A line without one is an
error naming the line, even when it has a ``doc_id``: in a chunks file ``doc_id`` names the
document a chunk was cut from, shared by its chunks, so taking it as the chunk's id made two chunks
of one document "appear twice" under an id the file never had, and a run naming the real chunk id
then missed it.

One file is read with ``doc_id`` as the id: ir_datasets' docs export (``ir_datasets export ...
docs --format jsonl``: ``doc_id``, ``text``, ``title``), one document a line, which the README
lists as a corpus. There ``doc_id`` is the line's own declared identifier, the only one the
format has. The rule that tells that file from chunks missing their ids: **no line of the file has
an ``id`` or ``_id``, and no two lines share a ``doc_id``**. A file where some lines have an id
and others only a ``doc_id`` is chunks with ids missing (each such line is named); a file where
a ``doc_id`` repeats is chunks of documents (each line of a repeated ``doc_id`` is named).

A file whose first line is plainly another role (a question, an answer, a run's result) is refused
at once, saying so; such a line later in a file is one bad line among the others.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError
from .line_problems import LineProblems
from .records import Chunk
from .roles import chunk_line_evidence


class ChunkLines:
    """Takes the lines of one chunks file in order (:meth:`take`), then :meth:`finish` raises one
    error naming every bad line (in file order, up to a cap), or accepts the file."""

    def __init__(self, path: str | Path | None, validate: Callable[[dict, Any, Any, int], Any]):
        self.path = path
        self.validate = validate  # io.validate_record (passed in: this module imports nothing of io)
        self.problems = LineProblems(path)
        self.own = 0  # lines with an id of their own (id or _id)
        self.from_doc: list[tuple[int, str]] = []  # (line, doc_id) of lines with only a doc_id
        self.first_line: dict[str, int] = {}  # own id -> its first line
        self.count = 0

    def take(self, obj: dict[str, Any], no: int) -> Chunk | None:
        """The chunk of one line, or None when the line is bad (said at :meth:`finish`)."""
        found = chunk_line_evidence(obj)
        if found is not None:
            what, fields = found
            if self.count == 0 and not self.problems:
                raise InputError(
                    f"looks like {what}, not chunks: the line has {fields}; give it where its role is "
                    "taken (questions and queries: retrieve --queries or judge --queries; answers: "
                    "check's input; a run or judgments: RUN / QRELS)",
                    self.path,
                    no,
                )
            self.problems.add(no, f"not a chunk ({what}?): it has {fields}")
            return None
        self.count += 1
        own = "id" in obj or "_id" in obj
        if not own:
            if "doc_id" not in obj:
                self.problems.add(
                    no,
                    "no 'id' (a chunk needs one: 'id', or BEIR's '_id'; its fields: "
                    f"{', '.join(sorted(obj)) or 'none'})",
                )
                return None
            obj = {**obj, "id": obj["doc_id"]}  # the declared id of a docs export, if the whole file is one
        elif "id" not in obj:
            obj = {k: v for k, v in obj.items() if k != "_id"} | {"id": obj["_id"]}
        try:
            chunk = self.validate(obj, Chunk, self.path, no)
        except InputError as e:
            self.problems.add_error(e)
            return None
        if not own:
            self.from_doc.append((no, chunk.id))
            return chunk
        self.own += 1
        first = self.first_line.get(chunk.id)
        if first is not None:
            self.problems.add(no, f"chunk id {chunk.id!r} appears twice (first on line {first})")
            return None
        self.first_line[chunk.id] = no
        return chunk

    def finish(self) -> None:
        """Raise the one error of every bad line; a file of no chunk at all is an error too. Lines
        without an id are one problem, its reason said once and their lines listed after it."""
        if len(self.from_doc) == 1 and self.own:
            no, doc = self.from_doc[0]
            self.problems.add(
                no,
                f"no 'id': its doc_id {doc!r} names the document the chunk comes from, not the "
                "chunk (other lines have an 'id'); give this chunk an 'id'",
            )
        elif self.from_doc and self.own:
            self.problems.add(
                None,
                no_id_said(
                    [no for no, _ in self.from_doc],
                    "other lines have an 'id', so a doc_id names the document a chunk comes from, not the chunk",
                ),
            )
        elif self.from_doc:
            lines: dict[str, list[int]] = defaultdict(list)
            for no, doc in self.from_doc:
                lines[doc].append(no)
            repeated = next(((doc, at) for doc, at in lines.items() if len(at) > 1), None)
            if repeated is not None:  # not a docs export: every line without an id is wrong, not only repeats
                doc, at = repeated
                self.problems.add(
                    None,
                    no_id_said(
                        [no for no, _ in self.from_doc],
                        f"no line has one, and doc_id {doc!r} is on {len(at)} lines "
                        f"(first {at[0]} and {at[1]}): a doc_id names the document the "
                        "chunks were cut from, shared by its chunks, not a chunk",
                    ),
                )
        if self.problems:
            e = self.problems.error()
            if e.line is None and self.from_doc:  # (the lines are listed in the message; the first is where to go)
                e.line = self.from_doc[0][0]
            raise e
        if not self.count:
            raise InputError("no chunks in file", self.path)


SHOWN_LINES = 10


def no_id_said(lines: list[int], why: str) -> str:
    """The one problem of the lines without an ``id``: the reason once, then the lines (the first 10)."""
    shown = ", ".join(map(str, lines[:SHOWN_LINES])) + (
        f", ... ({len(lines)} lines)" if len(lines) > SHOWN_LINES else ""
    )
    return (
        f"{len(lines)} line{'s have' if len(lines) != 1 else ' has'} no 'id' ({why}); give each chunk an 'id' "
        f"(or BEIR's '_id'): line{'s' if len(lines) != 1 else ''} {shown}"
    )
