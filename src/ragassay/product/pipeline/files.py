"""The files the steps write and read back: results as JSON (written without NaN), the origin
sidecar beside a file of labels, and which file holds the check's records."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ...data.json_numbers import nan_to_none
from ...data.origin import sidecar_path
from ..formatting import to_json
from .context import Context


def read_json(ctx: Context, path: Path) -> Any:
    """A result a step wrote in an earlier run, read once (None when it cannot be read: the step's line
    still says what it did); kept in ``ctx.results`` for the report, with its digest for the state."""
    try:
        data = path.read_bytes()
        value = json.loads(data)
    except (OSError, ValueError):
        return None
    ctx.digests.heard(path, data)
    ctx.results[path] = value
    return value


def write_json(ctx: Context, path: Path, data: Any) -> Any:
    """Write a result as JSON (NaN as null) and return it as written, the value a step's result holds:
    what the file says, without reading it back. The report is handed the value and the state the
    digest of the bytes written (``ctx.results``, ``ctx.digests``), so no step reads the file again."""
    text = to_json(nan_to_none(data)) + "\n"
    encoded = text.replace("\n", os.linesep).encode("utf-8")  # as a file written in text mode holds it
    path.write_bytes(encoded)
    ctx.digests.heard(path, encoded)
    value = json.loads(text)
    ctx.results[path] = value
    return value


def sidecar(path: Path | None) -> Path | None:
    """The origin file beside a file of labels (its scale and pool change what a score means)."""
    return sidecar_path(path) if path is not None else None


def checks_file(ctx: Context) -> Path:
    """The check's records: without an endpoint the rules' own file, so that a run offline never
    replaces the verdicts an LLM gave before (a run with one finds them done and sends nothing)."""
    return ctx.out / ("checks_by_rule.jsonl" if ctx.no_llm and not ctx.llm_checks_kept else "checks.jsonl")
