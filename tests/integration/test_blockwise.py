"""evaluate by blocks of queries (metrics/blockwise.py) gives the in-memory values exactly, and
trec_eval's (through pytrec_eval): blocks of a few queries and pieces of a few hundred bytes, so
every boundary is crossed, on grouped and shuffled files, a query split across the file, queries
on one side only, ties, odd ids; duplicates and bad values are refused naming the file and line."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import pytrec_eval

import ragassay
from helpers import nonempty
from ragassay.errors import InputError
from ragassay.metrics.block_partitions import partition_of
from ragassay.metrics.blockwise import blockwise_wanted, evaluate_files

METRICS = "ndcg@10,p@5,recall@100,map,mrr,bpref,num_ret,num_rel_ret"


@pytest.fixture(autouse=True)
def qrels_by_pieces(monkeypatch):
    """In process, qrels are read by pieces too (by default a qrels file under 128 MB is read whole);
    the command (a subprocess) and test_small_qrels_... read them whole."""
    from ragassay.metrics import blockwise

    monkeypatch.setattr(blockwise, "QRELS_WHOLE", 0)


PYTREC = {
    "ndcg_cut_10": "ndcg@10",
    "P_5": "p@5",
    "recall_100": "recall@100",
    "map": "map",
    "recip_rank": "mrr",
    "bpref": "bpref",
    "num_ret": "num_ret",
    "num_rel_ret": "num_rel_ret",
}


def make_rows(n_queries: int, seed: int):
    """Run and qrels rows with score ties, ids that are prefixes of each other and odd characters;
    one query only in the run, one only in the qrels, one with no relevant document."""
    rng = np.random.default_rng(seed)
    queries = [f"q{i}" for i in range(n_queries)] + ["q-é/1", "Q_#x"]
    run, qrels = [], []
    for i, q in enumerate(queries):
        docs = [f"d{j}" for j in rng.choice(60, 25, replace=False)]
        scores = np.round(rng.random(len(docs)) * 3, 1)  # one decimal: many ties
        if i != 1:  # q1 is only in the qrels
            run += [(q, d, float(s)) for d, s in zip(docs, scores)]
        if i != 2:  # q2 is only in the run
            judged = list(rng.choice(docs, 8, replace=False)) + [f"d{k}" for k in range(60, 63)]
            grades = rng.integers(-1, 4, len(judged)) if i != 3 else np.zeros(len(judged), int)
            qrels += [(q, d, int(g)) for d, g in zip(judged, grades)]
    return run, qrels


def write(path, rows, kind: str, order=None, tag: str = "tagA"):
    rows = [rows[i] for i in order] if order is not None else rows
    if kind == "run":
        text = "".join(f"{q} Q0 {d} {r} {s} {tag}\n" for r, (q, d, s) in enumerate(rows, start=1))
    else:
        text = "".join(f"{q} 0 {d} {g}\n" for q, d, g in rows)
    path.write_text(text, encoding="utf-8")
    return path


def pytrec_values(run_rows, qrels_rows):
    qrels, run = {}, {}
    for q, d, g in qrels_rows:
        qrels.setdefault(q, {})[d] = g
    for q, d, s in run_rows:
        run.setdefault(q, {})[d] = s
    ev = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut", "P", "recall", "map", "recip_rank", "bpref", "num_ret", "num_rel_ret"}
    )
    return {q: {PYTREC[k]: v[k] for k in PYTREC} for q, v in ev.evaluate(run).items()}


@pytest.fixture(params=["grouped", "shuffled", "split"])
def files(request, tmp_path):
    run_rows, qrels_rows = make_rows(40, seed=len(request.param))
    rng = np.random.default_rng(7)
    r_order = q_order = None
    if request.param == "shuffled":
        r_order, q_order = rng.permutation(len(run_rows)), rng.permutation(len(qrels_rows))
    elif request.param == "split":  # q0's rows half at the start, half at the end of both files
        r_order = list(range(len(run_rows)))
        r_order = r_order[12:] + r_order[:12]
        q_order = list(range(len(qrels_rows)))
        q_order = q_order[5:] + q_order[:5]
    return (
        write(tmp_path / "qrels.txt", qrels_rows, "qrels", q_order),
        write(tmp_path / "run.txt", run_rows, "run", r_order),
        run_rows,
        qrels_rows,
    )


@pytest.mark.parametrize("parser", ["numpy", "arrow"])
@pytest.mark.parametrize("missing", ["skip", "zero"])
def test_blocks_of_three_queries_equal_the_in_memory_evaluation_and_trec_eval(files, missing, parser, monkeypatch):
    monkeypatch.setenv("RAGASSAY_PARSER", parser)
    qrels, run, run_rows, qrels_rows = files
    whole = ragassay.evaluate(str(qrels), str(run), METRICS, missing=missing)
    blocks = evaluate_files(qrels, run, METRICS, missing=missing, block_queries=3, keep_per_query=True, piece_bytes=300)
    assert blocks.blocks > 5  # many blocks, each from many pieces
    assert blocks.to_dict()["per_query"] == whole.per_query
    assert blocks.aggregate == whole.aggregate  # to the last bit: both sums are exact
    assert (
        blocks.counts
        == whole.counts
        == {
            "evaluated": 40 if missing == "skip" else 41,
            "run_queries_without_qrels": 1,
            "qrels_queries_missing_from_run": 1,
            "asked_without_results": 0,
            "queries_without_relevant": 1,
        }
    )
    assert blocks.run_name == "tagA"
    theirs = pytrec_values(run_rows, qrels_rows)
    mine = blocks.to_dict()["per_query"]
    assert set(theirs) == set(mine) - ({"q1"} if missing == "zero" else set())
    for q, values in nonempty(theirs.items()):
        assert mine[q] == pytest.approx(values, abs=1e-12), q
    assert mine.get("q1") == (None if missing == "skip" else {m: 0.0 for m in METRICS.split(",")})


def test_one_block_per_query_leaves_empty_partitions_and_a_single_block_equals_them(tmp_path):
    run_rows, qrels_rows = make_rows(4, seed=3)
    qrels, run = write(tmp_path / "q.txt", qrels_rows, "qrels"), write(tmp_path / "r.txt", run_rows, "run")
    one = evaluate_files(qrels, run, METRICS, block_queries=1, keep_per_query=True, piece_bytes=64)
    many = evaluate_files(qrels, run, METRICS, block_queries=1000, keep_per_query=True)
    assert many.blocks == 1 and one.blocks > 1
    assert one.to_dict() == many.to_dict()
    assert one.aggregate == ragassay.evaluate(str(qrels), str(run), METRICS).aggregate


def test_the_partition_of_an_id_does_not_hang_on_the_width_of_its_array():
    ids = [b"q1", b"query-0000000001", b"x" * 23, "é".encode()]
    narrow = partition_of(np.array(ids), 97)
    wide = partition_of(np.array(ids, dtype="S40"), 97)
    assert narrow.tolist() == wide.tolist()
    assert len(set(partition_of(np.array([f"q{i}".encode() for i in range(1000)]), 10).tolist())) == 10


def test_a_document_twice_for_a_query_in_two_pieces_names_its_line(tmp_path):
    run_rows, qrels_rows = make_rows(30, seed=4)
    qrels = write(tmp_path / "q.txt", qrels_rows, "qrels")
    run = write(tmp_path / "r.txt", run_rows + [run_rows[0]], "run")  # q0's first document again, last line
    with pytest.raises(InputError) as e:
        evaluate_files(qrels, run, METRICS, block_queries=3, piece_bytes=200)
    assert e.value.path == str(run) and e.value.line == len(run_rows) + 1
    assert "listed twice for query 'q0' (first on line 1" in e.value.message
    judged = write(tmp_path / "q2.txt", qrels_rows + [qrels_rows[3]], "qrels")
    with pytest.raises(InputError) as e:
        evaluate_files(judged, write(tmp_path / "r2.txt", run_rows, "run"), METRICS, block_queries=3, piece_bytes=200)
    assert e.value.path == str(judged) and e.value.line == len(qrels_rows) + 1 and "judged twice" in e.value.message
    deduped = evaluate_files(qrels, run, METRICS, block_queries=3, piece_bytes=200, dedupe=True)
    assert deduped.aggregate == ragassay.evaluate(str(qrels), str(tmp_path / "r2.txt"), METRICS).aggregate


@pytest.mark.parametrize("parser", ["numpy", "arrow"])
@pytest.mark.parametrize(
    "bad, message",
    [
        ("q9 0 d1 2.5\n", "grade must be an integer, got '2.5'"),
        ("q9 0 d1 1e2\n", "grade must be an integer, got '1e2'"),
        ("q9 0 d1\n", "expected 4 whitespace-separated columns, found 3"),
        ("q9 0 d\xff1 1\n", "not valid UTF-8 text"),
        ("q9 0 d1 1\r", "lone carriage return"),
    ],
)
def test_a_bad_qrels_line_deep_in_the_file_is_named_with_its_line(tmp_path, bad, message, parser, monkeypatch):
    monkeypatch.setenv("RAGASSAY_PARSER", parser)
    run_rows, qrels_rows = make_rows(30, seed=5)
    qrels = tmp_path / "q.txt"
    good = "".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels_rows)
    qrels.write_bytes(good.encode() + bad.encode("latin-1") + b"q9 0 d2 1\n")
    run = write(tmp_path / "r.txt", run_rows, "run")
    with pytest.raises(InputError) as e:
        evaluate_files(qrels, run, METRICS, block_queries=3, piece_bytes=256)
    assert e.value.path == str(qrels) and e.value.line == len(qrels_rows) + 1 and message in e.value.message
    with pytest.raises(InputError) as whole:  # the whole-file reader says the same
        ragassay.read_qrels(qrels)
    assert (whole.value.line, whole.value.message.split(" (")[0]) == (e.value.line, e.value.message.split(" (")[0])


@pytest.mark.parametrize("bad, message", [("nan", "score must be finite"), ("high", "score is not a number")])
def test_a_bad_score_deep_in_the_run_is_named_with_its_line(tmp_path, bad, message):
    run_rows, qrels_rows = make_rows(30, seed=6)
    run = write(tmp_path / "r.txt", run_rows, "run")
    lines = run.read_text().splitlines(keepends=True)
    lines[500] = lines[500].replace(lines[500].split()[4], bad)
    run.write_text("".join(lines))
    with pytest.raises(InputError) as e:
        evaluate_files(write(tmp_path / "q.txt", qrels_rows, "qrels"), run, METRICS, block_queries=3, piece_bytes=256)
    assert e.value.path == str(run) and e.value.line == 501 and message in e.value.message


def test_header_comments_and_blank_lines_keep_the_line_numbers(tmp_path):
    run_rows, qrels_rows = make_rows(10, seed=8)
    qrels = tmp_path / "q.tsv"
    body = [f"{q}\t{d}\t{g}\n" for q, d, g in qrels_rows]
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(body[:50]) + "\n# a comment\n" + "".join(body[50:]) + "q0\td0\t2.5\n"
    )
    run = write(tmp_path / "r.txt", run_rows, "run")
    with pytest.raises(InputError) as e:
        evaluate_files(qrels, run, METRICS, block_queries=2, piece_bytes=128)
    assert e.value.line == len(body) + 4
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "".join(body[:50]) + "\n# a comment\n" + "".join(body[50:]))
    blocks = evaluate_files(qrels, run, METRICS, block_queries=2, piece_bytes=128, keep_per_query=True)
    assert blocks.to_dict()["per_query"] == ragassay.evaluate(str(qrels), str(run), METRICS).per_query


def test_files_that_share_no_query_are_refused_and_a_file_of_comments_is_read_whole(tmp_path):
    run_rows, qrels_rows = make_rows(6, seed=9)
    qrels = write(tmp_path / "q.txt", [(q + "x", d, g) for q, d, g in qrels_rows], "qrels")
    run = write(tmp_path / "r.txt", run_rows, "run")
    with pytest.raises(InputError, match="do not overlap") as e:
        evaluate_files(qrels, run, METRICS, block_queries=2)
    assert str(run) in e.value.message and str(qrels) in e.value.message
    (tmp_path / "blank.txt").write_text("# nothing\n\n")
    assert not blockwise_wanted(tmp_path / "blank.txt", run, 2)  # not a column file: read whole, which says why
    assert blockwise_wanted(qrels, run, 2)


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "ragassay", "evaluate", *map(str, args)], capture_output=True, text=True, timeout=300
    )


def test_the_command_by_blocks_prints_what_it_prints_in_memory(tmp_path):
    run_rows, qrels_rows = make_rows(20, seed=10)
    rng = np.random.default_rng(1)
    qrels = write(tmp_path / "q.txt", qrels_rows, "qrels", rng.permutation(len(qrels_rows)))
    run = write(tmp_path / "r.txt", run_rows, "run", rng.permutation(len(run_rows)))
    whole = run_cli(qrels, run, "-m", METRICS, "--per-query", "--format", "json")
    blocks = run_cli(qrels, run, "-m", METRICS, "--per-query", "--format", "json", "--block-queries", "3")
    assert whole.returncode == blocks.returncode == 0, blocks.stderr
    a, b = json.loads(whole.stdout), json.loads(blocks.stdout)
    assert a == b and a["qrels"]["digest"]  # the qrels (under 128 MB) read whole: the same digest
    csv_whole = run_cli(qrels, run, "-m", METRICS, "--per-query", "--format", "csv")
    csv_blocks = run_cli(qrels, run, "-m", METRICS, "--per-query", "--format", "csv", "--block-queries", "3")
    assert sorted(csv_blocks.stdout.splitlines()) == sorted(csv_whole.stdout.splitlines())
    assert csv_blocks.stdout.splitlines()[-1].startswith("all,")
    table = run_cli(qrels, run, "-m", METRICS, "--per-query", "--block-queries", "3")
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["query"] + METRICS.split(",") and len(lines) == 2 + 20 + 1 + 2 + 2
    assert lines[-3].startswith("relevant = grade ≥ 1 (trec_eval's default") and lines[-2].startswith("pool: not said")
    assert (
        lines[-1] == "20 queries evaluated; 1 run queries without qrels ignored; 1 qrels queries missing from "
        "the run skipped (use --missing zero to count them as 0); 1 evaluated queries have no "
        "relevant document (score 0)"
    )
    means = run_cli(qrels, run, "-m", METRICS, "--block-queries", "3")
    assert means.stdout == run_cli(qrels, run, "-m", METRICS).stdout


def test_the_command_names_the_bad_line_when_reading_by_blocks(tmp_path):
    run_rows, qrels_rows = make_rows(20, seed=11)
    qrels = write(tmp_path / "q.txt", qrels_rows + [("q0", "dz", 2.5)], "qrels")
    out = run_cli(qrels, write(tmp_path / "r.txt", run_rows, "run"), "--block-queries", "2")
    assert out.returncode == 1
    assert (
        out.stderr.strip() == f"ragassay evaluate: error: {qrels}:{len(qrels_rows) + 1}: grade must be an "
        "integer, got '2.5'"
    )


def test_help_says_when_evaluate_goes_by_blocks():
    out = subprocess.run([sys.executable, "-m", "ragassay", "evaluate", "--help"], capture_output=True, text=True)
    text = " ".join(out.stdout.split())
    assert "--block-queries N" in text and "1 GB or more" in text


def test_big_plain_files_go_by_blocks_and_others_are_read_whole(tmp_path, monkeypatch):
    import gzip

    from ragassay.metrics import blockwise

    run_rows, qrels_rows = make_rows(5, seed=12)
    qrels, run = write(tmp_path / "q.txt", qrels_rows, "qrels"), write(tmp_path / "r.txt", run_rows, "run")
    assert not blockwise_wanted(qrels, run) and blockwise_wanted(qrels, run, 10)
    monkeypatch.setattr(blockwise, "BLOCKWISE_FROM", 100)
    assert blockwise_wanted(qrels, run)
    zipped = tmp_path / "r.txt.gz"
    zipped.write_bytes(gzip.compress(run.read_bytes()))
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "score": s}) + "\n" for q, d, s in run_rows))
    assert not blockwise_wanted(qrels, zipped, 10) and not blockwise_wanted(qrels, jsonl, 10)
    assert not blockwise_wanted(qrels, "-", 10)


@pytest.mark.parametrize("missing", ["skip", "zero"])
def test_a_block_holding_only_qrels_queries_counts_them_as_in_memory(tmp_path, missing):
    """Five run queries make five partitions (a block a query); judged-only queries are picked to fall
    in a partition no run query is in, and one that shares a partition with a run query."""
    run_rows = [(f"r{i}", f"d{j}", float(j % 3)) for i in range(5) for j in range(6)]
    taken = set(partition_of(np.array([f"r{i}".encode() for i in range(5)]), 5).tolist())
    free = [f"x{i}" for i in range(200) if partition_of(np.array([f"x{i}".encode()]), 5)[0] not in taken]
    shared = [f"x{i}" for i in range(200) if partition_of(np.array([f"x{i}".encode()]), 5)[0] in taken]
    assert free and shared
    judged = [f"r{i}" for i in range(5)] + free[:2] + shared[:1]
    qrels_rows = [(q, f"d{j}", 0 if q == free[1] else (j + k) % 3) for k, q in enumerate(judged) for j in range(4)]
    qrels_rows.append((free[0], "d9", 0))  # free[1]: judged, nothing relevant
    qrels, run = write(tmp_path / "q.txt", qrels_rows, "qrels"), write(tmp_path / "r.txt", run_rows, "run")
    whole = ragassay.evaluate(str(qrels), str(run), METRICS, missing=missing)
    blocks = evaluate_files(qrels, run, METRICS, missing=missing, block_queries=1, keep_per_query=True)
    assert blocks.blocks >= 2
    assert blocks.counts == whole.counts and blocks.counts["qrels_queries_missing_from_run"] == 3
    assert blocks.to_dict()["per_query"] == whole.per_query and blocks.aggregate == whole.aggregate
    assert (free[0] in whole.per_query) == (missing == "zero")
    assert blocks.counts["queries_without_relevant"] == (1 if missing == "zero" else 0)


def test_small_qrels_are_read_whole_and_carry_the_in_memory_digest(tmp_path, monkeypatch):
    from ragassay.metrics import blockwise

    monkeypatch.setattr(blockwise, "QRELS_WHOLE", 128 << 20)
    run_rows, qrels_rows = make_rows(25, seed=13)
    rng = np.random.default_rng(2)
    qrels = write(tmp_path / "q.txt", qrels_rows, "qrels", rng.permutation(len(qrels_rows)))
    run = write(tmp_path / "r.txt", run_rows, "run", rng.permutation(len(run_rows)))
    jsonl = tmp_path / "q.jsonl"  # any format the readers take, when read whole
    jsonl.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g}) + "\n" for q, d, g in qrels_rows))
    whole = ragassay.evaluate(str(qrels), str(run), METRICS)
    for judged in nonempty([qrels, jsonl]):
        blocks = evaluate_files(judged, run, METRICS, block_queries=2, keep_per_query=True, piece_bytes=256)
        assert blocks.blocks > 5
        expected = ragassay.evaluate(str(judged), str(run), METRICS).to_dict()
        assert blocks.to_dict() == expected and expected["per_query"] == whole.per_query
        assert blocks.to_dict()["qrels"]["digest"] == ragassay.read_qrels(judged).digest()
    assert blockwise_wanted(jsonl, run, 2) and not blockwise_wanted(qrels, jsonl, 2)
    monkeypatch.setattr(blockwise, "QRELS_WHOLE", 0)
    assert not blockwise_wanted(jsonl, run, 2)  # a big qrels file is read by pieces: columns only
    assert evaluate_files(qrels, run, METRICS, block_queries=2).to_dict(per_query=False)["qrels"]["digest"] is None


@pytest.mark.parametrize("whole", [False, True])
def test_when_both_files_are_bad_the_qrels_error_comes_first_as_in_memory(tmp_path, monkeypatch, whole):
    from ragassay.metrics import blockwise

    monkeypatch.setattr(blockwise, "QRELS_WHOLE", 128 << 20 if whole else 0)
    run_rows, qrels_rows = make_rows(20, seed=14)
    qrels = write(tmp_path / "q.txt", qrels_rows + [("q0", "dz", "x")], "qrels")
    run = write(tmp_path / "r.txt", run_rows + [("q0", "dz", "high")], "run")
    with pytest.raises(InputError) as e:
        evaluate_files(qrels, run, METRICS, block_queries=2, piece_bytes=256)
    assert (e.value.path, e.value.line) == (str(qrels), len(qrels_rows) + 1)
    with pytest.raises(InputError) as e:
        evaluate_files(write(tmp_path / "q2.txt", qrels_rows, "qrels"), run, METRICS, block_queries=2, piece_bytes=256)
    assert (e.value.path, e.value.line) == (str(run), len(run_rows) + 1) and "score is not a number" in e.value.message
