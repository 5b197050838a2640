"""A large chunks file as a mapping from id to chunk that holds where each line lies, not the chunks.

A judgment of a million pairs over 100,000 chunks of a kilobyte held every chunk as a model (170 MB
for a 90 MB file). The table reads and checks the file once, as :func:`~ragassay.data.io.read_chunks`
does (the same errors, naming file and line), and keeps for each chunk its id and its line's place;
a chunk is read again (one ``pread``) and checked when it is asked for. The file stays open: an
editor that replaces it while a run goes on does not change what the run reads; a chunk whose line
no longer holds it (the file written over in place) is an error, never another chunk's text.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..errors import InputError
from .beir_folders import dataset_member
from .chunk_files import read_chunks
from .chunk_lines import ChunkLines
from .lines import parse_json_object, streamable, streamed_lines_at
from .record_validation import beir_id, validate_record
from .records import Chunk


class ChunkTable(Mapping):
    """Chunk id -> :class:`~ragassay.data.records.Chunk`, read from its line when asked for."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._slots: dict[str, int] = {}  # id -> its row
        self._ids: list[str] = []
        self._offsets = array("q")
        self._lengths = array("q")
        self._lines = array("q")  # line numbers, for messages
        lines = ChunkLines(self.path, validate_record)  # (the id rule, and every bad line said at the end)
        for no, (offset, raw) in enumerate(streamed_lines_at(self.path), start=1):
            if not raw.strip():
                continue
            try:
                obj = parse_json_object(raw, self.path, no)
            except InputError as e:
                lines.problems.add_error(e)
                continue
            chunk = lines.take(obj, no)
            if chunk is None or chunk.id in self._slots:  # (a doc_id twice: finish names every line of it)
                continue
            self._slots[chunk.id] = len(self._ids)
            self._ids.append(chunk.id)
            self._offsets.append(offset)
            self._lengths.append(len(raw))
            self._lines.append(no)
        lines.finish()
        try:
            self._file = open(self.path, "rb")
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", self.path) from None

    def __getitem__(self, chunk_id: str) -> Chunk:
        slot = self._slots[chunk_id]
        raw = _pread(self._file, self._lengths[slot], self._offsets[slot])
        no = self._lines[slot]
        try:
            chunk = validate_record(beir_id(parse_json_object(raw, self.path, no)), Chunk, self.path, no)
        except InputError:
            chunk = None
        if chunk is None or chunk.id != chunk_id:
            raise InputError(
                "the chunks file was changed while this run was reading it (this line no longer "
                f"holds chunk {chunk_id!r}); run again on the file as it is now",
                self.path,
                no,
            )
        return chunk

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._slots

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def id_of(self, chunk_id: str) -> str:
        """The table's own string for ``chunk_id`` (one string per chunk, however often it is named)."""
        return self._ids[self._slots[chunk_id]]

    def close(self) -> None:
        self._file.close()

    def __del__(self) -> None:  # (a table let go closes its file: no ResourceWarning)
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()

    def __repr__(self) -> str:
        return f"ChunkTable({str(self.path)!r}, {len(self)} chunks)"


def _pread(f, length: int, offset: int) -> bytes:
    if hasattr(os, "pread"):
        return os.pread(f.fileno(), length, offset)
    f.seek(offset)  # pragma: no cover - Windows: one reader at a time (the run's own thread)
    return f.read(length)


def chunk_source(path: str | Path) -> Mapping[str, Chunk]:
    """The chunks of a file for a stage that looks them up by id: a :class:`ChunkTable` for a large
    plain file, a dict of chunks otherwise (a small file, gzip, stdin, a BEIR folder's member)."""
    member = dataset_member(path, "chunks")
    if streamable(member):
        return ChunkTable(member)
    return {c.id: c for c in read_chunks(member)}
