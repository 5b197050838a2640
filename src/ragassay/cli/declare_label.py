"""label: its arguments. Declaring them imports nothing of the label server; the handler
(cli/label.py) is imported when the command runs."""

from __future__ import annotations

from typing import Any

from .handlers import Handler
from .paths import reads, text, writes
from .values import nonneg_int, positive_float, positive_int


def label(sub: Any) -> None:
    p = sub.add_parser(
        "label",
        help="grade pairs or label answers by hand in a local web page (to measure the judge)",
        description="Open a local page to label by hand, with the keyboard: (query, chunk) pairs 0-3 on the judge's "
        "scale ('pairs'), or RAG answers correct / partial / hallucinated / abstained ('answers'). Blind by "
        "default: the model's label shows only once you have given yours. Every label is written to disk "
        "the moment it is given; stop with Ctrl-C (or close the tab) and rerun the same command to go "
        "on. The page shows Cohen's kappa between you and the model with its 95% interval, and about "
        "how many more labels would narrow it to --target-width. The output is what agree, judge --keep "
        "and check --human read; OUTPUT.calibration.json records the sample and the agreement.",
        epilog="Example: ragassay label pairs --queries datasets/example/queries.jsonl --chunks "
        "datasets/example/chunks.jsonl --run datasets/example/runs/bm25.txt --sample 30 -o human.qrels",
    )
    p.add_argument("task", choices=("pairs", "answers"), help="what to label")
    reads(
        p.add_argument("answers", nargs="?", metavar="ANSWERS", help="answers: the answers JSONL (as check reads it)")
    )
    writes(
        p.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="FILE",
            help="pairs: TREC qrels; answers: JSONL id/label lines (labels append to FILE.events.jsonl)",
        )
    )
    reads(p.add_argument("--queries", metavar="FILE", help="pairs: the queries (JSONL or TSV)"))
    reads(
        p.add_argument(
            "--chunks", metavar="FILE", help="pairs: the chunks (JSONL); answers: chunk texts for context_ids"
        )
    )
    reads(p.add_argument("--run", metavar="RUN", help="pairs: label the top --depth of this run (no model grades)"))
    reads(
        p.add_argument(
            "--judgments",
            metavar="FILE",
            help="pairs: label pairs judge graded (its judgments JSONL): "
            "sampled by the model's grade, and compared with it",
        )
    )
    reads(p.add_argument("--checks", metavar="FILE", help="answers: check's records, for the model's labels"))
    p.add_argument(
        "--depth", type=positive_int, default=10, help="pairs with --run: the top K of each query (default 10)"
    )
    p.add_argument(
        "--sample",
        type=positive_int,
        metavar="N",
        help="label N items, drawn evenly over the model's grades (or ranks) and spread over queries (default: all)",
    )
    p.add_argument(
        "--seed", type=nonneg_int, default=0, help="the sample's seed (default 0): the same seed, the same items"
    )
    text(
        p.add_argument(
            "--assessor", metavar="NAME", help="who labels (default: your login name); one person per output"
        )
    )
    reads(
        p.add_argument(
            "--from",
            dest="prior",
            metavar="FILE",
            help="labels made before (qrels or id/label JSONL): kept in the output and not asked again",
        )
    )
    reads(
        p.add_argument(
            "--with",
            dest="others",
            action="append",
            default=[],
            metavar="FILE",
            help="another person's labels of the same items: the page shows how you agree (repeat)",
        )
    )
    p.add_argument(
        "--target-width",
        type=positive_float,
        default=0.1,
        metavar="W",
        help="the width of kappa's 95%% interval to aim for (default 0.1)",
    )
    p.add_argument("--show-model", action="store_true", help="show the model's labels before you label (to review)")
    p.add_argument("--port", type=nonneg_int, default=0, help="the port (default: any free one)")
    p.add_argument("--no-browser", action="store_true", help="only print the URL")
    p.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="how the summary at the end is printed (default table)",
    )
    p.set_defaults(handler=Handler("ragassay.cli.label", "run_label"))
