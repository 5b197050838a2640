"""How a command shows what the library returned: one JSON document for scripts (``--format json``),
text for people (``table``, and ``csv``/``markdown`` where a command takes them)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..product.formatting import to_json


def render(args: argparse.Namespace, as_json: Callable[[], Any], as_text: Callable[[], str],
           code: int = 0) -> str | tuple[str, int]:
    """``as_json()`` as JSON with ``--format json``, else ``as_text()``; with the exit code."""
    return to_json(as_json()) if args.format == "json" else as_text(), code
