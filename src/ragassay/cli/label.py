"""label: a local web page where people grade pairs or label answers, to measure the judge (its
handler; the arguments are declared in declare_label.py, and this module is imported when it runs)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import UsageError
from .render import render


def run_label(args: argparse.Namespace) -> Any:
    from ..product.label_server import label_session
    from ..product.labeling import open_label_book

    if args.task == "pairs" and args.answers:
        raise UsageError("'label pairs' takes no ANSWERS file (did you mean 'label answers'?)")
    if args.task == "pairs" and (not args.queries or not args.chunks or bool(args.run) == bool(args.judgments)):
        raise UsageError("label pairs needs --queries, --chunks and one of --run or --judgments")
    if args.task == "answers" and (not args.answers or args.queries or args.run or args.judgments):
        raise UsageError("label answers needs ANSWERS (and takes --checks, --chunks), not --queries/--run/--judgments")
    book = open_label_book(
        args.task,
        args.output,
        answers=args.answers,
        queries=args.queries,
        chunks=args.chunks,
        run=args.run,
        judgments=args.judgments,
        checks=args.checks,
        depth=args.depth,
        sample=args.sample,
        seed=args.seed,
        assessor=args.assessor,
        prior=args.prior,
        others=args.others,
        target_width=args.target_width,
    )
    end = label_session(
        book,
        port=args.port,
        show_model=args.show_model,
        open_browser=not args.no_browser,
        say=sys.stderr if args.format == "json" else sys.stdout,
    )  # json: stdout is the summary
    # stopped (the ordinary end): the summary, and 130 for Ctrl-C or 143 for SIGTERM, as every command
    return render(args, lambda: end.result, lambda: _label_text(end.result, book.output), end.exit_code)


def _label_text(result: dict, output: Any) -> str:
    p, a = result["progress"], result["model_agreement"]
    lines = [f"labelled {p['labelled']} of {p['total']} ({p['skipped']} skipped) into {output}"]
    if a["n"] and a["kappa"] is None:  # a kappa that cannot mean anything: why, not a number
        lines.append(
            f"you and the model: no kappa on {a['n']} labels ({(a.get('why') or {}).get('kappa', 'undefined')})"
        )
    elif a["n"]:
        interval = a["interval"]
        lines.append(
            f"you and the model: kappa {a['kappa']:.3f}"
            + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")
            + f" on {a['n']} labels"
        )
    if p["left"]:
        lines.append("rerun the same command to go on")
    return "\n".join(lines)
