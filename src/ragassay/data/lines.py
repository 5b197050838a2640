"""A text input's bytes and lines, and the files ragassay writes.

This module reads JSON Lines with the file and line named in every error, checks ids, and writes
files atomically so that a killed process never leaves half a file. It is the layer that every
reader and writer in ``data/`` stands on, and it imports none of them (``io``, ``origin``,
``peer_files`` and ``run_asked`` all import it), so that their imports cannot form a circle.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import InputError, OutputError


def read_bytes_checked(path: str | Path, allow_empty: bool = False) -> bytes:
    """The bytes of a text input (gzip undone, a UTF-8 byte-order mark dropped: it is the encoding's
    signature, not text), or one clear error naming the file: missing, a directory, unreadable,
    binary, or (unless ``allow_empty``) empty. Every reader of text files starts here (or at
    :func:`streamed_lines_at`, which drops the mark too), so none sees it."""
    return checked_bytes(*_raw_bytes(path), allow_empty=allow_empty)


def checked_bytes(data: bytes, p: Path, allow_empty: bool = False) -> bytes:
    """:func:`read_bytes_checked` of a file's bytes already read (``p`` names it in any error): a
    caller that hashed the bytes, as the pipeline's state does, parses the same ones."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"looks gzipped but cannot be decompressed ({e})", p) from None
    if data.startswith(UTF8_BOM):  # dropped, not blanked: a blank would be the start of a TSV id
        data = data[3:]
    if b"\x00" in data[:8192]:
        raise InputError("a binary file, expected text (JSON Lines, TREC or TSV)", p)
    if not allow_empty and (not data or data.isspace()):  # (isspace scans without copying a large file)
        raise InputError("file is empty", p)
    _check_line_ends_and_encoding(data, p)
    return data


ReadWatcher = Callable[[Path, bytes], None]
_READ_WATCHERS: ContextVar[tuple[ReadWatcher, ...]] = ContextVar("read_watchers", default=())


@contextmanager
def watching_reads(watcher: ReadWatcher) -> Iterator[None]:
    """While the block runs, hand ``watcher`` every file's bytes as a reader of this module reads them
    (before gzip is undone). A caller that needs a file's digest, as the pipeline's state does, then
    takes it from the read that parsed the file instead of opening the file once more to hash it."""
    token = _READ_WATCHERS.set((*_READ_WATCHERS.get(), watcher))
    try:
        yield
    finally:
        _READ_WATCHERS.reset(token)


def _raw_bytes(path: str | Path) -> tuple[bytes, Path]:
    """The bytes of a file (or of standard input, read once so two readers of one command see the same
    bytes) and the path errors name; a missing, unreadable file or a directory is one error."""
    p = Path(path)
    if str(path) == "-":
        return _stdin_bytes(), Path("<stdin>")
    if not p.exists():
        raise InputError("no such file", p)
    if p.is_dir():
        raise InputError("is a directory, expected a file", p)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", p) from None
    tell_watchers(p, data)
    return data, p


def tell_watchers(path: Path, data: bytes) -> None:
    """Hand a file's bytes, just read, to whoever is watching reads (see :func:`watching_reads`): a
    reader that does not go through this module's readers, as a sidecar's does, calls it itself."""
    for watcher in _READ_WATCHERS.get():
        watcher(path, data)


def _check_line_ends_and_encoding(data: bytes, p: Path) -> None:
    """Refuse a lone carriage return (it would join two lines into one) or bytes that are not UTF-8,
    naming the line of the first one."""
    crs = data.count(b"\r")
    if crs and crs != data.count(b"\r\n"):  # \n and \r\n end lines; a lone \r would join them into one
        at = next(i for i in _find_all(data, b"\r") if data[i + 1 : i + 2] != b"\n")
        raise InputError(
            "has lines ended by a lone carriage return (\\r, old Mac style), which would be read as "
            "one long line; convert the line ends to \\n",
            p,
            data.count(b"\n", 0, at) + 1,
        )
    if not data.isascii():  # one C-speed scan; decode only files that have non-ASCII bytes
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(
                f"not valid UTF-8 text (byte 0x{data[e.start]:02x}); save the file as UTF-8",
                p,
                data.count(b"\n", 0, e.start) + 1,
            ) from None


UTF8_BOM = b"\xef\xbb\xbf"


STREAM_FROM = 16 << 20  # a plain text input this large is read a line at a time, never held whole


def streamable(path: str | Path) -> bool:
    """A plain (not gzipped) file large enough to be read a line at a time."""
    if str(path) == "-":
        return False
    try:
        if os.path.getsize(path) < STREAM_FROM:
            return False
        with open(path, "rb") as f:
            return f.read(2) != b"\x1f\x8b"
    except OSError:
        return False  # read_bytes_checked says what is wrong


def streamed_lines(path: str | Path) -> Iterator[bytes]:
    """The lines of a large text input, one at a time, checked as :func:`read_bytes_checked`
    checks a whole file (BOM dropped; a binary file, a lone carriage return, bytes that are not
    UTF-8 and an empty file are one error naming the line), without holding the file."""
    return (line for _, line in streamed_lines_at(path))


def streamed_lines_at(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """:func:`streamed_lines` with where each line starts in the file (after a BOM)."""
    p = Path(path)
    try:
        f = open(p, "rb")
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", p) from None
    with f:
        if b"\x00" in f.read(8192):
            raise InputError("a binary file, expected text (JSON Lines, TREC or TSV)", p)
        f.seek(0)
        blank = True
        at = 0
        for no, line in enumerate(f, start=1):
            start = at
            at += len(line)
            if no == 1 and line.startswith(UTF8_BOM):
                line, start = line[3:], 3
            crs = line.count(b"\r")
            if crs and crs != line.endswith(b"\r\n"):
                raise InputError(
                    "has lines ended by a lone carriage return (\\r, old Mac style), which would be "
                    "read as one long line; convert the line ends to \\n",
                    p,
                    no,
                )
            if not line.isascii():
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise InputError(
                        f"not valid UTF-8 text (byte 0x{line[e.start]:02x}); save the file as UTF-8", p, no
                    ) from None
            if blank and not line.isspace():
                blank = False
            yield start, line
        if blank:
            raise InputError("file is empty", p)


def _find_all(data: bytes, needle: bytes) -> Iterator[int]:
    i = data.find(needle)
    while i != -1:
        yield i
        i = data.find(needle, i + 1)


@lru_cache(maxsize=1)
def _stdin_bytes() -> bytes:
    return sys.stdin.buffer.read()


def check_id(value: Any, what: str, path: str | Path | None, line: int | None) -> str:
    """An id as a string: a string, or a JSON integer as its decimal text. Never null, true/false, a
    fraction, a list or an object (their text would be an id nobody wrote); refused too when TREC
    files could not hold it (empty, or with whitespace)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        shown = (
            json.dumps(value, ensure_ascii=False)
            if isinstance(value, (type(None), bool, float, list, dict))
            else repr(value)
        )
        raise InputError(f"{what} must be a string, got {shown[:60]}", path, line)
    text = str(value)
    space = next((c for c in text if c.isspace()), None)
    if not text or space is not None:
        which_space = f" ({char_name(space)})" if space is not None else ""
        raise InputError(
            f"{what} {text!r} is empty or contains whitespace{which_space}, which TREC files cannot hold; rename it",
            path,
            line,
        )
    return text


def char_name(c: str) -> str:
    """A character as a person can find it in an editor: ``U+2028 LINE SEPARATOR``."""
    names = {
        "\t": "TAB",
        "\n": "LINE FEED",
        "\r": "CARRIAGE RETURN",
        "\x0b": "LINE TABULATION",
        "\x0c": "FORM FEED",
        "\x1c": "FILE SEPARATOR",
        "\x1d": "GROUP SEPARATOR",
        "\x1e": "RECORD SEPARATOR",
        "\x1f": "UNIT SEPARATOR",
        "\x85": "NEXT LINE",
    }  # control characters have no unicodedata name
    return f"U+{ord(c):04X} {names.get(c) or unicodedata.name(c, 'a control character')}"


class WrittenFloat(float):
    """A JSON number with a fraction or an exponent, that remembers how it was written ("1e2")."""

    text: str

    def __new__(cls, text: str) -> WrittenFloat:
        value = super().__new__(cls, text)
        value.text = text
        return value


def iter_jsonl(
    data: bytes | str | Path, path: str | Path | None = None, keep_float_text: bool = False, problems: Any = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line; bad JSON names file and line. With
    ``keep_float_text``, numbers with a fraction or exponent are :class:`WrittenFloat`. With
    ``problems`` (a :class:`~ragassay.data.line_problems.LineProblems`), a line that is not a JSON
    object is kept there and skipped, so the reader goes on to say every bad line."""
    if isinstance(data, (str, Path)):
        path = data
        lines: Iterable[bytes] = streamed_lines(data) if streamable(data) else io.BytesIO(read_bytes_checked(data))
    else:  # one line at a time from a view of the bytes: not a list of every line beside them
        lines = io.BytesIO(data)
    parse_float = WrittenFloat if keep_float_text else None
    parsed = False
    for no, raw in enumerate(lines, start=1):
        if raw.strip():
            if problems is None:
                yield no, parse_json_object(raw, path, no, parse_float)
                continue
            try:
                obj = parse_json_object(raw, path, no, parse_float)
            except InputError as e:
                if not parsed:  # the first line is no JSON object: the file is not JSON Lines, said once
                    raise
                problems.add_error(e)
                continue
            parsed = True
            yield no, obj


def parse_json_object(raw: bytes, path: str | Path | None, no: int, parse_float: Any = None) -> dict[str, Any]:
    """One line of a JSONL input as an object; anything else is one error naming file and line."""
    try:
        obj = load_json_line(raw) if parse_float is None else json.loads(raw, parse_float=parse_float)
    except UnicodeDecodeError:
        raise InputError("not valid UTF-8 text", path, no) from None
    except json.JSONDecodeError as e:
        msg = e.msg
        raise InputError(f"not valid JSON ({msg}): {raw[:80].decode('utf-8', 'replace')!r}", path, no) from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path, no)
    if b"\\u" in raw and _SURROGATE_ESCAPE.search(raw) and not _encodable(obj):
        raise InputError(
            "a string holds a lone surrogate escape (\\ud800 to \\udfff without its pair): half "
            "of a UTF-16 pair is not a character; fix or drop that escape",
            path,
            no,
        )
    return obj


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _encodable(obj: Any) -> bool:
    """Whether every string of ``obj`` is text UTF-8 can hold (a lone surrogate is not)."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def load_json_line(raw: bytes) -> Any:
    """A JSON line: orjson when installed (about three times as fast on a large chunks file), the
    standard library for anything orjson refuses (NaN, lone surrogates) or reads differently (an
    integer beyond 64 bits), which then reads it or raises the error the message quotes."""
    if _orjson is not None and not long_digit_run(raw):
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


_DIGITS = bytes.maketrans(b"0123456789", b"0" * 10)


def long_digit_run(data: bytes) -> bool:
    """Whether ``data`` has 19 digits in a row: a number orjson may read differently from the
    standard library (an integer past 64 bits comes back a float), so such text is read by the
    latter. (One C-speed pass: every digit made a 0, then one search.)"""
    return b"0000000000000000000" in data.translate(_DIGITS)


def lines_with_long_digit_runs(block: bytes) -> set[int]:
    """The (0-based) numbers of the lines of ``block`` that :func:`long_digit_run` would flag, found
    in one pass over the block: a few such lines (a hex key that happens to hold 19 digits) do not
    make every line of the block be checked on its own."""
    zeros = block.translate(_DIGITS)
    out: set[int] = set()
    line = counted = 0
    at = zeros.find(b"0000000000000000000")
    while at >= 0:
        line += block.count(b"\n", counted, at)  # (counted from the last run on: one pass in all)
        out.add(line)
        counted = block.find(b"\n", at)  # the next line's first run, if any
        if counted < 0:
            break
        at = zeros.find(b"0000000000000000000", counted)
    return out


def optional_orjson() -> Any:
    """The orjson module when it is installed (the ``fast`` extra), else None: the readers then use the
    standard library, which reads the same text to the same objects, only slower."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson


_orjson = optional_orjson()


def write_lines_atomic(path: str | Path, lines: Iterable[str | bytes]) -> None:
    """Write lines (text, or bytes already UTF-8) so that readers see the old file or the new one,
    never half of one; a full disk or a missing directory is one error naming the file, and the old
    file stays. Lines end in ``\\n`` on every system."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as f:
            for line in lines:
                f.write((line if isinstance(line, bytes) else line.encode("utf-8")) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(path, e) from None


def required_field(obj: Mapping[str, Any], names: tuple[str, ...], path: str | Path | None, no: int) -> Any:
    """The value of the first of ``names`` that a JSON line has. A line with none of them is one error
    that names every spelling that would do and the keys the line has, so the fix is plain."""
    for n in names:
        if n in obj:
            return obj[n]
    would = f"any of {', '.join(names)} would do; " if len(names) > 1 else ""
    raise InputError(f"missing field {names[0]!r} ({would}keys present: {', '.join(sorted(obj)) or 'none'})", path, no)
