"""``ragassay.api.retrieve``: what ``ragassay retrieve`` calls, as a Python function."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.records import Chunk
from ..stages.queries import QueryItem
from ..stages.retrieve import Retrieval
from ..stages.retrieve import retrieve as run_and_write


def retrieve(
    retriever: Any,
    queries: str | Path | Sequence[QueryItem] | Mapping[str, str],
    *,
    chunks: str | Path | Sequence[Chunk | dict | str] | Mapping[str, Chunk] | None = None,
    id_field: str | None = None,
    k: int = 100,
    output: str | Path | None = None,
    name: str | None = None,
    quiet: bool = False,
) -> Retrieval:
    """Run a retriever over the queries: what ``ragassay retrieve`` calls. Returns a
    :class:`~ragassay.stages.retrieve.Retrieval` whose ``.run`` is the run (``.to_dict()`` the
    command's result).

    ``retriever`` is a function of the query text (ids or ``(id, score)`` pairs, best first), a
    LlamaIndex retriever (``.retrieve``), a LangChain retriever (``.invoke``), a factory making one (a
    class, or a callable taking no positional argument), or ``"module:NAME"`` / ``"file.py:NAME"``
    naming any of these. ``id_field`` says where a returned node or document holds the chunk id:
    ``id`` (the default: LlamaIndex's node_id, LangChain's Document.id), ``ref_doc_id`` or
    ``metadata.KEY``. With ``chunks`` (a file, chunks, dicts or ids), every returned id must be one of
    theirs (the first that is not stops the run, naming it) and ``.chunks`` counts how they met.
    ``output`` writes the run (TREC) and its latency beside it.
    """
    return run_and_write(
        retriever, queries, chunks=chunks, id_field=id_field, k=k, output=output, name=name, quiet=quiet
    )
