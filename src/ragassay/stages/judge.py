"""``judge``: graded 0-3 relevance of retrieved chunks, and per-query coverage of the answer.

Each stage step is "build messages, ask for a model, write a record": the LLM layer does the
calling, retrying, caching and resuming. A pair that cannot be judged becomes a ``status: error``
record with the reason; it never becomes grade 0.
"""

from __future__ import annotations

import dataclasses
import random
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..data.records import Chunk, Coverage, Judgment
from ..errors import InputError
from ..llm import LLM, LLMConfig, LLMError
from ..llm.prompts import clip, delimit, load_prompt
from .engine import Call, Estimate, OutputStore, Stage, StageRun, WorkItem, estimate, fingerprint, run_stage

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
    """Queries as ``{id, text}`` lines or TSV, or a questions.jsonl from generate (with its answers)."""
    from ..data.io import check_id, iter_jsonl, read_bytes_checked, read_queries
    data = read_bytes_checked(path).lstrip()
    if not data.startswith(b"{"):
        return [QueryItem(q, t) for q, t in read_queries(path).items()]
    items, seen = [], set()
    for no, obj in iter_jsonl(path):
        qid = obj.get("id", obj.get("query_id", obj.get("_id", obj.get("qid"))))
        text = obj.get("question", obj.get("query", obj.get("text")))
        if qid is None or not isinstance(text, str) or not text.strip():
            raise InputError("each line needs an id and a question/query/text", path, no)
        qid = check_id(qid, "query id", path, no)
        if qid in seen:
            raise InputError(f"query id {qid!r} appears twice", path, no)
        seen.add(qid)
        answer = obj.get("answer")
        items.append(QueryItem(qid, text, answer if isinstance(answer, str) else None))
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


class Judge:
    """The prompts and how answers become records; knows the models by their configs only, so the
    same object plans a dry run (no endpoint) and a real run."""

    def __init__(self, configs: Sequence[LLMConfig], options: JudgeOptions | None = None):
        if not configs:
            raise ValueError("judge needs at least one model")
        self.configs = list(configs)
        self.options = options or JudgeOptions()
        self.rel_prompt = load_prompt("judge_relevance")
        self.batch_prompt = load_prompt("judge_relevance_batch")
        self.cov_prompt = load_prompt("judge_coverage")
        self.truncated: set[str] = set()
        self.batch_fallbacks = 0

    @property
    def model_names(self) -> str:
        return ",".join(c.model or "" for c in self.configs)

    # -- text handling
    def _passage(self, chunk: Chunk) -> str:
        text, cut = clip(chunk.text, self.options.max_chunk_chars)  # the prompt says where it was cut
        if cut and chunk.id not in self.truncated:
            self.truncated.add(chunk.id)
            print(f"warning: chunk {chunk.id!r} has {len(chunk.text)} characters; judged on its first "
                  f"{self.options.max_chunk_chars}", file=sys.stderr)
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

    # -- keys and calls
    def temperature(self, model: int) -> float:
        base = self.configs[model].temperature
        return max(base, self.options.sample_temperature) if self.options.samples > 1 else base

    def settings(self) -> dict[str, Any]:
        """The answer-changing parameters every key includes."""
        o = self.options
        return {"models": [c.model for c in self.configs], "samples": o.samples,
                "temperatures": [self.temperature(i) for i in range(len(self.configs))],
                "max_chunk_chars": o.max_chunk_chars, "max_tokens": o.max_tokens}

    def pair_fingerprint(self, query: QueryItem, chunk: Chunk, prompt_id: str) -> str:
        return fingerprint("judge", prompt_id, query.text, chunk.title, chunk.text, self.settings())

    def relevance_calls(self, messages: list[dict[str, str]], response_model: type[BaseModel],
                        max_tokens: int) -> list[Call]:
        return [Call.of(m, messages, response_model, "judge", max_tokens, self.temperature(m), sample=s)
                for m in range(len(self.configs)) for s in range(self.options.samples)]

    def from_votes(self, qid: str, cid: str, votes: list[int], answers: list[Any], prompt: str, key: str) -> dict:
        grade = majority(votes)
        chosen = next(a for a, v in zip(answers, votes) if v == grade)
        reasoning = f"intent: {chosen.intent}\nmatch: {chosen.match}\ntrust: {chosen.trust}"
        return self.record(qid, cid, grade, votes, reasoning, "llm", prompt, key)

    def record(self, qid: str, cid: str, grade: int, votes: list[int], reasoning: str, decided_by: str,
               prompt: str, key: str) -> dict:
        return {"query_id": qid, "chunk_id": cid, "grade": grade, "reasoning": reasoning, "status": "ok",
                "error": None, "model": self.model_names, "prompt": prompt, "samples": votes,
                "decided_by": decided_by, "truncated": cid in self.truncated, "key": key}

    def error_record(self, qid: str, cid: str, e: LLMError, key: str) -> dict:
        return {"query_id": qid, "chunk_id": cid, "grade": None, "reasoning": None, "status": "error",
                "error": e.reason, "model": self.model_names, "prompt": None, "samples": [], "decided_by": None,
                "key": key}


@dataclass
class _Pair:
    query: QueryItem
    chunk: Chunk
    key: str


class RelevanceStage(Stage):
    """Grades 0-3, one item per pair (pointwise) or per group of pairs of one query (--batch)."""

    name = "judge"
    record_model = Judgment

    def __init__(self, judge: Judge):
        self.judge = judge

    def identity(self, record: dict) -> str:
        return pair_key(record["query_id"], record["chunk_id"])

    def plan(self, pairs: Sequence[tuple[QueryItem, Chunk]], done: Callable[[str], bool]) -> list[WorkItem]:
        j, o = self.judge, self.judge.options
        if o.batch <= 1:
            items = []
            for q, c in pairs:
                key = j.pair_fingerprint(q, c, j.rel_prompt.id)
                calls = [] if not c.text.strip() else j.relevance_calls(j.relevance_messages(q, c), RelevanceAnswer,
                                                                         o.max_tokens)
                items.append(WorkItem(key, calls, [_Pair(q, c, key)]))
            return items
        # batches are formed from the pairs not yet done, so a resumed run asks only what is missing
        by_query: dict[str, list[_Pair]] = {}
        queries: dict[str, QueryItem] = {}
        items = []
        for q, c in pairs:
            p = _Pair(q, c, j.pair_fingerprint(q, c, j.batch_prompt.id))
            if done(p.key):  # kept in the plan (its record is this run's too), but never regrouped
                items.append(WorkItem(p.key, [], [p]))
                continue
            by_query.setdefault(q.id, []).append(p)
            queries[q.id] = q
        for qid, ps in by_query.items():
            for p in [p for p in ps if not p.chunk.text.strip()]:  # empty chunks: a rule, no call
                items.append(WorkItem(p.key, [], [p]))
            live = [p for p in ps if p.chunk.text.strip()]
            for i in range(0, len(live), o.batch):
                group = live[i:i + o.batch]
                # shown in an order fixed by the group's content, not the run's ranking, so the rank a
                # retriever gave a chunk does not become a position effect on its grade
                random.Random(fingerprint(*[p.key for p in group])).shuffle(group)
                messages = j.batch_messages(queries[qid], [p.chunk for p in group])
                calls = j.relevance_calls(messages, BatchAnswer, o.max_tokens * len(group))
                items.append(WorkItem(fingerprint(*[p.key for p in group]), calls, group,
                                      record_keys=[p.key for p in group]))
        return items

    async def finish(self, item: WorkItem, answers: list[BaseModel], llms: Sequence[LLM]) -> list[dict]:
        j = self.judge
        pairs: list[_Pair] = item.payload
        if not item.calls:
            p = pairs[0]
            prompt = j.rel_prompt.id if j.options.batch <= 1 else j.batch_prompt.id
            return [j.record(p.query.id, p.chunk.id, 0, [], "empty chunk: graded 0 without a call", "rule",
                             prompt, p.key)]
        if len(pairs) == 1 and j.options.batch <= 1:
            p = pairs[0]
            return [j.from_votes(p.query.id, p.chunk.id, [a.grade for a in answers], answers, j.rel_prompt.id,
                                 p.key)]
        votes: dict[str, list[int]] = {p.chunk.id: [] for p in pairs}
        reasons: dict[str, list[Any]] = {p.chunk.id: [] for p in pairs}
        missing: set[str] = set()
        for a in answers:
            seen = Counter(it.chunk_id for it in a.judgments)
            got = {it.chunk_id: it for it in a.judgments if seen[it.chunk_id] == 1}
            for cid in votes:
                if cid in got:
                    votes[cid].append(got[cid].grade)
                    reasons[cid].append(got[cid])
                else:
                    missing.add(cid)  # left out, or graded twice (which grade would be meant?)
        out = []
        for position, p in enumerate(pairs):
            cid = p.chunk.id
            if cid not in missing:
                record = j.from_votes(p.query.id, cid, votes[cid], reasons[cid], j.batch_prompt.id, p.key)
                out.append({**record, "batch_position": position, "batch_size": len(pairs)})
                continue
            # the batch answer missed it: ask about it alone (calls beyond the plan, counted in usage)
            j.batch_fallbacks += 1
            calls = j.relevance_calls(j.relevance_messages(p.query, p.chunk), RelevanceAnswer, j.options.max_tokens)
            try:
                alone = [await c.ask(llms) for c in calls]
            except LLMError as e:
                out.append(j.error_record(p.query.id, cid, e, p.key))
                continue
            out.append(j.from_votes(p.query.id, cid, [a.grade for a in alone], alone, j.rel_prompt.id, p.key))
        return out

    def error_records(self, item: WorkItem, error: LLMError) -> list[dict]:
        return [self.judge.error_record(p.query.id, p.chunk.id, error, p.key) for p in item.payload]


class CoverageStage(Stage):
    """Per query and run: do the retrieved chunks hold what the answer needs? One record per
    (query, run); its key includes the retrieved ids and their texts, so another run's coverage
    is never reused."""

    name = "coverage"
    record_model = Coverage

    def __init__(self, judge: Judge, run_name: str):
        self.judge = judge
        self.run_name = run_name

    def identity(self, record: dict) -> str:
        return f"{record['query_id']}\t{record.get('run')}"

    def plan(self, retrieved: Sequence[tuple[QueryItem, list[Chunk]]]) -> list[WorkItem]:
        j = self.judge
        items = []
        for q, chunks in retrieved:
            key = fingerprint("coverage", j.cov_prompt.id, self.run_name, q.text, q.answer,
                              [(c.id, c.title, c.text) for c in chunks], j.configs[0].model,
                              j.options.max_chunk_chars, j.options.max_tokens)
            call = Call.of(0, j.coverage_messages(q, chunks), CoverageAnswer, "coverage", j.options.max_tokens * 2)
            items.append(WorkItem(key, [call], (q, chunks)))
        return items

    def _base(self, item: WorkItem) -> dict:
        q, chunks = item.payload
        return {"query_id": q.id, "run": self.run_name, "chunk_ids": [c.id for c in chunks]}

    async def finish(self, item: WorkItem, answers: list[BaseModel], llms: Sequence[LLM]) -> list[dict]:
        q, chunks = item.payload
        known = {c.id for c in chunks}
        nuggets = []
        for n in answers[0].nuggets:
            ids = [i for i in n.chunk_ids if i in known]
            support = n.support if (ids or n.support == "not_support") else "not_support"
            nuggets.append({"text": n.text, "vital": n.vital, "support": support, "chunk_ids": ids})
        return [{**self._base(item), "coverage": coverage_label(nuggets), "nuggets": nuggets,
                 "scores": nugget_scores(nuggets), "status": "ok", "error": None,
                 "model": self.judge.configs[0].model, "prompt": self.judge.cov_prompt.id, "key": item.key}]

    def error_records(self, item: WorkItem, error: LLMError) -> list[dict]:
        return [{**self._base(item), "coverage": None, "nuggets": [], "status": "error", "error": error.reason,
                 "model": self.judge.configs[0].model, "prompt": self.judge.cov_prompt.id, "key": item.key}]


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


@dataclass
class JudgePlan:
    """Everything a judge run will do, computed without an endpoint."""

    judge: Judge
    relevance: RelevanceStage
    relevance_items: list[WorkItem]
    relevance_store: OutputStore
    coverage: CoverageStage | None
    coverage_items: list[WorkItem]
    coverage_store: OutputStore | None
    pairs: int
    kept: int
    keep: dict
    unknown_queries: list[str]

    def estimate(self) -> Estimate:
        def done(store):
            return lambda it: all(store.done(k) for k in it.record_keys)
        est = estimate(self.relevance_items, done(self.relevance_store), self.judge.configs)
        if self.coverage is not None:
            est = est.add(estimate(self.coverage_items, done(self.coverage_store), self.judge.configs[:1]))
        return est


def plan_judge(queries: Sequence[QueryItem], chunks: Sequence[Chunk] | Mapping[str, Chunk], run,
               configs: Sequence[LLMConfig], output: str | Path, *, options: JudgeOptions | None = None,
               keep=None, coverage_out: str | Path | None = None) -> JudgePlan:
    """Pure: inputs and what ``output`` already holds -> the items and calls of a judge run."""
    from ..data.io import coerce_qrels, coerce_run
    options = options or JudgeOptions()
    run = coerce_run(run)
    chunk_map = dict(chunks) if isinstance(chunks, Mapping) else {c.id: c for c in chunks}
    keep_dict = coerce_qrels(keep).to_dict() if keep is not None else {}
    pairs, kept, per_query, unknown_queries = plan_pairs(queries, chunk_map, run, options.depth, keep_dict)
    qmap = {q.id: q for q in queries}
    judge = Judge(configs, options)
    rel = RelevanceStage(judge)
    store = OutputStore(output, rel.identity)
    items = rel.plan([(qmap[q], chunk_map[c]) for q, c in pairs], store.done)
    cov = cov_store = None
    cov_items: list[WorkItem] = []
    if coverage_out is not None:
        cov = CoverageStage(judge, run.name)
        cov_store = OutputStore(coverage_out, cov.identity)
        cov_items = cov.plan([(qmap[q], [chunk_map[c] for c in per_query[q]]) for q in per_query])
    return JudgePlan(judge, rel, items, store, cov, cov_items, cov_store, len(pairs) + len(kept), len(kept),
                     keep_dict, unknown_queries)


@dataclass
class JudgeResult:
    """What a judge run did, for this run's pairs only (other records in the files are not counted)."""

    relevance: StageRun
    coverage: StageRun | None
    pairs: int
    kept: int
    truncated: int
    batch_fallbacks: int
    usage: str = ""

    @property
    def records(self) -> list[dict]:
        return self.relevance.records

    @property
    def grades(self) -> Counter:
        return Counter(r["grade"] for r in self.records if r["status"] == "ok")

    @property
    def errors(self) -> int:
        return self.relevance.errors + (self.coverage.errors if self.coverage else 0)

    @property
    def sample_disagreement(self) -> float | None:
        multi = [r for r in self.records if r["status"] == "ok" and len(r.get("samples") or []) > 1]
        return sum(1 for r in multi if len(set(r["samples"])) > 1) / len(multi) if multi else None

    @property
    def exit_code(self) -> int:
        codes = [self.relevance.exit_code] + ([self.coverage.exit_code] if self.coverage else [])
        if all(c == 0 for c in codes):
            return 0
        ok = self.relevance.ok + (self.coverage.ok if self.coverage else 0)
        return 1 if ok == 0 else 3

    def to_dict(self) -> dict[str, Any]:
        cov = Counter(r["coverage"] for r in self.coverage.records if r["status"] == "ok") if self.coverage else None
        return {"kind": "judge", "version": 1, "pairs": self.pairs, "kept": self.kept,
                "judged": self.relevance.ok, "errors": self.errors,
                "already_done": self.relevance.skipped_done,
                "decided_by_rule": sum(1 for r in self.records if r.get("decided_by") == "rule"),
                "grades": {str(g): self.grades.get(g, 0) for g in range(4)},
                "coverage": None if cov is None else {k: cov.get(k, 0) for k in ("FULL", "PARTIAL", "NONE")},
                "sample_disagreement": self.sample_disagreement, "truncated": self.truncated,
                "batch_fallbacks": self.batch_fallbacks,
                "error_reasons": dict((self.relevance.error_reasons + (self.coverage.error_reasons if self.coverage
                                                                        else Counter())).most_common(5)),
                "usage": self.usage}

    def text(self) -> str:
        d = self.to_dict()
        lines = [f"pairs: {self.pairs} ({self.kept} kept from --keep, {d['already_done']} already done, "
                 f"{d['decided_by_rule']} decided by rule, {self.relevance.errors} errors)",
                 "grades: " + ", ".join(f"{g}: {n}" for g, n in d["grades"].items())]
        if self.coverage is not None:
            lines.append("coverage: " + ", ".join(f"{k}: {v}" for k, v in d["coverage"].items())
                         + (f", errors: {self.coverage.errors}" if self.coverage.errors else ""))
        if self.sample_disagreement is not None:
            lines.append(f"samples disagreed on {self.sample_disagreement:.1%} of judged pairs")
        if self.truncated:
            lines.append(f"{self.truncated} chunks were cut to the length budget")
        if self.batch_fallbacks:
            lines.append(f"{self.batch_fallbacks} pairs fell back to pointwise after a batch answer missed them")
        for stage in (self.relevance, self.coverage):
            if stage is not None and stage.errors:
                lines.append(stage.failure_text())
        if self.usage:
            lines.append(self.usage)
        return "\n".join(lines)


async def execute_judge(plan: JudgePlan, llms: Sequence[LLM], *, qrels_out: str | Path | None = None) -> JudgeResult:
    """Run a plan made by :func:`plan_judge` with one LLM per config; write qrels when asked."""
    if plan.unknown_queries:
        print(f"warning: {len(plan.unknown_queries)} run queries are not in the queries file and are not judged "
              f"(first: {plan.unknown_queries[0]!r})", file=sys.stderr)
    options = plan.judge.options
    concurrency = llms[0].config.concurrency if llms else 8
    rel = await run_stage(plan.relevance, plan.relevance_items, llms, plan.relevance_store,
                          concurrency=concurrency, quiet=options.quiet)
    if qrels_out is not None:
        from ..data.io import write_qrels
        union: dict[str, dict[str, int]] = {}
        for r in rel.records:
            if r["status"] == "ok":
                union.setdefault(r["query_id"], {})[r["chunk_id"]] = int(r["grade"])
        for q, docs in plan.keep.items():
            union.setdefault(q, {}).update(docs)  # a person's label always wins
        write_qrels(qrels_out, union)
    cov = None
    if plan.coverage is not None:
        cov = await run_stage(plan.coverage, plan.coverage_items, llms[:1], plan.coverage_store,
                              concurrency=concurrency, quiet=options.quiet)
    usage = "; ".join(f"{llm.config.model}: {llm.usage.summary()}" for llm in llms)
    return JudgeResult(rel, cov, plan.pairs, plan.kept, len(plan.judge.truncated), plan.judge.batch_fallbacks, usage)


async def judge_run(queries: Sequence[QueryItem], chunks: Sequence[Chunk] | Mapping[str, Chunk], run,
                    llms: Sequence[LLM], output: str | Path, *, options: JudgeOptions | None = None,
                    keep=None, qrels_out: str | Path | None = None,
                    coverage_out: str | Path | None = None) -> JudgeResult:
    """Judge the top of ``run``; write judgments (and qrels, coverage) and return what was done."""
    plan = plan_judge(queries, chunks, run, [llm.config for llm in llms], output, options=options, keep=keep,
                      coverage_out=coverage_out)
    return await execute_judge(plan, llms, qrels_out=qrels_out)


def build_llms(config: LLMConfig, models: Sequence[str] | None) -> list[LLM]:
    return [LLM(c) for c in model_configs(config, models)]


def model_configs(config: LLMConfig, models: Sequence[str] | None) -> list[LLMConfig]:
    """One config per model of a jury (``--model`` repeated), the rest shared."""
    names = list(models) if models else [config.model]
    return [dataclasses.replace(config, model=m) for m in names]
