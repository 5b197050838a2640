"""The qrels reader: TREC, three columns, BEIR TSV, JSON Lines, and the peers' qrels files.

Every qrels read carries its origin (who made the labels): the sidecar beside the file, or what the
fields of its JSON lines say.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError
from . import roles
from .beir_folders import dataset_member
from .column_bytes import trim_heap
from .column_formats import QrelsFormat, blank_comments, header_line, resolve_format
from .column_keys import factorize
from .column_reading import (
    GRADE_LIMIT,
    INTEGRAL,
    WholeReadScan,
    arrow_table_columns,
    decode_ids,
    decode_vocab,
    parse_grades,
    plain_file_head,
)
from .columns import read_columns
from .lines import WrittenFloat, check_id, iter_jsonl, read_bytes_checked, required_field
from .origin import label_origin
from .peer_files.binary_tables import binary_table_columns, binary_table_kind
from .peer_files.ranx_json import json_table_columns
from .peer_files.table_columns import qrels_from_columns
from .tables import Qrels, encode_ids, query_codes


def read_qrels(path: str | Path, format: QrelsFormat = "auto") -> Qrels:
    """Read relevance judgments: TREC (``qid 0 docid grade``), JSONL or BEIR TSV.

    JSONL lines carry ``query_id``, ``chunk_id`` (or ``doc_id``) and an integer ``grade``
    (``relevance`` is accepted too). Grades are integers; negative grades mean non-relevant. A BEIR
    folder gives its qrels/test.tsv.
    """
    path = dataset_member(path, "qrels")
    binary = binary_table_kind(path) if format == "auto" else None
    if binary is not None:  # ranx's Parquet (q_id, doc_id, score); LZ4 is refused, saying so
        out = qrels_from_columns(binary_table_columns(path, binary, "qrels"), path)
        out.origin = label_origin(path)
        return out
    head = plain_file_head(path)
    if head is not None:  # a plain file: pyarrow may stream it without the whole file in memory
        fast = _fast_column_qrels(path, head, format)
        if fast is not None:
            return fast
    data = blank_comments(read_bytes_checked(path))
    document = json_table_columns(data, path, "qrels") if format == "auto" else None
    if document is not None:  # ranx's {query: {doc: grade}}, LlamaIndex's relevant_docs
        out = qrels_from_columns(document, path)
        out.origin = label_origin(path)
        return out
    fmt = resolve_format(data, path, "qrels", format, check_role=head is None)  # (else the head was checked)
    if fmt == "trec":
        out = _read_columns_qrels(data, path, ncols=4, q_col=0, d_col=2, g_col=3, skip=header_line(data))
    elif fmt in ("beir", "trec3"):
        out = _read_columns_qrels(data, path, ncols=3, q_col=0, d_col=1, g_col=2, skip=header_line(data))
    elif fmt == "jsonl":
        out, line_origins = _read_jsonl_qrels(data, path, format == "auto")
        out.origin = label_origin(path, line_origins)
        return out
    else:
        raise InputError(f"unknown qrels format {format!r}: use trec, trec3, jsonl or beir", path)
    out.origin = label_origin(path)  # who made the labels: the sidecar beside the file, else unknown
    return out


def _fast_column_qrels(path: str | Path, head: bytes, format: QrelsFormat) -> Qrels | None:
    """The qrels of a plain column file parsed by pyarrow, with their origin, or None when the whole-file
    read must read it instead: pyarrow is not used, a scan found what only that read can name (a lone
    carriage return, bytes not UTF-8), or a pair is judged twice (the numpy splitter names the lines)."""
    fmt = resolve_format(head, path, "qrels", format)
    if fmt not in ("trec", "trec3", "beir"):
        return None
    trec = fmt == "trec"
    scan = WholeReadScan(path)
    fast = arrow_table_columns(
        str(path),
        4 if trec else 3,
        [(0, "codes"), (2 if trec else 1, "id"), (3 if trec else 2, "int")],
        header_line(head),
        head,
    )
    if scan.needed() or fast is None:  # a lone \r or bytes not UTF-8 somewhere: the whole-file read names the line
        return None
    (qidx, distinct), docs, grades = fast
    out = Qrels(decode_ids(distinct, path), qidx, docs, grades, source=str(path))
    trim_heap()  # pyarrow's table is gone: its pages go back before the duplicate check
    try:
        out.check_unique(None)
        out.origin = label_origin(path)
        return out
    except InputError:
        return None  # read again by the caller: the numpy splitter names the lines


def _read_jsonl_qrels(data: bytes, path: str | Path, check_role: bool = True) -> tuple[Qrels, list[dict]]:
    """JSON Lines qrels, and what each line says of who made it (assessor, model, prompt)."""
    rows, line_origins = [], []
    for no, obj in iter_jsonl(data, path, keep_float_text=True):
        line_origins.append({k: obj.get(k) for k in ("assessor", "model", "prompt", "record")})
        q = required_field(obj, ("query_id", "qid"), path, no)
        d = required_field(obj, ("chunk_id", "doc_id", "docid"), path, no)
        if check_role and (evidence := roles.jsonl_qrels_evidence(obj)) is not None:
            raise roles.refuse_role(
                path, no, "a run, not qrels", evidence, "give it as a RUN (are the arguments in the right order?)"
            )
        g = required_field(obj, ("grade", "relevance"), path, no)
        if g is None:
            if obj.get("status") == "error":
                continue  # a failed judgment carries no grade: it is not a judgment
            raise InputError(
                'grade is null: a judgment needs an integer grade (a failed judgment says "status": "error")', path, no
            )
        if isinstance(g, WrittenFloat) and INTEGRAL.fullmatch(g.text.encode()):
            g = int(g)  # 3.0: an integer written as a float (pandas writes them so)
        if isinstance(g, bool) or not isinstance(g, int):  # 1e2, 2.5, "2", true: not integers as written
            shown = g.text if isinstance(g, WrittenFloat) else json.dumps(g)
            raise InputError(f"grade must be an integer, got {shown}", path, no)
        if abs(g) > GRADE_LIMIT:
            raise InputError(f"grade {g} is out of range (at most {GRADE_LIMIT} either side of 0)", path, no)
        rows.append((check_id(q, "query id", path, no), check_id(d, "chunk id", path, no), int(g), no))
    return _qrels_from_rows(rows, path), line_origins


def _qrels_from_rows(rows: list[tuple[str, str, int, int]], path: str | Path) -> Qrels:
    if not rows:
        raise InputError("no judgments in file", path)
    queries, qidx = query_codes(r[0] for r in rows)
    out = Qrels(
        queries, qidx, encode_ids(r[1] for r in rows), np.array([r[2] for r in rows], dtype=np.int64), source=str(path)
    )
    out.check_unique(np.array([r[3] for r in rows], dtype=np.int64))
    return out


def _read_columns_qrels(
    data: bytes, path: str | Path, ncols: int, q_col: int, d_col: int, g_col: int, skip: int
) -> Qrels:
    fast = arrow_table_columns(data, ncols, [(q_col, "codes"), (d_col, "id"), (g_col, "int")], skip)
    if fast is not None:
        (qidx, distinct), docs, grades = fast
        out = Qrels(decode_ids(distinct, path), qidx, docs, grades, source=str(path))
        try:
            out.check_unique(None)
            return out
        except InputError:
            pass  # read again below: the numpy splitter names the lines
    (qcol, docs, grades), lines = read_columns(
        data, ncols, path, [(q_col, None), (d_col, None), (g_col, parse_grades)], skip_lines=skip
    )
    if not len(lines):
        raise InputError("no judgments in file", path)
    vocab: dict[bytes, int] = {}
    qidx = factorize(qcol, vocab)
    out = Qrels(decode_vocab(vocab, path), qidx, docs, grades, source=str(path))
    out.check_unique(lines)
    return out
