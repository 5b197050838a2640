"""Run a stage over many items: concurrent, resumable, with progress; failures become records."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ..llm.client import LLM
from ..llm.errors import LLMError
from .journal import ResumableWriter

Item = TypeVar("Item")


async def run_items(llm: LLM | None, items: Iterable[Item], *, key: Callable[[Item], str],
                    record_key: Callable[[dict], str], work: Callable[[Item], Awaitable[Any]],
                    on_error: Callable[[Item, LLMError], Any], output: str | Path, stage: str,
                    quiet: bool = False) -> dict[str, int]:
    """Call ``work(item)`` for every item not already done in ``output`` and append its record.

    ``work`` builds messages, asks ``llm`` and returns a record; an :class:`LLMError` becomes
    ``on_error(item, error)`` (a ``status: error`` record with the reason). Returns counts.
    ``llm`` may be None when every item is decided without a model (e.g. check's rules).
    """
    items = list(items)
    with ResumableWriter(output, record_key) as writer:
        todo = [it for it in items if key(it) not in writer.done]
        skipped = len(items) - len(todo)
        bar = progress_bar(len(items), skipped, stage, quiet)
        counts = {"total": len(items), "skipped": skipped, "ok": 0, "failed": 0}
        queue: asyncio.Queue = asyncio.Queue()
        for it in todo:
            queue.put_nowait(it)

        async def worker() -> None:
            while True:
                try:
                    it = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    record = await work(it)
                    counts["ok"] += 1
                except LLMError as e:
                    record = on_error(it, e)
                    counts["failed"] += 1
                writer.write(record)
                if bar is not None and llm is not None:
                    s = llm.usage.stage(stage)
                    cost = llm.usage.cost(stage)
                    bar.set_postfix(failed=counts["failed"], cached=s.cached,
                                    tokens=s.prompt_tokens + s.completion_tokens,
                                    cost="?" if cost is None else f"${cost:.4f}", refresh=False)
                if bar is not None:
                    bar.update(1)

        workers = [asyncio.create_task(worker()) for _ in range(max(1, min(len(todo), 2 * (llm.config.concurrency if llm else 4))))]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            if bar is not None:
                bar.close()
    return counts


def progress_bar(total: int, initial: int, stage: str, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=stage, unit="item", file=sys.stderr, dynamic_ncols=True)
