"""The lines of an output store: how a record is written as one JSON line, how a line's key and
status are read without parsing it when it is plainly in ragassay's shape, and how a line's place
(offset, length and file) is packed into one integer, the location a store keeps per key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path

from ..data.lines import load_json_line

LENGTH_BITS = 24  # a location packs offset, line length (up to 16 MB; longer lines are read to their end) and file
LENGTH_MAX = (1 << LENGTH_BITS) - 1
_KEY = re.compile(rb'"key": "([^"\\]*)"')
_STATUS = re.compile(rb'"status": "([^"\\]*)"')


def journal_path(output: str | Path) -> Path:
    return Path(f"{output}.journal")


def record_line(record: dict) -> str:
    """A record as one JSON line of valid UTF-8: as written, or ASCII-escaped when a string in it
    holds a lone surrogate (which UTF-8 cannot carry; the escape reads back as the same text)."""
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record)
    return line


load_line = load_json_line  # one JSON line, read exactly as ``json.dumps`` wrote it (orjson when installed)


def key_status(line: bytes) -> tuple[str | None, bool]:
    """The record's key (None when it has none) and whether its status is ok (a record without a
    status is ok): read off the line when :func:`block_fields` can, parsed whole otherwise."""
    fields = block_fields(line)
    if fields is not None:
        return fields[0][0], fields[1][0] == b"ok"
    r = load_line(line)
    if not isinstance(r, dict):
        raise ValueError("not an object")
    key = r.get("key")
    return (key if isinstance(key, str) else None), r.get("status", "ok") == "ok"


def block_fields(block: bytes) -> tuple[list[str], list[bytes], list[int]] | None:
    """Each line's key, status and length, read without parsing, when every line of ``block`` is
    plainly in ragassay's shape: braced, with no object nested in it (one ``{``), no ``\\u`` escape,
    and exactly one ``"key": "..."`` and one ``"status": "..."`` field, each right after ``{`` or
    ``, `` (so a field, never text: inside a string every quote is escaped). Read in C-speed passes
    over the block, no Python call per line; None when any line is not so, and the caller parses."""
    if b"\\u" in block:
        return None
    lines = block.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    rows = len(lines)
    if (
        not rows
        or list(map(bytes.startswith, lines, repeat(b"{"))).count(True) != rows
        or list(map(bytes.endswith, lines, repeat(b"}"))).count(True) != rows
        or list(map(bytes.count, lines, repeat(b"{"))).count(1) != rows
        or list(map(bytes.count, lines, repeat(b'"key": '))).count(1) != rows
        or list(map(bytes.count, lines, repeat(b'"status": '))).count(1) != rows
        or _right_after_a_brace_or_comma(block, b'"key": "') != rows
        or _right_after_a_brace_or_comma(block, b'"status": "') != rows
    ):
        return None  # (one of each a line, each right after { or ', ': every line's one field is a field)
    keys = _KEY.findall(block)
    statuses = _STATUS.findall(block)
    lengths = list(map(len, lines))
    if len(keys) != rows or len(statuses) != rows or max(lengths) >= LENGTH_MAX:
        return None
    try:
        return b"\n".join(keys).decode("utf-8").split("\n"), statuses, lengths
    except UnicodeDecodeError:
        return None


def _right_after_a_brace_or_comma(block: bytes, field: bytes) -> int:
    """How many times ``field`` comes right after ", " or "{" in ``block`` (ragassay's lines never
    begin with it, so the second count is made only when the first falls short)."""
    n = block.count(b", " + field)
    return n if n == block.count(b"\n") else n + block.count(b"{" + field)


def split_lines(start: int, block: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each non-blank line of a run of lines starting at ``start``."""
    pos = 0
    for line in block.split(b"\n"):
        if line.strip():
            yield start + pos, line
        pos += len(line) + 1


def pack(offset: int, length: int, which: int) -> int:
    return (((offset << LENGTH_BITS) | min(length, LENGTH_MAX)) << 1) | which


def unpack(where: int) -> tuple[int, int, int]:
    return where >> (LENGTH_BITS + 1), (where >> 1) & LENGTH_MAX, where & 1


if hasattr(os, "pread"):

    def pread(fd: int, length: int, offset: int) -> bytes:
        return os.pread(fd, length, offset)
else:  # pragma: no cover - Windows

    def pread(fd: int, length: int, offset: int) -> bytes:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, length)
