"""Throughput and CPU cost of the LLM layer against a bare AsyncOpenAI loop, on a local stub.

    python benchmarks/llm_throughput.py                 # 1,000 calls, concurrency 16, 500 ms stub
    python benchmarks/llm_throughput.py --calls 200     # a quick look

A stub OpenAI-compatible server (a separate process on 127.0.0.1) answers every chat completion
after a fixed delay. In the same run, the same structured calls go through `ragassay.llm.LLM.ask`
(cache off) and through a bare `AsyncOpenAI` loop with a semaphore (`create` with the same JSON
schema, then pydantic validation: the least work a correct caller can do). Prints calls/s for
both against the ideal (concurrency / delay) and client CPU milliseconds per call.
Goals: the layer keeps >= 95% of the bare client's throughput and >= 85% of ideal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time

from pydantic import BaseModel, Field

ANSWER = json.dumps({
    "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": "stub",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": json.dumps({"grade": 2, "reasoning": "stub answer"})}}],
    "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}}).encode()


class Grade(BaseModel):
    grade: int = Field(ge=0, le=3)
    reasoning: str


def serve(port: int, delay: float, ready) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                await asyncio.sleep(delay)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(ANSWER)).encode() + b"\r\nConnection: keep-alive\r\n\r\n" + ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def through_layer(base_url: str, calls: int, concurrency: int) -> None:
    from ragassay.llm import LLM, LLMConfig
    llm = LLM(LLMConfig(model="stub", base_url=base_url, api_key="stub-key", use_cache=False,
                        concurrency=concurrency))
    await asyncio.gather(*(llm.ask([{"role": "user", "content": f"question {i}"}], Grade) for i in range(calls)))
    assert llm.usage.stage("default").ok == calls
    await llm.client.close()


async def bare_client(base_url: str, calls: int, concurrency: int) -> None:
    from openai import AsyncOpenAI
    client = AsyncOpenAI(base_url=base_url, api_key="stub-key", max_retries=0)
    schema = Grade.model_json_schema()
    schema["additionalProperties"] = False
    fmt = {"type": "json_schema", "json_schema": {"name": "Grade", "schema": schema, "strict": True}}
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> Grade:
        async with sem:
            r = await client.chat.completions.create(
                model="stub", messages=[{"role": "user", "content": f"question {i}"}], response_format=fmt,
                temperature=0.0)
        return Grade.model_validate_json(r.choices[0].message.content)

    results = await asyncio.gather(*(one(i) for i in range(calls)))
    assert len(results) == calls
    await client.close()


def measure(fn, base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(fn(base_url, calls, concurrency))
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--delay", type=float, default=0.5, help="stub answer delay in seconds")
    args = ap.parse_args()

    port = free_port()
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(port, args.delay, ready), daemon=True)
    server.start()
    ready.wait(10)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        measure(bare_client, base_url, 20, args.concurrency)  # warm up imports and connections
        measure(through_layer, base_url, 20, args.concurrency)
        bare_wall, bare_cpu = measure(bare_client, base_url, args.calls, args.concurrency)
        layer_wall, layer_cpu = measure(through_layer, base_url, args.calls, args.concurrency)
    finally:
        server.terminate()

    ideal = args.concurrency / args.delay
    bare_rate, layer_rate = args.calls / bare_wall, args.calls / layer_wall
    print(f"{args.calls} structured calls, concurrency {args.concurrency}, stub delay {args.delay * 1000:.0f} ms; "
          f"ideal {ideal:.1f} calls/s")
    print(f"  bare AsyncOpenAI   {bare_rate:6.1f} calls/s  ({bare_rate / ideal:5.1%} of ideal)  "
          f"CPU {bare_cpu / args.calls * 1000:.2f} ms/call")
    print(f"  ragassay LLM.ask   {layer_rate:6.1f} calls/s  ({layer_rate / ideal:5.1%} of ideal)  "
          f"CPU {layer_cpu / args.calls * 1000:.2f} ms/call")
    print(f"  layer / bare throughput = {layer_rate / bare_rate:.1%}  (goal >= 95%); "
          f"layer / ideal = {layer_rate / ideal:.1%}  (goal >= 85%)")


if __name__ == "__main__":
    main()
