"""A failed retriever does not hide what stands: in ``ragassay run`` with four retrievers, one of
which raises (or returns None), the other three runs are written and scored on people's qrels, the
failed one is named with its reason and is not scored (not even from an old run file), the run's
last line says "stopped at retrieve: NAME: reason", and the exit code is 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import EXAMPLE
from ragassay.cli import main

RETRIEVERS = '''
import json
import re
from pathlib import Path

CHUNKS = [json.loads(line) for line in (Path(__file__).parent / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
          if line.strip()]


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def tfidf(query):
    """Word overlap (a retriever of the test's own, importing no module another test imports)."""
    q = words(query)
    scored = sorted(((len(q & words(c["text"])) / (1 + len(words(c["text"]))) ** 0.5, c["id"]) for c in CHUNKS),
                    reverse=True)
    return [(cid, score) for score, cid in scored[:10]]

def plain(query):
    return tfidf(query)

def reversed_tfidf(query):
    return [(c, -s) for c, s in tfidf(query)][::-1]

def first_three(query):
    return [c for c, _ in tfidf(query)][:3]

def broken(query):
    raise ConnectionError("the index server is down")

def nothing(query):
    return None
'''


@pytest.fixture(autouse=True)
def no_endpoint_in_env(monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def folder_with(tmp_path: Path, bad: str) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    for f in ("chunks.jsonl", "queries.jsonl", "qrels.txt", "qrels.txt.origin.json"):
        shutil.copy(EXAMPLE / f, d / f)
    (d / "mine.py").write_text(RETRIEVERS, encoding="utf-8")
    (d / "ragassay.toml").write_text(
        f"""metrics = ["ndcg@10", "map"]
depth = 5
[data]
chunks = "chunks.jsonl"
queries = "queries.jsonl"
qrels = "qrels.txt"
[retrievers]
plain = "mine.py:plain"
upside = "mine.py:reversed_tfidf"
{bad} = "mine.py:{"broken" if bad == "flaky" else "nothing"}"
three = "mine.py:first_three"
""",
        encoding="utf-8",
    )
    return d


def run_json(path: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["run", str(path), "--format", "json", "--quiet"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("bad, reason", [("flaky", "ConnectionError: the index server is down"), ("empty", "None")])
def test_the_other_retrievers_are_scored_and_the_failed_one_named(tmp_path, capsys, bad, reason):
    folder = folder_with(tmp_path, bad)
    # an old run file of the failing retriever must not be scored as today's
    (folder / "ragassay-out" / "runs").mkdir(parents=True)
    shutil.copy(EXAMPLE / "runs" / "bm25.txt", folder / "ragassay-out" / "runs" / f"{bad}.txt")
    code, done = run_json(folder / "ragassay.toml", capsys)
    assert code == 1
    steps = {s["step"]: s for s in done["steps"]}
    retrieve = steps["retrieve"]
    assert retrieve["status"] == "failed" and retrieve["exit_code"] == 1
    assert retrieve["text"].startswith(f"{bad}: "), retrieve["text"]
    assert reason in retrieve["text"].split("\n")[0]
    for name in ("plain", "upside", "three"):
        assert (folder / "ragassay-out" / "runs" / f"{name}.txt").stat().st_size > 0
    scored = steps["compare"]
    assert scored["status"] == "ran", scored
    names = set(scored["result"]["means"])
    assert names == {"plain", "upside", "three"}, scored["result"]["means"]
    assert steps["evaluate"]["status"] == "ran" and bad not in json.dumps(steps["evaluate"]["result"])
    assert steps["report"]["status"] == "ran"
    capsys.readouterr()
    code = main(["run", str(folder / "ragassay.toml")])
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    assert code == 1
    assert lines[-1].startswith(f"stopped at retrieve: {bad}: "), lines[-1]
    assert reason in lines[-1] and lines[-1].endswith("(exit 1)"), lines[-1]


def test_all_retrievers_failing_still_stops_at_retrieve(tmp_path, capsys):
    folder = folder_with(tmp_path, "flaky")
    toml = folder / "ragassay.toml"
    toml.write_text(
        toml.read_text()
        .replace("mine.py:plain", "mine.py:broken")
        .replace("mine.py:reversed_tfidf", "mine.py:broken")
        .replace("mine.py:first_three", "mine.py:broken")
    )
    code, done = run_json(toml, capsys)
    assert code == 1
    assert [s["step"] for s in done["steps"]][-1] == "retrieve"
