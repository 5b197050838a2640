"""The words of run's, judge's and check's summaries agree with their counts ("1 run's top 10",
"1 error"), the report's sentence before "Pool bias" ends with a full stop, and a per-item error
record's summary names the input file and the items (by line when they have no id of their own),
advising a rerun only for errors a rerun may mend."""

from __future__ import annotations

import json
import re

import pytest
from test_rests_on import project, run_project, write_corpus

from fake_llm import FakeLLM
from ragassay.cli import main
from ragassay.runtime.engine import StageRun


@pytest.mark.parametrize("retrievers", [["overlap"], ["overlap", "names", "longest"]])
def test_the_pool_says_run_or_runs_and_the_report_ends_its_sentence(tmp_path, capsys, retrievers):
    folder = tmp_path / "corpus"
    write_corpus(folder, chunks=60, queries=8)
    path = project(folder, retrievers)
    with FakeLLM() as server:
        code, result, err = run_project(path, server, capsys)
    assert code == 0, err
    judge = next(s for s in result["steps"] if s["step"] == "judge")["text"]
    n = len(retrievers)
    assert judge.startswith(f"the pool of {n} {'run' + chr(39) + 's' if n == 1 else 'runs' + chr(39)} top 10: "), judge
    assert judge.endswith(", 0 errors"), judge
    report = (folder / "out" / "report.md").read_text()
    if n > 1:
        assert "Pool bias:" in report
        assert not re.search(r"[^.!?\s]\s*Pool bias", report), report[report.index("Pool bias") - 80 :][:120]


def stage_run(records: list[dict]) -> StageRun:
    from collections import Counter

    from ragassay.runtime.engine import reason_of

    errors = [r for r in records if r["status"] == "error"]
    return StageRun(
        "check",
        records,
        len(records),
        0,
        len(records) - len(errors),
        len(errors),
        Counter(reason_of(r) for r in errors),
    )


EMPTY = "input: the reference is empty or missing (a RAGAS sample may have none): there is nothing to grade"


def test_an_input_error_names_its_items_and_file_and_advises_no_rerun():
    records = [
        {"id": "line-1", "status": "error", "error": EMPTY},
        {"id": "a-ü", "status": "ok"},
        {"id": "q7", "status": "error", "error": EMPTY},
    ]
    said = stage_run(records).failure_text("answers.jsonl")
    assert said == (
        f"2 of 3 check records are errors (commonest: 2 x {EMPTY} (line 1, item 'q7' of answers.jsonl)); "
        "the 2 input errors repeat on a rerun: mend those items in the input first"
    )
    assert "rerun the same command to retry" not in said


def test_errors_a_rerun_may_mend_still_advise_it_and_count_apart():
    records = [{"id": f"a{i}", "status": "error", "error": "network: the endpoint timed out"} for i in range(3)]
    records.append({"id": "line-9", "status": "error", "error": EMPTY})
    said = stage_run(records).failure_text()
    assert "3 x network: the endpoint timed out;" in said and "(line 9)" in said
    assert "rerun the same command to retry the 3 others" in said
    assert said.endswith("the 1 input error repeats on a rerun: mend that item in the input first")
    only_network = stage_run(records[:3]).failure_text()
    assert only_network.endswith(
        "(commonest: 3 x network: the endpoint timed out); rerun the same command to retry them"
    )


def test_check_on_a_ragas_sample_without_reference_names_file_and_line(tmp_path, capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "ragas.jsonl"
    rows = [
        {"user_input": "What does json.dumps do?", "response": "It serialises obj.", "reference": "Serialize obj."},
        {"user_input": "What does textwrap.fill do?", "response": "Wraps text."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    code = main(["check", str(path), "-o", str(tmp_path / "checks.jsonl")])
    out = capsys.readouterr()
    said = out.out + out.err
    assert code == 1
    assert f"the response against (line 2 of {path})" in said, said
    assert "mend that item in the input first" in said
    assert "1 answer needs an LLM verdict" in said and "1 error (excluded from rates)" in said


def test_the_sentence_before_pool_bias_ends_even_when_the_pilot_cannot_size(tmp_path, capsys):
    """Two runs equal query by query (each finds its own relevant chunk at the same rank): the sizing
    note ends "differ query by query", and Pool bias follows it as a new sentence."""
    qrels, a, b = [], [], []
    for i in range(6):
        q = f"q{i}-ü"
        qrels += [f"{q} 0 a{i} 2", f"{q} 0 b{i} 2", f"{q} 0 x{i} 0"]
        a += [f"{q} Q0 a{i} 1 2.0 a", f"{q} Q0 x{i} 2 1.0 a"]
        b += [f"{q} Q0 b{i} 1 2.0 b", f"{q} Q0 x{i} 2 1.0 b"]
    for name, lines in (("qrels.txt", qrels), ("a.txt", a), ("b.txt", b)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    code = main(
        [
            "report",
            "--qrels",
            str(tmp_path / "qrels.txt"),
            "--run",
            str(tmp_path / "a.txt"),
            "--run",
            str(tmp_path / "b.txt"),
            "-o",
            str(tmp_path / "report.md"),
            "--format",
            "markdown",
        ]
    )
    assert code == 0, capsys.readouterr().err
    report = (tmp_path / "report.md").read_text()
    assert "Pool bias:" in report
    assert "query by query. Pool bias" in report or not re.search(r"[^.!?\s]\s*Pool bias", report), report[
        report.index("Pool bias") - 120 :
    ][:160]
