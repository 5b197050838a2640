"""The registry of every record and result kind: each is a model that refuses unknown fields, names
its kind and version, and survives a round trip; record files are read by the kind their lines name."""

from __future__ import annotations

import json

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE
from ragassay.cli import main
from ragassay.data.record_files import read_record_file
from ragassay.data.records import RECORDS, Check, Coverage, Judgment, Question, Reject
from ragassay.data.result_models import RESULTS
from ragassay.data.results import read_result
from ragassay.data.writers import write_jsonl
from ragassay.errors import InputError

# one record of every kind, with the fields a stage writes for it
RECORD_EXAMPLES = {
    "question": {
        "id": "q-1",
        "question": "How long do refunds take?",
        "answer": "5 days",
        "difficulty": "easy",
        "kind": "factoid",
        "chunk_ids": ["refund-01"],
        "grades": {"refund-01": 3},
        "style": "question",
        "evidence": ["within 5 days"],
        "checks": {"bm25_rank": {"refund-01": 2}},
        "model": "m",
        "prompt": "generate_question@abc",
    },
    "reject": {
        "chunk_ids": ["c1"],
        "difficulty": "hard",
        "question": "Q?",
        "answer": "A",
        "style": "question",
        "kind": "factoid",
        "reason": "hard question of no multi-hop type",
        "scores": {},
    },
    "judgment": {
        "query_id": "q1",
        "chunk_id": "c1",
        "key": "k1",
        "grade": 2,
        "reasoning": "intent: x",
        "status": "ok",
        "error": None,
        "model": "m",
        "prompt": "judge_relevance@1",
        "samples": [2, 2, 1],
        "decided_by": "llm",
        "truncated": False,
        "seeds": [0, 1, 2],
        "temperature": 0.7,
        "juror_grades": {"m": 2, "n": 2},
        "batch_position": 0,
        "batch_size": 4,
    },
    "coverage": {
        "query_id": "q1",
        "run": "bm25",
        "chunk_ids": ["c1"],
        "key": "k2",
        "coverage": "PARTIAL",
        "nuggets": [{"text": "5 days", "vital": True, "support": "partial_support", "chunk_ids": ["c1"]}],
        "status": "ok",
        "error": None,
        "model": "m",
        "prompt": "coverage_nuggets@1",
        "question_key": "qk",
        "nuggets_reused": False,
        "scores": {"vital_strict": 0.0, "vital_partial": 0.5, "all_strict": 0.0, "all_partial": 0.5},
    },
    "check": {
        "id": "a1",
        "key": "k3",
        "label": "hallucinated",
        "grounded": "contradicted",
        "unsupported_claims": ["10 days"],
        "rationale": "r",
        "decided_by": "llm",
        "status": "ok",
        "error": None,
        "model": "m",
        "prompt": "check_answer@1",
        "response_words": 4,
        "truncated": {"context_chars_cut": 120, "contexts_dropped": ["c9"]},
        "samples": ["hallucinated"],
        "fault": "generation",
        "context_has_answer": True,
    },
    "candidate": {
        "key": "k4",
        "status": "error",
        "error": "transport: connection refused",
        "question": None,
        "reject": {
            "record": "reject@1",
            "chunk_ids": ["c1"],
            "difficulty": "easy",
            "question": None,
            "answer": None,
            "style": "question",
            "kind": None,
            "reason": "the question call failed",
            "scores": {},
        },
    },
}

RESULT_EXAMPLES = {
    "evaluate": {"run": "bm25", "aggregate": {"ndcg@10": 0.5}, "counts": {"queries": 2}, "settings": {}},
    "compare": {"baseline": "a", "queries": 2, "means": {"a": {"map": 0.5}}, "tests": [], "settings": {}},
    "agree": {
        "pairs": 2,
        "only_reference": 0,
        "only_candidate": 0,
        "labels": [0, 1],
        "confusion": [[1, 0], [0, 1]],
        "reference_distribution": {0: 1, 1: 1},
        "candidate_distribution": {0: 1, 1: 1},
        "exact_agreement": 1.0,
        "kappa": 1.0,
        "kappa_linear": 1.0,
        "kappa_quadratic": 1.0,
        "kappa_binary": {">=1": 1.0},
        "krippendorff_alpha_ordinal": 1.0,
        "names": ["people", "LLM judge"],
    },
    "judge": {
        "pairs": 3,
        "kept": 0,
        "judged": 3,
        "errors": 0,
        "already_done": 0,
        "decided_by_rule": 1,
        "grades": {"0": 1, "1": 0, "2": 1, "3": 1},
        "usage": {"m": {"calls": 2}},
        "usage_text": "2 calls",
    },
    "check": {"items": 1, "ok": 1, "errors": 0, "summary": {"graded": 1}, "human": {"n": 1}},
    "generate": {
        "accepted": 1,
        "target": {"easy": 1},
        "delivered": {"easy": 1},
        "shortfall": {},
        "rejected": 0,
        "relabelled": 0,
        "kinds": {"factoid": 1},
        "styles": {"question": 1},
        "reject_reasons": {},
        "unfit_chunks": 0,
        "stopped": None,
    },
    "calibration": {
        "task": "pairs",
        "assessor": "ann",
        "output": "l.jsonl",
        "sample": {},
        "progress": {},
        "model_agreement": {"n": 0},
        "people_agreement": {},
        "target_width": 0.1,
        "binary": "grade >= 2",
    },
    "estimate": {
        "calls": 136,
        "input_tokens": 1000,
        "output_tokens": 200,
        "cost_usd": None,
        "output_tokens_expected": 0,
        "expected_unknown": 136,
        "cost_usd_low": None,
        "items": 30,
        "done": 0,
        "cached": 0,
        "shared": 0,
        "decided_without_call": 0,
        "tokenizer": "o200k",
        "models": ["m"],
        "note": "",
    },
    "retrieve": {
        "run": "bm25",
        "queries": 2,
        "results": 20,
        "output": "r.txt",
        "latency_ms": {"p50": 1.0},
        "latency_file": "l.tsv",
    },
    "ping": {"endpoint": "http://x/v1", "model": "m", "status": "error", "error": "refused"},
    "remap": {"questions": 1, "placed": 1, "how": {"exact": 1}, "unplaced": {}, "no_evidence": [], "output": "q"},
    "demo": {"skipped": ["generate"], "failed": [], "report": "r.html"},
    "report": {"output": "r.html", "format": "html", "bytes": 10},
    "merge": {"files": 2, "records": 3, "duplicates": 0, "replaced_errors": 0, "conflicts": [], "output": "m"},
    "track": {"id": 1, "result_kind": "evaluate", "metrics": {"map": 0.5}, "label": None, "db": "h.sqlite"},
    "history": {
        "metric": None,
        "results": [
            {
                "id": 1,
                "created": 1.0,
                "label": None,
                "commit": None,
                "kind": "evaluate",
                "source": "r.json",
                "metrics": {"map": 0.5},
            }
        ],
    },
    "gate": {"passed": False, "failures": ["map = 0.5 is below the minimum 0.6"], "result_kind": "evaluate"},
}


def test_the_registry_lists_every_kind():
    assert sorted(RECORDS) == ["candidate", "check", "coverage", "judgment", "question", "reject"]
    assert sorted(RESULTS) == [
        "agree",
        "calibration",
        "check",
        "compare",
        "demo",
        "estimate",
        "evaluate",
        "gate",
        "generate",
        "history",
        "judge",
        "merge",
        "ping",
        "remap",
        "report",
        "retrieve",
        "track",
    ]
    assert set(RECORD_EXAMPLES) == set(RECORDS) and set(RESULT_EXAMPLES) == set(RESULTS)  # an example for each


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_a_record_of_each_kind_round_trips_and_names_its_kind(kind):
    model = RECORDS[kind]
    line = json.loads(json.dumps(model.model_validate(RECORD_EXAMPLES[kind]).model_dump(mode="json")))
    assert next(iter(line)) == "record" and line["record"] == f"{kind}@1"  # first on the line
    assert {k: v for k, v in line.items() if k != "record"} == RECORD_EXAMPLES[kind]
    assert model.model_validate(line).model_dump(mode="json") == line
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        model.model_validate({**RECORD_EXAMPLES[kind], "undeclared": 1})
    with pytest.raises(ValueError, match="written by a newer ragassay"):
        model.model_validate({**RECORD_EXAMPLES[kind], "record": f"{kind}@2"})


@pytest.mark.parametrize("kind", sorted(RESULTS))
def test_a_result_of_each_kind_round_trips_with_kind_and_version(kind, tmp_path):
    model = RESULTS[kind]
    data = model(**RESULT_EXAMPLES[kind]).to_dict()
    assert list(data)[:2] == ["kind", "version"] and data["kind"] == kind and data["version"] == 1
    assert json.loads(json.dumps(model.model_validate(json.loads(json.dumps(data))).to_dict())) == json.loads(
        json.dumps(data)
    )
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        model.model_validate({**data, "undeclared": 1})


def test_a_record_leaves_off_the_fields_that_do_not_apply_and_a_reject_has_one_shape():
    """A pointwise single-sample judgment has no jury, batch or window fields; an error has no
    truncation. A reject has every field whatever its cause (null where the cause does not know it)."""
    j = Judgment(
        query_id="q", chunk_id="c", key="k", grade=1, reasoning="r", samples=[1], decided_by="llm", truncated=False
    )
    assert set(j.model_dump()) == {
        "record",
        "query_id",
        "chunk_id",
        "key",
        "grade",
        "reasoning",
        "status",
        "error",
        "model",
        "prompt",
        "samples",
        "decided_by",
        "truncated",
    }
    unfit = Reject(chunk_ids=["c"], reason="chunk unfit: empty").model_dump()
    assert unfit == {
        "record": "reject@1",
        "chunk_ids": ["c"],
        "difficulty": None,
        "question": None,
        "answer": None,
        "style": None,
        "kind": None,
        "reason": "chunk unfit: empty",
        "scores": {},
    }


def test_read_result_refuses_a_field_no_command_writes(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"kind": "evaluate", "version": 1, "aggregate": {"map": 0.5}, "agregate": {}}))
    with pytest.raises(InputError, match="agregate: Extra inputs are not permitted"):
        read_result(path)
    path.write_text(json.dumps({"kind": "evaluate", "version": 1, "aggregate": {"map": 0.5}}))
    assert read_result(path).aggregate == {"map": 0.5}


# ------------------------------------------------------------------------------- record files


def test_a_record_file_is_read_by_the_kind_its_lines_name(tmp_path):
    path = tmp_path / "r.jsonl"
    write_jsonl(path, [Reject(chunk_ids=["c1"], reason="too short")])
    assert json.loads(path.read_text())["record"] == "reject@1"
    kind, records = read_record_file(path)
    assert kind == "reject" and records == [Reject(chunk_ids=["c1"], reason="too short")]
    with pytest.raises(InputError, match="this reads judgment records"):
        read_record_file(path, kinds=("judgment",))


def test_one_kind_per_record_file(tmp_path):
    path = tmp_path / "mixed.jsonl"
    write_jsonl(
        path, [Judgment.model_validate(RECORD_EXAMPLES["judgment"]), Check.model_validate(RECORD_EXAMPLES["check"])]
    )
    with pytest.raises(InputError, match=r"mixed.jsonl:2: a check record in a file of judgment records \(line 1\)"):
        read_record_file(path)


def test_a_file_written_before_records_named_their_kind_is_still_read(tmp_path):
    """Lines without ``record`` are read as the kind their fields make them; the question's own
    ``kind`` is never taken for the file's."""
    path = tmp_path / "old.jsonl"
    old = {k: v for k, v in RECORD_EXAMPLES["question"].items()}
    path.write_text(json.dumps(old) + "\n")
    kind, records = read_record_file(path)
    assert kind == "question" and records[0].kind == "factoid" and records[0].record == "question@1"
    path.write_text(
        json.dumps({"query_id": "q", "coverage": "FULL", "status": "ok", "nuggets": []})
        + "\n"
        + json.dumps({"query_id": "r", "coverage": None, "status": "error", "error": "timeout"})
        + "\n"
    )
    kind, records = read_record_file(path)
    assert kind == "coverage" and [r.coverage for r in records] == ["FULL", None]
    assert isinstance(records[1], Coverage) and records[1].error == "timeout"


def test_an_unknown_record_kind_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"record": "verdict@1", "id": "a"}) + "\n")
    with pytest.raises(InputError, match=r"r.jsonl:1: 'record' is 'verdict@1', not a kind of record ragassay writes"):
        read_record_file(path)


def test_report_reads_one_record_questions_and_rejects_files(tmp_path, capsys):
    """A questions file and a rejects file of one record each, as generate writes them."""
    questions, rejects = tmp_path / "questions.jsonl", tmp_path / "rejects.jsonl"
    write_jsonl(questions, [Question.model_validate(RECORD_EXAMPLES["question"])])
    write_jsonl(rejects, [Reject.model_validate(RECORD_EXAMPLES["reject"])])
    out = tmp_path / "r.md"
    assert main(["report", str(questions), str(rejects), "-o", str(out)]) == 0
    text = out.read_text()
    assert "1 questions accepted, 1 candidates rejected." in text
    assert "| hard question of no multi-hop type | 1 |" in text and "| factoid | 1 |" in text
    # a rejects file alone has nothing to show: said as such, not "not a ragassay result"
    assert main(["report", str(rejects), "-o", str(tmp_path / "r2.md")]) == 1
    assert "nothing to report" in capsys.readouterr().err


def test_stage_outputs_carry_their_kind_on_every_line(tmp_path, monkeypatch):
    """judge with samples and batches, its coverage, and check: every field they write is declared
    (a record outside its model would be an error record) and every line names its kind."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    judged, cov, checks = tmp_path / "j.jsonl", tmp_path / "cov.jsonl", tmp_path / "c.jsonl"
    with FakeLLM() as server:
        llm = ["--model", "m", "--base-url", server.url, "--no-cache", "--quiet"]
        assert (
            main(
                [
                    "judge",
                    "--queries",
                    str(EXAMPLE / "queries.jsonl"),
                    "--chunks",
                    str(EXAMPLE / "chunks.jsonl"),
                    "--run",
                    str(EXAMPLE / "runs" / "bm25.txt"),
                    "--depth",
                    "3",
                    "--samples",
                    "3",
                    "--batch",
                    "3",
                    "-o",
                    str(judged),
                    "--coverage-out",
                    str(cov),
                    *llm,
                ]
            )
            == 0
        )
        assert main(
            [
                "check",
                str(EXAMPLE / "answers.jsonl"),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                str(checks),
                *llm,
            ]
        ) in (0, 3)
    for path, kind in ((judged, "judgment"), (cov, "coverage"), (checks, "check")):
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        assert lines and all(line["record"] == f"{kind}@1" for line in lines)
        assert read_record_file(path)[0] == kind
    judgments = read_record_file(judged)[1]
    assert all(j.status == "ok" for j in judgments)
    assert any(j.batch_size == 3 for j in judgments) and all(len(j.seeds or []) in (0, 3) for j in judgments)
    assert all(c.status == "ok" for c in read_record_file(cov)[1])


async def test_a_record_its_model_refuses_becomes_an_error_record_that_says_why(tmp_path):
    from ragassay.runtime.engine import OutputStore, Stage, WorkItem, run_stage

    class Stray(Stage):
        name = "stray"
        record_model = Judgment

        def identity(self, record: dict) -> str:
            return record["chunk_id"]

        async def finish(self, item, answers, llms):
            if item.key == "k-model":  # built as a model: refused where it is built
                return [Judgment(query_id="q", chunk_id="c1", key=item.key, grade=None, status="ok")]
            return [{"query_id": "q", "chunk_id": "c2", "key": item.key, "grade": 2, "status": "ok", "mood": "sure"}]

        def error_records(self, item, error):
            return [
                Judgment(
                    query_id="q",
                    chunk_id="c1" if item.key == "k-model" else "c2",
                    key=item.key,
                    status="error",
                    error=error.reason,
                )
            ]

    out = tmp_path / "j.jsonl"
    run = await run_stage(
        Stray(), [WorkItem("k-model", []), WorkItem("k-dict", [])], [], OutputStore(out, Stray().identity), quiet=True
    )
    assert (run.ok, run.errors) == (0, 2)
    errors = {r["key"]: r["error"] for r in run.records}
    assert errors == {
        "k-model": "invalid: the answers made a record outside the data contract: Value error, status 'ok' "
        "needs a grade",
        "k-dict": "invalid: the answers made a record outside the data contract: Extra inputs are not permitted",
    }
    assert [json.loads(x)["record"] for x in out.read_text().splitlines()] == ["judgment@1", "judgment@1"]


def test_label_events_are_written_with_the_fields_each_act_has():
    from ragassay.data.records import LabelEvent, LabelEventsHeader

    header = LabelEventsHeader(task="pairs", sample={"n": 2}, keys=["q\tc"]).model_dump()
    assert header == {"kind": "label_events", "version": 1, "task": "pairs", "sample": {"n": 2}, "keys": ["q\tc"]}
    skip = LabelEvent(event="skip", key="a1", reason="German", assessor="ann", time="t", id="a1")
    assert skip.model_dump(exclude_unset=True) == {
        "event": "skip",
        "key": "a1",
        "reason": "German",
        "assessor": "ann",
        "time": "t",
        "id": "a1",
    }
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        LabelEvent.model_validate(
            {"event": "label", "key": "a1", "value": 2, "assessor": "ann", "time": "t", "mood": 1}
        )


def test_an_edited_label_event_is_refused_with_file_and_line(tmp_path):
    from ragassay.product.labeling import LabelBook, LabelItem

    items = [LabelItem("a1", {"id": "a1"}, None, "all", "q")]
    events = tmp_path / "l.jsonl.events.jsonl"
    events.write_text(
        json.dumps({"kind": "label_events", "version": 1, "task": "answers", "sample": {}, "keys": ["a1"]})
        + "\n"
        + json.dumps({"event": "label", "key": "a1", "value": "correct", "time": "t"})
        + "\n"
        + json.dumps({"event": "undo", "key": "a1", "assessor": "ann", "time": "t"})
        + "\n"
    )
    with pytest.raises(InputError, match=r"events.jsonl:2: not a label event \(assessor: Field required\)"):
        LabelBook("answers", items, tmp_path / "l.jsonl", "ann", {})


def test_a_field_of_the_users_own_in_a_written_record_is_refused_with_file_line_and_what_to_do(tmp_path, capsys):
    """Records are read back exactly as written: an added field (a reviewer's note) is one clear
    error naming the file, the line and the field, on every reader (report, remap)."""
    question = Question.model_validate(RECORD_EXAMPLES["question"]).model_dump(mode="json")
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps(question) + "\n" + json.dumps({**question, "id": "q-2", "reviewed_by": "ana"}) + "\n")
    assert main(["report", str(path), "-o", str(tmp_path / "r.md")]) == 1
    err = capsys.readouterr().err.strip()
    assert f"{path}:2:" in err and "reviewed_by: not a field ragassay writes" in err and "another file" in err
    assert main(["remap", str(path), str(EXAMPLE / "chunks.jsonl"), "-o", str(tmp_path / "n.qrels")]) == 1
    err = capsys.readouterr().err.strip()
    assert f"{path}:2:" in err and "reviewed_by: not a field ragassay writes" in err and err.count("\n") == 0
