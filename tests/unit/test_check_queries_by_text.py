"""The step-by-step chain's way out when answers and the run's queries go by different ids (a000 vs
q000, the same questions): `check --queries` matches them by question text, counted and said; without
it the error names the flag (issue 45, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragassay.cli import main
from real_corpus import write_corpus


@pytest.fixture
def chain(tmp_path: Path):
    chunks, queries = write_corpus(tmp_path, chunks=60, queries=8)
    run = tmp_path / "run.txt"
    run.write_text(
        "".join(f"{q['id']} Q0 {c['id']} {i + 1} {10 - i} r\n" for q in queries for i, c in enumerate(chunks[:3]))
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q['id']} 0 {chunks[0]['id']} 3\n" for q in queries))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"id": f"a{i:03d}", "question": q["text"].upper() + "  ", "reference": "yes", "response": "yes"})
            + "\n"
            for i, q in enumerate(queries)
        )
    )
    return tmp_path, run, qrels, answers, len(queries)


def check(tmp_path: Path, answers: Path, run: Path, qrels: Path, *more: str) -> list:
    return [
        "check",
        str(answers),
        "--run",
        str(run),
        "--qrels",
        str(qrels),
        "-o",
        str(tmp_path / "c.jsonl"),
        "--format",
        "json",
        *more,
    ]


def test_answers_under_other_ids_meet_the_run_by_question_text_with_queries(chain, capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    tmp_path, run, qrels, answers, n = chain
    assert main(check(tmp_path, answers, run, qrels)) == 1
    err = capsys.readouterr().err
    assert "give the queries (--queries FILE" in err
    assert main(check(tmp_path, answers, run, qrels, "--queries", str(tmp_path / "queries.jsonl"))) == 0
    out = capsys.readouterr()
    assert (
        f"warning: the answers met the queries by question text, not by id: {n} of {n} matched; ids differ "
        "(a000 ↔ q000)" in out.err
    )
    d = json.loads(out.out)
    assert n >= 5 and d["diagnosis"]["diagnosed"] == n  # every answer met its query's recall


def test_with_ids_that_meet_the_queries_change_nothing(chain, capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    tmp_path, run, qrels, answers, n = chain
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    answers.write_text("".join(json.dumps({**r, "id": f"q{int(r['id'][1:]):03d}"}) + "\n" for r in rows))
    assert main(check(tmp_path, answers, run, qrels, "--queries", str(tmp_path / "queries.jsonl"))) == 0
    out = capsys.readouterr()
    assert "by question text" not in out.err and json.loads(out.out)["diagnosis"]["diagnosed"] == n
