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
byte per record (1: ok), and the keys in UTF-8, one per line.
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


def index_path(output: str | Path) -> Path:
    path = Path(output)
    return path.with_name(f".{path.name}.index")


@dataclass
class Index:
    """What an index file says about its output."""

    keys: list[str]
    locations: array  # array("q"), one per key
    ok: bytes  # one byte per key: 1 when its record is ok
    lines: int  # record lines in the output (lines without a key included)
    stamp: dict[str, Any]
    memos: dict[str, Any] = field(default_factory=dict)


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
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino,
            "ends": hashlib.sha256(head + b"\0" + tail).hexdigest()}


def read_index(output: str | Path) -> Index | None:
    """The index of ``output`` when there is one that describes the output as it is now; None
    otherwise (none, another version, written for an earlier output, damaged)."""
    try:
        data = index_path(output).read_bytes()
    except OSError:
        return None
    try:
        end = data.index(b"\n")
        header = json.loads(data[:end])
        if header.get("format") != FORMAT or header.get("version") != VERSION:
            return None
        n, key_bytes = header["rows"], header["key_bytes"]
        start = end + 1
        locations = array("q")
        locations.frombytes(data[start:start + 8 * n])
        if sys.byteorder != "little":
            locations.byteswap()
        ok = data[start + 8 * n:start + 9 * n]
        blob = data[start + 9 * n:]
        if len(locations) != n or len(ok) != n or len(blob) != key_bytes:
            return None
        keys = blob.decode("utf-8", "surrogatepass").split("\n") if n else []
        if len(keys) != n or header["stamp"] != output_stamp(output):
            return None
        return Index(keys, locations, ok, header["lines"], header["stamp"], header.get("memos") or {})
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError):
        return None


def write_index(output: str | Path, keys: Sequence[str], locations: Sequence[int], ok: bytes, lines: int,
                memos: dict[str, Any] | None = None, stamp: dict[str, Any] | None = None) -> bool:
    """Write the index of ``output`` (replacing any); False when it cannot be written or would not
    describe the output (a key holding a newline). Never an error: the index is a cache."""
    if any("\n" in k for k in keys):
        return False
    stamp = stamp or output_stamp(output)
    if stamp is None:
        return False
    blob = "\n".join(keys).encode("utf-8", "surrogatepass")
    header = {"format": FORMAT, "version": VERSION, "rows": len(keys), "key_bytes": len(blob), "lines": lines,
              "stamp": stamp, "memos": memos or {}}
    where = locations.astype("<i8").tobytes() if hasattr(locations, "astype") else _little_endian(locations)
    path = index_path(output)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(json.dumps(header).encode("utf-8") + b"\n")
            f.write(where)
            f.write(ok)
            f.write(blob)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return False
    return True


def _little_endian(values: Sequence[int]) -> bytes:
    out = array("q", values)
    if sys.byteorder != "little":
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
    :func:`digest_of`), when the index and the output are still those of ``stamp``."""
    idx = read_index(output)
    if idx is None or idx.stamp != stamp:
        return False
    memos = dict(idx.memos)
    memos[name] = {"of": of, "value": value}
    return write_index(output, idx.keys, idx.locations, idx.ok, idx.lines, memos, stamp)
