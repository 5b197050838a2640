"""The notebook-shaped API: synchronous calls, typed results, DataFrames in and out."""

from __future__ import annotations

import asyncio

import pytest
from fake_llm import FakeLLM

import ragassay
from helpers import EXAMPLE

pd = pytest.importorskip("pandas")  # an optional dependency; the [test] extra installs it


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_judge_and_check_without_files_or_event_loops():
    with FakeLLM() as server:
        judged = ragassay.judge(EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt",
                                model="fake", base_url=server.url, options=ragassay.JudgeOptions(depth=2, quiet=True))
        checked = ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", model="fake", base_url=server.url,
                                 qrels=EXAMPLE / "qrels.txt", run=EXAMPLE / "runs" / "bm25.txt")
    frame = judged.to_dataframe()
    assert len(frame) == 44 and set(frame["grade"]) <= {0, 1, 2, 3} and judged.exit_code == 0
    labels = checked.to_dataframe()
    assert len(labels) == 16 and labels["status"].eq("ok").all()
    assert set(labels.loc[labels["decided_by"] == "llm", "fault"].dropna()) <= {"retrieval", "generation"}


async def test_they_work_inside_a_running_event_loop_as_in_a_notebook():
    with FakeLLM() as server:
        result = ragassay.check([{"id": "a", "question": "Capital of France?", "reference": "Paris",
                                  "response": "Lyon is the capital."}], model="fake", base_url=server.url)
    assert asyncio.get_running_loop() is not None
    assert result.records[0]["label"] == "hallucinated" and result.records[0]["decided_by"] == "llm"


def test_dataframes_in_for_qrels_and_runs_and_out_for_results():
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "relevance": [2, 0, 1]})
    run = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["b", "a", "c"], "score": [2.0, 1.0, 0.5]})
    ev = ragassay.evaluate(qrels, run, ["p@1", "ndcg@2"])
    table = ev.to_dataframe()
    assert table.loc["q1", "p@1"] == 0.0 and table.loc["q2", "p@1"] == 1.0
    assert table.loc["all", "p@1"] == 0.5 and table.loc["q1", "ndcg@2"] == pytest.approx(1 / 1.5849625007)
    with pytest.raises(ragassay.InputError, match="needs a column named one of grade"):
        ragassay.evaluate(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"]}), run)


def test_check_with_context_ids_and_no_chunks_says_so():
    with pytest.raises(ragassay.InputError, match="needs chunks="):
        ragassay.check([{"id": "a", "question": "q", "reference": "r", "response": "s", "context_ids": ["c1"]}],
                       model="fake", base_url="http://127.0.0.1:9/v1")


def test_stage_options_are_keywords_named_like_the_flags():
    with FakeLLM() as server:
        judged = ragassay.judge(EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt",
                                model="fake", base_url=server.url, depth=3, samples=2, seed=7, concurrency=2)
        assert server.calls == 22 * 3 * 2  # every query's top 3, asked twice
        seeds = sorted({r["seed"] for r in server.requests})
        assert seeds == [7, 8]  # sample i sends seed + i
        checked = ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", model="fake",
                                 base_url=server.url, samples=3)
    assert len(judged.to_dataframe()) == 66
    assert {len(r.get("samples") or []) for r in checked.records if r.get("decided_by") == "llm"} == {3}
    with pytest.raises(TypeError, match="depth"):
        ragassay.judge(EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt", model="fake",
                       base_url="http://127.0.0.1:9/v1", depth=3, options=ragassay.JudgeOptions())
    with pytest.raises(TypeError, match="unknown settings: dpeth"):
        ragassay.judge(EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt", model="fake",
                       base_url="http://127.0.0.1:9/v1", dpeth=3)


def test_check_without_an_endpoint_runs_the_rules_as_the_cli_does():
    checked = ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl")
    by = {r["id"]: r for r in checked.records}
    assert len(by) == 16
    ruled = [r for r in by.values() if r["status"] == "ok"]
    assert len(ruled) == 2 and {r["decided_by"] for r in ruled} == {"rule"}
    assert all("no endpoint is configured" in r["error"] for r in by.values() if r["status"] != "ok")


def test_an_aborted_run_without_an_output_does_not_name_a_deleted_journal():
    from fake_llm import dead_url
    with pytest.raises(ragassay.RagassayError) as e:
        ragassay.judge(EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt", model="m",
                       base_url=dead_url(), depth=1)
    text = str(e.value)
    assert "stopped early" in text and "journal" not in text and "pass output=" in text
