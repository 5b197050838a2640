"""Measure names with parameters and counts, carried through the commands that take metrics after
evaluate: compare's means and gate's and track's thresholds."""

from __future__ import annotations

import json

import pytest

from helpers import EXAMPLE, cli

QRELS, BM25, TFIDF = EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt", EXAMPLE / "runs" / "tfidf.txt"


def test_compare_totals_the_counts_as_evaluate_does():
    code, out, _ = cli("evaluate", QRELS, BM25, "-m", "NumRel,NumRelRet,ndcg@10", "--format", "json")
    assert code == 0
    evaluated = json.loads(out)["aggregate"]
    code, out, _ = cli("compare", QRELS, BM25, TFIDF, "-m", "NumRel,NumRelRet,ndcg@10", "--format", "json")
    assert code == 0
    means = json.loads(out)["means"]["bm25"]
    assert means == pytest.approx(evaluated)
    assert means["num_rel"] == 28  # a total, not 28 / 22 queries (the labels count from 2: 6 twos, 22 threes)


@pytest.mark.parametrize(
    "threshold, passes",
    [
        ("P(rel=2)@5=0.1", True),
        ("P(rel=2)@5=0.9", False),
        ("RBP(p=0.8,rel=1)=0.3", True),
        ("RBP(p=0.8,rel=1)=0.5", False),
    ],
)
def test_gate_reads_a_threshold_whose_name_holds_an_equals_sign(tmp_path, threshold, passes):
    name = threshold.rpartition("=")[0]
    code, out, err = cli("evaluate", QRELS, BM25, "-m", name, "--format", "json")
    assert code == 0, err
    result = tmp_path / "result.json"
    result.write_text(out)
    code, out, err = cli("gate", result, "--min", threshold)
    assert code == (0 if passes else 1), out + err
    assert "needs METRIC=VALUE" not in err and "is not a number" not in err


def _compare_json(tmp_path) -> str:
    code, out, err = cli("compare", QRELS, BM25, TFIDF, "-m", "ndcg@10,map", "--format", "json")
    assert code == 0, err
    path = tmp_path / "cmp.json"
    path.write_text(out)
    return str(path)


def test_gate_on_a_compare_result_names_the_runs_its_thresholds_check(tmp_path):
    cmp = _compare_json(tmp_path)
    code, out, err = cli("gate", cmp, "--min", "bm25/ndcg@10=0.8")  # bm25's 0.7935 is below
    assert code == 1 and "compare result of bm25 " in err and "of tfidf" not in err
    code, out, err = cli("gate", cmp, "--min", "bm25/ndcg@10=0.5", "--min", "map=0.5")  # map: the last run, tfidf
    assert code == 0 and "compare result of bm25, tfidf " in out
    code, out, err = cli("gate", cmp, "--run", "bm25", "--min", "tfidf/ndcg@10=0.9")
    assert code == 2 and "names the run 'tfidf' and the run asked for is 'bm25'" in err


def test_gate_takes_a_list_of_thresholds_in_one_flag_as_m_takes_a_list_of_metrics(tmp_path):
    cmp = _compare_json(tmp_path)
    code, out, err = cli("gate", cmp, "--min", "ndcg@10=0.5,map=0.5")
    assert code == 0 and "gate passed: 2 threshold(s) hold" in out, err
    code, out, err = cli("gate", cmp, "--min", "ndcg@10=0.5,map=0.9")
    assert code == 1 and "map" in err


def test_history_of_a_metric_no_result_could_have_is_a_usage_error(tmp_path):
    code, out, _ = cli("evaluate", QRELS, BM25, "-m", "ndcg@10", "--format", "json")
    result = tmp_path / "r.json"
    result.write_text(out)
    db = tmp_path / "h.sqlite"
    assert cli("track", result, "--db", db)[0] == 0
    code, out, err = cli("history", "--metric", "ndcgg@10", "--db", db)
    assert code == 2 and "did you mean 'ndcg@10'" in err
    code, out, err = cli("history", "--metric", "RBP(p=0.8", "--db", db)
    assert code == 2 and "is not a metric of any tracked result" in err
    code, out, err = cli("history", "--metric", "nDCG@10", "--db", db)  # another spelling of a tracked one
    assert code == 0 and "0.7935" in out
    code, out, err = cli("history", "--metric", "map", "--db", db)  # a measure, not tracked yet: said, not refused
    assert code == 0 and "no tracked result" in out


@pytest.mark.parametrize(
    "extra",
    [
        (),
        ("--per-query",),
        ("--per-query", "--block-queries", "5"),
        ("--format", "markdown"),
        ("--per-query", "--format", "markdown", "--block-queries", "5"),
    ],
)
def test_counts_print_as_whole_numbers_and_means_as_decimals(extra):
    # at trec_eval's relevant grade (the example's labels count from 2: 28 relevant, not 72)
    code, out, _ = cli("evaluate", QRELS, BM25, "-m", "NumRel,num_ret,ndcg@10,P@5", "--relevance-level", "1", *extra)
    assert code == 0
    all_row = next(line for line in out.splitlines() if line.strip("| ").startswith(("all", "num_rel")))
    cells = all_row.replace("|", " ").split()
    if "--per-query" in extra:
        assert cells == ["all", "72", "202", "0.7935", "0.3909"]
    else:
        assert cells == ["num_rel", "72"]
    assert "72.0000" not in out and "202.0000" not in out and "0.7935" in out


def test_compare_shows_counts_as_whole_numbers_and_csv_keeps_them_exact():
    code, out, _ = cli(
        "compare",
        QRELS,
        BM25,
        TFIDF,
        "-m",
        "num_rel_ret,ndcg@10",
        "--permutations",
        "200",
        "--bootstrap",
        "200",
        "--relevance-level",
        "1",
    )
    assert code == 0 and out.splitlines()[2].split() == ["num_rel_ret", "59", "59"]
    code, out, _ = cli("evaluate", QRELS, BM25, "-m", "num_rel_ret,mrr", "--format", "csv", "--relevance-level", "1")
    assert code == 0 and out.splitlines()[1:] == ["num_rel_ret,59", "mrr,0.875"]  # a count, and the mean as repr


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_exponential_gain_refuses_a_grade_whose_gain_no_float_holds(tmp_path, fmt):
    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    run.write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq2 Q0 d3 1 1.0 a\n")
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1024\nq2 0 d3 1\n")
    code, out, err = cli("evaluate", qrels, run, "-m", "ndcg@10", "--gain", "exponential", "--format", fmt)
    assert code == 1 and out == "" and "Traceback" not in err
    assert "grade 1024 (query 'q1') makes an exponential gain of 2^1024 - 1, more than a float holds" in err
    qrels.write_text("q1 0 d1 1\nq1 0 d2 511\nq1 0 d4 511\nq2 0 d3 1\n")  # under the limit: finite, as computed by hand
    code, out, _ = cli(
        "evaluate", qrels, run, "-m", "ndcg@10", "--gain", "exponential", "--format", "json", "--per-query"
    )
    import math

    g = 2.0**511 - 1
    ideal = g + g / math.log2(3) + 1 / 2
    assert code == 0 and json.loads(out)["per_query"]["q1"]["ndcg@10"] == pytest.approx((1 + g / math.log2(3)) / ideal)
    assert cli("evaluate", qrels, run, "-m", "ndcg@10", "--gain", "linear")[0] == 0


@pytest.mark.parametrize(
    "args, said",
    [
        (("--relevance-level", "0"), "argument --relevance-level: must be an integer of at least 1, got '0'"),
        (("--relevance-level", "-5"), "argument --relevance-level: must be an integer of at least 1, got '-5'"),
        (("-m", "P(rel=0)@5"), "in 'P(rel=0)@5': rel is a relevance level of at least 1"),
        (("-m", "AP(rel=-1)"), "in 'AP(rel=-1)': rel is a relevance level of at least 1"),
    ],
)
def test_a_relevance_level_below_1_is_refused_as_pytrec_eval_refuses_it(args, said):
    """At 0 or below, grades of 0 and negative ones would count as relevant ("negative grades are
    judged non-relevant" would not hold): refused, at the flag and in a measure's rel=."""
    code, out, err = cli("evaluate", QRELS, BM25, *args)
    assert code == 2 and said in err and out == ""
    from ragassay.metrics.evaluate import evaluate

    with pytest.raises(ValueError, match="relevance_level must be at least 1"):
        evaluate(QRELS, BM25, ["p@5"], relevance_level=0)
