"""qualify: its flags to the library's one call, rendered (the handler; the arguments are declared in
declare_qualify.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from .options import api_arguments
from .render import render


def run_qualify(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.qualify_inputs import qualify

    if Path(args.output).exists() and not Path(args.output).is_dir():
        raise UsageError(
            f"-o {args.output} is a file: qualify writes a folder (each grader's records and qualification.json)"
        )
    result = qualify(**api_arguments(args, qualify))
    return render(args, result.to_dict, result.text, result.exit_code)
