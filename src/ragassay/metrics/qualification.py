"""How a judge (a model with a prompt) agrees with people's labels of the same items, and whether one
judge agrees better than another: the statistics behind qualifying a judge before trusting it.

People's labels are the reference. A model's label of ``None`` is an error record: it is left out of
every statistic and counted, never read as a label. Every kappa carries a percentile bootstrap
interval over items (seeded, so a rerun prints the same interval), and a kappa that cannot mean
anything (one class on a side, no items) is None with the reason in words (``kappa_meaning``), never
0 or NaN. Labels are coded by their place in ``classes``, so grades 0..3 and answers' words
("correct", "partial", ...) go through one path; for an ordinal scale that place is the order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.json_numbers import nan_to_none
from .agreement import cohen_kappa, confusion_matrix, kappa_interval, kendall_tau_b, spearman_rho
from .kappa_meaning import constant_why, interval_why, one_grade_why
from .rates import MIN_INTERVAL

SIDES = ("people", "the model")
CONFIDENCE = 0.95
P_METHOD = (
    "paired bootstrap: the same resampled items for both judges; two-sided p = twice the smaller share "
    "of resampled differences at or below 0 and at or above 0, each share (count + 1) / (resamples + 1), "
    "at most 1 (so the smallest p it can give is 2 / (resamples + 1))"
)
MCNEMAR_METHOD = (
    "McNemar's exact test: of the items exactly one judge labels as people do, the share the first "
    "judge gets right against 1/2, two-sided exact binomial"
)


def _kappa(x: np.ndarray, y: np.ndarray) -> float | None:
    k = cohen_kappa(x, y)
    return k if math.isfinite(k) else None


def _codes(values: Sequence[Any], classes: Sequence[Hashable], side: str) -> list[int | None]:
    """Each label's place in ``classes`` (None stays None); a label outside the classes is an error
    naming it, since guessing a class would change what is measured."""
    place = {c: i for i, c in enumerate(classes)}
    out: list[int | None] = []
    for i, v in enumerate(values):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(place[v])
        except (KeyError, TypeError):
            raise ValueError(f"{side}'s label {v!r} (item {i}) is not one of the classes {list(classes)}") from None
    return out


def _check_classes(classes: Sequence[Hashable], positive: Any) -> tuple[list, set[int]]:
    classes = list(classes)
    if isinstance(positive, (str, bytes, int)):  # one class given alone ("correct"), not its characters
        positive = [positive]
    if not classes:
        raise ValueError("no classes: the labels' scale must name at least one class")
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes named twice in {classes}")
    place = {c: i for i, c in enumerate(classes)}
    outside = [p for p in positive if p not in place]
    if outside:
        raise ValueError(f"positive classes {outside} are not among the classes {classes}")
    return classes, {place[p] for p in positive}


def _positive_words(classes: list, positive: set[int], ordinal: bool) -> str:
    """How the binary view's positive side reads: "grade >= 2" on an ordinal scale cut at one grade,
    else the positive classes by name ("correct", "correct or partial")."""
    names = [str(classes[i]) for i in sorted(positive)]
    if ordinal and positive and sorted(positive) == list(range(min(positive), len(classes))):
        return f"grade >= {classes[min(positive)]}"
    return " or ".join(names) if names else "no class"


def _namer(classes: list, ordinal: bool) -> Callable[[int], str]:
    return (lambda c: f"grade {classes[c]}") if ordinal else (lambda c: f"the label {classes[c]}")


def _binary_namer(words: str) -> Callable[[int], str]:
    negative = f"grade < {words.split('>= ', 1)[1]}" if words.startswith("grade >= ") else f"not {words}"
    return lambda c: f"a positive label ({words})" if c else f"a negative label ({negative})"


@dataclass(frozen=True)
class LabelAgreement:
    """How a model's labels agree with people's on the items both labelled (``n``); ``missing``
    items had no model label (error records). Kappas are None where they cannot mean anything, with
    the reason in ``why`` (keys: "kappa", "kappa_ci", "kappa_binary", "kappa_binary_ci")."""

    n: int
    missing: int
    classes: list
    positive: list  # the classes the binary view counts as positive
    positive_words: str  # "grade >= 2", "correct"
    ordinal: bool
    unit: str  # what an item is called: "pairs", "answers"
    kappa: float | None  # unweighted Cohen's kappa over all classes
    kappa_ci: list[float] | None  # 95% percentile bootstrap over items
    kappa_binary: float | None  # Cohen's kappa of positive vs not
    kappa_binary_ci: list[float] | None
    exact_agreement: float | None  # share of items labelled alike (None for no items)
    binary_agreement: float | None  # share of items on the same side of the binary cut
    confusion: list[list[int]]  # rows people, columns model, both in ``classes`` order
    above: int | None  # ordinal only: items the model put above people's label
    below: int | None
    people_counts: dict  # class -> items people gave it (of the ``n``)
    model_counts: dict
    why: dict[str, str] = field(default_factory=dict)
    n_bootstrap: int = 2000
    seed: int = 0
    confidence: float = CONFIDENCE

    def to_dict(self) -> dict:
        """JSON-safe: counts keyed by the class as a string, no NaN (None instead)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["people_counts"] = {str(k): v for k, v in self.people_counts.items()}
        d["model_counts"] = {str(k): v for k, v in self.model_counts.items()}
        return nan_to_none(d)


def label_agreement(
    people: Sequence[Any],
    model: Sequence[Any],
    classes: Sequence[Hashable],
    positive: Any,
    *,
    ordinal: bool,
    n_bootstrap: int = 2000,
    seed: int = 0,
    unit: str | None = None,
) -> LabelAgreement:
    """Agreement of ``model``'s labels with ``people``'s, item by item (equal-length sequences).

    ``positive``: the classes the binary view counts as positive (relevance: the grades from the
    scale's relevant grade; answers: {"correct"}). ``ordinal``: the classes are in order (grades),
    so the items the model put above or below people's label are counted. ``unit`` names an item in
    the reasons ("pairs" for an ordinal scale, "answers" otherwise, unless given). A model label
    None is left out and counted in ``missing``; people's labels must all be given."""
    if len(people) != len(model):
        raise ValueError(f"people labelled {len(people)} items and the model {len(model)}: they must be the same items")
    classes, pos = _check_classes(classes, positive)
    unit = unit or ("pairs" if ordinal else "answers")
    x, y = _coded_pairs(people, model, classes)
    n = len(x)
    why: dict[str, str] = {}
    words = _positive_words(classes, pos, ordinal)
    xb, yb = np.isin(x, list(pos)).astype(np.int64), np.isin(y, list(pos)).astype(np.int64)
    values: dict[str, Any] = {}
    for name, a, b, namer in (
        ("kappa", x, y, _namer(classes, ordinal)),
        ("kappa_binary", xb, yb, _binary_namer(words)),
    ):
        values[name], values[name + "_ci"] = _kappa_with_interval(a, b, name, namer, unit, n_bootstrap, seed, why)
    return LabelAgreement(
        n=n,
        missing=len(people) - n,
        classes=classes,
        positive=[classes[i] for i in sorted(pos)],
        positive_words=words,
        ordinal=ordinal,
        unit=unit,
        kappa=values["kappa"],
        kappa_ci=values["kappa_ci"],
        kappa_binary=values["kappa_binary"],
        kappa_binary_ci=values["kappa_binary_ci"],
        exact_agreement=float((x == y).mean()) if n else None,
        binary_agreement=float((xb == yb).mean()) if n else None,
        confusion=confusion_matrix(x, y, list(range(len(classes)))).tolist(),
        above=int((y > x).sum()) if ordinal else None,
        below=int((y < x).sum()) if ordinal else None,
        people_counts={c: int((x == i).sum()) for i, c in enumerate(classes)},
        model_counts={c: int((y == i).sum()) for i, c in enumerate(classes)},
        why=why,
        n_bootstrap=n_bootstrap,
        seed=seed,
    )


def _coded_pairs(
    people: Sequence[Any], model: Sequence[Any], classes: Sequence[Hashable]
) -> tuple[np.ndarray, np.ndarray]:
    """People's and the model's labels as class codes, the items without a model label left out, in
    one sorted order so that the items' order changes no resample."""
    pc, mc = _codes(people, classes, "people"), _codes(model, classes, "the model")
    if any(c is None for c in pc):
        raise ValueError("a people's label is None: people's labels are the reference and must all be given")
    graded = sorted((p, m) for p, m in zip(pc, mc) if m is not None)
    x = np.array([p for p, _ in graded], dtype=np.int64)
    y = np.array([m for _, m in graded], dtype=np.int64)
    return x, y


def _kappa_with_interval(
    a: np.ndarray,
    b: np.ndarray,
    name: str,
    namer: Callable[[int], str],
    unit: str,
    n_bootstrap: int,
    seed: int,
    why: dict[str, str],
) -> tuple[float | None, list[float] | None]:
    """One kappa and its bootstrap interval, with the reason in ``why`` for each that cannot be given."""
    reason = one_grade_why(a, b, SIDES, unit, namer)
    kappa = None if reason else _kappa(a, b)
    if kappa is None:
        why[name] = reason or "chance agreement is already perfect"
    few = interval_why(len(a), unit)
    ci = None if kappa is None or few else kappa_interval(a, b, CONFIDENCE, n_bootstrap, seed)
    ci = None if ci is None else [round(v, 12) for v in ci]  # 1.0, not 0.9999999999999997
    if ci is None:
        why[name + "_ci"] = why.get(name) or few or "no resample gave a kappa"
    return kappa, ci


@dataclass(frozen=True)
class KappaDifference:
    """One kappa of two judges against people, and their difference ``a - b`` with a paired
    bootstrap interval and p-value; None with ``why`` where either kappa or the resampling cannot
    mean anything."""

    a: float | None
    b: float | None
    difference: float | None
    ci: list[float] | None
    p_value: float | None
    resamples: int  # resamples where both kappas were defined (what ci and p rest on)
    why: str | None = None


@dataclass(frozen=True)
class PairedDifference:
    """Two judges (two prompts, two models) on the same items against people: which agrees better.
    ``n`` items had both judges' labels; ``missing`` lacked one or both (``missing_a``,
    ``missing_b``: lacked that judge's)."""

    n: int
    missing: int
    missing_a: int
    missing_b: int
    classes: list
    positive: list
    kappa: KappaDifference
    kappa_binary: KappaDifference
    exact_a: float | None  # share of items each judge labels as people do
    exact_b: float | None
    only_a_right: int  # a labels as people do, b does not
    only_b_right: int
    mcnemar_p: float  # exact two-sided; 1.0 when no item splits them
    p_method: str = P_METHOD
    mcnemar_method: str = MCNEMAR_METHOD
    n_bootstrap: int = 2000
    seed: int = 0
    confidence: float = CONFIDENCE

    def to_dict(self) -> dict:
        """JSON-safe: the two kappa views as dicts, no NaN (None instead)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["kappa"], d["kappa_binary"] = self.kappa.__dict__.copy(), self.kappa_binary.__dict__.copy()
        return nan_to_none(d)


def _resampled_kappas(x: np.ndarray, y: np.ndarray, levels: int, idx: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each resample (a row of item indices ``idx``); NaN where chance agreement
    is perfect. ``x`` and ``y`` are codes 0..levels-1."""
    m, n = idx.shape
    cell = x * levels + y
    flat = (np.arange(m)[:, None] * levels * levels + cell[idx]).ravel()
    conf = np.bincount(flat, minlength=m * levels * levels).reshape(m, levels, levels) / n
    po = np.trace(conf, axis1=1, axis2=2)
    pe = (conf.sum(axis=2) * conf.sum(axis=1)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def _difference(
    x: np.ndarray, ya: np.ndarray, yb: np.ndarray, deltas: np.ndarray | None, namer: Callable[[int], str], unit: str
) -> KappaDifference:
    ka_why = one_grade_why(x, ya, ("people", "judge a"), unit, namer)
    kb_why = one_grade_why(x, yb, ("people", "judge b"), unit, namer)
    ka = None if ka_why else _kappa(x, ya)
    kb = None if kb_why else _kappa(x, yb)
    if ka is None or kb is None:
        return KappaDifference(ka, kb, None, None, None, 0, ka_why or kb_why or "chance agreement is already perfect")
    diff = ka - kb
    few = interval_why(len(x), unit)
    if few or deltas is None:
        return KappaDifference(ka, kb, diff, None, None, 0, few)
    d = deltas[np.isfinite(deltas)]
    if len(d) == 0:
        return KappaDifference(ka, kb, diff, None, None, 0, "no resample gave both kappas")
    alpha = (1 - CONFIDENCE) / 2
    low = (int((d <= 0).sum()) + 1) / (len(d) + 1)
    high = (int((d >= 0).sum()) + 1) / (len(d) + 1)
    return KappaDifference(
        ka,
        kb,
        diff,
        [float(np.quantile(d, alpha)), float(np.quantile(d, 1 - alpha))],
        min(1.0, 2 * min(low, high)),
        len(d),
    )


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: ``only_a`` of the ``only_a + only_b`` discordant items
    against a fair coin (twice the smaller tail, at most 1; 1.0 when there is no discordant item)."""
    total = only_a + only_b
    if total == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(total, i) for i in range(k + 1)) / 2**total
    return min(1.0, 2 * tail)


def paired_difference(
    people: Sequence[Any],
    a: Sequence[Any],
    b: Sequence[Any],
    classes: Sequence[Hashable],
    positive: Any,
    *,
    n_bootstrap: int = 2000,
    seed: int = 0,
    unit: str = "items",
) -> PairedDifference:
    """Whether judge ``a`` agrees with ``people`` better than judge ``b`` on the same items: the
    difference of their kappas (over all classes, and positive vs not) with a paired bootstrap
    (each resample draws the same items for both, so what the items share cancels), and McNemar's
    exact test of "labels the item as people do". Items where either judge has no label (None) are
    left out and counted; people's labels must all be given."""
    if not len(people) == len(a) == len(b):
        raise ValueError(
            f"people labelled {len(people)} items, judge a {len(a)} and judge b {len(b)}: they must be the same items"
        )
    classes, pos = _check_classes(classes, positive)
    pc = _codes(people, classes, "people")
    ac, bc = _codes(a, classes, "judge a"), _codes(b, classes, "judge b")
    if any(c is None for c in pc):
        raise ValueError("a people's label is None: people's labels are the reference and must all be given")
    graded = sorted((p, s, t) for p, s, t in zip(pc, ac, bc) if s is not None and t is not None)  # as above
    x = np.array([k[0] for k in graded], dtype=np.int64)
    ya = np.array([k[1] for k in graded], dtype=np.int64)
    yb = np.array([k[2] for k in graded], dtype=np.int64)
    n, levels = len(x), len(classes)
    binary = [np.isin(v, list(pos)).astype(np.int64) for v in (x, ya, yb)]
    deltas = binary_deltas = None
    if n >= MIN_INTERVAL and n_bootstrap > 0:
        rng = np.random.default_rng(seed)
        parts, binary_parts = [], []
        step = max(1, 1_000_000 // n)
        for start in range(0, n_bootstrap, step):
            idx = rng.integers(0, n, size=(min(step, n_bootstrap - start), n))
            parts.append(_resampled_kappas(x, ya, levels, idx) - _resampled_kappas(x, yb, levels, idx))
            binary_parts.append(
                _resampled_kappas(binary[0], binary[1], 2, idx) - _resampled_kappas(binary[0], binary[2], 2, idx)
            )
        deltas, binary_deltas = np.concatenate(parts), np.concatenate(binary_parts)
    words = _positive_words(classes, pos, False)
    right_a, right_b = ya == x, yb == x
    only_a, only_b = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
    return PairedDifference(
        n=n,
        missing=len(people) - n,
        missing_a=sum(c is None for c in ac),
        missing_b=sum(c is None for c in bc),
        classes=classes,
        positive=[classes[i] for i in sorted(pos)],
        kappa=_difference(x, ya, yb, deltas, _namer(classes, False), unit),
        kappa_binary=_difference(binary[0], binary[1], binary[2], binary_deltas, _binary_namer(words), unit),
        exact_a=float(right_a.mean()) if n else None,
        exact_b=float(right_b.mean()) if n else None,
        only_a_right=only_a,
        only_b_right=only_b,
        mcnemar_p=mcnemar_exact(only_a, only_b),
        n_bootstrap=n_bootstrap,
        seed=seed,
    )


@dataclass(frozen=True)
class RankingAgreement:
    """Whether people's labels and the model's rank the systems alike: Kendall's tau-b (and
    Spearman's rho) of the systems' scores under each, over the ``systems`` scored under both."""

    n: int
    systems: list[str]
    tau: float | None
    rho: float | None
    why: str | None
    only_people: list[str]  # systems scored under people's labels only
    only_model: list[str]
    unscored: list[str]  # a score that is not a number (NaN) on either side: left out

    def to_dict(self) -> dict:
        """JSON-safe (no NaN)."""
        return nan_to_none({k: getattr(self, k) for k in self.__dataclass_fields__})


MIN_SYSTEMS = 3


def system_ranking_agreement(
    people_scores: Mapping[str, float], model_scores: Mapping[str, float], measure: str | None = None
) -> RankingAgreement:
    """Kendall's tau-b between the systems' scores under people's labels and under the model's (the
    same measure, named by ``measure`` in the reasons), over the systems both scored; None with the
    reason under 3 systems or when one side scores every system alike."""

    def finite(v: Any) -> bool:
        return v is not None and math.isfinite(float(v))

    both = sorted(set(people_scores) & set(model_scores))
    unscored = [s for s in both if not (finite(people_scores[s]) and finite(model_scores[s]))]
    systems = [s for s in both if s not in unscored]
    a = [float(people_scores[s]) for s in systems]
    b = [float(model_scores[s]) for s in systems]
    what = measure or "on the measure"
    why = (
        f"{len(systems)} system{'' if len(systems) == 1 else 's'} scored under both: a ranking agreement needs "
        f"{MIN_SYSTEMS} or more"
        if len(systems) < MIN_SYSTEMS
        else None
    )
    why = why or constant_why(a, "people's labels", what) or constant_why(b, "the model's labels", what)
    tau = None if why else kendall_tau_b(a, b)
    rho = None if why else spearman_rho(a, b)
    return RankingAgreement(
        n=len(systems),
        systems=systems,
        tau=tau,
        rho=rho,
        why=why,
        only_people=sorted(set(people_scores) - set(model_scores)),
        only_model=sorted(set(model_scores) - set(people_scores)),
        unscored=unscored,
    )


def _percent(k: int, n: int) -> str:
    share = 100 * k / n
    if 0 < share < 1:
        return "<1%"
    if 99 < share < 100:
        return ">99%"
    return f"{math.floor(share + 0.5)}%"


def bias_sentence(agreement: LabelAgreement, unit: str | None = None) -> str:
    """The direction of the model's disagreement with people, in words; ``unit`` names the items
    (the agreement's own unit by default: "pairs" for grades, "answers" for answers' labels).

    Ordinal labels: how often the model grades above and below people. Nominal labels (answers):
    the commonest disagreement and its reverse.

    >>> a = label_agreement([0, 1, 2, 3, 1], [1, 1, 3, 2, None], [0, 1, 2, 3], {2, 3}, ordinal=True)
    >>> bias_sentence(a)
    "grades above people's on 50% of pairs (2 of 4), below on 25% (1)"
    """
    n, unit = agreement.n, unit or agreement.unit
    if n == 0:
        return f"no {unit} labelled by both people and the model"
    if agreement.ordinal:
        above, below = agreement.above or 0, agreement.below or 0
        return (
            f"grades above people's on {_percent(above, n)} of {unit} ({above} of {n}), "
            f"below on {_percent(below, n)} ({below})"
        )
    conf, classes = agreement.confusion, agreement.classes
    cells = [(conf[i][j], -i, -j) for i in range(len(classes)) for j in range(len(classes)) if i != j]
    count, i, j = max(cells, default=(0, 0, 0))
    if count == 0:
        return f"labels as people do on all {n} {unit}"
    i, j = -i, -j
    return f"called {classes[j]} where people said {classes[i]}: {count} of {n}; the reverse: {conf[j][i]}"
