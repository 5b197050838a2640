"""Per-query values must equal trec_eval's (through pytrec_eval, its C code) to 1e-9.

Random graded data with score ties, doc ids that are prefixes of each other (byte order matters
for tie breaking), negative grades, grades above 3, and queries missing on either side.

pytrec_eval is asked for whole measure families ("P", "ndcg_cut", ...) rather than single
cutoffs: parameterised measures keep global state inside pytrec_eval between evaluators and
corrupt later results (cvangysel/pytrec_eval#38). Queries whose judgments are all negative are
not generated: trec_eval sizes an array by the largest grade + 1 and writes out of bounds there
(we treat such a query as having no relevant document; see test_all_negative_query below).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragassay
from helpers import nonempty
from ragassay.data.tables import Qrels, Run
from ragassay.metrics.measures import parse_measure

FAMILIES = {
    "P",
    "recall",
    "ndcg_cut",
    "map_cut",
    "success",
    "ndcg",
    "recip_rank",
    "map",
    "Rprec",
    "set_P",
    "set_recall",
    "set_F",
    "bpref",
}
FAMILY_NAMES = {"P": "p", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map", "success": "hit_rate"}
PLAIN_NAMES = {
    "ndcg": "ndcg",
    "recip_rank": "mrr",
    "map": "map",
    "Rprec": "r_precision",
    "set_P": "set_p",
    "set_recall": "set_recall",
    "set_F": "set_f1",
    "bpref": "bpref",
}


def ours_name(trec_name: str) -> str:
    if trec_name in PLAIN_NAMES:
        return PLAIN_NAMES[trec_name]
    base, _, k = trec_name.rpartition("_")
    return f"{FAMILY_NAMES[base]}@{k}"


DOC_IDS = ["d1", "d10", "d2", "d20", "D3", "d3", "a", "aa", "b#1", "z", "é", "x-9", "d100", "d11"]


@st.composite
def graded_data(draw):
    n_queries = draw(st.integers(1, 5))
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        if draw(st.booleans()) or q == 0:
            docs = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=10, unique=True))
            grades = draw(st.lists(st.integers(-2, 5), min_size=len(docs), max_size=len(docs)))
            if max(grades) < 0:
                grades[0] = draw(st.integers(0, 5))
            qrels[qid] = dict(zip(docs, grades))
        if draw(st.integers(0, 4)) > 0 or q == 0:
            docs = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=14, unique=True))
            scores = draw(
                st.lists(
                    st.sampled_from([0.0, 0.5, 1.0, 1.5, -2.0, 3.25, 1e-3]), min_size=len(docs), max_size=len(docs)
                )
            )
            run[qid] = dict(zip(docs, scores))
    return qrels, run


def check_against_trec_eval(qrels, run, level: int) -> None:
    ref = pytrec_eval.RelevanceEvaluator(qrels, FAMILIES, relevance_level=level).evaluate(run)
    names = sorted({ours_name(m) for values in ref.values() for m in values}) or ["p@5"]
    # the rows as given (any order), and in rank order (score descending, then id descending bytes),
    # the shape of a system's run file, where the ranking path takes the rows as they are
    in_rank_order = Run.from_rows(
        [
            (q, d, s)
            for q, docs in run.items()
            for d, s in sorted(docs.items(), key=lambda x: (x[1], x[0].encode()), reverse=True)
        ]
    )
    # the qrels in the run's query order (joined as they are) and in the reverse order (joined after
    # a sort by the run's query codes)
    backwards = Qrels.from_dict(dict(reversed(list(qrels.items()))))
    for ours, judged in (
        (Run.from_dict(run), Qrels.from_dict(qrels)),
        (in_rank_order, Qrels.from_dict(qrels)),
        (in_rank_order, backwards),
    ):
        per_query = ragassay.evaluate(judged, ours, names, relevance_level=level).per_query  # a property: built once
        assert sorted(per_query) == sorted(ref)
        for qid, values in ref.items():
            for m, expected in values.items():
                got = per_query[qid][ours_name(m)]
                assert math.isclose(got, expected, rel_tol=0, abs_tol=1e-9), (qid, m, got, expected)


def test_a_run_in_rank_order_is_taken_as_it_is_and_still_scored_like_trec_eval():
    """Distinct scores in rank order: no reordering at all (the fast path of a system's run file)."""
    from ragassay.data.tables import trec_order

    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.5}, "q2": {"d": 9.0, "a": 1.0}}
    ours = Run.from_rows([(q, d, s) for q, docs in run.items() for d, s in docs.items()])
    assert trec_order(ours.qidx, ours.scores, ours.doc_ids) is None
    check_against_trec_eval({"q1": {"b": 1, "d": 2, "x": 1}, "q2": {"a": 3, "d": 0}}, run, 1)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graded_data(), st.sampled_from([1, 2, 3]))
def test_per_query_values_equal_trec_eval(data, level):
    qrels, run = data
    check_against_trec_eval(qrels, run, level)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graded_data(), st.sampled_from([1, 2]), st.integers(1, 12))
def test_a_run_scored_by_slices_of_queries_equals_trec_eval(data, level, rows):
    """A large run grouped by query is ranked and scored a slice of whole queries at a time: with
    slices of a few rows (every query its own slice, or several together), the values are trec_eval's."""
    from ragassay.metrics import ranking

    qrels, run = data
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ranking, "SLICE_ROWS", rows)
        mp.setattr(ranking, "SLICE_FROM", rows)
        check_against_trec_eval(qrels, run, level)


def test_slices_cut_between_queries_and_hold_their_queries_judgments_only():
    """Each slice is whole queries with tables of its own: its queries, their judgments alone, and the
    way back to the whole (first run code, each local qrels query's place in the whole qrels)."""
    from ragassay.metrics.ranking import query_positions, query_slices

    run = Run.from_rows(
        [("a", "d1", 3.0), ("a", "d2", 2.0), ("b", "d1", 1.0), ("c", "d3", 1.0), ("c", "d4", 0.5), ("c", "d5", 0.1)]
    )
    qrels = Qrels.from_dict(
        {"c": {"d3": 1}, "zz": {"d9": 1}, "a": {"d2": 2, "d7": 1}}
    )  # another order, a query not run
    pieces = list(query_slices(qrels, run, query_positions(qrels, run), rows=2))
    assert [p.run.queries for p in pieces] == [["a"], ["b", "c"]] and [p.first_code for p in pieces] == [0, 1]
    assert [p.run.qidx.tolist() for p in pieces] == [[0, 0], [0, 1, 1, 1]]
    assert [
        sorted((p.qrels.queries[c], d.decode()) for c, d in zip(p.qrels.qidx.tolist(), p.qrels.doc_ids.tolist()))
        for p in pieces
    ] == [[("a", "d2"), ("a", "d7")], [("c", "d3")]]
    assert [[qrels.queries[i] for i in p.qrels_index.tolist()] for p in pieces] == [["a"], ["c"]]  # b: not judged
    assert [p.run_to_qrels.tolist() for p in pieces] == [[0], [-1, 0]]
    whole = list(query_slices(qrels, run, query_positions(qrels, run), rows=6))  # small: once, as it is
    assert len(whole) == 1 and whole[0].run is run and whole[0].qrels is qrels


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graded_data(), st.sampled_from([2, 3]))
def test_a_measure_with_its_own_relevance_level_equals_trec_eval_at_that_level(data, rel):
    """P(rel=2)@5 in an evaluation at level 1 is trec_eval's P_5 with -l 2 (ir_measures' syntax)."""
    qrels, run = data
    ref = pytrec_eval.RelevanceEvaluator(
        qrels, {"P", "recall", "map", "recip_rank", "bpref", "Rprec", "success"}, relevance_level=rel
    ).evaluate(run)
    pairs = {
        f"P(rel={rel})@5": "P_5",
        f"recall(rel={rel})@10": "recall_10",
        f"AP(rel={rel})": "map",
        f"RR(rel={rel})": "recip_rank",
        f"bpref(rel={rel})": "bpref",
        f"Rprec(rel={rel})": "Rprec",
        f"success(rel={rel})@5": "success_5",
    }
    ours = ragassay.evaluate(Qrels.from_dict(qrels), Run.from_dict(run), list(pairs), relevance_level=1).per_query
    for qid, values in nonempty(ref.items()):
        for name, trec in nonempty(pairs.items()):
            got = ours[qid][str(parse_measure(name))]
            assert math.isclose(got, values[trec], rel_tol=0, abs_tol=1e-9), (qid, name, got, values[trec])


def test_larger_random_run_equals_trec_eval():
    import random

    rnd = random.Random(7)
    qrels, run = {}, {}
    for q in range(60):
        docs = [f"doc{rnd.randint(0, 400)}" for _ in range(150)]
        run[f"q{q}"] = {d: float(rnd.randint(0, 30)) for d in docs}
        judged = rnd.sample(sorted(set(docs)), 20) + [f"other{i}" for i in range(5)]
        qrels[f"q{q}"] = {d: rnd.choice([0, 0, 1, 2, 3, 4, -1]) for d in judged}
        qrels[f"q{q}"][judged[0]] = 1
    check_against_trec_eval(qrels, run, 1)


def test_missing_zero_counts_absent_queries_as_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 0}}
    run = {"q1": {"a": 1.0, "x": 0.5}, "q9": {"a": 1.0}}
    skip = ragassay.evaluate(qrels, run, ["p@1", "ndcg@10"])
    zero = ragassay.evaluate(qrels, run, ["p@1", "ndcg@10"], missing="zero")
    assert skip.queries == ["q1"]
    assert zero.queries == ["q1", "q2", "q3"]
    assert zero.per_query["q2"] == {"p@1": 0.0, "ndcg@10": 0.0}
    assert zero.aggregate["p@1"] == pytest.approx(1 / 3)
    assert skip.counts == {
        "evaluated": 1,
        "run_queries_without_qrels": 1,
        "qrels_queries_missing_from_run": 2,
        "asked_without_results": 0,
        "queries_without_relevant": 0,
    }
    assert zero.counts["queries_without_relevant"] == 1  # q3 has only a grade-0 judgment


def test_hand_worked_ranking():
    # ranking by score desc, ties by doc id desc: c(3) b(2) d(2)->"d">"b" so d first, then b, a
    qrels = {"q": {"a": 3, "b": 1, "c": 0, "zz": 2}}
    run = {"q": {"a": 1.0, "b": 2.0, "c": 3.0, "d": 2.0}}
    ev = ragassay.evaluate(
        qrels,
        run,
        ["p@2", "mrr", "mrr@2", "recall@3", "f1@3", "map", "map@3", "hit_rate@2", "ndcg@4", "r_precision", "set_f1"],
    )
    v = ev.per_query["q"]
    # ranked: c(0) d(unjudged) b(1) a(3)
    assert v["p@2"] == 0.0
    assert v["mrr"] == pytest.approx(1 / 3)
    assert v["mrr@2"] == 0.0
    assert v["recall@3"] == pytest.approx(1 / 3)
    p3, r3 = 1 / 3, 1 / 3
    assert v["f1@3"] == pytest.approx(2 * p3 * r3 / (p3 + r3))
    assert v["map"] == pytest.approx((1 / 3 + 2 / 4) / 3)
    assert v["map@3"] == pytest.approx((1 / 3) / 3)
    assert v["hit_rate@2"] == 0.0
    dcg = 1 / math.log2(4) + 3 / math.log2(5)
    idcg = 3 / 1 + 2 / math.log2(3) + 1 / math.log2(4)
    assert v["ndcg@4"] == pytest.approx(dcg / idcg)
    assert v["r_precision"] == pytest.approx(1 / 3)
    assert v["set_f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


def test_exponential_gain_and_relevance_level():
    qrels = {"q": {"a": 3, "b": 1}}
    run = {"q": {"b": 2.0, "a": 1.0}}
    lin = ragassay.evaluate(qrels, run, ["ndcg"]).per_query["q"]["ndcg"]
    exp = ragassay.evaluate(qrels, run, ["ndcg"], gain="exponential").per_query["q"]["ndcg"]
    assert lin == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert exp == pytest.approx((1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3)))
    # relevance level changes binary metrics but not NDCG gains (as in trec_eval)
    lvl2 = ragassay.evaluate(qrels, run, ["ndcg", "p@1"], relevance_level=2).per_query["q"]
    assert lvl2["ndcg"] == pytest.approx(lin)
    assert lvl2["p@1"] == 0.0


def test_all_negative_query_has_no_relevant_document():
    ev = ragassay.evaluate({"q": {"a": -1, "b": -2}}, {"q": {"a": 1.0}}, ["ndcg", "p@1", "map"])
    assert ev.per_query["q"] == {"ndcg": 0.0, "p@1": 0.0, "map": 0.0}
    assert ev.no_relevant == ["q"]


def test_unsorted_and_interleaved_run_rows_are_ranked_like_trec_eval():
    rows = [("q2", "a", 1.0), ("q1", "b", 0.5), ("q2", "b", 3.0), ("q1", "a", 0.5), ("q1", "c", 2.0)]
    run = Run.from_rows(rows)
    qrels = Qrels.from_rows([("q1", "a", 1), ("q2", "a", 1)])
    ev = ragassay.evaluate(qrels, run, ["mrr"])
    assert ev.per_query == {"q1": {"mrr": 1 / 3}, "q2": {"mrr": 1 / 2}}  # q1: c, b, a (b > a)
    assert run.ranked()["q1"] == [("c", 2.0), ("b", 0.5), ("a", 0.5)]


def test_files_read_by_either_reader_give_trec_eval_values(tmp_path, parser):
    """The cross-check through files: written as TREC (space or tab separated, with ties and
    prefix ids), read by the numpy splitter and by pyarrow, evaluated, compared to pytrec_eval."""
    import random

    rnd = random.Random(11)
    qrels, run = {}, {}
    for q in range(300):
        docs = rnd.sample(DOC_IDS + [f"doc{i}" for i in range(200)], 30)
        qrels[f"q{q}"] = {d: rnd.randint(-1, 4) for d in docs[:12]}
        qrels[f"q{q}"][docs[0]] = 2
        run[f"q{q}"] = {d: rnd.choice([0.5, 1.0, 2.25, rnd.random()]) for d in docs[5:30]}
    for sep in (" ", "\t"):
        q, r = tmp_path / "q.txt", tmp_path / "r.txt"
        q.write_text(
            "".join(sep.join([qid, "0", d, str(g)]) + "\n" for qid, ds in qrels.items() for d, g in ds.items())
        )
        r.write_text(
            "".join(
                sep.join([qid, "Q0", d, "1", repr(s), "t"]) + "\n" for qid, ds in run.items() for d, s in ds.items()
            )
        )
        ref = pytrec_eval.RelevanceEvaluator(qrels, FAMILIES).evaluate(run)
        ours = ragassay.evaluate(q, r, sorted({ours_name(m) for v in ref.values() for m in v})).per_query
        for qid, values in nonempty(ref.items()):
            for m, expected in nonempty(values.items()):
                assert math.isclose(ours[qid][ours_name(m)], expected, abs_tol=1e-9), (parser, sep, qid, m)


@pytest.mark.parametrize("long_side", ["qrels", "run"])
def test_ids_of_different_widths_on_each_side_still_meet(long_side):
    """The join hashes documents at the run's width: a qrels id longer than every run id cannot
    match and must not disturb the others; run ids longer than the qrels' must match theirs."""
    long_id = "a-document-id-of-forty-bytes-0123456789"
    qrels = {"q1": {"d1": 1, "d2": 2, "é": 3}, "q2": {"d1": 1}}
    run = {"q1": {"d2": 2.0, "d1": 1.0, "é": 0.5}, "q2": {"d3": 1.0, "d1": 0.5}}
    (qrels if long_side == "qrels" else run)["q1"][long_id] = 1 if long_side == "qrels" else 3.0
    check_against_trec_eval(qrels, run, 1)


def test_the_exact_join_is_used_when_hashes_collide(monkeypatch):
    """Every key the same (as a true 64-bit collision would make two): the dict join, same values."""
    import numpy as np

    from ragassay.metrics import ranking

    monkeypatch.setattr(ranking, "row_keys", lambda codes, docs: np.zeros(len(docs), dtype=np.uint64))
    check_against_trec_eval(
        {"q1": {"a": 1, "b": 2}, "q2": {"a": 1}}, {"q1": {"b": 1.0, "c": 0.5, "a": 0.2}, "q2": {"a": 1.0}}, 1
    )


@pytest.mark.parametrize("qrels_order", ["run's", "reversed"])
def test_a_hash_that_matches_an_unjudged_document_is_refused_by_its_bytes(monkeypatch, qrels_order):
    """A hash of the ids' first 8 bytes only: ids that differ past them collide, while the qrels'
    keys stay distinct (the hash table is used): the run's unjudged look-alikes are found as
    candidates and every one must be refused by comparing the ids' bytes, on both ways of joining."""
    import numpy as np

    from ragassay.data import tables

    def first_word(docs):
        return np.ascontiguousarray(docs.astype("S16")).view("<u8").reshape(len(docs), -1)[:, 0] | np.uint64(1)

    monkeypatch.setattr(tables, "hash_bytes", first_word)
    qrels = {"q1": {"document-A1": 1, "other-001": 2}, "q2": {"document-B7": 3}}
    run = {
        "q1": {"document-A2": 3.0, "document-A1": 2.0, "other-002": 1.5, "other-001": 1.0},
        "q2": {"document-B8": 2.0, "document-B9": 1.0, "document-B7": 0.5},
    }
    if qrels_order == "reversed":
        qrels = dict(reversed(list(qrels.items())))
    check_against_trec_eval(qrels, run, 1)


def test_ideal_rankings_with_huge_grades_equal_trec_eval():
    """Grades up to 100000 (ideal rankings sorted, not counted per grade) and the usual small ones."""
    qrels = {"q1": {"a": 100000, "b": 3, "c": 0, "d": 7}, "q2": {"a": 1, "e": 99999, "f": -1}}
    run = {"q1": {"b": 2.0, "a": 1.0, "d": 0.5}, "q2": {"f": 3.0, "e": 1.0}}
    check_against_trec_eval(qrels, run, 1)
    from ragassay.metrics.measure_values import _ideal_order

    q, g = _ideal_order(np.array([0, 0, 1, 0, 1]), np.array([2, 0, 1, 3, 1]), 3)
    assert q.tolist() == [0, 0, 1, 1] and g.tolist() == [3, 2, 1, 1]


def test_a_run_whose_arrays_are_replaced_is_joined_with_fresh_keys():
    """The run's row keys are kept between calls; replacing its document ids must not reuse them."""
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 2}})
    run = Run.from_dict({"q1": {"a": 2.0, "c": 1.0}})
    assert ragassay.evaluate(qrels, run, ["ndcg@10"]).aggregate["ndcg@10"] < 1
    run.doc_ids = np.array([b"b", b"a"], dtype="S8")  # now b (grade 2) first, then a
    assert ragassay.evaluate(qrels, run, ["ndcg@10"]).aggregate["ndcg@10"] == 1.0
