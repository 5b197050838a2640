"""When an agreement statistic cannot mean anything, and why, in words.

Cohen's kappa is agreement beyond chance. When one side gives every shared pair the same grade
(generate's qrels hold only grade 3; a labeller who marks everything relevant), chance accounts for
all the agreement there is: kappa is 0 or undefined by construction, whatever the other side did,
while the two may agree on most pairs. Printing that 0 (or NaN) reads as "no agreement"; the
reason is what is true. The same holds for a correlation of values that do not vary (runs that all
score alike under one set of labels). Each function returns the reason, or None when the statistic
means what it says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .rates import MIN_INTERVAL

SIDES = ("the reference", "the candidate")


def one_grade_why(
    x: np.ndarray,
    y: np.ndarray,
    sides: Sequence[str] = SIDES,
    unit: str = "pairs",
    grade: Callable[[int], str] = lambda g: f"grade {g}",
) -> str | None:
    """Why no kappa (weighted or not) of ``x`` against ``y`` means anything: no pairs, or a side
    that gives every item one grade (``grade`` names a code: answers' labels are coded 0..3)."""
    if len(x) == 0:
        return f"no {unit[:-1]} was labelled by both sides"
    for side, v in zip(sides, (x, y)):
        grades = np.unique(v)
        if len(grades) == 1:
            return (
                f"{side} give{'' if side == 'people' else 's'} all {len(v)} shared {unit} "
                f"{grade(int(grades[0]))}: kappa measures agreement "
                "beyond chance, and with one grade on a side chance explains all of it (kappa is 0 or undefined "
                "by construction, whatever the other side did)"
            )
    return None


def binary_why(x: np.ndarray, y: np.ndarray, threshold: int, sides: Sequence[str] = SIDES) -> str | None:
    """Why the kappa of the labels cut at ``grade >= threshold`` means nothing: a side puts every
    shared pair on one side of the cut."""
    if len(x) == 0:
        return "no pair was labelled by both sides"
    for side, v in zip(sides, (x, y)):
        above = int((v >= threshold).sum())
        if above in (0, len(v)):
            where = "at or above" if above else "below"
            return (
                f"{side} puts all {len(v)} shared pairs {where} grade {threshold}: one class on a side, so "
                "kappa is 0 or undefined by construction"
            )
    return None


def alpha_why(x: np.ndarray, y: np.ndarray, sides: Sequence[str] = SIDES) -> str | None:
    """Why Krippendorff's alpha means nothing: a side gives every pair one grade (the file holds one
    grade only, as generate's qrels do: what alpha finds is the other side's spread, not agreement)."""
    if len(x) == 0:
        return "no pair was labelled by both sides"
    for side, v in zip(sides, (x, y)):
        grades = np.unique(v)
        if len(grades) == 1:
            return (
                f"{side} gives all {len(v)} shared pairs grade {int(grades[0])}: with one grade on a side, alpha "
                "measures the other side's spread, not agreement"
            )
    return None


def interval_why(pairs: int, unit: str = "pairs") -> str | None:
    """Why a resampled interval is not given for so few pairs (or ``unit``: answers, items)."""
    if pairs < MIN_INTERVAL:
        word = unit[:-1] if pairs == 1 and unit.endswith("s") else unit
        return f"{pairs} {word}: too few for an interval (it needs {MIN_INTERVAL} or more)"
    return None


def constant_why(values: Sequence[float], side: str, what: str) -> str | None:
    """Why a rank correlation with ``values`` means nothing: fewer than two, or all equal."""
    v = [float(x) for x in values]
    if len(v) < 2:
        return f"{len(v)} runs: a ranking needs two or more"
    if len(set(v)) == 1:
        return f"every run scores {v[0]:.4f} {what} under {side}: there is no order to correlate"
    return None
