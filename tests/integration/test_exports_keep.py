"""Exports keep the set's ids, and LlamaIndex and LangChain retrievers are evaluated directly.

Two halves:
- every export, parsed by the schema of the tool it is for, gives back each question's source chunk
  ids in order (odd ids included), and RAGAS's id-based context metrics run on the export against a
  run ragassay made, with the values ragassay's recall and precision give;
- ``ragassay retrieve`` / ``ragassay.api.retrieve`` take a retriever object or a factory: fakes made
  after the libraries' interfaces (llama_index.core.schema NodeWithScore and TextNode,
  BaseRetriever.retrieve; langchain_core.documents.Document, BaseRetriever.invoke) always run; the
  real libraries run where a Python has them (this one, or RAGASSAY_EXPORT_PYTHONS as in
  tests/test_exports_load.py), else those tests skip naming the package.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid

import pytest
from test_exports_load import python_with

import ragassay
from helpers import EXAMPLE, ROOT, nonempty
from ragassay import api
from ragassay.cli import main
from ragassay.data.records import Chunk, Question
from ragassay.errors import InputError, RagassayError, UsageError
from ragassay.stages.exports import EXPORTS, export

CHUNKS = ragassay.read_chunks(EXAMPLE / "chunks.jsonl")
QUERIES = ragassay.read_queries(EXAMPLE / "queries.jsonl")
WORDS = re.compile(r"[a-z0-9]+")


def overlap(query: str, text: str) -> int:
    return len(set(WORDS.findall(query.lower())) & set(WORDS.findall(text.lower())))


def scored(query: str, k: int = 5) -> list[tuple[str, int]]:
    """The fakes' search: chunks by words shared with the query, ties in the example's order (many)."""
    pairs = [(c.id, overlap(query, c.text)) for c in CHUNKS]
    return sorted((p for p in pairs if p[1] > 0), key=lambda p: -p[1])[:k]


def trec_order(pairs):
    """trec_eval's order, written out: score descending, then id descending."""
    return sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)


# ------------------------------------------------------------------ fakes after the libraries' interfaces


class TextNode:
    """llama_index.core.schema.TextNode: ``id_`` (``node_id``), ``metadata``, ``ref_doc_id`` (its SOURCE)."""

    def __init__(self, id_: str, text: str, metadata: dict | None = None, ref_doc_id: str | None = None):
        self.id_, self.text, self.metadata, self.ref_doc_id = id_, text, metadata or {}, ref_doc_id

    @property
    def node_id(self) -> str:
        return self.id_


class NodeWithScore:
    """llama_index.core.schema.NodeWithScore: ``node`` and ``score`` (None when the retriever has none)."""

    def __init__(self, node: TextNode, score: float | None = None):
        self.node, self.score = node, score


class LlamaRetriever:
    """A BaseRetriever: ``retrieve(str_or_query_bundle) -> list[NodeWithScore]``, best first."""

    def __init__(self, node_ids=None, scores=True):
        self.node_ids, self.scores = node_ids or (lambda chunk_id: chunk_id), scores

    def retrieve(self, query_str: str) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                TextNode(self.node_ids(c), "text", {"chunk_id": c}, ref_doc_id=c), float(s) if self.scores else None
            )
            for c, s in scored(query_str)
        ]


class Document:
    """langchain_core.documents.Document: ``page_content``, ``metadata``, ``id`` (None unless a store set it)."""

    def __init__(self, page_content: str, metadata: dict | None = None, id: str | None = None):
        self.page_content, self.metadata, self.id = page_content, metadata or {}, id


class LangChainRetriever:
    """A BaseRetriever (a Runnable): ``invoke(input, config=None) -> list[Document]``, no scores."""

    def __init__(self, with_ids: bool = False):
        self.with_ids = with_ids

    def invoke(self, input: str, config=None, **kwargs) -> list[Document]:
        return [
            Document("text", {"source": "faq.md", "chunk_id": c}, c if self.with_ids else None)
            for c, _ in scored(input)
        ]


# ------------------------------------------------------------------ retrievers as objects


def test_a_llamaindex_retriever_gives_its_node_ids_and_scores_with_ties():
    done = api.retrieve(LlamaRetriever(), QUERIES, chunks=EXAMPLE / "chunks.jsonl", k=5, quiet=True)
    ranked = done.run.ranked()
    ties = 0
    for qid in nonempty(QUERIES):
        pairs = [(c, float(s)) for c, s in scored(QUERIES[qid])]
        assert ranked[qid] == trec_order(pairs)
        ties += len(pairs) - len({s for _, s in pairs})
    assert ties > 10  # the example's queries tie often: the order above is trec_eval's, not the fake's
    assert (done.kind, done.id_field, done.repeated) == ("llamaindex", "id", 0)
    assert done.run.name == "LlamaRetriever"


def test_a_langchain_retriever_without_scores_is_ranked_as_returned_and_cut_at_k():
    done = api.retrieve(LangChainRetriever(), QUERIES, id_field="metadata.chunk_id", k=3, quiet=True)
    ranked = done.run.ranked()
    for qid in nonempty(QUERIES):
        returned = [c for c, _ in scored(QUERIES[qid])][:3]
        assert ranked[qid] == [(c, float(3 - i)) for i, c in enumerate(returned)]
    assert (done.kind, done.id_field) == ("langchain", "metadata.chunk_id")
    # the same run as the function of ids the docs always took
    plain = ragassay.run_retriever(lambda q: [c for c, _ in scored(q)], QUERIES, k=3, progress=False)
    assert plain.ranked() == ranked


def test_a_node_without_a_score_ranks_its_whole_query_as_returned():
    class Partly(LlamaRetriever):
        def retrieve(self, query_str):
            nodes = super().retrieve(query_str)
            return nodes[:1] + [NodeWithScore(n.node, None) for n in nodes[1:2]] + nodes[2:]

    ranked = api.retrieve(Partly(), {"q": "refund days delivery shipping express"}, k=10, quiet=True).run.ranked()
    returned = [c for c, _ in scored("refund days delivery shipping express")]
    assert len(returned) >= 3 and ranked["q"] == [(c, float(10 - i)) for i, c in enumerate(returned)]


def test_nodes_cut_from_one_chunk_keep_the_best_and_are_counted():
    class Split(LlamaRetriever):
        def retrieve(self, query_str):  # each chunk cut in two nodes of new ids; the halves score 1 lower
            out = []
            for n in super().retrieve(query_str):
                out += [
                    NodeWithScore(TextNode(str(uuid.uuid4()), "a", ref_doc_id=n.node.ref_doc_id), n.score),
                    NodeWithScore(TextNode(str(uuid.uuid4()), "b", ref_doc_id=n.node.ref_doc_id), n.score - 1),
                ]
            return sorted(out, key=lambda n: -n.score)

    done = api.retrieve(Split(), QUERIES, id_field="ref_doc_id", chunks=EXAMPLE / "chunks.jsonl", k=5, quiet=True)
    for qid in nonempty(QUERIES):
        assert done.run.ranked()[qid] == trec_order([(c, float(s)) for c, s in scored(QUERIES[qid])])
    # the nodes as returned, walked until five chunks are found: each second node seen on the way is a repeat
    expected = 0
    for q in nonempty(QUERIES.values()):
        nodes = sorted([n for c, s in scored(q) for n in ((c, s), (c, s - 1))], key=lambda n: -n[1])  # as Split
        seen: set[str] = set()
        for c, _ in nodes:
            if len(seen) == 5:
                break
            expected += c in seen
            seen.add(c)
    assert done.repeated == expected > 0


def test_factories_classes_and_objects_in_a_file(tmp_path):
    module = tmp_path / "my_retrievers.py"
    module.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "from test_exports_keep import LlamaRetriever, LangChainRetriever\n"
        "retriever = LangChainRetriever(with_ids=True)\n"
        "def make():\n    return LlamaRetriever()\n"
        "def make_with(*, top=5):\n    return LlamaRetriever()\n"
        "class Mine(LlamaRetriever):\n    pass\n"
        "def search(query):\n    return [c for c, _ in __import__('test_exports_keep').scored(query)]\n",
        encoding="utf-8",
    )
    want = {q: trec_order([(c, float(s)) for c, s in scored(t)]) for q, t in QUERIES.items()}
    for name, kind in nonempty([("make", "llamaindex"), ("make_with", "llamaindex"), ("Mine", "llamaindex")]):
        done = api.retrieve(f"{module}:{name}", QUERIES, k=5, quiet=True)
        assert (done.kind, done.run.name, done.run.ranked()) == (kind, name, want)
    done = api.retrieve(f"{module}:retriever", QUERIES, k=5, quiet=True)
    assert (done.kind, done.run.name) == ("langchain", "retriever")
    assert done.run.ranked() == api.retrieve(f"{module}:search", QUERIES, k=5, quiet=True).run.ranked()


def test_pairs_of_a_document_and_a_score_from_a_function():
    def search(query):  # as a LangChain vector store's similarity_search_with_score gives them
        return [(Document("t", {"chunk_id": c}), s / 10) for c, s in scored(query)]

    ranked = api.retrieve(search, QUERIES, id_field="metadata.chunk_id", k=5, quiet=True).run.ranked()
    for qid in nonempty(QUERIES):
        assert ranked[qid] == trec_order([(c, s / 10) for c, s in scored(QUERIES[qid])])


@pytest.mark.parametrize(
    "retriever, id_field, said",
    [
        (
            LangChainRetriever(),
            None,
            r"LangChain Document at rank 1 for query '.+' has no chunk id: its Document.id "
            r"has none; .*--id-field.*its metadata has chunk_id, source",
        ),
        (LangChainRetriever(), "metadata.chunk", r"its metadata\['chunk'\] has none.*chunk_id, source"),
        (LangChainRetriever(), "ref_doc_id", r"ref_doc_id is LlamaIndex's.*metadata has chunk_id, source"),
        (LlamaRetriever(), "metadata.nope", r"LlamaIndex node at rank 1 .*metadata\['nope'\] has none"),
    ],
)
def test_a_result_without_a_chunk_id_is_refused_naming_query_rank_and_keys(retriever, id_field, said):
    with pytest.raises(RagassayError, match=said):
        api.retrieve(retriever, {"q-1": "refund within 30 days"}, id_field=id_field, quiet=True)


def test_an_id_that_is_no_chunk_stops_the_run_naming_the_chunks_file():
    random_ids = LlamaRetriever(node_ids=lambda c: f"node-{c}")  # ids a vector store made, not the chunks'
    with pytest.raises(InputError) as e:
        api.retrieve(random_ids, {"q 7": "refund within 30 days"}, chunks=EXAMPLE / "chunks.jsonl", quiet=True)
    message = str(e.value)
    assert message.startswith(
        f"{EXAMPLE / 'chunks.jsonl'}: the retriever's result at rank 1 for query 'q 7' is "
        "'node-refund-01' (read from its id)"
    )
    assert "--id-field" in message and "account-01" in message  # the fix, and what chunk ids look like
    # the same retriever read where the chunk id is: the run and the chunks meet, counted on each side
    done = api.retrieve(
        random_ids, QUERIES, id_field="metadata.chunk_id", chunks=EXAMPLE / "chunks.jsonl", k=5, quiet=True
    )
    retrieved = {c for q in QUERIES.values() for c, _ in scored(q)}
    assert done.to_dict()["chunks"] == {
        "what": "chunk ids",
        "left": {"role": "the run", "file": None, "ids": len(retrieved), "matched": len(retrieved)},
        "right": {
            "role": "the chunks",
            "file": str(EXAMPLE / "chunks.jsonl"),
            "ids": len(CHUNKS),
            "matched": len(retrieved),
        },
    }
    assert 0 < len(retrieved) < len(CHUNKS)


def test_odd_ids_and_an_empty_query():
    chunk_ids = ["a|b", "é-1", "7", 'q"uote']

    def search(query):
        if not query:
            return []
        return [
            NodeWithScore(TextNode("x", "t", {"cid": 7}), 2.0),
            NodeWithScore(TextNode("é-1", "t", {"cid": "é-1"}), 2.0),
            NodeWithScore(TextNode("y", "t", {"cid": "a|b"}), 1.0),
        ]

    done = api.retrieve(
        search,
        {"q1": "anything", "empty": ""},
        id_field="metadata.cid",
        chunks=[Chunk(id=c, text="t") for c in chunk_ids],
        quiet=True,
    )
    assert done.run.ranked() == {"q1": [("é-1", 2.0), ("7", 2.0), ("a|b", 1.0)], "empty": []}
    assert done.to_dict()["queries"] == 2 and done.to_dict()["results"] == 3
    # chunks given as ids; an int id is its digits; pairs without a score rank their query as returned
    done = api.retrieve(lambda q: [(1, None), ("b", 0.5)], {"q": "t"}, chunks=["1", "b", "c"], k=3, quiet=True)
    assert done.run.ranked() == {"q": [("1", 3.0), ("b", 2.0)]} and done.chunks.to_dict()["right"]["matched"] == 2
    with pytest.raises(RagassayError, match=r"metadata\['cid'\] holds True, not an id"):
        api.retrieve(lambda q: [TextNode("x", "t", {"cid": True})], {"q": "t"}, id_field="metadata.cid", quiet=True)


@pytest.mark.parametrize("spec", ["metadata.", "node_id", "chunk_id", ""])
def test_an_id_field_of_another_form_is_a_usage_error(spec):
    with pytest.raises(UsageError, match="id, ref_doc_id or metadata.KEY"):
        api.retrieve(LlamaRetriever(), {"q": "t"}, id_field=spec, quiet=True)


def test_what_is_no_retriever_is_refused():
    with pytest.raises(RagassayError, match="none of: a function of the query text, a LlamaIndex retriever"):
        api.retrieve(42, {"q": "t"}, quiet=True)
    with pytest.raises(RagassayError, match="factory 'broken' failed: ZeroDivisionError"):

        def broken():
            return 1 / 0

        api.retrieve(broken, {"q": "t"}, quiet=True)


def test_the_command_takes_an_object_and_writes_the_counts(tmp_path, capsys):
    module = tmp_path / "lc.py"
    module.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "from test_exports_keep import LangChainRetriever\nretriever = LangChainRetriever()\n",
        encoding="utf-8",
    )
    out = tmp_path / "run.txt"
    code = main(
        [
            "retrieve",
            "--retriever",
            f"{module}:retriever",
            "--queries",
            str(EXAMPLE / "queries.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "--id-field",
            "metadata.chunk_id",
            "-k",
            "5",
            "-o",
            str(out),
            "--quiet",
            "--format",
            "json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and (result["retriever"], result["id_field"], result["run"]) == (
        "langchain",
        "metadata.chunk_id",
        "retriever",
    )
    retrieved = {c for q in QUERIES.values() for c, _ in scored(q)}
    assert result["chunks"]["left"] == {
        "role": "the run",
        "file": None,
        "ids": len(retrieved),
        "matched": len(retrieved),
    }
    assert ragassay.read_run(out).ranked() == {
        q: [(c, float(5 - i)) for i, (c, _) in enumerate(scored(t))] for q, t in QUERIES.items()
    }
    code = main(
        [
            "retrieve",
            "--retriever",
            f"{module}:retriever",
            "--queries",
            str(EXAMPLE / "queries.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "--quiet",
            "-o",
            str(tmp_path / "bad.txt"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "has no chunk id: its Document.id has none" in err and "Traceback" not in err
    assert not (tmp_path / "bad.txt").exists()


# ------------------------------------------------------------------ exports keep the ids

ODD = [
    Chunk(id=i, text=f"text of {i}", doc_id=d)
    for i, d in [("a|b", "doc|1"), ("é-1", None), ("007", "doc-2"), ('q"uote', "doc-2"), ("plain", "doc-3")]
]
SET = [
    Question(id="q|1", question="What is a|b?", answer="x", difficulty="easy", chunk_ids=["a|b"], style="lowercase"),
    Question(
        id="q-2",
        question="Compare",
        answer="y",
        difficulty="hard",
        kind="comparison",
        chunk_ids=['q"uote', "007", "é-1"],
        grades={'q"uote': 3, "007": 2, "é-1": 2},
        style="task",
    ),
    Question(id="q-3", question="", answer="", difficulty="medium", chunk_ids=["plain"]),
]


def ids_in(fmt: str, d) -> list[list[str]]:
    """Each question's chunk ids as the export says them, read by the peer's schema (no peer needed)."""
    files = [d / f for f in EXPORTS[fmt][0]]
    if fmt == "beir":
        rows = [line.split("\t") for line in files[2].read_text(encoding="utf-8").splitlines()[1:]]
        by_q: dict[str, list[str]] = {}
        for qid, cid, _ in rows:
            by_q.setdefault(qid, []).append(cid)
        return [by_q[q.id] for q in SET]
    if fmt in ("llamaindex-embedding-qa", "llamaindex-query-response"):
        data = json.loads(files[0].read_text(encoding="utf-8"))
        return [data["relevant_docs"][q.id] for q in SET]
    if fmt.startswith("ragas"):
        return [json.loads(line)["reference_context_ids"] for line in files[0].read_text(encoding="utf-8").splitlines()]
    goldens = json.loads(files[0].read_text(encoding="utf-8"))
    assert [g["additional_metadata"]["chunk_ids"] for g in goldens] == [
        json.loads(g["custom_column_key_values"]["chunk_ids"]) for g in goldens
    ]
    return [g["additional_metadata"]["chunk_ids"] for g in goldens]


@pytest.mark.parametrize("fmt", sorted(EXPORTS))
def test_every_export_gives_back_each_questions_chunk_ids_in_order(fmt, tmp_path):
    export(SET, ODD, fmt, tmp_path)
    assert ids_in(fmt, tmp_path) == [q.chunk_ids for q in SET]


def test_ragas_rows_carry_style_and_deepeval_goldens_their_ids(tmp_path):
    export(SET, ODD, "ragas-testset", tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "ragas_testset.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r.get("query_style"), r.get("persona_name"), r["synthesizer_name"]) for r in rows] == [
        ("MISSPELLED", "ragassay:lowercase", "ragassay:easy:factoid"),
        ("PERFECT_GRAMMAR", "ragassay:task", "ragassay:hard:comparison"),
        (None, None, "ragassay:medium:factoid"),
    ]
    export(SET, ODD, "deepeval-goldens", tmp_path)
    goldens = json.loads((tmp_path / "deepeval_goldens.json").read_text(encoding="utf-8"))
    assert [(g["name"], g["source_file"]) for g in goldens] == [
        ("q|1", "doc|1"),
        ("q-2", "doc-2|é-1"),
        ("q-3", "doc-3"),
    ]
    assert goldens[1]["additional_metadata"]["grades"] == {'q"uote': 3, "007": 2, "é-1": 2}


def test_a_question_citing_a_chunk_the_export_lacks_is_refused_before_writing(tmp_path):
    with pytest.raises(InputError, match="question 'q-2' cites chunk 'q\"uote', which the chunks given"):
        export(SET, ODD[:1], "ragas-testset", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ in the real libraries


def peer_run(module: str, package: str, script: str, *args: str):
    python = python_with(module)
    if python is None:
        pytest.skip(f"{package} is not installed in this Python nor in RAGASSAY_EXPORT_PYTHONS")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "RAGAS_DO_NOT_TRACK": "true",
    }
    done = subprocess.run(
        [python, "-c", script, *args], capture_output=True, text=True, timeout=300, env=env, cwd=str(ROOT)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# gold: each query's third result (when it has one) and refund-01, so that hits fall at ranks 1 to 5 or nowhere
EXAMPLE_SET = [
    Question(
        id=q,
        question=t,
        answer="-",
        difficulty="easy",
        chunk_ids=sorted({c for c, _ in scored(t)[2:3]} | {"refund-01"}),
    )
    for q, t in QUERIES.items()
]


def test_ragas_id_based_context_metrics_run_on_the_export_as_ragassay_counts(tmp_path):
    export(EXAMPLE_SET, CHUNKS, "ragas-testset", tmp_path)
    run = api.retrieve(LlamaRetriever(), QUERIES, k=5, quiet=True).run
    top = run.top_ids(5)
    retrieved = [top.get(q.id, []) for q in EXAMPLE_SET]
    script = """
import json, sys, warnings
warnings.simplefilter("ignore")
from ragas.testset.synthesizers.testset_schema import Testset
from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall
t = Testset.from_jsonl(sys.argv[1])
retrieved = json.loads(sys.argv[2])
out = []
for s, ids in zip(t.samples, retrieved):
    sample = s.eval_sample.model_copy(update={"retrieved_context_ids": ids})
    out.append([IDBasedContextRecall().single_turn_score(sample), IDBasedContextPrecision().single_turn_score(sample)])
print(json.dumps(out))
"""
    theirs = peer_run("ragas", "ragas", script, str(tmp_path / "ragas_testset.jsonl"), json.dumps(retrieved))
    qrels = {q.id: {c: 1 for c in q.chunk_ids} for q in EXAMPLE_SET}
    ours = ragassay.evaluate(qrels, run, ["recall@5", "p@5"])
    full = [len(ids) == 5 for ids in retrieved]
    assert sum(full) > 10
    for q, (recall, precision), five in nonempty(zip(EXAMPLE_SET, theirs, full)):
        assert recall == pytest.approx(ours.per_query[q.id]["recall@5"])
        if five:  # RAGAS divides by the ids retrieved, P@5 by 5: the same when five came back
            assert precision == pytest.approx(ours.per_query[q.id]["p@5"])


def test_a_real_llamaindex_retriever_and_core_retriever_evaluator(tmp_path):
    export(EXAMPLE_SET, CHUNKS, "llamaindex-query-response", tmp_path)
    script = """
import json, sys, warnings
warnings.simplefilter("ignore")
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, TextNode, NodeRelationship, RelatedNodeInfo
from llama_index.core.evaluation import QueryResponseDataset, RetrieverEvaluator
import ragassay
from ragassay import api
from test_exports_keep import scored

class Overlap(BaseRetriever):
    def _retrieve(self, query_bundle):
        out = []
        for c, s in scored(query_bundle.query_str):
            node = TextNode(text="t", id_="node-" + c)  # a node id of the index's own, the chunk its source
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=c)
            out.append(NodeWithScore(node=node, score=float(s)))
        return out

path = sys.argv[1]
data = QueryResponseDataset.from_json(path)
expected = json.load(open(path))["relevant_docs"]
done = api.retrieve(Overlap(), data.queries, id_field="ref_doc_id", chunks=sys.argv[2], k=5, quiet=True)

class BySource(BaseRetriever):  # core's evaluator compares node ids: the same nodes, keyed by their chunk
    def _retrieve(self, query_bundle):
        return [NodeWithScore(node=TextNode(text="t", id_=n.node.ref_doc_id), score=n.score)
                for n in Overlap().retrieve(query_bundle)]

evaluator = RetrieverEvaluator.from_metric_names(["mrr", "hit_rate"], retriever=BySource())
theirs = {q: evaluator.evaluate(text, expected[q]).metric_vals_dict
          for q, text in data.queries.items()}
print(json.dumps([done.run.ranked(), done.kind, done.to_dict()["chunks"]["left"], theirs]))
"""
    ranked, kind, left, theirs = peer_run(
        "llama_index.core",
        "llama-index-core",
        script,
        str(tmp_path / "llamaindex_query_response.json"),
        str(EXAMPLE / "chunks.jsonl"),
    )
    want = {q: [list(p) for p in trec_order([(c, float(s)) for c, s in scored(t)])] for q, t in QUERIES.items()}
    assert (ranked, kind) == (want, "llamaindex")
    assert left["ids"] == left["matched"] == len({c for t in QUERIES.values() for c, _ in scored(t)})
    # core's evaluator reads the nodes in the order returned (ties too): ragassay's measures of that order,
    # against the set's chunk ids as qrels, are the evaluator's against the export's relevant_docs
    as_returned = ragassay.Run.from_dict(
        {q: {c: float(5 - i) for i, (c, _) in enumerate(scored(t))} for q, t in QUERIES.items()}
    )
    qrels = {q.id: {c: 1 for c in q.chunk_ids} for q in EXAMPLE_SET}
    ours = ragassay.evaluate(qrels, as_returned, ["mrr", "hit_rate@5"]).per_query
    assert len({v["mrr"] for v in theirs.values()}) >= 3  # several ranks of the first hit
    for q in nonempty(sorted(QUERIES)):
        assert theirs[q]["mrr"] == pytest.approx(ours[q]["mrr"])
        assert theirs[q]["hit_rate"] == pytest.approx(ours[q]["hit_rate@5"])


def test_a_real_langchain_vector_store_retriever():
    script = """
import json, sys
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
import ragassay
from ragassay import api
chunks = ragassay.read_chunks(sys.argv[1])
store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
store.add_documents([Document(page_content=c.text, metadata={"chunk_id": c.id}, id=c.id) for c in chunks])
queries = ragassay.read_queries(sys.argv[2])
by_id = api.retrieve(store.as_retriever(search_kwargs={"k": 4}), queries, chunks=sys.argv[1], k=4, quiet=True)
by_key = api.retrieve(store.as_retriever(search_kwargs={"k": 4}), queries, id_field="metadata.chunk_id", k=4,
                      quiet=True)
theirs = {q: [d.id for d in store.similarity_search(t, k=4)] for q, t in queries.items()}
print(json.dumps([by_id.run.ranked(), by_key.run.ranked(), by_id.kind, theirs]))
"""
    by_id, by_key, kind, theirs = peer_run(
        "langchain_core", "langchain-core", script, str(EXAMPLE / "chunks.jsonl"), str(EXAMPLE / "queries.jsonl")
    )
    assert kind == "langchain" and by_id == by_key
    for qid in nonempty(QUERIES):
        assert by_id[qid] == [[c, float(4 - i)] for i, c in enumerate(theirs[qid])]


def test_a_retriever_whose_own_top_k_is_below_k_is_said(capsys):
    api.retrieve(LlamaRetriever(), QUERIES, k=10, quiet=True)  # the fake's own top k is 5
    assert (
        "warning: the retriever returned at most 5 results for a query, fewer than the 10 asked"
        in capsys.readouterr().err
    )
    api.retrieve(LlamaRetriever(), QUERIES, k=5, quiet=True)
    api.retrieve(lambda q: [c for c, _ in scored(q)], QUERIES, k=10, quiet=True)  # a function's choice is its own
    assert capsys.readouterr().err == ""
