"""The noncentral t and F distributions that the power of a test is read from, and the root finder
that inverts them.

They are computed here with numpy and the standard library only, because scipy is not a
dependency: both are Poisson mixtures of regularized incomplete beta functions, summed outwards from
the Poisson mode (Benton and Krishnamoorthy 2003). On the ranges tested (degrees of freedom 1 to
1e5, noncentrality to 60) they are within 1e-9 of scipy, most of it lgamma's rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .significance import regularized_incomplete_beta

_TOL = 1e-13  # the tail a series may drop


def normal_cdf(z: float) -> float:
    """P(Z <= z), standard normal."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _beta_step(a: float, b: float, x: float) -> float:
    """I_x(a, b) - I_x(a + 1, b) = x^a (1 - x)^b Gamma(a + b) / (Gamma(a + 1) Gamma(b))."""
    return math.exp(math.lgamma(a + b) - math.lgamma(a + 1.0) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))


def _poisson_beta_mixture(
    lam: float,
    x: float,
    b: float,
    a0: float,
    coef: Callable[[int], float],
) -> float:
    """sum over j >= 0 of coef(j) * I_x(a0 + j, b), with coef(j) carrying Poisson(lam)-like weights.

    Summed from the Poisson mode outwards (forwards until the rest is below ``_TOL``, backwards to
    0), so a large ``lam`` neither underflows nor needs thousands of terms from j = 0.
    """
    k = int(lam)
    ik = regularized_incomplete_beta(a0 + k, b, x)
    total = coef(k) * ik
    # forwards: I(a + 1) = I(a) - step(a); the coefficients fall away past the mode
    i, j = ik, k
    while True:
        i -= _beta_step(a0 + j, b, x)
        j += 1
        c = coef(j)
        total += c * i
        if abs(c) * max(i, 0.0) < _TOL and j > lam:
            break
    # backwards: I(a - 1) = I(a) + step(a - 1); below the mode the weights only fall (I_x is at most 1),
    # so the sum stops once a weight is negligible: a large lam costs terms around its mode only
    i = ik
    for j in range(k - 1, -1, -1):
        i += _beta_step(a0 + j, b, x)
        c = coef(j)
        total += c * i
        if abs(c) < _TOL * 1e-3 and j < lam - 1:
            break
    return total


FAR_NC = 80.0  # a noncentrality this many times t (at least 1) away puts all of T's mass on one side of t


def nct_cdf(t: float, df: float, nc: float) -> float:
    """P(T <= t) for T noncentral t with ``df`` degrees of freedom and noncentrality ``nc``.

    For t >= 0 (Guenther 1978; Lenth 1989, AS 243):
    F = Phi(-nc) + 1/2 sum_j [p_j I_x(j + 1/2, df/2) + nc / sqrt(2) q_j I_x(j + 1, df/2)],
    x = t^2 / (t^2 + df), p_j = e^-l l^j / j!, q_j = e^-l l^j / Gamma(j + 3/2), l = nc^2 / 2.
    For t < 0, F(t; df, nc) = 1 - F(-t; df, -nc).
    """
    if math.isnan(t) or math.isnan(nc) or not df > 0:
        return float("nan")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    if t < 0:
        return min(1.0, max(0.0, 1.0 - nct_cdf(-t, df, -nc)))
    if abs(nc) > FAR_NC * max(t, 1.0):
        # T = (Z + nc) / sqrt(V / df) lies beyond t only if Z is ~nc/2 from 0 or V is ~(nc / 2t)^2 = 1,600
        # times its mean: below any double's resolution, whatever df (and no series of ~nc^2 terms is summed)
        return 0.0 if nc > 0 else 1.0
    base = normal_cdf(-nc)
    if t == 0:
        return base
    x = t * t / (t * t + df)
    lam = nc * nc / 2.0
    b = df / 2.0
    if x >= 1.0:  # t so large against df that x rounds to 1: every I_x is 1, the sum is 1
        return 1.0
    log_lam = math.log(lam) if lam > 0 else -math.inf

    def p(j: int) -> float:
        if lam == 0:
            return 1.0 if j == 0 else 0.0
        return math.exp(-lam + j * log_lam - math.lgamma(j + 1.0))

    def q(j: int) -> float:
        if lam == 0:
            return 0.0
        return nc / math.sqrt(2.0) * math.exp(-lam + j * log_lam - math.lgamma(j + 1.5))

    total = _poisson_beta_mixture(lam, x, b, 0.5, p) + _poisson_beta_mixture(lam, x, b, 1.0, q)
    return min(1.0, max(0.0, base + 0.5 * total))


def normal_isf(tail: float) -> float:
    """The z with P(Z > z) = ``tail``, 0 < tail < 1."""
    return find_root(lambda z: normal_cdf(-z) - tail, -40.0, 40.0, 1e-15)


def t_isf(tail: float, df: float) -> float:
    """The t with P(T > t) = ``tail`` (0 < tail <= 1/2), central t with ``df`` degrees of freedom."""
    if not 0.0 < tail <= 0.5:
        raise ValueError(f"upper tail must be in (0, 0.5], got {tail}")
    if tail == 0.5:
        return 0.0

    def upper(t: float) -> float:  # P(T > t) for t >= 0, without the cancellation of 1 - cdf
        return 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))

    hi = 1.0
    while upper(hi) > tail:
        hi *= 2.0
    return find_root(lambda t: upper(t) - tail, 0.0, hi, 1e-14)


def find_root(f: Callable[[float], float], lo: float, hi: float, xtol: float) -> float:
    """A root of ``f`` in [lo, hi] where f changes sign: Brent's method (bisection, secant and inverse
    quadratic interpolation), to ``xtol`` relative to the root."""
    a, b = lo, hi
    fa, fb = f(a), f(b)
    if fa == 0:
        return a
    if fb == 0:
        return b
    if fa * fb > 0:
        raise ValueError("no sign change in the bracket")
    c, fc = a, fa
    d = e = b - a
    for _ in range(300):
        if fb * fc > 0:
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol = 2e-16 * abs(b) + 0.5 * xtol * max(abs(b), 1e-300)
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0:
            return b
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:
                pp, qq = 2.0 * m * s, 1.0 - s
            else:
                qa, r = fa / fc, fb / fc
                pp = s * (2.0 * m * qa * (qa - r) - (b - a) * (r - 1.0))
                qq = (qa - 1.0) * (r - 1.0) * (s - 1.0)
            if pp > 0:
                qq = -qq
            pp = abs(pp)
            if 2.0 * pp < min(3.0 * m * qq - abs(tol * qq), abs(e * qq)):
                e, d = d, pp / qq
            else:
                d = e = m
        else:
            d = e = m
        a, fa = b, fb
        b += d if abs(d) > tol else math.copysign(tol, m)
        fb = f(b)
    return b


def ncf_cdf(f: float, df1: float, df2: float, nc: float) -> float:
    """P(F <= f), noncentral F with ``df1``, ``df2`` degrees of freedom and noncentrality ``nc``:
    sum_j Poisson(j; nc / 2) I_y(df1 / 2 + j, df2 / 2), y = df1 f / (df1 f + df2)."""
    if f <= 0:
        return 0.0
    if math.isinf(f):
        return 1.0
    y = df1 * f / (df1 * f + df2)
    lam = nc / 2.0
    log_lam = math.log(lam) if lam > 0 else -math.inf

    def w(j: int) -> float:
        if lam == 0:
            return 1.0 if j == 0 else 0.0
        return math.exp(-lam + j * log_lam - math.lgamma(j + 1.0))

    return min(1.0, max(0.0, _poisson_beta_mixture(lam, y, df2 / 2.0, df1 / 2.0, w)))


def f_isf(tail: float, df1: float, df2: float) -> float:
    """The f with P(F > f) = ``tail``, central F."""
    hi = 1.0
    while 1.0 - ncf_cdf(hi, df1, df2, 0.0) > tail:
        hi *= 2.0
    return find_root(lambda f: (1.0 - ncf_cdf(f, df1, df2, 0.0)) - tail, 0.0, hi, 1e-14)
