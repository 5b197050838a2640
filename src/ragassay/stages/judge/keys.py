"""The parts a judgment's key is hashed from: texts encoded as JSON (by orjson when it is installed,
to the same bytes) and the identity of a pair. A key changes only when the pair's meaning does, so
these encodings must never change, or every earlier output would be judged again."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

_orjson: ModuleType | None
try:
    import orjson as _orjson_module

    _orjson = _orjson_module
except ImportError:  # optional (the ``fast`` extra)
    _orjson = None

TAILS_KEPT = 20_000  # chunks whose key part a plan keeps (a corpus larger than this is encoded again as met)


def dumps(value: Any) -> str:
    """The one JSON spelling every key hashes: sorted keys, no spaces, characters as they are."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def texts_json(values: list[str | None]) -> bytes:
    """``dumps(values).encode()`` for a list of texts, by orjson when installed (the same bytes for
    every character, checked over all of Unicode; five times as fast: a plan encodes each query and
    chunk once). A lone surrogate, which no reader lets in, is kept as it is rather than refused."""
    if _orjson is not None:
        try:
            return _orjson.dumps(values)
        except TypeError:
            pass
    return dumps(values).encode("utf-8", "surrogatepass")


def pair_key(query_id: str, chunk_id: str) -> str:
    """A judgment's identity in its output, by which a rerun finds it: the query's id and the chunk's."""
    return f"{query_id}\t{chunk_id}"
