"""A candidate's steps, in the order they are asked (:class:`Step`), its answers read by step
(:class:`Answered`) and the checks each step's answer must pass (:class:`Draft`). The engine hands
a candidate's answers back as one list in call order; this is the one place that says which step
they have reached, so the stage decides each step by name rather than by a count of answers."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from pydantic import BaseModel

from ...data.records import Question
from ...runtime.engine import Call
from .shapes import (
    CRITIC_MIN,
    BlindAnswer,
    Critique,
    Difficulty,
    GeneratedQuestion,
    SameAnswer,
    cited,
    gold_grades,
    question_id,
    reject_record,
)


class Step(enum.IntEnum):
    """The steps of a candidate, each asked once the answers of the steps before it are in. Every
    step but the last two asks one call; a hard question asks one call per chunk offered, then one
    comparison per chunk that said it could answer alone."""

    QUESTION = 1  # the question, its answer, its kind and verbatim evidence
    BLIND = 2  # answered from its gold chunks alone, without seeing the proposed answer
    COMPARE = 3  # the blind answer compared with the proposed one
    CRITIC = 4  # scored by a critic: self-contained, clear, realistic
    ALONE = 5  # hard: each chunk offered asked alone whether it answers the question
    ALONE_COMPARED = 6  # hard: each answer a single chunk gave compared with the proposed one


@dataclass(frozen=True)
class Candidate:
    """One planned candidate: its difficulty, the chunks offered, the style asked for."""

    level: Difficulty
    group: tuple[str, ...]
    style: str


@dataclass
class Answered:
    """A candidate's answers so far, by step: the last step whose answers are in, and each step's
    answers (None for an answer not known, in a dry run; a step not reached has none)."""

    step: Step
    generated: GeneratedQuestion | None
    blind: BlindAnswer | None = None
    same: SameAnswer | None = None
    critique: Critique | None = None
    alone: list[BlindAnswer | None] = field(default_factory=list)
    compared: list[SameAnswer | None] = field(default_factory=list)

    @classmethod
    def of(cls, answers: Sequence[BaseModel | None], offered: int) -> Answered:
        """``answers`` in call order, for a candidate offered ``offered`` chunks. Each answer was
        validated as its call's response model (by the client, or read back from the set's answers
        or the cache as that model), so each step's answers have that step's type."""
        n = len(answers)
        step = Step(n) if n <= Step.CRITIC else Step.ALONE if n <= Step.CRITIC + offered else Step.ALONE_COMPARED

        def at(i: int) -> BaseModel | None:
            return answers[i] if i < n else None

        return cls(
            step,
            cast("GeneratedQuestion | None", at(0)),
            cast("BlindAnswer | None", at(1)),
            cast("SameAnswer | None", at(2)),
            cast("Critique | None", at(3)),
            cast("list[BlindAnswer | None]", list(answers[4 : 4 + offered])),
            cast("list[SameAnswer | None]", list(answers[4 + offered :])),
        )


@dataclass
class Progress:
    """Where a candidate stands after the answers so far: the next step's calls, or its outcome (a
    question or a reject); none of the three on a dry run's accepted path, where nothing more is
    asked."""

    calls: list[Call] = field(default_factory=list)
    question: Question | None = None
    reject: dict | None = None


@dataclass
class Draft:
    """A candidate being decided: its question as the model wrote it (None in a dry run before it is
    known, where every check is taken to pass), its gold chunks, its label and the checks it passed
    so far, which each step adds to and a reject or the question keeps."""

    cand: Candidate
    generated: GeneratedQuestion | None
    label: Difficulty
    checks: dict

    @property
    def gold(self) -> list[str]:
        """The chunks the evidence cites (every chunk offered while the question is not known)."""
        g = self.generated
        return cited(g, list(self.cand.group)) if g is not None else list(self.cand.group)

    @property
    def question(self) -> str:
        return self.generated.question if self.generated is not None else ""

    @property
    def answer(self) -> str:
        return self.generated.answer if self.generated is not None else ""

    def reject(self, reason: str) -> Progress:
        g, c = self.generated, self.cand
        return Progress(
            reject=reject_record(
                list(c.group),
                c.level,
                g.question if g else None,
                g.answer if g else None,
                reason,
                dict(self.checks),
                style=c.style,
                kind=g.kind if g else None,
            )
        )

    def blind_failed(self, blind: BlindAnswer | None) -> str | None:
        """Why the blind answer drops the question (it cannot be answered from its gold chunks), or None."""
        if blind is None:
            return None
        self.checks["answerable"] = blind.answerable
        self.checks["blind_answer"] = blind.own_answer
        return None if blind.answerable else f"not answerable from its gold chunks: {blind.reason}"

    def comparison_failed(self, same: SameAnswer | None) -> str | None:
        """Why the comparison drops the question (the blind answer says something else), or None."""
        if same is None:
            return None
        self.checks["answer_supported"] = same.same
        return None if same.same else f"the blind answer differs from the proposed one: {same.reason}"

    def critic_failed(self, critique: Critique | None) -> str | None:
        """Why the critic drops the question (a score below ``CRITIC_MIN``), or None."""
        if critique is None:
            return None
        scores = {"self_contained": critique.self_contained, "clear": critique.clear, "realistic": critique.realistic}
        self.checks["critic"] = {**scores, "reason": critique.reason}
        low = [k for k, v in scores.items() if v < CRITIC_MIN]
        return f"the critic scored it low on {', '.join(low)}: {critique.reason}" if low else None

    def single_chunk_failed(self, alone: list[BlindAnswer | None], compared: list[SameAnswer | None]) -> str | None:
        """Why a hard question is dropped as a fake multi-hop (one chunk alone gives the same answer),
        or None. A chunk answers alone when it said it could and its answer was the same: each such
        claim was compared, in the order of the chunks offered."""
        verdicts = iter(compared)
        singles = {
            c: bool(s is not None and s.answerable and getattr(next(verdicts), "same", False))
            for c, s in zip(self.cand.group, alone)
        }
        self.checks["single_chunk_answerable"] = singles
        if not any(singles.values()):
            return None
        one = next(c for c, ok in singles.items() if ok)
        aside = "" if one in self.gold else " (offered, not cited: the gold chunks miss it)"
        return f"fake multi-hop: answerable from chunk {one!r} alone{aside}"

    def accepted(self, model: str | None, prompt: str) -> Progress:
        """The question as it is kept (nothing more is asked on a dry run's accepted path)."""
        g = self.generated
        if g is None:
            return Progress()
        gold = self.gold
        return Progress(
            question=Question(
                id=question_id(gold, self.label, g.question),
                question=g.question.strip(),
                answer=g.answer.strip(),
                difficulty=self.label,
                kind=g.kind,
                chunk_ids=gold,
                grades=gold_grades(g, gold),
                style=self.cand.style,
                evidence=[e.quote for e in g.evidence],
                checks=self.checks,
                model=model,
                prompt=prompt,
            )
        )
