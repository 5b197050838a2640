"""Every path ARCHITECTURE.md names exists, so the page cannot drift from the code unseen.

A path is a backticked name that holds a ``/`` or ends in ``.py``. One with a ``/`` is looked up from
the repository's root, then from ``src/ragassay/``. A bare module name in a row of the layers table
(``lines.py`` in the ``data/`` row) is looked up under that row's layer, and elsewhere anywhere in the
package. Placeholders (``declare_<group>.py``) are not paths."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import nonempty

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "ragassay"
TICKED = re.compile(r"`([^`\s]+)`")


def _paths(line: str) -> list[str]:
    return [
        t
        for t in TICKED.findall(line)
        if ("/" in t or t.endswith(".py")) and "<" not in t and re.fullmatch(r"[\w./-]+", t)
    ]


def _exists(name: str, base: Path) -> bool:
    if "/" in name:
        return any((where / name).exists() for where in (ROOT, SRC, base))
    return any(base.rglob(name))


def _named(text: str) -> list[tuple[str, Path]]:
    named = []
    for line in text.splitlines():
        base = SRC
        if line.startswith("| `"):  # a row of the layers table: bare names live under its layer
            layer = TICKED.findall(line)[0]
            base = SRC / layer if (SRC / layer).is_dir() else SRC
        named += [(name, base) for name in _paths(line)]
    return named


def test_every_path_named_in_architecture_md_exists():
    named = nonempty(_named((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")))
    missing = [name for name, base in named if not _exists(name, base)]
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"
    assert len(named) >= 50  # the page names its modules: a change that hid them would pass vacuously


def test_a_path_that_does_not_exist_is_caught():
    data = SRC / "data"
    assert _named("| `data/` | `lines.py` and `nowhere.py` |") == [
        ("data/", data),
        ("lines.py", data),
        ("nowhere.py", data),
    ]
    assert _exists("lines.py", SRC / "data") and not _exists("nowhere.py", SRC / "data")
    assert not _exists("runtime/engine/missing.py", SRC)
