"""Readers and writers for the data contract: TREC, JSON Lines and BEIR files.

Every reader names the file and the line of the first problem it finds. Formats are detected from
the content (not the file name); pass ``format=`` to override the guess.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .columns import factorize, parse_floats, read_columns
from ..errors import InputError
from .tables import Qrels, Run, encode_ids, query_codes

QrelsFormat = Literal["auto", "trec", "jsonl", "beir"]
RunFormat = Literal["auto", "trec", "jsonl", "beir"]

BEIR_HEADER = ("query-id", "corpus-id", "score")


def _read_bytes(path: str | Path) -> bytes:
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", p)
    if p.is_dir():
        raise InputError("is a directory, expected a file", p)
    data = p.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data.startswith(b"\xef\xbb\xbf"):
        data = b"   " + data[3:]  # keep byte offsets, drop the BOM
    if not data or data.isspace():  # (isspace scans without copying a large file)
        raise InputError("file is empty", p)
    return data


def _first_line(data: bytes) -> tuple[str, int]:
    """The first non-blank line (decoded, stripped) and its 1-based number."""
    for no, raw in enumerate(data.split(b"\n", 200)[:200], start=1):
        if raw.strip():
            return raw.decode("utf-8", "replace").strip(), no
    return "", 1


def detect_format(data: bytes, kind: str) -> str:
    """Guess ``trec``, ``jsonl`` or ``beir`` for a qrels or run file from its first line."""
    line, _ = _first_line(data)
    if line.startswith("{"):
        return "jsonl"
    fields = line.split()
    if tuple(f.lower() for f in line.split("\t")) == BEIR_HEADER or (
            len(fields) == 3 and fields[0].lower() in ("query-id", "query_id", "qid")):
        return "beir"
    expected = 6 if kind == "run" else 4
    if len(fields) == expected:
        return "trec"
    other = "run" if kind == "qrels" else "qrels"
    hint = ""
    if len(fields) == (4 if kind == "run" else 6):
        hint = f" (this looks like a {other} file: are the arguments in the right order?)"
    raise InputError(
        f"cannot tell the format of this {kind} file from its first line {line[:100]!r}: expected "
        f"TREC ({expected} columns), JSON Lines or BEIR TSV with a header{hint}; pass --format "
        "to say which", None)


def _resolve_format(data: bytes, path: str | Path, kind: str, format: str) -> str:
    """The explicit format, or the one detected from the content (errors name the file)."""
    if format != "auto":
        return format
    try:
        return detect_format(data, kind)
    except InputError as e:
        raise (InputError(e.message, path, e.line) if e.path is None else e) from None


# --------------------------------------------------------------------------------------------
# qrels


def read_qrels(path: str | Path, format: QrelsFormat = "auto") -> Qrels:
    """Read relevance judgments: TREC (``qid 0 docid grade``), JSONL or BEIR TSV.

    JSONL lines carry ``query_id``, ``chunk_id`` (or ``doc_id``) and an integer ``grade``
    (``relevance`` is accepted too). Grades are integers; negative grades mean non-relevant.
    """
    data = _read_bytes(path)
    fmt = _resolve_format(data, path, "qrels", format)
    if fmt == "trec":
        return _read_columns_qrels(data, path, ncols=4, q_col=0, d_col=2, g_col=3, skip=0)
    if fmt == "beir":
        _, header_line = _first_line(data)
        return _read_columns_qrels(data, path, ncols=3, q_col=0, d_col=1, g_col=2, skip=header_line)
    if fmt == "jsonl":
        rows = []
        for no, obj in iter_jsonl(data, path):
            q = _field(obj, ("query_id", "qid"), path, no)
            d = _field(obj, ("chunk_id", "doc_id", "docid"), path, no)
            g = _field(obj, ("grade", "relevance"), path, no)
            if g is None:
                continue  # a failed judgment (status: error) carries no grade
            if isinstance(g, bool) or not isinstance(g, (int, float)) or g != int(g):
                raise InputError(f"grade must be an integer, got {g!r}", path, no)
            rows.append((str(q), str(d), int(g), no))
        return _qrels_from_rows(rows, path)
    raise InputError(f"unknown qrels format {format!r}: use trec, jsonl or beir", path)


def _qrels_from_rows(rows: list[tuple[str, str, int, int]], path: str | Path) -> Qrels:
    if not rows:
        raise InputError("no judgments in file", path)
    queries, qidx = query_codes(r[0] for r in rows)
    out = Qrels(queries, qidx, encode_ids(r[1] for r in rows),
                np.array([r[2] for r in rows], dtype=np.int64), source=str(path))
    out.check_unique(np.array([r[3] for r in rows], dtype=np.int64))
    return out


def _read_columns_qrels(data: bytes, path: str | Path, ncols: int, q_col: int, d_col: int,
                        g_col: int, skip: int) -> Qrels:
    (qcol, docs, grades), lines = read_columns(
        data, ncols, path, [(q_col, None), (d_col, None), (g_col, _parse_grades)], skip_lines=skip)
    if not len(lines):
        raise InputError("no judgments in file", path)
    vocab: dict[bytes, int] = {}
    qidx = factorize(qcol, vocab)
    out = Qrels(_decode_vocab(vocab, path), qidx, docs, grades, source=str(path))
    out.check_unique(lines)
    return out


def _parse_scores(col: np.ndarray, lines: np.ndarray, path: str | Path) -> np.ndarray:
    return parse_floats(col, lines, path, "score")


def _parse_grades(col: np.ndarray, lines: np.ndarray, path: str | Path) -> np.ndarray:
    try:
        return col.astype(np.int64)
    except (ValueError, OverflowError):
        pass
    values = parse_floats(col, lines, path, "grade")
    bad = np.flatnonzero(values != np.round(values))
    if len(bad):
        i = int(bad[0])
        raise InputError(f"grade must be an integer, got {col[i].decode('utf-8', 'replace')!r}",
                         path, int(lines[i]))
    return values.astype(np.int64)


# --------------------------------------------------------------------------------------------
# runs


def read_run(path: str | Path, format: RunFormat = "auto", dedupe: bool = False,
             name: str | None = None) -> Run:
    """Read a retrieval run: TREC six columns (``qid Q0 docid rank score tag``), JSONL or TSV.

    Documents are ranked by score (descending, ties by document id descending, as trec_eval
    does); the rank column is ignored. A document listed twice for one query is an error unless
    ``dedupe`` is true, which keeps its highest score. ``name`` defaults to the TREC tag or the
    file name.
    """
    data = _read_bytes(path)
    fmt = _resolve_format(data, path, "run", format)
    default_name = Path(path).name.split(".")[0] or "run"
    if fmt in ("trec", "beir"):
        trec = fmt == "trec"
        skip = 0 if trec else _first_line(data)[1]
        first_fields = _first_line(data)[0].split()
        tag = first_fields[5] if trec and len(first_fields) == 6 else None
        (qcol, docs, scores), lines = read_columns(
            data, 6 if trec else 3, path,
            [(0, None), (2 if trec else 1, None), (4 if trec else 2, _parse_scores)], skip_lines=skip)
        del data  # the columns are copies: free the file's bytes before the next steps
        if not len(lines):
            raise InputError("no results in file", path)
        vocab: dict[bytes, int] = {}
        qidx = factorize(qcol, vocab)
        del qcol
        run = Run(_decode_vocab(vocab, path), qidx, docs, scores, name or tag or default_name, str(path))
    elif fmt == "jsonl":
        rows = []
        for no, obj in iter_jsonl(data, path):
            q = _field(obj, ("query_id", "qid"), path, no)
            d = _field(obj, ("chunk_id", "doc_id", "docid"), path, no)
            s = _field(obj, ("score",), path, no)
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(s):
                raise InputError(f"score must be a finite number, got {s!r}", path, no)
            rows.append((str(q), str(d), float(s), no))
        if not rows:
            raise InputError("no results in file", path)
        queries, qidx = query_codes(r[0] for r in rows)
        run = Run(queries, qidx, encode_ids(r[1] for r in rows),
                  np.array([r[2] for r in rows]), name or default_name, str(path))
        lines = np.array([r[3] for r in rows], dtype=np.int64)
    else:
        raise InputError(f"unknown run format {format!r}: use trec, jsonl or beir", path)
    return run.deduplicated() if dedupe else run.checked(lines)


def _decode_vocab(vocab: dict[bytes, int], path: str | Path) -> list[str]:
    try:
        return [k.decode("utf-8") for k in vocab]
    except UnicodeDecodeError:
        raise InputError("query ids are not valid UTF-8", path) from None


# --------------------------------------------------------------------------------------------
# JSON Lines, chunks and queries


def iter_jsonl(data: bytes | str | Path, path: str | Path | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line; bad JSON names file and line."""
    if isinstance(data, (str, Path)):
        path = data
        data = _read_bytes(data)
    for no, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            msg = getattr(e, "msg", str(e))
            raise InputError(f"not valid JSON ({msg}): {raw[:80].decode('utf-8', 'replace')!r}", path, no) from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", path, no)
        yield no, obj


def _field(obj: Mapping[str, Any], names: tuple[str, ...], path: str | Path | None, no: int) -> Any:
    for n in names:
        if n in obj:
            return obj[n]
    raise InputError(f"missing field {names[0]!r} (keys present: {', '.join(sorted(obj)) or 'none'})", path, no)


def read_records(path: str | Path, model: Any, what: str,
                 prepare: Any = None) -> list[tuple[int, Any]]:
    """Validate each JSONL line as ``model`` (a pydantic class with an ``id``); ids must be unique.

    Returns ``(line number, record)`` pairs; ``prepare`` may rewrite each raw object first.
    """
    from pydantic import ValidationError

    out: list[tuple[int, Any]] = []
    seen: dict[str, int] = {}
    for no, obj in iter_jsonl(path):
        if prepare is not None:
            obj = prepare(obj)
        try:
            record = model.model_validate(obj)
        except ValidationError as e:
            raise InputError(_pydantic_message(e), path, no) from None
        if record.id in seen:
            raise InputError(f"{what} id {record.id!r} appears twice (first on line {seen[record.id]})", path, no)
        seen[record.id] = no
        out.append((no, record))
    if not out:
        raise InputError(f"no {what}s in file", path)
    return out


def _beir_id(obj: dict[str, Any]) -> dict[str, Any]:
    if "id" not in obj and "_id" in obj:
        obj = {k: v for k, v in obj.items() if k != "_id"} | {"id": obj["_id"]}
    return obj


def read_chunks(path: str | Path) -> list[Any]:
    """Read chunks (``id``, ``text``, ...) from JSONL; BEIR corpus lines (``_id``) are accepted."""
    from .records import Chunk
    return [c for _, c in read_records(path, Chunk, "chunk", _beir_id)]


def read_queries(path: str | Path) -> dict[str, str]:
    """Read queries as ``{query id: text}``.

    Accepts JSONL with ``id``/``query_id``/``_id`` and ``question``/``query``/``text`` (so a
    questions file from ``generate`` works as is), or TSV lines ``id<TAB>text``.
    """
    data = _read_bytes(path)
    out: dict[str, str] = {}
    line, _ = _first_line(data)
    if line.startswith("{"):
        for no, obj in iter_jsonl(data, path):
            qid = _field(obj, ("id", "query_id", "_id", "qid"), path, no)
            text = _field(obj, ("question", "query", "text"), path, no)
            if not isinstance(text, str) or not text.strip():
                raise InputError("query text is empty", path, no)
            if str(qid) in out:
                raise InputError(f"query id {qid!r} appears twice", path, no)
            out[str(qid)] = text
        return out
    for no, raw in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        parts = raw.split("\t", 1)
        if len(parts) != 2 or not parts[1].strip():
            raise InputError("expected 'query id<TAB>query text'", path, no)
        if parts[0] in out:
            raise InputError(f"query id {parts[0]!r} appears twice", path, no)
        out[parts[0].strip()] = parts[1].strip()
    return out


def _pydantic_message(e: Any) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "record"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def write_jsonl(path: str | Path, records: Iterable[Any], append: bool = False) -> int:
    """Write records (pydantic models or dicts) as JSON Lines; returns how many were written."""
    n = 0
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for r in records:
            obj = r.model_dump(mode="json") if hasattr(r, "model_dump") else r
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_run(path: str | Path, run: Run, tag: str | None = None) -> None:
    """Write a run in TREC format, ranked as trec_eval would rank it."""
    tag = (tag or run.name or "run").replace(" ", "_")
    with open(path, "w", encoding="utf-8") as f:
        for qid, docs in run.ranked().items():
            for rank, (doc, score) in enumerate(docs, start=1):
                f.write(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")


def write_qrels(path: str | Path, qrels: Qrels) -> None:
    """Write qrels in TREC format (``qid 0 docid grade``)."""
    with open(path, "w", encoding="utf-8") as f:
        for q, d, g in qrels.rows():
            f.write(f"{q} 0 {d} {g}\n")


def coerce_qrels(q: Qrels | Mapping | str | Path) -> Qrels:
    if isinstance(q, Qrels):
        return q
    if isinstance(q, Mapping):
        return Qrels.from_dict(q)
    return read_qrels(q)


def coerce_run(r: Run | Mapping | str | Path, name: str | None = None) -> Run:
    if isinstance(r, Run):
        return r
    if isinstance(r, Mapping):
        return Run.from_dict(r, name or "run")
    return read_run(r)
