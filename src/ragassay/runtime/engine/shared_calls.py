"""Identical calls of one run asked once (:class:`SharedCalls`): items with equal inputs under
different ids keep their own records and keys, and only the request is shared, so nothing is paid
twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel

from ...llm.client import LLM
from .work import Call, WorkItem


class SharedCalls:
    """Identical calls of one run are asked once. Items with equal inputs under different ids (two
    chunks with the same text, two answers alike) keep their own records and keys; only the
    request is shared, so nothing is paid twice, with or without the answer cache.

    An answer is kept while items that planned the same first-step call are still to come (a
    count made from the plan), and for later steps (whose calls are known only as items run) for
    the rest of the run. A failed call is not kept: a later item asks again."""

    def __init__(self, items: Iterable[WorkItem]):
        # first-step calls, by digest (a plan holds no prompts): how many items are still to ask each;
        # only digests asked more than once are kept. Counted in one array (16 bytes a call, not a
        # dict entry of ~100): a million calls take 16 MB while they are counted
        digests = bytearray()
        for it in items:
            for c in it.calls:
                digests += c.digest()
        self._left: dict[bytes, int] = repeated_digests(digests)
        self._futures: dict[bytes, asyncio.Future] = {}

    async def ask(self, call: Call, llms: Sequence[LLM], first_step: bool = True) -> BaseModel:
        digest = call.digest()
        fut = self._futures.get(digest)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._futures[digest] = fut
            try:
                fut.set_result(await call.ask(llms))
            except asyncio.CancelledError:
                fut.cancel()
                self._futures.pop(digest, None)
                raise
            except BaseException as e:  # LLMError, Deferred: every item waiting on it gets it too
                fut.set_exception(e)
                self._futures.pop(digest, None)
        try:
            return await asyncio.shield(fut) if not fut.done() else fut.result()
        finally:
            self._release(digest, first_step)

    def _release(self, digest: bytes, first_step: bool) -> None:
        left = self._left.get(digest)
        if left is None:  # a first-step call of one item only: nobody else waits for it
            if first_step and digest in self._futures and self._futures[digest].done():
                del self._futures[digest]
            return
        if left <= 1:
            del self._left[digest]
            self._futures.pop(digest, None)
        else:
            self._left[digest] = left - 1


def repeated_digests(digests: bytearray) -> dict[bytes, int]:
    """How many times each 16-byte digest of ``digests`` that comes more than once comes. Its
    first 8 bytes are sorted to find the candidates (8 bytes a digest while it is done: not a
    sorted copy of all, 62 MB more at a million digests, measured, against 18), whose whole
    digests are then counted."""
    if not digests:
        return {}

    heads = np.frombuffer(digests, dtype="<u8")[::2].copy()
    heads.sort()
    twice = np.unique(heads[1:][heads[1:] == heads[:-1]])
    del heads
    if not twice.size:
        return {}
    view = np.frombuffer(digests, dtype="<u8")[::2]
    at = np.searchsorted(twice, view)
    np.minimum(at, twice.size - 1, out=at)
    candidates = np.frombuffer(digests, dtype="V16")[twice[at] == view]
    counted = Counter(row.tobytes() for row in candidates)
    return {d: n for d, n in counted.items() if n > 1}
