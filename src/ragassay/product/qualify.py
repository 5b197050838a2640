"""Qualify a judge against people: run judge with a model and a prompt on a sample of pairs that
people graded, and say how the two agree (the check is qualified the same way in
:mod:`.qualify_answers`, on what :mod:`.qualify_sampling` gives both).

A team choosing a model for its judge needs that figure on real queries before it trusts the
model's labels; the bundled example's agreement says nothing about their model. The sample is
drawn stratified by the people's label and seeded, so two graders (two prompts, two models) are
asked the very same items and can be compared with a paired test. Every call goes through the
stage itself (``api.judge`` / ``api.check``): the same cache, journal, resumption and dry run, and
records that name the prompt's version.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api import judge
from ..api.settings import options_and_rest
from ..data.coerce import coerce_run
from ..data.origin import JUDGE_RELEVANT_FROM, JUDGE_SCALE
from ..data.people_samples import GradedPairs
from ..data.tables import Qrels
from ..errors import UsageError
from ..metrics.agreement import run_ranking_agreement
from ..metrics.measures.parsing import parse_measure
from ..metrics.qualification import label_agreement
from ..runtime.engine import Estimate
from ..stages.judge import JudgeOptions
from ..stages.queries import QueryItem
from .published_agreement import published_for
from .qualify_results import Grader, GraderOutcome, Qualification
from .qualify_sampling import (
    both_sides,
    check_graders,
    count_unasked,
    draw_sample,
    error_reason,
    grader_output,
    pair_with_first,
)

BINARY_RELEVANCE = ("not relevant", "relevant")


def qualify_judge(
    pairs: GradedPairs,
    graders: Sequence[Grader],
    *,
    size: int | None = 150,
    seed: int = 0,
    output: str | Path | None = None,
    runs: Mapping[str, Any] | None = None,
    metric: str = "ndcg_cut_10",
    dry_run: bool = False,
    **settings: Any,
) -> Qualification | list[Estimate]:
    """Judge a stratified, seeded sample of ``pairs`` with each grader and measure agreement.

    ``settings`` are the judge's LLM keywords (``base_url=``, ``timeout=``, ``cache=``, ...).
    ``runs`` (name -> run) adds Kendall's tau between the runs ranked by ``metric`` under people's
    grades and under the grader's, both on the sampled pairs only (the figure says so)."""
    check_graders(graders, "judge")
    low, high = pairs.scale
    if not low < pairs.relevant_from <= high:
        raise UsageError(
            f"--relevance-level {pairs.relevant_from} is not a grade of the people's scale {low}-{high} "
            "above its lowest"
        )
    keys = draw_sample(pairs.grades, size, seed)
    run = _sampled_run(keys)
    scale = _PairScale.of(pairs)
    people = [scale.read(pairs.grades[k], pairs.relevant_from) for k in keys]
    both_sides(
        people,
        scale.positive,
        "pair",
        "give --relevance-level N (the grade from which people's pairs are relevant), or a larger --size",
    )
    notes: list[str] = []
    if runs:
        parse_measure(metric)  # an unknown measure is said before any call
    runs = _runs_meeting(runs, {q for q, _ in keys}, notes)
    asked = _JudgeAsked(keys, run, pairs, scale, people, runs, metric, seed)
    outcomes: list[GraderOutcome] = []
    estimates: list[Estimate] = []
    for grader in graders:
        out = grader_output(output, "judgments", grader)
        started = time.monotonic()
        options, endpoint = options_and_rest(JudgeOptions, settings, depth=asked.depth(), prompt=grader.prompt)
        judged = judge(
            asked.queries(),
            asked.chunks(),
            run,
            output=out,
            model=grader.model,
            options=options,
            dry_run=dry_run,
            **endpoint,
        )
        if isinstance(judged, Estimate):
            estimates.append(judged)
        else:
            outcomes.append(asked.outcome(grader, out, judged, started))
    if dry_run:
        return estimates
    pair_with_first(outcomes, people, keys, scale.classes, scale.positive, seed)
    return _judge_qualification(asked, outcomes, notes)


@dataclass(frozen=True)
class _PairScale:
    """How people's grades meet the judge's: on the judge's own scale grade by grade, on any other
    scale only as relevant or not."""

    same_scale: bool
    classes: tuple
    positive: set

    @classmethod
    def of(cls, pairs: GradedPairs) -> _PairScale:
        same_scale = tuple(pairs.scale) == JUDGE_SCALE
        if same_scale:
            classes: tuple = tuple(range(JUDGE_SCALE[0], JUDGE_SCALE[1] + 1))
            return cls(True, classes, {g for g in classes if g >= pairs.relevant_from})
        return cls(False, BINARY_RELEVANCE, {BINARY_RELEVANCE[1]})

    def read(self, grade: int | None, relevant_from: int) -> Any:
        """A grade as compared: itself on the same scale, else relevant or not (None stays None)."""
        return grade if grade is None or self.same_scale else BINARY_RELEVANCE[grade >= relevant_from]


def _sampled_run(keys: list) -> dict[str, dict[str, float]]:
    """The sampled pairs as a run to judge: every sampled pair is in it, and its place in it does not
    matter."""
    run: dict[str, dict[str, float]] = {}
    for q, c in keys:
        run.setdefault(q, {})[c] = float(len(keys) - len(run.get(q, {})))
    return run


@dataclass
class _JudgeAsked:
    """What every grader of the judge is asked, and what its answers are measured against."""

    keys: list
    run: dict[str, dict[str, float]]
    pairs: GradedPairs
    scale: _PairScale
    people: list
    runs: dict[str, Any] | None
    metric: str
    seed: int

    def depth(self) -> int:
        return max((len(v) for v in self.run.values()), default=1)

    def queries(self) -> list[QueryItem]:
        return [QueryItem(q, self.pairs.queries[q]) for q in self.run]

    def chunks(self) -> dict[str, Any]:
        return {c: self.pairs.chunks[c] for _, c in self.keys}

    def outcome(self, grader: Grader, out: Path | None, judged: Any, started: float) -> GraderOutcome:
        """One grader's judgments of the sample, read and measured against people's grades."""
        keys, scale = self.keys, self.scale
        grades, prompts, reasons = _tally_judgments(judged.records)
        count_unasked(keys, grades, reasons)
        model = [scale.read(grades.get(k), JUDGE_RELEVANT_FROM) for k in keys]
        outcome = GraderOutcome(
            grader,
            out,
            sorted(prompts),
            dict(zip(keys, model)),
            label_agreement(
                self.people,
                model,
                scale.classes,
                scale.positive,
                ordinal=scale.same_scale,
                seed=self.seed,
                unit="pairs",
            ),
            sum(reasons.values()),
            dict(reasons),
            0,
            judged.usage,
            judged.usage_text,
            time.monotonic() - started,
        )
        outcome.given = {k: grades.get(k) for k in keys}
        if self.runs:  # the runs were read and met before any call: what fails now is said, never a lost result
            outcome.ranking = _ranking(
                keys, [self.pairs.grades[k] for k in keys], [grades.get(k) for k in keys], self.runs, self.metric
            )
        return outcome


def _tally_judgments(records: Sequence[dict]) -> tuple[dict[Any, Any], Counter[str], Counter[str]]:
    """Each judged pair's grade (None for an error record), the prompts the records name, and the
    reasons of the errors."""
    grades: dict[Any, Any] = {}
    prompts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for r in records:
        key = (r["query_id"], r["chunk_id"])
        ok = r.get("status") == "ok" and r.get("grade") is not None
        grades[key] = int(r["grade"]) if ok else None
        if ok and r.get("prompt"):
            prompts[r["prompt"]] += 1
        if not ok:
            reasons[error_reason(r.get("error"))] += 1
    return grades, prompts, reasons


def _judge_qualification(asked: _JudgeAsked, outcomes: list[GraderOutcome], notes: list[str]) -> Qualification:
    """The judge's qualification: the sample, the ceiling of a second people's labelling, and the
    notes on how the scales met and what the runs' ranking rests on."""
    pairs, keys, scale, seed = asked.pairs, asked.keys, asked.scale, asked.seed
    second = pairs.second or {}
    both = [k for k in keys if k in second]
    ceiling = (
        label_agreement(
            [scale.read(pairs.grades[k], pairs.relevant_from) for k in both],
            [scale.read(second[k], pairs.relevant_from) for k in both],
            scale.classes,
            scale.positive,
            ordinal=scale.same_scale,
            seed=seed,
        )
        if both
        else None
    )
    per_class = Counter(pairs.grades[k] for k in keys)
    sample = {
        "items": len(keys),
        "of": len(pairs.grades),
        "seed": seed,
        "unit": "pairs",
        "queries": len(asked.run),
        "per_class": {str(g): n for g, n in sorted(per_class.items())},
        "scale": list(pairs.scale),
        "relevant_from": pairs.relevant_from,
        "second_labelled": len(both),
    }
    if not scale.same_scale:
        notes.append(
            f"the people's scale {pairs.scale[0]}-{pairs.scale[1]} is not the judge's "
            f"{JUDGE_SCALE[0]}-{JUDGE_SCALE[1]}: only relevant or not is compared (people's grade >= "
            f"{pairs.relevant_from}, the judge's >= {JUDGE_RELEVANT_FROM})"
        )
    if asked.runs:
        notes.append(
            f"the runs' ranking rests on the {len(keys)} sampled pairs only: each run is scored by "
            f"{asked.metric} under people's grades of those pairs and under the grader's"
        )
    rows = [
        {
            "query_id": q,
            "chunk_id": c,
            "people": pairs.grades[(q, c)],
            "second": second.get((q, c)),
            "graders": [o.given.get((q, c)) for o in outcomes],
        }
        for q, c in keys
    ]
    return Qualification(
        "judge",
        pairs.source,
        pairs.citation,
        sample,
        outcomes,
        ceiling,
        published_for("judge"),
        notes + list(pairs.notes),
        rows,
    )


def _runs_meeting(runs: Mapping[str, Any] | None, sampled: set[str], notes: list[str]) -> dict[str, Any] | None:
    """The runs that ranked at least one sampled query; the others are left out and said, before any
    call (a run that meets no sampled query ranks nothing the sample can score)."""
    if not runs:
        return None
    meeting = {}
    for name, run in runs.items():
        if sampled & set(coerce_run(run).queries):
            meeting[name] = run
        else:
            notes.append(f"run {name} left out of the ranking: it ranks none of the sampled queries")
    if len(meeting) < 2:
        notes.append(f"no ranking of runs: {len(meeting)} run(s) meet the sampled queries, and a ranking needs two")
        return None
    return meeting


def _ranking(keys: list, people: list, model: list, runs: Mapping[str, Any], metric: str) -> dict | None:
    ref: dict[str, dict[str, int]] = {}
    cand: dict[str, dict[str, int]] = {}
    for (q, c), p, m in zip(keys, people, model):
        ref.setdefault(q, {})[c] = p
        if m is not None:
            cand.setdefault(q, {})[c] = m
    if len(runs) < 2 or not cand:
        return None
    return run_ranking_agreement(Qrels.from_dict(ref), Qrels.from_dict(cand), runs, metric)
