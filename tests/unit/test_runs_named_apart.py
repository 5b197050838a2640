"""Two run files whose TREC tags are alike are two runs wherever runs are named: agree's ranking of
the runs (it merged them into one and reported tau 1 of a single run), compare's warnings (which
blamed the other run), evaluate's tables."""

from __future__ import annotations

import io
import json

import pytest

from helpers import EXAMPLE, cli
from ragassay.data.run_files import read_run
from ragassay.errors import UsageError
from ragassay.metrics.agreement import agree

QRELS, SECOND = EXAMPLE / "qrels.txt", EXAMPLE / "qrels_second_assessor.txt"


@pytest.fixture
def alike(tmp_path):
    """bm25's and tfidf's runs, both tagged 'run'; tfidf's without q01."""
    a, b = tmp_path / "A.txt", tmp_path / "B.txt"
    a.write_text(
        "".join(line.rsplit(" ", 1)[0] + " run\n" for line in (EXAMPLE / "runs" / "bm25.txt").read_text().splitlines())
    )
    b.write_text(
        "".join(
            line.rsplit(" ", 1)[0] + " run\n"
            for line in (EXAMPLE / "runs" / "tfidf.txt").read_text().splitlines()
            if not line.startswith("q01 ")
        )
    )
    return a, b


def test_agree_ranks_two_runs_tagged_alike_as_two_runs(alike):
    a, b = alike
    code, out, _ = cli("agree", QRELS, SECOND, "--runs", a, b, "--format", "json")
    assert code == 0
    runs = json.loads(out)["run_ranking"]["runs"]
    assert list(runs) == ["run", str(b)]  # the second goes by its path, as in compare
    separate = agree(QRELS, SECOND, {"x": read_run(a), "y": read_run(b)})
    assert [runs["run"]["reference"], runs[str(b)]["reference"]] == [
        separate.run_ranking["runs"]["x"]["reference"],
        separate.run_ranking["runs"]["y"]["reference"],
    ]
    assert runs["run"]["reference"] != runs[str(b)]["reference"]
    with pytest.raises(UsageError, match="two runs are named 'run': name them apart"):
        agree(QRELS, SECOND, [read_run(a), read_run(b)])  # objects have no path to go by


def test_compare_says_which_run_misses_a_query(alike):
    a, b = alike
    code, out, err = cli("compare", QRELS, a, b, "-m", "ndcg@10", "--permutations", "100", "--bootstrap", "100")
    assert code == 0
    assert f"1 of 22 in the qrels are not in the run {b} (e.g. q01)" in err
    assert "not in the run run " not in err and f"the run {b}: 21 of its 21 queries" in out


@pytest.mark.parametrize("argv", [("evaluate", "-", "-"), ("compare", QRELS, "-", "-"), ("compare", "-", "-", QRELS)])
def test_standard_input_given_twice_is_a_usage_error(argv, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO((EXAMPLE / "qrels.txt").read_text()))
    code, out, err = cli(*argv)
    assert code == 2 and "'-' (standard input) is given more than once" in err and out == ""
