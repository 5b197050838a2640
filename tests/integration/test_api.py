"""The notebook-shaped API: synchronous calls, typed results, DataFrames in and out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import ragassay
from fake_llm import FakeLLM
from helpers import EXAMPLE, nonempty

pd = pytest.importorskip("pandas")  # an optional dependency; the [test] extra installs it


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_judge_and_check_without_files_or_event_loops():
    with FakeLLM() as server:
        judged = ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            model="fake",
            base_url=server.url,
            options=ragassay.JudgeOptions(depth=2, quiet=True),
        )
        checked = ragassay.check(
            EXAMPLE / "answers.jsonl",
            chunks=EXAMPLE / "chunks.jsonl",
            model="fake",
            base_url=server.url,
            qrels=EXAMPLE / "qrels.txt",
            run=EXAMPLE / "runs" / "bm25.txt",
        )
    frame = judged.to_dataframe()
    assert len(frame) == 44 and set(frame["grade"]) <= {0, 1, 2, 3} and judged.exit_code == 0
    labels = checked.to_dataframe()
    assert len(labels) == 16 and labels["status"].eq("ok").all()
    assert set(labels.loc[labels["decided_by"] == "llm", "fault"].dropna()) <= {"retrieval", "generation"}


async def test_they_work_inside_a_running_event_loop_as_in_a_notebook():
    with FakeLLM() as server:
        result = ragassay.check(
            [{"id": "a", "question": "Capital of France?", "reference": "Paris", "response": "Lyon is the capital."}],
            model="fake",
            base_url=server.url,
        )
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
        ragassay.check(
            [{"id": "a", "question": "q", "reference": "r", "response": "s", "context_ids": ["c1"]}],
            model="fake",
            base_url="http://127.0.0.1:9/v1",
        )


def test_stage_options_are_keywords_named_like_the_flags():
    with FakeLLM() as server:
        judged = ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            model="fake",
            base_url=server.url,
            depth=3,
            samples=2,
            seed=7,
            concurrency=2,
        )
        assert server.calls == 22 * 3 * 2  # every query's top 3, asked twice
        seeds = sorted({r["seed"] for r in server.requests})
        assert seeds == [7, 8]  # sample i sends seed + i
        checked = ragassay.check(
            EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", model="fake", base_url=server.url, samples=3
        )
    assert len(judged.to_dataframe()) == 66
    assert {len(r.get("samples") or []) for r in checked.records if r.get("decided_by") == "llm"} == {3}
    with pytest.raises(TypeError, match="depth"):
        ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            model="fake",
            base_url="http://127.0.0.1:9/v1",
            depth=3,
            options=ragassay.JudgeOptions(),
        )
    with pytest.raises(TypeError, match="unknown settings: dpeth"):
        ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            model="fake",
            base_url="http://127.0.0.1:9/v1",
            dpeth=3,
        )


def test_check_without_an_endpoint_runs_the_rules_as_the_cli_does():
    checked = ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl")
    by = {r["id"]: r for r in checked.records}
    assert len(by) == 16
    ruled = [r for r in by.values() if r["status"] == "ok"]
    assert len(ruled) == 2 and {r["decided_by"] for r in ruled} == {"rule"}
    assert all("no endpoint is configured" in r["error"] for r in by.values() if r["status"] != "ok")
    # what scripts read of the run before the result held the summary still reads the same
    assert (checked.items, checked.skipped_done, checked.stage, checked.stopped) == (16, 0, "check", None)
    assert sum(checked.error_reasons.values()) == checked.errors == 14


def test_an_aborted_run_without_an_output_does_not_name_a_deleted_journal():
    from fake_llm import dead_url

    with pytest.raises(ragassay.RagassayError) as e:
        ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            model="m",
            base_url=dead_url(),
            depth=1,
        )
    text = str(e.value)
    assert "stopped early" in text and "journal" not in text and "pass output=" in text


# the command's flags that are not keywords of its Python twin, and why
CLI_ONLY = {"format": "how the command prints; the function returns the result itself", "help": "argparse's own"}
# flags whose keyword has another default, and why
OTHER_DEFAULTS = {"quiet": True}  # a notebook or script shows no progress bar unless asked


def _flags(command: str):
    import argparse

    from ragassay.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions if a.dest not in CLI_ONLY]


@pytest.mark.parametrize("command", ["generate", "judge", "check"])
def test_the_function_takes_every_flag_of_its_command_by_name_with_its_default(command):
    import inspect

    params = inspect.signature(getattr(ragassay, command)).parameters
    flags = _flags(command)
    assert len(flags) >= 30  # the walk covers the stage's, the LLM and the batch flags, not an empty list
    for action in nonempty(flags):
        assert action.dest in params, f"--{action.dest.replace('_', '-')} has no keyword in ragassay.{command}"
        param = params[action.dest]
        if action.required or not action.option_strings:
            continue  # required on the command line: the function takes it (a temporary output if left out)
        expected = OTHER_DEFAULTS.get(action.dest, action.default)
        default = list(param.default) if isinstance(param.default, tuple) else param.default
        assert default == expected, f"ragassay.{command}({action.dest}=) defaults to {default!r}, the flag {expected!r}"


def test_usage_is_numbers_and_check_returns_its_rates():
    with FakeLLM() as server:
        judged = ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            model="fake",
            base_url=server.url,
            depth=1,
            no_cache=True,
        )
        judge_calls = server.calls
        checked = ragassay.check(
            EXAMPLE / "answers.jsonl",
            chunks=EXAMPLE / "chunks.jsonl",
            model="fake",
            base_url=server.url,
            qrels=EXAMPLE / "qrels.txt",
            run=EXAMPLE / "runs" / "bm25.txt",
            depth=5,
            no_cache=True,
        )
    assert judge_calls == 22 and judged.usage["fake"]["calls"] == 22 and judged.usage["fake"]["ok"] == 22
    assert judged.usage["fake"]["prompt_tokens"] > 0 and "22 calls" in judged.usage_text
    assert checked.usage["fake"]["calls"] == server.calls - judge_calls == 14  # 2 of 16 decided by rule
    summary = checked.summary
    assert summary["kind"] == "check" and summary["items"] == 16 and summary["summary"]["answers"] == 16
    assert sum(summary["diagnosis"]["cells"][c]["count"] for c in summary["diagnosis"]["cells"]) == 16
    assert checked.exit_code == 0 and checked.to_dict()["pending"] == 0


def test_dry_runs_and_batch_files_as_on_the_command_line(tmp_path):
    est = ragassay.judge(
        EXAMPLE / "queries.jsonl",
        EXAMPLE / "chunks.jsonl",
        EXAMPLE / "runs" / "bm25.txt",
        model="gpt-4o-mini",
        depth=2,
        backend="batch",
        dry_run=True,
        no_cache=True,
    )
    assert est.calls == 44 and est.to_dict()["batch"]["requests_per_round"] == [44]
    requests = tmp_path / "requests.jsonl"
    out = ragassay.check(
        EXAMPLE / "answers.jsonl",
        chunks=EXAMPLE / "chunks.jsonl",
        model="gpt-4o-mini",
        output=tmp_path / "checks.jsonl",
        export_requests=requests,
        no_cache=True,
    )
    lines = requests.read_text().splitlines()
    assert len(lines) == 14 and out.pending == 14 and "14 items wait for 14 batch answers" in out.batch_note
    assert [r["decided_by"] for r in out.records] == ["rule", "rule"]  # only what needed no call is written
    with pytest.raises(ragassay.RagassayError, match="--backend batch sends the batches itself"):
        ragassay.check(
            EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", backend="batch", import_results=[requests]
        )


def test_check_takes_the_commands_argument_checks():
    from ragassay.errors import UsageError

    with pytest.raises(UsageError, match="needs both --run and --qrels"):
        ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", qrels=EXAMPLE / "qrels.txt")
    with pytest.raises(UsageError, match="--by team: no answer has this field"):
        ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", by=["team"])
    with pytest.raises(UsageError, match="--max-chunk-chars must be at least 500"):
        ragassay.judge(
            EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt", max_chunk_chars=100
        )


def test_a_list_of_models_is_a_jury_as_repeated_model_flags_are():
    with FakeLLM() as server:
        judged = ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            model=["fake-a", "fake-b"],
            base_url=server.url,
            depth=1,
            no_cache=True,
        )
        models = sorted({r["model"] for r in server.requests})
    assert server.calls == 44 and models == ["fake-a", "fake-b"]  # every pair asked of each juror
    assert set(judged.usage) == {"fake-a", "fake-b"} and judged.usage["fake-b"]["calls"] == 22
    assert all(set(r["juror_grades"]) == {"fake-a", "fake-b"} for r in judged.records)


# ------------------------------------------------------------------------------------ generate


def test_generate_returns_the_set_and_its_usage_as_numbers_and_the_dry_run_foresaw_the_calls():
    est = ragassay.generate(EXAMPLE / "chunks.jsonl", limit=5, model="fake", no_cache=True, dry_run=True)
    with FakeLLM() as server:
        result = ragassay.generate(EXAMPLE / "chunks.jsonl", limit=5, model="fake", base_url=server.url, no_cache=True)
    assert isinstance(result, ragassay.GenerateResult) and result.exit_code == 0
    # 4 single-chunk questions x (question, blind answer, compare, critic) + a hard one offered 3 chunks: 4 + 3
    assert server.calls == est.calls == 23 and result.usage["fake"]["calls"] == 23
    assert result.usage["fake"]["stages"]["generate"]["calls"] == 5 and "23 calls" in result.usage_text
    assert result.to_dict()["usage"] == result.usage and result.to_dict()["delivered"] == {
        "easy": 2,
        "medium": 2,
        "hard": 1,
    }
    frame = result.to_dataframe()
    assert len(frame) == 5 and sorted(frame["difficulty"]) == ["easy", "easy", "hard", "medium", "medium"]


def test_generate_writes_its_files_and_grows_a_set_as_the_command_does(tmp_path):
    out, rejects, qrels = tmp_path / "q.jsonl", tmp_path / "r.jsonl", tmp_path / "q.qrels"
    with FakeLLM() as server:
        first = ragassay.generate(
            EXAMPLE / "chunks.jsonl",
            output=out,
            rejects=rejects,
            qrels_out=qrels,
            limit=3,
            export=[("ragas", tmp_path / "ragas")],
            model="fake",
            base_url=server.url,
            no_cache=True,
        )
        grown = ragassay.generate(
            EXAMPLE / "chunks.jsonl",
            output=out,
            limit=2,
            append=True,
            seed=1,
            mix={"easy": 0.5, "medium": 0.5},
            model="fake",
            base_url=server.url,
            no_cache=True,
        )
    assert first.kept == 0 and len(first.accepted) == 3
    assert [fmt for fmt, _ in first.exported] == ["ragas-evaluation-dataset"]  # the earlier release's name is taken
    assert len((tmp_path / "ragas" / "ragas_evaluation_dataset.jsonl").read_text().splitlines()) == 3
    assert len(qrels.read_text().splitlines()) == 5 and rejects.read_text() == ""  # the hard question has 3 chunks
    assert grown.kept == 3 and len(grown.accepted) == 2
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == [q.id for q in first.accepted] + [q.id for q in grown.accepted]
    assert not Path(f"{out}.candidates.journal").exists()  # the set is written: its journal is spent


def test_generate_dry_runs_and_batch_files_as_on_the_command_line(tmp_path):
    est = ragassay.generate(
        EXAMPLE / "chunks.jsonl", limit=10, model="gpt-4o-mini", backend="batch", dry_run=True, no_cache=True
    )
    assert est.calls == 46 and est.to_dict()["batch"]["requests_per_round"] == [10, 10, 10, 10, 6]
    requests = tmp_path / "requests.jsonl"
    out = ragassay.generate(
        EXAMPLE / "chunks.jsonl",
        limit=3,
        model="m",
        output=tmp_path / "q.jsonl",
        export_requests=requests,
        no_cache=True,
    )
    # levels are drawn hardest first, one wave at a time: the first round asks the hard question alone
    assert out.pending == 1 and out.exit_code == 0 and len(requests.read_text().splitlines()) == 1
    assert "1 items wait for 1 batch answers" in out.batch_note
    assert not (tmp_path / "q.jsonl").exists()  # nothing is written until the batch answers are in
    with pytest.raises(ragassay.RagassayError, match="--backend batch sends the batches itself"):
        ragassay.generate(EXAMPLE / "chunks.jsonl", limit=3, backend="batch", export_requests=requests)


def test_generate_takes_the_commands_argument_checks():
    from ragassay.errors import UsageError

    with pytest.raises(UsageError, match="--mix shares must add up to 1"):
        ragassay.generate(EXAMPLE / "chunks.jsonl", mix={"easy": 0.5}, dry_run=True)
    with pytest.raises(UsageError, match="--export format must be one of beir"):
        ragassay.generate(EXAMPLE / "chunks.jsonl", export=[("nope", "d")], dry_run=True)
    with pytest.raises(UsageError, match="unknown name 'poem' in --styles"):
        ragassay.generate(EXAMPLE / "chunks.jsonl", styles="poem=1", dry_run=True)
    with pytest.raises(ragassay.InputError, match="chunks.jsonl: nothing to generate"):
        ragassay.generate(EXAMPLE / "chunks.jsonl", per_chunk=0.0001, dry_run=True)
    est = ragassay.generate(
        [
            {
                "id": "c1",
                "text": "Refunds reach the card within five working days of the return "
                "being received at the warehouse.",
            }
        ],
        limit=2,
        mix={"easy": 1},
        model="m",
        dry_run=True,
    )
    assert (est.items, est.calls) == (2, 8)  # chunks given as dicts: one chunk seeds two candidates


def test_a_keyword_of_an_earlier_release_names_the_one_that_replaced_it():
    with pytest.raises(TypeError, match=r"coverage_output= is now coverage_out="):
        ragassay.judge(
            EXAMPLE / "queries.jsonl",
            EXAMPLE / "chunks.jsonl",
            EXAMPLE / "runs" / "bm25.txt",
            coverage_output="c.jsonl",
            model="m",
            dry_run=True,
        )
    with pytest.raises(TypeError, match=r"k= is now depth="):
        ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", k=3, model="m", dry_run=True)


def test_a_spending_ceiling_keeps_the_answers_of_the_calls_it_let_through(tmp_path):
    """With 8 calls in flight and a ceiling of 5, the 5 requests sent are answered and recorded (they
    are paid for); no item starts after the ceiling, and a rerun with a higher one asks only the rest."""
    inputs = (EXAMPLE / "queries.jsonl", EXAMPLE / "chunks.jsonl", EXAMPLE / "runs" / "bm25.txt")
    with FakeLLM() as server:
        args = dict(depth=2, model="m", base_url=server.url, no_cache=True, concurrency=8, output=tmp_path / "j.jsonl")
        first = ragassay.judge(*inputs, max_calls=5, **args)
        assert server.settled_calls() == 5
        assert len(first.records) == first.relevance.ok == 5 and first.exit_code == 3
        assert "39 judge items not done" in first.relevance.stopped
        rest = ragassay.judge(*inputs, **args)
        assert server.settled_calls() == 44 and rest.exit_code == 0
        assert rest.relevance.skipped_done == 5 and len(rest.records) == 44


def test_settings_beside_a_client_of_ones_own_are_refused_not_ignored(tmp_path):
    from fake_llm import make_llm

    mine = make_llm(tmp_path, "http://127.0.0.1:9/v1")
    with pytest.raises(TypeError, match="max_attempts: set these on the LLM given as llm="):
        ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", llm=mine, max_attempts=2)
    with pytest.raises(TypeError, match=r"k= is now depth="):  # caught with a client of one's own too
        ragassay.check(EXAMPLE / "answers.jsonl", chunks=EXAMPLE / "chunks.jsonl", llm=mine, k=3)
