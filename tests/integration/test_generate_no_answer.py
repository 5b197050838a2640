"""generate's unanswerable and false-premise questions: delivered in the share asked, each verified
against the corpus (a question a chunk answers is refused as unanswerable; a premise no chunk
contradicts, or one a chunk states, is refused as a false premise), their records, qrels, exports,
dry run and rerun; the requests sent checked exactly with respx, whole runs with the local server."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx

from fake_llm import FakeLLM, chat_reply
from helpers import nonempty
from ragassay.cli import main
from ragassay.stages.generate.no_answer import SEARCH_DEPTH, searched
from ragassay.stages.generate_checks import BM25

BASE = "http://gen.test/v1"
FILLER = "Customers can read this page any time for more about how the shop works day to day."


def chunk(cid: str, text: str, doc: str) -> dict:
    return {"id": cid, "doc_id": doc, "text": f"{text} {FILLER}"}


CHUNKS = [
    chunk("ret-1", "You can return unused items within 30 days of delivery for a full refund.", "returns"),
    chunk("ship-1", "Standard delivery takes 4 business days and express delivery takes 1 day.", "shipping"),
    chunk("gift-1", "Gift cards are sold online and in our stores and never lose their value.", "gifts"),
    chunk("club-1", "Members of the walking club get early access to the spring collection.", "club"),
]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def generate(tmp_path: Path, url: str, chunks: list[dict], mix: str, limit: int, *extra: str) -> list[str]:
    source = write(tmp_path / "chunks.jsonl", chunks)
    out = tmp_path / "q.jsonl"
    return [
        "generate",
        str(source),
        "-o",
        str(out),
        "--limit",
        str(limit),
        "--mix",
        mix,
        "--qrels-out",
        str(tmp_path / "q.qrels"),
        "--rejects",
        str(tmp_path / "rejects.jsonl"),
        "--base-url",
        url,
        "--model",
        "fake",
        "--no-cache",
        "--quiet",
        *extra,
    ]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    for name in ("OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_the_share_asked_is_delivered_verified_and_carried_into_qrels(tmp_path, capsys):
    with FakeLLM() as server:
        assert main(generate(tmp_path, server.url, CHUNKS, "easy=0.5,unanswerable=0.25,false_premise=0.25", 4)) == 0
    qs = {q["difficulty"]: q for q in lines(tmp_path / "q.jsonl")}
    assert sorted(q["difficulty"] for q in lines(tmp_path / "q.jsonl")) == [
        "easy",
        "easy",
        "false_premise",
        "unanswerable",
    ]
    un, fp = qs["unanswerable"], qs["false_premise"]
    assert (un["answerable"], un["kind"], un["chunk_ids"], un["grades"]) == (False, "unanswerable", [], {})
    assert "premise" not in un and "answerable" not in qs["easy"]  # an answerable question's line is unchanged
    bm25 = BM25([c["id"] for c in CHUNKS], [c["text"] for c in CHUNKS])
    seed = un["checks"]["searched"]["chunk_ids"][0]
    assert un["checks"]["searched"] == {
        "ranker": "bm25",
        "depth": SEARCH_DEPTH,
        "query": "question",
        "chunk_ids": searched(bm25, un["question"], SEARCH_DEPTH, first=seed),
    }
    assert un["checks"]["answered_by_search"] is False
    # the false premise: its gold is the chunk that corrects it, its evidence that chunk's own sentence
    assert (fp["answerable"], fp["kind"], len(fp["chunk_ids"])) == (False, "false_premise", 1)
    gold = next(c for c in CHUNKS if c["id"] == fp["chunk_ids"][0])
    assert fp["evidence"][0] in gold["text"] and fp["premise"] not in gold["text"]
    assert fp["checks"]["premise_check"]["contradicted"] is True and fp["grades"] == {gold["id"]: 3}
    qrels = [line.split() for line in (tmp_path / "q.qrels").read_text().splitlines()]
    assert un["id"] not in {r[0] for r in qrels}  # no relevant chunk: trec_eval skips the query
    assert [gold["id"], "3"] in [[r[2], r[3]] for r in qrels if r[0] == fp["id"]]


def test_a_question_a_chunk_answers_is_refused_as_unanswerable(tmp_path):
    """The fake asks what the seed's topic costs in Antarctica; one chunk here says it: the search
    finds that chunk and the question is dropped, naming what answered it."""
    answers = chunk("far-1", "What does delivery cost in Antarctica? Delivery to Antarctica costs 90 euros.", "far")
    corpus = [
        chunk("ship-2", "Delivery of every parcel is tracked from our warehouse to your door.", "shipping"),
        answers,
    ]
    with FakeLLM() as server:
        main(generate(tmp_path, server.url, corpus, "unanswerable=1", 1))
    rejects = lines(tmp_path / "rejects.jsonl")
    refused = [r for r in rejects if r["kind"] == "unanswerable"]
    assert refused and refused[0]["reason"].startswith("answered by the corpus")
    assert "far-1" in refused[0]["reason"] and "far-1" in refused[0]["scores"]["searched"]["chunk_ids"]
    assert not [
        q
        for q in lines(tmp_path / "q.jsonl")
        if q["difficulty"] == "unanswerable" and "delivery" in q["question"].lower()
    ]


def test_a_premise_no_chunk_contradicts_is_refused(tmp_path):
    """Chunks without a number: the fake's premise adds one nothing contradicts."""
    corpus = [chunk("club-1", "Members of the walking club get early access to the spring collection.", "club")]
    with FakeLLM() as server:
        main(generate(tmp_path, server.url, corpus, "false_premise=1", 1))
    assert lines(tmp_path / "q.jsonl") == []
    reasons = [r["reason"] for r in lines(tmp_path / "rejects.jsonl")]
    assert reasons and all(r.startswith("no chunk contradicts the premise") for r in reasons)


def test_a_premise_another_chunk_states_is_refused(tmp_path):
    """The seed says 30 days; another chunk says 60 (the doubled number the fake puts in the premise):
    the corpus disagrees with itself, so the question is no clean false premise."""
    corpus = [
        chunk("ret-1", "You can return unused items within 30 days of delivery for a full refund.", "returns"),
        chunk("ret-2", "You can return unused items within 60 days of delivery for a full refund.", "old"),
    ]
    with FakeLLM() as server:
        main(generate(tmp_path, server.url, corpus, "false_premise=1", 1))
    reasons = [r["reason"] for r in lines(tmp_path / "rejects.jsonl")]
    assert any(r.startswith("the premise is stated as true") for r in reasons), reasons
    assert all(q["difficulty"] != "false_premise" or q["chunk_ids"] != ["ret-1"] for q in lines(tmp_path / "q.jsonl"))


def test_the_dry_run_counts_the_calls_the_run_makes_and_a_rerun_sends_nothing(tmp_path, capsys):
    argv = generate(tmp_path, "http://127.0.0.1:9/v1", CHUNKS, "medium=0.5,unanswerable=0.25,false_premise=0.25", 4)
    capsys.readouterr()
    assert main([*argv, "--dry-run", "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)["calls"]
    with FakeLLM() as server:
        run = [a if a != "http://127.0.0.1:9/v1" else server.url for a in argv]
        assert main(run) == 0
        made = server.calls
        assert main(run) == 0
        assert server.calls == made  # the set's answers answer every request of the rerun
    assert planned == made == 4 * 2 + 3 * 2  # medium: question, blind, compare, critic; the others three each


def exact_handler(seen: list[dict]):
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        name = body["response_format"]["json_schema"]["name"]
        if name == "FalsePremiseQuestion":
            return chat_reply(
                {
                    "question": "Why is the return window 60 days for sale items?",
                    "premise": "Items can be returned within 60 days.",
                    "correction": CHUNKS[0]["text"].split(" Customers")[0],
                    "answer": "It is 30 days, not 60: unused items can be returned within 30 days.",
                }
            )
        if name == "PremiseVerdict":
            return chat_reply({"contradicted": True, "supported": False, "reason": "ret-1 says 30 days"})
        return chat_reply({"self_contained": 5, "clear": 5, "realistic": 5, "reason": "fine"})

    return handler


@respx.mock
def test_the_requests_of_a_false_premise_exactly(tmp_path):
    seen: list[dict] = []
    respx.post(f"{BASE}/chat/completions").mock(side_effect=exact_handler(seen))
    corpus = CHUNKS[:1] + CHUNKS[2:]
    assert main(generate(tmp_path, BASE, corpus, "false_premise=1", 1)) == 0
    names = [b["response_format"]["json_schema"]["name"] for b in seen]
    assert names == ["FalsePremiseQuestion", "PremiseVerdict", "Critique"]
    written, verify, critic = (b["messages"][-1]["content"] for b in seen)
    assert "<<<PASSAGE id=ret-1" in written and written.count("<<<PASSAGE") == 1
    # the claim checked is the premise, against the seed first and then what BM25 finds for the claim
    assert verify.startswith("<<<CLAIM\nItems can be returned within 60 days.\nCLAIM>>>")
    bm25 = BM25([c["id"] for c in corpus], [c["text"] for c in corpus])
    expected = searched(bm25, "Items can be returned within 60 days.", SEARCH_DEPTH, first="ret-1")
    import re

    assert re.findall(r"<<<PASSAGE id=(\S+)", verify) == expected and expected[0] == "ret-1"
    assert "Why is the return window 60 days for sale items?" in critic
    [q] = lines(tmp_path / "q.jsonl")
    assert q["premise"] == "Items can be returned within 60 days." and q["chunk_ids"] == ["ret-1"]
    assert q["answer"].startswith("It is 30 days, not 60")


@respx.mock
def test_a_correction_not_in_the_chunk_is_refused_before_any_other_call(tmp_path):
    seen: list[dict] = []

    def handler(request):
        body = json.loads(request.content)
        seen.append(body)
        return chat_reply(
            {
                "question": "Why is the return window 60 days for sale items?",
                "premise": "Items can be returned within 60 days.",
                "correction": "Returns are accepted for thirty days.",  # not the chunk's words
                "answer": "It is 30 days.",
            }
        )

    respx.post(f"{BASE}/chat/completions").mock(side_effect=handler)
    main(generate(tmp_path, BASE, CHUNKS[:1], "false_premise=1", 1))
    assert {b["response_format"]["json_schema"]["name"] for b in seen} == {"FalsePremiseQuestion"}
    reasons = [r["reason"] for r in lines(tmp_path / "rejects.jsonl")]
    assert reasons and all(r.startswith("correction not found in its chunk") for r in reasons)


def test_exports_keep_what_cannot_be_answered(tmp_path):
    with FakeLLM() as server:
        assert (
            main(
                generate(
                    tmp_path,
                    server.url,
                    CHUNKS,
                    "easy=0.5,unanswerable=0.25,false_premise=0.25",
                    4,
                    "--export",
                    "beir",
                    str(tmp_path / "beir"),
                    "--export",
                    "deepeval-goldens",
                    str(tmp_path / "de"),
                )
            )
            == 0
        )
    beir = {q["_id"]: q for q in lines(tmp_path / "beir" / "queries.jsonl")}
    qs = lines(tmp_path / "q.jsonl")
    for q in nonempty(qs):
        meta = beir[q["id"]].get("metadata")
        assert meta == (
            None
            if q.get("answerable", True)
            else {"answerable": False, **({"premise": q["premise"]} if q.get("premise") else {})}
        )
    goldens = {g["name"]: g for g in json.loads((tmp_path / "de" / "deepeval_goldens.json").read_text())}
    fp = next(q for q in qs if q["difficulty"] == "false_premise")
    assert goldens[fp["id"]]["additional_metadata"]["premise"] == fp["premise"]
    assert goldens[fp["id"]]["custom_column_key_values"]["answerable"] == "false"
    assert all(isinstance(v, str) for g in goldens.values() for v in g["custom_column_key_values"].values())


def test_remap_carries_a_false_premise_and_says_an_unanswerable_one_has_no_gold(tmp_path, capsys):
    with FakeLLM() as server:
        assert main(generate(tmp_path, server.url, CHUNKS, "easy=0.5,unanswerable=0.25,false_premise=0.25", 4)) == 0
    qs = {q["difficulty"]: q for q in lines(tmp_path / "q.jsonl")}
    rechunked = write(tmp_path / "new.jsonl", [{"id": f"new-{c['id']}", "text": c["text"]} for c in CHUNKS])
    capsys.readouterr()
    assert (
        main(
            ["remap", str(tmp_path / "q.jsonl"), str(rechunked), "-o", str(tmp_path / "new.qrels"), "--format", "json"]
        )
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert got["unanswerable"] == [qs["unanswerable"]["id"]] and got["no_evidence"] == []
    fp = qs["false_premise"]
    qrels = [line.split() for line in (tmp_path / "new.qrels").read_text().splitlines()]
    assert [r[2] for r in qrels if r[0] == fp["id"]] == [f"new-{fp['chunk_ids'][0]}"]
    assert main(["remap", str(tmp_path / "q.jsonl"), str(rechunked), "-o", str(tmp_path / "n2.qrels")]) == 0
    assert "1 unanswerable questions have no gold chunk to carry" in capsys.readouterr().out


@respx.mock
def test_an_answer_claimed_without_a_quote_found_keeps_no_unanswerable_question(tmp_path):
    """The search check says the chunks answer it but quotes words that are in none of them (a small
    model's habit): not proof of an answer, nor of silence, so the question is not kept, and the
    reject says why."""
    seen: list[dict] = []

    def handler(request):
        body = json.loads(request.content)
        seen.append(body)
        name = body["response_format"]["json_schema"]["name"]
        if name == "UnanswerableQuestion":
            return chat_reply(
                {
                    "missing": "a price for Antarctica",
                    "question": "What does a refund cost in Antarctica?",
                    "answer": "The documents do not say.",
                }
            )
        return chat_reply({"quote": "Refunds in Antarctica cost 5 euros.", "answerable": True, "reason": "it says so"})

    respx.post(f"{BASE}/chat/completions").mock(side_effect=handler)
    main(generate(tmp_path, BASE, CHUNKS, "unanswerable=1", 1))
    names = [b["response_format"]["json_schema"]["name"] for b in seen]
    assert names[:2] == ["UnanswerableQuestion", "SearchVerdict"] and "Critique" not in names
    reasons = [r["reason"] for r in lines(tmp_path / "rejects.jsonl")]
    assert reasons and all(r.startswith("unsure: the model says the") for r in reasons)
    assert lines(tmp_path / "q.jsonl") == []


def test_evaluate_says_the_unanswerable_questions_it_skips_and_warns_of_no_mismatch(tmp_path, capsys):
    """The qrels hold no line for an unanswerable question; their origin file names those questions, so
    a run over the whole set is not taken for a run of another set."""
    with FakeLLM() as server:
        assert main(generate(tmp_path, server.url, CHUNKS, "easy=0.5,unanswerable=0.5", 4)) == 0
    qs = lines(tmp_path / "q.jsonl")
    unanswerable = [q["id"] for q in qs if q["difficulty"] == "unanswerable"]
    assert len(unanswerable) == 2
    origin = json.loads((tmp_path / "q.qrels.origin.json").read_text())
    assert sorted(origin["no_relevant"]) == sorted(unanswerable)
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q['id']} Q0 ret-1 1 1.0 x\n" for q in qs))
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "q.qrels"), str(run), "-m", "ndcg@10"]) == 0
    out = capsys.readouterr()
    assert "2 queries evaluated; 2 unanswerable questions skipped (no relevant chunk by design" in out.out
    assert "warning" not in out.err and "run queries without qrels" not in out.out
    # a run query that is neither in the qrels nor named unanswerable is still warned of
    run.write_text(run.read_text() + "q-other Q0 ret-1 1 1.0 x\n")
    assert main(["evaluate", str(tmp_path / "q.qrels"), str(run), "-m", "ndcg@10"]) == 0
    out = capsys.readouterr()
    assert "1 of 3 in the run are not in the qrels (e.g. q-other)" in out.err
    assert "1 run queries without qrels ignored; 2 unanswerable questions skipped" in out.out
