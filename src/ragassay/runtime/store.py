"""What an output already holds: its records, indexed by key, read from the files when asked.

A stage's output is the final file plus the journal of an unfinished run. The store keeps, for each
key, only where its newest record's line lies (one integer) and whether that record is ok; the
lines stay in the files and are read back one by one (``os.pread``) when a record is asked for. So
a rerun of finished work holds its key set, not its records, and a run's memory does not grow with
the records it writes: finalize streams the new output from the two files.

A line plainly in the shape ragassay writes (``json.dumps``'s separators, no nested object, no
``\\u`` escape) gives its key and status without being parsed; any other line is parsed whole
when the store is built. So a line in that shape but edited by hand into invalid JSON is refused
(one error naming file and line) when its record is read or the output is rewritten, not when the
store is built: a rerun pays no parse per record.

The store's parts: the line format and a line's packed location (``store_lines.py``), reading the
two files by location (``store_files.py``), indexing them by key and answering what is held and
done (``store_keys.py``, the base of :class:`OutputStore`), the lazy list of records a run returns
(``store_records.py``) and the index file beside a finalized output (``store_index.py``). This
module loads the store (from the index file when it still describes the output), appends to the
journal and writes the output at the end.
"""

from __future__ import annotations

import copy
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

from ..data.lines import write_lines_atomic
from ..data.record_files import check_output_kind
from ..errors import OutputError
from .key_locations import KeyLocations
from .store_index import digest_of, output_stamp, read_index, remember, remove_index, write_index
from .store_keys import KeyedFiles
from .store_lines import journal_path, pack, record_line
from .store_records import Records


def _kind_of(identity: Callable[[dict], str]) -> str | None:
    """The kind of record a stage writes, when ``identity`` is a stage's method (``Stage.identity``)."""
    model = getattr(getattr(identity, "__self__", None), "record_model", None)
    return getattr(model, "KIND", None) or None


class OutputStore(KeyedFiles):
    """The records of an output: the final file plus the journal of an unfinished run.

    Later records supersede earlier ones for the same key. A partial last journal line (a kill
    mid-write) is dropped, and cut off before this run appends: that item is simply redone. Only
    keys and line locations are held (see the module's docstring).

    ``kind`` is the kind of record the store holds (by default that of the stage whose
    ``identity`` it is given, its ``record_model``): files that hold anything else (another
    stage's records, foreign JSON lines, qrels) are refused at once, a usage error naming both,
    before a plan is made or a call is sent."""

    def __init__(self, output: str | Path, identity: Callable[[dict], str], kind: str | None = None):
        super().__init__(output, journal_path(output))
        self.identity = identity
        self.kind = kind or _kind_of(identity)
        if self.kind:
            check_output_kind(self.output, self.kind)
            check_output_kind(self.journal, self.kind, journal=True)
        self._f: Any = None  # the journal, open for appending while a run writes
        self.appended = False  # records were added by this run
        self._loc = KeyLocations()
        self._load()

    def _load(self) -> None:
        self.close_files()
        plan = self._loc.plan  # (a plan said before the files are read again still holds)
        self._loc = KeyLocations()  # key -> its newest record's location (see pack), and the failed keys
        if plan is not None:
            self._loc.bind(plan)
        self._keyless = 0  # record lines without a key
        self._memory = [None, None]  # a gzipped output, read whole
        self._indexed: dict[str, Any] | None = None  # the output's stamp, when its index file was read or written
        self._memos: dict[str, Any] = {}
        self.final_lines = (self._from_index() or self._scan(0)) if self.output.exists() else 0
        self._journal_end = self._journal_size = 0  # after the last whole line; the file's size as scanned
        self.journal_lines = self._scan(1, cut_partial=True) if self.journal.exists() else 0
        self._stamps = self._stamp()

    def _from_index(self) -> int:
        """Index the output from its index file when that describes it as it is (see
        :mod:`.store_index`); the output's record lines, or 0 when it could not."""
        index = read_index(self.output)
        if index is None or not index.lines:
            return 0
        width = index.key_width() if b"\x00" not in index.ok else 0
        if width:  # held packed until a question needs them in the dict (see key_locations)
            self._loc.hold_packed(index.key_text.replace(b"\n", b""), width, index.locations)
        else:
            keys = index.keys
            self._loc.where.update(zip(keys, index.locations))
            self._loc.failed.update(k for k, ok in zip(keys, index.ok) if not ok)
        # (an index is written only when every key's newest line is in the output)
        self._keyless = index.lines - len(index.locations)
        self._indexed, self._memos = index.stamp, index.memos
        return index.lines

    def _write_index(self, keys: Sequence[str] | None = None, locations: Sequence[int] | None = None) -> None:
        """Write the index file of the output as the store now holds it, when every key's newest
        line is in the output: ``keys`` with their ``locations`` in file order (by default the
        store's, read in file order)."""
        if keys is None or locations is None:
            keys, locations = self._loc.keys(), array("q", self._loc.values())
        if self._memory[0] is not None or any(w & 1 for w in locations):
            return
        failed = self._loc.failed
        ok = bytes([k not in failed for k in keys]) if failed else b"\x01" * len(keys)
        stamp = output_stamp(self.output)
        if stamp is not None and write_index(self.output, keys, locations, ok, self.final_lines, stamp=stamp):
            self._indexed, self._memos = stamp, {}

    def memo(self, name: str, locations: Sequence[int]) -> Any:
        """The value remembered as ``name`` for the records at ``locations`` (see :meth:`remember`),
        while the output is still the one it was computed from; None otherwise."""
        held = self._memos.get(name)
        if not held or self._indexed is None or held.get("of") != digest_of(locations):
            return None
        return held.get("value") if self._output_is(self._indexed) else None

    def remember(self, name: str, locations: Sequence[int], value: Any) -> None:
        """Keep ``value`` (JSON) in the output's index as what was computed from the records at
        ``locations`` (all in the output), so a rerun of the same plan need not read them again."""
        if self._indexed is None or any(w & 1 for w in locations) or not self._output_is(self._indexed):
            return
        of = digest_of(locations)
        if remember(self.output, name, of, value, self._indexed):
            self._memos = {**self._memos, name: {"of": of, "value": value}}

    def _output_is(self, stamp: dict[str, Any]) -> bool:
        """The output file, and the one this store reads through its handle if it holds one, are
        still the file ``stamp`` describes."""
        fd = self._fds[0]
        if fd is not None:
            st = os.fstat(fd)
            if (st.st_size, st.st_mtime_ns, st.st_ino) != (stamp["size"], stamp["mtime_ns"], stamp["inode"]):
                return False
        return output_stamp(self.output) == stamp

    def _stamp(self) -> tuple:
        out: list[tuple[int, int, int] | None] = []
        for path in self._paths:
            try:
                st = path.stat()
                out.append((st.st_size, st.st_mtime_ns, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)

    def refresh(self) -> None:
        """Read the files again if another process changed them since they were read (a run calls
        this once it holds the output's lock, so what it skips as done is what the files say now)."""
        if self._f is None and self._stamp() != self._stamps:
            self._load()

    def pinned(self, locations: Sequence[int]) -> Records:
        """Records at ``locations``, with the files they are in held open: they stay readable after
        the files are replaced by a later run or removed with a temporary folder."""
        view = copy.copy(self)  # reads through its own handles: the store may replace its files, or finalize again
        view._fds = [None, None]
        view._memory = list(self._memory)
        view._f = None
        for which in {w & 1 for w in locations}:  # (a location's lowest bit names its file)
            view._fds[which] = os.dup(self._fd(which)) if self._memory[which] is None else None
        return Records(locations, view)

    # -- writing
    def append(self, records: Sequence[dict], at_positions: Iterable[int] | None = None) -> None:
        """Journal records (flushed at once: a kill loses none) and index them; ``at_positions``:
        each record's position in the plan said by :meth:`expect`."""
        if not records:
            return
        lines = [record_line(r).encode("utf-8", "surrogatepass") for r in records]
        try:
            if self._f is None:
                self._open_journal()
            at = self._journal_end
            self._f.write(b"".join(line + b"\n" for line in lines))
            self._f.flush()
        except OSError as e:
            raise OutputError(self.journal, e) from None
        put = self._loc.put
        for r, line, p in zip(records, lines, repeat(None) if at_positions is None else at_positions):
            put(r["key"], pack(at, len(line), 1), r.get("status", "ok") == "ok", p)
            at += len(line) + 1
        self._journal_end = self._journal_size = at
        self.journal_lines += len(lines)
        self.appended = True

    def _open_journal(self) -> None:
        """Open the journal for appending; a partial last line left by a kill (dropped when it was
        read) is cut off first, so what this run appends starts on a line of its own."""
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.journal, "ab")
        size = self._f.tell()
        if size == self._journal_size and self._journal_end < size:
            self._f.truncate(self._journal_end)
            self._f.seek(self._journal_end)
        else:
            self._journal_end = size  # (another writer's journal, not the one read: nothing of it is cut)
        self._journal_size = self._journal_end

    def close_journal(self) -> None:
        if self._f is not None:
            try:
                self._f.close()
            except OSError:
                pass
            self._f = None
            self._stamps = self._stamp()

    def finalize(self, plan_keys: Sequence[str]) -> Records:
        """Write the output: records of identities this plan does not touch stay as they were; for
        each planned key, its newest record. Returns the planned records, in plan order."""
        self.close_journal()
        if self._unchanged(plan_keys):
            if self.journal.exists():  # it holds no record (empty, or a partial line): spent too
                self.journal.unlink(missing_ok=True)
                self._stamps = self._stamp()
            if self._indexed is None:  # read line by line this time: the next run need not
                self._write_index()
            return self.pinned(self._planned(plan_keys)[0])
        sources, positions = self._planned(plan_keys)
        planned = plan_keys if positions is None else [plan_keys[p] for p in positions]
        untouched = self._untouched_records(planned, sources, distinct=plan_keys is self._loc.plan)
        untouched_at: dict[str, int] = {}  # where the untouched records' keys are in the new file
        planned_at = array("q")  # and the planned ones', in plan order
        self._indexed, self._memos = None, {}
        remove_index(self.output)  # (it would describe the old file: ignored, but not left beside the new one)
        write_lines_atomic(self.output, self._new_lines(untouched, sources, untouched_at, planned_at))
        lines_written = len(untouched) + len(sources)
        del sources
        self.journal.unlink(missing_ok=True)
        self._memory = [None, None]
        # the store now describes the new file: the untouched keys in a dict, the planned ones by plan position
        # when the plan was said (expect), in the dict otherwise
        if plan_keys is self._loc.plan:
            aligned = array("q", planned_at) if positions is None else array("q", bytes(8 * len(plan_keys)))
            if positions is not None:
                for p, w in zip(positions, planned_at):
                    aligned[p] = w
            self._loc.replace(untouched_at, aligned)
        else:
            self._loc.replace({**dict(zip(planned, planned_at)), **untouched_at}, None)
        self._keyless = sum(1 for _, key in untouched.values() if key is None)
        self.final_lines, self.journal_lines = lines_written, 0
        self._journal_end = self._journal_size = 0
        self.appended = False  # what it appended is in the output now
        if untouched_at:
            self._write_index(_Joined(list(untouched_at), planned), array("q", untouched_at.values()) + planned_at)
        else:
            self._write_index(planned, planned_at)
        self._stamps = self._stamp()
        return self.pinned(planned_at)

    def _new_lines(
        self,
        untouched: dict[str, tuple[int, str | None]],
        sources: Sequence[int],
        untouched_at: dict[str, int],
        planned_at: array,
    ) -> Iterator[bytes]:
        """The new output's lines: the untouched records, then the planned ones in plan order; where
        each lands in the new file is noted in ``untouched_at`` (by key) and ``planned_at``."""
        at = 0
        try:
            for where, key in untouched.values():
                line = self.line(where)
                if key is not None:
                    untouched_at[key] = pack(at, len(line), 0)
                at += len(line) + 1
                yield line
            for where in sources:
                line = self.line(where)
                planned_at.append(pack(at, len(line), 0))
                at += len(line) + 1
                yield line
        finally:
            self.close_files()  # before the new file replaces the old (Windows cannot replace an open file)

    def _untouched_records(
        self, planned: Sequence[str], sources: Sequence[int], distinct: bool = False
    ) -> dict[str, tuple[int, str | None]]:
        """The records a finalize keeps beside the planned ones (``planned`` keys, their newest
        records at ``sources``): for each identity the plan does not touch (an interrupted run's
        records of other items, other runs' records), its newest line and key. Found without reading
        a record when every line's key is planned (a first run, a rerun of the same plan): then
        there are none. ``distinct``: the planned keys are known to be all different."""
        n_planned = len(planned) if distinct else len(set(planned))
        if not self._keyless and len(self._loc) == n_planned:  # (every key held is a line's, and planned)
            return {}
        touched = {self.identity(r) for r in self.records_at(sources)}
        where_of = self._loc.where
        untouched: dict[str, tuple[int, str | None]] = {}  # identity -> its newest line (one per identity)
        for which, present in ((0, self.final_lines), (1, self.journal_lines)):
            if present:
                for offset, line in self._lines(which, cut_partial=which == 1):
                    where = pack(offset, len(line), which)
                    r = self.record_at(where)
                    key = r.get("key")
                    if not isinstance(key, str):
                        key = None
                    elif where_of.get(key) != where:
                        # superseded by a newer record of its key (no longer a record of anything), or
                        # held at a plan position: a planned key's, whose identity is touched
                        continue
                    ident = self.identity(r)
                    if ident not in touched:
                        untouched[ident] = (where, key)
        return untouched

    def _unchanged(self, plan_keys: Sequence[str]) -> bool:
        """Nothing was journalled, every planned record is in the output, and the output holds one
        record per identity and per key: writing it again would change nothing."""
        if self.journal_lines or self.appended or not self.output.exists():
            return False
        loc = self._loc
        if not all(loc.contains_each(plan_keys)) or self.final_lines != len(loc):
            return False  # a key missing, or a key written twice
        distinct = len(plan_keys) if plan_keys is loc.plan else len(set(plan_keys))
        if distinct == len(loc):  # every line is a planned key's: one per identity
            return True
        seen: set[str] = set()  # other runs' records too: their identities must not repeat
        for r in self.output_records():
            ident = self.identity(r)
            if ident in seen:
                return False
            seen.add(ident)
        return True

    def __del__(self) -> None:
        try:
            self.close_journal()
            self.close_files()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _Joined(Sequence):
    """Two sequences read as one (the keys of a new file's index, not copied into one list)."""

    def __init__(self, first: Sequence[str], second: Sequence[str]):
        self._first, self._second = first, second

    def __len__(self) -> int:
        return len(self._first) + len(self._second)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self._first)
        if i < 0:
            i += len(self)
        return self._first[i] if i < n else self._second[i - n]

    def __iter__(self) -> Iterator[str]:
        yield from self._first
        yield from self._second
