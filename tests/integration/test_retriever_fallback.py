"""A retriever whose package is not installed falls back to the run file the project names for it
(the example's bm25 without bm25s: the demo still writes its report); any other failure of the
retriever still fails the step; a retriever that works never reads its fallback; and the state is
left so that the retriever runs once its package is installed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragassay.cli import main

QUERIES = {"q/1": "alpha?", "q-ü": "gamma?"}
CHUNKS = {"d:1": "alpha beta", "d#3": "gamma", "d4": "delta"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    d = tmp_path / "p"
    d.mkdir()
    (d / "chunks.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in CHUNKS.items()))
    (d / "queries.jsonl").write_text("".join(json.dumps({"id": i, "question": t}) + "\n" for i, t in QUERIES.items()))
    (d / "people.qrels").write_text("q/1 0 d:1 3\nq-ü 0 d#3 2\n")
    (d / "kept.txt").write_text("q/1 Q0 d4 1 2.0 kept\nq/1 Q0 d:1 2 1.0 kept\nq-ü Q0 d#3 1 5.0 kept\n")
    (d / "retrievers.py").write_text(
        "def needs_a_package(query):\n    import a_package_nobody_installed  # noqa\n    return []\n\n"
        "def broken(query):\n    raise ValueError('a bug in the retriever')\n\n"
        "def works(query):\n    return [('d:1', 1.0)] if 'alpha' in query else [('d#3', 1.0)]\n"
    )
    (d / "ragassay.toml").write_text(
        'depth = 2\nk = 5\nmetrics = ["ndcg@10"]\n\n[data]\nchunks = "chunks.jsonl"\nqueries = "queries.jsonl"\n'
        'qrels = "people.qrels"\n\n[retrievers]\n'
        'r = { function = "retrievers.py:FUNCTION", fallback = "kept.txt" }\n'
    )
    return d


def run(project: Path, capsys, function: str, *more: str) -> tuple[int, dict]:
    toml = project / "ragassay.toml"
    toml.write_text(toml.read_text().replace("FUNCTION", function))
    capsys.readouterr()
    code = main(["run", str(toml), "--format", "json", "--quiet", *more])
    return code, json.loads(capsys.readouterr().out)


def step(done: dict, name: str) -> dict:
    return next(s for s in done["steps"] if s["step"] == name)


def test_a_missing_package_reads_the_fallback_run_and_says_so(project, capsys):
    code, done = run(project, capsys, "needs_a_package")
    assert code == 0, done
    said = step(done, "retrieve")["text"]
    assert (
        said == "r: a_package_nobody_installed is not installed, so the run file kept.txt is read in its place "
        "(3 results for 2 queries)"
    )
    out = project / "ragassay-out"
    assert (out / "runs" / "r.txt").read_text() == (project / "kept.txt").read_text()
    assert step(done, "retrieve")["result"]["r"] == {
        "fallback": str(project / "kept.txt"),
        "missing_package": "a_package_nobody_installed",
    }
    assert any("kept.txt is read in its place" in w for w in done["warnings"])  # in the JSON's warnings too
    assert step(done, "evaluate")["status"] == "ran" and (out / "evaluate" / "r.json").exists()
    # the retriever is tried again next time (its package may have been installed since)
    project.joinpath("retrievers.py").write_text(
        project.joinpath("retrievers.py")
        .read_text()
        .replace("    import a_package_nobody_installed  # noqa\n    return []", "    return [('d4', 1.0)]")
    )
    code, again = run(project, capsys, "needs_a_package")
    assert code == 0 and step(again, "retrieve")["text"] == "r: 2 results for 2 queries"
    assert (out / "runs" / "r.txt").read_text().split()[2] == "d4"


def test_a_dry_run_reads_the_fallback_and_writes_nothing(project, capsys):
    code, done = run(project, capsys, "needs_a_package", "--dry-run")
    assert code == 0 and "kept.txt is read in its place" in step(done, "retrieve")["text"]
    assert not (project / "ragassay-out").exists()


def test_another_failure_of_the_retriever_still_fails_the_step(project, capsys):
    code, done = run(project, capsys, "broken")
    assert code == 1
    assert step(done, "retrieve")["status"] == "failed"
    assert "ValueError: a bug in the retriever" in step(done, "retrieve")["text"]


def test_a_retriever_that_works_never_reads_its_fallback(project, capsys):
    code, done = run(project, capsys, "works")
    assert code == 0 and step(done, "retrieve")["text"] == "r: 2 results for 2 queries"
    assert "kept" not in (project / "ragassay-out" / "runs" / "r.txt").read_text()


@pytest.mark.parametrize(
    "value, said",
    [
        ('{ function = "retrievers.py:works", fallback = "gone.txt" }', "no such file 'gone.txt'"),
        ('{ fallback = "kept.txt" }', "got no function"),
        ('{ function = "retrievers.py:works", else = "kept.txt" }', "got else"),
    ],
)
def test_a_bad_retriever_table_names_its_line(project, capsys, value, said):
    toml = project / "ragassay.toml"
    toml.write_text(toml.read_text().replace('{ function = "retrievers.py:FUNCTION", fallback = "kept.txt" }', value))
    capsys.readouterr()
    assert main(["run", str(toml), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "ragassay.toml:11: r: " in err and said in err and "Traceback" not in err


def test_the_demo_without_bm25s_reads_the_bundled_bm25_run_and_writes_its_report(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("RAGASSAY_MODEL", raising=False)
    monkeypatch.setitem(sys.modules, "bm25s", None)  # as if it were not installed
    capsys.readouterr()
    assert main(["demo", "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert (
        "retrieve  ran: bm25: bm25s is not installed, so the run file bm25.txt is read in its place "
        "(202 results for 22 queries); tfidf: 175 results for 22 queries" in out
    )
    assert (tmp_path / "d" / "report.html").exists()


def test_a_second_run_of_one_project_stops_at_once_naming_the_first(project, capsys):
    """Two runs of one project would write one state file and the same outputs: while one runs (its
    lock held by another process here), a second stops before any step, naming it; a dry run, which
    writes nothing, still runs; once the first is gone, the second runs."""
    import subprocess

    toml = project / "ragassay.toml"
    toml.write_text(toml.read_text().replace("FUNCTION", "works"))
    state = project / ".ragassay" / "state.json"
    code = (
        "import sys, time; from ragassay.runtime.engine import OutputLock; OutputLock(sys.argv[1]).acquire(); "
        "print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(state)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        assert main(["run", str(toml)]) == 1
        err = capsys.readouterr().err
        assert "another run of this project is under way (ragassay (pid " in err
        assert "wait for it to finish, or give this one its own folder with --out DIR" in err
        assert not (project / "ragassay-out").exists()  # no step ran
        assert main(["run", str(toml), "--dry-run"]) == 0
    finally:
        holder.kill()
        holder.wait()
    capsys.readouterr()
    assert main(["run", str(toml)]) == 0


def test_the_bundled_example_is_only_read_a_run_of_it_needs_out(tmp_path, capsys):
    from helpers import EXAMPLE

    capsys.readouterr()
    assert main(["run", str(EXAMPLE / "ragassay.toml")]) == 2
    err = capsys.readouterr().err
    assert "is the bundled example, inside the installed package: give --out DIR" in err
    assert not (EXAMPLE / "ragassay-out").exists() and not (EXAMPLE / ".ragassay").exists()
    assert main(["run", str(EXAMPLE / "ragassay.toml"), "--dry-run"]) == 0  # a dry run writes nothing
    assert main(["run", str(EXAMPLE / "ragassay.toml"), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "report.html").exists() and not (EXAMPLE / "ragassay-out").exists()


def test_demo_copy_refuses_llm_flags_it_would_ignore(tmp_path, capsys):
    capsys.readouterr()
    assert main(["demo", "--copy", str(tmp_path / "c"), "--model", "fake", "--max-calls", "3"]) == 2
    err = capsys.readouterr().err
    assert (
        "--copy only writes the bundled example's files and calls no model: --model, --max-calls would do "
        "nothing" in err
    )
    assert not (tmp_path / "c").exists()
    assert main(["demo", "--copy", str(tmp_path / "c")]) == 0 and (tmp_path / "c" / "ragassay.toml").exists()
