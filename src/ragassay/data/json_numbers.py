"""Numbers as JSON can hold them. Every command that writes a result as JSON passes it through here,
so this module imports nothing heavy: the metrics commands write their results without loading the
result models (pydantic) that reading one back needs (:mod:`.results`)."""

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
