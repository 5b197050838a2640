"""How a command shows what the library returned: one JSON document for scripts (``--format json``),
text for people (``table``, and ``csv``/``markdown`` where a command takes them)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..data.json_numbers import nan_to_none
from ..product.formatting import to_json


def render(
    args: argparse.Namespace, as_json: Callable[[], Any], as_text: Callable[[], str], code: int = 0
) -> str | tuple[str, int]:
    """``as_json()`` as JSON with ``--format json``, else ``as_text()``; with the exit code."""
    return to_json(as_json()) if args.format == "json" else as_text(), code


def render_stage(
    result: Any,
    args: argparse.Namespace,
    text: Callable[[Any, argparse.Namespace], str],
    as_json: Callable[[Any], Any] | None = None,
) -> str | tuple[str, int]:
    """An LLM stage's output: its estimate (``--dry-run``), or its result as JSON (``as_json(result)``;
    by default its dict with the batch note) or as ``text``. The flag that asked for the estimate says
    which of the two came back, as the function's typed overloads do."""
    if args.dry_run:
        return render(args, result.to_dict, result.text)
    as_json = as_json or (lambda r: {**r.to_dict(), "batch": r.batch_note or None})
    return render(args, lambda: nan_to_none(as_json(result)), lambda: text(result, args), result.exit_code)
