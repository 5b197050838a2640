"""People-labelled data for qualifying a judge: graded pairs and labelled answers read from the files
people's labels come in, counted wherever something is left out; the bundled samples; the public
TREC sets through a fake ir_datasets (never a download); and the seeded stratified sample."""

from __future__ import annotations

import json
import random
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

from helpers import EXAMPLE, nonempty
from ragassay.data.origin import Labeller, Origin, write_origin
from ragassay.data.people_samples import (
    bundled_answers,
    bundled_pairs,
    public_pairs,
    read_graded_pairs,
    read_labelled_answers,
    stratified_sample,
)
from ragassay.errors import InputError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(path: Path, rows: list[dict]) -> Path:
    return write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


# ------------------------------------------------------------------------------ graded pairs


@pytest.fixture
def trec(tmp_path):
    """A TREC DL-like set: qrels of 7 pairs, two of whose chunks and one of whose queries are missing."""
    qrels = write(
        tmp_path / "qrels.txt",
        "1037798 0 7067032 0\n1037798 0 7067033 3\n1037798 0 8001 2\n"
        "104861 0 7067033 1\n104861 0 9999 2\n555 0 7067032 3\n104861 0 4242 0\n",
    )
    queries = write(tmp_path / "queries.tsv", "1037798\twho is robert gray\n104861\tcost of interior concrete\n")
    chunks = jsonl(
        tmp_path / "docs.jsonl",
        [  # llmjudge's dl2019_document.jsonl spelling
            {"docid": "7067032", "doc": "Robert Gray was an American sea captain."},
            {"docid": "7067033", "doc": "Gray was the first American to circumnavigate the globe."},
            {"docid": "8001", "doc": "Concrete floors cost $2 to $6 a square foot."},
            {"docid": "4242", "doc": "   "},
            {"docid": "123", "doc": "an unjudged passage"},
        ],
    )
    return qrels, queries, chunks


def test_pairs_without_text_are_dropped_and_counted_by_reason(trec):
    qrels, queries, chunks = trec
    p = read_graded_pairs(qrels, queries, chunks)
    assert p.grades == {
        ("1037798", "7067032"): 0,
        ("1037798", "7067033"): 3,
        ("1037798", "8001"): 2,
        ("104861", "7067033"): 1,
    }
    assert p.dropped == {"query not in queries.tsv": 1, "chunk not in docs.jsonl": 1, "chunk text empty": 1}
    assert any(n.startswith("3 of 7 people-labelled pairs have no text") for n in p.notes)
    assert p.queries == {"1037798": "who is robert gray", "104861": "cost of interior concrete"}
    assert set(p.chunks) == {"7067032", "7067033", "8001"}  # only the chunks of kept pairs; not the unjudged one
    assert p.chunks["8001"].text == "Concrete floors cost $2 to $6 a square foot."
    assert p.second is None and p.citation is None


def test_without_a_sidecar_the_scale_is_the_grades_seen_and_relevant_from_1_is_said_to_be_assumed(trec):
    p = read_graded_pairs(*trec)
    assert p.scale == (0, 3) and p.relevant_from == 1
    assert any("relevant from 1 assumed" in n and "relevant_from=2" in n for n in p.notes)
    given = read_graded_pairs(*trec, relevant_from=2)
    assert given.relevant_from == 2 and not any("assumed" in n for n in given.notes)


def test_a_sidecar_gives_the_scale_and_relevant_grade_and_an_argument_wins_over_it(trec):
    qrels, queries, chunks = trec
    write_origin(qrels, Origin(labellers=(Labeller(by="person", name="NIST"),), scale=(0, 4), relevant_from=3))
    p = read_graded_pairs(qrels, queries, chunks)
    assert (p.scale, p.relevant_from) == ((0, 4), 3) and not any("assumed" in n or "taken" in n for n in p.notes)
    assert p.origin.describe() == "NIST" and "NIST" in p.source
    assert read_graded_pairs(qrels, queries, chunks, relevant_from=2).relevant_from == 2


def test_a_relevant_grade_or_a_grade_outside_the_scale_is_refused(trec):
    with pytest.raises(
        InputError,
        match="the relevant grade 0 \\(--relevance-level; relevant_from in Python\\) is not a grade of the scale 0-3 "
        "above its lowest",
    ):
        read_graded_pairs(*trec, relevant_from=0)
    qrels, queries, chunks = trec
    write_origin(qrels, Origin(labellers=(Labeller(by="person", name="NIST"),), scale=(0, 2), relevant_from=1))
    with pytest.raises(InputError, match="grade 3 is outside the scale 0-2") as e:
        read_graded_pairs(qrels, queries, chunks)
    assert e.value.path == str(qrels)


def test_labels_a_model_made_are_not_peoples(trec):
    qrels, queries, chunks = trec
    write_origin(qrels, Origin(labellers=(Labeller(by="model", name="gpt-4o", prompt="judge_relevance@1a2b"),)))
    with pytest.raises(InputError, match="not people") as e:
        read_graded_pairs(qrels, queries, chunks)
    assert e.value.path == str(qrels)


CHUNK_SHAPES = {
    "ragassay": lambda i, t: {"id": i, "text": t, "doc_id": "d"},
    "beir": lambda i, t: {"_id": i, "title": "", "text": t},
    "ir_datasets": lambda i, t: {"doc_id": i, "text": t},
    "llmjudge": lambda i, t: {"docid": i, "doc": t},
}
QUERY_SHAPES = {
    "tsv": None,
    "id_text": lambda i, t: {"id": i, "text": t},
    "query_id": lambda i, t: {"query_id": i, "text": t},
    "qid_query": lambda i, t: {"qid": i, "query": t},
}


@pytest.mark.parametrize("chunk_shape", [*CHUNK_SHAPES, "tsv"])
@pytest.mark.parametrize("query_shape", list(QUERY_SHAPES))
def test_every_shape_of_queries_and_chunks_gives_the_same_pairs(tmp_path, chunk_shape, query_shape):
    qrels = write(tmp_path / "q.txt", "q-é 0 文書-1 2\nq-é 0 p2 0\nq2 0 p2 1\n")
    texts = {"文書-1": "Le café est noir.", "p2": "Tea is green."}
    queries = {"q-é": "café couleur ?", "q2": "tea colour"}
    if chunk_shape == "tsv":  # MS MARCO's collection.tsv (a header line is allowed)
        chunks = write(tmp_path / "c.tsv", "id\ttext\n" + "".join(f"{k}\t{v}\n" for k, v in texts.items()))
    else:
        chunks = jsonl(tmp_path / "c.jsonl", [CHUNK_SHAPES[chunk_shape](k, v) for k, v in texts.items()])
    if query_shape == "tsv":
        qfile = write(tmp_path / "topics.tsv", "".join(f"{k}\t{v}\n" for k, v in queries.items()))
    else:
        qfile = jsonl(tmp_path / "topics.jsonl", [QUERY_SHAPES[query_shape](k, v) for k, v in queries.items()])
    p = read_graded_pairs(qrels, qfile, chunks)
    assert p.grades == {("q-é", "文書-1"): 2, ("q-é", "p2"): 0, ("q2", "p2"): 1}
    assert p.queries == queries and {k: c.text for k, c in p.chunks.items()} == texts
    assert p.dropped == {}


@pytest.mark.parametrize(
    "name, text, line, says",
    [
        ("c.tsv", "p1\tfine\np2 no tab here\n", 2, "chunk id<TAB>chunk text"),
        ("c.jsonl", '{"id": "p1", "text": "fine"}\n{"id": "p2", "title": "no text"}\n', 2, "has no text"),
        (
            "c.jsonl",
            '{"id": "p1", "text": "fine"}\n{"id": "p2", "text": "a"}\n{"id": "p2", "text": "b"}\n',
            3,
            "appears twice (first on line 2)",
        ),
        ("c.jsonl", '{"id": "p1", "text": "fine"}\n{"text": "no id"}\n', 2, "no chunk id"),
        ("c.jsonl", '{"id": "p1", "text": "fine"}\n{not json\n', 2, "not valid JSON"),
    ],
)
def test_a_bad_chunk_line_is_named_by_file_and_line(tmp_path, name, text, line, says):
    qrels = write(tmp_path / "q.txt", "q1 0 p1 1\nq1 0 p2 0\n")
    queries = write(tmp_path / "queries.tsv", "q1\tquery one\n")
    chunks = write(tmp_path / name, text)
    with pytest.raises(InputError) as e:
        read_graded_pairs(qrels, queries, chunks)
    assert (e.value.path, e.value.line) == (str(chunks), line) and says in e.value.message


def test_bad_qrels_and_queries_lines_are_named(tmp_path):
    chunks = jsonl(tmp_path / "c.jsonl", [{"id": "p1", "text": "t"}])
    queries = write(tmp_path / "queries.tsv", "q1\tquery one\n")
    qrels = write(tmp_path / "q.txt", "q1 0 p1 1\nq1 0 p1 two\n")
    with pytest.raises(InputError) as e:
        read_graded_pairs(qrels, queries, chunks)
    assert (e.value.path, e.value.line) == (str(qrels), 2)
    qrels = write(tmp_path / "q.txt", "q1 0 p1 1\n")
    bad_queries = write(tmp_path / "queries2.tsv", "q1\tquery one\nq2 no tab\n")
    with pytest.raises(InputError) as e:
        read_graded_pairs(qrels, bad_queries, chunks)
    assert (e.value.path, e.value.line) == (str(bad_queries), 2)


def test_no_pair_with_texts_is_an_error_saying_why(tmp_path):
    qrels = write(tmp_path / "q.txt", "q1 0 p1 1\nq1 0 p2 0\n")
    queries = write(tmp_path / "queries.tsv", "other\tquery\n")
    chunks = jsonl(tmp_path / "c.jsonl", [{"id": "p1", "text": "t"}])
    with pytest.raises(
        InputError, match=r"none of its 2 people-labelled pairs has both texts \(query not in queries.tsv: 2\)"
    ):
        read_graded_pairs(qrels, queries, chunks)


def test_a_second_assessor_keeps_the_pairs_both_graded_and_counts_the_rest(trec, tmp_path):
    qrels, queries, chunks = trec
    second = write(tmp_path / "second.txt", "1037798 0 7067033 2\n104861 0 7067033 1\n104861 0 9999 3\nzz 0 x 1\n")
    p = read_graded_pairs(qrels, queries, chunks, second=second)
    assert p.second == {("1037798", "7067033"): 2, ("104861", "7067033"): 1}
    assert any(n.startswith("2 of the second people's 4 pairs are not among the first's") for n in p.notes)
    assert p.second_join["left"]["matched"] == 2 and p.second_join["right"]["ids"] == 4


def test_a_second_assessor_with_no_pair_in_common_or_the_same_person_is_refused(trec, tmp_path):
    qrels, queries, chunks = trec
    apart = write(tmp_path / "apart.txt", "zz 0 x 1\n")
    with pytest.raises(InputError, match="no pairs in common") as e:
        read_graded_pairs(qrels, queries, chunks, second=apart)
    assert str(qrels) in str(e.value) and str(apart) in str(e.value)
    same = write(tmp_path / "same.txt", "1037798 0 7067033 2\n")
    for path in (qrels, same):
        write_origin(path, Origin(labellers=(Labeller(by="person", name="alice"),), scale=(0, 3), relevant_from=2))
    with pytest.raises(InputError, match="same people"):
        read_graded_pairs(qrels, queries, chunks, second=same)
    write_origin(same, Origin(labellers=(Labeller(by="person", name="bob"),), scale=(0, 1), relevant_from=1))
    with pytest.raises(InputError, match="scale 0-1 is not the first's"):
        read_graded_pairs(qrels, queries, chunks, second=same)


def test_the_bundled_pairs_are_the_example_graded_by_two_example_assessors():
    p = bundled_pairs()
    first = [line.split() for line in (EXAMPLE / "qrels.txt").read_text().splitlines() if line.strip()]
    second = [line.split() for line in (EXAMPLE / "qrels_second_assessor.txt").read_text().splitlines() if line.strip()]
    assert p.grades == {(q, c): int(g) for q, _, c, g in first}
    assert p.second == {(q, c): int(g) for q, _, c, g in second}
    assert (p.scale, p.relevant_from) == ((0, 3), 2) and p.dropped == {}
    assert {q for q, _ in p.grades} == set(p.queries) and {c for _, c in p.grades} == set(p.chunks)
    assert "not public" in p.source and "two example assessors" in p.source
    assert p.origin.describe() == "example assessor 1" and p.second_origin.describe() == "example assessor 2"


# ---------------------------------------------------------------------------- labelled answers


def evouna_item(question: str, gold: str | None, improper: bool = False, **models) -> dict:
    out = {"question": question, "golden_answer": gold}
    for m in ("fid", "gpt35", "chatgpt", "gpt4", "newbing"):
        answer, judge = models.get(m, ("an answer", None))
        out[f"answer_{m}"], out[f"judge_{m}"] = answer, judge
    out["improper"] = improper
    return out


def test_evouna_gives_one_answer_per_judged_model_and_counts_what_it_leaves_out(tmp_path):
    items = [
        evouna_item(
            "who got the first nobel prize in physics",
            "Wilhelm Conrad Röntgen/Röntgen//",
            fid=("Wilhelm Röntgen", True),
            gpt4=("It was Marie Curie.", False),
            chatgpt=(None, True),
        ),
        evouna_item(
            "when is the next deadpool movie",
            "May 18, 2018",
            improper=True,
            fid=("May 2018", True),
            gpt35=("soon", "maybe"),
        ),
        evouna_item("what is 2+2", None, gpt4=("4", True)),
        evouna_item("capital of france", "Paris", newbing=("", False), gpt35=("Paris", "yes")),
    ]
    path = write(tmp_path / "NQ.json", json.dumps(items, indent=1))
    la = read_labelled_answers(path)
    assert [a.id for a in la.answers] == ["NQ-0-fid", "NQ-0-gpt4"]
    assert la.labels == {"NQ-0-fid": "correct", "NQ-0-gpt4": "incorrect"}
    first = la.answers[0]
    assert (first.question, first.reference, first.response) == (
        "who got the first nobel prize in physics",
        ["Wilhelm Conrad Röntgen", "Röntgen"],
        "Wilhelm Röntgen",
    )
    empty = "no answer text (an empty answer is no test of a grader: the rules call it abstained)"
    # an empty answer (people judged it) is left out and counted: the rules would agree with people for free
    assert la.skipped == {
        empty: 2,
        "no people's judgment": 2 + 4 + 3,
        "improper question": 5,
        "no gold answer": 1,
        "judgment not true or false": 1,
    }
    assert la.binary is True and la.second is None
    assert "2305.12421" in la.citation and "Natural Questions" in la.source
    assert la.origin.kind == "people"


def test_evouna_ids_carry_the_file_stem_and_triviaqa_is_named(tmp_path):
    path = write(tmp_path / "TQ.json", json.dumps([evouna_item("q?", "a", gpt35=("a", True))]))
    la = read_labelled_answers(path)
    assert [a.id for a in la.answers] == ["TQ-0-gpt35"] and "TriviaQA" in la.source


def test_a_labels_file_beside_evouna_s_own_labels_is_refused_not_ignored(tmp_path):
    path = write(tmp_path / "NQ.json", json.dumps([evouna_item("q?", "a", gpt35=("a", True))]))
    labels = jsonl(tmp_path / "labels.jsonl", [{"id": "NQ-0-gpt35", "label": "incorrect"}])
    for kwargs in nonempty([{"labels": labels}, {"second": labels}]):
        with pytest.raises(InputError, match="carries its people's labels itself") as e:
            read_labelled_answers(path, **kwargs)
        assert e.value.path == str(labels)


def test_evouna_bad_json_is_named_by_line(tmp_path):
    good = json.dumps(evouna_item("q?", "a", fid=("a", True)), indent=1)
    path = write(tmp_path / "NQ.json", "[\n" + good + ',\n{"question": "x", "golden_answer": }\n]')
    with pytest.raises(InputError) as e:
        read_labelled_answers(path)
    assert e.value.path == str(path) and e.value.line == good.count("\n") + 3


@pytest.fixture
def answers(tmp_path):
    return jsonl(
        tmp_path / "answers.jsonl",
        [
            {"id": "a1", "question": "Refund window?", "reference": "30 days", "response": "30 days."},
            {"id": "a2", "question": "Gift cards?", "reference": ["2 days", "two days"], "response": "A week."},
            {"id": "ä3", "question": "Shipping?", "reference": "No", "response": "I do not know."},
            {"id": "a4", "question": "Hours?", "reference": "9-5", "response": "9 to 5"},
        ],
    )


def test_labels_in_check_s_four_classes_meet_the_answers_by_id_with_counts(answers, tmp_path):
    labels = jsonl(
        tmp_path / "labels.jsonl",
        [
            {"id": "a1", "label": "correct", "assessor": "ann"},
            {"id": "a2", "label": "hallucinated", "assessor": "ann"},
            {"id": "ä3", "label": "abstained", "assessor": "ann"},
            {"id": "a9", "label": "partial", "assessor": "ann"},
        ],
    )
    la = read_labelled_answers(answers, labels)
    assert [a.id for a in la.answers] == ["a1", "a2", "ä3"]
    assert la.labels == {"a1": "correct", "a2": "hallucinated", "ä3": "abstained"}
    assert la.binary is False
    assert la.skipped == {"answers without a label": 1, "labels naming no answer": 1}
    assert la.join["left"] == {"role": "the answers", "file": str(answers), "ids": 4, "matched": 3}
    assert any("1 of 4 in the answers are not in the labels" in n for n in la.notes)
    assert la.origin.describe() == "ann" and la.answers[1].reference == ["2 days", "two days"]


@pytest.mark.parametrize("values", [("correct", "incorrect"), (True, False), ("TRUE", "false")])
def test_correct_incorrect_or_true_false_labels_are_binary(answers, tmp_path, values):
    labels = jsonl(tmp_path / "labels.jsonl", [{"id": "a1", "label": values[0]}, {"id": "a2", "label": values[1]}])
    la = read_labelled_answers(answers, labels)
    assert la.binary is True and la.labels == {"a1": "correct", "a2": "incorrect"}
    assert la.origin.kind == "unknown"  # nothing says who labelled: never taken for people


@pytest.mark.parametrize(
    "rows, line, says",
    [
        ([{"id": "a1", "label": "correct"}, {"id": "a2", "label": "wrong-ish"}], 2, "expected one of"),
        ([{"id": "a1", "label": "correct"}, {"id": "a1", "label": "partial"}], 2, "labelled twice (first on line 1)"),
        ([{"id": "a1", "label": "incorrect"}, {"id": "a2", "label": "partial"}], 2, "labels of two kinds"),
        ([{"label": "correct"}], 1, "answer id"),
    ],
)
def test_a_bad_labels_line_is_named(answers, tmp_path, rows, line, says):
    labels = jsonl(tmp_path / "labels.jsonl", rows)
    with pytest.raises(InputError) as e:
        read_labelled_answers(answers, labels)
    assert (e.value.path, e.value.line) == (str(labels), line) and says in e.value.message


def test_labels_with_no_id_in_common_name_both_files(answers, tmp_path):
    labels = jsonl(tmp_path / "labels.jsonl", [{"id": "x1", "label": "correct"}])
    with pytest.raises(InputError, match="no answer ids in common") as e:
        read_labelled_answers(answers, labels)
    assert str(answers) in str(e.value) and str(labels) in str(e.value)


def test_answer_labels_a_model_made_are_refused(answers, tmp_path):
    labels = jsonl(tmp_path / "labels.jsonl", [{"id": "a1", "label": "correct", "model": "gpt-4o-mini"}])
    with pytest.raises(InputError, match="not people"):
        read_labelled_answers(answers, labels)


def test_what_ragassay_label_writes_for_the_example_answers():
    la = read_labelled_answers(EXAMPLE / "answers.jsonl", EXAMPLE / "answers_human_labels.jsonl")
    written = [json.loads(line) for line in (EXAMPLE / "answers_human_labels.jsonl").read_text().splitlines()]
    assert la.labels == {r["id"]: r["label"] for r in written} and la.binary is False
    assert la.skipped == {"answers without a label": 16 - len(written)}
    assert la.origin.describe() == "example assessor 1"


def test_answers_carrying_their_own_label_need_no_labels_file(tmp_path):
    path = jsonl(
        tmp_path / "own.jsonl",
        [
            {"id": "1", "question": "q", "reference": ["a"], "response": "a", "label": "correct", "assessor": "kim"},
            {"id": "2", "question": "q", "reference": ["a"], "response": "b", "label": "incorrect", "assessor": "kim"},
        ],
    )
    la = read_labelled_answers(path)
    assert la.labels == {"1": "correct", "2": "incorrect"} and la.binary and la.origin.describe() == "kim"
    assert not hasattr(la.answers[0], "label") or "label" not in la.answers[0].model_dump()
    bad = jsonl(
        tmp_path / "bad.jsonl",
        [
            {"id": "1", "question": "q", "reference": "a", "response": "a"},
            {"id": "2", "question": "q", "reference": "a", "response": "b", "label": 7},
        ],
    )
    with pytest.raises(InputError) as e:
        read_labelled_answers(bad)
    assert (e.value.path, e.value.line) == (str(bad), 2)
    plain = jsonl(tmp_path / "plain.jsonl", [{"id": "1", "question": "q", "reference": "a", "response": "a"}])
    with pytest.raises(InputError, match="no labels"):
        read_labelled_answers(plain)


def test_a_second_person_s_answer_labels(answers, tmp_path):
    first = jsonl(
        tmp_path / "l1.jsonl",
        [{"id": "a1", "label": "correct", "assessor": "ann"}, {"id": "a2", "label": "partial", "assessor": "ann"}],
    )
    second = jsonl(
        tmp_path / "l2.jsonl",
        [{"id": "a2", "label": "hallucinated", "assessor": "bo"}, {"id": "a4", "label": "correct", "assessor": "bo"}],
    )
    la = read_labelled_answers(answers, first, second=second)
    assert la.second == {"a2": "hallucinated"}
    same = jsonl(tmp_path / "l3.jsonl", [{"id": "a1", "label": "correct", "assessor": "ann"}])
    with pytest.raises(InputError, match="same people"):
        read_labelled_answers(answers, first, second=same)


def test_the_bundled_answers_are_an_even_evouna_sample_check_can_read():
    from ragassay.data.people_samples import SAMPLES
    from ragassay.stages.answer_files import read_answers

    la = bundled_answers()
    assert len(la.answers) == 200 and Counter(la.labels.values()) == {"correct": 100, "incorrect": 100}
    cells = Counter((la.labels[a.id], a.id.split("-")[0], a.id.rsplit("-", 1)[1]) for a in la.answers)
    assert len(cells) == 20 and set(cells.values()) == {10}  # NQ and TQ x five models x both labels
    assert la.binary and la.skipped == {} and la.origin.describe() == "EVOUNA annotators"
    assert all(isinstance(a.reference, list) and a.reference and a.response.strip() for a in la.answers)
    assert "2305.12421" in la.citation and "Apache-2.0" in la.citation
    assert [a.id for a in read_answers(SAMPLES / "evouna_sample.jsonl")] == [a.id for a in la.answers]
    notice = (SAMPLES / "NOTICE").read_text()
    assert "Apache License 2.0" in notice and "2305.12421" in notice and "sampled and reformatted" in notice


# ------------------------------------------------------------------------------ public sets


class FakeDataset:
    def __init__(self, fail: str | None = None):
        self.fail = fail
        self.asked: list[list[str]] = []

    def _maybe(self, what: str) -> None:
        if self.fail == what:
            raise ConnectionError(f"could not reach the host for {what}")

    def queries_iter(self):
        self._maybe("queries")
        Q = types.SimpleNamespace
        return iter(
            [
                Q(query_id="19335", text="anthropological definition of environment"),
                Q(query_id="47923", text="axon terminals or synaptic knob definition"),
            ]
        )

    def qrels_iter(self):
        self._maybe("qrels")
        R = types.SimpleNamespace
        return iter(
            [
                R(query_id="19335", doc_id="1017759", relevance=0, iteration="0"),
                R(query_id="19335", doc_id="1082489", relevance=3, iteration="0"),
                R(query_id="47923", doc_id="1082489", relevance=2, iteration="0"),
                R(query_id="47923", doc_id="404", relevance=1, iteration="0"),
                R(query_id="31", doc_id="1017759", relevance=2, iteration="0"),
            ]
        )

    def docs_store(self):
        self._maybe("passages")
        D = types.SimpleNamespace
        texts = {"1017759": "Man and environment reciprocal relationship.", "1082489": "Ethnographic research is..."}

        def get_many(ids):
            self.asked.append(list(ids))
            return {i: D(doc_id=i, text=texts[i]) for i in ids if i in texts}

        return types.SimpleNamespace(get_many=get_many)


def fake_ir_datasets(monkeypatch, dataset: FakeDataset, loaded: list[str]) -> None:
    module = types.ModuleType("ir_datasets")

    def load(name):
        loaded.append(name)
        if dataset.fail == "load":
            raise OSError("offline")
        return dataset

    module.load = load
    monkeypatch.setitem(sys.modules, "ir_datasets", module)


@pytest.mark.parametrize("name, year", [("trec-dl-2019", "2019"), ("trec-dl-2020", "2020")])
def test_public_trec_dl_pairs_come_from_ir_datasets_with_only_the_judged_passages(monkeypatch, name, year):
    ds, loaded = FakeDataset(), []
    fake_ir_datasets(monkeypatch, ds, loaded)
    p = public_pairs(name)
    assert loaded == [f"msmarco-passage/trec-dl-{year}/judged"]
    assert ds.asked == [["1017759", "1082489", "404"]]  # the judged passages only, asked once
    assert p.grades == {("19335", "1017759"): 0, ("19335", "1082489"): 3, ("47923", "1082489"): 2}
    assert p.dropped == {"passage missing": 1, "query text missing": 1}
    assert (p.scale, p.relevant_from) == ((0, 3), 2) and p.second is None
    assert p.chunks["1082489"].text == "Ethnographic research is..." and set(p.queries) == {"19335", "47923"}
    assert f"TREC Deep Learning {year}" in p.source and "Craswell" in p.citation
    assert p.origin.kind == "people"


def test_without_ir_datasets_the_error_says_how_to_install_it_or_give_files(monkeypatch):
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import fails as when it is not installed
    with pytest.raises(InputError) as e:
        public_pairs("trec-dl-2019")
    assert "pip install 'ragassay[public]'" in str(e.value) and "read_graded_pairs" in str(e.value)
    assert "2019qrels-pass.txt" in str(e.value)


@pytest.mark.parametrize(
    "fail, what", [("load", "dataset"), ("queries", "queries"), ("qrels", "qrels"), ("passages", "passages")]
)
def test_a_failed_fetch_names_what_could_not_be_fetched(monkeypatch, fail, what):
    fake_ir_datasets(monkeypatch, FakeDataset(fail=fail), [])
    with pytest.raises(InputError) as e:
        public_pairs("trec-dl-2020")
    text = str(e.value)
    assert f"could not fetch the {what} of msmarco-passage/trec-dl-2020/judged" in text
    assert "give the files" in text and "2020qrels-pass.txt" in text


def test_an_unknown_public_set_lists_the_known_ones():
    with pytest.raises(InputError, match="trec-dl-2019, trec-dl-2020"):
        public_pairs("msmarco-dev")


# ------------------------------------------------------------------------------ the sample


def test_an_equal_share_per_class_and_the_rest_from_the_classes_with_more():
    labels = {f"a{i}": 0 for i in range(50)} | {f"b{i}": 1 for i in range(5)} | {f"c{i}": 3 for i in range(30)}
    got = stratified_sample(labels, 30, seed=7)
    counts = Counter(labels[k] for k in got)
    assert len(got) == len(set(got)) == 30
    assert counts[1] == 5 and counts[0] + counts[3] == 25 and abs(counts[0] - counts[3]) <= 1
    assert Counter(labels[k] for k in stratified_sample(labels, 9, seed=7)) == {0: 3, 1: 3, 3: 3}


def test_the_same_seed_gives_the_same_sample_whatever_the_input_order():
    labels = {f"k{i}": i % 4 for i in range(200)}
    items = list(labels.items())
    random.Random(1).shuffle(items)
    assert stratified_sample(dict(items), 40, 3) == stratified_sample(labels, 40, 3)
    assert stratified_sample(dict(reversed(items)), 40, 3) == stratified_sample(labels, 40, 3)
    assert stratified_sample(labels, 40, 3) != stratified_sample(labels, 40, 4)


def test_a_size_of_all_or_more_gives_all_and_fewer_than_the_classes_still_spreads():
    labels = {("q1", "文書"): 0, ("q1", "p2"): 1, ("q-é", "p2"): 2, ("q-é", "p3"): 3, ("q2", "p9"): 3}
    assert sorted(stratified_sample(labels, 5, 0)) == sorted(labels)
    assert sorted(stratified_sample(labels, 99, 0)) == sorted(labels)
    draws = [stratified_sample(labels, 3, seed) for seed in range(20)]
    for got in nonempty(draws):
        assert len({labels[k] for k in got}) == 3  # three keys from three classes
    assert len({frozenset(d) for d in draws}) > 1  # which classes are drawn follows the seed
    assert stratified_sample({}, 3, 0) == []


def test_unicode_keys_and_a_prefix_of_the_draw_is_spread_too():
    labels = {f"ответ-{i}": ("correct" if i % 2 else "incorrect") for i in range(20)}
    got = stratified_sample(labels, 10, 11)
    assert Counter(labels[k] for k in got) == {"correct": 5, "incorrect": 5}
    assert Counter(labels[k] for k in got[:4]) == {"correct": 2, "incorrect": 2}


@pytest.mark.parametrize("size", [0, -3])
def test_a_size_of_zero_or_less_is_a_value_error(size):
    with pytest.raises(ValueError, match="at least 1"):
        stratified_sample({"a": 1}, size, 0)


def test_the_wheel_ships_the_sample_and_offers_the_public_extra(built_wheel):
    import zipfile

    with zipfile.ZipFile(built_wheel) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        shipped = z.read("ragassay/samples/evouna_sample.jsonl").decode().splitlines()
    assert {"ragassay/samples/NOTICE", "ragassay/data/people_samples.py", "ragassay/data/public_sets.py"} <= names
    assert len(shipped) == 200
    assert "Provides-Extra: public" in meta
    assert any(
        line.startswith("Requires-Dist: ir_datasets") and 'extra == "public"' in line for line in meta.splitlines()
    )
