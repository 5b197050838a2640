"""`ragassay qualify`: a model and prompt measured against people's labels, as a user runs it.

Against the competent local test server (tests/fake_llm.py): the judge grades by word overlap and
the checker compares response and reference, so its agreement with people is a real figure that
these tests recompute by hand from the records written, never a number taken on trust.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from fake_llm import FakeLLM, dead_url

from ragassay.cli import main
from ragassay.metrics.agreement import cohen_kappa


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def write_pairs(folder: Path, grades: dict[tuple[str, str], int], *, sidecar: bool = True) -> list[str]:
    """People-labelled pairs whose texts make the fake judge's grade predictable: a passage that
    repeats the query's words is graded high, one sharing none of them 0."""
    folder.mkdir(parents=True, exist_ok=True)
    queries = sorted({q for q, _ in grades})
    words = {q: f"alpha{i} beta{i} gamma{i}" for i, q in enumerate(queries)}
    (folder / "queries.tsv").write_text("".join(f"{q}\t{words[q]}\n" for q in queries), encoding="utf-8")
    with open(folder / "passages.jsonl", "w", encoding="utf-8") as f:
        for q, c in sorted(grades):
            text = (words[q] + " and more on it") if grades[(q, c)] >= 2 else f"unrelated text about zeta {c}"
            f.write(json.dumps({"docid": c, "doc": text}) + "\n")
    with open(folder / "qrels.txt", "w", encoding="utf-8") as f:
        for (q, c), g in sorted(grades.items()):
            f.write(f"{q} 0 {c} {g}\n")
    if sidecar:
        (folder / "qrels.txt.origin.json").write_text(json.dumps(
            {"labellers": [{"by": "people", "name": "assessors"}], "scale": [0, 3], "relevant_from": 2}),
            encoding="utf-8")
    return [str(folder / "qrels.txt"), str(folder / "queries.tsv"), str(folder / "passages.jsonl")]


def grid(n_queries: int = 6, per: int = 4) -> dict[tuple[str, str], int]:
    return {(f"q{i}", f"d{i}-{j}"): (i + j) % 4 for i in range(n_queries) for j in range(per)}


def qualify(args: list[str], capsys) -> tuple[int, dict]:
    code = main(["qualify", *args, "--format", "json", "--quiet"])
    return code, json.loads(capsys.readouterr().out)
