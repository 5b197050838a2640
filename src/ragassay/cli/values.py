"""The one table of option types: every numeric flag of every command takes one of these, so a
value out of range is a usage error (exit 2) naming the flag, where the flag is declared.

``tests/test_cli.py`` walks every parser and fails on a flag typed plain ``int`` or ``float``: a
new command cannot forget.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _number(text: str, kind: type) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
        ) from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _ranged(kind: type, ok: Callable[[float], bool], what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = _number(text, kind)
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


integer = _ranged(int, lambda v: True, "an integer")
positive_int = _ranged(int, lambda v: v >= 1, "an integer of at least 1")
nonneg_int = _ranged(int, lambda v: v >= 0, "an integer of at least 0")
resamples = _ranged(int, lambda v: 1 <= v <= 10_000_000, "an integer from 1 to 10,000,000")
positive_float = _ranged(float, lambda v: v > 0, "a number above 0")
nonneg_float = _ranged(float, lambda v: v >= 0, "a number of at least 0")
share = _ranged(float, lambda v: 0 <= v <= 1, "a number from 0 to 1")
probability_open = _ranged(float, lambda v: 0 < v < 1, "a number strictly between 0 and 1")
percent = _ranged(float, lambda v: 0 < v <= 100, "a number above 0 and at most 100")

TYPES = (integer, positive_int, nonneg_int, resamples, positive_float, nonneg_float, share, probability_open, percent)
