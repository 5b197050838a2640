"""Flags shared by several commands, defined once so that a flag means the same everywhere."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..metrics.measures import measure_names
from .paths import reads, text, writes
from .values import nonneg_float, positive_float, positive_int

EPILOG_METRICS = (
    "metrics: " + ", ".join(measure_names()) + "; trec_eval names (P_5, ndcg_cut_10, recip_rank, Rprec, "
    "success_10, num_rel, iprec_at_recall_0.50), ir_measures names (P@5, nDCG@10, RR, AP, R@100, Judged@10, "
    "SetP, NumRel, IPrec@0.5, infAP, RBP(p=0.8,rel=1), nDCG(judged_only=True)@10, Compat, INST(max_rel=3)) and "
    "ranx names (r-precision, hits@5, dcg@10, ndcg_burges@10, rbp.95) are accepted too, and P(rel=2)@5 sets a "
    "measure's own relevance level. Where the tools differ, the name follows the tool that spells it: Judged@k "
    "is ir_measures' (tied scores across the cutoff by document id ascending, where trec_eval's order takes "
    "them descending); ranx's names keep tied scores in the run's order and count gains only from grades at "
    "or above --relevance-level; counts (num_ret, num_rel, num_rel_ret, num_q) are totalled, not averaged. "
    "Quote a list with parameters: -m 'RBP(p=0.8,rel=1),nDCG@10'."
)


FILE_FORMATS = ("auto", "trec", "trec3", "jsonl", "beir")  # --qrels-format / --run-format, everywhere

# the formats product.formatting.render_table prints, spelt here so that declaring --format imports
# nothing of the product (tests/test_lazy_imports.py holds the two equal)
TABLE_FORMATS = ("table", "json", "csv", "markdown")


def add_metric_options(p: argparse.ArgumentParser, default_note: str) -> None:
    text(
        p.add_argument(
            "-m",
            "--metric",
            dest="metrics",
            action="append",
            metavar="METRIC",
            help=f"metric to compute; repeat or comma-separate for several ({default_note})",
        )
    )
    p.add_argument(
        "--relevance-level",
        type=positive_int,
        default=None,
        metavar="N",
        help="minimum grade that counts as relevant for binary metrics, at least 1 (default: the grade "
        "the labels say they count from, e.g. 2 for the judge's 0-3 scale, else 1 as in trec_eval; "
        "as in trec_eval it does not change NDCG gains; grades of 0 and below are never relevant)",
    )
    p.add_argument(
        "--gain",
        choices=("linear", "exponential"),
        default="linear",
        help="NDCG gain: the grade (linear, trec_eval's) or 2^grade-1 (default linear)",
    )
    p.add_argument(
        "--qrels-format",
        choices=FILE_FORMATS,
        default="auto",
        help="qrels file format (default: detected from the content)",
    )
    p.add_argument(
        "--run-format",
        choices=FILE_FORMATS,
        default="auto",
        help="run file format (default: detected from the content)",
    )
    p.add_argument(
        "--dedupe",
        action="store_true",
        help="a document listed twice for one query keeps its highest score (default: error)",
    )


def add_format_option(p: argparse.ArgumentParser, choices: Sequence[str] = TABLE_FORMATS) -> None:
    p.add_argument("--format", choices=tuple(choices), default="table", help="output format (default table)")


def add_llm_options(p: argparse.ArgumentParser, stage: bool = True, dry_run: bool | str = True) -> None:
    """The same LLM flags for every command that calls a model (``stage``: how it calls, its cache and
    budgets too; ``dry_run``: it can count its calls offline, a text the command's own help for it)."""
    g = p.add_argument_group("LLM endpoint")
    text(
        g.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else api.openai.com)")
    )
    text(
        g.add_argument(
            "--model", action="append", help="model name (default: $RAGASSAY_MODEL); judge takes several for a jury"
        )
    )
    g.add_argument("--timeout", type=positive_float, help="seconds per HTTP request (default 60)")
    if not stage:
        return
    g.add_argument("--concurrency", type=positive_int, help="calls in flight at once (default 8)")
    g.add_argument("--rpm", type=positive_float, help="requests per minute budget (default: none)")
    g.add_argument("--tpm", type=positive_float, help="tokens per minute budget (default: none)")
    reads(
        g.add_argument(
            "--cache",
            type=Path,
            metavar="PATH",
            help="answer cache (default: $XDG_CACHE_HOME/ragassay/llm-cache.sqlite)",
        )
    )
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the answer cache")
    g.add_argument(
        "--price-in", type=nonneg_float, metavar="USD", help="price per million input tokens (overrides the table)"
    )
    g.add_argument("--price-out", type=nonneg_float, metavar="USD", help="price per million output tokens")
    g.add_argument(
        "--max-calls",
        type=positive_int,
        metavar="N",
        help="send at most N requests (retries and re-asks count); then stop, keep what is done and "
        "exit 3 (a rerun with a higher ceiling goes on); generate exits 1 when it stops before a "
        "question is accepted",
    )
    g.add_argument(
        "--max-cost",
        type=positive_float,
        metavar="USD",
        help="stop before the cost reaches USD (needs a known price: the table or --price-in/--price-out)",
    )
    if dry_run:
        g.add_argument(
            "--dry-run",
            action="store_true",
            help=dry_run if isinstance(dry_run, str) else "count calls and estimate tokens and cost; call nothing",
        )
    g.add_argument("--quiet", action="store_true", help="no progress bar")


def llm_config(args: argparse.Namespace):
    from ..llm.config import LLMConfig

    return LLMConfig.from_env(
        model=args.model[0] if args.model else None,
        base_url=args.base_url,
        timeout=args.timeout,
        concurrency=getattr(args, "concurrency", None),
        rpm=getattr(args, "rpm", None),
        tpm=getattr(args, "tpm", None),
        cache_path=getattr(args, "cache", None),
        use_cache=not getattr(args, "no_cache", False),
        price_in=getattr(args, "price_in", None),
        price_out=getattr(args, "price_out", None),
        max_calls=getattr(args, "max_calls", None),
        max_cost=getattr(args, "max_cost", None),
    )


def add_batch_options(p: argparse.ArgumentParser, shard: bool = True) -> None:
    """Batch engines and several machines: the same flags on every LLM stage."""
    g = p.add_argument_group("batch engines and shards")
    writes(
        g.add_argument(
            "--export-requests",
            metavar="FILE",
            help="call nothing: write the calls still to be answered as Batch API request lines (the "
            "OpenAI Batch API, vLLM's run_batch); split into FILE, NAME.2.jsonl, ... past 50,000 lines "
            "or 190 MB. Items waiting for answers write no record",
        )
    )
    reads(
        g.add_argument(
            "--import-results",
            metavar="FILE",
            action="append",
            default=[],
            help="answers from a batch output (or error) file, used before calling; repeat for several",
        )
    )
    g.add_argument(
        "--backend",
        choices=("live", "batch"),
        default="live",
        help="live (default): chat requests as the run goes; batch: the OpenAI Batch API (half the "
        "price, up to 24 h), round by round, resumable: batch ids are kept in OUTPUT.batches.json",
    )
    g.add_argument(
        "--poll-seconds",
        type=positive_float,
        default=30.0,
        metavar="S",
        help="with --backend batch: seconds between status checks (default 30)",
    )
    if shard:
        text(
            g.add_argument(
                "--shard",
                metavar="I/N",
                help="only this slice of the work (by a hash of the query or "
                "answer id), e.g. 1/4 on the first of four machines; combine outputs with 'ragassay merge'",
            )
        )


def api_arguments(args: argparse.Namespace, function: Callable[..., Any]) -> dict[str, Any]:
    """The command's flags that ``function`` (its Python API twin) takes: the same names, so every
    flag reaches the library by name (tests/test_api.py checks that each flag has its keyword)."""
    import inspect

    names = inspect.signature(function).parameters
    return {name: value for name, value in vars(args).items() if name in names}
