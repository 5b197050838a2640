"""What a model is worth as a judge and a checker: the bundled example judged and checked against any
OpenAI-compatible endpoint (a llama.cpp or Ollama server on this machine, vLLM, OpenAI), with
agreement against the example's people beside the ceiling two people reach.

    python benchmarks/local_model.py --base-url http://127.0.0.1:8080/v1 --model local \\
        [--depth 3] [--stages judge,check,coverage,generate] [--concurrency 1] [--out DIR]

For each stage: records ok and errors (with the commonest reasons), requests sent, wall time; for
judge, Cohen's kappa of the model's grades against the first assessor's on the pairs both graded
(with its 95% bootstrap interval, and binarised at grade >= 2), beside the second assessor's kappa
against the first: the ceiling a judge can be measured against; for check, kappa of its labels
against the people's answer labels. The run is cached in DIR (a second run asks nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

from ragassay.cli import main
from ragassay.metrics.agreement import agree
from ragassay.product.demo import example_dir


def run(argv: list[str]) -> tuple[int, dict, float]:
    """One command, quiet, its JSON result and its wall time."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv + ["--format", "json", "--quiet"])
    seconds = time.perf_counter() - start
    try:
        result = json.loads(out.getvalue())
    except json.JSONDecodeError:
        result = {"error": (err.getvalue().strip().splitlines() or ["no output"])[-1]}
    return code, result, seconds


def interval(ci: list[float] | None) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "[n/a]"


def main_() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--depth", type=int, default=3, help="judge the top K of each query (default 3: 66 pairs)")
    ap.add_argument(
        "--stages", default="judge,check", help="any of judge,check,coverage,generate (default judge,check)"
    )
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--out", default="local-model-run", help="where the outputs and the cache go")
    args = ap.parse_args()
    ex, out = example_dir(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stages = set(args.stages.split(","))
    llm = ["--base-url", args.base_url, "--model", args.model, "--cache", str(out / "cache.sqlite")]
    if args.concurrency:
        llm += ["--concurrency", str(args.concurrency)]
    rows = []
    if stages & {"judge", "coverage"}:
        argv = [
            "judge",
            "--queries",
            str(ex / "queries.jsonl"),
            "--chunks",
            str(ex / "chunks.jsonl"),
            "--run",
            str(ex / "runs" / "bm25.txt"),
            "--depth",
            str(args.depth),
            "-o",
            str(out / "judgments.jsonl"),
            "--qrels-out",
            str(out / "judged.qrels"),
        ]
        if "coverage" in stages:
            argv += ["--coverage-out", str(out / "coverage.jsonl")]
        code, res, secs = run(argv + llm)
        rows.append(("judge", code, res, secs))
    if "check" in stages:
        code, res, secs = run(
            [
                "check",
                str(ex / "answers.jsonl"),
                "--chunks",
                str(ex / "chunks.jsonl"),
                "--human",
                str(ex / "answers_human_labels.jsonl"),
                "-o",
                str(out / "checks.jsonl"),
            ]
            + llm
        )
        rows.append(("check", code, res, secs))
    if "generate" in stages:
        code, res, secs = run(
            [
                "generate",
                str(ex / "chunks.jsonl"),
                "-o",
                str(out / "questions.jsonl"),
                "--limit",
                "5",
                "--qrels-out",
                str(out / "gold.qrels"),
                "--rejects",
                str(out / "rejects.jsonl"),
            ]
            + llm
        )
        rows.append(("generate", code, res, secs))

    print(f"endpoint {args.base_url}, model {args.model}")
    print(f"{'stage':10} {'exit':>4} {'ok':>4} {'errors':>6} {'calls':>6} {'seconds':>8}  commonest error")
    for name, code, res, secs in rows:
        usage = res.get("usage") or {}
        calls = sum(int(u.get("calls", 0)) for u in usage.values()) if isinstance(usage, dict) else 0
        ok = res.get("judged", res.get("ok", res.get("accepted")))
        errors = res.get("errors", 0)
        reasons = res.get("error_reasons") or {}
        why = next(iter(reasons), res.get("error", ""))
        print(f"{name:10} {code:>4} {str(ok):>4} {str(errors):>6} {calls:>6} {secs:>8.1f}  {str(why)[:90]}")
        if name == "judge" and res.get("coverage"):
            print(f"{'':10} coverage: {res['coverage']}")
    ceiling = agree(ex / "qrels.txt", ex / "qrels_second_assessor.txt")
    if (out / "judged.qrels").exists() and "judge" in stages:
        a = agree(ex / "qrels.txt", out / "judged.qrels")
        print(
            f"judge vs {a.names[0]}: {a.pairs} pairs, kappa {a.kappa:.3f} {interval(a.kappa_ci)}, binarised >= 2 "
            f"{a.kappa_binary[2]:.3f}; grades {dict(sorted(a.candidate_distribution.items()))}"
        )
        print(
            f"ceiling, {ceiling.names[1]} vs {ceiling.names[0]}: {ceiling.pairs} pairs, kappa {ceiling.kappa:.3f} "
            f"{interval(ceiling.kappa_ci)}, binarised >= 2 {ceiling.kappa_binary[2]:.3f}"
        )
    for name, _code, res, _secs in rows:
        h = res.get("human") if name == "check" else None
        if h and h.get("kappa") is not None:
            agreed = sum(row[i] for i, row in enumerate(h.get("confusion") or []))
            print(
                f"check vs {h['origin']['describe']}: {h['pairs']} answers, kappa {h['kappa']:.3f}, "
                f"{agreed} of {h['pairs']} labels as people gave them"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main_())
