"""The README's step-by-step chain (retrieve, judge, evaluate, compare, report, track, history, gate)
in bash, as a user runs it, on real text nobody here wrote (the standard library's docstrings), with
retrievers of our own: one run judged alone, then three judged into the same files. What every step
prints must be true for what it claims (issue 45): the pool, the relevant grade, the share judged."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import pytrec_eval

import ragassay
from command_server import serving
from fake_llm import FakeLLM
from helpers import nonempty
from real_corpus import write_corpus

RETRIEVERS = ("overlap", "names", "longest")


def bash(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def chained(tmp_path_factory):
    """The chain run once with one retriever judged, once with all three, each in its own folder."""
    out = {}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGASSAY_"))}
    served = serving(base)  # tests/command_server.py: each command a fork of a process with openai imported
    assert served is not None
    with FakeLLM() as server, served:
        for how_many in (1, 3):
            folder = tmp_path_factory.mktemp(f"chain{how_many}")
            write_corpus(folder, chunks=150, queries=20)
            env = {**base, "PATH": served.path(base)}
            env.update(OPENAI_BASE_URL=server.url, RAGASSAY_MODEL="fake", OPENAI_API_KEY="sk-test")
            said = {}
            for name in RETRIEVERS:
                said[f"retrieve {name}"] = bash(
                    f"ragassay retrieve --retriever retrievers.py:{name} --queries "
                    f"queries.jsonl --chunks chunks.jsonl -o {name}.txt --name {name}",
                    folder,
                    env,
                )
            for name in RETRIEVERS[:how_many]:
                said[f"judge {name}"] = bash(
                    f"ragassay judge --queries queries.jsonl --chunks chunks.jsonl --run "
                    f"{name}.txt -o judgments.jsonl --qrels-out graded.qrels --quiet",
                    folder,
                    env,
                )
            said["evaluate"] = bash("ragassay evaluate graded.qrels overlap.txt", folder, env)
            said["evaluate json"] = bash(
                "ragassay evaluate graded.qrels overlap.txt --format json > result.json", folder, env
            )
            said["compare"] = bash(
                "ragassay compare graded.qrels overlap.txt names.txt longest.txt --permutations 200 --bootstrap 200",
                folder,
                env,
            )
            said["report"] = bash(
                "ragassay report judgments.jsonl --qrels graded.qrels --run overlap.txt --run names.txt -o report.md",
                folder,
                env,
            )
            said["track"] = bash("ragassay track result.json", folder, env)
            said["history"] = bash("ragassay history --metric recall@10", folder, env)
            said["gate"] = bash("ragassay gate result.json --min recall@10=0.5", folder, env)
            out[how_many] = (folder, said)
    return out


@pytest.mark.parametrize("how_many", [1, 3])
def test_every_step_of_the_chain_succeeds(chained, how_many):
    folder, said = chained[how_many]
    for step, done in nonempty(said.items()):
        assert done.returncode == 0, (step, done.stdout, done.stderr)


def test_one_run_judged_alone_is_flagged_at_every_step_that_shows_its_scores(chained):
    folder, said = chained[1]
    assert "warning: POOL OF THIS RUN ALONE" in said["evaluate"].stdout
    assert "relevant = grade ≥ 2 (the labels' scale 0-3, said in graded.qrels.origin.json)" in said["evaluate"].stdout
    result = json.loads((folder / "result.json").read_text())
    assert result["rests_on"]["pool"]["alone"] and result["aggregate"]["recall@10"] == 1.0
    assert "warning: overlap: POOL OF THIS RUN ALONE" in said["compare"].stdout
    assert "warning: names: NOT IN THE POOL" in said["compare"].stdout  # judged nowhere: its unjudged count as 0
    assert "POOL OF THIS RUN ALONE" in said["gate"].stdout + said["gate"].stderr
    assert "POOL OF THIS RUN ALONE" in (folder / "report.md").read_text()


def test_the_same_run_in_a_pool_of_three_is_scored_truthfully(chained):
    folder, said = chained[3]
    result = json.loads((folder / "result.json").read_text())
    pool = result["rests_on"]["pool"]
    assert sorted(p["name"] for p in pool["runs"]) == sorted(RETRIEVERS) and not pool["alone"]
    assert "POOL OF THIS RUN ALONE" not in said["evaluate"].stdout + said["gate"].stdout + said["gate"].stderr
    qrels = ragassay.read_qrels(folder / "graded.qrels").to_dict()
    run = ragassay.read_run(folder / "overlap.txt").to_dict()
    per = pytrec_eval.RelevanceEvaluator(qrels, {"recall_10"}, relevance_level=2).evaluate(run)
    expected = sum(v["recall_10"] for v in per.values()) / len(per)
    assert result["aggregate"]["recall@10"] == pytest.approx(expected, abs=1e-9)
    one = json.loads((chained[1][0] / "result.json").read_text())
    assert result["aggregate"]["recall@10"] < one["aggregate"]["recall@10"] == 1.0  # the flattering 1.0 is gone
    assert "relevant chunks in a run's top 10 that no other run found: overlap" in said["compare"].stdout
    assert "Pool bias:" in (folder / "report.md").read_text()
