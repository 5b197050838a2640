"""The OpenAI Batch API as a backend: upload request files, create batches, poll, download.

A stage run with ``--backend batch`` goes round by round: run the stage collecting the calls it
still needs (:class:`~ragassay.llm.batch.BatchBox`), send them as one or more batches, wait, bring
the output and error files home, and run again with them imported, until nothing is left. Each
round's batches are written down in ``OUTPUT.batches.json`` (the round's requests hash, batch ids,
files downloaded) as soon as they are created, so a killed run resumes the same batches instead of
paying for new ones, and a rerun after completion imports the downloaded files and sends nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .batch import CHAT_URL, LIMITS, MAX_BYTES, MAX_LINES, BatchBox
from .config import make_client, redact
from .errors import LLMError
from .failures import v1_base_url

TERMINAL = ("completed", "failed", "expired", "cancelled")


class BatchState:
    """The rounds of batches of one output, kept next to it (``OUTPUT.batches.json``)."""

    def __init__(self, output: str | Path):
        self.path = Path(f"{output}.batches.json")
        self.dir = Path(f"{output}.batches")
        self.rounds: list[dict] = json.loads(self.path.read_text()) if self.path.exists() else []

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.rounds, indent=1))
        os.replace(tmp, self.path)

    def downloaded(self) -> list[Path]:
        return [Path(f) for r in self.rounds for b in r["batches"] for f in b.get("files", [])]

    def round_for(self, requests_hash: str) -> dict | None:
        return next((r for r in self.rounds if r["requests"] == requests_hash), None)


def requests_hash(lines: list[dict]) -> str:
    return hashlib.sha256("\n".join(sorted(x["custom_id"] for x in lines)).encode()).hexdigest()[:16]


def split(lines: list[dict], max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> list[bytes]:
    files: list[list[bytes]] = [[]]
    size = 0
    for line in lines:
        data = json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        if files[-1] and (len(files[-1]) >= max_lines or size + len(data) > max_bytes):
            files.append([])
            size = 0
        files[-1].append(data)
        size += len(data)
    return [b"".join(f) for f in files]


async def send_round(
    client: Any,
    lines: list[dict],
    state: BatchState,
    *,
    poll_seconds: float = 30.0,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    log: Callable[[str], None] | None = None,
    max_lines: int | None = None,
    max_bytes: int | None = None,
) -> list[Path]:
    """Answer ``lines`` through the Batch API (or resume the batches already made for exactly these
    requests); returns the downloaded output and error files."""
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    sleep = sleep or asyncio.sleep
    digest = requests_hash(lines)
    rnd = state.round_for(digest)
    if rnd is None:
        rnd = {"requests": digest, "lines": len(lines), "batches": []}
        state.rounds.append(rnd)
        for i, data in enumerate(split(lines, max_lines or LIMITS["lines"], max_bytes or LIMITS["bytes"]), start=1):
            uploaded = await client.files.create(file=(f"ragassay-{digest}-{i}.jsonl", data), purpose="batch")
            batch = await client.batches.create(
                input_file_id=uploaded.id,
                endpoint=CHAT_URL,
                completion_window="24h",
                metadata={"ragassay_requests": digest, "part": str(i)},
            )
            rnd["batches"].append({"id": batch.id, "input_file_id": uploaded.id, "status": batch.status, "files": []})
            state.save()  # before anything else can fail: a rerun resumes this batch, never makes a second
            n = data.count(b"\n")
            log(f"batch {batch.id}: {n} requests sent (part {i})")
    else:
        log(f"resuming {len(rnd['batches'])} batch(es) made for these {rnd['lines']} requests")
    files: list[Path] = []
    for b in rnd["batches"]:
        files += await _finish(client, b, state, poll_seconds, sleep, log)
    return files


async def _finish(client: Any, b: dict, state: BatchState, poll_seconds: float, sleep, log) -> list[Path]:
    if b.get("files"):
        return [Path(f) for f in b["files"]]
    batch = await _wait_for(client, b, poll_seconds, sleep, log)
    state.save()
    if batch.status == "failed" and not batch.output_file_id:
        errors = _batch_errors(batch)
        state.rounds = [r for r in state.rounds if b not in r["batches"]]  # a rerun makes a new batch
        state.save()
        raise LLMError(
            "batch",
            f"batch {batch.id} failed: {errors or 'no reason given'}; nothing was answered. "
            "Fix this and rerun (a new batch is made)",
        )
    files = await _download(client, batch, state)
    if batch.status in ("expired", "cancelled"):
        log(
            f"batch {batch.id} {batch.status}: its answered requests are kept; the rest become error records "
            "(rerun to send them again)"
        )
    b["files"] = [str(f) for f in files]
    state.save()
    return files


async def _wait_for(client: Any, b: dict, poll_seconds: float, sleep, log) -> Any:
    """Poll a batch until it ends (see ``TERMINAL``), saying its progress whenever it changes."""
    last = None
    while True:
        batch = await client.batches.retrieve(b["id"])
        counts = batch.request_counts
        progress = f"{counts.completed + counts.failed}/{counts.total}" if counts else "?"
        if (batch.status, progress) != last:
            log(f"batch {batch.id}: {batch.status}, {progress} requests done")
            last = (batch.status, progress)
        b["status"] = batch.status
        if batch.status in TERMINAL:
            return batch
        await sleep(poll_seconds)


def _batch_errors(batch: Any) -> str:
    """The reasons a failed batch gives, on one line (at most 600 characters)."""
    return "; ".join(
        f"{e.code}: {e.message}" + (f" (line {e.line})" if e.line else "")
        for e in (batch.errors.data if batch.errors and batch.errors.data else [])
    )[:600]


async def _download(client: Any, batch: Any, state: BatchState) -> list[Path]:
    """Save a finished batch's output and error files beside the state, and return their paths."""
    state.dir.mkdir(parents=True, exist_ok=True)
    files = []
    for kind, file_id in (("output", batch.output_file_id), ("errors", batch.error_file_id)):
        if file_id:
            content = await client.files.content(file_id)
            path = state.dir / f"{batch.id}.{kind}.jsonl"
            path.write_bytes(content.content)
            files.append(path)
    return files


def unanswered(lines: list[dict], files: list[Path]) -> list[dict]:
    """Request lines with no line in the downloaded files (an expired or cancelled batch may leave
    some out): the caller records them as errors, so a round never waits forever."""
    seen = set()
    for f in files:
        for raw in f.read_text(encoding="utf-8").splitlines():
            if raw.strip():
                seen.add(json.loads(raw).get("custom_id"))
    return [x for x in lines if x["custom_id"] not in seen]


def run_rounds(
    config: Any,
    output: str | Path,
    run_once: Callable[[Any], Any],
    *,
    poll_seconds: float = 30.0,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> tuple[Any, str]:
    """Run a stage through the Batch API: ``run_once(box)`` runs it once collecting the calls it
    still needs; those are sent (:func:`send_round`), their answers imported, and the stage run
    again, until a run needs nothing. Returns that last run's result and a one-line summary."""
    import openai  # about a second to import (measured 1.1-1.6 s here): only a Batch API run loads it

    config.check()
    state = BatchState(output)
    box = BatchBox(collect=True)
    for f in state.downloaded():  # answers of earlier runs; their error lines are asked again
        box.import_file(f, errors=False)
    rounds = sent = 0
    while True:
        box.requests.clear()
        result = run_once(box)
        if not box.requests:
            break
        lines = list(box.requests.values())

        async def go(lines: list[dict] = lines) -> list[Path]:
            client = make_client(config)
            try:
                return await send_round(client, lines, state, poll_seconds=poll_seconds, sleep=sleep)
            except openai.APIStatusError as e:
                hint = ""
                if e.status_code in (404, 405):  # no such path: a base URL without /v1, or no Batch API there
                    better = v1_base_url(config.base_url)
                    hint = (
                        f": OpenAI-compatible servers usually serve under /v1; try --base-url "
                        f"{redact(better, config.secrets())}"
                        if better
                        else "; this endpoint has no "
                        "Files/Batches API (a vLLM server has none): use --export-requests and "
                        "`vllm run-batch` instead"
                    )
                raise LLMError(
                    "auth" if e.status_code in (401, 403) else "request",
                    f"the Batch API at {config.public_base_url()} answered {e.status_code}{hint}",
                ) from None
            except openai.APIConnectionError as e:
                raise LLMError(
                    "transport",
                    f"could not reach the Batch API at {config.public_base_url()} "
                    f"({type(e).__name__}); batches already made are kept in {state.path} "
                    "and resumed by a rerun",
                ) from None
            finally:
                await client.close()

        files = asyncio.run(go())
        for f in files:
            box.import_file(f)
        for line in unanswered(lines, files):  # never wait twice for a line the batch did not return
            box.results[line["custom_id"]] = {
                "custom_id": line["custom_id"],
                "response": None,
                "error": {"code": "missing", "message": "the batch returned no line"},
            }
        rounds += 1
        sent += len(lines)
    return result, (
        f"batch backend: {rounds} round(s), {sent} requests sent; batches in {state.path}"
        if rounds
        else f"batch backend: nothing left to send (batches in {state.path})"
    )
