"""The index a finalized output keeps beside it: used only while it describes the output exactly,
ignored (and the output read) otherwise; the summary it remembers is the summary of the records."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE, store_contents
from ragassay.cli import main
from ragassay.runtime import store_index, store_keys
from ragassay.runtime.store import OutputStore
from ragassay.runtime.store_index import index_path, read_index


def ident(r: dict) -> str:
    return r["id"]


def finished(tmp_path: Path, n: int = 300, failed: tuple[int, ...] = (7, 150)) -> Path:
    """An output of ``n`` records written by finalize (some of them errors), with its index."""
    out = tmp_path / "o.jsonl"
    store = OutputStore(out, ident)
    store.append(
        [
            {
                "id": f"i{i}",
                "key": f"k{i}",
                "status": "error" if i in failed else "ok",
                "text": f"record {i} " + "ü" * (i % 5) + "x" * (i * 37 % 900),
            }
            for i in range(n)
        ]
    )
    store.finalize([f"k{i}" for i in range(n)])
    assert index_path(out).exists()
    return out


def scanned(out: Path) -> OutputStore:
    """A store that reads the output line by line (its index moved away and put back)."""
    saved = index_path(out).read_bytes() if index_path(out).exists() else None
    index_path(out).unlink(missing_ok=True)
    try:
        store = OutputStore(out, ident)
    finally:
        if saved is not None:
            index_path(out).write_bytes(saved)
    assert store._indexed is None
    return store


def same_answers(a: OutputStore, b: OutputStore) -> None:
    assert store_contents(a) == store_contents(b) and a.final_lines == b.final_lines
    assert list(a.records()) == list(b.records())


def test_a_rerun_builds_its_store_from_the_index_without_reading_a_line(tmp_path, monkeypatch):
    out = finished(tmp_path)
    reference = scanned(out)
    monkeypatch.setattr(store_keys, "block_fields", lambda block: pytest.fail("the output was read"))
    monkeypatch.setattr(OutputStore, "_index_lines", lambda *a: pytest.fail("the output was read"))
    store = OutputStore(out, ident)
    assert store._indexed is not None
    monkeypatch.undo()
    same_answers(store, reference)
    assert store.failed("k7") and store.failed("k150") and store.done("k8") and not store.has("k300")


def _append_a_line(out: Path) -> None:
    with open(out, "a") as f:
        f.write(json.dumps({"id": "new", "key": "knew", "status": "ok"}) + "\n")


def _same_size_edit(at: str):
    """An edit that keeps the size and the modification time: a status flipped in the first or
    the last record, or in one in the middle (which only the digest of the ends could miss)."""

    def edit(out: Path) -> None:
        st = out.stat()
        lines = out.read_bytes().split(b"\n")
        i = {"first": 0, "last": len(lines) - 2}[at]
        assert b'"status": "ok"' in lines[i]
        lines[i] = lines[i].replace(b'"status": "ok"', b'"status": "no"')
        out.write_bytes(b"\n".join(lines))
        os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert out.stat().st_size == st.st_size

    return edit


def _replaced_by_a_copy(out: Path) -> None:
    st = out.stat()
    copy = out.with_name("copy.jsonl")
    shutil.copyfile(out, copy)
    lines = copy.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"status": "ok"', b'"status": "no"')
    copy.write_bytes(b"\n".join(lines))
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(copy, out)  # same size and time, another inode


def _index_edit(change):
    def edit(out: Path) -> None:
        path = index_path(out)
        path.write_bytes(change(path.read_bytes()))

    return edit


def _header(change):
    def on(data: bytes) -> bytes:
        end = data.index(b"\n")
        header = json.loads(data[:end])
        change(header)
        return json.dumps(header).encode() + data[end:]

    return on


MISMATCHES = {
    "a line appended": _append_a_line,
    "first record edited, same size and time": _same_size_edit("first"),
    "last record edited, same size and time": _same_size_edit("last"),
    "replaced by an edited copy, same size and time": _replaced_by_a_copy,
    "index cut short": _index_edit(lambda d: d[:-5]),
    "index cut in its locations": _index_edit(lambda d: d[: d.index(b"\n") + 100]),
    "index empty": _index_edit(lambda d: b""),
    "index not JSON": _index_edit(lambda d: b"\x00\xff garbage\n" + d),
    "index of a later version": _index_edit(_header(lambda h: h.update(version=2))),
    "index of another output": _index_edit(_header(lambda h: h["stamp"].update(inode=h["stamp"]["inode"] + 1))),
    "index says more rows": _index_edit(_header(lambda h: h.update(rows=h["rows"] + 1))),
    "index says 10**15 rows": _index_edit(_header(lambda h: h.update(rows=10**15))),
    "index keys one byte short": _index_edit(_header(lambda h: h.update(key_bytes=h["key_bytes"] - 1))),
    "index keys one byte long": _index_edit(_header(lambda h: h.update(key_bytes=h["key_bytes"] + 1))),
    "index header a list": _index_edit(lambda d: b"[1, 2]" + d[d.index(b"\n") :]),
    "index keys not UTF-8": _index_edit(lambda d: d[:-3] + b"\xff\xfe\xfd"),
}


@pytest.mark.parametrize("change", MISMATCHES.values(), ids=MISMATCHES.keys())
def test_an_index_that_does_not_describe_the_output_is_not_used(tmp_path, change):
    out = finished(tmp_path)
    change(out)
    store = OutputStore(out, ident)
    assert store._indexed is None, "an index that does not describe the output was used"
    same_answers(store, scanned(out))


def test_an_index_that_cannot_be_written_leaves_nothing_and_the_output_is_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(store_index, "index_path", lambda output: Path(output).parent / "gone" / "o.index")
    out = tmp_path / "o.jsonl"
    store = OutputStore(out, ident)
    store.append([{"id": "a", "key": "ka", "status": "ok"}])
    assert [r["key"] for r in store.finalize(["ka"])] == ["ka"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl"]
    assert OutputStore(out, ident).done("ka")


def test_finalize_replaces_the_index_of_the_old_output(tmp_path):
    out = finished(tmp_path, 20)
    store = OutputStore(out, ident)
    store.append([{"id": "i3", "key": "k3b", "status": "ok"}])
    store.finalize([f"k{i}" for i in range(20) if i != 3] + ["k3b"])
    index = read_index(out)
    assert index is not None and "k3b" in index.keys and "k3" not in index.keys
    same_answers(OutputStore(out, ident), scanned(out))


def test_an_output_found_unchanged_gets_an_index_for_the_next_run(tmp_path):
    out = finished(tmp_path, 10)
    index_path(out).unlink()
    before = out.stat().st_mtime_ns, out.read_bytes()
    OutputStore(out, ident).finalize([f"k{i}" for i in range(10)])
    assert (out.stat().st_mtime_ns, out.read_bytes()) == before  # not rewritten
    assert read_index(out) is not None and OutputStore(out, ident)._indexed is not None


def test_a_memo_holds_for_the_same_records_of_the_same_output_only(tmp_path):
    out = finished(tmp_path, 30)
    store = OutputStore(out, ident)
    plan = [f"k{i}" for i in range(30)]
    records = store.finalize(plan)
    assert records.memo("count") is None
    records.remember("count", {"n": len(records)})
    again = OutputStore(out, ident).finalize(plan)
    assert again.memo("count") == {"n": 30}
    assert again.memo("other") is None
    assert OutputStore(out, ident).finalize(plan[:29]).memo("count") is None  # other records
    assert OutputStore(out, ident).finalize(plan[::-1]).memo("count") is None  # the same, in another order
    _append_a_line(out)
    assert OutputStore(out, ident).finalize(plan).memo("count") is None  # the output changed
    # records pinned before the output was replaced keep reading the old file: no memo of the new
    store = OutputStore(out, ident)
    pinned = store.finalize(plan)
    writer = OutputStore(out, ident)
    writer.append([{"id": "i0", "key": "k0b", "status": "ok"}])
    writer.finalize(["k0b"] + plan[1:])
    pinned.remember("count", {"n": -1})
    assert pinned.memo("count") is None
    assert OutputStore(out, ident).finalize(["k0b"] + plan[1:]).memo("count") is None


QUERIES, CHUNKS, BM25 = (
    str(EXAMPLE / "queries.jsonl"),
    str(EXAMPLE / "chunks.jsonl"),
    str(EXAMPLE / "runs" / "bm25.txt"),
)


def judge(tmp_path: Path, url: str, depth: int, *extra: str) -> list[str]:
    return [
        "judge",
        "--queries",
        QUERIES,
        "--chunks",
        CHUNKS,
        "--run",
        BM25,
        "--depth",
        str(depth),
        "-o",
        str(tmp_path / "j.jsonl"),
        "--base-url",
        url,
        "--model",
        "fake",
        "--quiet",
        "--format",
        "json",
        *extra,
    ]


def summary_of(records: list[dict]) -> dict:
    grades = {str(g): sum(1 for r in records if r["status"] == "ok" and r["grade"] == g) for g in range(4)}
    return {"grades": grades, "decided_by_rule": sum(r.get("decided_by") == "rule" for r in records)}


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("extra", [[], ["--samples", "3"], ["--model", "fake-b"]], ids=["one", "samples", "jury"])
def test_a_rerun_says_the_summary_of_the_records_without_reading_them_and_an_edit_is_seen(
    tmp_path, capsys, monkeypatch, extra
):
    with FakeLLM() as server:
        assert main(judge(tmp_path, server.url, 4, *extra)) == 0
        first = json.loads(capsys.readouterr().out)
        out = tmp_path / "j.jsonl"
        records = [json.loads(x) for x in out.read_text().splitlines()]
        for field in ("grades", "decided_by_rule"):
            assert first[field] == summary_of(records)[field]
        calls = server.calls
        with monkeypatch.context() as m:  # the rerun parses no record: the summary is the one remembered
            m.setattr(OutputStore, "records_at", lambda *a: pytest.fail("a record was read"))
            m.setattr(OutputStore, "record_at", lambda *a: pytest.fail("a record was read"))
            assert main(judge(tmp_path, server.url, 4, *extra)) == 0
        second = json.loads(capsys.readouterr().out)
        assert server.calls == calls
        assert {k: v for k, v in second.items() if k not in ("already_done", "judged", "usage", "usage_text")} == {
            k: v for k, v in first.items() if k not in ("already_done", "judged", "usage", "usage_text")
        }
        assert second["already_done"] == first["pairs"]
        # a grade edited by hand (another size): the summary says the edited records
        lines = out.read_text().splitlines()
        edited = json.loads(lines[0])
        edited["grade"] = 3 if edited["grade"] != 3 else 0
        edited["samples"] = [edited["grade"]] * len(edited["samples"])
        lines[0] = json.dumps(edited) + " "
        out.write_text("\n".join(lines) + "\n")
        records = [json.loads(x) for x in lines]
        assert main(judge(tmp_path, server.url, 4, *extra)) == 0
        third = json.loads(capsys.readouterr().out)
        assert third["grades"] == summary_of(records)["grades"] != first["grades"]
        # a shallower rerun: its own records' summary, not the deeper one's remembered
        assert main(judge(tmp_path, server.url, 2, *extra)) == 0
        shallow = json.loads(capsys.readouterr().out)
        mine = {(r["query_id"], r["chunk_id"]) for r in records}
        assert shallow["pairs"] < third["pairs"] and sum(shallow["grades"].values()) == shallow["pairs"]
        assert server.calls == calls and len(mine) == third["pairs"]


@pytest.mark.parametrize(
    "keys",
    [[f"k{i}" for i in range(10)], [f"ké{i}" if i % 4 else f"k{i}" for i in range(10)], ["\udc80", "a"], ["only"], []],
    ids=["ascii", "accents", "surrogate", "one", "none"],
)
def test_keys_written_a_slice_at_a_time_read_back_the_same(tmp_path, monkeypatch, keys):
    monkeypatch.setattr(store_index, "KEYS_AT_ONCE", 3)
    out = tmp_path / "o.jsonl"
    out.write_text("x\n" * 12)
    assert store_index.write_index(out, keys, list(range(len(keys))), b"\x01" * len(keys), 12)
    index = read_index(out)
    assert index is not None and index.keys == keys and list(index.locations) == list(range(len(keys)))
    assert not store_index.write_index(out, ["a\nb"], [0], b"\x01", 12)  # a key a line: not indexed


def test_a_write_cut_by_a_kill_leaves_a_file_the_next_write_replaces(tmp_path):
    out = finished(tmp_path, 5)
    leftover = index_path(out).with_name(index_path(out).name + ".tmp")
    leftover.write_bytes(b"half an index")  # as a kill during the write leaves it
    store = OutputStore(out, ident)
    store.append([{"id": "i1", "key": "k1b", "status": "ok"}])
    store.finalize(["k0", "k1b", "k2", "k3", "k4"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".o.jsonl.index", "o.jsonl"]
    assert read_index(out).keys == ["k0", "k1b", "k2", "k3", "k4"]
