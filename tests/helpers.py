"""What many test files share besides the fake model (tests/fake_llm.py): where the bundled example
is, and a guard that makes a loop of assertions fail when it would check nothing."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "src" / "ragassay" / "example"  # the bundled example (datasets/example links to it)

T = TypeVar("T")


def nonempty(items: Iterable[T]) -> list[T]:
    """``items`` as a list, asserting there is at least one: a ``for`` loop of asserts over an empty
    sequence passes without checking anything (tests/test_house.py requires this guard)."""
    items = list(items)
    assert items, "nothing to check: this loop of assertions would pass without checking anything"
    return items


def store_contents(store) -> list[tuple[str, int, bool]]:
    """What an output store holds, in its order: each key with its newest record's location and
    whether that record failed (two stores of the same files hold the same)."""
    return [(k, store.location(k), store.failed(k)) for k in store.keys()]
