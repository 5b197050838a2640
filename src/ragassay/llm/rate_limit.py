"""Requests and tokens per minute, held by token buckets shared by every call of one client."""

from __future__ import annotations

import asyncio
from typing import Any


class RateLimiter:
    """Token buckets for requests and tokens per minute (either may be None: unlimited)."""

    def __init__(self, rpm: float | None, tpm: float | None, sleep, clock):
        self.rpm, self.tpm = rpm, tpm
        self._sleep, self._clock = sleep, clock
        self._req = max(1.0, (rpm or 0) / 6)  # start with ten seconds' worth
        self._tok = max(1.0, (tpm or 0) / 6)
        self._last = clock()
        self._locks: dict[Any, asyncio.Lock] = {}  # one per event loop: a lock is bound to the loop it first waits in

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            for gone in [k for k in list(self._locks) if k.is_closed()]:
                self._locks.pop(gone, None)
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def acquire(self, tokens: int) -> None:
        if not self.rpm and not self.tpm:
            return
        async with self._lock():
            while True:
                now = self._clock()
                elapsed, self._last = now - self._last, now
                if self.rpm:
                    self._req = min(max(1.0, self.rpm / 6), self._req + elapsed * self.rpm / 60)
                if self.tpm:
                    self._tok = min(max(float(tokens), self.tpm / 6), self._tok + elapsed * self.tpm / 60)
                need = 0.0
                if self.rpm and self._req < 1:
                    need = max(need, (1 - self._req) * 60 / self.rpm)
                if self.tpm and self._tok < tokens:
                    need = max(need, (tokens - self._tok) * 60 / self.tpm)
                if need <= 0:
                    if self.rpm:
                        self._req -= 1
                    if self.tpm:
                        self._tok -= tokens
                    return
                await self._sleep(need)
