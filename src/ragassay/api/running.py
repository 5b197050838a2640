"""How the Python functions run a stage's job: on the one scaffold, where no event loop runs (a
notebook's loop is left alone), with a temporary output when the caller names none, and with the
prompt's choice said once on stderr."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..llm import LLM
from ..runtime.engine import Estimate, StageAborted
from ..runtime.scaffold import Backend, StageJob, StageOutcome, run_llm_stage

T = TypeVar("T")


def in_own_thread(work: Callable[[], T]) -> T:
    """``work()`` (which runs its own event loops) where no loop is running: inside a notebook's
    loop it runs in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:  # called outside the except clause: the work's own errors must not chain to this one
        return work()
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def say_prompt(reason: str, stage: str, quiet: bool) -> None:
    """Which prompt the stage uses and why, once on stderr (the records name its version). The
    default kept (auto choosing the full prompt, as before there was a choice) is not said: a hosted
    model's every run would carry a line that changes nothing."""
    if reason and not quiet:
        print(f"{stage}: {reason}", file=sys.stderr)


def run_job(
    job: StageJob[Any], backend: Backend, dry_run: bool, llms: list[LLM] | None, temporary: bool
) -> Estimate | StageOutcome[Any]:
    """The scaffold, where no event loop runs; a stop names no journal that a temporary output lost."""
    try:
        return in_own_thread(lambda: run_llm_stage(job, backend, dry_run=dry_run, llms=llms))
    except StageAborted as e:
        if not temporary:
            raise
        # the journal lived in a temporary folder that is gone when the error is seen
        raise StageAborted(
            f"{e.reason} (the answer cache keeps every answer received; pass output=... to keep "
            "the finished records too)",
            e.reason,
        ) from None


@contextmanager
def output_path(output: str | Path | None, name: str) -> Iterator[Path]:
    """``output``, or a file in a temporary folder removed after the run."""
    if output is not None:
        yield Path(output)
        return
    with tempfile.TemporaryDirectory(prefix="ragassay-") as tmp:
        yield Path(tmp) / name
