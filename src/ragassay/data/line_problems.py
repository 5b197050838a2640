"""Every bad line of a file in one error, in file order, up to a cap.

A reader that stopped at the first bad line made a user fix a file one line per run. A reader that
can go on past a bad line (each line stands alone: a JSON Lines record, a query) collects what is
wrong with each and raises once at the end, in one line of text: one bad line said as
``FILE:LINE: what``, several as ``FILE: N lines are wrong: line L: what; line M: what``, the first
``CAP`` of them, then ``... and N more``. The error's ``line`` is the first bad line, for callers
that go to it.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError

CAP = 10


class LineProblems:
    """The bad lines of one file, as (line, what is wrong), in the order found (file order)."""

    def __init__(self, path: str | Path | None, cap: int = CAP):
        self.path = path
        self.cap = cap
        self.found: list[tuple[int | None, str]] = []

    def add(self, line: int | None, message: str) -> None:
        self.found.append((line, message))

    def add_error(self, e: InputError) -> None:
        """An error a line's check raised, kept as that line's problem."""
        self.found.append((e.line, e.message))

    def __bool__(self) -> bool:
        return bool(self.found)

    def error(self) -> InputError:
        """The one error saying every problem (up to the cap)."""
        found = sorted(self.found, key=lambda f: (f[0] is None, f[0] or 0))  # file order (found in any order)
        if len(found) == 1:
            line, message = found[0]
            return InputError(message, self.path, line)
        shown = found[: self.cap]
        lines = "; ".join(f"line {line}: {message}" if line is not None else message for line, message in shown)
        more = len(found) - len(shown)
        e = InputError(f"{len(found)} lines are wrong: {lines}" + (f"; ... and {more} more" if more else ""), self.path)
        e.line = found[0][0]
        return e

    def raise_if_any(self) -> None:
        if self.found:
            raise self.error()
