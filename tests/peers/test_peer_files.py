"""What the peers save, read by the ragassay command where it belongs: RAGAS's and DeepEval's samples,
test cases and goldens (JSON, JSONL, CSV, camelCase) by ``check`` and every ``--queries``, LlamaIndex's
datasets, ranx's qrels and runs (json, trec, parquet; objects and DataFrames in the Python API),
BEIR and ir_datasets folders. The peers' files in tests/data/peers/ were written by the peers'
libraries (its README.md names each call); ranx's are written here by the ranx under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

import ragassay
from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.data.chunk_files import read_chunks
from ragassay.data.peer_files.sample_files import sample_rows
from ragassay.data.qrels_files import read_qrels
from ragassay.data.query_files import read_queries
from ragassay.data.run_files import read_run
from ragassay.errors import InputError
from ragassay.stages.answer_files import read_answers
from ragassay.stages.queries import read_query_items

PEERS = Path(__file__).parents[1] / "data" / "peers"
QUESTIONS = ["How long do refunds take?", "Où est la tour Eiffel ?", 'Who signs the "returns" form, and when?']
RESPONSES = ["Within 14 days.", "À Paris, sur le Champ-de-Mars.", "The customer signs it at pickup."]
PIPED = "Shipping | handling fees are not refunded."
FIRST = "Refunds are paid within 14 days."
THIRD = "The form is signed by the customer, at pickup."
# what DeepEval 4.3.1's own loaders give for the first case's retrieval_context from its CSV and JSONL files
DEEPEVAL_SPLIT = [FIRST, "Shipping ", " handling fees are not refunded."]
LINES = ["line-1", "line-2", "line-3"]


def _dry_check(path: Path, tmp_path: Path, capsys) -> dict:
    code = main(
        [
            "check",
            str(path),
            "-o",
            str(tmp_path / "checks.jsonl"),
            "--model",
            "gpt-4o-mini",
            "--no-cache",
            "--dry-run",
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


# ------------------------------------------------------------------------- answers for check


@pytest.mark.parametrize(
    "name", ["ragas_evaluation_dataset.jsonl", "ragas_evaluation_dataset.csv", "ragas_evaluation_dataset.json"]
)
def test_a_ragas_evaluation_dataset_is_checked_from_each_file_ragas_saves(name, tmp_path, capsys):
    items = read_answers(PEERS / name)
    assert [a.id for a in items] == LINES  # RAGAS's samples have no id: line-N by position
    assert [a.question for a in items] == QUESTIONS
    assert [a.response for a in items] == RESPONSES
    assert [a.reference for a in items] == ["14 days", "Paris", []]  # the third sample has no reference
    # RAGAS writes a list into its CSV as Python's text of it: read as that list, the '|' kept in its passage
    assert [a.contexts for a in items] == [[FIRST, PIPED], [], [THIRD]]
    est = _dry_check(PEERS / name, tmp_path, capsys)
    # the sample without a reference is an error record without a call; the other two are graded
    assert (est["items"], est["calls"], est["decided_without_call"]) == (3, 2, 1)


def test_the_sample_without_a_reference_is_an_error_record_naming_why(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "checks.jsonl"
    assert (
        main(["check", str(PEERS / "ragas_evaluation_dataset.csv"), "-o", str(out), "--no-cache", "--quiet"]) == 1
    )  # nothing graded: no endpoint here
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(records) == LINES
    assert records["line-3"]["error"].startswith("input: the reference is empty or missing (a RAGAS sample")
    assert records["line-1"]["error"].startswith("config: needs an LLM verdict")


@pytest.mark.parametrize(
    "name, contexts",
    [
        ("deepeval_test_cases.json", [[FIRST, PIPED], [], [THIRD]]),
        ("deepeval_test_cases_by_alias.jsonl", [[FIRST, PIPED], [], [THIRD]]),  # camelCase keys, real lists
        ("deepeval_test_cases.jsonl", [DEEPEVAL_SPLIT, [], [THIRD]]),  # joined with '|', split as DeepEval splits it
        ("deepeval_test_cases.csv", [DEEPEVAL_SPLIT, [], [THIRD]]),
    ],
)
def test_deepeval_test_cases_are_checked_from_each_file_deepeval_saves(name, contexts, tmp_path, capsys):
    items = read_answers(PEERS / name)
    assert [a.id for a in items] == LINES
    assert [a.question for a in items] == QUESTIONS
    assert [a.response for a in items] == RESPONSES
    assert [a.reference for a in items] == ["14 days", "Paris", "The customer, at pickup."]
    assert [a.contexts for a in items] == contexts
    est = _dry_check(PEERS / name, tmp_path, capsys)
    assert (est["items"], est["calls"], est["decided_without_call"]) == (3, 3, 0)


def test_a_deepeval_context_with_its_source_is_read_as_deepeval_reads_it(tmp_path):
    f = tmp_path / "cases.jsonl"
    f.write_text(
        json.dumps(
            {
                "input": "q?",
                "actual_output": "a",
                "expected_output": "a",
                "retrieval_context": "deepeval_source=doc7.pdf,deepeval_context=Passage, with a comma|plain passage",
            }
        )
        + "\n"
    )
    assert read_answers(f)[0].contexts == ["Passage, with a comma", "plain passage"]


def test_camel_and_snake_case_may_mix_but_not_disagree(tmp_path):
    f = tmp_path / "mixed.jsonl"
    f.write_text(
        json.dumps(
            {"input": "q?", "actualOutput": "Paris", "expected_output": "Paris", "retrievalContext": ["c1"]},
            ensure_ascii=False,
        )
        + "\n"
        + json.dumps({"user_input": "q2?", "response": "x", "reference": "y", "retrievedContexts": ["c2"]})
        + "\n"
    )
    items = read_answers(f)
    assert [(a.id, a.question, a.response, a.reference, a.contexts) for a in items] == [
        ("line-1", "q?", "Paris", "Paris", ["c1"]),
        ("line-2", "q2?", "x", "y", ["c2"]),
    ]
    f.write_text(
        json.dumps({"input": "q?", "actualOutput": "Paris", "actual_output": "Lyon", "expected_output": "P"}) + "\n"
    )
    with pytest.raises(InputError, match=r"mixed.jsonl:1: both 'actualOutput' and 'actual_output' are given"):
        read_answers(f)


def test_a_json_array_of_one_sample_and_odd_arrays(tmp_path):
    f = tmp_path / "one.json"
    f.write_text(
        json.dumps(
            [{"user_input": "Ω?", "response": "ω", "reference": "ω", "retrieved_contexts": []}], ensure_ascii=False
        )
    )
    assert [(a.id, a.question, a.contexts) for a in read_answers(f)] == [("line-1", "Ω?", [])]
    f.write_text("[]")
    with pytest.raises(InputError, match="one.json: no answers in file"):
        read_answers(f)
    f.write_text('[\n  {"input": "a?", "actual_output": "x", "expected_output": "x"},\n  "not a sample"\n]')
    with pytest.raises(InputError, match=r"one.json:3: element 2: expected a JSON object \(one sample\), got str"):
        read_answers(f)
    f.write_text('[\n  {"input": "a?", "actual_output": "x", "expected_output": "x"},\n  {"input": "b?",\n]')
    with pytest.raises(InputError, match=r"one.json:4: not valid JSON"):
        read_answers(f)
    f.write_text('[{"input": "a?", "actual_output": "x", "expected_output": "x"}]\n\n[]\n')
    with pytest.raises(InputError, match=r"one.json:3: not valid JSON \(more after the array's closing"):
        read_answers(f)


def test_a_json_object_that_is_not_a_list_of_samples_is_refused_saying_what_is_read(tmp_path):
    f = tmp_path / "obj.json"
    f.write_text(json.dumps({"samples": {"user_input": "q?"}}, indent=2))
    with pytest.raises(InputError, match=r"obj.json:1: a JSON object, not a list of samples: expected JSON Lines"):
        read_answers(f)
    with pytest.raises(InputError, match="it holds no answers to check: give it where queries are read"):
        read_answers(PEERS / "llamaindex_embedding_qa.json")


def test_a_missing_question_names_the_file_and_the_element_row_or_line(tmp_path):
    f = tmp_path / "a.json"
    f.write_text(
        json.dumps(
            [
                {"input": "a?", "actual_output": "x", "expected_output": "x"},
                {"actual_output": "y", "expected_output": "y"},
            ],
            indent=1,
        )
    )
    with pytest.raises(InputError, match=r"a.json:7: element 2: no question \(a field named question, user_input"):
        read_answers(f)
    c = tmp_path / "a.csv"
    c.write_text("user_input,response,reference\nq?,x,x\n,y,y\n")
    with pytest.raises(InputError, match=r"a.csv:3: row 2: no question"):
        read_answers(c)
    with pytest.raises(InputError, match=r"a.json:7: element 2: the query text is empty"):
        read_queries(f)


def test_ragas_csv_cells_that_are_not_lists_are_named(tmp_path):
    c = tmp_path / "r.csv"
    c.write_text("user_input,retrieved_contexts,response,reference\nq?,\"['a', 'b'\",x,x\n")
    with pytest.raises(InputError, match=r"r.csv:2: column retrieved_contexts: expected a list as RAGAS writes it"):
        read_answers(c)
    c.write_text("user_input,retrieved_contexts,response,reference\nq?,\"['a | b', '']\",x,x\n")
    assert read_answers(c)[0].contexts == ["a | b", ""]  # an empty passage stays one: it is in the list
    c.write_text("question;response\nq?;x\n")
    with pytest.raises(InputError, match=r"r.csv:1: cannot tell the format"):
        read_answers(c)


def test_ragas_context_ids_are_looked_up_in_the_chunks_and_pandas_index_is_no_field(tmp_path):
    chunks = {c.id: c for c in read_chunks(EXAMPLE / "chunks.jsonl")}
    some = list(chunks)[:2]
    c = tmp_path / "r.csv"  # DataFrame.to_csv() with its index: an unnamed first column
    c.write_text(f',user_input,retrieved_context_ids,response,reference\n0,q?,"{some!r}",x,y\n')
    [item] = read_answers(c, chunks)
    assert (item.id, item.context_ids, item.contexts, item.model_extra) == ("line-1", some, None, {})
    c.write_text(",user_input,retrieved_context_ids,response,reference\n0,q?,\"['nope']\",x,y\n")
    with pytest.raises(InputError, match=r"r.csv:2: context id 'nope' is not in the chunks file"):
        read_answers(c, chunks)


def test_ragassay_answers_keep_their_ids_fields_and_errors(tmp_path):
    f = tmp_path / "answers.jsonl"
    f.write_text(json.dumps({"id": 7, "question": "q?", "reference": "r", "response": "x", "myField": 1}) + "\n")
    item = read_answers(f)[0]
    assert (item.id, item.model_extra) == ("7", {"myField": 1})  # user fields are never renamed
    f.write_text(json.dumps({"id": "a", "question": "q?", "reference": "", "response": "x"}) + "\n")
    with pytest.raises(InputError, match=r"answers.jsonl:1: reference"):  # written empty: a mistake, refused
        read_answers(f)


# --------------------------------------------------------------------- queries: one id rule


def _retriever(tmp_path: Path) -> str:
    f = tmp_path / "search.py"
    f.write_text("def search(text):\n    return [('c-' + str(len(text)), 1.0)]\n")
    return f"{f}:search"


@pytest.mark.parametrize(
    "name, ids, answers",
    [
        ("ragas_testset.jsonl", LINES, ["14 days", "Paris", "unknown"]),
        ("ragas_testset.csv", LINES, ["14 days", "Paris", "unknown"]),
        ("ragas_testset.json", LINES, ["14 days", "Paris", "unknown"]),
        ("ragas_evaluation_dataset.jsonl", LINES, ["14 days", "Paris", None]),
        ("deepeval_goldens.json", ["q1", "q2", "q3"], ["14 days", "Paris", "The customer, at pickup."]),
        ("deepeval_goldens.jsonl", ["q1", "q2", "q3"], ["14 days", "Paris", "The customer, at pickup."]),
        ("deepeval_goldens.csv", ["q1", "q2", "q3"], ["14 days", "Paris", "The customer, at pickup."]),
        ("deepeval_test_cases_by_alias.jsonl", LINES, ["14 days", "Paris", "The customer, at pickup."]),
        ("llamaindex_labelled_rag.json", LINES, ["14 days", "Paris", "The customer, at pickup."]),
        ("llamaindex_query_response.json", ["0", "1", "2"], RESPONSES),
        ("llamaindex_embedding_qa.json", ["node-q0", "node-q1", "node-q2"], [None, None, None]),
    ],
)
def test_test_sets_and_goldens_are_read_as_queries_by_every_queries_reader(name, ids, answers, tmp_path, capsys):
    assert read_queries(PEERS / name) == dict(zip(ids, QUESTIONS))
    items = read_query_items(PEERS / name)
    assert [(q.id, q.text, q.answer) for q in items] == list(zip(ids, QUESTIONS, answers))
    run = tmp_path / "run.txt"
    assert (
        main(
            [
                "retrieve",
                "--retriever",
                _retriever(tmp_path),
                "--queries",
                str(PEERS / name),
                "-k",
                "1",
                "-o",
                str(run),
                "--quiet",
            ]
        )
        == 0
    ), capsys.readouterr()
    assert sorted(read_run(run).queries) == sorted(ids)


def test_a_ragas_test_set_and_its_answers_meet_by_the_shared_id_rule(tmp_path, capsys):
    """retrieve over the test set, then check the answers RAGAS saved for the same samples with that
    run and qrels: every answer meets its query by id (line-N on both sides)."""
    run = tmp_path / "run.txt"
    assert (
        main(
            [
                "retrieve",
                "--retriever",
                _retriever(tmp_path),
                "--queries",
                str(PEERS / "ragas_testset.csv"),
                "-k",
                "1",
                "-o",
                str(run),
                "--quiet",
            ]
        )
        == 0
    )
    answers = read_answers(PEERS / "ragas_evaluation_dataset.jsonl")
    assert sorted(read_run(run).queries) == sorted(a.id for a in answers) == LINES
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 c-{len(t)} 1\n" for q, t in zip(LINES, QUESTIONS)))
    capsys.readouterr()
    assert (
        main(
            [
                "check",
                str(PEERS / "ragas_evaluation_dataset.jsonl"),
                "-o",
                str(tmp_path / "c.jsonl"),
                "--run",
                str(run),
                "--qrels",
                str(qrels),
                "--model",
                "gpt-4o-mini",
                "--no-cache",
                "--dry-run",
                "--format",
                "json",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert json.loads(captured.out)["items"] == 3
    assert "warning" not in captured.err  # every id met: nothing to warn about
    # DeepEval's test cases (line-N too) meet it as well; a run of other ids meets nothing: said, exit 1
    assert (
        main(
            [
                "check",
                str(PEERS / "deepeval_test_cases.json"),
                "-o",
                str(tmp_path / "c2.jsonl"),
                "--run",
                str(run),
                "--qrels",
                str(qrels),
                "--model",
                "gpt-4o-mini",
                "--no-cache",
                "--dry-run",
            ]
        )
        == 0
    )
    run.write_text("q1 Q0 c-1 1 1.0 r\n")
    assert (
        main(
            [
                "check",
                str(PEERS / "ragas_evaluation_dataset.jsonl"),
                "-o",
                str(tmp_path / "c3.jsonl"),
                "--run",
                str(run),
                "--qrels",
                str(qrels),
                "--model",
                "gpt-4o-mini",
                "--no-cache",
                "--dry-run",
            ]
        )
        == 1
    )
    assert "no query ids in common between the answers" in capsys.readouterr().err


def test_ragassays_own_exports_are_read_back_with_their_ids(tmp_path):
    from ragassay.stages.generate import Question, export

    chunks = read_chunks(EXAMPLE / "chunks.jsonl")[:3]
    questions = [
        Question(
            id=f"gen-{i}",
            question=f"Question {i} ÷ |pipe|?",
            answer=f"answer {i}",
            difficulty="easy",
            kind="fact",
            chunk_ids=[c.id],
        )
        for i, c in enumerate(chunks)
    ]
    [goldens] = export(questions, chunks, "deepeval-goldens", tmp_path / "de")
    assert read_queries(goldens) == {q.id: q.question for q in questions}  # additional_metadata.id
    [li] = export(questions, chunks, "llamaindex-embedding-qa", tmp_path / "li")
    assert read_queries(li) == {q.id: q.question for q in questions}
    assert read_qrels(li).to_dict() == {q.id: {q.chunk_ids[0]: 1} for q in questions}
    assert [c.id for c in read_chunks(li)] == [c.id for c in chunks]
    [testset] = export(questions, chunks, "ragas-testset", tmp_path / "rt")
    rows = [json.loads(line) for line in testset.read_text().splitlines()]
    carried = [r.get("id") or (r.get("metadata") or {}).get("id") for r in rows]
    # the export may carry the question ids (then they come back) or not (then line-N, as check reads it)
    expected = [q.id for q in questions] if all(carried) else [f"line-{i}" for i in range(1, 4)]
    assert read_queries(testset) == dict(zip(expected, (q.question for q in questions)))


def test_queries_of_peers_that_cannot_be_read_say_why(tmp_path):
    f = tmp_path / "multi.jsonl"
    f.write_text(json.dumps({"user_input": [{"content": "hi", "type": "human"}], "reference": "x"}) + "\n")
    with pytest.raises(InputError, match=r"multi.jsonl:1: a multi-turn sample"):
        read_queries(f)
    with pytest.raises(InputError, match=r"multi.jsonl:1: a multi-turn sample"):
        read_answers(f)
    f.write_text(json.dumps({"scenario": "a refund", "turns": [], "expected_outcome": "refunded"}) + "\n")
    with pytest.raises(InputError, match=r"multi.jsonl:1: a multi-turn sample \(a conversation"):
        read_queries(f)
    f.write_text(
        json.dumps(
            [{"input": "a?", "additional_metadata": {"id": "q1"}}, {"input": "b?", "additional_metadata": {"id": "q1"}}]
        )
    )
    with pytest.raises(InputError, match=r"element 2: query id 'q1' appears twice \(first at element 1\)"):
        read_queries(f)
    f.write_text(json.dumps([{"input": "a?", "additional_metadata": {"id": "q 1"}}]))
    with pytest.raises(InputError, match=r"query id 'q 1' is empty or contains whitespace"):
        read_queries(f)


def test_ragassays_own_queries_files_keep_their_reader(tmp_path):
    f = tmp_path / "q.tsv"
    f.write_text("q1\tWhat, exactly?\nq2\tsecond\n")
    assert read_queries(f) == {"q1": "What, exactly?", "q2": "second"}
    f.write_text(json.dumps({"id": "a", "question": "x?"}) + "\n" + json.dumps({"question": "y?"}) + "\n")
    with pytest.raises(InputError, match=r"q.tsv:2: missing field 'id'"):  # a line without its id: refused
        read_queries(f)


# ------------------------------------------------------------------------------ LlamaIndex


def test_a_llamaindex_embedding_qa_dataset_gives_queries_qrels_and_chunks(tmp_path, capsys):
    f = PEERS / "llamaindex_embedding_qa.json"
    assert read_qrels(f).to_dict() == {"node-q0": {"node-0": 1}, "node-q1": {"node-1": 1}, "node-q2": {"node-2": 1}}
    assert [(c.id, c.text) for c in read_chunks(f)] == [
        ("node-0", FIRST),
        ("node-1", "La tour Eiffel est à Paris."),
        ("node-2", "Returns: the customer signs at pickup."),
    ]
    run = tmp_path / "run.txt"
    run.write_text(
        "node-q0 Q0 node-0 1 2.0 r\nnode-q0 Q0 node-1 2 1.0 r\nnode-q1 Q0 node-0 1 2.0 r\nnode-q1 Q0 node-1 2 2.0 r\n"
    )  # a tie: node-1 first (id descending)
    assert main(["evaluate", str(f), str(run), "-m", "mrr,recall@1", "--format", "json"]) == 0
    agg = json.loads(capsys.readouterr().out)["aggregate"]
    assert (agg["mrr"], agg["recall@1"]) == (1.0, 1.0)
    with pytest.raises(InputError, match="its relevant_docs are qrels, not a run"):
        read_run(f)


# ----------------------------------------------------------------------------------- ranx

# The longest document id has five characters, as in test_measure_names_peers: ranx keeps ids in numpy
# arrays whose type is their width ("<U5"), and numba compiles its code again for each width (about 13 s of
# CPU in a fresh environment, where nothing is cached); with the same width the worker that runs the ranx
# tests compiles once.
QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d|é:4": 1, "d5": 3}, "q:é3": {"d|1": 1}}
RUN = {
    "q1": {"d2": 3.0, "d1": 2.0, "d9": 2.0, "d3": 1.0},
    "q2": {"d5": 2.0, "d6": 2.0, "d|é:4": 0.5},
    "q:é3": {"d|1": 0.5, "d0": 0.5},
}  # ties: the id descending goes first, as in trec_eval
METRICS = ["ndcg@10", "map", "mrr", "p@2", "recall@2"]


@pytest.fixture(scope="module")
def trec_eval_values() -> dict[str, float]:
    per = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10", "map", "recip_rank", "P.2", "recall.2"}).evaluate(RUN)
    names = {"ndcg@10": "ndcg_cut_10", "map": "map", "mrr": "recip_rank", "p@2": "P_2", "recall@2": "recall_2"}
    return {m: sum(v[names[m]] for v in per.values()) / len(per) for m in METRICS}


def _ranx():
    ranx = pytest.importorskip("ranx", reason="ranx (the bench extra) makes its own files here")
    qrels = ranx.Qrels.from_dict(QRELS)
    run = ranx.Run.from_dict(RUN, name="bm25")
    return ranx, qrels, run


def _aggregate(qrels, run) -> dict[str, float]:
    return ragassay.evaluate(qrels, run, METRICS).aggregate


@pytest.mark.parametrize("kind", ["json", "trec", "parquet"])
def test_ranx_saved_qrels_and_runs_are_evaluated_as_the_trec_files(kind, tmp_path, capsys, trec_eval_values):
    _, qrels, run = _ranx()
    qp, rp = tmp_path / f"qrels.{kind}", tmp_path / f"run.{kind}"
    qrels.save(str(qp), kind=kind)
    run.save(str(rp), kind=kind)
    assert read_qrels(qp).to_dict() == QRELS
    assert read_run(rp).to_dict() == RUN
    assert main(["evaluate", str(qp), str(rp), "-m", ",".join(METRICS), "--format", "json"]) == 0
    agg = json.loads(capsys.readouterr().out)["aggregate"]
    for m in nonempty(METRICS):
        assert agg[m] == pytest.approx(trec_eval_values[m], abs=1e-12), m
    assert main(["compare", str(qp), str(rp), str(rp), "-m", "ndcg@10", "--format", "json"]) == 0
    capsys.readouterr()


def test_a_ranx_lz4_run_is_refused_saying_why(tmp_path):
    _, _, run = _ranx()
    pytest.importorskip("lz4", reason="ranx writes lz4 with the lz4 package")
    p = tmp_path / "run.lz4"
    run.save(str(p), kind="lz4")
    with pytest.raises(
        InputError,
        match=r"run.lz4: an LZ4-compressed file \(ranx's kind='lz4'\): ragassay does not "
        "read LZ4",
    ):
        read_run(p)


def test_ranx_objects_dataframes_and_ir_measures_tuples_give_the_trec_files_metrics(tmp_path, trec_eval_values):
    _, qrels, run = _ranx()
    import pandas as pd

    qp, rp = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    rp.write_text("".join(f"{q} Q0 {d} 1 {s} r\n" for q, docs in RUN.items() for d, s in docs.items()))
    from_files = _aggregate(str(qp), str(rp))
    for m in nonempty(METRICS):
        assert from_files[m] == pytest.approx(trec_eval_values[m], abs=1e-12), m
    assert _aggregate(qrels, run) == from_files  # ranx objects
    assert _aggregate(qrels.to_dataframe(), run.to_dataframe()) == from_files  # ranx's q_id, doc_id, score
    ir_q = pd.DataFrame(
        [(q, d, g) for q, docs in QRELS.items() for d, g in docs.items()], columns=["query_id", "doc_id", "relevance"]
    )
    ir_r = pd.DataFrame(
        [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()], columns=["query_id", "doc_id", "score"]
    )
    assert _aggregate(ir_q, ir_r) == from_files  # ir_measures' column names
    ir_measures = pytest.importorskip("ir_measures")
    tuples_q = [ir_measures.Qrel(q, d, g) for q, docs in QRELS.items() for d, g in docs.items()]
    tuples_r = [ir_measures.ScoredDoc(q, d, s) for q, docs in RUN.items() for d, s in docs.items()]
    assert _aggregate(tuples_q, tuples_r) == from_files  # ir_measures' Qrel / ScoredDoc tuples
    assert ragassay.compare(qrels, {"a": run, "b": str(rp)}, ["ndcg@10"]) is not None
    assert ragassay.read_run(str(rp)).name == "r" and ragassay.data.coerce.coerce_run(run).name == "bm25"


def test_ranx_shaped_files_with_bad_values_name_the_pair(tmp_path):
    q = tmp_path / "q.json"
    q.write_text(json.dumps({"q1": {"d1": 2.5}}, indent=2))
    with pytest.raises(
        InputError, match=r"q.json: query 'q1', document 'd1': grade must be an integer within ±2147483647, got 2.5"
    ):
        read_qrels(q)
    r = tmp_path / "r.json"
    r.write_text(json.dumps({"q1": {"d1": "high"}}))
    with pytest.raises(InputError, match=r"r.json: query 'q1', document 'd1': score must be a finite number"):
        read_run(r)
    r.write_text(json.dumps({"query_id": "q1", "chunk_id": "d1", "score": 1.5}) + "\n")  # ragassay's JSONL: unchanged
    assert read_run(r).to_dict() == {"q1": {"d1": 1.5}}


# --------------------------------------------------------------------- BEIR and ir_datasets


def _beir(root: Path, splits: tuple[str, ...]) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "", "text": "refunds"}) + "\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "refund time?", "metadata": {}}) + "\n")
    for i, s in enumerate(splits):
        (root / "qrels" / f"{s}.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t{i + 1}\n")
    return root


def test_a_beir_folder_with_several_splits_asks_which_even_with_a_test_split(tmp_path, capsys):
    folder = _beir(tmp_path / "nfcorpus", ("dev", "test", "train"))
    with pytest.raises(
        InputError,
        match=r"several qrels splits; name one, e.g. .*qrels/test.tsv \(the splits: "
        r"dev.tsv, test.tsv, train.tsv\)",
    ):
        read_qrels(folder)
    assert read_qrels(folder / "qrels" / "train.tsv").to_dict() == {"q1": {"d1": 3}}
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    assert main(["evaluate", str(folder / "qrels" / "test.tsv"), str(run), "-m", "mrr", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["aggregate"]["mrr"] == 1.0
    assert main(["evaluate", str(folder), str(run)]) == 1
    assert "name one" in capsys.readouterr().err
    one = _beir(tmp_path / "scifact", ("dev",))
    assert read_qrels(one).to_dict() == {"q1": {"d1": 1}}  # one split: that one


def test_ir_datasets_exports_are_read_as_chunks_queries_qrels_and_runs(tmp_path):
    docs = tmp_path / "docs.jsonl"  # ir_datasets export DATASET docs --format jsonl
    docs.write_text(json.dumps({"doc_id": "MED-10", "text": "Statins…", "title": "A"}) + "\n")
    assert [(c.id, c.text, c.title) for c in read_chunks(docs)] == [("MED-10", "Statins…", "A")]
    queries = tmp_path / "queries.jsonl"  # ir_datasets export DATASET queries --format jsonl
    queries.write_text(json.dumps({"query_id": "PLAIN-2", "text": "Do cholesterol statin drugs cause…"}) + "\n")
    assert read_queries(queries) == {"PLAIN-2": "Do cholesterol statin drugs cause…"}
    qrels = tmp_path / "qrels"  # ir_datasets export DATASET qrels (TREC)
    qrels.write_text("PLAIN-2 0 MED-10 2\n")
    assert read_qrels(qrels).to_dict() == {"PLAIN-2": {"MED-10": 2}}


def test_llamaindex_datasets_written_on_one_line_are_documents_too(tmp_path):
    for name in nonempty(["llamaindex_labelled_rag.json", "llamaindex_query_response.json"]):
        f = tmp_path / name
        f.write_text(json.dumps(json.loads((PEERS / name).read_text()), ensure_ascii=False))
        assert list(read_queries(f).values()) == QUESTIONS, name


def test_judge_takes_deepeval_goldens_as_queries_with_their_expected_output_as_the_note(tmp_path, capsys):
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(json.dumps({"id": f"c{i}", "text": f"passage {i}"}) + "\n" for i in (1, 2)))
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 c1 1 2.0 r\nq1 Q0 c2 2 1.0 r\nq2 Q0 c2 1 1.0 r\n")
    assert (
        main(
            [
                "judge",
                "--queries",
                str(PEERS / "deepeval_goldens.csv"),
                "--chunks",
                str(chunks),
                "--run",
                str(run),
                "-o",
                str(tmp_path / "j.jsonl"),
                "--model",
                "gpt-4o-mini",
                "--no-cache",
                "--dry-run",
                "--format",
                "json",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert (json.loads(captured.out)["items"], json.loads(captured.out)["calls"]) == (3, 3)  # q1 x 2, q2 x 1
    assert "1 of 3 in the queries are not in the run (e.g. q3)" in captured.err


# ------------------------------------------------------- ranx JSON: grades as written, keys given twice


@pytest.mark.parametrize(
    "written, expected",
    [
        ("1e2", "got 1e2"),
        ("2.5", "got 2.5"),
        ("1E0", "got 1E0"),
        ("true", "got true"),
        ("null", "got null"),
        ('"3"', 'got "3"'),
        ("2147483648", "within ±2147483647, got 2147483648"),
    ],
)
def test_a_ranx_json_grade_that_is_no_integer_as_written_is_refused_naming_the_pair(written, expected, tmp_path):
    q = tmp_path / "q.json"
    q.write_text('{\n  "q01": {\n    "ok-1": 1,\n    "refund-01": ' + written + "\n  }\n}\n")
    with pytest.raises(
        InputError,
        match=rf"q.json: query 'q01', document 'refund-01': grade must be an integer.*"
        rf"{expected.replace('+', '[+]')}( \(a value with a fraction is a score: "
        r"the file looks like a run, not qrels; give it as a RUN\))?$",
    ):
        read_qrels(q)


def test_a_ranx_json_grade_written_as_a_whole_float_is_that_integer(tmp_path):
    q = tmp_path / "q.json"
    q.write_text('{"q01": {"refund-01": 3.0, "a:b": -1.00, "x": 0}, "q:2": {"y": 2}}')
    assert read_qrels(q).to_dict() == {"q01": {"refund-01": 3, "a:b": -1, "x": 0}, "q:2": {"y": 2}}


def test_a_key_given_twice_in_ranx_json_is_refused_not_collapsed(tmp_path):
    q = tmp_path / "q.json"
    q.write_text('{"q01": {"refund-01": 1, "refund-01": 2}}')
    with pytest.raises(InputError, match=r"q.json: document 'refund-01' is judged twice for query 'q01'"):
        read_qrels(q)
    q.write_text(
        json.dumps({"refund-01": {"q01": 1}, "q01": {"refund-01": 1, "x": 1}}, indent=2).replace('"x"', '"refund-01"')
    )  # ids that are also the other kind's ids: the right lines
    with pytest.raises(
        InputError,
        match=r"q.json: document 'refund-01' is judged twice for query 'q01' "
        r"\(lines 6 and 7\); keep one",
    ):
        read_qrels(q)
    q.write_text('{\n  "q01": {"a": 1},\n  "q02": {"a": 1},\n  "q01": {"b": 2}\n}')
    with pytest.raises(InputError, match=r"q.json: query 'q01' is given twice .*\(lines 2 and 4\)"):
        read_qrels(q)
    r = tmp_path / "r.json"
    r.write_text('{"q01": {"d": 1.0, "e": 5.0, "d": 9.0}}')
    with pytest.raises(InputError, match=r"r.json: document 'd' is listed twice for query 'q01'.*--dedupe"):
        read_run(r)
    assert read_run(r, dedupe=True).to_dict() == {"q01": {"d": 9.0, "e": 5.0}}
    r.write_text('{"q01": {"d": 9.0, "e": 5.0, "d": 1.0}}')  # the highest kept, whichever comes last
    assert read_run(r, dedupe=True).to_dict() == {"q01": {"d": 9.0, "e": 5.0}}
    r.write_text('{"q01": {"d": 9.0, "e": 5.0}, "q01": {"f": 1.0}}')
    with pytest.raises(InputError, match=r"r.json: query 'q01' is given twice"):
        read_run(r, dedupe=True)


@pytest.mark.parametrize(
    "text, found",
    [
        ('{"q01": ["refund-01"]}', r"found 'q01': a list \(\[\"refund-01\"\]\)"),
        ('{"q01": 1, "q02": {"d": 1}}', r"found 'q01': a number \(1\)"),
        ("{}", r"an empty JSON object: no judgments"),
    ],
)
def test_a_ranx_json_of_the_wrong_shape_says_what_shape_was_expected(text, found, tmp_path):
    q = tmp_path / "q.json"
    q.write_text(text)
    with pytest.raises(InputError, match=found) as e:
        read_qrels(q)
    assert "ranx's {query: {document: grade}}" in str(e.value) and "query_id (keys" not in str(e.value)


@pytest.mark.parametrize(
    "ragas, deepeval",
    [
        ("user_input", "input"),
        ("response", "actual_output"),
        ("reference", "expected_output"),
        ("retrieved_contexts", "retrieval_context"),
    ],
)
def test_a_ragas_and_a_deepeval_spelling_of_one_field_may_agree_but_not_differ(ragas, deepeval, tmp_path):
    base = {"user_input": "q?", "response": "Paris", "reference": "Paris", "retrieved_contexts": ["c1"]}
    other = ["c1"] if deepeval == "retrieval_context" else base[ragas]
    f = tmp_path / "both.jsonl"
    f.write_text(json.dumps({**base, deepeval: other}) + "\n")
    (a,) = read_answers(f)
    assert (a.question, a.response, a.reference, a.contexts) == ("q?", "Paris", "Paris", ["c1"])
    differing = ["c1", "c2"] if deepeval == "retrieval_context" else "Lyon?"
    f.write_text(json.dumps(base) + "\n" + json.dumps({deepeval: differing, **base}) + "\n")
    with pytest.raises(
        InputError,
        match=rf"both.jsonl:2: both '{deepeval}' and '{ragas}' are given, with "
        r"different values: keep one",
    ):
        read_answers(f)
    c = tmp_path / "both.csv"  # in a CSV too, and whichever column comes first
    lists = ragas == "retrieved_contexts"
    same, differ = ("\"['c1']\",c1", "\"['c1']\",c2") if lists else ("same,same", "Paris,Lyon")
    c.write_text(
        ("" if ragas == "user_input" else "user_input,")
        + f"{ragas},{deepeval}\n"
        + ("" if ragas == "user_input" else "q?,")
        + same
        + "\n"
        + ("" if ragas == "user_input" else "q?,")
        + differ
        + "\n"
    )
    assert len(sample_rows(c.with_name("ok.csv"), c.read_bytes().rsplit(b"\n", 2)[0] + b"\n")) == 1
    with pytest.raises(InputError, match=rf"both.csv:3: both '{ragas}' and '{deepeval}' are given"):
        sample_rows(c)


def test_a_sample_that_does_not_fit_is_named_by_the_field_as_the_file_spells_it(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text(
        json.dumps({"user_input": "q?", "response": "a", "reference": "b", "retrieved_contexts": "one"}) + "\n"
    )
    with pytest.raises(InputError, match=r"a.jsonl:1: retrieved_contexts: Input should be a valid list$"):
        read_answers(f)
    f.write_text(json.dumps({"input": "q?", "actual_output": 3, "expected_output": "b"}) + "\n")
    with pytest.raises(InputError, match=r"a.jsonl:1: actual_output: Input should be a valid string$"):
        read_answers(f)
    c = tmp_path / "a.csv"
    c.write_text("user_input,reference\nq?,b\n")
    with pytest.raises(InputError, match=r"a.csv:2: response \(or actual_output\): Field required$"):
        read_answers(c)
    c.write_text("question,response,reference,contexts\nq?,a,b,c\n")  # ragassay's own names stay as they are
    with pytest.raises(InputError, match=r"a.csv:2: contexts: Input should be a valid list$"):
        read_answers(c)


def test_ids_holding_colons_quotes_and_backslashes_keep_the_key_given_twice_check(tmp_path):
    q = tmp_path / "q.json"
    fine = {'q\\":1': {'a"b': 1, "c:d": 2, "http://x/y": 3}, "q2:": {"\\": 0}}
    q.write_text(json.dumps(fine))
    assert read_qrels(q).to_dict() == fine
    fine.pop("q2:")
    q.write_text(json.dumps(fine)[:-2] + ', "a\\"b": 2}}')
    with pytest.raises(InputError, match=r"""document 'a"b' is judged twice for query 'q\\\\":1'"""):
        read_qrels(q)
    r = tmp_path / "r.json"
    r.write_text(json.dumps({"q:1": {"d:1": 0.5, "d:2": 0.25}})[:-2] + ', "d:1": 0.75}}')
    assert read_run(r, dedupe=True).to_dict() == {"q:1": {"d:1": 0.75, "d:2": 0.25}}
    with pytest.raises(InputError, match=r"document 'd:1' is listed twice for query 'q:1'"):
        read_run(r)


def test_a_llamaindex_relevant_doc_listed_twice_is_named_not_collapsed(tmp_path):
    f = tmp_path / "qa.json"
    doc = {
        "queries": {"q1": "refund?", "q2": "hours?"},
        "corpus": {"d1": "a", "d2": "b"},
        "relevant_docs": {"q1": ["d1", "d2"], "q2": ["d2", "d2"]},
    }
    f.write_text(json.dumps(doc, indent=2))
    with pytest.raises(InputError, match=r"qa.json: document 'd2' is judged twice for query 'q2'"):
        read_qrels(f)
    doc["relevant_docs"]["q2"] = ["d2", 7]  # an integer id is its digits
    f.write_text(json.dumps(doc, indent=2))
    assert read_qrels(f).to_dict() == {"q1": {"d1": 1, "d2": 1}, "q2": {"d2": 1, "7": 1}}


def test_a_null_fraction_or_boolean_id_in_a_parquet_table_or_dataframe_is_refused_naming_its_row(tmp_path):
    import pandas as pd

    pq = tmp_path / "q.parquet"
    pd.DataFrame({"q_id": ["q1", "q1", "q2"], "doc_id": ["d1", None, "d2"], "score": [1, 2, 0]}).to_parquet(pq)
    with pytest.raises(InputError, match=r"q.parquet: row 2: document id must be a string, got null$"):
        read_qrels(pq)
    pd.DataFrame({"q_id": [1, 1, 2], "doc_id": [7, 8, 7], "score": [0.5, 0.25, 1.0]}).to_parquet(pq)  # integers: digits
    assert read_run(pq).to_dict() == {"1": {"7": 0.5, "8": 0.25}, "2": {"7": 1.0}}
    frame = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "relevance": [1, 1]})
    frame["query_id"] = [True, "q2"]
    with pytest.raises(InputError, match=r"row 1: query id must be a string, got true$"):
        ragassay.data.coerce.coerce_qrels(frame)
    frame["query_id"] = ["q1", 3.5]
    with pytest.raises(InputError, match=r"row 2: query id must be a string, got 3.5$"):
        ragassay.data.coerce.coerce_qrels(frame)


@pytest.mark.parametrize("text", ['{"q1": {}, "q2": {"d3": 1.0}}', '{"q1": {}, "q2": {"d3": 1.0, "d3": 2.0}}'])
def test_a_ranx_run_with_an_empty_ranking_scores_it_0_as_the_dict_does(tmp_path, text):
    """ranx's JSON run keeps a query asked and answered with nothing ({"q1": {}}): it scores 0, as the
    same dict in Python and ranx itself score it, not "missing from the run" (read fast and, with a key
    given twice, by the exact reader, which refuses that file)."""
    qrels, run = tmp_path / "q.json", tmp_path / "r.json"
    qrels.write_text('{"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}}')
    run.write_text(text)
    if '"d3": 1.0, "d3"' in text:
        with pytest.raises(InputError, match="document 'd3' is listed twice|given twice"):
            read_run(run)
        return
    read = read_run(run)
    assert read.queries == ["q2", "q1"] and len(read) == 1
    from_file = ragassay.evaluate(qrels, run, ["ndcg@10", "p@5"])
    from_dict = ragassay.evaluate(
        {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}}, {"q1": {}, "q2": {"d3": 1.0}}, ["ndcg@10", "p@5"]
    )
    assert from_file.per_query == from_dict.per_query and from_file.aggregate == {"ndcg@10": 0.5, "p@5": 0.1}
    assert from_file.counts["qrels_queries_missing_from_run"] == 0
