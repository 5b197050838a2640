"""Qualify a judge against people: run judge (or check) with a model and a prompt on a sample that
people labelled, and say how the two agree.

A team choosing a model for its judge needs that figure on real queries before it trusts the
model's labels; the bundled example's agreement says nothing about their model. The sample is
drawn stratified by the people's label and seeded, so two graders (two prompts, two models) are
asked the very same items and can be compared with a paired test. Every call goes through the
stage itself (``api.judge`` / ``api.check``): the same cache, journal, resumption and dry run, and
records that name the prompt's version.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api import check, judge
from ..api.settings import options_and_rest
from ..data.coerce import coerce_run
from ..data.origin import JUDGE_RELEVANT_FROM, JUDGE_SCALE
from ..data.people_samples import GradedPairs, LabelledAnswers, stratified_sample
from ..data.tables import Qrels
from ..errors import UsageError
from ..llm.prompt_files import choose_prompt
from ..metrics.agreement import run_ranking_agreement
from ..metrics.measures.parsing import parse_measure
from ..metrics.qualification import label_agreement, paired_difference
from ..runtime.engine import Estimate
from ..stages.check import CheckOptions
from ..stages.judge import JudgeOptions
from ..stages.queries import QueryItem
from .published_agreement import published_for
from .qualify_results import Grader, GraderOutcome, Qualification

CHECK_LABELS = ("correct", "partial", "hallucinated", "abstained")
BINARY_LABELS = ("correct", "incorrect")
BINARY_RELEVANCE = ("not relevant", "relevant")


# ------------------------------------------------------------------------------- relevance


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
    _check_graders(graders, "judge")
    low, high = pairs.scale
    if not low < pairs.relevant_from <= high:
        raise UsageError(
            f"--relevance-level {pairs.relevant_from} is not a grade of the people's scale {low}-{high} "
            "above its lowest"
        )
    keys = _sampled(pairs.grades, size, seed)
    run = _sampled_run(keys)
    scale = _PairScale.of(pairs)
    people = [scale.read(pairs.grades[k], pairs.relevant_from) for k in keys]
    _both_sides(
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
        out = _output(output, "judgments", grader)
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
    _pair_with_first(outcomes, people, keys, scale.classes, scale.positive, seed)
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
        _unasked(keys, grades, reasons)
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
            reasons[_reason(r.get("error"))] += 1
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


# -------------------------------------------------------------------------------- answers


def qualify_check(
    answers: LabelledAnswers,
    graders: Sequence[Grader],
    *,
    size: int | None = 100,
    seed: int = 0,
    output: str | Path | None = None,
    dry_run: bool = False,
    **settings: Any,
) -> Qualification | list[Estimate]:
    """Check a stratified, seeded sample of people-labelled answers with each grader and measure
    agreement. People's labels that are only right or wrong (``answers.binary``) are met by the
    check's labels read the same way: correct is right; partial, hallucinated and abstained are not."""
    _check_graders(graders, "check")
    ids = _sampled(answers.labels, size, seed)
    by_id = {a.id: a for a in answers.answers}
    items = [by_id[i] for i in ids]
    classes = BINARY_LABELS if answers.binary else CHECK_LABELS
    positive = {"correct"}
    people = [answers.labels[i] for i in ids]
    _both_sides(people, positive, "answer", "give people's labels of both kinds, or a larger --size")
    outcomes: list[GraderOutcome] = []
    estimates: list[Estimate] = []
    for grader in graders:
        out = _output(output, "checks", grader)
        started = time.monotonic()
        options, endpoint = options_and_rest(CheckOptions, settings, prompt=grader.prompt)
        checked = check(items, output=out, model=grader.model, options=options, dry_run=dry_run, **endpoint)
        if isinstance(checked, Estimate):
            estimates.append(checked)
            continue
        labels, given, prompts, reasons, by_rule = _tally_checks(checked.records, answers.binary)
        _unasked(ids, labels, reasons)
        model = [labels.get(k) for k in ids]
        outcomes.append(
            GraderOutcome(
                grader,
                out,
                sorted(prompts),
                dict(zip(ids, model)),
                label_agreement(people, model, classes, positive, ordinal=False, seed=seed, unit="answers"),
                sum(reasons.values()),
                dict(reasons),
                by_rule,
                checked.usage,
                checked.usage_text,
                time.monotonic() - started,
                given={k: given.get(k) for k in ids},
            )
        )
    if dry_run:
        return estimates
    _pair_with_first(outcomes, people, ids, classes, positive, seed)
    return _check_qualification(answers, ids, people, outcomes, seed)


def _tally_checks(
    records: Sequence[dict], binary: bool
) -> tuple[dict[Any, Any], dict[Any, Any], Counter[str], Counter[str], int]:
    """Each checked answer's label as compared with people's (right or wrong when people said only
    that) and as the check gave it, the prompts the records name, the reasons of the errors, and
    how many answers the rules decided without a call."""
    labels: dict[Any, Any] = {}
    given: dict[Any, Any] = {}
    prompts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    by_rule = 0
    for r in records:
        label = given[r["id"]] = r.get("label") if r.get("status") == "ok" else None
        if label is not None and binary:
            label = "correct" if label == "correct" else "incorrect"
        labels[r["id"]] = label
        by_rule += r.get("decided_by") == "rule"
        if r.get("prompt"):
            prompts[r["prompt"]] += 1
        if label is None:
            reasons[_reason(r.get("error"))] += 1
    return labels, given, prompts, reasons, by_rule


def _check_qualification(
    answers: LabelledAnswers, ids: list, people: list, outcomes: list[GraderOutcome], seed: int
) -> Qualification:
    """The check's qualification: the sample, the ceiling of a second people's labelling, and a note
    when people said only right or wrong."""
    classes = BINARY_LABELS if answers.binary else CHECK_LABELS
    second = answers.second or {}
    both = [k for k in ids if k in second]
    ceiling = (
        label_agreement(
            [answers.labels[k] for k in both], [second[k] for k in both], classes, {"correct"}, ordinal=False, seed=seed
        )
        if both
        else None
    )
    per_class = Counter(people)
    sample = {
        "items": len(ids),
        "of": len(answers.labels),
        "seed": seed,
        "unit": "answers",
        "per_class": {c: per_class.get(c, 0) for c in classes},
        "binary": answers.binary,
        "second_labelled": len(both),
    }
    notes = []
    if answers.binary:
        notes.append(
            "people said only right or wrong: the check's 'correct' is read as right, and 'partial', "
            "'hallucinated' and 'abstained' as wrong"
        )
    rows = [
        {"id": k, "people": answers.labels[k], "second": second.get(k), "graders": [o.given.get(k) for o in outcomes]}
        for k in ids
    ]
    return Qualification(
        "check",
        answers.source,
        answers.citation,
        sample,
        outcomes,
        ceiling,
        published_for("check"),
        notes + list(answers.notes),
        rows,
    )


# ------------------------------------------------------------------------------- shared


def _check_graders(graders: Sequence[Grader], stage: str) -> None:
    """Every grader is sound before any of them is asked anything: a prompt file of the second
    grader that names an unknown placeholder must not wait for the first grader's calls."""
    if not graders:
        raise UsageError("qualify needs at least one model and prompt to qualify")
    seen = set()
    for g in graders:
        if g in seen:
            raise UsageError(f"{g.name()} is given twice: each grader is asked once")
        seen.add(g)
        choose_prompt(stage, g.prompt, g.model)  # raises, naming the file and line, on a bad prompt file


def _both_sides(people: Sequence, positive: set, what: str, flag: str) -> None:
    """People's labels on one side of the relevant cut measure nothing beyond chance: said before any call."""
    sides = {p in positive for p in people}
    if len(sides) == 1:
        side = "relevant" if sides == {True} else "not relevant"
        raise UsageError(
            f"every sampled {what} is {side} by people's labels: agreement with them cannot be measured "
            f"beyond chance; {flag}"
        )


def _sampled(labels: Mapping[Any, Hashable], size: int | None, seed: int) -> list:
    if not labels:
        raise UsageError("the people-labelled data holds no item to qualify on")
    return stratified_sample(labels, len(labels) if size is None else min(size, len(labels)), seed)


def _output(output: str | Path | None, stem: str, grader: Grader) -> Path | None:
    """Each grader's records under a name made of its model and prompt, never of its place in the
    command: the same grader finds its records again when prompts are reordered or one is added."""
    if output is None:
        return None
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    prompt = grader.prompt
    if prompt not in ("auto", "full", "short"):  # a file: its stem, and a hash of where it is
        path = str(Path(prompt).expanduser().resolve())
        prompt = f"{Path(prompt).stem}-{hashlib.sha256(path.encode('utf-8')).hexdigest()[:6]}"
    name = re.sub(r"[^\w.-]+", "_", f"{grader.model or 'default-model'}.{prompt}")
    return folder / f"{stem}.{name}.jsonl"


def _reason(error: Any) -> str:
    """An error record's reason, shortened to its kind (the first clause), for a tally."""
    text = str(error or "no label").strip()
    if text == NOT_ASKED:
        return text
    return text.split(":")[0][:80] if ":" in text else text[:80]


NOT_ASKED = (
    "not asked: the run stopped before it (a --max-calls or --max-cost ceiling, or answers still to come "
    "from a batch); rerun to finish"
)


def _unasked(keys: Sequence, labels: dict, reasons: Counter[str]) -> None:
    """Sampled items the stage wrote no record of are missing from the figures, and counted so."""
    missing = sum(1 for k in keys if k not in labels)
    if missing:
        reasons[NOT_ASKED] += missing


def _pair_with_first(
    outcomes: list[GraderOutcome], people: list, keys: list, classes: Sequence, positive: set, seed: int
) -> None:
    """Each grader after the first is compared with the first on the same items (paired)."""
    if len(outcomes) < 2:
        return
    first = [outcomes[0].labels.get(k) for k in keys]
    for o in outcomes[1:]:
        o.paired = paired_difference(people, [o.labels.get(k) for k in keys], first, classes, positive, seed=seed)
