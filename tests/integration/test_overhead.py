"""What the LLM layer and the engine cost per call and hold per item, in counts (function calls,
objects, bytes), never in seconds: the speed itself is measured by benchmarks/llm_throughput.py and
benchmarks/judge_scale.py, beside a bare client."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field

from fake_llm import make_llm
from helpers import EXAMPLE, nonempty
from ragassay.data.records import Chunk
from ragassay.llm import LLM, LLMConfig
from ragassay.runtime.engine import Call, run_stage
from ragassay.stages.judge import plan_judge
from ragassay.stages.queries import QueryItem


class Grade(BaseModel):
    grade: int = Field(ge=0, le=3)
    reasoning: str


def _completion(content: dict) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": json.dumps(content)}}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


class InstantClient:
    """Answers every call at once, with no HTTP: what is left is ragassay's own work."""

    def __init__(self, content: dict):
        self.completion = _completion(content)
        self.bodies: list[dict] = []
        outer = self

        class Completions:
            async def create(self, **body):
                outer.bodies.append(body)
                return outer.completion

        class Chat:
            completions = Completions()

        self.chat = Chat()


def _calls_per_ask(llm: LLM, n: int) -> float:
    """Python function calls made per ``ask`` (a profile hook counts them)."""
    counted = [0]

    def hook(frame, event, arg):
        if event == "call":
            counted[0] += 1

    async def asks():
        await asyncio.gather(*(llm.ask([{"role": "user", "content": f"q{i}"}], Grade) for i in range(n)))

    asyncio.run(asks())  # warm: the schema and request shapes are built once per class
    sys.setprofile(hook)
    try:
        asyncio.run(asks())
    finally:
        sys.setprofile(None)
    return counted[0] / n


def test_the_layer_costs_a_bounded_number_of_function_calls_per_ask():
    """The retry and answer loops, the semaphore, usage and parsing: a few hundred Python calls per
    answered ask (pydantic's validation is in Rust), the same at 50 asks as at 400."""
    llm = make_llm(
        None,
        "http://127.0.0.1:9/v1",
        api_key="k",
        client=InstantClient({"grade": 2, "reasoning": "ok"}),
        concurrency=64,
    )
    small, large = _calls_per_ask(llm, 50), _calls_per_ask(llm, 400)
    assert small < 400 and large < 400, (small, large)
    assert abs(large - small) / small < 0.25  # per call, not per call in flight


def test_asks_leave_nothing_behind():
    """Thousands of answered asks hold no objects afterwards: the layer keeps no per-call state."""
    client = InstantClient({"grade": 1, "reasoning": "ok"})
    llm = make_llm(None, "http://127.0.0.1:9/v1", api_key="k", client=client, concurrency=32)

    async def asks(n, offset):
        await asyncio.gather(*(llm.ask([{"role": "user", "content": f"q{offset + i}"}], Grade) for i in range(n)))

    asyncio.run(asks(200, 0))
    client.bodies.clear()
    gc.collect()
    before = len(gc.get_objects())
    asyncio.run(asks(3000, 1000))
    client.bodies.clear()
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 300, grown  # not ~3000 x anything
    assert llm.in_flight == 0 and llm.usage.stage("default").ok == 3200


def _inputs(n_queries: int, depth: int):
    chunks = {
        f"c{i}": Chunk(id=f"c{i}", title=f"Title {i}", text=f"Passage {i}. " + "Words about a topic. " * 60)
        for i in range(200)
    }
    queries = [QueryItem(f"q{i}", f"what does passage {i} say?") for i in range(n_queries)]
    run = {q.id: {f"c{(i * 7 + r) % 200}": float(depth - r) for r in range(depth)} for i, q in enumerate(queries)}
    return queries, chunks, run


def _plan(n_queries: int, depth: int, tmp_path: Path, inputs=None):
    queries, chunks, run = inputs or _inputs(n_queries, depth)
    config = LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", use_cache=False)
    return plan_judge(queries, chunks, run, [config], tmp_path / "j.jsonl")


def test_a_plan_holds_no_prompts(tmp_path):
    """Planned judge items keep no prompt text (each prompt is ~1.6 KB here): the memory a plan takes
    per pair is a few hundred bytes, and the calls are built only when an item is estimated or sent."""
    _plan(5, 10, tmp_path)  # warm: prompt files, schema
    inputs = _inputs(300, 10)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        plan = _plan(300, 10, tmp_path, inputs)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    pairs = len(plan.relevance_items)
    assert pairs == 3000
    per_pair = sum(s.size_diff for s in after.compare_to(before, "filename")) / pairs
    assert per_pair < 1000, per_pair  # with its prompts built at planning it was about 4,500
    item = plan.relevance_items[0]
    assert len(item.calls) == 1 and len(item.calls[0].message_list[-1]["content"]) > 1000  # built on demand
    assert item.calls is not item.calls  # and not kept


def live(objects: list, cls: type) -> int:
    """How many of the collector's ``objects`` are ``cls``es. By their type, not isinstance: a weak
    proxy whose object has died (numba and other libraries a test process may have imported leave
    some) raises ReferenceError when isinstance asks it for its class."""
    return sum(1 for o in objects if issubclass(type(o), cls))


def test_a_run_keeps_no_calls_once_items_are_done(tmp_path):
    """While a judge run goes, built calls live only for the items in flight: afterwards none is
    alive, and a request identical for two items is asked once and then forgotten."""
    plan = _plan(40, 10, tmp_path)
    client = InstantClient({"intent": "i", "match": "m", "trust": "t", "grade": 2})
    llm = make_llm(None, "http://127.0.0.1:9/v1", api_key="k", client=client, concurrency=8)

    async def go():
        return await run_stage(plan.relevance, plan.relevance_items, [llm], plan.relevance_store, quiet=True)

    result = asyncio.run(go())
    assert result.ok == 400 and len(client.bodies) == 400
    gc.collect()
    assert live(gc.get_objects(), Call) == 0
    assert all(it._calls is None for it in plan.relevance_items)
    assert json.loads(Path(plan.relevance_store.output).read_text().splitlines()[0])["grade"] == 2


def test_a_process_that_sends_nothing_never_imports_openai(tmp_path):
    """A dry run (and a rerun of finished work) has no use for the openai package, which takes most
    of a second to import."""
    ex = EXAMPLE
    code = (
        "import sys; from ragassay.cli import main; "
        f"code = main(['judge', '--queries', {str(ex / 'queries.jsonl')!r}, '--chunks', {str(ex / 'chunks.jsonl')!r}, "
        f"'--run', {str(ex / 'runs' / 'bm25.txt')!r}, '-o', {str(tmp_path / 'j.jsonl')!r}, '--model', 'm', "
        "'--base-url', 'http://127.0.0.1:9/v1', '--dry-run']); "
        "print('openai' in sys.modules, code)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False 0", out.stdout + out.stderr


def test_a_rerun_of_finished_work_holds_keys_not_records(tmp_path):
    """Rerunning a finished judgment reads the output for its keys only: the store holds each key
    and where its line is (not the line, not a parsed record); a record is read from the file when
    asked, and the summary is one pass."""
    plan = _plan(40, 10, tmp_path)
    client = InstantClient({"intent": "i", "match": "m", "trust": "t", "grade": 3})
    llm = make_llm(None, "http://127.0.0.1:9/v1", api_key="k", client=client, concurrency=8)

    async def go(p):
        return await run_stage(p.relevance, p.relevance_items, [llm], p.relevance_store, quiet=True)

    first = asyncio.run(go(plan))
    assert first.ok == 400
    inputs = _inputs(40, 10)
    asyncio.run(go(_plan(40, 10, tmp_path, inputs)))  # a first rerun: whatever it imports is imported
    from ragassay.runtime.engine import OutputStore as Store

    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        store = Store(plan.relevance_store.output, plan.relevance.identity)
        held = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename")) / 400
    finally:
        tracemalloc.stop()
    line = len(Path(plan.relevance_store.output).read_bytes()) / 400
    assert held < 200 < line, (held, line)  # its key and an int; the line (~330 bytes) stays in the file
    assert len(store) == 400 and all(store.done(k) for k in nonempty(plan.relevance_store.keys()))
    assert store.record(store.keys()[0])["grade"] == 3
    rerun = asyncio.run(go(_plan(40, 10, tmp_path, inputs)))
    assert len(client.bodies) == 400 and rerun.skipped_done == 400  # nothing asked again
    records = rerun.records
    assert len(records) == 400 and records[0]["grade"] == 3 and records[-1] == list(records)[-1]
    assert records[0] is not records[0]  # parsed as read: a caller's change never alters the run
    assert records == list(records) and records[1:3] == list(records)[1:3]


def test_a_run_holds_only_the_items_in_flight(tmp_path):
    """A judge run makes each item when it sends it and lets it go with its records: at any moment
    the live work items (and their built calls) are no more than the calls in flight, whatever
    the size of the plan; a pair already done is never made at all."""
    from ragassay.runtime.engine import WorkItem

    queries, chunks, run = _inputs(60, 10)
    plan = _plan(60, 10, tmp_path, (queries, chunks, run))
    seen: list[tuple[int, int]] = []

    class CountingClient(InstantClient):
        def __init__(self, content):
            super().__init__(content)
            create = self.chat.completions.create

            async def counting(**body):
                if len(self.bodies) % 50 == 0:
                    objs = gc.get_objects()
                    seen.append((live(objs, WorkItem), live(objs, Call)))
                return await create(**body)

            self.chat.completions.create = counting

    client = CountingClient({"intent": "i", "match": "m", "trust": "t", "grade": 1})
    llm = make_llm(None, "http://127.0.0.1:9/v1", api_key="k", client=client, concurrency=4)

    async def go(p):
        return await run_stage(p.relevance, p.relevance_items, [llm], p.relevance_store, concurrency=4, quiet=True)

    # what an earlier test in this process left (a worker runs many, and garbage waits for the collector)
    # is not this run's: it failed once with 24 items and 22 calls seen at every one of the 12 moments
    gc.collect()
    objs = gc.get_objects()
    left = (live(objs, WorkItem), live(objs, Call))
    del objs
    assert asyncio.run(go(plan)).ok == 600 and len(client.bodies) == 600
    assert len(seen) == 12 and max(w for w, _ in nonempty(seen)) - left[0] <= 4
    assert max(c for _, c in seen) - left[1] <= 4
    again = _plan(60, 10, tmp_path, (queries, chunks, run))
    gc.collect()
    before = live(gc.get_objects(), WorkItem)
    assert asyncio.run(go(again)).skipped_done == 600 and len(client.bodies) == 600
    assert live(gc.get_objects(), WorkItem) == before  # none made, none kept


def test_a_first_run_holds_bytes_per_pair_not_objects(tmp_path):
    """A plan's keys of work to do are packed (24 bytes, not an ~80-byte string each), and what a
    run appends is kept by plan position (8 bytes, not a dict entry and an int): what a finished
    first run holds beyond its plan is a few integers' worth a pair, whatever the number of pairs."""
    _plan(5, 10, tmp_path / "warm")  # warm: prompt files, schema
    client = InstantClient({"intent": "i", "match": "m", "trust": "t", "grade": 2})
    llm = make_llm(None, "http://127.0.0.1:9/v1", api_key="k", client=client, concurrency=8)
    asyncio.run(
        run_stage(
            *(lambda p: (p.relevance, p.relevance_items, [llm], p.relevance_store))(_plan(5, 10, tmp_path / "warm")),
            quiet=True,
        )
    )  # warm: the run's own first-use costs
    inputs = _inputs(400, 10)

    class Counted:  # the requests are counted, not kept (they are ~1.6 KB each)
        n = 0

        def append(self, body):
            self.n += 1

    client.bodies = Counted()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        plan = _plan(400, 10, tmp_path, inputs)
        planned = tracemalloc.take_snapshot()
        result = asyncio.run(run_stage(plan.relevance, plan.relevance_items, [llm], plan.relevance_store, quiet=True))
        gc.collect()
        ran = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    assert result.ok == 4000 and client.bodies.n == 4000
    plan_per_pair = sum(s.size_diff for s in planned.compare_to(before, "filename")) / 4000
    run_per_pair = sum(s.size_diff for s in ran.compare_to(planned, "filename")) / 4000
    # measured: 109 and -12 bytes; with keys held as strings and records kept in a dict, 156 and 37
    assert plan_per_pair < 130, plan_per_pair
    assert run_per_pair < 15, run_per_pair
    assert len(result.records) == 4000 and result.records[-1]["grade"] == 2


def test_a_rerun_of_a_finished_judgment_holds_its_keys_packed(tmp_path):
    """The rerun of a finished judgment asks its output's index for its keys in the order it wrote
    them: they stay packed as the index holds them (24 bytes and a location a key), never put in a
    dict or made into strings one by one, through the plan, the run and the result."""
    client = InstantClient({"intent": "i", "match": "m", "trust": "t", "grade": 1})
    llm = make_llm(None, "http://127.0.0.1:9/v1", api_key="k", client=client, concurrency=8)
    inputs = _inputs(400, 10)

    def plan():
        return _plan(400, 10, tmp_path, inputs)

    def run(p):
        return asyncio.run(run_stage(p.relevance, p.relevance_items, [llm], p.relevance_store, quiet=True))

    assert run(plan()).ok == 4000
    run(plan())  # warm: what a rerun imports or builds once
    client.bodies.clear()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        again = plan()
        rerun = run(again)
        gc.collect()
        held = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename")) / 4000
    finally:
        tracemalloc.stop()
    assert rerun.skipped_done == 4000 and client.bodies == [] and rerun.records[0]["grade"] == 1
    # measured: 126 bytes a pair held by the plan, its store and the result; 225 with the index's
    # keys put in a dict as strings, 265 before keys were packed at all
    assert held < 170, held
