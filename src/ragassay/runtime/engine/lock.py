"""The output lock: one writer per output file at a time, across processes, so two runs never interleave
their records (a second run waits or is refused, and a lock left by a killed process is not honoured)."""

from __future__ import annotations

import asyncio
import hashlib
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
        self._mine = False

    def acquire(self) -> OutputLock:
        held = OutputLock._held.get(self.path)
        if held is not None:
            held[1] += 1
            self._mine = True
            return self
        f = self._take(self.path)
        inode = self._inode_lock()
        try:
            g = self._take(inode) if inode is not None else None  # a hard link to it: the same file
        except RagassayError:
            _unlock_file(f)
            f.close()
            raise
        OutputLock._held[self.path] = [f, 1, g]
        self._mine = True
        return self

    def _inode_lock(self) -> Path | None:
        """For an output that exists: a lock named by its device and inode, in the temporary folder,
        so two paths that are hard links to one file meet the same lock."""
        try:
            st = self.output.stat()
        except OSError:
            return None
        return lock_folder() / f"{st.st_dev}-{st.st_ino}.lock"

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
            f.write(
                f"ragassay (pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}: "
                f"{' '.join(sys.argv[:1] + sys.argv[1:4])[:120]})"
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
            holder = f.read().strip() or "another process"
            f.close()
            raise RagassayError(
                f"{self.output} is being written by {holder}; wait for it to finish or write to another file"
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
