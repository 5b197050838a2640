"""How many queries a comparison needs, and the smallest difference the queries you have can detect.

Topic set size design (Sakai 2016, "Topic set size design", Information Retrieval Journal 19): a
pilot (per-query scores of two or more runs) gives the variance of the per-query differences; the
exact power of the two-sided paired t-test with ``n`` queries is that of a noncentral t with
``n - 1`` degrees of freedom and noncentrality ``effect / sd * sqrt(n)``. Iterating ``n`` gives the
queries needed to detect ``effect`` with the power asked for; fixing ``n`` (the pilot's own size)
gives the minimum detectable effect (MDE). The randomization (sign-flip) test has no closed form:
at the sizes that matter it behaves like the t-test, so its figures are the t-test's, and
``tests/test_power.py`` checks that by simulation. For ``m`` runs at once, Sakai's one-way ANOVA
figure (``anova_queries_needed``) sizes the set so that the best and the worst run differing by
``min_range`` is detected; ``design="two-way"`` takes the query as a factor (at two runs it is the
paired t-test's figure; one-way, which ignores the pairing, asks for more queries).

The noncentral t and F distributions these figures are read from are computed in
:mod:`.noncentral` (numpy and the standard library only; scipy is not a dependency).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from ..errors import UsageError
from .noncentral import f_isf, find_root, ncf_cdf, nct_cdf, normal_isf, t_isf

Design = Literal["one-way", "two-way"]
MAX_QUERIES = 10**7  # beyond this "queries needed" is out of reach (None, said in the note), not searched for


# ------------------------------------------------------------------------- paired t-test


def check_design(power: float, alpha: float, effect: float | None = None) -> None:
    """Refuse (``UsageError``) a design no number of queries answers: alpha outside (0, 1), a power
    not above alpha or not below 1, an effect of 0 (None: no effect asked for)."""
    if effect is not None:
        _check_effect(effect)
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"alpha must be strictly between 0 and 1, got {alpha}")
    if not alpha < power < 1.0:
        raise UsageError(
            f"the power to aim for must be above alpha ({alpha}) and below 1, got {power}: "
            "a test rejects a true null with probability alpha, so a power of alpha or less "
            "asks nothing, and a power of 1 needs infinitely many queries"
        )


def _check_effect(effect: float) -> float:
    if effect is None or math.isnan(effect) or effect == 0 or math.isinf(effect):
        raise UsageError(
            f"the difference to detect must be a non-zero finite number, got {effect}: "
            "no number of queries detects a difference of 0"
        )
    return abs(float(effect))


def t_test_power(n: float, effect: float, sd: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided paired t-test at level ``alpha`` with ``n`` queries (n may be
    fractional), when the mean difference is ``effect`` and its per-query sd is ``sd``."""
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 queries, got {n}")
    df = n - 1.0
    return _power_at(df, abs(effect) / sd * math.sqrt(n), t_isf(alpha / 2.0, df))


def _power_at(df: float, nc: float, crit: float) -> float:
    """P(|T| > crit) for T noncentral t: both tails, as the two-sided test rejects in either."""
    return (1.0 - nct_cdf(crit, df, nc)) + nct_cdf(-crit, df, nc)


def queries_needed_exact(effect: float, sd: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """The (fractional) number of queries at which the paired t-test's power reaches ``power``:
    what ``statsmodels.stats.power.TTestPower().solve_power`` solves for. At least 2; inf when it
    lies beyond ``MAX_QUERIES``."""
    check_design(power, alpha)
    effect = _check_effect(effect)
    if t_test_power(2.0, effect, sd, alpha) >= power:
        return 2.0
    # the z-test's n is a lower bound (the t-test pays for estimating sd) and a close one: bracket from it
    z = normal_isf(alpha / 2.0) + normal_isf(1.0 - power)
    lo = max(2.0, min((z * sd / effect) ** 2, float(MAX_QUERIES)))
    hi = min(lo * 1.25 + 8.0, float(MAX_QUERIES))
    while t_test_power(hi, effect, sd, alpha) < power:
        if hi >= MAX_QUERIES:
            return math.inf
        lo, hi = hi, min(hi * 4.0, float(MAX_QUERIES))
    if t_test_power(lo, effect, sd, alpha) >= power:
        lo = 2.0
    return find_root(lambda n: t_test_power(n, effect, sd, alpha) - power, lo, hi, 1e-12)


def queries_needed(effect: float, sd: float, power: float = 0.8, alpha: float = 0.05) -> int | None:
    """The smallest whole number of queries whose paired t-test detects ``effect`` (an absolute
    difference of means) with ``power`` at two-sided level ``alpha``; None when it is beyond
    ``MAX_QUERIES``. ``sd`` is the standard deviation of the per-query differences."""
    if not sd > 0:
        raise ValueError(f"the standard deviation of the differences must be above 0, got {sd}")
    n = queries_needed_exact(effect, sd, power, alpha)
    if math.isinf(n):
        return None
    whole = max(2, math.ceil(n - 1e-9))
    while t_test_power(whole, effect, sd, alpha) < power:  # rounding at the root: one more query
        whole += 1
    while whole > 2 and t_test_power(whole - 1, effect, sd, alpha) >= power:
        whole -= 1
    return whole


def minimum_detectable_effect(n: int, sd: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest absolute difference of means that ``n`` queries detect with ``power`` at
    two-sided level ``alpha`` (paired t-test), given the sd of the per-query differences."""
    check_design(power, alpha)
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 queries, got {n}")
    df = n - 1.0
    crit = t_isf(alpha / 2.0, df)
    hi = 1.0
    while _power_at(df, hi, crit) < power:
        hi *= 2.0
    nc = find_root(lambda c: _power_at(df, c, crit) - power, 0.0, hi, 1e-12)
    return nc * sd / math.sqrt(n)


# ---------------------------------------------------------------------------- one pilot


@dataclass
class PowerAnalysis:
    """What a pilot's per-query differences say about the size of a comparison.

    ``mde``: the smallest difference the pilot's own ``queries`` detect with ``power`` at ``alpha``.
    ``queries_needed``: the queries needed to detect ``effect`` (None when no effect was asked for,
    or when it cannot be computed: ``note`` says why). The randomization test's figures are the
    t-test's (it behaves like the t-test at these sizes; ``method`` says so).
    """

    queries: int
    sd_diff: float | None
    mean_diff: float | None
    power: float
    alpha: float
    effect: float | None = None
    mde: float | None = None
    queries_needed: int | None = None
    note: str = ""
    method: str = (
        "paired t-test, exact (noncentral t); the randomization test's figures are taken to be "
        "the t-test's, which it matches at these sizes"
    )

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def sentence(self) -> str:
        """One line: what the current queries detect, and what the asked-for difference needs."""
        if self.mde is None:
            return self.note
        out = (
            f"{self.queries} queries detect a difference of {self.mde:.4f} or more at power "
            f"{self.power:g} (alpha {self.alpha:g})"
        )
        if self.effect is not None:
            out += (
                f"; to detect {self.effect:g} you need {self.queries_needed} queries"
                if self.queries_needed
                else f"; {self.note}"
            )
        return out


def analyse_pilot(
    d: Sequence[float] | np.ndarray, effect: float | None = None, power: float = 0.8, alpha: float = 0.05
) -> PowerAnalysis:
    """Size a comparison from a pilot's per-query differences ``d`` (run B minus run A, paired by query).

    Refuses (``UsageError``) a power not above ``alpha`` or not below 1, an effect of 0, and NaN in
    the pilot. A pilot of fewer than 2 queries, or whose differences are all equal (no variance to
    size a test with), gives an analysis with no figures and a ``note`` saying why.
    """
    check_design(power, alpha)
    wanted = None if effect is None else _check_effect(effect)
    d = np.asarray(d, dtype=np.float64).ravel()
    nans = int(np.isnan(d).sum())
    if nans:
        raise UsageError(
            f"{nans} of the pilot's {len(d)} per-query differences are NaN: "
            "score every query (or drop it from both runs) before sizing a comparison"
        )
    n = len(d)
    if n < 2:
        return PowerAnalysis(
            n,
            None,
            float(d.mean()) if n else None,
            power,
            alpha,
            wanted,
            note=f"a pilot of {n} {'query' if n == 1 else 'queries'} has no variance to "
            "size a comparison with (at least 2 are needed)",
        )
    mean = float(d.mean())
    if bool(np.all(d == d[0])):
        return PowerAnalysis(
            n,
            0.0,
            mean,
            power,
            alpha,
            wanted,
            note=f"every query has the same difference ({d[0]:+.4f}): the differences have "
            "no variance, so the pilot cannot size a comparison; use a pilot whose runs "
            "differ query by query",
        )
    sd = float(d.std(ddof=1))
    mde = minimum_detectable_effect(n, sd, power, alpha)
    needed, note = None, ""
    if wanted is not None:
        needed = queries_needed(wanted, sd, power, alpha)
        if needed is None:
            note = f"detecting {wanted:g} needs more than {MAX_QUERIES:,} queries"
    return PowerAnalysis(n, sd, mean, power, alpha, wanted, mde=mde, queries_needed=needed, note=note)


def pairwise_analyses(
    scores: Mapping[str, Sequence[float] | np.ndarray],
    effect: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
) -> dict[tuple[str, str], PowerAnalysis]:
    """Every pair of runs (in the given order, B minus A) sized from one pilot: ``scores`` maps a run
    to its per-query scores, aligned on the same queries. The set that serves every pair needs the
    largest of their ``queries_needed``."""
    lengths = {len(v) for v in scores.values()}
    if len(lengths) > 1:
        raise UsageError(f"the runs' per-query scores must cover the same queries; got lengths {sorted(lengths)}")
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in scores.items()}
    return {
        (a, b): analyse_pilot(arrays[b] - arrays[a], effect, power, alpha) for a, b in combinations(list(arrays), 2)
    }


# ------------------------------------------------------------------- m runs: one-way ANOVA


def anova_power(
    n: float, runs: int, min_range: float, residual_variance: float, alpha: float = 0.05, design: Design = "one-way"
) -> float:
    """Power of the ANOVA F-test over ``runs`` systems with ``n`` queries each to detect means whose
    best and worst differ by ``min_range`` (the others in the middle, the least favourable case):
    noncentrality n * min_range^2 / (2 * residual_variance) (Sakai 2016). ``design`` "one-way"
    treats the queries of each run as independent (error df m(n - 1)); "two-way" takes the query
    as a second factor, without replication (error df (m - 1)(n - 1)): at m = 2 it is the paired
    t-test exactly."""
    df1 = runs - 1.0
    df2 = runs * (n - 1.0) if design == "one-way" else (runs - 1.0) * (n - 1.0)
    nc = n * min_range * min_range / (2.0 * residual_variance)
    return 1.0 - ncf_cdf(f_isf(alpha, df1, df2), df1, df2, nc)


def residual_variance(scores: np.ndarray, design: Design = "one-way") -> float:
    """The residual variance of a runs x queries matrix: one-way ANOVA's within-run variance (pooled
    over the runs), or with ``design="two-way"`` what is left once each run's and each query's mean
    are taken out (two-way ANOVA without replication)."""
    scores = np.asarray(scores, dtype=np.float64)
    m, n = scores.shape
    if design == "one-way":
        return float(((scores - scores.mean(axis=1, keepdims=True)) ** 2).sum() / (m * (n - 1)))
    left = scores - scores.mean(axis=1, keepdims=True) - scores.mean(axis=0, keepdims=True) + scores.mean()
    return float((left**2).sum() / ((m - 1) * (n - 1)))


def anova_queries_needed(
    scores: np.ndarray | Mapping[str, Sequence[float]],
    min_range: float,
    power: float = 0.8,
    alpha: float = 0.05,
    design: Design = "one-way",
) -> int | None:
    """Queries needed so that ANOVA over the pilot's runs detects a best-to-worst difference of
    ``min_range`` with ``power`` (Sakai 2016's m-system design). ``scores`` is runs x queries (or
    run -> per-query scores); the variance is the pilot's residual variance under ``design``.

    "one-way" (Sakai's figure) ignores that every run answers the same queries, so it asks for more
    queries than a paired analysis will need; "two-way" counts the queries as a factor, and at two
    runs gives the paired t-test's figure. None when it is beyond ``MAX_QUERIES``.
    """
    check_design(power, alpha)
    min_range = _check_effect(min_range)
    if design not in ("one-way", "two-way"):
        raise UsageError(f"design must be 'one-way' or 'two-way', got {design!r}")
    matrix = np.array(list(scores.values()) if isinstance(scores, Mapping) else scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 2:
        raise UsageError(f"ANOVA sizing needs at least 2 runs of at least 2 queries, got shape {matrix.shape}")
    if np.isnan(matrix).any():
        raise UsageError("the pilot's scores hold NaN: score every query before sizing a comparison")
    var = residual_variance(matrix, design)
    if not var > 1e-15 * max(1.0, float(np.abs(matrix).max())) ** 2:  # rounding noise of an exact 0
        raise UsageError(
            f"the pilot has no {design} residual variance to size a comparison with "
            "(every query tells the runs apart by the same amount)"
        )
    m = matrix.shape[0]
    n = 2
    while anova_power(n, m, min_range, var, alpha, design) < power:
        if n >= MAX_QUERIES:
            return None
        n *= 2
    lo = max(2, n // 2)
    while lo < n:  # smallest n with enough power (power grows with n)
        mid = (lo + n) // 2
        if anova_power(mid, m, min_range, var, alpha, design) >= power:
            n = mid
        else:
            lo = mid + 1
    return n
