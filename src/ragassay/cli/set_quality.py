"""quality: the handler (reads the arguments, calls the library, renders)."""

from __future__ import annotations

import argparse

from ..data.json_numbers import nan_to_none
from ..product.set_quality import set_quality
from ..product.set_quality_text import quality_text
from .render import render


def run_quality(args: argparse.Namespace) -> str | tuple[str, int]:
    got = set_quality(
        args.queries,
        args.chunks,
        args.qrels,
        relevance_level=args.relevance_level,
        log=args.log,
        log_qrels=args.log_qrels,
        runs=args.run,
        mix_asked=args.mix,
        qrels_format=args.qrels_format,
        run_format=args.run_format,
    )
    return render(args, lambda: nan_to_none(got.to_dict()), lambda: quality_text(got))
