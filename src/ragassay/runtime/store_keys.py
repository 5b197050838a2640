"""The two files of an output indexed by key (:class:`KeyedFiles`, the base of
:class:`~.store.OutputStore`): scanning them notes where each key's newest line lies and whether its
record is ok, and the questions a run asks (is this key done, which records failed, where are the
planned records) are answered from that index without reading a record.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate, repeat
from operator import lshift, or_
from pathlib import Path

from ..errors import InputError
from .key_locations import KeyLocations
from .store_files import OutputFiles
from .store_lines import LENGTH_BITS, block_fields, key_status, pack, split_lines


class KeyedFiles(OutputFiles):
    """The output and its journal, with where each key's newest record lies (``_loc``, see
    :mod:`.key_locations`) and how many record lines carry no key. The store fills the index by
    scanning the files or from the output's index file, and keeps it as it appends."""

    def __init__(self, output: str | Path, journal: Path) -> None:
        super().__init__(output, journal)
        self._loc = KeyLocations()
        self._keyless = 0  # record lines without a key

    def _scan(self, which: int, cut_partial: bool = False) -> int:
        """Index every record line of one file; returns how many there are. A block of lines all in
        ragassay's own shape is indexed in C-speed passes (no line parsed, no Python call per line);
        any other block line by line."""
        lines = 0
        for start, block in self._blocks(which, cut_partial, warn=True):
            n = self._index_block(start, block, which)
            if n is None:
                n = self._index_lines(start, block, which)
            lines += n
        return lines

    def _index_block(self, start: int, block: bytes, which: int) -> int | None:
        """Index a block by :func:`block_fields`; None when it cannot be read so."""
        fields = block_fields(block)
        if fields is None:
            return None
        keys, statuses, lengths = fields
        rows = len(keys)
        starts = accumulate(map((1).__add__, lengths), initial=start)
        where = map(or_, map(lshift, starts, repeat(LENGTH_BITS + 1)), map(lshift, lengths, repeat(1)))
        loc = self._loc
        loc.load(zip(keys, map(or_, where, repeat(which)) if which else where))
        if statuses.count(b"ok") == rows:
            if loc.failed:
                loc.failed.difference_update(keys)
        else:
            for key, status in zip(keys, statuses):
                loc.put(key, loc.where[key], status == b"ok")
        return rows

    def _index_lines(self, start: int, block: bytes, which: int) -> int:
        lines = 0
        for offset, line in split_lines(start, block):
            try:
                key, ok = key_status(line.strip())
            except (ValueError, UnicodeDecodeError):
                raise InputError(
                    "not valid JSON: this output was not written by ragassay or was edited; "
                    "move it away or fix the line",
                    self._paths[which],
                    self._line_number(which, offset),
                ) from None
            lines += 1
            if key is not None:
                self._loc.put(key, pack(offset, len(line), which), ok)
            else:
                self._keyless += 1
        return lines

    # -- the plan
    def expect(self, plan_keys: Sequence[str]) -> None:
        """Say this run's plan (its keys all distinct, in order): a record appended with its plan
        position (``append(records, at_positions)``) is then held as 8 bytes in an array aligned with
        the plan, not as a dict entry (see :mod:`.key_locations`); every question is answered as
        before."""
        self._loc.bind(plan_keys)

    # -- reading
    def done(self, key: str) -> bool:
        return key in self._loc and key not in self._loc.failed

    def done_flags(self, keys: Sequence[str]) -> list[bool]:
        """:meth:`done` of each key, in one pass (for the plan said by :meth:`expect`, by position)."""
        loc = self._loc
        flags = list(map(bool, loc.locations_of(keys))) if keys is loc.plan else loc.contains_each(keys)
        failed = loc.failed
        return [f and k not in failed for f, k in zip(flags, keys)] if failed else flags

    def has(self, key: str) -> bool:
        """A record of ``key`` is held, ok or not."""
        return key in self._loc

    def failed(self, key: str) -> bool:
        return key in self._loc.failed

    def held_locations(self, keys: Sequence[str]) -> array:
        """Where the newest record of each of ``keys`` that is held lies, in their order."""
        return self._planned(keys)[0]

    def failed_records(self, keys: Sequence[str]) -> list[dict]:
        """The newest records of those of ``keys`` that are not ok, in their order (for the plan
        said by :meth:`expect`, found by position)."""
        loc = self._loc
        failed = loc.failed
        if not failed:
            return []
        if keys is loc.plan:
            return [self.record_at(loc.at(p, k)) for p, k in enumerate(keys) if k in failed]
        return [self.record(k) for k in keys if k in failed]

    def __len__(self) -> int:
        return len(self._loc)

    def keys(self) -> list[str]:
        """Every key held."""
        return self._loc.keys()

    def location(self, key: str) -> int:
        w = self._loc.get(key)
        if w is None:
            raise KeyError(key)
        return w

    def record(self, key: str) -> dict:
        return self.record_at(self.location(key))

    def records(self) -> Iterator[dict]:
        """The newest record of every key, parsed (nothing is looked up until the first is asked)."""
        for w in self._loc.values():
            yield self.record_at(w)

    def _planned(self, plan_keys: Sequence[str]) -> tuple[array, array | None]:
        """(where the newest record of each planned key held lies, in plan order; the plan
        positions of those, or None when every planned key is held)."""
        sources = self._loc.locations_of(plan_keys)
        if not sources.count(0):
            return sources, None
        positions = array("q", [p for p, w in enumerate(sources) if w])
        return array("q", [w for w in sources if w]), positions
