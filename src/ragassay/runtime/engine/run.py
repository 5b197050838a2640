"""The one runner of every LLM stage: identical calls asked once, records journalled as they come, the
first failures that look alike stop the run, and the result counted (``StageRun``)."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from ...data.coerce import to_dataframe
from ...errors import RagassayError
from ...llm.batch import Deferred
from ...llm.client import LLM
from ...llm.errors import EARLY_FAILURES, BudgetReached, LLMError
from ..store import OutputStore
from .lock import OutputLock
from .work import Call, Items, Stage, WorkItem, pending_positions, record_keys, record_keys_at

ABORT_AFTER = 3  # this many items failing the same way before any success stops the run


def failing_alike(early: Sequence[LLMError]) -> bool:
    """The abort rule: the first failures (before any answer) are ABORT_AFTER or more, all of one
    kind that says the endpoint cannot be used (a dead endpoint, a refused key, an unknown model)."""
    return len(early) >= ABORT_AFTER and len({type(e) for e in early}) == 1 and isinstance(early[0], EARLY_FAILURES)




class SharedCalls:
    """Identical calls of one run are asked once. Items with equal inputs under different ids (two
    chunks with the same text, two answers alike) keep their own records and keys; only the
    request is shared, so nothing is paid twice, with or without the answer cache.

    An answer is kept while items that planned the same first-step call are still to come (a
    count made from the plan), and for later steps (whose calls are known only as items run) for
    the rest of the run. A failed call is not kept: a later item asks again."""

    def __init__(self, items: Iterable[WorkItem]):
        # first-step calls, by digest (a plan holds no prompts): how many items are still to ask each;
        # only digests asked more than once are kept. Counted in one array (16 bytes a call, not a
        # dict entry of ~100): a million calls take 16 MB while they are counted
        digests = bytearray()
        for it in items:
            for c in it.calls:
                digests += c.digest()
        self._left: dict[bytes, int] = repeated_digests(digests)
        self._futures: dict[bytes, asyncio.Future] = {}

    async def ask(self, call: Call, llms: Sequence[LLM], first_step: bool = True) -> BaseModel:
        digest = call.digest()
        fut = self._futures.get(digest)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._futures[digest] = fut
            try:
                fut.set_result(await call.ask(llms))
            except asyncio.CancelledError:
                fut.cancel()
                self._futures.pop(digest, None)
                raise
            except BaseException as e:  # LLMError, Deferred: every item waiting on it gets it too
                fut.set_exception(e)
                self._futures.pop(digest, None)
        try:
            return await asyncio.shield(fut) if not fut.done() else fut.result()
        finally:
            self._release(digest, first_step)

    def _release(self, digest: bytes, first_step: bool) -> None:
        left = self._left.get(digest)
        if left is None:  # a first-step call of one item only: nobody else waits for it
            if first_step and digest in self._futures and self._futures[digest].done():
                del self._futures[digest]
            return
        if left <= 1:
            del self._left[digest]
            self._futures.pop(digest, None)
        else:
            self._left[digest] = left - 1


def repeated_digests(digests: bytearray) -> dict[bytes, int]:
    """How many times each 16-byte digest of ``digests`` that comes more than once comes. Its
    first 8 bytes are sorted to find the candidates (8 bytes a digest while it is done: not a
    sorted copy of all, 62 MB more at a million digests, measured, against 18), whose whole
    digests are then counted."""
    if not digests:
        return {}
    import numpy as np
    heads = np.frombuffer(digests, dtype="<u8")[::2].copy()
    heads.sort()
    twice = np.unique(heads[1:][heads[1:] == heads[:-1]])
    del heads
    if not twice.size:
        return {}
    view = np.frombuffer(digests, dtype="<u8")[::2]
    at = np.searchsorted(twice, view)
    np.minimum(at, twice.size - 1, out=at)
    candidates = np.frombuffer(digests, dtype="V16")[twice[at] == view]
    counted = Counter(row.tobytes() for row in candidates)
    return {d: n for d, n in counted.items() if n > 1}


class StageAborted(RagassayError):
    """The first calls all failed the same way (dead endpoint, refused key, unknown model).
    ``reason`` is the message without where the finished records are kept."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


@dataclass
class StageRun:
    """What one run of a stage did: the records of this plan (one per key, plan order) and counts."""

    stage: str
    records: Sequence[dict]  # Records (parsed when read) from a run; any list of dicts will do
    items: int
    skipped_done: int
    ok: int
    errors: int
    error_reasons: Counter
    pending: int = 0  # items waiting for batch answers (their requests were exported)
    stopped: str | None = None  # a spending ceiling stopped the run: why, and what is left

    def to_dataframe(self) -> Any:
        """The records of this run as a pandas DataFrame (pandas is optional)."""
        return to_dataframe(list(self.records))

    def __repr__(self) -> str:
        # short: asyncio.run's signal handling reprs the result of the task it ran (Python 3.11), and a
        # notebook shows it; a repr of every record would cost seconds on a large run
        return (f"StageRun({self.stage!r}, {len(self.records)} records: {self.ok} ok, {self.errors} errors, "
                f"{self.skipped_done} already done, {self.pending} pending)")

    @property
    def exit_code(self) -> int:
        """0 every record ok; 3 some error records or items left by a ceiling (a rerun goes on); 1
        nothing succeeded."""
        if self.errors == 0 and self.stopped is None:
            return 0
        return 1 if self.ok == 0 and self.errors else 3

    def failure_text(self, source: str | Path | None = None) -> str:
        """The error records' commonest reasons, each input error with a few of its items (and
        ``source``, the input file, when given); a rerun is advised only for errors a rerun may
        mend (not an input's, which repeat, nor a setting's, whose reason says what to set)."""
        if self.stopped and not self.errors:
            return self.stopped
        if not self.errors:
            return ""
        reasons = "; ".join(f"{n} x {r}{self._items_of(r, source)}" for r, n in self.error_reasons.most_common(3))
        fixed = sum(n for r, n in self.error_reasons.items() if r.startswith(FIXED_REASONS))
        inputs = sum(n for r, n in self.error_reasons.items() if r.startswith("input:"))
        advice = []
        if fixed < self.errors:
            advice.append("rerun the same command to retry them" if not fixed else
                          f"rerun the same command to retry the {self.errors - fixed} others")
        if inputs:
            advice.append(f"the {inputs} input error{'s repeat' if inputs != 1 else ' repeats'} on a rerun: mend "
                          f"{'those items' if inputs != 1 else 'that item'} in the input first")
        text = (f"{self.errors} of {self.ok + self.errors} {self.stage} records are errors (commonest: {reasons})"
                + "".join(f"; {a}" for a in advice))
        return f"{text}\n{self.stopped}" if self.stopped else text

    def _items_of(self, reason: str, source: str | Path | None, shown: int = 3) -> str:
        """`` (items 'a', 'b' of FILE)``: a few items whose records fail for an input ``reason``."""
        if not reason.startswith("input:"):
            return ""
        ids = [str(r.get("id")) for r in self.records
               if isinstance(r, dict) and r.get("status") == "error" and reason_of(r) == reason and r.get("id")]
        if not ids:
            return ""
        # an item without an id of its own is named by its line (the id rule's "line-N"): said as the line
        named = ", ".join(f"line {i[5:]}" if re.fullmatch(r"line-\d+", i) else f"item {i!r}" for i in ids[:shown])
        return f" ({named}{', ...' if len(ids) > shown else ''}" + (f" of {source})" if source else ")")


FIXED_REASONS = ("input:", "config:")  # reasons a rerun of the same command repeats


def reason_of(record: dict) -> str:
    text = str(record.get("error") or "unknown")
    return text if len(text) <= 160 else text[:157] + "..."


def contract(stage: Stage, records: Sequence[BaseModel | dict]) -> list[dict]:
    """Each record as the data contract defines it (records.py), serialised for the journal: a
    stage cannot write a record that breaks it (an ok status without a label, an error without its
    reason, a field its model does not declare)."""
    if stage.record_model is None:
        return [r.model_dump(mode="json") if isinstance(r, BaseModel) else r for r in records]
    return [stage.record_model.model_validate(r).model_dump(mode="json") for r in records]


async def run_stage(stage: Stage, items: Sequence[WorkItem], llms: Sequence[LLM], store: OutputStore, *,
                    concurrency: int | None = None, quiet: bool = False, keep_journal: bool = False) -> StageRun:
    """Run every item not already done in ``store``; write its output once, at the end. The output
    is locked for the whole run: a second process on it fails at once, before sending anything.

    ``keep_journal``: the records stay in the journal and the output is not written, for a stage
    that plans in rounds from the records of the last (generate) and writes its files itself."""
    with OutputLock(store.output):
        store.refresh()
        return await _run_stage(stage, items, llms, store, concurrency, quiet, keep_journal)


async def _run_stage(stage: Stage, items: Sequence[WorkItem], llms: Sequence[LLM], store: OutputStore,
                     concurrency: int | None, quiet: bool, keep_journal: bool = False) -> StageRun:
    done = store.done
    plan_keys = record_keys(items)
    # one record an item, keys distinct: this run's records are kept by plan position (8 bytes each)
    by_position = isinstance(items, Items) and items.distinct_keys and items.one_record_each
    if by_position:
        store.expect(plan_keys)
    todo = pending_positions(items, done, store.done_flags)  # positions: an item is made when sent, let go after
    total = len(plan_keys)
    left = len(todo) if isinstance(items, Items) and items.one_record_each \
        else sum(len(record_keys_at(items, i)) for i in todo)  # (one key an item: no item read for it)
    bar = progress_bar(total, total - left, stage.name, quiet)
    started = time.monotonic()
    shared = SharedCalls(items[i] for i in todo)
    queue = iter(todo)
    early: list[LLMError] = []
    answered = [False]
    aborted: list[str] = []
    budget: list[str] = []  # why a spending ceiling stopped the run
    abort = asyncio.Event()

    pending = [0]

    async def do(it: WorkItem) -> list[dict]:
        try:
            return await do_open(it)
        finally:
            it.close()  # its prompts are not kept past its records

    async def do_open(it: WorkItem) -> list[dict]:
        try:
            answers: list[BaseModel] = []
            calls, first = list(it.open()), True
            while calls:
                waiting = False
                for call in calls:  # every call of a step is asked (or exported) before the item waits
                    try:
                        answers.append(await shared.ask(call, llms, first))
                    except Deferred:
                        waiting = True
                if waiting:
                    pending[0] += 1
                    return []
                calls, first = stage.next_calls(it, answers), False
            try:  # a stage builds its record models in finish: a refused one is caught there too
                records = await stage.finish(it, answers, llms)
                if it.calls:
                    answered[0] = True
                return contract(stage, records)
            except ValidationError as e:  # never written as is: an error record that says why
                if it.calls:
                    answered[0] = True
                raise LLMError("invalid", f"the answers made a record outside the data contract: "
                               f"{e.errors()[0].get('msg', e)}") from None
        except LLMError as e:
            if isinstance(e, BudgetReached):  # a spending ceiling: no new item starts; calls already sent (within the
                if not budget:      # ceiling, so paid for) are awaited and their records kept
                    budget.append(str(e))
                return []
            if not answered[0] and isinstance(e, EARLY_FAILURES):
                early.append(e)
                if len(todo) > ABORT_AFTER and failing_alike(early):
                    aborted.append(str(early[0]).rstrip("."))
                    abort.set()
            return contract(stage, stage.error_records(it, e))

    async def worker() -> None:
        while not aborted and not budget:
            i = next(queue, None)
            if i is None:
                return
            records = await do(items[i])
            store.append(records, repeat(i) if by_position else None)
            if bar is not None:
                bar.set_postfix_str(flow_note(llms, started), refresh=False)
                bar.update(len(records))

    if concurrency is None:
        concurrency = llms[0].config.concurrency if llms else 8
    # as many workers as calls may be in flight: an item is only started when it can be sent, so an
    # abort leaves nothing half-asked
    n_workers = max(1, min(len(todo), concurrency))
    workers = [asyncio.create_task(worker()) for _ in range(n_workers)]
    all_done = asyncio.gather(*workers)
    all_done.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved: no stray log
    stop = asyncio.create_task(abort.wait())
    try:
        await asyncio.wait([cast("asyncio.Future[Any]", all_done), stop], return_when=asyncio.FIRST_COMPLETED)
        if not abort.is_set():
            await all_done  # re-raise a worker's error (a full disk)
    finally:
        stop.cancel()
        for w in workers:  # after an abort: calls not yet sent are never sent
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        all_done.cancel()
        if bar is not None:
            bar.close()
        store.close_journal()
    if aborted:
        reason = (f"stopped early: the first {len(early)} {stage.name} calls all failed the same way: "
                  f"{aborted[0]}. Nothing more was sent; fix this and rerun")
        raise StageAborted(f"{reason} (finished records are kept in {store.journal})", reason)
    records = store.pinned(store.held_locations(plan_keys)) if keep_journal else store.finalize(plan_keys)
    failed = store.failed_records(plan_keys)
    reasons = Counter(map(reason_of, failed))
    not_done = 0
    if budget:
        if by_position:
            flags = store.done_flags(plan_keys)
            not_done = sum(1 for i in todo if not flags[i])
        else:
            not_done = sum(1 for i in todo if not all(map(done, record_keys_at(items, i))))
    return StageRun(stage.name, records, len(items), len(items) - len(todo), len(records) - len(failed),
                    len(failed), reasons, pending[0],
                    stopped=f"{budget[0]}; {not_done} {stage.name} items not done: rerun with a higher ceiling to "
                            "go on" if budget else None)


def flow_note(llms: Sequence[LLM], started: float) -> str:
    """What the progress bar says beside the count: calls in flight and the answers' tokens a second
    (a slow local model shows here what it can do)."""
    if not llms:
        return ""
    flying = sum(llm.in_flight for llm in llms)
    tokens = sum(llm.usage.total().completion_tokens for llm in llms)
    seconds = max(time.monotonic() - started, 1e-9)
    return f"{flying} in flight, {tokens / seconds:.1f} tok/s"


def progress_bar(total: int, initial: int, stage: str, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=stage, unit="item", file=sys.stderr, dynamic_ncols=True)
