"""A judge run from plan to files: :func:`execute_judge` runs a plan's relevance items, writes the
qrels with their origin (who graded, on which scale, from which pool), then plans and runs coverage
with this run's grades; :class:`JudgeJob` is the same run for the scaffold, with its options fitted
to the server's context."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...data.io import coerce_run, write_qrels
from ...data.joins import Join
from ...data.memory import give_back_freed
from ...data.origin import JUDGE_RELEVANT_FROM, JUDGE_SCALE, Labeller, Origin, endpoint_host, merged, read_origin
from ...data.records import Chunk
from ...llm import LLM, LLMConfig
from ...llm.usage import estimate_tokens
from ...runtime.engine import Estimate, run_stage
from ...runtime.scaffold import StageJob
from ..queries import QueryItem
from .options import JudgeOptions, fit_to_context
from .plan import JudgePlan, RunTop, plan_judge
from .prompt import Judge
from .result import JudgeResult


async def execute_judge(
    plan: JudgePlan, llms: Sequence[LLM], *, qrels_out: str | Path | None = None, announce_unknown: bool = True
) -> JudgeResult:
    """Run a plan made by :func:`plan_judge` with one LLM per config; write qrels when asked.
    ``announce_unknown``: warn of run queries missing from the queries (a job has said it with counts)."""
    if plan.unknown_queries and announce_unknown:
        print(
            f"warning: {len(plan.unknown_queries)} run queries are not in the queries file and are not judged "
            f"(first: {plan.unknown_queries[0]!r})",
            file=sys.stderr,
        )
    options = plan.judge.options
    concurrency = llms[0].config.concurrency if llms else 8
    rel = await run_stage(
        plan.relevance, plan.relevance_items, llms, plan.relevance_store, concurrency=concurrency, quiet=options.quiet
    )
    if rel.pending:  # judgments wait for a batch: no qrels yet, and coverage (whose sources use them) waits too
        return JudgeResult(
            rel,
            None,
            plan.pairs,
            plan.kept,
            len(plan.judge.truncated),
            plan.judge.batch_fallbacks,
            *_usage(llms),
            coverage_waits=plan.coverage is not None,
        )
    if qrels_out is not None:
        # the qrels say what the judgments file says: every pair judged into it, by this run or an
        # earlier one (another retriever's run judged into the same files), and people's labels
        union: dict[str, dict[str, int]] = {}
        graders: set[tuple[str, str]] = set()
        for r in plan.relevance_store.output_records():
            if r["status"] == "ok":
                union.setdefault(r["query_id"], {})[r["chunk_id"]] = int(r["grade"])
                graders.add((r["model"], r["prompt"]))
        for q, docs in plan.keep.items():
            union.setdefault(q, {}).update(docs)  # a person's label always wins
        before = read_origin(qrels_out) if Path(qrels_out).exists() else None  # earlier runs judged into these
        write_qrels(qrels_out, union, origin=_qrels_origin(graders, llms, plan, before))
    cov = None
    if plan.coverage is not None and plan.coverage_store is not None:
        plan.plan_coverage(plan.relevance_store.records())  # with this run's grades too
        cov = await run_stage(
            plan.coverage,
            plan.coverage_items,
            llms[:1],
            plan.coverage_store,
            concurrency=concurrency,
            quiet=options.quiet,
        )
    return JudgeResult(
        rel, cov, plan.pairs, plan.kept, len(plan.judge.truncated), plan.judge.batch_fallbacks, *_usage(llms)
    )


def _qrels_origin(graders: set[tuple[str, str]], llms: Sequence[LLM], plan: JudgePlan, before: Any = None):
    """Who made the qrels judge writes: each (model, prompt) that graded a pair in the judgments
    file (the endpoint's host for this run's models), and whoever made the --keep labels; on the
    judge's scale; and the pool: this run to its depth, with the runs judged into the file before."""
    hosts = {llm.config.model: endpoint_host(llm.config.base_url) for llm in llms}
    one_host = next(iter(set(hosts.values()))) if len(set(hosts.values())) == 1 else None  # a jury at one endpoint
    mine = Origin(
        labellers=tuple(
            Labeller(by="model", name=m, prompt=p, endpoint=hosts.get(m, one_host))
            for m, p in sorted(graders, key=lambda g: (str(g[0]), str(g[1])))
        )
    )
    earlier = tuple(before.pool or ()) if before is not None and before.command == "judge" else ()
    pool = tuple({(p.name, p.digest, p.depth): p for p in (*earlier, *([plan.pool] if plan.pool else []))}.values())
    mine = mine.replace(scale=JUDGE_SCALE, relevant_from=JUDGE_RELEVANT_FROM, pool=pool or None)
    if not plan.keep:
        return merged(mine, command="judge")
    labels = (
        plan.keep_origin
        if plan.keep_origin is not None and plan.keep_origin.known
        else Origin(labellers=(Labeller(by="unknown", name="--keep labels of unknown origin"),))
    )
    return merged(mine, labels, command="judge")


def _usage(llms: Sequence[LLM]) -> tuple[dict[str, Any], str]:
    """What each juror used: as numbers, and as the line the command prints (a run's model is always
    named: the config refuses none)."""
    return (
        {llm.config.model or "": llm.usage.to_dict() for llm in llms},
        "; ".join(f"{llm.config.model}: {llm.usage.summary()}" for llm in llms),
    )


async def judge_run(
    queries: Sequence[QueryItem],
    chunks: Sequence[Chunk] | Mapping[str, Chunk],
    run,
    llms: Sequence[LLM],
    output: str | Path,
    *,
    options: JudgeOptions | None = None,
    keep=None,
    qrels_out: str | Path | None = None,
    coverage_out: str | Path | None = None,
) -> JudgeResult:
    """Judge the top of ``run``; write judgments (and qrels, coverage) and return what was done."""
    plan = plan_judge(
        queries,
        chunks,
        run,
        [llm.config for llm in llms],
        output,
        options=options,
        keep=keep,
        coverage_out=coverage_out,
        with_coverage=False,
    )  # (planned once the grades are in)
    return await execute_judge(plan, llms, qrels_out=qrels_out)


def build_llms(config: LLMConfig, models: Sequence[str] | None) -> list[LLM]:
    return [LLM(c) for c in model_configs(config, models)]


def model_configs(config: LLMConfig, models: Sequence[str] | None) -> list[LLMConfig]:
    """One config per model of a jury (``--model`` repeated), the rest shared."""
    names = list(models) if models else [config.model]
    return [dataclasses.replace(config, model=m) for m in names]


class JudgeJob(StageJob[JudgeResult]):
    """A judge run for the scaffold (:func:`ragassay.runtime.scaffold.run_llm_stage`): planned again
    on every round, since a batch round changes what the outputs hold."""

    def __init__(
        self,
        queries: Sequence[QueryItem],
        chunks: Mapping[str, Chunk],
        run,
        configs: Sequence[LLMConfig],
        output: str | Path,
        *,
        options: JudgeOptions,
        keep=None,
        qrels_out: str | Path | None = None,
        coverage_out: str | Path | None = None,
        sources: tuple[str | None, str | None] = (None, None),
        judge: Judge | None = None,
    ):
        """``judge``: a :class:`Judge` made for these configs and options and not used yet (the caller's,
        made to refuse a bad prompt file early), which the first plan then uses instead of making one."""
        self.queries, self.chunks, self.keep = queries, chunks, keep
        self.run = RunTop.of(coerce_run(run), options.depth, chunks)  # (the table itself is let go)
        give_back_freed()
        # the queries meet the run by id: counted, and none in common is an error before any call
        self.join = Join.of(
            "query ids",
            "the queries",
            (q.id for q in queries),
            "the run",
            self.run.top,
            sources[0],
            sources[1] or getattr(run, "source", None),
        ).require_overlap()
        self.join.warn()
        self.configs, self.output, self.options = list(configs), Path(output), options
        self.qrels_out, self.coverage_out = qrels_out, coverage_out
        self._unused_judge = judge

    def _judge(self) -> Judge:
        """The unused Judge for the current options if there is one (given, or made to count the
        prompt's tokens), else a new one: a plan's Judge counts what its run did, so each round's
        plan has its own."""
        judge, self._unused_judge = self._unused_judge, None
        if judge is None or judge.options is not self.options:
            judge = Judge(self.configs, self.options)
        return judge

    def plan(self, with_coverage: bool = True) -> JudgePlan:
        """This round's plan; ``with_coverage``: coverage planned now, from the judgments the output
        holds (an estimate), rather than by the run once its grades are in."""
        return plan_judge(
            self.queries,
            self.chunks,
            self.run,
            self.configs,
            self.output,
            options=self.options,
            keep=self.keep,
            coverage_out=self.coverage_out,
            judge=self._judge(),
            with_coverage=with_coverage,
        )

    def estimate(self) -> Estimate:
        return self.plan().estimate()

    async def execute(self, llms: Sequence[LLM]) -> JudgeResult:
        context = await llms[0].known_context() if llms else None
        fitted = fit_to_context(self.options, context, self._fixed_tokens()) if context is not None else self.options
        if fitted is not self.options:
            self.options = fitted
            if not fitted.quiet:
                print(
                    f"judge: the server's context is {context:,} tokens: chunks longer than "
                    f"{fitted.max_chunk_chars:,} characters are judged in windows of that size",
                    file=sys.stderr,
                )
        result = await execute_judge(
            self.plan(with_coverage=False), llms, qrels_out=self.qrels_out, announce_unknown=False
        )
        result.join = self.join.to_dict()
        return result

    def pending(self, result: JudgeResult) -> int:
        return result.pending

    def _fixed_tokens(self) -> int:
        """Tokens of a relevance prompt around its passage, for the longest query (an estimate)."""
        if not self.queries:
            return 0
        judge = self._unused_judge = self._judge()  # (still unused: the plan takes it)
        longest = max(self.queries, key=lambda q: len(q.text) + len(q.need_block()) + len(q.expected_block()))
        return sum(estimate_tokens(m["content"]) for m in judge.relevance_messages(longest, Chunk(id="x", text="")))
