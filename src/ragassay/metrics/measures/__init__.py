"""Metric names: a small value object with one canonical spelling per measure.

The declarations of every measure live in :mod:`.registry`, the parser in :mod:`.parsing` and the
names shown to people (help, suggestions) in :mod:`.naming`; this package re-exports their public
names for callers outside the metrics.
"""

from .naming import edit_distance, measure_names, suggestions
from .parsing import (
    DEFAULT_MEASURES,
    Measure,
    gains_table,
    parse_measure,
    parse_measures,
    split_measure_list,
)
from .registry import MEASURES, SUMMED, TAKES_JUDGED_ONLY, TAKES_REL

__all__ = [
    "DEFAULT_MEASURES",
    "MEASURES",
    "SUMMED",
    "TAKES_JUDGED_ONLY",
    "TAKES_REL",
    "Measure",
    "edit_distance",
    "gains_table",
    "measure_names",
    "parse_measure",
    "parse_measures",
    "split_measure_list",
    "suggestions",
]
