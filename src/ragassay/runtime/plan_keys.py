"""A plan's record keys, held in little memory.

A key is a short fingerprint (24 hex characters); as a Python string it takes ~80 bytes, a million
of them 80 MB, the largest part of a million-pair plan. :class:`KeyList` keeps a plan's keys
packed, one fixed width of ASCII bytes each in one buffer (24 bytes a key), and makes the string
when a key is read: a key of work to do as it is given, keys of work already done many at a time
(a plan gives a query's ten at once). Keys of another width or not ASCII, keys given not to be
packed, and None (a place without a key of its own) are kept as they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import Any

_PACKED = object()  # in place of a key held in the buffer
_AT_ONCE = 1 << 14  # keys decoded together while iterating
_BULK = 1 << 16  # keys given to be packed are packed this many at a time (a plan gives ten or so at once)


class KeyList(Sequence):
    """A list of keys (str, or None where a place has no key of its own) that packs keys of work
    to do: ``append(key, pack=True)``."""

    __slots__ = ("_items", "_packed", "_width", "_none", "_loose", "_pending")

    def __init__(self) -> None:
        self._items: list[Any] = []  # the key, None, or _PACKED (read from the buffer)
        self._packed = bytearray()  # aligned with _items once a key is packed: _width bytes a place
        self._width = 0
        self._none = 0  # places holding None
        self._loose = 0  # places holding a key or None (not packed)
        self._pending: list[str] = []  # keys given to pack, after every place: packed in bulk (_flush)

    def append(self, key: str | None, pack: bool = False) -> None:
        if self._pending:
            self._flush()
        if pack and key is not None and self._can_pack(key):
            self._items.append(_PACKED)
            self._packed += key.encode("ascii")
            return
        self._items.append(key)
        self._none += key is None
        self._loose += 1
        if self._width:
            self._packed += bytes(self._width)

    def extend(self, keys: Sequence[str], pack: bool = False) -> None:
        """Keys (str), packed when ``pack`` (many at a time, each packed when they all can be),
        else as they are."""
        if pack:
            self._pending.extend(keys)
            if len(self._pending) >= _BULK:
                self._flush()
            return
        if self._pending:
            self._flush()
        self._add_loose(keys)

    def _add_loose(self, keys: Sequence[str]) -> None:
        self._items.extend(keys)
        self._loose += len(keys)
        if self._width:
            self._packed += bytes(self._width * len(keys))

    def _flush(self) -> None:
        """Pack the keys given to pack, when they are all ASCII of the one width; else keep them loose."""
        keys, self._pending = self._pending, []
        if keys and self._can_pack(keys[0]):
            text = "".join(keys)
            if len(text) == self._width * len(keys) and text.isascii() and min(map(len, keys)) == self._width:
                self._items.extend(repeat(_PACKED, len(keys)))
                self._packed += text.encode("ascii")
                return
        self._add_loose(keys)

    def _can_pack(self, key: str) -> bool:
        if not self._width:
            if not key or not key.isascii():
                return False
            self._width = len(key)
            self._packed = bytearray(self._width * len(self._items))  # (places before: not packed)
            return True
        return len(key) == self._width and key.isascii()

    def packed(self) -> tuple[int, bytearray] | None:
        """(the width, the buffer) when every key is packed; None otherwise."""
        if self._pending:
            self._flush()
        if not self._width or len(self._packed) != self._width * len(self._items) or self._loose:
            return None
        return self._width, self._packed

    @property
    def has_none(self) -> bool:
        return self._none > 0

    def __len__(self) -> int:
        return len(self._items) + len(self._pending)

    def __getitem__(self, i: Any) -> Any:
        if self._pending:
            self._flush()
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step == 1:
                return list(self._range(start, max(start, stop)))
            return [self[j] for j in range(start, stop, step)]
        k = self._items[i]
        if k is not _PACKED:
            return k
        if i < 0:
            i += len(self._items)
        w = self._width
        return self._packed[i * w : (i + 1) * w].decode("ascii")

    def __iter__(self) -> Iterator[Any]:
        if self._pending:
            self._flush()
        return self._range(0, len(self._items))

    def _range(self, start: int, stop: int) -> Iterator[Any]:
        """The keys from ``start`` to ``stop``, the packed ones decoded a slice of the buffer at a time."""
        items, w = self._items, self._width
        if not w:
            yield from items[start:stop]
            return
        for lo in range(start, stop, _AT_ONCE):
            part = items[lo : min(lo + _AT_ONCE, stop)]
            if _PACKED not in part:
                yield from part
                continue
            text = self._packed[lo * w : (lo + len(part)) * w].decode("ascii")
            for j, k in enumerate(part):
                yield text[j * w : (j + 1) * w] if k is _PACKED else k

    def __contains__(self, key: object) -> bool:
        return any(k == key for k in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (KeyList, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"KeyList({len(self)} keys)"
