"""The output store: keys and where their lines are, the lines read back from the files.

Its fast path reads key and status off a line without parsing it; every case here is checked
against the plain reading (every line parsed, later records win), on lines built to trip it:
the field names inside strings, escaped quotes, nested objects with a key of their own, a status
that is not a string, non-ASCII text, blank lines, CRLF, lines longer than a read block."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import nonempty
from ragassay.errors import InputError
from ragassay.runtime import store_files
from ragassay.runtime.store import OutputStore
from ragassay.runtime.store_lines import journal_path


def ident(r: dict) -> str:
    return r["id"]


def plain(paths: list[Path], cut_last_journal_line: bool = True) -> dict[str, dict]:
    """The reference: every line parsed, in file order, the newest record of each key."""
    out: dict[str, dict] = {}
    for i, path in enumerate(paths):
        if not path.exists():
            continue
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        if i == 1 and cut_last_journal_line:
            data = data[: data.rfind(b"\n") + 1]
        for line in data.decode("utf-8-sig").split("\n"):
            if line.strip():
                r = json.loads(line)
                if isinstance(r.get("key"), str):
                    out[r["key"]] = r
    return out


def check_same(store: OutputStore, expected: dict[str, dict]) -> None:
    assert sorted(store.keys()) == sorted(expected)
    keys = store.keys()
    for order in (keys, keys[::-1], keys[::2] + keys[1::2]):  # read a block at a time, and line by line
        assert list(store.pinned([store.location(k) for k in order])) == [expected[k] for k in order]
    for key, r in expected.items():
        assert store.record(key) == r
        assert store.done(key) == (r.get("status", "ok") == "ok"), (key, r)


TRICKY_TEXT = st.sampled_from(
    [
        "plain",
        'a "quoted" word',
        '"key": "fake"',
        '\\"key\\": \\"x\\"',
        "ends with a backslash \\",
        '"status": "ok"',
        '"status": "error"',
        "line\nbreak",
        "tab\tand \u00e9t\u00e9 \u4e2d\u6587 \U0001f600",
        '{"key": "inner"}',
        "",
        " ",
        '"key": ',
        "key",
        '"',
        "\\",
    ]
)
KEYS = st.sampled_from(["k1", "k2", "k3", "K-\u00e9", 'k"q', "k\\b", ""])


@st.composite
def record(draw) -> dict:
    r: dict = {"id": draw(st.sampled_from(["a", "b", "c", "d"]))}
    fields = draw(st.lists(st.sampled_from(["text", "nested", "list", "num"]), unique=True))
    shape = draw(
        st.sampled_from(
            [
                "normal",
                "no_key",
                "null_key",
                "no_status",
                "null_status",
                "status_first",
                "nested_key",
                "nested_status",
                "int_key",
            ]
        )
    )
    key = draw(KEYS)
    status = draw(st.sampled_from(["ok", "error", "okay", "OK"]))
    if shape == "status_first":
        r["status"] = status
    for f in fields:
        r[f] = {
            "text": draw(TRICKY_TEXT),
            "nested": {"key": draw(KEYS), "status": draw(TRICKY_TEXT)},
            "list": [draw(TRICKY_TEXT), 1, None],
            "num": draw(st.sampled_from([0, -1.5, 1e100, None])),
        }[f]
    if shape not in ("no_key", "null_key", "int_key"):
        r["key"] = key
    elif shape == "null_key":
        r["key"] = None
    elif shape == "int_key":
        r["key"] = 7
    if shape in ("normal", "nested_key", "nested_status", "no_key", "null_key", "int_key"):
        r["status"] = status
    elif shape == "null_status":
        r["status"] = None
    if shape == "nested_key":
        r["extra"] = {"key": "nested-" + key}
    if shape == "nested_status":
        r["extra"] = [{"status": "ok"}]
    r["after"] = draw(TRICKY_TEXT)
    return r


def write_lines(
    path: Path, records: list[dict], *, ascii_only: bool, blank: bool, crlf: bool, partial: str = ""
) -> None:
    lines = [json.dumps(r, ensure_ascii=ascii_only) for r in records]
    if blank and lines:
        lines.insert(len(lines) // 2, "   ")
    end = "\r\n" if crlf else "\n"
    path.write_bytes(("".join(line + end for line in lines) + partial).encode("utf-8"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(record(), max_size=12),
    st.lists(record(), max_size=6),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.sampled_from([8, 64, 1 << 22]),
    st.sampled_from(["", '{"key": "k1", "sta']),
)
def test_the_store_reads_what_a_parser_reads(
    tmp_path, monkeypatch, final, journal, ascii_only, blank, crlf, block, partial
):
    monkeypatch.setattr(store_files, "BLOCK", block)  # lines cross read blocks, and are longer than one
    out = tmp_path / "o.jsonl"
    for p in (out, journal_path(out)):
        p.unlink(missing_ok=True)
    if final:
        write_lines(out, final, ascii_only=ascii_only, blank=blank, crlf=crlf)
    if journal or partial:
        write_lines(journal_path(out), journal, ascii_only=ascii_only, blank=False, crlf=False, partial=partial)
    store = OutputStore(out, ident)
    check_same(store, plain([out, journal_path(out)]))
    store.close_files()


def test_a_partial_journal_line_is_cut_before_a_resumed_run_appends(tmp_path, capsys):
    """A kill mid-write leaves half a line; the next run drops it and must append on a line of its
    own, or the journal is unreadable after a second interruption (it was: the new record was glued
    to the half line)."""
    out = tmp_path / "o.jsonl"
    journal_path(out).write_text(
        json.dumps({"id": "a", "key": "ka", "status": "ok"}) + '\n{"id": "b", "key": "kb", "sta'
    )
    store = OutputStore(out, ident)
    assert "dropped an incomplete last line (29 bytes)" in capsys.readouterr().err
    assert store.done("ka") and not store.has("kb")
    store.append([{"id": "b", "key": "kb", "status": "ok"}])
    store.close_journal()
    assert journal_path(out).read_text().splitlines()[1] == '{"id": "b", "key": "kb", "status": "ok"}'
    again = OutputStore(out, ident)  # a third run, after a second interruption
    assert again.done("ka") and again.done("kb") and again.record("kb")["id"] == "b"
    assert capsys.readouterr().err == ""
    assert [r["key"] for r in again.finalize(["ka", "kb"])] == ["ka", "kb"]
    assert not journal_path(out).exists()


def test_records_stay_readable_when_the_file_is_replaced_or_removed(tmp_path):
    out = tmp_path / "o.jsonl"
    store = OutputStore(out, ident)
    store.append([{"id": x, "key": f"k{x}", "status": "ok", "text": x * 3} for x in "abc"])
    records = store.finalize(["ka", "kb", "kc"])
    (tmp_path / "new").write_text('{"id": "z", "key": "kz", "status": "ok"}\n')
    os.replace(tmp_path / "new", out)  # a later run writes its output there (ragassay replaces, never edits)
    assert [r["text"] for r in records] == ["aaa", "bbb", "ccc"]
    os.replace(tmp_path / "o.jsonl", tmp_path / "moved")
    (tmp_path / "moved").unlink()
    assert records[1] == {"id": "b", "key": "kb", "status": "ok", "text": "bbb"}


def test_an_unchanged_output_is_not_rewritten_and_a_changed_one_keeps_other_identities(tmp_path):
    out = tmp_path / "o.jsonl"
    lines = [json.dumps({"id": i, "key": f"k{i}", "status": "ok"}) for i in "abcd"]
    out.write_text("\n".join(lines) + "\n")
    before = out.stat()
    store = OutputStore(out, ident)
    assert list(store.finalize(["ka", "kb"])) == [json.loads(lines[0]), json.loads(lines[1])]
    after = out.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not written
    store = OutputStore(out, ident)
    store.append([{"id": "b", "key": "kb2", "status": "error", "error": "timeout"}])
    records = store.finalize(["ka", "kb2"])
    assert [r["key"] for r in records] == ["ka", "kb2"] and store.failed("kb2") and not store.done("kb2")
    written = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["key"] for r in written] == ["kc", "kd", "ka", "kb2"]  # one per identity, b's old record gone
    assert [r["key"] for r in nonempty(list(store.output_records()))] == ["kc", "kd", "ka", "kb2"]
    assert store.record("kc")["id"] == "c"  # the index follows the new file


def test_an_output_that_repeats_an_identity_is_rewritten_even_when_every_key_is_there(tmp_path):
    out = tmp_path / "o.jsonl"
    out.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {"id": "a", "key": "old", "status": "ok"},
                {"id": "a", "key": "ka", "status": "ok"},
                {"id": "b", "key": "kb", "status": "ok"},
            ]
        )
    )
    store = OutputStore(out, ident)
    assert [r["key"] for r in store.finalize(["kb"])] == ["kb"]
    assert [json.loads(x)["key"] for x in out.read_text().splitlines()] == ["ka", "kb"]


@pytest.mark.parametrize("where", ["scan", "read"])
def test_an_edited_line_is_one_error_naming_file_and_line(tmp_path, where):
    out = tmp_path / "o.jsonl"
    good = [json.dumps({"id": i, "key": f"k{i}", "status": "ok"}) for i in "abc"]
    out.write_text("\n".join(good) + "\n")
    if where == "scan":
        out.write_text("\n".join([good[0], good[1], '{"id": "c", "key": "kc", "status": "ok"']) + "\n")  # cut short
        with pytest.raises(InputError) as e:
            OutputStore(out, ident)
        assert str(e.value).startswith(f"{out}:3: not valid JSON")
    else:
        store = OutputStore(out, ident)
        with open(out, "r+b") as f:  # edited in place after it was read: same length, broken
            f.seek(len(good[0]) + 1)
            f.write(b"X" * len(good[1]))
        with pytest.raises(InputError) as e:
            store.record("kb")
        assert str(e.value).startswith(f"{out}:2: not a JSON object")


def test_gzip_bom_and_crlf_outputs_are_read(tmp_path):
    rows = [{"id": "a", "key": "ka", "status": "ok", "t": "\u00e9"}, {"id": "b", "key": "kb", "status": "error"}]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows)
    for name, data in [("bom.jsonl", b"\xef\xbb\xbf" + text.encode()), ("gz.jsonl", gzip.compress(text.encode()))]:
        (tmp_path / name).write_bytes(data)
        store = OutputStore(tmp_path / name, ident)
        assert store.record("ka") == rows[0] and store.done("ka") and store.failed("kb")
        assert [r["key"] for r in store.finalize(["ka", "kb"])] == ["ka", "kb"]


@pytest.mark.parametrize("fast", [True, False], ids=["orjson", "standard library"])
def test_the_store_reads_the_same_with_or_without_orjson(tmp_path, monkeypatch, fast):
    """orjson is optional (the ``fast`` extra): without it every answer is the same."""
    import ragassay.data.lines as io_module

    if not fast:
        monkeypatch.setattr(store_files, "_orjson", None)
        monkeypatch.setattr(io_module, "_orjson", None)
    elif store_files._orjson is None:
        pytest.skip("orjson is not installed")
    out = tmp_path / "o.jsonl"
    rows = [
        {
            "id": i,
            "key": f"k{i}",
            "status": "ok" if i % 3 else "error",
            "n": 18446744073709551616 + i,
            "t": 'caf\u00e9 "key": "x" \\u0041',
        }
        for i in range(50)
    ]
    write_lines(out, rows, ascii_only=False, blank=True, crlf=False)
    store = OutputStore(out, ident)
    check_same(store, plain([out, journal_path(out)]))
    records = store.finalize([f"k{i}" for i in range(0, 50, 7)])
    assert [r["n"] for r in records] == [18446744073709551616 + i for i in range(0, 50, 7)]
