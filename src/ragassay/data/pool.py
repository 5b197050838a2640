"""Which runs a file of judged labels was made from, and how deep: the pool.

Labels made by judging runs' top results (TREC's pooling: ``ragassay run`` judges the union of every
run's top ``depth``, ``ragassay judge`` one run's) hold nothing about the chunks no pooled run found.
A run scored on a pool it alone made finds every relevant chunk the pool knows by construction (its
recall at the pool's depth is 1.0), so a score must say which pool it rests on. A run is known again
by a fingerprint of its top results (``pool_digest``), not by its file's name: two files of one
ranking are one run, and a run named like a pooled one but ranked otherwise is another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from .origin import PoolRun


def pool_digest(top: Mapping[str, list[str]] | Iterable[tuple[str, list[str]]]) -> str:
    """A fingerprint of each query's top chunk ids in rank order (queries in id order): equal for
    two runs exactly when they put the same chunks at the same places down to the depth given."""
    items = top.items() if isinstance(top, Mapping) else top
    h = hashlib.sha256()
    for qid, ids in sorted(items, key=lambda kv: kv[0]):
        h.update(qid.encode("utf-8", "surrogatepass"))
        for cid in ids:
            h.update(b"\x1f" + cid.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()[:20]


def pooled_run(name: str, run: object, depth: int) -> PoolRun:
    """A run (a ``Run``, or anything with ``top_ids(depth)``) as one member of a pool."""
    return PoolRun(name=name, digest=pool_digest(run.top_ids(depth)), depth=depth)  # type: ignore[attr-defined]


def membership(pool: tuple[PoolRun, ...], run: object) -> PoolRun | None:
    """The pool's entry for ``run`` (the same top results down to that entry's depth), or None."""
    tops: dict[int, str] = {}
    for member in pool:
        if member.depth not in tops:
            tops[member.depth] = pool_digest(run.top_ids(member.depth))  # type: ignore[attr-defined]
        if tops[member.depth] == member.digest:
            return member
    return None
