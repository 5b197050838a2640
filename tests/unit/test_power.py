"""How many queries a comparison needs (metrics/power.py): the noncentral t and F against scipy, the
paired t-test's power, queries needed and minimum detectable effect against statsmodels, the
figures checked by simulation (t-test and randomization test), edge cases, and compare / report."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import FTestAnovaPower, TTestPower, ttest_power

from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.errors import UsageError
from ragassay.metrics.compare import compare, sizing_table
from ragassay.metrics.noncentral import ncf_cdf, nct_cdf, t_isf
from ragassay.metrics.power import (
    MAX_QUERIES,
    analyse_pilot,
    anova_power,
    anova_queries_needed,
    minimum_detectable_effect,
    pairwise_analyses,
    queries_needed,
    queries_needed_exact,
    residual_variance,
    t_test_power,
)
from ragassay.metrics.significance import paired_t_test, randomization_test
from ragassay.product.report import compare_sections
from ragassay.product.report_inputs import ReportInputs

QRELS = str(EXAMPLE / "qrels.txt")
BM25 = str(EXAMPLE / "runs" / "bm25.txt")
TFIDF = str(EXAMPLE / "runs" / "tfidf.txt")


def _sig3(a: float, b: float) -> bool:
    """a and b agree to 3 significant digits."""
    return abs(a - b) <= 0.5e-3 * abs(b)


def _pilot(seed: int = 7, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Two runs' per-query scores as a metric gives them: on a grid of 0.1 (ties, exact zeros and ones)."""
    rng = np.random.default_rng(seed)
    a = np.clip(np.round(rng.beta(2, 2, n) * 10) / 10, 0, 1)
    b = np.clip(np.round((a + rng.normal(0.05, 0.15, n)) * 10) / 10, 0, 1)
    return a, b


# ----------------------------------------------------------------------- the distributions


def test_noncentral_t_cdf_matches_scipy_to_1e_9_on_the_ranges_power_uses():
    cases = [
        (t, df, nc)
        for df in (1, 2, 3, 7, 21, 99, 1000, 1e5)
        for nc in (-12.0, -2.8, -0.3, 0.0, 0.4, 2.8, 5.0, 11.0, 38.0, 60.0)
        for t in (-40.0, -4.3, -1.96, -0.01, 0.0, 0.7, 1.96, 2.08, 3.2, 12.7, 40.0, 200.0)
    ]
    refs = [(c, float(stats.nct.cdf(*c))) for c in cases]
    known = [(c, r) for c, r in refs if not math.isnan(r)]  # scipy gives nan in a few far corners
    assert len(known) > 0.95 * len(cases)
    for (t, df, nc), ref in nonempty(known):
        assert nct_cdf(t, df, nc) == pytest.approx(ref, abs=1e-9), (t, df, nc)
    for (t, df, nc), _ in nonempty([x for x in refs if math.isnan(x[1])]):  # there ours is still a probability
        assert 0.0 <= nct_cdf(t, df, nc) <= 1.0


def test_central_quantile_and_noncentral_f_match_scipy():
    for tail, df in nonempty([(0.025, 1), (0.025, 21), (0.005, 3), (0.25, 10), (0.025, 1e6), (1e-6, 5)]):
        # lgamma of a million's half carries ~1e-10 of relative error into the quantile there
        assert t_isf(tail, df) == pytest.approx(float(stats.t.isf(tail, df)), rel=1e-9), (tail, df)
    for f, d1, d2, nc in nonempty(
        [
            (0.5, 1, 9, 0.0),
            (2.1, 2, 40, 3.0),
            (3.3, 4, 120, 12.5),
            (1.0, 9, 1000, 80.0),
            (0.01, 3, 5, 0.2),
            (25.0, 2, 10, 150.0),
        ]
    ):
        ref = stats.ncf.cdf(f, d1, d2, nc) if nc else stats.f.cdf(f, d1, d2)
        assert ncf_cdf(f, d1, d2, nc) == pytest.approx(float(ref), abs=1e-9), (f, d1, d2, nc)


# -------------------------------------------------------------- the paired t-test's figures


def test_power_equals_statsmodels_two_sided_power():
    cases = [(n, d, a) for n in (2, 3, 5, 22, 100, 5000) for d in (0.05, 0.3, 1.2, -0.7) for a in (0.05, 0.01)]
    refs = [(c, float(ttest_power(c[1], c[0], c[2]))) for c in cases]
    for (n, d, alpha), ref in nonempty([x for x in refs if not math.isnan(x[1])]):
        assert t_test_power(n, d * 0.2, 0.2, alpha) == pytest.approx(ref, abs=1e-9)
    for (n, d, alpha), _ in nonempty([x for x in refs if math.isnan(x[1])]):  # statsmodels: nan where power is ~1
        assert t_test_power(n, d * 0.2, 0.2, alpha) > 1 - 1e-9


def test_queries_needed_matches_statsmodels_solve_power_to_3_significant_digits():
    cases = [(d, a, p) for d in (0.03, 0.1, 0.25, 0.5, 0.9, 1.6) for a in (0.05, 0.01) for p in (0.8, 0.9, 0.5)]
    for d, alpha, power in nonempty(cases):
        ref = TTestPower().solve_power(effect_size=d, alpha=alpha, power=power)
        sd = 0.17  # the metric's units: an effect of d * sd in the metric's mean
        exact = queries_needed_exact(d * sd, sd, power, alpha)
        assert _sig3(exact, float(ref)), (d, alpha, power, exact, ref)
        whole = queries_needed(d * sd, sd, power, alpha)
        assert whole == max(2, math.ceil(exact))
        # the whole number is the first with enough power, by statsmodels' own power function
        assert ttest_power(d, whole, alpha) >= power - 1e-12
        assert whole == 2 or ttest_power(d, whole - 1, alpha) < power


def test_minimum_detectable_effect_matches_statsmodels_to_3_significant_digits():
    for n, alpha, power in nonempty(
        [(n, a, p) for n in (2, 3, 10, 22, 50, 300, 10_000) for a in (0.05, 0.1) for p in (0.8, 0.95)]
    ):
        sd = 0.23
        mde = minimum_detectable_effect(n, sd, power, alpha)
        at_mde = ttest_power(mde / sd, n, alpha)  # nan at 1 or 2 degrees of freedom and power 0.95 (scipy's nct)
        assert math.isnan(at_mde) and n <= 3 or at_mde == pytest.approx(power, abs=1e-8)  # ours is the exact root
        ref = TTestPower().solve_power(nobs=n, alpha=alpha, power=power)
        if (
            abs(ttest_power(ref, n, alpha) - power) < 1e-4
        ):  # statsmodels' solver found its root (not at n = 2, power 0.95)
            assert _sig3(mde, float(ref) * sd), (n, alpha, power, mde, ref)
    assert t_test_power(2, 4.062726910667679, 0.23, 0.05) == pytest.approx(0.95, abs=1e-9)  # where statsmodels gives up
    assert minimum_detectable_effect(22, 0.23) == pytest.approx(
        0.6264201 * 0.23, rel=1e-6
    )  # statsmodels, to its tolerance


def test_a_pilot_sizes_from_the_variance_of_its_differences_not_of_its_scores():
    a, b = _pilot()
    d = b - a
    sized = analyse_pilot(d, effect=0.02)
    sd = float(np.std(d, ddof=1))
    assert sized.sd_diff == pytest.approx(sd, rel=1e-12) and sized.queries == 40
    assert sized.mean_diff == pytest.approx(float(d.mean()))
    assert _sig3(sized.mde, TTestPower().solve_power(nobs=40, alpha=0.05, power=0.8) * sd)
    assert sized.queries_needed == math.ceil(TTestPower().solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.8))
    # the two runs' scores vary far more than their difference: sizing on them would be wrong
    assert np.std(a, ddof=1) > sd or np.std(b, ddof=1) > sd
    # a difference either way is the same size to detect
    assert analyse_pilot(-d, effect=-0.02).queries_needed == sized.queries_needed
    assert "randomization test" in sized.method and "t-test" in sized.method
    assert sized.sentence() == (
        f"40 queries detect a difference of {sized.mde:.4f} or more at power 0.8 (alpha 0.05); "
        f"to detect 0.02 you need {sized.queries_needed} queries"
    )


# -------------------------------------------------------------------------- by simulation


def test_the_t_test_at_the_computed_n_has_the_target_power_by_simulation():
    a, b = _pilot(seed=3)
    sd = float(np.std(b - a, ddof=1))
    effect = 0.6 * sd
    n = queries_needed(effect, sd)
    exact = t_test_power(n, effect, sd)
    assert 0.8 <= exact < 0.85
    rng = np.random.default_rng(11)
    sims = 4000
    diffs = rng.normal(effect, sd, size=(sims, n))
    rejected = np.mean([paired_t_test(d)[1] < 0.05 for d in diffs])
    se = math.sqrt(exact * (1 - exact) / sims)
    assert abs(rejected - exact) < 3 * se, (rejected, exact, se)
    # the check can fail: half the queries fall well short of the target
    half = rng.normal(effect, sd, size=(sims, n // 2))
    assert np.mean([paired_t_test(d)[1] < 0.05 for d in half]) < exact - 10 * se


def test_the_randomization_test_at_the_t_tests_n_has_the_target_power_by_simulation():
    a, b = _pilot(seed=5)
    sd = float(np.std(b - a, ddof=1))
    effect = 0.55 * sd
    n = queries_needed(effect, sd)
    exact = t_test_power(n, effect, sd)
    rng = np.random.default_rng(12)
    sims = 400
    diffs = rng.normal(effect, sd, size=(sims, n))
    rejected = np.mean([randomization_test(d, 500, seed=i) < 0.05 for i, d in enumerate(diffs)])
    se = math.sqrt(exact * (1 - exact) / sims)
    assert abs(rejected - exact) < 3 * se, (n, rejected, exact, se)
    # the check can fail: half the queries fall well short of the target
    half = rng.normal(effect, sd, size=(sims, n // 2))
    assert np.mean([randomization_test(d, 500, seed=i) < 0.05 for i, d in enumerate(half)]) < exact - 5 * se


# ----------------------------------------------------------------------------- edge cases


def test_a_pilot_whose_differences_do_not_vary_says_so_instead_of_dividing_by_zero():
    same = analyse_pilot([0.1, 0.1, 0.1, 0.1], effect=0.02)
    assert same.sd_diff == 0.0 and same.mde is None and same.queries_needed is None
    assert "every query has the same difference (+0.1000)" in same.note and "no variance" in same.note
    zero = analyse_pilot(np.zeros(22))
    assert zero.mde is None and "(+0.0000)" in zero.note and zero.sentence() == zero.note
    with pytest.raises(ValueError, match="above 0"):
        queries_needed(0.02, 0.0)


def test_a_pilot_of_fewer_than_two_queries_has_no_figures():
    one = analyse_pilot([0.3], effect=0.02)
    assert one.mde is None and one.sd_diff is None and one.mean_diff == 0.3
    assert one.note == "a pilot of 1 query has no variance to size a comparison with (at least 2 are needed)"
    assert analyse_pilot([]).note.startswith("a pilot of 0 queries") and analyse_pilot([]).mean_diff is None
    with pytest.raises(ValueError, match="at least 2 queries"):
        minimum_detectable_effect(1, 0.2)


def test_designs_no_number_of_queries_answers_are_refused_with_a_reason():
    d = [0.1, -0.2, 0.05, 0.3]
    with pytest.raises(UsageError, match="no number of queries detects a difference of 0"):
        analyse_pilot(d, effect=0)
    with pytest.raises(UsageError, match="non-zero finite"):
        analyse_pilot(d, effect=float("nan"))
    for power in nonempty([1.0, 1.2, 0.05, 0.01, 0.0]):
        with pytest.raises(UsageError, match="above alpha"):
            analyse_pilot(d, power=power)
    with pytest.raises(UsageError, match="alpha must be strictly between 0 and 1"):
        minimum_detectable_effect(10, 0.2, alpha=0)
    with pytest.raises(UsageError, match=r"2 of the pilot's 5 per-query differences are NaN"):
        analyse_pilot([0.1, float("nan"), 0.2, float("nan"), 0.0])


def test_power_just_above_alpha_and_very_small_effects_still_give_figures():
    assert (
        queries_needed(0.02, 0.2, power=0.051)
        == math.ceil(TTestPower().solve_power(effect_size=0.1, alpha=0.05, power=0.051))
        == 3
    )
    assert queries_needed(0.2, 0.2, power=0.06) == 2  # the smallest paired test already has that power
    assert minimum_detectable_effect(22, 0.2, power=0.0501) == pytest.approx(
        TTestPower().solve_power(nobs=22, alpha=0.05, power=0.0501) * 0.2, rel=1e-3
    )
    n = queries_needed(1e-3, 0.3)
    assert n == math.ceil(TTestPower().solve_power(effect_size=1e-3 / 0.3, alpha=0.05, power=0.8)) == 706_400
    assert queries_needed_exact(4e-4, 0.3) == pytest.approx(  # 4.4 million queries
        TTestPower().solve_power(effect_size=4e-4 / 0.3, alpha=0.05, power=0.8), rel=1e-6
    )
    assert MAX_QUERIES == 10**7 and queries_needed_exact(1e-4, 0.3) == math.inf  # 7e7: out of reach
    assert queries_needed(1e-9, 1.0) is None  # beyond MAX_QUERIES: out of reach, not a search without end
    sized = analyse_pilot([0.0, 1.0, 0.5, 0.2], effect=1e-9)
    assert sized.queries_needed is None and f"more than {MAX_QUERIES:,} queries" in sized.note
    assert sized.sentence().endswith(sized.note)


def test_every_pair_of_three_runs_is_sized_on_its_own_differences():
    a, b = _pilot(seed=1)
    c = np.clip(b + np.round(np.random.default_rng(2).normal(0, 0.2, len(b)) * 10) / 10, 0, 1)
    pairs = pairwise_analyses({"x": a, "y": b, "z": c}, effect=0.05)
    assert list(pairs) == [("x", "y"), ("x", "z"), ("y", "z")]
    for (p, q), sized in nonempty(pairs.items()):
        runs = {"x": a, "y": b, "z": c}
        sd = float(np.std(runs[q] - runs[p], ddof=1))
        assert sized.sd_diff == pytest.approx(sd)
        assert sized.queries_needed == math.ceil(TTestPower().solve_power(effect_size=0.05 / sd, alpha=0.05, power=0.8))
    assert len({s.queries_needed for s in pairs.values()}) == 3  # three different variances, three answers
    with pytest.raises(UsageError, match="same queries"):
        pairwise_analyses({"x": a, "y": b[:-1]})


def test_anova_sizing_of_m_runs_matches_statsmodels_anova_power():
    rng = np.random.default_rng(4)
    for m in nonempty([2, 3, 5]):
        scores = np.clip(np.round(rng.beta(2, 3, (m, 30)) * 20) / 20, 0, 1)
        var = residual_variance(scores)
        assert var == pytest.approx(float(np.mean([np.var(r, ddof=1) for r in scores])))
        for d in nonempty([0.05, 0.1, 0.2]):
            n = anova_queries_needed(scores, d)
            f = math.sqrt(d * d / (2 * m * var))  # Cohen's f of the least favourable means
            total = FTestAnovaPower().solve_power(effect_size=f, alpha=0.05, power=0.8, k_groups=m)
            assert n == math.ceil(total / m), (m, d, n, total)
            assert anova_power(n, m, d, var) >= 0.8 > anova_power(n - 1, m, d, var)
    with pytest.raises(UsageError, match="no one-way residual variance"):
        anova_queries_needed(np.ones((3, 4)), 0.1)
    with pytest.raises(UsageError, match="at least 2 runs"):
        anova_queries_needed(np.ones((1, 4)), 0.1)


def test_two_way_anova_takes_the_queries_as_a_factor_and_at_two_runs_is_the_paired_t_test():
    a, b = _pilot(seed=9)
    sd = float(np.std(b - a, ddof=1))
    for d in nonempty([0.02, 0.05, 0.1, 0.3]):
        paired = queries_needed(d, sd)
        assert anova_queries_needed({"a": a, "b": b}, d, design="two-way") == paired
        assert anova_queries_needed({"a": a, "b": b}, d) > paired  # one-way ignores the pairing: more queries
    rng = np.random.default_rng(8)
    scores = np.clip(np.round((rng.beta(2, 3, (1, 25)) + rng.normal(0, 0.1, (4, 25))) * 20) / 20, 0, 1)
    m, n = scores.shape
    ss = lambda x: float(((x - x.mean()) ** 2).sum())  # noqa: E731
    by_hand = (ss(scores) - n * ss(scores.mean(axis=1)) - m * ss(scores.mean(axis=0))) / ((m - 1) * (n - 1))
    var = residual_variance(scores, "two-way")
    assert var == pytest.approx(by_hand, rel=1e-12)
    needed = anova_queries_needed(scores, 0.1, design="two-way")
    for q, enough in nonempty([(needed, True), (needed - 1, False)]):  # scipy's noncentral F at error df (m-1)(q-1)
        df2 = (m - 1) * (q - 1)
        ref = stats.ncf.sf(stats.f.isf(0.05, m - 1, df2), m - 1, df2, q * 0.01 / (2 * var))
        assert anova_power(q, m, 0.1, var, design="two-way") == pytest.approx(float(ref), abs=1e-9)
        assert (ref >= 0.8) == enough
    same = np.vstack([a, a + 0.1])
    with pytest.raises(UsageError, match="no two-way residual variance"):
        anova_queries_needed(same, 0.1, design="two-way")
    with pytest.raises(UsageError, match="design must be"):
        anova_queries_needed(scores, 0.1, design="three-way")


# ------------------------------------------------------------------------ compare, report


def test_compare_sizes_each_run_against_the_baseline():
    cmp = compare(QRELS, [BM25, TFIDF], ["ndcg@10", "map", "hit_rate@10"], effect=0.02)
    tests = {t.metric: t for t in cmp.tests}
    for metric in nonempty(["ndcg@10", "map"]):
        d = cmp.evaluations["tfidf"].values[metric] - cmp.evaluations["bm25"].values[metric]
        sd = float(np.std(d, ddof=1))
        t = tests[metric]
        assert t.sd_diff == pytest.approx(sd)
        assert _sig3(t.mde, TTestPower().solve_power(nobs=22, alpha=0.05, power=0.8) * sd)
        assert t.queries_needed == math.ceil(TTestPower().solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.8))
    assert tests["ndcg@10"].mde == pytest.approx(0.0975, abs=5e-5) and tests["ndcg@10"].queries_needed == 478
    assert tests["hit_rate@10"].mde is None and "no variance" in tests["hit_rate@10"].power_note
    out = cmp.to_dict()
    assert out["settings"]["power"] == 0.8 and out["settings"]["alpha"] == 0.05 and out["settings"]["effect"] == 0.02
    assert out["tests"][0]["queries_needed"] == 478
    # alpha follows the confidence level, as the interval does
    loose = compare(QRELS, [BM25, TFIDF], ["ndcg@10"], confidence=0.9, power=0.9)
    assert loose.settings["alpha"] == 0.1 and loose.tests[0].queries_needed is None
    assert _sig3(loose.tests[0].mde, TTestPower().solve_power(nobs=22, alpha=0.1, power=0.9) * tests["ndcg@10"].sd_diff)


def test_compare_refuses_a_power_not_above_its_alpha_and_an_effect_of_zero():
    with pytest.raises(UsageError, match=r"above the tests' alpha, 1 - confidence \(0.3\)"):
        compare(QRELS, [BM25, TFIDF], ["ndcg@10"], confidence=0.7, power=0.3)
    with pytest.raises(UsageError, match="difference of 0"):
        compare(QRELS, [BM25, TFIDF], ["ndcg@10"], effect=0.0)


def test_sizing_table_and_the_reports_line():
    c = compare(QRELS, [BM25, TFIDF], ["map", "ndcg@10"], effect=0.02).to_dict()
    headers, rows, notes = sizing_table(c)
    assert headers == ["run", "metric", "sd (diff)", "MDE", "queries for 0.02"]
    assert [r[:2] for r in rows] == [["tfidf", "map"], ["tfidf", "ndcg@10"]] and rows[1][4] == 478
    assert notes[0].startswith("MDE: the smallest difference these 22 queries detect with power 0.8 at alpha 0.05")
    assert notes[1].startswith("The randomization test's figures are taken to be the t-test's")
    section = compare_sections(ReportInputs(compare=c), [])[0]
    mde = c["tests"][1]["mde"]
    assert (
        f"22 queries detect a difference of ≥ {mde:.4f} in ndcg@10 (tfidf against bm25) at power 0.8; "
        "to detect 0.02 you need 478 queries."
    ) in section.note
    table = section.tables[0]
    assert table.headers[-2:] == ["MDE", "queries for 0.02"] and table.rows[1][-2:] == [mde, 478]
    # a compare JSON written before sizing existed: the report reads it as before
    old = json.loads(json.dumps(c))
    del old["settings"]["power"]
    assert sizing_table(old) == ([], [], [])
    section = compare_sections(ReportInputs(compare=old), [])[0]
    assert "MDE" not in section.tables[0].headers and "detect" not in section.note
    # without an effect: the MDE only
    headers, rows, _ = sizing_table(compare(QRELS, [BM25, TFIDF], ["ndcg@10"]).to_dict())
    assert headers == ["run", "metric", "sd (diff)", "MDE"] and len(rows[0]) == 4


def test_compare_command_prints_the_sizing_in_text_and_json(capsys):
    assert main(["compare", QRELS, BM25, TFIDF, "-m", "ndcg@10,hit_rate@10", "--effect", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "run    metric       sd (diff)     MDE  queries for 0.02" in out
    assert "tfidf  ndcg@10         0.1556  0.0975               478" in out
    assert "tfidf hit_rate@10: every query has the same difference (+0.0000)" in out
    assert "The randomization test's figures are taken to be the t-test's" in out and "Give --effect" not in out
    assert (
        main(
            [
                "compare",
                QRELS,
                BM25,
                TFIDF,
                "-m",
                "ndcg@10",
                "--power",
                "0.9",
                "--confidence",
                "0.99",
                "--format",
                "json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert (
        result["settings"]["power"] == 0.9
        and result["settings"]["alpha"] == 0.01
        and result["settings"]["effect"] is None
    )
    t = result["tests"][0]
    assert t["queries_needed"] is None and t["power_note"] == ""
    assert _sig3(t["mde"], TTestPower().solve_power(nobs=22, alpha=0.01, power=0.9) * t["sd_diff"])
    assert main(["compare", QRELS, BM25, TFIDF, "-m", "ndcg@10"]) == 0
    assert "Give --effect D for the queries needed to detect a difference D." in capsys.readouterr().out


def test_compare_command_refuses_designs_with_exit_2(capsys):
    for flags, said in nonempty(
        [
            (["--power", "0.03"], "must be above the tests' alpha, 1 - confidence (0.05)"),
            (["--power", "1"], "argument --power: must be a number strictly between 0 and 1"),
            (["--effect", "0"], "argument --effect: must be a number above 0"),
            (["--effect", "nan"], "argument --effect: expected a finite number"),
        ]
    ):
        assert main(["compare", QRELS, BM25, TFIDF, "-m", "ndcg@10", *flags]) == 2
        assert said in capsys.readouterr().err


def test_compare_of_three_runs_sizes_each_against_the_baseline_on_its_own_differences(tmp_path):
    lines = open(BM25).read().splitlines()
    shuffled = tmp_path / "odd run #1.txt"  # bm25 with each query's top two swapped, a few queries dropped
    kept = [ln.split() for ln in lines if ln.split()[0] not in {"q03", "q07"}]
    by_query: dict[str, list[list[str]]] = {}
    for row in nonempty(kept):
        by_query.setdefault(row[0], []).append(row)
    out = []
    for rows in nonempty(by_query.values()):
        rows = sorted(rows, key=lambda r: -float(r[4]))
        rows[0][4], rows[1][4] = rows[1][4], rows[0][4]
        out += [" ".join(r[:5] + ["odd"]) for r in rows]
    shuffled.write_text("\n".join(out) + "\n")
    cmp = compare(QRELS, {"bm25": BM25, "tfidf": TFIDF, "odd": str(shuffled)}, ["ndcg@10"], effect=0.05)
    assert [t.run for t in cmp.tests] == ["tfidf", "odd"]
    base = cmp.evaluations["bm25"].values["ndcg@10"]
    for t in nonempty(cmp.tests):
        sd = float(np.std(cmp.evaluations[t.run].values["ndcg@10"] - base, ddof=1))
        assert t.sd_diff == pytest.approx(sd) and t.mde == pytest.approx(minimum_detectable_effect(22, sd))
        assert t.queries_needed == queries_needed(0.05, sd)
    assert cmp.tests[0].sd_diff != pytest.approx(cmp.tests[1].sd_diff)


@pytest.mark.parametrize("effect", [1e9, 1e5, 1000.0, 100.0])
def test_a_huge_difference_needs_two_queries_and_is_computed_at_once(effect):
    """A difference thousands of times the sd of the differences: the noncentrality is so large that
    the series would need ~nc^2 terms (it hung, and at 1e9 overflowed); every query count detects it."""
    from ragassay.metrics.power import queries_needed

    assert queries_needed(effect, 0.1556) == 2
    # at alpha 0.001 one degree of freedom has a critical t of 636.6: 2 queries only once the difference is huge
    assert queries_needed(effect, 0.1556, power=0.99, alpha=0.001) == (
        2 if effect >= 1000 else 3
    )  # (at 100: power 0.847 with 2, scipy agrees)


@pytest.mark.parametrize(
    "t, df, nc",
    [(12.7, 1, 2000.0), (636.6, 1, 60000.0), (2.0, 30, 500.0), (0.5, 5, -300.0), (3.0, 2, 240.5), (1.0, 1, 79.0)],
)
def test_the_noncentral_t_far_from_its_mass_equals_scipys(t, df, nc):
    scipy_stats = pytest.importorskip("scipy.stats")
    from ragassay.metrics.noncentral import nct_cdf

    assert nct_cdf(t, df, nc) == pytest.approx(float(scipy_stats.nct.cdf(t, df, nc)), abs=1e-9)
    assert nct_cdf(-t, df, nc) == pytest.approx(float(scipy_stats.nct.cdf(-t, df, nc)), abs=1e-9)
