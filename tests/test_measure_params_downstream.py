"""Measure names with parameters and counts, carried through the commands that take metrics after
evaluate: compare's means and gate's and track's thresholds."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from helpers import EXAMPLE
from ragassay.cli import main

QRELS, BM25, TFIDF = EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt", EXAMPLE / "runs" / "tfidf.txt"


def cli(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_compare_totals_the_counts_as_evaluate_does():
    code, out, _ = cli("evaluate", QRELS, BM25, "-m", "NumRel,NumRelRet,ndcg@10", "--format", "json")
    assert code == 0
    evaluated = json.loads(out)["aggregate"]
    code, out, _ = cli("compare", QRELS, BM25, TFIDF, "-m", "NumRel,NumRelRet,ndcg@10", "--format", "json")
    assert code == 0
    means = json.loads(out)["means"]["bm25"]
    assert means == pytest.approx(evaluated)
    assert means["num_rel"] == 72  # a total, not 72 / 22 queries


@pytest.mark.parametrize("threshold, passes", [
    ("P(rel=2)@5=0.1", True), ("P(rel=2)@5=0.9", False),
    ("RBP(p=0.8,rel=1)=0.3", True), ("RBP(p=0.8,rel=1)=0.5", False),
])
def test_gate_reads_a_threshold_whose_name_holds_an_equals_sign(tmp_path, threshold, passes):
    name = threshold.rpartition("=")[0]
    code, out, err = cli("evaluate", QRELS, BM25, "-m", name, "--format", "json")
    assert code == 0, err
    result = tmp_path / "result.json"
    result.write_text(out)
    code, out, err = cli("gate", result, "--min", threshold)
    assert code == (0 if passes else 1), out + err
    assert "needs METRIC=VALUE" not in err and "is not a number" not in err
