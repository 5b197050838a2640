"""Metric names as values: :class:`Measure`, one canonical spelling per measure, and the parser that
maps every accepted spelling onto it.

``parse_measure`` accepts our names (``ndcg@10``), trec_eval's (``ndcg_cut_10``, ``P_5``,
``recip_rank``), pytrec_eval's (``P.5``), ir_measures' (``nDCG@10``, ``RR@10``, ``AP``, with a
relevance level of its own: ``P(rel=2)@5``) and ranx's (``r-precision``, ``hits@5``),
case-insensitively, and maps each to the canonical form, so ``P_5``, ``P@5`` and ``p@5`` are the
same measure and print as ``p@5``. What each name means and takes is declared in :mod:`.registry`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from ...errors import MeasureError
from .naming import NAME_SHAPE, unknown_metric
from .registry import ALIASES, MEASURES, PARAMS, REFUSED, SUMMED, TAKES_JUDGED_ONLY, TAKES_REL


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
    >>> [str(parse_measure(name))
    ...  for name in ("RBP(p=0.9,rel=2)", "rbp.95", "IPrec@0.5", "nDCG(dcg=exp-log2)@10")]
    ['rbp(p=0.9,rel=2)', 'ranx_rbp(p=0.95)', 'iprec@0.5', 'ndcg_burges@10']
    """
    if isinstance(text, Measure):
        return text
    raw = str(text).strip()
    canonical, k, given = _written_parts(raw)
    canonical = _renamed_by_params(canonical, given, raw)
    if canonical == "num_ret" and "rel" in given:  # ir_measures: NumRet(rel=N) counts the relevant retrieved
        canonical = "num_rel_ret"
    rel = _rel_param(given.pop("rel", None), canonical, raw)
    extra = _other_params(canonical, given, raw)
    cutoff = _cutoff(canonical, k, raw, extra)
    return Measure(canonical, cutoff, rel, tuple(sorted(extra.items())))


def _written_parts(raw: str) -> tuple[str, str | None, dict[str, str]]:
    """The canonical name a written name stands for, its cutoff as written and its parameters; ranx's
    ``rbp.95`` is read here, since its cutoff is in truth a persistence."""
    m = NAME_SHAPE.match(raw.lower())
    if not m:
        raise MeasureError(unknown_metric(raw))
    name, k, params, sep = m.group("name"), m.group("k"), m.group("params"), m.group("sep")
    canonical = _canonical_name(name, k, raw)
    given = _split_params(params, raw)
    if canonical == "rbp" and sep == "." and params is None:  # ranx's spelling: rbp.95 is p = 0.95
        canonical, given["p"], k = "ranx_rbp", f"0.{k}" if "." not in k else k, None
    elif canonical == "rbp" and k is not None:
        raise MeasureError(
            f"{raw!r}: ir_measures' RBP takes no cutoff (its cwl_eval provider scores the first 1000 "
            "ranks); ranx's RBP with persistence 0.95 is written rbp.95"
        )
    return canonical, k, given


def _canonical_name(name: str, k: str | None, raw: str) -> str:
    """The canonical name of a written one, refusing the peers' measures ragassay does not compute."""
    if name in REFUSED or raw.lower() in REFUSED:
        raise MeasureError(REFUSED.get(name, REFUSED.get(raw.lower(), "")).format(raw=raw))
    canonical = ALIASES.get(name)
    if canonical is None and k is None:
        canonical = ALIASES.get(raw.lower())
    if canonical is None:
        raise MeasureError(unknown_metric(raw))
    return canonical


def _cutoff(canonical: str, k: str | None, raw: str, extra: dict[str, str]) -> int | None:
    """The cutoff of a measure, checked against whether the measure takes one; ``iprec``'s number is
    a recall level instead, which goes into ``extra``."""
    need = MEASURES[canonical][0]
    if canonical == "iprec":
        if k is None:
            raise MeasureError(f"metric {raw!r} needs a recall level, e.g. iprec@0.5 (ir_measures' IPrec@0.5)")
        extra["recall"] = _recall_level(k, raw)
        return None
    if need == "required" and k is None:
        raise MeasureError(f"metric {raw!r} needs a cutoff, e.g. {canonical}@10")
    if need == "none" and k is not None:
        raise MeasureError(f"metric {canonical!r} takes no cutoff (got {raw!r})")
    if k is None:
        return None
    if not k.isdigit():
        raise MeasureError(f"the cutoff in {raw!r} must be a whole number of documents")
    if int(k) < 1:
        raise MeasureError(f"cutoff must be at least 1 in {raw!r}")
    return int(k)


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
                raise MeasureError(f"in {raw!r}: nDCG(dcg=exp-log2) is ranx's ndcg_burges and takes no other parameter")
            return "ndcg_burges"
        if dcg != "log2":
            raise MeasureError(
                f"in {raw!r}: dcg= is log2 (trec_eval's nDCG) or exp-log2 (ranx's ndcg_burges), got {dcg!r}"
            )
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
    """The parameters other than ``rel`` as canonical text, each checked and its default filled in."""
    out: dict[str, str] = {}
    if "judged_only" in given and _boolean(given.pop("judged_only"), raw):
        if canonical not in TAKES_JUDGED_ONLY:
            raise MeasureError(
                f"{canonical!r} takes no judged_only (got {raw!r}); it is taken by: "
                + ", ".join(sorted(TAKES_JUDGED_ONLY))
            )
        out["judged_only"] = "true"
    if canonical == "ndcg" and "gains" in given:
        table = _gains_pairs(given.pop("gains"), raw)
        if table:
            out["gains"] = "{" + ",".join(f"{k}:{v}" for k, v in table) + "}"
    spec = PARAMS.get(canonical, {})
    _refuse_undeclared(canonical, given, spec, raw)
    for key, (kind, default) in spec.items():
        value = _declared_param(canonical, key, kind, given.get(key, default), raw)
        if value is not None:
            out[key] = value
    if "max_rel" in out and int(out["min_rel"]) >= int(out["max_rel"]):
        raise MeasureError(f"in {raw!r}: min_rel must be below max_rel")
    return out


def _refuse_undeclared(canonical: str, given: dict[str, str], spec: dict[str, tuple[str, object]], raw: str) -> None:
    """Refuse a parameter the measure does not take, naming the ones it does."""
    for key in given:
        if key not in spec:
            allowed = (
                ", ".join(
                    [
                        *spec,
                        *(["rel"] if canonical in TAKES_REL else []),
                        *(["judged_only"] if canonical in TAKES_JUDGED_ONLY else []),
                    ]
                )
                or "none"
            )
            raise MeasureError(f"in {raw!r}: {canonical!r} takes no parameter {key!r} (it takes: {allowed})")


def _declared_param(canonical: str, key: str, kind: str, value: object, raw: str) -> str | None:
    """One declared parameter's canonical text (``value`` is what was written, else the default);
    None for a flag left at true, which the name does not show."""
    if value is None:
        raise MeasureError(
            f"{raw!r} needs {key}=..., e.g. {canonical}({key}=3)" if kind == "int" else f"{raw!r} needs {key}=..."
        )
    if kind == "bool":
        flag = _boolean(value, raw) if isinstance(value, str) else bool(value)
        return None if flag else "false"
    if kind == "int":
        if not re.fullmatch(r"-?\d+", str(value)):
            raise MeasureError(f"in {raw!r}: {key} must be a whole number, got {value!r}")
        return str(int(str(value)))
    return repr(_number(str(value), kind, raw))


def _gains_pairs(text: str, raw: str) -> list[tuple[int, int]]:
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
    return dict(_gains_pairs(text, str(m))) if text else {}


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
        raise MeasureError(f"in {raw!r}: the recall level is between 0 and 1 with at most two decimals, e.g. iprec@0.5")
    return repr(float(k))


def _rel_param(value: str | None, canonical: str, raw: str) -> int | None:
    if value is None:
        return None
    if not re.fullmatch(r"-?\d+", value):
        raise MeasureError(f"in {raw!r}: rel is a relevance level, a whole number (rel=2), got {value!r}")
    if canonical not in TAKES_REL:
        raise MeasureError(f"{canonical!r} uses the grades themselves and takes no rel= (got {raw!r})")
    if int(value) < 1:
        raise MeasureError(
            f"in {raw!r}: rel is a relevance level of at least 1 (grades of 0 and below are not relevant), got {value}"
        )
    return int(value)


def parse_measures(texts: Sequence[str | Measure] | str) -> list[Measure]:
    """Parse several names (a list, or one comma-separated string; a comma inside parentheses, as in
    ``RBP(p=0.8,rel=1)``, does not separate names); duplicates are dropped."""
    if isinstance(texts, str):
        texts = [texts]
    out: list[Measure] = []
    for t in texts:
        for part in split_measure_list(t) if isinstance(t, str) else [t]:
            m = parse_measure(part)
            if m not in out:
                out.append(m)
    if not out:
        raise MeasureError("no metrics given")
    return out


DEFAULT_MEASURES = parse_measures(
    ["p@5", "p@10", "recall@10", "recall@100", "f1@10", "hit_rate@10", "mrr", "mrr@10", "ndcg@10", "map"]
)
