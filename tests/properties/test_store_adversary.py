"""Adversarial tests of the output store, written from its contract alone (not from its code).

Every answer of the store is compared with a plain reference that parses every line with
``json.loads`` (later records win, a record whose "key" is not a string has no key), on the
surfaces tests/test_store.py does not use: other tools' separators and field orders, nested
objects and field names that look like the key or status fields, escapes that spell a key or a
status another way, values ``json.loads`` reads differently from other parsers, keys and statuses
that change between the output and the journal, identities that move, lines over 4 MB, files of
many thousands of lines, a journal cut in the middle of a UTF-8 character and then appended to and
cut again, finalize twice or with keys it does not hold, and the Records finalize returns after
their file was replaced."""

from __future__ import annotations

import collections.abc
import gc
import gzip
import json
import os
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from helpers import nonempty, store_contents
from ragassay.errors import InputError
from ragassay.runtime import store_files
from ragassay.runtime.store import OutputStore
from ragassay.runtime.store_index import index_path, read_index
from ragassay.runtime.store_lines import journal_path
from ragassay.runtime.store_records import Records


def ident(r: dict) -> str:
    return r["id"]


def canon(x) -> str:
    """A record spelled so that 1, 1.0 and true differ, field order counts and NaN equals NaN."""
    return json.dumps(x, ensure_ascii=False)


def canon_all(records) -> list[str]:
    return [canon(r) for r in records]


# ---------------------------------------------------------------- the reference: json.loads, line by line


def file_rows(path: Path, *, journal: bool = False) -> list[tuple[int, dict]]:
    """(line number, record) of every record line of a file, parsed by ``json.loads``; a journal's
    last line without a newline is dropped, an output's is a line like the others."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if journal and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    rows = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if line.strip(b" \t\r"):
            r = json.loads(line)
            assert isinstance(r, dict), (path, number, line[:200])
            rows.append((number, r))
    return rows


@dataclass
class Reference:
    output: list[dict]
    journal: list[dict]

    @classmethod
    def read(cls, out: Path) -> Reference:
        return cls([r for _, r in file_rows(out)], [r for _, r in file_rows(journal_path(out), journal=True)])

    @property
    def all(self) -> list[dict]:
        return self.output + self.journal

    def newest(self) -> dict[str, tuple[int, dict]]:
        """key -> (position in output + journal, newest record)."""
        found: dict[str, tuple[int, dict]] = {}
        for position, r in enumerate(self.all):
            if isinstance(r.get("key"), str):
                found[r["key"]] = (position, r)
        return found


def is_ok(r: dict) -> bool:
    return r.get("status", "ok") == "ok"


PROBES = ["k1", "nope", "", "\udc80", 'k"q', "key", "ok"]  # keys asked for whether held or not


def assert_matches_reference(store: OutputStore, out: Path) -> Reference:
    """Every question of the contract, asked of the store and of the reference."""
    ref = Reference.read(out)
    newest = {k: r for k, (_, r) in ref.newest().items()}
    assert sorted(store.keys()) == sorted(newest)
    assert len(store) == len(newest)
    assert {k: canon(store.record(k)) for k in newest} == {k: canon(r) for k, r in newest.items()}
    asked = list(newest) + [k for k in PROBES if k not in newest]
    assert {k: (store.has(k), store.done(k), store.failed(k)) for k in asked} == {
        k: (k in newest, k in newest and is_ok(newest[k]), k in newest and not is_ok(newest[k])) for k in asked
    }
    assert sorted(canon_all(store.records())) == sorted(canon_all(newest.values()))
    assert canon_all(store.file_records()) == canon_all(ref.all)
    assert canon_all(store.output_records()) == canon_all(ref.output)
    return ref


def expected_finalize(ref: Reference, plan: list[str]) -> tuple[list[dict], dict[str, dict]]:
    """(planned records in plan order, key -> record of every keyed record the output should hold):
    the newest record of each planned key held (a planned key without a record is left out), and
    for every identity no planned record has, the newest record among the newest records of the keys."""
    newest = ref.newest()
    planned = [newest[k][1] for k in plan if k in newest]
    planned_ids = {ident(r) for r in planned}
    kept: dict[str, tuple[int, dict]] = {}
    for key, (position, r) in newest.items():
        if key in plan or ident(r) in planned_ids:
            continue
        if ident(r) not in kept or kept[ident(r)][0] < position:
            kept[ident(r)] = (position, r)
    held = {r["key"]: r for _, r in kept.values()}
    held.update({r["key"]: r for r in planned})
    return planned, held


def unchanged_by_contract(ref: Reference, plan: list[str], journalled: bool) -> bool:
    """Nothing journalled, and the output holds exactly one record per key and per identity,
    every planned key among them: finalize must not rewrite it."""
    keys = [r.get("key") for r in ref.output]
    ids = [ident(r) for r in ref.output]
    return (
        not journalled
        and not ref.journal
        and all(isinstance(k, str) for k in keys)
        and len(set(keys)) == len(keys)
        and len(set(ids)) == len(ids)
        and set(plan) <= set(keys)
    )


def stat_of(path: Path) -> tuple[int, int]:
    s = path.stat()
    return s.st_ino, s.st_mtime_ns


def assert_index_describes(out: Path) -> None:
    """The index finalize leaves beside the output says what reading the output says: a store built
    from it answers every question as one that reads the file (the index moved away)."""
    index = read_index(out)
    if any("\n" in k for k in OutputStore(out, ident).keys()):  # (one key a line: such keys are not indexed)
        assert index is None and not index_path(out).exists()
        return
    assert index is not None, "finalize left no index that describes the output"
    from_index = OutputStore(out, ident)
    assert from_index._indexed is not None
    saved = index_path(out).read_bytes()
    index_path(out).unlink()
    scanned = OutputStore(out, ident)
    index_path(out).write_bytes(saved)
    assert scanned._indexed is None
    assert store_contents(from_index) == store_contents(scanned) and from_index.final_lines == scanned.final_lines
    assert_matches_reference(from_index, out)


def finalize_and_check(store: OutputStore, out: Path, plan: list[str], *, journalled: bool) -> Records:
    """finalize(plan) against the reference: the Records returned, the file written, the journal gone,
    nothing else left in the folder; the file not rewritten when the contract says so."""
    ref = Reference.read(out)
    planned, held = expected_finalize(ref, plan)
    keyless = any(not isinstance(r.get("key"), str) for r in ref.all)
    unchanged = out.exists() and unchanged_by_contract(ref, plan, journalled)
    before = stat_of(out) if out.exists() else None
    before_bytes = out.read_bytes() if out.exists() else None
    folder = sorted(p.name for p in out.parent.iterdir() if p not in (journal_path(out), index_path(out)))
    records = store.finalize(plan)
    assert canon_all(records) == canon_all(planned)
    assert not journal_path(out).exists()
    index = {index_path(out).name} if index_path(out).exists() else set()  # (see assert_index_describes)
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(set(folder) | {out.name} | index)
    assert_index_describes(out)
    written = [r for _, r in file_rows(out)]
    rewritten = before is None or stat_of(out) != before or out.read_bytes() != before_bytes
    if unchanged:
        assert not rewritten, "finalize rewrote an output that already held exactly what it should"
    keyed = [r for r in written if isinstance(r.get("key"), str)]
    if not keyless:
        assert sorted(r["key"] for r in keyed) == sorted(held), "one record per key, the right keys"
        assert {r["key"]: canon(r) for r in keyed} == {k: canon(r) for k, r in held.items()}
    else:
        last = {r["key"]: r for r in keyed}
        assert {k: canon(last[k]) for k in plan if k in last} == {r["key"]: canon(r) for r in planned}
    if rewritten and planned:
        assert canon_all(keyed[-len(planned) :]) == canon_all(planned), "planned records last, in plan order"
    return records


# ---------------------------------------------------------------- writing lines as other tools write them

SEPARATORS = {"ragassay": (", ", ": "), "compact": (",", ":"), "spaced": (" , ", " : "), "tabs": ("\t,", ":\t")}


@dataclass(frozen=True)
class Style:
    top: tuple[str, str] = SEPARATORS["ragassay"]
    inner: tuple[str, str] = SEPARATORS["ragassay"]
    ascii: bool = False  # ensure_ascii
    slash: bool = False  # "/" written "\/"
    letters: bool = False  # ASCII letters written \u00XX (legal, unusual)
    lead: str = ""
    trail: str = ""


RAGASSAY = Style()


def enc_str(s: str, style: Style) -> str:
    out = []
    for c in s:
        if style.letters and c.isascii() and c.isalpha():
            out.append(f"\\u{ord(c):04x}")
        elif style.slash and c == "/":
            out.append("\\/")
        elif "\ud800" <= c <= "\udfff":  # a lone surrogate: escaped, as json.dumps writes it by default
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(json.dumps(c, ensure_ascii=style.ascii)[1:-1])
    return '"' + "".join(out) + '"'


def dump(v, style: Style = RAGASSAY, depth: int = 0) -> str:
    item, colon = style.top if depth == 0 else style.inner
    if isinstance(v, dict):
        return "{" + item.join(enc_str(k, style) + colon + dump(x, style, depth + 1) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + item.join(dump(x, style, depth + 1) for x in v) + "]"
    if isinstance(v, str):
        return enc_str(v, style)
    return json.dumps(v)


def line_of(r: dict, style: Style = RAGASSAY) -> bytes:
    return (style.lead + dump(r, style) + style.trail).encode("utf-8")


def rag(r: dict) -> bytes:
    """A line as ragassay writes it."""
    return json.dumps(r, ensure_ascii=False).encode("utf-8")


def write(
    path: Path,
    lines: list[bytes],
    *,
    end: bytes = b"\n",
    last_newline: bool = True,
    bom: bool = False,
    gz: bool = False,
    partial: bytes = b"",
) -> None:
    data = end.join(lines) + (end if lines and last_newline else b"") + partial
    if bom:
        data = b"\xef\xbb\xbf" + data
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data)


def drop(store: OutputStore) -> None:
    """Let a store go as a killed run's would (its journal no longer written)."""
    close = getattr(store, "close_journal", None)
    if close is not None:
        close()
    del store
    gc.collect()


def stderr_lines(capsys) -> list[str]:
    return [x for x in capsys.readouterr().err.splitlines() if x.strip()]


# ---------------------------------------------------------------- 1. lines that look like other lines

LOOKALIKES = {
    # (line, what json.loads says it is about)
    "nested key and status, none at the top": b'{"id": "a", "meta": {"key": "inner", "status": "error"}}',
    "nested status only, top key without status": b'{"id": "a", "key": "k", "meta": {"status": "error"}}',
    "nested status in a list, top key without status": b'{"id": "a", "key": "k", "m": [{"status": "error"}]}',
    "compact top key, ragassay-spaced nested key": b'{"id":"a","key":"real","n":{"key": "fake"},"status":"ok"}',
    "compact top status, spaced nested status": b'{"id": "a", "key": "k", "status":"error", "n": {"status": "ok"}}',
    "spaced colon top key, nested key": b'{"id": "a", "key" : "real", "n": {"key": "fake"}, "status": "ok"}',
    "int key, nested string key": b'{"id": "a", "key": 7, "n": {"key": "fake"}, "status": "ok"}',
    "null key, nested string key": b'{"id": "a", "key": null, "n": {"key": "fake"}, "status": "ok"}',
    "object key holding a key": b'{"id": "a", "key": {"key": "fake"}, "status": "ok"}',
    "list key": b'{"id": "a", "key": ["fake"], "status": "ok"}',
    "field name ending in a quoted key": b'{"id": "a", "status": "ok", "say \\"key": "fake"}',
    "field name ending in a quoted status": b'{"id": "a", "key": "k", "say \\"status": "error"}',
    "field name that is a whole key field": b'{"id": "a", "\\"key\\": \\"fake\\"": 1, "status": "ok"}',
    "key field spelled with an escape": b'{"id": "a", "\\u006bey": "k", "status": "ok"}',
    "status field spelled with an escape": b'{"id": "a", "key": "k", "st\\u0061tus": "error"}',
    "status value spelled with an escape": b'{"id": "a", "key": "k", "status": "o\\u006b"}',
    "status ok followed by more text": b'{"id": "a", "key": "k", "status": "ok\\"", "t": 1}',
    "status true": b'{"id": "a", "key": "k", "status": true}',
    "status list holding ok": b'{"id": "a", "key": "k", "status": ["ok"]}',
    "status null": b'{"id": "a", "key": "k", "status": null}',
    "key ending in a backslash": b'{"id": "a", "key": "k\\\\", "status": "error"}',
    "key that is one backslash": b'{"id": "a", "key": "\\\\", "status": "error"}',
    "key holding an escaped key field": b'{"id": "a", "key": "\\"key\\": \\"x\\"", "status": "ok"}',
    "key with a slash written \\/": b'{"id": "a", "key": "a\\/b", "status": "error"}',
    "key with an escaped surrogate pair": b'{"id": "a", "key": "\\ud83d\\ude00", "status": "error"}',
    "key with an escaped lone surrogate": b'{"id": "a", "key": "\\udc80", "status": "error"}',
    "key with escaped letters": b'{"id": "a", "key": "\\u006b1", "status": "error"}',
    "duplicate key field, the last one wins": b'{"id": "a", "key": "first", "status": "ok", "key": "second"}',
    "duplicate status field, the last one wins": b'{"id": "a", "status": "error", "key": "k", "status": "ok"}',
    "leading and trailing spaces": b'  \t{"id": "a", "key": "k", "status": "error"} \t',
    "tabs between tokens": b'{"id":\t"a",\t"key":\t"k",\t"status":\t"error"}',
    "key last after a long text holding key fields": b'{"id": "a", "t": "\\"key\\": \\"x\\", \\"status\\": \\"ok\\"", '
    b'"status": "error", "key": "k"}',
    "raw U+2028 and U+0085 in the key": '{"id": "a", "key": "a\u2028b\x85c", "status": "error"}'.encode(),
}


def around(line: bytes) -> list[bytes]:
    """The line among ragassay-shaped neighbours (a block the store would read the fast way)."""
    return [rag({"id": "b", "key": "k1", "status": "ok"}), line, rag({"id": "c", "key": "k2", "status": "error"})]


@pytest.mark.parametrize("name", list(LOOKALIKES))
@pytest.mark.parametrize("where", ["output", "journal"])
def test_a_lookalike_line_is_read_as_json_loads_reads_it(tmp_path, name, where):
    out = tmp_path / "o.jsonl"
    lines = around(LOOKALIKES[name])
    if where == "output":
        write(out, lines)
    else:
        write(journal_path(out), lines)
    store = OutputStore(out, ident)
    assert_matches_reference(store, out)


# ---------------------------------------------------------------- 2. one key spelled two ways across the files

SPELLINGS = [
    # (output line, journal line): the same key, the journal's record the newer
    (b'{"id": "a", "key": "caf\\u00e9", "status": "error"}', '{"id": "a", "key": "café", "status": "ok"}'.encode()),
    ('{"id": "a", "key": "café", "status": "ok"}'.encode(), b'{"id": "a", "key": "caf\\u00e9", "status": "error"}'),
    (b'{"id": "a", "key": "a\\/b", "status": "ok"}', b'{"id": "a", "key": "a/b", "status": "error"}'),
    (b'{"id": "a", "key": "\\u006b1", "status": "ok"}', b'{"id": "a", "key": "k1", "status": "error"}'),
    (b'{"id": "a", "key": "\\ud83d\\ude00", "status": "error"}', '{"id": "a", "key": "😀", "status": "ok"}'.encode()),
    (b'{"id": "a", "key": "q\\"", "status": "ok"}', b'{"id": "a", "key": "q\\u0022", "status": "error"}'),
    (b'{"id": "a", "key": "k", "status": "error"}', b'{"id": "a", "key": "k", "status": "o\\u006b"}'),
    (b'{"id":"a","key":"k","status":"ok"}', b'{"id": "a", "key": "k", "status": "error"}'),
    (b'{"id": "a", "key": "k", "status": "error"}', b'{"status":"ok","key":"k","id":"a"}'),
]


@pytest.mark.parametrize("pair", SPELLINGS, ids=[f"pair{i}" for i in range(len(SPELLINGS))])
def test_one_key_spelled_two_ways_is_one_key_and_the_journal_wins(tmp_path, pair):
    out = tmp_path / "o.jsonl"
    write(out, [pair[0], rag({"id": "z", "key": "other", "status": "ok"})])
    write(journal_path(out), [pair[1]])
    store = OutputStore(out, ident)
    ref = assert_matches_reference(store, out)
    assert len(store) == 2 == len(ref.newest())


# ---------------------------------------------------------------- 3. values json.loads reads its own way

VALUES = {
    "integer past 64 bits": b'{"id": "a", "key": "k", "status": "ok", "n": 18446744073709551616}',
    "negative integer past 64 bits": b'{"id": "a", "key": "k", "status": "ok", "n": -9223372036854775809}',
    "integer of 30 digits": b'{"id": "a", "key": "k", "status": "ok", "n": 123456789012345678901234567890}',
    "NaN (json.dumps writes it)": b'{"id": "a", "key": "k", "status": "ok", "score": NaN}',
    "Infinity": b'{"id": "a", "key": "k", "status": "ok", "score": Infinity}',
    "-Infinity": b'{"id": "a", "key": "k", "status": "ok", "score": -Infinity}',
    "1e400": b'{"id": "a", "key": "k", "status": "ok", "score": 1e400}',
    "minus zero": b'{"id": "a", "key": "k", "status": "ok", "score": -0.0}',
    "1.0 stays a float, 1 an int": b'{"id": "a", "key": "k", "status": "ok", "f": 1.0, "i": 1, "b": true}',
    "lone surrogate in a text": b'{"id": "a", "key": "k", "status": "ok", "t": "\\udc80"}',
    "reversed surrogate pair": b'{"id": "a", "key": "k", "status": "ok", "t": "\\udc80\\ud800"}',
    "duplicate field": b'{"id": "a", "key": "k", "status": "ok", "x": 1, "x": 2}',
    "field order kept": b'{"z": 1, "status": "ok", "a": 2, "key": "k", "id": "a"}',
}


@pytest.mark.parametrize("name", list(VALUES))
@pytest.mark.parametrize("where", ["output", "journal", "appended", "finalized"])
def test_a_record_is_exactly_what_json_loads_reads(tmp_path, name, where):
    out = tmp_path / "o.jsonl"
    line = VALUES[name]
    expected = json.loads(line)
    if where == "journal":
        write(journal_path(out), around(line))
    elif where != "appended":
        write(out, around(line))
    store = OutputStore(out, ident)
    if where == "appended":
        store.append([json.loads(x) for x in around(line)])
    assert_matches_reference(store, out)
    if where == "finalized":  # through a rewrite: the record is still the same
        store.append([{"id": "z", "key": "new", "status": "ok"}])
        records = store.finalize(["new"])
        assert canon_all(records) == [canon({"id": "z", "key": "new", "status": "ok"})]
        assert canon(OutputStore(out, ident).record("k")) == canon(expected)
    assert canon(store.record("k")) == canon(expected)


def test_records_appended_with_awkward_text_read_back_as_appended(tmp_path):
    out = tmp_path / "o.jsonl"
    records = [
        {"id": "a", "key": "\udc80", "status": "ok", "t": "lone \ud800 surrogate"},
        {"id": "b", "key": 'k"\\\n"key": "x"', "status": "ok", "t": "\u2028\u2029\x85\x00\x7f"},
        {"id": "c", "key": "\U0001f600", "status": "error", "error": "boom", "n": -(2**63)},
        {"id": "d", "key": "k", "status": "ok", "score": float("nan")},
        {"id": "d", "key": "k", "status": "error", "error": "newer, same call"},
    ]
    store = OutputStore(out, ident)
    store.append(records)
    expected = {r["key"]: canon(r) for r in records}
    assert {k: canon(store.record(k)) for k in expected} == expected
    assert store.failed("k") and store.done("\udc80")
    drop(store)
    again = OutputStore(out, ident)  # what the journal holds, read by the next run
    assert {k: canon(again.record(k)) for k in expected} == expected
    assert_matches_reference(again, out)


# ---------------------------------------------------------------- 4. lines that are not records

BAD_LINES = {
    "array": b'[{"id": "a", "key": "a", "status": "ok"}]',
    "string": b'"{\\"id\\": \\"a\\", \\"key\\": \\"a\\"}"',
    "number": b"42",
    "null": b"null",
    "cut short": b'{"id": "a", "key": "a", "status": "ok"',
    "one brace too many": b'{"id": "a", "key": "a", "status": "ok"}}',
    "two opening braces": b'{{"id": "a", "key": "a", "status": "ok"}',
    "trailing comma": b'{"id": "a", "key": "a", "status": "ok",}',
    "two objects on a line": b'{"id": "a", "key": "a", "status": "ok"} {"id": "b", "key": "b", "status": "ok"}',
    "missing value": b'{"id": "a", "key": "a", "status": "ok", "x": }',
    "bare word": b'{"id": "a", "key": "a", "status": "ok", "x": yes}',
    "single quotes": b"{'id': 'a', 'key': 'a', 'status': 'ok'}",
    "invalid UTF-8": b'{"id": "a", "key": "a", "status": "ok", "t": "\xff\xfe"}',
    "raw tab inside the key": b'{"id": "a", "key": "a\tb", "status": "ok"}',
    "raw control character in a text": b'{"id": "a", "key": "a", "status": "ok", "t": "\x01"}',
    "unterminated string": b'{"id": "a", "key": "a", "status": "ok", "t": "x}',
    "invalid escape": b'{"id": "a", "key": "a", "status": "ok", "t": "\\q"}',
    "comment after the object": b'{"id": "a", "key": "a", "status": "ok"} // done',
}


def bad_files(out: Path, bad: bytes, where: str, superseded: bool) -> tuple[Path, int]:
    """Write the bad line where asked; return the file and line number an error must name."""
    good = [rag({"id": "x", "key": "x1", "status": "ok"}), rag({"id": "y", "key": "y1", "status": "error"})]
    later = [rag({"id": "a", "key": "a", "status": "ok"} if superseded else {"id": "z", "key": "z", "status": "ok"})]
    if where == "output":  # a BOM, CRLF ends and a blank line before it: it is line 4
        write(out, [good[0], b"   ", good[1], bad] + later, end=b"\r\n", bom=True)
        return out, 4
    if where == "journal":  # not its last line: it is line 3
        write(journal_path(out), [good[0], b"", bad] + later)
        return journal_path(out), 3
    write(journal_path(out), [good[0], b"", bad])  # the journal's last line, with its newline: a line, not a cut
    return journal_path(out), 3


@pytest.mark.parametrize("name", list(BAD_LINES))
@pytest.mark.parametrize("where", ["output", "journal", "journal-last"])
@pytest.mark.parametrize("superseded", [False, True], ids=["alone", "superseded"])
def test_a_line_that_is_not_a_json_object_is_refused_naming_file_and_line(tmp_path, name, where, superseded):
    """An InputError naming file and line: when the store is built, or (a line in ragassay's shape
    whose keys are read without parsing it, so that a rerun pays no parse per record) when the
    line is read: its record, or every record of the files."""
    with pytest.raises((ValueError, AttributeError)):  # not JSON, or JSON that is not an object
        json.loads(BAD_LINES[name]).keys()  # the reference agrees the line is not a record
    path, number = bad_files(tmp_path / "o.jsonl", BAD_LINES[name], where, superseded)
    try:
        store = OutputStore(tmp_path / "o.jsonl", ident)
    except InputError as e:
        assert str(e).startswith(f"{path}:{number}: ")
        return
    if store.has("a") and not superseded:
        with pytest.raises(InputError) as e:
            store.record("a")
        assert str(e.value).startswith(f"{path}:{number}: ")
    with pytest.raises(InputError) as e:
        list(store.file_records())
    assert str(e.value).startswith(f"{path}:{number}: ")


@pytest.mark.parametrize("name", list(BAD_LINES))
@pytest.mark.parametrize("plan", [[], ["a"]], ids=["kept", "planned"])
def test_a_line_that_is_not_a_json_object_never_reaches_a_finalized_output(tmp_path, name, plan):
    """Weaker than the above: if the store took the line, reading it is an InputError naming file and
    line, and finalize neither copies it into the output nor loses the journal."""
    out = tmp_path / "o.jsonl"
    path, number = bad_files(out, BAD_LINES[name], "output", False)
    write(journal_path(out), [rag({"id": "j", "key": "j", "status": "ok"})])
    journal_before = journal_path(out).read_bytes()
    try:
        store = OutputStore(out, ident)
    except InputError as e:
        assert str(e).startswith(f"{path}:{number}: ")
        return
    if store.has("a"):
        with pytest.raises(InputError) as e:
            store.record("a")
        assert str(e.value).startswith(f"{path}:{number}: ")
    try:
        store.finalize(plan + ["j"])
    except InputError:
        assert journal_path(out).read_bytes() == journal_before, "finalize failed and the journal went with it"
        return
    [r for _, r in file_rows(out)]  # every line of what it wrote is a record


def test_line_numbers_count_every_line_across_blocks_gzip_and_the_journal(tmp_path):
    cut = b'{"id": "a", "key": "a", "status": "ok"'
    lines = [rag({"id": str(i), "key": f"k{i}", "status": "ok", "t": "\u4e2d" * (i % 50)}) for i in range(40000)]
    lines[5000] = b""
    lines[5001] = b" \t "
    for name, kwargs in [
        ("plain.jsonl", {}),
        ("crlf.jsonl", {"end": b"\r\n"}),
        ("gz.jsonl", {"gz": True}),
        ("bom.jsonl", {"bom": True}),
    ]:
        out = tmp_path / name
        write(out, lines[:31233] + [cut] + lines[31233:], **kwargs)
        with pytest.raises(InputError) as e:
            OutputStore(out, ident)
        assert str(e.value).startswith(f"{out}:31234: "), name
    out = tmp_path / "j.jsonl"
    write(journal_path(out), lines[:2499] + [cut] + lines[2499:3000])
    with pytest.raises(InputError) as e:
        OutputStore(out, ident)
    assert str(e.value).startswith(f"{journal_path(out)}:2500: ")


# ---------------------------------------------------------------- 5. blank lines, BOM, CRLF, gzip, last lines


def test_blank_lines_of_every_kind_are_ignored(tmp_path):
    out = tmp_path / "o.jsonl"
    a, b = rag({"id": "a", "key": "ka", "status": "ok"}), rag({"id": "b", "key": "kb", "status": "error"})
    out.write_bytes(b"\n\n" + a + b"\n \n\t\n\r\n  \t \r\n" + b + b"\n\n")
    journal_path(out).write_bytes(b"\n" + rag({"id": "a", "key": "ka", "status": "error"}) + b"\n \n\t\n\r\n")
    store = OutputStore(out, ident)
    assert_matches_reference(store, out)
    assert store.failed("ka") and len(store) == 2


def test_a_gzip_output_of_several_members_is_read_whole(tmp_path):
    """``cat a.jsonl.gz b.jsonl.gz`` is a gzip file; gzip.open and zcat read both members."""
    out = tmp_path / "o.jsonl"
    first = b"".join(rag({"id": i, "key": f"k{i}", "status": "ok"}) + b"\n" for i in "abc")
    second = b"".join(rag({"id": i, "key": f"k{i}", "status": "error"}) + b"\n" for i in "cde")
    out.write_bytes(gzip.compress(first) + gzip.compress(second))
    store = OutputStore(out, ident)
    assert sorted(store.keys()) == ["ka", "kb", "kc", "kd", "ke"]
    assert store.failed("kc") and store.done("ka")
    assert_matches_reference(store, out)


@pytest.mark.parametrize("form", ["plain", "crlf", "gzip", "bom", "gzip-bom-crlf"])
def test_the_output_last_line_without_a_newline_is_a_record(tmp_path, form):
    out = tmp_path / "o.jsonl"
    lines = [rag({"id": "a", "key": "ka", "status": "ok"}), rag({"id": "b", "key": "kb", "status": "error", "t": "中"})]
    write(
        out, lines, last_newline=False, end=b"\r\n" if "crlf" in form else b"\n", gz="gzip" in form, bom="bom" in form
    )
    store = OutputStore(out, ident)
    assert store.failed("kb") and store.record("kb")["t"] == "中"
    assert_matches_reference(store, out)
    assert canon_all(store.finalize(["ka", "kb"])) == canon_all(json.loads(x) for x in lines)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("tail", [b"\r", b"\n\r"], ids=["record-then-CR", "record-then-a-CR-line"])
def test_an_output_ending_in_a_carriage_return_reads_the_same_plain_or_gzipped(tmp_path, gz, tail):
    """A CRLF file whose last LF was lost: the plain file is read; so must the same bytes gzipped be."""
    out = tmp_path / "o.jsonl"
    data = (
        rag({"id": "a", "key": "ka", "status": "ok"}) + b"\r\n" + rag({"id": "b", "key": "kb", "status": "ok"}) + tail
    )
    out.write_bytes(gzip.compress(data) if gz else data)
    store = OutputStore(out, ident)
    assert sorted(store.keys()) == ["ka", "kb"]
    assert_matches_reference(store, out)


@pytest.mark.parametrize(
    "partial",
    [
        b'{"id": "c", "key": "kc", "status": "ok"}',  # whole, but the newline was never written
        b'{"id": "c", "key": "kc", "t": "\xe4\xb8',  # cut inside a 3-byte character
        b'{"id": "c", "key": "kc", "t": "\xf0\x9f\x98',  # cut inside a 4-byte character
        b'{"id": "c", "key": "kc", "status": "ok"}\r',  # a CRLF writer cut before its LF
        b'{"id": "c", "key": "k',  # cut inside the key
        b"{",
    ],
    ids=["whole-object", "mid-3-byte", "mid-4-byte", "cr-only", "mid-key", "one-brace"],
)
def test_a_partial_journal_line_is_dropped_with_one_message(tmp_path, capsys, partial):
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "c", "key": "kc", "status": "error"})])
    write(journal_path(out), [rag({"id": "a", "key": "ka", "status": "ok"})], partial=partial)
    capsys.readouterr()
    store = OutputStore(out, ident)
    assert len(stderr_lines(capsys)) == 1
    assert store.failed("kc") and not store.has("kx")
    assert_matches_reference(store, out)
    store.refresh()  # the engine does this once it holds the lock; nothing changed
    assert_matches_reference(store, out)
    assert stderr_lines(capsys) == []


def test_empty_files_hold_nothing(tmp_path):
    out = tmp_path / "o.jsonl"
    for data in [b"", b"\xef\xbb\xbf", b"\n", b"\r\n", gzip.compress(b"")]:
        out.write_bytes(data)
        store = OutputStore(str(out), ident)  # a str path works as well
        assert len(store) == 0 and store.keys() == [] and list(store.file_records()) == []
    assert journal_path("x.jsonl") == Path("x.jsonl.journal")


# ---------------------------------------------------------------- 6. a key's records across output, journal and appends


def test_the_newest_record_of_a_key_wins_wherever_it_is(tmp_path):
    out = tmp_path / "o.jsonl"
    write(
        out,
        [
            rag({"id": "a", "key": "k", "status": "ok", "n": 1}),
            rag({"id": "a", "key": "k", "status": "error", "n": 2}),
            b'{"n":3,"key":"k","id":"a"}',  # no status: ok
            rag({"id": "b", "key": "m", "status": "error", "n": 1}),
        ],
    )
    write(
        journal_path(out),
        [
            b'{"key":"m","status":"ok","id":"b","n":2}',
            rag({"id": "a", "key": "k", "status": "OK", "n": 4}),  # not "ok"
            rag({"id": "b", "key": "m", "n": 3}),
        ],
    )
    store = OutputStore(out, ident)
    assert_matches_reference(store, out)
    assert store.failed("k") and store.record("k")["n"] == 4 and store.done("m") and store.record("m")["n"] == 3
    store.append([{"id": "a", "key": "k", "status": "ok", "n": 5}])
    assert store.done("k") and store.record("k")["n"] == 5
    store.append(
        [
            {"id": "b", "key": "m", "status": "error", "error": "x", "n": 4},
            {"id": "a", "key": "k", "status": None, "n": 6},
        ]
    )
    assert store.failed("m") and store.failed("k") and store.record("k")["n"] == 6
    assert_matches_reference(store, out)
    assert len(list(store.file_records())) == 10 and len(store) == 2


# ---------------------------------------------------------------- 7. huge lines


def sized(record: dict, size: int, *, compact: bool = False) -> bytes:
    """The record's line, padded through its "t" field to exactly ``size`` bytes (3-byte characters
    in it: its length in characters is not its length in bytes)."""

    def encode(t: str) -> bytes:
        r = {"t": t, **record} if compact else {**record, "t": t}
        return json.dumps(r, ensure_ascii=False, separators=(",", ":") if compact else None).encode()

    pad = size - len(encode(""))
    text = "\u4e2d" * (pad // 3) + "x" * (pad % 3)
    line = encode(text)
    assert len(line) == size
    return line


@pytest.mark.parametrize("size", [(1 << 22) - 1, 1 << 22, (1 << 22) + 1])
def test_lines_past_4_mb(tmp_path, capsys, size):
    out = tmp_path / "o.jsonl"
    write(
        out,
        [
            rag({"id": "a", "key": "small1", "status": "ok"}),
            sized({"id": "b", "key": "big1", "status": "ok"}, size),
            rag({"id": "c", "key": "small2", "status": "error"}),
            sized({"id": "d", "key": "big2", "status": "error"}, size + 1, compact=True),  # key after the text
            rag({"id": "e", "key": "small3", "status": "ok"}),
        ],
    )
    huge_partial = sized({"id": "f", "key": "big4", "status": "ok"}, size)[:-7]
    write(
        journal_path(out),
        [sized({"id": "b", "key": "big1", "status": "error"}, size), rag({"id": "d", "key": "big2", "status": "ok"})],
        partial=huge_partial,
    )
    capsys.readouterr()
    store = OutputStore(out, ident)
    assert len(stderr_lines(capsys)) == 1
    assert_matches_reference(store, out)
    assert store.failed("big1") and store.done("big2") and not store.has("big4")
    big3 = {"id": "g", "key": "big3", "status": "ok", "t": "x" * size}
    store.append([big3])
    assert journal_path(out).read_bytes().endswith(rag(big3) + b"\n")  # the cut partial line is gone
    assert_matches_reference(store, out)
    records = finalize_and_check(store, out, ["big1", "big3", "small2"], journalled=True)
    assert len(records[0]["t"]) == len(json.loads(sized({"id": "b", "key": "big1", "status": "error"}, size))["t"])
    assert records[1] == big3
    assert_matches_reference(OutputStore(out, ident), out)


def test_a_line_of_16_mb(tmp_path):
    out = tmp_path / "o.jsonl"
    big = sized({"id": "b", "key": "big", "status": "error"}, (1 << 24) + 5, compact=True)
    write(
        out, [rag({"id": "a", "key": "small", "status": "ok"}), big, rag({"id": "c", "key": "after", "status": "ok"})]
    )
    store = OutputStore(out, ident)
    assert sorted(store.keys()) == ["after", "big", "small"] and store.failed("big")
    assert store.record("big") == json.loads(big)
    store.append([{"id": "c", "key": "after", "status": "error", "error": "x"}])
    records = store.finalize(["big", "after"])
    assert records[0] == json.loads(big) and records[1]["status"] == "error"
    assert [r["key"] for _, r in file_rows(out)] == ["small", "big", "after"]


# ---------------------------------------------------------------- 8. many thousands of lines, block boundaries


@pytest.mark.parametrize("form", ["lf", "crlf-gzip"])
def test_many_thousand_lines_match_the_reference(tmp_path, capsys, form):
    rnd = random.Random(form)
    out = tmp_path / "o.jsonl"
    pieces = ["x", "\u00e9", "\u4e2d", "\U0001f600", '"key": "', "\\", '"']
    lines = []
    for i in range(15000):
        k = rnd.randrange(20000)  # a key's identity never changes here (identities that move: section 10)
        r = {
            "id": f"i{k // 2}",
            "key": f"k{k}",
            "status": rnd.choice(["ok", "ok", "error"]),
            "t": "".join(rnd.choices(pieces, k=rnd.randrange(40))),
        }
        if i % 997 == 0:  # another tool's line with look-alike nested fields
            r = {"id": r["id"], "n": {"key": "fake", "status": "ok"}, "key": r["key"], "status": "error"}
            lines.append(json.dumps(r, separators=(",", ":")).encode())
        elif i % 991 == 0:
            lines.append(b"  ")
        else:
            lines.append(rag(r))
    journal = [
        rag({"id": f"i{k // 2}", "key": f"k{k}", "status": rnd.choice(["ok", "error"])})
        for k in (rnd.randrange(20000) for _ in range(2000))
    ]
    write(out, lines, end=b"\r\n" if "crlf" in form else b"\n", gz="gzip" in form)
    write(journal_path(out), journal, partial='{"id": "i1", "key": "k1", "t": "中'.encode()[:-1])
    capsys.readouterr()
    store = OutputStore(out, ident)
    assert len(stderr_lines(capsys)) == 1
    ref = assert_matches_reference(store, out)
    plan = sorted(ref.newest())[::3]
    finalize_and_check(store, out, plan, journalled=True)
    assert_matches_reference(OutputStore(out, ident), out)


@pytest.mark.parametrize("end", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("block", [None, 4096], ids=["real-block", "4k-block"])
def test_every_position_of_a_read_block_boundary_inside_a_line(tmp_path, monkeypatch, end, block):
    """Filler lines up to about one read block, then lines with a key, a status, multi-byte
    characters and a line end placed so that the block boundary falls on each of their bytes (on
    every third byte with the real 1 MiB block; on all of them with a 4 KiB one)."""
    if block:
        monkeypatch.setattr(store_files, "BLOCK", block)
    step = 1 if block else 3
    block = getattr(store_files, "BLOCK", 1 << 20)
    probe = [
        rag({"id": "p", "key": "k\u00e9\U0001f600", "status": "error", "t": "\u4e2d"}),
        rag({"id": "q", "key": "k2", "status": "ok"}),
        b"",
        b'{"id":"r","key":"k3","n":{"key":"fake","status":"ok"},"status":"error"}',
    ]
    span = sum(len(x) + len(end) for x in probe)
    filler_line = rag({"id": "f", "key": "f", "status": "ok", "t": "y" * 80})
    for shift in nonempty(range(0, span + 4, step)):
        start = block - span + shift  # where the probe lines begin
        n = start // (len(filler_line) + len(end)) - 1
        rest = start - n * (len(filler_line) + len(end)) - len(end)
        empty_head = {"id": "g", "key": "g", "status": "ok", "t": ""}
        head = rag({**empty_head, "t": "z" * (rest - len(rag(empty_head)))})
        out = tmp_path / f"o{shift}.jsonl"
        write(out, [filler_line] * n + [head] + probe, end=end)
        assert out.read_bytes().index(probe[0]) == start
        store = OutputStore(out, ident)
        got = (
            len(store),
            store.failed("k\u00e9\U0001f600"),
            store.done("k2"),
            store.failed("k3"),
            store.has("fake"),
            canon(store.record("k\u00e9\U0001f600")),
        )
        assert got == (5, True, True, True, False, canon(json.loads(probe[0]))), shift


# ---------------------------------------------------------------- 9. a journal cut mid-character, appended, cut again


def test_appends_after_a_partial_line_survive_a_second_and_third_kill(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "z", "key": "kz", "status": "ok"})])
    write(
        journal_path(out),
        [rag({"id": "a", "key": "ka", "status": "ok"}), rag({"id": "b", "key": "kb", "status": "error"})],
        partial='{"id": "c", "key": "kc", "t": "中'.encode()[:-2],
    )  # cut after the first byte of 中
    capsys.readouterr()
    first = OutputStore(out, ident)
    assert len(stderr_lines(capsys)) == 1
    first.refresh()  # the engine refreshes once it holds the lock, then appends
    first.append([{"id": "c", "key": "kc", "status": "ok", "t": "中"}])
    first.append([{"id": "d", "key": "kd", "status": "ok"}])
    journal_path(out).read_bytes().decode("utf-8")  # valid UTF-8: the cut byte is gone
    assert_matches_reference(first, out)
    drop(first)
    with open(journal_path(out), "ab") as f:  # killed again, inside a 4-byte character
        f.write('{"id": "e", "key": "ke", "t": "😀'.encode()[:-2])
    second = OutputStore(out, ident)
    assert len(stderr_lines(capsys)) == 1
    assert sorted(second.keys()) == ["ka", "kb", "kc", "kd", "kz"]
    second.append([{"id": "e", "key": "ke", "status": "error", "error": "x"}])
    assert_matches_reference(second, out)
    drop(second)
    with open(journal_path(out), "ab") as f:  # and once more, the record whole but its newline unwritten
        f.write(rag({"id": "b", "key": "kb", "status": "ok"}))
    third = OutputStore(out, ident)
    assert len(stderr_lines(capsys)) == 1
    assert third.failed("kb") and third.failed("ke")
    third.append([{"id": "b", "key": "kb", "status": "ok"}])
    journalled = [json.loads(x)["key"] for x in journal_path(out).read_bytes().splitlines()]
    assert journalled == ["ka", "kb", "kc", "kd", "ke", "kb"]
    assert_matches_reference(third, out)
    records = finalize_and_check(third, out, ["ka", "kb", "kc", "kd", "ke"], journalled=True)
    assert [r["key"] for r in records] == ["ka", "kb", "kc", "kd", "ke"]
    assert stderr_lines(capsys) == []


# ---------------------------------------------------------------- 10. identities that move


def test_a_key_whose_identity_moved_is_written_once(tmp_path):
    """Key k was about a in the output and is about b in the journal: the output holds k once (its
    newest record), and nothing of a, whose only record is k's superseded one."""
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "a", "key": "k", "status": "error"}), rag({"id": "c", "key": "kc", "status": "ok"})])
    store = OutputStore(out, ident)
    store.append([{"id": "b", "key": "k", "status": "ok"}])
    records = finalize_and_check(store, out, ["k"], journalled=True)
    assert records == [{"id": "b", "key": "k", "status": "ok"}]
    assert [r["key"] for _, r in file_rows(out)] == ["kc", "k"]


def test_a_moved_identity_drops_the_records_it_displaces(tmp_path):
    out = tmp_path / "o.jsonl"
    write(
        out,
        [
            rag({"id": "a", "key": "k1", "status": "ok"}),
            rag({"id": "b", "key": "k2", "status": "ok"}),
            rag({"id": "c", "key": "k3", "status": "ok"}),
            rag({"id": "c", "key": "k4", "status": "error"}),
        ],
    )
    store = OutputStore(out, ident)
    store.append([{"id": "b", "key": "k1", "status": "ok"}])  # k1 is now about b
    finalize_and_check(store, out, ["k1"], journalled=True)
    assert [r["key"] for _, r in file_rows(out)] == ["k4", "k1"]  # a has no record left, b is k1's, c its newest


def test_a_done_key_is_not_lost_when_its_identity_has_a_newer_superseded_line(tmp_path):
    """x's records: k5 (current) and k7 (later, but k7 is now about y): k5 stays done after finalize."""
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "x", "key": "k5", "status": "ok"}), rag({"id": "x", "key": "k7", "status": "ok"})])
    write(journal_path(out), [rag({"id": "y", "key": "k7", "status": "ok"})])
    store = OutputStore(out, ident)
    assert store.done("k5")
    store.finalize(["k7"])
    assert OutputStore(out, ident).done("k5"), out.read_text()


@pytest.mark.parametrize("ids", [("a", "a"), ("a", "b")], ids=["same-identity", "identity-moved"])
def test_an_output_with_a_key_twice_is_rewritten_even_when_nothing_was_journalled(tmp_path, ids):
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": ids[0], "key": "k", "status": "error"}), rag({"id": ids[1], "key": "k", "status": "ok"})])
    store = OutputStore(out, ident)
    records = finalize_and_check(store, out, ["k"], journalled=False)
    assert records == [{"id": ids[1], "key": "k", "status": "ok"}]
    assert [r["status"] for _, r in file_rows(out)] == ["ok"]


# ---------------------------------------------------------------- 11. when finalize must not rewrite, and when it must

UNCHANGED = {
    "plan order differs from file order": (
        [rag({"id": "b", "key": "kb"}), rag({"id": "a", "key": "ka", "status": "error"})],
        {},
    ),
    "compact separators and other field order": (
        [b'{"status":"ok","key":"ka","id":"a"}', b'{"key":"kb","id":"b"}'],
        {},
    ),
    "CRLF, BOM": ([rag({"id": "a", "key": "ka"}), rag({"id": "b", "key": "kb"})], {"end": b"\r\n", "bom": True}),
    "gzip": ([rag({"id": "a", "key": "ka"}), rag({"id": "b", "key": "kb"})], {"gz": True}),
    "no last newline": ([rag({"id": "a", "key": "ka"}), rag({"id": "b", "key": "kb"})], {"last_newline": False}),
    "an unplanned identity beside": ([rag({"id": i, "key": f"k{i}"}) for i in "abc"], {}),
}


@pytest.mark.parametrize("journal", ["none", "empty", "append-nothing"])
@pytest.mark.parametrize("name", list(UNCHANGED))
def test_an_output_that_already_holds_the_plan_is_not_rewritten(tmp_path, name, journal):
    out = tmp_path / "o.jsonl"
    lines, kwargs = UNCHANGED[name]
    write(out, lines, **kwargs)
    if journal == "empty":  # a run that opened its journal and was stopped before its first record
        journal_path(out).write_bytes(b"")
    store = OutputStore(out, ident)
    if journal == "append-nothing":
        store.append([])
    before, data = stat_of(out), out.read_bytes()
    records = store.finalize(["ka", "kb"])
    assert (stat_of(out), out.read_bytes()) == (before, data)
    assert [r["key"] for r in records] == ["ka", "kb"]  # plan order, whatever the file's order
    assert not journal_path(out).exists()
    if kwargs.get("gz"):  # read whole from memory, not by location: no index
        assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl"]
        return
    assert sorted(p.name for p in tmp_path.iterdir()) == [".o.jsonl.index", "o.jsonl"]  # the index alone is new
    assert_index_describes(out)


# ---------------------------------------------------------------- 12. finalize twice, finalize keys it does not hold


def test_finalize_twice(tmp_path):
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": i, "key": f"k{i}", "status": "ok"}) for i in "abc"])
    store = OutputStore(out, ident)
    store.append([{"id": "a", "key": "ka", "status": "error", "error": "x"}, {"id": "d", "key": "kd", "status": "ok"}])
    first = finalize_and_check(store, out, ["ka", "kd"], journalled=True)
    second = finalize_and_check(store, out, ["ka", "kd"], journalled=True)  # may rewrite: this store journalled once
    assert list(first) == list(second)
    assert_matches_reference(store, out)
    store.append([{"id": "e", "key": "ke", "status": "ok"}])
    finalize_and_check(store, out, ["ke", "ka"], journalled=True)
    assert [r["key"] for _, r in file_rows(out)] == ["kb", "kc", "kd", "ke", "ka"]
    assert_matches_reference(store, out)
    assert_matches_reference(OutputStore(out, ident), out)


def test_a_second_finalize_with_nothing_journalled_since_does_not_rewrite(tmp_path):
    out = tmp_path / "o.jsonl"
    store = OutputStore(out, ident)
    store.append([{"id": "a", "key": "ka", "status": "ok"}, {"id": "b", "key": "kb", "status": "ok"}])
    store.finalize(["ka", "kb"])
    before = stat_of(out)
    time.sleep(0.01)
    store.finalize(["ka", "kb"])
    assert stat_of(out) == before


def test_finalize_removes_a_journal_that_holds_no_record(tmp_path, capsys):
    """An empty journal, or one holding only a partial line, is still the journal: finalize removes it
    (left behind, every later run reports the same partial line again)."""
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "a", "key": "ka", "status": "ok"})])
    write(journal_path(out), [], partial=b'{"id": "b", "key": "kb", "sta')
    OutputStore(out, ident).finalize(["ka"])
    assert not journal_path(out).exists()


@pytest.mark.parametrize("plan", [["kx"], ["ka", "kx"], ["kx", "ka"]], ids=["only", "after", "before"])
@pytest.mark.parametrize("journalled", [False, True])
def test_finalize_with_a_key_it_does_not_hold(tmp_path, plan, journalled):
    """No record for a planned key: either refused, with the output and the journal as they were, or
    the key left out; never a broken output, a lost journal, or a Records that fails when read."""
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "a", "key": "ka", "status": "ok"}), rag({"id": "b", "key": "kb", "status": "ok"})])
    store = OutputStore(out, ident)
    if journalled:
        store.append([{"id": "a", "key": "ka", "status": "error", "error": "x"}])
    output_before = out.read_bytes()
    journal_before = journal_path(out).read_bytes() if journalled else None
    try:
        records = store.finalize(plan)
    except (KeyError, ValueError, LookupError) as e:  # refused (InputError is a ValueError)
        assert out.read_bytes() == output_before
        assert (journal_path(out).read_bytes() if journal_path(out).exists() else None) == journal_before, e
        left = ["o.jsonl"] + ([journal_path(out).name] if journalled else [])
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(left)
        return
    held = [k for k in plan if k != "kx"]
    assert [r["key"] for r in records] == held and len(records) == len(held)
    assert canon_all(records) == canon_all(store.record(k) for k in held)
    rows = [r for _, r in file_rows(out)]
    assert sorted(r["key"] for r in rows) == ["ka", "kb"] and not journal_path(out).exists()


# ---------------------------------------------------------------- 13. Records


def test_records_are_a_sequence_of_dicts(tmp_path):
    out = tmp_path / "o.jsonl"
    rows = [{"id": i, "key": f"k{i}", "status": "ok", "t": i * 2} for i in "abcde"]
    write(out, [rag(r) for r in rows[:3]])
    store = OutputStore(out, ident)
    store.append(rows[3:])
    records = store.finalize([r["key"] for r in rows])
    assert isinstance(records, Records) and isinstance(records, collections.abc.Sequence)
    assert len(records) == 5 and bool(records)
    assert records == rows and rows == records and not (records != rows)
    assert records != rows[::-1] and records != rows[:4] and records != rows + rows[:1]
    assert records[0] == rows[0] and records[-1] == rows[-1] and records[-5] == rows[0]
    assert records[1:3] == rows[1:3] and records[::-1] == rows[::-1] and records[::2] == rows[::2]
    assert records[7:] == [] and records[-2:] == rows[-2:]
    assert list(records) == rows and list(records) == rows  # iterated twice
    assert list(reversed(records)) == rows[::-1] and rows[2] in records
    with pytest.raises(IndexError):
        records[5]
    with pytest.raises(IndexError):
        records[-6]
    first = records[0]
    first["t"] = "changed"
    assert records[0] == rows[0] and store.record("ka") == rows[0]  # a read is a fresh dict
    empty = store.finalize([])
    assert len(empty) == 0 and empty == [] and not empty


def _replace(out: Path, data: bytes) -> None:
    tmp = out.with_name("incoming")
    tmp.write_bytes(data)
    os.replace(tmp, out)


@pytest.mark.parametrize(
    "how",
    [
        "not-rewritten-then-replaced",
        "not-rewritten-then-removed",
        "gzip-not-rewritten-then-replaced",
        "replaced-by-same-size",
        "store-dropped-then-replaced",
        "second-finalize-rewrites",
        "replaced-by-another-run-then-refresh",
    ],
)
def test_records_stay_readable_after_their_file_is_replaced(tmp_path, how):
    out = tmp_path / "o.jsonl"
    rows = [{"id": i, "key": f"k{i}", "status": "ok", "t": i * 3} for i in "abc"]
    write(out, [rag(r) for r in rows], gz=how.startswith("gzip"))
    store = OutputStore(out, ident)
    if how in ("store-dropped-then-replaced", "second-finalize-rewrites"):
        store.append([{"id": "a", "key": "ka", "status": "ok", "t": "new"}])
        rows[0] = {"id": "a", "key": "ka", "status": "ok", "t": "new"}
    records = store.finalize(["ka", "kb", "kc"])
    assert records == rows
    if how == "not-rewritten-then-removed":
        out.unlink()
    elif how == "replaced-by-same-size":  # same length, other bytes: a later run's output
        _replace(out, out.read_bytes().replace(b'"t": "aaa"', b'"t": "AAA"'))
    elif how == "store-dropped-then-replaced":
        del store
        gc.collect()
        _replace(out, rag({"id": "z", "key": "kz", "status": "ok"}) + b"\n")
    elif how == "replaced-by-another-run-then-refresh":
        other = OutputStore(out, ident)
        other.append([{"id": "b", "key": "kb", "status": "no"}])
        other.finalize(["kb"])
        drop(other)
        store.refresh()
    elif how == "second-finalize-rewrites":
        store.append([{"id": "b", "key": "kb", "status": "error", "error": "later"}])
        assert store.finalize(["kb"]) == [{"id": "b", "key": "kb", "status": "error", "error": "later"}]
    else:
        _replace(out, rag({"id": "z", "key": "kz", "status": "ok"}) + b"\n")
    assert records == rows
    assert [records[i] for i in range(3)] == rows and records[1:] == rows[1:]


def test_records_of_a_first_finalize_do_not_change_when_the_same_store_finalizes_again(tmp_path):
    """Same-length lines: the first Records, read at their old places in the new file, would read
    other records without any error."""
    out = tmp_path / "o.jsonl"
    store = OutputStore(out, ident)
    rows = [{"id": i, "key": f"k{i}", "status": "ok"} for i in "abc"]
    store.append(rows)
    first = store.finalize(["ka", "kb", "kc"])
    assert first == rows
    store.append([{"id": "b", "key": "kb", "status": "no"}])  # as long as "ok"
    store.finalize(["kb"])
    assert list(first) == rows


# ---------------------------------------------------------------- 14. refresh


def test_refresh_follows_what_another_run_did(tmp_path):
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "a", "key": "ka", "status": "ok"}), rag({"id": "b", "key": "kb", "status": "error"})])
    mine = OutputStore(out, ident)
    other = OutputStore(out, ident)
    other.append([{"id": "b", "key": "kb", "status": "ok"}, {"id": "c", "key": "kc", "status": "ok"}])
    drop(other)
    mine.refresh()
    assert mine.done("kb") and mine.done("kc")
    assert_matches_reference(mine, out)
    again = OutputStore(out, ident)
    again.finalize(["kb", "kc"])  # the journal goes, the output is replaced
    drop(again)
    mine.refresh()
    assert_matches_reference(mine, out)
    other = OutputStore(out, ident)  # a new run journals, and is stopped
    other.append([{"id": "a", "key": "ka", "status": "error", "error": "x"}])
    drop(other)
    mine.refresh()
    assert mine.failed("ka")
    assert_matches_reference(mine, out)
    out.unlink()
    journal_path(out).unlink()
    mine.refresh()
    assert len(mine) == 0 and not mine.has("ka") and list(mine.file_records()) == []


def test_refresh_sees_a_cut_partial_line_replaced_by_a_record_of_the_same_length(tmp_path, capsys):
    """Another run cut the partial line and appended a record exactly as long: the journal has the
    same size and inode, and other content."""
    out = tmp_path / "o.jsonl"
    partial = b'{"id": "b", "key": "kb", "status": "ok", "t": "' + b"x" * 40
    write(journal_path(out), [rag({"id": "a", "key": "ka", "status": "ok"})], partial=partial)
    mine = OutputStore(out, ident)
    size, inode = journal_path(out).stat().st_size, journal_path(out).stat().st_ino
    time.sleep(0.05)
    record = {"id": "b", "key": "kb", "status": "ok", "t": ""}
    record["t"] = "y" * (len(partial) - len(rag(record)) - 1)
    other = OutputStore(out, ident)
    other.append([record])
    drop(other)
    assert (journal_path(out).stat().st_size, journal_path(out).stat().st_ino) == (size, inode)
    mine.refresh()
    assert mine.done("kb") and mine.record("kb") == record
    assert_matches_reference(mine, out)


def test_refresh_after_own_appends_counts_nothing_twice(tmp_path):
    out = tmp_path / "o.jsonl"
    write(out, [rag({"id": "a", "key": "ka", "status": "ok"})])
    store = OutputStore(out, ident)
    store.append([{"id": "b", "key": "kb", "status": "ok"}])
    store.refresh()
    store.append([{"id": "c", "key": "kc", "status": "error", "error": "x"}])
    store.refresh()
    store.refresh()
    assert len(store) == 3 and len(list(store.file_records())) == 3
    assert_matches_reference(store, out)


# ---------------------------------------------------------------- 15. the whole contract, on generated files

KEY_POOL = [
    "k1",
    "k2",
    "k3",
    "caf\u00e9",
    'k"q',
    "k\\",
    "\\",
    "a/b",
    "a\nb",
    '"key": "x"',
    "\U0001f600",
    "\udc80",
    "",
    "ok",
    "key",
    "\u2028",
    "k1 ",
]
TRICKY = [
    "plain",
    'a "quoted" word',
    '"key": "fake"',
    '\\"key\\": \\"x\\"',
    "ends with a backslash \\",
    '"status": "ok"',
    '", "status": "error',
    "line\nbreak",
    "tab\tand \u00e9t\u00e9 \u4e2d\u6587 \U0001f600",
    '{"key": "inner"}',
    "",
    " ",
    '"key": ',
    '"',
    "\\",
    "\udc80",
    "\ud800x",
    "/",
    "\u2028\x85",
]
# Field names: with look-alikes (nested "key" and "status", names ending in a quoted key), or without.
NAMES = {
    True: ["text", "key", "status", 'x "key', 'x "status', '"key": "', 'status"', "id", "", "\\", "Key", "n"],
    False: ["text", "id", "", "\\", "Key", "keys", "Status", "n", '"key": "x"'],
}
TOP_NAMES = {
    True: ["text", 'x "key', 'x "status', '"key": "', "", "\\", "Key", "n"],
    False: ["text", "", "\\", "Key", "keys", "n", '"key": "x"'],
}
LEAVES = (
    st.sampled_from(TRICKY)
    | st.text(max_size=5)
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
)
NESTED = {
    flag: st.recursive(
        LEAVES,
        lambda c, flag=flag: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(NAMES[flag]), c, max_size=3),
        max_leaves=6,
    )
    for flag in (True, False)
}
KEY_VALUES = st.one_of(
    st.sampled_from(KEY_POOL),
    st.sampled_from(KEY_POOL),
    st.sampled_from(KEY_POOL),
    st.sampled_from([7, None, True, 1.5, ["k1"], {"key": "k1"}]),
)
STATUSES = st.one_of(
    st.sampled_from(["ok", "ok", "error", "OK", "ok ", ""]), st.sampled_from([None, True, 0, ["ok"], {"status": "ok"}])
)
SEPS = st.sampled_from(list(SEPARATORS.values()))
WS = (st.sampled_from(["", " ", "\t "]), st.sampled_from(["", " ", " \t"]))
STYLES = {  # any mix; or one spacing throughout a line and no escaped letters (the shapes sections 1 and 2 report)
    True: st.one_of(st.just(RAGASSAY), st.builds(Style, SEPS, SEPS, st.booleans(), st.booleans(), st.booleans(), *WS)),
    False: st.one_of(
        st.just(RAGASSAY),
        SEPS.flatmap(
            lambda sep: st.builds(Style, st.just(sep), st.just(sep), st.booleans(), st.booleans(), st.just(False), *WS)
        ),
    ),
}
IDS = ["a", "b", "c", "d"]


def id_of_key(key) -> str:
    """When identities do not move: a key's identity is always the same (several keys share one)."""
    return IDS[len(key) % 4] if isinstance(key, str) else "d"


@st.composite
def records(draw, keyed: bool = False, lookalikes: bool = True, moving: bool = True) -> dict:
    r: dict = {}
    for name in draw(st.lists(st.sampled_from(TOP_NAMES[lookalikes]), unique=True, max_size=3)):
        r[name] = draw(NESTED[lookalikes])
    if keyed or draw(st.integers(0, 9)) > 0:
        r["key"] = draw(st.sampled_from(KEY_POOL)) if keyed else draw(KEY_VALUES)
    r["id"] = draw(st.sampled_from(IDS)) if moving else id_of_key(r.get("key"))
    if draw(st.integers(0, 4)) > 0:
        r["status"] = draw(STATUSES)
    order = draw(st.permutations(list(r)))
    return {k: r[k] for k in order}


@st.composite
def files(draw, lookalikes: bool = True, moving: bool = True) -> dict:
    def lines(n: int) -> list[bytes]:
        return [
            line_of(draw(records(lookalikes=lookalikes, moving=moving)), draw(STYLES[lookalikes]))
            for _ in range(draw(st.integers(0, n)))
        ]

    output = lines(10)
    blanks = [b"", b" ", b"\t", b"\r"] if lookalikes else [b"", b" ", b"\t"]  # "\r" alone: see the report
    for _ in range(draw(st.integers(0, 2))):
        output.insert(draw(st.integers(0, len(output))), draw(st.sampled_from(blanks)))
    partial = b""
    kind = draw(st.sampled_from(["none", "none", "cut", "whole"]))
    if kind != "none":
        whole = line_of(draw(records(lookalikes=lookalikes, moving=moving)), draw(STYLES[lookalikes]))
        partial = whole if kind == "whole" else whole[: draw(st.integers(1, max(1, len(whole) - 1)))]
    return {
        "lines": output,
        "end": draw(st.sampled_from([b"\n", b"\r\n"])),
        "last_newline": draw(st.booleans()),
        "bom": draw(st.booleans()),
        "gz": draw(st.booleans()),
        "jlines": lines(6),
        "partial": partial,
        "block": draw(st.sampled_from([7, 64, 1 << 20])),
    }


def write_spec(out: Path, spec: dict) -> None:
    if spec["lines"] or spec["bom"] or spec["gz"]:
        write(out, spec["lines"], end=spec["end"], last_newline=spec["last_newline"], bom=spec["bom"], gz=spec["gz"])
    if spec["jlines"] or spec["partial"]:
        write(journal_path(out), spec["jlines"], partial=spec["partial"])


def read_check_append(out: Path, spec: dict, appended: list[dict], capsys) -> OutputStore:
    capsys.readouterr()
    store = OutputStore(out, ident)
    messages = stderr_lines(capsys)
    if spec["partial"].strip(b" \t\r"):
        assert len(messages) == 1, messages
    else:
        assert len(messages) <= (1 if spec["partial"] else 0), messages
    assert_matches_reference(store, out)
    store.refresh()
    assert_matches_reference(store, out)
    assert stderr_lines(capsys) == []
    store.append(appended)
    if appended:
        file_rows(journal_path(out))  # no partial line is left in the journal: every line is a record
    assert_matches_reference(store, out)
    return store


SLOW = settings(
    deadline=None,
    derandomize=True,
    database=None,  # the same examples, and report, every run
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(SLOW, max_examples=100, report_multiple_bugs=False)
@given(files(), st.lists(records(keyed=True), max_size=3))
def test_every_answer_matches_json_loads_on_generated_files(tmp_path, monkeypatch, capsys, spec, appended):
    """Anything goes: other tools' spacing per level, escaped letters, nested look-alikes."""
    monkeypatch.setattr(store_files, "BLOCK", spec["block"], raising=False)
    out = Path(tempfile.mkdtemp(dir=tmp_path)) / "o.jsonl"
    write_spec(out, spec)
    read_check_append(out, spec, appended, capsys)


@settings(SLOW, max_examples=150)
@given(
    files(lookalikes=False, moving=False),
    st.lists(records(keyed=True, lookalikes=False, moving=False), min_size=1, max_size=3),
    st.data(),
)
def test_every_answer_and_finalize_on_files_without_the_reported_shapes(
    tmp_path, monkeypatch, capsys, spec, appended, data
):
    """The same, and finalize with a random plan, on lines without the shapes the sections above
    show the store misreads (look-alike fields, mixed spacing, escaped letters, identities that move):
    what else breaks."""
    monkeypatch.setattr(store_files, "BLOCK", spec["block"], raising=False)
    out = Path(tempfile.mkdtemp(dir=tmp_path)) / "o.jsonl"
    write_spec(out, spec)
    store = read_check_append(out, spec, appended, capsys)
    held = list(Reference.read(out).newest())
    plan = data.draw(st.lists(st.sampled_from(held), unique=True) if held else st.just([]), label="plan")
    finalize_and_check(store, out, plan, journalled=True)
    assert_matches_reference(store, out)
    assert_matches_reference(OutputStore(out, ident), out)


# ------------------------------------------------------- 13. a plan said first: this run's records kept by position


def append_by_position(store: OutputStore, plan, records: list[dict], draw) -> None:
    """Append as the engine does once a plan is said: each record with its plan position, or a
    position that is not its key's (a stage that wrote another key), or none."""
    for r in records:
        spot = plan.index(r["key"]) if r["key"] in plan else None
        how = draw(st.sampled_from(["right", "right", "right", "wrong", "none"]), label="position")
        if how == "wrong" or spot is None:
            spot = draw(st.integers(-1, len(plan)), label="wrong position") if how != "none" else None
        store.append([r], None if spot is None else [spot])


@settings(SLOW, max_examples=150)
@given(
    files(lookalikes=False, moving=False),
    st.lists(records(keyed=True, lookalikes=False, moving=False), min_size=1, max_size=4),
    st.data(),
)
def test_a_plan_said_first_changes_no_answer(tmp_path, monkeypatch, capsys, spec, appended, data):
    """``expect(plan)`` then appends by plan position: every question, finalize, the index, a
    second round of appends and finalize, and a store read afresh answer as the reference does.
    The plan may hold keys not held, keys of the files and keys the appends add, in any order."""
    monkeypatch.setattr(store_files, "BLOCK", spec["block"], raising=False)
    out = Path(tempfile.mkdtemp(dir=tmp_path)) / "o.jsonl"
    write_spec(out, spec)
    capsys.readouterr()
    store = OutputStore(out, ident)
    pool = sorted(set(Reference.read(out).newest()) | {r["key"] for r in appended} | {"not-held"})
    plan = data.draw(st.lists(st.sampled_from(pool), unique=True), label="plan")
    if data.draw(st.booleans(), label="a KeyList"):  # as the engine gives it: packed where it can be
        from ragassay.runtime.plan_keys import KeyList

        packed = KeyList()
        for k in plan:
            packed.append(k, pack=data.draw(st.booleans(), label="pack"))
        assert list(packed) == plan
        plan = packed
    store.expect(plan)
    store.refresh()
    append_by_position(store, plan, appended, data.draw)
    assert_matches_reference(store, out)
    assert store.done_flags(plan) == [store.done(k) for k in plan]
    assert canon_all(store.failed_records(plan)) == canon_all(store.record(k) for k in plan if store.failed(k))
    assert canon_all(store.pinned(store.held_locations(plan))) == canon_all(
        store.record(k) for k in plan if store.has(k)
    )
    finalize_and_check(store, out, plan, journalled=True)
    assert_matches_reference(store, out)
    more = data.draw(st.lists(records(keyed=True, lookalikes=False, moving=False), max_size=3), label="round two")
    append_by_position(store, plan, more, data.draw)
    assert_matches_reference(store, out)
    finalize_and_check(store, out, plan, journalled=bool(more))
    assert_matches_reference(store, out)
    assert_matches_reference(OutputStore(out, ident), out)


def test_a_key_appended_by_position_then_without_one_is_held_once(tmp_path):
    """The engine never mixes the two, but the store must not count or keep such a key twice."""
    out = tmp_path / "o.jsonl"
    store = OutputStore(out, ident)
    plan = ["k1", "k2"]
    store.expect(plan)
    store.append([{"id": "a", "key": "k2", "status": "error", "error": "x"}], [1])
    assert store.has("k2") and store.failed("k2") and len(store) == 1
    store.append([{"id": "a", "key": "k2", "status": "ok", "n": 2}])
    assert len(store) == 1 and store.keys() == ["k2"] and store.done("k2") and store.record("k2")["n"] == 2
    assert store.done_flags(plan) == [False, True]
    records = store.finalize(plan)
    assert [r["n"] for r in records] == [2]
    assert [json.loads(x)["key"] for x in out.read_text().splitlines()] == ["k2"]
