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


class PoolDigest:
    """A fingerprint of each query's top chunk ids in rank order, built a query at a time in any order
    of the queries (a file read by blocks gives them block by block): the sum of one hash per query."""

    MODULUS = 1 << 128

    def __init__(self) -> None:
        self.total = 0

    def add(self, qid: str, ids: Iterable[str]) -> None:
        h = hashlib.sha256(qid.encode("utf-8", "surrogatepass"))
        for cid in ids:
            h.update(b"\x1f" + cid.encode("utf-8", "surrogatepass"))
        self.total = (self.total + int.from_bytes(h.digest()[:16], "big")) % self.MODULUS

    def hexdigest(self) -> str:
        return f"{self.total:032x}"[:20]


def pool_digest(top: Mapping[str, list[str]] | Iterable[tuple[str, list[str]]]) -> str:
    """The fingerprint of a run's top chunk ids (``PoolDigest``): equal for two runs exactly when they
    put the same chunks at the same places down to the depth given, whatever order the queries come in."""
    digest = PoolDigest()
    for qid, ids in top.items() if isinstance(top, Mapping) else top:
        digest.add(qid, ids)
    return digest.hexdigest()


def pooled_run(name: str, run: object, depth: int) -> PoolRun:
    """A run (a ``Run``, or anything with ``top_ids(depth)``) as one member of a pool."""
    return PoolRun(name=name, digest=pool_digest(run.top_ids(depth)), depth=depth)  # type: ignore[attr-defined]


def membership(pool: tuple[PoolRun, ...], run: object) -> PoolRun | None:
    """The pool's entry for ``run`` (the same top results down to that entry's depth), or None."""
    tops = {depth: pool_digest(run.iter_top_ids(depth)) for depth in {m.depth for m in pool}}  # type: ignore[attr-defined]
    return member_of(pool, tops)


def member_of(pool: tuple[PoolRun, ...], digests: Mapping[int, str]) -> PoolRun | None:
    """The pool's entry whose digest at its depth is the run's (``digests``: depth -> digest)."""
    return next((m for m in pool if digests.get(m.depth) == m.digest), None)
