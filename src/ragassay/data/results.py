"""Typed results of every command that computes something, written as JSON with ``kind`` and
``version`` so that report, track and gate dispatch on the kind instead of guessing from keys."""

from __future__ import annotations

import math
from typing import Any


def nan_to_none(obj: Any) -> Any:
    """JSON has no NaN or infinity: a value that is not a finite number becomes null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [nan_to_none(v) for v in obj]
    return obj
