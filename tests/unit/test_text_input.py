"""Text inputs read as their writers meant them: a UTF-8 byte-order mark is the encoding's signature,
not text (every reader gives the same with it as without it), and a line ends at \\n or \\r\\n only:
the other characters Python's str.splitlines() ends lines at (\\x0b, \\x0c, \\x1c-\\x1e, \\x85, U+2028,
U+2029) are text inside a query, and inside an id an error that names the character."""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from pathlib import Path

import pytest

import ragassay.data.column_reading as column_reading
import ragassay.data.lines as lines
from helpers import EXAMPLE, nonempty
from ragassay.data.chunk_files import read_chunks
from ragassay.data.chunk_table import ChunkTable, chunk_source
from ragassay.data.qrels_files import read_qrels
from ragassay.data.query_files import read_queries
from ragassay.data.record_files import read_record_file
from ragassay.data.run_files import read_run
from ragassay.errors import InputError
from ragassay.stages.answer_files import read_answers, read_human_labels
from ragassay.stages.queries import read_query_items

BOM = b"\xef\xbb\xbf"

# every character str.splitlines() ends a line at, besides \n and \r, with its name
SEPARATORS = {
    "\x0b": "LINE TABULATION",
    "\x0c": "FORM FEED",
    "\x1c": "FILE SEPARATOR",
    "\x1d": "GROUP SEPARATOR",
    "\x1e": "RECORD SEPARATOR",
    "\x85": "NEXT LINE",
    "\u2028": "LINE SEPARATOR",
    "\u2029": "PARAGRAPH SEPARATOR",
}


def test_the_separators_are_every_line_break_of_str_splitlines_but_newline_and_return():
    breaks = {chr(c) for c in range(0x110000) if len(f"a{chr(c)}b".splitlines()) == 2} - {"\n", "\r"}
    assert breaks == set(SEPARATORS)
    assert all(unicodedata.name(c, n) == n for c, n in SEPARATORS.items())


def queries_tsv(text: str) -> bytes:
    return f"q1\t{text}\nq2\tthe second\r\n\nq3\tthe third\n".encode()


@pytest.mark.parametrize("sep", list(SEPARATORS), ids=[f"U+{ord(c):04X}" for c in SEPARATORS])
def test_a_line_break_character_inside_a_query_text_is_kept_as_text(tmp_path, sep):
    text = f"refund{sep}within 30 days?"
    want = {"q1": text, "q2": "the second", "q3": "the third"}
    tsv = tmp_path / "q.tsv"
    tsv.write_bytes(queries_tsv(text))
    assert read_queries(tsv) == want
    assert {q.id: q.text for q in read_query_items(tsv)} == want
    for name, ascii_only in (("escaped.jsonl", True), ("raw.jsonl", False)):  # \u2028 in JSON, or the character itself
        if not ascii_only and ord(sep) < 0x20:
            continue  # JSON itself forbids a raw control character in a string: only its escape is JSON
        lines = [json.dumps({"id": q, "text": t}, ensure_ascii=ascii_only) for q, t in want.items()]
        jsonl = tmp_path / name
        jsonl.write_bytes(("\n".join(lines) + "\n").encode())
        assert read_queries(jsonl) == want, name
        assert {q.id: q.text for q in read_query_items(jsonl)} == want, name


@pytest.mark.parametrize("sep", list(SEPARATORS), ids=[f"U+{ord(c):04X}" for c in SEPARATORS])
def test_a_line_break_character_inside_a_query_id_is_refused_naming_it(tmp_path, sep):
    tsv = tmp_path / "q.tsv"
    tsv.write_bytes(f"q0\tfirst\nq{sep}1\ttext\n".encode())
    named = re.escape(f"U+{ord(sep):04X} {SEPARATORS[sep]}")
    for read in (read_queries, read_query_items):
        with pytest.raises(InputError, match=f"q.tsv:2: query id .* contains whitespace \\({named}\\)"):
            read(tsv)
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(json.dumps({"id": f"q{sep}1", "text": "text"}) + "\n")
    with pytest.raises(InputError, match=f"q.jsonl:1: query id .* \\({named}\\)"):
        read_queries(jsonl)


# ----------------------------------------------------------------------------------- the BOM


def _lines(path: Path, n: int | None = None) -> bytes:
    lines = path.read_bytes().splitlines(keepends=True)
    return b"".join(lines[:n])


def _chunk_source(path: Path) -> dict:
    """Chunks as a stage looks them up: a ChunkTable over a large plain file, else a dict."""
    return {cid: chunk.model_dump() for cid, chunk in chunk_source(path).items()}


# reader: (file name, its content, the reader as a function of the path giving something comparable)
READERS = {
    "queries tsv": ("q.tsv", queries_tsv("refund?"), lambda p: read_queries(p)),
    "queries jsonl": ("q.jsonl", _lines(EXAMPLE / "queries.jsonl"), lambda p: read_queries(p)),
    "query items tsv": ("q.tsv", queries_tsv("refund?"), lambda p: [(q.id, q.text) for q in read_query_items(p)]),
    "query items jsonl": (
        "q.jsonl",
        _lines(EXAMPLE / "queries.jsonl"),
        lambda p: [(q.id, q.text, q.answer) for q in read_query_items(p)],
    ),
    "qrels trec": ("q.txt", _lines(EXAMPLE / "qrels.txt"), lambda p: read_qrels(p).to_dict()),
    "qrels trec with a comment": (
        "q.txt",
        b"# made by hand\n" + _lines(EXAMPLE / "qrels.txt"),
        lambda p: read_qrels(p).to_dict(),
    ),
    "qrels three columns": ("q.txt", b"q1 d1 1\nq1 d2 0\nq2 d1 2\n", lambda p: read_qrels(p).to_dict()),
    "qrels beir": ("q.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t2\n", lambda p: read_qrels(p).to_dict()),
    "qrels jsonl": (
        "q.jsonl",
        b'{"query_id": "q1", "chunk_id": "d1", "grade": 2}\n',
        lambda p: read_qrels(p).to_dict(),
    ),
    "run trec": ("r.txt", _lines(EXAMPLE / "runs" / "bm25.txt"), lambda p: read_run(p).to_dict()),
    "run three columns": ("r.txt", b"q1 d1 2.5\nq1 d2 1.0\n", lambda p: read_run(p).to_dict()),
    "run beir": ("r.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t2.5\n", lambda p: read_run(p).to_dict()),
    "run jsonl": ("r.jsonl", b'{"query_id": "q1", "chunk_id": "d1", "score": 2.5}\n', lambda p: read_run(p).to_dict()),
    "chunks": ("c.jsonl", _lines(EXAMPLE / "chunks.jsonl"), lambda p: [c.model_dump() for c in read_chunks(p)]),
    "chunk source": ("c.jsonl", _lines(EXAMPLE / "chunks.jsonl"), _chunk_source),
    "answers": (
        "a.jsonl",
        _lines(EXAMPLE / "answers.jsonl"),
        lambda p: [a.model_dump() for a in read_answers(p, {c.id: c for c in read_chunks(EXAMPLE / "chunks.jsonl")})],
    ),
    "human labels": ("h.jsonl", _lines(EXAMPLE / "answers_human_labels.jsonl"), read_human_labels),
    "records": (
        "j.jsonl",
        b'{"query_id": "q1", "chunk_id": "d1", "grade": 2, "status": "ok"}\n',
        lambda p: [r.model_dump() for r in read_record_file(p)[1]],
    ),
}


@pytest.mark.parametrize("parser", ["numpy", "arrow"])
@pytest.mark.parametrize("reader", list(READERS))
def test_a_byte_order_mark_reads_as_its_absence(tmp_path, monkeypatch, reader, parser):
    """With a BOM or without, plain or gzipped, whole or streamed a line at a time (as a large file
    is), and with either column splitter: the same result."""
    monkeypatch.setenv("RAGASSAY_PARSER", parser)
    monkeypatch.setattr(column_reading, "ARROW_MIN_BYTES", 0)  # the splitter asked for, even for a small file
    name, content, read = READERS[reader]
    assert not content.startswith(BOM)
    plain = tmp_path / "plain" / name
    plain.parent.mkdir()
    plain.write_bytes(content)
    want = read(plain)
    assert want
    forms = {"bom": BOM + content, "gzip bom": gzip.compress(BOM + content), "gzip": gzip.compress(content)}
    for form, data in nonempty(forms.items()):
        path = tmp_path / form.replace(" ", "-") / name
        path.parent.mkdir()
        path.write_bytes(data)
        assert read(path) == want, form
    with monkeypatch.context() as m:  # a plain file past STREAM_FROM is read a line at a time
        m.setattr(lines, "STREAM_FROM", 1)
        for form, data in nonempty({"streamed": content, "streamed bom": BOM + content}.items()):
            path = tmp_path / form.replace(" ", "-") / name
            path.parent.mkdir()
            path.write_bytes(data)
            assert read(path) == want, form
            if reader == "chunk source":
                assert isinstance(chunk_source(path), ChunkTable)  # the streamed path was taken


def test_a_bom_in_front_of_a_query_id_with_a_tab_file_reads_as_the_id(tmp_path, capsys):
    """The report that started this: a TSV of queries saved by a Windows editor (BOM, CRLF)."""
    from ragassay.cli import main

    queries = tmp_path / "q.tsv"
    queries.write_bytes(BOM + b"q01\tHow long do I have to ask for a refund?\r\nq02\tWhen is the money back?\r\n")
    assert read_queries(queries) == {"q01": "How long do I have to ask for a refund?", "q02": "When is the money back?"}
    code = main(
        [
            "judge",
            "--queries",
            str(queries),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "--run",
            str(EXAMPLE / "runs" / "bm25.txt"),
            "--depth",
            "2",
            "-o",
            str(tmp_path / "j.jsonl"),
            "--dry-run",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--format",
            "json",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert json.loads(printed.out)["items"] == 4  # q01 and q02, two chunks each
