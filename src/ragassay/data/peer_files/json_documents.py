"""A peer's file read as one JSON document (as LlamaIndex and ranx save them) rather than as JSON
Lines.

orjson reads the document when it is installed, because ranx's files hold millions of pairs; the
standard library reads it otherwise, and wherever orjson refuses the text.
"""

from __future__ import annotations

import json
from typing import Any

from ..lines import optional_orjson
from .sample_fields import ROW_LISTS


def whole_json(data: bytes) -> Any:
    """The file as one JSON value, or None when it is not one (JSON Lines of several objects, or bad
    JSON: the line readers then name the line). Only files that start with ``{`` or ``[`` are tried."""
    if data.lstrip()[:1] not in (b"{", b"["):
        return None
    orjson = optional_orjson()  # ranx's files hold millions of pairs: about 3x faster than the standard library
    if orjson is not None:
        try:  # (an integer past 64 bits may come back a float: as a grade it is out of range either way)
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # NaN, a lone surrogate: the standard library reads it or says why not
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def json_document(data: bytes) -> dict[str, Any] | None:
    """The file as one JSON object when it is one document rather than JSON Lines: an object spread
    over lines (as LlamaIndex and ranx save them), or a one-line object holding a list of rows
    (``{"examples": [...]}``) or LlamaIndex's ``queries``. None for JSON Lines, whose first line is a
    whole object: such a file is never parsed whole here."""
    stripped = data.lstrip()
    if stripped[:1] != b"{":
        return None
    first = stripped.split(b"\n", 1)[0]
    if whole_object(first):
        if not _single_line(data):
            return None
        obj = json.loads(first)
        rows = any(isinstance(obj.get(k), list) for k in ROW_LISTS) or isinstance(obj.get("queries"), dict)
        return obj if rows else None
    document = whole_json(data)
    return document if isinstance(document, dict) else None


def _single_line(data: bytes) -> bool:
    """Whether the file holds one line of content (a one-line JSONL file is JSONL, not a document)."""
    return data.strip().count(b"\n") == 0


def whole_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, UnicodeDecodeError):
        return False
