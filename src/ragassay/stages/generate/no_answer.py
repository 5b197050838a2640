"""The questions a corpus cannot answer as asked, and how each is verified before it is kept.

Real users ask what the corpus does not cover, and ask with premises that are wrong; a RAG system
that answers those confidently is the failure teams fear most. Neither kind is assumed: it is
tested against the corpus as a retriever would see it.

- *unanswerable*: written from a seed chunk's topic, then searched for (BM25 over every chunk, the
  question as the query) and kept only when the model, reading the top chunks found, says they do
  not answer it (a claimed answer must be quoted; see :func:`verification_failed`). Its record keeps
  what was searched. It has no gold chunk.
- *false premise*: written from a seed chunk so that it takes for granted a claim the chunk
  contradicts; kept only when the model, reading the seed and the chunks BM25 finds for the claim,
  says they contradict it and none states it. Its gold chunk is the seed, which corrects it.

Each kind takes three calls: the question, its verification, the critic (a question must still
be one a user would type). A dry run walks the same steps with unknown answers taken to pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from pydantic import BaseModel

from ...data.records import Question
from ...llm.prompts import delimit
from ...llm.reading import Explanation
from ...runtime.engine import Call
from ..generate_checks import BM25, evidence_found, question_problems
from .shapes import CRITIC_MIN, Critique, question_id, reject_record
from .steps import Candidate, Progress

SEARCH_DEPTH = 5  # the chunks BM25 finds for a question (or a premise) that the model then reads


class UnanswerableQuestion(BaseModel):
    """A question on a chunk's topic that it does not answer: the missing detail first (a small model
    that names what is missing before it asks writes fewer questions the chunk answers), the
    question, and the reply a careful assistant gives."""

    missing: str
    question: str
    answer: str


class FalsePremiseQuestion(BaseModel):
    """A question taking for granted a claim its chunk contradicts, written in the order that keeps a
    small model on the chunk: the chunk's sentence copied first (the correction, word for word), the
    premise that sentence contradicts, the question, and the reference answer that corrects it."""

    correction: str
    premise: str
    question: str
    answer: str


class SearchVerdict(BaseModel):
    """Whether passages found for a question answer it, with the answering sentence copied word for
    word (so that a claimed answer can be checked to be there)."""

    quote: str
    answerable: bool
    reason: Explanation


class PremiseVerdict(BaseModel):
    """Whether passages contradict a claim, and whether any of them states it as true."""

    contradicted: bool
    supported: bool
    reason: Explanation


def searched(index: BM25, query: str, depth: int = SEARCH_DEPTH, first: str | None = None) -> list[str]:
    """The chunks BM25 ranks highest for ``query`` (those sharing a word with it; ties in corpus
    order), ``first`` put first when given, ``depth`` in all."""
    scores = index.scores(query)
    ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
    out = [first] if first is not None else []
    out += [index.ids[i] for i in ranked if index.ids[i] != first]
    return out[:depth]


@dataclass
class NoAnswerDraft:
    """A candidate of either kind being decided from its answers in call order: the question (None
    in a dry run before it is known), its verification, its critique."""

    cand: Candidate
    answers: Sequence[BaseModel | None]

    @property
    def seed(self) -> str:
        return self.cand.group[0]

    @property
    def written(self) -> UnanswerableQuestion | FalsePremiseQuestion | None:
        return cast("UnanswerableQuestion | FalsePremiseQuestion | None", self.answers[0] if self.answers else None)

    def reject(self, reason: str, checks: dict) -> Progress:
        w = self.written
        return Progress(
            reject=reject_record(
                list(self.cand.group),
                self.cand.level,
                w.question if w else None,
                w.answer if w else None,
                reason,
                checks,
                style=self.cand.style,
                kind=self.cand.level,
            )
        )


def text_problems(written: UnanswerableQuestion | FalsePremiseQuestion, seed_text: str) -> str | None:
    """What drops a written question before any call: the checks every question takes (length,
    self-containment, copying, language), and for a false premise, a correction the seed chunk
    does not hold word for word."""
    problems = question_problems(written.question, written.answer, [seed_text])
    if isinstance(written, FalsePremiseQuestion):
        if not written.premise.strip():
            problems.append("no premise stated")
        elif not evidence_found(written.correction, seed_text):
            problems.append(f"correction not found in its chunk: {written.correction[:80]!r}")
    return "; ".join(problems) or None


def verification_failed(level: str, verdict: BaseModel | None, found: list[str], texts: Sequence[str]) -> str | None:
    """Why the verification drops the question, or None (an answer not known passes, as in a dry run).
    An unanswerable question is dropped whenever the model says a chunk found answers it: with the
    chunk when its quote is there, and as unsure when the quote is in none of them (a claim it could
    not show is no proof the corpus is silent, so the question is not kept either)."""
    if verdict is None:
        return None
    if level == "unanswerable":
        search = cast(SearchVerdict, verdict)
        if not search.answerable:
            return None
        where = [c for c, t in zip(found, texts) if search.quote.strip() and evidence_found(search.quote, t)]
        if where:
            return f"answered by the corpus: chunk {where[0]} says {search.quote.strip()[:160]!r}"
        return (
            f"unsure: the model says the {len(found)} chunks BM25 found for it ({', '.join(found)}) answer it, "
            f"with a quote found in none of them: {search.quote.strip()[:120]!r}"
        )
    premise = cast(PremiseVerdict, verdict)
    if premise.supported:
        return f"the premise is stated as true in the chunks found for it ({', '.join(found)}): {premise.reason}"
    if not premise.contradicted:
        return f"no chunk contradicts the premise (read: {', '.join(found)}): {premise.reason}"
    return None


def verification_checks(verdict: BaseModel | None) -> dict:
    """What the verification said, kept in the record's checks: for an unanswerable question, that
    the chunks found did not answer it (and the blind answer); for a false premise, the verdict."""
    if isinstance(verdict, SearchVerdict):
        return {"answered_by_search": verdict.answerable, "search_quote": verdict.quote}
    if isinstance(verdict, PremiseVerdict):
        return {
            "premise_check": {
                "contradicted": verdict.contradicted,
                "supported": verdict.supported,
                "reason": verdict.reason,
            }
        }
    return {}


def critic_failed(critique: BaseModel | None) -> tuple[str | None, dict]:
    """Why the critic drops the question (a score below ``CRITIC_MIN``), or None; and its scores."""
    if critique is None:
        return None, {}
    c = cast(Critique, critique)
    scores = {"self_contained": c.self_contained, "clear": c.clear, "realistic": c.realistic}
    low = [k for k, v in scores.items() if v < CRITIC_MIN]
    why = f"the critic scored it low on {', '.join(low)}: {c.reason}" if low else None
    return why, {**scores, "reason": c.reason}


def accepted(draft: NoAnswerDraft, checks: dict, model: str | None, prompt: str) -> Progress:
    """The question as it is kept: no gold for an unanswerable one; the seed, grade 3, for a false
    premise, whose correction is its evidence."""
    w = draft.written
    if w is None:
        return Progress()
    level = draft.cand.level
    gold = [draft.seed] if isinstance(w, FalsePremiseQuestion) else []
    question = Question(
        id=question_id(gold, level, w.question),
        question=w.question.strip(),
        answer=w.answer.strip(),
        difficulty=level,
        kind=level,
        chunk_ids=gold,
        grades={c: 3 for c in gold},
        style=draft.cand.style,
        checks=checks,
        model=model,
        prompt=prompt,
        answerable=False,
    )
    if isinstance(w, FalsePremiseQuestion):  # set so that the line says them (an unanswerable one has neither)
        question.premise, question.evidence = w.premise.strip(), [w.correction.strip()]
    return Progress(question=question)


def verify_messages(level: str, written: BaseModel | None, passages: str) -> dict[str, str]:
    """The fields of the verification prompt: the question for an unanswerable one (the search
    check's prompt), the premise as a claim for a false premise."""
    if level == "unanswerable":
        text = written.question if isinstance(written, UnanswerableQuestion) else ""
        return {"question": delimit("QUESTION", text), "passages": passages}
    text = written.premise if isinstance(written, FalsePremiseQuestion) else ""
    return {"claim": delimit("CLAIM", text), "passages": passages}


def verification_call(messages: list[dict[str, str]], level: str) -> Call:
    model: type[BaseModel] = SearchVerdict if level == "unanswerable" else PremiseVerdict
    return Call.of(0, messages, model, "verify", 400)
