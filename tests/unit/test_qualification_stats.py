"""The statistics that qualify a judge against people (metrics/qualification.py), against independent
computations: kappas and confusion matrices written out by hand on small cases, a plain-Python
kappa and bootstrap on the same resampled items, scikit-learn's cohen_kappa_score and scipy's
kendalltau and binomtest where installed; and the cases a careful grader tries (one class on a
side, a class one side never uses, error records, tiny samples, perfect agreement and disagreement,
items in another order, seeds, a judge against itself)."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import nonempty
from ragassay.metrics.qualification import (
    bias_sentence,
    label_agreement,
    mcnemar_exact,
    paired_difference,
    system_ranking_agreement,
)

GRADES = [0, 1, 2, 3]
ANSWER_LABELS = ["correct", "partial", "hallucinated", "abstained"]


def hand_kappa(x: list, y: list) -> float:
    """Cohen's kappa from its definition, in plain Python: (po - pe) / (1 - pe)."""
    n = len(x)
    po = sum(a == b for a, b in zip(x, y)) / n
    cx, cy = Counter(x), Counter(y)
    pe = sum(cx[c] * cy[c] for c in set(x) | set(y)) / (n * n)
    return (po - pe) / (1 - pe)


def percentile(values: list[float], q: float) -> float:
    """numpy's default (linear) quantile, by hand."""
    v = sorted(values)
    h = (len(v) - 1) * q
    lo = math.floor(h)
    return v[lo] + (h - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])


def sample(seed: int, n: int, keep: float) -> tuple[list[int], list[int]]:
    r = random.Random(seed)
    people = [r.randrange(4) for _ in range(n)]
    model = [p if r.random() < keep else r.randrange(4) for p in people]
    return people, model


# ---------------------------------------------------------------- label_agreement, by hand


def test_four_grades_by_hand():
    # confusion (rows people 0..3, columns model 0..3): [[1,1,0,0],[0,1,1,0],[0,0,1,1],[0,0,0,2]]
    # po = 5/8; people's marginals 1/4 each, so pe = 1/4; kappa = (5/8 - 1/4) / (3/4) = 1/2
    # binary at >= 2: people 0,0,1,1,0,0,1,1; model 0,0,1,1,0,1,1,1: po 7/8, pe 1/2 -> kappa 3/4
    a = label_agreement([0, 1, 2, 3, 0, 1, 2, 3], [0, 1, 2, 3, 1, 2, 3, 3], GRADES, {2, 3}, ordinal=True)
    assert a.n == 8 and a.missing == 0
    assert a.kappa == pytest.approx(0.5)
    assert a.kappa_binary == pytest.approx(0.75)
    assert a.exact_agreement == pytest.approx(5 / 8) and a.binary_agreement == pytest.approx(7 / 8)
    assert a.confusion == [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [0, 0, 0, 2]]
    assert (a.above, a.below) == (3, 0)
    assert a.people_counts == {0: 2, 1: 2, 2: 2, 3: 2} and a.model_counts == {0: 1, 1: 2, 2: 2, 3: 3}
    assert a.positive == [2, 3] and a.positive_words == "grade >= 2"
    # 8 pairs carry a kappa but not an interval: the reason is given, in kappa_meaning's words
    assert a.kappa_ci is None and a.kappa_binary_ci is None
    assert a.why == {
        "kappa_ci": "8 pairs: too few for an interval (it needs 10 or more)",
        "kappa_binary_ci": "8 pairs: too few for an interval (it needs 10 or more)",
    }
    assert bias_sentence(a) == "grades above people's on 38% of pairs (3 of 8), below on 0% (0)"


def test_answers_binary_by_hand_and_the_commonest_disagreement():
    # people: 5 correct, 5 incorrect; model: 3 of the correct called correct, 4 of the incorrect called correct
    people = ["correct"] * 5 + ["incorrect"] * 5
    model = ["correct"] * 3 + ["incorrect"] * 2 + ["correct"] * 4 + ["incorrect"]
    a = label_agreement(people, model, ["correct", "incorrect"], {"correct"}, ordinal=False)
    # po = 4/10; pe = .5*.7 + .5*.3 = .5; kappa = (.4 - .5) / .5 = -0.2
    assert a.kappa == pytest.approx(-0.2) and a.kappa_binary == pytest.approx(-0.2)
    assert a.confusion == [[3, 2], [4, 1]]
    assert a.above is None and a.below is None
    assert a.unit == "answers" and a.positive_words == "correct"
    assert a.kappa_ci is not None and a.kappa_ci[0] <= -0.2 <= a.kappa_ci[1]
    assert bias_sentence(a) == "called correct where people said incorrect: 4 of 10; the reverse: 2"


def test_the_four_answer_labels_with_a_binary_view_of_correct():
    people = ["correct", "correct", "partial", "hallucinated", "abstained", "correct", "hallucinated", "partial"]
    model = ["correct", "partial", "partial", "correct", "abstained", "partial", "hallucinated", "correct"]
    a = label_agreement(people, model, ANSWER_LABELS, {"correct"}, ordinal=False)
    assert a.kappa == pytest.approx(hand_kappa(people, model))
    pb = [p == "correct" for p in people]
    mb = [m == "correct" for m in model]
    assert a.kappa_binary == pytest.approx(hand_kappa(pb, mb))
    assert a.confusion == [[1, 2, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]]
    # the commonest disagreement: 2 correct answers called partial; the reverse (partial called correct): 1
    assert bias_sentence(a) == "called partial where people said correct: 2 of 8; the reverse: 1"
    assert bias_sentence(a, unit="responses") == bias_sentence(a)  # this sentence names no unit
    assert a.to_dict()["people_counts"] == {"correct": 3, "partial": 2, "hallucinated": 2, "abstained": 1}


def test_perfect_agreement_and_perfect_disagreement():
    people = [0, 0, 1, 1, 2, 2, 3, 3, 0, 3, 1, 2]
    a = label_agreement(people, people, GRADES, {2, 3}, ordinal=True)
    assert a.kappa == 1.0 and a.kappa_binary == 1.0 and a.exact_agreement == 1.0
    assert (a.above, a.below) == (0, 0)
    assert a.kappa_ci == [1.0, 1.0]
    assert bias_sentence(a) == "grades above people's on 0% of pairs (0 of 12), below on 0% (0)"
    flipped = label_agreement(
        ["yes", "yes", "no", "no"], ["no", "no", "yes", "yes"], ["yes", "no"], {"yes"}, ordinal=False
    )
    assert flipped.kappa == pytest.approx(-1.0) and flipped.exact_agreement == 0.0
    assert bias_sentence(flipped) == "called no where people said yes: 2 of 4; the reverse: 2"
    same = label_agreement(["yes", "no"], ["yes", "no"], ["yes", "no"], {"yes"}, ordinal=False)
    assert bias_sentence(same) == "labels as people do on all 2 answers"


def test_one_class_on_a_side_gives_no_kappa_and_says_why():
    # people graded every pair 1: chance explains all agreement, whatever the model did
    a = label_agreement([1] * 12, [0, 1] * 6, GRADES, {2, 3}, ordinal=True)
    assert a.kappa is None and a.kappa_ci is None and a.kappa_binary is None
    assert a.why["kappa"].startswith("people give all 12 shared pairs grade 1: kappa measures agreement beyond chance")
    assert a.why["kappa_ci"] == a.why["kappa"]
    assert a.why["kappa_binary"].startswith("people give all 12 shared pairs a negative label (grade < 2)")
    assert a.exact_agreement == 0.5 and (a.above, a.below) == (0, 6)
    # the model calls every answer correct
    b = label_agreement(
        ["correct", "incorrect"] * 6, ["correct"] * 12, ["correct", "incorrect"], {"correct"}, ordinal=False
    )
    assert b.kappa is None and b.kappa_binary is None
    assert b.why["kappa"].startswith("the model gives all 12 shared answers the label correct:")
    assert b.why["kappa_binary"].startswith("the model gives all 12 shared answers a positive label (correct)")
    d = b.to_dict()
    assert d["kappa"] is None and json.loads(json.dumps(d, allow_nan=False)) == d


def test_binary_view_undefined_while_the_four_class_kappa_is_not():
    # both sides use several grades, but all of them below 2: the binary view has one class
    people = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
    model = [0, 1, 1, 1, 0, 0, 0, 1, 0, 1]
    a = label_agreement(people, model, GRADES, {2, 3}, ordinal=True)
    assert a.kappa == pytest.approx(hand_kappa(people, model)) and a.kappa_ci is not None
    assert a.kappa_binary is None and a.kappa_binary_ci is None
    assert "kappa_binary" in a.why and "kappa" not in a.why


def test_a_class_one_side_never_uses_keeps_its_row_and_column():
    # people never say 3, the model never says 0: the matrix still has all four rows and columns
    people = [0, 0, 1, 1, 2, 2, 1, 0, 2, 1]
    model = [1, 1, 1, 2, 2, 3, 1, 1, 3, 2]
    a = label_agreement(people, model, GRADES, {2, 3}, ordinal=True)
    assert a.confusion == [[0, 3, 0, 0], [0, 2, 2, 0], [0, 0, 1, 2], [0, 0, 0, 0]]
    assert a.people_counts[3] == 0 and a.model_counts[0] == 0
    assert a.kappa == pytest.approx(hand_kappa(people, model))
    assert (a.above, a.below) == (7, 0)
    assert bias_sentence(a) == "grades above people's on 70% of pairs (7 of 10), below on 0% (0)"


def test_error_records_are_left_out_and_counted():
    people = [0, 1, 2, 3, 2, 1]
    model = [0, None, 2, None, 3, 1]
    a = label_agreement(people, model, GRADES, {2, 3}, ordinal=True)
    assert (a.n, a.missing) == (4, 2)
    assert a.kappa == pytest.approx(hand_kappa([0, 2, 2, 1], [0, 2, 3, 1]))
    assert sum(map(sum, a.confusion)) == 4
    none = label_agreement([0, 1, 2], [None, None, None], GRADES, {2, 3}, ordinal=True)
    assert (none.n, none.missing, none.kappa, none.exact_agreement) == (0, 3, None, None)
    assert none.why["kappa"] == "no pair was labelled by both sides"
    assert bias_sentence(none) == "no pairs labelled by both people and the model"
    empty = label_agreement([], [], ["correct", "incorrect"], {"correct"}, ordinal=False)
    assert empty.n == 0 and empty.why["kappa"] == "no answer was labelled by both sides"


def test_tiny_samples():
    one = label_agreement(["correct"], ["correct"], ["correct", "incorrect"], {"correct"}, ordinal=False)
    assert one.kappa is None and one.exact_agreement == 1.0
    three = label_agreement([0, 1, 2], [0, 2, 2], GRADES, {2, 3}, ordinal=True, unit="items")
    assert three.kappa == pytest.approx(hand_kappa([0, 1, 2], [0, 2, 2]))
    assert three.why["kappa_ci"] == "3 items: too few for an interval (it needs 10 or more)"
    nine = label_agreement(*sample(3, 9, 0.5), GRADES, {2, 3}, ordinal=True)
    ten = label_agreement(*sample(3, 10, 0.5), GRADES, {2, 3}, ordinal=True)
    assert nine.kappa_ci is None and ten.kappa_ci is not None


def test_bad_input_is_refused_with_the_label_named():
    with pytest.raises(ValueError, match="'relevant'"):
        label_agreement([0, 1], [0, "relevant"], GRADES, {2, 3}, ordinal=True)
    with pytest.raises(ValueError, match="same items"):
        label_agreement([0, 1], [0], GRADES, {2, 3}, ordinal=True)
    with pytest.raises(ValueError, match="people's label is None"):
        label_agreement([0, None], [0, 1], GRADES, {2, 3}, ordinal=True)
    with pytest.raises(ValueError, match=r"\[4\]"):
        label_agreement([0, 1], [0, 1], GRADES, {2, 4}, ordinal=True)


def test_one_positive_class_given_alone_is_that_class():
    people, model = ["correct", "incorrect", "correct"], ["correct", "correct", "incorrect"]
    alone = label_agreement(people, model, ["correct", "incorrect"], "correct", ordinal=False)
    assert alone == label_agreement(people, model, ["correct", "incorrect"], {"correct"}, ordinal=False)
    assert alone.positive == ["correct"]
    assert label_agreement([0, 3], [3, 3], GRADES, 3, ordinal=True).positive_words == "grade >= 3"


def test_unicode_labels_and_numpy_grades():
    people = ["正しい", "誤り", "正しい", "誤り", "正しい"]
    model = ["正しい", "正しい", "正しい", "誤り", "誤り"]
    a = label_agreement(people, model, ["正しい", "誤り"], {"正しい"}, ordinal=False)
    assert a.kappa == pytest.approx(hand_kappa(people, model))
    assert bias_sentence(a) == "called 誤り where people said 正しい: 1 of 5; the reverse: 1"
    g = label_agreement(list(np.array([0, 1, 2, 3])), [np.int64(0), 1, 3, 3], GRADES, {2, 3}, ordinal=True)
    assert g.confusion[2][3] == 1 and g.to_dict()["people_counts"] == {"0": 1, "1": 1, "2": 1, "3": 1}


def test_the_percent_words_round_and_never_say_zero_for_some():
    people = [0] * 150
    model = [2] * 47 + [0] * 103
    people = people[:136] + [3] * 14
    model = model[:136] + [1] * 14
    a = label_agreement(people, model, GRADES, {2, 3}, ordinal=True)
    assert bias_sentence(a) == "grades above people's on 31% of pairs (47 of 150), below on 9% (14)"
    rare = label_agreement([0] * 299 + [1], [0] * 298 + [1, 0], GRADES, {2, 3}, ordinal=True)
    assert bias_sentence(rare) == "grades above people's on <1% of pairs (1 of 300), below on <1% (1)"


# ---------------------------------------------------------------- the bootstrap interval


def test_the_interval_is_the_percentile_bootstrap_over_items():
    """The same resampled items (numpy's generator, seeded), kappas by hand, percentiles by hand.
    The items are in the function's one order (sorted pairs), so they are resampled from that order."""
    people, model = sample(11, 40, 0.6)
    a = label_agreement(people, model, GRADES, {2, 3}, ordinal=True, n_bootstrap=300, seed=5)
    pairs = sorted(zip(people, model))
    idx = np.random.default_rng(5).integers(0, 40, size=(300, 40))
    kappas = [hand_kappa([pairs[i][0] for i in row], [pairs[i][1] for i in row]) for row in idx.tolist()]
    assert a.kappa_ci == pytest.approx([percentile(kappas, 0.025), percentile(kappas, 0.975)])
    binary = [hand_kappa([pairs[i][0] >= 2 for i in row], [pairs[i][1] >= 2 for i in row]) for row in idx.tolist()]
    assert a.kappa_binary_ci == pytest.approx([percentile(binary, 0.025), percentile(binary, 0.975)])


def test_the_bootstrap_is_seeded_and_the_order_of_items_changes_nothing():
    people, model = sample(2, 60, 0.5)
    model[7] = None
    first = label_agreement(people, model, GRADES, {2, 3}, ordinal=True, seed=1)
    again = label_agreement(people, model, GRADES, {2, 3}, ordinal=True, seed=1)
    other = label_agreement(people, model, GRADES, {2, 3}, ordinal=True, seed=2)
    assert first == again
    assert other.kappa == first.kappa and other.kappa_ci != first.kappa_ci
    order = list(range(60))
    random.Random(9).shuffle(order)
    shuffled = label_agreement(
        [people[i] for i in order], [model[i] for i in order], GRADES, {2, 3}, ordinal=True, seed=1
    )
    assert shuffled.to_dict() == first.to_dict()


# ---------------------------------------------------------------- paired_difference


def test_a_judge_against_itself_differs_by_zero_with_p_one():
    people, a = sample(4, 80, 0.6)
    d = paired_difference(people, a, a, GRADES, {2, 3})
    for view in (d.kappa, d.kappa_binary):
        assert view.difference == 0.0 and view.ci == [0.0, 0.0] and view.p_value == 1.0
        assert (
            view.a
            == view.b
            == pytest.approx(
                hand_kappa(people, a) if view is d.kappa else hand_kappa([p >= 2 for p in people], [m >= 2 for m in a])
            )
        )
    assert (d.only_a_right, d.only_b_right, d.mcnemar_p) == (0, 0, 1.0)


def test_the_paired_bootstrap_resamples_the_same_items_for_both_judges():
    r = random.Random(8)
    people = [r.randrange(4) for _ in range(30)]
    a = [p if r.random() < 0.7 else r.randrange(4) for p in people]
    b = [p if r.random() < 0.4 else r.randrange(4) for p in people]
    d = paired_difference(people, a, b, GRADES, {2, 3}, n_bootstrap=250, seed=3)
    rows = sorted(zip(people, a, b))
    idx = np.random.default_rng(3).integers(0, 30, size=(250, 30)).tolist()

    def diffs(f):
        return [
            hand_kappa([f(rows[i][0]) for i in row], [f(rows[i][1]) for i in row])
            - hand_kappa([f(rows[i][0]) for i in row], [f(rows[i][2]) for i in row])
            for row in idx
        ]

    for view, f in ((d.kappa, lambda g: g), (d.kappa_binary, lambda g: g >= 2)):
        deltas = diffs(f)
        assert view.difference == pytest.approx(
            hand_kappa([f(p) for p in people], [f(x) for x in a])
            - hand_kappa([f(p) for p in people], [f(x) for x in b])
        )
        assert view.ci == pytest.approx([percentile(deltas, 0.025), percentile(deltas, 0.975)])
        low = (sum(x <= 0 for x in deltas) + 1) / 251
        high = (sum(x >= 0 for x in deltas) + 1) / 251
        assert view.p_value == pytest.approx(min(1.0, 2 * min(low, high)))
        assert view.resamples == 250
    right_a = [x == p for x, p in zip(a, people)]
    right_b = [x == p for x, p in zip(b, people)]
    only_a = sum(ra and not rb for ra, rb in zip(right_a, right_b))
    only_b = sum(rb and not ra for ra, rb in zip(right_a, right_b))
    assert (d.only_a_right, d.only_b_right) == (only_a, only_b)
    assert d.exact_a == pytest.approx(sum(right_a) / 30) and d.exact_b == pytest.approx(sum(right_b) / 30)


def test_a_clearly_better_judge_has_a_small_p_and_swapping_judges_mirrors_it():
    people, good = sample(5, 200, 0.8)
    _, poor = sample(5, 200, 0.2)
    d = paired_difference(people, good, poor, GRADES, {2, 3}, seed=4)
    assert d.kappa.difference > 0.3 and d.kappa.ci[0] > 0 and d.kappa.p_value < 0.01
    assert d.mcnemar_p < 1e-6
    e = paired_difference(people, poor, good, GRADES, {2, 3}, seed=4)
    assert e.kappa.difference == pytest.approx(-d.kappa.difference)
    # the items are resampled in one order of (people, a, b): swapped, the resamples are others, so the
    # interval mirrors up to resampling noise only
    assert e.kappa.ci == pytest.approx([-d.kappa.ci[1], -d.kappa.ci[0]], abs=0.02)
    assert e.kappa.p_value < 0.01 and e.mcnemar_p == d.mcnemar_p
    assert (e.only_a_right, e.only_b_right) == (d.only_b_right, d.only_a_right)


def test_paired_difference_leaves_out_items_either_judge_missed():
    people = ["correct", "incorrect"] * 10
    a = ["correct", "incorrect"] * 10
    b = ["incorrect", "incorrect"] * 10
    a[0], b[1], a[2], b[2] = None, None, None, None
    d = paired_difference(people, a, b, ["correct", "incorrect"], {"correct"})
    assert (d.n, d.missing, d.missing_a, d.missing_b) == (17, 3, 2, 2)
    assert d.kappa.a == 1.0
    assert d.kappa.b is None and d.kappa.difference is None and d.kappa.p_value is None
    assert d.kappa.why.startswith("judge b gives all 17 shared items the label incorrect")
    assert d.only_a_right == 8 and d.only_b_right == 0
    assert d.mcnemar_p == pytest.approx(2 / 2**8)
    out = d.to_dict()
    assert json.loads(json.dumps(out, allow_nan=False)) == out and out["kappa"]["why"] == d.kappa.why


def test_paired_difference_on_too_few_items_gives_the_difference_but_no_interval():
    d = paired_difference([0, 1, 2, 3, 0], [0, 1, 2, 3, 1], [0, 2, 2, 2, 0], GRADES, {2, 3})
    assert d.kappa.difference == pytest.approx(
        hand_kappa([0, 1, 2, 3, 0], [0, 1, 2, 3, 1]) - hand_kappa([0, 1, 2, 3, 0], [0, 2, 2, 2, 0])
    )
    assert d.kappa.ci is None and d.kappa.p_value is None
    assert d.kappa.why == "5 items: too few for an interval (it needs 10 or more)"


def test_paired_difference_is_seeded_and_ignores_the_order_of_items():
    people, a = sample(6, 50, 0.6)
    _, b = sample(7, 50, 0.5)
    first = paired_difference(people, a, b, GRADES, {2, 3}, seed=9)
    order = list(range(50))
    random.Random(1).shuffle(order)
    again = paired_difference(
        [people[i] for i in order], [a[i] for i in order], [b[i] for i in order], GRADES, {2, 3}, seed=9
    )
    assert again.to_dict() == first.to_dict()
    assert paired_difference(people, a, b, GRADES, {2, 3}, seed=10).kappa.ci != first.kappa.ci


def test_mcnemar_exact_by_hand():
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    # 1 of 7 discordant: P(X <= 1) = (1 + 7) / 2**7, two-sided 16/128
    assert mcnemar_exact(1, 6) == pytest.approx(16 / 128) == mcnemar_exact(6, 1)
    # 2 of 10: (1 + 10 + 45) / 1024, two-sided 112/1024
    assert mcnemar_exact(2, 8) == pytest.approx(112 / 1024)


# ---------------------------------------------------------------- system_ranking_agreement


def test_ranking_by_hand_over_the_systems_both_scored():
    r = system_ranking_agreement(
        {"bm25": 0.3, "dense": 0.5, "hybrid": 0.6, "only-people": 0.1},
        {"bm25": 0.2, "dense": 0.7, "hybrid": 0.6, "only-model": 0.9},
    )
    # (bm25, dense) and (bm25, hybrid) concordant, (dense, hybrid) discordant: (2 - 1) / 3
    assert r.tau == pytest.approx(1 / 3) and r.n == 3 and r.why is None
    assert r.systems == ["bm25", "dense", "hybrid"]
    assert r.only_people == ["only-people"] and r.only_model == ["only-model"]
    assert r.rho == pytest.approx(0.5)


def test_ranking_under_three_systems_or_with_no_spread_says_why():
    two = system_ranking_agreement({"a": 0.1, "b": 0.2}, {"a": 0.3, "b": 0.1, "c": 0.5})
    assert two.tau is None and two.n == 2
    assert two.why == "2 systems scored under both: a ranking agreement needs 3 or more"
    none = system_ranking_agreement({}, {"a": 1.0})
    assert none.why == "0 systems scored under both: a ranking agreement needs 3 or more"
    flat = system_ranking_agreement({"a": 0.5, "b": 0.5, "c": 0.5}, {"a": 0.1, "b": 0.2, "c": 0.3}, "ndcg@10")
    assert (
        flat.tau is None
        and flat.why == "every run scores 0.5000 ndcg@10 under people's labels: there is no order to correlate"
    )
    nan = system_ranking_agreement(
        {"a": 0.1, "b": 0.2, "c": 0.3, "d": float("nan")}, {"a": 0.1, "b": 0.3, "c": 0.2, "d": 0.4}
    )
    assert nan.unscored == ["d"] and nan.n == 3 and nan.tau == pytest.approx(1 / 3)
    assert json.dumps(nan.to_dict(), allow_nan=False)


def test_ranking_with_ties_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    people = {f"s{i}": v for i, v in enumerate([0.1, 0.2, 0.2, 0.4, 0.5, 0.5, 0.7])}
    model = {f"s{i}": v for i, v in enumerate([0.2, 0.1, 0.3, 0.3, 0.6, 0.4, 0.4])}
    r = system_ranking_agreement(people, model)
    keys = sorted(people)
    assert r.tau == pytest.approx(stats.kendalltau([people[k] for k in keys], [model[k] for k in keys]).statistic)


# ---------------------------------------------------------------- against the libraries, and properties


def test_kappas_match_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    for seed in nonempty(range(1, 8)):
        people, model = sample(seed, 37 * seed, 0.5)
        a = label_agreement(people, model, GRADES, {2, 3}, ordinal=True)
        assert a.kappa == pytest.approx(metrics.cohen_kappa_score(people, model))
        assert a.kappa_binary == pytest.approx(
            metrics.cohen_kappa_score([p >= 2 for p in people], [m >= 2 for m in model])
        )
        assert a.confusion == metrics.confusion_matrix(people, model, labels=GRADES).tolist()


def test_mcnemar_matches_scipy_binomtest():
    stats = pytest.importorskip("scipy.stats")
    for a, b in nonempty([(0, 1), (2, 9), (7, 7), (13, 4), (30, 51), (0, 25)]):
        assert mcnemar_exact(a, b) == pytest.approx(stats.binomtest(a, a + b, 0.5).pvalue)


labels = st.sampled_from(ANSWER_LABELS)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(labels, st.one_of(st.none(), labels)), min_size=0, max_size=40), st.randoms())
def test_properties_of_label_agreement(items, rnd):
    people = [p for p, _ in items]
    model = [m for _, m in items]
    a = label_agreement(people, model, ANSWER_LABELS, {"correct"}, ordinal=False, n_bootstrap=50)
    kept = [(p, m) for p, m in items if m is not None]
    assert a.n == len(kept) and a.missing == len(items) - len(kept)
    assert sum(map(sum, a.confusion)) == a.n
    assert [sum(row) for row in a.confusion] == [a.people_counts[c] for c in ANSWER_LABELS]
    if a.kappa is None:
        assert a.why["kappa"]
    else:
        assert a.kappa == pytest.approx(hand_kappa([p for p, _ in kept], [m for _, m in kept]))
        assert -1 <= a.kappa <= 1
    rnd.shuffle(items)
    b = label_agreement(
        [p for p, _ in items], [m for _, m in items], ANSWER_LABELS, {"correct"}, ordinal=False, n_bootstrap=50
    )
    assert b == a
    assert json.dumps(a.to_dict(), allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), min_size=10, max_size=40))
def test_properties_of_paired_difference(rows):
    people, a, b = ([r[i] for r in rows] for i in range(3))
    d = paired_difference(people, a, b, GRADES, {2, 3}, n_bootstrap=100)
    e = paired_difference(people, b, a, GRADES, {2, 3}, n_bootstrap=100)
    if d.kappa.difference is not None:
        assert e.kappa.difference == pytest.approx(-d.kappa.difference)
        assert 0 < d.kappa.p_value <= 1 and 0 < e.kappa.p_value <= 1
        assert d.kappa.ci[0] <= d.kappa.ci[1]
    assert d.mcnemar_p == e.mcnemar_p
    same = paired_difference(people, a, a, GRADES, {2, 3}, n_bootstrap=100)
    assert same.kappa.difference in (0.0, None) and same.kappa.p_value in (1.0, None)
    assert same.mcnemar_p == 1.0
