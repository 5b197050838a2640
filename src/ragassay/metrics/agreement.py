"""How well two sets of graded labels agree, for example an LLM judge against human assessors.

The statistics are computed only on the (query, document) pairs that both sides judged, because a
pair only one side judged says nothing about agreement. Weighted kappas and Krippendorff's alpha use
the grade values themselves, so that a disagreement of 0 against 3 weighs three times as much as one
of 0 against 1. When both sides were made by the same labeller, no statistic is given at all
(:data:`SAME_ORIGIN_HIDDEN`), since one labeller compared with itself would only look like perfect
agreement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.coerce import coerce_qrels, coerce_run
from ..data.joins import Join
from ..data.json_numbers import nan_to_none
from ..data.origin import UNKNOWN, Origin
from ..data.result_models import AgreeResult
from ..data.tables import Qrels, Run
from ..errors import InputError, UsageError
from .evaluate import evaluate
from .kappa_meaning import alpha_why, binary_why, constant_why, interval_why, one_grade_why
from .rests_on import scale_warning


@dataclass
class Agreement:
    pairs: int
    only_reference: int
    only_candidate: int
    labels: list[int]
    confusion: list[list[int]]  # rows: reference grade, columns: candidate grade
    reference_distribution: dict[int, int]
    candidate_distribution: dict[int, int]
    exact_agreement: float
    kappa: float | None  # None (with ``why``) where no kappa can mean anything
    kappa_linear: float | None
    kappa_quadratic: float | None
    kappa_binary: dict[int, float | None]  # threshold -> kappa of (grade >= threshold)
    krippendorff_alpha_ordinal: float | None
    run_ranking: dict | None = field(default=None)
    kappa_ci: list[float] | None = None  # 95% percentile bootstrap over pairs (seed 0)
    disagreements: list[dict] = field(default_factory=list)  # the widest gaps first, at most 50
    origins: dict = field(default_factory=dict)  # "reference", "candidate": who made each (Origin.summary())
    same_origin: bool = False  # both made by the same labellers: nothing was measured
    join: dict = field(default_factory=dict)  # how the two files' query ids met (data/joins.py)
    why: dict = field(default_factory=dict)  # statistic -> why it is None (kappa_binary: threshold -> why)
    scale_warning: str | None = None  # the two files are not on one scale (metrics/rests_on.py)

    @property
    def names(self) -> list[str]:
        """Who the two sides are, by origin: ["alice", "gpt-4o-mini, judge_relevance@3f2a"]."""
        out = []
        for side in ("reference", "candidate"):
            o = self.origins.get(side, {})
            name = o.get("describe", "unknown")
            out.append(f"{name} ({Path(o['file']).name})" if name == "unknown" and o.get("file") else name)
        return out

    def to_dict(self) -> dict:
        d = {**self.__dict__, "kappa_binary": {f">={k}": v for k, v in self.kappa_binary.items()}, "names": self.names}
        if self.why.get("kappa_binary"):
            d["why"] = {**self.why, "kappa_binary": {f">={k}": v for k, v in self.why["kappa_binary"].items()}}
        if self.same_origin:  # one labeller against itself: no statistic of agreement is shown
            d.update({k: None for k in SAME_ORIGIN_HIDDEN}, kappa_binary=None, disagreements=[], why={})
        return nan_to_none(AgreeResult(**d).to_dict())


SAME_ORIGIN_HIDDEN = (
    "exact_agreement",
    "kappa",
    "kappa_linear",
    "kappa_quadratic",
    "krippendorff_alpha_ordinal",
    "kappa_ci",
)


def agree(
    reference: Qrels | Mapping | str | Path,
    candidate: Qrels | Mapping | str | Path,
    runs: Sequence[Run | str | Path] | Mapping[str, Run] | None = None,
    metric: str = "ndcg@10",
    reference_origin: Origin | None = None,
    candidate_origin: Origin | None = None,
) -> Agreement:
    """Agreement of two qrels on the pairs both judged; with ``runs``, whether they rank the runs
    the same way (Kendall's tau-b and Spearman's rho of the runs' mean ``metric``).

    Each side's origin (who made its labels) is the one given, else the one its file says, else
    unknown; two sides that share a known labeller (or are one file) are reported as such
    (``same_origin``), with no statistic. Two sides with no query id in common, or no judged pair,
    are an error naming both."""
    ref, cand = coerce_qrels(reference), coerce_qrels(candidate)
    origins = [
        o if o is not None else (getattr(q, "origin", None) or UNKNOWN)
        for o, q in ((reference_origin, ref), (candidate_origin, cand))
    ]
    one_file = _one_file(ref.source, cand.source)
    if one_file and candidate_origin is None and reference_origin is None:  # a hard link has no sidecar of its
        known = [o for o in origins if o.known]  # own: one file, one labeller
        if known:
            origins = [known[0], known[0]]
    join = Join.of(
        "query ids", "the reference", ref.queries, "the candidate", cand.queries, ref.source, cand.source
    ).require_overlap()
    ref_d, cand_d = ref.to_dict(), cand.to_dict()
    a, b, where = [], [], []
    only_ref = 0
    for q, docs in ref_d.items():
        other = cand_d.get(q, {})
        for doc, g in docs.items():
            if doc in other:
                a.append(g)
                b.append(other[doc])
                where.append((q, doc))
            else:
                only_ref += 1
    only_cand = len(cand) - len(a)
    if not a:
        raise InputError(
            f"{join.matched} query ids are in both, but no (query, document) pair was judged on both "
            f"sides: nothing to compare",
            cand.source or ref.source,
        )
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    labels = sorted(set(a) | set(b))
    conf = confusion_matrix(x, y, labels)
    ranking = None
    if runs is not None:
        ranking = run_ranking_agreement(ref, cand, runs, metric)
    values, binary, why = _statistics(x, y)
    return Agreement(
        pairs=len(a),
        only_reference=only_ref,
        only_candidate=only_cand,
        labels=labels,
        confusion=conf.tolist(),
        reference_distribution={g: int((x == g).sum()) for g in labels},
        candidate_distribution={g: int((y == g).sum()) for g in labels},
        exact_agreement=float((x == y).mean()) if len(x) else float("nan"),
        kappa=values["kappa"],
        kappa_linear=values["kappa_linear"],
        kappa_quadratic=values["kappa_quadratic"],
        kappa_binary=binary,
        krippendorff_alpha_ordinal=values["krippendorff_alpha_ordinal"],
        run_ranking=ranking,
        kappa_ci=values["kappa_ci"],
        disagreements=widest_disagreements(x, y, where),
        why=why,
        origins={
            "reference": {**origins[0].summary(), "file": ref.source},
            "candidate": {**origins[1].summary(), "file": cand.source},
        },
        same_origin=bool(origins[0].shared_with(origins[1])) or one_file,
        join=join.to_dict(),
        scale_warning=scale_warning(origins[0], origins[1], ref.grades.tolist(), cand.grades.tolist()),
    )


def _statistics(x: np.ndarray, y: np.ndarray) -> tuple[dict, dict, dict]:
    """The kappas, alpha and kappa's interval of two sides' grades, each None where it cannot mean
    anything (a side with one grade; too few pairs for an interval), with the reason in ``why``."""
    why: dict = {}
    one = one_grade_why(x, y)
    values: dict = {}
    for name, weights in (("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
        values[name] = None if one else cohen_kappa(x, y, weights)
        if one:
            why[name] = one
    few = interval_why(len(x))
    values["kappa_ci"] = None if one or few else kappa_interval(x, y)
    if values["kappa_ci"] is None:
        why["kappa_ci"] = one or few or "no resample gave a kappa"
    alpha = alpha_why(x, y)
    values["krippendorff_alpha_ordinal"] = None if alpha else krippendorff_alpha_ordinal(x, y)
    if alpha:
        why["krippendorff_alpha_ordinal"] = alpha
    binary: dict[int, float | None] = {}
    for t in (1, 2, 3):
        cut = binary_why(x, y, t)
        binary[t] = None if cut else cohen_kappa((x >= t).astype(int), (y >= t).astype(int))
        if cut:
            why.setdefault("kappa_binary", {})[t] = cut
    return values, binary, why


def kappa_words(a: dict) -> str:
    """Kappa as a sentence says it: "kappa 0.529", or "no kappa (REASON)" from an agree result's dict."""
    k = a.get("kappa")
    if k is not None and k == k:
        return f"kappa {k:.3f}"
    return f"no kappa ({(a.get('why') or {}).get('kappa') or 'undefined'})"


def _one_file(a: str | None, b: str | None) -> bool:
    """Both sides read from one file (a path spelt twice, a symlink, a hard link): one labeller."""
    if not a or not b or a == "-" or b == "-":
        return False
    try:
        return Path(a).samefile(b)
    except OSError:
        return False


def widest_disagreements(x: np.ndarray, y: np.ndarray, where: Sequence[tuple[str, str]], limit: int = 50) -> list[dict]:
    """The pairs the two sides grade furthest apart (then by query and document id)."""
    gap = np.abs(x - y)
    order = sorted((i for i in range(len(x)) if gap[i] > 0), key=lambda i: (-gap[i], where[i]))[:limit]
    return [
        {"query_id": where[i][0], "doc_id": where[i][1], "reference": int(x[i]), "candidate": int(y[i])} for i in order
    ]


def kappa_interval(
    x: np.ndarray, y: np.ndarray, confidence: float = 0.95, n_bootstrap: int = 2000, seed: int = 0
) -> list[float] | None:
    """Percentile bootstrap interval of Cohen's kappa, resampling pairs; None when undefined."""
    n = len(x)
    if n < 2:
        return None
    labels = sorted(set(x.tolist()) | set(y.tolist()))
    pos = {g: i for i, g in enumerate(labels)}
    L = len(labels)
    cell = np.array([pos[g] for g in x.tolist()]) * L + np.array([pos[g] for g in y.tolist()])
    rng = np.random.default_rng(seed)
    kappas = []
    step = max(1, 2_000_000 // n)
    for start in range(0, n_bootstrap, step):
        m = min(step, n_bootstrap - start)
        idx = rng.integers(0, n, size=(m, n))
        flat = (np.arange(m)[:, None] * L * L + cell[idx]).ravel()
        conf = np.bincount(flat, minlength=m * L * L).reshape(m, L, L) / n
        po = np.trace(conf, axis1=1, axis2=2)
        pe = (conf.sum(axis=2) * conf.sum(axis=1)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            kappas.append(np.where(pe < 1, (po - pe) / (1 - pe), np.nan))
    k = np.concatenate(kappas)
    k = k[np.isfinite(k)]
    if len(k) == 0:
        return None
    alpha = (1 - confidence) / 2
    return [float(np.quantile(k, alpha)), float(np.quantile(k, 1 - alpha))]


def confusion_matrix(x: np.ndarray, y: np.ndarray, labels: list[int]) -> np.ndarray:
    pos = {g: i for i, g in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for i, j in zip(x.tolist(), y.tolist()):
        m[pos[i], pos[j]] += 1
    return m


def cohen_kappa(x: np.ndarray, y: np.ndarray, weights: str | None = None) -> float:
    """Cohen's kappa; ``weights`` None, "linear" or "quadratic" (on the grade values).

    nan when undefined: no pairs, or chance agreement is already perfect (both sides used one
    and the same label for everything).
    """
    x, y = np.asarray(x), np.asarray(y)
    if len(x) == 0:
        return float("nan")
    labels = sorted(set(x.tolist()) | set(y.tolist()))
    observed = confusion_matrix(x, y, labels).astype(np.float64) / len(x)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    values = np.array(labels, dtype=np.float64)
    diff = np.abs(values[:, None] - values[None, :])
    if weights is None:
        w = (diff > 0).astype(np.float64)
    elif weights == "linear":
        w = diff
    elif weights == "quadratic":
        w = diff**2
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    denominator = float((w * expected).sum())
    if denominator == 0.0:
        return float("nan")
    return 1.0 - float((w * observed).sum()) / denominator


def krippendorff_alpha_ordinal(x: np.ndarray, y: np.ndarray) -> float:
    """Krippendorff's alpha with the ordinal metric, two coders, every unit coded by both."""
    x, y = np.asarray(x), np.asarray(y)
    if len(x) == 0:
        return float("nan")
    labels = sorted(set(x.tolist()) | set(y.tolist()))
    c = confusion_matrix(x, y, labels).astype(np.float64)
    coincidence = c + c.T  # each unit contributes both ordered pairs
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    cum = np.cumsum(n_c)
    k = len(labels)
    delta = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1, k):
            delta[i, j] = delta[j, i] = (cum[j] - cum[i] + n_c[i] - (n_c[i] + n_c[j]) / 2.0) ** 2
    d_observed = float((coincidence * delta).sum())
    d_expected = float((np.outer(n_c, n_c) * delta).sum()) / (n - 1.0)
    if d_expected == 0.0:
        return float("nan")
    return 1.0 - d_observed / d_expected


def kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of two scorings of the same items (ties counted on each side)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = len(x)
    concordant = discordant = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif da == db:
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b))
    return (concordant - discordant) / denominator if denominator else float("nan")


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float:
    ra, rb = _average_ranks(np.asarray(a, dtype=float)), _average_ranks(np.asarray(b, dtype=float))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum()) / denominator if denominator else float("nan")


def _average_ranks(v: np.ndarray) -> np.ndarray:
    order = np.argsort(v, kind="stable")
    ranks = np.empty(len(v))
    sorted_v = v[order]
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def run_ranking_agreement(
    reference: Qrels, candidate: Qrels, runs: Sequence[Run | str | Path] | Mapping[str, Run], metric: str
) -> dict:
    """Score every run under both qrels; do the two orderings of the runs agree?"""
    items = list(runs.items()) if isinstance(runs, Mapping) else [(None, r) for r in runs]
    loaded: list[tuple[str, Run]] = []
    for name, r in items:  # each run under a name of its own: two files tagged alike are two runs
        run = coerce_run(r)
        label = name or run.name
        if label in {n for n, _ in loaded} and isinstance(r, (str, Path)):
            label = str(r)  # the second of two runs named alike goes by its path, as in compare
        if label in {n for n, _ in loaded}:
            raise UsageError(f"two runs are named {label!r}: name them apart (a mapping {{name: run}})")
        loaded.append((label, run))
    if len(loaded) < 2:
        raise ValueError("ranking agreement needs at least two runs")
    ref_scores = [evaluate(reference, r, [metric], missing="zero").aggregate for _, r in loaded]
    cand_scores = [evaluate(candidate, r, [metric], missing="zero").aggregate for _, r in loaded]
    key = next(iter(ref_scores[0]))
    a = [s[key] for s in ref_scores]
    b = [s[key] for s in cand_scores]
    flat = constant_why(a, "the reference", key) or constant_why(b, "the candidate", key)
    out: dict[str, Any] = {
        "metric": key,
        "runs": {name: {"reference": x, "candidate": y} for (name, _), x, y in zip(loaded, a, b)},
        "kendall_tau_b": None if flat else kendall_tau_b(a, b),
        "spearman_rho": None if flat else spearman_rho(a, b),
    }
    if flat:
        out["why"] = {"kendall_tau_b": flat, "spearman_rho": flat}
    return out
