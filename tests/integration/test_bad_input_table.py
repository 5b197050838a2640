"""The everyday mistakes, one table: an output that is an input, values read as something else,
flags that mean nothing. Every case asserts the exit code, one `ragassay CMD: error:` line naming
the file:line, flag or path, no traceback, and every input byte-identical after the run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from helpers import EXAMPLE
from ragassay.cli import main

FILES = {
    "qrels": "qrels.txt",
    "run": "runs/bm25.txt",
    "run2": "runs/tfidf.txt",
    "queries": "queries.jsonl",
    "chunks": "chunks.jsonl",
    "answers": "answers.jsonl",
    "human": "answers_human_labels.jsonl",
    "retrievers": "retrievers.py",
}


@pytest.fixture
def work(tmp_path, monkeypatch, capsys) -> Path:
    """A copy of the example in a scratch folder (the cases may not touch the real one), plus a
    result, a questions file and a judgments file, and no endpoint in the environment."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    for rel in FILES.values():
        (tmp_path / Path(rel).name).write_bytes((EXAMPLE / rel).read_bytes())
    assert main(["evaluate", "qrels.txt", "bm25.txt", "--format", "json"]) == 0
    (tmp_path / "result.json").write_text(capsys.readouterr().out)
    (tmp_path / "questions.jsonl").write_text(
        json.dumps(
            {
                "id": "g1",
                "question": "How long do refunds take?",
                "answer": "5 days",
                "difficulty": "easy",
                "chunk_ids": ["refund-01"],
                "evidence": ["refund"],
            }
        )
        + "\n"
    )
    return tmp_path


def digests(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.is_symlink() and not p.name.startswith(".")
    }


def run_case(argv: list[str], folder: Path, capsys) -> tuple[int, str, str]:
    before = digests(folder)
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    after = digests(folder)
    changed = [n for n in before if before[n] != after.get(n)]
    assert not changed, f"inputs changed: {changed}"
    assert "Traceback" not in captured.err + captured.out
    return code, captured.out, captured.err


def error_line(err: str, command: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.startswith(f"ragassay {command}: error: ")]
    assert len(lines) == 1, err
    return lines[0]


# ------------------------------------------------------------------------ outputs that are inputs

LLM = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
JUDGE = ["judge", "--queries", "queries.jsonl", "--chunks", "chunks.jsonl", "--run", "bm25.txt", *LLM]
CLASHES = [  # (command line with OUT where the clashing output goes, the output's flag, the input it clashes with)
    (
        ["retrieve", "--retriever", "retrievers.py:tfidf", "--queries", "queries.jsonl", "-o", "OUT"],
        "-o",
        "queries.jsonl",
    ),
    (
        ["retrieve", "--retriever", "retrievers.py:tfidf", "--queries", "queries.jsonl", "-o", "OUT"],
        "-o",
        "retrievers.py",
    ),
    (JUDGE + ["-o", "OUT"], "-o", "queries.jsonl"),
    (JUDGE + ["-o", "OUT"], "-o", "chunks.jsonl"),
    (JUDGE + ["-o", "OUT"], "-o", "bm25.txt"),
    (JUDGE + ["-o", "j.jsonl", "--keep", "qrels.txt", "--qrels-out", "OUT"], "--qrels-out", "qrels.txt"),
    (JUDGE + ["-o", "j.jsonl", "--qrels-out", "OUT"], "--qrels-out", "bm25.txt"),
    (JUDGE + ["-o", "j.jsonl", "--coverage-out", "OUT"], "--coverage-out", "chunks.jsonl"),
    (["check", "answers.jsonl", "-o", "OUT", *LLM], "-o", "answers.jsonl"),
    (["check", "answers.jsonl", "--chunks", "chunks.jsonl", "-o", "OUT", *LLM], "-o", "chunks.jsonl"),
    (["check", "answers.jsonl", "--run", "bm25.txt", "--qrels", "qrels.txt", "-o", "OUT", *LLM], "-o", "qrels.txt"),
    (
        ["check", "answers.jsonl", "--human", "answers_human_labels.jsonl", "-o", "OUT", *LLM],
        "-o",
        "answers_human_labels.jsonl",
    ),
    (["generate", "chunks.jsonl", "-o", "OUT", *LLM], "-o", "chunks.jsonl"),
    (["generate", "chunks.jsonl", "-o", "q.jsonl", "--qrels-out", "OUT", *LLM], "--qrels-out", "chunks.jsonl"),
    (["generate", "chunks.jsonl", "-o", "q.jsonl", "--rejects", "OUT", *LLM], "--rejects", "chunks.jsonl"),
    (["remap", "questions.jsonl", "chunks.jsonl", "-o", "OUT"], "-o", "questions.jsonl"),
    (["remap", "questions.jsonl", "chunks.jsonl", "-o", "OUT"], "-o", "chunks.jsonl"),
    (["report", "result.json", "-o", "OUT"], "-o", "result.json"),
    (["report", "--qrels", "qrels.txt", "--run", "bm25.txt", "-o", "OUT"], "-o", "bm25.txt"),
    (["merge", "result.json", "answers.jsonl", "-o", "OUT"], "-o", "answers.jsonl"),
    (["track", "result.json", "--db", "OUT"], "--db", "result.json"),
]
HOW = ("same path", "another spelling", "symlink", "hard link")


def clash_cases():
    for argv, flag, target in CLASHES:
        for how in HOW:
            yield pytest.param(argv, flag, target, how, id=f"{argv[0]}-{flag}-{target}-{how.replace(' ', '-')}")


@pytest.mark.parametrize("argv,flag,target,how", list(clash_cases()))
def test_an_output_that_is_an_input_is_refused_before_anything_is_written(work, capsys, argv, flag, target, how):
    if how == "same path":
        out = target
    elif how == "another spelling":
        out = f"./{target}"
    elif how == "symlink":
        (work / "alias").symlink_to(target)
        out = "alias"
    else:
        os.link(work / target, work / "twin")
        out = "twin"
    code, _, err = run_case([out if a == "OUT" else a for a in argv], work, capsys)
    line = error_line(err, argv[0])
    assert code == 2 and f"{flag} {out} is also the input" in line and target in line, err


@pytest.mark.parametrize(
    "argv",
    [
        JUDGE + ["-o", "x.jsonl", "--qrels-out", "x.jsonl"],
        JUDGE + ["-o", "x.jsonl", "--coverage-out", "./x.jsonl"],
        ["generate", "chunks.jsonl", "-o", "x.jsonl", "--rejects", "x.jsonl", *LLM],
    ],
    ids=["judge-o-qrels-out", "judge-o-coverage-out", "generate-o-rejects"],
)
def test_two_outputs_on_one_file_are_refused(work, capsys, argv):
    code, _, err = run_case(argv, work, capsys)
    assert code == 2 and "are one file: each output needs its own" in error_line(err, argv[0])
    assert not (work / "x.jsonl").exists()


# ------------------------------------------------------------------------------------ values


def jl(*objs) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


BAD_QRELS = {  # name -> (file bytes, what the error line must say)
    "jsonl-grade-null": (jl({"query_id": "q01", "chunk_id": "c1", "grade": None}), ":1: grade is null"),
    "jsonl-grade-exponent": (
        b'{"query_id": "q01", "chunk_id": "c1", "grade": 1e2}\n',
        ":1: grade must be an integer, got 1e2",
    ),
    "jsonl-grade-fraction": (
        b'{"query_id": "q01", "chunk_id": "c1", "grade": 2.5}\n',
        ":1: grade must be an integer, got 2.5",
    ),
    "jsonl-grade-bool": (
        jl({"query_id": "q01", "chunk_id": "c1", "grade": True}),
        ":1: grade must be an integer, got true",
    ),
    "jsonl-grade-string": (
        jl({"query_id": "q01", "chunk_id": "c1", "grade": "2"}),
        ':1: grade must be an integer, got "2"',
    ),
    "jsonl-id-null": (jl({"query_id": None, "chunk_id": "c1", "grade": 1}), ":1: query id must be a string, got null"),
    "jsonl-id-true": (jl({"query_id": True, "chunk_id": "c1", "grade": 1}), ":1: query id must be a string, got true"),
    "jsonl-id-list": (
        jl({"query_id": ["q02"], "chunk_id": "c1", "grade": 1}),
        ':1: query id must be a string, got ["q02"]',
    ),
    "jsonl-chunk-object": (
        jl({"query_id": "q01", "chunk_id": {"a": 1}, "grade": 1}),
        ':1: chunk id must be a string, got {"a": 1}',
    ),
    "jsonl-id-float": (jl({"query_id": 1.5, "chunk_id": "c1", "grade": 1}), ":1: query id must be a string, got 1.5"),
    "trec-grade-exponent": (b"q01 0 c1 1\nq01 0 c2 1e2\n", ":2: grade must be an integer, got '1e2'"),
    "trec-grade-fraction": (b"q01 0 c1 2.5\n", ":1: grade must be an integer, got '2.5'"),
    "trec-grade-word": (b"q01 0 c1 high\n", ":1: grade must be an integer, got 'high'"),
    "trec-grade-underscore": (b"q01 0 c1 1\nq01 0 c2 1_0\n", ":2: grade must be an integer, got '1_0'"),
    "trec-cr-only": (b"q01 0 c1 1\rq01 0 c2 0\r", ":1: has lines ended by a lone carriage return"),
    "trec-cr-mixed": (b"q01 0 c1 1\nq01 0 c2 0\rq01 0 c3 1\n", ":2: has lines ended by a lone carriage return"),
    "gzip-corrupt": (b"\x1f\x8b\x08\x00broken", "looks gzipped but cannot be decompressed"),
}
QRELS_COMMANDS = {
    "evaluate": ["evaluate", "BAD", "bm25.txt"],
    "compare": ["compare", "BAD", "bm25.txt", "tfidf.txt"],
    "agree-reference": ["agree", "BAD", "qrels.txt"],
    "agree-candidate": ["agree", "qrels.txt", "BAD"],
    "judge-keep": JUDGE + ["-o", "j.jsonl", "--keep", "BAD", "--dry-run"],
    "check-qrels": [
        "check",
        "answers.jsonl",
        "--chunks",
        "chunks.jsonl",
        "--run",
        "bm25.txt",
        "--qrels",
        "BAD",
        "-o",
        "c.jsonl",
        "--dry-run",
        *LLM,
    ],
    "report-qrels": ["report", "--qrels", "BAD", "--run", "bm25.txt", "-o", "r.html"],
}


@pytest.mark.parametrize("bad", list(BAD_QRELS))
@pytest.mark.parametrize("command", list(QRELS_COMMANDS))
def test_qrels_values_are_read_strictly_by_every_command(work, capsys, command, bad):
    data, says = BAD_QRELS[bad]
    (work / "bad.qrels").write_bytes(data)
    argv = ["bad.qrels" if a == "BAD" else a for a in QRELS_COMMANDS[command]]
    code, _, err = run_case(argv, work, capsys)
    line = error_line(err, argv[0])
    assert code == 1 and "bad.qrels" in line and says in line, err


BAD_RUNS = {
    "jsonl-id-null": (
        jl({"query_id": None, "chunk_id": "c1", "score": 1.0}),
        ":1: query id must be a string, got null",
    ),
    "jsonl-id-true": (
        jl({"query_id": "q01", "chunk_id": True, "score": 1.0}),
        ":1: chunk id must be a string, got true",
    ),
    "jsonl-id-list": (
        jl({"query_id": ["q01"], "chunk_id": "c1", "score": 1.0}),
        ':1: query id must be a string, got ["q01"]',
    ),
    "trec-cr-only": (b"q01 Q0 c1 1 2.0 r\rq01 Q0 c2 2 1.0 r\r", ":1: has lines ended by a lone carriage return"),
    "trec-score-underscore": (b"q01 Q0 c1 1 1_000 r\n", ":1: score is not a number: '1_000'"),
    "trec-score-nan": (b"q01 Q0 c1 1 nan r\n", ":1: score must be finite, got 'nan'"),
    "jsonl-score-string": (
        jl({"query_id": "q01", "chunk_id": "c1", "score": "0.9"}),
        ":1: score must be a finite number",
    ),
}
RUN_COMMANDS = {
    "evaluate": ["evaluate", "qrels.txt", "BAD"],
    "compare": ["compare", "qrels.txt", "bm25.txt", "BAD"],
    "judge": JUDGE[:5] + ["--run", "BAD", *LLM, "-o", "j.jsonl", "--dry-run"],
    "check": [
        "check",
        "answers.jsonl",
        "--chunks",
        "chunks.jsonl",
        "--run",
        "BAD",
        "--qrels",
        "qrels.txt",
        "-o",
        "c.jsonl",
        "--dry-run",
        *LLM,
    ],
    "report": ["report", "--qrels", "qrels.txt", "--run", "BAD", "-o", "r.html"],
}


@pytest.mark.parametrize("bad", list(BAD_RUNS))
@pytest.mark.parametrize("command", list(RUN_COMMANDS))
def test_run_values_are_read_strictly_by_every_command(work, capsys, command, bad):
    data, says = BAD_RUNS[bad]
    (work / "bad.run").write_bytes(data)
    argv = ["bad.run" if a == "BAD" else a for a in RUN_COMMANDS[command]]
    code, _, err = run_case(argv, work, capsys)
    line = error_line(err, argv[0])
    assert code == 1 and "bad.run" in line and says in line, err


BAD_RECORDS = {  # (file name in the command, bytes, what the line must say)
    "chunk-id-null": ("chunks", jl({"id": None, "text": "x"}), ":1: id"),
    "chunk-id-true": ("chunks", jl({"id": True, "text": "x"}), ":1: id"),
    "chunk-id-list": ("chunks", jl({"id": ["a"], "text": "x"}), ":1: id"),
    "query-id-null": ("queries", jl({"id": None, "question": "x?"}), ":1: query id must be a string, got null"),
    "query-id-true": ("queries", jl({"id": True, "question": "x?"}), ":1: query id must be a string, got true"),
    "query-id-object": (
        "queries",
        jl({"id": {"q": 1}, "question": "x?"}),
        ':1: query id must be a string, got {"q": 1}',
    ),
    "answer-id-null": ("answers", jl({"id": None, "question": "q", "reference": "r", "response": "x"}), ":1: id"),
    "answer-reference-empty": (
        "answers",
        jl({"id": "a", "question": "q", "reference": "", "response": "x"}),
        ":1: reference",
    ),
    "answer-reference-blank-list": (
        "answers",
        jl({"id": "a", "question": "q", "reference": ["r", " "], "response": "x"}),
        ":1: reference",
    ),
    "answer-reference-empty-list": (
        "answers",
        jl({"id": "a", "question": "q", "reference": [], "response": "x"}),
        ":1: reference",
    ),
    "answers-cr-only": (
        "answers",
        b'{"id": "a", "question": "q", "reference": "r", "response": "x"}\r'
        b'{"id": "b", "question": "q", "reference": "r", "response": "x"}\r',
        ":1: has lines ended by a lone carriage return",
    ),
}
RECORD_COMMANDS = {
    "chunks": [
        (JUDGE[:3] + ["--chunks", "BAD", "--run", "bm25.txt", *LLM, "-o", "j.jsonl", "--dry-run"]),
        ["generate", "BAD", "-o", "q.jsonl", "--dry-run", *LLM],
        ["check", "answers.jsonl", "--chunks", "BAD", "-o", "c.jsonl", "--dry-run", *LLM],
        ["remap", "questions.jsonl", "BAD", "-o", "new.qrels"],
    ],
    "queries": [
        JUDGE[:1]
        + ["--queries", "BAD", "--chunks", "chunks.jsonl", "--run", "bm25.txt", *LLM, "-o", "j.jsonl", "--dry-run"],
        ["retrieve", "--retriever", "retrievers.py:tfidf", "--queries", "BAD", "-o", "r.run"],
    ],
    "answers": [
        ["check", "BAD", "-o", "c.jsonl", "--dry-run", *LLM],
        ["report", "--answers", "BAD", "--qrels", "qrels.txt", "--run", "bm25.txt", "-o", "r.html"],
    ],
}


def record_cases():
    for bad, (role, _, _) in BAD_RECORDS.items():
        for argv in RECORD_COMMANDS[role]:
            yield pytest.param(bad, argv, id=f"{bad}-{argv[0]}")


@pytest.mark.parametrize("bad,argv", list(record_cases()))
def test_record_values_are_read_strictly_by_every_command(work, capsys, bad, argv):
    _, data, says = BAD_RECORDS[bad]
    (work / "bad.jsonl").write_bytes(data)
    argv = ["bad.jsonl" if a == "BAD" else a for a in argv]
    code, _, err = run_case(argv, work, capsys)
    line = error_line(err, argv[0])
    assert code == 1 and "bad.jsonl" in line and says in line, err


# ------------------------------------------------------------------------------------- flags


def test_every_numeric_flag_of_every_command_takes_a_type_from_the_one_table():
    """A flag typed plain int or float would accept 0, -3, nan or inf where they mean nothing."""
    import argparse

    from ragassay.cli import build_parser
    from ragassay.cli.values import TYPES

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    typed = []
    for name, p in sub.choices.items():
        for action in p._actions:
            if action.type in (int, float):
                raise AssertionError(f"{name} {action.option_strings}: plain {action.type.__name__}; use cli/values.py")
            if action.type in TYPES:
                typed.append((name, action.dest))
    assert len(typed) >= 40


GEN = ["generate", "chunks.jsonl", "-o", "q.jsonl", "--dry-run", *LLM]
CHECK = ["check", "answers.jsonl", "--chunks", "chunks.jsonl", "-o", "c.jsonl", "--dry-run", *LLM]
CMP = ["compare", "qrels.txt", "bm25.txt", "tfidf.txt"]
DRY_JUDGE = JUDGE + ["-o", "j.jsonl", "--dry-run"]
FLAG_CASES = [  # (command, flag, bad values)
    (CMP, "--permutations", ["0", "-1", "1.5", "x", "100000000"]),
    (CMP, "--bootstrap", ["0", "-5", "nan", "999999999999999999999"]),
    (CMP, "--confidence", ["0", "1", "1.5", "-0.1", "nan", "inf"]),
    (CMP, "--seed", ["-1", "0.5"]),
    (["evaluate", "qrels.txt", "bm25.txt"], "--relevance-level", ["1.5", "x"]),
    (DRY_JUDGE, "--depth", ["0", "-3", "2.5"]),
    (DRY_JUDGE, "--samples", ["0", "-1"]),
    (DRY_JUDGE, "--batch", ["0"]),
    (DRY_JUDGE, "--max-chunk-chars", ["0", "-100"]),
    (DRY_JUDGE, "--seed", ["-1"]),
    (DRY_JUDGE, "--timeout", ["0", "-1", "nan", "inf"]),
    (DRY_JUDGE, "--concurrency", ["0", "-2"]),
    (DRY_JUDGE, "--rpm", ["0", "-60", "nan"]),
    (DRY_JUDGE, "--tpm", ["0", "inf"]),
    (DRY_JUDGE, "--price-in", ["-1", "nan", "inf"]),
    (DRY_JUDGE, "--price-out", ["-0.5"]),
    (DRY_JUDGE, "--poll-seconds", ["-1", "nan"]),
    (CHECK, "-k", ["0", "-3"]),
    (CHECK, "--retrieval-threshold", ["2", "-0.1", "nan"]),
    (CHECK, "--samples", ["0"]),
    (CHECK, "--max-response-chars", ["0"]),
    (CHECK, "--max-context-chars", ["-1"]),
    (GEN, "--limit", ["0", "-1"]),
    (GEN, "--per-chunk", ["0", "-1", "nan"]),
    (GEN, "--max-per-doc", ["0"]),
    (GEN, "--mix", ["easy=2", "easy=0.5,hard=0.4", "easy=-1,medium=2", "easy=x", "expert=1", "easy=0.5,easy=0.5"]),
    (["remap", "questions.jsonl", "chunks.jsonl", "-o", "new.qrels"], "--threshold", ["0", "101", "nan"]),
    (
        ["retrieve", "--retriever", "retrievers.py:tfidf", "--queries", "queries.jsonl", "-o", "r.run"],
        "-k",
        ["0", "-3"],
    ),
    (["gate", "result.json"], "--min", ["ndcg@10=nan", "ndcg@10=inf", "ndcg@10=x", "ndcg@10"]),
    (["gate", "result.json", "--min", "ndcg@10=0.1"], "--allow-errors", ["-1"]),
    (["agree", "qrels.txt", "qrels.txt"], "--runs", ["bm25.txt"]),
    (CHECK, "--by", ["no_such_field"]),
    (DRY_JUDGE, "--shard", ["0/2", "3/2", "1/0", "x"]),
]


def flag_cases():
    for argv, flag, values in FLAG_CASES:
        for value in values:
            yield pytest.param(argv, flag, value, id=f"{argv[0]}-{flag}-{value}")


@pytest.mark.parametrize("argv,flag,value", list(flag_cases()))
def test_a_flag_value_that_means_nothing_is_a_usage_error_naming_the_flag(work, capsys, argv, flag, value):
    code, out, err = run_case([*argv, flag, value], work, capsys)
    line = error_line(err, argv[0])
    assert code == 2 and flag in line, err
    assert not out.strip()  # nothing computed, nothing printed as a result


# ------------------------------------------------------------------------------------- merge

JUDGMENT = {"query_id": "q1", "chunk_id": "c1", "grade": 2, "status": "ok", "error": None, "key": "k1"}
CHECK_RECORD = {"id": "a1", "label": "correct", "status": "ok", "error": None, "key": "k2"}
MERGE_CASES = {
    "judgments-and-checks": ([JUDGMENT], [CHECK_RECORD], "a check record, but"),
    "checks-and-judgments": ([CHECK_RECORD], [JUDGMENT], "a judgment record, but"),
    "grade-7": ([JUDGMENT], [{**JUDGMENT, "key": "k9", "grade": 7}], "breaks the judgment record contract: grade"),
    "grade-negative": ([{**JUDGMENT, "grade": -1}], [JUDGMENT], "breaks the judgment record contract: grade"),
    "ok-without-grade": ([JUDGMENT], [{**JUDGMENT, "key": "k8", "grade": None}], "breaks the judgment record contract"),
    "label-unknown": (
        [CHECK_RECORD],
        [{**CHECK_RECORD, "key": "k7", "label": "mostly right"}],
        "breaks the check record contract: label",
    ),
    "not-a-record": ([JUDGMENT], [{"something": 1}], "not a record of a ragassay stage"),
}


@pytest.mark.parametrize("case", list(MERGE_CASES))
def test_merge_refuses_mixed_kinds_and_records_that_break_their_contract(work, capsys, case):
    first, second, says = MERGE_CASES[case]
    (work / "a.jsonl").write_bytes(jl(*first))
    (work / "b.jsonl").write_bytes(jl(*second))
    code, _, err = run_case(["merge", "a.jsonl", "b.jsonl", "-o", "m.jsonl"], work, capsys)
    line = error_line(err, "merge")
    assert code == 1 and says in line and ("a.jsonl:1" in line or "b.jsonl:1" in line), err
    assert not (work / "m.jsonl").exists()


# ----------------------------------------------------------------------------------- storage


def _foreign_db(path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE customers (name TEXT)")
    db.execute("INSERT INTO customers VALUES ('Ada')")
    db.commit()
    db.close()


STORAGE = {
    "broken": (lambda p: p.write_bytes(b"this is not a database\n" * 10), "not an SQLite database"),
    "foreign": (_foreign_db, "an SQLite database of something else (its tables: customers)"),
    "directory": (lambda p: p.mkdir(), "is a directory"),
}
STORAGE_COMMANDS = {
    "track": ["track", "result.json", "--db", "STORE"],
    "history": ["history", "--db", "STORE"],
    "check-cache": ["check", "answers.jsonl", "--chunks", "chunks.jsonl", "-o", "c.jsonl", "--cache", "STORE", *LLM],
    "judge-cache": JUDGE + ["-o", "j.jsonl", "--cache", "STORE"],
}


@pytest.mark.parametrize("store", list(STORAGE))
@pytest.mark.parametrize("command", list(STORAGE_COMMANDS))
def test_a_broken_or_foreign_database_is_one_line_and_left_untouched(work, capsys, command, store):
    make, says = STORAGE[store]
    path = work / "store.sqlite"
    make(path)
    argv = [str(path) if a == "STORE" else a for a in STORAGE_COMMANDS[command]]
    before = path.read_bytes() if path.is_file() else None
    code, _, err = run_case(argv, work, capsys)
    line = error_line(err, argv[0])
    written = "--db" in argv and argv[0] == "track"  # --cache is no output the command locks: read at open
    expected = 2 if store == "directory" and written else 1  # a directory where a file is written: usage
    assert code == expected and "store.sqlite" in line and says in line, err
    assert (path.read_bytes() if path.is_file() else None) == before


# -------------------------------------------------------------------------------- endpoints

ENDPOINT_COMMANDS = {
    "judge": JUDGE[:7] + ["--depth", "1", "-o", "j.jsonl", "--model", "m", "--no-cache", "--quiet"],
    "check": [
        "check",
        "answers.jsonl",
        "--chunks",
        "chunks.jsonl",
        "-o",
        "c.jsonl",
        "--model",
        "m",
        "--no-cache",
        "--quiet",
    ],
    "generate": ["generate", "chunks.jsonl", "-o", "q.jsonl", "--limit", "2", "--model", "m", "--no-cache", "--quiet"],
    "ping": ["ping", "--model", "m"],
}
REPLY_SHAPES = {
    "html": ("text/html", b"<html><body>It works!</body></html>", "an HTML page"),
    "plain-text": ("text/plain", b"Service Unavailable", "plain text ('Service Unavailable')"),
    "empty-body": ("text/plain", b"", "an empty body"),
    "json-type-empty-body": ("application/json", b"", "a body that is not JSON"),
    "json-type-not-json": ("application/json", b"<html>oops</html>", "a body that is not JSON"),
    "json-array": ("application/json", b"[]", "JSON without a 'choices' list"),
    "json-error-shape": ("application/json", b'{"detail": "Not Found"}', "JSON without a 'choices' list"),
}


@pytest.mark.parametrize("shape", list(REPLY_SHAPES))
@pytest.mark.parametrize("command", list(ENDPOINT_COMMANDS))
def test_an_endpoint_that_is_not_the_api_is_one_line_naming_it(work, capsys, command, shape):
    from test_replies import Replying

    content_type, body, what = REPLY_SHAPES[shape]
    with Replying(content_type, body) as server:
        code, out, err = run_case(ENDPOINT_COMMANDS[command] + ["--base-url", server.url], work, capsys)
    line = error_line(err, command)
    assert code == 1 and f"the endpoint at {server.url} answered" in line and what in line, err
