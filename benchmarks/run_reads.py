"""How many times ``ragassay run`` over a copy of the bundled example opens each of the files it reads.

A run of the pipeline should load each input once and hand the objects to its steps (issue 47, item 4):
this script counts every ``open`` of a file in the copy (an audit hook sees ``open``, ``io.open``,
``Path.read_text`` and ``os.open`` alike) while ``run_project`` runs against the tests' fake model
server, and prints the files opened for reading with their counts, busiest first.

    python benchmarks/run_reads.py          # against the fake server (every step runs)
    python benchmarks/run_reads.py --offline  # without an endpoint (the LLM steps are skipped)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the fake model server lives beside the tests

_COUNTING: list[Counter[str]] = []  # the counter an audit hook adds to, while one is in use
_WHERE: dict[str, Counter[str]] = {}  # with --where NAME: the call sites that opened NAME


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _COUNTING or not isinstance(args[0], (str, os.PathLike)):
        return
    mode, flags = args[1], args[2]
    writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        mode is None and isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR)
    )
    if not writing:
        path = os.path.realpath(os.fsdecode(args[0]))
        _COUNTING[-1][path] += 1
        for name, sites in _WHERE.items():
            if path.endswith(os.sep + name):
                sites[_call_site()] += 1


def _call_site() -> str:
    """The ragassay functions on the stack of an open (innermost first), for ``--where``."""
    import traceback

    frames = [f for f in traceback.extract_stack()[:-3] if "/ragassay/" in f.filename]
    return " < ".join(f"{Path(f.filename).stem}.{f.name}:{f.lineno}" for f in reversed(frames[-6:]))


sys.addaudithook(_audit)


@contextmanager
def counting_opens() -> Iterator[Counter[str]]:
    """Count every open for reading, by the file's real path, while the block runs."""
    counts: Counter[str] = Counter()
    _COUNTING.append(counts)
    try:
        yield counts
    finally:
        _COUNTING.remove(counts)


def run_reads(folder: Path, offline: bool = False) -> tuple[Counter[str], int]:
    """The opens for reading of each file of ``folder`` (relative names) during one ``run_project``
    over a copy of the bundled example written there, and the run's exit code."""
    from fake_llm import FakeLLM
    from ragassay.product.bundled_example import copy_example
    from ragassay.product.pipeline import run_project

    copy_example(folder)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        os.environ.pop(name, None)
    root = os.path.realpath(folder)
    with nullcontext(None) if offline else FakeLLM() as server:
        flags = {} if server is None else {"base_url": server.url, "model": "fake", "no_cache": True}
        with counting_opens() as counts:
            done = run_project(folder / "ragassay.toml", flags=flags)
    mine = Counter({os.path.relpath(f, root): n for f, n in counts.items() if f.startswith(root + os.sep)})
    return mine, done.exit_code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline", action="store_true", help="no endpoint: the LLM steps are skipped")
    parser.add_argument("--where", action="append", default=[], help="say where this file (its name) is opened")
    args = parser.parse_args()
    _WHERE.update({name: Counter() for name in args.where})
    folder = Path(tempfile.mkdtemp(prefix="ragassay-reads-"))
    try:
        counts, code = run_reads(folder / "example", args.offline)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for name, n in counts.most_common():
        print(f"{n:4d}  {name}")
    print(f"{len(counts)} files opened {sum(counts.values())} times (exit {code})")
    for name, sites in _WHERE.items():
        print(f"\n{name}:")
        for site, n in sites.most_common():
            print(f"{n:4d}  {site}")


if __name__ == "__main__":
    main()
