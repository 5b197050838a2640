"""demo, report, merge, track, history, gate: their arguments. Declaring them imports nothing of the
product; the handlers (cli/product.py) are imported when one of these commands runs."""

from __future__ import annotations

import argparse
from typing import Any

from .handlers import Handler
from .options import add_format_option, add_llm_options
from .paths import folder, reads, text, writes
from .values import nonneg_int, positive_int


def demo(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run the whole pipeline on the bundled example and write a report",
        description="ragassay run over the bundled example's own project file (ragassay.toml), into the "
        "output directory (state included: a second demo there sends nothing): retrieve with the "
        "bundled retrievers, measure the two people's labels against each other, check the example "
        "answers, evaluate and compare the runs and write report.html. With an LLM endpoint "
        "configured it also generates a sample of questions, judges the pool of both runs' top 5 "
        "and their coverage, measures the judge against the people and checks every answer with the "
        "LLM; without one it says which stages it skipped.",
        epilog="Example: ragassay demo --out ragassay-demo",
    )
    folder(
        p.add_argument(
            "-o",
            "--output",
            "--out",
            dest="out",
            default=None,
            metavar="DIR",
            help="output directory (default ragassay-demo)",
        )
    )
    folder(
        p.add_argument(
            "--data",
            metavar="DIR",
            help="a folder holding its own ragassay.toml, as the bundled example does "
            "(default: the one bundled with ragassay)",
        )
    )
    folder(
        p.add_argument(
            "--copy", metavar="DIR", help="only write the bundled example's files to DIR, to look at and edit"
        )
    )
    add_llm_options(
        p, dry_run=False
    )  # the stages' flags: a local server that answers one call at a time takes --concurrency 1
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.product", "run_demo_cmd"))


def report(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML (or Markdown) report to explore, from ragassay's outputs",
        description="Build a report from ragassay's outputs, recognised by content: result JSON of evaluate / "
        "compare / check / agree / generate (written with --format json), label's OUTPUT.calibration.json "
        "(people against the model) and JSON Lines records of "
        "judge (judgments, coverage), check (verdicts) and generate (questions, rejects). With "
        "--qrels and --run it adds precision/recall curves, every query's metrics, per-query "
        "difference and forest plots. In the HTML, every query in a table or plot opens a page with "
        "its question, gold chunks, each run's top chunks with the qrels' and the judge's grades, "
        "coverage nuggets, the reference and the system's answer with its label. Every grade and label is "
        "named by who made it, read from FILE.origin.json beside its file (people, a model, or unknown "
        "when the file says nothing). One file, no network.",
        epilog="Example: ragassay report --qrels datasets/example/qrels.txt --run datasets/example/runs/bm25.txt "
        "--run datasets/example/runs/tfidf.txt --queries datasets/example/queries.jsonl "
        "--chunks datasets/example/chunks.jsonl -o report.html",
    )
    reads(
        p.add_argument("files", nargs="*", metavar="RESULT", help="result files (JSON or JSONL), detected from content")
    )
    reads(
        p.add_argument(
            "--qrels",
            metavar="QRELS",
            help="qrels: curves, per-query metrics, gold chunks (named by who "
            "made them: QRELS.origin.json, else unknown)",
        )
    )
    reads(
        p.add_argument(
            "--people-qrels",
            metavar="QRELS",
            help="a second qrels shown beside --qrels on every query page (people's grades beside the judge's pool)",
        )
    )
    reads(
        p.add_argument(
            "--run",
            action="append",
            default=[],
            type=_run_value,
            metavar="[NAME=]RUN",
            help="a run to show (repeat for several); NAME=PATH names it NAME, else its TREC tag (or "
            "file name) does; a path holding '=' that exists is a path",
        )
    )
    reads(p.add_argument("--chunks", metavar="FILE", help="chunks JSONL: chunk texts on each query's page"))
    p.add_argument(
        "--relevance-level",
        type=positive_int,
        default=None,
        metavar="N",
        help="the grade from which precision, recall, MRR and MAP count a chunk as relevant (default: the "
        "grade the qrels say they count from, e.g. 2 on the judge's 0-3 scale, else 1)",
    )
    reads(p.add_argument("--queries", metavar="FILE", help="queries (JSONL or TSV): the question on each query's page"))
    reads(
        p.add_argument("--answers", metavar="FILE", help="the answers that were checked: reference and system answer")
    )
    reads(
        p.add_argument(
            "--human",
            metavar="FILE",
            help="answer labels (JSONL: id, label), named by who made them "
            "(FILE.origin.json or each line's assessor, else unknown)",
        )
    )
    writes(p.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the report"))
    p.add_argument(
        "--format",
        choices=("html", "markdown", "json"),
        default=None,
        help="the report's format: html, or markdown for a pull-request comment (default: from the "
        "output's suffix, .md is markdown, else html); json writes the report by its suffix and "
        "prints a JSON summary",
    )
    text(p.add_argument("--title", default="ragassay report", help="report title"))
    p.set_defaults(handler=Handler("ragassay.cli.product", "run_report"))


def _run_value(value: str) -> str:
    """report's --run: NAME=PATH or a path (parsed by the library when the command runs)."""
    from ..product.report_inputs import run_argument

    try:
        return run_argument(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def merge(sub: Any) -> None:
    p = sub.add_parser(
        "merge",
        help="combine the outputs of shards (--shard i/n) into one file",
        description="Combine JSONL outputs of one stage run in shards on several machines (judgments, "
        "coverage, checks): one record per key; an ok record replaces an error record for the "
        "same key; two different ok records for one key are reported as conflicts (exit 3) and "
        "the first file's is kept.",
        epilog="Example: ragassay merge judged.1.jsonl judged.2.jsonl -o judgments.jsonl",
    )
    reads(p.add_argument("files", nargs="+", metavar="FILE", help="outputs of the shards"))
    writes(p.add_argument("-o", "--output", required=True, metavar="FILE", help="the merged output"))
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.product", "run_merge"))


def track(sub: Any) -> None:
    p = sub.add_parser(
        "track",
        help="append a result to the history database",
        description="Record a result (the JSON of evaluate, compare or check) with its metrics, "
        "settings, time and git commit in a SQLite history, to follow quality over time.",
        epilog="Example: ragassay evaluate datasets/example/qrels.txt datasets/example/runs/bm25.txt --format json "
        "> result.json && ragassay track result.json --label nightly",
    )
    reads(
        p.add_argument(
            "result", metavar="RESULT.json", help="JSON written by evaluate, compare or check with --format json"
        )
    )
    writes(
        p.add_argument(
            "--db",
            default=".ragassay/history.sqlite",
            metavar="FILE",
            help="history database (default .ragassay/history.sqlite)",
        )
    )
    text(p.add_argument("--label", help="a name for this result (e.g. the branch or the config)"))
    text(p.add_argument("--run", help="for compare results: which run's metrics to track (default: the last)"))
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.product", "run_track"))


def history(sub: Any) -> None:
    p = sub.add_parser(
        "history",
        help="the trend of a metric over tracked results",
        description="Print tracked results; with --metric, its value over time with the change against "
        "the previous result and against the best so far.",
        epilog="Example: ragassay history --metric ndcg@10",
    )
    reads(
        p.add_argument(
            "--db",
            default=".ragassay/history.sqlite",
            metavar="FILE",
            help="history database (default .ragassay/history.sqlite)",
        )
    )
    text(p.add_argument("-m", "--metric", help="metric to follow (default: list the results)"))
    text(
        p.add_argument(
            "--run",
            help="only the results of the run of this name (a trend is always drawn within one "
            "run, on one qrels, with one set of settings)",
        )
    )
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.product", "run_history"))


def gate(sub: Any) -> None:
    p = sub.add_parser(
        "gate",
        help="fail a build when a metric crosses a threshold",
        description="Check a result (the JSON of evaluate, compare or check) against thresholds. Exits 1 "
        "and names every failed threshold; exits 0 when all hold. A metric missing from the "
        "result fails.",
        epilog="Example: ragassay gate result.json --min ndcg@10=0.6 --min recall@100=0.8 (on a check result: "
        "--max hallucination_rate=0.1)",
    )
    reads(
        p.add_argument(
            "result", metavar="RESULT.json", help="JSON written by evaluate, compare or check with --format json"
        )
    )
    text(p.add_argument("--min", action="append", metavar="METRIC=VALUE", help="the metric must be at least VALUE"))
    text(p.add_argument("--max", action="append", metavar="METRIC=VALUE", help="the metric must be at most VALUE"))
    text(p.add_argument("--run", help="for compare results: which run to gate (default: the last)"))
    p.add_argument(
        "--allow-errors",
        type=nonneg_int,
        default=0,
        metavar="N",
        help="pass a stage result (judge, check, generate) with up to N error items (default 0)",
    )
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.product", "run_gate"))


def init(sub: Any) -> None:
    p = sub.add_parser(
        "init",
        help="write a project file (ragassay.toml) naming the role of each file of a folder",
        description="Look at the files of a folder (chunks, queries, runs, retriever functions in .py files, "
        "answers, people's qrels with their FILE.origin.json, answer labels, BEIR folders) and write "
        "ragassay.toml, a short commented project file naming each file's role, for 'ragassay run'. "
        "Nothing is guessed silently: a file that could fill a role another fills too is written "
        "commented out with the choices and said; a file it cannot place is said.",
        epilog="Example: ragassay init datasets/example --update && ragassay run datasets/example/ragassay.toml "
        "--dry-run (the example ships its project file: --update adds only files that appeared since)",
    )
    folder(p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the folder (default: this one)"))
    p.add_argument(
        "--update",
        action="store_true",
        help="add the files that appeared since to the project file there (lines you edited are kept)",
    )
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.project", "run_init"))


def run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run the pipeline a project file describes: retrieve, judge the pool, check, evaluate, "
        "compare, report, track, gate",
        description="Run the pipeline of a project file (ragassay init writes one): generate questions when "
        "there are none, retrieve with each retriever, judge the pool (the union of every run's top "
        "depth for each query: every run is scored on the same judged set, and a new run costs only "
        "its new pairs), agree (people's qrels against a second labelling and the judged pool), check "
        "the answers (by rule only without an endpoint), evaluate and compare every run, write "
        "report.html and report.md, track the results and gate. Each step runs only when its inputs "
        "changed (.ragassay/state.json beside the project file, or in the output folder given). "
        "Exit codes: 0 ok, 3 some error records, 1 a step failed, bad input or a gate failed, 2 usage.",
        epilog="Example: ragassay run datasets/example/ragassay.toml --dry-run (the example's own project file; "
        "without --dry-run, with --out DIR --base-url http://localhost:8000/v1 --model NAME, it runs: the "
        "bundled example is only read, so it takes --out)",
    )
    reads(
        p.add_argument(
            "file",
            nargs="?",
            default="ragassay.toml",
            metavar="FILE",
            help="the project file (default ./ragassay.toml)",
        )
    )
    text(
        p.add_argument(
            "--only",
            action="append",
            metavar="STEP",  # kept as given: twice is refused, not the last kept
            help="run this step only (generate, retrieve, judge, coverage, agree, check, evaluate, "
            "compare, report, track, gate)",
        )
    )
    text(p.add_argument("--from", dest="start", action="append", metavar="STEP", help="run the steps from this one on"))
    folder(
        p.add_argument(
            "-o",
            "--output",
            "--out",
            dest="out",
            default=None,
            metavar="DIR",
            help="write the outputs here, with the state and history in DIR/.ragassay (default: the "
            "project file's out, state beside the file): for a project folder that is only read",
        )
    )
    p.add_argument("--append", action="store_true", help="generate more questions even when run generated some already")
    add_llm_options(
        p,
        dry_run="each step's calls, tokens, cost and time; no model is called, but the retrievers "
        "run (on this machine) to know the pool the judge would grade",
    )
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.project", "run_run"))
