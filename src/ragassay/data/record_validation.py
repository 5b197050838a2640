"""JSON Lines validated as ragassay's records (pydantic models), every bad line said at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from .line_problems import LineProblems
from .lines import iter_jsonl


def read_records(
    path: str | Path,
    model: Any,
    what: str,
    prepare: Any = None,
    rows: Iterable[tuple[int, dict[str, Any]]] | None = None,
    after: Any = None,
    problems: Any = None,
) -> list[tuple[int, Any]]:
    """Validate each JSONL line as ``model`` (a pydantic class with an ``id``); ids must be unique.

    Returns ``(line number, record)`` pairs; ``prepare(object, line number)`` may rewrite each raw
    object first. ``rows`` gives the (line, object) pairs when they come from another kind of file;
    ``after(record, object)`` may finish a record from its object. ``problems``: a
    :class:`~ragassay.data.line_problems.LineProblems` holding the bad lines found before (said
    with these, in file order).
    """
    out: list[tuple[int, Any]] = []
    seen: dict[str, int] = {}
    problems = LineProblems(path) if problems is None else problems  # every bad line, said at the end in file order
    for no, obj in iter_jsonl(path, problems=problems) if rows is None else rows:
        try:
            if prepare is not None:
                obj = prepare(obj, no)
            record = validate_record(obj, model, path, no)
            if after is not None:
                record = after(record, obj)
            if record.id in seen:
                raise InputError(f"{what} id {record.id!r} appears twice (first on line {seen[record.id]})", path, no)
        except InputError as e:
            problems.add_error(e)
            continue
        seen[record.id] = no
        out.append((no, record))
    problems.raise_if_any()
    if not out:
        raise InputError(f"no {what}s in file", path)
    return out


def validate_record(obj: dict[str, Any], model: Any, path: str | Path | None, no: int | None) -> Any:
    """``obj`` as ``model`` (a pydantic class); what does not fit is one error naming file and line."""
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        raise InputError(_pydantic_message(e, getattr(obj, "spelling", None)), path, no) from None


def beir_id(obj: dict[str, Any], no: int = 0) -> dict[str, Any]:
    """A BEIR corpus line's ``_id`` as ``id``; an ir_datasets docs line (``doc_id``, ``text``: one
    document, one chunk) gives its ``doc_id``. Only for a line of a file :mod:`.chunk_lines` has read
    whole already (which refuses a chunk whose only id would be its document's)."""
    if "id" not in obj and "_id" in obj:
        obj = {k: v for k, v in obj.items() if k != "_id"} | {"id": obj["_id"]}
    elif "id" not in obj and "doc_id" in obj:
        obj = {**obj, "id": obj["doc_id"]}
    return obj


def _pydantic_message(e: Any, spelling: Callable[[str], str] | None = None) -> str:
    return "; ".join(validation_message(err, spelling) for err in e.errors())


def validation_message(err: Mapping[str, Any], spelling: Callable[[str], str] | None = None) -> str:
    """One pydantic error as a user reads it: where, and what is wrong. A field a record of
    ragassay's does not have says so, and what to do (its records are read back exactly as written).
    ``spelling(field)`` gives the name the file uses for a field (a peer's row: ``retrieved_contexts``
    where ragassay says ``contexts``)."""
    parts = [str(x) for x in err.get("loc", ())]
    if parts and spelling is not None:
        parts[0] = spelling(parts[0])
    loc = ".".join(parts) or "record"
    if err.get("type") == "extra_forbidden":
        return (
            f"{loc}: not a field ragassay writes in this record (its records are read back exactly as "
            "written: keep your own fields in another file, joined by id)"
        )
    return f"{loc}: {err.get('msg')}"
