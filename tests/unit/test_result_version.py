"""evaluate writes its result without the validation models (data/result_version.py): the dict it
writes is the one its model reads back and dumps, field for field and in order, in memory and by
blocks, with and without per-query values, with and without qrels."""

from __future__ import annotations

import json

import pytest

from helpers import EXAMPLE
from ragassay.data.result_models import RESULT_VERSION, EvaluateResult
from ragassay.data.result_version import RESULT_VERSION as WRITTEN_VERSION
from ragassay.data.result_version import evaluate_result
from ragassay.data.results import load_result
from ragassay.metrics.blockwise import evaluate_files
from ragassay.metrics.evaluate import evaluate

QRELS, BM25 = EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt"


def dumped(d: dict) -> dict:
    return EvaluateResult.model_validate(d).to_dict()


@pytest.mark.parametrize("per_query", [True, False])
def test_the_written_result_is_the_models_dump_in_memory_and_by_blocks(per_query):
    in_memory = evaluate(QRELS, BM25, ["ndcg@10", "map", "P(rel=2)@5"]).to_dict(per_query=per_query)
    blocks = evaluate_files(
        QRELS, BM25, ["ndcg@10", "map", "P(rel=2)@5"], block_queries=4, keep_per_query=per_query
    ).to_dict(per_query=per_query)
    for d in (in_memory, blocks):
        assert list(dumped(d)) == list(d) and dumped(d) == d
        assert list(d)[:2] == ["kind", "version"] and d["version"] == RESULT_VERSION == WRITTEN_VERSION
        assert ("per_query" in d) is per_query and d["qrels"]["origin"]["describe"] == "example assessor 1"
    assert json.dumps(in_memory, sort_keys=True) == json.dumps(blocks, sort_keys=True)


def test_a_result_of_a_mapping_has_no_qrels_file_and_still_reads_back(tmp_path):
    d = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 2.0, "d2": 1.0}}, ["p@1"]).to_dict()
    assert dumped(d) == d and list(d) == [
        "kind",
        "version",
        "run",
        "aggregate",
        "per_query",
        "counts",
        "settings",
        "qrels",
        "rests_on",
    ]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(d))
    assert load_result(path) == d  # report and gate read it as its model


def test_a_field_the_model_lacks_is_refused_when_written():
    with pytest.raises(TypeError, match="not a field of an evaluate result: runs"):
        evaluate_result(runs="x")
    assert list(evaluate_result(qrels=None, run="r")) == ["kind", "version", "run", "qrels"]


def test_a_digest_made_beside_the_scoring_is_the_digest(monkeypatch):
    """A large qrels' digest is made on another thread while the run is scored: the result names the
    same digest as one made at once, and a qrels whose arrays change is hashed again."""
    from ragassay import metrics
    from ragassay.data.qrels_files import read_qrels

    plain = evaluate(QRELS, BM25, ["ndcg@10"]).to_dict()["qrels"]["digest"]
    monkeypatch.setattr(metrics.evaluate, "DIGEST_SOON_ROWS", 1)
    qrels = read_qrels(QRELS)
    assert evaluate(qrels, BM25, ["ndcg@10"]).to_dict()["qrels"]["digest"] == plain
    assert vars(qrels)["_digest_job"][2].name == "qrels digest"  # it was made on the other thread
    qrels = read_qrels(QRELS)
    qrels.digest_soon()
    assert qrels.digest() == plain
    qrels.grades = qrels.grades.copy()
    qrels.grades[0] += 1  # changed after the digest was started: hashed again, another digest
    assert qrels.digest() != plain
