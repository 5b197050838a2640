"""init, run: a project file and its pipeline (the handlers; the arguments are declared in
declare_product.py, and this module is imported when one of them runs)."""

from __future__ import annotations

import argparse
import sys

from .render import render


def run_init(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.project import init_project

    done = init_project(args.dir, update=args.update)
    return render(args, done.to_dict, done.text)


def run_run(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.pipeline import run_project

    done = run_project(
        args.file,
        only=args.only,
        start=args.start,
        dry_run=args.dry_run,
        append=args.append,
        out=args.out,
        flags=vars(args),
        log=_step_log(args),
    )
    return render(args, done.to_dict, lambda: done.text(steps=False), done.exit_code)


def _step_log(args: argparse.Namespace):
    """Each step's line as it ends: on stdout, on stderr when stdout is the JSON alone, nowhere with
    --quiet and JSON."""
    as_json = args.format == "json"
    return lambda m: (as_json and args.quiet) or print(m, flush=True, file=sys.stderr if as_json else sys.stdout)
