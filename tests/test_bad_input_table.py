"""The everyday mistakes, one table: an output that is an input, values read as something else,
flags that mean nothing. Every case asserts the exit code, one `ragassay CMD: error:` line naming
the file:line, flag or path, no traceback, and every input byte-identical after the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from ragassay.cli import main

EX = Path(__file__).resolve().parents[1] / "datasets" / "example"
FILES = {"qrels": "qrels.txt", "run": "runs/bm25.txt", "run2": "runs/tfidf.txt", "queries": "queries.jsonl",
         "chunks": "chunks.jsonl", "answers": "answers.jsonl", "human": "answers_human_labels.jsonl",
         "retrievers": "retrievers.py"}


@pytest.fixture
def work(tmp_path, monkeypatch, capsys) -> Path:
    """A copy of the example in a scratch folder (the cases may not touch the real one), plus a
    result, a questions file and a judgments file, and no endpoint in the environment."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    for key, rel in FILES.items():
        (tmp_path / Path(rel).name).write_bytes((EX / rel).read_bytes())
    assert main(["evaluate", "qrels.txt", "bm25.txt", "--format", "json"]) == 0
    (tmp_path / "result.json").write_text(capsys.readouterr().out)
    (tmp_path / "questions.jsonl").write_text(json.dumps({
        "id": "g1", "question": "How long do refunds take?", "answer": "5 days", "difficulty": "easy",
        "chunk_ids": ["refund-01"], "evidence": ["refund"]}) + "\n")
    return tmp_path


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.is_file() and not p.is_symlink() and not p.name.startswith(".")}


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
    (["retrieve", "--retriever", "retrievers.py:tfidf", "--queries", "queries.jsonl", "-o", "OUT"], "-o", "queries.jsonl"),
    (["retrieve", "--retriever", "retrievers.py:tfidf", "--queries", "queries.jsonl", "-o", "OUT"], "-o", "retrievers.py"),
    (JUDGE + ["-o", "OUT"], "-o", "queries.jsonl"),
    (JUDGE + ["-o", "OUT"], "-o", "chunks.jsonl"),
    (JUDGE + ["-o", "OUT"], "-o", "bm25.txt"),
    (JUDGE + ["-o", "j.jsonl", "--keep", "qrels.txt", "--qrels-out", "OUT"], "--qrels-out", "qrels.txt"),
    (JUDGE + ["-o", "j.jsonl", "--qrels-out", "OUT"], "--qrels-out", "bm25.txt"),
    (JUDGE + ["-o", "j.jsonl", "--coverage-out", "OUT"], "--coverage-out", "chunks.jsonl"),
    (["check", "answers.jsonl", "-o", "OUT", *LLM], "-o", "answers.jsonl"),
    (["check", "answers.jsonl", "--chunks", "chunks.jsonl", "-o", "OUT", *LLM], "-o", "chunks.jsonl"),
    (["check", "answers.jsonl", "--run", "bm25.txt", "--qrels", "qrels.txt", "-o", "OUT", *LLM], "-o", "qrels.txt"),
    (["check", "answers.jsonl", "--human", "answers_human_labels.jsonl", "-o", "OUT", *LLM], "-o",
     "answers_human_labels.jsonl"),
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


@pytest.mark.parametrize("argv", [
    JUDGE + ["-o", "x.jsonl", "--qrels-out", "x.jsonl"],
    JUDGE + ["-o", "x.jsonl", "--coverage-out", "./x.jsonl"],
    ["generate", "chunks.jsonl", "-o", "x.jsonl", "--rejects", "x.jsonl", *LLM],
], ids=["judge-o-qrels-out", "judge-o-coverage-out", "generate-o-rejects"])
def test_two_outputs_on_one_file_are_refused(work, capsys, argv):
    code, _, err = run_case(argv, work, capsys)
    assert code == 2 and "are one file: each output needs its own" in error_line(err, argv[0])
    assert not (work / "x.jsonl").exists()
