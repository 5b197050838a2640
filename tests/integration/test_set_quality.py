"""ragassay quality: a test set's report, checked on exact figures worked out here by other means
(BM25 ranks by the generate checks' own scorer, nDCG by pytrec_eval, power by the power module),
on hand-made and generated sets, on real text, and through the command as a user runs it."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest
import pytrec_eval

from fake_llm import FakeLLM
from helpers import EXAMPLE
from ragassay.cli import main
from ragassay.metrics.power import minimum_detectable_effect
from ragassay.product.set_measures import (
    LexicalRanker,
    SetQuestion,
    distance_to_log,
    near_duplicates,
    question_profile,
)
from ragassay.product.set_quality import set_quality
from ragassay.stages.generate_checks import BM25
from real_corpus import write_corpus


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def q(qid: str, text: str) -> SetQuestion:
    return SetQuestion(qid, text)


# ------------------------------------------------------------------------------ the lexical ranker


def test_ranks_equal_the_generate_checks_bm25_with_ties_against_the_gold():
    """The inverted index gives the rank the plain scorer gives, on corpora of few words (so that
    scores tie, texts repeat and some chunks share no word with the query)."""
    rng = random.Random(7)
    words = ["refund", "parcel", "label", "card", "week", "box", "size", "duty", "the", "of"]
    for _ in range(60):
        n = rng.randint(1, 12)
        texts = [" ".join(rng.choices(words, k=rng.randint(1, 6))) for _ in range(n)]
        ids = [f"c{i}" for i in range(n)]
        ranker, plain = LexicalRanker(ids, texts), BM25(ids, texts)
        for _ in range(5):
            query = " ".join(rng.choices(words, k=rng.randint(1, 4)))
            gold = rng.sample(ids, rng.randint(1, min(3, n)))
            assert ranker.best_rank(query, gold) == min(plain.rank_of(query, g) for g in gold), (texts, query, gold)


def test_a_tie_ranks_the_gold_last_and_a_chunk_sharing_no_word_ranks_last_of_all():
    ranker = LexicalRanker(["a", "b", "c", "d"], ["refund window", "refund window", "parcel", "label card"])
    assert ranker.best_rank("refund window", ["a"]) == 2  # tied with b: counted behind it
    assert ranker.best_rank("refund window", ["c"]) == 4
    assert ranker.best_rank("refund window", ["zz"]) is None  # not in the corpus


# ------------------------------------------------------------------------------ duplicates, log


@pytest.mark.parametrize(
    ("a", "b", "pairs"),
    [
        ("What is the refund window?", "what is the refund window", 1),  # same words, loosely compared
        ("How long is the refund window for jackets?", "How long is the refund window for jackets today?", 1),  # 4 of 5
        ("Refund window jackets shoes hats", "Refund window jackets shoes", 1),  # 4 of 5 content words: 80%
        ("Refund window jackets shoes hats coats", "Refund window jackets shoes", 0),  # 4 of 6: no
        ("退货期限是多久？", "退货期限是多久?", 1),  # Chinese, a full-width and a plain question mark
        ("Wie lange dauert die Rückgabe?", "How long does a return take?", 0),
    ],
)
def test_near_duplicates(a, b, pairs):
    got = near_duplicates([q("1", a), q("2", b)])
    assert got["pairs"] == pairs
    assert got["examples"] == ([["1", "2"]] if pairs else [])


def test_three_copies_are_three_pairs_and_each_question_is_counted_once():
    got = near_duplicates(
        [q("a", "refund window?"), q("b", "Refund window"), q("c", "refund  window!"), q("d", "parcel")]
    )
    assert (got["pairs"], got["questions_in_pairs"]) == (3, 3)


def test_distance_to_a_log_of_real_queries():
    mine = question_profile(["how do refunds work", "how do parcels move", "what is a label"])
    log = question_profile(["how long is shipping", "why was my card charged"])
    got = distance_to_log(mine, log)
    # first words: set how 2/3, what 1/3; log how 1/2, why 1/2 -> (1/6 + 1/3 + 1/2) / 2
    assert got["first_word_distance"] == pytest.approx(0.5)
    shared = {"refunds", "work", "parcels", "move", "label"} & {"long", "shipping", "why", "was", "card", "charged"}
    assert got["log_vocabulary_in_set"] == len(shared) / 6 == 0
    assert mine["median_words"] == 4 and log["median_words"] == 4.5


def test_scripts_without_spaces_have_no_first_word():
    got = question_profile(["退货期限是多久？", "运费谁付？"])
    assert got["first_words"] == {} and got["median_words"] == pytest.approx(2.75)  # 7 and 4 characters, halved
    assert question_profile(["À quelle heure ouvre le dépôt ?"])["first_words"] == {"à": 1}  # a one-letter word


# ------------------------------------------------------------------------------ the whole report


def hand_set(tmp_path: Path) -> dict:
    chunks = jsonl(
        tmp_path / "chunks.jsonl",
        [
            {"id": "c1", "doc_id": "d1", "text": "Refunds are paid within 14 days to the card you paid with."},
            {"id": "c2", "doc_id": "d1", "text": "Sale items cannot be refunded once worn."},
            {"id": "c3", "doc_id": "d2", "text": "Parcels ship in two days; express ships the next day."},
            {"id": "c4", "doc_id": "d2", "text": "Import duties are paid by the customer on arrival."},
            {"id": "c5", "doc_id": "d3", "text": "Gift cards never expire."},
        ],
    )
    questions = jsonl(
        tmp_path / "questions.jsonl",
        [
            {
                "id": "e1",
                "question": "When are refunds paid to the card?",
                "answer": "within 14 days",
                "difficulty": "easy",
                "kind": "factoid",
                "chunk_ids": ["c1"],
                "answerable": True,
                "checks": {"answerable": True, "answer_supported": True},
            },
            {
                "id": "h1",
                "question": "Who pays import duties on arrival?",
                "answer": "the customer",
                "difficulty": "hard",
                "kind": "bridge",
                "chunk_ids": ["c4", "c3"],
                "answerable": True,
                "checks": {
                    "answerable": True,
                    "answer_supported": True,
                    "single_chunk_answerable": {"c4": True, "c3": False},
                },
            },
            {
                "id": "u1",
                "question": "Do you ship to the Moon?",
                "answer": "",
                "difficulty": "medium",
                "kind": "unanswerable",
                "chunk_ids": [],
                "answerable": False,
            },
        ],
    )
    return {"queries": questions, "chunks": chunks}


def test_a_generated_set_from_its_own_chunk_ids(tmp_path):
    got = set_quality(**hand_set(tmp_path)).to_dict()
    assert got["questions"] == 3
    assert got["rests_on"] == {"gold": "the questions' chunk_ids", "relevant_grade": None, "without_relevant": 1}
    assert got["difficulty"]["easy"] == {"questions": 1, "first": 1.0, "top10": 1.0, "median_rank": 1}
    assert got["difficulty"]["hard"]["questions"] == 1 and got["difficulty"]["medium"]["questions"] == 0
    assert got["checks"] == {
        "recorded": 2,
        "of": 3,
        "blind_answerable": 2,
        "blind_checked": 2,
        "answer_confirmed": 2,
        "hard_checked_alone": 1,
        "hard_answered_by_one_chunk": 1,
    }
    assert got["coverage"] == {
        "chunks": 5,
        "chunks_cited": 3,
        "cited_not_in_corpus": [],
        "cited_not_in_corpus_count": 0,
        "documents": 3,
        "documents_cited": 2,
    }
    assert got["mix"]["answerable"] == {"no": 1, "yes": 2}
    assert got["mix"]["kind"] == {"bridge": 1, "factoid": 1, "unanswerable": 1}
    assert got["power"]["questions"] == 2  # the unanswerable question has no relevant chunk: left out
    assert got["power"]["smallest_difference"] == {
        "0.1": minimum_detectable_effect(2, 0.1),
        "0.2": minimum_detectable_effect(2, 0.2),
        "0.3": minimum_detectable_effect(2, 0.3),
    }
    assert got["power"]["sd_source"].startswith("assumed")
    assert any("1 questions have no relevant chunk" in n for n in got["notes"])
    # both gold chunks are ranked first by BM25: the hard question is no harder than the easy one
    assert any(n.startswith("the hard questions are no harder for BM25") for n in got["notes"])


def test_a_set_with_no_chunk_ids_and_no_qrels_is_refused_naming_the_file(tmp_path, capsys):
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "refund?"}])
    chunks = jsonl(tmp_path / "c.jsonl", [{"id": "c1", "text": "refund"}])
    assert main(["quality", str(queries), "--chunks", str(chunks)]) == 1
    err = capsys.readouterr().err
    assert "q.jsonl" in err and "--qrels" in err and "Traceback" not in err


def test_qrels_that_meet_no_question_are_refused_with_both_files(tmp_path, capsys):
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "refund?"}])
    chunks = jsonl(tmp_path / "c.jsonl", [{"id": "c1", "text": "refund"}])
    (tmp_path / "other.qrels").write_text("7 0 c1 1\n")
    assert main(["quality", str(queries), "--chunks", str(chunks), "--qrels", str(tmp_path / "other.qrels")]) == 1
    err = capsys.readouterr().err
    assert "other.qrels" in err and "q.jsonl" in err


def ndcg_sd(qrels: Path, a: Path, b: Path) -> tuple[float, int]:
    def read(path: Path, run: bool) -> dict:
        out: dict = {}
        for line in path.read_text().splitlines():
            f = line.split()
            out.setdefault(f[0], {})[f[2]] = float(f[4]) if run else int(f[3])
        return out

    ev = pytrec_eval.RelevanceEvaluator(read(qrels, False), {"ndcg_cut_10"})
    x, y = ev.evaluate(read(a, True)), ev.evaluate(read(b, True))
    common = sorted(set(x) & set(y))
    return statistics.stdev([x[k]["ndcg_cut_10"] - y[k]["ndcg_cut_10"] for k in common]), len(common)


def test_the_example_through_the_command_with_two_runs_and_a_log(capsys):
    qrels, a, b = EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt", EXAMPLE / "runs" / "tfidf.txt"
    argv = [
        "quality",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--qrels",
        str(qrels),
        "--run",
        str(a),
        "--run",
        str(b),
        "--log",
        str(EXAMPLE / "queries.jsonl"),
        "--format",
        "json",
    ]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    sd, n = ndcg_sd(qrels, a, b)
    assert got["power"]["sd_source"] == f"measured: ndcg@10 of bm25.txt minus tfidf.txt over {n} queries"
    [(key, value)] = got["power"]["smallest_difference"].items()
    assert float(key) == pytest.approx(sd, rel=1e-3)
    assert value == pytest.approx(minimum_detectable_effect(got["power"]["questions"], sd), rel=1e-12)
    assert got["rests_on"]["relevant_grade"] == 2  # the example's qrels say their scale: relevant from 2
    assert got["log"]["first_word_distance"] == 0 and got["log"]["vocabulary_jaccard"] == 1
    assert got["command"].startswith("ragassay quality ") and "--run" in got["command"]
    assert main(argv[:-2]) == 0  # the text form says the same figures
    text = capsys.readouterr().out
    assert "reproduce: ragassay quality" in text and f"over {n} queries" in text


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--run", str(EXAMPLE / "runs" / "bm25.txt")], "two runs"),
        (["--mix", "easy=0.5,hard=0.6"], "add up to 1"),
        (["--mix", "tricky=1"], "unknown name"),
    ],
)
def test_usage_errors_exit_2_with_one_line(extra, said, capsys):
    argv = [
        "quality",
        str(EXAMPLE / "queries.jsonl"),
        "--chunks",
        str(EXAMPLE / "chunks.jsonl"),
        "--qrels",
        str(EXAMPLE / "qrels.txt"),
        *extra,
    ]
    assert main(argv) == 2
    assert said in capsys.readouterr().err


def test_generated_on_real_text_then_measured(tmp_path, capsys, monkeypatch):
    """generate on the standard library's docstrings with the local test server, unanswerable questions
    among them, then quality on what it wrote, as the commands chain: the ids meet, and every figure
    rests on the questions written."""
    write_corpus(tmp_path, chunks=60, queries=10)
    for name in ("OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out, qrels, chunks = tmp_path / "questions.jsonl", tmp_path / "q.qrels", tmp_path / "chunks.jsonl"
    rejects = tmp_path / "rejects.jsonl"
    mix = "easy=0.5,medium=0.25,unanswerable=0.125,false_premise=0.125"
    flags = f"--limit 8 --mix {mix} --qrels-out {qrels} --rejects {rejects} --model fake --no-cache"
    with FakeLLM() as server:
        code = main(["generate", str(chunks), "-o", str(out), "--base-url", server.url, "--quiet", *flags.split()])
    written = [json.loads(line) for line in out.read_text().splitlines()]
    # docstrings seldom state a number the fake can change: a premise nothing contradicts is refused,
    # and the set falls short (exit 3) rather than keep an unverified one
    premises = [w for w in written if w["difficulty"] == "false_premise"]
    refused = [r for r in lines(rejects) if r["kind"] == "false_premise"]
    assert code == (0 if premises else 3) and (premises or refused)
    assert all(
        r["reason"].startswith(("no chunk contradicts", "the premise is stated", "correction not found"))
        for r in refused
    )
    chunk_text = {c["id"]: c["text"] for c in lines(chunks)}
    assert all(
        p["checks"]["premise_check"]["contradicted"] and p["evidence"][0] in chunk_text[p["chunk_ids"][0]]
        for p in premises
    )
    capsys.readouterr()
    log = tmp_path / "queries.jsonl"
    argv = ["quality", str(out), "--chunks", str(chunks), "--qrels", str(qrels), "--log", str(log), "--format", "json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    unanswerable = [w for w in written if w["difficulty"] == "unanswerable"]
    assert unanswerable and all(w["answerable"] is False and w["chunk_ids"] == [] for w in unanswerable)
    answerable = len(written) - len(unanswerable)  # a false premise has its correcting chunk: it is scored
    assert got["questions"] == len(written) and got["rests_on"]["qrels_queries_matched"] == answerable
    assert got["rests_on"]["without_relevant"] == len(unanswerable) and got["power"]["questions"] == answerable
    assert got["mix"]["answerable"] == {"no": len(unanswerable) + len(premises), "yes": answerable - len(premises)}
    levels = {
        d: sum(w["difficulty"] == d for w in written)
        for d in ("easy", "medium", "hard", "unanswerable", "false_premise")
    }
    assert got["mix"]["difficulty"] == {k: v for k, v in sorted(levels.items()) if v}
    assert sum(p["questions"] for p in got["difficulty"].values()) == answerable  # ranks need a gold chunk
    assert got["difficulty"]["unanswerable"]["questions"] == 0
    cited = {c for w in written for c in w["chunk_ids"]}
    assert got["coverage"]["chunks_cited"] == len(cited) and got["coverage"]["chunks"] == 60
    assert got["checks"]["recorded"] == len(written) and got["checks"]["blind_checked"] == answerable
    assert got["log"]["log"]["questions"] == len(log.read_text().splitlines())


def test_a_bad_line_is_named_with_its_file_and_line(tmp_path, capsys):
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "refund window?", "chunk_ids": ["c1"]}])
    chunks = tmp_path / "c.jsonl"
    chunks.write_text('{"id": "c1", "text": "refund window"}\n{"id": "c2", "text": \n')
    assert main(["quality", str(queries), "--chunks", str(chunks)]) == 1
    err = capsys.readouterr().err
    assert "c.jsonl:2" in err and "Traceback" not in err
