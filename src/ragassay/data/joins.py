"""Two files meet by id only with a count of what matched on each side.

Wherever ragassay joins files by id (queries x run in judge, answers x run and qrels in check,
qrels x run in evaluate, compare and report, two label files in agree and label), it makes a
:class:`Join`: how many ids each side holds and how many met. No id in common is an error naming
both files and a few ids of each (the usual cause: ids from two different sets, ``q01`` against
``q-3f2a...``); a partial overlap is said as a warning with the counts; the counts go into the
command's JSON. Nothing is then said about zero items.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InputError

SHOWN = 3  # ids of each side named in a message


@dataclass(frozen=True)
class Side:
    role: str  # what the side is, in words: "the answers", "the run"
    source: str | None  # the file, when there is one
    ids: frozenset[str]

    def name(self) -> str:
        return f"{self.role} ({self.source})" if self.source else self.role

    def some(self, leave_out: frozenset[str] = frozenset()) -> str:
        shown = sorted(self.ids - leave_out)[:SHOWN]
        more = len(self.ids - leave_out) - len(shown)
        return ", ".join(shown) + (", ..." if more > 0 else "")


@dataclass(frozen=True)
class Join:
    """How two id sets met: ``what`` names the ids ("query ids")."""

    what: str
    left: Side
    right: Side

    @classmethod
    def of(
        cls,
        what: str,
        left_role: str,
        left_ids: Iterable[str],
        right_role: str,
        right_ids: Iterable[str],
        left_source: object = None,
        right_source: object = None,
    ) -> Join:
        return cls(
            what,
            Side(left_role, _text(left_source), frozenset(map(str, left_ids))),
            Side(right_role, _text(right_source), frozenset(map(str, right_ids))),
        )

    @property
    def matched(self) -> int:
        return len(self.left.ids & self.right.ids)

    @property
    def complete(self) -> bool:
        return self.left.ids == self.right.ids

    def to_dict(self) -> dict:
        m = self.matched
        return {
            "what": self.what,
            "left": {"role": self.left.role, "file": self.left.source, "ids": len(self.left.ids), "matched": m},
            "right": {"role": self.right.role, "file": self.right.source, "ids": len(self.right.ids), "matched": m},
        }

    def counts(self) -> str:
        """ "16 of 16 answers' query ids are in the run's 50" """
        return (
            f"{self.what}: {self.matched} of {len(self.left.ids)} in {self.left.role} met "
            f"{len(self.right.ids)} in {self.right.role}"
        )

    def require_overlap(self) -> Join:
        """Raise when the two sides hold ids and none meet: an error naming both files and a few
        ids of each. Returns the join, for chaining."""
        if self.left.ids and self.right.ids and not self.matched:
            raise InputError(
                f"no {self.what} in common between {self.left.name()} and {self.right.name()} "
                f"({self.left.role}: {self.left.some()}; {self.right.role}: {self.right.some()}); "
                "are they from the same set?"
            )
        return self

    def warning(self, sides: tuple[str, ...] = ("left", "right")) -> str | None:
        """A sentence when some ids of the named sides found no partner; None when all met. A side
        that may hold more than the other by design (a run over every query, answers to some) is
        left out of ``sides``; its counts are in :meth:`to_dict` all the same."""
        if not self.matched:
            return None
        lost_left = self.left.ids - self.right.ids if "left" in sides else frozenset()
        lost_right = self.right.ids - self.left.ids if "right" in sides else frozenset()
        parts = []
        if lost_left:
            parts.append(
                f"{len(lost_left)} of {len(self.left.ids)} in {self.left.role} are not in "
                f"{self.right.role} (e.g. {self.left.some(self.right.ids)})"
            )
        if lost_right:
            parts.append(
                f"{len(lost_right)} of {len(self.right.ids)} in {self.right.role} are not in "
                f"{self.left.role} (e.g. {self.right.some(self.left.ids)})"
            )
        return f"{self.what}: " + "; ".join(parts) if parts else None

    def warn(self, quiet: bool = False, sides: tuple[str, ...] = ("left", "right")) -> Join:
        """Print :meth:`warning` on stderr (a command's partial overlap); returns the join."""
        message = self.warning(sides)
        if message and not quiet:
            print(f"warning: {message}", file=sys.stderr)
        return self


def _text(source: object) -> str | None:
    return None if source is None else str(source)
