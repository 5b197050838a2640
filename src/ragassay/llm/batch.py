"""Answers from batch engines: the OpenAI Batch API, vLLM's ``run_batch``, or anything that speaks
their file format.

A request line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` where
``custom_id`` is the call's cache key and ``body`` the exact chat request the live path sends; an
output line is ``{"custom_id", "response": {"status_code", "body"}, "error"}``. So an answer from a
batch and an answer from the live endpoint are interchangeable: imported answers go through the
same parsing and into the same cache, and a stage run from them writes the same records.

With a :class:`BatchBox` on the stage's LLMs, a call whose answer is neither cached nor imported
is recorded as a request line (``collect``) and raises :class:`Deferred`: its item waits, writes
nothing, and the next run (with the answers imported) picks it up. Multi-step stages advance one
step per round.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.lines import iter_jsonl, read_bytes_checked, write_lines_atomic
from ..errors import InputError

CHAT_URL = "/v1/chat/completions"
MAX_LINES = 50_000  # the Batch API's limits per input file
MAX_BYTES = 190 * 1024**2  # (200 MB, with room to spare)
LIMITS = {"lines": MAX_LINES, "bytes": MAX_BYTES}  # per input file, as an estimate states them


class Deferred(Exception):
    """This call's answer will come from a batch; its item waits for the next round."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"waiting for the batch answer to {key[:12]}")


@dataclass
class BatchBox:
    """What a run shares with its LLMs: answers imported from batch output files, and (``collect``)
    the request lines of the calls still to be answered."""

    collect: bool = False
    results: dict[str, dict] = field(default_factory=dict)
    requests: dict[str, dict] = field(default_factory=dict)

    def import_file(self, path: str | Path, errors: bool = True) -> int:
        """Read one batch output file (error files have the same shape); returns how many lines.
        ``errors=False`` skips error lines (a later run retries those calls)."""
        n = 0
        for no, obj in iter_jsonl(read_bytes_checked(path, allow_empty=True), path):  # all lines failed: empty
            cid = obj.get("custom_id")
            if not isinstance(cid, str) or not cid:
                raise InputError("each line needs a custom_id (the request's key, as exported)", path, no)
            if not isinstance(obj.get("response"), dict) and not obj.get("error"):
                raise InputError("a batch output line needs a 'response' or an 'error'", path, no)
            if not errors and not _ok(obj):
                continue
            if cid not in self.results or (_ok(obj) and not _ok(self.results[cid])):
                self.results[cid] = obj  # the first line for a call, but an answer beats an error
            n += 1
        return n


def _ok(line: dict) -> bool:
    resp = line.get("response") or {}
    return not line.get("error") and resp.get("status_code") == 200 and isinstance(resp.get("body"), dict)


def failure_of(line: dict) -> str | None:
    """Why a batch output line holds no answer, or None when it holds one."""
    if _ok(line):
        return None
    err = line.get("error")
    if isinstance(err, dict) and err.get("message"):
        return f"{err.get('code') or 'error'}: {err['message']}"
    if err:
        return str(err)
    resp = line.get("response") or {}
    body = resp.get("body")
    error = body.get("error") if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    return f"status {resp.get('status_code')}" + (f": {detail}" if detail else "")


def request_line(key: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": key, "method": "POST", "url": CHAT_URL, "body": body}


def write_requests(
    path: str | Path, lines: list[dict], max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES
) -> list[Path]:
    """Write request lines to ``path``, split into ``name.2.jsonl``, ``name.3.jsonl``... where one
    file would pass the Batch API's limits (lines or bytes per file). Returns the files written."""
    path = Path(path)
    parts: list[list[str]] = [[]]
    size = 0
    for line in lines:
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
        if parts[-1] and (len(parts[-1]) >= max_lines or size + len(text) + 1 > max_bytes):
            parts.append([])
            size = 0
        parts[-1].append(text)
        size += len(text.encode("utf-8")) + 1
    files = []
    stem, _, suffix = path.name.partition(".")
    for i, part in enumerate(parts, start=1):
        target = path if i == 1 else path.with_name(f"{stem}.{i}.{suffix or 'jsonl'}")
        write_lines_atomic(target, part)
        files.append(target)
    return files


class OfflineClient:
    """The client of a run that only exports requests and imports answers: it never sends."""

    class _Never:
        async def create(self, **_: Any) -> Any:
            raise AssertionError("an offline batch run sent a live request")

    class _Chat:
        def __init__(self) -> None:
            self.completions = OfflineClient._Never()

    def __init__(self) -> None:
        self.chat = OfflineClient._Chat()
