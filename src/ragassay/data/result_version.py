"""The version of every result's JSON shape, and the evaluate result built as plain data.

``evaluate`` is the command users run in loops over big files: its result is written here as the
dict :class:`ragassay.data.result_models.EvaluateResult` would dump (kind and version first, then the
fields given, in declared order) without importing the validation models, whose import is a large
part of a small evaluation's time. ``tests/test_result_version.py`` holds the two to one shape.
"""

from __future__ import annotations

from typing import Any

RESULT_VERSION = 1

_EVALUATE_FIELDS = ("run", "aggregate", "per_query", "counts", "settings", "qrels", "rests_on")


def evaluate_result(**fields: Any) -> dict[str, Any]:
    """An evaluate result's JSON-ready dict: the fields given (``per_query`` may be left out), in
    the order its model declares them."""
    unknown = set(fields) - set(_EVALUATE_FIELDS)
    if unknown:
        raise TypeError(f"not a field of an evaluate result: {', '.join(sorted(unknown))}")
    return {"kind": "evaluate", "version": RESULT_VERSION, **{k: fields[k] for k in _EVALUATE_FIELDS if k in fields}}
