"""generate against a mocked model: every filter, multi-chunk verification, mix, resume, exports."""

from __future__ import annotations

import json
import re

import httpx
import pytest
import respx
from hypothesis import given
from hypothesis import strategies as st

import ragassay
from fake_llm import chat_reply, make_llm
from helpers import EXAMPLE, nonempty
from ragassay.data.records import Chunk, Question
from ragassay.stages.generate import GenerateOptions, Generator, export, write_outputs
from ragassay.stages.generate_checks import mix_counts, parse_mix, unfit_chunk

BASE = "http://gen.test/v1"
URL = f"{BASE}/chat/completions"

TEXTS = {
    "good": "Standard delivery takes three to five business days and costs nothing on orders above fifty euros.",
    "meta": "Express delivery arrives on the next business day when the order is placed before two in the afternoon.",
    "copy": "Gift cards are sold in amounts from ten to five hundred euros and they never expire at all.",
    "noev": "Tents from the Summit line carry a lifetime warranty against defects in materials and workmanship.",
    "unans": "Our support team answers chat and phone from eight to eight on weekdays, and on Saturdays too.",
    "dup": "Standard shipping is free above fifty euros and takes between three and five working days.",
    "short": "Points expire twenty four months after they are earned in the loyalty programme of the shop.",
    "lang": "Returns are accepted within thirty days of delivery if the item is unused and in its packaging.",
}
OUTPUTS = {  # what the mocked model writes for each chunk
    "good": (
        "How long does it take for a standard order to reach me?",
        "Three to five business days.",
        "Standard delivery takes three to five business days",
    ),
    "meta": (
        "According to the passage, when does express delivery arrive?",
        "Next business day.",
        "Express delivery arrives on the next business day",
    ),
    "copy": (
        "Gift cards are sold in amounts from ten to five hundred euros?",
        "Yes.",
        "Gift cards are sold in amounts",
    ),
    "noev": ("How long is the warranty on Summit tents?", "Lifetime.", "Summit tents have a 10 year warranty"),
    "unans": ("What are the support team's opening hours on Sundays?", "Closed.", "on Saturdays too"),
    "dup": (
        "How long does it take for a standard order to reach me?",
        "3-5 days.",
        "takes between three and five working days",
    ),
    "short": ("Expiry?", "24 months.", "Points expire twenty four months"),
    "lang": ("Сколько дней есть на возврат товара?", "30 дней.", "Returns are accepted within thirty days"),
}


def reply(obj) -> httpx.Response:
    return chat_reply(obj, prompt_tokens=80, completion_tokens=30)


def review_reply(name: str, user: str) -> httpx.Response:
    """The comparison says the answers agree; the critic marks down a question about "the author"."""
    if name == "SameAnswer":
        return reply({"same": True, "reason": "the same facts"})
    vague = "the author" in user.lower()
    return reply({"self_contained": 1 if vague else 5, "clear": 5, "realistic": 4, "reason": "reviewed"})


def handler_for(outputs, single_answerable=()):
    def handler(request):
        body = json.loads(request.content)
        user = body["messages"][-1]["content"]
        ids = re.findall(r"<<<PASSAGE id=(\S+)", user)
        name = body["response_format"]["json_schema"]["name"]
        if name in ("SameAnswer", "Critique"):
            return review_reply(name, user)
        if name == "BlindAnswer":
            assert "PROPOSED" not in user and "ANSWER>>>" not in user  # blind: the proposed answer is not shown
            question = re.search(r"<<<QUESTION\n(.*?)\nQUESTION>>>", user, re.S).group(1)
            ok = "Sundays" not in question
            if len(ids) == 1 and len(outputs.get("__hard__", {})) and ids[0] not in single_answerable:
                ok = False  # for hard questions, a single chunk alone does not answer it
            return reply({"own_answer": "x" if ok else "", "answerable": ok, "reason": "checked"})
        if len(ids) > 1:
            q, a = outputs["__hard__"]["q"], outputs["__hard__"]["a"]
            ev = [{"chunk_id": i, "quote": TEXTS[i].split(" and ")[0], "role": "answer"} for i in ids]
            return reply(
                {"question": q, "answer": a, "kind": outputs["__hard__"].get("kind", "comparison"), "evidence": ev}
            )
        q, a, quote = outputs[ids[0]]
        return reply(
            {
                "question": q,
                "answer": a,
                "kind": "factoid",
                "evidence": [{"chunk_id": ids[0], "quote": quote, "role": "answer"}],
            }
        )

    return handler


def chunks_of(names, doc=None):
    return [Chunk(id=n, text=TEXTS[n], doc_id=doc or n) for n in names]


@respx.mock
async def test_every_filter_drops_with_its_reason(tmp_path):
    respx.post(URL).mock(side_effect=handler_for(OUTPUTS))
    names = list(TEXTS)
    gen = Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=False),
        chunks_of(names),
        GenerateOptions(total=len(names), mix={"easy": 1}, attempts_per_question=1.0),
    )
    result = await gen.run()
    assert [q.chunk_ids for q in result.accepted] in ([["good"]], [["dup"]])
    reasons = {r["chunk_ids"][0]: r["reason"] for r in result.rejects}
    assert "not self-contained" in reasons["meta"]
    assert "copies the chunk" in reasons["copy"]
    assert "evidence quote not found" in reasons["noev"]
    assert "not answerable from its gold chunks" in reasons["unans"]
    assert "too short" in reasons["short"]
    assert "language differs" in reasons["lang"]
    dup_id = "dup" if result.accepted[0].chunk_ids == ["good"] else "good"
    assert "duplicate of an earlier question" in reasons[dup_id]
    q = result.accepted[0]
    Question.model_validate(q.model_dump())
    assert set(q.checks) >= {"bm25_rank", "word_overlap", "answerable"} and q.prompt.startswith("generate_question@")


@respx.mock
async def test_hard_questions_must_need_every_chunk(tmp_path):
    texts = ["good", "dup"]
    outputs = {
        "__hard__": {
            "q": "How many working days does a free standard shipment take to arrive?",
            "a": "Free above fifty euros; three to five working days.",
        }
    }
    respx.post(URL).mock(side_effect=handler_for(outputs))
    gen = Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=False),
        chunks_of(texts, doc="shipping"),
        GenerateOptions(total=1, mix={"hard": 1}),
    )
    result = await gen.run()
    assert len(result.accepted) == 1
    q = result.accepted[0]
    assert q.difficulty == "hard" and sorted(q.chunk_ids) == ["dup", "good"]
    assert q.checks["single_chunk_answerable"] == {c: False for c in q.chunk_ids}

    respx.post(URL).mock(side_effect=handler_for(outputs, single_answerable={"good"}))
    fake = Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=False),
        chunks_of(texts, doc="shipping"),
        GenerateOptions(total=1, mix={"hard": 1}, attempts_per_question=1.0),
    )
    res2 = await fake.run()
    assert not res2.accepted and "fake multi-hop" in res2.rejects[0]["reason"]


@respx.mock
async def test_medium_that_copies_the_words_is_relabelled_easy(tmp_path):
    outputs = {
        "good": (
            "Standard delivery takes how many business days, and costs nothing above what?",
            "Three to five; free above fifty euros.",
            "Standard delivery takes three to five business days",
        )
    }
    respx.post(URL).mock(side_effect=handler_for(outputs))
    gen = Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=False),
        chunks_of(["good"]),
        GenerateOptions(total=2, mix={"medium": 1, "easy": 1}),
    )
    gen.fit = ["good"]
    result = await gen.run()
    relabelled = [q for q in result.accepted if "relabelled" in q.checks]
    assert relabelled and relabelled[0].difficulty == "easy"


@given(st.integers(0, 500), st.lists(st.floats(0.01, 5), min_size=1, max_size=3))
def test_mix_counts_sum_and_stay_within_one(total, shares):
    mix = dict(zip(["easy", "medium", "hard"], shares))
    counts = mix_counts(total, mix)
    assert sum(counts.values()) == total
    weight = sum(mix.values())
    for k, v in nonempty(counts.items()):
        assert abs(v - total * mix[k] / weight) < 1


def test_parse_mix_errors():
    assert parse_mix("easy=0.5,hard=0.5") == {"easy": 0.5, "hard": 0.5}
    with pytest.raises(ValueError, match="shares must add up to 1; these add up to 2"):
        parse_mix("easy=1,hard=1")
    with pytest.raises(ValueError, match="shares are from 0 to 1"):
        parse_mix("easy=2")
    with pytest.raises(ValueError, match="unknown name 'trivial' in --mix"):
        parse_mix("trivial=1")
    with pytest.raises(ValueError, match="numbers"):
        parse_mix("easy=lots")


def test_unfit_chunks():
    assert unfit_chunk("Too short.") is not None
    assert "table of contents" in unfit_chunk(
        "1 Intro ..... 1\n2 Setup ..... 4\n3 Usage ..... 9\n4 Index ..... 12\n"
        "5 More words here to pass the length check ..... 15"
    )
    assert "numbers" in unfit_chunk("12 34 56 78 90 12 34 56 78 90 12 34 56 78 90 1 2 3 4 5 6 7 8")
    assert unfit_chunk(TEXTS["good"]) is None


@respx.mock
async def test_rerun_with_the_cache_costs_nothing_and_gives_the_same_set(tmp_path):
    route = respx.post(URL).mock(side_effect=handler_for(OUTPUTS))
    names = ["good", "meta", "unans"]
    out1, out2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    r1 = await Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=True),
        chunks_of(names),
        GenerateOptions(total=3, mix={"easy": 1}),
    ).run()
    write_outputs(r1, out1)
    calls = route.call_count
    r2 = await Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=True),
        chunks_of(names),
        GenerateOptions(total=3, mix={"easy": 1}),
    ).run()
    write_outputs(r2, out2)
    assert route.call_count == calls
    assert out1.read_text() == out2.read_text() and not (tmp_path / "a.jsonl.tmp").exists()


def test_exports_read_back(tmp_path):
    chunks = chunks_of(["good", "dup"])
    qs = [
        Question(id="q-1", question="How long is delivery?", answer="3-5 days", difficulty="easy", chunk_ids=["good"]),
        Question(id="q-2", question="Compare?", answer="x", difficulty="hard", chunk_ids=["good", "dup"]),
    ]
    export(qs, chunks, "beir", tmp_path / "beir")
    assert ragassay.read_qrels(tmp_path / "beir" / "qrels" / "test.tsv").to_dict() == {
        "q-1": {"good": 1},
        "q-2": {"good": 1, "dup": 1},
    }
    assert [c.id for c in ragassay.read_chunks(tmp_path / "beir" / "corpus.jsonl")] == ["good", "dup"]
    assert ragassay.read_queries(tmp_path / "beir" / "queries.jsonl") == {
        "q-1": "How long is delivery?",
        "q-2": "Compare?",
    }
    export(qs, chunks, "llamaindex-embedding-qa", tmp_path / "li")
    data = json.loads((tmp_path / "li" / "llamaindex_embedding_qa.json").read_text())
    assert data["relevant_docs"] == {"q-1": ["good"], "q-2": ["good", "dup"]} and set(data["corpus"]) == {"good", "dup"}
    # RAGAS's EvaluationDataset (one SingleTurnSample a line), its Testset, DeepEval goldens
    export(qs, chunks, "ragas-evaluation-dataset", tmp_path / "ragas")
    samples = [
        json.loads(line) for line in (tmp_path / "ragas" / "ragas_evaluation_dataset.jsonl").read_text().splitlines()
    ]
    assert samples[1] == {
        "user_input": "Compare?",
        "reference": "x",
        "reference_contexts": [TEXTS["good"], TEXTS["dup"]],
        "reference_context_ids": ["good", "dup"],
    }  # the chunk ids, in the contexts' order
    export(qs, chunks, "ragas-testset", tmp_path / "ragas")
    testset = [json.loads(line) for line in (tmp_path / "ragas" / "ragas_testset.jsonl").read_text().splitlines()]
    assert testset[1] == {**samples[1], "synthesizer_name": "ragassay:hard:factoid"}
    assert testset[0]["synthesizer_name"] == "ragassay:easy:factoid"
    export(qs, chunks, "deepeval", tmp_path / "de")  # an earlier release's name for deepeval-goldens
    goldens = json.loads((tmp_path / "de" / "deepeval_goldens.json").read_text())
    assert [set(g) for g in goldens] == [
        {
            "input",
            "expected_output",
            "context",
            "name",
            "source_file",
            "custom_column_key_values",
            "additional_metadata",
        }
    ] * 2
    assert goldens[0]["input"] == "How long is delivery?" and goldens[0]["context"] == [TEXTS["good"]]
    assert [g["name"] for g in goldens] == ["q-1", "q-2"] and goldens[1]["source_file"] == "good|dup"
    assert goldens[1]["additional_metadata"]["chunk_ids"] == ["good", "dup"]
    assert json.loads(goldens[1]["custom_column_key_values"]["chunk_ids"]) == ["good", "dup"]


@pytest.mark.parametrize(
    "question, flagged",
    [
        ("Is delivery free on orders above fifty euros?", False),
        ("According to the passage, when does it arrive?", True),
        ("What does the text say about refunds?", True),
        ("Which fee is mentioned above?", True),
        ("What does this document recommend for washing?", True),
    ],
)
def test_self_containment_check(question, flagged):
    from ragassay.stages.generate_checks import question_problems

    problems = question_problems(question, "an answer", ["Some chunk text about delivery, refunds and washing."])
    assert any("self-contained" in p for p in problems) == flagged


def test_remap_exact_split_fuzzy_and_unplaced(tmp_path):
    from ragassay.stages.remap import remap

    qs = [
        Question(
            id="a",
            question="?",
            answer="x",
            difficulty="easy",
            chunk_ids=["old1"],
            evidence=["Standard delivery takes three to five business days"],
        ),
        Question(
            id="b",
            question="?",
            answer="x",
            difficulty="easy",
            chunk_ids=["old1"],
            evidence=["gift cards never expire and can be used in stores"],
        ),
        Question(
            id="c",
            question="?",
            answer="x",
            difficulty="easy",
            chunk_ids=["old2"],
            evidence=["Express delivery costs 9.95 and arrives the next business day"],
        ),
        Question(
            id="d",
            question="?",
            answer="x",
            difficulty="easy",
            chunk_ids=["old3"],
            evidence=["a sentence that is nowhere in the new corpus at all"],
        ),
    ]
    new = [
        Chunk(id="n1", text="Intro. Standard delivery takes three to five business days, free over 50."),
        Chunk(id="n2", text="Larkspur gift cards never expire and"),
        Chunk(id="n3", text="can be used in stores and online."),
        Chunk(id="n4", text="Express delivery costs 9.95 and arrives on the next business day."),
    ]
    r = remap(qs, new)
    assert r.qrels == {"a": {"n1": 3}, "b": {"n2": 3, "n3": 3}, "c": {"n4": 3}}
    assert r.how == {"a": "exact", "b": "split", "c": "fuzzy"}
    assert list(r.unplaced) == ["d"]


@respx.mock
def test_generate_command_on_the_bundled_example(tmp_path, monkeypatch, capsys):
    from ragassay.cli import main

    chunks = {c.id: c for c in ragassay.read_chunks(EXAMPLE / "chunks.jsonl")}

    def handler(request):
        body = json.loads(request.content)
        user = body["messages"][-1]["content"]
        ids = re.findall(r"<<<PASSAGE id=(\S+)", user)
        name = body["response_format"]["json_schema"]["name"]
        if name in ("SameAnswer", "Critique"):
            return review_reply(name, user)
        if name == "BlindAnswer":
            ok = len(ids) > 1 or "together" not in user
            return reply({"own_answer": "x" if ok else "", "answerable": ok, "reason": "checked"})
        first = [chunks[i].text.split(". ")[0] for i in ids]
        if len(ids) > 1:  # cites the first passage for the answer, the second for the hop
            one, two = chunks[ids[0]].title.lower(), chunks[ids[1]].title.lower()
            q = f"Taken together, what do the rules on {one} say given {two}?"
            ev = [
                {"chunk_id": ids[0], "quote": first[0], "role": "answer"},
                {"chunk_id": ids[1], "quote": first[1], "role": "bridge"},
            ]
            return reply({"question": q, "answer": "; ".join(first[:2]), "kind": "bridge", "evidence": ev})
        q = f"What does the help centre say on {chunks[ids[0]].title.lower()} for case {ids[0]}?"
        return reply(
            {
                "question": q,
                "answer": first[0],
                "kind": "factoid",
                "evidence": [{"chunk_id": ids[0], "quote": first[0], "role": "answer"}],
            }
        )

    respx.post(URL).mock(side_effect=handler)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-t")
    out = tmp_path / "questions.jsonl"
    assert (
        main(
            [
                "generate",
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                str(out),
                "--limit",
                "10",
                "--qrels-out",
                str(tmp_path / "q.qrels"),
                "--rejects",
                str(tmp_path / "rejects.jsonl"),
                "--export",
                "beir",
                str(tmp_path / "beir"),
                "--base-url",
                BASE,
                "--model",
                "m",
                "--no-cache",
                "--quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    qs = [Question.model_validate_json(line) for line in out.read_text().splitlines()]
    levels = {lvl: sum(q.difficulty == lvl for q in qs) for lvl in ("easy", "medium", "hard")}
    assert levels == {"easy": 4, "medium": 4, "hard": 2}, printed
    assert all(set(q.chunk_ids) <= set(chunks) for q in qs)
    assert all(len(q.chunk_ids) >= 2 for q in qs if q.difficulty == "hard")
    # gold by role: only cited chunks; 3 for the one stating the answer, 2 for the hop
    hard = [q for q in qs if q.difficulty == "hard"]
    assert all(len(q.chunk_ids) == 2 and list(q.grades.values()) == [3, 2] and q.kind == "bridge" for q in hard)
    assert ragassay.read_qrels(tmp_path / "q.qrels").to_dict() == {q.id: q.grades for q in qs}
    assert "accepted 10" in printed
    docs = [chunks[q.chunk_ids[0]].doc_id for q in qs]
    assert max(docs.count(d) for d in docs) <= 3  # stratified across documents


@respx.mock
async def test_a_hard_question_that_is_two_questions_joined_is_rejected(tmp_path):
    """'Is X free, and how many days does it take?' needs no reasoning across passages."""
    outputs = {
        "__hard__": {
            "q": "Is standard delivery free, and how many working days does it take?",
            "a": "Free above fifty euros; three to five working days.",
        }
    }
    respx.post(URL).mock(side_effect=handler_for(outputs))
    gen = Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=False),
        chunks_of(["good", "dup"], doc="shipping"),
        GenerateOptions(total=1, mix={"hard": 1}, attempts_per_question=1.0),
    )
    result = await gen.run()
    assert not result.accepted and "two questions joined into one" in result.rejects[0]["reason"]


@pytest.mark.parametrize(
    "question, joined",
    [
        ("What does the Summit tent weigh, and when was the Ridge pack introduced?", True),
        ("How long does a refund take and how is it paid?", True),
        ("When do points expire? How many do I earn per euro?", True),
        ("What is the difference between the Summit and the Ridge backpack warranty?", False),
        ("Which is lighter, the Summit tent or the Ridge tent?", False),
        ("How many days after delivery are loyalty points added to my account?", False),
        ("Can I pay for a gift card with points and a credit card together?", False),
    ],
)
def test_conjunction_check_both_ways(question, joined):
    from ragassay.stages.generate_checks import conjunction

    assert (conjunction(question) is not None) == joined


def test_questions_in_spaceless_scripts_are_measured_and_matched_to_their_chunk():
    """A Chinese or Japanese question is not "1 word": lengths count two characters a word."""
    from ragassay.stages.generate_checks import length_in_words, question_problems

    zh_chunk = "退款会在我们收到退货后的五个工作日内退回到您的原支付方式。银行可能还需要三到七天。"
    ja_chunk = "返品は商品到着後三十日以内であれば受け付けます。未使用で元の箱に入っている必要があります。"
    assert length_in_words("退款需要多长时间才能到账？") == 6
    assert question_problems("退款需要多长时间才能到账？", "五个工作日。", [zh_chunk]) == []
    assert question_problems("返品はいつまで受け付けてもらえますか？", "三十日以内です。", [ja_chunk]) == []
    assert question_problems("多久？", "五天。", [zh_chunk]) == ["too short (1 words)"]
    copied = question_problems("退款会在我们收到退货后的五个工作日内退回到您的原支付方式吗？", "是。", [zh_chunk])
    assert any("copies the chunk" in p for p in copied)
    assert any("language differs" in p for p in question_problems("How long do refunds take?", "5 days.", [zh_chunk]))


def test_documents_are_drawn_in_proportion_to_their_size_with_a_cap():
    from collections import Counter

    big = [Chunk(id=f"big{i}", text=f"{TEXTS['good']} Item {i}.", doc_id="big") for i in range(40)]
    mid = [Chunk(id=f"mid{i}", text=f"{TEXTS['lang']} Item {i}.", doc_id="mid") for i in range(10)]
    tiny = [Chunk(id=f"tiny{i}", text=f"{TEXTS['unans']} Item {i}.", doc_id="tiny") for i in range(2)]
    gen = Generator(None, big + mid + tiny, GenerateOptions(total=40, max_per_doc=100))
    first = Counter(gen.chunks[c].doc_id for c in gen.stratified(__import__("random").Random(0))[:26])
    assert first == {"big": 20, "mid": 5, "tiny": 1}  # 40 : 10 : 2, halved
    capped = Generator(None, big + mid + tiny, GenerateOptions(total=20))  # default cap: a quarter of 20
    order = capped.stratified(__import__("random").Random(0))
    assert Counter(capped.chunks[c].doc_id for c in order[:12]) == {"big": 5, "mid": 5, "tiny": 2}
    assert {capped.chunks[c].doc_id for c in order[12:]} == {"big", "mid"}  # the rest only once others ran out


@respx.mock
@pytest.mark.parametrize(
    "kind, evidence_ids, reason",
    [
        ("factoid", None, "hard question of no multi-hop type"),
        ("comparison", ["good"], "hard question that cites one passage"),
    ],
)
async def test_hard_questions_need_a_multi_hop_type_and_two_cited_passages(tmp_path, kind, evidence_ids, reason):
    outputs = {
        "__hard__": {
            "q": "How many working days does a free standard shipment take to arrive?",
            "a": "Three to five.",
            "kind": kind,
        }
    }
    base = handler_for(outputs)

    def handler(request):
        response = base(request)
        body = json.loads(response.content)
        content = json.loads(body["choices"][0]["message"]["content"])
        if evidence_ids and "evidence" in content:
            content["evidence"] = [e for e in content["evidence"] if e["chunk_id"] in evidence_ids]
            return reply(content)
        return response

    respx.post(URL).mock(side_effect=handler)
    gen = Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=False),
        chunks_of(["good", "dup"], doc="shipping"),
        GenerateOptions(total=1, mix={"hard": 1}, attempts_per_question=1.0),
    )
    result = await gen.run()
    assert not result.accepted and reason in result.rejects[0]["reason"]


def test_styles_follow_the_mix_in_plan_order():
    from collections import Counter

    chunks = [Chunk(id=f"c{i}", text=f"{TEXTS['good']} Item {i}.", doc_id=f"d{i}") for i in range(12)]
    gen = Generator(
        None,
        chunks,
        GenerateOptions(total=10, mix={"easy": 1.0}, styles={"question": 0.5, "keywords": 0.3, "task": 0.2}),
    )
    planned = gen.first_waves()
    assert Counter(style for *_, style in planned) == {"question": 5, "keywords": 3, "task": 2}
    assert [s for *_, s in planned][:5] == [
        "question",
        "keywords",
        "task",
        "question",
        "question",
    ]  # never far off the mix
    messages = gen.question_messages(["c0"], "easy", "keywords")
    assert "a short keyword query of 3 to 6 words" in messages[0]["content"]


@respx.mock
async def test_the_critic_drops_a_question_about_an_unnamed_text_the_regex_lets_through(tmp_path):
    """'What does the author argue?' passes the cheap regex (no 'the passage'); the critic's rubric
    catches it; a question that says 'listed above' as part of its meaning passes both."""
    from ragassay.stages.generate_checks import question_problems

    vague = "What does the author argue about delivery times?"
    fine = "Which orders listed above fifty euros ship for free?"
    assert question_problems(vague, "x", [TEXTS["good"]]) == [] and question_problems(fine, "x", [TEXTS["good"]]) == []
    for question, accepted in ((vague, False), (fine, True)):
        outputs = {"good": (question, "Orders above fifty euros.", "costs nothing on orders above fifty euros")}
        respx.post(URL).mock(side_effect=handler_for(outputs))
        gen = Generator(
            make_llm(tmp_path, BASE, "gen-model", use_cache=False),
            chunks_of(["good"]),
            GenerateOptions(total=1, mix={"easy": 1.0}, attempts_per_question=1.0),
        )
        result = await gen.run()
        assert bool(result.accepted) == accepted, result.rejects
        if not accepted:
            assert "the critic scored it low on self_contained" in result.rejects[0]["reason"]
        else:
            assert result.accepted[0].checks["critic"]["self_contained"] == 5


@respx.mock
@pytest.mark.parametrize("kind", ["bridge", "comparison", "aggregation"])
async def test_each_multi_hop_kind_is_accepted_and_recorded(tmp_path, kind):
    outputs = {
        "__hard__": {
            "q": "How many working days does a free standard shipment take to arrive?",
            "a": "Free above fifty euros; three to five working days.",
            "kind": kind,
        }
    }
    respx.post(URL).mock(side_effect=handler_for(outputs))
    gen = Generator(
        make_llm(tmp_path, BASE, "gen-model", use_cache=False),
        chunks_of(["good", "dup"], doc="shipping"),
        GenerateOptions(total=1, mix={"hard": 1}),
    )
    (q,) = (await gen.run()).accepted
    assert q.kind == kind and q.difficulty == "hard"
