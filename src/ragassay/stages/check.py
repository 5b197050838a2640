"""``check``: label RAG answers correct / partial / hallucinated / abstained, and say why.

Rules decide what they can be sure of without a call (exact match, numbers, lists, abstentions);
the LLM grades the rest against the reference and, when given, the retrieved context. A grader
failure is a ``status: error`` record, counted and excluded from rates, never a label.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from .check_rules import decide
from ..errors import InputError
from ..llm import LLM, LLMError
from .runner import run_items
from .journal import latest_records
from ..llm.prompts import delimit, load_prompt
from ..data.records import AnswerItem, Chunk

SEVERITY = {"hallucinated": 3, "partial": 2, "abstained": 1, "correct": 0}


class AnswerVerdict(BaseModel):
    reference_facts: str
    response_claims: str
    comparison: str
    label: Literal["correct", "partial", "hallucinated", "abstained"]
    grounded: Literal["supported", "unsupported", "contradicted"] | None
    unsupported_claims: list[str]


@dataclass
class CheckOptions:
    samples: int = 1
    sample_temperature: float = 0.7
    max_tokens: int = 700
    max_context_chars: int = 12000
    quiet: bool = False


def read_answers(path: str | Path, chunks: Mapping[str, Chunk] | None = None) -> list[AnswerItem]:
    """Answers to check; ``context_ids`` are resolved to texts with ``chunks``."""
    from ..data.io import read_records
    items = []
    for no, item in read_records(path, AnswerItem, "answer"):
        if item.context_ids and item.contexts is None:
            if chunks is None:
                raise InputError("context_ids need --chunks to look the texts up", path, no)
            unknown = [c for c in item.context_ids if c not in chunks]
            if unknown:
                raise InputError(f"context id {unknown[0]!r} is not in the chunks file", path, no)
        items.append(item)
    return items


def references(item: AnswerItem) -> list[str]:
    return [item.reference] if isinstance(item.reference, str) else list(item.reference)


def majority_label(labels: Sequence[str]) -> str:
    """Most frequent label; a tie goes to the more severe one (hallucinated > partial > abstained > correct)."""
    counts = Counter(labels)
    top = max(counts.values())
    return max((lab for lab, c in counts.items() if c == top), key=SEVERITY.__getitem__)


class Checker:
    def __init__(self, llm: LLM | None, options: CheckOptions | None = None,
                 chunks: Mapping[str, Chunk] | None = None):
        self.llm = llm
        self.options = options or CheckOptions()
        self.chunks = chunks or {}
        self.prompt = load_prompt("check_answer")

    def contexts(self, item: AnswerItem) -> list[tuple[str, str]]:
        if item.contexts is not None:
            return [(f"{i + 1}", t) for i, t in enumerate(item.contexts)]
        return [(c, self.chunks[c].text) for c in item.context_ids or []]

    def messages(self, item: AnswerItem) -> list[dict[str, str]]:
        refs = references(item)
        ref_text = refs[0] if len(refs) == 1 else "Any one of these accepted answers:\n" + "\n".join(f"- {r}" for r in refs)
        budget = self.options.max_context_chars
        blocks = []
        for cid, text in self.contexts(item):
            if budget <= 0:
                break
            blocks.append(delimit(f"PASSAGE id={cid}", text[:budget]))
            budget -= len(text)
        return self.prompt.messages(question=delimit("QUESTION", item.question),
                                    reference=delimit("REFERENCE", ref_text),
                                    response=delimit("RESPONSE", item.response),
                                    passages="\n\n".join(blocks) if blocks else "(no passages were given)")

    async def check(self, item: AnswerItem) -> dict:
        base = {"id": item.id, "response_words": len(item.response.split())}
        ruled = decide(references(item), item.response)
        if ruled is not None:
            label, why = ruled
            return {**base, "label": label, "grounded": None, "unsupported_claims": [], "rationale": why,
                    "decided_by": "rule", "status": "ok", "error": None, "model": None, "prompt": None,
                    "samples": [], "fault": None}
        if self.llm is None:
            raise LLMError("config", "needs an LLM verdict but no endpoint is configured "
                           "(set OPENAI_API_KEY or --base-url, and --model, then rerun to fill these in)")
        has_context = bool(self.contexts(item))
        temperature = (max(self.llm.config.temperature, self.options.sample_temperature)
                       if self.options.samples > 1 else self.llm.config.temperature)
        verdicts = []
        for s in range(self.options.samples):
            verdicts.append(await self.llm.ask(self.messages(item), AnswerVerdict, stage="check",
                                               max_tokens=self.options.max_tokens, temperature=temperature,
                                               sample=s))
        label = majority_label([v.label for v in verdicts])
        chosen = next(v for v in verdicts if v.label == label)
        grounded = chosen.grounded if has_context else None
        fault = None
        if label in ("hallucinated", "partial") and has_context:
            # wrong but faithful to the context: the retrieved context misled it
            fault = "retrieval" if grounded == "supported" else "generation"
        return {**base, "label": label, "grounded": grounded, "unsupported_claims": chosen.unsupported_claims,
                "rationale": f"reference: {chosen.reference_facts}\nresponse: {chosen.response_claims}\n"
                             f"comparison: {chosen.comparison}",
                "decided_by": "llm", "status": "ok", "error": None, "model": self.llm.config.model,
                "prompt": self.prompt.id, "samples": [v.label for v in verdicts], "fault": fault}


def error_check(item: AnswerItem, e: LLMError, model: str | None) -> dict:
    return {"id": item.id, "label": None, "grounded": None, "unsupported_claims": [], "rationale": None,
            "decided_by": None, "status": "error", "error": e.reason, "model": model, "prompt": None,
            "samples": [], "fault": None, "response_words": len(item.response.split())}


async def check_answers(items: Sequence[AnswerItem], llm: LLM | None, output: str | Path, *,
                        options: CheckOptions | None = None,
                        chunks: Mapping[str, Chunk] | None = None, announce: bool = True) -> list[dict]:
    """Check every answer (resumable) and return the latest record per answer id."""
    options = options or CheckOptions()
    checker = Checker(llm, options, chunks)
    if llm is None and announce:
        undecided = sum(1 for it in items if decide(references(it), it.response) is None)
        if undecided:
            print(f"note: no LLM endpoint configured: {undecided} answers need an LLM verdict and are "
                  "recorded as errors; set OPENAI_API_KEY or --base-url and --model, then rerun to fill them in",
                  file=sys.stderr)
    await run_items(llm, items, key=lambda it: it.id, record_key=lambda r: r["id"],
                    work=checker.check, on_error=lambda it, e: error_check(it, e, llm.config.model if llm else None),
                    output=output, stage="check", quiet=options.quiet)
    latest = latest_records(output, lambda r: r["id"])
    order = {it.id: i for i, it in enumerate(items)}
    return sorted((r for r in latest.values() if r["id"] in order), key=lambda r: order[r["id"]])


def retrieval_recall(qrels, run, k: int) -> dict[str, float]:
    """Per question, recall@k of the gold chunks (the retrieval half of the diagnosis)."""
    from ..metrics.evaluate import evaluate
    ev = evaluate(qrels, run, [f"recall@{k}"], missing="zero")
    return {q: v[f"recall@{k}"] for q, v in ev.per_query.items()}


def read_human_labels(path: str | Path) -> dict[str, str]:
    """People's labels: JSONL lines with ``id`` and ``label``."""
    from ..data.io import iter_jsonl
    from ..metrics.labels import LABELS
    out = {}
    for no, obj in iter_jsonl(path):
        if "id" not in obj or obj.get("label") not in LABELS:
            raise InputError(f"each line needs an id and a label, one of {', '.join(LABELS)}", path, no)
        out[str(obj["id"])] = obj["label"]
    return out
