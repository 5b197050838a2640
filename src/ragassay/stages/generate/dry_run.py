"""generate's dry run: the run's own waves (``Generator._draw``), each
candidate walked through its steps with the answers the set or the cache already holds and None for
the rest (:class:`Simulation`), the calls kept step by step for the engine's estimate to count and
price (:class:`PlannedCalls`)."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ...data.records import CandidateRecord, Question
from ...llm.cache import Cache
from ...llm.schemas import request_key
from ...runtime.engine import Call, OutputStore, Stage, WorkItem
from .journal import AnswerJournal
from .stage import GenerateStage
from .steps import Candidate
from .writer import QuestionWriter


@dataclass(frozen=True)
class Assumed:
    """A dry run's candidate whose question is not known yet: taken as accepted at its level."""

    difficulty: str
    question: None = None


@dataclass
class Decided:
    """What one wave decided: each candidate's (question, None) or (None, reject), in plan order."""

    outcomes: list[tuple[Question | Assumed | None, dict | None]]
    stopped: str | None = None
    pending: int = 0


class Simulation:
    """A dry run's waves: each candidate walked through its steps with the answers known (the set's
    :class:`AnswerJournal`, the answer cache) and None for the rest, as the run will walk it, and
    the calls it will make kept step by step (``planned``: one item a candidate, its steps its
    payload) for the engine's estimate to count and price. A candidate a killed run decided is
    read from the candidates journal; a request met before in the run is not made again (the run
    answers it from its journal, or shares it within a wave). Calls built from an answer not known
    yet hold placeholders: they are counted each, never taken for one another."""

    def __init__(
        self,
        gen: QuestionWriter,
        stage: GenerateStage,
        store: OutputStore | None,
        answers: AnswerJournal | None,
        cache: Cache | None,
    ):
        self.gen, self.stage, self.store, self.answers, self.cache = gen, stage, store, answers, cache
        self.planned: list[WorkItem] = []
        self.sent = 0  # requests the run sends (not answered by the set's answers or the cache)
        self.open_singles = 0  # single-chunk checks of hard questions not known yet: each may need a comparison
        self._met: dict[bytes, BaseModel | None] = {}

    async def decide(self, items: list[WorkItem]) -> Decided:
        outcomes: list[tuple[Question | Assumed | None, dict | None]] = []
        for it in items:
            if self.store is not None and self.store.done(it.key):
                outcomes.append(self.stage.outcome(self.store.record(it.key)))
                self.planned.append(WorkItem(it.key, [], payload=[]))
                continue
            cand: Candidate = it.payload
            steps: list[list[Call]] = []
            answers: list[BaseModel | None] = []
            calls, known = it.calls, True
            while calls:
                to_make = []
                for call in calls:
                    answer, make = self._answer(call, known)
                    if make:
                        to_make.append(call)
                    answers.append(answer)
                if to_make:
                    steps.append(to_make)
                known = known and all(a is not None for a in answers)
                calls = self.stage.next_calls(it, answers)
            if cand.level == "hard":
                self.open_singles += sum(1 for a in answers[4 : 4 + len(cand.group)] if a is None)
            now = self.stage.progress(cand, answers)
            self.stage.forget(cand)
            if now.reject is not None:
                outcomes.append((None, now.reject))
            else:
                outcomes.append((now.question or Assumed(cand.level), None))
            self.planned.append(WorkItem(it.key, steps[0] if steps else [], payload=steps))
        return Decided(outcomes)

    def _answer(self, call: Call, known: bool) -> tuple[BaseModel | None, bool]:
        """The answer to ``call`` if it is known, and whether the run makes the call (to the cache or
        the endpoint). ``known``: every earlier answer of its candidate is known (the call is the
        real request, not one with placeholders)."""
        if not known:
            self.sent += 1
            return None, True
        digest = call.digest()
        if digest in self._met:
            return self._met[digest], False
        cfg = self.gen.config
        key = request_key(
            cfg.model or "", call.message_list, call.response_model, call.params(cfg.temperature), cfg.base_url
        )
        answer = self.answers.get(key, call.response_model) if self.answers is not None else None
        if answer is not None:
            self._met[digest] = answer
            return answer, False
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            try:
                answer = call.response_model.model_validate(hit["answer"])
            except ValidationError:
                answer = None
        if answer is None:
            self.sent += 1
        self._met[digest] = answer
        return answer, True


class PlannedCalls(Stage):
    """generate as its dry run hands it to the engine's estimate: each item's payload is the calls
    the run makes for one candidate, step by step (see :class:`Simulation`)."""

    name = "generate"
    record_model = CandidateRecord

    def next_calls(self, item: WorkItem, answers: Sequence[BaseModel | None]) -> list[Call]:
        made = 0
        for i, step in enumerate(item.payload):
            made += len(step)
            if made >= len(answers):
                return item.payload[i + 1] if i + 1 < len(item.payload) else []
        return []


def without_waiting(coroutine: Awaitable[Any]) -> Any:
    """The value of a coroutine that never waits (a dry run's waves), run without an event loop."""
    try:
        coroutine.send(None)  # type: ignore[attr-defined]
    except StopIteration as stop:
        return stop.value
    coroutine.close()  # type: ignore[attr-defined]
    raise RuntimeError("a dry run's waves waited for something")
