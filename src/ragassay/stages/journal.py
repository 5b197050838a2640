"""Append-only outputs that survive a kill and resume where they stopped.

Each record is one JSON line, written and flushed as soon as it is ready. On reopen, a partial
last line (the process was killed mid-write) is cut off, records with ``status: ok`` count as done
and are skipped, and failed ones are asked again; the newer record for a key supersedes the older
(see :func:`latest_records`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError


class ResumableWriter:
    def __init__(self, path: str | Path, key: Callable[[dict], str]):
        self.path = Path(path)
        self.key = key
        self.done: set[str] = set()
        self.failed: set[str] = set()
        self.truncated_bytes = 0
        if self.path.exists():
            self._recover()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", encoding="utf-8")

    def _recover(self) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a line cut short by a kill: drop it, it will be redone
            self.truncated_bytes = len(data) - end
            with open(self.path, "r+b") as f:
                f.truncate(end)
            print(f"{self.path}: dropped an incomplete last line ({self.truncated_bytes} bytes) left by an "
                  "interrupted run; that item will be redone", file=sys.stderr)
        for no, line in enumerate(data[:end].splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                raise InputError("not valid JSON; this file is not one ragassay wrote, or was edited", self.path, no) from None
            k = self.key(obj)
            if obj.get("status", "ok") == "ok":
                self.done.add(k)
                self.failed.discard(k)
            elif k not in self.done:
                self.failed.add(k)

    def write(self, record: Any) -> None:
        obj = record.model_dump(mode="json") if hasattr(record, "model_dump") else record
        self._f.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self._f.flush()
        k = self.key(obj)
        if obj.get("status", "ok") == "ok":
            self.done.add(k)
            self.failed.discard(k)
        else:
            self.failed.add(k)

    def close(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()

    def __enter__(self) -> ResumableWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def latest_records(path: str | Path, key: Callable[[dict], str]) -> dict[str, dict]:
    """The newest record per key, in first-seen key order (later lines supersede earlier ones)."""
    out: dict[str, dict] = {}
    from ..data.io import iter_jsonl
    for _, obj in iter_jsonl(path):
        out[key(obj)] = obj
    return out
