"""The bundled example judged (with coverage) both ways against a local stand-in model: live chat
calls, and batch rounds (export the requests, answer them as vLLM's run_batch would, import).

    python benchmarks/batch_vs_live.py [--delay 0.2]

Prints calls and wall time of each way and whether the records are the same. The stand-in is the
test suite's fake model (tests/fake_llm.py); ``--delay`` is its latency per live call, seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_llm import FakeLLM, run_batch  # noqa: E402
from ragassay.cli import main  # noqa: E402

EX = ROOT / "src" / "ragassay" / "example"
JUDGE = [
    "judge",
    "--queries",
    str(EX / "queries.jsonl"),
    "--chunks",
    str(EX / "chunks.jsonl"),
    "--run",
    str(EX / "runs" / "bm25.txt"),
    "--depth",
    "5",
    "--model",
    "m",
    "--quiet",
]


def records(path: Path) -> list[dict]:
    return sorted((json.loads(x) for x in path.read_text().splitlines() if x.strip()), key=lambda r: r["key"])


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def run() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay", type=float, default=0.2, help="seconds per live call (default 0.2)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    os.environ["OPENAI_API_KEY"] = "x"
    with FakeLLM(delay=args.delay) as server:
        t = time.perf_counter()
        assert (
            quiet(
                JUDGE
                + [
                    "-o",
                    str(tmp / "live.jsonl"),
                    "--coverage-out",
                    str(tmp / "live_cov.jsonl"),
                    "--no-cache",
                    "--base-url",
                    server.url,
                ]
            )
            == 0
        )
        live_time, live_calls = time.perf_counter() - t, server.calls
    del os.environ["OPENAI_API_KEY"]
    argv = JUDGE + [
        "--cache",
        str(tmp / "c.sqlite"),
        "-o",
        str(tmp / "b.jsonl"),
        "--coverage-out",
        str(tmp / "b_cov.jsonl"),
    ]
    t = time.perf_counter()
    imports: list[str] = []
    rounds = requests = 0
    ours = engine = 0.0
    while True:
        req = tmp / f"req{rounds + 1}.jsonl"
        t0 = time.perf_counter()
        quiet(argv + ["--export-requests", str(req)] + [x for f in imports for x in ("--import-results", f)])
        ours += time.perf_counter() - t0
        if not req.exists():
            break
        rounds += 1
        t0 = time.perf_counter()
        requests += run_batch(req, tmp / f"out{rounds}.jsonl")
        engine += time.perf_counter() - t0
        imports = [str(tmp / f"out{rounds}.jsonl")]
    batch_time = time.perf_counter() - t
    same = records(tmp / "b.jsonl") == records(tmp / "live.jsonl") and records(tmp / "b_cov.jsonl") == records(
        tmp / "live_cov.jsonl"
    )
    print(
        f"bundled example, judge --depth 5 --coverage-out ({len(records(tmp / 'live.jsonl'))} judgments, "
        f"{len(records(tmp / 'live_cov.jsonl'))} coverage records)"
    )
    print(f"live:  {live_calls} calls, {live_time:.2f} s (stand-in latency {args.delay} s per call, concurrency 8)")
    print(
        f"batch: {requests} requests in {rounds} rounds, {batch_time:.2f} s in all ({ours:.2f} s in ragassay's "
        f"export/import runs, {engine:.2f} s in the stand-in engine)"
    )
    print(f"same records both ways: {same}")


if __name__ == "__main__":
    run()
