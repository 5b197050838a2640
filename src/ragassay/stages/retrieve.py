"""Turning a user's retriever into a run: ``run_retriever(retriever, queries, k)``.

The retriever may be a function of the query text that returns ranked ids or ``(id, score)`` pairs,
best first; a LlamaIndex or LangChain retriever object; or a factory that makes one
(:mod:`~ragassay.stages.retriever_objects` says how each is called and where a result's chunk id is
found). Results without scores (plain ids, LangChain documents, LlamaIndex nodes scored None) get
the score ``k - rank + 1``, so that trec_eval ranks them in the order they were returned. The
latency of each query is recorded. When the chunk ids are given, every returned id must be one of
them, and the run and the chunks are joined with a count of each side, so that a retriever built
on another corpus is caught before it is scored.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.chunk_table import chunk_source
from ..data.io import read_queries, write_run
from ..data.joins import Join, Side
from ..data.result_models import RetrieveResult
from ..data.run_asked import file_digest, write_asked
from ..data.tables import Run, encode_ids
from ..errors import InputError, RagassayError, UsageError
from .retriever_loading import load_retriever
from .retriever_objects import IdField, adapt, read_result
from .retriever_results import results_of

Retriever = Callable[[str], Iterable[Any]]


@dataclass
class Retrieval:
    """A retriever's run, what the retriever was (``kind``: function, llamaindex, langchain), where
    its chunk ids were read (``id_field``, for objects), how many results repeated a chunk already
    returned for the query (``repeated``: several nodes of one chunk, the best kept) and, when chunk
    ids were given, how the run's ids met them (``chunks``)."""

    run: Run
    kind: str
    id_field: str | None
    repeated: int
    chunks: Join | None
    output: Path | None = None
    latency_file: Path | None = None
    asked_file: Path | None = None

    @property
    def empty(self) -> list[str]:
        """The queries the retriever returned nothing for (each scores 0: the run says it was asked)."""
        if not len(self.run.queries):
            return []
        counts = np.bincount(self.run.qidx, minlength=len(self.run.queries)).tolist()
        return [q for q, n in zip(self.run.queries, counts) if n == 0]

    def to_dict(self) -> dict:
        """The ``retrieve`` result: counts, latency (median, 95th percentile), the join's counts."""
        ms = sorted(self.run.latency_ms.values()) or [0.0]
        return RetrieveResult(
            run=self.run.name,
            queries=len(self.run.queries),
            results=len(self.run),
            output=None if self.output is None else str(self.output),
            latency_ms={"p50": ms[len(ms) // 2], "p95": ms[min(len(ms) - 1, int(len(ms) * 0.95))]},
            latency_file=None if self.latency_file is None else str(self.latency_file),
            retriever=self.kind,
            id_field=self.id_field,
            repeated=self.repeated,
            chunks=None if self.chunks is None else self.chunks.to_dict(),
            without_results=len(self.empty),
            asked_file=None if self.asked_file is None else str(self.asked_file),
        ).to_dict()


def retrieve(
    retriever: Any,
    queries: str | Path | Mapping[str, str] | Iterable[Any],
    *,
    chunks: str | Path | Mapping[str, Any] | Iterable[Any] | None = None,
    id_field: str | None = None,
    k: int = 100,
    output: str | Path | None = None,
    name: str | None = None,
    quiet: bool = False,
) -> Retrieval:
    """Run a retriever over the queries and, given ``output``, write the run: ``ragassay retrieve``
    and ``ragassay.api.retrieve``. ``retriever`` is anything :func:`run_retriever` takes, or
    ``"module:NAME"`` / ``"file.py:NAME"`` naming it (the run then tagged NAME); ``queries`` a file,
    ``{id: text}`` or query items (``.id``, ``.text``); ``chunks`` a file, ``{id: chunk}``, or chunks,
    dicts or ids, whose ids every returned id must be one of."""
    if k < 1:
        raise UsageError(f"k must be at least 1, got {k}")
    spec = retriever if isinstance(retriever, str) else None
    made = load_retriever(spec) if spec is not None else retriever
    texts, chunk_ids = _query_texts(queries), _chunk_ids(chunks)
    file = queries if isinstance(queries, (str, Path)) else None
    return _retrieved(
        made,
        spec,
        _Inputs(
            texts,
            chunk_ids,
            str(chunks) if isinstance(chunks, (str, Path)) else None,
            None if file is None else str(file),
            None if file is None or output is None else _file_digest(file),  # (only a run written names it)
        ),
        id_field=id_field,
        k=k,
        output=output,
        name=name,
        quiet=quiet,
    )


def retrieve_texts(
    retriever: Any,
    queries: Mapping[str, str],
    *,
    chunk_ids: Collection[str] | None = None,
    chunks_file: str | Path | None = None,
    queries_file: str | Path | None = None,
    queries_digest: str | None = None,
    id_field: str | None = None,
    k: int = 100,
    output: str | Path | None = None,
    name: str | None = None,
    quiet: bool = False,
) -> Retrieval:
    """:func:`retrieve` handed the query texts and chunk ids already read (the pipeline reads each
    input once for all its retrievers) and the files they came from: ``chunks_file`` names the chunks
    in the join and its errors; ``queries_file`` and ``queries_digest`` (its ``file_digest``) are what
    the run's ``RUN.run.json`` records, as :func:`retrieve` given those files writes them."""
    if k < 1:
        raise UsageError(f"k must be at least 1, got {k}")
    spec = retriever if isinstance(retriever, str) else None
    made = load_retriever(spec) if spec is not None else retriever
    return _retrieved(
        made,
        spec,
        _Inputs(
            queries,
            chunk_ids,
            None if chunks_file is None else str(chunks_file),
            None if queries_file is None else str(queries_file),
            queries_digest,
        ),
        id_field=id_field,
        k=k,
        output=output,
        name=name,
        quiet=quiet,
    )


@dataclass(frozen=True)
class _Inputs:
    """What a retriever is run over and what its run's files name: the query texts, the chunk ids
    returned ids must be one of (named by their file), and the queries' file and its digest."""

    texts: Mapping[str, str]
    chunk_ids: Collection[str] | None
    chunks_file: str | None
    queries_file: str | None
    queries_digest: str | None


def _retrieved(
    made: Any,
    spec: str | None,
    given: _Inputs,
    *,
    id_field: str | None,
    k: int,
    output: str | Path | None,
    name: str | None,
    quiet: bool,
) -> Retrieval:
    """The retriever run over the query texts, checked against the chunk ids, and, given ``output``,
    its run written with its sidecars naming the queries' file and digest."""
    retrieval = retrieve_run(
        made,
        given.texts,
        k,
        name or (spec.rpartition(":")[2] if spec else None),
        False if quiet else None,
        id_field=id_field,
        chunk_ids=given.chunk_ids,
        chunks_source=given.chunks_file,
    )
    if output is None:
        return retrieval
    about = {
        "retriever": spec or retrieval.kind,
        "k": k,
        "command": "retrieve",
        "queries_file": given.queries_file,
        "queries_digest": given.queries_digest,
    }
    return write_run_files(retrieval, output, about)


def _file_digest(path: str | Path) -> str | None:
    try:
        return file_digest(path) if str(path) != "-" else None
    except OSError:
        return None


def _query_texts(queries: str | Path | Mapping[str, str] | Iterable[Any]) -> dict[str, str]:
    if isinstance(queries, (str, Path)):
        return read_queries(queries)
    if isinstance(queries, Mapping):
        return {str(q): str(t) for q, t in queries.items()}
    given: Iterable[Any] = queries  # objects with an id and a text
    return {str(q.id): str(q.text) for q in given}


def _chunk_ids(chunks: str | Path | Mapping[str, Any] | Iterable[Any] | None) -> Collection[str] | None:
    """The chunk ids: a file's as :func:`~ragassay.data.chunk_table.chunk_source` holds them (a large
    file as where each line lies), a mapping's keys, or each item's ``id`` (a chunk, a dict, an id)."""
    if chunks is None:
        return None
    if isinstance(chunks, (str, Path)):
        return chunk_source(chunks)
    if isinstance(chunks, Mapping):
        return frozenset(map(str, chunks))
    return frozenset(str(c["id"] if isinstance(c, dict) else getattr(c, "id", c)) for c in chunks)


def run_retriever(
    fn: Any,
    queries: Mapping[str, str],
    k: int = 100,
    name: str | None = None,
    progress: bool | None = None,
    *,
    id_field: str | None = None,
    chunk_ids: Collection[str] | None = None,
    chunks_source: str | Path | None = None,
) -> Run:
    """Call the retriever on every query and collect its top ``k`` results as a :class:`Run`.

    ``fn`` is a function of the query text, a LlamaIndex or LangChain retriever, or a factory making
    one; ``id_field`` says where a returned node or document holds the chunk id (``id``,
    ``ref_doc_id``, ``metadata.KEY``). A plain id returned twice for one query, or a result of another
    shape, raises a :class:`RagassayError` naming the query; a node or document repeating a chunk id
    is dropped (the first kept). With ``chunk_ids``, an id that is not one of them is an
    :class:`InputError`. ``run.latency_ms`` maps query id -> milliseconds. :func:`retrieve_run` gives
    the counts as well.
    """
    return retrieve_run(
        fn, queries, k, name, progress, id_field=id_field, chunk_ids=chunk_ids, chunks_source=chunks_source
    ).run


def retrieve_run(
    fn: Any,
    queries: Mapping[str, str],
    k: int = 100,
    name: str | None = None,
    progress: bool | None = None,
    *,
    id_field: str | None = None,
    chunk_ids: Collection[str] | None = None,
    chunks_source: str | Path | None = None,
) -> Retrieval:
    """:func:`run_retriever`, keeping what the retriever was and the counts (a :class:`Retrieval`)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    field = IdField.parse(id_field)
    adapted = adapt(fn)
    label = name or adapted.name  # what errors call it: the run's name, else the function's
    if chunk_ids is not None and not isinstance(chunk_ids, (AbstractSet, Mapping)):
        chunk_ids = frozenset(map(str, chunk_ids))
    show = sys.stderr.isatty() if progress is None else progress
    got = _Collected()
    qids = list(queries)
    bar = _progress(len(qids), show)
    for qi, qid in enumerate(qids):
        results, got.latency[qid] = _search(adapted, label, qid, queries[qid])
        try:
            ranked, dropped = _ranked(results, field, qid, k)
        except RagassayError as e:  # a result of another shape: which retriever gave it
            raise RagassayError(f"the retriever {label!r}: {e}") from None
        if chunk_ids is not None:
            _require_chunks(ranked, chunk_ids, qid, field, adapted.kind, chunks_source)
        got.add(qi, ranked, results, dropped, k)
        bar(qi + 1)
    run = Run(
        qids,
        np.array(got.q_rows, dtype=np.int64),
        encode_ids(got.d_rows),
        np.array(got.s_rows, dtype=np.float64),
        name or adapted.name,
        latency_ms=got.latency,
    )
    got.warn(adapted.kind, bool(qids), k, checked=chunk_ids is not None)
    join = None if chunk_ids is None else _chunks_join(got.d_rows, chunk_ids, chunks_source)
    return Retrieval(
        run, adapted.kind, None if adapted.kind == "function" and id_field is None else field.spec, got.repeated, join
    )


@dataclass
class _Collected:
    """The run's rows as the queries are answered, and the counts said after: repeats dropped, the
    most results any query got, and the integers returned as ids."""

    q_rows: list[int] = dataclass_field(default_factory=list)
    d_rows: list[str] = dataclass_field(default_factory=list)
    s_rows: list[float] = dataclass_field(default_factory=list)
    latency: dict[str, float] = dataclass_field(default_factory=dict)
    repeated: int = 0
    most: int = 0
    integers: int = 0

    def add(self, qi: int, ranked: list[tuple[str, float]], results: list[Any], dropped: int, k: int) -> None:
        self.integers += sum(1 for item in results[:k] if _integer_id(item))
        self.repeated += dropped
        self.most = max(self.most, len(results))
        self.q_rows += [qi] * len(ranked)
        self.d_rows += [doc for doc, _ in ranked]
        self.s_rows += [score for _, score in ranked]

    def warn(self, kind: str, any_query: bool, k: int, checked: bool) -> None:
        """Said on stderr after the run: a retriever object's own top k cutting the run (LlamaIndex's
        similarity_top_k is 2 unless set), and integers taken as ids with no chunks to check them."""
        if kind != "function" and any_query and self.most < k:
            print(
                f"warning: the retriever returned at most {self.most} results for a query, fewer than the {k} "
                "asked: its own top k cuts the run (LlamaIndex: as_retriever(similarity_top_k=N); LangChain: "
                "as_retriever(search_kwargs={'k': N}))",
                file=sys.stderr,
            )
        if self.integers and not checked:
            _warn_integers(self.integers, len(self.d_rows), self.d_rows)


def _search(adapted: Any, label: str, qid: str, text: str) -> tuple[list[Any], float]:
    """One query's results and how long the retriever took, in milliseconds; the user's code failing
    is said with the query it failed on, its cause kept."""
    t0 = time.perf_counter()
    try:
        returned = adapted.search(text)
    except Exception as e:
        raise RagassayError(f"retriever {label!r} failed on query {qid!r}: {type(e).__name__}: {e}") from e
    results = results_of(returned, label, qid)  # None, a string, a dict: refused, naming them
    return results, (time.perf_counter() - t0) * 1000.0


def _chunks_join(d_rows: list[str], chunk_ids: Collection[str], chunks_source: str | Path | None) -> Join:
    """How the run's chunk ids met the chunks given to check them."""
    return Join(
        "chunk ids",
        Side("the run", None, frozenset(d_rows)),
        Side("the chunks", None if chunks_source is None else str(chunks_source), frozenset(map(str, chunk_ids))),
    )


def _integer_id(item: Any) -> bool:
    """Whether a result is an integer, alone or as the id of an (id, score) pair."""
    return type(item) is int or (type(item) is tuple and len(item) == 2 and type(item[0]) is int)


def _warn_integers(integers: int, total: int, ids: list[str]) -> None:
    """Integers returned as chunk ids with no chunks to check them against: taken as their digits,
    said with counts (an index's positions are integers too, and would meet no chunk id)."""
    digits = list(dict.fromkeys(d for d in ids if d.lstrip("-").isdigit()))
    shown = ", ".join(repr(d) for d in digits[:3]) + (", ..." if len(digits) > 3 else "")
    print(
        f"warning: the retriever returned integers as chunk ids ({integers} of {total} results), taken as the "
        f"ids {shown}: if they are positions in an index, not your chunk ids, return the chunk ids; give the chunks "
        "(retrieve --chunks, chunk_ids= in Python) to have every id checked against them",
        file=sys.stderr,
    )


def _ranked(results: list[Any], field: IdField, qid: str, k: int) -> tuple[list[tuple[str, float]], int]:
    """The query's top ``k`` distinct chunk ids with their scores, and how many repeats were dropped.
    A query whose results are not all scored is ranked as returned (``k - rank + 1`` each)."""
    ids: list[str] = []
    scores: list[Any] = []
    seen: set[str] = set()
    dropped = 0
    for rank, item in enumerate(results, start=1):
        if len(ids) == k:
            break
        if type(item) is str:  # the common shapes first, without a Found each
            doc, score, from_object = item, None, False
        elif type(item) is tuple and len(item) == 2 and type(item[0]) is str:
            doc, score, from_object = item[0], item[1], False
        else:
            hit = read_result(item, field, qid, rank)
            doc, score, from_object = hit.chunk_id, hit.score, hit.from_object
        if doc in seen:
            if not from_object:
                raise RagassayError(f"retriever returned {doc!r} twice for query {qid!r}")
            dropped += 1
            continue
        seen.add(doc)
        ids.append(doc)
        scores.append(score)
    if any(score is None for score in scores):
        return [(doc, float(k - i)) for i, doc in enumerate(ids)], dropped
    return [(doc, _score(score, qid)) for doc, score in zip(ids, scores)], dropped


def _score(score: Any, qid: str) -> float:
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise RagassayError(f"retriever gave a non-numeric score {score!r} for query {qid!r}") from None
    if not math.isfinite(value):
        raise RagassayError(f"retriever gave a non-finite score {score!r} for query {qid!r}")
    return value


def _require_chunks(
    ranked: list[tuple[str, float]],
    chunk_ids: Collection[str],
    qid: str,
    field: IdField,
    kind: str,
    source: str | Path | None,
) -> None:
    """Every id returned must be a chunk id: the first that is not stops the run, naming where it was read."""
    for rank, (doc, _) in enumerate(ranked, start=1):
        if doc not in chunk_ids:
            read = "returned" if kind == "function" else f"read from its {field.spec}"
            fix = (
                "return the chunk ids of that file"
                if kind == "function"
                else "name where the chunk id is kept with retrieve --id-field, id_field= in Python (id, ref_doc_id "
                "or "
                f"metadata.KEY; now "
                f"{field.spec})"
            )
            shown = sorted(map(str, chunk_ids))[:3]
            raise InputError(
                f"the retriever's result at rank {rank} for query {qid!r} is {doc!r} ({read}), which is "
                f"not a chunk id of the chunks ({', '.join(shown)}, ...): {fix}",
                source,
            )


def _progress(total: int, show: bool) -> Callable[[int], None]:
    if not show or total == 0:
        return lambda answered: None
    start = time.perf_counter()

    def update(answered: int) -> None:
        if answered == total or answered % max(1, total // 100) == 0:
            rate = answered / max(time.perf_counter() - start, 1e-9)
            end = "\n" if answered == total else ""
            print(f"\rretrieving: {answered}/{total} queries ({rate:.1f}/s)", end=end, file=sys.stderr, flush=True)

    return update


def write_run_files(retrieval: Retrieval, output: str | Path, about: dict | None = None) -> Retrieval:
    """Write the run to ``output``, the queries it was asked (``OUTPUT.run.json``: a query that
    returned nothing is a query of the run all the same, which a TREC file cannot say; ``about``
    names the retriever and the queries) and each query's latency (``OUTPUT.latency.json``);
    returns the retrieval, which now names the files."""
    out = Path(output)
    write_run(out, retrieval.run)
    retrieval.asked_file = write_asked(
        out,
        retrieval.run.queries,
        run=(retrieval.run.name or "run").replace(" ", "_"),
        **(about or {"command": "retrieve"}),
    )
    latency_file = out.with_name(out.name + ".latency.json")
    latency_file.write_text(json.dumps(retrieval.run.latency_ms, indent=1) + "\n", encoding="utf-8")
    retrieval.output, retrieval.latency_file = out, latency_file
    return retrieval
