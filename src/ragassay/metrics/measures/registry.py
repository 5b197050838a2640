"""The measures ragassay computes, declared in one place: each canonical name with whether it takes
a cutoff and what it means, the spellings of trec_eval, pytrec_eval, ir_measures and ranx that map to
it, the parameters it takes, the order it ranks tied scores in, and how the help lists it.

Parsing (:mod:`.parsing`) and the suggestions for a misspelt name (:mod:`.naming`) read these tables,
and so does the arithmetic (:mod:`ragassay.metrics.measure_values`) for the tie order, so adding a
measure starts here.
"""

from __future__ import annotations

# canonical name -> (needs a cutoff: "required" | "optional" | "none", description)
MEASURES: dict[str, tuple[str, str]] = {
    "p": ("required", "precision at k: relevant documents in the top k, divided by k"),
    "recall": ("required", "recall at k: relevant documents in the top k / all relevant judged"),
    "f1": ("required", "harmonic mean of p@k and recall@k"),
    "hit_rate": ("required", "1 if any relevant document is in the top k, else 0 (trec_eval success_k)"),
    "mrr": ("optional", "reciprocal rank of the first relevant document (within the top k if given)"),
    "ndcg": ("optional", "normalised DCG, gain = grade, ideal from all judged documents"),
    "map": ("optional", "average precision (over the top k if given), divided by all relevant"),
    "r_precision": ("none", "precision at R, R = number of relevant judged documents"),
    "set_p": ("none", "relevant retrieved / retrieved, over everything retrieved"),
    "set_recall": ("none", "relevant retrieved / relevant judged, over everything retrieved"),
    "set_f1": ("none", "harmonic mean of set_p and set_recall"),
    "hits": ("optional", "number of relevant documents in the top k (ranx's hits)"),
    "judged": (
        "optional",
        "share of the retrieved top k that has a judgment, any grade: the holes an LLM judge "
        "leaves. ir_measures' Judged@k, in its order: tied scores by document id ascending "
        "(trec_eval's order, used by every measure of trec_eval, takes them descending)",
    ),
    "bpref": (
        "none",
        "binary preference: relevant documents ranked above judged non-relevant ones "
        "(trec_eval's bpref; unjudged documents are ignored)",
    ),
    "err": ("optional", "expected reciprocal rank (gdeval's: stop probability (2^grade-1)/16, grades capped at 4)"),
    "set_ap": ("none", "set_p times set_recall (trec_eval's set_map, ir_measures' SetAP)"),
    "set_relative_p": (
        "none",
        "relevant retrieved / the most a set of that size could hold, min(retrieved, "
        "relevant) (trec_eval's set_relative_P, ir_measures' SetP(relative=True))",
    ),
    "num_ret": (
        "none",
        "documents retrieved: a count, summed over the queries rather than averaged, as trec_eval "
        "and ir_measures total it (num_ret, NumRet)",
    ),
    "num_rel": ("none", "relevant judged documents: a count, summed over the queries (num_rel, NumRel)"),
    "num_rel_ret": (
        "none",
        "relevant documents retrieved: a count, summed over the queries (num_rel_ret, NumRelRet, NumRet(rel=N))",
    ),
    "num_q": ("none", "1 for each evaluated query, summed: the number of queries (num_q, NumQ)"),
    "iprec": (
        "required",
        "interpolated precision at recall r, written iprec@0.5: the best precision at any rank "
        "from the one reaching r on (trec_eval's iprec_at_recall, ir_measures' IPrec@r)",
    ),
    "infap": (
        "none",
        "trec_eval's inferred AP (infAP): the precision above each relevant document is estimated "
        "from the judged documents there; grade -2 marks pooled but unjudged. On complete judgments "
        "it is AP",
    ),
    "rbp": (
        "none",
        "ir_measures' rank-biased precision RBP(p=0.8): (1-p) * sum of p^(i-1) over the relevant "
        "documents, the first 1000 ranks, as its cwl_eval provider computes it; tied scores keep the "
        "run's order",
    ),
    "ranx_rbp": (
        "none",
        "ranx's rank-biased precision rbp.95: (1-p) * sum of p^(i-1) * grade over the relevant "
        "documents (graded; relevant: grade at least the relevance level, ranx's rel_lvl), the "
        "whole ranking; tied scores keep the run's order",
    ),
    "dcg": (
        "optional",
        "ranx's dcg@k: sum of grade / log2(i+1) over the relevant documents (grade at least the "
        "relevance level, ranx's rel_lvl); tied scores keep the run's order",
    ),
    "dcg_burges": (
        "optional",
        "ranx's dcg_burges@k: sum of (2^grade - 1) / log2(i+1) over the relevant documents "
        "(grade at least the relevance level); tied scores keep the run's order",
    ),
    "ndcg_burges": (
        "optional",
        "ranx's ndcg_burges@k (ir_measures' nDCG(dcg=exp-log2)@k): dcg_burges over the "
        "ideal ranking's; tied scores keep the run's order",
    ),
    "compat": (
        "none",
        "ir_measures' Compat(p=0.95): rank-biased overlap of the ranking with the ideal one "
        "(relevant documents by grade, then by the run's score), normalised; tied scores by "
        "document id ascending",
    ),
    "inst": (
        "none",
        "ir_measures' INST(T=1,max_rel=3) (cwl_eval's): an adaptive user who wants T units of gain; "
        "grades scaled to 0..1 between min_rel and max_rel, the first 1000 ranks; tied scores keep "
        "the run's order",
    ),
    "insq": (
        "none",
        "ir_measures' INSQ(T=1,max_rel=3) (cwl_eval's): INST's user without its adaptation to the "
        "gain found; graded as INST",
    ),
    "nerr8": (
        "required",
        "ir_measures' NERR8(max_rel=3)@k (cwl_eval's 'not but nearly ERR', equation 8): a user "
        "who stops at a relevant document, at rank k at the latest; graded as INST",
    ),
    "nerr9": (
        "required",
        "ir_measures' NERR9(max_rel=3)@k (cwl_eval's, equation 9): NERR8 with the chance of going "
        "on also falling as i/(i+1); graded as INST",
    ),
    "nerr10": (
        "none",
        "ir_measures' NERR10(p=0.9,max_rel=3) (cwl_eval's, equation 10): RBP's persistence p times "
        "the chance the document did not satisfy; graded as INST",
    ),
    "nerr11": (
        "none",
        "ir_measures' NERR11(T=1,max_rel=3) (cwl_eval's, equation 11): INSQ's persistence times the "
        "chance the document did not satisfy; graded as INST",
    ),
    "sdcg": (
        "required",
        "ir_measures' SDCG(max_rel=3)@k (cwl_eval's scaled DCG): DCG@k with gains scaled to 0..1, "
        "divided by the sum of the discounts to k; graded as INST",
    ),
    "bpm": (
        "required",
        "ir_measures' BPM(T=1,max_rel=3)@k (cwl_eval's static Bejewelled Player): reads on until "
        "T units of gain or k documents; graded as INST",
    ),
}

# measures whose relevant/non-relevant split can be set per measure, as in P(rel=2)@5
TAKES_REL = frozenset(
    {
        "p",
        "recall",
        "f1",
        "hit_rate",
        "mrr",
        "map",
        "r_precision",
        "set_p",
        "set_recall",
        "set_f1",
        "hits",
        "bpref",
        "set_ap",
        "set_relative_p",
        "num_rel",
        "num_rel_ret",
        "iprec",
        "infap",
        "rbp",
    }
)

# measures that take ir_measures' judged_only=True (trec_eval -J: unjudged documents are removed from the
# ranking before it is scored)
TAKES_JUDGED_ONLY = frozenset(
    {
        "p",
        "recall",
        "mrr",
        "map",
        "r_precision",
        "ndcg",
        "set_p",
        "set_f1",
        "set_ap",
        "hit_rate",
        "iprec",
        "set_relative_p",
    }
)

# counts: trec_eval and ir_measures total them over the queries instead of averaging
SUMMED = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_q"})

# the other parameters each measure takes: name -> (kind, default or None when required)
PARAMS: dict[str, dict[str, tuple[str, object]]] = {
    "rbp": {"p": ("persistence", 0.8)},
    "ranx_rbp": {"p": ("persistence", None)},
    "compat": {"p": ("persistence", 0.95), "normalize": ("bool", True)},
    **{
        name: {"t": ("positive", 1.0), "min_rel": ("int", 0), "max_rel": ("int", None)}
        for name in ("inst", "insq", "nerr11", "bpm")
    },
    **{name: {"min_rel": ("int", 0), "max_rel": ("int", None)} for name in ("nerr8", "nerr9", "sdcg")},
    "nerr10": {"p": ("persistence", 0.9), "min_rel": ("int", 0), "max_rel": ("int", None)},
}

ALIASES: dict[str, str] = {
    # trec_eval / pytrec_eval
    "p": "p",
    "precision": "p",
    "recall": "recall",
    "r": "recall",
    "success": "hit_rate",
    "hit_rate": "hit_rate",
    "hitrate": "hit_rate",
    "hit": "hit_rate",
    "recip_rank": "mrr",
    "mrr": "mrr",
    "rr": "mrr",
    "ndcg_cut": "ndcg",
    "ndcg": "ndcg",
    "map": "map",
    "map_cut": "map",
    "ap": "map",
    "rprec": "r_precision",
    "r_precision": "r_precision",
    "r-prec": "r_precision",
    "rprecision": "r_precision",
    "set_p": "set_p",
    "set_recall": "set_recall",
    "set_f": "set_f1",
    "set_f1": "set_f1",
    "f1": "f1",
    "f": "f1",
    "set_map": "set_ap",
    "set_relative_p": "set_relative_p",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "num_q": "num_q",
    "iprec_at_recall": "iprec",
    # ir_measures
    "setp": "set_p",
    "setr": "set_recall",
    "setf": "set_f1",
    "setap": "set_ap",
    "numret": "num_ret",
    "numrel": "num_rel",
    "numrelret": "num_rel_ret",
    "numq": "num_q",
    "iprec": "iprec",
    "infap": "infap",
    "rbp": "rbp",
    "compat": "compat",
    "inst": "inst",
    "insq": "insq",
    "nerr8": "nerr8",
    "nerr9": "nerr9",
    "nerr10": "nerr10",
    "nerr11": "nerr11",
    "sdcg": "sdcg",
    "bpm": "bpm",
    # ranx, ir_measures
    "r-precision": "r_precision",
    "hits": "hits",
    "judged": "judged",
    "bpref": "bpref",
    "err": "err",
    "dcg": "dcg",
    "dcg_burges": "dcg_burges",
    "ndcg_burges": "ndcg_burges",
    # ours
    "set_ap": "set_ap",
    "ranx_rbp": "ranx_rbp",
}

DIVERSITY = (
    "alpha_ndcg",
    "α_ndcg",
    "alpha_dcg",
    "α_dcg",
    "err_ia",
    "nerr_ia",
    "nrbp",
    "nnrbp",
    "ap_ia",
    "map_ia",
    "p_ia",
    "strecall",
)
# names of peers' measures that ragassay refuses, and why (never a number that is not the peer's)
REFUSED: dict[str, str] = {
    **{
        name: "{raw!r} is a diversity measure: it needs qrels with subtopics (query, subtopic, document, grade), "
        "which ragassay does not read. Compute it with ir_measures and pyndeval"
        for name in DIVERSITY
    },
    "accuracy": "{raw!r} (ir_measures' Accuracy) is not computed by ragassay; bpref and compat measure "
    "relevant documents ranked above non-relevant ones",
}


# ir_measures' C/W/L measures on graded gains (cwl_eval's): peer_measures.cwl_measure
CWL_GRADED = frozenset({"inst", "insq", "nerr8", "nerr9", "nerr10", "nerr11", "sdcg", "bpm"})

# the order each measure named by a peer ranks tied scores in (every other measure: trec_eval's)
TIE_ORDER = {
    "compat": "id_ascending",
    "rbp": "run_order",
    "ranx_rbp": "run_order",
    "dcg": "run_order",
    "dcg_burges": "run_order",
    "ndcg_burges": "run_order",
    **{name: "run_order" for name in CWL_GRADED},
}


# how a measure with a parameter it cannot go without is listed in the help and the README
EXAMPLES = {
    "iprec": "iprec@r",
    "rbp": "rbp(p=0.8)",
    "ranx_rbp": "ranx_rbp(p=0.95)",
    "compat": "compat(p=0.95)",
    "inst": "inst(max_rel=3,min_rel=0,t=1.0)",
    "insq": "insq(max_rel=3,min_rel=0,t=1.0)",
    "nerr8": "nerr8(max_rel=3,min_rel=0)@k",
    "nerr9": "nerr9(max_rel=3,min_rel=0)@k",
    "nerr10": "nerr10(max_rel=3,min_rel=0,p=0.9)",
    "nerr11": "nerr11(max_rel=3,min_rel=0,t=1.0)",
    "sdcg": "sdcg(max_rel=3,min_rel=0)@k",
    "bpm": "bpm(max_rel=3,min_rel=0,t=1.0)@k",
}
