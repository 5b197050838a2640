"""Combine the outputs of shards (``--shard i/n`` on several machines) into one file.

Records are parsed into their models and matched by their merge key (every stage record carries
a ``key``; generated questions their ``id``).
The same record twice is kept once; an ok record beats an error record for the same key (one
shard succeeded where another failed); two different ok records for one key are a conflict: the
first file's is kept, and the conflict is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..data.lines import iter_jsonl
from ..data.record_files import legacy_kind, parse_record
from ..data.records import RECORD_FIELD, WrittenRecord
from ..data.writers import write_jsonl
from ..errors import InputError


@dataclass
class Merged:
    records: list[WrittenRecord]
    files: int
    duplicates: int = 0
    replaced_errors: int = 0
    conflicts: list[str] = field(default_factory=list)  # keys with different ok records

    @property
    def exit_code(self) -> int:
        """3 when some key has different ok records in different files (the first file's is kept), else 0."""
        return 3 if self.conflicts else 0


MERGED_KINDS = ("judgment", "coverage", "check", "question")  # what shards write


def merge_records(paths: Sequence[str | Path]) -> Merged:
    """One file of the records of several shards. Every record must be a record of one stage's
    contract (a grade of 7 is not), and all of one kind: judgments are never mixed with checks.
    A record's kind is the one its line names, or for a line written before records named it, the
    kind its fields make it."""
    by_key: dict[str, WrittenRecord] = {}
    out = Merged([], len(paths))
    first: tuple[str, str | Path, int] | None = None  # the kind of the first record, and where it is
    for path in paths:
        for no, obj in iter_jsonl(path):
            kind = legacy_kind(obj) if RECORD_FIELD not in obj else None
            if RECORD_FIELD not in obj and kind not in MERGED_KINDS:
                raise InputError(
                    "not a record of a ragassay stage (judgments, coverage, checks or questions)", path, no
                )
            rec = parse_record(obj, path, no, kind)
            if rec.KIND not in MERGED_KINDS:
                raise InputError(
                    f"a {rec.KIND} record: merge combines the judgments, coverage, checks or questions of shards",
                    path,
                    no,
                )
            if first is None:
                first = (rec.KIND, path, no)
            elif rec.KIND != first[0]:
                raise InputError(
                    f"a {rec.KIND} record, but {first[1]}:{first[2]} holds {first[0]} records: merge "
                    "the outputs of one stage at a time",
                    path,
                    no,
                )
            key = rec.merge_key()
            if not key:
                raise InputError("a record without a 'key' (or 'id'): not a ragassay stage output", path, no)
            old = by_key.get(key)
            if old is None:
                by_key[key] = rec
            elif old == rec:
                out.duplicates += 1
            elif not old.ok and rec.ok:
                by_key[key] = rec
                out.replaced_errors += 1
            elif not rec.ok:
                out.duplicates += 1  # an error where another file has the record: the record stays
            else:
                out.conflicts.append(key)
    out.records = list(by_key.values())
    return out


def write_merged(paths: Sequence[str | Path], output: str | Path) -> Merged:
    if len(paths) < 1:
        raise InputError("merge needs at least one file")
    merged = merge_records(paths)
    write_jsonl(output, merged.records)
    return merged
