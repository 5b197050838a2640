"""What makes a step up to date: the digest of its inputs when it last ran, kept in ``.ragassay/state.json``
beside the project file, and the digests of the files a run reads (each file hashed once a run)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ...data.run_asked import asked_digest, file_digest


class State:
    """The digest of each step's inputs when it last ran, and its exit code (``.ragassay/state.json``)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.steps: dict[str, dict] = json.loads(path.read_text(encoding="utf-8")).get("steps", {})
        except (OSError, ValueError, AttributeError):
            self.steps = {}

    def fresh(self, key: str, digest: str, outputs: list[Path]) -> dict | None:
        """What the step kept when it last ran on these inputs, when its outputs are all there and it
        ended without error records (a rerun retries those, as every command's rerun does)."""
        kept = self.steps.get(key)
        if kept and kept.get("digest") == digest and not kept.get("exit_code") and all(p.exists() for p in outputs):
            return kept
        return None

    def done(self, key: str, digest: str, exit_code: int, text: str, result: Any = None) -> None:
        """Keep a step's digest, exit code, line and result (an up-to-date rerun says them again)."""
        self.steps[key] = {"digest": digest, "exit_code": exit_code, "text": text, "result": result}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"version": 1, "steps": self.steps}, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)


class Digests:
    """File contents' digests, each file hashed once a run: from the bytes a reader already read when
    the run parsed the file (see :meth:`heard`), else read here."""

    def __init__(self) -> None:
        self.seen: dict[Path, str] = {}
        # a file's digest as a reader read it, by its real path, with the (mtime, size) it had then
        self.read: dict[str, tuple[tuple[int, int], str]] = {}
        self.asked: dict[str, tuple[tuple[int, int], str]] = {}  # the same bytes' digest as a run's sidecar names it

    def heard(self, path: Path, data: bytes) -> None:
        """Keep the digest of bytes a reader read (``data.lines.watching_reads`` hands them here), so
        that the digest of a file the run parsed costs no open of its own."""
        stamp = _stamp(path)
        real = os.path.realpath(path)
        if stamp is not None and self.read.get(real, (None,))[0] != stamp:
            self.read[real] = (stamp, hashlib.sha256(data).hexdigest())
            self.asked[real] = (stamp, asked_digest(data))

    def file(self, path: Path | None) -> str | None:
        if path is None or not path.exists():
            return None
        if path not in self.seen:
            kept = self.read.get(os.path.realpath(path))
            if kept is not None and kept[0] == _stamp(path):
                self.seen[path] = kept[1]
                return kept[1]
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            self.seen[path] = h.hexdigest()
        return self.seen[path]

    def queries_digest(self, path: Path) -> str | None:
        """The digest a retriever's run sidecar (``RUN.run.json``) records of its queries file, taken
        from the bytes the run read when it parsed the file, else from the file."""
        kept = self.asked.get(os.path.realpath(path))
        if kept is not None and kept[0] == _stamp(path):
            return kept[1]
        try:
            return file_digest(path)
        except OSError:
            return None

    def of(self, *files: Path | None, **settings: Any) -> str:
        parts = {"files": [self.file(f) for f in files], "settings": settings}
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _stamp(path: Path) -> tuple[int, int] | None:
    """A file's modification time and size (what tells a file read before from one rewritten since)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
