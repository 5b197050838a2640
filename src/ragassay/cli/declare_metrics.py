"""evaluate, compare, agree, retrieve: their arguments. Declaring them imports nothing of the
library but the measure names and compare's defaults; the handlers (cli/metrics.py) are imported
when one of these commands runs."""

from __future__ import annotations

from typing import Any

from ..metrics.significance_settings import N_BOOTSTRAP, N_PERMUTATIONS, SEED
from .handlers import Handler
from .options import EPILOG_METRICS, FILE_FORMATS, add_format_option, add_metric_options
from .paths import module, reads, text, writes
from .values import nonneg_int, positive_float, positive_int, probability_open, resamples


def evaluate(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a run against qrels (trec_eval's conventions)",
        description="Score a retrieval run against relevance judgments. Conventions are "
        "trec_eval's: rank by score, ties by document id descending; P@k divides by k; "
        "a run query without qrels is ignored.",
        epilog=EPILOG_METRICS + " Example: ragassay evaluate datasets/example/qrels.txt "
        "datasets/example/runs/bm25.txt -m ndcg@10 -m p@5 --per-query",
    )
    reads(p.add_argument("qrels", metavar="QRELS", help="relevance judgments (TREC, JSONL or BEIR TSV)"))
    reads(p.add_argument("run", metavar="RUN", help="the run to score (TREC, JSONL or TSV)"))
    add_metric_options(p, "default: p@5 p@10 recall@10 recall@100 f1@10 hit_rate@10 mrr mrr@10 ndcg@10 map")
    p.add_argument(
        "--missing",
        choices=("skip", "zero"),
        default="skip",
        help="qrels queries absent from the run: skip them (default, as trec_eval) or score them 0 (trec_eval -c)",
    )
    p.add_argument("--per-query", action="store_true", help="also print every query's values")
    text(
        p.add_argument(
            "--block-queries",
            type=positive_int,
            metavar="N",
            help="read and score the files by blocks of about N queries, in memory that does not grow "
            "with the number of queries (a file may be in any order: rows go to temporary files "
            "by query). Done by itself, with blocks of about a million run lines, when the run "
            "and the qrels together are 1 GB or more; plain TREC or three-column files only "
            "(gzip, JSON Lines and standard input are read whole). Values equal the in-memory "
            "ones; --per-query then prints each block's queries as it is scored (sorted within "
            "a block). Qrels under 128 MB are read whole; bigger ones by pieces too, and then the "
            "JSON's qrels digest is null",
        )
    )
    add_format_option(p)
    p.set_defaults(handler=Handler("ragassay.cli.metrics", "run_evaluate"))


def compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="compare runs with paired significance tests",
        description="Each run's mean per metric; every run after the first is tested against the "
        "first: mean difference, bootstrap confidence interval, paired randomization "
        "and t-test p-values, Holm-corrected across all tests, and per-query "
        "wins/ties/losses. Queries a run did not answer count as 0 (--missing zero), "
        "so all runs are compared on the same queries.",
        epilog=EPILOG_METRICS + " Example: ragassay compare datasets/example/qrels.txt "
        "datasets/example/runs/bm25.txt datasets/example/runs/tfidf.txt -m ndcg@10",
    )
    reads(p.add_argument("qrels", metavar="QRELS", help="relevance judgments"))
    reads(p.add_argument("runs", metavar="RUN", nargs="+", help="two or more runs; the first is the baseline"))
    add_metric_options(p, "default: the same set as evaluate")
    p.add_argument(
        "--missing",
        choices=("skip", "zero"),
        default="zero",
        help="qrels queries a run did not answer: score 0 (default) or use only the queries every run answered",
    )
    p.add_argument(
        "--permutations",
        type=resamples,
        default=N_PERMUTATIONS,
        metavar="N",
        help=f"randomization test permutations (default {N_PERMUTATIONS}, as in report)",
    )
    p.add_argument(
        "--bootstrap",
        type=resamples,
        default=N_BOOTSTRAP,
        metavar="N",
        help=f"bootstrap resamples for the confidence interval (default {N_BOOTSTRAP}, as in report)",
    )
    p.add_argument("--confidence", type=probability_open, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--seed", type=nonneg_int, default=SEED, help=f"random seed (default {SEED})")
    text(
        p.add_argument(
            "--power",
            type=probability_open,
            default=0.8,
            metavar="P",
            help="size each test for this power: its MDE is the smallest difference these queries "
            "detect with it, at alpha = 1 - the confidence level (default 0.8)",
        )
    )
    text(
        p.add_argument(
            "--effect",
            type=positive_float,
            metavar="D",
            help="a difference of means to detect (e.g. 0.02): also print the queries each test needs "
            "to detect it (default: none, the MDE only)",
        )
    )
    add_format_option(p, ("table", "markdown", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.metrics", "run_compare"))


def agree(sub: Any) -> None:
    p = sub.add_parser(
        "agree",
        help="agreement between two sets of graded labels (e.g. LLM judge vs humans)",
        description="On the (query, document) pairs both qrels judged: Cohen's kappa (unweighted, "
        "linear, quadratic), kappa binarised at grade >= 1, 2, 3, Krippendorff's "
        "alpha (ordinal), the confusion matrix and each side's label distribution. "
        "With --runs, Kendall's tau and Spearman's rho between the rankings of the "
        "runs by --metric under each qrels.",
        epilog="Example: ragassay agree datasets/example/qrels.txt datasets/example/qrels_second_assessor.txt "
        "--runs datasets/example/runs/bm25.txt datasets/example/runs/tfidf.txt",
    )
    reads(p.add_argument("reference", metavar="REFERENCE_QRELS", help="the labels you trust (e.g. human)"))
    reads(p.add_argument("candidate", metavar="CANDIDATE_QRELS", help="the labels to check (e.g. an LLM judge)"))
    reads(
        p.add_argument(
            "--runs",
            "--run",
            dest="runs",
            nargs="+",
            action="extend",
            metavar="RUN",
            help="runs to rank under both qrels (--run A --run B, as in report, works too)",
        )
    )
    text(p.add_argument("-m", "--metric", default="ndcg@10", help="metric that ranks the runs (default ndcg@10)"))
    p.add_argument(
        "--qrels-format", choices=FILE_FORMATS, default="auto", help="format of both qrels files (default: detected)"
    )
    add_format_option(p, ("table", "markdown", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.metrics", "run_agree"))


def retrieve(sub: Any) -> None:
    p = sub.add_parser(
        "retrieve",
        help="run your own search function, or a LlamaIndex or LangChain retriever, over queries and write a run",
        description="Call your retriever on every query and write its results as a TREC run. "
        "A function takes the query text and returns ranked ids, or (id, score) "
        "pairs, best first; a LlamaIndex retriever (.retrieve) or a LangChain retriever "
        "(.invoke), or a factory making one (a class, or a function of no argument), is called "
        "the same way, the chunk id of each node or document read where --id-field says. "
        "Per-query latency is written next to the run (RUN.latency.json).",
        epilog="Example: ragassay retrieve --retriever datasets/example/retrievers.py:bm25 "
        "--queries datasets/example/queries.jsonl -k 10 -o my_run.txt",
    )
    module(
        p.add_argument(
            "--retriever",
            required=True,
            metavar="MODULE:NAME",
            help="package.module:NAME or path/to/file.py:NAME: a search function, a LlamaIndex or LangChain "
            "retriever object, or a factory making one",
        )
    )
    reads(
        p.add_argument(
            "--queries",
            required=True,
            metavar="FILE",
            help="queries: JSONL (id + question/query/text) or TSV (id<TAB>text)",
        )
    )
    reads(
        p.add_argument(
            "--chunks",
            metavar="FILE",
            help="the chunks (JSONL): every id returned must be one of "
            "theirs (the first that is not stops the run); the counts of how they met are in the "
            "result",
        )
    )
    text(
        p.add_argument(
            "--id-field",
            metavar="FIELD",
            help="where a returned node or document holds the chunk id: "
            "id (default: LlamaIndex's node_id, LangChain's Document.id), ref_doc_id (LlamaIndex: the "
            "document a node was cut from) or metadata.KEY",
        )
    )
    p.add_argument("-k", type=positive_int, default=100, help="results kept per query (default 100)")
    writes(p.add_argument("-o", "--output", required=True, metavar="RUN", help="where to write the TREC run"))
    text(p.add_argument("--name", help="run tag (default: the NAME of --retriever)"))
    p.add_argument("--quiet", action="store_true", help="no progress bar (default: one on a terminal)")
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.metrics", "run_retrieve"))
