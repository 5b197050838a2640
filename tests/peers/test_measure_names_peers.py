"""The measure names users bring from ir_measures and ranx give that tool's own value.

Every name is checked per query and in the mean against the peer's own computation
(ir_measures.iter_calc / calc_aggregate, ranx.evaluate) on random graded qrels (0..3) and runs with
tied scores, odd document ids (byte order and case matter for ties), queries without a relevant
document, runs shorter than the cutoff, and queries on one side only. Where a peer breaks ties its
own way, the name decides: ir_measures' Judged@k and Compat take tied scores by document id
ascending, cwl_eval (ir_measures' RBP, INST) and ranx keep the run's order.
"""

from __future__ import annotations

import json
import math
import random

import pytest

import ragassay
from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.errors import MeasureError
from ragassay.metrics.measures import parse_measure, split_measure_list

ir_measures = pytest.importorskip("ir_measures")

DOC_IDS = ["d1", "d10", "d2", "d20", "D3", "d3", "a", "aa", "b#1", "z", "é", "x-9", "d100", "d11", "Z", "_u"]
SCORES = [0.0, 0.5, 1.0, 1.5, -2.0, 3.25, 1e-3]  # few values: many ties


def random_data(
    seed: int, n_queries: int = 24, max_docs: int = 30, ties: bool = True, grades: tuple[int, ...] = (0, 0, 1, 2, 3)
):
    """Qrels graded 0..3 and a run; every fourth query judges nothing relevant, some rankings are
    a single document, one qrels query has no ranking and one ranking has no qrels."""
    rnd = random.Random(seed)
    ids = DOC_IDS + [f"doc{i}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        judged = rnd.sample(ids, rnd.randint(1, 18))
        qrels[qid] = {d: (0 if q % 4 == 0 or i == 0 else rnd.choice(grades)) for i, d in enumerate(judged)}
        pool = judged[: rnd.randint(0, len(judged))] + rnd.sample(ids, 20)
        ranked = list(dict.fromkeys(rnd.sample(pool, min(len(pool), rnd.randint(1, max_docs)))))
        ranked = ranked[:max_docs]
        if ties:
            run[qid] = {d: rnd.choice(SCORES) for d in ranked}
        else:
            run[qid] = {d: 100.0 - i + rnd.random() * 0.5 for i, d in enumerate(ranked)}
    qrels["only_in_qrels"] = {"a": 2}
    run["only_in_run"] = {"a": 1.0}
    return qrels, run


def ours(names, qrels, run, **kw):
    ev = ragassay.evaluate(qrels, run, list(names), **kw)
    return ev, {name: str(parse_measure(name)) for name in names}


def assert_same(ev, key, ref: dict[str, float], ref_mean: float, what: str):
    """Equal per query and in the mean. trec_eval divides 0 by 0 for a ranking that -J (judged_only)
    empties and reports NaN (so ir_measures' mean is NaN); ragassay reports 0 there."""
    assert set(ref) == set(ev.queries), what
    if any(math.isnan(v) for v in ref.values()):
        ref = {q: 0.0 if math.isnan(v) else v for q, v in ref.items()}
        ref_mean = sum(ref.values()) / len(ref)
    per_query = ev.per_query  # a property, built on each read
    for q, v in nonempty(ref.items()):
        assert math.isclose(per_query[q][key], v, rel_tol=0, abs_tol=1e-6), (what, q, per_query[q][key], v)
    assert math.isclose(ev.aggregate[key], ref_mean, rel_tol=1e-9, abs_tol=1e-6), (what, ev.aggregate[key], ref_mean)


# ir_measures names computed by its default pipeline (pytrec_eval, and its own Judged and Compat)
IR_NAMES = [
    "SetP",
    "SetR",
    "SetF",
    "SetAP",
    "SetP(rel=2)",
    "SetR(rel=3)",
    "NumRet",
    "NumRel",
    "NumRelRet",
    "NumQ",
    "NumRet(rel=2)",
    "IPrec@0.0",
    "IPrec@0.1",
    "IPrec@0.25",
    "IPrec@0.5",
    "IPrec@0.75",
    "IPrec@1.0",
    "infAP",
    "infAP(rel=2)",
    "nDCG(judged_only=True)",
    "nDCG(judged_only=True)@5",
    "P(judged_only=True)@5",
    "AP(judged_only=True)",
    "RR(judged_only=True)",
    "Rprec(judged_only=True)",
    "R(judged_only=True)@10",
    "Success(judged_only=True)@3",
    "SetP(judged_only=True)",
    "SetP(relative=True)",
    "SetP(relative=True,rel=2)",
    "IPrec(judged_only=True)@0.5",
    "Judged@1",
    "Judged@5",
    "Judged@10",
    "Judged@40",
    "Judged",
    "Compat",
    "Compat(p=0.8)",
    "Compat(normalize=False)",
    "nDCG(gains={0:0,1:1,2:3,3:7})@10",
    "nDCG(gains={1:3,3:1})",
    "nDCG(gains={0:1,2:5})@5",
    "nDCG(gains={0:2,1:0,3:1},judged_only=True)@10",
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", IR_NAMES)
def test_ir_measures_names_give_ir_measures_values(seed, name):
    qrels, run = random_data(seed, grades=(0, 0, 1, 2, 3) if seed < 2 else (-2, -1, 0, 1, 2, 3))
    measure = ir_measures.parse_measure(name)
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    ref_mean = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    ev, key = ours([name], qrels, run, missing="zero")  # ir_measures scores a qrels query the run lacks as 0
    assert_same(ev, key[name], ref, ref_mean, name)


def test_counts_are_totalled_over_the_queries_and_the_rest_averaged():
    qrels, run = random_data(11)
    ev = ragassay.evaluate(qrels, run, ["NumQ", "NumRel", "NumRet", "P@5"])
    assert ev.aggregate["num_q"] == len(ev.queries) == len(set(qrels) & set(run)) == 24
    assert ev.aggregate["num_ret"] == sum(len(run[q]) for q in ev.queries)
    assert ev.aggregate["num_rel"] == sum(sum(g >= 1 for g in qrels[q].values()) for q in ev.queries)
    assert ev.aggregate["p@5"] == pytest.approx(sum(v["p@5"] for v in ev.per_query.values()) / 24)


def test_infap_is_ap_unless_a_pooled_document_is_unjudged():
    """trec_eval's infAP estimates precision from the pooled documents above a relevant one; a document
    outside the pool (not in the qrels) counts as non-relevant, as AP counts it, so infAP is AP
    (to trec_eval's epsilon) until grade -2 marks pooled documents left unjudged."""
    qrels, run = random_data(5)
    ev = ragassay.evaluate(qrels, run, ["infAP", "AP"])
    for v in nonempty(ev.per_query.values()):
        assert v["infap"] == pytest.approx(v["map"], abs=1e-4)
    holes = random_data(5, grades=(-2, -2, 0, 1, 2, 3))
    sampled = ragassay.evaluate(*holes, ["infAP", "AP"]).per_query
    assert any(abs(v["infap"] - v["map"]) > 1e-3 for v in sampled.values())


def test_judged_at_k_on_the_example_is_ir_measures_figure_not_trec_eval_order():
    """Tied scores straddle rank 5 in the example: trec_eval's order puts judged documents there,
    ir_measures' own (id ascending) an unjudged one."""
    ev = ragassay.evaluate(EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt", ["Judged@5"])
    assert ev.aggregate["judged@5"] == pytest.approx(0.990909090909091, abs=1e-12)


# -- ranx -------------------------------------------------------------------------------------------

RANX_NAMES = [
    "dcg@5",
    "dcg@10",
    "dcg",
    "dcg_burges@3",
    "dcg_burges",
    "ndcg_burges@5",
    "ndcg_burges@10",
    "ndcg_burges",
    "rbp.95",
    "rbp.8",
    "rbp.5",
]


def ranx_values(qrels, run, names, level: int = 1) -> dict[str, dict[str, float]]:
    ranx = pytest.importorskip("ranx")
    suffix = "" if level == 1 else f"-l{level}"
    r = ranx.Run(run)
    ranx.evaluate(ranx.Qrels(qrels), r, [n + suffix for n in names], return_mean=False, make_comparable=True)
    return {n: {q: float(v) for q, v in r.scores[n + suffix].items()} for n in names}


@pytest.mark.parametrize(
    "seed, ties, max_docs", [(0, True, 15), (1, True, 15), (2, True, 8), (3, False, 40), (4, False, 60)]
)
@pytest.mark.parametrize("level", [1, 2])
def test_ranx_names_give_ranx_values(seed, ties, max_docs, level):
    """ranx sorts a ranking of up to 15 documents stably (ties keep the run's order); longer ones
    with an unstable quicksort, so those are drawn without ties."""
    qrels, run = random_data(seed, max_docs=max_docs, ties=ties)
    ref = ranx_values(qrels, run, RANX_NAMES, level)
    ev, key = ours(RANX_NAMES, qrels, run, relevance_level=level)
    for name in nonempty(RANX_NAMES):
        per_query = {q: ref[name][q] for q in ev.queries}
        assert_same(ev, key[name], per_query, sum(per_query.values()) / len(per_query), name)


def test_ir_measures_exp_log2_ndcg_is_ranx_ndcg_burges():
    assert parse_measure("nDCG(dcg=exp-log2)@10") == parse_measure("ndcg_burges@10")
    assert parse_measure('nDCG(dcg="exp-log2")') == parse_measure("ndcg_burges")
    assert parse_measure("nDCG(dcg=log2)@10") == parse_measure("ndcg@10")


def test_ranx_names_differ_from_trec_eval_ones_where_the_conventions_differ():
    """ndcg_burges is not ndcg with --gain exponential when ties straddle the cutoff, and ranx's rbp
    (graded) is not ir_measures' RBP (0/1): the names print differently."""
    qrels, run = {"q": {"a": 3, "b": 1, "c": 2}}, {"q": {"b": 1.0, "a": 1.0, "c": 1.0}}
    burges = ragassay.evaluate(qrels, run, ["ndcg_burges@1"]).aggregate["ndcg_burges@1"]
    trec = ragassay.evaluate(qrels, run, ["ndcg@1"], gain="exponential").aggregate["ndcg@1"]
    assert burges == pytest.approx(1 / 7) and trec == pytest.approx(3 / 7)  # run order b; trec_eval's c
    both = ragassay.evaluate(qrels, run, ["rbp.95", "RBP(p=0.95)"]).aggregate
    assert set(both) == {"ranx_rbp(p=0.95)", "rbp(p=0.95)"}
    assert both["ranx_rbp(p=0.95)"] == pytest.approx(0.05 * (1 + 3 * 0.95 + 2 * 0.95**2))
    norm = 0.05 / (1 - 0.95**1000)
    assert both["rbp(p=0.95)"] == pytest.approx(norm * (1 + 0.95 + 0.95**2))


# -- cwl_eval's measures (ir_measures' RBP, INST, INSQ, NERR8-11, SDCG, BPM) --------------------------------------


def cwl_reference(qrels, run, weights) -> dict[str, float]:
    """cwl_eval's expected utility per query, written from its definition: the ranking sorted by score
    with a stable sort, gains padded to 1000 ranks, W_i = product of the chances of going on before
    rank i (``weights`` gives them from the gains), the value sum(W_i * g_i) / sum(W_i)."""
    out = {}
    for q, docs in run.items():
        if q not in qrels:
            continue
        ranked = sorted(docs.items(), key=lambda x: x[1], reverse=True)[:1000]
        gains = [qrels[q].get(d) for d, _ in ranked] + [None] * (1000 - len(ranked))
        go_on = weights(gains)
        reach, w = 1.0, []
        for c in go_on:
            w.append(reach)
            reach *= c
        values = [0.0 if g is None else g for g in gains]
        out[q] = sum(a * b for a, b in zip(w, values)) / sum(w)
    return out


def rbp_gains(p, level):
    def weights(gains):
        for i, g in enumerate(gains):
            gains[i] = None if g is None else float(max(g, 0) >= level)
        return [p] * len(gains)

    return weights


def graded(lo, hi, rule):
    """Gains scaled as cwl_eval scales grades (negatives as 0, clipped to [lo, hi], to 0..1) and the
    chance of going on past each rank from ``rule(rank, gain, gain_so_far)``, rank counted from 1."""

    def weights(gains):
        total, go_on = 0.0, []
        for i, g in enumerate(gains):
            gains[i] = None if g is None else (min(max(max(g, 0), lo), hi) - lo) / (hi - lo)
            total += gains[i] or 0.0
            go_on.append(rule(i + 1, gains[i] or 0.0, total))
        return go_on

    return weights


def inst(t):
    return lambda i, g, total: (((i + 2 * t - total) - 1) / (i + 2 * t - total)) ** 2


def insq(t):
    return lambda i, g, total: ((i + 2 * t - 1) / (i + 2 * t)) ** 2


CWL_CASES = [
    ("RBP(p=0.8,rel=1)", rbp_gains(0.8, 1)),
    ("RBP", rbp_gains(0.8, 1)),
    ("RBP(p=0.95,rel=2)", rbp_gains(0.95, 2)),
    ("RBP(p=0.5,rel=3)", rbp_gains(0.5, 3)),
    ("INST(T=1.0,max_rel=3)", graded(0, 3, inst(1.0))),
    ("INST(T=2.5,min_rel=1,max_rel=3)", graded(1, 3, inst(2.5))),
    ("INST(T=1.0,max_rel=2)", graded(0, 2, inst(1.0))),
    ("INSQ(T=1.0,max_rel=3)", graded(0, 3, insq(1.0))),
    ("INSQ(T=3.0,max_rel=2)", graded(0, 2, insq(3.0))),
    ("NERR8(max_rel=3)@5", graded(0, 3, lambda i, g, total: 1 - g if i < 5 else 0.0)),
    ("NERR9(max_rel=3)@10", graded(0, 3, lambda i, g, total: i / (i + 1) * (1 - g) if i < 10 else 0.0)),
    ("NERR10(p=0.8,max_rel=3)", graded(0, 3, lambda i, g, total: 0.8 * (1 - g))),
    ("NERR11(T=2.0,max_rel=3)", graded(0, 3, lambda i, g, total: insq(2.0)(i, g, total) * (1 - g))),
    ("SDCG(max_rel=3)@10", graded(0, 3, lambda i, g, total: math.log2(i + 1) / math.log2(i + 2) if i < 10 else 0.0)),
    ("BPM(T=1.0,max_rel=3)@10", graded(0, 3, lambda i, g, total: float(total < 1.0 and i < 10))),
    ("BPM(T=2.0,min_rel=1,max_rel=3)@5", graded(1, 3, lambda i, g, total: float(total < 2.0 and i < 5))),
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name, weights", CWL_CASES)
def test_rbp_and_inst_follow_cwl_eval(seed, name, weights):
    qrels, run = random_data(seed)
    run["long"], qrels["long"] = (
        {f"x{i}": float(i % 7) for i in range(1100)},
        {f"x{i}": i % 4 for i in range(0, 1100, 3)},
    )
    ref = cwl_reference(qrels, run, weights)
    ev, key = ours([name], qrels, run)
    assert_same(ev, key[name], ref, sum(ref.values()) / len(ref), name)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", [c[0] for c in CWL_CASES if c[0] != "RBP"])
def test_rbp_and_inst_equal_ir_measures_with_cwl_eval(seed, name):
    """Against ir_measures itself where its cwl_eval extra is installed (pip install ir-measures[cwl_eval])."""
    pytest.importorskip("cwl")
    qrels, run = random_data(seed)
    measure = ir_measures.parse_measure(name)
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    ref_mean = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    ev, key = ours([name], qrels, run, missing="zero")
    assert_same(ev, key[name], ref, ref_mean, name)


# -- names, lists, refusals -------------------------------------------------------------------------

ROUND_TRIP = [
    ("RBP(p=0.8,rel=1)", "rbp(p=0.8,rel=1)"),
    ("RBP", "rbp(p=0.8)"),
    ("rbp.95", "ranx_rbp(p=0.95)"),
    ("SetP", "set_p"),
    ("SetR", "set_recall"),
    ("SetF", "set_f1"),
    ("NumRelRet", "num_rel_ret"),
    ("NumRet(rel=2)", "num_rel_ret(rel=2)"),
    ("IPrec@0.5", "iprec@0.5"),
    ("iprec_at_recall_0.50", "iprec@0.5"),
    ("nDCG(judged_only=True)", "ndcg(judged_only)"),
    ("nDCG(dcg=exp-log2)@10", "ndcg_burges@10"),
    ("infAP", "infap"),
    ("Compat", "compat(p=0.95)"),
    ("INST(T=1,max_rel=3)", "inst(max_rel=3,min_rel=0,t=1.0)"),
    ("dcg@10", "dcg@10"),
    ("dcg_burges@5", "dcg_burges@5"),
    ("set_map", "set_ap"),
    ("SetP(relative=True)", "set_relative_p"),
    ("set_relative_P", "set_relative_p"),
    ("num_q", "num_q"),
    ("SDCG(dcg=log2,max_rel=3)@10", "sdcg(max_rel=3,min_rel=0)@10"),
    ("NERR10(max_rel=2)", "nerr10(max_rel=2,min_rel=0,p=0.9)"),
    ("BPM(T=2,max_rel=3)@5", "bpm(max_rel=3,min_rel=0,t=2.0)@5"),
    ("nDCG(gains={0:0,1:1,2:3,3:7})@10", "ndcg(gains={2:3,3:7})@10"),
    ("nDCG(gains={1:1})", "ndcg"),
]


@pytest.mark.parametrize("text, canonical", ROUND_TRIP)
def test_canonical_names_round_trip(text, canonical):
    m = parse_measure(text)
    assert str(m) == canonical and parse_measure(canonical) == m


def test_no_two_computations_print_the_same_name():
    texts = (
        [t for t, _ in ROUND_TRIP]
        + IR_NAMES
        + RANX_NAMES
        + [c[0] for c in CWL_CASES]
        + ["ndcg@10", "p@5", "judged@5", "map", "mrr", "err@10", "bpref", "hits@5", "r_precision"]
    )
    by_name: dict[str, set] = {}
    for t in nonempty(texts):
        m = parse_measure(t)
        by_name.setdefault(str(m), set()).add(m)
    assert all(len(ms) == 1 for ms in by_name.values()), {k: v for k, v in by_name.items() if len(v) > 1}


@pytest.mark.parametrize(
    "text, parts",
    [
        ("RBP(p=0.8,rel=1),nDCG@10", ["RBP(p=0.8,rel=1)", "nDCG@10"]),
        ("P@5, Compat(p=0.9,normalize=False) ,map", ["P@5", "Compat(p=0.9,normalize=False)", "map"]),
        ("INST(T=1.0,min_rel=0,max_rel=3)", ["INST(T=1.0,min_rel=0,max_rel=3)"]),
        ("a,,b,", ["a", "b"]),
    ],
)
def test_a_list_splits_only_at_commas_outside_parentheses(text, parts):
    assert split_measure_list(text) == parts


def test_cli_takes_commas_inside_parameters(capsys):
    code = main(
        [
            "evaluate",
            str(EXAMPLE / "qrels.txt"),
            str(EXAMPLE / "runs" / "bm25.txt"),
            "-m",
            "RBP(p=0.8,rel=1),nDCG@10",
            "-m",
            "Compat(p=0.9,normalize=False),NumQ",
            "--format",
            "json",
        ]
    )
    assert code == 0
    agg = json.loads(capsys.readouterr().out)["aggregate"]
    assert list(agg) == ["rbp(p=0.8,rel=1)", "ndcg@10", "compat(normalize=false,p=0.9)", "num_q"]
    assert agg["num_q"] == 22.0 and agg["ndcg@10"] == pytest.approx(0.7934961056538214, abs=1e-12)


@pytest.mark.parametrize(
    "text, message",
    [
        ("alpha_nDCG@10", "diversity measure: it needs qrels with subtopics"),
        ("α_nDCG@10", "diversity measure"),
        ("ERR_IA@20", "diversity measure"),
        ("NRBP", "diversity measure"),
        ("INST", "needs max_rel="),
        ("INST(T=0,max_rel=3)", "T must be above 0"),
        ("INST(max_rel=1,min_rel=1)", "min_rel must be below max_rel"),
        ("SDCG(max_rel=3)", "needs a cutoff"),
        ("BPM(T=1.0)@10", "needs max_rel="),
        ("NERR10(max_rel=3)@5", "no cutoff"),
        ("NERR10(p=0,max_rel=3)", "between 0 and 1"),
        ("SDCG(dcg=exp-log2,max_rel=3)@5", "takes no parameter 'dcg'"),
        ("Accuracy", "not computed"),
        ("RBP@10", "takes no cutoff"),
        ("RBP(p=1.5)", "between 0 and 1"),
        ("IPrec@0.333", "at most two decimals"),
        ("IPrec", "needs a recall level"),
        ("nDCG(gains={0:0.5})@10", "grade:gain in whole numbers"),
        ("nDCG(gains=2)", "gains is a table"),
        ("SetF(beta=2)", "only beta=1"),
        ("bpref(judged_only=True)", "takes no judged_only"),
        ("nDCG(dcg=log10)", "dcg= is log2"),
        ("P@5.5", "whole number"),
        ("Compat(q=2)", "takes no parameter 'q'"),
        ("nDCG(rel=2)@10", "takes no rel="),
    ],
)
def test_refused_names_say_why(text, message):
    with pytest.raises(MeasureError, match=message.replace("(", r"\(").replace(")", r"\)").replace("=", "=")):
        parse_measure(text)


def test_cli_refuses_a_diversity_measure_with_its_reason(capsys):
    code = main(["evaluate", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "runs" / "bm25.txt"), "-m", "alpha_nDCG@10,P@5"])
    assert code == 2
    err = capsys.readouterr().err
    assert "subtopics" in err and "Traceback" not in err
