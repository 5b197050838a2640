"""The writers of ragassay's own files: records as JSON Lines, runs and qrels in TREC format, each
TREC file with its sidecar (the queries a run was asked, who made the labels).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .lines import check_id, write_lines_atomic
from .origin import sidecar_path, write_origin
from .run_asked import remove_asked, write_asked
from .tables import Qrels, Run


def write_jsonl(path: str | Path, records: Iterable[Any]) -> int:
    """Write records (pydantic models or dicts) as JSON Lines, atomically; returns how many."""
    lines = [
        json.dumps(r.model_dump(mode="json") if hasattr(r, "model_dump") else r, ensure_ascii=False) for r in records
    ]
    write_lines_atomic(path, lines)
    return len(lines)


def write_run(path: str | Path, run: Run, tag: str | None = None) -> None:
    """Write a run in TREC format, ranked as trec_eval would rank it. A TREC file cannot hold a query
    with an empty ranking: when the run has one, ``PATH.run.json`` beside it lists every query asked
    (:mod:`.run_asked`), so readers keep it as a query that scores 0; otherwise a stale one is removed."""
    tag = (tag or run.name or "run").replace(" ", "_")
    lines = []
    for qid, docs in run.ranked().items():
        check_id(qid, "query id", None, None)
        for rank, (doc, score) in enumerate(docs, start=1):
            lines.append(f"{qid} Q0 {check_id(doc, 'chunk id', None, None)} {rank} {score!r} {tag}")
    write_lines_atomic(path, lines)
    if len(run.queries) and np.bincount(run.qidx, minlength=len(run.queries)).min() == 0:
        write_asked(path, run.queries, run=tag, command="write_run")
    else:
        remove_asked(path)


def write_qrels(path: str | Path, qrels: Qrels | Mapping[str, Mapping[str, int]], origin: Any = None) -> int:
    """Write qrels in TREC format (``qid 0 docid grade``), sorted; the one qrels writer. Returns rows.
    ``origin`` (:class:`ragassay.data.origin.Origin`: who made the labels) is written beside it, in
    ``PATH.origin.json``, which TREC readers never see; without one, a stale sidecar is removed."""
    rows = (
        qrels.rows() if isinstance(qrels, Qrels) else ((q, d, g) for q, docs in qrels.items() for d, g in docs.items())
    )
    lines = [
        f"{check_id(q, 'query id', None, None)} 0 {check_id(d, 'chunk id', None, None)} {int(g)}"
        for q, d, g in sorted(rows)
    ]
    write_lines_atomic(path, lines)
    if origin is not None:
        write_origin(path, origin)
    else:
        sidecar_path(path).unlink(missing_ok=True)  # an earlier writer's word would be wrong now
    return len(lines)
