"""Where the bundled example lives: inside the installed package, so ``ragassay demo`` runs from a
wheel with no clone (a clone's ``datasets/example`` links to the same folder). Its own module, below
both the pipeline (which knows the example's folder is not the user's to write in) and the demo
(which runs it), so neither has to import the other to find it."""

from __future__ import annotations

from pathlib import Path


def example_dir() -> Path:
    """The bundled example, inside the installed package (a clone links datasets/example to it)."""
    return Path(__file__).resolve().parents[1] / "example"
