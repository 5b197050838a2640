"""A rate with the items it rests on: its value, its interval when the items can carry one, and
why not when they cannot.

A rate from 2 answers printed as "1.000 [1.000, 1.000]" reads like certainty; the same figure with
"2 answers" beside it reads as what it is. So every rate here carries ``n`` (its denominator), and
what cannot be said is ``None`` with a ``why`` in words, never 0 or NaN:

- no items: no value (a rate of nothing is not a number);
- fewer than :data:`MIN_INTERVAL` items: the value, but no interval (resampling a handful gives an
  interval narrower than what the handful supports);
- every item alike (all correct, none hallucinated): a resampled interval has no width, so a 0/1
  rate gets the Wilson score interval instead, which does not claim certainty; any other scale
  (truthfulness) gets none, with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .significance import bootstrap_ci

MIN_INTERVAL = 10  # items below which no interval is given: a handful resampled says little of its spread
Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default): never zero-width for 0 of n or n of n."""
    centre = (successes + z * z / 2) / (n + z * z)
    half = z * math.sqrt(successes * (n - successes) / n + z * z / 4) / (n + z * z)
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # the ends exactly, not 0.9999999999999999
    return low, 1.0 if successes == n else min(1.0, centre + half)


def rate(
    values: np.ndarray, unit: str = "answers", n_resamples: int = 10_000, seed: int = 0, binary: bool = True
) -> dict[str, Any]:
    """The mean of ``values`` with its denominator ``n`` and a 95% interval when the items carry one
    (bootstrap; Wilson for a 0/1 rate whose items are all alike); ``why`` says what was withheld."""
    n = len(values)
    out: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None, "n": n}
    if n == 0:
        out["why"] = f"no {unit} to rest on: a rate of none is not a number"
        return out
    out["value"] = float(values.mean())
    if n < MIN_INTERVAL:
        out["why"] = f"{n} {_unit(unit, n)}: too few for an interval (it needs {MIN_INTERVAL} or more)"
    elif bool(np.all(values == values[0])):
        if binary:
            out["ci_low"], out["ci_high"] = wilson(int(values.sum()), n)
            out["method"] = "wilson"
        else:
            out["why"] = (
                f"all {n} {unit} score alike: resampling them gives an interval of no width, which "
                "would claim certainty"
            )
    else:
        out["ci_low"], out["ci_high"] = bootstrap_ci(values, 0.95, n_resamples, seed)
    return out


def _unit(unit: str, n: int) -> str:
    """``unit`` in the singular for one item ("1 answer")."""
    return unit[:-1] if n == 1 and unit.endswith("s") else unit


def rate_text(r: Mapping[str, Any] | None, unit: str = "answers", total: int | None = None) -> str:
    """A rate in words with its denominator: "0.750 [0.520, 0.900] from 16 answers", "1.000 from 2 of
    16 answers (too few for an interval: 10 or more)", "none (no answers to rest on: ...)"."""
    if not r or r.get("value") is None:
        why = (r or {}).get("why") or f"no {unit} to rest on"
        return f"none ({why})"
    n = r.get("n")
    base = (
        ""
        if n is None
        else " from "
        + (f"{n} of {total}" if total is not None and total != n else f"{n}")
        + f" {_unit(unit, n if total is None else total)}"
    )
    if r.get("ci_low") is not None and r.get("ci_high") is not None:
        return f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]{base}"
    if n is not None and n < MIN_INTERVAL:
        return f"{r['value']:.3f}{base} (too few for an interval: {MIN_INTERVAL} or more)"
    why = r.get("why")
    return f"{r['value']:.3f}{base}" + (f" ({why})" if why else "")
