"""Metric names: a small value object with one canonical spelling per measure.

``parse_measure`` accepts our names (``ndcg@10``), trec_eval's (``ndcg_cut_10``, ``P_5``,
``recip_rank``), pytrec_eval's (``P.5``), ir_measures' (``nDCG@10``, ``RR@10``, ``AP``, with a
relevance level of its own: ``P(rel=2)@5``) and ranx's (``r-precision``, ``hits@5``),
case-insensitively, and maps each to the canonical form, so ``P_5``, ``P@5`` and ``p@5`` are the
same measure and print as ``p@5``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    "judged": ("optional", "share of the retrieved top k that has a judgment, any grade (ir_measures' "
                           "Judged@k): the holes an LLM judge leaves"),
    "bpref": ("none", "binary preference: relevant documents ranked above judged non-relevant ones "
                      "(trec_eval's bpref; unjudged documents are ignored)"),
    "err": ("optional", "expected reciprocal rank (gdeval's: stop probability (2^grade-1)/16, grades capped at 4)"),
}

# measures whose relevant/non-relevant split can be set per measure, as in P(rel=2)@5
TAKES_REL = frozenset({"p", "recall", "f1", "hit_rate", "mrr", "map", "r_precision", "set_p", "set_recall",
                       "set_f1", "hits", "bpref"})

_ALIASES: dict[str, str] = {
    # trec_eval / pytrec_eval
    "p": "p", "precision": "p", "recall": "recall", "r": "recall", "success": "hit_rate",
    "hit_rate": "hit_rate", "hitrate": "hit_rate", "hit": "hit_rate", "recip_rank": "mrr",
    "mrr": "mrr", "rr": "mrr", "ndcg_cut": "ndcg", "ndcg": "ndcg", "map": "map", "map_cut": "map",
    "ap": "map", "rprec": "r_precision", "r_precision": "r_precision", "r-prec": "r_precision",
    "rprecision": "r_precision", "set_p": "set_p", "set_recall": "set_recall",
    "set_f": "set_f1", "set_f1": "set_f1", "f1": "f1", "f": "f1",
    # ranx, ir_measures
    "r-precision": "r_precision", "hits": "hits", "judged": "judged", "bpref": "bpref", "err": "err",
}

_SPLIT = re.compile(r"^(?P<name>[^(@]+?)(?:\((?P<params>[^)]*)\))?(?:(?:@|_|\.)(?P<k>\d+))?$")


@dataclass(frozen=True, order=True)
class Measure:
    """A metric and its cutoff, e.g. ``Measure("ndcg", 10)``; ``str()`` is the canonical name."""

    name: str
    k: int | None = None
    rel: int | None = None  # a relevance level of this measure's own (None: the evaluation's)

    def __str__(self) -> str:
        text = self.name if self.rel is None else f"{self.name}(rel={self.rel})"
        return text if self.k is None else f"{text}@{self.k}"

    @property
    def description(self) -> str:
        return MEASURES[self.name][1]


def parse_measure(text: str | Measure) -> Measure:
    """Parse a metric name in any accepted spelling; raise :class:`MeasureError` otherwise.

    >>> [str(parse_measure(name)) for name in ("ndcg_cut_10", "nDCG@10", "P(rel=2)@5", "RR", "success_10")]
    ['ndcg@10', 'ndcg@10', 'p(rel=2)@5', 'mrr', 'hit_rate@10']
    """
    if isinstance(text, Measure):
        return text
    raw = str(text).strip()
    m = _SPLIT.match(raw.lower())
    if not m:
        raise MeasureError(_unknown(raw))
    name, k, params = m.group("name"), m.group("k"), m.group("params")
    canonical = _ALIASES.get(name)
    if canonical is None and k is None:
        canonical = _ALIASES.get(raw.lower())
    if canonical is None:
        raise MeasureError(_unknown(raw))
    need = MEASURES[canonical][0]
    if need == "required" and k is None:
        raise MeasureError(f"metric {raw!r} needs a cutoff, e.g. {canonical}@10")
    if need == "none" and k is not None:
        raise MeasureError(f"metric {canonical!r} takes no cutoff (got {raw!r})")
    cutoff = int(k) if k is not None else None
    if cutoff is not None and cutoff < 1:
        raise MeasureError(f"cutoff must be at least 1 in {raw!r}")
    return Measure(canonical, cutoff, _rel_param(params, canonical, raw))


def _rel_param(params: str | None, canonical: str, raw: str) -> int | None:
    if params is None:
        return None
    rel = None
    for part in (x.strip() for x in params.split(",") if x.strip()):
        key, _, value = part.partition("=")
        if key.strip() != "rel" or not re.fullmatch(r"-?\d+", value.strip()):
            raise MeasureError(f"in {raw!r}: the only parameter is rel=N (a relevance level), got {part!r}")
        rel = int(value)
    if rel is not None and canonical not in TAKES_REL:
        raise MeasureError(f"{canonical!r} uses the grades themselves and takes no rel= (got {raw!r})")
    return rel


def parse_measures(texts: list[str] | tuple[str, ...] | str) -> list[Measure]:
    """Parse several names (a list, or one comma-separated string); duplicates are dropped."""
    if isinstance(texts, str):
        texts = [t for t in texts.split(",") if t.strip()]
    out: list[Measure] = []
    for t in texts:
        for part in (str(t).split(",") if isinstance(t, str) else [t]):
            if isinstance(part, str) and not part.strip():
                continue
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
        if need != "required":
            names.append(name)
        if need != "none":
            names.append(f"{name}@k")
    return names


def _unknown(raw: str) -> str:
    import difflib
    m = _SPLIT.match(raw.lower())
    name, k = (m.group("name"), m.group("k")) if m else (raw.lower(), None)
    close = difflib.get_close_matches(name, list(_ALIASES), n=1, cutoff=0.6)
    if close:
        canonical = _ALIASES[close[0]]
        suggestion = canonical if MEASURES[canonical][0] == "none" else f"{canonical}@{k or 10}"
        return f"unknown metric {raw!r}; did you mean {suggestion!r}?"
    names = ", ".join(f"{n}@k" if need == "required" else n for n, (need, _) in MEASURES.items())
    return f"unknown metric {raw!r}; known: {names} (trec_eval and ir_measures names work too)"


DEFAULT_MEASURES = parse_measures(
    ["p@5", "p@10", "recall@10", "recall@100", "f1@10", "hit_rate@10", "mrr", "mrr@10", "ndcg@10", "map"])
