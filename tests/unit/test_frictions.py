"""The smaller frictions of a new user's walk (issue 45, item 9), each a word that should be true:
the closest metric name is suggested first; a misspelt retriever gets the names that exist; a
retriever's wrong return value is named with the retriever, the query and what came back; advice
names only flags the command has; a p-value is never printed as 0."""

from __future__ import annotations

import json
import re

import pytest

from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.errors import MeasureError, RagassayError
from ragassay.metrics.measures import edit_distance, parse_measure, suggestions
from ragassay.product.formatting import fmt_p

QRELS = str(EXAMPLE / "qrels.txt")
BM25 = str(EXAMPLE / "runs" / "bm25.txt")


def said(capsys, *argv: str) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


# ------------------------------------------------------------------------------------- measure names


@pytest.mark.parametrize(
    "typed, first, also",
    [
        ("mapp", "map", ["map@10"]),  # one edit from map, three from map@10
        ("maps", "map", ["map@10"]),
        ("ndcg@1O", "ndcg@10", ["ndcg"]),  # the letter O in the cutoff: the cutoff is kept
        ("Ndcg@ten", "ndcg@10", ["ndcg"]),
        ("recal@10", "recall@10", []),
        ("rrecall@10", "recall@10", []),
        ("ndgc@10", "ndcg@10", ["ndcg"]),  # two letters swapped: one edit
        ("mrr@k", "mrr@10", ["mrr"]),  # the cutoff written as k
        ("mrr@1o", "mrr@10", ["mrr"]),
        ("precison@5", "p@5", []),
        ("reciprank", "mrr", ["mrr@10"]),
    ],
)
def test_the_closest_metric_name_is_suggested_first(typed, first, also):
    with pytest.raises(MeasureError) as e:
        parse_measure(typed)
    text = str(e.value)
    assert f"did you mean {first!r}?" in text
    shown = re.findall(r"'([^']+)'", text.split("did you mean", 1)[1])
    assert shown == [first, *also]


def test_a_metrics_case_does_not_matter_and_a_far_name_lists_the_known_ones():
    assert parse_measure("P@5") == parse_measure("p@5") and parse_measure("MRR@10") == parse_measure("mrr@10")
    with pytest.raises(MeasureError, match="known: p@k, recall@k"):
        parse_measure("xyzzy")
    assert suggestions("Pp@5")[0] == "p@5"


def test_edit_distance_counts_each_edit_once():
    assert [
        edit_distance(a, b)
        for a, b in [
            ("mapp", "map"),
            ("mapp", "map@10"),
            ("ndgc", "ndcg"),
            ("", "map"),
            ("recal", "recall"),
            ("kitten", "sitting"),
        ]
    ] == [1, 3, 1, 3, 1, 3]


def test_the_cli_says_map_before_map_at_10(capsys):
    code, err = said(capsys, "evaluate", QRELS, BM25, "-m", "mapp")
    assert code == 2 and "did you mean 'map'? (or 'map@10')" in err


# ------------------------------------------------------------------------------------------ retrievers

RETRIEVERS = """
def search(q): return ["a", "b"]
def none(q): return None
def text(q): return "chunk-1"
def mapping(q): return {"score": 1.0, "rank": 1}
def scores(q): return {"a": 0.5}
def bad_items(q): return (x for x in [object()])
def broken(q):
    yield "a"
    raise RuntimeError("index closed")
def number(q): return 7
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "my_search.py").write_text(RETRIEVERS)
    (tmp_path / "q.jsonl").write_text('{"id": "q\u00e9-1", "text": "hello"}\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "name, words",
    [
        ("none", ["returned None for query 'q\u00e9-1'", "end without a return"]),
        ("text", ["returned a string ('chunk-1') for query 'q\u00e9-1'", "['chunk-1']"]),
        ("mapping", ["returned a dict (keys: 'score', 'rank') for query 'q\u00e9-1'", "list(d.items())"]),
        ("scores", ["returned a dict (keys: 'a')"]),
        ("bad_items", ["got <object object", "for query 'q\u00e9-1'"]),
        ("broken", ["failed on query 'q\u00e9-1' while its results were read: RuntimeError: index closed"]),
        ("number", ["returned 7 (int) for query 'q\u00e9-1'"]),
    ],
)
def test_a_retriever_returning_the_wrong_thing_is_named_with_the_query_and_the_value(folder, capsys, name, words):
    code, err = said(capsys, "retrieve", "--retriever", f"my_search.py:{name}", "--queries", "q.jsonl", "-o", "run.txt")
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert f"the retriever {name!r}" in err and all(w in err for w in words), err
    assert not (folder / "run.txt").exists()


def test_the_python_api_says_the_same(folder):
    import ragassay.api as api

    with pytest.raises(RagassayError, match=r"the retriever 'none' returned None for query 'q1'"):
        api.retrieve(lambda q: None, {"q1": "hello"}, name="none")
    with pytest.raises(RagassayError, match=r"returned a string \('abc'\)"):
        api.retrieve(lambda q: "abc", {"q1": "hello"})
    assert len(api.retrieve("my_search.py:search", {"q1": "hello"}).run) == 2


@pytest.mark.parametrize(
    "spec, hint",
    [
        ("my_search.py:serch", "did you mean 'search'?"),
        ("my_search.py:Search", "did you mean 'search'?"),
        ("my_search.py:nne", "did you mean 'none'?"),
        ("my_serch.py:search", "did you mean 'my_search.py'?"),
        ("my_search.py:zzzzzz", "it has 'bad_items', 'broken', "),
    ],
)
def test_a_misspelt_retriever_gets_the_names_that_exist(folder, capsys, spec, hint):
    code, err = said(capsys, "retrieve", "--retriever", spec, "--queries", "q.jsonl", "-o", "run.txt")
    assert code == 1 and hint in err, err


def test_a_misspelt_retriever_in_the_project_file_gets_the_name_too(folder, capsys):
    (folder / "chunks.jsonl").write_text('{"id": "a", "text": "hello there"}\n{"id": "b", "text": "bye"}\n')
    (folder / "ragassay.toml").write_text(
        '[data]\nchunks = "chunks.jsonl"\nqueries = "q.jsonl"\n\n[retrievers]\nmine = "my_search.py:serch"\n'
    )
    code = main(["run", str(folder / "ragassay.toml"), "--only", "retrieve"])
    captured = capsys.readouterr()
    assert code != 0 and "did you mean 'search'?" in captured.out + captured.err


# ------------------------------------------------------------------------- hints name the command's flags


def test_judge_is_never_told_to_use_a_flag_it_lacks(tmp_path, capsys):
    bad = tmp_path / "run.txt"
    bad.write_text("q01 c1 x y\n")  # four columns: no run format can be told
    code, err = said(
        capsys,
        "judge",
        "--queries",
        EXAMPLE / "queries.jsonl",
        "--chunks",
        EXAMPLE / "chunks.jsonl",
        "--run",
        bad,
        "-o",
        tmp_path / "j.jsonl",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
    )
    assert code == 1 and "cannot tell the format of this run file" in err and "--run-format" not in err
    code, err = said(capsys, "evaluate", QRELS, bad)
    assert code == 1 and "--run-format names it" in err  # evaluate has it: the advice stays
    bad.write_text("q01 c1 x y z\n")  # five columns: no qrels format either
    code, err = said(capsys, "agree", bad, QRELS)
    assert code == 1 and "--qrels-format names it" in err


def test_every_flag_an_error_advises_is_one_its_command_takes(tmp_path, capsys):
    """For each command that reads a run or qrels file, a file of no known format: any flag its error
    names is one of that command's own."""
    import argparse

    from ragassay.cli import build_parser
    from ragassay.cli.hints import flags_of

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bad = tmp_path / "bad.txt"
    bad.write_text("q01 c1\n")  # two columns: neither a run nor qrels
    q, c = EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl"
    calls = {
        "evaluate": [QRELS, bad],
        "compare": [QRELS, bad, BM25],
        "agree": [bad, QRELS],
        "judge": [
            "--queries",
            q,
            "--chunks",
            c,
            "--run",
            bad,
            "-o",
            tmp_path / "j.jsonl",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        "report": [EXAMPLE / "answers.jsonl", "--qrels", QRELS, "--run", bad, "-o", tmp_path / "r.html"],
    }
    seen = 0
    for command, rest in nonempty(calls.items()):
        code, err = said(capsys, command, *rest)
        assert code in (1, 2), (command, err)
        advised = re.findall(r"(--[a-z][a-z0-9-]*)", err)  # every flag the error names
        assert set(advised) <= flags_of(sub.choices[command]), (command, err)
        seen += 1
    assert seen == len(calls)


# ----------------------------------------------------------------------------------------- p-values


@pytest.mark.parametrize(
    "p, digits, text",
    [
        (0.0, 3, "< 0.001"),
        (1 / 10001, 3, "< 0.001"),
        (0.0004, 4, "0.0004"),
        (0.00009, 4, "< 0.0001"),
        (0.042, 3, "0.042"),
        (1.0, 3, "1.000"),
        (float("nan"), 3, "nan"),
    ],
)
def test_a_p_value_under_the_last_digit_is_less_than_it(p, digits, text):
    assert fmt_p(p, digits) == text


@pytest.fixture
def far_apart(tmp_path):
    """40 queries on which run b always finds the relevant chunk first and run a never does."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i:02d} 0 rel{i} 1\n" for i in range(40)))
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(f"q{i:02d} Q0 junk{i}-{j} {j + 1} {10 - j} a\n" for i in range(40) for j in range(5)))
    b.write_text("".join(f"q{i:02d} Q0 rel{i} 1 10 b\n" for i in range(40)))
    return qrels, a, b


def test_compare_never_prints_a_zero_p_value(far_apart, capsys):
    qrels, a, b = far_apart
    assert main(["compare", str(qrels), str(a), str(b), "-m", "mrr", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    (test,) = result["tests"]
    n = result["settings"]["n_permutations"]
    assert test["p_randomization"] >= 1 / (n + 1) > 0  # a permutation p-value is never zero
    assert main(["compare", str(qrels), str(a), str(b), "-m", "mrr"]) == 0
    out = capsys.readouterr().out
    assert "< 0.0001" in out and "0.0000" not in out.split("W/T/L")[1].split("\n\n")[0]


def test_the_report_and_runs_compare_line_never_print_a_zero_p_value(far_apart, tmp_path):
    from ragassay.product.pipeline.scores import _p_said

    assert _p_said(1 / 10001) == "< 0.001" and _p_said(0.0421) == "= 0.042"
    qrels, a, b = far_apart
    out = tmp_path / "report.md"
    assert main(["report", "--qrels", str(qrels), "--run", str(a), "--run", str(b), "-o", str(out)]) == 0
    text = out.read_text()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if "40/0/0" in line]
    assert rows and all(r[6] == r[7] == "&lt; 0.0001" and float(r[8]) > 0 for r in rows)  # p (rand), p (t), Holm


# ------------------------------------------------------------------------------ report: coverage's run


def test_the_reports_coverage_section_names_the_runs_it_measured_and_counts_each_apart(tmp_path):
    coverage = tmp_path / "coverage.jsonl"
    lines = [
        {"query_id": "q1", "run": "bm25", "coverage": "FULL"},
        {"query_id": "q2", "run": "bm25", "coverage": "NONE"},
        {"query_id": "q1", "run": "dense-\u00e9", "coverage": "PARTIAL"},
        {"query_id": "q2", "run": "dense-\u00e9", "coverage": None, "status": "error", "error": "cut: x"},
    ]
    coverage.write_text("".join(json.dumps({"status": "ok", **r}) + "\n" for r in lines))
    out = tmp_path / "report.md"
    assert main(["report", str(coverage), "-o", str(out)]) == 0
    text = out.read_text()
    section = text.split("Judge: answer coverage per query", 1)[1].split("\n## ", 1)[0]
    assert section.startswith(" (bm25, dense-\u00e9)")
    assert "the runs bm25, dense-\u00e9" in section and "2 of bm25, 2 of dense-\u00e9" in section
    rows = {
        r[0]: r[1:]
        for r in (
            [c.strip() for c in line.strip("|").split("|")]
            for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| coverage")
        )
    }
    assert rows == {"FULL": ["1", "0"], "PARTIAL": ["0", "1"], "NONE": ["1", "0"], "error": ["0", "1"]}
