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
            raise InputError(
                "reading the project file needs Python 3.11 or the tomli package on 3.10 (pip install tomli)", path
            ) from None
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
    """The TOML file as a dict; a byte that is not UTF-8 is an error naming its line."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read the project file: {e}", path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"cannot read the project file: {e}", path, data.count(b"\n", 0, e.start) + 1) from None
    return loads_toml(text, path)


_KEY = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_SETS = re.compile(rf"^\s*({_DOTTED})\s*=")


def _parts(dotted: str) -> tuple[str, ...]:
    """A dotted TOML key as its parts, quotes taken off (``a."b.c"`` is ``("a", "b.c")``)."""
    return tuple(part[1:-1] if part[0] in "\"'" else part for part in re.findall(_KEY, dotted))


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Where each key of a TOML text is set (or its table opened): the full path of the key, table
    included, to its first line. Keys inside inline tables are not listed: their table's line stands
    for them."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for no, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _parts(header.group(1))
            for end in range(1, len(table) + 1):
                lines.setdefault(table[:end], no)
            continue
        sets = _SETS.match(line)
        if sets:
            lines.setdefault(table + _parts(sets.group(1)), no)
    return lines


def line_at(path: Path, where: tuple[str | int, ...]) -> int | None:
    """The line of the file that sets the key at ``where`` (table names, then keys; a list's index stands
    for the list): the key's own line, else the line of the nearest table around it that the file
    names, so that a missing key names its table's line."""
    try:
        lines = key_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    keys: list[str] = []
    for part in where:
        if not isinstance(part, str):
            break
        keys.append(part)
    for end in range(len(keys), 0, -1):
        if tuple(keys[:end]) in lines:
            return lines[tuple(keys[:end])]
    return None
