"""The tests' bytecode folder (tests/bytecode_prefix.py): seeded once per environment from the installers'
bytecode, and pruned of the trees whose clones, venvs or temporary folders are gone, without walking the
live trees' files or touching them."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import bytecode_prefix

TAG = sys.implementation.cache_tag


def mirror(prefix: Path, source_dir: Path) -> Path:
    """The folder of ``prefix`` where Python keeps the bytecode of the modules in ``source_dir``."""
    return prefix / str(source_dir).lstrip(os.sep)


def put_bytecode(prefix: Path, source_dir: Path, name: str) -> Path:
    folder = mirror(prefix, source_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.{TAG}.pyc"
    path.write_bytes(b"bytecode")
    return path


def test_prune_removes_the_trees_of_sources_that_are_gone_and_keeps_live_ones(tmp_path):
    prefix = tmp_path / "prefix"
    live = tmp_path / "clones" / "live"
    (live / "tests").mkdir(parents=True)
    (live / "src" / "pkg").mkdir(parents=True)
    kept = [
        put_bytecode(prefix, live / "tests", "conftest"),
        put_bytecode(prefix, live / "src" / "pkg", "__init__"),
    ]
    # a module folder deleted inside a live package: its bytecode stays (the walk does not go into live trees)
    kept.append(put_bytecode(prefix, live / "src" / "pkg" / "removed_subpackage", "mod"))
    # a package folder deleted beside a live one, where the parent holds no bytecode: pruned
    put_bytecode(prefix, live / "src" / "old_pkg", "__init__")
    # whole clones and a temporary venv that are gone
    dead_clone = tmp_path / "clones" / "dead"
    put_bytecode(prefix, dead_clone / "tests", "conftest")
    put_bytecode(prefix, dead_clone / ".venv" / "lib" / "site-packages", "six")
    dead_venv = tmp_path / "pytest-of-me" / "pytest-3" / "venv0"
    put_bytecode(prefix, dead_venv / "lib", "deps")

    removed = bytecode_prefix.prune(str(prefix))

    assert removed == sorted([str(live / "src" / "old_pkg"), str(dead_clone), str(tmp_path / "pytest-of-me")])
    assert all(p.read_bytes() == b"bytecode" for p in kept)
    assert not mirror(prefix, dead_clone).exists()
    assert not mirror(prefix, tmp_path / "pytest-of-me").exists()
    assert not mirror(prefix, live / "src" / "old_pkg").exists()
    assert mirror(prefix, live).is_dir()
    assert bytecode_prefix.prune(str(prefix)) == []  # nothing more to do the second time


def test_prune_drops_only_the_markers_of_environments_that_are_gone(tmp_path):
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    env = tmp_path / "env"
    env.mkdir()
    (prefix / ".seeded-live").write_text(str(env))
    (prefix / ".seeded-gone").write_text(str(tmp_path / "deleted-env"))
    (prefix / ".seeded-old").write_text("")  # written before markers named their environment: kept
    (prefix / "notes.txt").write_text(str(tmp_path / "deleted-env"))  # not a marker: never read

    assert bytecode_prefix.prune(str(prefix)) == []
    assert sorted(p.name for p in prefix.iterdir()) == [".seeded-live", ".seeded-old", "notes.txt"]


def test_prune_of_a_prefix_that_does_not_exist_does_nothing(tmp_path):
    assert bytecode_prefix.prune(str(tmp_path / "none")) == []
    assert not (tmp_path / "none").exists()


def test_seed_links_the_installed_bytecode_once_and_names_the_environment(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "pkg" / "__pycache__").mkdir(parents=True)
    (site / "pkg" / "mod.py").write_text("x = 1\n")
    installed = site / "pkg" / "__pycache__" / f"mod.{TAG}.pyc"
    installed.write_bytes(b"installed")
    (site / "pkg" / "__pycache__" / "mod.other-99.pyc").write_bytes(b"another interpreter's")
    (site / "pkg" / "data").mkdir()
    (site / "pkg" / "data" / f"notcache.{TAG}.pyc").write_bytes(b"not in a __pycache__ folder")
    prefix = tmp_path / "prefix"
    monkeypatch.setattr(
        sysconfig, "get_paths", lambda: dict.fromkeys(("stdlib", "platstdlib", "purelib", "platlib"), str(site))
    )
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))

    bytecode_prefix.seed(str(prefix))

    target = mirror(prefix, site / "pkg") / f"mod.{TAG}.pyc"
    assert os.path.samefile(target, installed)  # a hard link, no copy
    linked = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*.pyc"))
    assert linked == [str(target.relative_to(prefix))]
    (marker,) = prefix.glob(".seeded-*")
    assert marker.read_text() == sys.prefix
    target.unlink()
    bytecode_prefix.seed(str(prefix))  # once per environment: the marker says it is done
    assert not target.exists()
