"""The project file as TOML: read with :mod:`tomllib` (Python 3.11+; on 3.10 the ``tomli`` package),
and the line that sets a key, so that every message names ``ragassay.toml:LINE``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import InputError


def _toml(path: Path | None = None) -> Any:
    """The TOML reader: tomllib (3.11+), else tomli when installed, else a clear error."""
    try:
        import tomllib as toml
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as toml  # type: ignore[no-redef,unused-ignore]  # (tomli on 3.10 only)
        except ModuleNotFoundError:
            raise InputError("reading the project file needs Python 3.11 or the tomli package on 3.10 "
                             "(pip install tomli)", path) from None
    return toml


def loads_toml(text: str, path: Path | None = None) -> dict[str, Any]:
    """``text`` read as TOML; an error names the file and line."""
    toml = _toml(path)
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"not valid TOML: {e}", path, int(m.group(1)) if m else None) from None


def load_toml(path: Path) -> dict[str, Any]:
    """The TOML file as a dict."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the project file: {e}", path) from None
    return loads_toml(text, path)


def line_in(path: Path, table: str, key: str) -> int | None:
    """The line that sets ``key`` inside ``[table]`` (for messages)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    inside = False
    for no, line in enumerate(lines, start=1):
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            inside = header.group(1) == table
        elif inside and re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return no
    return None


def line_of(path: Path, key: str) -> int | None:
    """The first line that sets ``key`` (for messages)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    pattern = re.compile(rf"^\s*\[?\s*{re.escape(key)}\s*[\]=]")
    return next((no for no, line in enumerate(lines, start=1) if pattern.match(line)), None)
