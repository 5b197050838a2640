"""No id is ever invented: a chunk without an ``id`` is an error naming its line(s), never its
``doc_id`` taken as one; an ir_datasets docs export (every line ``doc_id``, no ``id`` anywhere,
doc_ids unique) keeps its declared ids. And the frictions of the same readers: every bad line
said, in file order, up to a cap; a line named once; the fields that would do listed; integers
taken as chunk ids said with counts. Texts are the standard library's docstrings."""

from __future__ import annotations

import inspect
import json
import re
import textwrap

import pytest

from ragassay import read_chunks, read_queries
from ragassay.cli import main
from ragassay.data import lines as io
from ragassay.data.chunk_table import chunk_source
from ragassay.errors import InputError

DOCS = [("textwrap", f) for f in (textwrap.wrap, textwrap.fill, textwrap.dedent, textwrap.indent, textwrap.shorten)] + [
    ("json", f) for f in (json.dumps, json.loads)
]


def doc(f) -> str:
    return inspect.getdoc(f)


def write(path, rows) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return str(path)


@pytest.fixture(params=["whole", "table"])
def reader(request, monkeypatch):
    """The two chunk readers: read_chunks, and the ChunkTable a large file gets."""
    if request.param == "whole":
        return lambda p: {c.id: c for c in read_chunks(p)}
    monkeypatch.setattr(io, "STREAM_FROM", 0)  # every file is "large": the table reads it
    return lambda p: dict(chunk_source(p).items())


def test_two_chunks_of_one_document_without_ids_name_their_lines_not_a_made_up_id(tmp_path, reader):
    p = write(tmp_path / "c.jsonl", [{"doc_id": d, "text": doc(f)} for d, f in DOCS])
    with pytest.raises(InputError) as e:
        reader(p)
    said = str(e.value)
    assert "appears twice" not in said
    assert said == (
        f"{p}: 7 lines have no 'id' (no line has one, and doc_id 'textwrap' is on 5 lines (first 1 and "
        "2): a doc_id names the document the chunks were cut from, shared by its chunks, not a chunk); give "
        "each chunk an 'id' (or BEIR's '_id'): lines 1, 2, 3, 4, 5, 6, 7"
    )
    assert e.value.line == 1


def test_a_chunk_missing_its_id_among_chunks_with_ids_is_named(tmp_path, reader):
    rows = [{"id": f"{d}-{i}", "doc_id": d, "text": doc(f)} for i, (d, f) in enumerate(DOCS)]
    rows[3] = {"doc_id": "textwrap", "text": doc(textwrap.indent)}  # its id forgotten
    p = write(tmp_path / "c.jsonl", rows)
    with pytest.raises(InputError) as e:
        reader(p)
    assert str(e.value) == (
        f"{p}:4: no 'id': its doc_id 'textwrap' names the document the chunk comes from, not the "
        "chunk (other lines have an 'id'); give this chunk an 'id'"
    )
    rows[3] = {"text": doc(textwrap.indent)}  # no id, no doc_id
    with pytest.raises(InputError, match=r":4: no 'id' \(a chunk needs one: 'id', or BEIR's '_id'; its fields: text\)"):
        reader(write(tmp_path / "c2.jsonl", rows))


def test_an_ir_datasets_docs_export_keeps_its_declared_ids(tmp_path, reader):
    rows = [{"doc_id": f"{d}.{f.__name__}", "title": f.__name__, "text": doc(f)} for d, f in DOCS]
    chunks = reader(write(tmp_path / "docs.jsonl", rows))
    assert sorted(chunks) == sorted(r["doc_id"] for r in rows)
    assert chunks["json.dumps"].text == doc(json.dumps) and chunks["json.dumps"].doc_id == "json.dumps"
    # BEIR's _id, and unicode ids, as written
    beir = [{"_id": f"文書-{i}", "title": "t", "text": doc(f)} for i, (_, f) in enumerate(DOCS)]
    assert sorted(reader(write(tmp_path / "corpus.jsonl", beir))) == sorted(r["_id"] for r in beir)


def test_every_bad_line_in_file_order_up_to_ten(tmp_path, reader):
    rows = [{"id": f"c{i}", "text": doc(f)} for i, (_, f) in enumerate(DOCS)]
    rows += [{"text": f"line without an id {i}"} for i in range(12)]
    rows.insert(2, {"id": "c0", "text": "again"})  # a duplicate comes before the missing ids, in file order
    p = write(tmp_path / "c.jsonl", rows)
    with pytest.raises(InputError) as e:
        reader(p)
    said = str(e.value)
    assert said.startswith(
        f"{p}: 13 lines are wrong: line 3: chunk id 'c0' appears twice (first on line 1); line 9: no 'id'"
    )
    assert re.findall(r"line (\d+):", said) == [str(n) for n in [3] + list(range(9, 18))]
    assert said.endswith("; ... and 3 more") and "\n" not in said
    assert e.value.line == 3


def test_queries_say_every_bad_line_and_the_fields_that_would_do(tmp_path, capsys):
    rows = [
        {"id": "q1", "question": doc(json.dumps).split(".")[0]},
        {"id": "q2", "title": "x"},
        {"question": "no id"},
        {"id": "q1", "text": "again"},
    ]
    p = write(tmp_path / "q.jsonl", rows)
    with pytest.raises(InputError) as e:
        read_queries(p)
    said = str(e.value)
    assert said.startswith(
        f"{p}: 3 lines are wrong: line 2: missing field 'question' (any of question, query, text "
        "would do; keys present: id, title)"
    )
    assert "line 3: missing field 'id' (any of id, query_id, _id, qid would do" in said
    assert "line 4: query id 'q1' appears twice (first on line 1)" in said
    tsv = tmp_path / "q.tsv"
    tsv.write_text("q1\tWhat does dedent do?\nq2 no tab\nq3\t\nq1\tagain\n")
    with pytest.raises(
        InputError,
        match=r"3 lines are wrong: line 2: expected 'query id<TAB>query text'; line 3: "
        r"expected .*; line 4: query id 'q1' appears twice \(first on line 1\)",
    ):
        read_queries(tsv)


def test_an_answer_row_is_named_by_its_line_once(tmp_path, capsys):
    rows = [
        {"id": f"a{i}", "question": doc(f).split(".")[0], "reference": "x", "response": "y"}
        for i, (_, f) in enumerate(DOCS)
    ]
    del rows[6]["question"]
    p = write(tmp_path / "answers.jsonl", rows)
    code = main(["check", p, "-o", str(tmp_path / "checks.jsonl"), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 1 and f"{p}:7: no question (a field named question" in err
    assert ":7: line 7" not in err


def test_integers_taken_as_chunk_ids_are_said_with_counts(tmp_path, capsys):
    queries = write(
        tmp_path / "q.jsonl", [{"id": f"q{i}", "text": doc(f).split(".")[0]} for i, (_, f) in enumerate(DOCS[:3])]
    )
    chunks = write(tmp_path / "c.jsonl", [{"id": f"doc-{i}", "text": doc(f)} for i, (_, f) in enumerate(DOCS)])
    (tmp_path / "index.py").write_text("def search(query):\n    return [(i, 1.0 / (i + 1)) for i in range(4)]\n")
    code = main(
        [
            "retrieve",
            "--retriever",
            f"{tmp_path / 'index.py'}:search",
            "--queries",
            queries,
            "-o",
            str(tmp_path / "run.txt"),
            "-k",
            "4",
        ]
    )
    err = capsys.readouterr().err
    assert (
        code == 0
        and "warning: the retriever returned integers as chunk ids (12 of 12 results), taken as the "
        "ids '0', '1', '2', ...: if they are positions in an index"
        in err
    )
    # judge on that run against the chunks says what the ids are
    code = main(
        [
            "judge",
            "--queries",
            queries,
            "--chunks",
            chunks,
            "--run",
            str(tmp_path / "run.txt"),
            "-o",
            str(tmp_path / "j.jsonl"),
            "--dry-run",
            "--model",
            "m",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "12 such pair(s); 12 of them are integers while the chunks' ids are not (e.g. 'doc-0')" in err
    # with --chunks, retrieve checks every id: refused, no warning needed
    code = main(
        [
            "retrieve",
            "--retriever",
            f"{tmp_path / 'index.py'}:search",
            "--queries",
            queries,
            "--chunks",
            chunks,
            "-o",
            str(tmp_path / "run2.txt"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "not a chunk id of the chunks" in err and "warning: the retriever returned integers" not in err
