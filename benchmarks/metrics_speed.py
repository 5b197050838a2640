"""How fast is `ragassay evaluate` next to pytrec_eval and ranx? Prints ratios measured in this run.

    pip install -e '.[bench]'
    python benchmarks/metrics_speed.py            # 20,000 queries x 100 documents
    python benchmarks/metrics_speed.py --queries 2000   # a quick look

1. End to end, whole process, from TREC files to the five means: `ragassay evaluate` (with each
   of its two readers: pyarrow's CSV parser when pyarrow is installed, the numpy splitter
   otherwise) against a script doing the same with pytrec_eval, with the dict-building load its
   users write. Goals: <= 0.22 x pytrec_eval's time with pyarrow, <= 0.30 x without, peak memory
   (max RSS) <= 0.7 x its. The floor is a process that only reads both files with pyarrow's CSV reader.
2. In process, compute only (files already loaded): `ragassay.evaluate` against ranx's
   `evaluate` after its numba JIT has warmed up. Goal: ratio <= 0.5.

Each timing is the best of --repeat runs. The run is written as retrieval systems write runs
(sorted by score within each query); qrels hold ~20 graded judgments per query, most of them
retrieved.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

METRICS = ["ndcg@10", "p@5", "recall@100", "mrr", "map"]
PYTREC_MEASURES = {"ndcg_cut.10", "P.5", "recall.100", "recip_rank", "map"}
RANX_METRICS = ["ndcg@10", "precision@5", "recall@100", "mrr", "map"]
TIME_GOALS = {"arrow": 0.22, "numpy": 0.30}  # of pytrec_eval's time: with pyarrow ([fast]) and without (default)

FLOOR_SCRIPT = r"""
import sys
import pyarrow as pa, pyarrow.csv as csv
for path, n in ((sys.argv[1], 4), (sys.argv[2], 6)):
    csv.read_csv(path, read_options=csv.ReadOptions(column_names=[f"c{i}" for i in range(n)]),
                 parse_options=csv.ParseOptions(delimiter=" "))
"""

PYTREC_SCRIPT = r"""
import sys
import pytrec_eval
qrels, run = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
with open(sys.argv[2]) as f:
    for line in f:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.5", "recall.100", "recip_rank", "map"})
res = ev.evaluate(run)
for m in ("ndcg_cut_10", "P_5", "recall_100", "recip_rank", "map"):
    print(m, sum(v[m] for v in res.values()) / len(res))
"""


def bytecode_compiled() -> None:
    """Compile ragassay's modules to bytecode, as pip does when it installs a wheel: with
    PYTHONDONTWRITEBYTECODE set (some containers set it) every timed process would otherwise compile
    them again, ~0.08 s that no installed user pays."""
    import ragassay

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(ragassay.__file__).parent)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def generate(directory: Path, n_queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    run_path, qrels_path = directory / "run.txt", directory / "qrels.txt"
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(n_queries):
            docs = rng.choice(5_000_000, depth + 10, replace=False)
            scores = np.sort(np.round(rng.gamma(2.0, 3.0, depth) + 5, 4))[::-1]
            run.write(
                "".join(f"q{q} Q0 doc{d} {r + 1} {s:.4f} bench\n" for r, (d, s) in enumerate(zip(docs[:depth], scores)))
            )
            judged = np.concatenate([rng.choice(docs[:depth], 16, replace=False), docs[depth : depth + 4]])
            grades = rng.choice(4, len(judged), p=[0.5, 0.25, 0.15, 0.1])
            qrels.write("".join(f"q{q} 0 doc{d} {g}\n" for d, g in zip(judged, grades)))
    return qrels_path, run_path


def run_process(cmd: list[str]) -> tuple[float, int, str]:
    """Wall time (s), peak RSS (MB) and stdout of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err.decode()}")
    return elapsed, usage.ru_maxrss // 1024, out.decode()


def best(cmd: list[str], repeat: int) -> tuple[float, int, str]:
    runs = [run_process(cmd) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[0][2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bytecode_compiled()

    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        t = time.perf_counter()
        qrels_path, run_path = generate(tmpdir, args.queries, args.depth)
        size = run_path.stat().st_size / 1e6
        print(
            f"data: {args.queries} queries x {args.depth} documents, run {size:.0f} MB "
            f"(generated in {time.perf_counter() - t:.1f} s)"
        )

        script = tmpdir / "pytrec_job.py"
        script.write_text(PYTREC_SCRIPT)
        ours_cmd = [
            sys.executable,
            "-m",
            "ragassay",
            "evaluate",
            str(qrels_path),
            str(run_path),
            "-m",
            ",".join(METRICS),
            "--format",
            "json",
        ]
        ref_cmd = [sys.executable, str(script), str(qrels_path), str(run_path)]
        t_ref, mem_ref, out_ref = best(ref_cmd, args.repeat)
        ref = dict(line.split() for line in out_ref.strip().splitlines())
        print("\n1. end to end (whole process: load TREC files + compute 5 metrics)")
        print(f"   pytrec_eval                   {t_ref:6.2f} s   peak {mem_ref:5d} MB")
        import json

        readers = ["numpy"]
        try:
            import pyarrow  # noqa: F401

            readers.insert(0, "arrow")
            floor = tmpdir / "floor.py"
            floor.write_text(FLOOR_SCRIPT)
            t_floor, mem_floor, _ = best([sys.executable, str(floor), str(qrels_path), str(run_path)], args.repeat)
            print(f"   pyarrow CSV read only (floor) {t_floor:6.2f} s   peak {mem_floor:5d} MB")
        except ImportError:
            t_floor = None
        for reader in readers:
            os.environ["RAGASSAY_PARSER"] = reader
            t_ours, mem_ours, out_ours = best(ours_cmd, args.repeat)
            ours = json.loads(out_ours)["aggregate"]
            worst = max(
                abs(ours[m] - float(ref[r]))
                for m, r in zip(METRICS, ["ndcg_cut_10", "P_5", "recall_100", "recip_rank", "map"])
            )
            print(
                f"   ragassay evaluate ({reader:5s})    {t_ours:6.2f} s   peak {mem_ours:5d} MB   "
                f"time ratio {t_ours / t_ref:.2f} (goal <= {TIME_GOALS[reader]:.2f}), memory ratio "
                f"{mem_ours / mem_ref:.2f} (goal <= 0.70)"
                + (f", {t_ours / t_floor:.1f}x the floor" if t_floor else "")
                + f"; means within {worst:.1e} of pytrec_eval"
            )
        os.environ.pop("RAGASSAY_PARSER", None)

        compute_vs_ranx(qrels_path, run_path, args.repeat)


def compute_vs_ranx(qrels_path: Path, run_path: Path, repeat: int) -> None:
    import ragassay

    try:
        import ranx
    except ImportError:
        print("\n2. ranx is not installed (pip install -e '.[bench]'): in-process comparison skipped")
        return
    qrels = ragassay.read_qrels(qrels_path)
    run = ragassay.read_run(run_path)
    ours = []
    for _ in range(repeat):
        t = time.perf_counter()
        res = ragassay.evaluate(qrels, run, METRICS)
        ours.append(time.perf_counter() - t)

    rq = ranx.Qrels(qrels.to_dict())
    run_dict = run.to_dict()
    ranx.evaluate(rq, ranx.Run(run_dict), RANX_METRICS, save_results_in_run=False)  # JIT warm-up
    theirs = []
    for _ in range(repeat):
        rr = ranx.Run(run_dict)
        t = time.perf_counter()
        r = ranx.evaluate(rq, rr, RANX_METRICS, save_results_in_run=False)
        theirs.append(time.perf_counter() - t)
    diff = max(abs(res.aggregate[m] - r[x]) for m, x in zip(METRICS, RANX_METRICS))
    print("\n2. in process, compute only (data already loaded; ranx after JIT warm-up)")
    print(f"   ragassay.evaluate   {min(ours):6.3f} s")
    print(f"   ranx.evaluate       {min(theirs):6.3f} s")
    print(f"   time ratio ragassay/ranx = {min(ours) / min(theirs):.2f}  (goal <= 0.50)")
    print(f"   largest difference in the means: {diff:.1e}")


if __name__ == "__main__":
    main()
