"""``ragassay run`` with its LLM endpoint down: what does not need the model still stands (people's
qrels scored, the rules' check, the report, the history), the steps that needed the failed step say
why they did not run, no gate passes a run that stopped, and the last line says where it stopped
and why, with an exit code that is not success. And a run has one name across run, report, track
and history."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_llm import dead_url
from helpers import EXAMPLE
from ragassay.cli import main


@pytest.fixture(autouse=True)
def no_endpoint_in_env(monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def copy_example(tmp_path: Path, *files: str) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    for f in files:
        shutil.copy(EXAMPLE / f, d / Path(f).name)
        origin = EXAMPLE / (f + ".origin.json")
        if origin.exists():
            shutil.copy(origin, d / origin.name)
    return d


def project(folder: Path, text: str) -> Path:
    path = folder / "ragassay.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run(path: Path, capsys, *more: str) -> tuple[int, dict, str]:
    """The run as JSON and as text (the second run's text: every step up to date or said again)."""
    capsys.readouterr()
    code = main(
        [
            "run",
            str(path),
            "--base-url",
            dead_url(),
            "--model",
            "fake",
            "--timeout",
            "5",
            "--format",
            "json",
            "--quiet",
            *more,
        ]
    )
    done = json.loads(capsys.readouterr().out)
    return code, done, ""


def text_of(path: Path, capsys, *more: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["run", str(path), "--base-url", dead_url(), "--model", "fake", "--timeout", "5", *more])
    return code, capsys.readouterr().out.rstrip("\n").split("\n")


def step(done: dict, name: str) -> dict:
    return next(s for s in done["steps"] if s["step"] == name)


FULL = """metrics = ["ndcg@10", "map"]
depth = 5
[data]
chunks = "chunks.jsonl"
queries = "queries.jsonl"
answers = "answers.jsonl"
qrels = "qrels.txt"
[runs]
first = "bm25.txt"
second = "tfidf.txt"
"""


def test_a_dead_endpoint_stops_at_judge_and_what_needs_no_model_still_runs(tmp_path, capsys):
    folder = copy_example(
        tmp_path, "chunks.jsonl", "queries.jsonl", "answers.jsonl", "qrels.txt", "runs/bm25.txt", "runs/tfidf.txt"
    )
    path = project(folder, FULL + '[gate]\nmin = ["ndcg@10=0.1"]\n')
    code, done, _ = run(path, capsys)
    status = {s["step"]: s["status"] for s in done["steps"]}
    assert code == 1 and done["exit_code"] == 1  # not success: the judge did nothing
    assert status["judge"] == "failed" and "could not connect" in step(done, "judge")["text"]
    # the rules' check stands, and says why no model was asked
    check = step(done, "check")
    assert check["status"] == "ran" and check["text"].startswith("2 of 16 answers decided by rule")
    assert "judge failed before it" in check["text"]
    # people's qrels score both runs, said to be not the judged pool
    for name in ("evaluate", "compare"):
        assert step(done, name)["status"] == "ran"
        assert "not on the judged pool: judge failed" in step(done, name)["text"]
    assert step(done, "evaluate")["result"]["first"]["aggregate"]["ndcg@10"] == pytest.approx(0.7935, abs=5e-5)
    out = folder / "ragassay-out"
    assert step(done, "report")["status"] == "ran" and (out / "report.html").exists() and (out / "report.md").exists()
    assert step(done, "track")["status"] == "ran"
    # a threshold that would hold gives no verdict on a run that stopped part way
    assert status["gate"] == "skipped" and "stopped at judge" in step(done, "gate")["text"]


def test_the_last_line_says_where_the_run_stopped_and_why(tmp_path, capsys):
    folder = copy_example(
        tmp_path, "chunks.jsonl", "queries.jsonl", "answers.jsonl", "qrels.txt", "runs/bm25.txt", "runs/tfidf.txt"
    )
    code, lines = text_of(project(folder, FULL), capsys)
    assert code == 1
    last = lines[-1]
    assert last.startswith("stopped at judge: ") and "could not connect" in last and last.endswith("(exit 1)")
    assert not any(line.startswith("finished with") for line in lines)
    assert any(line.startswith("report    ran:") for line in lines)


def test_a_check_that_fails_still_gives_the_rules_verdicts(tmp_path, capsys):
    """No runs: the judge has no pool, so the check is the first step to call the dead endpoint."""
    folder = copy_example(tmp_path, "chunks.jsonl", "answers.jsonl", "queries.jsonl")
    path = project(folder, '[data]\nchunks = "chunks.jsonl"\nanswers = "answers.jsonl"\nqueries = "queries.jsonl"\n')
    code, done, _ = run(path, capsys)
    check = step(done, "check")
    assert code == 1 and check["status"] == "failed" and check["exit_code"] == 1
    assert "could not connect" in check["text"]
    assert "by rule instead: 2 of 16 answers decided by rule" in check["text"]
    summary = json.loads((folder / "ragassay-out" / "check.json").read_text())["summary"]
    assert (summary["graded"], summary["waiting"], summary["errors"]) == (2, 14, 0)
    assert (folder / "ragassay-out" / "checks_by_rule.jsonl").exists()
    assert step(done, "report")["status"] == "ran"
    code, lines = text_of(path, capsys)
    assert lines[-1].startswith("stopped at check: ")


def test_a_generate_that_fails_leaves_the_runs_scored_on_peoples_qrels(tmp_path, capsys):
    """No queries: generate is the step that calls the model; the run files and people's qrels need none."""
    folder = copy_example(tmp_path, "chunks.jsonl", "qrels.txt", "runs/bm25.txt", "runs/tfidf.txt", "retrievers.py")
    path = project(
        folder,
        '[data]\nchunks = "chunks.jsonl"\nqrels = "qrels.txt"\n[runs]\nfirst = "bm25.txt"\n'
        'second = "tfidf.txt"\n[retrievers]\nmine = "retrievers.py:tfidf"\n',
    )
    code, done, _ = run(path, capsys)
    status = {s["step"]: s["status"] for s in done["steps"]}
    assert code == 1 and status["generate"] == "failed"
    # the retriever needed the questions generate writes: it says so
    assert status["retrieve"] == "skipped" and "generate failed before it" in step(done, "retrieve")["text"]
    # the judge is not asked again of a dead endpoint: skipped, naming the failure
    assert status["judge"] == "skipped" and step(done, "judge")["text"].startswith("generate failed before it")
    assert status["evaluate"] == "ran" and status["compare"] == "ran" and status["report"] == "ran"
    assert set(step(done, "evaluate")["result"]) == {"first", "second"}


def test_without_peoples_qrels_the_metrics_say_the_judge_was_what_they_missed(tmp_path, capsys):
    folder = copy_example(tmp_path, "chunks.jsonl", "queries.jsonl", "runs/bm25.txt")
    path = project(folder, '[data]\nchunks = "chunks.jsonl"\nqueries = "queries.jsonl"\n[runs]\nfirst = "bm25.txt"\n')
    code, done, _ = run(path, capsys)
    ev = step(done, "evaluate")
    assert code == 1 and ev["status"] == "skipped"
    assert ev["text"].startswith("nothing to score on") and "judge failed before it" in ev["text"]
    # a skip for a reason of its own is not blamed on the judge
    assert "judge failed" not in step(done, "check")["text"]  # (no answers in the project)
    assert "judge failed" not in step(done, "gate")["text"]  # (no thresholds)


# ----------------------------------------------------------------------------- one name for a run


def test_a_run_is_named_as_the_project_names_it_in_run_report_track_and_history(tmp_path, capsys):
    folder = copy_example(tmp_path, "queries.jsonl", "qrels.txt")
    shutil.copy(EXAMPLE / "runs" / "tfidf.txt", folder / "run.txt")  # its TREC tag is "tfidf"
    assert (folder / "run.txt").read_text().split("\n")[0].split()[-1] == "tfidf"
    path = project(folder, '[data]\nqueries = "queries.jsonl"\nqrels = "qrels.txt"\n[runs]\nrun = "run.txt"\n')
    capsys.readouterr()
    assert main(["run", str(path), "--format", "json", "--quiet"]) == 0
    done = json.loads(capsys.readouterr().out)
    out = folder / "ragassay-out"
    assert json.loads((out / "evaluate" / "run.json").read_text())["run"] == "run"
    assert step(done, "evaluate")["text"].startswith("run: ndcg@10")
    assert "| run |" in (out / "report.md").read_text() or "run" in (out / "report.md").read_text()
    db = str(folder / ".ragassay" / "history.sqlite")
    capsys.readouterr()
    assert main(["history", "--db", db, "--run", "run", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["run"] for r in rows] == ["run"]
    # the TREC tag is not a second name for it: asked by that, history says which names it has
    assert main(["history", "--db", db, "--run", "tfidf"]) == 1
    err = capsys.readouterr().err
    assert "no tracked result of the run 'tfidf'" in err and "the runs it has: run" in err


def test_history_of_a_run_it_does_not_have_names_the_ones_it_has(tmp_path, capsys):
    from ragassay.product.tracking import track

    db = tmp_path / "h.sqlite"
    for name in ("bm25-ü", "tfidf"):
        result = tmp_path / f"{name}.json"
        result.write_text(json.dumps({"kind": "evaluate", "version": 1, "run": name, "aggregate": {"ndcg@10": 0.5}}))
        track(result, db)
    capsys.readouterr()
    assert main(["history", "--db", str(db), "--run", "tfdif", "--metric", "ndcg@10"]) == 1
    err = capsys.readouterr().err
    assert "the runs it has: bm25-ü, tfidf" in err and "did you mean 'tfidf'?" in err
    assert main(["history", "--db", str(db), "--run", "bm25-ü", "--format", "json"]) == 0
    assert [r["run"] for r in json.loads(capsys.readouterr().out)["results"]] == ["bm25-ü"]
