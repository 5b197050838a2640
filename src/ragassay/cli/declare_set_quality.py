"""quality: its arguments. Declaring them imports nothing of the product; the handler
(cli/set_quality.py) is imported when the command runs."""

from __future__ import annotations

from typing import Any

from .handlers import Handler
from .options import FILE_FORMATS, add_format_option
from .paths import reads, text
from .values import positive_int


def quality(sub: Any) -> None:
    p = sub.add_parser(
        "quality",
        help="how good a test set is: difficulty for a lexical retriever, duplicates, corpus "
        "coverage, mix, the smallest nDCG difference it detects, distance from real queries",
        description="Measure a test set, generated or hand-made, without a model: where BM25 ranks each "
        "question's gold chunk (per difficulty asked: a 'hard' set whose gold ranks first is not hard "
        "for retrieval), what generate's checks recorded, near-duplicate questions, how many chunks "
        "and documents the set cites, its mix of difficulties, kinds, styles and answerability, the "
        "smallest nDCG@10 difference its size detects at 80% power, and, with --log, how far it is "
        "from real queries (length, first words, vocabulary, the BM25 rank of their judged gold). "
        "Every figure says how many questions it rests on; the report starts with the command that "
        "reproduces it.",
        epilog="Example: ragassay quality datasets/example/queries.jsonl --chunks datasets/example/chunks.jsonl "
        "--qrels datasets/example/qrels.txt",
    )
    reads(
        p.add_argument(
            "queries",
            metavar="QUESTIONS",
            help="the set's questions: generate's questions JSONL, or any queries file (JSONL or TSV)",
        )
    )
    reads(p.add_argument("--chunks", required=True, metavar="FILE", help="the chunks the set was made from (JSONL)"))
    reads(p.add_argument("--qrels", metavar="QRELS", help="the set's qrels (default: the questions' own chunk_ids)"))
    p.add_argument(
        "--relevance-level",
        type=positive_int,
        default=None,
        metavar="N",
        help="the grade from which a chunk is gold (default: the grade the qrels say they count from, "
        "e.g. 2 on the judge's 0-3 scale, else 1)",
    )
    reads(p.add_argument("--log", metavar="FILE", help="real queries (JSONL or TSV) to compare the set with"))
    reads(
        p.add_argument(
            "--log-qrels",
            metavar="QRELS",
            help="judgments of the real queries: where BM25 ranks their gold, beside the set's",
        )
    )
    reads(
        p.add_argument(
            "--run",
            action="append",
            default=[],
            metavar="RUN",
            help="give two runs of the set (repeat): the sd of their per-query nDCG@10 differences "
            "sets the power figure (default: three assumed sds, said)",
        )
    )
    text(
        p.add_argument(
            "--mix",
            metavar="SHARES",
            help="the difficulty mix generate was asked for, e.g. "
            "easy=0.3,medium=0.4,hard=0.3, to show beside the mix got",
        )
    )
    p.add_argument(
        "--qrels-format",
        choices=FILE_FORMATS,
        default="auto",
        help="format of the qrels files, --qrels and --log-qrels (default: detected)",
    )
    p.add_argument("--run-format", choices=FILE_FORMATS, default="auto", help="format of the runs (default: detected)")
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.set_quality", "run_quality"))
