"""The inputs every stage shares, taken as files or as objects: queries, chunks (by id, or in their
given order) and the file an input came from, which messages name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.chunk_files import read_chunks
from ..data.chunk_table import ChunkTable, chunk_source
from ..data.records import Chunk
from ..stages.queries import QueryItem, read_query_items


def source_of(x: Any) -> str | None:
    """The file an input came from, for messages; None for objects."""
    if isinstance(x, (str, Path)):
        return str(x)
    return getattr(x, "source", None)


def query_items(queries: str | Path | Sequence[QueryItem] | Mapping[str, str]) -> list[QueryItem]:
    """The queries as items: read from a file, or made from an ``{id: text}`` dict or a list."""
    if isinstance(queries, (str, Path)):
        return read_query_items(queries)
    if isinstance(queries, Mapping):
        return [QueryItem(str(q), t) for q, t in queries.items()]
    return list(queries)


def chunks_by_id(
    chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk] | None, by_id_only: bool = False
) -> Mapping[str, Chunk] | None:
    """The chunks by id. ``by_id_only``: the stage only looks chunks up by id, so a large file is
    read as a :class:`~ragassay.data.chunk_table.ChunkTable` (where each lies, not the chunks)."""
    if chunks is None:
        return None
    if isinstance(chunks, (str, Path)):
        return chunk_source(chunks) if by_id_only else {c.id: c for c in read_chunks(chunks)}
    if isinstance(chunks, ChunkTable):
        return chunks if by_id_only else dict(chunks)
    if isinstance(chunks, Mapping):
        return dict(chunks)
    items = [c if isinstance(c, Chunk) else Chunk.model_validate(c) for c in chunks]
    return {c.id: c for c in items}


def ordered_chunks(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk]) -> list[Chunk]:
    """The chunks in their given order (generate draws by it), read or validated."""
    if isinstance(chunks, (str, Path)):
        return read_chunks(chunks)
    if isinstance(chunks, Mapping):
        return list(chunks.values())
    return [c if isinstance(c, Chunk) else Chunk.model_validate(c) for c in chunks]
