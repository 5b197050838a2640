"""A value computed on another thread while the caller goes on with other work.

Hashing a large array and scanning a file both let go of the GIL, so starting them on a thread
and asking for the value later hides their time behind the work done meanwhile. The value is held
by this small object rather than by a list the thread appends to, so a reader sees at once what the
thread leaves behind: one value, or nothing when the function raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``make()`` run on a daemon thread as soon as the object is built."""

    def __init__(self, make: Callable[[], T], name: str):
        self._value: T | None = None
        self._made = False
        self._make = make
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self._value = self._make()
        self._made = True  # set only after the value: a function that raised leaves nothing made

    def result(self) -> T | None:
        """The value, once the thread has finished; None when the function raised (the caller then
        does the work itself, as it would have without the thread)."""
        self.thread.join()
        return self._value if self._made else None
