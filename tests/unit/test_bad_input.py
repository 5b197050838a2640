"""Every command, every file it reads, every kind of bad file: one line naming the file, exit 1.

Never a traceback, never a silently wrong result. The table is the test: a command that reads a
new file gets a row here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import EXAMPLE
from ragassay.cli import main

GOOD = {
    "qrels": EXAMPLE / "qrels.txt",
    "run": EXAMPLE / "runs" / "bm25.txt",
    "run2": EXAMPLE / "runs" / "tfidf.txt",
    "queries": EXAMPLE / "queries.jsonl",
    "chunks": EXAMPLE / "chunks.jsonl",
    "answers": EXAMPLE / "answers.jsonl",
    "human": EXAMPLE / "answers_human_labels.jsonl",
}

BAD = {
    "missing": None,
    "directory": None,
    "binary": b"\x00\x01\x02PK\x03\x04" * 50,
    "not-utf8": b'{"id": "q\xff\xfe1", "text": "caf\xe9"}\n',
    "empty": b"",
    "blank": b"\n  \n",
    "wrong-format": b"this is not a data file at all\nreally not\n",
    "json-wrong-shape": b"[1, 2, 3]\n",
    "json-object-of-another-kind": b'{"something": 1, "other": [2]}\n',
}


def bad_file(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"bad-{kind}.txt"
    if kind == "directory":
        p.mkdir()
    elif kind != "missing":
        p.write_bytes(BAD[kind])
    return p


def commands(tmp_path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (argv with {slot} placeholders, the slots that are input files)."""
    out = str(tmp_path / "out")
    return {
        "evaluate": (["evaluate", "{qrels}", "{run}"], ["qrels", "run"]),
        "compare": (["compare", "{qrels}", "{run}", "{run2}"], ["qrels", "run", "run2"]),
        "agree": (["agree", "{qrels}", "{qrels2}"], ["qrels", "qrels2"]),
        "retrieve": (
            [
                "retrieve",
                "--retriever",
                f"{EXAMPLE / 'retrievers.py'}:tfidf",
                "--queries",
                "{queries}",
                "-o",
                out + ".run",
            ],
            ["queries"],
        ),
        "judge": (
            [
                "judge",
                "--queries",
                "{queries}",
                "--chunks",
                "{chunks}",
                "--run",
                "{run}",
                "--keep",
                "{qrels}",
                "-o",
                out + ".jsonl",
                "--dry-run",
            ],
            ["queries", "chunks", "run", "qrels"],
        ),
        "check": (
            [
                "check",
                "{answers}",
                "--chunks",
                "{chunks}",
                "--run",
                "{run}",
                "--qrels",
                "{qrels}",
                "--human",
                "{human}",
                "-o",
                out + ".checks",
                "--dry-run",
            ],
            ["answers", "chunks", "run", "qrels", "human"],
        ),
        "generate": (["generate", "{chunks}", "-o", out + ".q", "--dry-run"], ["chunks"]),
        "remap": (["remap", "{questions}", "{chunks}", "-o", out + ".qrels"], ["questions", "chunks"]),
        "report": (["report", "{result}", "-o", out + ".html"], ["result"]),
        "report-runs": (
            [
                "report",
                "--qrels",
                "{qrels}",
                "--run",
                "{run}",
                "--chunks",
                "{chunks}",
                "-o",
                out + ".md",
                "--format",
                "markdown",
            ],
            ["qrels", "run", "chunks"],
        ),
        "track": (["track", "{result}", "--db", str(tmp_path / "h.sqlite")], ["result"]),
        "gate": (["gate", "{result}", "--min", "ndcg@10=0.1"], ["result"]),
    }


CASES = [(cmd, slot, kind) for cmd, (_, slots) in commands(Path("/tmp")).items() for slot in slots for kind in BAD]


@pytest.fixture(scope="module")
def goods(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("goods")
    result = d / "result.json"
    questions = d / "questions.jsonl"
    questions.write_text(
        '{"id": "g1", "question": "How long do refunds take?", "answer": "5 days", '
        '"difficulty": "easy", "chunk_ids": ["refund-01"], "evidence": ["refund"]}\n'
    )
    return {**GOOD, "qrels2": EXAMPLE / "qrels_second_assessor.txt", "result": result, "questions": questions}


@pytest.mark.parametrize("cmd,slot,kind", CASES, ids=[f"{c}-{s}-{k}" for c, s, k in CASES])
def test_bad_file_is_one_clear_line(cmd, slot, kind, tmp_path, goods, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    if not goods["result"].exists():
        capsys.readouterr()
        assert main(["evaluate", str(GOOD["qrels"]), str(GOOD["run"]), "--format", "json"]) == 0
        goods["result"].write_text(capsys.readouterr().out)
    argv, _ = commands(tmp_path)[cmd]
    bad = bad_file(tmp_path, kind)
    args = [str(bad) if a == f"{{{slot}}}" else a for a in argv]
    args = [str(goods[a[1:-1]]) if a.startswith("{") else a for a in args]
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    assert code == 1, (code, err)
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith("note:")]
    assert len(lines) == 1, err
    assert str(bad) in lines[0], err
    assert lines[0].startswith(f"ragassay {argv[0]}: error: ")
