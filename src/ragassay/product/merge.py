"""Combine the outputs of shards (``--shard i/n`` on several machines) into one file.

Records are matched by ``key`` (every stage record carries one; generated questions by ``id``).
The same record twice is kept once; an ok record beats an error record for the same key (one
shard succeeded where another failed); two different ok records for one key are a conflict: the
first file's is kept, and the conflict is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError


@dataclass
class Merged:
    records: list[dict]
    files: int
    duplicates: int = 0
    replaced_errors: int = 0
    conflicts: list[str] = field(default_factory=list)  # keys with different ok records

    @property
    def exit_code(self) -> int:
        """3 when some key has different ok records in different files (the first file's is kept), else 0."""
        return 3 if self.conflicts else 0


def record_kind(rec: dict) -> str | None:
    """Which stage wrote a record, from the fields its contract requires (None: no stage's)."""
    if {"query_id", "chunk_id"} <= rec.keys() and "grade" in rec:
        return "judgment"
    if "query_id" in rec and "coverage" in rec:
        return "coverage"
    if {"id", "question", "answer", "difficulty"} <= rec.keys():
        return "question"
    if "id" in rec and "label" in rec:
        return "check"
    return None


def _models() -> dict:
    from ..data.records import Check, Coverage, Judgment, Question
    return {"judgment": Judgment, "coverage": Coverage, "check": Check, "question": Question}


def merge_records(paths: Sequence[str | Path]) -> Merged:
    """One file of the records of several shards. Every record must be a record of one stage's
    contract (a grade of 7 is not), and all of one kind: judgments are never mixed with checks."""
    from pydantic import ValidationError

    from ..data.io import iter_jsonl
    models = _models()
    by_key: dict[str, dict] = {}
    out = Merged([], len(paths))
    first: tuple[str, str | Path, int] | None = None  # the kind of the first record, and where it is
    for path in paths:
        for no, rec in iter_jsonl(path):
            kind = record_kind(rec)
            if kind is None:
                raise InputError("not a record of a ragassay stage (judgments, coverage, checks or questions)",
                                 path, no)
            if first is None:
                first = (kind, path, no)
            elif kind != first[0]:
                raise InputError(f"a {kind} record, but {first[1]}:{first[2]} holds {first[0]} records: merge "
                                 "the outputs of one stage at a time", path, no)
            try:
                models[kind].model_validate(rec)
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err.get("loc", ())) or kind
                raise InputError(f"breaks the {kind} record contract: {where}: {err.get('msg')}", path, no) from None
            key = rec.get("key") or rec.get("id")
            if not isinstance(key, str) or not key:
                raise InputError("a record without a 'key' (or 'id'): not a ragassay stage output", path, no)
            old = by_key.get(key)
            if old is None:
                by_key[key] = rec
            elif old == rec:
                out.duplicates += 1
            elif old.get("status", "ok") != "ok" and rec.get("status", "ok") == "ok":
                by_key[key] = rec
                out.replaced_errors += 1
            elif rec.get("status", "ok") != "ok":
                out.duplicates += 1  # an error where another file has the record: the record stays
            else:
                out.conflicts.append(key)
    out.records = list(by_key.values())
    return out


def write_merged(paths: Sequence[str | Path], output: str | Path) -> Merged:
    from ..data.io import write_jsonl
    if len(paths) < 1:
        raise InputError("merge needs at least one file")
    merged = merge_records(paths)
    write_jsonl(output, merged.records)
    return merged
