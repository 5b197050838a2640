"""Metric names: a small value object with one canonical spelling per measure.

``parse_measure`` accepts our names (``ndcg@10``), trec_eval's (``ndcg_cut_10``, ``P_5``,
``recip_rank``), pytrec_eval's (``P.5``), ir_measures' (``nDCG@10``, ``RR@10``, ``AP``, with a
relevance level of its own: ``P(rel=2)@5``) and ranx's (``r-precision``, ``hits@5``),
case-insensitively, and maps each to the canonical form, so ``P_5``, ``P@5`` and ``p@5`` are the
same measure and print as ``p@5``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from ..errors import MeasureError

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
    "judged": ("optional", "share of the retrieved top k that has a judgment, any grade: the holes an LLM judge "
                           "leaves. ir_measures' Judged@k, in its order: tied scores by document id ascending "
                           "(trec_eval's order, used by every measure of trec_eval, takes them descending)"),
    "bpref": ("none", "binary preference: relevant documents ranked above judged non-relevant ones "
                      "(trec_eval's bpref; unjudged documents are ignored)"),
    "err": ("optional", "expected reciprocal rank (gdeval's: stop probability (2^grade-1)/16, grades capped at 4)"),
    "set_ap": ("none", "set_p times set_recall (trec_eval's set_map, ir_measures' SetAP)"),
    "set_relative_p": ("none", "relevant retrieved / the most a set of that size could hold, min(retrieved, "
                               "relevant) (trec_eval's set_relative_P, ir_measures' SetP(relative=True))"),
    "num_ret": ("none", "documents retrieved: a count, summed over the queries rather than averaged, as trec_eval "
                        "and ir_measures total it (num_ret, NumRet)"),
    "num_rel": ("none", "relevant judged documents: a count, summed over the queries (num_rel, NumRel)"),
    "num_rel_ret": ("none", "relevant documents retrieved: a count, summed over the queries (num_rel_ret, NumRelRet, "
                            "NumRet(rel=N))"),
    "num_q": ("none", "1 for each evaluated query, summed: the number of queries (num_q, NumQ)"),
    "iprec": ("required", "interpolated precision at recall r, written iprec@0.5: the best precision at any rank "
                          "from the one reaching r on (trec_eval's iprec_at_recall, ir_measures' IPrec@r)"),
    "infap": ("none", "trec_eval's inferred AP (infAP): the precision above each relevant document is estimated "
                      "from the judged documents there; grade -2 marks pooled but unjudged. On complete judgments "
                      "it is AP"),
    "rbp": ("none", "ir_measures' rank-biased precision RBP(p=0.8): (1-p) * sum of p^(i-1) over the relevant "
                    "documents, the first 1000 ranks, as its cwl_eval provider computes it; tied scores keep the "
                    "run's order"),
    "ranx_rbp": ("none", "ranx's rank-biased precision rbp.95: (1-p) * sum of p^(i-1) * grade over the relevant "
                         "documents (graded; relevant: grade at least the relevance level, ranx's rel_lvl), the "
                         "whole ranking; tied scores keep the run's order"),
    "dcg": ("optional", "ranx's dcg@k: sum of grade / log2(i+1) over the relevant documents (grade at least the "
                        "relevance level, ranx's rel_lvl); tied scores keep the run's order"),
    "dcg_burges": ("optional", "ranx's dcg_burges@k: sum of (2^grade - 1) / log2(i+1) over the relevant documents "
                               "(grade at least the relevance level); tied scores keep the run's order"),
    "ndcg_burges": ("optional", "ranx's ndcg_burges@k (ir_measures' nDCG(dcg=exp-log2)@k): dcg_burges over the "
                                "ideal ranking's; tied scores keep the run's order"),
    "compat": ("none", "ir_measures' Compat(p=0.95): rank-biased overlap of the ranking with the ideal one "
                       "(relevant documents by grade, then by the run's score), normalised; tied scores by "
                       "document id ascending"),
    "inst": ("none", "ir_measures' INST(T=1,max_rel=3) (cwl_eval's): an adaptive user who wants T units of gain; "
                     "grades scaled to 0..1 between min_rel and max_rel, the first 1000 ranks; tied scores keep "
                     "the run's order"),
    "insq": ("none", "ir_measures' INSQ(T=1,max_rel=3) (cwl_eval's): INST's user without its adaptation to the "
                     "gain found; graded as INST"),
    "nerr8": ("required", "ir_measures' NERR8(max_rel=3)@k (cwl_eval's 'not but nearly ERR', equation 8): a user "
                          "who stops at a relevant document, at rank k at the latest; graded as INST"),
    "nerr9": ("required", "ir_measures' NERR9(max_rel=3)@k (cwl_eval's, equation 9): NERR8 with the chance of going "
                          "on also falling as i/(i+1); graded as INST"),
    "nerr10": ("none", "ir_measures' NERR10(p=0.9,max_rel=3) (cwl_eval's, equation 10): RBP's persistence p times "
                       "the chance the document did not satisfy; graded as INST"),
    "nerr11": ("none", "ir_measures' NERR11(T=1,max_rel=3) (cwl_eval's, equation 11): INSQ's persistence times the "
                       "chance the document did not satisfy; graded as INST"),
    "sdcg": ("required", "ir_measures' SDCG(max_rel=3)@k (cwl_eval's scaled DCG): DCG@k with gains scaled to 0..1, "
                         "divided by the sum of the discounts to k; graded as INST"),
    "bpm": ("required", "ir_measures' BPM(T=1,max_rel=3)@k (cwl_eval's static Bejewelled Player): reads on until "
                        "T units of gain or k documents; graded as INST"),
}

# measures whose relevant/non-relevant split can be set per measure, as in P(rel=2)@5
TAKES_REL = frozenset({"p", "recall", "f1", "hit_rate", "mrr", "map", "r_precision", "set_p", "set_recall",
                       "set_f1", "hits", "bpref", "set_ap", "set_relative_p", "num_rel", "num_rel_ret", "iprec", "infap", "rbp"})

# measures that take ir_measures' judged_only=True (trec_eval -J: unjudged documents are removed from the
# ranking before it is scored)
TAKES_JUDGED_ONLY = frozenset({"p", "recall", "mrr", "map", "r_precision", "ndcg", "set_p", "set_f1", "set_ap",
                               "hit_rate", "iprec", "set_relative_p"})

# counts: trec_eval and ir_measures total them over the queries instead of averaging
SUMMED = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_q"})

# the other parameters each measure takes: name -> (kind, default or None when required)
_PARAMS: dict[str, dict[str, tuple[str, object]]] = {
    "rbp": {"p": ("persistence", 0.8)},
    "ranx_rbp": {"p": ("persistence", None)},
    "compat": {"p": ("persistence", 0.95), "normalize": ("bool", True)},
    **{name: {"t": ("positive", 1.0), "min_rel": ("int", 0), "max_rel": ("int", None)}
       for name in ("inst", "insq", "nerr11", "bpm")},
    **{name: {"min_rel": ("int", 0), "max_rel": ("int", None)} for name in ("nerr8", "nerr9", "sdcg")},
    "nerr10": {"p": ("persistence", 0.9), "min_rel": ("int", 0), "max_rel": ("int", None)},
}

_ALIASES: dict[str, str] = {
    # trec_eval / pytrec_eval
    "p": "p", "precision": "p", "recall": "recall", "r": "recall", "success": "hit_rate",
    "hit_rate": "hit_rate", "hitrate": "hit_rate", "hit": "hit_rate", "recip_rank": "mrr",
    "mrr": "mrr", "rr": "mrr", "ndcg_cut": "ndcg", "ndcg": "ndcg", "map": "map", "map_cut": "map",
    "ap": "map", "rprec": "r_precision", "r_precision": "r_precision", "r-prec": "r_precision",
    "rprecision": "r_precision", "set_p": "set_p", "set_recall": "set_recall",
    "set_f": "set_f1", "set_f1": "set_f1", "f1": "f1", "f": "f1", "set_map": "set_ap", "set_relative_p": "set_relative_p", "num_ret": "num_ret",
    "num_rel": "num_rel", "num_rel_ret": "num_rel_ret", "num_q": "num_q", "iprec_at_recall": "iprec",
    # ir_measures
    "setp": "set_p", "setr": "set_recall", "setf": "set_f1", "setap": "set_ap", "numret": "num_ret",
    "numrel": "num_rel", "numrelret": "num_rel_ret", "numq": "num_q", "iprec": "iprec", "infap": "infap",
    "rbp": "rbp", "compat": "compat", "inst": "inst", "insq": "insq", "nerr8": "nerr8", "nerr9": "nerr9",
    "nerr10": "nerr10", "nerr11": "nerr11", "sdcg": "sdcg", "bpm": "bpm",
    # ranx, ir_measures
    "r-precision": "r_precision", "hits": "hits", "judged": "judged", "bpref": "bpref", "err": "err",
    "dcg": "dcg", "dcg_burges": "dcg_burges", "ndcg_burges": "ndcg_burges",
    # ours
    "set_ap": "set_ap", "ranx_rbp": "ranx_rbp",
}

_DIVERSITY = ("alpha_ndcg", "α_ndcg", "alpha_dcg", "α_dcg", "err_ia", "nerr_ia", "nrbp", "nnrbp", "ap_ia",
              "map_ia", "p_ia", "strecall")
# names of peers' measures that ragassay refuses, and why (never a number that is not the peer's)
_REFUSED: dict[str, str] = {
    **{name: "{raw!r} is a diversity measure: it needs qrels with subtopics (query, subtopic, document, grade), "
             "which ragassay does not read. Compute it with ir_measures and pyndeval" for name in _DIVERSITY},
    "accuracy": "{raw!r} (ir_measures' Accuracy) is not computed by ragassay; bpref and compat measure "
                "relevant documents ranked above non-relevant ones",
}

_SPLIT = re.compile(r"^(?P<name>[^(@]+?)(?:\((?P<params>[^)]*)\))?"
                    r"(?:(?P<sep>@|_|\.)(?P<k>\d+(?:\.\d+)?|\.\d+))?$")


@dataclass(frozen=True, order=True)
class Measure:
    """A metric and its cutoff, e.g. ``Measure("ndcg", 10)``; ``str()`` is the canonical name.

    ``params`` holds the measure's other parameters as ``(name, canonical text)`` pairs, sorted:
    ``judged_only`` (ir_measures' judged_only=True), a persistence ``p``, INST's ``t``, ``min_rel`` and
    ``max_rel``, Compat's ``normalize``, and the recall level of ``iprec``.
    """

    name: str
    k: int | None = None
    rel: int | None = None  # a relevance level of this measure's own (None: the evaluation's)
    params: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        shown = [key if value == "true" else f"{key}={value}" for key, value in self.params if key != "recall"]
        shown += [] if self.rel is None else [f"rel={self.rel}"]
        text = f"{self.name}({','.join(shown)})" if shown else self.name
        at = self.param("recall") if self.name == "iprec" else self.k
        return text if at is None else f"{text}@{at}"

    @property
    def description(self) -> str:
        return MEASURES[self.name][1]

    @overload
    def param(self, key: str) -> str | None: ...

    @overload
    def param(self, key: str, default: str) -> str: ...

    def param(self, key: str, default: str | None = None) -> str | None:
        """The canonical text of a parameter, or ``default`` when the measure does not have it."""
        return dict(self.params).get(key, default)

    def required(self, key: str) -> str:
        """A parameter every measure of this name has once parsed (parsing fills in its default or
        refuses the name without it), so its absence is a bug, not a user's mistake."""
        value = self.param(key)
        if value is None:
            raise AssertionError(f"{self} has no parameter {key!r}")
        return value

    @property
    def judged_only(self) -> bool:
        return self.param("judged_only") == "true"

    @property
    def summed(self) -> bool:
        """A count that is totalled over the queries, not averaged (trec_eval's and ir_measures' way)."""
        return self.name in SUMMED


def parse_measure(text: str | Measure) -> Measure:
    """Parse a metric name in any accepted spelling; raise :class:`MeasureError` otherwise.

    >>> [str(parse_measure(name)) for name in ("ndcg_cut_10", "nDCG@10", "P(rel=2)@5", "RR", "success_10")]
    ['ndcg@10', 'ndcg@10', 'p(rel=2)@5', 'mrr', 'hit_rate@10']
    >>> [str(parse_measure(name)) for name in ("RBP(p=0.9,rel=2)", "rbp.95", "IPrec@0.5", "nDCG(dcg=exp-log2)@10")]
    ['rbp(p=0.9,rel=2)', 'ranx_rbp(p=0.95)', 'iprec@0.5', 'ndcg_burges@10']
    """
    if isinstance(text, Measure):
        return text
    raw = str(text).strip()
    m = _SPLIT.match(raw.lower())
    if not m:
        raise MeasureError(_unknown(raw))
    name, k, params, sep = m.group("name"), m.group("k"), m.group("params"), m.group("sep")
    if name in _REFUSED or raw.lower() in _REFUSED:
        raise MeasureError(_REFUSED.get(name, _REFUSED.get(raw.lower(), "")).format(raw=raw))
    canonical = _ALIASES.get(name)
    if canonical is None and k is None:
        canonical = _ALIASES.get(raw.lower())
    if canonical is None:
        raise MeasureError(_unknown(raw))
    given = _split_params(params, raw)
    extra: dict[str, str] = {}
    if canonical == "rbp" and sep == "." and params is None:  # ranx's spelling: rbp.95 is p = 0.95
        canonical, given["p"], k = "ranx_rbp", f"0.{k}" if "." not in k else k, None
    elif canonical == "rbp" and k is not None:
        raise MeasureError(f"{raw!r}: ir_measures' RBP takes no cutoff (its cwl_eval provider scores the first 1000 "
                           "ranks); ranx's RBP with persistence 0.95 is written rbp.95")
    canonical = _renamed_by_params(canonical, given, raw)
    if canonical == "num_ret" and "rel" in given:  # ir_measures: NumRet(rel=N) counts the relevant retrieved
        canonical = "num_rel_ret"
    rel = _rel_param(given.pop("rel", None), canonical, raw)
    extra.update(_other_params(canonical, given, raw))
    need = MEASURES[canonical][0]
    if canonical == "iprec":
        if k is None:
            raise MeasureError(f"metric {raw!r} needs a recall level, e.g. iprec@0.5 (ir_measures' IPrec@0.5)")
        extra["recall"], k = _recall_level(k, raw), None
    elif need == "required" and k is None:
        raise MeasureError(f"metric {raw!r} needs a cutoff, e.g. {canonical}@10")
    elif need == "none" and k is not None:
        raise MeasureError(f"metric {canonical!r} takes no cutoff (got {raw!r})")
    if k is not None and not k.isdigit():
        raise MeasureError(f"the cutoff in {raw!r} must be a whole number of documents")
    cutoff = int(k) if k is not None else None
    if cutoff is not None and cutoff < 1:
        raise MeasureError(f"cutoff must be at least 1 in {raw!r}")
    return Measure(canonical, cutoff, rel, tuple(sorted(extra.items())))


def split_measure_list(text: str) -> list[str]:
    """Split a comma-separated list of names at the commas outside parentheses, brackets and quotes:
    ``"RBP(p=0.8,rel=1),nDCG@10"`` is two names."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _split_params(params: str | None, raw: str) -> dict[str, str]:
    """``p=0.8,rel=1`` -> {"p": "0.8", "rel": "1"}; a bare name (``judged_only``) means true."""
    out: dict[str, str] = {}
    for part in split_measure_list(params or ""):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip().strip("'\"").strip()
        if not key or (eq and not value):
            raise MeasureError(f"in {raw!r}: parameters are written name=value, got {part!r}")
        if key in out:
            raise MeasureError(f"in {raw!r}: {key} is given twice")
        out[key] = value if eq else "true"
    return out


def _renamed_by_params(canonical: str, given: dict[str, str], raw: str) -> str:
    """ir_measures' parameters that name another computation: nDCG's dcg= and SetP's relative= (and
    SetF's beta=, of which only 1 is computed)."""
    if canonical == "ndcg" and "dcg" in given:
        dcg = given.pop("dcg")
        if dcg == "exp-log2":
            if given:
                raise MeasureError(f"in {raw!r}: nDCG(dcg=exp-log2) is ranx's ndcg_burges and takes no other "
                                   "parameter")
            return "ndcg_burges"
        if dcg != "log2":
            raise MeasureError(f"in {raw!r}: dcg= is log2 (trec_eval's nDCG) or exp-log2 (ranx's ndcg_burges), "
                               f"got {dcg!r}")
    if canonical == "sdcg" and given.get("dcg", "log2") == "log2":
        given.pop("dcg", None)  # ir_measures' only SDCG formulation
    if canonical == "set_f1" and "beta" in given:
        if _number(given.pop("beta"), "beta", raw) != 1.0:
            raise MeasureError(f"in {raw!r}: only beta=1 (the harmonic mean, trec_eval's set_F) is computed")
    if canonical == "set_p" and "relative" in given:
        if _boolean(given.pop("relative"), raw):
            return "set_relative_p"
    return canonical


def _other_params(canonical: str, given: dict[str, str], raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if "judged_only" in given:
        if _boolean(given.pop("judged_only"), raw):
            if canonical not in TAKES_JUDGED_ONLY:
                raise MeasureError(f"{canonical!r} takes no judged_only (got {raw!r}); it is taken by: "
                                   + ", ".join(sorted(TAKES_JUDGED_ONLY)))
            out["judged_only"] = "true"
    if canonical == "ndcg" and "gains" in given:
        table = _gains_table(given.pop("gains"), raw)
        if table:
            out["gains"] = "{" + ",".join(f"{k}:{v}" for k, v in table) + "}"
    spec = _PARAMS.get(canonical, {})
    for key in given:
        if key not in spec:
            allowed = ", ".join([*spec, *(["rel"] if canonical in TAKES_REL else []),
                                 *(["judged_only"] if canonical in TAKES_JUDGED_ONLY else [])]) or "none"
            raise MeasureError(f"in {raw!r}: {canonical!r} takes no parameter {key!r} (it takes: {allowed})")
    for key, (kind, default) in spec.items():
        if key not in given and default is None:
            raise MeasureError(f"{raw!r} needs {key}=..., e.g. {canonical}({key}=3)" if kind == "int" else
                               f"{raw!r} needs {key}=...")
        value = given.get(key, default)
        if kind == "bool":
            flag = _boolean(value, raw) if isinstance(value, str) else bool(value)
            if not flag:
                out[key] = "false"
        elif kind == "int":
            if not re.fullmatch(r"-?\d+", str(value)):
                raise MeasureError(f"in {raw!r}: {key} must be a whole number, got {value!r}")
            out[key] = str(int(str(value)))
        else:
            out[key] = repr(_number(str(value), kind, raw))
    if "max_rel" in out and int(out["min_rel"]) >= int(out["max_rel"]):
        raise MeasureError(f"in {raw!r}: min_rel must be below max_rel")
    return out


def _gains_table(text: str, raw: str) -> list[tuple[int, int]]:
    """ir_measures' nDCG(gains={grade: gain, ...}): whole numbers (trec_eval reads the mapped qrels),
    sorted by grade, with the grades that keep their own value left out."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise MeasureError(f"in {raw!r}: gains is a table {{grade: gain, ...}}, e.g. nDCG(gains={{1:1,2:3,3:7}})@10")
    table: dict[int, int] = {}
    for item in split_measure_list(body[1:-1]):
        key, colon, value = item.partition(":")
        if not colon or not re.fullmatch(r"-?\d+", key.strip()) or not re.fullmatch(r"-?\d+", value.strip()):
            raise MeasureError(f"in {raw!r}: each gain is grade:gain in whole numbers, got {item!r}")
        table[int(key)] = int(value)
    return sorted((k, v) for k, v in table.items() if k != v)


def gains_table(m: Measure) -> dict[int, int]:
    """The grade -> gain table of ``nDCG(gains={...})`` (empty: the grades themselves)."""
    text = m.param("gains")
    return dict(_gains_table(text, str(m))) if text else {}


def _number(text: str, kind: str, raw: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise MeasureError(f"in {raw!r}: {kind} must be a number, got {text!r}") from None
    if kind == "persistence" and not 0.0 < value < 1.0:
        raise MeasureError(f"in {raw!r}: the persistence p must be between 0 and 1 (exclusive), got {text}")
    if kind == "positive" and not value > 0.0:
        raise MeasureError(f"in {raw!r}: T must be above 0, got {text}")
    return value


def _boolean(text: str, raw: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise MeasureError(f"in {raw!r}: expected True or False, got {text!r}")


def _recall_level(k: str, raw: str) -> str:
    """A recall level of at most two decimals between 0 and 1 (ir_measures hands trec_eval the level
    rounded to two decimals, so a third would not be the level computed there)."""
    if not re.fullmatch(r"(?:0|1)?(?:\.\d{1,2})?|0*1(?:\.0*)?", k) or float(k) > 1.0:
        raise MeasureError(f"in {raw!r}: the recall level is between 0 and 1 with at most two decimals, e.g. "
                           "iprec@0.5")
    return repr(float(k))


def _rel_param(value: str | None, canonical: str, raw: str) -> int | None:
    if value is None:
        return None
    if not re.fullmatch(r"-?\d+", value):
        raise MeasureError(f"in {raw!r}: rel is a relevance level, a whole number (rel=2), got {value!r}")
    if canonical not in TAKES_REL:
        raise MeasureError(f"{canonical!r} uses the grades themselves and takes no rel= (got {raw!r})")
    if int(value) < 1:
        raise MeasureError(f"in {raw!r}: rel is a relevance level of at least 1 (grades of 0 and below are not "
                           f"relevant), got {value}")
    return int(value)


def parse_measures(texts: Sequence[str | Measure] | str) -> list[Measure]:
    """Parse several names (a list, or one comma-separated string; a comma inside parentheses, as in
    ``RBP(p=0.8,rel=1)``, does not separate names); duplicates are dropped."""
    if isinstance(texts, str):
        texts = [texts]
    out: list[Measure] = []
    for t in texts:
        for part in (split_measure_list(t) if isinstance(t, str) else [t]):
            m = parse_measure(part)
            if m not in out:
                out.append(m)
    if not out:
        raise MeasureError("no metrics given")
    return out


def measure_names() -> list[str]:
    """Every measure as a user writes it, in the registry's order: ``p@k``, ``mrr``, ``mrr@k``, ...
    (help texts and the README list exactly these; a test keeps them in step)."""
    names: list[str] = []
    for name, (need, _) in MEASURES.items():
        example = _EXAMPLES.get(name)
        if example:
            names.append(example)
            continue
        if need != "required":
            names.append(name)
        if need != "none":
            names.append(f"{name}@k")
    return names


# how a measure with a parameter it cannot go without is listed in the help and the README
_EXAMPLES = {"iprec": "iprec@r", "rbp": "rbp(p=0.8)", "ranx_rbp": "ranx_rbp(p=0.95)", "compat": "compat(p=0.95)",
             "inst": "inst(max_rel=3,min_rel=0,t=1.0)", "insq": "insq(max_rel=3,min_rel=0,t=1.0)",
             "nerr8": "nerr8(max_rel=3,min_rel=0)@k", "nerr9": "nerr9(max_rel=3,min_rel=0)@k",
             "nerr10": "nerr10(max_rel=3,min_rel=0,p=0.9)", "nerr11": "nerr11(max_rel=3,min_rel=0,t=1.0)",
             "sdcg": "sdcg(max_rel=3,min_rel=0)@k", "bpm": "bpm(max_rel=3,min_rel=0,t=1.0)@k"}


def _unknown(raw: str) -> str:
    """The error for a name no measure has, with the closest names first: ordered by edit distance
    to what was written (``mapp`` is one edit from ``map``, three from ``map@10``), a cutoff kept when
    one was written (``mrr@k``, ``ndcg@1O``: the cutoff's digits are what went wrong)."""
    close = suggestions(raw)
    if close:
        more = f" (or {', '.join(repr(c) for c in close[1:])})" if len(close) > 1 else ""
        return f"unknown metric {raw!r}; did you mean {close[0]!r}?{more}"
    return f"unknown metric {raw!r}; known: {', '.join(measure_names())} (trec_eval, ir_measures and ranx names work too)"


def edit_distance(a: str, b: str) -> int:
    """Edits from one short name to another: insertions, deletions, substitutions and swaps of two
    neighbours (``ndgc``/``ndcg``), each 1 (optimal string alignment)."""
    d = [[i + j if not i * j else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def suggestions(raw: str, n: int = 3) -> list[str]:
    """Up to ``n`` measure names close to ``raw``, the closest first (edit distance of the name, then
    whether it has a cutoff as ``raw`` has one, then the registry's order); only the names as close
    as the closest, and the closest measure's other form (``map`` and ``map@10``)."""
    text = raw.strip().lower()
    m = _SPLIT.match(text)
    if m and m.group("k") is not None:
        name, k, wants_k = m.group("name"), m.group("k"), True
    elif "@" in text:  # a cutoff that is not a number: ndcg@1O, mrr@k, ndcg@ten
        name, k, wants_k = text.rsplit("@", 1)[0], None, True
    else:
        name, k, wants_k = (m.group("name") if m else text), None, False
    name = name.split("(")[0]
    scored: dict[str, tuple[int, int, int]] = {}
    order = {c: i for i, c in enumerate(MEASURES)}
    for alias, canonical in _ALIASES.items():
        need = MEASURES[canonical][0]
        d = edit_distance(name, alias)
        if d > max(1, len(name) // 3):
            continue
        forms = ([(canonical, wants_k)] if need != "required" else []) + \
                ([(f"{canonical}@{k or 10}", not wants_k)] if need != "none" else [])
        for form, off in forms:
            key = (d, int(off), order[canonical])
            if form not in scored or key < scored[form]:
                scored[form] = key
    ranked = sorted(scored, key=scored.__getitem__)
    if not ranked:
        return []
    best = scored[ranked[0]]
    return [f for f in ranked if scored[f][0] == best[0] and (scored[f][1] == best[1] or scored[f][2] == best[2])][:n]


DEFAULT_MEASURES = parse_measures(
    ["p@5", "p@10", "recall@10", "recall@100", "f1@10", "hit_rate@10", "mrr", "mrr@10", "ndcg@10", "map"])
