"""The example bundled with the package (``example/``, shipped in the wheel): where it is, the one a
command is pointed at, and a copy of its files to edit. ``run`` refuses to write into it and ``demo``
runs its project file; both find it here, so neither imports the other."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import InputError
from .project import PROJECT_FILE


def example_dir() -> Path:
    """The bundled example, inside the installed package (a clone links datasets/example to it)."""
    return Path(__file__).resolve().parents[1] / "example"


def find_example(explicit: str | Path | None = None) -> Path:
    c = Path(explicit) if explicit else example_dir()
    if (c / PROJECT_FILE).exists():
        return c
    if explicit:
        raise InputError(
            f"not an example dataset: it needs its project file {PROJECT_FILE} (the bundled "
            "example's names chunks.jsonl, queries.jsonl, qrels.txt, answers.jsonl, retrievers.py)",
            c,
        )
    raise InputError("the bundled example is missing from this installation; reinstall ragassay", c)


def copy_example(directory: str | Path) -> list[Path]:
    """Write the bundled example's files to ``directory`` (to look at, edit, and run commands on)."""
    src, dest = example_dir(), Path(directory)
    if dest.exists() and any(dest.iterdir()):
        raise InputError("exists and is not empty; choose a new directory", dest)
    shutil.copytree(
        src,
        dest,
        dirs_exist_ok=True,  # (not what a run in a clone's example left there)
        ignore=shutil.ignore_patterns("__pycache__", ".ragassay", "ragassay-out"),
    )
    return sorted(p for p in dest.rglob("*") if p.is_file())
