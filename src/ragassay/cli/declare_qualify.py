"""qualify: its arguments. Declaring them imports nothing of the stages; the handler
(cli/qualify.py) is imported when the command runs."""

from __future__ import annotations

import argparse
from typing import Any

from .handlers import Handler
from .options import add_format_option, add_llm_options
from .paths import folder, reads, text
from .values import nonneg_int, positive_int

PROMPT_HELP = (
    "the prompt to qualify: auto (the default: the short prompt for a model whose name says it has at "
    "most 14B parameters, else the full one), full, short, or a prompt file of your own (its "
    "{{placeholders}} are checked before any call); repeat to compare prompts on the same sample"
)


def qualify(sub: Any) -> None:
    p = sub.add_parser(
        "qualify",
        help="measure how a model and prompt agree with people before trusting it as a judge",
        description="Run judge (relevance grades) or check (answer labels) with your model and prompt on a "
        "sample that people labelled, drawn stratified by the people's label and seeded, and say "
        "how they agree: Cohen's kappa over all labels and at the relevant grade, each with a "
        "bootstrap interval, the confusion matrix, the direction of the disagreement, error records, "
        "calls, tokens and time, beside a second people's labelling (the ceiling) where there is "
        "one and the published figures. Two prompts or two models are compared on the same items "
        "with a paired test. Without data flags it uses the samples inside the package (no "
        "download).",
        epilog="Example: ragassay qualify judge --qrels datasets/example/qrels.txt --queries "
        "datasets/example/queries.jsonl --chunks datasets/example/chunks.jsonl --second "
        "datasets/example/qrels_second_assessor.txt --prompt full --prompt short --model gpt-4o-mini "
        "-o qualify-judge/ --dry-run",
    )
    p.add_argument(
        "task",
        choices=("judge", "check"),
        help="judge: relevance grades 0-3 against people's graded qrels (your --qrels with --queries and "
        "--chunks, a --public set, or with neither the bundled example's two assessors); check: "
        "answer labels against people's (your --answers, with --labels unless the file holds them "
        "as EVOUNA's JSON does, or without, the bundled sample of EVOUNA, public, Apache-2.0)",
    )
    g = p.add_argument_group("judge: people-labelled pairs")
    reads(
        g.add_argument(
            "--qrels",
            metavar="FILE",
            help="people's graded qrels (TREC qrels; a FILE.origin.json beside it says their scale and relevant grade)",
        )
    )
    reads(g.add_argument("--queries", metavar="FILE", help="the queries' texts: JSONL {id, text} or TSV id<TAB>text"))
    reads(
        g.add_argument(
            "--chunks",
            metavar="FILE",
            help="the passages' texts: JSONL {id, text} (or {docid, doc}) or TSV id<TAB>text",
        )
    )
    reads(
        g.add_argument(
            "--second",
            metavar="QRELS",
            help="a second people's grades of the same pairs: the ceiling an LLM judge is measured against",
        )
    )
    text(
        g.add_argument(
            "--public",
            metavar="NAME",
            help="a public people-labelled set by name (trec-dl-2019, "
            "trec-dl-2020), fetched with ir_datasets: pip install 'ragassay[public]'",
        )
    )
    g.add_argument(
        "--relevance-level",
        type=positive_int,
        default=None,
        metavar="N",
        help="the people's grade from which a pair is relevant (default: what the qrels' origin says, "
        "else 1; TREC DL counts from 2)",
    )
    reads(
        g.add_argument(
            "--run",
            dest="runs",
            action="append",
            default=[],
            metavar="RUN",
            help="a system's run (repeat, two or more): Kendall's tau between the runs ranked under "
            "people's grades and under the model's, on the sampled pairs",
        )
    )
    text(
        g.add_argument(
            "-m", "--metric", default="ndcg_cut_10", help="the measure the runs are ranked by (default ndcg_cut_10)"
        )
    )
    a = p.add_argument_group("check: people-labelled answers")
    reads(
        a.add_argument(
            "--answers",
            metavar="FILE",
            help="answers to check (ragassay's answers JSONL, or EVOUNA's "
            "NQ.json / TQ.json with people's true/false inside)",
        )
    )
    reads(
        a.add_argument(
            "--labels",
            metavar="FILE",
            help="people's labels of those answers (what 'ragassay label' "
            "writes, or {id, label} lines; correct/incorrect or the check's four labels)",
        )
    )
    _common(p)
    p.set_defaults(handler=Handler("ragassay.cli.qualify", "run_qualify"))


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--size",
        type=positive_int,
        default=None,
        help="how many items to sample, stratified by the people's label (default 150 pairs for judge, "
        "100 answers for check; all when there are fewer)",
    )
    p.add_argument("--seed", type=nonneg_int, default=0, help="the sample's seed, and the bootstrap's (default 0)")
    text(p.add_argument("--prompt", dest="prompts", action="append", metavar="PROMPT", help=PROMPT_HELP))
    folder(
        p.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="DIR",
            help="a folder for each grader's records (resumable: a rerun asks only what is missing) "
            "and qualification.json",
        )
    )
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
