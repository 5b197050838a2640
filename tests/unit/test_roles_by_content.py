"""A role is the file's content, not its position: qrels given as a run, a run as qrels, questions
as chunks, chunks as queries are refused naming the evidence, by the CLI, the Python API and the
blockwise reader alike; a format named by the user still forces a reading; where the content is
only likely another role, a warning, not a refusal.

The corpus is built at test time from the standard library's own docstrings (text nobody on the
project wrote); the qrels grade each query's chunks 0-3 and the runs score them with a retriever
of the test's own (word overlap)."""

from __future__ import annotations

import inspect
import json
import random
import re
from pathlib import Path

import pytest

import ragassay
from helpers import nonempty
from ragassay.data.qrels_files import read_qrels
from ragassay.data.run_files import read_run
from ragassay.errors import InputError

MODULES = ("json", "textwrap", "shlex", "fnmatch", "difflib")


def corpus() -> list[dict]:
    """Chunks of real text: each public function's docstring, its id module.function, its doc_id
    the module."""
    import importlib

    out = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in sorted(dir(module)):
            f = getattr(module, attr)
            doc = inspect.getdoc(f) if callable(f) and not attr.startswith("_") else None
            if doc and inspect.getmodule(f) is module:
                out.append({"id": f"{name}.{attr}", "doc_id": name, "text": doc})
    assert len(out) >= 30
    return out


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{3,}", text.lower()))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """chunks.jsonl, queries.jsonl, qrels.txt (TREC, grades 0-3), run.txt (TREC, float scores)."""
    root = tmp_path_factory.mktemp("roles")
    chunks = corpus()
    rng = random.Random(7)
    queries = {f"q{i:03d}": c["text"].split(".")[0] for i, c in enumerate(chunks[::3][:12])}
    (root / "chunks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chunks))
    (root / "queries.jsonl").write_text("".join(json.dumps({"id": q, "text": t}) + "\n" for q, t in queries.items()))
    qrels, run = [], []
    for qid, text in queries.items():
        scored = sorted(
            ((len(words(text) & words(c["text"])) / (1 + len(words(c["text"]))) ** 0.5, c["id"]) for c in chunks),
            reverse=True,
        )
        for rank, (score, cid) in enumerate(scored[:10], start=1):
            run.append(f"{qid} Q0 {cid} {rank} {score:.6f} overlap")
        for cid in sorted(cid for _, cid in scored[:8]):  # qrels as people write them: by chunk id
            qrels.append(f"{qid} 0 {cid} {rng.choice([0, 0, 1, 1, 2, 3])}")
    (root / "qrels.txt").write_text("\n".join(qrels) + "\n")
    (root / "run.txt").write_text("\n".join(run) + "\n")
    # the qrels' own three columns (query, chunk, grade), and BEIR's qrels/test.tsv with its header
    three = ["\t".join(line.split()[i] for i in (0, 2, 3)) for line in qrels]
    (root / "q3.tsv").write_text("\n".join(three) + "\n")
    (root / "beir" / "qrels").mkdir(parents=True)
    (root / "beir" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(three) + "\n")
    return {
        p.stem if p.parent == root else "beir": p
        for p in [root / n for n in ("chunks.jsonl", "queries.jsonl", "qrels.txt", "run.txt", "q3.tsv")]
        + [root / "beir" / "qrels" / "test.tsv"]
    }


# ----------------------------------------------------------------------------- qrels given as a run


@pytest.mark.parametrize("parser", ["numpy", "arrow"])
@pytest.mark.parametrize(
    "as_run, evidence, forced",
    [
        (
            "q3",
            r"every value in its third column is a small integer \(0 to 3\), and within a query they tie and rise",
            "trec3",
        ),
        ("beir", r"its header 'query-id corpus-id score' is BEIR's qrels header", "beir"),
    ],
)
def test_qrels_given_as_a_run_is_refused_naming_the_evidence(data, cli, monkeypatch, parser, as_run, evidence, forced):
    if parser == "arrow":
        pytest.importorskip("pyarrow")
    monkeypatch.setenv("RAGASSAY_PARSER", parser)
    code, out, err = cli("evaluate", data["qrels"], data[as_run])
    assert code == 1 and out == "" and "Traceback" not in err
    assert re.search(r"error: .*: looks like qrels, not a run: " + evidence, err), err
    assert "give it as QRELS" in err and f"--run-format {forced} (evaluate and compare take it; " in err
    # the Python API refuses alike, from the paths
    with pytest.raises(InputError, match="looks like qrels, not a run: " + evidence):
        ragassay.evaluate(data["qrels"], data[as_run])
    # and by blocks of queries
    code, out, err = cli("evaluate", data["qrels"], data[as_run], "--block-queries", "3")
    assert code == 1 and re.search("looks like qrels, not a run: " + evidence, err), err
    # the user's word forces the reading: then it is a run that scores 1.0 against itself
    code, out, err = cli("evaluate", data["qrels"], data[as_run], "--run-format", forced, "-m", "ndcg@10")
    assert code == 0 and re.search(r"^ndcg@10 +1\.0000$", out, re.M), out
    assert read_run(data[as_run], format=forced).to_dict()


def test_trec_qrels_given_as_a_run_names_the_line_and_its_four_columns(data, cli):
    code, _, err = cli("evaluate", data["qrels"], data["qrels"])
    first = data["qrels"].read_text().split("\n")[0]
    assert code == 1
    said = (
        f"{data['qrels']}:1: looks like a qrels file, not a run: its line {first!r} has TREC qrels' four "
        "columns (query, iteration 0, chunk id, integer grade)"
    )
    assert said in err
    code, _, err = cli("evaluate", data["qrels"], data["qrels"], "--block-queries", "2")
    assert code == 1 and said in err
    with pytest.raises(InputError, match="looks like a qrels file, not a run"):
        ragassay.compare(data["qrels"], [data["run"], data["qrels"]])


def test_compare_refuses_a_qrels_file_among_its_runs(data, cli):
    code, _, err = cli("compare", data["qrels"], data["run"], data["q3"])
    assert code == 1 and "q3.tsv" in err and "looks like qrels, not a run" in err


def test_a_real_run_of_three_columns_reads_without_a_word(data, tmp_path, cli):
    rows = [line.split() for line in data["run"].read_text().splitlines()]
    run3 = tmp_path / "run3.tsv"
    run3.write_text("".join(f"{r[0]}\t{r[2]}\t{r[4]}\n" for r in rows))
    code, out, err = cli("evaluate", data["qrels"], run3, "-m", "ndcg@10")
    assert code == 0 and "warning" not in err and "looks like" not in err
    assert read_run(run3).to_dict() == read_run(data["run"]).to_dict()
    # integer scores far above any grade scale (a BM25 times 1000, rounded): a run, silently
    big = tmp_path / "big.tsv"
    big.write_text("".join(f"{r[0]}\t{r[2]}\t{int(float(r[4]) * 1000) + 50}\n" for r in rows))
    code, _, err = cli("evaluate", data["qrels"], big, "-m", "ndcg@10")
    assert code == 0 and "warning" not in err


def test_small_integer_scores_in_ranking_order_warn_and_are_read(tmp_path, cli):
    """A retriever scoring by counts of words matched: small integers, tied, but never rising within
    a query in file order; not sure to be qrels, so a warning and the run is read."""
    run = tmp_path / "counts.tsv"
    run.write_text("q1\tjson.dumps\t3\nq1\tjson.loads\t2\nq1\tjson.dump\t2\nq2\tshlex.split\t1\nq2\tshlex.quote\t0\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 json.dumps 1\nq2 0 shlex.split 1\n")
    code, out, err = cli("evaluate", qrels, run, "-m", "ndcg@10")
    assert code == 0 and re.search(r"^ndcg@10 +1\.0000$", out, re.M)
    assert "warning: " in err and "every value in its third column is a small integer (0 to 3)" in err
    assert err.count("warning: ") == 1  # said once, though the file is looked at twice


@pytest.mark.parametrize(
    "text, evidence",
    [
        (
            "q1\tjson.dumps\t1\nq2\tjson.loads\t1\nq3\tshlex.split\t1\n",  # MS MARCO style: one relevant chunk a query
            "every value in its third column is 1 (3 rows read)",
        ),
        ("qid docid relevance\nq1 json.dumps 2\nq1 json.loads 0\n", "names a grade column ('relevance')"),
        ("query_id\tchunk_id\tgrade\nq1\tjson.dumps\t2\n", "names a grade column ('grade')"),
        (
            "запрос-1\t文档-b\t0\nзапрос-1\t文档-a\t2\nзапрос-1\t文档-c\t2\n",
            "query 'запрос-1': 0 on line 1, then 2 on line 2",
        ),
        ("q1 a -1\nq1 b 4\nq1 c 4\n", r"small integer (-1 to 4)"),
    ],
)
def test_other_qrels_shapes_given_as_a_run(tmp_path, text, evidence):
    p = tmp_path / "labels.tsv"
    p.write_text(text)
    with pytest.raises(InputError, match="looks like qrels, not a run") as e:
        read_run(p)
    assert evidence in str(e.value)
    assert read_qrels(p).to_dict()  # it is read as what it is
    assert len(read_run(p, format="beir" if "query_id" in text or "relevance" in text else "trec3")) >= 1


# ----------------------------------------------------------------------------- a run given as qrels


def test_a_run_given_as_qrels_is_refused_naming_the_evidence(data, tmp_path, cli):
    code, _, err = cli("evaluate", data["run"], data["qrels"])
    assert code == 1 and f"{data['run']}:1: looks like a run file, not qrels" in err
    assert "has a TREC run's columns (query, Q0, chunk id, rank, score, tag)" in err
    rows = [line.split() for line in data["run"].read_text().splitlines()]
    run3 = tmp_path / "run3.tsv"
    run3.write_text("".join(f"{r[0]}\t{r[2]}\t{r[4]}\n" for r in rows))
    for blocks in ([], ["--block-queries", "2"]):
        code, _, err = cli("evaluate", run3, data["run"], *blocks)
        assert code == 1 and f"{run3}:1: looks like a run, not qrels: the line holds the score {rows[0][4]!r}" in err
    with pytest.raises(InputError, match="looks like a run, not qrels"):
        ragassay.evaluate(run3, data["run"])
    with pytest.raises(InputError, match="grade must be an integer"):  # named as qrels: read as qrels
        read_qrels(run3, format="trec3")


def test_json_lines_in_the_wrong_role(data, tmp_path, cli):
    run = tmp_path / "run.jsonl"
    run.write_text(
        "".join(
            json.dumps({"query_id": r[0], "chunk_id": r[2], "score": float(r[4])}) + "\n"
            for r in (line.split() for line in data["run"].read_text().splitlines())
        )
    )
    judged = tmp_path / "judgments.jsonl"  # judge's output: grades, no score
    judged.write_text(
        "".join(
            json.dumps({"query_id": r[0], "chunk_id": r[2], "grade": int(r[3]), "status": "ok"}) + "\n"
            for r in (line.split() for line in data["qrels"].read_text().splitlines())
        )
    )
    code, _, err = cli("evaluate", run, data["run"])
    assert code == 1 and f"{run}:1: looks like a run, not qrels: the line has 'score' and no 'grade'" in err
    code, _, err = cli("evaluate", data["qrels"], judged)
    assert code == 1 and f"{judged}:1: looks like qrels, not a run: the line has 'grade' and no 'score'" in err
    assert ragassay.evaluate(judged, run, ["ndcg@10"]).aggregate["ndcg@10"] > 0  # each in its role: scored


# ----------------------------------------------------------------------------- chunks, queries, questions


def test_questions_answers_and_runs_given_as_chunks(tmp_path, data):
    from ragassay import read_chunks

    chunks = corpus()
    cases = {
        "questions.jsonl": (
            {
                "id": "q1",
                "question": chunks[0]["text"].split(".")[0] + "?",
                "answer": "x",
                "chunk_ids": [chunks[0]["id"]],
                "difficulty": "easy",
            },
            "looks like a question set or queries, not chunks: the line has question, answer, chunk_ids",
        ),
        "answers.jsonl": (
            {"id": "q1", "question": "What?", "reference": "x", "response": "y"},
            "looks like answers to check, not chunks",
        ),
        "run.jsonl": ({"query_id": "q1", "chunk_id": "c1", "score": 1.5}, "looks like a run or judgments, not chunks"),
        "queries.jsonl": ({"query_id": "q1", "query": "what?"}, "looks like a question set or queries, not chunks"),
    }
    for name, (line, said) in nonempty(cases.items()):
        p = tmp_path / name
        p.write_text(json.dumps(line) + "\n")
        with pytest.raises(InputError, match=re.escape(said)) as e:
            read_chunks(p)
        assert e.value.line == 1


def test_chunks_given_as_queries(tmp_path, data, cli):
    from ragassay import read_queries, read_query_items

    with pytest.raises(InputError, match=r"looks like chunks, not queries: the line has 'doc_id' beside 'text'"):
        read_queries(data["chunks"])
    with pytest.raises(InputError, match="looks like chunks, not queries"):
        read_query_items(data["chunks"])
    beir_corpus = tmp_path / "corpus.jsonl"
    beir_corpus.write_text(
        "".join(json.dumps({"_id": c["id"], "title": c["doc_id"], "text": c["text"]}) + "\n" for c in corpus())
    )
    with pytest.raises(InputError, match="the line has 'title' beside 'text'"):
        read_queries(beir_corpus)
    retriever = tmp_path / "search.py"
    retriever.write_text("def search(query):\n    return ['json.dumps']\n")
    code, _, err = cli(
        "retrieve", "--retriever", f"{retriever}:search", "--queries", data["chunks"], "-o", tmp_path / "out.txt"
    )
    assert code == 1 and "looks like chunks, not queries" in err and "--chunks" in err
    # queries in the README's forms still read: {id, text}, {query_id, text}, BEIR's {_id, text, metadata}
    assert list(read_queries(data["queries"]))[:2] == ["q000", "q001"]
    q2 = tmp_path / "q2.jsonl"
    q2.write_text(json.dumps({"_id": "q9", "text": "How is JSON decoded?", "metadata": {}}) + "\n")
    assert read_queries(q2) == {"q9": "How is JSON decoded?"}
