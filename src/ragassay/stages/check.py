"""The ``check`` stage: it labels each RAG answer correct, partial, hallucinated or abstained, and
says why.

Rules decide an answer only where they cannot be wrong without asking a model: when the response is
an accepted answer exactly as written, or when it says nothing at all. Every other answer is graded
by the LLM against the reference and, when one is given, the retrieved context. A grader that fails
writes a record with ``status: error``; such records are counted and left out of every rate, and
never turned into a label, because a failure read as a label would change the rates unseen.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from ..data.records import AnswerItem, Check, CheckLabel, Chunk
from ..errors import InputError
from ..llm import LLM, LLMConfig, LLMError
from ..llm.prompt_files import choose_prompt, full_schema
from ..llm.prompts import clip, delimit, load_prompt, shown_id
from ..llm.reading import Explanation, Explanations
from ..metrics.labels import NO_VERDICT_YET
from ..runtime.engine import (
    Call,
    OutputStore,
    Stage,
    StageRun,
    WorkItem,
    fingerprint,
    in_shard,
    run_stage,
)
from .check_behaviour import (
    AbstentionVerdict,
    Expected,
    PremiseAnswerVerdict,
    behaviour_of,
    declined,
    expected_of,
)
from .check_rules import decide, notes
from .short_answers import ShortVerdict

SEVERITY = {"hallucinated": 3, "partial": 2, "abstained": 1, "correct": 0}


class AnswerVerdict(BaseModel):
    reference_facts: Explanation
    response_claims: Explanation
    comparison: Explanation
    label: Literal["correct", "partial", "hallucinated", "abstained"]
    grounded: Literal["supported", "unsupported", "contradicted"] | None
    context_has_answer: bool | None
    unsupported_claims: Explanations


@dataclass
class CheckOptions:
    samples: int = 1
    sample_temperature: float = 0.7
    max_tokens: int = 700
    max_context_chars: int = 12000  # all passages together; what does not fit is cut or dropped, visibly
    max_response_chars: int = 32000  # a longer response is an error record, never graded from a cut
    seed: int = 0  # with several samples, sample i sends seed + i (distinct requests)
    quiet: bool = False
    shard: tuple[int, int] | None = None  # check only the answers of this slice (i, n): see engine.in_shard
    # "auto" (short for a model whose name says it is small), "full", "short" or a prompt file's path:
    # see llm/prompt_files.py; every prompt but the full one is answered in the short schema
    prompt: str = "auto"


def references(item: AnswerItem) -> list[str]:
    return [item.reference] if isinstance(item.reference, str) else list(item.reference)


def majority_label(labels: Sequence[CheckLabel]) -> CheckLabel:
    """Most frequent label; a tie goes to the more severe one (hallucinated > partial > abstained > correct)."""
    counts = Counter(labels)
    top = max(counts.values())
    return max((lab for lab, c in counts.items() if c == top), key=SEVERITY.__getitem__)


RULES_VERSION = 3  # bump when check_rules changes what it decides: keys change, answers are redone


def fault_of(label: str, has_context: bool, context_has_answer: bool | None, gold_recall: float | None) -> str | None:
    """Which half of the pipeline a wrong answer comes from, from evidence (as RAGChecker does):
    retrieval when no gold chunk was retrieved or the retrieved context lacks what the reference
    needs; generation when the context held the answer and the response still missed it; None for
    a correct answer or when the evidence cannot tell."""
    if label == "correct":
        return None
    if gold_recall is not None and gold_recall == 0:
        return "retrieval"
    if not has_context:
        return None
    if context_has_answer is False:
        return "retrieval"
    if context_has_answer is True:
        return "generation"
    return None


class Checker(Stage):
    """Rules first (no call); the LLM grades the rest. ``configs`` holds the grader's config, or is
    empty when no endpoint is configured: then undecided answers become error records."""

    name = "check"
    record_model = Check

    def __init__(
        self,
        configs: Sequence[LLMConfig],
        options: CheckOptions | None = None,
        chunks: Mapping[str, Chunk] | None = None,
        gold_recall: Mapping[str, float] | None = None,
    ):
        self.configs = list(configs)[:1]
        self.gold_recall = gold_recall  # recall@k of each answer's gold chunks, when --run/--qrels are given
        self.options = options or CheckOptions()
        self.chunks = chunks or {}
        self.prompt, self.prompt_reason = choose_prompt("check", self.options.prompt, self.model)
        self.full = full_schema("check", self.prompt)  # else the short schema: a label, reasoning optional
        self.answer_model: type[BaseModel] = AnswerVerdict if self.full else ShortVerdict
        self.premise_prompt = load_prompt("check_premise")  # a false premise: was it corrected? (check_behaviour)
        self.abstention_prompt = load_prompt("check_abstention")  # an unanswerable question: did it decline?

    @property
    def model(self) -> str | None:
        return self.configs[0].model if self.configs else None

    def identity(self, record: dict) -> str:
        return record["id"]

    def contexts(self, item: AnswerItem) -> list[tuple[str, str]]:
        if item.contexts is not None:
            return [(f"{i + 1}", t) for i, t in enumerate(item.contexts)]
        missing = [c for c in item.context_ids or [] if c not in self.chunks]
        if missing:
            raise InputError(
                f"answer {item.id!r}: context id {missing[0]!r} is not in the chunks given "
                "(pass chunks=... to look context_ids up)"
            )
        return [(c, self.chunks[c].text) for c in item.context_ids or []]

    def messages(self, item: AnswerItem) -> list[dict[str, str]]:
        return self.prompt_and_cuts(item)[0]

    def prompt_and_cuts(self, item: AnswerItem) -> tuple[list[dict[str, str]], dict | None]:
        """The messages, and what of the passages did not fit the budget (None when nothing was
        cut). The response is always shown whole (a longer one is never planned: see
        :meth:`too_long`); every cut of a passage is marked in the prompt itself."""
        refs = references(item)
        ref_text = (
            refs[0] if len(refs) == 1 else "Any one of these accepted answers:\n" + "\n".join(f"- {r}" for r in refs)
        )
        budget = self.options.max_context_chars
        blocks, cut_chars, dropped = [], 0, []
        for cid, text in self.contexts(item):
            if budget <= 0:
                dropped.append(cid)
                continue
            shown, cut = clip(text, budget)
            blocks.append(delimit(f"PASSAGE id={shown_id(cid)}", shown))
            cut_chars += cut
            budget -= len(text)
        if dropped:
            blocks.append(
                f"[… {len(dropped)} more passage(s) dropped to fit the length budget: ids "
                f"{', '.join(shown_id(c) for c in dropped)}]"
            )
        used = self.prompt.placeholders  # a short prompt or a user's may leave passages and notes out
        noticed = notes(refs, item.response) if "notes" in used else []
        values = dict(
            question=delimit("QUESTION", item.question),
            reference=delimit("REFERENCE", ref_text),
            response=delimit("RESPONSE", item.response),
            passages="\n\n".join(blocks) if blocks else "(no passages were given)",
            notes=("Noticed by a simple comparison (a hint, not a verdict):\n" + "\n".join(f"- {n}" for n in noticed))
            if noticed
            else "",
        )
        messages = self.prompt.messages(**{k: v for k, v in values.items() if k in used})
        cuts = {"context_chars_cut": cut_chars, "contexts_dropped": dropped}
        return messages, (cuts if (cut_chars or dropped) and "passages" in used else None)  # only what it was shown

    def behaviour_messages(self, item: AnswerItem, expected: Expected) -> list[dict[str, str]]:
        """The prompt of an answer that should not simply answer: for an unanswerable question, the
        question and the response (did it decline?); for a false premise, the premise beside the
        question, the reference that corrects it and the response. No passages: what is asked is read
        from the response."""
        if expected == "abstain":
            return self.abstention_prompt.messages(
                question=delimit("QUESTION", item.question), response=delimit("RESPONSE", item.response)
            )
        refs = references(item)
        ref_text = refs[0] if len(refs) == 1 else "Any one of these:\n" + "\n".join(f"- {r}" for r in refs)
        return self.premise_prompt.messages(
            question=delimit("QUESTION", item.question),
            premise=delimit("PREMISE", item.premise or ""),
            reference=delimit("REFERENCE", ref_text),
            response=delimit("RESPONSE", item.response),
        )

    def too_long(self, item: AnswerItem) -> str | None:
        """Why an answer cannot be graded: a response over the budget (never graded from a cut),
        or no reference to grade it against. None when it can."""
        if not any(r.strip() for r in references(item)):
            return (
                "the reference is empty or missing (a RAGAS sample may have none): there is nothing to grade "
                "the response against"
            )
        n, budget = len(item.response), self.options.max_response_chars
        if n <= budget:
            return None
        return (
            f"the response has {n:,} characters, more than the {budget:,} the grader is shown whole; "
            f"it is not graded from a cut (raise the budget with check --max-response-chars {n})"
        )

    def _recall(self, item: AnswerItem) -> float | None:
        return None if self.gold_recall is None else self.gold_recall.get(item.id)

    def temperature(self) -> float:
        base = self.configs[0].temperature if self.configs else 0.0
        return max(base, self.options.sample_temperature) if self.options.samples > 1 else base

    def seed(self, sample: int) -> int | None:
        """Several samples are several distinct requests: sample i sends seed + i (one sends none)."""
        return self.options.seed + sample if self.options.samples > 1 else None

    def plan(self, items: Sequence[AnswerItem], is_done: Callable[[str], bool] = lambda key: False) -> list[WorkItem]:
        """One item per answer id. The key holds the id (its record is its own) and everything that
        changes the verdict; two answers with the same texts send the same requests, which the
        engine asks once. An answer already checked gets no prompt (a rerun costs its key only)."""
        o = self.options
        out = []
        for it in items:
            expected = expected_of(it)
            # an answer expected to be given keeps the key it had before behaviours were checked
            behaviour_key = (
                ()
                if expected == "answer"
                else (expected, it.premise, self.premise_prompt.id, self.abstention_prompt.id)
            )
            key = fingerprint(
                "check",
                it.id,
                self.prompt.id,
                RULES_VERSION,
                it.question,
                references(it),
                it.response,
                [t for _, t in self.contexts(it)],
                self.model,
                o.samples,
                self.temperature(),
                o.seed if o.samples > 1 else None,
                o.max_tokens,
                o.max_context_chars,
                o.max_response_chars,
                self._recall(it),
                *behaviour_key,
            )
            long_why = self.too_long(it)
            ruled = None if long_why else decide(references(it), it.response, it.question)
            calls, cuts = [], None
            if ruled is None and long_why is None and not is_done(key):
                if expected == "answer":
                    messages, cuts = self.prompt_and_cuts(it)
                else:
                    messages, cuts = self.behaviour_messages(it, expected), None
                shapes: dict[str, type[BaseModel]] = {
                    "answer": self.answer_model,
                    "abstain": AbstentionVerdict,
                    "correct_premise": PremiseAnswerVerdict,
                }
                shape = shapes[expected]
                if self.configs:
                    calls = [
                        Call.of(
                            0, messages, shape, "check", o.max_tokens, self.temperature(), seed=self.seed(s), sample=s
                        )
                        for s in range(o.samples)
                    ]
            out.append(WorkItem(key, calls, (it, ruled, cuts, long_why)))
        return out

    async def finish(self, work: WorkItem, answers: list[Any], llms: Sequence[LLM]) -> list[BaseModel | dict]:
        item, ruled, cuts, long_why = work.payload
        base = {"id": item.id, "response_words": len(item.response.split()), "key": work.key, "truncated": cuts}
        if long_why is not None:
            raise LLMError("input", long_why)
        expected = expected_of(item)
        if ruled is not None:
            graded, why = ruled  # a response that is the reference as written corrects the premise the reference does
            label, behaviour_fields = self.behaviour(expected, graded, graded == "correct")
            return [
                Check(
                    **base,
                    label=label,
                    grounded=None,
                    unsupported_claims=[],
                    rationale=why,
                    decided_by="rule",
                    status="ok",
                    error=None,
                    model=None,
                    prompt=None,
                    samples=[],
                    fault=fault_of(label, False, None, self._recall(item)),
                    **behaviour_fields,
                )
            ]
        if not answers:
            raise LLMError(
                "config",
                f"{NO_VERDICT_YET} (set OPENAI_API_KEY or --base-url, and --model, then rerun to fill these in)",
            )
        verdicts = answers
        if expected == "abstain":  # declined or not, each sample; a tie goes to the answer (the more severe)
            votes: list[CheckLabel] = ["abstained" if declined(v) else "hallucinated" for v in verdicts]
            vote = majority_label(votes)
            chosen = verdicts[votes.index(vote)]
            label, behaviour_fields = self.behaviour(expected, vote)
            behaviour_fields["graded_label"] = None  # the grader said declined or not, no label of its own
            return self.graded_by_llm(
                base,
                label,
                f"answer given: {chosen.answer_given!r}; declined: {chosen.declined}",
                prompt=self.abstention_prompt.id,
                samples=list[str](votes),
                fault=None,
                grounded=None,
                unsupported_claims=[],
                **behaviour_fields,
            )
        graded = majority_label([v.label for v in verdicts])
        chosen = next(v for v in verdicts if v.label == graded)
        if isinstance(chosen, PremiseAnswerVerdict):
            label, behaviour_fields = self.behaviour(expected, graded, chosen.premise_corrected)
            return self.graded_by_llm(
                base,
                label,
                f"the response says: {chosen.response_fact!r}",
                prompt=self.premise_prompt.id,
                samples=[v.label for v in verdicts],
                fault=fault_of(label, False, None, self._recall(item)),
                grounded=None,
                unsupported_claims=[],
                **behaviour_fields,
            )
        label, behaviour_fields = self.behaviour(expected, graded)
        if not isinstance(chosen, AnswerVerdict):  # the short schema: the label alone, grounding not asked
            return self.graded_by_llm(
                base,
                label,
                chosen.reasoning,
                prompt=self.prompt.id,
                samples=[v.label for v in verdicts],
                fault=fault_of(label, False, None, self._recall(item)),
                grounded=None,
                unsupported_claims=[],
                context_has_answer=None,
                **behaviour_fields,
            )
        has_context = bool(self.contexts(item))
        grounded = chosen.grounded if has_context else None
        has_answer = chosen.context_has_answer if has_context else None
        fault = fault_of(label, has_context, has_answer, self._recall(item))
        return self.graded_by_llm(
            base,
            label,
            f"reference: {chosen.reference_facts}\nresponse: {chosen.response_claims}\ncomparison: {chosen.comparison}",
            prompt=self.prompt.id,
            samples=[v.label for v in verdicts],
            fault=fault,
            grounded=grounded,
            unsupported_claims=chosen.unsupported_claims,
            context_has_answer=has_answer,
            **behaviour_fields,
        )

    def graded_by_llm(
        self,
        base: dict,
        label: Any,
        rationale: str | None,
        *,
        prompt: str,
        samples: list,
        fault: str | None,
        **fields: Any,
    ) -> list[BaseModel | dict]:
        """The one record of an answer the grader labelled: what every such record says alike (decided
        by the LLM, ok, no error, this run's model) is written here once; the caller gives the rest."""
        return [
            Check(
                **base,
                label=label,
                rationale=rationale,
                decided_by="llm",
                status="ok",
                error=None,
                model=self.model,
                prompt=prompt,
                samples=samples,
                fault=fault,
                **fields,
            )
        ]

    @staticmethod
    def behaviour(expected: Expected, graded: Any, premise_corrected: bool | None = None) -> tuple[Any, dict]:
        """The final label, and the record's behaviour fields (none for a question that expects an answer)."""
        if expected == "answer":
            return graded, {}
        label, did = behaviour_of(expected, graded, premise_corrected)
        return label, {"expected": expected, "behaviour": did, "graded_label": graded}

    def error_records(self, work: WorkItem, error: LLMError) -> list[BaseModel | dict]:
        item, _, cuts, _ = work.payload
        record = Check(
            id=item.id,
            truncated=cuts,
            label=None,
            grounded=None,
            unsupported_claims=[],
            rationale=None,
            decided_by=None,
            status="error",
            error=error.reason,
            model=self.model,
            prompt=None,
            samples=[],
            fault=None,
            response_words=len(item.response.split()),
            key=work.key,
        )
        expected = expected_of(item)
        if expected != "answer":  # an unanswerable question's error is counted with its kind, not as answerable
            record.expected = expected
        return [record]


async def check_answers(
    items: Sequence[AnswerItem],
    llm: LLM | None,
    output: str | Path,
    *,
    options: CheckOptions | None = None,
    chunks: Mapping[str, Chunk] | None = None,
    announce: bool = True,
    gold_recall: Mapping[str, float] | None = None,
) -> StageRun:
    """Check every answer (resumable); ``.records`` holds one record per answer, in input order.
    ``gold_recall`` (recall@k of each answer's gold chunks) lets ``fault`` use the qrels."""
    options = options or CheckOptions()
    checker = Checker([llm.config] if llm is not None else [], options, chunks, gold_recall)
    store = OutputStore(output, checker.identity)
    work = checker.plan([it for it in items if in_shard(it.id, options.shard)], store.done)
    if llm is None and announce:
        undecided = sum(1 for w in work if w.payload[1] is None and w.payload[3] is None and not store.done(w.key))
        if undecided:
            print(
                f"note: no LLM endpoint configured: {undecided} answer{'s need' if undecided != 1 else ' needs'} an "
                "LLM verdict and wait "
                "for one (error records until then); set OPENAI_API_KEY or --base-url and --model, then rerun to "
                "fill them in",
                file=sys.stderr,
            )
    return await run_stage(
        checker,
        work,
        [llm] if llm is not None else [],
        store,
        concurrency=llm.config.concurrency if llm else 8,
        quiet=options.quiet,
    )
