"""generate on the stage engine: a killed run resumes from its journal, the dry run is the run's
plan (on every backend), a second writer is refused, and rejects share one shape."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE
from ragassay.cli import main

CHUNKS = str(EXAMPLE / "chunks.jsonl")


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def generate_args(out: Path, url: str, *extra: str) -> list[str]:
    return [
        "generate",
        CHUNKS,
        "-o",
        str(out),
        "--rejects",
        str(out.with_suffix(".rejects.jsonl")),
        "--limit",
        "20",
        "--base-url",
        url,
        "--model",
        "fake",
        "--quiet",
        "--no-cache",
        *extra,
    ]


def schemas(requests: list[dict]) -> Counter:
    return Counter(r["response_format"]["json_schema"]["name"] for r in requests)


def complete_lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    return [json.loads(x) for x in data[: data.rfind(b"\n") + 1].splitlines() if x.strip()]


def test_a_killed_generate_resumes_from_its_journal_without_the_cache(tmp_path, capsys):
    """--no-cache: only what the killed run kept (the candidates it decided, the answers it received)
    can spare the rerun their calls; a call in flight at the kill is all that is asked again."""
    with FakeLLM() as server:  # the whole run, uninterrupted, for the calls and the set it makes
        assert main(generate_args(tmp_path / "full.jsonl", server.url)) == 0
        full_calls, full_questions = server.calls, schemas(server.requests)["GeneratedQuestion"]
    capsys.readouterr()
    out = tmp_path / "q.jsonl"
    journal, answers = Path(f"{out}.candidates.journal"), Path(f"{out}.answers")
    with FakeLLM(delay=0.2) as server:  # slow enough to kill mid-run on a busy machine
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(Path(__file__).resolve().parents[2] / "src"), os.environ.get("PYTHONPATH", "")]
            ),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragassay", *generate_args(out, server.url)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not journal.exists() or len(complete_lines(journal)) < 6):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not out.exists()  # killed before the end: nothing written but the journals
        journalled, kept = complete_lines(journal), complete_lines(answers)
        assert 6 <= len(journalled) < full_questions and all(r["status"] == "ok" for r in journalled)
        killed_calls = server.settled_calls()
        server.delay = 0  # the delay was to kill the first run mid-way; what follows is claimed in counts
        assert len(kept) <= killed_calls < full_calls  # (a call in flight at the kill was received, not kept)
        capsys.readouterr()
        assert main(generate_args(out, server.url) + ["--dry-run", "--format", "json"]) == 0
        predicted = json.loads(capsys.readouterr().out)  # the dry run reads both journals too
        assert predicted["items"] == full_questions and predicted["done"] >= len(journalled)
        server.requests.clear()
        assert main(generate_args(out, server.url)) == 0
        rerun = schemas(server.requests)
        rerun_calls = server.calls - killed_calls
    # no answer kept is asked again: the two runs together send one run's calls, and those in flight
    assert rerun_calls == full_calls - len(kept) and predicted["calls"] <= rerun_calls
    assert rerun["GeneratedQuestion"] == full_questions - sum("evidence" in r["answer"] for r in kept)
    assert out.read_text() == (tmp_path / "full.jsonl").read_text()
    assert out.with_suffix(".rejects.jsonl").read_text() == (tmp_path / "full.rejects.jsonl").read_text()
    assert not journal.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "full.jsonl",
        "full.jsonl.answers",
        "full.jsonl.origin.json",
        "full.rejects.jsonl",
        "q.jsonl",
        "q.jsonl.answers",
        "q.jsonl.origin.json",
        "q.rejects.jsonl",
    ]  # the candidates' journal is spent once the
    # set is written; the answers stay, and the set's origin (the model and its host) is beside it


@pytest.mark.parametrize("limit", ["5", "10"])
def test_generate_dry_run_predicts_the_calls_on_the_bundled_example(tmp_path, capsys, limit):
    with FakeLLM() as server:
        args = generate_args(tmp_path / "q.jsonl", server.url)
        args[args.index("--limit") + 1] = limit
        assert main(args + ["--dry-run", "--format", "json"]) == 0
        predicted = json.loads(capsys.readouterr().out)
        assert server.calls == 0
        assert main(args) == 0
    assert server.calls == predicted["calls"] > 0 and predicted["kind"] == "estimate"


def test_generate_dry_run_on_the_batch_backend_is_priced_at_the_batch_rate(tmp_path, capsys):
    args = [
        "generate",
        CHUNKS,
        "-o",
        str(tmp_path / "q.jsonl"),
        "--limit",
        "10",
        "--model",
        "gpt-4o-mini",
        "--dry-run",
        "--format",
        "json",
    ]
    assert main(args) == 0
    live = json.loads(capsys.readouterr().out)
    assert main(args + ["--backend", "batch"]) == 0
    batch = json.loads(capsys.readouterr().out)
    assert live["cost_usd"] > 0 and "batch" not in live
    assert batch["batch"]["cost_usd"] == pytest.approx(live["cost_usd"] / 2, abs=1e-6)
    # one round per step: question, blind answer, compare, critic, then each chunk of the two hard
    # questions (three chunks each) alone
    assert batch["batch"]["requests_per_round"] == [10, 10, 10, 10, 6]
    assert main(args[:-2] + ["--backend", "batch"]) == 0
    assert "cost at the Batch API price (half the live price)" in capsys.readouterr().out


def test_the_demo_takes_generates_lock_like_the_command(tmp_path, capsys):
    """A generate writing into the demo's folder: the demo's generate is refused before it sends
    anything, and the demo goes on to the other stages."""
    questions = tmp_path / "demo" / "questions.jsonl"
    questions.parent.mkdir()
    code = (
        "import sys, time; from ragassay.runtime.engine import OutputLock; OutputLock(sys.argv[1]).acquire(); "
        "print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(questions)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with FakeLLM() as server:
            code = main(["demo", "--out", str(tmp_path / "demo"), "--base-url", server.url, "--model", "fake"])
            asked = schemas(server.requests)
    finally:
        holder.kill()
        holder.wait()
    out = capsys.readouterr().out
    assert code == 3 and asked["GeneratedQuestion"] == 0 and asked["RelevanceAnswer"] > 0
    failures = out.split("demo finished with failures in ", 1)[1]
    assert "generate: " in failures and "questions.jsonl is being written by ragassay (pid" in failures
    assert not questions.exists()


def test_every_reject_has_one_shape(tmp_path, capsys):
    from ragassay.data.records import Reject

    chunks = tmp_path / "chunks.jsonl"
    lines = Path(CHUNKS).read_text().splitlines()[:12] + [json.dumps({"id": "tiny", "text": "too short"})]
    chunks.write_text("\n".join(lines) + "\n")
    rejects = tmp_path / "r.jsonl"
    with FakeLLM() as server:
        main(
            [
                "generate",
                str(chunks),
                "-o",
                str(tmp_path / "q.jsonl"),
                "--rejects",
                str(rejects),
                "--limit",
                "14",
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--quiet",
                "--no-cache",
            ]
        )
    records = [json.loads(x) for x in rejects.read_text().splitlines()]
    causes = {r["reason"].split(":")[0].split(" (")[0] for r in records}
    assert {"chunk unfit", "near-duplicate of an earlier question"} <= causes, causes
    assert {tuple(r) for r in records} == {tuple(Reject.model_fields)}  # the same fields, in the same order


def test_generate_stops_by_the_engines_abort_rule(tmp_path, capsys, monkeypatch):
    """Three candidates failing the same way before any answer stop the run (the rule every stage
    follows), not the first failure; what was tried stays in the journal."""
    import httpx
    import respx

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "q.jsonl"
    with respx.mock() as mock:
        route = mock.post("http://llm.test/v1/chat/completions").mock(
            return_value=httpx.Response(401, json={"error": {"message": "Incorrect API key provided"}})
        )
        code = main(
            [
                "generate",
                CHUNKS,
                "-o",
                str(out),
                "--limit",
                "5",
                "--base-url",
                "http://llm.test/v1",
                "--model",
                "m",
                "--quiet",
                "--no-cache",
            ]
        )
    err = capsys.readouterr().err
    assert code == 1 and route.call_count == 3
    assert "stopped early: the first 3 generate calls all failed the same way" in err
    assert not out.exists() and len(complete_lines(Path(f"{out}.candidates.journal"))) == 3


def test_each_candidates_text_checks_are_made_once(tmp_path, capsys, monkeypatch):
    """The engine walks a candidate's answers at every step; ranking its gold chunks (BM25 over the
    whole corpus) is done once per candidate, not once per step."""
    from ragassay.stages import generate_checks

    ranked = []
    real = generate_checks.BM25.rank_of
    monkeypatch.setattr(generate_checks.BM25, "rank_of", lambda self, q, c: ranked.append(c) or real(self, q, c))
    out = tmp_path / "q.jsonl"
    with FakeLLM() as server:
        assert main(generate_args(out, server.url)) == 0
    questions = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(ranked) == sum(len(q["chunk_ids"]) for q in questions) == 4 * 3 - 1 + 16  # 4 hard, one of two chunks
