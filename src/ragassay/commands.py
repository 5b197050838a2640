"""One function per subcommand: declare its arguments, and a handler that returns the text to print.

Handlers only call the library and format its results; anything worth testing lives in the library.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .cli import EPILOG_METRICS, add_format_option, add_metric_options
from .formatting import render_table, to_json


def register_all(sub: Any) -> None:
    for register in (_evaluate,):
        register(sub)


def _load_pair(args: argparse.Namespace, run_paths: list[str]):
    from .io import read_qrels, read_run
    qrels = read_qrels(args.qrels, format=args.qrels_format)
    runs = [read_run(p, format=args.run_format, dedupe=args.dedupe) for p in run_paths]
    return qrels, runs


def _counts_line(ev) -> str:
    c = ev.counts
    parts = [f"{c['evaluated']} queries evaluated"]
    if c["run_queries_without_qrels"]:
        parts.append(f"{c['run_queries_without_qrels']} run queries without qrels ignored")
    if c["qrels_queries_missing_from_run"]:
        verb = "scored 0" if ev.missing_policy == "zero" else "skipped (use --missing zero to count them as 0)"
        parts.append(f"{c['qrels_queries_missing_from_run']} qrels queries missing from the run {verb}")
    if c["queries_without_relevant"]:
        parts.append(f"{c['queries_without_relevant']} evaluated queries have no relevant document (score 0)")
    return "; ".join(parts)


# ------------------------------------------------------------------------------------ evaluate

def _evaluate(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate", help="score a run against qrels (trec_eval's conventions)",
        description="Score a retrieval run against relevance judgments. Conventions are "
                    "trec_eval's: rank by score, ties by document id descending; P@k divides by k; "
                    "a run query without qrels is ignored.",
        epilog=EPILOG_METRICS + " Example: ragassay evaluate datasets/example/qrels.txt "
               "datasets/example/runs/bm25.txt -m ndcg@10 -m p@5 --per-query")
    p.add_argument("qrels", metavar="QRELS", help="relevance judgments (TREC, JSONL or BEIR TSV)")
    p.add_argument("run", metavar="RUN", help="the run to score (TREC, JSONL or TSV)")
    add_metric_options(p, "default: p@5 p@10 recall@10 recall@100 f1@10 hit_rate@10 mrr mrr@10 ndcg@10 map")
    p.add_argument("--missing", choices=("skip", "zero"), default="skip",
                   help="qrels queries absent from the run: skip them (default, as trec_eval) or "
                        "score them 0 (trec_eval -c)")
    p.add_argument("--per-query", action="store_true", help="also print every query's values")
    add_format_option(p)
    p.set_defaults(handler=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> str:
    from .metrics.evaluate import evaluate
    qrels, (run,) = _load_pair(args, [args.run])
    ev = evaluate(qrels, run, args.metrics, relevance_level=args.relevance_level, gain=args.gain,
                  missing=args.missing)
    if args.format == "json":
        d = ev.to_dict()
        if not args.per_query:
            d.pop("per_query")
        return to_json(d)
    names = ev.metric_names
    agg = ev.aggregate
    if args.per_query:
        rows = [[q] + [float(ev.values[m][i]) for m in names] for i, q in enumerate(ev.queries)]
        rows.append(["all"] + [agg[m] for m in names])
        table = render_table(["query"] + names, rows, args.format)
    else:
        table = render_table(["metric", run.name], [[m, agg[m]] for m in names], args.format)
    if args.format == "csv":
        print(_counts_line(ev), file=sys.stderr)
        return table
    return f"{table}\n\n{_counts_line(ev)}"
