"""The LLM stages as Python functions: ``ragassay.generate(...)``, ``ragassay.judge(...)`` and
``ragassay.check(...)`` are what the ``generate``, ``judge`` and ``check`` commands call, with the same
keyword names and defaults as their flags
(``--max-chunk-chars 6000`` is ``max_chunk_chars=6000``). They read files or take objects, run the
stage on the one scaffold (``dry_run=True`` gives its estimate, and a type checker knows it: the
result's type follows the literal ``True`` or ``False``; ``backend="batch"`` goes through the Batch
API) and return a typed result (``.records``, ``.to_dataframe()``, ``.usage`` as numbers). They work in
a script and inside a notebook, whose own event loop is already running.

Settings may also be given as values, built once and reused: ``options=`` the stage's options
(:class:`~ragassay.JudgeOptions`, :class:`~ragassay.CheckOptions`), ``config=`` an
:class:`~ragassay.LLMConfig` (the endpoint, model, limits and cache, used as given), ``backend=`` a
:class:`~ragassay.Backend`. A keyword that one of those values holds, given beside it, is a
``TypeError``: one of the two would silently go unused.

A dry run of the bundled example, offline (no endpoint, no key):

>>> import ragassay
>>> from ragassay.product.demo import example_dir
>>> ex = example_dir()
>>> est = ragassay.judge(ex / "queries.jsonl", ex / "chunks.jsonl", ex / "runs" / "bm25.txt", depth=5,
...                      model="gpt-4o-mini", no_cache=True, dry_run=True)
>>> est.items, est.calls  # the top 5 of 22 queries (two have only 3 and 4): one call each
(107, 107)
>>> est = ragassay.check(ex / "answers.jsonl", chunks=ex / "chunks.jsonl", model="gpt-4o-mini", no_cache=True,
...                      dry_run=True)
>>> est.items, est.decided_without_call, est.calls
(16, 2, 14)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal, TypeVar, cast, overload

from .data.chunk_files import read_chunks
from .data.chunk_table import ChunkTable, chunk_source
from .data.coerce import coerce_qrels, coerce_run
from .data.joins import Join
from .data.peer_files.sample_files import answer_rows
from .data.query_files import read_queries
from .data.record_files import check_output_kind
from .data.records import AnswerItem, Chunk
from .data.text_match import answers_to_queries
from .errors import InputError, UsageError
from .llm import LLM, LLMConfig
from .runtime.engine import Estimate, StageAborted, parse_shard
from .runtime.scaffold import Backend, StageJob, StageOutcome, run_llm_stage
from .stages.check import (
    Checker,
    CheckJob,
    CheckOptions,
    answer_fields,
    check_result,
    read_answers,
    read_human_labels,
    read_labels_origin,
    retrieval_recall,
)
from .stages.check_behaviour import with_test_set
from .stages.check_result import CheckResult
from .stages.generate import MIX_NAMES, STYLES, GenerateOptions, GenerateResult
from .stages.generate_job import GenerateJob, existing_questions, export_targets, shares, wanted
from .stages.judge import Judge, JudgeJob, JudgeOptions, JudgeResult, model_configs
from .stages.queries import QueryItem, read_query_items
from .stages.retrieve import Retrieval
from .stages.retrieve import retrieve as run_and_write

T = TypeVar("T")


def in_own_thread(work: Callable[[], T]) -> T:
    """``work()`` (which runs its own event loops) where no loop is running: inside a notebook's
    loop it runs in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:  # called outside the except clause: the work's own errors must not chain to this one
        return work()
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


# ------------------------------------------------------------------------------------ judge

@overload
def judge(queries: str | Path | Sequence[QueryItem] | Mapping[str, str], chunks: Any, run: Any, *,
          dry_run: Literal[False] = False, **keywords: Any) -> JudgeResult: ...
@overload
def judge(queries: str | Path | Sequence[QueryItem] | Mapping[str, str], chunks: Any, run: Any, *,
          dry_run: Literal[True], **keywords: Any) -> Estimate: ...
@overload
def judge(queries: str | Path | Sequence[QueryItem] | Mapping[str, str], chunks: Any, run: Any, *,
          dry_run: bool, **keywords: Any) -> JudgeResult | Estimate: ...


def judge(queries: str | Path | Sequence[QueryItem] | Mapping[str, str], chunks: Any, run: Any, *,
          output: str | Path | None = None, depth: int = 10, qrels_out: str | Path | None = None,
          coverage_out: str | Path | None = None, keep: Any = None, samples: int = 1, seed: int = 0,
          tie: str = "lower", batch: int = 1, max_chunk_chars: int = 6000, long_chunks: str = "windows",
          cache_friendly: bool = False, prompt: str | Path = "auto", model: str | Sequence[str] | None = None,
          base_url: str | None = None,
          timeout: float | None = None,
          concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
          cache: str | Path | None = None, no_cache: bool = False, price_in: float | None = None,
          price_out: float | None = None, max_calls: int | None = None, max_cost: float | None = None,
          dry_run: bool = False, backend: str | Backend = "live", export_requests: str | Path | None = None,
          import_results: Sequence[str | Path] = (), poll_seconds: float = 30.0,
          shard: str | tuple[int, int] | None = None, quiet: bool = True, llm: LLM | Sequence[LLM] | None = None,
          options: JudgeOptions | None = None, config: LLMConfig | None = None,
          **llm_settings: Any) -> JudgeResult | Estimate:
    """Grade the top ``depth`` chunks of every query in ``run`` 0-3: ``ragassay judge`` as a call.

    ``queries``, ``chunks``, ``run`` and ``keep`` may be files, dicts, lists or DataFrames; every
    other keyword is the command's flag of the same name, with its default (``depth=5``,
    ``samples=3``, ``coverage_out=``, ``backend="batch"``, ``max_calls=``, ...). A list of models
    makes a jury. Without ``output`` the records live only in the result (the answer cache still
    makes a rerun free). ``quiet`` (no progress bar) is the one default that differs: True here.
    ``llm=`` gives clients you made (kept open); further LLM settings (``max_attempts=``, ...) go
    to :class:`~ragassay.LLMConfig`. Returns a :class:`~ragassay.stages.judge.JudgeResult`, or the
    :class:`~ragassay.runtime.engine.Estimate` of a ``dry_run``.

    >>> from ragassay.product.demo import example_dir
    >>> ex = example_dir()
    >>> est = judge(ex / "queries.jsonl", ex / "chunks.jsonl", ex / "runs" / "bm25.txt", depth=2, samples=3,
    ...             model="gpt-4o-mini", no_cache=True, dry_run=True)
    >>> est.items, est.calls  # 22 queries x their top 2 chunks, each asked 3 times
    (44, 132)
    """
    if samples < 1 or batch < 1 or depth < 1:
        raise UsageError("--samples, --batch and --depth must be at least 1")
    if max_chunk_chars < 500:
        raise UsageError("--max-chunk-chars must be at least 500")
    on = _backend(backend, export_requests, import_results, poll_seconds)
    options = _stage_options(JudgeOptions, options, depth=depth, samples=samples, batch=batch, seed=seed, tie=tie,
                             max_chunk_chars=max_chunk_chars, long_chunks=long_chunks, quiet=quiet,
                             cache_friendly=cache_friendly, shard=_shard(shard), prompt=str(prompt))
    items, chunk_map = _queries(queries), _chunks(chunks, by_id_only=True)
    if chunk_map is None:
        raise InputError("judge needs the chunks the run retrieved (chunks=...)")
    keep_table = coerce_qrels(keep) if keep is not None else None
    llms = _given(llm, llm_settings, config)
    config = _config(config, model, llm_settings, base_url=base_url, timeout=timeout, concurrency=concurrency,
                     rpm=rpm, tpm=tpm, cache=cache, no_cache=no_cache, price_in=price_in, price_out=price_out,
                     max_calls=max_calls, max_cost=max_cost)
    configs = [x.config for x in llms] if llms is not None else model_configs(config, _models(model))
    chosen = Judge(configs, options)  # a bad prompt file is refused here, before any call
    reason = "" if options.prompt == "auto" and chosen.full else chosen.prompt_reason
    with _output(output, "judgments.jsonl") as out:
        job = JudgeJob(items, chunk_map, run, configs, out, options=options, keep=keep_table,
                       qrels_out=qrels_out, coverage_out=coverage_out, sources=(_source(queries), _source(run)),
                       judge=chosen)
        _say_prompt(reason, "judge", options.quiet)  # once every input was read: a bad file is one line
        done = _run(job, on, dry_run, llms, temporary=output is None)
    if isinstance(done, Estimate):
        return done
    done.result.batch_note = done.batch_note
    return done.result


# ------------------------------------------------------------------------------------ check

@overload
def check(answers: str | Path | Sequence[AnswerItem | dict], *, dry_run: Literal[False] = False,
          **keywords: Any) -> CheckResult: ...
@overload
def check(answers: str | Path | Sequence[AnswerItem | dict], *, dry_run: Literal[True],
          **keywords: Any) -> Estimate: ...
@overload
def check(answers: str | Path | Sequence[AnswerItem | dict], *, dry_run: bool,
          **keywords: Any) -> CheckResult | Estimate: ...


def check(answers: str | Path | Sequence[AnswerItem | dict], *, output: str | Path | None = None,
          chunks: Any = None, run: Any = None, qrels: Any = None, depth: int = 10, retrieval_threshold: float = 0.5,
          human: str | Path | Mapping[str, str] | None = None, by: Sequence[str] | None = None, samples: int = 1,
          seed: int = 0, max_response_chars: int = 32000, max_context_chars: int = 12000,
          prompt: str | Path = "auto", model: str | Sequence[str] | None = None, base_url: str | None = None,
          timeout: float | None = None,
          concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
          cache: str | Path | None = None, no_cache: bool = False, price_in: float | None = None,
          price_out: float | None = None, max_calls: int | None = None, max_cost: float | None = None,
          dry_run: bool = False, backend: str | Backend = "live", export_requests: str | Path | None = None,
          import_results: Sequence[str | Path] = (), poll_seconds: float = 30.0,
          shard: str | tuple[int, int] | None = None, quiet: bool = True, announce: bool = False,
          llm: LLM | None = None, options: CheckOptions | None = None, config: LLMConfig | None = None,
          join_warnings: bool = True,
          query_ids: Mapping[str, str] | None = None, queries: str | Path | Mapping[str, str] | None = None,
          test_set: str | Path | None = None, **llm_settings: Any) -> CheckResult | Estimate:
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
    so on stderr, as the command does). ``quiet`` defaults to True here. ``join_warnings=False`` leaves
    unsaid how the answers met the run, qrels and labels (``run`` says it once, before any step).
    ``query_ids`` maps an answer's id to the query id it answers, where the two differ (``run`` matched
    them by question text): the diagnosis then meets the run and qrels by those. Returns a
    :class:`~ragassay.stages.check_result.CheckResult` (``.summary`` holds the rates), or the
    :class:`~ragassay.runtime.engine.Estimate` of a ``dry_run``.

    >>> from ragassay.product.demo import example_dir
    >>> ex = example_dir()
    >>> est = check(ex / "answers.jsonl", chunks=ex / "chunks.jsonl", samples=3, model="gpt-4o-mini",
    ...             no_cache=True, dry_run=True)
    >>> est.decided_without_call, est.calls  # 2 decided by rule; 14 answers asked 3 times each
    (2, 42)
    """
    if (run is None) != (qrels is None):
        raise UsageError("the diagnosis needs both --run and --qrels")
    if samples < 1:
        raise UsageError("--samples must be at least 1")
    if max_response_chars < 1 or max_context_chars < 1:
        raise UsageError("--max-response-chars and --max-context-chars must be at least 1")
    on = _backend(backend, export_requests, import_results, poll_seconds)
    options = _stage_options(CheckOptions, options, samples=samples, seed=seed, quiet=quiet,
                             max_response_chars=max_response_chars, max_context_chars=max_context_chars,
                             shard=_shard(shard), prompt=str(prompt))
    chunk_map = _chunks(chunks)
    items, fields_by_id = _answers(answers, chunk_map, by)
    set_join = None
    if test_set is not None:
        items, set_join = with_test_set(items, test_set, _source(answers))
        set_join.warn(not join_warnings, sides=("left",))
    if queries is not None and query_ids is None and run is not None:  # answers under other ids than the run's
        query_ids = _queries_by_text(items, queries, answers, join_warnings)
    joins = []
    recall = caveat = None
    if run is not None:  # the diagnosis meets answers with the run and the qrels by query id: counted
        run_t, qrels_t = coerce_run(run), coerce_qrels(qrels)
        asks = {a.id: (query_ids or {}).get(a.id, a.id) for a in items}  # the query each answer answers
        ids = list(asks.values())
        try:
            Join.of("query ids", "the answers", ids, "the run", run_t.queries, _source(answers),
                    _source(run)).require_overlap()
        except InputError as e:  # the way out, when the answers ask the run's questions under other ids
            if queries is not None:
                raise
            raise InputError(f"{e.message} If the answers ask the queries' questions under other ids, give the "
                             "queries (--queries FILE; queries= in Python) to match them by question text", e.path) \
                from None
        joins = [Join.of("query ids", "the answers", ids, "the run", run_t.queries, _source(answers), _source(run))
                 .require_overlap().warn(not join_warnings, sides=("left",)),
                 Join.of("query ids", "the answers", ids, "the qrels", qrels_t.queries, _source(answers),
                         _source(qrels)).require_overlap().warn(not join_warnings, sides=("left",))]
        in_run = set(run_t.queries)  # an answer whose question the run does not hold is not diagnosed
        all_recall, caveat = retrieval_recall(qrels_t, run_t, depth)
        by_query = {q: v for q, v in all_recall.items() if q in in_run}
        recall = {a: by_query[q] for a, q in asks.items() if q in by_query}  # keyed by answer id, as records are
    people = (read_human_labels(human) if isinstance(human, (str, Path)) else dict(human)) if human is not None \
        else None
    human_join = None
    if people is not None:  # people label a sample of the answers: labels of no answer are the warning
        human_join = Join.of("answer ids", "the answers", [a.id for a in items], "the --human labels", people,
                             _source(answers), _source(human)).require_overlap().warn(not join_warnings,
                                                                                      sides=("right",))
    given = _given(llm, llm_settings, config)
    config = given[0].config if given else _config(
        config, model, llm_settings, base_url=base_url, timeout=timeout, concurrency=concurrency, rpm=rpm, tpm=tpm,
        cache=cache, no_cache=no_cache, price_in=price_in, price_out=price_out, max_calls=max_calls,
        max_cost=max_cost)
    checker = Checker([config], options)  # (a bad prompt file: an error before any call)
    _say_prompt("" if options.prompt == "auto" and checker.full else checker.prompt_reason, "check",
                options.quiet or not config.model)  # no model: only the rules run
    with _output(output, "checks.jsonl") as out:
        job = CheckJob(items, config, out, options=options, chunks=chunk_map, gold_recall=recall, announce=announce)
        done = _run(job, on, dry_run, given, temporary=output is None)
    if isinstance(done, Estimate):
        return done
    summary = check_result(done.result, recall=recall, recall_caveat=caveat, threshold=retrieval_threshold,
                           human=people, by=by or (), fields=fields_by_id,
                           human_origin=read_labels_origin(human) if isinstance(human, (str, Path)) else None)
    if joins and summary.get("diagnosis") is not None:
        summary["diagnosis"]["joins"] = [j.to_dict() for j in joins]
    if set_join is not None and summary.get("behaviour") is not None:
        summary["behaviour"]["join"] = set_join.to_dict()
    if human_join is not None and summary.get("human") is not None:
        summary["human"]["join"] = human_join.to_dict()
    return CheckResult(done.result, summary, done.usage_numbers(), done.usage_text() if done.usage else "",
                       done.batch_note)


def _queries_by_text(items: Sequence[AnswerItem], queries: str | Path | Mapping[str, str], answers: Any,
                     warn: bool) -> dict[str, str] | None:
    """Each answer's query id, when the answers' ids meet none of the queries' but their questions are
    the queries' texts (data/text_match.py: counted, and said as a warning); None when the ids meet."""
    texts = dict(queries) if isinstance(queries, Mapping) else read_queries(queries)
    found = answers_to_queries({a.id: a.question for a in items}, texts, "auto", _source(answers),
                               None if isinstance(queries, Mapping) else queries, setting="--queries")
    if found is None:
        return None
    if warn:
        print(f"warning: {found.sentence()}", file=sys.stderr)
    return dict(found.pairs)


def _source(x: Any) -> str | None:
    """The file an input came from, for messages; None for objects."""
    if isinstance(x, (str, Path)):
        return str(x)
    return getattr(x, "source", None)


def _answers(answers: str | Path | Sequence[AnswerItem | dict], chunks: Mapping[str, Chunk] | None,
             by: Sequence[str] | None) -> tuple[list[AnswerItem], dict[str, dict] | None]:
    """The answers to check and, for a breakdown (``by``), each answer's fields by id. A field no
    answer has is a usage error, found before anything is spent: a breakdown by nothing means nothing."""
    if isinstance(answers, (str, Path)):
        items = read_answers(answers, chunks)
        raw = answer_rows(answers) if by else []  # (JSONL, a JSON array or CSV, as read_answers reads it)
    else:
        given = list(answers)
        raw = [(no, a if isinstance(a, dict) else a.model_dump()) for no, a in enumerate(given, start=1)]
        items = [a if isinstance(a, AnswerItem) else AnswerItem.model_validate(answer_fields(a, no))
                 for no, a in enumerate(given, start=1)]
        missing = [c for a in items for c in (a.context_ids or []) if a.contexts is None and c not in (chunks or {})]
        if missing:
            raise InputError(f"context id {missing[0]!r} needs chunks=... to look its text up")
    if not by:
        return items, None
    fields_by_id = {str(answer_fields(obj, no)["id"]): obj for no, obj in raw}
    for name in by:
        if not any(name in obj for obj in fields_by_id.values()):
            known = sorted({k for obj in fields_by_id.values() for k in obj})
            raise UsageError(f"--by {name}: no answer has this field (fields: {', '.join(known)})")
    return items, fields_by_id


# --------------------------------------------------------------------------------- generate

@overload
def generate(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk], *, dry_run: Literal[False] = False,
             **keywords: Any) -> GenerateResult: ...
@overload
def generate(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk], *, dry_run: Literal[True],
             **keywords: Any) -> Estimate: ...
@overload
def generate(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk], *, dry_run: bool,
             **keywords: Any) -> GenerateResult | Estimate: ...


def generate(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk], *, output: str | Path | None = None,
             per_chunk: float = 1.0, mix: str | Mapping[str, float] = "easy=0.4,medium=0.4,hard=0.2",
             limit: int | None = None, append: bool = False,
             styles: str | Mapping[str, float] = "question=0.4,keywords=0.25,lowercase=0.15,task=0.2",
             seed: int = 0, qrels_out: str | Path | None = None, rejects: str | Path | None = None,
             export: Sequence[tuple[str, str | Path]] = (), max_per_doc: int | None = None,
             model: str | Sequence[str] | None = None, base_url: str | None = None, timeout: float | None = None,
             concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
             cache: str | Path | None = None, no_cache: bool = False, price_in: float | None = None,
             price_out: float | None = None, max_calls: int | None = None, max_cost: float | None = None,
             dry_run: bool = False, backend: str | Backend = "live", export_requests: str | Path | None = None,
             import_results: Sequence[str | Path] = (), poll_seconds: float = 30.0, quiet: bool = True,
             llm: LLM | None = None, config: LLMConfig | None = None,
             **llm_settings: Any) -> GenerateResult | Estimate:
    """Write easy / medium / hard questions with answers and evidence: ``ragassay generate`` as a call.

    ``chunks`` may be a file, a list of dicts or Chunks, or a ``{id: Chunk}`` dict. Every other
    keyword is the command's flag of the same name, with its default: ``limit=20`` questions (else
    ``per_chunk`` for each chunk fit to ask about), ``mix`` and ``styles`` as the flags' text or a
    dict of shares, ``export=[("beir", "dir")]``, ``append=True`` to grow the set in ``output``,
    ``backend="batch"``, ``max_calls=``, ... The questions file, ``rejects`` and ``qrels_out`` are
    written at the end, while their locks are held; a killed run resumes from the journal beside
    ``output``. Without ``output`` the set lives only in the result. ``quiet`` defaults to True here.
    Returns a :class:`~ragassay.stages.generate.GenerateResult` (``.accepted`` the new questions,
    ``.usage`` as numbers), or the :class:`~ragassay.runtime.engine.Estimate` of a ``dry_run``.

    >>> from ragassay.product.demo import example_dir
    >>> est = generate(example_dir() / "chunks.jsonl", limit=10, model="gpt-4o-mini", no_cache=True, dry_run=True)
    >>> est.items, est.calls  # 8 single-chunk candidates x 4 calls; 2 hard ones x (4 + one per chunk offered)
    (10, 46)
    >>> est.calls_per_step
    [10, 10, 10, 10, 6]
    """
    mix_shares = shares(mix, MIX_NAMES, "--mix")
    style_shares = shares(styles, tuple(STYLES), "--styles")
    targets = export_targets(export)
    if max_per_doc is not None and max_per_doc < 1:
        raise UsageError("--max-per-doc must be at least 1")
    on = _backend(backend, export_requests, import_results, poll_seconds)
    chunk_list = _chunk_list(chunks)
    if output is not None:  # a questions file only: another stage's output is never replaced
        check_output_kind(output, "question")
    existing = existing_questions(output) if append and output is not None else []
    given = _given(llm, llm_settings, config)
    config = given[0].config if given else _config(
        config, model, llm_settings, base_url=base_url, timeout=timeout, concurrency=concurrency, rpm=rpm, tpm=tpm,
        cache=cache, no_cache=no_cache, price_in=price_in, price_out=price_out, max_calls=max_calls,
        max_cost=max_cost)
    total = wanted(chunk_list, limit, per_chunk, chunks if isinstance(chunks, (str, Path)) else None)
    options = GenerateOptions(total=total, mix=mix_shares, seed=seed, quiet=quiet, max_per_doc=max_per_doc,
                              styles=style_shares, max_calls=max_calls)
    with _output(output, "questions.jsonl") as out:
        job = GenerateJob(chunk_list, config, out, options=options, existing=existing, rejects=rejects,
                          qrels_out=qrels_out, exports=targets)
        done = _run(job, on, dry_run, given, temporary=output is None)
    if isinstance(done, Estimate):
        return done
    result = done.result
    result.usage, result.usage_text, result.kept = done.usage_numbers(), done.usage_text(), len(existing)
    # a live run names its batch files only while the set waits for their answers
    result.batch_note = done.batch_note if on.name == "batch" or result.pending else ""
    return result


# ---------------------------------------------------------------------------------- shared

def _say_prompt(reason: str, stage: str, quiet: bool) -> None:
    """Which prompt the stage uses and why, once on stderr (the records name its version). The
    default kept (auto choosing the full prompt, as before there was a choice) is not said: a hosted
    model's every run would carry a line that changes nothing."""
    if reason and not quiet:
        print(f"{stage}: {reason}", file=sys.stderr)


def _run(job: StageJob[Any], backend: Backend, dry_run: bool, llms: list[LLM] | None,
         temporary: bool) -> Estimate | StageOutcome[Any]:
    """The scaffold, where no event loop runs; a stop names no journal that a temporary output lost."""
    try:
        return in_own_thread(lambda: run_llm_stage(job, backend, dry_run=dry_run, llms=llms))
    except StageAborted as e:
        if not temporary:
            raise
        # the journal lived in a temporary folder that is gone when the error is seen
        raise StageAborted(f"{e.reason} (the answer cache keeps every answer received; pass output=... to keep "
                           "the finished records too)", e.reason) from None


# keywords the functions took before they took the flags' names
RENAMED = {"coverage_output": "coverage_out", "k": "depth"}


# the LLM keywords a config given as config= holds, with their defaults (a keyword beside it would go unused)
LLM_KEYWORDS = {"model": None, "base_url": None, "timeout": None, "concurrency": None, "rpm": None, "tpm": None,
                "cache": None, "no_cache": False, "price_in": None, "price_out": None, "max_calls": None,
                "max_cost": None}


def _config(given: LLMConfig | None, model: str | Sequence[str] | None, settings: dict[str, Any], *,
            cache: str | Path | None, no_cache: bool, **flags: Any) -> LLMConfig:
    """The endpoint's config: ``config=`` as given (the caller's value, used as it is), or one made from
    the LLM flags' values (the first model of a jury) and any further ``LLMConfig`` settings, with
    unset values from the environment (``OPENAI_BASE_URL``, ...)."""
    if given is not None:
        values = {**flags, "model": model, "cache": cache, "no_cache": no_cache}
        clash = sorted([k for k, v in values.items() if v != LLM_KEYWORDS.get(k)] + list(settings))
        if clash:
            raise TypeError(f"give {', '.join(clash)} in config= or as keywords, not both")
        return given
    models = _models(model)
    return LLMConfig.from_env(**{**settings, **flags, "model": models[0] if models else None,
                                 "cache_path": Path(cache) if cache is not None else settings.get("cache_path"),
                                 "use_cache": not no_cache and settings.get("use_cache", True)})


def _backend(backend: str | Backend, export_requests: str | Path | None, import_results: Sequence[str | Path],
             poll_seconds: float) -> Backend:
    """Where the calls go: ``backend=`` as a :class:`~ragassay.runtime.scaffold.Backend` value, or its name
    with the batch keywords beside it (not both: one of them would go unused). Usage errors are raised
    here, before anything is read or sent."""
    if isinstance(backend, Backend):
        if export_requests is not None or tuple(import_results) or poll_seconds != 30.0:
            raise TypeError("give export_requests, import_results and poll_seconds in backend= or as keywords, "
                            "not both")
        on = backend
    else:  # a name: Backend.check() refuses one it does not know
        on = Backend(cast(Any, backend), export_requests, tuple(import_results), poll_seconds)
    on.check()
    return on


def _models(model: str | Sequence[str] | None) -> list[str] | None:
    if model is None:
        return None
    return [model] if isinstance(model, str) else list(model) or None


def _given(llm: LLM | Sequence[LLM] | None, settings: Mapping[str, Any],
           config: LLMConfig | None = None) -> list[LLM] | None:
    """The clients the caller made (``llm=``), or None. ``settings`` are the keywords the function
    did not name: a keyword of an earlier release says what replaced it, and settings beside
    ``llm=`` are refused, since that client's own config is what runs."""
    renamed = {k: RENAMED[k] for k in settings if k in RENAMED}
    if renamed:  # keywords of earlier releases: say the name that replaced each
        raise TypeError("; ".join(f"{old}= is now {new}= (the flag's name)" for old, new in renamed.items()))
    if llm is None:
        return None
    if config is not None:  # the client's own config is what runs: the value given would go unused
        raise TypeError("give llm= or config=, not both (an LLM runs with its own config)")
    if settings:
        raise TypeError(f"{', '.join(sorted(settings))}: set these on the LLM given as llm= (its config is used)")
    return [llm] if isinstance(llm, LLM) else list(llm)


def _shard(shard: str | tuple[int, int] | None) -> tuple[int, int] | None:
    return parse_shard(shard) if isinstance(shard, str) else shard


def _stage_options(options_type: type[T], options: T | None, **values: Any) -> T:
    """The stage's options from the keywords; or ``options=`` as given, when no keyword differs
    from its default (both at once would leave one of them silently unused)."""
    if options is None:
        return options_type(**values)
    defaults = {f.name: f.default for f in fields(options_type)}  # type: ignore[arg-type]
    clash = sorted(k for k, v in values.items() if k != "quiet" and v != defaults.get(k))
    if clash:
        raise TypeError(f"give {', '.join(clash)} in options= or as keywords, not both")
    return options


@contextmanager
def _output(output: str | Path | None, name: str) -> Iterator[Path]:
    """``output``, or a file in a temporary folder removed after the run."""
    if output is not None:
        yield Path(output)
        return
    with tempfile.TemporaryDirectory(prefix="ragassay-") as tmp:
        yield Path(tmp) / name


def _queries(queries: str | Path | Sequence[QueryItem] | Mapping[str, str]) -> list[QueryItem]:
    if isinstance(queries, (str, Path)):
        return read_query_items(queries)
    if isinstance(queries, Mapping):
        return [QueryItem(str(q), t) for q, t in queries.items()]
    return list(queries)


def _chunks(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk] | None,
            by_id_only: bool = False) -> Mapping[str, Chunk] | None:
    """The chunks by id. ``by_id_only``: the stage only looks chunks up by id, so a large file is
    read as a :class:`~ragassay.data.chunk_table.ChunkTable` (where each lies, not the chunks)."""
    if chunks is None:
        return None
    if isinstance(chunks, (str, Path)):
        return chunk_source(chunks) if by_id_only else {c.id: c for c in read_chunks(chunks)}
    if isinstance(chunks, ChunkTable):
        return chunks if by_id_only else dict(chunks)
    if isinstance(chunks, Mapping):
        return dict(chunks)
    items = [c if isinstance(c, Chunk) else Chunk.model_validate(c) for c in chunks]
    return {c.id: c for c in items}


def _chunk_list(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk]) -> list[Chunk]:
    """The chunks in their given order (generate draws by it), read or validated."""
    if isinstance(chunks, (str, Path)):
        return read_chunks(chunks)
    if isinstance(chunks, Mapping):
        return list(chunks.values())
    return [c if isinstance(c, Chunk) else Chunk.model_validate(c) for c in chunks]


def retrieve(retriever: Any, queries: str | Path | Sequence[QueryItem] | Mapping[str, str], *,
             chunks: str | Path | Sequence[Chunk | dict | str] | Mapping[str, Chunk] | None = None,
             id_field: str | None = None, k: int = 100, output: str | Path | None = None, name: str | None = None,
             quiet: bool = False) -> Retrieval:
    """Run a retriever over the queries: what ``ragassay retrieve`` calls. Returns a
    :class:`~ragassay.stages.retrieve.Retrieval` whose ``.run`` is the run (``.to_dict()`` the
    command's result).

    ``retriever`` is a function of the query text (ids or ``(id, score)`` pairs, best first), a
    LlamaIndex retriever (``.retrieve``), a LangChain retriever (``.invoke``), a factory making one (a
    class, or a callable taking no positional argument), or ``"module:NAME"`` / ``"file.py:NAME"``
    naming any of these. ``id_field`` says where a returned node or document holds the chunk id:
    ``id`` (the default: LlamaIndex's node_id, LangChain's Document.id), ``ref_doc_id`` or
    ``metadata.KEY``. With ``chunks`` (a file, chunks, dicts or ids), every returned id must be one of
    theirs (the first that is not stops the run, naming it) and ``.chunks`` counts how they met.
    ``output`` writes the run (TREC) and its latency beside it.
    """
    return run_and_write(retriever, queries, chunks=chunks, id_field=id_field, k=k, output=output, name=name,
                         quiet=quiet)
