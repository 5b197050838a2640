"""Measures that trec_eval lacks, checked against the peer that defines them: Judged@k against
ir_measures, ERR@k against gdeval (the TREC Web track's script, shipped inside ir_measures), hits@k
and the spellings of ranx and ir_measures."""

from __future__ import annotations

import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import ragassay
from helpers import EXAMPLE, nonempty
from ragassay.errors import MeasureError
from ragassay.metrics.measures import parse_measure

ir_measures = pytest.importorskip("ir_measures")


def _random(seed: int, n_queries: int = 30, numeric_ids: bool = False):
    """Qrels and a run without score ties (peers break ties differently from trec_eval)."""
    rnd = random.Random(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = str(q + 1) if numeric_ids else f"q{q}"
        docs = rnd.sample(range(60), 25)
        qrels[qid] = {f"d{d}": rnd.choice([0, 0, 1, 2, 3, 4]) for d in docs[: rnd.randint(1, 15)]}
        ranked = rnd.sample(range(60), rnd.randint(1, 20))
        run[qid] = {f"d{d}": 100.0 - i + rnd.random() * 0.5 for i, d in enumerate(ranked)}
    return qrels, run


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [1, 5, 10, 20])
def test_judged_at_k_equals_ir_measures(seed, k):
    qrels, run = _random(seed)
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ k], qrels, run)}
    ours = ragassay.evaluate(qrels, run, [f"Judged@{k}"]).per_query
    assert set(ref) == set(ours)
    for q, v in nonempty(ref.items()):
        assert math.isclose(ours[q][f"judged@{k}"], v, abs_tol=1e-12), (q, k)


def test_judged_on_the_bundled_example_is_ir_measures_figure():
    ev = ragassay.evaluate(EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt", ["Judged@10"])
    assert ev.aggregate["judged@10"] == pytest.approx(0.7034090909090908, abs=1e-12)


GDEVAL = Path(ir_measures.__file__).parent / "bin" / "gdeval.pl"


@pytest.mark.skipif(shutil.which("perl") is None or not GDEVAL.exists(), reason="needs perl and gdeval.pl")
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k", [5, 10, 20])
def test_err_at_k_equals_gdeval(tmp_path, seed, k):
    qrels, run = _random(seed, numeric_ids=True)  # gdeval wants numeric topics
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("".join(f"{t} 0 {d} {g}\n" for t, docs in qrels.items() for d, g in docs.items()))
    r.write_text(
        "".join(
            f"{t} Q0 {d} {i} {s} run\n"
            for t, docs in run.items()
            for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1)
        )
    )
    out = subprocess.run(
        ["perl", str(GDEVAL), str(q), str(r), str(k)], capture_output=True, text=True, check=True
    ).stdout
    ref = {
        line.split(",")[1]: float(line.split(",")[3]) for line in out.splitlines()[1:] if line.split(",")[1] != "amean"
    }
    ours = ragassay.evaluate(q, r, [f"ERR@{k}"]).per_query
    assert ref and set(ref) <= set(ours)
    for t, v in nonempty(ref.items()):
        assert math.isclose(ours[t][f"err@{k}"], v, abs_tol=1e-5), (t, k)  # gdeval prints 5 decimals


def test_hits_is_a_count_and_ranx_spellings_parse():
    qrels, run = _random(7)
    ev = ragassay.evaluate(qrels, run, ["hits@5", "p@5", "r-precision", "Rprec"])
    for v in nonempty(ev.per_query.values()):
        assert v["hits@5"] == pytest.approx(5 * v["p@5"])
    assert str(parse_measure("r-precision")) == "r_precision" and str(parse_measure("hit_rate@5")) == "hit_rate@5"


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("P(rel=2)@5", "p(rel=2)@5"),
        ("AP(rel=2)", "map(rel=2)"),
        ("RR(rel=3)@10", "mrr(rel=3)@10"),
        ("Judged@10", "judged@10"),
        ("ERR@20", "err@20"),
        ("Bpref", "bpref"),
        ("nDCG@10", "ndcg@10"),
    ],
)
def test_ir_measures_syntax(text, canonical):
    assert str(parse_measure(text)) == canonical


@pytest.mark.parametrize(
    "text, message",
    [
        ("ndgc@10", "did you mean 'ndcg@10'"),
        ("nDCG(rel=2)@10", "uses the grades themselves and takes no rel="),
        ("P(gain=2)@5", "'p' takes no parameter 'gain' (it takes: rel, judged_only)"),
        ("P(rel=x)@5", "rel is a relevance level, a whole number"),
        ("bpref@10", "takes no cutoff"),
    ],
)
def test_bad_measure_names_say_what_is_wrong(text, message):
    with pytest.raises(MeasureError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_measure(text)
