"""--poll-seconds is the wait between two status checks of a batch: it must be above 0 (0 would ask
the Batch API for the status as fast as the network allows, a request storm that a provider
answers by throttling the key)."""

from __future__ import annotations

import pytest

from helpers import EXAMPLE
from ragassay.cli import main

STAGES = {
    "judge": [
        "judge",
        "--queries",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--run",
        str(EXAMPLE / "runs" / "bm25.txt"),
    ],
    "check": ["check", str(EXAMPLE / "answers.jsonl"), "--chunks", str(EXAMPLE / "chunks.jsonl")],
    "generate": ["generate", str(EXAMPLE / "chunks.jsonl"), "--limit", "2"],
}


@pytest.mark.parametrize("command", list(STAGES))
@pytest.mark.parametrize("value", ["0", "0.0", "-0", "-1", "nan", "inf"])
def test_poll_seconds_must_be_a_positive_number(tmp_path, capsys, command, value):
    argv = STAGES[command] + ["-o", str(tmp_path / "out.jsonl"), "--dry-run", "--model", "m", "--backend", "batch"]
    assert main(argv + ["--poll-seconds", value]) == 2
    err = capsys.readouterr().err
    why = "expected a finite number" if value in ("nan", "inf") else "must be a number above 0"
    assert f"argument --poll-seconds: {why}, got '{value}'" in err, err
    assert main(argv + ["--poll-seconds", "0.5", "--format", "json"]) == 0  # a positive wait is taken
    capsys.readouterr()
