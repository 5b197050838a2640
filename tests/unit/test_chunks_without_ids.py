"""A chunks file without ids is either an ir_datasets docs export (no line has an id, every doc_id
unique: the doc_id is the declared id) or it is not, and then every line without an id is wrong, the
reason said once and the lines listed; init says so where it places the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragassay.cli import main
from ragassay.data.chunk_files import read_chunks
from ragassay.errors import InputError

TEXTS = [
    "Serialize obj to a JSON formatted str.",
    "Deserialize s to a Python object.",
    "Wrap a single paragraph of text.",
    "Split the string s using shell-like syntax.",
    "Return a list of the words in the string.",
    "Größe und Übermaß: unicode text.",
]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_one_unique_doc_id_among_repeated_ones_is_not_taken_quietly(tmp_path):
    """39 lines of one document and one of another: all 40 are wrong, said once, not '39 lines'."""
    rows = [{"doc_id": "typing", "text": f"{TEXTS[i % 5]} ({i})"} for i in range(39)]
    rows.append({"doc_id": "jsön", "text": TEXTS[5]})
    p = write(tmp_path / "corpus.jsonl", rows)
    with pytest.raises(InputError) as caught:
        read_chunks(p)
    said = str(caught.value)
    assert said.startswith(f"{p}: 40 lines have no 'id' (no line has one, and doc_id 'typing' is on 39 lines "), said
    assert said.endswith("lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ... (40 lines)"), said
    assert said.count("names the document") == 1 and "lines are wrong" not in said
    assert caught.value.line == 1


def test_lines_without_ids_among_lines_with_ids_are_said_once(tmp_path):
    rows = [{"id": f"c{i}", "doc_id": "d", "text": t} for i, t in enumerate(TEXTS)]
    rows[1] = {"doc_id": "d", "text": TEXTS[1]}
    rows[4] = {"doc_id": "e", "text": TEXTS[4]}
    p = write(tmp_path / "chunks.jsonl", rows)
    with pytest.raises(InputError) as caught:
        read_chunks(p)
    said = str(caught.value)
    assert said == (
        f"{p}: 2 lines have no 'id' (other lines have an 'id', so a doc_id names the document a chunk "
        "comes from, not the chunk); give each chunk an 'id' (or BEIR's '_id'): lines 2, 5"
    )
    assert caught.value.line == 2


def test_a_docs_export_with_unique_doc_ids_is_read_by_them(tmp_path):
    p = write(tmp_path / "docs.jsonl", [{"doc_id": f"doc-{i}-ü", "text": t} for i, t in enumerate(TEXTS)])
    assert [c.id for c in read_chunks(p)] == [f"doc-{i}-ü" for i in range(len(TEXTS))]


def init_note(capsys, folder: Path) -> str:
    capsys.readouterr()
    assert main(["init", str(folder)]) == 0
    out = capsys.readouterr().out
    return next(line for line in out.splitlines() if "corpus.jsonl" in line)


def test_init_says_a_chunks_file_without_ids_will_be_refused(tmp_path, capsys):
    rows = [{"doc_id": "typing" if i < 5 else "json", "text": TEXTS[i]} for i in range(6)]
    write(tmp_path / "corpus.jsonl", rows)
    line = init_note(capsys, tmp_path)
    assert "chunk texts by id" not in line
    assert "chunks, but 6 of 6 records have no 'id' (doc_id 'typing' repeats" in line, line
    assert "run will refuse them until each chunk has an 'id'" in line
    toml = (tmp_path / "ragassay.toml").read_text()
    assert "chunks, but 6 of 6 records have no 'id'" in toml


def test_init_names_a_docs_export_as_documents(tmp_path, capsys):
    write(tmp_path / "corpus.jsonl", [{"doc_id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)])
    assert "documents by doc_id (an ir_datasets docs export" in init_note(capsys, tmp_path)


def test_init_places_chunks_with_ids_as_before(tmp_path, capsys):
    write(tmp_path / "corpus.jsonl", [{"id": f"c{i}", "doc_id": "d", "text": t} for i, t in enumerate(TEXTS)])
    assert "chunks  (chunk texts by id)" in init_note(capsys, tmp_path)
