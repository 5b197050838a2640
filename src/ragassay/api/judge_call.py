"""``ragassay.judge``: grade the top chunks of every query in a run, as ``ragassay judge`` does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from ..data.coerce import coerce_qrels
from ..errors import InputError, UsageError
from ..llm import LLM, LLMConfig
from ..runtime.engine import Estimate
from ..runtime.scaffold import Backend
from ..stages.judge import Judge, JudgeJob, JudgeOptions, JudgeResult, model_configs
from ..stages.queries import QueryItem
from .inputs import chunks_by_id, query_items, source_of
from .running import output_path, run_job, say_prompt
from .settings import backend_of, config_list, endpoint, llm_keywords, model_names, shard_of, stage_options


@overload
def judge(
    queries: str | Path | Sequence[QueryItem] | Mapping[str, str],
    chunks: Any,
    run: Any,
    *,
    dry_run: Literal[False] = False,
    **keywords: Any,
) -> JudgeResult: ...
@overload
def judge(
    queries: str | Path | Sequence[QueryItem] | Mapping[str, str],
    chunks: Any,
    run: Any,
    *,
    dry_run: Literal[True],
    **keywords: Any,
) -> Estimate: ...
@overload
def judge(
    queries: str | Path | Sequence[QueryItem] | Mapping[str, str],
    chunks: Any,
    run: Any,
    *,
    dry_run: bool,
    **keywords: Any,
) -> JudgeResult | Estimate: ...


def judge(
    queries: str | Path | Sequence[QueryItem] | Mapping[str, str],
    chunks: Any,
    run: Any,
    *,
    output: str | Path | None = None,
    depth: int = 10,
    qrels_out: str | Path | None = None,
    coverage_out: str | Path | None = None,
    keep: Any = None,
    samples: int = 1,
    seed: int = 0,
    tie: str = "lower",
    batch: int = 1,
    max_chunk_chars: int = 6000,
    long_chunks: str = "windows",
    cache_friendly: bool = False,
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
    llm: LLM | Sequence[LLM] | None = None,
    options: JudgeOptions | None = None,
    config: LLMConfig | Sequence[LLMConfig] | None = None,
    **llm_settings: Any,
) -> JudgeResult | Estimate:
    """Grade the top ``depth`` chunks of every query in ``run`` 0-3: ``ragassay judge`` as a call.

    ``queries``, ``chunks``, ``run`` and ``keep`` may be files, dicts, lists or DataFrames; every
    other keyword is the command's flag of the same name, with its default (``depth=5``,
    ``samples=3``, ``coverage_out=``, ``backend="batch"``, ``max_calls=``, ...). A list of models
    makes a jury, and so does a list of :class:`~ragassay.LLMConfig` values given as ``config=`` (one
    per juror, what the command builds from its flags). Without ``output`` the records live only in
    the result (the answer cache still makes a rerun free). ``quiet`` (no progress bar) is the one
    default that differs: True here.
    ``llm=`` gives clients you made (kept open); further LLM settings (``max_attempts=``, ...) go
    to :class:`~ragassay.LLMConfig`. Returns a :class:`~ragassay.stages.judge.JudgeResult`, or the
    :class:`~ragassay.runtime.engine.Estimate` of a ``dry_run``.

    >>> from ragassay.product.demo import example_dir
    >>> ex = example_dir()
    >>> from ragassay import JudgeOptions
    >>> est = judge(ex / "queries.jsonl", ex / "chunks.jsonl", ex / "runs" / "bm25.txt",
    ...             options=JudgeOptions(depth=2, samples=3), model="gpt-4o-mini", no_cache=True, dry_run=True)
    >>> est.items, est.calls  # 22 queries x their top 2 chunks, each asked 3 times
    (44, 132)
    """
    endpoint_keywords = llm_keywords(locals())  # (the twelve LLM keywords as given, before any name is bound)
    given_configs = config
    options = stage_options(
        JudgeOptions,
        options,
        "judge",
        depth=depth,
        samples=samples,
        batch=batch,
        seed=seed,
        tie=tie,
        max_chunk_chars=max_chunk_chars,
        long_chunks=long_chunks,
        quiet=quiet,
        cache_friendly=cache_friendly,
        shard=shard_of(shard),
        prompt=str(prompt),
    )
    _judge_ranges(options)
    on = backend_of(backend, export_requests, import_results, poll_seconds)
    items, chunk_map = query_items(queries), chunks_by_id(chunks, by_id_only=True)
    if chunk_map is None:
        raise InputError("judge needs the chunks the run retrieved (chunks=...)")
    keep_table = coerce_qrels(keep) if keep is not None else None
    llms, config = endpoint(llm, config, llm_settings, **endpoint_keywords)
    if llms is not None:
        configs = [x.config for x in llms]
    else:  # a jury given as configs, else one config per model named
        configs = config_list(given_configs) or model_configs(config, model_names(model))
    chosen = Judge(configs, options)  # a bad prompt file is refused here, before any call
    reason = "" if options.prompt == "auto" and chosen.full else chosen.prompt_reason
    with output_path(output, "judgments.jsonl") as out:
        job = JudgeJob(
            items,
            chunk_map,
            run,
            configs,
            out,
            options=options,
            keep=keep_table,
            qrels_out=qrels_out,
            coverage_out=coverage_out,
            sources=(source_of(queries), source_of(run)),
            judge=chosen,
        )
        say_prompt(reason, "judge", options.quiet)  # once every input was read: a bad file is one line
        done = run_job(job, on, dry_run, llms, temporary=output is None)
    if isinstance(done, Estimate):
        return done
    done.result.batch_note = done.batch_note
    return done.result


def _judge_ranges(options: JudgeOptions) -> None:
    """The command's argument checks, on the options however they were given, before anything is read."""
    if options.samples < 1 or options.batch < 1 or options.depth < 1:
        raise UsageError("--samples, --batch and --depth must be at least 1")
    if options.max_chunk_chars < 500:
        raise UsageError("--max-chunk-chars must be at least 500")
