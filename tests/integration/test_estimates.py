"""Dry-run estimates that say what they are: input tokens in the endpoint's own count once the cache
holds answers of the model (a characters-per-token ratio learnt from them), output tokens as
expected (each prompt's mean answer length) and as a ceiling, cost as a range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE
from ragassay.cli import main

PRICES = ["--price-in", "1", "--price-out", "2"]


def judge_args(server: FakeLLM, run: str, depth: int, out: Path, cache: Path) -> list[str]:
    return [
        "judge",
        "--queries",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--run",
        str(EXAMPLE / "runs" / run),
        "--depth",
        str(depth),
        "-o",
        str(out),
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--cache",
        str(cache),
        *PRICES,
    ]


def dry(capsys, argv: list[str]) -> dict:
    assert main(argv + ["--dry-run", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def ran(capsys, argv: list[str]) -> dict:
    assert main(argv + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["usage"]["fake"]


def test_a_calibrated_estimate_is_within_ten_percent_of_what_the_endpoint_counts(tmp_path, capsys):
    cache = tmp_path / "cache.sqlite"
    with FakeLLM() as server:
        first = judge_args(server, "bm25.txt", 3, tmp_path / "bm25.jsonl", cache)
        guess = dry(capsys, first)
        assert guess["tokenizer"].startswith(("approximate", "tiktoken"))  # nothing learnt yet
        assert guess["expected_unknown"] == guess["calls"] == 66 and guess["output_tokens_expected"] == 0
        assert guess["cost_usd_low"] < guess["cost_usd"]
        ran(capsys, first)
        second = judge_args(server, "tfidf.txt", 5, tmp_path / "tfidf.jsonl", cache)
        est = dry(capsys, second)
        calls_before = server.calls
        real = ran(capsys, second)
    assert server.calls - calls_before == est["calls"] > 0
    assert est["tokenizer"].startswith("calibrated: ") and "from 66 answers of fake" in est["tokenizer"]
    assert est["input_tokens"] == pytest.approx(real["prompt_tokens"], rel=0.10)
    assert est["expected_unknown"] == 0
    assert est["output_tokens_expected"] == pytest.approx(real["completion_tokens"], rel=0.25)
    assert est["output_tokens"] == est["calls"] * 600  # the ceiling: every answer at max_tokens
    assert est["cost_usd_low"] == pytest.approx((est["input_tokens"] * 1 + est["output_tokens_expected"] * 2) / 1e6)
    assert est["cost_usd"] == pytest.approx((est["input_tokens"] * 1 + est["output_tokens"] * 2) / 1e6)
    # the guess it replaced was further off: the fake counts words, not 4 characters
    per_call_guess = guess["input_tokens"] / guess["calls"]
    per_call_real = real["prompt_tokens"] / est["calls"]
    assert abs(per_call_guess / per_call_real - 1) > 0.10


def test_the_text_gives_expected_and_ceiling_and_a_cost_range(tmp_path, capsys):
    cache = tmp_path / "cache.sqlite"
    with FakeLLM() as server:
        argv = judge_args(server, "bm25.txt", 2, tmp_path / "j.jsonl", cache)
        assert main(argv + ["--dry-run"]) == 0
        text = capsys.readouterr().out
        assert "what answers take is not known yet" in text
        assert "cost: at least $" in text and "(the input alone), at most $" in text
        assert main(argv) == 0
        capsys.readouterr()
        argv = judge_args(server, "tfidf.txt", 4, tmp_path / "j2.jsonl", cache)
        assert main(argv + ["--dry-run"]) == 0
        text = capsys.readouterr().out
    assert "calibrated: " in text and "output tokens: expected " in text and "at most " in text
    assert " expected; at most $" in text


def test_an_older_cache_without_sizes_gives_the_uncalibrated_estimate(tmp_path, capsys):
    """A cache written before request sizes were kept (opened read-only by a dry run, so not migrated)."""
    import sqlite3

    cache = tmp_path / "old.sqlite"
    db = sqlite3.connect(cache)
    db.execute(
        "CREATE TABLE answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, answer TEXT NOT NULL, raw TEXT, "
        "prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0, "
        "created REAL NOT NULL)"
    )
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    with FakeLLM() as server:
        est = dry(capsys, judge_args(server, "bm25.txt", 2, tmp_path / "j.jsonl", cache))
        assert server.calls == 0
    assert est["calls"] == 44 and est["expected_unknown"] == 44 and not est["tokenizer"].startswith("calibrated")


def _texts_vs_built(plan, monkeypatch):
    """The estimate of a plan counted from its calls said as texts, and from the calls built."""
    from ragassay.runtime.engine import Stage

    said = plan.estimate().to_dict()
    with monkeypatch.context() as m:
        m.setattr(type(plan.relevance), "call_texts", Stage.call_texts)
        built = plan.estimate().to_dict()
    return said, built


@pytest.mark.parametrize("jury, samples, windows", [(1, 1, False), (2, 3, False), (1, 1, True), (3, 1, True)])
def test_a_dry_run_counts_calls_said_as_texts_exactly_as_built_ones(tmp_path, monkeypatch, jury, samples, windows):
    """A large dry run counts judge calls from their texts, never building a prompt; every count
    must be what building them gives: calls, tokens, pairs whose requests are identical (the same
    text under two chunk ids, the same query under two ids), empty chunks, long chunks in windows,
    a jury, sampled votes; texts holding markers, the slot marker itself, braces and placeholders."""
    from ragassay.data.records import Chunk
    from ragassay.llm import LLMConfig
    from ragassay.stages.judge import JudgeOptions, plan_judge
    from ragassay.stages.queries import QueryItem

    long = "A long passage about tides and the moon. " * 80
    texts = [
        "Tides rise twice a day.",
        "Tides rise twice a day.",
        "",
        "   ",
        "<<<the passage goes here>>>",
        "PASSAGE>>> closes <<<PASSAGE nothing {{query}} {{passage}}",
        "caf\u00e9 \u4e2d\u6587 \U0001f600 \x00",
        long,
        long + "!",
        "\n\n  leading and trailing blanks  \n\n",
    ]
    chunks = [Chunk(id=f"c{i}", title=("T" if i % 2 else ""), text=t) for i, t in enumerate(texts)]
    queries = [
        QueryItem("q1", "when do tides rise?"),
        QueryItem("q2", "when do tides rise?"),
        QueryItem("q3", "<<<QUERY\nfake\nQUERY>>> {{passage}}", description="need <<<", answer="x >>>"),
        QueryItem("q4", "  spaced  "),
    ]
    run = {q.id: {c.id: float(len(texts) - i) for i, c in enumerate(chunks)} for q in queries}
    configs = [LLMConfig(model=f"m{i}", base_url="http://127.0.0.1:9/v1", use_cache=False) for i in range(jury)]
    options = JudgeOptions(depth=len(texts), samples=samples, max_chunk_chars=1000 if windows else 4000, quiet=True)
    plan = plan_judge(queries, chunks, run, configs, tmp_path / "j.jsonl", options=options)
    said, built = _texts_vs_built(plan, monkeypatch)
    assert said == built
    assert said["shared"] > 0 and said["decided_without_call"] == 2 * len(queries) and said["calls"] > 0


def test_texts_are_counted_by_an_exact_tokenizer_part_by_part(tmp_path, monkeypatch):
    """With a tokenizer, a text shared by many calls is counted once: the count is the sum over its
    parts (within a few tokens a message of the whole's count; here a word count, where it is
    exact), and each distinct text is tokenized once."""
    import ragassay.llm.usage as usage
    from ragassay.data.records import Chunk
    from ragassay.llm import LLMConfig
    from ragassay.stages.judge import JudgeOptions, plan_judge
    from ragassay.stages.queries import QueryItem

    seen: list[str] = []

    def words(text: str) -> int:
        seen.append(text)
        return len(text.split())

    monkeypatch.setattr(usage, "exact_counter", lambda model: (words, "words"))
    chunks = [Chunk(id=f"c{i}", text=f"passage number {i} " * 20) for i in range(6)]
    queries = [QueryItem(f"q{i}", f"question {i}?") for i in range(5)]
    run = {q.id: {c.id: 1.0 for c in chunks} for q in queries}
    config = LLMConfig(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", use_cache=False)
    plan = plan_judge(queries, chunks, run, [config], tmp_path / "j.jsonl", options=JudgeOptions(depth=6, quiet=True))
    said, built = _texts_vs_built(plan, monkeypatch)
    assert said["tokenizer"] == "tiktoken words" and said["calls"] == 30
    assert said["input_tokens"] == built["input_tokens"]  # words never straddle the parts
    seen.clear()
    plan.estimate()
    assert (
        len(seen) == 1 + 1 + 5 + 6 + 1
    )  # the schema, the prompt's fixed head, each query's part, each passage, the tail
