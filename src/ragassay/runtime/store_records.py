"""A lazy list of records (:class:`Records`): where their lines are in an output store (or the
lines themselves), each parsed when it is read, so a run's records are not held in memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from .store_lines import load_line


class RecordSource(Protocol):
    """What :class:`Records` reads its records from (an output store), named here so that this
    module needs nothing of the store's."""

    def record_at(self, where: int) -> dict: ...

    def records_at(self, locations: Sequence[int]) -> Iterator[dict]: ...

    def memo(self, name: str, locations: Sequence[int]) -> Any: ...

    def remember(self, name: str, locations: Sequence[int], value: Any) -> None: ...


class Records(Sequence):
    """Records kept as where their lines are (or as the lines), parsed when read: ``len``, indexing
    and iteration as a list of dicts (each read gives a fresh dict), without holding a dict, or a
    line, per record."""

    __slots__ = ("_items", "_store")

    def __init__(self, items: Sequence[Any], store: RecordSource | None = None):
        self._items = items  # locations in store, or the lines themselves
        self._store = store

    def _parse(self, item: Any) -> dict:
        return load_line(item) if self._store is None else self._store.record_at(item)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._parse(x) for x in self._items[i]]
        return self._parse(self._items[i])

    def __iter__(self) -> Iterator[dict]:
        if self._store is None:
            return (load_line(x) for x in self._items)
        return self._store.records_at(self._items)

    def memo(self, name: str) -> Any:
        """What was remembered as ``name`` for exactly these records, while the output they are
        read from is unchanged (None otherwise, or when they are not read from a store)."""
        return self._store.memo(name, self._items) if self._store is not None else None

    def remember(self, name: str, value: Any) -> None:
        """Keep ``value`` (JSON), computed from these records, for a later run with the same ones."""
        if self._store is not None:
            self._store.remember(name, self._items, value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Records, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Records({len(self)} records)"
