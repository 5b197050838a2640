"""``ragassay run`` over the example reads its inputs a bounded number of times (issue 47, item 4).

The pipeline parses each input once a run and hands the objects to its steps (``pipeline/loaded.py``);
the judge is handed the pool itself, not ``pool.txt`` to parse back. What still reads an input again
is outside the pipeline: ``api.retrieve`` (which digests the queries and chunks into its run's sidecar)
and ``make_report`` (which reads every input for each of its two formats). These figures pin the
opens counted by ``benchmarks/run_reads.py`` (277 opens of 37 files before the change, bm25.txt 32,
chunks 21, queries 12), so that a step reading an input again shows up here."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from run_reads import run_reads  # noqa: E402

MOST = {"chunks.jsonl": 13, "queries.jsonl": 9, "qrels.txt": 7, "answers.jsonl": 7,
        "answers_human_labels.jsonl": 5, "qrels_second_assessor.txt": 3, "ragassay.toml": 1,
        "ragassay-out/runs/bm25.txt": 21, "ragassay-out/runs/tfidf.txt": 18, "ragassay-out/pool.txt": 0}


def test_a_run_of_the_example_reads_each_input_a_bounded_number_of_times(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    counts, code = run_reads(tmp_path / "project")
    assert code == 0
    over = {name: counts[name] for name, most in MOST.items() if counts[name] > most}
    assert not over, f"read more often than before: {over}"
    assert sum(counts.values()) <= 213
