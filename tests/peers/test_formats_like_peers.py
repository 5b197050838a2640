"""Files as trec_eval and the other peers read them: comments, extra and missing optional fields,
three-column files with or without a header, empty rankings, and the errors they give instead of a
silent wrong number."""

from __future__ import annotations

import re

import pytest
import pytrec_eval

import ragassay
from ragassay.cli import main
from ragassay.data.qrels_files import read_qrels
from ragassay.data.run_files import read_run
from ragassay.errors import InputError


@pytest.fixture(autouse=True)
def _each_reader(parser):
    """Every case here runs through both readers: same tables, same errors."""


QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d4": 1, "d5": 3}}
RUN = {"q1": {"d2": 3.0, "d1": 2.0, "d9": 1.5, "d3": 1.0}, "q2": {"d5": 2.0, "d6": 1.0, "d4": 0.5}}


def _trec_run(extra: str = "", tag: bool = True) -> str:
    lines = []
    for q, docs in RUN.items():
        for r, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1):
            lines.append(f"{q} Q0 {d} {r} {s}" + (" tagA" if tag else "") + extra)
    return "\n".join(lines) + "\n"


def _trec_qrels() -> str:
    return "".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items())


def _ndcg(qrels_path, run_path, **kw) -> float:
    return ragassay.evaluate(
        read_qrels(qrels_path, **kw.get("q", {})), read_run(run_path, **kw.get("r", {})), ["ndcg@10"]
    ).aggregate["ndcg@10"]


@pytest.fixture(scope="module")
def expected() -> float:
    per = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut"}).evaluate(RUN)
    return sum(v["ndcg_cut_10"] for v in per.values()) / len(per)


def test_comment_lines_are_skipped_and_line_numbers_kept(tmp_path, expected):
    q = tmp_path / "q.txt"
    q.write_text("# judged by two people, 2024\n" + _trec_qrels().replace("q2 0 d4", "   # a note\nq2 0 d4"))
    r = tmp_path / "r.txt"
    r.write_text("# run: bm25, k1=0.9\n" + _trec_run())
    assert _ndcg(q, r) == pytest.approx(expected, abs=1e-12)
    r.write_text("# q1 Q0 d1 1 9.0\n" + _trec_run())  # a comment with exactly a row's six fields
    assert _ndcg(q, r) == pytest.approx(expected, abs=1e-12) and "#" not in read_run(r).queries
    q.write_text("# note\nq1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(InputError, match=r"q.txt:3: grade must be an integer, got 'x'"):
        read_qrels(q)


def test_extra_run_fields_after_the_tag_are_ignored_and_the_tag_may_be_missing(tmp_path, expected, parser):
    r = tmp_path / "r.txt"
    r.write_text(_trec_run(" 0.73 extra"))
    run = read_run(r)
    assert run.name == "tagA"
    q = tmp_path / "q.txt"
    q.write_text(_trec_qrels())
    assert _ndcg(q, r) == pytest.approx(expected, abs=1e-12)
    lines = _trec_run().splitlines()  # lines of five, six and eight fields, and blank lines between
    mixed = [
        line.rsplit(" ", 1)[0] if i % 3 == 0 else line + (" x y" if i % 3 == 1 else "") for i, line in enumerate(lines)
    ]
    r.write_text("\n\n".join(mixed) + "\n")
    assert _ndcg(q, r) == pytest.approx(expected, abs=1e-12) and len(read_run(r)) == 7
    r.write_text(_trec_run(tag=False))  # five columns: no tag, the file name names the run
    assert read_run(r).name == "r" and _ndcg(q, r) == pytest.approx(expected, abs=1e-12)
    r.write_text(_trec_run() + "q3 Q0 d1 1\n")
    with pytest.raises(InputError, match=r"r.txt:8: expected 5 or more whitespace-separated columns, found 4"):
        read_run(r)


@pytest.mark.parametrize("header", ["", "qid docid score\n", "query-id\tcorpus-id\tscore\n"])
@pytest.mark.parametrize("fmt", ["auto", "trec3", "beir"])
def test_three_column_runs_and_qrels_with_or_without_a_header(tmp_path, expected, header, fmt):
    r = tmp_path / "r.tsv"
    r.write_text(header + "".join(f"{q}\t{d}\t{s}\n" for q, docs in RUN.items() for d, s in docs.items()))
    q = tmp_path / "q.tsv"
    q.write_text(
        header.replace("score", "relevance")
        + "".join(f"{q} {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items())
    )
    # the first line is a header only when it is made of header words: a first row is never lost
    assert len(read_run(r, format=fmt)) == sum(len(d) for d in RUN.values())
    assert _ndcg(q, r, q={"format": fmt}, r={"format": fmt}) == pytest.approx(expected, abs=1e-12)


def test_a_bad_first_row_is_an_error_not_a_header(tmp_path):
    r = tmp_path / "r.tsv"
    r.write_text("q1 d1 oops\nq1 d2 1.0\n")
    with pytest.raises(InputError, match=r"r.tsv:1: score is not a number: 'oops'"):
        read_run(r, format="beir")


def test_three_columns_on_the_command_line(tmp_path, capsys):
    r = tmp_path / "r.tsv"
    r.write_text("".join(f"{q}\t{d}\t{s}\n" for q, docs in RUN.items() for d, s in docs.items()))
    q = tmp_path / "q.txt"
    q.write_text(_trec_qrels())
    assert main(["evaluate", str(q), str(r), "-m", "p@2", "--run-format", "trec3"]) == 0
    assert re.search(r"^p@2 +0\.5000$", capsys.readouterr().out, re.M)


def test_an_empty_ranking_is_a_query_that_scores_zero():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    ev = ragassay.evaluate(qrels, {"q1": {"d1": 1.0}, "q2": {}}, ["p@1", "ndcg@10"])
    assert ev.queries == ["q1", "q2"] and ev.aggregate == {"p@1": 0.5, "ndcg@10": 0.5}
    assert ev.missing == []  # asked and answered with nothing, not missing
    # a query the run never mentions is still left out by default (trec_eval without -c)
    assert ragassay.evaluate(qrels, {"q1": {"d1": 1.0}}, ["p@1"]).aggregate == {"p@1": 1.0}


def test_no_query_with_both_results_and_judgments_is_an_error(tmp_path, capsys):
    with pytest.raises(InputError, match="No queries with both results and relevance info"):
        ragassay.evaluate({"q1": {"d1": 1}}, {"x": {"d1": 1.0}}, ["p@1"])
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("q1 0 d1 1\n")
    r.write_text("x Q0 d1 1 1.0 t\n")
    assert main(["evaluate", str(q), str(r)]) == 1
    assert "No queries with both results and relevance info" in capsys.readouterr().err


@pytest.mark.parametrize("grade", ["99999999999999999999999", "-99999999999999999999999", "2147483648", "1e30"])
def test_grades_out_of_range_are_errors_with_the_line(tmp_path, grade):
    q = tmp_path / "q.txt"
    q.write_text(f"q1 0 d1 1\nq1 0 d2 {grade}\n")
    with pytest.raises(InputError) as e:
        read_qrels(q)
    assert e.value.line == 2 and ("out of range" in e.value.message or "integer" in e.value.message)


@pytest.mark.parametrize("reader", ["qrels", "run", "agree"])
@pytest.mark.parametrize("field", ["document", "query"])
def test_ids_that_are_not_utf8_are_errors_in_every_reader(tmp_path, reader, field, parser, capsys):
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    bad_q, bad_d = (b"q\xe92", b"d2") if field == "query" else (b"q1", b"d\xe92")
    q.write_bytes(b"q1 0 d1 1\n" + bad_q + b" 0 " + bad_d + b" 1\n" if reader != "run" else b"q1 0 d1 1\n")
    r.write_bytes(
        b"q1 Q0 d1 1 2.0 t\n" + bad_q + b" Q0 " + bad_d + b" 2 1.0 t\n" if reader == "run" else b"q1 Q0 d1 1 2.0 t\n"
    )
    argv = ["agree", str(q), str(q)] if reader == "agree" else ["evaluate", str(q), str(r)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    bad = r if reader == "run" else q
    assert f"{bad}:2: not valid UTF-8 text (byte 0xe9)" in err and "Traceback" not in err


def test_a_huge_line_is_refused_quickly(tmp_path):
    r = tmp_path / "r.txt"
    r.write_bytes(b"q1 Q0 " + b"x" * 10_000_000 + b" 1 1.0 t\n")
    with pytest.raises(InputError, match="r.txt:1: a field of 10000000 bytes"):
        read_run(r)
