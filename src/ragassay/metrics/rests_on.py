"""What a score rests on, shown beside it: the grade from which a label counts as relevant, the pool
of runs whose top results were judged, and how much of a run's own top k was judged at all.

Exact arithmetic on a wrong premise flatters a retriever. The judge's grade 1 means "on the topic,
but does not answer", so counting it as relevant gives a retriever credit for near misses. A run
scored on a pool that only it made has, by construction, found every relevant chunk the labels
know. Neither can be seen in the number itself, so each is carried beside it, in the text, the JSON
and the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.origin import UNKNOWN, Origin, PoolRun, sidecar_path
from ..data.pool import member_of, membership
from .measures.parsing import Measure, parse_measure

TREC_EVAL_LEVEL = 1  # trec_eval's default: any positive grade is relevant

# measures whose value does not hang on the relevant grade: graded gains, counts of what was
# returned or judged (ranx's ndcg and dcg do count only grades at or above it, so they are not here)
_GRADED = frozenset(
    {
        "ndcg",
        "dcg",
        "dcg_burges",
        "ndcg_burges",
        "err",
        "nerr8",
        "nerr9",
        "nerr10",
        "nerr11",
        "sdcg",
        "judged",
        "num_ret",
        "num_q",
        "compat",
        "inst",
        "insq",
    }
)


@dataclass(frozen=True)
class Relevance:
    """The grade from which a label counts as relevant in binary measures, and where it comes from:
    ``given`` (a flag, a keyword, the project file), ``labels`` (the file of labels says its scale)
    or ``default`` (trec_eval's 1: the labels say nothing)."""

    level: int
    source: str
    scale: tuple[int, int] | None = None
    labels_say: int | None = None
    where: str | None = None  # the file that said it (a sidecar), when one did
    grades: tuple[int, int] | None = None  # the lowest and highest grade in the labels

    def text(self) -> str:
        """ "relevant = grade ≥ 2 (the labels' scale 0-3, said in qrels.txt.origin.json)" """
        head = f"relevant = grade ≥ {self.level}"
        scale = f" {self.scale[0]}-{self.scale[1]}" if self.scale else ""
        if self.source == "labels":
            return f"{head} (the labels' scale{scale}" + (f", said in {self.where})" if self.where else ")")
        if self.source == "given":
            differs = (
                f"; the labels say relevant from {self.labels_say}"
                if self.labels_say is not None and self.labels_say != self.level
                else ""
            )
            return f"{head} (as given{differs})"
        hint = ""
        if self.grades is not None and self.grades[1] > TREC_EVAL_LEVEL:
            every = " and every label counts as relevant" if self.grades[0] >= TREC_EVAL_LEVEL else ""
            hint = (
                f"; its grades run {self.grades[0]}-{self.grades[1]}{every}: if its lower grades mean 'not "
                "relevant' (the judge's 1 and TREC Deep Learning's mean 'on the topic, not an answer'), give the "
                "grade that counts (relevance_level in ragassay.toml; evaluate, compare and report take "
                "--relevance-level N)"
            )
        why = (
            f"the labels say their scale{scale} but not the grade they count from"
            if self.scale
            else "the labels do not say their scale"
        )
        return f"{head} (trec_eval's default: {why}{hint})"

    def warnings(self) -> list[str]:
        """What makes the binary measures mean nothing, or less than they seem."""
        out = []
        if self.grades is not None and self.grades[1] < self.level:
            out.append(
                f"NO RELEVANT LABEL: no label reaches grade {self.level} (the highest is {self.grades[1]}): "
                "every binary measure is 0"
            )
        if (
            self.scale is not None
            and self.grades is not None
            and (self.grades[0] < self.scale[0] or self.grades[1] > self.scale[1])
        ):
            out.append(
                f"OFF THE SCALE: the labels hold grades {self.grades[0]}-{self.grades[1]}, outside the scale "
                f"{self.scale[0]}-{self.scale[1]} their origin file says"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "source": self.source,
            "scale": list(self.scale) if self.scale else None,
            "labels_say": self.labels_say,
            "grades": list(self.grades) if self.grades else None,
            "text": self.text(),
            "warnings": self.warnings(),
        }


def relevance_for(
    origin: Origin | None, given: int | None, labels: str | Path | None = None, grades: tuple[int, int] | None = None
) -> Relevance:
    """The relevant grade a scoring uses: ``given`` when not None, else the labels' own, else
    trec_eval's 1. ``labels``: the labels' file (to name the sidecar that said it)."""
    origin = origin or UNKNOWN
    says = origin.relevant_from
    where = None
    if labels is not None and str(labels) != "-" and sidecar_path(labels).exists():
        where = sidecar_path(labels).name
    if given is not None:
        return Relevance(int(given), "given", origin.scale, says, where, grades)
    if says is not None:
        return Relevance(says, "labels", origin.scale, says, where, grades)
    return Relevance(TREC_EVAL_LEVEL, "default", origin.scale, None, None, grades)


def uses_relevance(measures: Sequence[Measure | str]) -> list[str]:
    """The measures (of ``measures``) whose value hangs on the relevant grade of the evaluation
    (a measure with its own rel= is not one)."""
    out = []
    for m in measures:
        m = parse_measure(m)
        if m.rel is None and m.name not in _GRADED:
            out.append(str(m))
    return out


def judged_cutoffs(measures: Sequence[Measure]) -> list[int]:
    """The cut-offs at which to say how much of a run's top was judged: the measures' own (at most
    the three deepest), else 10."""
    ks = sorted({m.k for m in measures if isinstance(m.k, int) and m.k > 0})
    return ks[-3:] or [10]


JUDGED_KEY = "share_judged@{k}"  # of what a run returned in its top k (trec_eval's order), the share judged


@dataclass
class PoolStanding:
    """How a run stands to the pool its labels were judged from: whether it is in the pool, alone or
    with others, and whether a measure looks deeper than the pool was judged; and, at each cut-off,
    the share of what the run returned there that was judged (``share_judged@k``: a run shorter than k
    is not penalised, unlike ir_measures' Judged@k, which divides by k)."""

    pool: tuple[PoolRun, ...] | None
    member: PoolRun | None = None
    checked: bool = True  # whether the run was held against the pool (not when it is read by blocks)
    deeper: list[str] = field(default_factory=list)
    judged: dict[str, float] = field(default_factory=dict)
    unmet: tuple[list[str], list[str]] | None = None  # no returned chunk is judged: a few ids of each side

    @property
    def alone(self) -> bool:
        """The pool was made from this run only."""
        return self.member is not None and self.pool is not None and len({(p.name, p.digest) for p in self.pool}) == 1

    @property
    def depth(self) -> int | None:
        return min(p.depth for p in self.pool) if self.pool else None

    def flags(self) -> list[str]:
        """What a reader of the scores must know, each a sentence."""
        out = []
        if self.unmet is not None:
            ran, labelled = self.unmet
            out.append(
                "NO CHUNK ID MEETS: none of the chunks the run returned is in the labels (the run's "
                f"{', '.join(map(repr, ran))}; the labels' {', '.join(map(repr, labelled))}): every score is 0; "
                "do the two files spell chunk ids alike?"
            )
        if self.alone:
            out.append(
                f"POOL OF THIS RUN ALONE: the labels judge only its own top {self.depth}; recall and MAP "
                "count only the relevant chunks it found itself (recall at the pool's depth is 1.0 by "
                "construction): pool other retrievers' runs to measure what it misses"
            )
        if self.pool is not None and self.member is None and self.checked:
            out.append(
                "NOT IN THE POOL: this run's chunks that no pooled run found were never judged and count "
                "as not relevant, so its scores are low by an unknown amount (see the share judged)"
            )
        if self.deeper:
            verb = "looks" if len(self.deeper) == 1 else "look"
            out.append(
                f"DEEPER THAN THE POOL: {', '.join(self.deeper)} {verb} past the pool's depth of {self.depth}: "
                "chunks below it were never judged and count as not relevant"
            )
        return out

    def text(self) -> str:
        """ "pool: 2 runs (bm25, tfidf) to depth 10; this run is one of them; judged: 100% of its top 5, 93% of its
        top 10" """
        parts = []
        if self.pool is None:
            parts.append("pool: not said by the labels")
        else:
            names = ", ".join(sorted({p.name for p in self.pool}))
            depths = sorted({p.depth for p in self.pool})
            depth = f"depth {depths[0]}" if len(depths) == 1 else "depths " + "/".join(map(str, depths))
            where = (
                "this run alone"
                if self.alone
                else "this run is one of them"
                if self.member is not None
                else "this run is not in it"
                if self.checked
                else "not checked whether this run is in it (read by blocks)"
            )
            parts.append(
                f"pool: {len(self.pool)} run{'s' if len(self.pool) != 1 else ''} ({names}) to {depth}; {where}"
            )
        if self.judged:
            parts.append(
                "judged: "
                + ", ".join(f"{_percent(v)} of its top {k.split('@')[1]}" for k, v in self.judged.items())
                + " (a chunk nobody judged counts as not relevant)"
            )
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": [p.to_dict() for p in self.pool] if self.pool is not None else None,
            "depth": self.depth,
            "member": self.member.name if self.member is not None else None,
            "alone": self.alone,
            "deeper": self.deeper,
            "judged": self.judged,
            "flags": self.flags(),
            "text": self.text(),
        }


def pool_standing(
    origin: Origin | None,
    run: Any,
    measures: Sequence[Measure],
    judged: dict[str, float],
    digests: dict[int, str] | None = None,
    longest: int | None = None,
) -> PoolStanding:
    """``run`` against the pool its labels say; a run read by blocks is None, and its ``digests``
    (pool depth -> the digest of its top results, data/pool.py) and ``longest`` ranking are given."""
    pool = (origin or UNKNOWN).pool
    standing = PoolStanding(pool, checked=run is not None or digests is not None, judged=dict(judged))
    if pool:
        standing.member = (
            membership(pool, run) if run is not None else member_of(pool, digests) if digests is not None else None
        )
        depth = standing.depth or 0
        # a measure without a cut-off reads the whole ranking: past the pool when a ranking is longer
        longest = _longest_ranking(run) if run is not None else longest
        # how deep a measure reads: its cut-off, but no deeper than the longest ranking (when known)
        reach = {
            str(m): (longest if m.k is None else m.k if longest is None else min(m.k, longest))
            for m in measures
            if m.name not in _COUNTS_ONLY and isinstance(m.k, (int, type(None)))
        }
        standing.deeper = [name for name, r in reach.items() if r is not None and r > depth]
    return standing


_COUNTS_ONLY = frozenset({"judged", "num_ret", "num_q", "num_rel"})  # they read no grade below the cut


def _longest_ranking(run: Any) -> int | None:
    """The most results a query has in ``run`` (None when the run is not in memory)."""
    import numpy as np

    qidx = getattr(run, "qidx", None)
    if qidx is None or not len(qidx):
        return None
    return int(np.bincount(qidx).max())


def _percent(share: float) -> str:
    """99.6% is not 100%: a share short of whole never rounds up to it."""
    shown = f"{share * 100:.0f}%"
    return "99%+" if shown == "100%" and share < 1.0 else shown


def _relevance_part(relevance: Relevance, measures: Sequence[Measure]) -> dict[str, Any]:
    return {**relevance.to_dict(), "measures": uses_relevance(measures)}


def rests_on(relevance: Relevance, standing: PoolStanding, measures: Sequence[Measure]) -> dict[str, Any]:
    """The ``rests_on`` part of a result: the relevant grade and which measures use it, the pool."""
    return {"relevance": _relevance_part(relevance, measures), "pool": standing.to_dict()}


def _relevance_lines(rel: dict[str, Any]) -> list[str]:
    """The relevant grade beside the measures that use it, and its warnings, as text lines."""
    lines = [f"{rel['text']}: {', '.join(rel['measures'])}"] if rel.get("measures") else []
    return lines + [f"warning: {w}" for w in rel.get("warnings") or []]


def _pool_lines(pool: dict[str, Any], name: str = "") -> list[str]:
    """A run's standing to its pool and its flags, as text lines (``name``: the run's, in a comparison)."""
    prefix = f"{name}: " if name else ""
    lines = [f"{prefix}{pool['text']}"] if pool.get("text") else []
    return lines + [f"warning: {prefix}{f}" for f in pool.get("flags") or []]


def rests_on_lines(data: dict[str, Any] | None) -> list[str]:
    """The lines a text result prints under its table, from its ``rests_on``."""
    if not data:
        return []
    return _relevance_lines(data.get("relevance") or {}) + _pool_lines(data.get("pool") or {})


def unique_relevant(qrels: Any, runs: dict[str, Any], depth: int, level: int) -> dict[str, dict[str, int]]:
    """For each run, the relevant chunks (grade >= ``level``) in its top ``depth`` that no other run
    has in its own top ``depth`` (TREC's measure of pool bias: a pool without that run would not have
    judged them), and all the relevant chunks it has there."""
    relevant: dict[str, set[str]] = {}
    for q, d, g in qrels.rows():
        if g >= level:
            relevant.setdefault(q, set()).add(d)
    found = {
        name: {(q, d) for q, ids in run.top_ids(depth).items() for d in ids if d in relevant.get(q, ())}
        for name, run in runs.items()
    }
    out = {}
    for name, mine in found.items():
        others = set().union(*(f for n, f in found.items() if n != name))
        out[name] = {"unique": len(mine - others), "relevant_found": len(mine)}
    return out


def compare_rests_on(evaluations: dict[str, Any], qrels: Any, runs: dict[str, Any]) -> dict[str, Any] | None:
    """A comparison's ``rests_on``: the relevant grade (one for every run), each run's standing to
    the pool, and each run's relevant chunks no other run found, at the pool's depth (else the
    deepest cut-off asked, else 10)."""
    first = next(iter(evaluations.values()), None)
    if first is None or first.relevance is None:
        return None
    standings = {name: ev.standing for name, ev in evaluations.items()}
    depth = (
        first.standing.depth
        if first.standing is not None and first.standing.depth
        else max(judged_cutoffs(first.measures))
    )
    unique = unique_relevant(qrels, runs, depth, first.relevance.level)
    return {
        "relevance": _relevance_part(first.relevance, first.measures),
        "pools": {name: s.to_dict() for name, s in standings.items() if s is not None},
        "unique_relevant": {
            "depth": depth,
            "runs": unique,
            "text": f"relevant chunks in a run's top {depth} that no other run found: "
            + ", ".join(f"{n} {u['unique']} of {u['relevant_found']}" for n, u in unique.items()),
        },
    }


def compare_rests_on_lines(data: dict[str, Any] | None) -> list[str]:
    """The lines compare's text prints under its tables, from its ``rests_on``."""
    if not data:
        return []
    out = _relevance_lines(data.get("relevance") or {})
    for name, pool in (data.get("pools") or {}).items():
        out += _pool_lines(pool, name)
    unique = data.get("unique_relevant")
    if unique:
        out.append(unique["text"])
    return out


def rests_on_brief(data: dict[str, Any] | None, only: Sequence[str] | None = None) -> str:
    """A result's ``rests_on`` in a few words, for a one-line summary (``ragassay run``'s step lines):
    "relevant = grade ≥ 2; POOL OF THIS RUN ALONE (depth 10)". ``only``: of these measures alone (a
    gate's), without the shares judged."""
    if not data:
        return ""
    wanted = None if only is None else {str(parse_measure(m)) for m in only}
    pool = data.get("pool") or {}
    parts = _relevance_brief(data.get("relevance") or {}, wanted) + _pool_brief(pool, wanted)
    judged = pool.get("judged") if wanted is None else None
    judged = judged or {}
    low = {k: v for k, v in judged.items() if v < 1.0}
    if low:
        parts.append("judged: " + ", ".join(f"{_percent(v)} of the top {k.split('@')[1]}" for k, v in low.items()))
    return "; ".join(parts)


def _relevance_brief(rel: dict[str, Any], wanted: set[str] | None) -> list[str]:
    """The relevance level and its warnings' first words, when a wanted measure rests on the level."""
    if not [m for m in rel.get("measures") or [] if wanted is None or m in wanted]:
        return []
    return [f"relevant = grade ≥ {rel['level']}", *(w.split(":")[0] for w in rel.get("warnings") or [])]


def _pool_brief(pool: dict[str, Any], wanted: set[str] | None) -> list[str]:
    """What the pool says in capitals when the run was pooled alone or left out, and the wanted
    measures that reach deeper than the pool."""
    parts = []
    if pool.get("alone"):
        parts.append(f"POOL OF THIS RUN ALONE (depth {pool['depth']}): recall and MAP count only what it found")
    elif pool.get("runs") is not None and pool.get("member") is None and "not checked" not in (pool.get("text") or ""):
        parts.append("NOT IN THE POOL: its unjudged chunks count as not relevant")
    deeper = [m for m in pool.get("deeper") or [] if wanted is None or m in wanted]
    if deeper:
        parts.append(f"deeper than the pool's depth {pool['depth']}: {', '.join(deeper)}")
    return parts


def scale_warning(
    reference: Origin, candidate: Origin, ref_grades: Sequence[int], cand_grades: Sequence[int]
) -> str | None:
    """What two files of labels compared grade by grade must say when their scales differ: two scales
    said and not equal, or two relevant grades, or one side's grades outside the scale the other says.
    None when nothing shows they differ (neither says a scale, and the grades fit)."""
    says = []
    for name, o in (("reference", reference), ("candidate", candidate)):
        if o.scale is not None or o.relevant_from is not None:
            says.append(f"the {name} says {o.scale_text()}")
    if reference.scale and candidate.scale and reference.scale != candidate.scale:
        return (
            "the two files are on different scales (" + "; ".join(says) + "): a grade on one is not the "
            "same grade on the other, so exact agreement and kappa compare unlike things; map one onto the "
            "other first"
        )
    if reference.relevant_from and candidate.relevant_from and reference.relevant_from != candidate.relevant_from:
        return (
            "the two files count relevance from different grades (" + "; ".join(says) + "): the binary "
            "kappas at each cut mean different things on each side"
        )
    for (name, o), (other, grades) in (
        (("reference", reference), ("candidate", cand_grades)),
        (("candidate", candidate), ("reference", ref_grades)),
    ):
        if o.scale is not None and len(grades) and (min(grades) < o.scale[0] or max(grades) > o.scale[1]):
            return (
                f"the {other}'s grades run {min(grades)}-{max(grades)}, outside the {name}'s scale "
                f"{o.scale[0]}-{o.scale[1]}: the two files may not be on one scale"
            )
    return None
