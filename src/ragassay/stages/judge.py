"""``judge``: graded 0-3 relevance of retrieved chunks, and per-query coverage of the answer.

Each stage step is "build messages, ask for a model, write a record": the LLM layer does the
calling, retrying, caching and resuming. A pair that cannot be judged becomes a ``status: error``
record with the reason; it never becomes grade 0.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import InputError
from ..llm import LLM, LLMConfig, LLMError
from .runner import run_items
from .journal import latest_records
from ..llm.prompts import delimit, load_prompt
from ..data.records import Chunk

# ----------------------------------------------------------------------------- answer shapes


class RelevanceAnswer(BaseModel):
    """The model reasons in order (intent, match, trust) before it grades."""

    intent: str = Field(description="what the searcher wants to know")
    match: str = Field(description="how well the passage meets that need")
    trust: str = Field(description="whether the passage can be trusted for it")
    grade: int = Field(ge=0, le=3)


class BatchItem(BaseModel):
    chunk_id: str
    intent: str
    match: str
    trust: str
    grade: int = Field(ge=0, le=3)


class BatchAnswer(BaseModel):
    judgments: list[BatchItem]


class NuggetAnswer(BaseModel):
    text: str
    vital: bool
    support: Literal["support", "partial_support", "not_support"]
    chunk_ids: list[str]


class CoverageAnswer(BaseModel):
    nuggets: list[NuggetAnswer] = Field(min_length=1)


# ---------------------------------------------------------------------------------- inputs


@dataclass
class QueryItem:
    id: str
    text: str
    answer: str | None = None


@dataclass
class JudgeOptions:
    depth: int = 10
    samples: int = 1
    batch: int = 1                 # 1 = pointwise (one call per pair)
    max_chunk_chars: int = 6000    # longer chunks are cut to this, with a warning
    max_tokens: int = 600
    sample_temperature: float = 0.7
    quiet: bool = False


def read_query_items(path: str | Path) -> list[QueryItem]:
    """Queries as ``{id, text}`` lines, or a questions.jsonl from generate (with its answers)."""
    from ..data.io import iter_jsonl, read_queries
    data = Path(path).read_bytes().lstrip()
    if not data.startswith(b"{"):
        return [QueryItem(q, t) for q, t in read_queries(path).items()]
    items, seen = [], set()
    for no, obj in iter_jsonl(path):
        qid = obj.get("id", obj.get("query_id", obj.get("_id")))
        text = obj.get("question", obj.get("query", obj.get("text")))
        if qid is None or not isinstance(text, str) or not text.strip():
            raise InputError("each line needs an id and a question/query/text", path, no)
        if str(qid) in seen:
            raise InputError(f"query id {qid!r} appears twice", path, no)
        seen.add(str(qid))
        answer = obj.get("answer")
        items.append(QueryItem(str(qid), text, answer if isinstance(answer, str) else None))
    return items


def pair_key(query_id: str, chunk_id: str) -> str:
    return f"{query_id}\t{chunk_id}"


# ---------------------------------------------------------------------------------- voting


def majority(grades: Sequence[int]) -> int:
    """The most frequent grade; a tie goes to the lowest of the tied grades (the cautious reading)."""
    counts = Counter(grades)
    top = max(counts.values())
    return min(g for g, c in counts.items() if c == top)


def coverage_label(nuggets: Sequence[Mapping[str, Any]]) -> str:
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
    return {"vital_strict": score(vital, False), "vital_partial": score(vital, True),
            "all_strict": score(nuggets, False), "all_partial": score(nuggets, True)}


# ---------------------------------------------------------------------------------- the stage


@dataclass
class JudgeSummary:
    pairs: int = 0
    judged: int = 0
    kept: int = 0
    skipped_done: int = 0
    errors: int = 0
    by_rule: int = 0
    truncated: int = 0
    grades: Counter = field(default_factory=Counter)
    coverage: Counter = field(default_factory=Counter)
    sample_disagreement: float | None = None
    batch_fallbacks: int = 0
    usage: str = ""

    def text(self) -> str:
        lines = [f"pairs: {self.pairs} ({self.kept} kept from --keep, {self.skipped_done} already done, "
                 f"{self.by_rule} decided by rule, {self.errors} errors)",
                 "grades: " + ", ".join(f"{g}: {self.grades.get(g, 0)}" for g in range(4))]
        if self.coverage:
            lines.append("coverage: " + ", ".join(f"{k}: {self.coverage.get(k, 0)}" for k in ("FULL", "PARTIAL", "NONE"))
                         + (f", errors: {self.coverage['error']}" if self.coverage.get("error") else ""))
        if self.sample_disagreement is not None:
            lines.append(f"samples disagreed on {self.sample_disagreement:.1%} of judged pairs")
        if self.truncated:
            lines.append(f"{self.truncated} chunks were cut to the length budget")
        if self.batch_fallbacks:
            lines.append(f"{self.batch_fallbacks} pairs fell back to pointwise after a batch answer missed them")
        if self.usage:
            lines.append(self.usage)
        return "\n".join(lines)


class Judge:
    def __init__(self, llms: Sequence[LLM], options: JudgeOptions | None = None):
        if not llms:
            raise ValueError("judge needs at least one model")
        self.llms = list(llms)
        self.options = options or JudgeOptions()
        self.rel_prompt = load_prompt("judge_relevance")
        self.batch_prompt = load_prompt("judge_relevance_batch")
        self.cov_prompt = load_prompt("judge_coverage")
        self.truncated: set[str] = set()
        self.batch_fallbacks = 0

    # -- text handling
    def _passage(self, chunk: Chunk) -> str:
        text = chunk.text
        if len(text) > self.options.max_chunk_chars:
            if chunk.id not in self.truncated:
                self.truncated.add(chunk.id)
                print(f"warning: chunk {chunk.id!r} has {len(text)} characters; judged on its first "
                      f"{self.options.max_chunk_chars}", file=sys.stderr)
            text = text[:self.options.max_chunk_chars]
        return f"{chunk.title}\n{text}" if chunk.title else text

    def relevance_messages(self, query: QueryItem, chunk: Chunk) -> list[dict[str, str]]:
        return self.rel_prompt.messages(query=delimit("QUERY", query.text), passage=delimit("PASSAGE", self._passage(chunk)))

    def batch_messages(self, query: QueryItem, chunks: Sequence[Chunk]) -> list[dict[str, str]]:
        passages = "\n\n".join(delimit(f"PASSAGE id={c.id}", self._passage(c)) for c in chunks)
        return self.batch_prompt.messages(query=delimit("QUERY", query.text), passages=passages,
                                          ids=", ".join(c.id for c in chunks))

    def coverage_messages(self, query: QueryItem, chunks: Sequence[Chunk]) -> list[dict[str, str]]:
        passages = "\n\n".join(delimit(f"PASSAGE id={c.id}", self._passage(c)) for c in chunks) or "(no passages were retrieved)"
        ref = delimit("REFERENCE ANSWER", query.answer) if query.answer else "(no reference answer)"
        return self.cov_prompt.messages(question=delimit("QUESTION", query.text), reference=ref, passages=passages)

    # -- one pair
    async def grade_pair(self, query: QueryItem, chunk: Chunk) -> dict:
        """Judge one pair with every model x sample; majority vote. Raises LLMError."""
        if not chunk.text.strip():
            return self._record(query.id, chunk.id, 0, [], "empty chunk: graded 0 without a call", "rule",
                                self.rel_prompt.id)
        votes, reasons = [], []
        messages = self.relevance_messages(query, chunk)
        for llm in self.llms:
            for s in range(self.options.samples):
                a = await llm.ask(messages, RelevanceAnswer, stage="judge", max_tokens=self.options.max_tokens,
                                  temperature=self._temperature(llm), sample=s)
                votes.append(a.grade)
                reasons.append(a)
        return self._from_votes(query.id, chunk.id, votes, reasons, self.rel_prompt.id)

    async def grade_batch(self, query: QueryItem, chunks: Sequence[Chunk]) -> list[dict]:
        """Judge several chunks of one query per call; ids the answer misses go pointwise."""
        live = [c for c in chunks if c.text.strip()]
        out = [self._record(query.id, c.id, 0, [], "empty chunk: graded 0 without a call", "rule",
                            self.batch_prompt.id) for c in chunks if not c.text.strip()]
        if not live:
            return out
        votes: dict[str, list[int]] = {c.id: [] for c in live}
        reasons: dict[str, list[Any]] = {c.id: [] for c in live}
        missing: set[str] = set()
        messages = self.batch_messages(query, live)
        for llm in self.llms:
            for s in range(self.options.samples):
                a = await llm.ask(messages, BatchAnswer, stage="judge",
                                  max_tokens=self.options.max_tokens * len(live),
                                  temperature=self._temperature(llm), sample=s)
                got: dict[str, BatchItem] = {}
                for item in a.judgments:
                    if item.chunk_id in votes and item.chunk_id not in got:
                        got[item.chunk_id] = item
                for cid in votes:
                    if cid in got:
                        votes[cid].append(got[cid].grade)
                        reasons[cid].append(got[cid])
                    else:
                        missing.add(cid)
        by_id = {c.id: c for c in live}
        for cid in votes:
            if cid in missing:  # the batch answer left it out (or said it twice): ask about it alone
                self.batch_fallbacks += 1
                try:
                    out.append(await self.grade_pair(query, by_id[cid]))
                except LLMError as e:
                    out.append(error_record(query.id, cid, e, self.model_names))
            else:
                out.append(self._from_votes(query.id, cid, votes[cid], reasons[cid], self.batch_prompt.id))
        return out

    async def coverage(self, query: QueryItem, chunks: Sequence[Chunk]) -> dict:
        llm = self.llms[0]
        a = await llm.ask(self.coverage_messages(query, chunks), CoverageAnswer, stage="coverage",
                          max_tokens=self.options.max_tokens * 2)
        known = {c.id for c in chunks}
        nuggets = []
        for n in a.nuggets:
            ids = [i for i in n.chunk_ids if i in known]
            support = n.support if (ids or n.support == "not_support") else "not_support"
            nuggets.append({"text": n.text, "vital": n.vital, "support": support, "chunk_ids": ids})
        return {"query_id": query.id, "coverage": coverage_label(nuggets), "nuggets": nuggets,
                "scores": nugget_scores(nuggets), "chunk_ids": [c.id for c in chunks], "status": "ok",
                "error": None, "model": llm.config.model, "prompt": self.cov_prompt.id}

    # -- helpers
    @property
    def model_names(self) -> str:
        return ",".join(llm.config.model for llm in self.llms)

    def _temperature(self, llm: LLM) -> float:
        if self.options.samples > 1:
            return max(llm.config.temperature, self.options.sample_temperature)
        return llm.config.temperature

    def _from_votes(self, qid: str, cid: str, votes: list[int], answers: list[Any], prompt: str) -> dict:
        grade = majority(votes)
        chosen = next(a for a, v in zip(answers, votes) if v == grade)
        reasoning = f"intent: {chosen.intent}\nmatch: {chosen.match}\ntrust: {chosen.trust}"
        return self._record(qid, cid, grade, votes, reasoning, "llm", prompt)

    def _record(self, qid: str, cid: str, grade: int, votes: list[int], reasoning: str, decided_by: str,
                prompt: str) -> dict:
        return {"query_id": qid, "chunk_id": cid, "grade": grade, "reasoning": reasoning, "status": "ok",
                "error": None, "model": self.model_names, "prompt": prompt, "samples": votes,
                "decided_by": decided_by, "truncated": cid in self.truncated}


def error_record(qid: str, cid: str, e: LLMError, model: str) -> dict:
    return {"query_id": qid, "chunk_id": cid, "grade": None, "reasoning": None, "status": "error",
            "error": e.reason, "model": model, "prompt": None, "samples": [], "decided_by": None}


# ---------------------------------------------------------------------------------- driver


def plan_pairs(queries: Sequence[QueryItem], chunks: Mapping[str, Chunk], run, depth: int,
               keep: Mapping[str, Mapping[str, int]] | None = None):
    """The (query, chunk) pairs to judge: the top ``depth`` of each query in the run, minus pairs
    already labelled in ``keep``. Run chunk ids missing from the chunks file are an error."""
    ranked = run.ranked()
    keep = keep or {}
    qmap = {q.id: q for q in queries}
    missing_queries = [q for q in ranked if q not in qmap]
    pairs, kept, per_query = [], [], {}
    unknown = []
    for qid, docs in ranked.items():
        if qid not in qmap:
            continue
        top = [d for d, _ in docs[:depth]]
        per_query[qid] = top
        for cid in top:
            if cid not in chunks:
                unknown.append((qid, cid))
            elif cid in keep.get(qid, {}):
                kept.append((qid, cid))
            else:
                pairs.append((qid, cid))
    if unknown:
        qid, cid = unknown[0]
        raise InputError(f"the run lists chunk {cid!r} (query {qid!r}) that is not in the chunks file; "
                         f"{len(unknown)} such pair(s). Judge against the chunks the run was made from")
    return pairs, kept, per_query, missing_queries


async def judge_run(queries: Sequence[QueryItem], chunks: Sequence[Chunk] | Mapping[str, Chunk], run,
                    llms: Sequence[LLM], output: str | Path, *, options: JudgeOptions | None = None,
                    keep=None, qrels_out: str | Path | None = None,
                    coverage_out: str | Path | None = None) -> JudgeSummary:
    """Judge the top of ``run``; write judgments (and qrels, coverage) and return a summary."""
    from ..data.io import coerce_qrels, coerce_run
    options = options or JudgeOptions()
    run = coerce_run(run)
    chunk_map = dict(chunks) if isinstance(chunks, Mapping) else {c.id: c for c in chunks}
    keep_dict = coerce_qrels(keep).to_dict() if keep is not None else {}
    pairs, kept, per_query, unknown_queries = plan_pairs(queries, chunk_map, run, options.depth, keep_dict)
    if unknown_queries:
        print(f"warning: {len(unknown_queries)} run queries are not in the queries file and are not judged "
              f"(first: {unknown_queries[0]!r})", file=sys.stderr)
    qmap = {q.id: q for q in queries}
    judge = Judge(llms, options)
    summary = JudgeSummary(pairs=len(pairs) + len(kept), kept=len(kept))

    def on_error(item, e: LLMError):
        if options.batch > 1:
            return [error_record(item[0], cid, e, judge.model_names) for cid in item[1]]
        return error_record(item[0], item[1], e, judge.model_names)

    if options.batch > 1:
        groups = []
        by_query: dict[str, list[str]] = {}
        for qid, cid in pairs:
            by_query.setdefault(qid, []).append(cid)
        for qid, cids in by_query.items():
            for i in range(0, len(cids), options.batch):
                groups.append((qid, tuple(cids[i:i + options.batch])))
        counts = await _run_batches(judge, groups, qmap, chunk_map, output, on_error, llms[0], options)
    else:
        async def work(item):
            qid, cid = item
            return await judge.grade_pair(qmap[qid], chunk_map[cid])
        counts = await run_items(llms[0], pairs, key=lambda p: pair_key(*p),
                                 record_key=lambda r: pair_key(r["query_id"], r["chunk_id"]), work=work,
                                 on_error=on_error, output=output, stage="judge", quiet=options.quiet)
    summary.skipped_done = counts["skipped"]

    records = latest_records(output, lambda r: pair_key(r["query_id"], r["chunk_id"])) if Path(output).exists() else {}
    judged = [r for r in records.values() if r["status"] == "ok"]
    summary.judged = len(judged)
    summary.errors = sum(1 for r in records.values() if r["status"] != "ok")
    summary.by_rule = sum(1 for r in judged if r.get("decided_by") == "rule")
    summary.grades = Counter(r["grade"] for r in judged)
    multi = [r for r in judged if len(r.get("samples") or []) > 1]
    if multi:
        summary.sample_disagreement = sum(1 for r in multi if len(set(r["samples"])) > 1) / len(multi)
    summary.truncated = len(judge.truncated)
    summary.batch_fallbacks = judge.batch_fallbacks

    if qrels_out is not None:
        write_union_qrels(qrels_out, judged, keep_dict)
    if coverage_out is not None:
        cov_items = [qmap[q] for q in per_query]

        async def cover(q: QueryItem):
            return await judge.coverage(q, [chunk_map[c] for c in per_query[q.id]])

        def cov_error(q: QueryItem, e: LLMError):
            return {"query_id": q.id, "coverage": None, "nuggets": [], "status": "error", "error": e.reason,
                    "model": llms[0].config.model, "prompt": judge.cov_prompt.id}
        await run_items(llms[0], cov_items, key=lambda q: q.id, record_key=lambda r: r["query_id"], work=cover,
                        on_error=cov_error, output=coverage_out, stage="coverage", quiet=options.quiet)
        cov = latest_records(coverage_out, lambda r: r["query_id"])
        summary.coverage = Counter(r["coverage"] if r["status"] == "ok" else "error" for r in cov.values())
    summary.usage = "; ".join(f"{llm.config.model}: {llm.usage.summary()}" for llm in llms)
    return summary


async def _run_batches(judge, groups, qmap, chunk_map, output, on_error, llm, options):
    """Batches write several records per item; resume skips a batch only when all its pairs are done."""
    from .journal import ResumableWriter
    with ResumableWriter(output, lambda r: pair_key(r["query_id"], r["chunk_id"])) as writer:
        todo = [g for g in groups if not all(pair_key(g[0], c) in writer.done for c in g[1])]
        counts = {"skipped": sum(len(g[1]) for g in groups) - sum(len(g[1]) for g in todo)}
        sem = asyncio.Semaphore(llm.config.concurrency * 2)
        from .runner import progress_bar
        bar = progress_bar(sum(len(g[1]) for g in groups), counts["skipped"], "judge", options.quiet)

        async def one(group):
            async with sem:
                qid, cids = group
                try:
                    records = await judge.grade_batch(qmap[qid], [chunk_map[c] for c in cids])
                except LLMError as e:
                    records = on_error(group, e)
                for r in records:
                    writer.write(r)
                if bar is not None:
                    bar.update(len(records))
        try:
            await asyncio.gather(*(one(g) for g in todo))
        finally:
            if bar is not None:
                bar.close()
    return counts


def write_union_qrels(path: str | Path, judged: Sequence[Mapping], keep: Mapping[str, Mapping[str, int]]) -> int:
    """TREC qrels: every human label from ``keep``, plus the judge's grades for the other pairs."""
    rows: dict[tuple[str, str], int] = {}
    for r in judged:
        rows[(r["query_id"], r["chunk_id"])] = int(r["grade"])
    for q, docs in keep.items():
        for d, g in docs.items():
            rows[(q, d)] = int(g)  # a person's label always wins
    with open(path, "w", encoding="utf-8") as f:
        for (q, d), g in sorted(rows.items()):
            f.write(f"{q} 0 {d} {g}\n")
    return len(rows)


def build_llms(config: LLMConfig, models: Sequence[str] | None) -> list[LLM]:
    names = list(models) if models else [config.model]
    return [LLM(dataclasses.replace(config, model=m)) for m in names]
