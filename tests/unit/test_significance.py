"""Paired tests and intervals against scipy, and the compare() API end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import ragassay
from ragassay.metrics.significance import (
    bootstrap_ci,
    holm,
    paired_t_test,
    randomization_test,
    regularized_incomplete_beta,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=2, max_size=60))
def test_t_test_equals_scipy_ttest_rel(pairs):
    a = np.array([p[0] for p in pairs]) / 1000  # metric values
    b = np.array([p[1] for p in pairs]) / 1000
    d = b - a
    t, p = paired_t_test(d)
    ref = stats.ttest_rel(b, a)
    if np.all(d == 0):
        assert (t, p) == (0.0, 1.0)  # scipy: nan; documented
    elif np.all(d == d[0]):  # identical non-zero differences (sd 0): p = 0
        assert p == 0.0 and float(ref.pvalue) < 1e-12  # scipy: 0 or rounding noise
    else:
        assert t == pytest.approx(float(ref.statistic), rel=1e-9, abs=1e-12)
        assert p == pytest.approx(float(ref.pvalue), rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("a,b,x", [(0.5, 0.5, 0.3), (10, 0.5, 0.99), (1000, 0.5, 0.999), (2, 3, 0.5), (0.5, 40, 0.01)])
def test_incomplete_beta_equals_scipy(a, b, x):
    from scipy.special import betainc

    assert regularized_incomplete_beta(a, b, x) == pytest.approx(betainc(a, b, x), rel=1e-12)


def test_randomization_test_exact_on_tiny_sample():
    # 3 queries: all 8 sign patterns equally likely; |sum| >= observed for patterns giving |±1±2±3| >= 6 -> 2 of 8
    d = np.array([1.0, 2.0, 3.0])
    p = randomization_test(d, n_permutations=20_000, seed=1)
    assert p == pytest.approx(0.25, abs=0.01)
    assert randomization_test(d, 1000, seed=5) == randomization_test(d, 1000, seed=5)  # fixed seed
    assert randomization_test(np.zeros(5), 100) == 1.0


def test_bootstrap_ci_contains_mean_and_shrinks():
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 0.3, 400)
    lo, hi = bootstrap_ci(d, 0.95, 4000)
    assert lo < d.mean() < hi
    se = d.std(ddof=1) / math.sqrt(len(d))
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_holm():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.2, float("nan")])[0] == 0.2


def test_compare_api_and_alignment():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    base = {"q1": {"a": 1.0, "x": 0.5}, "q2": {"x": 1.0, "b": 0.5}}  # q3 missing -> 0
    better = {"q1": {"a": 1.0}, "q2": {"b": 1.0}, "q3": {"c": 1.0}}
    cmp = ragassay.compare(qrels, {"base": base, "better": better}, ["p@1", "mrr"], n_permutations=2000)
    assert cmp.queries == ["q1", "q2", "q3"]
    assert cmp.means["base"]["p@1"] == pytest.approx(1 / 3)
    assert cmp.means["better"]["p@1"] == 1.0
    t = cmp.tests[0]
    assert (t.run, t.metric, t.wins, t.ties, t.losses) == ("better", "p@1", 2, 1, 0)
    assert t.diff == pytest.approx(2 / 3)
    assert t.p_t_test == pytest.approx(stats.ttest_rel([1, 1, 1], [1, 0, 0]).pvalue)
    assert t.p_randomization_holm >= t.p_randomization
    skip = ragassay.compare(qrels, {"base": base, "better": better}, ["p@1"], missing="skip", n_permutations=100)
    assert skip.queries == ["q1", "q2"]
    with pytest.raises(ValueError, match="at least two runs"):
        ragassay.compare(qrels, {"base": base}, ["p@1"])
