"""Every query asked stays a query: a retriever that returns nothing for a query scores 0 there by
every path (its run file read back by evaluate, in memory or by blocks; the Python API; compare; the
report; ``run``). A TREC file cannot hold an empty ranking, so ``retrieve`` writes ``RUN.run.json``
beside it with every query asked; a sidecar that no longer describes its file is ignored, saying so.

The corpus is real text nobody on the project wrote: the docstrings of Python's standard library.
The numbers are checked against pytrec_eval, with the queries that returned nothing scored 0 as
trec_eval -c scores a query it is given with no results.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

import ragassay
from helpers import Said, cli, nonempty

pytrec_eval = pytest.importorskip("pytrec_eval")

MODULES = (
    "json",
    "textwrap",
    "string",
    "shutil",
    "functools",
    "itertools",
    "os.path",
    "base64",
    "heapq",
    "bisect",
    "fnmatch",
    "glob",
    "difflib",
    "statistics",
    "calendar",
    "random",
    "math",
    "operator",
    "tempfile",
    "urllib.parse",
    "zlib",
    "copy",
    "pprint",
    "csv",
    "html",
)

RETRIEVERS = '''
import json
import re
from pathlib import Path

_WORD = re.compile(r"[a-z]{4,}")
_CHUNKS = [json.loads(line) for line in (Path(__file__).parent / "chunks.jsonl").read_text().splitlines()]
_TERMS = [(c["id"], set(_WORD.findall(c["text"].lower()))) for c in _CHUNKS]


def overlap(query):
    """Chunks sharing at least three words of four letters or more with the query, best first."""
    words = set(_WORD.findall(query.lower()))
    scored = [(cid, float(len(words & terms))) for cid, terms in _TERMS if len(words & terms) >= 3]
    return sorted(scored, key=lambda p: (-p[1], p[0]))[:10]


def loose(query):
    """Any chunk sharing one word: a second retriever, which finds something for almost every query."""
    words = set(_WORD.findall(query.lower()))
    scored = [(cid, float(len(words & terms))) for cid, terms in _TERMS if words & terms]
    return sorted(scored, key=lambda p: (-p[1], p[0]))[:10]
'''

METRICS = ("ndcg@10", "map", "recall@10", "p@5", "mrr")
PYTREC = {"ndcg@10": "ndcg_cut_10", "map": "map", "recall@10": "recall_10", "p@5": "P_5", "mrr": "recip_rank"}


def _docs() -> list[tuple[str, str]]:
    """(qualified name, first paragraph) of public stdlib functions with a docstring of some length."""
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in sorted(dir(module)):
            obj = getattr(module, attr)
            if attr.startswith("_") or not callable(obj):
                continue
            doc = inspect.getdoc(obj) or ""
            first = doc.split("\n\n")[0].replace("\n", " ").strip()
            if len(first) >= 60 and first not in {t for _, t in found}:
                found.append((f"{name}.{attr}", first))
    return found


@dataclass
class Corpus:
    root: Path
    chunks: Path
    queries: Path
    qrels: Path
    retrievers: Path
    asked: list[str]  # every query id in the queries file
    empty: list[str]  # those the overlap retriever returns nothing for
    never_asked: str  # a judged query that is not in the queries file


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    """60 chunks of stdlib docstrings; 20 queries: 16 the overlap retriever answers (a chunk's own
    text, lightly cut) and 4 it finds nothing for (docstrings of functions not in the chunks, chosen
    because they share fewer than three words with any chunk); qrels for all 20 and one more query."""
    docs = _docs()
    assert len(docs) > 120
    chunk_docs, rest = docs[:60], docs[60:]
    root = tmp_path / "corpus"
    root.mkdir()
    chunks = root / "chunks.jsonl"
    chunks.write_text(
        "".join(
            json.dumps({"id": f"c{i:03d}", "doc_id": name, "text": text}) + "\n"
            for i, (name, text) in enumerate(chunk_docs)
        )
    )
    (root / "retrievers.py").write_text(RETRIEVERS)
    spec = importlib.util.spec_from_file_location("corpus_retrievers", root / "retrievers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    answered = [i for i in range(0, 60, 3) if module.overlap(chunk_docs[i][1])][:16]
    assert len(answered) == 16
    for n, i in enumerate(answered):
        qid = f"q{n:03d}"
        queries[qid] = chunk_docs[i][1]
        qrels[qid] = {f"c{i:03d}": 2, f"c{(i + 1) % 60:03d}": 1}  # its own chunk, and a neighbour
    unanswered = [text for _, text in rest if not module.overlap(text) and module.loose(text)][:4]
    assert len(unanswered) == 4
    for n, text in enumerate(unanswered, start=16):
        qid = f"q{n:03d}"
        queries[qid] = text
        qrels[qid] = {f"c{(7 * n) % 60:03d}": 2, f"c{(7 * n + 1) % 60:03d}": 0}
    qrels["q999"] = {"c005": 1}  # judged, never asked
    qfile = root / "queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": q, "question": t}) + "\n" for q, t in queries.items()))
    qrels_file = root / "qrels.txt"
    qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return Corpus(
        root,
        chunks,
        qfile,
        qrels_file,
        root / "retrievers.py",
        list(queries),
        [f"q{n:03d}" for n in range(16, 20)],
        "q999",
    )


def _qrels_dict(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        q, _, d, g = line.split()
        out.setdefault(q, {})[d] = int(g)
    return out


def _run_dict(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        out.setdefault(q, {})[d] = float(s)
    return out


def reference(qrels: dict, run: dict, asked: list[str]) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values of the queries asked that have qrels; one it was given no result
    for is 0 on every measure (trec_eval -c: a query with an empty ranking)."""
    judged = {q: qrels[q] for q in asked if q in qrels}
    ranked = {q: run[q] for q in judged if run.get(q)}
    values = pytrec_eval.RelevanceEvaluator(judged, set(PYTREC.values())).evaluate(ranked)
    return {q: {m: values[q][PYTREC[m]] if q in values else 0.0 for m in METRICS} for q in judged}


def mean(per_query: dict[str, dict[str, float]], metric: str) -> float:
    return math.fsum(v[metric] for v in per_query.values()) / len(per_query)


def retrieve(corpus: Corpus, name: str, out: Path, *more: object) -> Said:
    said = cli(
        "retrieve",
        "--retriever",
        f"{corpus.retrievers}:{name}",
        "--queries",
        corpus.queries,
        "--chunks",
        corpus.chunks,
        "-o",
        out,
        *more,
    )
    assert said.code == 0, said.err
    return said


# ------------------------------------------------------------------------------------- the chain


def test_retrieve_then_evaluate_scores_the_queries_that_returned_nothing_as_0(corpus, tmp_path):
    run = tmp_path / "overlap.txt"
    said = retrieve(corpus, "overlap", run)
    assert "4 of the 20 queries returned nothing" in said.out and f"{run}.run.json" in said.out
    side = json.loads(Path(f"{run}.run.json").read_text())
    assert side["queries"] == corpus.asked and side["run"] == "overlap"
    assert side["retriever"] == f"{corpus.retrievers}:overlap" and side["k"] == 100
    assert side["queries_file"] == str(corpus.queries) and side["command"] == "retrieve"
    assert {line.split()[0] for line in run.read_text().splitlines()} == set(corpus.asked) - set(corpus.empty)

    expected = reference(_qrels_dict(corpus.qrels), _run_dict(run), corpus.asked)
    assert len(expected) == 20 and all(expected[q]["ndcg@10"] == 0 for q in corpus.empty)
    assert any(v["ndcg@10"] > 0 for v in expected.values())
    done = cli("evaluate", corpus.qrels, run, "-m", ",".join(METRICS), "--per-query", "--format", "json")
    assert done.code == 0, done.err
    result = done.json
    assert set(result["per_query"]) == set(corpus.asked)  # the never-asked q999 is missing, as trec_eval says
    for q, values in nonempty(expected.items()):
        for m in METRICS:
            assert result["per_query"][q][m] == pytest.approx(values[m], abs=1e-12), (q, m)
    for m in METRICS:
        assert result["aggregate"][m] == pytest.approx(mean(expected, m), abs=1e-12)
    assert result["counts"] == {
        "evaluated": 20,
        "run_queries_without_qrels": 0,
        "qrels_queries_missing_from_run": 1,
        "asked_without_results": 4,
        "queries_without_relevant": 0,
    }
    text = cli("evaluate", corpus.qrels, run, "-m", "ndcg@10")
    assert "20 queries evaluated" in text.out
    assert "4 queries the run was asked returned nothing (scored 0)" in text.out
    assert "1 qrels queries missing from the run skipped" in text.out


def test_every_path_gives_the_retriever_one_score(corpus, tmp_path, monkeypatch, capsys):
    """File + evaluate (skip and zero, in memory and by blocks), the Python API, compare, the report and
    run: one ndcg@10 for one retriever."""
    run = tmp_path / "overlap.txt"
    retrieve(corpus, "overlap", run)
    qrels20 = tmp_path / "qrels20.txt"  # the asked queries' qrels: every path then averages the same 20
    qrels20.write_text(
        "".join(
            line + "\n" for line in corpus.qrels.read_text().splitlines() if not line.startswith(corpus.never_asked)
        )
    )
    expected = mean(reference(_qrels_dict(qrels20), _run_dict(run), corpus.asked), "ndcg@10")
    scores = {}
    for missing in ("skip", "zero"):
        scores[f"evaluate --missing {missing}"] = cli(
            "evaluate", qrels20, run, "-m", "ndcg@10", "--missing", missing, "--format", "json"
        ).json["aggregate"]["ndcg@10"]
    blocks = cli("evaluate", qrels20, run, "-m", "ndcg@10", "--block-queries", "3", "--format", "json").json
    scores["evaluate by blocks"] = blocks["aggregate"]["ndcg@10"]
    assert blocks["counts"]["asked_without_results"] == 4 and blocks["counts"]["evaluated"] == 20

    from ragassay.stages.retriever_loading import load_retriever

    made = ragassay.run_retriever(load_retriever(f"{corpus.retrievers}:overlap"), ragassay.read_queries(corpus.queries))
    scores["run_retriever + evaluate"] = ragassay.evaluate(qrels20, made, ["ndcg@10"]).aggregate["ndcg@10"]
    scores["read_run + evaluate"] = ragassay.evaluate(qrels20, ragassay.read_run(run), ["ndcg@10"]).aggregate["ndcg@10"]
    scores["evaluate(path)"] = ragassay.evaluate(str(qrels20), str(run), ["ndcg@10"]).aggregate["ndcg@10"]

    other = tmp_path / "loose.txt"
    retrieve(corpus, "loose", other)
    cmp = cli(
        "compare",
        qrels20,
        run,
        other,
        "-m",
        "ndcg@10",
        "--permutations",
        "100",
        "--bootstrap",
        "100",
        "--format",
        "json",
    ).json
    assert cmp["queries"] == 20
    scores["compare"] = cmp["means"]["overlap"]["ndcg@10"] if "means" in cmp else None
    if scores["compare"] is None:
        (test,) = cmp["tests"]
        scores["compare"] = test["baseline_mean"]

    md = tmp_path / "report.md"
    assert cli("report", "--qrels", qrels20, "--run", run, "-o", md).code == 0
    page = md.read_text()
    header = next(line for line in page.splitlines() if line.startswith("| run |") and "ndcg@10" in line)
    row = next(line for line in page.splitlines() if line.startswith("| overlap |"))
    cells = dict(zip(header.strip("|").split("|"), row.strip("|").split("|")))
    assert float(cells[" ndcg@10 "]) == pytest.approx(expected, abs=5e-5)  # printed to 4 places
    assert "| query ids | the run overlap | 20 | the qrels | 20 | 20 |" in page

    project = tmp_path / "project"
    project.mkdir()
    for f in (corpus.chunks, corpus.queries, corpus.retrievers):
        (project / f.name).write_text(f.read_text())
    (project / "people.qrels").write_text(qrels20.read_text())
    (project / "ragassay.toml").write_text(
        'depth = 10\nk = 10\nmetrics = ["ndcg@10"]\n\n[data]\nchunks = "chunks.jsonl"\nqueries = "queries.jsonl"\n'
        'qrels = "people.qrels"\n\n[retrievers]\noverlap = "retrievers.py:overlap"\n'
    )
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    done = cli("run", project / "ragassay.toml", "--format", "json", "--quiet")
    assert done.code == 0, done.out + done.err
    step = next(s for s in done.json["steps"] if s["step"] == "evaluate")
    scores["run"] = step["result"]["overlap"]["aggregate"]["ndcg@10"]
    assert step["result"]["overlap"]["counts"]["asked_without_results"] == 4
    assert (project / "ragassay-out" / "runs" / "overlap.txt.run.json").exists()

    assert scores == {k: pytest.approx(expected, abs=1e-12) for k in scores}, scores


def test_a_query_never_asked_is_still_missing_but_an_asked_one_is_not(corpus, tmp_path):
    """--missing skip leaves out the judged query the run was never asked (trec_eval's rule) and
    keeps the 4 asked ones at 0; --missing zero counts it as well."""
    run = tmp_path / "overlap.txt"
    retrieve(corpus, "overlap", run)
    skip = cli("evaluate", corpus.qrels, run, "-m", "ndcg@10", "--format", "json").json
    zero = cli("evaluate", corpus.qrels, run, "-m", "ndcg@10", "--missing", "zero", "--format", "json").json
    assert skip["counts"]["evaluated"] == 20 and zero["counts"]["evaluated"] == 21
    assert skip["counts"]["asked_without_results"] == zero["counts"]["asked_without_results"] == 4
    assert skip["counts"]["qrels_queries_missing_from_run"] == zero["counts"]["qrels_queries_missing_from_run"] == 1
    expected = reference(_qrels_dict(corpus.qrels), _run_dict(run), corpus.asked)
    assert skip["aggregate"]["ndcg@10"] == pytest.approx(mean(expected, "ndcg@10"), abs=1e-12)
    assert zero["aggregate"]["ndcg@10"] == pytest.approx(mean(expected, "ndcg@10") * 20 / 21, abs=1e-12)


def test_the_python_api_writes_what_it_was_asked_beside_a_run(corpus, tmp_path):
    from ragassay.stages.retriever_loading import load_retriever

    made = ragassay.run_retriever(load_retriever(f"{corpus.retrievers}:overlap"), ragassay.read_queries(corpus.queries))
    path = tmp_path / "api.run"
    ragassay.write_run(path, made)
    back = ragassay.read_run(path)
    assert back.queries == made.queries and sorted(back.queries) == sorted(corpus.asked)
    assert ragassay.evaluate(corpus.qrels, back).per_query == ragassay.evaluate(corpus.qrels, made).per_query
    # a run with a ranking for every query writes no sidecar, and removes a stale one
    full = ragassay.Run.from_dict({"q000": {"c000": 1.0}})
    ragassay.write_run(path, full)
    assert not Path(f"{path}.run.json").exists() and ragassay.read_run(path).queries == ["q000"]


def test_a_retriever_that_found_nothing_at_all_scores_0_not_an_error(corpus, tmp_path):
    nothing = tmp_path / "nothing.py"
    nothing.write_text("def never(query):\n    return []\n")
    run = tmp_path / "never.txt"
    said = cli("retrieve", "--retriever", f"{nothing}:never", "--queries", corpus.queries, "-o", run)
    assert said.code == 0 and "20 of the 20 queries returned nothing" in said.out
    assert run.read_text() == ""
    done = cli("evaluate", corpus.qrels, run, "-m", "ndcg@10,p@5", "--format", "json")
    assert done.code == 0, done.err
    assert done.json["aggregate"] == {"ndcg@10": 0.0, "p@5": 0.0}
    assert done.json["counts"]["asked_without_results"] == 20


def test_a_run_file_edited_after_retrieve_is_not_described_by_its_sidecar(corpus, tmp_path):
    run = tmp_path / "overlap.txt"
    retrieve(corpus, "overlap", run)
    lines = run.read_text().splitlines()
    run.write_text("\n".join(lines[:-1]) + "\n")  # one row less: another file now
    done = cli("evaluate", corpus.qrels, run, "-m", "ndcg@10", "--format", "json")
    assert done.code == 0
    assert "overlap.txt.run.json does not describe overlap.txt" in done.err and "ignored" in done.err
    assert done.json["counts"]["asked_without_results"] == 0
    assert done.json["counts"]["evaluated"] == 16  # the 4 are now unknown: missing, skipped


def test_a_symlinked_run_reads_its_targets_sidecar(corpus, tmp_path):
    run = tmp_path / "overlap.txt"
    retrieve(corpus, "overlap", run)
    link = tmp_path / "elsewhere" / "latest.txt"
    link.parent.mkdir()
    os.symlink(run, link)
    done = cli("evaluate", corpus.qrels, link, "-m", "ndcg@10", "--format", "json")
    assert done.json["counts"]["asked_without_results"] == 4 and done.json["counts"]["evaluated"] == 20


@pytest.mark.parametrize(
    "content, said",
    [
        ("{not json", "not a run sidecar ragassay can read"),
        ('{"queries": ["q1"], "run_digest": "x", "colour": "red"}', "unknown field 'colour'"),
        ('{"queries": "q1", "run_digest": "x"}', "queries: a list of query ids"),
        ('{"queries": ["q1", "q1"], "run_digest": "x"}', "listed twice"),
    ],
)
def test_a_sidecar_that_cannot_be_read_is_an_error_naming_it(corpus, tmp_path, content, said):
    run = tmp_path / "overlap.txt"
    retrieve(corpus, "overlap", run)
    Path(f"{run}.run.json").write_text(content)
    done = cli("evaluate", corpus.qrels, run, "-m", "ndcg@10")
    assert done.code == 1 and said in done.err and "overlap.txt.run.json" in done.err
    assert "Traceback" not in done.err


def test_a_unicode_query_id_that_returned_nothing_round_trips(tmp_path):
    """Ids other than q000: unicode, slashes; the sidecar keeps them exactly."""
    qrels = {"qé/1": {"d1": 1}, "問題-2": {"d2": 2}, "q 3": {"d3": 1}}
    run = ragassay.Run.from_dict({"qé/1": {"d1": 2.0, "d9": 1.0}, "問題-2": {}, "q 3": {}}, name="uni")
    with pytest.raises(ragassay.InputError):  # a space cannot be in a TREC query id: refused, not lost
        ragassay.write_run(tmp_path / "bad.txt", run)
    run = ragassay.Run.from_dict({"qé/1": {"d1": 2.0, "d9": 1.0}, "問題-2": {}}, name="uni")
    ragassay.write_run(tmp_path / "uni.txt", run)
    back = ragassay.read_run(tmp_path / "uni.txt")
    assert back.queries == ["qé/1", "問題-2"]
    ev = ragassay.evaluate({k: v for k, v in qrels.items() if k != "q 3"}, back, ["ndcg@10"])
    assert ev.per_query == {"qé/1": {"ndcg@10": 1.0}, "問題-2": {"ndcg@10": 0.0}}
    assert ev.counts["asked_without_results"] == 1
