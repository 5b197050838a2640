"""The product commands are library functions: ``track``, ``read_history``, ``gate_result``,
``make_report``, ``write_merged`` and ``demo`` do what the commands do and return typed results
(``to_dict()`` is the command's JSON, ``exit_code`` its exit code); the commands only render them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import EXAMPLE
from ragassay.cli import main
from ragassay.errors import InputError, UsageError
from ragassay.product.demo import demo
from ragassay.product.merge import write_merged
from ragassay.product.report import make_report
from ragassay.product.tracking import gate_result, read_history, track


@pytest.fixture
def evaluated(tmp_path, capsys) -> Path:
    """The JSON that ``ragassay evaluate --format json`` writes for the example's BM25 run."""
    assert main(["evaluate", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "runs" / "bm25.txt"), "--format", "json"]) == 0
    path = tmp_path / "bm25.json"
    path.write_text(capsys.readouterr().out)
    return path


def test_track_and_read_history_as_functions(tmp_path, evaluated):
    db = tmp_path / "h.sqlite"
    with pytest.raises(InputError, match="no history yet"):
        read_history(db)
    assert not db.exists()  # reading makes no database
    first, second = track(evaluated, db, label="nightly"), track(evaluated, db)
    assert (first.id, second.id) == (1, 2) and first.result_kind == "evaluate" and first.label == "nightly"
    assert first.metrics["ndcg@10"] == pytest.approx(0.7935, abs=5e-5) and len(first.metrics) == 10
    assert first.to_dict() == {
        "kind": "track",
        "version": 1,
        "id": 1,
        "result_kind": "evaluate",
        "metrics": first.metrics,
        "label": "nightly",
        "db": str(db),
        "run": "bm25",
        "qrels": {"file": str(EXAMPLE / "qrels.txt"), "digest": first.qrels["digest"], "origin": first.qrels["origin"]},
    }
    assert first.qrels["origin"]["describe"] == "example assessor 1" and first.qrels["origin"]["kind"] == "people"
    trend = read_history(db, "nDCG@10")  # any accepted spelling
    assert trend.metric == "nDCG@10" and [r.value for r in trend.results] == [first.metrics["ndcg@10"]] * 2
    assert [r.delta_previous for r in trend.results] == [None, 0.0]
    everything = read_history(db)
    assert everything.metric is None and [r.label for r in everything.results] == ["nightly", None]
    listed = everything.to_dict()
    assert listed["kind"] == "history" and [(r["id"], r["label"]) for r in listed["results"]] == [
        (1, "nightly"),
        (2, None),
    ]


def test_gate_result_says_what_failed_and_refuses_a_misspelt_metric(evaluated):
    failed = gate_result(evaluated, {"ndcg@10": 0.99}, {"P@5": 0.5})
    assert failed.exit_code == 1 and not failed.passed
    assert failed.failures == ["ndcg@10 = 0.7935 is below the minimum 0.99"]
    passed = gate_result(evaluated, {"ndcg@10": 0.5}, {})
    assert passed.exit_code == 0 and passed.to_dict() == {
        "kind": "gate",
        "version": 1,
        "passed": True,
        "failures": [],
        "result_kind": "evaluate",
        "run": "bm25",
        "qrels": passed.qrels,
        "rests_on": passed.rests_on,
    }
    assert passed.qrels["origin"]["describe"] == "example assessor 1"
    assert passed.rests_on["relevance"]["level"] == 2 and passed.rests_on["pool"]["depth"] == 5  # the result's own
    with pytest.raises(UsageError, match="'ndcg@100' is not in this evaluate result; did you mean 'ndcg@10'"):
        gate_result(evaluated, {"ndcg@100": 0.1}, {})


def test_make_report_picks_the_format_from_the_suffix_unless_told(tmp_path, evaluated):
    md = make_report([evaluated], tmp_path / "r.md")
    assert md.format == "markdown" and md.path.read_text().startswith("# ragassay report")
    html = make_report(
        [],
        tmp_path / "r.md.txt",
        qrels=EXAMPLE / "qrels.txt",
        runs=[EXAMPLE / "runs" / "bm25.txt"],
        fmt="html",
        title="nightly",
    )
    assert html.format == "html" and "<title>nightly</title>" in html.path.read_text()
    assert html.to_dict() == {
        "kind": "report",
        "version": 1,
        "output": str(tmp_path / "r.md.txt"),
        "format": "html",
        "bytes": (tmp_path / "r.md.txt").stat().st_size,
    }


def test_merge_conflicts_are_exit_code_3(tmp_path):
    def shard(name: str, grade: int) -> Path:
        path = tmp_path / name
        path.write_text(
            json.dumps({"key": "k1", "query_id": "q", "chunk_id": "c", "grade": grade, "status": "ok"}) + "\n"
        )
        return path

    assert write_merged([shard("a.jsonl", 2), shard("b.jsonl", 2)], tmp_path / "m.jsonl").exit_code == 0
    conflicting = write_merged([shard("a.jsonl", 2), shard("c.jsonl", 3)], tmp_path / "m.jsonl")
    assert conflicting.exit_code == 3 and conflicting.conflicts == ["k1"]


def test_demo_copies_the_example_or_runs_it(tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    copied = demo(copy=tmp_path / "copy")
    names = sorted(str(Path(p).relative_to(tmp_path / "copy")) for p in copied.copied)
    # with the three hand-label files' origins and the example's project file
    assert "chunks.jsonl" in names and "runs/bm25.txt" in names and "ragassay.toml" in names and len(names) == 14
    assert copied.exit_code == 0 and copied.to_dict() == {"kind": "demo", "version": 1, "copied": copied.copied}
    steps: list[str] = []
    ran = demo(tmp_path / "run", log=steps.append)  # no endpoint: the stages that need none
    assert ran.exit_code == 0 and ran.skipped == ["generate", "judge", "coverage", "check (LLM verdicts)"]
    assert ran.report == str(tmp_path / "run" / "report.html") and Path(ran.report).exists()
    assert steps[0] == "labels   qrels.txt by example assessor 1" and ran.to_dict()["kind"] == "demo"
    assert (
        next(s for s in steps if s.startswith("retrieve"))
        == "retrieve  ran: bm25: 202 results for 22 queries; tfidf: 175 results for 22 queries"
    )
