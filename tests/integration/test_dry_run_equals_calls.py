"""generate's ``--dry-run`` counts the calls a run makes when every answer passes its checks, over
mixes, limits and seeds, counted as the requests the local fake endpoint received.

The fake here is a model whose every answer passes: no passage of a hard question answers it alone,
and, as real models do, a hard question drawn from three passages may cite only two of them
(which passes every check: two cited chunks make a multi-hop question). The dry run cannot know
which passages the model will cite, so the run's calls must not hang on it: each passage offered is
asked alone (the issue's 37 predicted against 36 made on the example was a third passage the dry
run counted and the run, asking only the cited ones, did not)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import fake_llm
from fake_llm import FakeLLM, block, passages, schema_seen
from helpers import EXAMPLE
from ragassay.cli import main

CHUNKS = EXAMPLE / "chunks.jsonl"


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def passing_model(monkeypatch):
    """The fake model with every answer passing its check; ``cite`` says how many passages of a hard
    question its evidence cites (None: all of them). Returns the hard questions it wrote."""
    plain = fake_llm.answer_for
    hard: dict[str, int] = {}  # question -> passages offered
    settings = {"cite": 2}

    def answer_for(schema: str, user: str, system: str = "") -> dict:
        given = passages(user)
        if schema == "GeneratedQuestion" and len(given) > 1 and settings["cite"]:
            kept = "\n\n".join(f"<<<PASSAGE id={cid}\n{text}\nPASSAGE>>>" for cid, text in given[: settings["cite"]])
            answer = plain(schema, kept, system)  # written from (and citing) the first passages only
            hard[answer["question"]] = len(given)
            return answer
        answer = plain(schema, user, system)
        if schema == "GeneratedQuestion" and len(given) > 1:
            hard[answer["question"]] = len(given)
        if schema == "BlindAnswer" and len(given) == 1 and block(user, "QUESTION") in hard:
            return {**answer, "answerable": False, "own_answer": ""}  # no passage of a hard question answers alone
        return answer

    monkeypatch.setattr(fake_llm, "answer_for", answer_for)
    return settings, hard


def _argv(out: Path, url: str, limit: int, mix: str, seed: int) -> list[str]:
    return [
        "generate",
        str(CHUNKS),
        "-o",
        str(out),
        "--base-url",
        url,
        "--model",
        "fake",
        "--quiet",
        "--limit",
        str(limit),
        "--mix",
        mix,
        "--seed",
        str(seed),
        "--format",
        "json",
    ]


def _predicted_and_made(tmp_path: Path, capsys, limit: int, mix: str, seed: int) -> tuple[dict, dict, FakeLLM]:
    with FakeLLM() as server:
        argv = _argv(tmp_path / "q.jsonl", server.url, limit, mix, seed)
        assert main(argv + ["--dry-run"]) == 0
        predicted = json.loads(capsys.readouterr().out)
        assert server.calls == 0
        assert main(argv) == 0
        result = json.loads(capsys.readouterr().out)
        server.settled_calls()
    return predicted, result, server


@pytest.mark.parametrize(
    "limit, mix, seed",
    [
        (8, "easy=.5,medium=.25,hard=.25", 3),  # the example
        (8, "easy=.5,medium=.25,hard=.25", 1),
        (4, "hard=1", 3),
        (6, "easy=.34,medium=.33,hard=.33", 5),
        (10, "easy=.2,medium=.2,hard=.6", 4),
        (5, "medium=.6,hard=.4", 11),
        (7, "easy=.5,hard=.5", 0),
        (3, "easy=1", 4),
    ],
)
def test_the_dry_run_counts_the_calls_of_a_run_whose_answers_all_pass(
    tmp_path, capsys, passing_model, limit, mix, seed
):
    settings, hard = passing_model
    predicted, result, server = _predicted_and_made(tmp_path, capsys, limit, mix, seed)
    assert (result["rejected"], result["relabelled"], result["shortfall"]) == (0, 0, {})  # every answer passed
    assert server.calls == predicted["calls"] == result["usage"]["fake"]["calls"] > 0
    assert predicted["cached"] == 0 and result["usage"]["fake"]["cached"] == 0
    kinds = Counter(schema_seen(b) for b in server.requests)
    n = limit
    assert kinds["GeneratedQuestion"] == kinds["Critique"] == n  # one candidate a question: none was redrawn
    # a hard question: its blind answer, then each passage offered alone (whatever it cites)
    offered = sum(hard.values())
    assert kinds["BlindAnswer"] == n + offered and kinds["SameAnswer"] == n
    if "hard" in mix and seed == 3 and limit == 8:
        assert predicted["calls"] == 37 and sorted(hard.values()) == [2, 3]  # the example's groups of 2 and 3


def test_a_hard_question_citing_two_of_three_passages_is_checked_on_each_passage_alone(tmp_path, capsys, passing_model):
    """The run's calls for a hard question do not depend on what the model cites, and the check covers
    the passage offered but not cited."""
    settings, hard = passing_model
    predicted, result, server = _predicted_and_made(tmp_path, capsys, 4, "hard=1", 3)
    assert 3 in hard.values()
    questions = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    three = [q for q in questions if len(q["checks"]["single_chunk_answerable"]) == 3]
    assert three and all(len(q["chunk_ids"]) == 2 and len(q["checks"]["offered_not_cited"]) == 1 for q in three)
    assert all(
        set(q["checks"]["single_chunk_answerable"]) == set(q["chunk_ids"]) | set(q["checks"]["offered_not_cited"])
        for q in three
    )
    assert server.calls == predicted["calls"]
    settings["cite"] = None  # the same draw, every passage cited: the same number of calls
    hard.clear()
    (tmp_path / "all").mkdir()
    again, _, other = _predicted_and_made(tmp_path / "all", capsys, 4, "hard=1", 3)
    assert other.calls == again["calls"] == predicted["calls"]


def test_an_offered_passage_that_answers_alone_rejects_a_fake_multi_hop(tmp_path, capsys, monkeypatch):
    """A passage the question does not cite but that answers it alone (and gives the proposed answer):
    the question is not multi-hop, and its gold would miss a chunk that answers it."""
    plain = fake_llm.answer_for
    offered_only: dict[str, str] = {}  # question -> the passage it was offered and did not cite

    def answer_for(schema: str, user: str, system: str = "") -> dict:
        given = passages(user)
        if schema == "GeneratedQuestion" and len(given) == 3:
            kept = "\n\n".join(f"<<<PASSAGE id={cid}\n{text}\nPASSAGE>>>" for cid, text in given[:2])
            answer = plain(schema, kept, system)
            offered_only[answer["question"]] = given[2][0]
            return answer
        if schema == "BlindAnswer" and len(given) == 1:
            ok = offered_only.get(block(user, "QUESTION")) == given[0][0]
            return {"own_answer": "the same answer" if ok else "", "answerable": ok, "reason": "alone"}
        if schema == "SameAnswer" and block(user, "SECOND ANSWER").strip() == "the same answer":
            return {"same": True, "reason": "alike"}
        return plain(schema, user, system)

    monkeypatch.setattr(fake_llm, "answer_for", answer_for)
    with FakeLLM() as server:
        argv = _argv(tmp_path / "q.jsonl", server.url, 4, "hard=1", 3) + ["--rejects", str(tmp_path / "r.jsonl")]
        main(argv)
    rejects = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    fake = [r for r in rejects if r["reason"].startswith("fake multi-hop")]
    assert offered_only and fake
    assert all("(offered, not cited: the gold chunks miss it)" in r["reason"] for r in fake)
    assert {r["reason"].split("'")[1] for r in fake} <= set(offered_only.values())
    assert all(r["scores"]["offered_not_cited"] == [r["reason"].split("'")[1]] for r in fake)
