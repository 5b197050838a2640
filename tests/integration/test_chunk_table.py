"""A large chunks file held as where each chunk lies: the same chunks and the same errors as reading
it whole, the run's own view of the file however it changes, and a judgment that holds no chunk."""

from __future__ import annotations

import gc
import gzip
import json
import os
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE
from ragassay.data import lines as io_module
from ragassay.data.chunk_files import read_chunks
from ragassay.data.chunk_table import ChunkTable, chunk_source
from ragassay.data.records import Chunk
from ragassay.errors import InputError

CASES = {
    "plain": b'{"id": "a", "text": "x"}\n\n{"id": "b", "title": "T", "text": "caf\xc3\xa9", "doc_id": "d"}\n',
    "beir": b'{"_id": "d1", "title": "t", "text": "one"}\n{"_id": 7, "text": "int id"}\n',
    "bom and crlf": b'\xef\xbb\xbf{"id": "a", "text": "x"}\r\n{"id": "b", "text": "y\\ny"}\r\n',
    "no final newline": b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y", "metadata": {"k": [1, 2]}}',
    "escapes and astral": b'{"id": "a\\u00e9", "text": "\\ud83d\\ude00 \\"q\\" \\\\ \\u2028"}\n',
    "empty text": b'{"id": "a", "text": ""}\n{"id": "b", "text": "  "}\n',
    "duplicate id": b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n',
    "id with a space": b'{"id": "a b", "text": "x"}\n',
    "no text": b'{"id": "a"}\n',
    "bad json": b'{"id": "a", "text": "x"}\n{"id": "b", "text": }\n',
    "lone surrogate": b'{"id": "a", "text": "x \\udc00"}\n',
    "not utf-8": b'{"id": "a", "text": "\xff"}\n',
    "blank only": b"\n \n",
    "empty": b"",
}


def outcome(read):
    try:
        return read()
    except InputError as e:
        return f"error: {e}"


@pytest.mark.parametrize("name", list(CASES))
def test_a_table_says_what_reading_the_chunks_whole_says(tmp_path, name):
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(CASES[name])
    whole = outcome(lambda: {c.id: c for c in read_chunks(path)})
    table = outcome(lambda: ChunkTable(path))
    if isinstance(whole, str):
        assert table == whole
        return
    assert list(table) == list(whole) and len(table) == len(whole)
    assert {cid: table[cid] for cid in table} == whole
    assert all(table.id_of(cid) == cid for cid in whole) and "missing" not in table
    with pytest.raises(KeyError):
        table["missing"]


def test_a_file_replaced_while_a_run_reads_it_is_still_the_file_the_run_began_with(tmp_path):
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"id": "a", "text": "first"}\n{"id": "b", "text": "second"}\n')
    table = ChunkTable(path)
    new = tmp_path / "new.jsonl"
    new.write_text('{"id": "b", "text": "another"}\n{"id": "a", "text": "changed"}\n')
    os.replace(new, path)  # as editors save
    assert table["a"].text == "first" and table["b"].text == "second"


@pytest.mark.parametrize(
    "content",
    [
        '{"id": "b", "text": "seconD"}\n{"id": "a", "text": "first"}\n',  # lines moved: another chunk at its place
        '{"id": "a", "text": "x"}\n',  # cut short
        '{"id": "a", "text": "first"}\n{"id": "b", "text": "sec',  # a line half written
    ],
)
def test_a_file_written_over_in_place_is_an_error_never_another_chunks_text(tmp_path, content):
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"id": "a", "text": "first"}\n{"id": "b", "text": "second"}\n')
    table = ChunkTable(path)
    with open(path, "r+") as f:  # the same file, written over
        f.truncate(0)
        f.write(content)
    with pytest.raises(InputError, match="changed while this run was reading it") as e:
        table["b"]
    assert e.value.line == 2


def test_a_large_plain_file_is_a_table_anything_else_is_read_whole(tmp_path, monkeypatch):
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n')
    assert type(chunk_source(path)) is dict
    monkeypatch.setattr(io_module, "STREAM_FROM", 1)
    assert isinstance(chunk_source(path), ChunkTable)
    packed = tmp_path / "chunks.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert chunk_source(packed) == {"a": Chunk(id="a", text="x")}


QUERIES, CHUNKS, BM25 = (
    str(EXAMPLE / "queries.jsonl"),
    str(EXAMPLE / "chunks.jsonl"),
    str(EXAMPLE / "runs" / "bm25.txt"),
)


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("extra", [[], ["--samples", "2"], ["--batch", "3"]], ids=["pointwise", "samples", "batch"])
def test_judging_from_a_table_is_judging_from_the_chunks_read_whole(tmp_path, capsys, monkeypatch, extra):
    from ragassay.cli import main

    def judge(out: Path, url: str, *more: str) -> dict:
        assert (
            main(
                [
                    "judge",
                    "--queries",
                    QUERIES,
                    "--chunks",
                    CHUNKS,
                    "--run",
                    BM25,
                    "--depth",
                    "4",
                    "-o",
                    str(out),
                    "--base-url",
                    url,
                    "--model",
                    "fake",
                    "--quiet",
                    "--format",
                    "json",
                    "--no-cache",
                    *extra,
                    *more,
                ]
            )
            == 0
        )
        return json.loads(capsys.readouterr().out)

    with FakeLLM() as server:
        whole = judge(tmp_path / "whole.jsonl", server.url)
        whole_dry = judge(tmp_path / "none.jsonl", server.url, "--dry-run")
        monkeypatch.setattr(io_module, "STREAM_FROM", 1)  # the example's chunks file is "large" now
        made = []
        real_init = ChunkTable.__init__
        monkeypatch.setattr(ChunkTable, "__init__", lambda self, p: (made.append(p), real_init(self, p))[1])
        table_dry = judge(tmp_path / "none2.jsonl", server.url, "--dry-run")
        table = judge(tmp_path / "table.jsonl", server.url)
    assert made, "the judgment did not read the chunks as a table"
    assert {k: v for k, v in table_dry.items() if k != "cached"} == {
        k: v for k, v in whole_dry.items() if k != "cached"
    }
    assert table["grades"] == whole["grades"] and table["pairs"] == whole["pairs"]
    assert (tmp_path / "table.jsonl").read_text() == (tmp_path / "whole.jsonl").read_text()


def test_a_plan_over_a_table_holds_no_chunk(tmp_path, monkeypatch):
    """A plan of pairs to do holds each pair's chunk id, not its chunk: the live chunks after planning
    are the few the plan's bounded key cache keeps, not one per chunk of the corpus."""
    from ragassay.llm import LLMConfig
    from ragassay.stages.judge import plan_judge
    from ragassay.stages.queries import QueryItem

    n = 600
    path = tmp_path / "chunks.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "text": f"passage {i} " * 20}) + "\n" for i in range(n)))
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q{q} Q0 c{(q * 7 + r) % n} {r + 1} {10 - r} x\n" for q in range(200) for r in range(5)))
    queries = [QueryItem(f"q{q}", f"what is {q}?") for q in range(200)]
    gc.collect()
    before = {id(o) for o in gc.get_objects() if issubclass(type(o), Chunk)}
    plan = plan_judge(queries, ChunkTable(path), str(run), [LLMConfig(model="m")], tmp_path / "o.jsonl")
    gc.collect()
    live = sum(issubclass(type(o), Chunk) and id(o) not in before for o in gc.get_objects())
    assert len(plan.relevance_items) == 1000
    assert live == 0  # (the key cache holds encoded parts for a table, not chunks)
    item = plan.relevance_items[203]  # made when read: its chunk read from the file (q40's 4th: c283)
    assert item.payload[0].chunk == Chunk(id="c283", text="passage 283 " * 20)


@pytest.mark.parametrize("batch", [1, 3])
def test_a_coverage_plan_over_a_table_shares_one_chunk_per_id(tmp_path, batch):
    """Coverage items (and --batch groups) hold their chunks: read from a table, a chunk in many
    queries' tops is one object, as when the chunks are held (not one per query that names it)."""
    from ragassay.llm import LLMConfig
    from ragassay.stages.judge import JudgeOptions, plan_judge
    from ragassay.stages.queries import QueryItem

    path = tmp_path / "chunks.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "text": f"passage {i}"}) + "\n" for i in range(5)))
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q{q} Q0 c{r} {r + 1} {10 - r} x\n" for q in range(40) for r in range(5)))
    queries = [QueryItem(f"q{q}", f"what is {q}?", answer="a reference") for q in range(40)]
    gc.collect()
    before = {id(o) for o in gc.get_objects() if issubclass(type(o), Chunk)}
    plan = plan_judge(
        queries,
        ChunkTable(path),
        str(run),
        [LLMConfig(model="m")],
        tmp_path / "o.jsonl",
        coverage_out=tmp_path / "cov.jsonl",
        options=JudgeOptions(batch=batch),
    )
    gc.collect()
    held = [o for o in gc.get_objects() if issubclass(type(o), Chunk) and id(o) not in before]
    assert len(plan.coverage_items) == 40 and sorted({c.id for c in held}) == [f"c{i}" for i in range(5)]
    assert len(held) == (5 if batch == 1 else 10)  # one per id a plan (coverage; and the batches), not 200
