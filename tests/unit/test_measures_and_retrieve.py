from __future__ import annotations

import pytest

import ragassay
from ragassay.errors import MeasureError, RagassayError
from ragassay.metrics.measures import parse_measure, parse_measures


@pytest.mark.parametrize(
    "name, canonical",
    [
        ("P_5", "p@5"),
        ("P@5", "p@5"),
        ("p.5", "p@5"),
        ("precision@5", "p@5"),
        ("recall_100", "recall@100"),
        ("R@100", "recall@100"),
        ("ndcg_cut_10", "ndcg@10"),
        ("nDCG@10", "ndcg@10"),
        ("NDCG", "ndcg"),
        ("recip_rank", "mrr"),
        ("RR", "mrr"),
        ("RR@10", "mrr@10"),
        ("MRR@10", "mrr@10"),
        ("Rprec", "r_precision"),
        ("success_10", "hit_rate@10"),
        ("Success@10", "hit_rate@10"),
        ("map", "map"),
        ("AP", "map"),
        ("map_cut_10", "map@10"),
        ("AP@10", "map@10"),
        ("set_P", "set_p"),
        ("set_recall", "set_recall"),
        ("set_F", "set_f1"),
        ("f1@10", "f1@10"),
    ],
)
def test_aliases_map_to_one_canonical_spelling(name, canonical):
    assert str(parse_measure(name)) == canonical
    assert parse_measure(name) == parse_measure(canonical)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("p", "needs a cutoff"),
        ("rprec@5", "takes no cutoff"),
        ("ndcg@0", "at least 1"),
        ("bleu", "unknown metric"),
        ("", "unknown metric"),
    ],
)
def test_bad_metric_names(bad, message):
    with pytest.raises(MeasureError, match=message):
        parse_measure(bad)


def test_parse_measures_dedupes_and_splits():
    assert [str(m) for m in parse_measures(["P_5,p@5", "ndcg_cut_10"])] == ["p@5", "ndcg@10"]


def test_run_retriever_ids_and_pairs():
    def ids_only(q):
        return ["a", "b", "c"] if "x" in q else ["c"]

    run = ragassay.run_retriever(ids_only, {"q1": "x", "q2": "y"}, k=2, progress=False)
    assert run.ranked() == {"q1": [("a", 2.0), ("b", 1.0)], "q2": [("c", 2.0)]}
    assert set(run.latency_ms) == {"q1", "q2"}
    ev = ragassay.evaluate({"q1": {"b": 1}}, run, ["mrr"])
    assert ev.aggregate["mrr"] == 0.5

    pairs = ragassay.run_retriever(lambda q: [("d1", 0.2), ("d2", 0.9)], {"q": "t"}, k=10, progress=False)
    assert pairs.ranked()["q"] == [("d2", 0.9), ("d1", 0.2)]


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda q: ["a", "a"], "twice"),
        (lambda q: [("a", "high")], "non-numeric score"),
        (lambda q: [{"id": "a"}], "must be ids or"),
        (lambda q: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_run_retriever_errors_name_the_query(fn, message):
    with pytest.raises(RagassayError, match=message) as e:
        ragassay.run_retriever(fn, {"query-7": "text"}, progress=False)
    assert "query-7" in str(e.value)
