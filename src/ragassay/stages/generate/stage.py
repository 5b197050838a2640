"""generate on the engine (:class:`GenerateStage`): one work item per candidate, its steps asked
through ``next_calls`` and decided from the answers alone (:mod:`.steps`), its outcome journalled
as a record; and the engine's abort rule carried across waves."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ...data.records import NO_ANSWER, CandidateRecord, Question
from ...llm import LLM, LLMError
from ...llm.prompts import echoed_id
from ...runtime.engine import EARLY_FAILURES, Call, Stage, StageAborted, WorkItem, failing_alike, fingerprint
from .no_answer import (
    SEARCH_DEPTH,
    NoAnswerDraft,
    accepted,
    critic_failed,
    text_problems,
    verification_checks,
    verification_failed,
)
from .shapes import Difficulty, GeneratedQuestion, reject_record
from .steps import Answered, Candidate, Draft, Progress, Step
from .writer import QuestionWriter


class GenerateStage(Stage):
    """generate on the engine: one work item per candidate, its steps through :meth:`next_calls`
    (question -> blind answer -> compare -> critic -> for hard, each chunk offered alone -> compare
    the answers a single chunk gave). Every decision is made from the answers alone, so a dry run
    (answers unknown: the accepted path) and a resumed run plan exactly what a run sends."""

    name = "generate"
    record_model = CandidateRecord

    def __init__(self, generator: QuestionWriter):
        self.gen = generator
        self.failures: list[LLMError] = []
        self.answered = False
        # the text checks of a candidate's question, made once: each step reads its answers again, and
        # ranking the gold chunks by BM25 scores the whole corpus
        self._checked: dict[tuple[Candidate, str], tuple[str | None, dict, Difficulty]] = {}

    def identity(self, record: dict) -> str:
        return record["key"]  # a candidate is its draw: the key says which

    def item(self, level: Difficulty, group: Sequence[str], style: str, draw: Any = 0, use: int = 0) -> WorkItem:
        """A candidate's work item. Its key holds the draw (the candidate's place in the run), so a
        chunk that seeds two candidates alike gets two tries, as two draws (``use``: the first
        chunk's tries before this one, each asked as another sample); and the corpus, which its
        checks rank its chunks against."""
        g = self.gen
        cand = Candidate(level, tuple(group), style)
        key = fingerprint(
            "generate",
            level,
            list(group),
            style,
            draw,
            [g.chunks[c].text for c in group],
            [g.chunks[c].title for c in group],
            g.config.model,
            g.config.temperature,
            [p.id for p in g.prompts_of(level)],
            use,
            g.corpus,
        )
        if level in NO_ANSWER:
            return WorkItem(key, payload=cand, build=lambda: [g.no_answer_call(group[0], level, style, use)])
        return WorkItem(key, payload=cand, build=lambda: [g.question_call(list(group), level, style, use)])

    def next_calls(self, item: WorkItem, answers: Sequence[BaseModel | None]) -> list[Call]:
        return self.progress(item.payload, answers).calls

    async def finish(self, item: WorkItem, answers: list[BaseModel], llms: Sequence[LLM]) -> list[BaseModel | dict]:
        now = self.progress(item.payload, answers)
        self.forget(item.payload)
        if now.question is not None:
            return [{"key": item.key, "status": "ok", "question": now.question.model_dump(mode="json")}]
        return [{"key": item.key, "status": "ok", "reject": now.reject}]

    def error_records(self, item: WorkItem, error: LLMError) -> list[BaseModel | dict]:
        if not self.answered and isinstance(error, EARLY_FAILURES):
            self.failures.append(error)
        c: Candidate = item.payload
        return [
            {
                "key": item.key,
                "status": "error",
                "error": error.reason,
                "reject": reject_record(c.group, c.level, None, None, f"model call failed: {error.reason}"),
            }
        ]

    def forget(self, cand: Candidate) -> None:
        """Drop the text checks kept for a candidate whose outcome is known."""
        for k in [k for k in self._checked if k[0] == cand]:
            del self._checked[k]

    @staticmethod
    def outcome(record: dict) -> tuple[Question | None, dict | None]:
        """A journalled candidate as (its question, None) or (None, its reject)."""
        rec = CandidateRecord.model_validate(record)
        if rec.question is not None:
            return rec.question, None
        return None, rec.reject.model_dump(mode="json") if rec.reject is not None else None

    def stop_if_dead(self) -> None:
        """The engine's abort rule across waves (a wave may be smaller than the rule's count): the
        first calls all failed the same way, and nothing has answered yet."""
        if not self.answered and failing_alike(self.failures):
            raise StageAborted(
                f"stopped early: the first {len(self.failures)} generate calls all failed the same "
                f"way: {str(self.failures[0]).rstrip('.')}. Nothing more was sent; fix this and rerun"
            )

    def progress(self, cand: Candidate, answers: Sequence[BaseModel | None]) -> Progress:
        """The candidate after ``answers`` (in call order): the calls of its next step, or its
        question or reject. An answer not known (None, in a dry run) is taken to pass its check."""
        if cand.level in NO_ANSWER:
            return self._no_answer_progress(cand, answers)
        g = self.gen
        got = Answered.of(answers, len(cand.group))
        generated = got.generated
        draft = Draft(cand, None, cand.level, {})
        if generated is not None:
            self.answered = True
            generated = _echoed(generated, cand.group)
            why, checks, label = self._text_checks(cand, generated)
            draft = Draft(cand, generated, label, checks)
            if why is not None:
                return draft.reject(why)
        if got.step is Step.QUESTION:
            return Progress([g.blind_call(draft.question, draft.gold)])
        if why := draft.blind_failed(got.blind):
            return draft.reject(why)
        if got.step is Step.BLIND:
            return Progress([g.compare_call(draft.question, draft.answer, got.blind.own_answer if got.blind else "")])
        if why := draft.comparison_failed(got.same):
            return draft.reject(why)
        if got.step is Step.COMPARE:
            return Progress([g.critic_call(draft.question, cand.style)])
        if why := draft.critic_failed(got.critique):
            return draft.reject(why)
        if cand.level == "hard":
            alone = self._alone_progress(draft, got)
            if alone is not None:
                return alone
        return draft.accepted(g.config.model, g.q_prompt.id)

    def _alone_progress(self, draft: Draft, got: Answered) -> Progress | None:
        """A hard question's last steps: each chunk offered, alone, must not answer it: the cited ones
        (gold), and one offered but not cited (an answer there means a gold chunk missed); so the
        calls do not hang on what the model cites, and a dry run counts them exactly. None when it
        passes them."""
        g = self.gen
        if got.step is Step.CRITIC:
            return Progress([g.blind_call(draft.question, [c]) for c in draft.cand.group])
        answering = [s for s in got.alone if s is not None and s.answerable]
        if got.step is Step.ALONE and answering:  # it says it can: does it give the same answer?
            return Progress([g.compare_call(draft.question, draft.answer, s.own_answer) for s in answering])
        why = draft.single_chunk_failed(got.alone, got.compared)
        return draft.reject(why) if why else None

    def _no_answer_progress(self, cand: Candidate, answers: Sequence[BaseModel | None]) -> Progress:
        """An unanswerable or false-premise candidate after ``answers``: written, verified against the
        chunks BM25 finds (see :mod:`.no_answer`), then the critic's; decided from the answers alone."""
        g, draft = self.gen, NoAnswerDraft(cand, answers)
        written, checks = draft.written, dict[str, Any]()
        if written is not None:
            self.answered = True
            if why := text_problems(written, g.chunks[draft.seed].text):
                return draft.reject(why, checks)
        found = g.no_answer_search(cand.level, written, draft.seed)
        checks["searched"] = {
            "ranker": "bm25",
            "depth": SEARCH_DEPTH,
            "chunk_ids": found,
            "query": "question" if cand.level == "unanswerable" else "premise",
        }
        if len(answers) == 1:
            return Progress([g.verify_no_answer_call(cand.level, written, found)])
        checks.update(verification_checks(answers[1]))
        if why := verification_failed(cand.level, answers[1], found, [g.chunks[c].text for c in found]):
            return draft.reject(why, checks)
        if len(answers) == 2:
            return Progress([g.critic_call(written.question if written is not None else "", cand.style)])
        why, scores = critic_failed(answers[2])
        if scores:
            checks["critic"] = scores
        if why:
            return draft.reject(why, checks)
        return accepted(draft, checks, g.config.model, g.prompts_of(cand.level)[0].id)

    def _text_checks(self, cand: Candidate, generated: GeneratedQuestion) -> tuple[str | None, dict, Difficulty]:
        memo = (cand, generated.model_dump_json())
        if memo not in self._checked:
            self._checked[memo] = self.gen.text_checks(generated, list(cand.group), cand.level)
        why, checks, label = self._checked[memo]
        return why, copy.deepcopy(checks), label  # a copy: each step adds to it


def _echoed(generated: GeneratedQuestion, chunk_ids: Sequence[str]) -> GeneratedQuestion:
    """The answer with each evidence id shown defused (marker text, line breaks) read back as the
    real id; a copy, so the answer shared with other items stays as it came."""
    out = generated.model_copy(deep=True)
    for ev in out.evidence:
        ev.chunk_id = echoed_id(ev.chunk_id, chunk_ids) or ev.chunk_id
    return out
