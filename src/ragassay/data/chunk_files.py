"""The chunks reader: JSON Lines (BEIR corpus lines too), a BEIR folder, or LlamaIndex's corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .beir_folders import dataset_member
from .chunk_lines import ChunkLines
from .lines import check_id, iter_jsonl
from .peer_files.peer_queries import llamaindex_corpus
from .record_validation import validate_record
from .records import Chunk


def read_chunks(path: str | Path) -> list[Any]:
    """Read chunks (``id``, ``text``, ...) from JSONL; BEIR corpus lines (``_id``) and folders are accepted."""
    path = dataset_member(path, "chunks")
    corpus = llamaindex_corpus(path)
    if corpus is not None:  # LlamaIndex's EmbeddingQAFinetuneDataset: {"corpus": {id: text}, ...}
        return [
            validate_record({"id": check_id(k, "chunk id", path, None), "text": v}, Chunk, path, None)
            for k, v in corpus.items()
        ]
    lines = ChunkLines(path, validate_record)  # the id rule (no id invented), every bad line said at the end
    out = []
    for no, obj in iter_jsonl(path, problems=lines.problems):
        chunk = lines.take(obj, no)
        if chunk is not None:
            out.append(chunk)
    lines.finish()
    return out
