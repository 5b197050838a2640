"""``ragassay.generate``: write a question set from chunks, as ``ragassay generate`` does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, overload

from ..data.record_files import check_output_kind
from ..data.records import Chunk
from ..errors import UsageError
from ..llm import LLM, LLMConfig
from ..runtime.engine import Estimate
from ..runtime.scaffold import Backend
from ..stages.generate import MIX_NAMES, STYLES, GenerateOptions, GenerateResult
from ..stages.generate.shapes import GENERATE_WORKED_OUT
from ..stages.generate_job import GenerateJob, existing_questions, export_targets, shares, wanted
from .inputs import ordered_chunks
from .running import output_path, run_job
from .settings import backend_of, endpoint, llm_keywords, stage_options


@overload
def generate(
    chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk],
    *,
    dry_run: Literal[False] = False,
    **keywords: Any,
) -> GenerateResult: ...
@overload
def generate(
    chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk], *, dry_run: Literal[True], **keywords: Any
) -> Estimate: ...
@overload
def generate(
    chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk], *, dry_run: bool, **keywords: Any
) -> GenerateResult | Estimate: ...


def generate(
    chunks: str | Path | Sequence[Chunk | dict] | Mapping[str, Chunk],
    *,
    output: str | Path | None = None,
    per_chunk: float = 1.0,
    mix: str | Mapping[str, float] = "easy=0.4,medium=0.4,hard=0.2",
    limit: int | None = None,
    append: bool = False,
    styles: str | Mapping[str, float] = "question=0.4,keywords=0.25,lowercase=0.15,task=0.2",
    seed: int = 0,
    qrels_out: str | Path | None = None,
    rejects: str | Path | None = None,
    export: Sequence[tuple[str, str | Path]] = (),
    max_per_doc: int | None = None,
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
    quiet: bool = True,
    llm: LLM | None = None,
    options: GenerateOptions | None = None,
    config: LLMConfig | None = None,
    **llm_settings: Any,
) -> GenerateResult | Estimate:
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
    >>> from ragassay import GenerateOptions
    >>> est = generate(example_dir() / "chunks.jsonl", options=GenerateOptions(limit=10), model="gpt-4o-mini",
    ...                no_cache=True, dry_run=True)
    >>> est.items, est.calls  # 8 single-chunk candidates x 4 calls; 2 hard ones x (4 + one per chunk offered)
    (10, 46)
    >>> est.calls_per_step
    [10, 10, 10, 10, 6]
    """
    endpoint_keywords = llm_keywords(locals())  # (the twelve LLM keywords as given, before any name is bound)
    given_config = config
    options = stage_options(
        GenerateOptions,
        options,
        "generate",
        limit=limit,
        per_chunk=per_chunk,
        mix=shares(mix, MIX_NAMES, "--mix"),
        styles=shares(styles, tuple(STYLES), "--styles"),
        seed=seed,
        max_per_doc=max_per_doc,
        quiet=quiet,
    )
    _refuse_worked_out(options)
    # a dict given in options= is checked as the flag's text is
    options = replace(
        options, mix=shares(options.mix, MIX_NAMES, "--mix"), styles=shares(options.styles, tuple(STYLES), "--styles")
    )
    targets = export_targets(export)
    if options.max_per_doc is not None and options.max_per_doc < 1:
        raise UsageError("--max-per-doc must be at least 1")
    on = backend_of(backend, export_requests, import_results, poll_seconds)
    chunk_list = ordered_chunks(chunks)
    if output is not None:  # a questions file only: another stage's output is never replaced
        check_output_kind(output, "question")
    existing = existing_questions(output) if append and output is not None else []
    given, config = endpoint(llm, config, llm_settings, **endpoint_keywords)
    total = wanted(chunk_list, options.limit, options.per_chunk, chunks if isinstance(chunks, (str, Path)) else None)
    # the run's ceiling on generate's own requests is the endpoint's (max_calls=, or the config given)
    options = replace(options, total=total, max_calls=max_calls if given_config is None else config.max_calls)
    with output_path(output, "questions.jsonl") as out:
        job = GenerateJob(
            chunk_list,
            config,
            out,
            options=options,
            existing=existing,
            rejects=rejects,
            qrels_out=qrels_out,
            exports=targets,
        )
        done = run_job(job, on, dry_run, given, temporary=output is None)
    if isinstance(done, Estimate):
        return done
    result = done.result
    result.usage, result.usage_text, result.kept = done.usage_numbers(), done.usage_text(), len(existing)
    # a live run names its batch files only while the set waits for their answers
    result.batch_note = done.batch_note if on.name == "batch" or result.pending else ""
    return result


def _refuse_worked_out(options: GenerateOptions) -> None:
    """A field of the options that ``generate`` works out itself, given in ``options=``, is refused: it
    would silently go unused."""
    defaults = GenerateOptions()
    set_here = [name for name in GENERATE_WORKED_OUT if getattr(options, name) != getattr(defaults, name)]
    if set_here:
        raise TypeError(
            f"GenerateOptions({', '.join(f'{n}=...' for n in set_here)}) is worked out by generate: "
            "give limit= or per_chunk= in the options, and max_calls as a keyword or in config="
        )
