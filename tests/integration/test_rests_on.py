"""Every score says what it rests on, and none flatters (issue 45, items 1 and 2).

- **The relevant grade follows the labels' scale**: a file of labels says its scale and the grade a
  label counts as relevant from (``FILE.origin.json``: ``scale``, ``relevant_from``; the judge's
  records and qrels: 0-3, from 2). Binary measures use it unless told otherwise, and the result says
  which grade and why. Checked against pytrec_eval at that level on data made here, on scales other
  than the judge's (1-5, 0-10, 0-1) and both ways (the labels' grade, and a grade given over it).
- **A pool says what it is**: qrels made by judging runs' top results name the runs and the depth; a
  run alone in its pool, a run outside it, and a measure deeper than it are flagged; Judged@k equals
  ir_measures'; compare counts each run's relevant chunks no other run found.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import pytrec_eval

import ragassay
from fake_llm import FakeLLM
from ragassay.cli import main
from ragassay.data.origin import Origin, PoolRun, read_origin, write_origin
from ragassay.data.pool import pool_digest
from ragassay.errors import InputError
from real_corpus import write_corpus

BINARY = {"P_5": "p@5", "recall_10": "recall@10", "recip_rank": "mrr", "map": "map", "success_10": "hit_rate@10"}


def random_labels(seed: int, low: int, high: int, queries: int = 12) -> tuple[dict, dict]:
    """qrels on the scale low..high and a run of 15 results a query, half of them judged."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(queries):
        qid = f"q{q}"
        docs = [f"d{q}-{i}" for i in range(25)]
        qrels[qid] = {d: rng.randint(low, high) for d in rng.sample(docs, 12)}
        run[qid] = {d: round(rng.random(), 3) for d in rng.sample(docs, 15)}
    return qrels, run


def trec_values(qrels: dict, run: dict, level: int) -> dict[str, float]:
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"P", "recall", "recip_rank", "map", "success"}, relevance_level=level)
    per = ev.evaluate(run)
    return {ours: float(np.mean([v[theirs] for v in per.values()])) for theirs, ours in BINARY.items()}


def write_trec(path: Path, qrels: dict, scale=None, relevant_from=None) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    if scale is not None or relevant_from is not None:
        write_origin(path, Origin(scale=scale, relevant_from=relevant_from))
    return path


@pytest.mark.parametrize("low, high, relevant_from", [(0, 3, 2), (1, 5, 4), (0, 10, 7), (0, 1, 1), (-1, 2, 2)])
def test_binary_measures_count_from_the_grade_the_labels_say(tmp_path, low, high, relevant_from):
    qrels, run = random_labels(low * 100 + high, low, high)
    path = write_trec(tmp_path / "q.txt", qrels, (low, high), relevant_from)
    ev = ragassay.evaluate(path, run, list(BINARY.values()))
    expected = trec_values(qrels, run, relevant_from)
    assert ev.aggregate == pytest.approx(expected, abs=1e-12)
    assert ev.relevance_level == relevant_from and ev.relevance.source == "labels"
    assert ev.relevance.text().startswith(
        f"relevant = grade ≥ {relevant_from} (the labels' scale {low}-{high}, said in q.txt.origin.json)"
    )
    # a grade given wins over the labels', and says that the labels say otherwise
    other = 1 if relevant_from != 1 else high
    given = ragassay.evaluate(path, run, list(BINARY.values()), relevance_level=other)
    assert given.aggregate == pytest.approx(trec_values(qrels, run, other), abs=1e-12)
    assert given.relevance.source == "given"
    assert (f"the labels say relevant from {relevant_from}" in given.relevance.text()) == (other != relevant_from)


def test_labels_that_say_nothing_count_from_one_and_say_why(tmp_path):
    qrels, run = random_labels(7, 0, 3)
    path = write_trec(tmp_path / "q.txt", qrels)
    ev = ragassay.evaluate(path, run, list(BINARY.values()))
    assert ev.aggregate == pytest.approx(trec_values(qrels, run, 1), abs=1e-12)
    text = ev.relevance.text()
    assert ev.relevance.source == "default" and "trec_eval's default: the labels do not say their scale" in text
    assert "grades run 0-3:" in text and "--relevance-level N" in text  # the hint: not a decision
    binary_only = write_trec(tmp_path / "b.txt", {q: {d: min(g, 1) for d, g in ds.items()} for q, ds in qrels.items()})
    assert "grades run" not in ragassay.evaluate(binary_only, run, ["p@5"]).relevance.text()  # 0-1: nothing to hint


def test_the_judges_records_read_as_qrels_are_on_the_judges_scale(tmp_path):
    """A judgments file (record judgment@1 on every line) says its scale without a sidecar; people's
    JSON Lines labels (assessor) do not, and count from 1."""
    qrels, run = random_labels(3, 0, 3)
    lines = [
        {
            "record": "judgment@1",
            "query_id": q,
            "chunk_id": d,
            "grade": g,
            "reasoning": "",
            "status": "ok",
            "error": None,
            "model": "m",
            "prompt": "judge_relevance@1",
        }
        for q, ds in qrels.items()
        for d, g in ds.items()
    ]
    judged = tmp_path / "judgments.jsonl"
    judged.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ev = ragassay.evaluate(judged, run, list(BINARY.values()))
    assert ev.relevance_level == 2 and ev.aggregate == pytest.approx(trec_values(qrels, run, 2), abs=1e-12)
    people = tmp_path / "people.jsonl"
    people.write_text(
        "".join(
            json.dumps({"query_id": x["query_id"], "chunk_id": x["chunk_id"], "grade": x["grade"], "assessor": "ann"})
            + "\n"
            for x in lines
        )
    )
    assert ragassay.evaluate(people, run, ["p@5"]).relevance_level == 1
    # a file mixing the judge's records with lines that say nothing is not wholly on the judge's scale
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(judged.read_text() + json.dumps({"query_id": "q0", "chunk_id": "zz", "grade": 1}) + "\n")
    assert ragassay.evaluate(mixed, run, ["p@5"]).relevance_level == 1


def test_the_command_prints_the_grade_beside_the_measures_that_use_it(tmp_path, capsys):
    qrels, run = random_labels(11, 0, 3)
    path = write_trec(tmp_path / "q.txt", qrels, (0, 3), 2)
    run_file = tmp_path / "r.txt"
    run_file.write_text("".join(f"{q} Q0 {d} 0 {s} mine\n" for q, ds in run.items() for d, s in ds.items()))
    assert main(["evaluate", str(path), str(run_file), "-m", "ndcg@10,p@5,mrr,P(rel=3)@5"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("relevant = "))
    # p(rel=3)@5 has its own level and ndcg's gains are the grades: neither is listed
    assert line == "relevant = grade ≥ 2 (the labels' scale 0-3, said in q.txt.origin.json): p@5, mrr"
    assert main(["evaluate", str(path), str(run_file), "-m", "p@5", "--format", "json"]) == 0
    rel = json.loads(capsys.readouterr().out)["rests_on"]["relevance"]
    assert (rel["level"], rel["source"], rel["scale"], rel["measures"]) == (2, "labels", [0, 3], ["p@5"])
    assert main(["evaluate", str(path), str(run_file), "-m", "p@5", "--relevance-level", "3", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["settings"]["relevance_level"] == 3 and d["rests_on"]["relevance"]["source"] == "given"


@pytest.mark.parametrize(
    "sidecar, why",
    [
        ({"scale": [3, 0]}, "lowest first"),
        ({"scale": [0, 3], "relevant_from": 0}, "at least 1"),
        ({"scale": [0, 3], "relevant_from": 4}, "not a grade of the scale 0-3"),
        ({"relevant_from": "2"}, "a whole number"),
        ({"scale": "0-3"}, "[lowest, highest]"),
        ({"pool": [{"name": "a", "digest": "x"}]}, "'depth' is missing"),
        ({"pool": [{"name": "a", "digest": "x", "depth": 0}]}, "at least 1"),
    ],
)
def test_an_origin_file_that_says_a_wrong_scale_or_pool_is_refused_naming_it(tmp_path, capsys, sidecar, why):
    qrels, run = random_labels(1, 0, 3, queries=2)
    path = write_trec(tmp_path / "q.txt", qrels)
    (tmp_path / "q.txt.origin.json").write_text(json.dumps({"record": "origin@1", "labellers": [], **sidecar}))
    with pytest.raises(InputError) as e:
        ragassay.read_qrels(path)
    assert why in str(e.value) and "q.txt.origin.json" in str(e.value)
    run_file = tmp_path / "r.txt"
    run_file.write_text("".join(f"{q} Q0 {d} 0 {s} x\n" for q, ds in run.items() for d, s in ds.items()))
    assert main(["evaluate", str(path), str(run_file)]) == 1
    assert "q.txt.origin.json" in capsys.readouterr().err


def test_an_older_origin_file_without_scale_or_pool_still_reads(tmp_path):
    qrels, run = random_labels(2, 0, 3, queries=2)
    path = write_trec(tmp_path / "q.txt", qrels)
    (tmp_path / "q.txt.origin.json").write_text(
        json.dumps(
            {
                "record": "origin@1",
                "labellers": [{"by": "person", "name": "ann", "prompt": None, "endpoint": None}],
                "command": None,
                "date": None,
            }
        )
    )
    origin = ragassay.read_qrels(path).origin
    assert origin.describe() == "ann" and origin.scale is None and origin.pool is None


# ------------------------------------------------------------------------------------ pools


def write_run(path: Path, ranking: dict[str, list[str]], tag: str) -> Path:
    path.write_text(
        "".join(f"{q} Q0 {d} {i + 1} {len(ds) - i} {tag}\n" for q, ds in ranking.items() for i, d in enumerate(ds))
    )
    return path


@pytest.fixture
def corpus(tmp_path: Path):
    """Real text (the standard library's docstrings), the queries and three runs of our own."""
    folder = tmp_path / "corpus"
    chunks, queries = write_corpus(folder, chunks=120, queries=15)
    sys.path.insert(0, str(folder))
    try:
        import retrievers

        runs = {
            name: {
                q["id"]: [c if isinstance(c, str) else c[0] for c in getattr(retrievers, name)(q["text"])]
                for q in queries
            }
            for name in ("overlap", "names", "longest")
        }
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("retrievers", None)
    paths = {
        name: write_run(folder / f"{name}.txt", {q: ds for q, ds in r.items() if ds}, name) for name, r in runs.items()
    }
    return folder, paths


def judge(folder: Path, run: Path, server: FakeLLM, depth: int, capsys) -> Path:
    capsys.readouterr()
    code = main(
        [
            "judge",
            "--queries",
            str(folder / "queries.jsonl"),
            "--chunks",
            str(folder / "chunks.jsonl"),
            "--run",
            str(run),
            "-o",
            str(folder / "judgments.jsonl"),
            "--qrels-out",
            str(folder / "judged.qrels"),
            "--depth",
            str(depth),
            "--base-url",
            server.url,
            "--model",
            "fake",
            "--quiet",
        ]
    )
    assert code == 0, capsys.readouterr().err
    return folder / "judged.qrels"


def evaluate_json(qrels: Path, run: Path, capsys, *more: str) -> dict:
    capsys.readouterr()
    assert main(["evaluate", str(qrels), str(run), "--format", "json", *more]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_run_judged_on_its_own_pool_is_flagged_and_stops_being_so_when_others_join(corpus, capsys):
    folder, runs = corpus
    with FakeLLM() as server:
        qrels = judge(folder, runs["overlap"], server, 10, capsys)
        origin = read_origin(qrels)
        assert origin.scale == (0, 3) and origin.relevant_from == 2
        assert [(p.name, p.depth) for p in origin.pool] == [("overlap", 10)]
        alone = evaluate_json(qrels, runs["overlap"], capsys, "-m", "recall@10,map,ndcg@10")
        pool = alone["rests_on"]["pool"]
        assert pool["alone"] and pool["member"] == "overlap" and pool["depth"] == 10
        assert any(f.startswith("POOL OF THIS RUN ALONE") for f in pool["flags"])
        assert alone["aggregate"]["recall@10"] == 1.0  # by construction: the flag is what makes it true
        outside = evaluate_json(qrels, runs["names"], capsys, "-m", "recall@10")["rests_on"]["pool"]
        assert outside["member"] is None and any(f.startswith("NOT IN THE POOL") for f in outside["flags"])
        for name in ("names", "longest"):  # two more retrievers judged into the same files
            judge(folder, runs[name], server, 10, capsys)
    origin = read_origin(qrels)
    assert sorted(p.name for p in origin.pool) == ["longest", "names", "overlap"]
    joined = evaluate_json(qrels, runs["overlap"], capsys, "-m", "recall@10,map,ndcg@10")
    pool = joined["rests_on"]["pool"]
    assert not pool["alone"] and pool["member"] == "overlap" and pool["flags"] == []
    # the same run, on the pool of three, equals pytrec_eval at the judge's relevant grade
    q = ragassay.read_qrels(qrels).to_dict()
    r = ragassay.read_run(runs["overlap"]).to_dict()
    per = pytrec_eval.RelevanceEvaluator(q, {"recall_10"}, relevance_level=2).evaluate(r)
    assert joined["aggregate"]["recall@10"] == pytest.approx(np.mean([v["recall_10"] for v in per.values()]))
    assert joined["aggregate"]["recall@10"] < 1.0


def test_a_run_is_known_by_its_ranking_not_its_name(corpus, capsys, tmp_path):
    folder, runs = corpus
    with FakeLLM() as server:
        qrels = judge(folder, runs["overlap"], server, 5, capsys)
    ranking = ragassay.read_run(runs["overlap"]).top_ids(100)
    renamed = write_run(tmp_path / "copy.txt", ranking, "something-else")  # the same ranking, another name
    assert evaluate_json(qrels, renamed, capsys)["rests_on"]["pool"]["member"] == "overlap"
    # the same name, its top 5 in another order: not the run that was judged
    swapped = {q: [ds[1], ds[0], *ds[2:]] if len(ds) > 1 else ds for q, ds in ranking.items()}
    impostor = write_run(tmp_path / "overlap.txt", swapped, "overlap")
    assert evaluate_json(qrels, impostor, capsys)["rests_on"]["pool"]["member"] is None
    # below the pool's depth a run may differ and still be the run that was pooled
    deeper = {q: ds[:5] + list(reversed(ds[5:])) for q, ds in ranking.items()}
    same_top = write_run(tmp_path / "deeper.txt", deeper, "x")
    assert evaluate_json(qrels, same_top, capsys)["rests_on"]["pool"]["member"] == "overlap"


def test_measures_deeper_than_the_pool_are_named(corpus, capsys):
    folder, runs = corpus
    with FakeLLM() as server:
        qrels = judge(folder, runs["overlap"], server, 3, capsys)
    d = evaluate_json(qrels, runs["overlap"], capsys, "-m", "p@3,ndcg@3,p@5,recall@10,map,mrr@3,mrr,num_ret,judged@10")
    # map and mrr read the whole ranking (up to 10 here): deeper than 3; num_ret and judged@10 read no grade
    assert d["rests_on"]["pool"]["deeper"] == ["p@5", "recall@10", "map", "mrr"]
    flag = next(f for f in d["rests_on"]["pool"]["flags"] if f.startswith("DEEPER"))
    assert "p@5, recall@10, map, mrr look past the pool's depth of 3" in flag


def test_the_share_judged_is_of_what_the_run_returned_in_trec_evals_order(tmp_path):
    """share_judged@k: of the chunks a run returned in its top k (score descending, ties by id
    descending, as trec_eval ranks), the share the labels judge; a run shorter than k is not
    penalised. Counted here by hand, on short rankings with tied scores; and equal to ir_measures'
    Judged@k wherever the two agree by definition (every ranking at least k long, no ties)."""
    rng = random.Random(5)
    qrels = {f"q{q}": {f"d{i}": rng.randint(0, 3) for i in rng.sample(range(40), 15)} for q in range(20)}
    run = {
        f"q{q}": {f"d{i}": float(rng.randint(0, 30)) for i in rng.sample(range(40), rng.randint(3, 30))}
        for q in range(20)
    }
    ev = ragassay.evaluate(qrels, run, ["p@5", "recall@20", "ndcg@10"])
    judged = ev.standing.judged
    assert list(judged) == ["share_judged@5", "share_judged@10", "share_judged@20"]
    for k in (5, 10, 20):
        shares = []
        for q, docs in run.items():
            top = sorted(docs, key=lambda d: (docs[d], d.encode()), reverse=True)[:k]
            shares.append(sum(d in qrels[q] for d in top) / len(top))
        assert judged[f"share_judged@{k}"] == pytest.approx(sum(shares) / len(shares), abs=1e-12)
    untied = {q: {d: float(i) for i, d in enumerate(rng.sample([f"d{i}" for i in range(40)], 25))} for q in qrels}
    ours = ragassay.evaluate(qrels, untied, ["p@10"]).standing.judged["share_judged@10"]
    theirs = ir_measures.calc_aggregate([ir_measures.Judged @ 10], qrels, untied)[ir_measures.Judged @ 10]
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_compare_counts_each_runs_relevant_chunks_no_other_run_found(tmp_path):
    qrels = {"q1": {"a": 3, "b": 2, "c": 1, "d": 2, "e": 0}, "q2": {"x": 2, "y": 3}}
    runs = {
        "one": {"q1": {"a": 3, "b": 2, "c": 1}, "q2": {"x": 2, "z": 1}},
        "two": {"q1": {"a": 3, "d": 2, "e": 1}, "q2": {"x": 2}},
        "three": {"q1": {"c": 3, "e": 2}, "q2": {"y": 1, "z": 0.5}},
    }
    path = write_trec(tmp_path / "q.txt", qrels, (0, 3), 2)
    cmp = ragassay.compare(path, runs, ["p@3"])
    unique = cmp.rests_on["unique_relevant"]
    # relevant from 2: q1 a b d, q2 x y. one finds a b x (b alone); two a d x (d alone); three y (alone)
    assert unique["runs"] == {
        "one": {"unique": 1, "relevant_found": 3},
        "two": {"unique": 1, "relevant_found": 3},
        "three": {"unique": 1, "relevant_found": 1},
    }
    assert cmp.settings["relevance_level"] == 2
    # at grade 1, c counts too, and one and three both found it
    at_one = ragassay.compare(path, runs, ["p@3"], relevance_level=1).rests_on["unique_relevant"]["runs"]
    assert at_one["one"] == {"unique": 1, "relevant_found": 4} and at_one["three"] == {"unique": 1, "relevant_found": 2}


def test_by_blocks_the_scores_rest_on_the_same(tmp_path, capsys):
    qrels, run = random_labels(21, 0, 3, queries=30)
    path = write_trec(tmp_path / "q.txt", qrels, (0, 3), 2)
    run_file = tmp_path / "r.txt"
    run_file.write_text("".join(f"{q} Q0 {d} 0 {s} r\n" for q, ds in run.items() for d, s in ds.items()))
    other = tmp_path / "other.txt"
    other.write_text("".join(f"{q} Q0 {d} 0 {-s} o\n" for q, ds in run.items() for d, s in ds.items()))
    member = PoolRun("r", pool_digest(ragassay.read_run(run_file).top_ids(5)), 5)
    write_origin(path, read_origin(path).replace(pool=(member,)))
    for run_path, in_pool in ((run_file, True), (other, False)):
        whole = evaluate_json(path, run_path, capsys, "-m", "p@5,recall@10,ndcg@10")
        blocks = evaluate_json(path, run_path, capsys, "-m", "p@5,recall@10,ndcg@10", "--block-queries", "4")
        assert blocks["aggregate"] == pytest.approx(whole["aggregate"], abs=1e-12)
        assert whole["aggregate"]["p@5"] == pytest.approx(trec_values(qrels, run, 2)["p@5"], abs=1e-12) or not in_pool
        assert blocks["rests_on"]["relevance"] == whole["rests_on"]["relevance"]
        judged = blocks["rests_on"]["pool"].pop("judged")
        assert judged and judged == pytest.approx(whole["rests_on"]["pool"].pop("judged"), abs=1e-12)
        assert blocks["rests_on"]["pool"] == whole["rests_on"]["pool"]  # known again by blocks, or not, alike
        assert (whole["rests_on"]["pool"]["member"] == "r") == in_pool
        assert any(f.startswith("NOT IN THE POOL") for f in whole["rests_on"]["pool"]["flags"]) != in_pool


def test_pool_digest_is_the_ranking_not_the_file():
    a = {"q1": ["x", "y"], "q2": ["z"]}
    assert pool_digest(a) == pool_digest({"q2": ["z"], "q1": ["x", "y"]})  # query order does not matter
    assert pool_digest(a) != pool_digest({"q1": ["y", "x"], "q2": ["z"]})  # rank order does
    assert pool_digest({"q1": ["ab"]}) != pool_digest({"q1": ["a", "b"]})  # ids are not run together
    assert pool_digest({"q1": ["a"], "q2": []}) != pool_digest({"q1": ["a"]})  # an empty ranking is a query


# ----------------------------------------------------------------------- the project and run


def project(folder: Path, retrievers: list[str], *more: str) -> Path:
    lines = [
        'out = "out"',
        "depth = 10",
        "k = 10",
        'metrics = ["ndcg@10", "map", "recall@10", "mrr", "p@5"]',
        *more,
        "[data]",
        'chunks = "chunks.jsonl"',
        'queries = "queries.jsonl"',
        "[retrievers]",
        *[f'{r} = "retrievers.py:{r}"' for r in retrievers],
    ]
    path = folder / "ragassay.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_project(path: Path, server: FakeLLM, capsys) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["run", str(path), "--base-url", server.url, "--model", "fake", "--quiet", "--format", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


@pytest.mark.parametrize("retrievers", [["overlap"], ["overlap", "names", "longest"]])
def test_run_on_real_text_says_the_pool_and_the_grade(tmp_path, capsys, retrievers):
    folder = tmp_path / "corpus"
    write_corpus(folder, chunks=150, queries=20)
    path = project(folder, retrievers)
    with FakeLLM() as server:
        code, result, err = run_project(path, server, capsys)
    assert code == 0, err
    evaluate_step = next(s for s in result["steps"] if s["step"] == "evaluate")
    overlap = evaluate_step["result"]["overlap"]
    pool = overlap["rests_on"]["pool"]
    assert sorted(p["name"] for p in pool["runs"]) == sorted(retrievers)
    assert pool["alone"] == (len(retrievers) == 1)
    assert ("POOL OF THIS RUN ALONE" in evaluate_step["text"]) == (len(retrievers) == 1)
    assert overlap["rests_on"]["relevance"]["level"] == 2 and "relevant = grade ≥ 2" in evaluate_step["text"]
    # the number equals pytrec_eval's on the judged pool at the judge's relevant grade
    q = ragassay.read_qrels(folder / "out" / "judged.qrels").to_dict()
    r = ragassay.read_run(folder / "out" / "runs" / "overlap.txt").to_dict()
    per = pytrec_eval.RelevanceEvaluator(q, {"recall_10"}, relevance_level=2).evaluate(r)
    scored = [per.get(qid, {}).get("recall_10", 0.0) for qid in q]  # run scores a query it missed as 0
    assert overlap["aggregate"]["recall@10"] == pytest.approx(sum(scored) / len(scored), abs=1e-9)
    report = (folder / "out" / "report.md").read_text()
    assert "count relevant = grade ≥ 2 (the labels' scale 0-3" in report
    assert ("POOL OF THIS RUN ALONE" in report) == (len(retrievers) == 1)
    if len(retrievers) > 1:
        assert "Pool bias: relevant chunks in a run's top 10 that no other run found" in report


def test_the_project_file_sets_the_relevant_grade(tmp_path, capsys):
    folder = tmp_path / "corpus"
    write_corpus(folder, chunks=80, queries=8)
    path = project(folder, ["overlap"], "relevance_level = 1")
    with FakeLLM() as server:
        code, result, err = run_project(path, server, capsys)
    assert code == 0, err
    overlap = next(s for s in result["steps"] if s["step"] == "evaluate")["result"]["overlap"]
    assert overlap["settings"]["relevance_level"] == 1 and overlap["rests_on"]["relevance"]["source"] == "given"
    assert "the labels say relevant from 2" in overlap["rests_on"]["relevance"]["text"]
    path.write_text(path.read_text().replace("relevance_level = 1", "relevance_level = 0"))
    assert main(["run", str(path), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "relevance_level: must be a whole number of at least 1" in err and "ragassay.toml" in err


def test_the_report_offers_the_measures_for_incomplete_judgments_only_when_some_are_missing(tmp_path):
    from helpers import EXAMPLE
    from ragassay.product.report import make_report

    runs = {"bm25": EXAMPLE / "runs" / "bm25.txt", "tfidf": EXAMPLE / "runs" / "tfidf.txt"}
    md = make_report([], tmp_path / "r.md", qrels=EXAMPLE / "qrels.txt", runs=runs).path.read_text()
    # the example's people judged the top 5 of both runs; the runs go to 10: a third of the top 10 is unjudged
    assert "| run | p@5 | p@10 | recall@10 | ndcg@10 | mrr | map | bpref | ndcg(judged_only)@10 |" in md
    assert "The labels judge the top 5 of bm25, tfidf: past k = 5 the curves count chunks nobody judged" in md
    assert "count relevant = grade ≥ 2 (the labels' scale 0-3, said in qrels.txt.origin.json)" in md
    # judged whole (every returned chunk of every run has a label): the usual measures alone
    complete = tmp_path / "complete.txt"
    complete.write_text(
        "".join(
            f"{q} 0 {d} 1\n"
            for name in runs
            for q, ds in ragassay.read_run(runs[name]).top_ids(100).items()
            for d in ds
            if name == "bm25" or d not in ragassay.read_run(runs["bm25"]).top_ids(100).get(q, [])
        )
    )
    md = make_report([], tmp_path / "c.md", qrels=complete, runs=runs).path.read_text()
    assert "| run | p@5 | p@10 | recall@10 | ndcg@10 | mrr | map |" in md and "bpref" not in md
    assert "relevant = grade ≥ 1 (trec_eval's default" in md
    assert "The labels do not say which runs they were judged from (their pool)." in md


@pytest.mark.parametrize(
    "ref, cand, says",
    [
        (((0, 3), 2), ((1, 5), 4), "different scales"),
        (((0, 3), 2), ((0, 3), 3), "different grades"),
        (((0, 3), 2), (None, None), "outside the reference's scale 0-3"),  # the candidate's grades run 0-9
        ((None, None), ((0, 1), 1), "outside the candidate's scale 0-1"),  # the reference's grades run 0-9
    ],
)
def test_two_files_of_labels_on_different_scales_are_not_compared_without_a_word(tmp_path, capsys, ref, cand, says):
    rng = random.Random(9)
    pairs = [(f"q{i % 4}", f"d{i}") for i in range(40)]
    wide = {q: {} for q, _ in pairs}
    for q, d in pairs:
        wide[q][d] = rng.randint(0, 9)
    narrow = {
        q: {d: min(g, 1) if cand[0] == (0, 1) else min(g // 3, 3) for d, g in ds.items()} for q, ds in wide.items()
    }
    a = write_trec(tmp_path / "a.txt", narrow if ref[0] else wide, *ref)
    b = write_trec(tmp_path / "b.txt", narrow if cand[0] else wide, *cand)
    capsys.readouterr()
    assert main(["agree", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("warning: ") and says in out.splitlines()[1]
    d = ragassay.agree(a, b).to_dict()
    assert says in d["scale_warning"]


def test_two_files_on_one_scale_are_compared_without_a_warning(tmp_path, capsys):
    qrels, _ = random_labels(4, 0, 3)
    a = write_trec(tmp_path / "a.txt", qrels, (0, 3), 2)
    b = write_trec(tmp_path / "b.txt", {q: {d: 3 - g for d, g in ds.items()} for q, ds in qrels.items()}, (0, 3), 2)
    assert ragassay.agree(a, b).to_dict()["scale_warning"] is None
    plain = write_trec(tmp_path / "p.txt", qrels)  # says nothing, and its grades fit the other's scale
    assert ragassay.agree(a, plain).to_dict()["scale_warning"] is None
    capsys.readouterr()
    assert main(["agree", str(a), str(b)]) == 0 and "warning" not in capsys.readouterr().out


def test_the_diagnosis_gives_no_advice_on_a_pool_of_the_run_alone(tmp_path, capsys, monkeypatch):
    """check's diagnosis splits wrong answers by recall: on labels judged from the diagnosed run alone,
    recall cannot tell good retrieval from bad, so no advice is given (and the reason is); on the
    people's labels of two runs' pool the advice stands."""
    from helpers import EXAMPLE

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    run = EXAMPLE / "runs" / "bm25.txt"
    alone = tmp_path / "alone.qrels"
    shutil.copy(EXAMPLE / "qrels.txt", alone)
    write_origin(
        alone,
        Origin(
            scale=(0, 3), relevant_from=2, pool=(PoolRun("bm25", pool_digest(ragassay.read_run(run).top_ids(10)), 10),)
        ),
    )
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"id": q, "question": "?", "reference": "30 days", "response": "30 days"}) + "\n"
            for q in ("q01", "q02", "q03")
        )
    )
    said = {}
    for qrels in (alone, EXAMPLE / "qrels.txt"):
        capsys.readouterr()
        main(
            [
                "check",
                str(answers),
                "--run",
                str(run),
                "--qrels",
                str(qrels),
                "-o",
                str(tmp_path / f"{qrels.stem}.jsonl"),
                "--format",
                "json",
            ]
        )
        said[qrels.stem] = json.loads(capsys.readouterr().out)["diagnosis"]
    assert said["alone"]["advice"].startswith("no advice: the qrels were judged from this run's own top 10 alone")
    assert said["alone"]["diagnosed"] == said["qrels"]["diagnosed"] == 3
    assert said["qrels"]["advice"] == "no wrong answers among the 3 diagnosed questions"


def test_a_scale_said_without_its_relevant_grade_counts_from_one_and_says_so(tmp_path):
    qrels, run = random_labels(8, 1, 5)
    path = write_trec(tmp_path / "q.txt", qrels, (1, 5), None)
    ev = ragassay.evaluate(path, run, ["p@5"])
    assert ev.relevance_level == 1 and ev.aggregate["p@5"] == pytest.approx(trec_values(qrels, run, 1)["p@5"])
    assert ev.relevance.text().startswith(
        "relevant = grade ≥ 1 (trec_eval's default: the labels say their scale 1-5 but not the grade they count from"
    )


def test_the_share_judged_leaves_out_queries_the_run_returned_nothing_for(tmp_path, capsys):
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1}, "q3": {"x": 2}, "q4": {"y": 1}}
    run = {"q1": {"a": 2.0, "z": 1.0}, "q2": {"c": 1.0}, "q3": {}}  # q3 asked, nothing found; q4 never asked
    for missing in ("skip", "zero"):
        ev = ragassay.evaluate(qrels, run, ["p@5"], missing=missing)
        assert ev.standing.judged == {"share_judged@5": pytest.approx(0.75)}  # (1/2 + 1/1) / 2, not / 3 or / 4
    assert ragassay.evaluate(qrels, {"q3": {}, "q1": {"z": 1.0}}, ["p@5"]).standing.judged == {"share_judged@5": 0.0}
    assert ragassay.evaluate(qrels, {"q3": {}}, ["p@5"]).standing.judged == {}  # nothing returned: no share at all
    path = write_trec(tmp_path / "q.txt", qrels)
    run_file = tmp_path / "r.txt"
    run_file.write_text("q1 Q0 a 1 2 r\nq1 Q0 z 2 1 r\nq2 Q0 c 1 1 r\n")
    whole = evaluate_json(path, run_file, capsys, "-m", "p@5", "--missing", "zero")
    blocks = evaluate_json(path, run_file, capsys, "-m", "p@5", "--missing", "zero", "--block-queries", "1")
    assert whole["rests_on"]["pool"]["judged"] == blocks["rests_on"]["pool"]["judged"] == {"share_judged@5": 0.75}


def test_a_grade_nobody_reaches_and_grades_off_the_scale_are_said(tmp_path, capsys):
    qrels, run = random_labels(12, 1, 5)
    path = write_trec(tmp_path / "q.txt", qrels)
    text = ragassay.evaluate(path, run, ["p@5"]).relevance.text()
    assert "its grades run 1-5 and every label counts as relevant" in text  # nothing below the cut: said so
    ev = ragassay.evaluate(path, run, ["p@5", "map"], relevance_level=9)
    assert ev.aggregate == {"p@5": 0.0, "map": 0.0}
    assert ev.relevance.warnings() == [
        "NO RELEVANT LABEL: no label reaches grade 9 (the highest is 5): every binary measure is 0"
    ]
    off = write_trec(tmp_path / "off.txt", qrels, (0, 3), 2)  # says 0-3, holds 1-5
    d = evaluate_json(off, _run_file(tmp_path, run), capsys, "-m", "p@5")
    assert d["rests_on"]["relevance"]["warnings"] == [
        "OFF THE SCALE: the labels hold grades 1-5, outside the scale 0-3 their origin file says"
    ]
    capsys.readouterr()
    main(["evaluate", str(off), str(_run_file(tmp_path, run)), "-m", "p@5"])
    assert "warning: OFF THE SCALE" in capsys.readouterr().out
    fits = write_trec(tmp_path / "fits.txt", qrels, (1, 5), 4)
    assert ragassay.evaluate(fits, run, ["p@5"]).relevance.warnings() == []


def _run_file(tmp_path: Path, run: dict) -> Path:
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} Q0 {d} 0 {s} r\n" for q, ds in run.items() for d, s in ds.items()))
    return path


def test_a_measure_is_deeper_than_the_pool_only_when_the_run_reaches_past_it(tmp_path, capsys):
    ranking = {f"q{i}": [f"d{i}-{j}" for j in range(4)] for i in range(5)}  # four results a query
    qrels = {q: {d: 1 for d in ds[:3]} for q, ds in ranking.items()}
    path = write_trec(tmp_path / "q.txt", qrels, (0, 1), 1)
    write_origin(
        path, read_origin(path).replace(pool=(PoolRun("r", pool_digest({q: ds[:3] for q, ds in ranking.items()}), 3),))
    )
    short = write_run(tmp_path / "short.txt", {q: ds[:3] for q, ds in ranking.items()}, "r")
    long = write_run(tmp_path / "long.txt", ranking, "r")
    assert evaluate_json(path, short, capsys, "-m", "p@10,map,recall@3")["rests_on"]["pool"]["deeper"] == []
    assert evaluate_json(path, long, capsys, "-m", "p@10,map,recall@3")["rests_on"]["pool"]["deeper"] == ["p@10", "map"]


@pytest.mark.parametrize(
    "spelt", [lambda d: d.upper(), lambda d: f"doc-{d}", lambda d: __import__("unicodedata").normalize("NFD", d)]
)
def test_chunk_ids_that_never_meet_are_said_not_scored_silently(tmp_path, capsys, spelt):
    qrels = {"q1": {"é1": 1, "ä2": 0}, "q2": {"é3": 2}}
    path = write_trec(tmp_path / "q.txt", qrels)
    run = write_run(tmp_path / "r.txt", {"q1": [spelt("é1"), spelt("ä2")], "q2": [spelt("é3")]}, "r")
    capsys.readouterr()
    assert main(["evaluate", str(path), str(run), "-m", "map"]) == 0
    out = capsys.readouterr().out
    assert [line.split() for line in out.splitlines() if line.startswith("map")] == [["map", "0.0000"]]
    flag = next(line for line in out.splitlines() if "NO CHUNK ID MEETS" in line)
    assert repr(spelt("é1")) in flag and "'é1'" in flag
    # one id meeting is enough for no such flag
    run = write_run(tmp_path / "r2.txt", {"q1": [spelt("é1"), "ä2"], "q2": [spelt("é3")]}, "r")
    capsys.readouterr()
    main(["evaluate", str(path), str(run), "-m", "map"])
    assert "NO CHUNK ID MEETS" not in capsys.readouterr().out


def test_runs_gate_says_what_the_gated_scores_rest_on(tmp_path, capsys):
    folder = tmp_path / "corpus"
    write_corpus(folder, chunks=80, queries=8)
    path = project(folder, ["overlap"])
    path.write_text(path.read_text() + '[gate]\nmin = ["recall@10=0.5", "ndcg@10=0.1"]\n')
    with FakeLLM() as server:
        code, result, err = run_project(path, server, capsys)
    gate = next(s for s in result["steps"] if s["step"] == "gate")
    assert gate["status"] == "ran" and code == 0, err
    assert gate["text"].endswith(
        "[overlap: relevant = grade ≥ 2; POOL OF THIS RUN ALONE (depth 10): recall and MAP count only what it found]"
    )
