"""``ragassay.check``: label answers correct, partial, hallucinated or abstained, as ``ragassay check``
does, with the diagnosis, the breakdown and the agreement with people that its inputs allow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from ..data.joins import Join
from ..data.records import AnswerItem
from ..errors import UsageError
from ..llm import LLM, LLMConfig
from ..runtime.engine import Estimate
from ..runtime.scaffold import Backend
from ..stages.answer_files import read_labels_origin
from ..stages.check import Checker, CheckOptions
from ..stages.check_behaviour import with_test_set
from ..stages.check_job import CheckJob, check_result
from ..stages.check_result import CheckResult
from .check_inputs import (
    Say,
    answer_items,
    diagnosis_inputs,
    on_stderr,
    people_labels,
    queries_by_text,
    say_join,
)
from .inputs import chunks_by_id, source_of
from .running import output_path, run_job, say_prompt
from .settings import backend_of, endpoint, llm_keywords, shard_of, stage_options


@overload
def check(
    answers: str | Path | Sequence[AnswerItem | dict], *, dry_run: Literal[False] = False, **keywords: Any
) -> CheckResult: ...
@overload
def check(
    answers: str | Path | Sequence[AnswerItem | dict], *, dry_run: Literal[True], **keywords: Any
) -> Estimate: ...
@overload
def check(
    answers: str | Path | Sequence[AnswerItem | dict], *, dry_run: bool, **keywords: Any
) -> CheckResult | Estimate: ...


def check(
    answers: str | Path | Sequence[AnswerItem | dict],
    *,
    output: str | Path | None = None,
    chunks: Any = None,
    run: Any = None,
    qrels: Any = None,
    depth: int = 10,
    retrieval_threshold: float = 0.5,
    human: str | Path | Mapping[str, str] | None = None,
    by: Sequence[str] | None = None,
    samples: int = 1,
    seed: int = 0,
    max_response_chars: int = 32000,
    max_context_chars: int = 12000,
    prompt: str | Path = "auto",
    model: str | Sequence[str] | None = None,
    base_url: str | None = None,
    timeout: float | None = None,
    concurrency: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    cache: str | Path | None = None,
    no_cache: bool = False,
    price_in: float | None = None,
    price_out: float | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    dry_run: bool = False,
    backend: str | Backend = "live",
    export_requests: str | Path | None = None,
    import_results: Sequence[str | Path] = (),
    poll_seconds: float = 30.0,
    shard: str | tuple[int, int] | None = None,
    quiet: bool = True,
    announce: bool = False,
    llm: LLM | None = None,
    options: CheckOptions | None = None,
    config: LLMConfig | None = None,
    join_warnings: bool = True,
    warn: Say = on_stderr,
    query_ids: Mapping[str, str] | None = None,
    queries: str | Path | Mapping[str, str] | None = None,
    test_set: str | Path | None = None,
    **llm_settings: Any,
) -> CheckResult | Estimate:
    """Label answers correct / partial / hallucinated / abstained: ``ragassay check`` as a call.

    ``test_set``: the question set the answers answer (generate's questions): each answer takes its
    question's ``answerable`` and ``premise`` by id (counted), so that an abstention on an unanswerable
    question is correct and a false premise accepted is not (see stages/check_behaviour.py).

    ``answers`` may be a file (ragassay, RAGAS or DeepEval fields) or a list of dicts or
    AnswerItems; ``chunks``, ``run`` and ``qrels`` files or objects, ``human`` a file or an
    ``{id: label}`` dict. Every other keyword is the command's flag of the same name, with its
    default: with ``run`` and ``qrels``, the diagnosis uses recall@``depth`` of the gold chunks;
    ``by=["field"]`` breaks rates down. With no endpoint configured at all, the rules run and the
    other answers are error records that a rerun with an endpoint fills in (``announce=True`` says
    so on stderr, as the command does). ``quiet`` defaults to True here. ``warn`` is where a partial
    overlap of the answers with the run, qrels, labels or test set is said (each a sentence; by default a
    ``warning:`` line on stderr, as the command says it): a function of your own collects them, ``None``
    says nothing (``ragassay run`` counts every join once, before any step, naming its files, so its check
    step passes None); ``join_warnings=False`` is the earlier spelling of ``warn=None``.
    ``query_ids`` maps an answer's id to the query id it answers, where the two differ (``run`` matched
    them by question text): the diagnosis then meets the run and qrels by those. Returns a
    :class:`~ragassay.stages.check_result.CheckResult` (``.summary`` holds the rates), or the
    :class:`~ragassay.runtime.engine.Estimate` of a ``dry_run``.

    >>> from ragassay.product.demo import example_dir
    >>> ex = example_dir()
    >>> from ragassay import CheckOptions
    >>> est = check(ex / "answers.jsonl", chunks=ex / "chunks.jsonl", options=CheckOptions(samples=3),
    ...             model="gpt-4o-mini", no_cache=True, dry_run=True)
    >>> est.decided_without_call, est.calls  # 2 decided by rule; 14 answers asked 3 times each
    (2, 42)
    """
    endpoint_keywords = llm_keywords(locals())  # (the twelve LLM keywords as given, before any name is bound)
    if (run is None) != (qrels is None):
        raise UsageError("the diagnosis needs both --run and --qrels")
    options = stage_options(
        CheckOptions,
        options,
        "check",
        samples=samples,
        seed=seed,
        quiet=quiet,
        max_response_chars=max_response_chars,
        max_context_chars=max_context_chars,
        shard=shard_of(shard),
        prompt=str(prompt),
    )
    _check_ranges(options)
    say = warn if join_warnings else None  # (join_warnings=False, the earlier spelling of warn=None)
    on = backend_of(backend, export_requests, import_results, poll_seconds)
    chunk_map = chunks_by_id(chunks)
    items, fields_by_id = answer_items(answers, chunk_map, by)
    set_join = None
    if test_set is not None:
        items, set_join = with_test_set(items, test_set, source_of(answers))
        say_join(set_join, say, ("left",))
    if queries is not None and query_ids is None and run is not None:  # answers under other ids than the run's
        query_ids = queries_by_text(items, queries, answers, say)
    diagnosis = diagnosis_inputs(items, answers, run, qrels, depth, query_ids, queries, say)
    people, human_join = people_labels(human, items, answers, say)
    given, config = endpoint(llm, config, llm_settings, **endpoint_keywords)
    checker = Checker([config], options)  # (a bad prompt file: an error before any call)
    say_prompt(
        "" if options.prompt == "auto" and checker.full else checker.prompt_reason,
        "check",
        options.quiet or not config.model,
    )  # no model: only the rules run
    with output_path(output, "checks.jsonl") as out:
        job = CheckJob(
            items, config, out, options=options, chunks=chunk_map, gold_recall=diagnosis.recall, announce=announce
        )
        done = run_job(job, on, dry_run, given, temporary=output is None)
    if isinstance(done, Estimate):
        return done
    summary = check_result(
        done.result,
        recall=diagnosis.recall,
        recall_caveat=diagnosis.caveat,
        threshold=retrieval_threshold,
        human=people,
        by=by or (),
        fields=fields_by_id,
        human_origin=read_labels_origin(human) if isinstance(human, (str, Path)) else None,
    )
    _with_joins(summary, diagnosis.joins, set_join, human_join)
    return CheckResult(
        done.result, summary, done.usage_numbers(), done.usage_text() if done.usage else "", done.batch_note
    )


def _check_ranges(options: CheckOptions) -> None:
    """The command's argument checks, on the options however they were given, before anything is read."""
    if options.samples < 1:
        raise UsageError("--samples must be at least 1")
    if options.max_response_chars < 1 or options.max_context_chars < 1:
        raise UsageError("--max-response-chars and --max-context-chars must be at least 1")


def _with_joins(summary: dict[str, Any], joins: Sequence[Join], set_join: Join | None, human_join: Join | None) -> None:
    """Each part of the summary says how its inputs met the answers (counted), where that part exists."""
    if joins and summary.get("diagnosis") is not None:
        summary["diagnosis"]["joins"] = [j.to_dict() for j in joins]
    if set_join is not None and summary.get("behaviour") is not None:
        summary["behaviour"]["join"] = set_join.to_dict()
    if human_join is not None and summary.get("human") is not None:
        summary["human"]["join"] = human_join.to_dict()
