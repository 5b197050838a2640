"""check on questions the corpus cannot answer as asked: an abstention on an unanswerable question is
correct and an answer to it hallucinated; a false premise accepted is wrong even when the rest is
right; the behaviour rates (answered when unanswerable, over-refusal, premise corrected, the
answerable rest) exact on hand-built cases, in the result, the text, the report and the gate."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from fake_llm import chat_reply, make_llm
from ragassay.cli import main
from ragassay.data.records import AnswerItem, Check
from ragassay.stages.check import CheckOptions, check_answers
from ragassay.stages.check_behaviour import behaviour_of
from ragassay.stages.check_summary import summarise_checks

BASE = "http://check.test/v1"
URL = f"{BASE}/chat/completions"
NOT_SAID = "The documents do not say what delivery to Antarctica costs."


def full(label: str, has_answer: bool | None = None) -> dict:
    return {
        "reference_facts": "f",
        "response_claims": "c",
        "comparison": "x",
        "label": label,
        "grounded": "supported" if has_answer is not None else None,
        "context_has_answer": has_answer,
        "unsupported_claims": [],
    }


def item(
    i: str,
    reference: str,
    response: str,
    answerable: bool | None = None,
    premise: str | None = None,
    contexts: list[str] | None = None,
) -> AnswerItem:
    return AnswerItem(
        id=i,
        question=f"question {i}?",
        reference=reference,
        response=response,
        answerable=answerable,
        premise=premise,
        contexts=contexts,
    )


def replies(by_id: dict[str, dict], seen: list[dict]):
    """Each request answered by the verdict given for its question (the question names the item)."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        user = body["messages"][-1]["content"]
        qid = next(k for k in by_id if f"question {k}?" in user)
        return chat_reply(by_id[qid])

    return handler


@pytest.mark.parametrize(
    ("expected", "graded", "corrected", "final", "did"),
    [
        ("abstain", "abstained", None, "correct", "abstained"),
        ("abstain", "correct", None, "correct", "abstained"),  # agrees with a reference that says it is not there
        ("abstain", "partial", None, "hallucinated", "answered"),
        ("abstain", "hallucinated", None, "hallucinated", "answered"),
        ("correct_premise", "correct", True, "correct", "corrected_premise"),
        ("correct_premise", "partial", True, "partial", "corrected_premise"),
        ("correct_premise", "correct", False, "hallucinated", "accepted_premise"),  # right otherwise: still wrong
        ("correct_premise", "partial", False, "hallucinated", "accepted_premise"),
        ("correct_premise", "abstained", False, "abstained", "abstained"),
        ("answer", "partial", None, "partial", None),
    ],
)
def test_the_behaviour_rule(expected, graded, corrected, final, did):
    assert behaviour_of(expected, graded, corrected) == (final, did)


@respx.mock
async def test_unanswerable_and_false_premise_answers_graded_by_behaviour(tmp_path):
    seen: list[dict] = []
    verdicts = {
        "u1": {"answer_given": "", "declined": True},  # "I could not find that": the right answer
        "u2": {"answer_given": "It costs 90 euros.", "declined": False},  # a confident price
        # a look-alike abstention that still names a price: the grader says it answered
        "u3": {"answer_given": "probably around 90 euros", "declined": False},
        # the grader decides, whatever it copied (a small model copies an abstention whole)
        "u5": {"answer_given": "The sources do not cover Sunday deliveries.", "declined": True},
        "p1": {"response_fact": "30 days, not 60", "premise_corrected": True, "label": "correct"},
        "p2": {"response_fact": "sale items get 60 days", "premise_corrected": False, "label": "correct"},
        "a1": full("abstained", has_answer=True),  # over-refusal: the context held the answer
        "a2": full("correct", has_answer=True),
    }
    respx.post(URL).mock(side_effect=replies(verdicts, seen))
    premise = "The return window is 60 days."
    fix = "It is 30 days, not 60."
    items = [
        item("u1", NOT_SAID, "I could not find that in the documents.", answerable=False),
        item("u2", NOT_SAID, "It costs 90 euros.", answerable=False),
        item("u3", NOT_SAID, "I am not sure, but probably around 90 euros.", answerable=False),
        item("u4", NOT_SAID, "   ", answerable=False),  # says nothing: a rule, no call
        item("u5", NOT_SAID, "The sources do not cover Sunday deliveries.", answerable=False),
        item("p1", fix, "Returns are accepted for 30 days, not 60.", answerable=False, premise=premise),
        item("p2", fix, "Because sale items get 60 days.", answerable=False, premise=premise),
        item("p3", fix, fix, answerable=False, premise=premise),  # the reference as written: a rule
        item("a1", "30 days", "I do not know.", contexts=["Returns within 30 days."]),
        item("a2", "30 days", "Thirty days.", contexts=["Returns within 30 days."]),
    ]
    run = await check_answers(
        items,
        make_llm(tmp_path, BASE, "grader", use_cache=False),
        tmp_path / "c.jsonl",
        options=CheckOptions(quiet=True),
    )
    recs = {r["id"]: r for r in run.records}
    for r in recs.values():
        Check.model_validate(r)
    got = {k: (r["label"], r.get("behaviour"), r.get("graded_label"), r["decided_by"]) for k, r in recs.items()}
    assert got == {
        "u1": ("correct", "abstained", None, "llm"),
        "u2": ("hallucinated", "answered", None, "llm"),
        "u3": ("hallucinated", "answered", None, "llm"),
        "u4": ("correct", "abstained", "abstained", "rule"),
        "u5": ("correct", "abstained", None, "llm"),
        "p1": ("correct", "corrected_premise", "correct", "llm"),
        "p2": ("hallucinated", "accepted_premise", "correct", "llm"),
        "p3": ("correct", "corrected_premise", "correct", "rule"),
        "a1": ("abstained", None, None, "llm"),
        "a2": ("correct", None, None, "llm"),
    }
    assert "expected" not in recs["a1"] and recs["u1"]["expected"] == "abstain"
    assert recs["p1"]["expected"] == "correct_premise" and recs["p1"]["prompt"].startswith("check_premise@")
    # the exact request of a false premise: its own schema, the premise beside the question, no passages
    [p2] = [b for b in seen if "question p2?" in b["messages"][-1]["content"]]
    assert p2["response_format"]["json_schema"]["name"] == "PremiseAnswerVerdict"
    user = p2["messages"][-1]["content"]
    assert f"<<<PREMISE\n{premise}\nPREMISE>>>" in user and f"<<<REFERENCE\n{fix}\nREFERENCE>>>" in user
    assert "PASSAGE" not in user
    [u3] = [b for b in seen if "question u3?" in b["messages"][-1]["content"]]
    assert u3["response_format"]["json_schema"]["name"] == "AbstentionVerdict"
    assert u3["messages"][-1]["content"] == (
        "<<<QUESTION\nquestion u3?\nQUESTION>>>\n\n<<<RESPONSE\n"
        "I am not sure, but probably around 90 euros.\nRESPONSE>>>"
    )
    assert recs["u1"]["prompt"].startswith("check_abstention@")
    assert len(seen) == 8  # u4 and p3 were decided by rule
    # the rates, each of what it rests on
    b = summarise_checks(run.records)["behaviour"]
    assert b["questions"] == {"unanswerable": 5, "false_premise": 3, "answerable": 2}
    assert (b["answered_when_unanswerable"]["value"], b["answered_when_unanswerable"]["n"]) == (0.4, 5)
    assert (b["premise_corrected"]["value"], b["premise_corrected"]["n"]) == (pytest.approx(2 / 3), 3)
    assert (b["over_refusal"]["value"], b["over_refusal"]["n"]) == (0.5, 2)
    assert b["answerable"]["counts"] == {"correct": 1, "partial": 0, "hallucinated": 0, "abstained": 1}


def test_a_set_of_answerable_questions_has_no_behaviour_section():
    records = [{"id": "a", "status": "ok", "label": "correct"}, {"id": "b", "status": "ok", "label": "abstained"}]
    assert "behaviour" not in summarise_checks(records)


def test_the_command_the_gate_and_the_report(tmp_path, capsys):
    """Records as check writes them, summarised by report and gated by gate on the behaviour rates."""
    records = [
        {
            "record": "check@1",
            "id": f"u{i}",
            "label": lab,
            "status": "ok",
            "expected": "abstain",
            "behaviour": did,
            "graded_label": lab,
            "decided_by": "llm",
        }
        for i, (lab, did) in enumerate([("correct", "abstained")] * 9 + [("hallucinated", "answered")])
    ]
    records += [{"record": "check@1", "id": "a1", "label": "correct", "status": "ok", "decided_by": "llm"}]
    checks = tmp_path / "checks.jsonl"
    checks.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "r.md"
    assert main(["report", str(checks), "-o", str(out), "--format", "json"]) == 0
    capsys.readouterr()
    page = out.read_text()
    assert "Answers: behaviour" in page and "answered when unanswerable" in page and "from 10" in page
    result = tmp_path / "check.json"
    result.write_text(json.dumps(summarise_checks(records)))
    assert main(["gate", str(result), "--max", "answered_when_unanswerable=0.05"]) == 1
    assert "answered_when_unanswerable = 0.1000 is above the maximum 0.05" in capsys.readouterr().err
    assert main(["gate", str(result), "--max", "answered_when_unanswerable=0.2"]) == 0


def test_check_through_the_local_server_on_a_generated_style_answers_file(tmp_path, capsys, monkeypatch):
    from fake_llm import FakeLLM

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    answers = tmp_path / "answers.jsonl"
    rows = [
        {
            "id": "u1",
            "question": "What does delivery cost in Antarctica?",
            "reference": NOT_SAID,
            "response": "I don't know.",
            "answerable": False,
        },
        {
            "id": "p1",
            "question": "Why is the return window 60 days?",
            "reference": "It is 30 days, not 60.",
            "response": "The window is 60 days because of the holidays.",
            "answerable": False,
            "premise": "The return window is 60 days.",
        },
        {
            "id": "a1",
            "question": "How long is the return window?",
            "reference": "30 days",
            "response": "You have 30 days.",
        },
    ]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeLLM() as server:
        code = main(
            [
                "check",
                str(answers),
                "-o",
                str(tmp_path / "c.jsonl"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--no-cache",
                "--quiet",
                "--format",
                "json",
            ]
        )
    got = json.loads(capsys.readouterr().out)
    recs = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()}
    assert code == 0
    assert (recs["u1"]["label"], recs["u1"]["behaviour"]) == ("correct", "abstained")
    assert (recs["p1"]["label"], recs["p1"]["behaviour"]) == ("hallucinated", "accepted_premise")
    assert got["behaviour"]["answered_when_unanswerable"]["value"] == 0.0
    assert got["behaviour"]["premise_corrected"]["value"] == 0.0


def test_the_test_set_gives_each_answer_what_it_expects_by_id_counted(tmp_path, capsys, monkeypatch):
    from fake_llm import FakeLLM

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    test_set = tmp_path / "set.jsonl"
    test_set.write_text(
        "".join(
            json.dumps(q) + "\n"
            for q in [
                {
                    "id": "u1",
                    "question": "What does delivery cost in Antarctica?",
                    "answer": NOT_SAID,
                    "difficulty": "unanswerable",
                    "answerable": False,
                },
                {"id": "a1", "question": "How long is the return window?", "answer": "30 days", "difficulty": "easy"},
                {"id": "x9", "question": "Not answered by the system", "answer": "-", "difficulty": "easy"},
            ]
        )
    )
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {
                    "id": "u1",
                    "question": "What does delivery cost in Antarctica?",
                    "reference": NOT_SAID,
                    "response": "I don't know.",
                },
                {
                    "id": "a1",
                    "question": "How long is the return window?",
                    "reference": "30 days",
                    "response": "30 days",
                },
            ]
        )
    )
    argv = [
        "check",
        str(answers),
        "--test-set",
        str(test_set),
        "-o",
        str(tmp_path / "c.jsonl"),
        "--model",
        "fake",
        "--no-cache",
        "--quiet",
        "--format",
        "json",
    ]
    with FakeLLM() as server:
        assert main([*argv, "--base-url", server.url]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["behaviour"]["questions"] == {"unanswerable": 1, "false_premise": 0, "answerable": 1}
    assert got["behaviour"]["join"]["left"] == {"role": "the answers", "file": str(answers), "ids": 2, "matched": 2}
    assert got["behaviour"]["join"]["right"]["ids"] == 3
    recs = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()}
    assert (recs["u1"]["label"], recs["u1"]["expected"]) == ("correct", "abstain") and "expected" not in recs["a1"]
    # a set whose ids meet none of the answers': an error naming both files
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "q-1", "answerable": False}) + "\n")
    assert main(["check", str(answers), "--test-set", str(other), "-o", str(tmp_path / "d.jsonl"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "other.jsonl" in err and "answers.jsonl" in err and "no question ids in common" in err
    # an answer that says answerable where its question says not: refused, not guessed
    answers.write_text(
        json.dumps({"id": "u1", "question": "q?", "reference": NOT_SAID, "response": "x", "answerable": True}) + "\n"
    )
    assert main(["check", str(answers), "--test-set", str(test_set), "-o", str(tmp_path / "e.jsonl"), "--quiet"]) == 1
    assert "says answerable True, its question in" in capsys.readouterr().err


@respx.mock
async def test_an_error_on_an_unanswerable_question_is_counted_with_its_kind(tmp_path):
    respx.post(URL).mock(return_value=httpx.Response(400, json={"error": {"message": "bad request"}}))
    items = [item("u1", NOT_SAID, "It costs 90 euros.", answerable=False), item("a1", "30 days", "Thirty days.")]
    run = await check_answers(
        items,
        make_llm(tmp_path, BASE, "grader", use_cache=False),
        tmp_path / "c.jsonl",
        options=CheckOptions(quiet=True),
    )
    recs = {r["id"]: r for r in run.records}
    assert recs["u1"]["status"] == "error" and recs["u1"]["expected"] == "abstain" and "expected" not in recs["a1"]
    b = summarise_checks(run.records)["behaviour"]
    assert b["questions"] == {"unanswerable": 1, "false_premise": 0, "answerable": 1}
    assert b["answered_when_unanswerable"]["n"] == 0 and b["answerable"]["errors"] == 1
