"""Paired significance tests on per-query differences, vectorised, with a fixed seed.

All functions take ``d``, the per-query differences (system B minus system A) over the same queries.
"""

from __future__ import annotations

import math

import numpy as np

_CHUNK_CELLS = 1 << 22  # rows x queries per chunk, to bound memory (~32 MB of float64)


def randomization_test(d: np.ndarray, n_permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip) test of mean(d) = 0.

    Each permutation flips the sign of every query's difference with probability 1/2 (swapping the
    two systems' values). The p-value is (1 + #{|mean of flipped| >= |observed mean|}) / (1 + N),
    the Monte Carlo estimate that never returns 0 (Phipson and Smyth, 2010).
    """
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    if n == 0:
        return float("nan")
    observed = abs(d.sum())
    tol = 1e-12 * max(1.0, float(np.abs(d).sum()))
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n)
    hits, drawn = 0, 0
    while drawn < n_permutations:
        m = min(chunk, n_permutations - drawn)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
        drawn += m
    return (hits + 1) / (n_permutations + 1)


def bootstrap_ci(
    d: np.ndarray, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of mean(d), resampling queries with replacement."""
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n)
    means = np.empty(n_resamples)
    drawn = 0
    while drawn < n_resamples:
        m = min(chunk, n_resamples - drawn)
        means[drawn : drawn + m] = d[rng.integers(0, n, size=(m, n))].mean(axis=1)
        drawn += m
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def paired_t_test(d: np.ndarray) -> tuple[float, float]:
    """Two-sided paired t-test: (t statistic, p-value), equal to ``scipy.stats.ttest_rel``.

    Where scipy returns nan because every difference is 0, this returns t = 0, p = 1 (the systems
    agree on every query); identical non-zero differences give p = 0. Fewer than 2 queries: nan.
    """
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    if n < 2:
        return float("nan"), float("nan")
    mean = float(d.mean())
    sd = 0.0 if bool(np.all(d == d[0])) else float(d.std(ddof=1))  # exact 0, not rounding noise
    if sd == 0.0:
        if mean == 0.0:
            return 0.0, 1.0
        return math.copysign(math.inf, mean), 0.0
    t = mean / (sd / math.sqrt(n))
    df = n - 1
    p = regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return t, min(1.0, max(0.0, p))


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone), in the input order; nan stays nan."""
    idx = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    order = sorted(idx, key=lambda i: pvalues[i])
    m = len(order)
    out = [float("nan")] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) by its continued fraction (modified Lentz), accurate to ~1e-15."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast only below this point
        return 1.0 - regularized_incomplete_beta(b, a, 1.0 - x)
    tiny = 1e-300
    c, dd = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    dd = 1.0 / (dd if abs(dd) > tiny else tiny)
    f = dd
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            dd = 1.0 + numerator * dd
            dd = 1.0 / (dd if abs(dd) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * dd
        if abs(c * dd - 1.0) < 1e-16:
            break
    return math.exp(log_front) * f / a
