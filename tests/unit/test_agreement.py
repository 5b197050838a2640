"""Agreement statistics against hand-worked examples and independent formulas."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

import ragassay
from ragassay.metrics.agreement import cohen_kappa, kendall_tau_b, krippendorff_alpha_ordinal, spearman_rho


def test_kappa_hand_worked():
    # 10 items, two raters, labels 0/1/2.
    # confusion (rows ref, cols cand): [[3,1,0],[1,2,1],[0,0,2]]
    ref = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    cand = [0, 0, 0, 1, 0, 1, 1, 2, 2, 2]
    # po = 7/10; ref marginals .4 .4 .2; cand marginals .4 .3 .3
    # pe = .16 + .12 + .06 = .34 -> kappa = (.7 - .34) / .66
    assert cohen_kappa(ref, cand) == pytest.approx(0.36 / 0.66)
    # linear: disagreement weights |i-j|: observed = (1+1+1)/10 = .3 (all off by one)
    # expected = sum p_i q_j |i-j| = .4*.3*1 + .4*.3*2 + .4*.4*1 + .4*.3*1 + .2*.4*2 + .2*.3*1 = .86
    assert cohen_kappa(ref, cand, "linear") == pytest.approx(1 - 0.3 / 0.86)
    # quadratic: observed .3; expected .12 + .48 + .16 + .12 + .32 + .06 = 1.26
    assert cohen_kappa(ref, cand, "quadratic") == pytest.approx(1 - 0.3 / 1.26)


def test_kappa_edge_cases():
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == 1.0
    assert np.isnan(cohen_kappa([2, 2], [2, 2]))  # chance agreement is already perfect
    assert np.isnan(cohen_kappa([], []))


def _alpha_by_pairs(x, y):
    """Krippendorff's alpha from its definition: observed vs expected ordinal disagreement."""
    values = list(x) + list(y)
    labels = sorted(set(values))
    counts = {c: values.count(c) for c in labels}

    def delta(c, k):
        lo, hi = min(c, k), max(c, k)
        inner = sum(counts[g] for g in labels if lo <= g <= hi)
        return (inner - (counts[c] + counts[k]) / 2) ** 2 if c != k else 0.0

    n = len(values)
    d_o = sum(2 * delta(a, b) for a, b in zip(x, y)) / n
    d_e = sum(delta(a, b) for a, b in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - d_o / d_e


def test_krippendorff_alpha_matches_definition():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, 40)
    y = np.clip(x + rng.integers(-1, 2, 40), 0, 3)
    assert krippendorff_alpha_ordinal(x, y) == pytest.approx(_alpha_by_pairs(x.tolist(), y.tolist()))
    assert krippendorff_alpha_ordinal([0, 1, 2, 3], [0, 1, 2, 3]) == 1.0


def test_rank_correlations_equal_scipy():
    a = [0.3, 0.5, 0.5, 0.1, 0.9, 0.7]
    b = [0.2, 0.6, 0.4, 0.1, 0.8, 0.8]
    assert kendall_tau_b(a, b) == pytest.approx(stats.kendalltau(a, b).statistic)
    assert spearman_rho(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)


def test_agree_end_to_end():
    ref = {"q1": {"a": 3, "b": 0, "c": 1}, "q2": {"d": 2, "e": 0}}
    cand = {"q1": {"a": 2, "b": 0, "z": 1}, "q2": {"d": 2, "e": 1}}
    ag = ragassay.agree(ref, cand)
    assert (ag.pairs, ag.only_reference, ag.only_candidate) == (4, 1, 1)
    assert ag.labels == [0, 1, 2, 3]
    assert ag.confusion == [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]
    assert ag.reference_distribution == {0: 2, 1: 0, 2: 1, 3: 1}
    assert ag.exact_agreement == 0.5
    assert ag.kappa_binary[1] == pytest.approx(cohen_kappa([1, 0, 1, 0], [1, 0, 1, 1]))
    runs = {
        "r1": {"q1": {"a": 1.0}, "q2": {"d": 1.0}},
        "r2": {"q1": {"b": 1.0}, "q2": {"e": 1.0}},
        "r3": {"q1": {"c": 2.0, "a": 1.0}, "q2": {"d": 1.0}},
    }
    ranked = ragassay.agree(ref, cand, runs).run_ranking
    import math

    idcg_ref_q1, idcg_cand_q1 = 3 + 1 / math.log2(3), 2 + 1 / math.log2(3)
    assert ranked["runs"]["r1"]["reference"] == pytest.approx((3 / idcg_ref_q1 + 1) / 2)
    # candidate q2 has d=2, e=1, so its ideal is the same 2 + 1/log2(3)
    assert ranked["runs"]["r3"]["candidate"] == pytest.approx((2 / math.log2(3) / idcg_cand_q1 + 2 / idcg_cand_q1) / 2)
    assert ranked["runs"]["r2"]["reference"] == 0.0
    # both order the runs r1 > r3 > r2
    assert ranked["kendall_tau_b"] == pytest.approx(1.0) and ranked["spearman_rho"] == pytest.approx(1.0)
