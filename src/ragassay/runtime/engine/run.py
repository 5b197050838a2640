"""The one runner of every LLM stage (:func:`run_stage`): the items of a plan not yet done are sent,
identical calls asked once (``shared_calls.py``), each item's records journalled as they come, the
first failures that look alike stop the run, and the result counted (:class:`.result.StageRun`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Sequence
from itertools import repeat
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from ...llm.batch import Deferred
from ...llm.client import LLM
from ...llm.errors import EARLY_FAILURES, BudgetReached, LLMError
from ..store import OutputStore
from .lock import OutputLock
from .result import StageAborted, StageRun, reason_of
from .shared_calls import SharedCalls
from .work import Items, Stage, WorkItem, pending_positions, record_keys, record_keys_at

ABORT_AFTER = 3  # this many items failing the same way before any success stops the run


def failing_alike(early: Sequence[LLMError]) -> bool:
    """The abort rule: the first failures (before any answer) are ABORT_AFTER or more, all of one
    kind that says the endpoint cannot be used (a dead endpoint, a refused key, an unknown model)."""
    return len(early) >= ABORT_AFTER and len({type(e) for e in early}) == 1 and isinstance(early[0], EARLY_FAILURES)


def contract(stage: Stage, records: Sequence[BaseModel | dict]) -> list[dict]:
    """Each record as the data contract defines it (records.py), serialised for the journal: a
    stage cannot write a record that breaks it (an ok status without a label, an error without its
    reason, a field its model does not declare)."""
    if stage.record_model is None:
        return [r.model_dump(mode="json") if isinstance(r, BaseModel) else r for r in records]
    return [stage.record_model.model_validate(r).model_dump(mode="json") for r in records]


async def run_stage(
    stage: Stage,
    items: Sequence[WorkItem],
    llms: Sequence[LLM],
    store: OutputStore,
    *,
    concurrency: int | None = None,
    quiet: bool = False,
    keep_journal: bool = False,
) -> StageRun:
    """Run every item not already done in ``store``; write its output once, at the end. The output
    is locked for the whole run: a second process on it fails at once, before sending anything.

    ``keep_journal``: the records stay in the journal and the output is not written, for a stage
    that plans in rounds from the records of the last (generate) and writes its files itself."""
    with OutputLock(store.output):
        store.refresh()
        return await StageRunner(stage, items, llms, store, quiet, keep_journal).run(concurrency)


class RunState:
    """What the workers of one run tell each other, held in one place: whether any item was
    answered yet, the failures met before that, why the run stopped early or at a ceiling, and how
    many items wait for batch answers."""

    def __init__(self) -> None:
        self.answered = False  # an item had its answers: failures after this no longer stop the run
        self.early: list[LLMError] = []  # the failures before any answer that say the endpoint cannot be used
        self.aborted: str | None = None  # the abort rule stopped the run: the first of those failures
        self.budget: str | None = None  # a spending ceiling stopped the run: why
        self.pending = 0  # items waiting for batch answers (their requests were exported)
        self.abort = asyncio.Event()  # set when the abort rule stops the run, so the workers are cancelled


class StageRunner:
    """One run of a plan's items not yet done: each sent by one of as many workers as calls may be
    in flight, its records journalled as they come, and the run's :class:`StageRun` made at the end
    from what the store holds."""

    def __init__(
        self,
        stage: Stage,
        items: Sequence[WorkItem],
        llms: Sequence[LLM],
        store: OutputStore,
        quiet: bool,
        keep_journal: bool = False,
    ) -> None:
        self.stage, self.items, self.llms, self.store = stage, items, llms, store
        self.keep_journal = keep_journal
        self.plan_keys = record_keys(items)
        # one record an item, keys distinct: this run's records are kept by plan position (8 bytes each)
        self.by_position = isinstance(items, Items) and items.distinct_keys and items.one_record_each
        if self.by_position:
            store.expect(self.plan_keys)
        # positions: an item is made when sent, let go after
        self.todo = pending_positions(items, store.done, store.done_flags)
        total = len(self.plan_keys)
        left = (
            len(self.todo)
            if isinstance(items, Items) and items.one_record_each
            else sum(len(record_keys_at(items, i)) for i in self.todo)
        )  # (one key an item: no item read for it)
        self.bar = progress_bar(total, total - left, stage.name, quiet)
        self.started = time.monotonic()
        self.shared = SharedCalls(items[i] for i in self.todo)
        self.queue = iter(self.todo)
        self.state = RunState()

    async def run(self, concurrency: int | None) -> StageRun:
        """Send every item to do; the run's records and counts, or :class:`StageAborted`."""
        await self.run_workers(concurrency)
        if self.state.aborted is not None:
            reason = (
                f"stopped early: the first {len(self.state.early)} {self.stage.name} calls all failed the "
                f"same way: {self.state.aborted}. Nothing more was sent; fix this and rerun"
            )
            raise StageAborted(f"{reason} (finished records are kept in {self.store.journal})", reason)
        return self.result()

    async def run_workers(self, concurrency: int | None) -> None:
        """Start the workers and wait until they have sent every item, or until the abort rule
        stops them (then the calls not yet sent are never sent)."""
        llms, store, state = self.llms, self.store, self.state
        if concurrency is None:
            concurrency = llms[0].config.concurrency if llms else 8
        # as many workers as calls may be in flight: an item is only started when it can be sent, so an
        # abort leaves nothing half-asked
        n_workers = max(1, min(len(self.todo), concurrency))
        workers = [asyncio.create_task(self.worker()) for _ in range(n_workers)]
        workers_finished = asyncio.gather(*workers)
        workers_finished.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved: no stray log
        stop = asyncio.create_task(state.abort.wait())
        try:
            waited: list[asyncio.Future[Any]] = [cast("asyncio.Future[Any]", workers_finished), stop]
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
            if not state.abort.is_set():
                await workers_finished  # re-raise a worker's error (a full disk)
        finally:
            stop.cancel()
            for w in workers:  # after an abort: calls not yet sent are never sent
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            workers_finished.cancel()
            if self.bar is not None:
                self.bar.close()
            store.close_journal()

    async def worker(self) -> None:
        """Take the next item to do and journal its records, until none is left or the run stops."""
        state, store, bar = self.state, self.store, self.bar
        while state.aborted is None and state.budget is None:
            i = next(self.queue, None)
            if i is None:
                return
            records = await self.item_records(self.items[i])
            store.append(records, repeat(i) if self.by_position else None)
            if bar is not None:
                bar.set_postfix_str(flow_note(self.llms, self.started), refresh=False)
                bar.update(len(records))

    async def item_records(self, it: WorkItem) -> list[dict]:
        """The records of one item: from its answers, or the stage's error records for a failed call."""
        try:
            answers = await self.answers(it)
            if answers is None:
                self.state.pending += 1
                return []
            return await self.finished(it, answers)
        except LLMError as e:
            return self.failed(it, e)
        finally:
            it.close()  # its prompts are not kept past its records

    async def answers(self, it: WorkItem) -> list[BaseModel] | None:
        """The answers to every call of an item, step by step; None when a call was exported to the
        Batch API and the item waits for its answer."""
        answers: list[BaseModel] = []
        calls, first = list(it.open()), True
        while calls:
            waiting = False
            for call in calls:  # every call of a step is asked (or exported) before the item waits
                try:
                    answers.append(await self.shared.ask(call, self.llms, first))
                except Deferred:
                    waiting = True
            if waiting:
                return None
            calls, first = self.stage.next_calls(it, answers), False
        return answers

    async def finished(self, it: WorkItem, answers: list[BaseModel]) -> list[dict]:
        """The stage's records from an item's answers, checked against the data contract."""
        try:  # a stage builds its record models in finish: a refused one is caught there too
            records = await self.stage.finish(it, answers, self.llms)
            if it.calls:
                self.state.answered = True
            return contract(self.stage, records)
        except ValidationError as e:  # never written as is: an error record that says why
            if it.calls:
                self.state.answered = True
            raise LLMError(
                "invalid", f"the answers made a record outside the data contract: {e.errors()[0].get('msg', e)}"
            ) from None

    def failed(self, it: WorkItem, e: LLMError) -> list[dict]:
        """The error records of an item whose call failed; a ceiling reached, or the abort rule met,
        stops the run here."""
        state = self.state
        if isinstance(e, BudgetReached):  # a spending ceiling: no new item starts; calls already sent (within
            if state.budget is None:  # the ceiling, so paid for) are awaited and their records kept
                state.budget = str(e)
            return []
        if not state.answered and isinstance(e, EARLY_FAILURES):
            state.early.append(e)
            if len(self.todo) > ABORT_AFTER and failing_alike(state.early):
                if state.aborted is None:
                    state.aborted = str(state.early[0]).rstrip(".")
                state.abort.set()
        return contract(self.stage, self.stage.error_records(it, e))

    def result(self) -> StageRun:
        """What the run did, from the store once its records are written (or kept in the journal)."""
        store, stage, items, plan_keys = self.store, self.stage, self.items, self.plan_keys
        records = store.pinned(store.held_locations(plan_keys)) if self.keep_journal else store.finalize(plan_keys)
        failed = store.failed_records(plan_keys)
        reasons = Counter(map(reason_of, failed))
        stopped = None
        if self.state.budget is not None:
            stopped = (
                f"{self.state.budget}; {self.items_left()} {stage.name} items not done: rerun with a higher "
                "ceiling to go on"
            )
        return StageRun(
            stage.name,
            records,
            len(items),
            len(items) - len(self.todo),
            len(records) - len(failed),
            len(failed),
            reasons,
            self.state.pending,
            stopped=stopped,
        )

    def items_left(self) -> int:
        """How many of the items to do have a record not done after the run (a ceiling stopped it)."""
        if self.by_position:
            flags = self.store.done_flags(self.plan_keys)
            return sum(1 for i in self.todo if not flags[i])
        is_done = self.store.done
        return sum(1 for i in self.todo if not all(map(is_done, record_keys_at(self.items, i))))


def flow_note(llms: Sequence[LLM], started: float) -> str:
    """What the progress bar says beside the count: calls in flight and the answers' tokens a second
    (a slow local model shows here what it can do)."""
    if not llms:
        return ""
    flying = sum(llm.in_flight for llm in llms)
    tokens = sum(llm.usage.total().completion_tokens for llm in llms)
    seconds = max(time.monotonic() - started, 1e-9)
    return f"{flying} in flight, {tokens / seconds:.1f} tok/s"


def progress_bar(total: int, initial: int, stage: str, quiet: bool) -> Any:
    """A tqdm bar on stderr counting a stage's items, or None when ``quiet`` or stderr is not a
    terminal (a log or a pipe would fill with redrawn lines)."""
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # loaded only when a bar is shown (a terminal): most runs never draw one

    return tqdm(total=total, initial=initial, desc=stage, unit="item", file=sys.stderr, dynamic_ncols=True)
