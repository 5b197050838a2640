"""The output lock: one writer per output file at a time, across processes, so two runs never interleave
their records (a second run waits or is refused, and a lock left by a killed process is not honoured)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from ...errors import RagassayError


def lock_folder() -> Path:
    """Where output locks live: one folder in the temporary directory, not beside the outputs (a
    user's output folders stay free of hidden files)."""
    return Path(tempfile.gettempdir()) / "ragassay-locks"


class OutputLock:
    """An exclusive lock on one output, held for the whole run: a second process fails at once and
    is told which process holds it. The lock is named by the output's real path, so a symlink to a
    locked output meets the same lock (and a hard link the inode lock). Within one process it is
    re-entrant (the command locks all its outputs, then the stage locks its own again). The holder
    removes its lock file on release, while it still holds the lock; a process that locked a file
    meanwhile finds the path gone or another file there, and tries again, so two processes never
    hold two different files for one output."""

    _held: dict[Path, list] = {}  # lock path -> [open file, holders] in this process

    def __init__(self, output: str | Path):
        out = Path(output)
        try:
            real = out.resolve()
        except (OSError, RuntimeError):
            real = Path(os.path.abspath(out))
        digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:20]
        self.path = lock_folder() / f"{digest}-{real.name[:80]}.lock"
        self.output = out
        self._real = real
        self._mine = False

    def acquire(self) -> OutputLock:
        held = OutputLock._held.get(self.path)
        if held is not None:
            held[1] += 1
            self._mine = True
            return self
        f = self._take(self.path)
        try:
            g = self._take_inode_lock()  # a hard link to it: the same file
        except RagassayError:
            _unlock_file(f)
            f.close()
            raise
        OutputLock._held[self.path] = [f, 1, g]
        self._mine = True
        return self

    def _take_inode_lock(self) -> Any:
        """For an output that exists: a lock named by its device and inode, in the temporary folder,
        so two paths that are hard links to one file meet the same lock.

        An inode lock can outlive its inode: a run that rewrites its output atomically puts a new file
        at its path and keeps holding the old inode's lock, and the file system may give that inode
        number to another file. A busy inode lock whose holder's output is no longer that inode is
        such a stale one and refuses nobody; the next name in its line (``.1``, ``.2``) is tried, so
        two live writers of one inode still meet."""
        try:
            st = self.output.stat()
        except OSError:
            return None
        for n in range(_INODE_LOCK_TRIES):
            path = lock_folder() / f"{st.st_dev}-{st.st_ino}{f'.{n}' if n else ''}.lock"
            try:
                return self._take(path)
            except _Busy as busy:
                if not _names_another_file(busy.holder_output, st):
                    raise
        raise RagassayError(  # pragma: no cover - as many stale holders of one inode as tries
            f"could not lock {self.output}: {_INODE_LOCK_TRIES} stale locks of its inode are held"
        )

    def _take(self, path: Path) -> Any:
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.parent.chmod(0o1777)  # shared like /tmp: another user's run meets the same locks
            except OSError:
                pass
        for _ in range(100):
            f = self._open_locked(path)
            try:  # the file locked must still be the one at the path: its last holder removes it on release
                same = os.stat(path).st_ino == os.fstat(f.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            _unlock_file(f)
            f.close()
        else:  # pragma: no cover - a path replaced a hundred times in a row
            raise RagassayError(f"could not lock {self.output}: its lock file {path} keeps changing")
        if f.writable():
            f.seek(0)
            f.truncate()
            f.write(  # who holds it (the refusal quotes this line), then which output, for _names_another_file
                f"ragassay (pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}: "
                f"{' '.join(sys.argv[:1] + sys.argv[1:4])[:120]})\n{json.dumps(os.fsdecode(self._real))}"
            )
            f.flush()
        return f

    def _open_locked(self, path: Path) -> Any:
        try:
            f = open(path, "a+", encoding="utf-8")
        except PermissionError:  # another user's lock file: lockable read-only, and says who holds it
            f = open(path, encoding="utf-8")
        try:
            _lock_file(f)
        except OSError:
            f.seek(0)
            said = f.read().split("\n")
            f.close()
            holder = said[0].strip() or "another process"
            try:
                holder_output = json.loads(said[1]) if len(said) > 1 else None
            except ValueError:
                holder_output = None
            raise _Busy(
                f"{self.output} is being written by {holder}; wait for it to finish or write to another file",
                holder_output if isinstance(holder_output, str) else None,
            ) from None
        return f

    def release(self) -> None:
        if not self._mine:
            return
        self._mine = False
        held = OutputLock._held.get(self.path)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del OutputLock._held[self.path]
            for f in held[0], held[2]:
                if f is not None:
                    try:  # removed while still locked, so no lock files pile up (see _take)
                        os.unlink(f.name)
                    except OSError:
                        pass  # another user's file, or Windows: it stays, harmless
                    _unlock_file(f)
                    f.close()

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


_INODE_LOCK_TRIES = 8


class _Busy(RagassayError):
    """A lock another process holds, with the output its holder recorded in it (None from a lock file
    of an older ragassay, which did not record it)."""

    def __init__(self, message: str, holder_output: str | None):
        super().__init__(message)
        self.holder_output = holder_output


def _names_another_file(holder_output: str | None, st: os.stat_result) -> bool:
    """Whether a busy inode lock's holder now writes another file than the inode ``st`` is: its output
    was replaced, or removed, since it took the lock. A holder that recorded no output is believed."""
    if holder_output is None:
        return False
    try:
        now = os.stat(holder_output)
    except OSError:
        return True
    return (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)


def run_locked(outputs: Sequence[str | Path | None], body: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """``asyncio.run(body())`` holding the lock of every output, for stages that write their files
    themselves at the end (generate); stages run by :func:`run_stage` lock their output there."""
    locks = [OutputLock(o) for o in outputs if o is not None]
    held = []
    try:
        for lock in locks:
            held.append(lock.acquire())
        return asyncio.run(body())
    finally:
        for lock in held:
            lock.release()


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only (and read by mypy only there)
    import msvcrt

    def _lock_file(f: Any) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock_file(f: Any) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock_file(f: Any) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock_file(f: Any) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
