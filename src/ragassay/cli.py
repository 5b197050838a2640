"""The ``ragassay`` command: parse arguments, call the library, print. No logic of its own.

Flags mean the same in every command: ``-m/--metric``, ``--format``, ``--relevance-level``,
``--missing``, ``--gain``, ``--dedupe``, ``--run-format``/``--qrels-format``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .errors import RagassayError
from .formatting import TABLE_FORMATS

EPILOG_METRICS = (
    "metrics: p@k, recall@k, f1@k, hit_rate@k, mrr, mrr@k, ndcg, ndcg@k, map, map@k, r_precision, "
    "set_p, set_recall, set_f1; trec_eval names (P_5, ndcg_cut_10, recip_rank, Rprec, success_10) "
    "and ir_measures names (P@5, nDCG@10, RR, AP, R@100) are accepted too.")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit 2 with usage, as argparse does, but say how to get help
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n(see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ragassay",
        description="Build and grade ground truth for retrieval and RAG: metrics exact to trec_eval, "
                    "significance tests, judge agreement.")
    parser.add_argument("--version", action="version", version=f"ragassay {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    from .commands import register_all
    register_all(sub)  # each area's commands live in ragassay/commands/
    return parser


def add_metric_options(p: argparse.ArgumentParser, default_note: str) -> None:
    p.add_argument("-m", "--metric", dest="metrics", action="append", metavar="METRIC",
                   help=f"metric to compute; repeat or comma-separate for several ({default_note})")
    p.add_argument("--relevance-level", type=int, default=1, metavar="N",
                   help="minimum grade that counts as relevant for binary metrics (default 1; as in "
                        "trec_eval it does not change NDCG gains)")
    p.add_argument("--gain", choices=("linear", "exponential"), default="linear",
                   help="NDCG gain: the grade (linear, trec_eval's) or 2^grade-1 (default linear)")
    p.add_argument("--qrels-format", choices=("auto", "trec", "jsonl", "beir"), default="auto",
                   help="qrels file format (default: detected from the content)")
    p.add_argument("--run-format", choices=("auto", "trec", "jsonl", "beir"), default="auto",
                   help="run file format (default: detected from the content)")
    p.add_argument("--dedupe", action="store_true",
                   help="a document listed twice for one query keeps its highest score (default: error)")


def add_format_option(p: argparse.ArgumentParser, choices: Sequence[str] = TABLE_FORMATS) -> None:
    p.add_argument("--format", choices=tuple(choices), default="table",
                   help="output format (default table)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        out = args.handler(args)
    except RagassayError as e:
        print(f"ragassay {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `ragassay evaluate ... | head`
        return 0
    if out:
        try:
            print(out)
        except BrokenPipeError:
            return 0
    return 0


__all__ = ["main", "build_parser", "add_metric_options", "add_format_option"]
