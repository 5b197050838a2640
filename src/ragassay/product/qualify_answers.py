"""Qualify the check against people: grade a stratified, seeded sample of people-labelled answers
with each grader and say how the check's labels agree with people's (``ragassay qualify check``)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..api import check
from ..api.settings import options_and_rest
from ..data.people_samples import LabelledAnswers
from ..metrics.qualification import label_agreement
from ..runtime.engine import Estimate
from ..stages.check import CheckOptions
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

CHECK_LABELS = ("correct", "partial", "hallucinated", "abstained")
BINARY_LABELS = ("correct", "incorrect")


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
    check_graders(graders, "check")
    ids = draw_sample(answers.labels, size, seed)
    by_id = {a.id: a for a in answers.answers}
    items = [by_id[i] for i in ids]
    classes = BINARY_LABELS if answers.binary else CHECK_LABELS
    positive = {"correct"}
    people = [answers.labels[i] for i in ids]
    both_sides(people, positive, "answer", "give people's labels of both kinds, or a larger --size")
    outcomes: list[GraderOutcome] = []
    estimates: list[Estimate] = []
    for grader in graders:
        out = grader_output(output, "checks", grader)
        started = time.monotonic()
        options, endpoint = options_and_rest(CheckOptions, settings, prompt=grader.prompt)
        checked = check(items, output=out, model=grader.model, options=options, dry_run=dry_run, **endpoint)
        if isinstance(checked, Estimate):
            estimates.append(checked)
            continue
        labels, given, prompts, reasons, by_rule = _tally_checks(checked.records, answers.binary)
        count_unasked(ids, labels, reasons)
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
    pair_with_first(outcomes, people, ids, classes, positive, seed)
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
            reasons[error_reason(r.get("error"))] += 1
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
