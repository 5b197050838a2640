"""Flags shared by several commands, defined once so that a flag means the same everywhere."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..product.formatting import TABLE_FORMATS

EPILOG_METRICS = (
    "metrics: p@k, recall@k, f1@k, hit_rate@k, mrr, mrr@k, ndcg, ndcg@k, map, map@k, r_precision, "
    "set_p, set_recall, set_f1; trec_eval names (P_5, ndcg_cut_10, recip_rank, Rprec, success_10) "
    "and ir_measures names (P@5, nDCG@10, RR, AP, R@100) are accepted too.")



def add_metric_options(p: argparse.ArgumentParser, default_note: str) -> None:
    p.add_argument("-m", "--metric", dest="metrics", action="append", metavar="METRIC",
                   help=f"metric to compute; repeat or comma-separate for several ({default_note})")
    p.add_argument("--relevance-level", type=int, default=1, metavar="N",
                   help="minimum grade that counts as relevant for binary metrics (default 1; as in "
                        "trec_eval it does not change NDCG gains)")
    p.add_argument("--gain", choices=("linear", "exponential"), default="linear",
                   help="NDCG gain: the grade (linear, trec_eval's) or 2^grade-1 (default linear)")
    p.add_argument("--qrels-format", choices=("auto", "trec", "trec3", "jsonl", "beir"), default="auto",
                   help="qrels file format (default: detected from the content)")
    p.add_argument("--run-format", choices=("auto", "trec", "trec3", "jsonl", "beir"), default="auto",
                   help="run file format (default: detected from the content)")
    p.add_argument("--dedupe", action="store_true",
                   help="a document listed twice for one query keeps its highest score (default: error)")


def add_format_option(p: argparse.ArgumentParser, choices: Sequence[str] = TABLE_FORMATS) -> None:
    p.add_argument("--format", choices=tuple(choices), default="table",
                   help="output format (default table)")


def add_llm_options(p: argparse.ArgumentParser, stage: bool = True) -> None:
    """The same LLM flags for every command that calls a model."""
    g = p.add_argument_group("LLM endpoint")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else api.openai.com)")
    g.add_argument("--model", action="append", help="model name (default: $RAGASSAY_MODEL); "
                   "judge takes several for a jury")
    g.add_argument("--timeout", type=float, help="seconds per HTTP request (default 60)")
    if not stage:
        return
    g.add_argument("--concurrency", type=int, help="calls in flight at once (default 8)")
    g.add_argument("--rpm", type=float, help="requests per minute budget (default: none)")
    g.add_argument("--tpm", type=float, help="tokens per minute budget (default: none)")
    g.add_argument("--cache", type=Path, metavar="PATH",
                   help="answer cache (default: $XDG_CACHE_HOME/ragassay/llm-cache.sqlite)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the answer cache")
    g.add_argument("--price-in", type=float, metavar="USD", help="price per million input tokens (overrides the table)")
    g.add_argument("--price-out", type=float, metavar="USD", help="price per million output tokens")
    g.add_argument("--dry-run", action="store_true", help="count calls and estimate tokens and cost; call nothing")
    g.add_argument("--quiet", action="store_true", help="no progress bar")


def llm_config(args: argparse.Namespace):
    from ..llm.config import LLMConfig
    return LLMConfig.from_env(
        model=args.model[0] if args.model else None, base_url=args.base_url, timeout=args.timeout,
        concurrency=getattr(args, "concurrency", None), rpm=getattr(args, "rpm", None),
        tpm=getattr(args, "tpm", None), cache_path=getattr(args, "cache", None),
        use_cache=not getattr(args, "no_cache", False), price_in=getattr(args, "price_in", None),
        price_out=getattr(args, "price_out", None))
