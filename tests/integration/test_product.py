"""demo, report, track / history, gate, and the guides covering every command."""

from __future__ import annotations

import json
import re

import pytest

from helpers import EXAMPLE, ROOT, nonempty
from ragassay.cli import build_parser, main


def test_every_command_is_in_the_guides():
    """Every command has a guide on the site beside its generated reference (the README links to them)."""
    readme = "\n".join(
        p.read_text(encoding="utf-8")
        for p in [ROOT / "README.md", *(ROOT / "docs").glob("*/*.md")]
        if p.name != "cli.md"
    )
    action = next(a for a in build_parser()._actions if a.dest == "command")
    for name in nonempty(action.choices):
        assert re.search(rf"ragassay {name}\b", readme), f"'ragassay {name}' is in no guide of docs/"


def test_demo_without_an_endpoint(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("RAGASSAY_MODEL", raising=False)
    assert main(["demo", "--out", str(tmp_path / "demo"), "--data", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "skipped (no LLM configured): generate, judge, coverage, check (LLM verdicts)" in out
    assert "OPENAI_API_KEY=sk-... ragassay demo --model" in out
    # the two people measured against each other, by name, with no LLM
    assert "agree     ran: example assessor 1 vs example assessor 2: kappa 0.529 on 65 pairs" in out
    html = (tmp_path / "demo" / "report.html").read_text()
    assert html.startswith("<!doctype html>") and "Comparison against bm25" in html
    assert not re.search(r"""(src|href)=["'](https?:|//)""", html)  # stands alone, opens offline
    assert json.loads((tmp_path / "demo" / "compare.json").read_text())["baseline"] == "bm25"
    assert (tmp_path / "demo" / "report.md").read_text().startswith("# ragassay demo")


def test_report_from_result_files_and_markdown(tmp_path, capsys):
    ev = tmp_path / "ev.json"
    assert main(["evaluate", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "runs" / "bm25.txt"), "--format", "json"]) == 0
    ev.write_text(capsys.readouterr().out)
    ag = tmp_path / "agree.json"
    assert (
        main(["agree", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "qrels_second_assessor.txt"), "--format", "json"]) == 0
    )
    ag.write_text(capsys.readouterr().out)
    judgments = tmp_path / "j.jsonl"
    judgments.write_text(
        '{"query_id": "q01", "chunk_id": "refund-01", "grade": 3, "status": "ok"}\n'
        '{"query_id": "q01", "chunk_id": "gift-02", "grade": null, "status": "error", "error": "x"}\n'
    )
    md = tmp_path / "r.md"
    assert main(["report", str(ev), str(ag), str(judgments), "-o", str(md), "--format", "markdown"]) == 0
    text = md.read_text()
    assert "## Metrics: bm25" in text and "## Judge: grade distribution" in text and "| error | 1 |" in text
    assert "## Agreement: example assessor 1 against example assessor 2" in text  # named by origin
    bad = tmp_path / "bad.json"
    bad.write_text('{"something": 1}')
    assert main(["report", str(bad), "-o", str(md)]) == 1
    assert "neither a ragassay result" in capsys.readouterr().err


def test_track_history_and_gate(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    results = []
    for run in ("bm25", "tfidf"):
        assert (
            main(["evaluate", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "runs" / f"{run}.txt"), "--format", "json"])
            == 0
        )
        p = tmp_path / f"{run}.json"
        p.write_text(capsys.readouterr().out)
        results.append(p)
        assert main(["track", str(p), "--label", run]) == 0
        assert "tracked result" in capsys.readouterr().out
    assert main(["history", "--metric", "nDCG@10"]) == 0
    out = capsys.readouterr().out
    assert "+0.0542" not in out  # tfidf is not bm25's next result: two runs, two series, no trend between them
    assert "bm25" in out and "tfidf" in out and "example assessor 1" in out  # each row names its run and qrels
    assert main(["history", "--metric", "ndcg@10", "--format", "json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert (history["kind"], history["version"], history["metric"]) == ("history", 1, "ndcg@10")
    trend = history["results"]
    assert [r["label"] for r in trend] == ["bm25", "tfidf"] and [r["run"] for r in trend] == ["bm25", "tfidf"]
    assert [r["delta_previous"] for r in trend] == [None, None] and [r["delta_best"] for r in trend] == [None, None]

    assert main(["gate", str(results[1]), "--min", "ndcg@10=0.8", "--min", "P_5=0.2"]) == 0  # p@5 at grade >= 2
    assert main(["gate", str(results[0]), "--min", "ndcg@10=0.8", "--max", "map=0.5", "--min", "bleu=1"]) == 1
    err = capsys.readouterr().err
    assert "ndcg@10 = 0.7935 is below the minimum 0.8" in err and "map = 0.7402 is above the maximum 0.5" in err
    assert "bleu: not in the result" in err
    assert main(["gate", str(results[0])]) == 2  # no threshold given


def test_gate_on_check_and_compare_results(tmp_path):
    from ragassay.data.results import result_errors, result_metrics
    from ragassay.product.tracking import gate

    check = {
        "kind": "check",
        "version": 1,
        "errors": 2,
        "summary": {
            "rates": {
                lab: {"value": v}
                for lab, v in [("correct", 0.7), ("partial", 0.1), ("hallucinated", 0.15), ("abstained", 0.05)]
            },
            "hallucination_rate": {"value": 0.15},
            "abstention_rate": {"value": 0.05},
            "truthfulness": {"value": 0.6},
            "correct_given_attempted": {"value": 0.74},
            "errors": 2,
        },
    }
    values = result_metrics(check)
    assert gate(values, {}, {"hallucination_rate": 0.1}, result_errors(check), allow_errors=2) == [
        "hallucination_rate = 0.1500 is above the maximum 0.1"
    ]
    assert gate(values, {}, {}, result_errors(check), allow_errors=1)[0].startswith("2 items of this result are errors")
    cmp = {
        "kind": "compare",
        "version": 1,
        "baseline": "a",
        "means": {"a": {"ndcg@10": 0.5}, "b": {"ndcg@10": 0.7}},
        "tests": [],
    }
    values = result_metrics(cmp)
    assert values["ndcg@10"] == 0.7 and values["a/ndcg@10"] == 0.5
    assert gate(values, {"a/nDCG@10": 0.6}, {}) == ["a/ndcg@10 = 0.5000 is below the minimum 0.6"]


def test_demo_with_a_mocked_endpoint_runs_every_stage(tmp_path, monkeypatch, capsys):
    import httpx
    import respx

    base = "http://demo.test/v1"

    def reply(obj):
        return httpx.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": json.dumps(obj)}}
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            },
        )

    def handler(request):
        body = json.loads(request.content)
        schema = json.dumps(body["response_format"])
        user = body["messages"][-1]["content"]
        ids = re.findall(r"<<<PASSAGE id=(\S+)", user)
        if "answer_supported" in schema:
            return reply(
                {
                    "own_answer": "x",
                    "answerable": len(ids) > 1 or "combined" not in user,
                    "answer_supported": True,
                    "reason": "ok",
                }
            )
        if "evidence" in schema:
            texts = re.findall(r"<<<PASSAGE id=\S+\n(.*?)\nPASSAGE>>>", user, re.S)
            first = [t.split(". ")[0] for t in texts]
            q = (
                ("What is the combined rule for " if len(ids) > 1 else "What is the rule for ")
                + " and ".join(ids)
                + "?"
            )
            return reply(
                {
                    "question": q,
                    "answer": "; ".join(first),
                    "kind": "factoid",
                    "evidence": [{"chunk_id": i, "quote": f} for i, f in zip(ids, first)],
                }
            )
        if "nuggets" in schema:
            return reply({"nuggets": [{"text": "fact", "vital": True, "support": "support", "chunk_ids": ids[:1]}]})
        if "reference_facts" in schema:
            return reply(
                {
                    "reference_facts": "f",
                    "response_claims": "c",
                    "comparison": "x",
                    "label": "partial",
                    "grounded": "supported",
                    "context_has_answer": True,
                    "unsupported_claims": [],
                }
            )
        return reply({"intent": "i", "match": "m", "trust": "t", "grade": 2})

    monkeypatch.setenv("OPENAI_API_KEY", "sk-demo")
    with respx.mock:
        respx.post(f"{base}/chat/completions").mock(side_effect=handler)
        # this endpoint's generate and coverage answers do not fit their schemas: the demo goes on,
        # writes the report, names both stages on its last lines and exits 3
        assert (
            main(["demo", "--out", str(tmp_path / "d"), "--data", str(EXAMPLE), "--base-url", base, "--model", "m"])
            == 3
        )
    out = capsys.readouterr().out
    assert "skipped (no LLM" not in out
    last = out.strip().splitlines()[-3:]
    assert last[0] == "demo finished with failures in 2 stage(s); the report shows what succeeded:"
    assert (
        last[1].startswith(
            "  generate: a sample of 10 beside the project's queries (not retrieved): 0 questions accepted"
        )
        and "fell short of the target (easy 4 fewer, medium 4 fewer, hard 2 fewer)" in last[1]
    )
    assert last[2].startswith("  coverage: bm25: FULL 0, PARTIAL 0, NONE 0; 22 of 22 coverage records are errors")
    # people against people, and people against the judge, each named by who labelled
    assert "agree     ran: example assessor 1 vs example assessor 2: kappa 0.529 on 65 pairs" in out
    # (this judge grades every pair 2: a kappa with it would be 0 by construction, so none is given, and why)
    assert re.search(
        r"; example assessor 1 vs m, judge_relevance@\w+ at demo.test: no kappa \(the candidate gives all "
        r"134 shared pairs grade 2: .*\) on 134 pairs",
        out,
    )
    assert "check     ran: 16 of 16 answers graded" in out
    html = (tmp_path / "d" / "report.html").read_text()
    assert "Judge: grade distribution" in html and "Agreement: example assessor 1 against m, judge_relevance@" in html
    assert "Agreement: example assessor 1 against example assessor 2" in html
    assert "Judge: answer coverage per query" in html


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "true", '"0.99"', "[0.99]"])
def test_gate_and_track_refuse_a_metric_that_is_not_a_finite_number(tmp_path, capsys, value):
    result = tmp_path / "r.json"
    result.write_text('{"kind": "evaluate", "version": 1, "aggregate": {"ndcg@10": ' + str(value) + "}}")
    assert main(["gate", str(result), "--min", "ndcg@10=0.5"]) == 1
    err = capsys.readouterr().err
    assert "not a finite number" in err and "gate passed" not in err
    assert main(["track", str(result), "--db", str(tmp_path / "h.sqlite")]) == 1
    assert "not a finite number" in capsys.readouterr().err


def test_gate_fails_a_stage_result_with_errors_unless_allowed(tmp_path, capsys):
    ex = EXAMPLE
    out = tmp_path / "checks.jsonl"
    assert (
        main(
            [
                "check",
                str(ex / "answers.jsonl"),
                "--chunks",
                str(ex / "chunks.jsonl"),
                "-o",
                str(out),
                "--format",
                "json",
                "--quiet",
            ]
        )
        == 3
    )  # no endpoint: 14 of 16 answers are error records
    result = tmp_path / "check.json"
    result.write_text(capsys.readouterr().out)
    assert main(["gate", str(result), "--max", "hallucination_rate=1"]) == 1
    assert "14 items of this result are errors (ungraded), more than --allow-errors 0" in capsys.readouterr().err
    assert main(["gate", str(result), "--max", "hallucination_rate=1", "--allow-errors", "14"]) == 0
    assert "gate passed" in capsys.readouterr().out
    assert main(["gate", str(result), "--max", "hallucination_rate=1", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False


def test_a_result_without_a_kind_is_refused_not_guessed(tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text('{"aggregate": {"ndcg@10": 0.9}}')
    for argv in (
        ["gate", str(old), "--min", "ndcg@10=0.5"],
        ["track", str(old), "--db", str(tmp_path / "h.sqlite")],
        ["report", str(old), "-o", str(tmp_path / "r.html")],
    ):
        assert main(argv) == 1
        assert "old.json" in capsys.readouterr().err


def test_the_demo_runs_from_the_built_wheel_in_an_empty_directory(tmp_path, built_wheel):
    """`pip install ragassay` then `ragassay demo` outside a clone: the example ships in the wheel.
    The wheel is unpacked (its dependencies come from this environment)."""
    import subprocess
    import sys
    import zipfile

    wheel = built_wheel
    names = zipfile.ZipFile(wheel).namelist()
    for f in (
        "chunks.jsonl",
        "queries.jsonl",
        "qrels.txt",
        "qrels_second_assessor.txt",
        "answers.jsonl",
        "answers_human_labels.jsonl",
        "retrievers.py",
        "runs/bm25.txt",
        "runs/tfidf.txt",
        "ragassay.toml",
    ):
        assert f"ragassay/example/{f}" in names, f
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("OPENAI_", "RAGASSAY_"))}
    env["PYTHONPATH"] = str(site)
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, ragassay.cli; sys.exit(ragassay.cli.main(sys.argv[1:]))",
            "demo",
            "--out",
            "out",
        ],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert (empty / "out" / "report.html").exists() and "skipped (no LLM configured)" in run.stdout
    # the installed example is only read: outputs and state are in the demo's folder
    assert (empty / "out" / ".ragassay" / "state.json").exists()
    assert not any(site.joinpath("ragassay", "example").glob("*ragassay-out*"))
    assert not site.joinpath("ragassay", "example", ".ragassay").exists()
    copied = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, ragassay.cli; sys.exit(ragassay.cli.main(sys.argv[1:]))",
            "demo",
            "--copy",
            "ex",
        ],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
    )
    assert copied.returncode == 0 and (empty / "ex" / "runs" / "bm25.txt").exists()


def test_demo_copy_refuses_run_flags_and_json_quiet_prints_only_the_json(tmp_path, capsys, monkeypatch):
    """--copy with --out would silently ignore --out; --format json --quiet leaves stderr empty."""
    from ragassay.cli import main

    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["demo", "--copy", "ex", "--out", "d"]) == 2
    assert "give one or the other" in capsys.readouterr().err and not (tmp_path / "ex").exists()
    assert main(["demo", "--format", "json", "--quiet", "--out", "d"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and json.loads(out.out)["kind"] == "demo"
    assert main(["demo", "--format", "json", "--out", "d2"]) == 0
    assert "evaluate  ran: bm25: ndcg@10 0.7935" in capsys.readouterr().err  # without --quiet the steps go to stderr
