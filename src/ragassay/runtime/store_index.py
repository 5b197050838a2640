"""A finished output's index, kept beside it (``.<output name>.index``, a hidden file) so that a
rerun need not read the output.

The store indexes an output by reading every line (a 100,000-record judgment is 30 MB: a quarter
of a second); the index holds what that reading finds (each key, where its line lies, whether it
is ok) and small results a stage computed from those records (its summary), and is written when
the output is. It is only a cache: it is used when it describes the output exactly as it is now (the
output's size, modification time and inode, and a digest of its first and last 64 KB, as recorded
when both were written) and otherwise ignored and written again; deleting it changes nothing but
the time a rerun takes.

The file: one JSON line (the header), then each record's location (8 bytes, little-endian), one
byte per record (1: ok), the keys in UTF-8, one per line, and last the memos as JSON (rewritten in
place when a stage adds one: a memo cut short is no memo, the index stays good).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "ragassay output index"
VERSION = 1
EDGE = 1 << 16  # bytes at each end of the output whose digest the index records
KEYS_AT_ONCE = 1 << 16  # keys encoded and written together


def index_path(output: str | Path) -> Path:
    path = Path(output)
    return path.with_name(f".{path.name}.index")


@dataclass
class Index:
    """What an index file says about its output."""

    key_text: bytes  # the keys in UTF-8, one per line (no newline after the last)
    locations: array  # array("q"), one per key
    ok: bytes  # one byte per key: 1 when its record is ok
    lines: int  # record lines in the output (lines without a key included)
    stamp: dict[str, Any]
    memos: dict[str, Any] = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        """The keys, in file order (made as asked: a store may hold them packed instead)."""
        return self.key_text.decode("utf-8", "surrogatepass").split("\n") if len(self.locations) else []

    def key_width(self) -> int:
        """The one length of every key when they are all ASCII of one length (then ``key_text``
        with its newlines taken out holds them packed); 0 otherwise."""
        text, n = self.key_text, len(self.locations)
        if not n or not text.isascii():
            return 0
        width = text.find(b"\n") if n > 1 else len(text)
        if width <= 0 or len(text) != n * (width + 1) - 1 or text[width :: width + 1] != b"\n" * (n - 1):
            return 0
        return width


def output_stamp(output: str | Path) -> dict[str, Any] | None:
    """The output as it is now: size, modification time, inode, and the digest of its ends."""
    try:
        with open(output, "rb") as f:
            st = os.fstat(f.fileno())
            head = f.read(EDGE)
            if st.st_size > EDGE:
                f.seek(max(EDGE, st.st_size - EDGE))
                tail = f.read(EDGE)
            else:
                tail = b""
    except OSError:
        return None
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
        "ends": hashlib.sha256(head + b"\0" + tail).hexdigest(),
    }


def _body(data: bytes) -> tuple[dict[str, Any], int, int] | None:
    """(header, where the locations begin, where the memos begin) of an index file's bytes."""
    end = data.find(b"\n")
    if end < 0:
        return None
    header = json.loads(data[:end])
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") != VERSION:
        return None
    n, key_bytes = header["rows"], header["key_bytes"]
    if not isinstance(n, int) or not isinstance(key_bytes, int) or n < 0 or key_bytes < 0:
        return None
    return header, end + 1, end + 1 + 9 * n + key_bytes


def read_index(output: str | Path) -> Index | None:
    """The index of ``output`` when there is one that describes the output as it is now; None
    otherwise (none, another version, written for an earlier output, damaged). Read a part at a
    time: the file is not held whole beside what is made of it."""
    try:
        with open(index_path(output), "rb") as f:
            first = f.readline()
            body = _body(first)
            if body is None:
                return None
            header, start, memos_at = body
            n = header["rows"]
            if os.fstat(f.fileno()).st_size < memos_at:
                return None  # (cut short, or a header that says more rows than there are)
            locations = array("q")
            locations.frombytes(f.read(8 * n))
            ok = f.read(n)
            key_text = f.read(memos_at - start - 9 * n)
            rest = f.read()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    try:
        if len(locations) != n or len(ok) != n or len(key_text) != memos_at - start - 9 * n:
            return None  # (cut short)
        if rest and not rest.startswith(b"{"):
            return None  # the memos begin elsewhere: the parts' sizes are not the file's
        if sys.byteorder != "little":
            locations.byteswap()
        if (key_text.count(b"\n") != n - 1 if n else key_text) or header["stamp"] != output_stamp(output):
            return None
        if not key_text.isascii():
            key_text.decode("utf-8", "surrogatepass")  # (keys not UTF-8: no index)
        try:
            memos = json.loads(rest) if rest else {}
        except ValueError:
            memos = {}  # (a memo being written: only the memos are lost)
        return Index(
            key_text, locations, ok, header["lines"], header["stamp"], memos if isinstance(memos, dict) else {}
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError):
        return None


def write_index(
    output: str | Path,
    keys: Sequence[str],
    locations: Sequence[int],
    ok: bytes,
    lines: int,
    stamp: dict[str, Any] | None = None,
) -> bool:
    """Write the index of ``output`` (replacing any): ``keys`` in file order with their records'
    ``locations``; False when it cannot be written or would not describe the output (a key holding
    a newline). Never an error: the index is a cache. The keys are written a slice at a time (a
    million keys are not joined into one string)."""
    if any("\n" in k for k in keys):
        return False
    stamp = stamp or output_stamp(output)
    if stamp is None:
        return False
    step = KEYS_AT_ONCE
    plain = all(map(str.isascii, keys))
    pieces = (
        None
        if plain
        else ["\n".join(keys[i : i + step]).encode("utf-8", "surrogatepass") for i in range(0, len(keys), step)]
    )
    if pieces is None:  # ASCII: a character a byte, a newline between keys
        key_bytes = sum(map(len, keys)) + max(len(keys) - 1, 0)
    else:  # each piece holds its keys' newlines; one more between pieces
        key_bytes = sum(map(len, pieces)) + max(len(pieces) - 1, 0)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "rows": len(keys),
        "key_bytes": key_bytes,
        "lines": lines,
        "stamp": stamp,
    }
    path = index_path(output)
    # one name: what a run killed while writing leaves, the next write replaces (the index is
    # written under the output's lock, so two writers never share it)
    tmp = path.with_name(f"{path.name}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(json.dumps(header).encode("utf-8") + b"\n")
            f.write(_little_endian(locations))
            f.write(ok)
            for i in range(0, len(keys), step):
                f.write(
                    (b"\n" if i else b"")
                    + (pieces[i // step] if pieces is not None else "\n".join(keys[i : i + step]).encode("ascii"))
                )
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return False
    return True


def _little_endian(values: Sequence[int]) -> bytes:
    out = values if isinstance(values, array) and values.typecode == "q" else array("q", values)
    if sys.byteorder != "little":
        out = array("q", out)
        out.byteswap()
    return out.tobytes()


def remove_index(output: str | Path) -> None:
    try:
        index_path(output).unlink(missing_ok=True)
    except OSError:
        pass


def digest_of(locations: Sequence[int]) -> str:
    """Which records a memo was computed from (their locations, in order)."""
    return hashlib.sha256(array("q", locations).tobytes()).hexdigest()


def remember(output: str | Path, name: str, of: str, value: Any, stamp: dict[str, Any]) -> bool:
    """Keep ``value`` in the index of ``output`` as the memo ``name`` of the records ``of`` (a
    :func:`digest_of`), when the index and the output are still those of ``stamp``: the memos at
    the file's end are rewritten, nothing else is read or written."""
    try:
        with open(index_path(output), "r+b") as f:
            first = f.readline()
            body = _body(first)
            if body is None or body[0].get("stamp") != stamp or output_stamp(output) != stamp:
                return False
            memos_at = body[2]
            if f.seek(0, os.SEEK_END) < memos_at:  # (cut short: not this file's to mend)
                return False
            f.seek(memos_at)
            try:
                memos = json.loads(f.read() or b"{}")
            except ValueError:
                memos = {}
            memos = memos if isinstance(memos, dict) else {}
            memos[name] = {"of": of, "value": value}
            f.seek(memos_at)
            f.write(json.dumps(memos).encode("utf-8"))
            f.truncate()
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True
