"""A check run as the scaffold and the API drive it: its dry run (:func:`plan_check`), its result
with rates and diagnosis (:func:`check_result`), and :class:`CheckJob`, which hands a run to
:func:`ragassay.runtime.scaffold.run_llm_stage`. The grading itself is :mod:`ragassay.stages.check`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.records import AnswerItem, Chunk
from ..llm import LLM, LLMConfig
from ..runtime.engine import Estimate, OutputStore, StageRun, estimate, in_shard
from ..runtime.scaffold import StageJob
from .check import Checker, CheckOptions, check_answers
from .check_summary import summarise_checks


def plan_check(
    items: Sequence[AnswerItem],
    config: LLMConfig | None,
    output: str | Path,
    *,
    options: CheckOptions | None = None,
    chunks: Mapping[str, Chunk] | None = None,
    gold_recall: Mapping[str, float] | None = None,
) -> Estimate:
    """The dry run of :func:`check_answers`: calls, tokens and cost, offline."""
    config = config or LLMConfig()
    options = options or CheckOptions()
    checker = Checker([config], options, chunks, gold_recall)
    store = OutputStore(output, checker.identity)
    return estimate(
        checker.plan([it for it in items if in_shard(it.id, options.shard)], store.done),
        lambda w: store.done(w.key),
        [config],
    )


def check_result(
    stage_run: StageRun,
    *,
    recall: Mapping[str, float] | None = None,
    threshold: float = 0.5,
    human: Mapping[str, str] | None = None,
    by: Sequence[str] = (),
    fields: Mapping[str, dict] | None = None,
    human_origin: Any = None,
    recall_caveat: str | None = None,
) -> dict:
    """The typed result of a check run (kind ``check``): label rates with intervals, and when given,
    the retrieval/generation diagnosis (``recall``: recall@k per answer id), agreement with people
    (``human``) and breakdowns by answer fields (``by``, looked up in ``fields``)."""
    result = summarise_checks(
        stage_run.records,
        recall=recall,
        threshold=threshold,
        human=human,
        by=by,
        fields=fields,
        human_origin=human_origin,
        recall_caveat=recall_caveat,
    )
    result["error_reasons"] = dict(stage_run.error_reasons.most_common(5))
    return result


class CheckJob(StageJob[StageRun]):
    """A check run for the scaffold (:func:`ragassay.runtime.scaffold.run_llm_stage`). With no
    endpoint at all it runs on no LLM: the rules decide what they can and the other answers are
    error records that a rerun with an endpoint fills in."""

    rules_without_endpoint = True

    def __init__(
        self,
        items: Sequence[AnswerItem],
        config: LLMConfig,
        output: str | Path,
        *,
        options: CheckOptions,
        chunks: Mapping[str, Chunk] | None = None,
        gold_recall: Mapping[str, float] | None = None,
        announce: bool = True,
    ):
        self.items, self.configs, self.output = items, [config], Path(output)
        self.options, self.chunks, self.gold_recall, self.announce = options, chunks, gold_recall, announce

    def estimate(self) -> Estimate:
        return plan_check(
            self.items,
            self.configs[0],
            self.output,
            options=self.options,
            chunks=self.chunks,
            gold_recall=self.gold_recall,
        )

    async def execute(self, llms: Sequence[LLM]) -> StageRun:
        return await check_answers(
            self.items,
            llms[0] if llms else None,
            self.output,
            options=self.options,
            chunks=self.chunks,
            announce=self.announce,
            gold_recall=self.gold_recall,
        )

    def pending(self, result: StageRun) -> int:
        return result.pending
