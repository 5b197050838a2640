"""Turn a user's search function into a run: ``run_retriever(fn, queries, k)``.

``fn(query_text)`` returns ranked ids, or ``(id, score)`` pairs, best first. Ids without scores
get ``k - rank + 1`` (so trec_eval ranks them as returned); per-query latency is recorded.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, RagassayError
from ..data.tables import Run, encode_ids

Retriever = Callable[[str], Iterable[Any]]


def run_retriever(fn: Retriever, queries: Mapping[str, str], k: int = 100, name: str | None = None,
                  progress: bool | None = None) -> Run:
    """Call ``fn`` on every query and collect its top ``k`` results as a :class:`Run`.

    A result is an id (``str``/``int``) or an ``(id, score)`` pair; a list of plain ids is taken as
    ranked best first. An id returned twice for one query, or a result of another shape, raises a
    :class:`RagassayError` naming the query. ``run.latency_ms`` maps query id -> milliseconds.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    show = sys.stderr.isatty() if progress is None else progress
    q_rows, d_rows, s_rows = [], [], []
    latency: dict[str, float] = {}
    qids = list(queries)
    bar = _progress(len(qids), show)
    for qi, qid in enumerate(qids):
        t0 = time.perf_counter()
        try:
            results = list(fn(queries[qid]))
        except Exception as e:  # the user's code failed: say on which query, keep the cause
            raise RagassayError(f"retriever failed on query {qid!r}: {type(e).__name__}: {e}") from e
        latency[qid] = (time.perf_counter() - t0) * 1000.0
        seen: set[str] = set()
        for rank, item in enumerate(results[:k]):
            doc, score = _parse_result(item, rank, k, qid)
            if doc in seen:
                raise RagassayError(f"retriever returned {doc!r} twice for query {qid!r}")
            seen.add(doc)
            q_rows.append(qi)
            d_rows.append(doc)
            s_rows.append(score)
        bar(qi + 1)
    run = Run(qids, np.array(q_rows, dtype=np.int64), encode_ids(d_rows),
              np.array(s_rows, dtype=np.float64), name or getattr(fn, "__name__", "retriever"),
              latency_ms=latency)
    return run


def _parse_result(item: Any, rank: int, k: int, qid: str) -> tuple[str, float]:
    if isinstance(item, (str, int)) and not isinstance(item, bool):
        return str(item), float(k - rank)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        doc, score = item
        try:
            value = float(score)
        except (TypeError, ValueError):
            raise RagassayError(f"retriever gave a non-numeric score {score!r} for query {qid!r}") from None
        if not np.isfinite(value):
            raise RagassayError(f"retriever gave a non-finite score {score!r} for query {qid!r}")
        return str(doc), value
    raise RagassayError(f"retriever results must be ids or (id, score) pairs; got {item!r} for query {qid!r}")


def _progress(total: int, show: bool) -> Callable[[int], None]:
    if not show or total == 0:
        return lambda done: None
    start = time.perf_counter()

    def update(done: int) -> None:
        if done == total or done % max(1, total // 100) == 0:
            rate = done / max(time.perf_counter() - start, 1e-9)
            end = "\n" if done == total else ""
            print(f"\rretrieving: {done}/{total} queries ({rate:.1f}/s)", end=end, file=sys.stderr, flush=True)
    return update


def load_callable(spec: str) -> Retriever:
    """Load ``package.module:function`` or ``path/to/file.py:function``."""
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise InputError(f"retriever must look like 'package.module:function' or 'file.py:function', got {spec!r}")
    try:
        if module_part.endswith(".py"):
            path = Path(module_part)
            if not path.exists():
                raise InputError(f"no such file {module_part!r} (of the retriever {spec!r})")
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(mod_spec)
            sys.path.insert(0, str(path.resolve().parent))
            try:
                mod_spec.loader.exec_module(module)
            finally:
                sys.path.pop(0)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(module_part)
    except InputError:
        raise
    except Exception as e:
        raise RagassayError(f"could not import {module_part!r}: {type(e).__name__}: {e}") from e
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise InputError(f"{module_part!r} has no callable named {attr!r}")
    return fn


def write_retrieval(run: Run, output: str | Path, queries: int) -> dict:
    """Write ``run`` to ``output`` and each query's latency beside it (``OUTPUT.latency.json``);
    return the ``retrieve`` result: how many results, and the median and 95th percentile latency."""
    import json

    from ..data.io import write_run
    out = Path(output)
    write_run(out, run)
    latency_file = out.with_name(out.name + ".latency.json")
    latency_file.write_text(json.dumps(run.latency_ms, indent=1) + "\n", encoding="utf-8")
    ms = sorted(run.latency_ms.values()) or [0.0]
    from ..data.result_models import RetrieveResult
    return RetrieveResult(run=run.name, queries=queries, results=len(run), output=str(out),
                          latency_ms={"p50": ms[len(ms) // 2], "p95": ms[min(len(ms) - 1, int(len(ms) * 0.95))]},
                          latency_file=str(latency_file)).to_dict()
