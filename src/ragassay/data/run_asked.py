"""Which queries a run was asked: kept beside a run file, so a query that returned nothing stays a query.

A TREC run lists rows, one per retrieved chunk: a query whose ranking is empty cannot be written in
it, and once it is read back it is no longer in the run at all ("missing from the run", skipped by
trec_eval's default). Scored in memory the same retriever counts that query as 0. So that one retriever
has one score by every path, ``retrieve`` (and :func:`ragassay.write_run` of a run holding queries
without results) writes ``RUN.run.json`` beside the run: the query ids asked, the run's name, the
retriever, the queries file and its digest, and the digest of the run file it describes. Every reader of
run files then holds each asked query, with an empty ranking where the file has no row for it.

A sidecar describes one file: once the run file is edited (its digest differs) the sidecar is not
trusted: a warning says so and it is ignored. A symlinked run file is its target: the target's
sidecar is read. The sidecar is written atomically and read strictly (an unknown field or a wrong
type is an error naming it), as ``FILE.origin.json`` is (:mod:`ragassay.data.origin`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import InputError
from .lines import write_lines_atomic
from .origin import today

SIDECAR_SUFFIX = ".run.json"
RECORD = "run_queries@1"
_said: set[tuple[str, str]] = set()  # (sidecar, digest) pairs already warned about in this process


@dataclass(frozen=True)
class Asked:
    """What a run file was asked: ``queries`` (every query id, in the order asked) and who asked."""

    queries: tuple[str, ...]
    run_digest: str  # the run file's bytes, as written (see file_digest)
    record: str = RECORD
    run: str | None = None  # the run's name (its TREC tag)
    retriever: str | None = None  # MODULE:NAME or the kind of object it was
    queries_file: str | None = None
    queries_digest: str | None = None
    k: int | None = None
    command: str | None = None
    date: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "run": self.run,
            "retriever": self.retriever,
            "queries_file": self.queries_file,
            "queries_digest": self.queries_digest,
            "k": self.k,
            "command": self.command,
            "date": self.date,
            "run_digest": self.run_digest,
            "queries": list(self.queries),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Asked:
        """Read as strictly as it is written: every field known, of its type."""
        if not isinstance(data, dict):
            raise ValueError(f"an object, got {type(data).__name__}")
        names = [f.name for f in fields(cls)]
        extra = [k for k in data if k not in names]
        if extra:
            raise ValueError(f"unknown field {extra[0]!r} (fields: {', '.join(names)})")
        for key in ("queries", "run_digest"):
            if key not in data:
                raise ValueError(f"field {key!r} is missing")
        if data.get("record", RECORD) != RECORD:
            raise ValueError(f"record: {data['record']!r}, expected {RECORD!r}")
        queries = data["queries"]
        _check_queries(queries)
        _check_texts(data)
        k = data.get("k")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int)):
            raise ValueError(f"k: an integer, got {json.dumps(k)}")
        return cls(**{**data, "queries": tuple(queries)})


def _check_queries(queries: Any) -> None:
    """The queries asked are a list of distinct, non-empty query ids."""
    if not isinstance(queries, list) or not all(isinstance(q, str) and q for q in queries):
        raise ValueError("queries: a list of query ids (non-empty strings)")
    if len(set(queries)) != len(queries):
        raise ValueError("queries: a query id is listed twice")


def _check_texts(data: dict) -> None:
    """The fields that are strings are strings (all but the run's digest may be missing)."""
    for key in ("run_digest", "run", "retriever", "queries_file", "queries_digest", "command", "date"):
        value = data.get(key)
        if not (isinstance(value, str) or (value is None and key != "run_digest")):
            raise ValueError(f"{key}: a string, got {json.dumps(value)}")


def sidecar_path(path: str | Path) -> Path:
    return Path(f"{path}{SIDECAR_SUFFIX}")


def file_digest(path: str | Path) -> str:
    """The digest of a file's bytes as they lie on disk (read a megabyte at a time)."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def asked_digest(data: bytes) -> str:
    """:func:`file_digest` of bytes already read (a caller that read the file takes it from them)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def write_asked(path: str | Path, queries: Sequence[str], **about: Any) -> Path:
    """Write ``RUN.run.json`` beside the run file at ``path`` (already written): the queries asked
    and ``about`` (run, retriever, queries_file, queries_digest, k, command), with the run's digest."""
    asked = Asked(queries=tuple(map(str, queries)), run_digest=file_digest(path), date=today(), **about)
    side = sidecar_path(path)
    write_lines_atomic(side, [json.dumps(asked.to_dict(), indent=1, ensure_ascii=False)])
    return side


def remove_asked(path: str | Path) -> None:
    """A run file written again without queries lacking results: an earlier sidecar would be wrong now."""
    sidecar_path(path).unlink(missing_ok=True)


def _sidecar_of(path: str | Path) -> Path | None:
    side = sidecar_path(path)
    if side.is_file():
        return side
    try:  # a symlink is its target: the target's sidecar says what it was asked
        real = Path(path).resolve()
    except (OSError, RuntimeError):
        return None
    if real == Path(path).absolute():
        return None
    side = sidecar_path(real)
    return side if side.is_file() else None


def read_asked(path: str | Path | None, quiet: bool = False) -> Asked | None:
    """The queries the run file at ``path`` was asked, from its sidecar; None without one, and None
    (with a warning on stderr, once) when the sidecar describes another content of the file."""
    if path is None or str(path) == "-":
        return None
    side = _sidecar_of(path)
    if side is None:
        return None
    try:
        asked = Asked.from_dict(json.loads(side.read_bytes()))
    except (ValueError, TypeError) as e:
        raise InputError(
            f"not a run sidecar ragassay can read ({str(e).splitlines()[0]}); delete it or write the run again", side
        ) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", side) from None
    try:
        now = file_digest(path)
    except OSError:
        return None  # the run file itself is missing or unreadable: its reader says so
    if now != asked.run_digest:
        if not quiet and (str(side), now) not in _said:
            _said.add((str(side), now))
            print(
                f"warning: {side.name} does not describe {Path(path).name} (the run file changed after it was "
                f"written), so the queries it says were asked are ignored: queries without results in the run "
                f"file are not known; delete {side.name} or write the run again",
                file=sys.stderr,
            )
        return None
    return asked


def with_asked(run: Any, path: str | Path | None) -> Any:
    """``run`` (read from ``path``) holding every query its sidecar says was asked: those with no row
    join its queries with an empty ranking (they score 0). The run is returned as it is without one."""
    asked = read_asked(path)
    if asked is None:
        return run
    known = set(run.queries)
    extra = [q for q in asked.queries if q not in known]
    if extra:
        run.queries = run.queries + extra
    run.asked = asked
    return run
