"""``ragassay run`` over the example reads its inputs a bounded number of times (issue 47, item 4).

The pipeline parses each input once a run and hands the objects to its steps (``pipeline/loaded.py``):
the retrieve step hands every retriever the queries and chunk ids read once, the report is written
twice from one reading of its inputs and is handed the results the steps wrote, and the state's
digest of a file is taken from the bytes that were read to parse it (or written). The judge is handed
the pool itself, not ``pool.txt`` to parse back.

The ceilings below are what one run against the fake model server opens today (``python
benchmarks/run_reads.py`` prints the same counts; it opened 213 times before this change), so that a
step reading an input again shows up here. What is still opened more than once, and why:

- ``chunks.jsonl`` 4: the example's own retrievers read it (once each, in their code), and the reader
  sniffs the first 64 KB for a LlamaIndex corpus before the whole read;
- a run file 4: hashed for its sidecar once written, then sniffed (4 bytes), read, and hashed again to
  check that its sidecar still describes it;
- qrels 2: the reader sniffs the head (for pyarrow's streaming path) before the whole read; their
  sidecar 2: once with the qrels, once for who labelled them;
- answers and people's labels 2: the run's joins read them once, ``api.check`` once more (it takes a
  file so that its records and messages name it);
- the judge's and check's own output stores (judgments, coverage, checks, their journals and
  indexes) are opened by the output store itself, outside the pipeline.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from fake_llm import FakeLLM
from ragassay.product.bundled_example import copy_example
from ragassay.product.pipeline import run_project

_COUNTING: list[Counter[str]] = []  # the counter the audit hook adds to while a run is counted


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Count an open for reading (``open``, ``io.open``, ``Path.read_bytes``, ``os.open`` alike)."""
    if event != "open" or not _COUNTING or not isinstance(args[0], (str, os.PathLike)):
        return
    mode, flags = args[1], args[2]
    writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        mode is None and isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR))
    )
    if not writing:
        _COUNTING[-1][os.path.realpath(os.fsdecode(args[0]))] += 1


sys.addaudithook(_audit)  # (a hook cannot be removed: it counts only while _COUNTING holds a counter)


def count_opens(folder: Path) -> tuple[Counter[str], int]:
    """The opens for reading of each file of ``folder`` (by its path inside it) during one
    ``run_project`` over a copy of the bundled example written there, against the fake model server,
    and the run's exit code."""
    copy_example(folder)
    root = os.path.realpath(folder)
    counts: Counter[str] = Counter()
    with FakeLLM() as server:
        _COUNTING.append(counts)
        try:
            done = run_project(
                folder / "ragassay.toml", flags={"base_url": server.url, "model": "fake", "no_cache": True}
            )
        finally:
            _COUNTING.remove(counts)
    mine = Counter({os.path.relpath(f, root): n for f, n in counts.items() if f.startswith(root + os.sep)})
    return mine, done.exit_code


# the most opens of each file, as one run reaches them today (see the module's docstring for why a
# file is opened more than once)
MOST = {
    "chunks.jsonl": 4,
    "queries.jsonl": 2,
    "qrels.txt": 2,
    "qrels.txt.origin.json": 2,
    "qrels_second_assessor.txt": 2,
    "qrels_second_assessor.txt.origin.json": 2,
    "answers.jsonl": 2,
    "answers_human_labels.jsonl": 2,
    "answers_human_labels.jsonl.origin.json": 2,
    "ragassay.toml": 1,
    "ragassay-out/runs/bm25.txt": 4,
    "ragassay-out/runs/tfidf.txt": 4,
    "ragassay-out/judged.qrels": 2,
    "ragassay-out/judged.qrels.origin.json": 2,
    "retrievers.py": 3,  # imported once for each of the two retrievers, and hashed for the state
    "ragassay-out/questions.jsonl": 2,
    "ragassay-out/pool.txt": 0,  # written for people to read: the judge is handed the pool itself
    "ragassay-out/compare.json": 0,  # a result a step wrote is handed on, never read back
    "ragassay-out/check.json": 0,
    "ragassay-out/agree_pool.json": 0,
    "ragassay-out/agree_second.json": 0,
    "ragassay-out/evaluate/bm25.json": 1,  # (track reads it by its path)
    "ragassay-out/evaluate/tfidf.json": 1,
}
ALL = 95  # every open of a file of the project (213 before the pipeline read each input once)


def test_a_run_of_the_example_reads_each_input_a_bounded_number_of_times(tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    counts, code = count_opens(tmp_path / "project")
    assert code == 0
    over = {name: (counts[name], most) for name, most in MOST.items() if counts[name] > most}
    assert not over, f"opened more often than the ceiling (opens, ceiling): {over}"
    assert sum(counts.values()) <= ALL, counts.most_common()
