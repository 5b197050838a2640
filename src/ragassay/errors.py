"""Errors users see. Every message names where the problem is and, when it can, how to fix it."""

from __future__ import annotations

from pathlib import Path


class RagassayError(Exception):
    """Base class for errors ragassay raises on purpose (as opposed to bugs)."""


class InputError(RagassayError, ValueError):
    """Bad input data. ``str()`` reads ``file:line: what is wrong``."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(where + message)


class MeasureError(RagassayError, ValueError):
    """A metric name that cannot be parsed."""


class UsageError(RagassayError):
    """Flags that do not go together or values out of range: exit 2, like argparse's own errors."""


class OutputError(RagassayError):
    """A file could not be written (full disk, no permission, missing directory): one line."""

    def __init__(self, path: str | Path, error: OSError):
        self.path = str(path)
        super().__init__(f"{path}: cannot write: {error.strerror or error}")
