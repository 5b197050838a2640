"""Time and peak memory of `ragassay judge` as the work grows: a first run, a rerun of the finished
judgment, and a dry run, each a separate process (peak RSS from the kernel's own count).

    python benchmarks/judge_scale.py                    # 100,000 pairs (10,000 queries x depth 10)
    python benchmarks/judge_scale.py --pairs 1000000 --no-peer  # the 1M-pair run of the memory goal

A stub OpenAI-compatible endpoint (a separate process on 127.0.0.1) answers every relevance call at
once with a fixed grade, so what is measured is ragassay, not a model. The peer, in the same run: a
bare AsyncOpenAI loop on aiohttp sending the same requests (built up front by ragassay's planner),
with no journal, no resume and no records: the least a script that did the job could do. Goals: a rerun of
a finished 100k-pair judgment <= 1 s and <= 150 MB; --dry-run on 100k pairs <= 2 s; the peak RSS of
a 1M-pair run <= 400 MB.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_throughput import free_port, serve  # noqa: E402

ANSWER = json.dumps(
    {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": json.dumps({"intent": "the need", "match": "meets it", "trust": "reliable", "grade": 2}),
                },
            }
        ],
        "usage": {"prompt_tokens": 700, "completion_tokens": 40, "total_tokens": 740},
    }
).encode()


def make_inputs(folder: Path, pairs: int, depth: int = 10) -> None:
    queries = pairs // depth
    n_chunks = max(depth, queries)
    with open(folder / "chunks.jsonl", "w") as f:
        for c in range(n_chunks):
            f.write(
                json.dumps(
                    {
                        "id": f"c{c}",
                        "title": f"Article {c}",
                        "text": f"Chunk {c} of the benchmark corpus. " + "Some plain words about a topic. " * 25,
                    }
                )
                + "\n"
            )
    with open(folder / "queries.jsonl", "w") as f:
        for q in range(queries):
            f.write(json.dumps({"id": f"q{q}", "text": f"what does chunk {q} say about topic {q % 97}?"}) + "\n")
    with open(folder / "run.txt", "w") as f:
        for q in range(queries):
            for r in range(depth):
                f.write(f"q{q} Q0 c{(q * 7 + r * 13) % n_chunks} {r + 1} {100 - r} bench\n")


def timed(argv: list[str], env: dict) -> tuple[float, float, str]:
    """Seconds and peak RSS (MB) of one command in its own process."""
    code = (
        "import resource, sys, time; from ragassay.cli import main; t = time.perf_counter(); c = main(sys.argv[1:]); "
        "sys.stderr.write(f'\\n@@ {time.perf_counter() - t:.3f} "
        "{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}\\n'); sys.exit(c)"
    )
    wall = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - wall
    if p.returncode not in (0, 3):
        raise SystemExit(f"{argv[0]} failed ({p.returncode}): {p.stderr[-2000:]}")
    inner, rss = p.stderr.rsplit("@@ ", 1)[1].split()
    return wall, float(rss), p.stdout


PEER = """
import asyncio, json, resource, sys, time
import httpx, openai
from ragassay.data.chunk_files import read_chunks
from ragassay.data.run_files import read_run
from ragassay.llm import LLMConfig
from ragassay.stages.judge import RelevanceAnswer, plan_judge
from ragassay.stages.queries import read_query_items
from ragassay.llm.client import schema_of
folder, url, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
# the same requests, built by ragassay's planner up front, sent by a bare AsyncOpenAI loop on aiohttp
plan = plan_judge(read_query_items(folder + "/queries.jsonl"), read_chunks(folder + "/chunks.jsonl"),
                  read_run(folder + "/run.txt"), [LLMConfig(model="stub", base_url=url)], folder + "/peer.jsonl")
bodies = [c.message_list for it in plan.relevance_items for c in it.calls]
name, schema, strict, _ = schema_of(RelevanceAnswer)
fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}
async def go():
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client = openai.AsyncOpenAI(base_url=url, api_key="stub-key", max_retries=0,
                                http_client=openai.DefaultAioHttpClient(limits=limits, timeout=60))
    sem = asyncio.Semaphore(concurrency)
    async def one(messages):
        async with sem:
            r = await client.chat.completions.create(model="stub", messages=messages, response_format=fmt,
                                                     temperature=0.0)
        return RelevanceAnswer.model_validate_json(r.choices[0].message.content).grade
    out = await asyncio.gather(*(one(m) for m in bodies))
    await client.close()
    return out
t = time.perf_counter()
grades = asyncio.run(go())
with open(folder + "/peer.jsonl", "w") as f:
    for g in grades:
        f.write(json.dumps({"grade": g}) + "\\n")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
sys.stderr.write(f"\\n@@ {time.perf_counter() - t:.3f} {peak:.1f}\\n")
"""


def peer(folder: Path, url: str, concurrency: int, env: dict) -> tuple[float, float]:
    """The bare client's wall time and peak RSS on the same requests (no journal, no resume)."""
    wall = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", PEER, str(folder), url, str(concurrency)], capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - wall
    if p.returncode:
        raise SystemExit(f"the bare client failed: {p.stderr[-2000:]}")
    return wall, float(p.stderr.rsplit("@@ ", 1)[1].split()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument(
        "--delay",
        type=float,
        default=0.0,
        help="the stub's answer delay in seconds (0.2: a hosted model's pace, where calls in flight decide the time)",
    )
    ap.add_argument(
        "--no-peer",
        action="store_true",
        help="leave the bare loop out (it holds every request: ~6 GB and half an hour at 1M pairs)",
    )
    args = ap.parse_args()
    port = free_port()
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(port, args.delay, ready, ANSWER), daemon=True)
    server.start()
    ready.wait(10)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_") and k != "PYTHONDONTWRITEBYTECODE"}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            # every process runs from bytecode, as an installed package does (pip compiles a wheel's
            # modules when it installs them), not from source compiled again on each start; a bytecode folder
            # the caller already set (the test suite's, shared by its processes) serves as well as a new one
            env.setdefault("PYTHONPYCACHEPREFIX", str(d / "pycache"))
            subprocess.run(
                [sys.executable, "-c", "import ragassay.cli, ragassay.stages.judge, ragassay.llm.client"],
                env=env,
                check=True,
            )
            make_inputs(d, args.pairs)
            base = [
                "judge",
                "--queries",
                str(d / "queries.jsonl"),
                "--chunks",
                str(d / "chunks.jsonl"),
                "--run",
                str(d / "run.txt"),
                "-o",
                str(d / "judgments.jsonl"),
                "--model",
                "stub",
                "--base-url",
                f"http://127.0.0.1:{port}/v1",
                "--concurrency",
                str(args.concurrency),
                "--no-cache",
                "--quiet",
            ]
            dry = timed(base + ["--dry-run"], env)
            first = timed(base, env)
            assert sum(1 for _ in open(d / "judgments.jsonl")) == args.pairs
            rerun = timed(base, env)
            size = (d / "judgments.jsonl").stat().st_size / 1e6
            bare = None if args.no_peer else peer(d, f"http://127.0.0.1:{port}/v1", args.concurrency, env)
    finally:
        server.terminate()
    print(
        f"judge, {args.pairs} pairs (judgments file {size:.0f} MB), stub endpoint answering in "
        f"{args.delay * 1000:.0f} ms, concurrency {args.concurrency}"
    )
    print(f"  dry run            {dry[0]:7.2f} s  peak RSS {dry[1]:7.1f} MB")
    print(f"  first run          {first[0]:7.2f} s  peak RSS {first[1]:7.1f} MB  ({args.pairs / first[0]:.0f} pairs/s)")
    print(f"  rerun (all done)   {rerun[0]:7.2f} s  peak RSS {rerun[1]:7.1f} MB")
    if bare is not None:
        print(
            f"  peer: a bare AsyncOpenAI loop (aiohttp) sending the same requests, no journal or resume: "
            f"{bare[0]:.2f} s, peak RSS {bare[1]:.1f} MB"
        )
        print(f"  first run / peer: {first[0] / bare[0]:.2f}x the time, {first[1] / bare[1]:.2f}x the memory")
    goals = {
        100_000: [
            ("dry run <= 2 s", dry[0] <= 2),
            ("rerun <= 1 s", rerun[0] <= 1),
            ("rerun <= 150 MB", rerun[1] <= 150),
        ],
        1_000_000: [("first run <= 400 MB", first[1] <= 400)],
    }.get(args.pairs, [])
    if args.delay and bare is not None:  # at a hosted model's pace the time is the calls in flight's: as the peer's
        goals.append(
            (f"first run within 1.2x the peer's time ({first[0]:.2f} s vs {bare[0]:.2f} s)", first[0] <= 1.2 * bare[0])
        )
    for goal, met in goals:
        print(f"  goal: {goal}: {'met' if met else 'NOT met'}")
    if not all(met for _, met in goals):
        raise SystemExit("judge_scale: goal NOT met: " + "; ".join(g for g, met in goals if not met))


if __name__ == "__main__":
    main()
