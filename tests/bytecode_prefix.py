"""The tests' bytecode folder, for machines that set PYTHONDONTWRITEBYTECODE.

Where that variable is set (as on the shared test machine), every process would recompile what it imports
and pytest would rewrite the asserts of every test file again in each xdist worker: about 10 s of each
worker's collection and half a second of each child process that imports ragassay. The bytecode goes
instead to a folder outside the checkout (``sys.pycache_prefix``, which pytest's assert rewriting honours
too), so the checkout stays as clean as the variable meant, and child processes and workers (which inherit
the environment) reuse it. Nothing a test asserts depends on whether a module was compiled now or read from
its cache.

With a prefix, Python reads bytecode from the prefix only, also for the standard library and the installed
packages, whose bytecode their installers wrote beside their sources. On a fresh machine every xdist worker
would then compile them again at once while it collects (openai's 781 modules, scipy's 490, pandas' 294: a
cold prefix made one collection 20-27 CPU-s against 7-9 warm), so that bytecode is linked into the prefix
first (``seed``), by the process that loads the conftest before the workers start.

The prefix mirrors absolute paths, so every clone and every virtual environment adds a tree of its own, and
a developer's temporary folder would grow until a reboot (2.0 GB on the test machine after a week of fresh
clones). ``prune`` removes the trees whose sources are gone before a suite starts."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile

PREFIX = os.path.join(tempfile.gettempdir(), "ragassay-test-pycache")


def use(prefix: str = PREFIX) -> None:
    """Send this process's bytecode, and its children's, to ``prefix``; the process that starts the workers
    also tidies the prefix and seeds it (an xdist worker finds both done)."""
    sys.pycache_prefix = prefix
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if "PYTEST_XDIST_WORKER" not in os.environ:
        prune(prefix)
    seed(prefix)


def _marker(prefix: str) -> str:
    return os.path.join(prefix, f".seeded-{hashlib.sha256(sys.prefix.encode()).hexdigest()[:16]}")


def seed(prefix: str) -> None:
    """Hard-link (or copy, across file systems) the bytecode found beside the standard library's and the
    installed packages' sources to where ``prefix`` makes Python look for it, once per environment. A stale
    file is still checked against its source's time and size, and then compiled again as usual. The marker
    left behind names the environment, so that ``prune`` can drop it with the environment."""
    done = _marker(prefix)
    if os.path.exists(done):
        return
    tag = f".{sys.implementation.cache_tag}.pyc"
    paths = sysconfig.get_paths()
    roots = sorted({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})  # as sys.path names them
    roots = [r for r in roots if not any(r.startswith(o + os.sep) for o in roots)]  # none walked twice
    made: set[str] = set()
    for root in roots:
        for here, _, files in os.walk(root):
            if os.path.basename(here) != "__pycache__":
                continue
            for name in files:
                if not name.endswith(tag):
                    continue
                source = os.path.join(os.path.dirname(here), name[: -len(tag)] + ".py")
                target = importlib.util.cache_from_source(source)
                if os.path.exists(target):
                    continue
                if os.path.dirname(target) not in made:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    made.add(os.path.dirname(target))
                try:
                    os.link(os.path.join(here, name), target)
                except FileExistsError:
                    pass
                except OSError:
                    shutil.copy2(os.path.join(here, name), target)
    os.makedirs(prefix, exist_ok=True)
    with open(done, "w") as marker:
        marker.write(sys.prefix)


def prune(prefix: str) -> list[str]:
    """Remove the prefix's trees whose sources are gone (a deleted clone, venv or temporary folder) and the
    seeding markers of environments that are gone; return the source paths whose trees were removed.

    The walk goes down only through folders that hold no bytecode of their own, the path down to each tree
    (``/tmp``, ``/tmp/clone``), and stops at the first folder that holds some (a checkout's ``tests``, a
    site-packages), so it lists a few dozen folders, not the hundred thousand files below them. A module
    deleted inside a live tree keeps its bytecode; that costs a few kilobytes, not a tree."""
    removed: list[str] = []
    if not os.path.isdir(prefix):
        return removed
    pending = [prefix]
    while pending:
        here = pending.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        folders = [e for e in entries if e.is_dir(follow_symlinks=False)]
        if here != prefix and len(folders) < len(entries):
            continue  # bytecode (or a marker) here: a live tree starts at this folder
        for entry in folders:
            source = entry.path[len(prefix) :] or os.sep
            if os.path.isdir(source):
                pending.append(entry.path)
            else:
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(source)
    for entry in os.scandir(prefix):
        if entry.name.startswith(".seeded-") and entry.is_file():
            with open(entry.path) as marker:
                environment = marker.read()
            if environment and not os.path.isdir(environment):
                os.remove(entry.path)
    return sorted(removed)
