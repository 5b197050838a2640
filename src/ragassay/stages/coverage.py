"""Coverage: does a run's retrieved set hold what a complete answer needs? Three steps, as the TREC
2024 RAG track's nuggetizer does them, each its own call:

1. nuggets: the atomic facts a complete answer needs, written from the question and the reference
   answer (or, with none, from the passages judged relevant to the question; never from the
   passages under assessment alone);
2. importance: vital or okay for each nugget, in a call that does not see any passage;
3. support: support / partial_support / not_support of each nugget by the retrieved set.

Nuggets are made once per question: a second run (another retriever) into the same coverage file
reuses the question's nuggets and their importance, so runs are measured against the same list,
and only step 3 is asked again. Records say which run they measured and which retrieved ids they
cover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..data.records import Chunk, Coverage, CoverageLabel
from ..llm import LLM, LLMConfig, LLMError
from ..llm.prompts import delimit, echoed_id, load_prompt
from ..runtime.engine import Call, Stage, WorkItem, fingerprint
from .queries import Passages, QueryItem
from .typed_answers import answer_as

NUGGET_CAP = 20  # at most this many nuggets per question
SIZING_NUGGETS = 6  # a dry run sizes steps 2 and 3 with this many placeholder nuggets


class NuggetList(BaseModel):
    nuggets: list[str] = Field(min_length=1, description="atomic facts, one short sentence each")


class Importance(BaseModel):
    number: int
    importance: Literal["vital", "okay"]


class ImportanceAnswer(BaseModel):
    labels: list[Importance]


class Assignment(BaseModel):
    number: int
    support: Literal["support", "partial_support", "not_support"]
    chunk_ids: list[str]


class AssignmentAnswer(BaseModel):
    assignments: list[Assignment]


def coverage_label(nuggets: Sequence[Mapping[str, Any]]) -> CoverageLabel:
    """FULL: every vital nugget supported; NONE: no nugget has any support; else PARTIAL."""
    vital = [n for n in nuggets if n["vital"]]
    if all(n["support"] == "support" for n in vital) and vital:
        return "FULL"
    if all(n["support"] == "not_support" for n in nuggets):
        return "NONE"
    return "PARTIAL"


def nugget_scores(nuggets: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """TREC RAG 2024 style: strict counts only full support; partial gives half credit."""

    def score(ns, partial):
        if not ns:
            return 0.0
        credit = {"support": 1.0, "partial_support": 0.5 if partial else 0.0, "not_support": 0.0}
        return sum(credit[n["support"]] for n in ns) / len(ns)

    vital = [n for n in nuggets if n["vital"]]
    return {
        "vital_strict": score(vital, False),
        "vital_partial": score(vital, True),
        "all_strict": score(nuggets, False),
        "all_partial": score(nuggets, True),
    }


def _numbered(nuggets: Sequence[str]) -> str:
    return delimit("NUGGETS", "\n".join(f"{i}. {n}" for i, n in enumerate(nuggets, start=1)))


class CoverageStage(Stage):
    """One item per (query, run); its key covers the query id (its record is its own), the
    question, the nugget source, the retrieved ids and their texts, the model and the three prompts."""

    name = "coverage"
    record_model = Coverage

    def __init__(self, config: LLMConfig, passages: Passages, run_name: str, max_tokens: int = 1200):
        self.config = config
        self.passages = passages
        self.run_name = run_name
        self.max_tokens = max_tokens
        self.prompts = [load_prompt(n) for n in ("coverage_nuggets", "coverage_importance", "coverage_assign")]

    @property
    def prompt_id(self) -> str:
        return "+".join(p.id for p in self.prompts)

    def identity(self, record: dict) -> str:
        return f"{record['query_id']}\t{record.get('run')}"

    def source_block(self, query: QueryItem, relevant: Sequence[Chunk]) -> str:
        if query.answer:
            return delimit("REFERENCE ANSWER", query.answer)
        if relevant:
            return "Passages judged relevant to the question:\n\n" + self.passages.blocks(list(relevant))
        return "(no reference answer and no passage judged relevant: list the facts the question itself asks for)"

    @staticmethod
    def question_key(q: QueryItem) -> str:
        return fingerprint("nuggets-for", q.text, q.answer)

    @staticmethod
    def known_nuggets(records: Iterable[dict]) -> dict[str, dict]:
        """Nuggets already made, per question, from coverage records of any run (the newest wins).
        Each record is parsed as a :class:`Coverage` (a coverage file has one per query and run)."""
        out = {}
        for r in (Coverage.model_validate(x) for x in records):
            if r.status == "ok" and r.nuggets and r.question_key:
                out[r.query_id] = {"question_key": r.question_key, "nuggets": [(n.text, n.vital) for n in r.nuggets]}
        return out

    def plan(
        self,
        retrieved: Sequence[tuple[QueryItem, list[Chunk], list[Chunk]]],
        known: Mapping[str, dict] | None = None,
        is_done: Callable[[str], bool] | None = None,
    ) -> list[WorkItem]:
        """``retrieved``: (query, the run's top chunks, chunks judged relevant to the query);
        ``known``: nuggets already made for a question (see :meth:`known_nuggets`); ``is_done``: whether
        the output holds a key. A query whose record was made with new nuggets keeps that key: the
        nuggets its own record holds do not make it new work on the next run."""
        items = []
        for q, chunks, relevant in retrieved:
            source = self.source_block(q, relevant)
            fresh = fingerprint(
                "coverage",
                q.id,
                self.prompt_id,
                self.run_name,
                q.text,
                source,
                [(c.id, c.title, c.text) for c in chunks],
                self.config.model,
                self.passages.max_chars,
                self.max_tokens,
            )
            if is_done is not None and is_done(fresh):
                items.append(WorkItem(fresh, [], (q, chunks, None)))
                continue
            reuse = (known or {}).get(q.id)
            if reuse is not None and reuse["question_key"] != self.question_key(q):
                reuse = None  # the question or its reference changed: new nuggets
            if reuse is not None:
                fixed = reuse["nuggets"]
                key = fingerprint(
                    "coverage",
                    q.id,
                    self.prompt_id,
                    self.run_name,
                    self.question_key(q),
                    fixed,
                    [(c.id, c.title, c.text) for c in chunks],
                    self.config.model,
                    self.passages.max_chars,
                    self.max_tokens,
                )
                item = WorkItem(key, [], (q, chunks, fixed))
                item.calls = [self._assign_call(item, [n for n, _ in fixed])]
                items.append(item)
                continue
            key = fresh
            first = Call.of(
                0,
                self.prompts[0].messages(question=delimit("QUESTION", q.text), source=source, cap=str(NUGGET_CAP)),
                NuggetList,
                "coverage",
                self.max_tokens,
            )
            items.append(WorkItem(key, [first], (q, chunks, None)))
        return items

    def _assign_call(self, item: WorkItem, nuggets: list[str]) -> Call:
        q, chunks, _ = item.payload
        passages = self.passages.blocks(chunks) or "(no passages were retrieved)"
        messages = self.prompts[2].messages(
            question=delimit("QUESTION", q.text), nuggets=_numbered(nuggets), passages=passages
        )
        return Call.of(0, messages, AssignmentAnswer, "coverage", self.max_tokens)

    def next_calls(self, item: WorkItem, answers: Sequence[BaseModel | None]) -> list[Call]:
        q, _, fixed = item.payload
        if fixed is not None:
            return []  # nuggets reused: support was the only step
        nuggets = self._nuggets(answers[0])
        if len(answers) == 1:
            messages = self.prompts[1].messages(question=delimit("QUESTION", q.text), nuggets=_numbered(nuggets))
            return [Call.of(0, messages, ImportanceAnswer, "coverage", self.max_tokens)]
        if len(answers) == 2:
            return [self._assign_call(item, nuggets)]
        return []

    @staticmethod
    def _nuggets(answer: BaseModel | None) -> list[str]:
        if answer is None:  # a dry run before step 1 is known: placeholders of a typical size
            return ["a fact of typical length that a complete answer to the question needs"] * SIZING_NUGGETS
        return [n.strip() for n in answer_as(answer, NuggetList).nuggets if n.strip()][:NUGGET_CAP]

    def _base(self, item: WorkItem) -> dict[str, Any]:
        """The fields every coverage record of this item has, ok or error."""
        q, chunks, fixed = item.payload
        return {
            "query_id": q.id,
            "run": self.run_name,
            "chunk_ids": [c.id for c in chunks],
            "key": item.key,
            "model": self.config.model,
            "prompt": self.prompt_id,
            "question_key": self.question_key(q),
            "nuggets_reused": fixed is not None,
        }

    async def finish(self, item: WorkItem, answers: list[BaseModel], llms: Sequence[LLM]) -> list[BaseModel | dict]:
        _, chunks, fixed = item.payload
        if fixed is not None:
            nuggets = [n for n, _ in fixed]
            importance = {i: "vital" if vital else "okay" for i, (_, vital) in enumerate(fixed, start=1)}
        else:
            nuggets = self._nuggets(answers[0])
            importance = {x.number: x.importance for x in answer_as(answers[1], ImportanceAnswer).labels}
        assigned = {x.number: x for x in answer_as(answers[-1], AssignmentAnswer).assignments}
        numbers = range(1, len(nuggets) + 1)
        missing = [n for n in numbers if n not in importance or n not in assigned]
        if missing:
            raise LLMError("invalid", f"the importance or support answer left out nugget(s) {missing[:5]}")
        known = {c.id for c in chunks}
        out = []
        for n, text in zip(numbers, nuggets):
            a = assigned[n]
            ids = [i for i in (echoed_id(e, known) for e in a.chunk_ids) if i is not None]  # made-up ids dropped
            support = a.support if (ids or a.support == "not_support") else "not_support"
            out.append({"text": text, "vital": importance[n] == "vital", "support": support, "chunk_ids": ids})
        return [
            Coverage.model_validate(
                {
                    **self._base(item),
                    "coverage": coverage_label(out),
                    "nuggets": out,
                    "scores": nugget_scores(out),
                    "status": "ok",
                    "error": None,
                }
            )
        ]

    def error_records(self, item: WorkItem, error: LLMError) -> list[BaseModel | dict]:
        return [Coverage(**self._base(item), coverage=None, nuggets=[], status="error", error=error.reason)]
