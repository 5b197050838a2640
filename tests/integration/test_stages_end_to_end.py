"""Whole commands as a user runs them, against a competent local model (tests/fake_llm.py).

What the stage engine promises: a dry run predicts the calls a run makes, offline; a second run
into the same files gets its own records; a dead endpoint exits non-zero within seconds with the
reason; two writers cannot share an output; a full disk is one line and a rerun completes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_llm import FakeLLM, dead_url
from helpers import EXAMPLE, nonempty
from ragassay.cli import main

QUERIES, CHUNKS = str(EXAMPLE / "queries.jsonl"), str(EXAMPLE / "chunks.jsonl")
BM25, TFIDF = str(EXAMPLE / "runs" / "bm25.txt"), str(EXAMPLE / "runs" / "tfidf.txt")


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def judge_args(tmp_path, url: str, run: str = BM25, depth: int = 3, *extra: str) -> list[str]:
    return [
        "judge",
        "--queries",
        QUERIES,
        "--chunks",
        CHUNKS,
        "--run",
        run,
        "--depth",
        str(depth),
        "-o",
        str(tmp_path / "j.jsonl"),
        "--base-url",
        url,
        "--model",
        "fake",
        "--quiet",
        *extra,
    ]


def dry(args: list[str], capsys) -> dict:
    assert main(args + ["--dry-run", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--batch", "4"],
        ["--samples", "3"],
        ["--model", "fake-b"],
        ["--batch", "3", "--samples", "2", "--coverage-out", "COV"],
    ],
    ids=["pointwise", "batch", "samples", "jury", "batch+samples+coverage"],
)
def test_dry_run_predicts_the_calls_a_judge_run_makes(tmp_path, capsys, extra):
    extra = [str(tmp_path / "cov.jsonl") if x == "COV" else x for x in extra]
    with FakeLLM() as server:
        args = judge_args(tmp_path, server.url, BM25, 3, *extra)
        predicted = dry(args, capsys)
        assert server.calls == 0  # a dry run calls nothing
        assert main(args) == 0
        capsys.readouterr()
        assert server.calls == predicted["calls"] > 0
        assert predicted["items"] > 0 and predicted["done"] == 0 and predicted["cached"] == 0
        # partial resume: deeper judging needs only the new pairs, and says so before it runs
        deeper = judge_args(tmp_path, server.url, BM25, 5, *extra)
        before = server.calls
        predicted = dry(deeper, capsys)
        assert predicted["done"] > 0
        assert main(deeper) == 0
        assert server.calls - before == predicted["calls"] > 0
        # the same command again: everything is done, nothing is sent
        capsys.readouterr()
        assert dry(deeper, capsys)["calls"] == 0
        before = server.calls
        assert main(deeper) == 0
        assert server.calls == before
    records = lines(tmp_path / "j.jsonl")
    assert (
        len(records) == len({(r["query_id"], r["chunk_id"]) for r in records}) == 107
    )  # the top 5 of 22 queries (some have fewer)
    assert all(r["status"] == "ok" and r["key"] for r in records)


def test_dry_run_needs_no_endpoint_and_no_key(tmp_path, capsys):
    args = [
        "judge",
        "--queries",
        QUERIES,
        "--chunks",
        CHUNKS,
        "--run",
        BM25,
        "--depth",
        "2",
        "-o",
        str(tmp_path / "j.jsonl"),
        "--dry-run",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "calls: 44" in out and "nothing was called" in out and "cost: unknown" in out
    assert not (tmp_path / "j.jsonl").exists()


def test_a_second_run_into_the_same_files_gets_its_own_coverage(tmp_path, capsys):
    cov = tmp_path / "cov.jsonl"
    with FakeLLM() as server:
        # --no-cache: where both runs retrieved the same top 3 the request is identical and the cache
        # would answer it; without the cache every coverage call shows on the server
        assert (
            main(
                judge_args(tmp_path, server.url, BM25, 3, "--coverage-out", str(cov), "--format", "json", "--no-cache")
            )
            == 0
        )
        first = json.loads(capsys.readouterr().out)
        before = server.calls
        assert (
            main(
                judge_args(tmp_path, server.url, TFIDF, 3, "--coverage-out", str(cov), "--format", "json", "--no-cache")
            )
            == 0
        )
        second = json.loads(capsys.readouterr().out)
        from collections import Counter

        steps = Counter(r["response_format"]["json_schema"]["name"] for r in server.requests[before:])
    # the question's nuggets and their importance are reused; only their support by this run is asked
    assert (steps["NuggetList"], steps["ImportanceAnswer"], steps["AssignmentAnswer"]) == (0, 0, 22)
    records = lines(cov)
    assert sorted({r["run"] for r in records}) == ["bm25", "tfidf"] and len(records) == 44
    by = {(r["query_id"], r["run"]): r for r in records}
    for q in nonempty({r["query_id"] for r in records}):  # both runs measured against the same nuggets
        assert [(n["text"], n["vital"]) for n in by[(q, "bm25")]["nuggets"]] == [
            (n["text"], n["vital"]) for n in by[(q, "tfidf")]["nuggets"]
        ]
        assert by[(q, "tfidf")]["nuggets_reused"] and not by[(q, "bm25")]["nuggets_reused"]
    tfidf_top = {}
    for line in Path(TFIDF).read_text().splitlines():
        q, _, d, rank, _, _ = line.split()
        if int(rank) <= 3:
            tfidf_top.setdefault(q, []).append(d)
    assert all(sorted(by[(q, "tfidf")]["chunk_ids"]) == sorted(ds) for q, ds in tfidf_top.items())
    # the summary counts this run's pairs only; the file holds the union, one record per pair
    assert first["pairs"] == 66 and second["pairs"] == sum(len(ds) for ds in tfidf_top.values()) == 64
    judged = lines(tmp_path / "j.jsonl")
    assert len(judged) == len({(r["query_id"], r["chunk_id"]) for r in judged}) > 66


def test_a_dead_endpoint_stops_within_seconds_with_the_reason_and_nothing_is_lost(tmp_path, capsys):
    out = tmp_path / "j.jsonl"
    start = time.monotonic()
    assert main(judge_args(tmp_path, dead_url(), BM25, 5)) == 1
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert elapsed < 10, elapsed
    assert "stopped early" in err and "could not connect" in err and len(err.strip().splitlines()) == 1
    # the reason is the connection's own (refused), never an unrelated error it happened to chain to
    journalled = lines(Path(f"{out}.journal"))
    assert journalled and all(
        "refused" in r["error"].lower() or "connect call failed" in r["error"].lower() for r in journalled
    )
    assert "event loop" not in err and not any("event loop" in r["error"] for r in journalled)
    assert not out.exists()  # the old output (none here) is untouched; what was tried is in the journal
    with FakeLLM() as server:
        assert main(judge_args(tmp_path, server.url, BM25, 5)) == 0
    assert len(lines(out)) == 107 and not Path(f"{out}.journal").exists()


def test_errors_exit_3_and_name_the_reason_then_a_rerun_retries_them(tmp_path, capsys):
    """Rules decide some answers; without an endpoint the rest are error records: exit 3."""
    out = tmp_path / "checks.jsonl"
    args = ["check", str(EXAMPLE / "answers.jsonl"), "--chunks", CHUNKS, "-o", str(out), "--quiet"]
    assert main(args) == 3
    printed = capsys.readouterr().out
    # waiting for a verdict is not an error: said as waiting, with what a rerun needs
    assert (
        "14 of 16 answers wait for an LLM verdict (no endpoint configured); rerun the same command with one to "
        "decide them" in printed
    )
    with FakeLLM() as server:
        predicted = dry(args + ["--base-url", server.url, "--model", "fake"], capsys)
        # a new model gives every answer a new key; the rules decide 2 again without a call (the two
        # answers that are their reference as written)
        assert (predicted["items"], predicted["done"], predicted["decided_without_call"], predicted["calls"]) == (
            16,
            0,
            2,
            14,
        )
        assert main(args + ["--base-url", server.url, "--model", "fake"]) == 0
        assert server.calls == 14  # only the answers rules could not decide reach the model
    records = lines(out)
    assert len(records) == 16 and all(r["status"] == "ok" for r in records)


def test_a_second_writer_is_refused_at_once_naming_the_first(tmp_path, capsys):
    out = tmp_path / "j.jsonl"
    with FakeLLM(delay=0.05) as server:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
        first = subprocess.Popen(
            [sys.executable, "-m", "ragassay", *judge_args(tmp_path, server.url, BM25, 5)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        from ragassay.runtime.engine import OutputLock

        lock = OutputLock(tmp_path / "j.jsonl").path
        assert lock.parent != tmp_path  # no hidden lock files among the user's outputs
        deadline = time.monotonic() + 30
        while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        start = time.monotonic()
        assert main(judge_args(tmp_path, server.url, BM25, 5)) == 1
        assert time.monotonic() - start < 5
        err = capsys.readouterr().err
        assert f"is being written by ragassay (pid {first.pid}" in err
        stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    records = lines(out)
    assert len(records) == len({(r["query_id"], r["chunk_id"]) for r in records}) == 107
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [".j.jsonl.index"]  # no temp file left


def test_a_full_disk_is_one_line_and_a_rerun_completes(tmp_path, capsys, monkeypatch):
    import builtins
    import errno

    import ragassay.runtime.store as engine  # where the journal is opened

    real_open = builtins.open

    class FullDisk:
        def __init__(self, f):
            self.f, self.writes = f, 0

        def write(self, text):
            self.writes += 1
            if self.writes > 5:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(text)

        def __getattr__(self, name):
            return getattr(self.f, name)

    def fake_open(path, *a, **k):
        f = real_open(path, *a, **k)
        return FullDisk(f) if str(path).endswith(".journal") else f

    out = tmp_path / "j.jsonl"
    with FakeLLM() as server:
        monkeypatch.setattr(engine, "open", fake_open, raising=False)
        assert main(judge_args(tmp_path, server.url, BM25, 3)) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "No space left on device" in err and "j.jsonl.journal" in err
        assert len(lines(Path(f"{out}.journal"))) == 5  # what was written before the disk filled stays readable
        monkeypatch.setattr(engine, "open", real_open, raising=False)
        before = server.settled_calls()  # the first run's last requests may still be arriving
        assert main(judge_args(tmp_path, server.url, BM25, 3)) == 0
        assert server.calls - before <= 66 - 5
    assert len(lines(out)) == 66


def test_generate_dry_run_predicts_the_calls_when_every_question_is_accepted(tmp_path, capsys):
    with FakeLLM() as server:
        args = [
            "generate",
            CHUNKS,
            "-o",
            str(tmp_path / "q.jsonl"),
            "--limit",
            "5",
            "--base-url",
            server.url,
            "--model",
            "fake",
            "--quiet",
        ]
        predicted = dry(args, capsys)
        assert server.calls == 0
        code = main(args + ["--format", "json"])
        result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "generate" and result["delivered"] == {"easy": 2, "medium": 2, "hard": 1}
    assert code == 0 and result["rejected"] == 0
    # 4 single-chunk questions x (generate, blind answer, compare, critic) + 1 hard question of 3 chunks x
    # (the same 4 + one blind answer per chunk alone)
    assert server.calls == predicted["calls"] == 4 * 4 + 4 + 3


def test_generate_says_what_fell_short_and_exits_3(tmp_path, capsys, monkeypatch):
    import fake_llm

    real = fake_llm.answer_for

    def no_single_answers(schema, user, system=""):  # a verifier that finds every hard question answerable alone
        answer = real(schema, user, system)
        if schema == "BlindAnswer":
            answer.update(answerable=True, own_answer=" ".join(t for _, t in fake_llm.passages(user)))
        if schema == "SameAnswer":
            answer.update(same=True)
        return answer

    monkeypatch.setattr(fake_llm, "answer_for", no_single_answers)
    with FakeLLM() as server:
        code = main(
            [
                "generate",
                CHUNKS,
                "-o",
                str(tmp_path / "q.jsonl"),
                "--limit",
                "5",
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--quiet",
            ]
        )
    out = capsys.readouterr().out
    assert code == 3
    assert "fell short of the target: hard 1 fewer" in out and "fake multi-hop 3" in out


def test_the_demo_runs_every_stage_against_a_local_model_with_one_llm(tmp_path, capsys):
    """generate, judge, coverage and check against one local model, each stage in its own asyncio.run."""
    with FakeLLM() as server:
        assert main(["demo", "--out", str(tmp_path / "demo"), "--base-url", server.url, "--model", "fake"]) == 0
    out = capsys.readouterr().out
    assert "generate  ran: a sample of 10 beside the project's queries (not retrieved): 10 questions accepted" in out
    assert "check     ran: 16 of 16 answers graded" in out
    report = (tmp_path / "demo" / "report.html").read_text()
    assert "Judge: grade distribution" in report  # with or without matplotlib (an optional extra)
    result = json.loads((tmp_path / "demo" / "check.json").read_text())
    assert result["kind"] == "check" and result["errors"] == 0


def test_the_demo_against_a_model_that_refuses_everything_names_each_stage_and_exits_3(tmp_path, capsys):
    with FakeLLM(refuse="I can't help with that.") as server:
        code = main(["demo", "--out", str(tmp_path / "demo"), "--base-url", server.url, "--model", "fake"])
    out = capsys.readouterr().out
    assert code == 3
    failures = out.split("demo finished with failures in ", 1)[1].splitlines()
    assert failures[0] == "4 stage(s); the report shows what succeeded:"
    assert failures[1].startswith(
        "  generate: a sample of 10 beside the project's queries (not retrieved): 0 questions"
    )
    assert "fell short of the target (easy 4 fewer, medium 4 fewer, hard 2 fewer)" in failures[1]
    # the pool of both runs' top 5: 134 pairs (the demo judged bm25's top 5 alone, 107, before it was run's pipeline)
    assert failures[2].startswith(
        "  judge: the pool of 2 runs' top 5: 134 pairs, 0 judged before, 0 now, 134 errors; "
        "134 of 134 judge records are errors"
    )
    assert "the model refused: I can't help with that." in failures[2]
    assert failures[3].startswith("  coverage: bm25: FULL 0, PARTIAL 0, NONE 0; 22 of 22 coverage records are errors")
    # two answers are their reference as written: decided by rule
    assert failures[4].startswith(
        "  check: 2 of 16 answers graded (2 correct, 0 partial, 0 hallucinated, 0 abstained); "
        "14 of 16 check records are errors"
    )
    assert len(failures) == 5
    assert (tmp_path / "demo" / "report.html").exists() and (tmp_path / "demo" / "report.md").exists()


def test_the_demo_against_a_dead_endpoint_still_writes_the_report(tmp_path, capsys):
    code = main(["demo", "--out", str(tmp_path / "demo"), "--base-url", dead_url(), "--model", "fake"])
    out = capsys.readouterr().out
    assert code == 3 and (tmp_path / "demo" / "report.html").exists()
    tail = out.split("demo finished with failures in ", 1)[1]
    assert "generate" in tail and "judge" in tail and "check" in tail and "could not connect" in tail


def test_batched_grades_equal_pointwise_grades_on_the_example(tmp_path, capsys):
    """With a model that grades each passage on its own merits, batching changes no grade."""
    with FakeLLM() as server:
        assert main(judge_args(tmp_path, server.url, BM25, 5)) == 0
        pointwise = {(r["query_id"], r["chunk_id"]): r["grade"] for r in lines(tmp_path / "j.jsonl")}
        (tmp_path / "j.jsonl").rename(tmp_path / "pointwise.jsonl")
        assert main(judge_args(tmp_path, server.url, BM25, 5, "--batch", "4")) == 0
        batched = {(r["query_id"], r["chunk_id"]): r["grade"] for r in lines(tmp_path / "j.jsonl")}
    assert batched == pointwise and len(batched) == 107
    assert len(set(pointwise.values())) > 1  # the grades vary, so equality means something


def test_generate_append_grows_the_set_without_duplicates(tmp_path, capsys):
    out = tmp_path / "q.jsonl"
    with FakeLLM() as server:
        args = [
            "generate",
            CHUNKS,
            "-o",
            str(out),
            "--limit",
            "4",
            "--mix",
            "easy=1",
            "--base-url",
            server.url,
            "--model",
            "fake",
            "--quiet",
            "--qrels-out",
            str(tmp_path / "q.qrels"),
        ]
        assert main(args) == 0
        first = lines(out)
        assert main(args + ["--append"]) == 0
        printed = capsys.readouterr().out
    grown = lines(out)
    assert grown[:4] == first and len(grown) == 8 and "(4 kept, 4 added)" in printed
    assert len({q["id"] for q in grown}) == 8
    assert not {c for q in first for c in q["chunk_ids"]} & {c for q in grown[4:] for c in q["chunk_ids"]}
    assert len(ragassay_qrels(tmp_path / "q.qrels")) == 8


def ragassay_qrels(path):
    import ragassay

    return ragassay.read_qrels(path).to_dict()


def test_qrels_out_holds_every_pair_of_the_judgments_file_when_a_second_run_is_judged_into_it(tmp_path, capsys):
    """Judging tfidf after bm25 into the same files: the qrels are the judgments file's pairs (both
    runs'), not the last run's alone, which would favour whichever run was judged last in compare."""
    from ragassay.data.qrels_files import read_qrels

    with FakeLLM() as server:
        for run in (BM25, TFIDF):
            assert main(judge_args(tmp_path, server.url, run, 5, "--qrels-out", str(tmp_path / "judged.qrels"))) == 0
    judged = {(r["query_id"], r["chunk_id"]): r["grade"] for r in lines(tmp_path / "j.jsonl") if r["status"] == "ok"}
    qrels = read_qrels(tmp_path / "judged.qrels").to_dict()
    assert {(q, d): g for q, docs in qrels.items() for d, g in docs.items()} == judged
    bm25_top5 = {(q, d) for q, docs in read_run_top(BM25, 5).items() for d in docs}
    assert bm25_top5 <= set(judged) and len(judged) > len(bm25_top5)  # the first run's pairs are still there
    capsys.readouterr()


def read_run_top(path: str, k: int) -> dict[str, list[str]]:
    from ragassay.data.run_files import read_run

    return {q: [d for d, _ in docs[:k]] for q, docs in read_run(path).ranked().items()}


def test_outputs_in_folders_that_do_not_exist_yet_are_written_and_an_impossible_one_costs_nothing(tmp_path, capsys):
    """generate and retrieve made their folders only at the end (after the paid calls) or not at all;
    every command now makes them first, and a folder that cannot exist is a usage error before any call."""
    with FakeLLM() as server:
        gen = ["generate", CHUNKS, "--limit", "3", "--base-url", server.url, "--model", "fake", "--quiet", "--no-cache"]
        assert main(gen + ["-o", str(tmp_path / "new" / "deeper" / "q.jsonl")]) in (0, 3)
        assert (tmp_path / "new" / "deeper" / "q.jsonl").stat().st_size > 0
        (tmp_path / "a_file").write_text("x")
        calls = server.calls
        assert main(gen + ["-o", str(tmp_path / "a_file" / "q.jsonl")]) == 2
        assert server.calls == calls  # nothing was asked
    assert "cannot create its folder" in capsys.readouterr().err
    retr = ["retrieve", "--retriever", str(EXAMPLE / "retrievers.py") + ":tfidf", "--queries", QUERIES, "-k", "5"]
    assert main(retr + ["-o", str(tmp_path / "runs" / "tfidf.txt")]) == 0
    assert (tmp_path / "runs" / "tfidf.txt").read_text().count("\n") > 20


def test_a_rerun_of_judge_with_coverage_sends_nothing_without_the_cache(tmp_path, capsys):
    """The first run makes each query's nuggets; its coverage records then hold them. A rerun must
    see those records as done, not as new work that reuses their nuggets (a call per query, paid
    again, before the keys settled on the third run). A dry run after it prices nothing too."""
    cov = tmp_path / "cov.jsonl"
    args = judge_args(tmp_path, "", BM25, 3, "--coverage-out", str(cov), "--no-cache")
    with FakeLLM() as server:
        args[args.index("--base-url") + 1] = server.url
        assert main(args) == 0
        first = server.settled_calls()
        covered = [json.loads(line) for line in cov.read_text().splitlines()]
        assert len(covered) == 22 and all(r["status"] == "ok" for r in covered)
        assert main(args) == 0
        assert server.settled_calls() == first  # nothing sent again
        assert [json.loads(line) for line in cov.read_text().splitlines()] == covered
    capsys.readouterr()
    estimate = dry(args, capsys)
    assert estimate["calls"] == 0 and estimate["done"] == estimate["items"] == 66 + 22
