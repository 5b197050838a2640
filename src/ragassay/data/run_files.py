"""The run reader: TREC, three columns, BEIR TSV, JSON Lines, and ranx's JSON and Parquet runs.

The queries a run was asked (``RUN.run.json`` beside it) are all queries of the run, so a query
that returned nothing keeps an empty ranking and scores 0.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InputError
from . import roles
from .column_bytes import trim_heap
from .column_formats import RunFormat, blank_comments, column_layout, resolve_format
from .column_keys import factorize
from .column_reading import WholeReadScan, arrow_table_columns, decode_ids, decode_vocab, parse_scores, plain_file_head
from .columns import read_columns
from .lines import check_id, iter_jsonl, read_bytes_checked, required_field
from .peer_files.binary_tables import binary_table_columns, binary_table_kind
from .peer_files.ranx_json import json_table_columns
from .peer_files.table_columns import run_from_columns
from .run_asked import read_asked, with_asked
from .tables import Run, encode_ids, query_codes


def read_run(path: str | Path, format: RunFormat = "auto", dedupe: bool = False, name: str | None = None) -> Run:
    """Read a retrieval run: TREC six columns (``qid Q0 docid rank score tag``), JSONL or TSV.

    Documents are ranked by score (descending, ties by document id descending, as trec_eval
    does); the rank column is ignored. A document listed twice for one query is an error unless
    ``dedupe`` is true, which keeps its highest score. ``name`` defaults to the TREC tag or the
    file name. The queries the run was asked (``RUN.run.json`` beside it, :mod:`.run_asked`) are
    all queries of the run: one that returned nothing has an empty ranking (it scores 0).
    """
    if str(path) != "-" and Path(path).is_file() and os.path.getsize(path) == 0:
        asked = read_asked(path)
        if asked is not None:  # every query asked returned nothing: the file is empty, the run is not
            return Run(
                list(asked.queries),
                np.zeros(0, np.int64),
                encode_ids([]),
                np.zeros(0),
                name or asked.run or Path(path).name.split(".")[0] or "run",
                str(path),
            )
    return with_asked(_read_run_file(path, format, dedupe, name), path)


COLUMN_FORMATS = ("trec", "trec3", "beir")


def _read_run_file(path: str | Path, format: RunFormat, dedupe: bool, name: str | None) -> Run:
    """The rows of a run file, as :func:`read_run` reads them (without its sidecar's queries): ranx's
    Parquet, a plain column file through pyarrow, or the whole file read and told apart by content."""
    default_name = _default_name(path)
    named = name or default_name
    binary = binary_table_kind(path) if format == "auto" else None
    if binary is not None:  # ranx's Parquet (q_id, doc_id, score); LZ4 is refused, saying so
        return run_from_columns(binary_table_columns(path, binary, "run"), named, path, dedupe)
    head = plain_file_head(path)
    if head is not None:  # a plain file: pyarrow may stream it without the whole file in memory
        fast = _fast_column_run(path, head, format, dedupe, name, default_name)
        if fast is not None:
            return fast
    holder = [blank_comments(read_bytes_checked(path))]  # handed over: read_columns frees the bytes once split
    document = json_table_columns(holder[0], path, "run") if format == "auto" else None
    if document is not None:  # ranx's {query: {doc: score}}
        return run_from_columns(document, named, path, dedupe)
    fmt = resolve_format(holder[0], path, "run", format, check_role=head is None)  # (else the head was checked)
    if fmt in COLUMN_FORMATS:
        run, lines = _column_run(holder, path, fmt, name, default_name)
    elif fmt == "jsonl":
        run, lines = _jsonl_run(holder.pop(), path, format == "auto", named)
    else:
        raise InputError(f"unknown run format {format!r}: use trec, trec3, jsonl or beir", path)
    run = run.deduplicated() if dedupe else run.checked(lines)
    trim_heap()  # the parse's temporaries are gone: return their pages before the next phase
    return run


def _default_name(path: str | Path) -> str:
    """A run's name when neither the caller nor a TREC tag gives one: the file's name up to its first dot."""
    return "stdin" if str(path) == "-" else (Path(path).name.split(".")[0] or "run")


def _fast_column_run(
    path: str | Path, head: bytes, format: RunFormat, dedupe: bool, name: str | None, default_name: str
) -> Run | None:
    """The run of a plain column file parsed by pyarrow, or None when the whole-file read must read it
    instead: pyarrow is not used, a scan found what only that read can name (a lone \\r, bytes not
    UTF-8), or the rows hold a problem whose line only the numpy splitter knows."""
    fmt = resolve_format(head, path, "run", format)
    if fmt not in COLUMN_FORMATS:
        return None
    trec, skip, tag = column_layout(head, fmt)
    scan = WholeReadScan(path)
    fast = arrow_table_columns(
        str(path), 6 if trec else 3, [(0, "codes"), (2 if trec else 1, "id"), (4 if trec else 2, "float")], skip, head
    )
    if scan.needed() or fast is None:  # a lone \r or bytes not UTF-8 somewhere: the whole-file read names the line
        return None
    (qidx, distinct), docs, scores = fast
    run = Run(decode_ids(distinct, path), qidx, docs, scores, name or tag or default_name, str(path))
    trim_heap()  # pyarrow's table is gone: its pages go back before the duplicate check
    try:
        run = run.deduplicated() if dedupe else run.checked(None)
    except InputError:
        return None  # read again by the caller: the numpy splitter names the lines
    trim_heap()  # the parse's temporaries are gone: return their pages before the next phase
    return run


def _column_run(
    holder: list[bytes], path: str | Path, fmt: str, name: str | None, default_name: str
) -> tuple[Run, np.ndarray]:
    """A run in TREC or three columns split by numpy, and the line of each row. ``holder`` hands over
    the file's bytes, which :func:`read_columns` frees once they are split."""
    trec, skip, tag = column_layout(holder[0], fmt)
    # TREC: qid Q0 docid rank score, then the tag (optional) and any fields after it (ignored)
    (qcol, docs, scores), lines = read_columns(
        holder,
        5 if trec else 3,
        path,
        [(0, None), (2 if trec else 1, None), (4 if trec else 2, parse_scores)],
        skip_lines=skip,
        max_cols=None if trec else 3,
    )
    if not len(lines):
        raise InputError("no results in file", path)
    vocab: dict[bytes, int] = {}
    qidx = factorize(qcol, vocab)
    del qcol
    return Run(decode_vocab(vocab, path), qidx, docs, scores, name or tag or default_name, str(path)), lines


def _jsonl_run(data: bytes, path: str | Path, check_role: bool, name: str) -> tuple[Run, np.ndarray]:
    """A run in JSON Lines (query_id, chunk_id, score), and the line of each row. With ``check_role``
    (the format was detected, not named), a line that reads as a judgment refuses the file as qrels."""
    rows = []
    for no, obj in iter_jsonl(data, path):
        q = required_field(obj, ("query_id", "qid"), path, no)
        d = required_field(obj, ("chunk_id", "doc_id", "docid"), path, no)
        if "score" not in obj and check_role and (evidence := roles.jsonl_run_evidence(obj)) is not None:
            raise roles.refuse_role(path, no, "qrels, not a run", evidence, "give it as QRELS")
        s = required_field(obj, ("score",), path, no)
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(s):
            raise InputError(f"score must be a finite number, got {s!r}", path, no)
        rows.append((check_id(q, "query id", path, no), check_id(d, "chunk id", path, no), float(s), no))
    if not rows:
        raise InputError("no results in file", path)
    queries, qidx = query_codes(r[0] for r in rows)
    run = Run(queries, qidx, encode_ids(r[1] for r in rows), np.array([r[2] for r in rows]), name, str(path))
    return run, np.array([r[3] for r in rows], dtype=np.int64)
