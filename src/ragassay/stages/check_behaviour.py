"""What ``check`` expects of an answer, beyond its content: to answer, to abstain, or to correct the
question's premise; and the rates people ask of a RAG system's behaviour.

A test set with questions the corpus cannot answer as asked (``generate --mix ...,unanswerable=S,
false_premise=S``) marks them ``answerable: false``, and a false premise carries its ``premise``.
For those the grader's label is not the verdict:

- *unanswerable*: an abstention is the right answer (label ``correct``); any answer is
  ``hallucinated``. The grader is asked that alone (:class:`AbstentionVerdict`); a response the rules
  decide (the reference as written, or nothing at all) abstained.
- *false premise*: the grader is asked, beside the label, whether the response corrected the premise.
  A response that goes along with it is ``hallucinated`` even when the rest is right; one that
  declines is ``abstained``; one that corrects it keeps the grader's label.

The grader's own label stays on the record (``graded_label``), so who decided what is never lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from ..data.joins import Join
from ..data.lines import iter_jsonl
from ..data.records import AnswerItem, CheckLabel
from ..errors import InputError
from ..metrics.labels import label_summary
from ..metrics.rates import rate, rate_text

Expected = Literal["answer", "abstain", "correct_premise"]


class PremiseAnswerVerdict(BaseModel):
    """The grader's verdict on an answer to a false-premise question: what the response says of the
    detail the premise gets wrong (copied first: a small model that quotes before it decides
    decides better), whether it corrected the premise, then the label against the reference."""

    response_fact: str
    premise_corrected: bool
    label: Literal["correct", "hallucinated", "abstained", "partial"]


class AbstentionVerdict(BaseModel):
    """Whether a response to an unanswerable question declined: the answer it gives, copied (empty
    when none), and whether it declined. The one question that matters there, asked alone: a label
    against a reference that says "the documents do not say" is a harder question for a small model
    (and the short prompt's two labels cannot say "abstained" at all)."""

    answer_given: str
    declined: bool


def declined(verdict: AbstentionVerdict) -> bool:
    """Whether the response declined, as the grader decided. The answer it copied is kept beside it
    (the record's rationale) but decides nothing: a small model copies the whole response there as
    often as not, an abstention included (measured with a 1.5B model: its ``declined`` was right on
    every case of the hand-built set in two runs, while an empty ``answer_given`` was not)."""
    return verdict.declined


def expected_of(item: AnswerItem) -> Expected:
    """What the answer should do: correct the premise when one is given, abstain when the question is
    marked unanswerable, else answer."""
    if item.premise:
        return "correct_premise"
    return "abstain" if item.answerable is False else "answer"


def with_test_set(
    items: Sequence[AnswerItem], test_set: str | Path, answers_source: object = None
) -> tuple[list[AnswerItem], Join]:
    """The answers with ``answerable`` and ``premise`` taken from the test set they answer (generate's
    questions, or any JSON Lines with ``id``), met by id and counted; an answer that says otherwise
    than its question is an error naming both (neither is guessed right)."""
    expected_by_id: dict[str, dict[str, Any]] = {}
    for no, obj in iter_jsonl(test_set):
        qid = obj.get("id", obj.get("query_id"))
        if qid is None:
            raise InputError("a test-set line needs an id (the answers meet it by id)", test_set, no)
        expected_by_id[str(qid)] = {k: obj[k] for k in ("answerable", "premise") if obj.get(k) is not None}
    join = Join.of(
        "question ids", "the answers", [a.id for a in items], "the test set", expected_by_id, answers_source, test_set
    ).require_overlap()
    out = []
    for item in items:
        given = expected_by_id.get(item.id, {})
        for key, value in given.items():
            mine = getattr(item, key)
            if mine is not None and mine != value:
                raise InputError(
                    f"answer {item.id!r} says {key} {mine!r}, its question in {test_set} says {value!r}",
                    answers_source if isinstance(answers_source, (str, Path)) else None,
                )
        out.append(item.model_copy(update=given) if given else item)
    return out, join


def behaviour_of(
    expected: Expected, graded: CheckLabel, premise_corrected: bool | None = None
) -> tuple[CheckLabel, str | None]:
    """The final label and what the response did, from what was expected and the grader's label."""
    if expected == "abstain":  # graded: the rules' label, or "abstained" / "hallucinated" from an AbstentionVerdict
        return ("correct", "abstained") if graded in ("correct", "abstained") else ("hallucinated", "answered")
    if expected == "correct_premise":
        if premise_corrected:
            return graded, "corrected_premise"
        if graded == "abstained":
            return "abstained", "abstained"
        return "hallucinated", "accepted_premise"
    return graded, None


def behaviour_summary(records: Sequence[Mapping[str, Any]], n_resamples: int = 10_000, seed: int = 0) -> dict | None:
    """The behaviour rates, each with its count and interval, when the set holds any question that
    expects something else than an answer (None otherwise: the result is as it always was).

    ``answered_when_unanswerable``: of the unanswerable questions graded, the share answered.
    ``over_refusal``: of the answerable questions whose context held the answer (the grader said
    so), the share abstained. ``premise_corrected``: of the false-premise questions graded, the share
    whose premise the response corrected. ``answerable``: the label rates of the answerable rest."""
    graded = [r for r in records if r.get("status", "ok") == "ok" and r.get("label") is not None]
    if not any(r.get("expected", "answer") != "answer" for r in records):
        return None
    unanswerable = [r for r in graded if r.get("expected") == "abstain"]
    premise = [r for r in graded if r.get("expected") == "correct_premise"]
    answerable = [r for r in records if r.get("expected", "answer") == "answer"]
    held = [r for r in graded if r.get("expected", "answer") == "answer" and r.get("context_has_answer") is True]

    def share(rows: list[Mapping[str, Any]], hit: Any, unit: str) -> dict:
        return rate(np.array([1.0 if hit(r) else 0.0 for r in rows]), unit, n_resamples, seed)

    return {
        "questions": {
            "unanswerable": sum(r.get("expected") == "abstain" for r in records),
            "false_premise": sum(r.get("expected") == "correct_premise" for r in records),
            "answerable": len(answerable),
        },
        "answered_when_unanswerable": share(
            unanswerable, lambda r: r.get("behaviour") == "answered", "unanswerable questions"
        ),
        "over_refusal": share(
            held, lambda r: r["label"] == "abstained", "answerable questions whose context held the answer"
        ),
        "premise_corrected": share(
            premise, lambda r: r.get("behaviour") == "corrected_premise", "false-premise questions"
        ),
        "answerable": label_summary(answerable, n_resamples, seed),
    }


def behaviour_lines(b: Mapping[str, Any] | None) -> list[str]:
    """The behaviour rates in words, for the command's text and the report."""
    if not b:
        return []
    q = b["questions"]
    return [
        f"behaviour ({q['unanswerable']} unanswerable, {q['false_premise']} false-premise, "
        f"{q['answerable']} answerable questions):",
        f"  answered when unanswerable: {rate_text(b['answered_when_unanswerable'], 'unanswerable questions')}",
        f"  premise corrected: {rate_text(b['premise_corrected'], 'false-premise questions')}",
        f"  over-refusal (abstained though the context held the answer): "
        f"{rate_text(b['over_refusal'], 'answers whose context held it')}",
        "  on the answerable rest: "
        + ", ".join(
            f"{lab} {rate_text(b['answerable']['rates'][lab])}" for lab in ("correct", "partial", "hallucinated")
        ),
    ]
