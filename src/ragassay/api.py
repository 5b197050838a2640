"""The notebook-shaped API: ``ragassay.judge(...)`` and ``ragassay.check(...)`` run a stage and
return its typed result (``.records``, ``.to_dataframe()``), with no event loop or output file to
manage. They work in a script and inside a notebook, whose own event loop is already running.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from .data.records import AnswerItem, Chunk
from .errors import InputError
from .llm import LLM, LLMConfig
from .stages.engine import StageAborted, StageRun
from .stages.judge import JudgeOptions, JudgeResult, judge_run
from .stages.queries import QueryItem

T = TypeVar("T")


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code, even where an event loop is already
    running (Jupyter): then in a worker thread with a loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _llm(llm: LLM | None, model: str | None, base_url: str | None, settings: dict[str, Any]) -> tuple[LLM, bool]:
    if llm is not None:
        return llm, False
    return LLM(LLMConfig.from_env(model=model, base_url=base_url, **settings)), True


def _rules_only_without_endpoint(llm: LLM | None, model: str | None, base_url: str | None,
                                 settings: dict[str, Any]) -> tuple[LLM | None, bool]:
    """check's LLM, or None when no endpoint is configured at all: then only the rules run and the
    other answers are error records saying so, as on the command line. A bad setting still raises."""
    if llm is not None:
        return llm, False
    from .llm.errors import LLMError
    config = LLMConfig.from_env(model=model, base_url=base_url, **settings)
    try:
        config.check()
    except LLMError as e:
        if e.kind != "config" or config.api_key or config.base_url:
            raise
        return None, False
    return LLM(config), True


def _queries(queries: str | Path | Sequence[QueryItem] | Mapping[str, str]) -> list[QueryItem]:
    from .stages.queries import read_query_items
    if isinstance(queries, (str, Path)):
        return read_query_items(queries)
    if isinstance(queries, Mapping):
        return [QueryItem(str(q), t) for q, t in queries.items()]
    return list(queries)


def _chunks(chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk] | None) -> dict[str, Chunk] | None:
    from .data.io import read_chunks
    if chunks is None:
        return None
    if isinstance(chunks, (str, Path)):
        return {c.id: c for c in read_chunks(chunks)}
    if isinstance(chunks, Mapping):
        return dict(chunks)
    items = [c if isinstance(c, Chunk) else Chunk.model_validate(c) for c in chunks]
    return {c.id: c for c in items}


def _split_settings(options_type: type, options: Any, settings: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The stage's options (``depth=5``, ``samples=3``: the CLI flags' names and defaults) apart from
    the LLM settings (``concurrency=``, ``timeout=``, ...); both at once with ``options=`` is an error."""
    from dataclasses import fields
    names = {f.name for f in fields(options_type)}
    mine = {k: settings.pop(k) for k in list(settings) if k in names}
    if options is not None and mine:
        raise TypeError(f"give {', '.join(sorted(mine))} in options= or as keywords, not both")
    if options is None:
        options = options_type(**{"quiet": True, **mine})
    return options, settings


def _without_temporary_journal(error: StageAborted, tmp: Any) -> StageAborted:
    """With no ``output=``, the journal lived in a temporary folder that is gone when the error
    is seen: say what keeps work across runs instead of naming that folder."""
    if tmp is None:
        return error
    return StageAborted(f"{error.reason} (the answer cache keeps every answer received; pass output=... to keep "
                        "the finished records too)", error.reason)


def _output(output: str | Path | None, name: str) -> tuple[Path, Any]:
    if output is not None:
        return Path(output), None
    tmp = tempfile.TemporaryDirectory(prefix="ragassay-")
    return Path(tmp.name) / name, tmp


def judge(queries: str | Path | Sequence[QueryItem] | Mapping[str, str], chunks: Any, run: Any, *,
          model: str | None = None, base_url: str | None = None, output: str | Path | None = None,
          coverage_output: str | Path | None = None, keep: Any = None, llm: LLM | None = None,
          options: JudgeOptions | None = None, **llm_settings: Any) -> JudgeResult:
    """Grade the top of ``run`` 0-3 (and, with ``coverage_output``, its coverage). ``queries``,
    ``chunks``, ``run`` and ``keep`` may be files, dicts, lists or DataFrames. Without ``output`` the
    records live only in the result (and the answer cache still makes a rerun free). The judge's
    options go as keywords named like the CLI's flags (``depth=5``, ``samples=3``, ``batch=4``,
    ``seed=``, ``tie=``, ``max_chunk_chars=``, ``long_chunks=``); LLM settings too (``concurrency=``,
    ``timeout=``, ``max_calls=``, ...)."""
    options, llm_settings = _split_settings(JudgeOptions, options, llm_settings)
    chunk_map = _chunks(chunks)
    items = _queries(queries)
    client, own = _llm(llm, model, base_url, llm_settings)
    out, tmp = _output(output, "judgments.jsonl")
    try:
        return run_sync(lambda: judge_run(items, chunk_map, run, [client], out, options=options,
                                          keep=keep, coverage_out=coverage_output))
    except StageAborted as e:
        raise _without_temporary_journal(e, tmp) from None
    finally:
        if own:
            client.close()
        if tmp is not None:
            tmp.cleanup()


def check(answers: str | Path | Sequence[AnswerItem | dict], *, chunks: Any = None, model: str | None = None,
          base_url: str | None = None, output: str | Path | None = None, llm: LLM | None = None,
          qrels: Any = None, run: Any = None, k: int = 10, options: Any = None, **llm_settings: Any) -> StageRun:
    """Label answers correct / partial / hallucinated / abstained. ``answers`` may be a file (ragassay,
    RAGAS or DeepEval fields) or a list of dicts or AnswerItems; with ``qrels`` and ``run``, ``fault``
    uses whether the gold chunks were retrieved. Options as keywords named like the CLI's flags
    (``samples=3``, ``seed=``, ``max_context_chars=``, ``max_response_chars=``) or ``options=``."""
    from .stages.check import CheckOptions, answer_fields, check_answers, read_answers, retrieval_recall
    options, llm_settings = _split_settings(CheckOptions, options, llm_settings)
    chunk_map = _chunks(chunks)
    if isinstance(answers, (str, Path)):
        items = read_answers(answers, chunk_map)
    else:
        items = [a if isinstance(a, AnswerItem) else AnswerItem.model_validate(answer_fields(a, i + 1))
                 for i, a in enumerate(answers)]
    missing = [c for a in items for c in (a.context_ids or []) if a.contexts is None and c not in (chunk_map or {})]
    if missing:
        raise InputError(f"context id {missing[0]!r} needs chunks=... to look its text up")
    recall = retrieval_recall(qrels, run, k) if qrels is not None and run is not None else None
    client, own = _rules_only_without_endpoint(llm, model, base_url, llm_settings)
    out, tmp = _output(output, "checks.jsonl")
    try:
        return run_sync(lambda: check_answers(items, client, out, options=options,
                                              chunks=chunk_map, announce=False, gold_recall=recall))
    except StageAborted as e:
        raise _without_temporary_journal(e, tmp) from None
    finally:
        if own and client is not None:
            client.close()
        if tmp is not None:
            tmp.cleanup()
