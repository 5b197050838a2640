"""`ragassay evaluate` on big files, beside pytrec_eval measured in the same run. Prints ratios.

    pip install -e '.[bench]'
    python benchmarks/metrics_scale.py                    # both cases, full size, median of 3
    python benchmarks/metrics_scale.py --case msmarco     # 7,000 queries x ~743 run and ~743 qrels lines
    python benchmarks/metrics_scale.py --case memory      # 100,000 and 1,000,000 queries x 100 documents

1. msmarco: an MS MARCO-sized graded run (7,000 queries, ~743 run lines and ~743 qrels lines per
   query, grades 0-3), whole processes from TREC files to five means: pytrec_eval (with the
   dict-building load its users write), `ragassay evaluate` as it runs by default (in memory for
   files under 1 GB) and by blocks (--block-queries), and the floor: a process that only reads
   both files with pyarrow's CSV reader and sorts the run's rows by score once. Goals: <= 0.25 x pytrec_eval's
   time, <= 0.35 x its peak memory (max RSS).
2. memory: files of --small and --large queries x 100 documents (~10 judgments each), evaluated by
   blocks: the large file's peak memory should be within 10% of the small one's (memory that does
   not grow with the number of queries); pytrec_eval is measured at --small only (it holds every
   query in dicts: at a million queries it would not fit on the machine).

Timings are medians of --repeat whole-process runs, the commands interleaved (one round runs each
once), with the load average (uptime's first figure) when each started: the machine may be shared.
Files are generated once under --data (numpy, benchmarks/scale_data.py) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics_speed import METRICS, PYTREC_SCRIPT, bytecode_compiled  # noqa: E402  (the same measures and job)
from scale_data import write_pair  # noqa: E402

PYTREC_NAMES = ["ndcg_cut_10", "P_5", "recall_100", "recip_rank", "map"]


FLOOR_SCRIPT = r"""
import sys
import numpy as np
import pyarrow as pa, pyarrow.csv as csv
for path, n in ((sys.argv[1], 4), (sys.argv[2], 6)):
    t = csv.read_csv(path, read_options=csv.ReadOptions(column_names=[f"c{i}" for i in range(n)]),
                     parse_options=csv.ParseOptions(delimiter=" "))
np.argsort(-t.column("c4").to_numpy())  # the one sort: the run's rows by score
"""


def measure(commands: dict[str, list[str]], repeat: int) -> dict[str, dict]:
    """Each command ``repeat`` times, interleaved: median time, largest peak, median load, first stdout."""
    runs: dict[str, list] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, cmd in commands.items():
            runs[label].append(_timed(cmd))
    return {
        label: {
            "seconds": statistics.median(r[0] for r in rs),
            "mb": max(r[1] for r in rs),
            "load": statistics.median(r[3] for r in rs),
            "out": rs[0][2],
        }
        for label, rs in runs.items()
    }


def _timed(cmd: list[str]) -> tuple[float, int, str, float]:
    """One whole-process run: wall time, peak RSS in MB, stdout, load when it started. The peak is
    GNU time's (%M) of the command it starts: a child forked from this process would count this
    process's own memory in its max RSS (Linux keeps the pre-exec high-water mark)."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "peak-rss-kb %M", *cmd], capture_output=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode()[-2000:]}")
    kb = int(proc.stderr.decode().rsplit("peak-rss-kb ", 1)[1].split()[0])
    return elapsed, kb // 1024, proc.stdout.decode(), load


def ours_cmd(qrels: Path, run: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ragassay",
        "evaluate",
        str(qrels),
        str(run),
        "-m",
        ",".join(METRICS),
        "--format",
        "json",
        *extra,
    ]


def means_gap(ours_out: str, ref_out: str) -> float:
    ours = json.loads(ours_out)["aggregate"]
    ref = dict(line.split() for line in ref_out.strip().splitlines())
    return max(abs(ours[m] - float(ref[r])) for m, r in zip(METRICS, PYTREC_NAMES))


def line(label: str, r: dict, extra: str = "") -> str:
    return f"  {label:40s} {r['seconds']:8.2f} s {r['mb']:6d} MB   load {r['load']:4.1f}" + (
        f"   {extra}" if extra else ""
    )


def msmarco(args: argparse.Namespace, tmp: Path) -> None:
    qrels, run = write_pair(args.data, args.queries, args.per_query, args.per_query)
    lines = args.queries * args.per_query
    size = (qrels.stat().st_size + run.stat().st_size) / 1e6
    print(
        f"1. msmarco: {args.queries} queries, {lines} run lines, {lines} qrels lines, {size:.0f} MB "
        f"(median of {args.repeat}, interleaved)"
    )
    script, floor = tmp / "pytrec_job.py", tmp / "floor.py"
    script.write_text(PYTREC_SCRIPT)
    floor.write_text(FLOOR_SCRIPT)
    block = str(max(1, args.queries // 8))
    res = measure(
        {
            "pytrec_eval": [sys.executable, str(script), str(qrels), str(run)],
            "ragassay evaluate": ours_cmd(qrels, run),
            f"ragassay evaluate --block-queries {block}": ours_cmd(qrels, run, "--block-queries", block),
            "floor: pyarrow read + one sort": [sys.executable, str(floor), str(qrels), str(run)],
        },
        args.repeat,
    )
    ref = res.pop("pytrec_eval")
    print(line("pytrec_eval", ref))
    floor_r = res.pop("floor: pyarrow read + one sort")
    for label, r in res.items():
        print(
            line(
                label,
                r,
                f"time {r['seconds'] / ref['seconds']:.2f} x (goal <= 0.25), memory "
                f"{r['mb'] / ref['mb']:.2f} x (goal <= 0.35), {r['seconds'] / floor_r['seconds']:.1f} x "
                f"the floor; means within {means_gap(r['out'], ref['out']):.1e} of pytrec_eval",
            )
        )
    print(line("floor: pyarrow read + one sort", floor_r))


def memory(args: argparse.Namespace, tmp: Path) -> None:
    small_q, small_r = write_pair(args.data, args.small, args.depth, args.judged)
    large_q, large_r = write_pair(args.data, args.large, args.depth, args.judged)
    sizes = [(p.stat().st_size + q.stat().st_size) / 1e6 for p, q in ((small_q, small_r), (large_q, large_r))]
    print(
        f"2. memory: {args.small} and {args.large} queries x {args.depth} documents, {args.judged} judgments "
        f"each ({sizes[0]:.0f} MB and {sizes[1]:.0f} MB), by blocks of {args.block} queries "
        f"(median of {args.repeat}, interleaved)"
    )
    script = tmp / "pytrec_job.py"
    script.write_text(PYTREC_SCRIPT)
    block = str(args.block)
    res = measure(
        {
            f"pytrec_eval, {args.small} queries": [sys.executable, str(script), str(small_q), str(small_r)],
            f"ragassay, {args.small} queries": ours_cmd(small_q, small_r, "--block-queries", block),
            f"ragassay, {args.large} queries": ours_cmd(large_q, large_r, "--block-queries", block),
        },
        args.repeat,
    )
    ref, small, large = res.values()
    print(line(f"pytrec_eval, {args.small} queries", ref))
    print(
        line(
            f"ragassay, {args.small} queries",
            small,
            f"time {small['seconds'] / ref['seconds']:.2f} x, memory {small['mb'] / ref['mb']:.2f} x pytrec_eval's; "
            f"means within {means_gap(small['out'], ref['out']):.1e} of pytrec_eval",
        )
    )
    print(
        line(
            f"ragassay, {args.large} queries",
            large,
            f"memory {large['mb'] / small['mb']:.2f} x the {args.small}-query run's (goal <= 1.10), "
            f"{json.loads(large['out'])['counts']['evaluated']} queries evaluated",
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=("msmarco", "memory", "both"), default="both")
    ap.add_argument("--queries", type=int, default=7000, help="msmarco: queries")
    ap.add_argument("--per-query", type=int, default=743, help="msmarco: run lines and qrels lines per query")
    ap.add_argument("--small", type=int, default=100_000, help="memory: queries of the smaller file")
    ap.add_argument("--large", type=int, default=1_000_000, help="memory: queries of the larger file")
    ap.add_argument("--depth", type=int, default=100, help="memory: run lines per query")
    ap.add_argument("--judged", type=int, default=10, help="memory: qrels lines per query")
    ap.add_argument("--block", type=int, default=10_000, help="memory: --block-queries")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=Path("/tmp/ragassay_scale"), help="where the files are kept")
    args = ap.parse_args()
    bytecode_compiled()
    import tempfile

    print(f"metrics scale: load average {os.getloadavg()[0]:.1f} at the start, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        if args.case in ("msmarco", "both"):
            msmarco(args, Path(tmp))
        if args.case in ("memory", "both"):
            memory(args, Path(tmp))


if __name__ == "__main__":
    main()
