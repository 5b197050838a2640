"""``init`` places files by content: a file of ``{"id", "text"}`` lines is the queries or the chunks
by the ids the folder's runs, qrels and answers use; the field names the readers take
(``query_id``, ``qid``, ``query``, ``_id``) place a file too; when the ids do not tell, the project
file says so as a commented choice, and never offers generation while a queries file is there.
Texts are the standard library's docstrings."""

from __future__ import annotations

import inspect
import json
import re
import shlex
import textwrap
from pathlib import Path

import pytest

from ragassay.cli import main
from ragassay.product.project import loads_toml

FUNCS = [
    textwrap.wrap,
    textwrap.fill,
    textwrap.dedent,
    textwrap.indent,
    textwrap.shorten,
    shlex.split,
    shlex.quote,
    shlex.join,
    json.dumps,
    json.loads,
    json.dump,
    json.load,
]


def chunks(with_doc_id: bool = False) -> list[dict]:
    out = []
    for f in FUNCS:
        row = {"id": f"{f.__module__}.{f.__name__}", "text": inspect.getdoc(f)}
        if with_doc_id:
            row["doc_id"] = f.__module__
        out.append(row)
    return out


def queries(id_field: str = "id", text_field: str = "text") -> list[dict]:
    return [{id_field: f"q{i:03d}", text_field: inspect.getdoc(f).split(".")[0] + "?"} for i, f in enumerate(FUNCS[:6])]


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def trec_run(path: Path, qs: list[dict], cs: list[dict]) -> None:
    path.write_text(
        "".join(
            f"{q.get('id', q.get('query_id'))} Q0 {c['id']} {r} {1.0 / r:.4f} mine\n"
            for q in qs
            for r, c in enumerate(cs[:5], start=1)
        )
    )


def init(folder: Path, capsys) -> tuple[int, str, dict, str]:
    capsys.readouterr()
    code = main(["init", str(folder)])
    out = capsys.readouterr().out
    text = (folder / "ragassay.toml").read_text() if (folder / "ragassay.toml").exists() else ""
    return code, out, loads_toml(text) if text else {}, text


def test_queries_of_id_and_text_beside_a_run_are_the_queries(tmp_path, capsys):
    """The issue's folder: chunks without doc_id, queries as {id, text}, a run naming both."""
    cs, qs = chunks(), queries()
    write(tmp_path / "chunks.jsonl", cs)
    write(tmp_path / "questions.jsonl", qs)  # a name that says nothing: the ids decide
    trec_run(tmp_path / "tfidf.txt", qs, cs)
    code, out, toml, text = init(tmp_path, capsys)
    assert code == 0 and toml["data"] == {"chunks": "chunks.jsonl", "queries": "questions.jsonl"}
    assert "queries by id: their ids hold 100% of the query ids of tfidf.txt" in text
    assert "chunk texts by id: their ids hold 100% of the chunk ids of tfidf.txt" in text
    assert "generates questions" not in text
    capsys.readouterr()
    code = main(["run", str(tmp_path / "ragassay.toml"), "--dry-run"])
    said = capsys.readouterr().out
    assert re.search(r"^generate +skipped: the project has queries", said, re.M), said


def test_answers_place_the_queries_when_there_is_no_run(tmp_path, capsys):
    cs, qs = chunks(), queries()
    write(tmp_path / "a.jsonl", qs)
    write(tmp_path / "b.jsonl", cs)
    write(
        tmp_path / "answers.jsonl",
        [
            {"id": q["id"], "question": q["text"], "reference": "x", "response": "y", "context_ids": [cs[i]["id"]]}
            for i, q in enumerate(qs)
        ],
    )
    code, _, toml, _ = init(tmp_path, capsys)
    assert code == 0 and toml["data"]["queries"] == "a.jsonl" and toml["data"]["chunks"] == "b.jsonl"
    assert toml["data"]["answers"] == "answers.jsonl"


def test_qrels_place_the_chunks(tmp_path, capsys):
    cs, qs = chunks(), queries(id_field="query_id")
    write(tmp_path / "corpus.jsonl", cs)
    write(tmp_path / "topics.jsonl", qs)  # query_id: queries by the field name
    (tmp_path / "labels.qrels").write_text("".join(f"{q['query_id']} 0 {cs[i]['id']} 2\n" for i, q in enumerate(qs)))
    code, out, toml, text = init(tmp_path, capsys)
    assert code == 0 and toml["data"]["chunks"] == "corpus.jsonl" and toml["data"]["queries"] == "topics.jsonl"
    assert "chunk texts by id: their ids hold 100% of the chunk ids of labels.qrels" in text


@pytest.mark.parametrize(
    "row, note",
    [
        ({"query_id": "q1", "text": "How is a string split like a shell does?"}, "queries (query_id)"),
        ({"qid": "q1", "text": "How is a string split like a shell does?"}, "queries (qid)"),
        ({"_id": "q1", "query": "How is a string split like a shell does?"}, "queries (query)"),
    ],
)
def test_the_field_names_the_readers_take_place_queries(tmp_path, capsys, row, note):
    write(tmp_path / "chunks.jsonl", chunks(with_doc_id=True))
    write(tmp_path / "q.jsonl", [row])
    code, out, toml, text = init(tmp_path, capsys)
    assert code == 0 and toml["data"] == {"chunks": "chunks.jsonl", "queries": "q.jsonl"}
    assert note in out and "fit no role" not in out and "generates questions" not in text


def test_when_the_ids_do_not_tell_it_is_a_commented_choice_not_a_guess(tmp_path, capsys):
    write(tmp_path / "one.jsonl", chunks())
    write(tmp_path / "two.jsonl", queries())
    code, out, toml, text = init(tmp_path, capsys)
    assert code == 0 and "chunks" not in toml.get("data", {}) and "queries" not in toml.get("data", {})
    for name in ("one.jsonl", "two.jsonl"):
        for role in ("chunks", "queries"):
            assert re.search(
                rf'^# {role} = "{name}" +# texts by id \(id, text\), as chunks and queries both are', text, re.M
            ), text
    assert "no queries: run generates questions" not in text
    assert "no queries placed: one.jsonl or two.jsonl may hold them (uncomment below)" in text
    assert "cannot tell" in out or "texts by id" in out


def test_integer_ids_on_both_sides_cannot_tell(tmp_path, capsys):
    """MS MARCO-like: query ids and chunk ids are both small integers; a file holding both is not guessed."""
    texts = [{"id": str(i), "text": inspect.getdoc(f)} for i, f in enumerate(FUNCS)]
    write(tmp_path / "texts.jsonl", texts)
    (tmp_path / "run.txt").write_text(
        "".join(f"{q} Q0 {d} {r} {1.0 / r} x\n" for q in range(3) for r, d in enumerate(range(5, 9), start=1))
    )
    code, out, toml, text = init(tmp_path, capsys)
    assert "chunks" not in toml.get("data", {}) and "queries" not in toml.get("data", {})
    assert re.search(r'^# queries = "texts.jsonl" .*cannot tell chunks from queries', text, re.M), text


def test_a_lone_file_of_texts_is_still_the_chunks(tmp_path, capsys):
    write(tmp_path / "docs.jsonl", chunks())
    code, out, toml, text = init(tmp_path, capsys)
    assert code == 0 and toml["data"] == {"chunks": "docs.jsonl"}
    assert "no queries: run generates questions from the chunks" in text
