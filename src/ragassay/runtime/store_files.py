"""Reading an output's two files, the final output and the journal of an unfinished run, by where
their lines lie: a line or a record at a location, many records read a block at a time, every
record in file order, and the files scanned a block of whole lines at a time (a journal's partial
last line left out). :class:`OutputFiles` is the part of the output store that reads; what it
indexes and writes is :class:`~.store.OutputStore`'s.
"""

from __future__ import annotations

import gzip
import os
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..data.lines import lines_with_long_digit_runs
from ..errors import InputError
from .store_lines import LENGTH_BITS, LENGTH_MAX, load_line, pack, pread, split_lines, unpack

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # optional (the ``fast`` extra)
    _orjson = None

BLOCK = 1 << 20  # bytes read at a time while scanning a file
_BOM = b"\xef\xbb\xbf"


class OutputFiles:
    """The output and its journal, read by location (a line's offset, length and file packed in one
    integer: see :func:`.store_lines.pack`). A gzipped output is read whole and served from memory."""

    def __init__(self, output: str | Path, journal: Path) -> None:
        self.output = Path(output)
        self.journal = journal
        self._paths = [self.output, self.journal]
        self._fds: list[int | None] = [None, None]
        self._memory: list[bytes | None] = [None, None]  # a gzipped output, read whole
        self.final_lines = self.journal_lines = 0  # record lines in each file
        self._journal_end = self._journal_size = 0  # after the last whole line; the file's size as scanned

    def _lines(self, which: int, cut_partial: bool) -> Iterator[tuple[int, bytes]]:
        """(offset, line) of each non-blank line."""
        for start, block in self._blocks(which, cut_partial):
            yield from split_lines(start, block)

    def _blocks(self, which: int, cut_partial: bool, warn: bool = False) -> Iterator[tuple[int, bytes]]:
        """(offset, bytes) of runs of whole lines, read a block at a time; a journal's partial last
        line is left out (``cut_partial``)."""
        path = self._paths[which]
        try:
            f = open(path, "rb")
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", path) from None
        with f:
            head = self._head(which, f)
            start = 3 if head.startswith(_BOM) else 0
            buf = head[start:]
            while True:
                more = b"" if self._memory[which] is not None else f.read(BLOCK)
                end = len(buf) if not more and not cut_partial else buf.rfind(b"\n") + 1
                if end:
                    yield start, buf[:end] if end < len(buf) else buf
                if not more:
                    if warn:
                        _say_dropped(path, buf[end:])
                    if which == 1:
                        self._journal_end, self._journal_size = start + end, start + len(buf)
                    return
                buf, start = buf[end:] + more, start + end

    def _head(self, which: int, f: Any) -> bytes:
        """The first block of a file: a gzipped file (by hand) decompressed whole and kept, to be
        served from memory; a binary file refused."""
        path = self._paths[which]
        head = f.read(BLOCK)
        if head[:2] == b"\x1f\x8b":  # gzipped by hand: read whole, served from memory
            try:
                self._memory[which] = head = gzip.decompress(head + f.read())
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(f"looks gzipped but cannot be decompressed ({e})", path) from None
        if b"\x00" in head[:8192]:
            raise InputError("a binary file, expected the JSON Lines ragassay writes", path)
        return head

    def line(self, where: int) -> bytes:
        """The line at a location, as written."""
        offset, length, which = unpack(where)
        memory = self._memory[which]
        if memory is not None:
            end = memory.find(b"\n", offset) if length == LENGTH_MAX else offset + length
            return memory[offset : end if end >= 0 else len(memory)]
        fd = self._fd(which)
        if length < LENGTH_MAX:
            return pread(fd, length, offset)
        parts, at = [], offset  # a line longer than a location can say: read to its newline
        while True:
            block = pread(fd, BLOCK, at)
            nl = block.find(b"\n")
            if nl >= 0 or not block:
                parts.append(block[:nl] if nl >= 0 else block)
                return b"".join(parts)
            parts.append(block)
            at += len(block)

    def record_at(self, where: int) -> dict:
        """The record at a location, parsed: a line that is not a JSON object is one error naming
        its file and line (an output edited since it was scanned)."""
        try:
            r = load_line(self.line(where))
        except (ValueError, UnicodeDecodeError):
            r = None
        if not isinstance(r, dict):
            offset, _, which = unpack(where)
            raise InputError(
                "not a JSON object: this output was not written by ragassay or was edited; "
                "move it away or fix the line",
                self._paths[which],
                self._line_number(which, offset),
            )
        return r

    def _runs(self, locations: Sequence[int]) -> Iterator[tuple[int, int, bytes | None, bool]]:
        """``locations`` cut into runs read at once: (first, past the last, the bytes from the first
        line's start to the last line's end, whether the lines follow one another with nothing
        between), or (i, i + 1, None, False) for a line read alone."""
        i, n = 0, len(locations)
        shift, mask = LENGTH_BITS + 1, LENGTH_MAX
        while i < n:
            first = locations[i]
            start, which = first >> shift, first & 1
            if self._memory[which] is not None or ((first >> 1) & mask) == mask:
                yield i, i + 1, None, False
                i += 1
                continue
            j, end, adjacent = i, start, True  # the run of ascending lines of this file within one block
            while j < n:
                w = locations[j]
                off, length = w >> shift, (w >> 1) & mask
                if w & 1 != which or off < end or off + length - start > BLOCK or length == mask:
                    break
                adjacent = adjacent and (j == i or off == end + 1)
                end = off + length
                j += 1
            if j == i:  # one line alone
                yield i, i + 1, None, False
                i += 1
                continue
            yield i, j, pread(self._fd(which), end - start, start), adjacent
            i = j

    def records_at(self, locations: Sequence[int]) -> Iterator[dict]:
        """The records at ``locations``, in their order. Lines that lie near each other in one file
        (a finalized output read in plan order) are read a block at a time, not one call each."""
        shift, mask = LENGTH_BITS + 1, LENGTH_MAX
        for i, j, data, adjacent in self._runs(locations):
            if data is None:
                yield self.record_at(locations[i])
                continue
            if adjacent and _orjson is not None:  # line after line: split once, each parsed as it is read
                lines = data.split(b"\n")
                if len(lines) == j - i:
                    loads, careful = _orjson.loads, lines_with_long_digit_runs(data)
                    for row, (w, line) in enumerate(zip(locations[i:j], lines)):
                        if careful and row in careful:  # (read by the standard library: see load_line)
                            yield self.record_at(w)
                            continue
                        try:
                            r = loads(line)
                        except _orjson.JSONDecodeError:
                            r = None
                        yield r if type(r) is dict else self.record_at(w)
                    continue
            start = locations[i] >> shift
            for w in locations[i:j]:
                off = (w >> shift) - start
                try:
                    r = load_line(data[off : off + ((w >> 1) & mask)])
                except (ValueError, UnicodeDecodeError):
                    r = None
                yield r if isinstance(r, dict) else self.record_at(w)  # (which raises, naming the line)

    def file_records(self) -> Iterator[dict]:
        """Every record of the output, then of the journal, parsed, in file order."""
        for which, present in ((0, self.final_lines), (1, self.journal_lines)):
            if present:
                for offset, line in self._lines(which, cut_partial=which == 1):
                    yield self.record_at(pack(offset, len(line), which))

    def output_records(self) -> Iterator[dict]:
        """Every record the output file holds (after :meth:`finalize`: what it wrote)."""
        if self.final_lines:
            for offset, line in self._lines(0, cut_partial=False):
                yield self.record_at(pack(offset, len(line), 0))

    def _fd(self, which: int) -> int:
        fd = self._fds[which]
        if fd is None:
            try:
                fd = self._fds[which] = os.open(self._paths[which], os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except OSError as e:
                raise InputError(f"cannot read: {e.strerror or e}", self._paths[which]) from None
        return fd

    def _line_number(self, which: int, offset: int) -> int:
        memory = self._memory[which]
        if memory is not None:
            return memory.count(b"\n", 0, offset) + 1
        n, at = 1, 0
        with open(self._paths[which], "rb") as f:
            while at < offset:
                block = f.read(min(BLOCK, offset - at))
                if not block:
                    break
                n += block.count(b"\n")
                at += len(block)
        return n

    def close_files(self) -> None:
        for which, fd in enumerate(self._fds):
            if fd is not None:
                os.close(fd)
                self._fds[which] = None


def _say_dropped(path: Path, rest: bytes) -> None:
    """Say that a partial last line (``rest``, left by an interrupted run) was dropped."""
    if rest and rest.strip():
        print(
            f"{path}: dropped an incomplete last line ({len(rest)} bytes) left by an interrupted "
            "run; that item will be redone",
            file=sys.stderr,
        )
