"""Size and opening time of the HTML report for N queries x 2 runs (default 1,000).

    python benchmarks/report_size.py [--queries 1000] [--keep DIR]

Writes synthetic chunks, queries, qrels, two runs, judgments and checks, builds the report, and
prints its size, the time to build it, and, when Debian's ``chromium`` is installed, the time to
open it headless (page load, script run, screenshot) beside an empty page's, measured the same way.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def synthetic(directory: Path, n_queries: int, depth: int = 100, seed: int = 0) -> dict[str, Path]:
    """Files for a report of ``n_queries`` x 2 runs (``depth`` results each), with texts of real length."""
    rng = random.Random(seed)
    # a Zipf-distributed vocabulary of 5,000 made-up words: text that compresses about as well as prose
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    vocab = ["".join(rng.choices(letters, weights=range(26, 0, -1), k=rng.randint(2, 9))) for _ in range(5000)]
    weights = [1 / (r + 1) for r in range(len(vocab))]

    def sentence(n: int) -> str:
        return " ".join(rng.choices(vocab, weights=weights, k=n)).capitalize() + "."

    words = vocab[:50]
    n_chunks = n_queries * 10
    chunks = directory / "chunks.jsonl"
    chunks.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "doc_id": f"d{i // 5}", "text": " ".join(sentence(12) for _ in range(7))}) + "\n"
            for i in range(n_chunks)
        )
    )
    queries = directory / "queries.jsonl"
    queries.write_text(
        "".join(
            json.dumps(
                {"id": f"q{i}", "question": f"How does {rng.choice(words)} work for {rng.choice(words)} number {i}?"}
            )
            + "\n"
            for i in range(n_queries)
        )
    )
    qrels_lines, runs = [], {"bm25": [], "dense": []}
    for q in range(n_queries):
        gold = rng.sample(range(n_chunks), 4)
        qrels_lines += [f"q{q} 0 c{c} {rng.randint(1, 3)}" for c in gold]
        for name in runs:
            others = [c for c in rng.sample(range(n_chunks), depth + 4) if c not in gold][: depth - 2]
            docs = others + gold[:2]
            rng.shuffle(docs)
            runs[name] += [f"q{q} Q0 c{d} {r + 1} {depth - r} {name}" for r, d in enumerate(docs)]
    qrels = directory / "qrels.txt"
    qrels.write_text("\n".join(qrels_lines) + "\n")
    out = {"chunks": chunks, "queries": queries, "qrels": qrels}
    for name, lines in runs.items():
        out[name] = directory / f"{name}.txt"
        out[name].write_text("\n".join(lines) + "\n")
    judgments = directory / "judgments.jsonl"
    judgments.write_text(
        "".join(
            json.dumps(
                {"query_id": line.split()[0], "chunk_id": line.split()[2], "grade": rng.randint(0, 3), "status": "ok"}
            )
            + "\n"
            for line in runs["bm25"]
            if int(line.split()[3]) <= 10
        )
    )
    out["judgments"] = judgments
    labels = ("correct", "partial", "hallucinated", "abstained")
    checks = directory / "checks.jsonl"
    checks.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{q}",
                    "label": rng.choice(labels),
                    "status": "ok",
                    "rationale": "The answer states the same period as the reference.",
                }
            )
            + "\n"
            for q in range(n_queries)
        )
    )
    out["checks"] = checks
    return out


def open_seconds(url: str, chromium: str, profile: Path, ready: str | None) -> float:
    """Wall time for headless Chromium to load the page and run its script to the end (the DOM is
    dumped once the page is idle; ``ready`` must then be in it)."""
    start = time.perf_counter()
    dom = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=30000", "--dump-dom", url],
        check=True,
        capture_output=True,
        timeout=120,
        text=True,
    ).stdout
    secs = time.perf_counter() - start
    if ready is not None and ready not in dom:
        raise SystemExit(f"the page did not finish: {ready!r} is not in its DOM")
    return secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--keep", metavar="DIR", help="keep the files and the report here")
    args = ap.parse_args()
    from ragassay.product.report import load_inputs, write_report

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    files = synthetic(work, args.queries)
    start = time.perf_counter()
    inputs = load_inputs(
        [files["judgments"], files["checks"]],
        qrels=files["qrels"],
        runs=[files["bm25"], files["dense"]],
        chunks=files["chunks"],
        queries=files["queries"],
    )
    report = write_report(inputs, work / "report.html", title=f"{args.queries} queries x 2 runs")
    built = time.perf_counter() - start
    size = report.stat().st_size
    print(f"report of {args.queries} queries x 2 runs: {size / 1e6:.2f} MB, built in {built:.2f} s")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        blank = work / "blank.html"
        blank.write_text("<!doctype html><title>blank</title>")
        runs = {}
        for name, page, frag, ready in (
            ("blank page", blank, "", None),
            ("report", report, "", 'data-ready="yes"'),
            ("report opened at a query's page", report, "#q=q0", "<h2>q0: "),
        ):
            runs[name] = min(
                open_seconds(page.as_uri() + frag, chromium, work / f"profile-{i}", ready) for i in range(3)
            )
        for name, secs in runs.items():
            print(f"chromium headless, load and run to idle, best of 3: {name} {secs:.2f} s")
        print(f"report over blank page: +{runs['report'] - runs['blank page']:.2f} s")
    else:
        print("chromium not installed: open time not measured (apt-get install chromium)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
