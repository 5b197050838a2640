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


def merge_records(paths: Sequence[str | Path]) -> Merged:
    from ..data.io import iter_jsonl
    by_key: dict[str, dict] = {}
    out = Merged([], len(paths))
    for path in paths:
        for no, rec in iter_jsonl(path):
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
