"""Where each key's newest record lies in an output store, and which keys' newest record failed.

Keys read from files live in a dict (key -> location). A run that says its plan first
(:meth:`KeyLocations.bind`: keys all distinct, in plan order) keeps the location of a record it
appends, for a planned key not already held, in an array aligned with the plan: 8 bytes a record
instead of a dict entry and an int object (~100 bytes). A million-pair run's store then does not
grow with what it writes. Every question by key is still answered (the plan's positions are
looked up by key only when a question needs it: a map built once, on first need); the engine asks
by plan position (:meth:`KeyLocations.at`), which needs no map.

Keys read from a finished output's index (all of one width, ASCII, every record ok) are first held
as the index holds them, packed, with their locations in an array (:meth:`KeyLocations.hold_packed`):
a rerun of the same plan asks for them in the order it planned them last time, query by query and
then as a whole, and those questions are answered by comparing bytes. The first other question puts
them in the dict. A rerun of a million finished pairs so holds 32 MB of keys, not 150.

A location is never 0 (it packs a line's length, and a record's line is never empty): 0 in the
array means "nothing appended at this position".
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat

from .plan_keys import KeyList


class KeyLocations:
    """key -> location of its newest record (see the module's docstring), and the failed keys."""

    __slots__ = ("_where", "failed", "_plan", "_at", "_count", "_positions", "_packed", "_cursor")

    def __init__(self) -> None:
        self._where: dict[str, int] = {}  # keys read from the files, or appended outside the plan
        self.failed: set[str] = set()  # keys whose newest record is not ok
        self._packed: tuple[bytes, int, array] | None = None  # keys of an index not yet in the dict (see hold_packed)
        self._cursor = 0  # how many of those were asked for, in order
        self._plan: Sequence[str] | None = None
        self._at = array("q")  # a location per plan position (0: none)
        self._count = 0  # plan positions holding a location
        self._positions: dict[str, int] | None = None  # key -> plan position of those, made on first need

    @property
    def where(self) -> dict[str, int]:
        """key -> location of the keys not held by plan position (the packed keys put in it first)."""
        if self._packed is not None:
            keys, width, locations = self._packed
            self._packed = None
            text = keys.decode("ascii")
            self._where.update(
                zip(
                    map(text.__getitem__, map(slice, range(0, len(text), width), range(width, len(text) + 1, width))),
                    locations,
                )
            )
        return self._where

    def hold_packed(self, keys: bytes, width: int, locations: array) -> None:
        """Hold an index's keys as it holds them: ``keys`` packed (``width`` ASCII bytes each, in
        file order), with their ``locations``; every one of their records ok. Nothing else may be
        held yet."""
        if self._where or self._count or len(keys) != width * len(locations):
            raise ValueError("packed keys are held first, one width each")
        self._packed, self._cursor = (keys, width, locations), 0

    def _is_packed(self, keys: Sequence[str]) -> bool:
        """``keys`` are exactly the packed keys, in order (a plan whose keys are packed the same way)."""
        if self._packed is None or self._count or not isinstance(keys, KeyList):
            return False
        mine = keys.packed()
        return mine is not None and mine[0] == self._packed[1] and mine[1] == self._packed[0]

    def _next_packed(self, keys: Sequence[str]) -> bool:
        """``keys`` (a few) are the packed keys that come after those asked for so far: a plan
        asking query by query in the order it planned them last time."""
        if self._packed is None or self._count or not keys:
            return False
        packed, width, _ = self._packed
        at, n = self._cursor, len(keys)
        text = "".join(keys)
        if (
            len(text) != n * width
            or not text.isascii()
            or min(map(len, keys)) != width
            or packed[at * width : (at + n) * width] != text.encode("ascii")
        ):
            return False
        self._cursor = at + n
        return True

    # -- the plan
    def bind(self, plan: Sequence[str]) -> None:
        """Keep records appended at a position of ``plan`` (its keys all distinct: the caller's
        promise) in an array aligned with it. What is already held stays where it is."""
        self._move_all_to_dict()
        self._plan = plan
        self._at = array("q", bytes(8 * len(plan)))

    @property
    def plan(self) -> Sequence[str] | None:
        return self._plan

    def _move_all_to_dict(self) -> None:
        if self._count and self._plan is not None:
            self.where.update((k, w) for k, w in zip(self._plan, self._at) if w)
        self._at, self._count, self._positions = array("q"), 0, None

    def _position_map(self) -> dict[str, int]:
        if self._positions is None:
            assert self._plan is not None
            self._positions = {k: p for p, (k, w) in enumerate(zip(self._plan, self._at)) if w}
        return self._positions

    def at(self, position: int, key: str | None = None) -> int:
        """The location of the newest record of the plan's key at ``position`` (its key, when the
        caller has it at hand); 0 when none is held."""
        where = self.where
        if where:
            w = where.get(self._plan[position] if key is None else key)  # type: ignore[index]
            if w is not None:
                return w
        return self._at[position] if self._count else 0

    # -- writing
    def put(self, key: str, where: int, ok: bool, position: int | None = None) -> None:
        """``where`` is now the newest record of ``key``; at ``position`` of the plan when given
        (and the plan's key there is ``key``, and the key is not already held in the dict)."""
        at, plan = self._at, self._plan
        if (
            position is not None
            and plan is not None
            and 0 <= position < len(at)
            and key not in self.where
            and plan[position] == key
        ):
            if not at[position]:
                self._count += 1
                if self._positions is not None:
                    self._positions[key] = position
            at[position] = where
        else:
            if self._count and key not in self.where:  # held at a plan position: moves to the dict
                p = self._position_map().pop(key, None)
                if p is not None:
                    at[p] = 0
                    self._count -= 1
            self.where[key] = where
        if ok:
            if self.failed:
                self.failed.discard(key)
        else:
            self.failed.add(key)

    def load(self, pairs: Iterable[tuple[str, int]]) -> None:
        """(key, location) of records read from a file, in file order: later ones supersede."""
        if self._count:  # (a key held at a plan position moves to the dict)
            for key, where in pairs:
                self.put(key, where, key not in self.failed)
        else:
            self.where.update(pairs)

    def replace(self, where: dict[str, int], plan_locations: array | None) -> None:
        """Hold exactly ``where`` and, when given, a location per plan position (0: none), the
        failed keys kept only where still held (a finalize's new file)."""
        failed = self.failed
        self._where, self._packed = where, None
        if plan_locations is None or self._plan is None:
            self._at, self._count, self._positions = array("q"), 0, None
        else:
            self._at, self._positions = plan_locations, None
            self._count = len(plan_locations) - plan_locations.count(0)
        if failed:  # (by position, not through a map of every planned key)
            alive = {k for k in failed if k in where}
            if self._count:
                alive.update(k for k, w in zip(self._plan, self._at) if w and k in failed)  # type: ignore[arg-type]
            self.failed = alive

    # -- reading
    def get(self, key: str) -> int | None:
        w = self.where.get(key)
        if w is None and self._count:
            p = self._position_map().get(key)
            if p is not None:
                return self._at[p]
        return w

    def __contains__(self, key: object) -> bool:
        return key in self.where or (bool(self._count) and key in self._position_map())

    def __len__(self) -> int:
        return len(self._where) + self._count + (len(self._packed[2]) if self._packed is not None else 0)

    def contains_each(self, keys: Sequence[str]) -> list[bool]:
        """``key in self`` of each key, in one pass."""
        if self._is_packed(keys) or self._next_packed(keys):
            return [True] * len(keys)
        flags = list(map(self.where.__contains__, keys))
        if self._count:
            held = self._position_map()
            flags = [f or k in held for f, k in zip(flags, keys)]
        return flags

    def locations_of(self, keys: Sequence[str]) -> array:
        """The location of each key's newest record (0 when none is held), in their order; for the
        plan said by :meth:`bind`, found by position."""
        if self._is_packed(keys):
            return array("q", self._packed[2])  # type: ignore[index]
        where = self.where
        if not self._count:
            return array("q", map(where.get, keys, repeat(0)))
        if keys is self._plan:
            out = array("q", self._at)
            if where:  # (keys held before the plan was said, or outside it)
                for p, w in enumerate(map(where.get, keys, repeat(0))):
                    if w:
                        out[p] = w
            return out
        return array("q", [self.get(k) or 0 for k in keys])

    def keys(self) -> list[str]:
        held = list(self.where)
        if self._count:
            held.extend(k for k, w in zip(self._plan, self._at) if w)  # type: ignore[arg-type]
        return held

    def items(self) -> Iterator[tuple[str, int]]:
        yield from self.where.items()
        if self._count:
            yield from ((k, w) for k, w in zip(self._plan, self._at) if w)  # type: ignore[arg-type]

    def values(self) -> list[int]:
        out = list(self._where.values())
        if self._packed is not None:
            out.extend(self._packed[2])
        if self._count:
            out.extend(w for w in self._at if w)
        return out
