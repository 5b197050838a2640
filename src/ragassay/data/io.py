"""Readers and writers for the data contract: TREC, JSON Lines and BEIR files.

Every reader names the file and the line of the first problem it finds. Formats are detected from
the content (not the file name); pass ``format=`` to override the guess.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from ..errors import InputError
from . import roles
from .columns import INT_LIMIT, factorize, parse_floats, parse_plain_integers, read_columns, trim_heap
from .lines import (
    UTF8_BOM,
    WrittenFloat,
    check_id,
    iter_jsonl,
    read_bytes_checked,
    write_lines_atomic,
)
from .tables import Qrels, Run, encode_ids, query_codes

QrelsFormat = Literal["auto", "trec", "trec3", "jsonl", "beir"]
RunFormat = Literal["auto", "trec", "trec3", "jsonl", "beir"]
# A first line made only of these words is a header, whatever the format: skipped, never a row.
HEADER_WORDS = frozenset({"query-id", "corpus-id", "score", "query_id", "qid", "queryid", "query", "docid",
                          "doc_id", "docno", "doc", "document", "chunk_id", "corpus_id", "iter", "iteration",
                          "q0", "rank", "tag", "run", "relevance", "rel", "grade", "label", "judgment",
                          "judgement", "sim", "similarity"})
GRADE_LIMIT = INT_LIMIT

BEIR_HEADER = ("query-id", "corpus-id", "score")














BEIR_FILES = {"chunks": "corpus.jsonl", "queries": "queries.jsonl"}


def dataset_member(path: str | Path, role: Literal["qrels", "chunks", "queries"]) -> str | Path:
    """``path`` itself, or when it is a BEIR dataset folder, the file in it that plays ``role``:
    corpus.jsonl for chunks, queries.jsonl for queries, qrels/test.tsv (or the only split) for qrels."""
    p = Path(path)
    if str(path) == "-" or not p.is_dir():
        return path
    if role == "qrels":
        splits = sorted((p / "qrels").glob("*.tsv")) if (p / "qrels").is_dir() else []
        if len(splits) == 1:
            return splits[0]
        if splits:  # which split is meant is the user's choice (BEIR's own loader asks for one too)
            names = ", ".join(s.name for s in splits)
            test = p / "qrels" / "test.tsv"
            said = "" if test in splits else " and no test.tsv"
            raise InputError(f"a BEIR folder with several qrels splits{said}; name one, e.g. "
                             f"{test if test in splits else splits[0]} (the splits: {names})", p)
    else:
        for name in (BEIR_FILES[role], BEIR_FILES[role] + ".gz"):
            if (p / name).is_file():
                return p / name
    raise InputError(f"is a directory: expected a {role} file, or a BEIR folder (corpus.jsonl, queries.jsonl, "
                     "qrels/test.tsv)", p)








def _first_line(data: bytes, after: int = 0) -> tuple[str, int]:
    """The first line past line ``after`` that is neither blank nor a ``#`` comment (decoded,
    stripped), and its number. Reads only the head of the file."""
    end = data.find(b"\n", 1 << 16)
    head = data if end < 0 else data[:end]
    for no, raw in enumerate(head.split(b"\n"), start=1):
        text = raw.strip()
        if no > after and text and not text.startswith(b"#"):
            return raw.decode("utf-8", "replace").strip(), no
    return "", 1


def blank_comments(data: bytes) -> bytes:
    """``#`` comment lines (as trec_eval 10 skips them) turned into blank lines of the same length,
    so every other line keeps its number and offset."""
    if b"#" not in data:  # memchr speed; only a file with a '#' somewhere pays for the search
        return data
    if not (data.startswith(b"#") or b"\n#" in data or re.search(rb"(?m)^[ \t]+#", data)):
        return data
    return re.sub(rb"(?m)^[ \t]*#[^\n]*", lambda m: b" " * len(m.group()), data)


def header_line(data: bytes) -> int:
    """The number of the header line (0 when there is none): a first line made only of header
    words (``query-id corpus-id score``, ``qid docid rel``), never a row that merely fails to parse."""
    line, no = _first_line(data)
    fields = line.lower().split()
    return no if fields and all(f in HEADER_WORDS for f in fields) else 0


def detect_format(data: bytes, kind: str) -> str:
    """Guess ``trec``, ``trec3``, ``beir`` or ``jsonl`` for a qrels or run file from its first lines."""
    line, no = _first_line(data)
    if line.startswith("{"):
        return "jsonl"
    header = header_line(data)
    if header:
        line, no = _first_line(data, after=header)
        if not line:
            raise InputError(f"only a header line, no {'results' if kind == 'run' else 'judgments'}",
                             None, header)
    fields = line.split()
    if len(fields) == 3:
        return "beir" if header else "trec3"
    if kind == "run" and len(fields) >= 5 or kind == "qrels" and len(fields) == 4:
        return "trec"
    other = "run" if kind == "qrels" else "qrels"
    evidence = roles.trec_line_evidence(fields, kind)
    if evidence is not None:
        raise InputError(f"looks like a {other} file, not {'a run' if kind == 'run' else 'qrels'}: its line "
                         f"{line[:100]!r} {evidence}; give it as {other.upper()} (are the arguments in the right "
                         "order?)", None, no)
    hint = ""
    if len(fields) == (4 if kind == "run" else 6):
        hint = f" (this looks like a {other} file: are the arguments in the right order?)"
    shape = "qid Q0 docid rank score [tag]" if kind == "run" else "qid 0 docid grade"
    raise InputError(
        f"cannot tell the format of this {kind} file from its line {line[:100]!r}: expected TREC "
        f"({shape}), three columns (qid docid {'score' if kind == 'run' else 'grade'}, with or without a "
        f"header), JSON Lines or BEIR TSV{hint}; "
        + ("--run-format" if kind == "run" else "--qrels-format") + " names it (format= in Python)", None)


def _resolve_format(data: bytes, path: str | Path, kind: str, format: str, check_role: bool = True) -> str:
    """The explicit format, or the one detected from the content (errors name the file). A detected
    column format is checked against the role (:func:`roles.check_columns`: qrels given as a run,
    a run as qrels) unless ``check_role`` is false (the head was checked already)."""
    if format != "auto":
        return format
    try:
        fmt = detect_format(data, kind)
    except InputError as e:
        raise (InputError(e.message, path, e.line) if e.path is None else e) from None
    if check_role and fmt in ("trec3", "beir"):
        head = roles.head_of(data)
        roles.check_columns(head, path, kind, fmt, header_line(head))
    return fmt


# --------------------------------------------------------------------------------------------
# qrels


def read_qrels(path: str | Path, format: QrelsFormat = "auto") -> Qrels:
    """Read relevance judgments: TREC (``qid 0 docid grade``), JSONL or BEIR TSV.

    JSONL lines carry ``query_id``, ``chunk_id`` (or ``doc_id``) and an integer ``grade``
    (``relevance`` is accepted too). Grades are integers; negative grades mean non-relevant. A BEIR
    folder gives its qrels/test.tsv.
    """
    from . import peer_files
    from .origin import label_origin
    path = dataset_member(path, "qrels")
    binary = peer_files.binary_table_kind(path) if format == "auto" else None
    if binary is not None:  # ranx's Parquet (q_id, doc_id, score); LZ4 is refused, saying so
        out = peer_files.qrels_from_columns(peer_files.binary_table_columns(path, binary, "qrels"), path)
        out.origin = label_origin(path)
        return out
    head = _plain_file_head(path)
    if head is not None:  # a plain file: pyarrow may stream it without the whole file in memory
        fmt = _resolve_format(head, path, "qrels", format)
        if fmt in ("trec", "trec3", "beir"):
            trec = fmt == "trec"
            scan = WholeReadScan(path)
            fast = _arrow_columns(str(path), 4 if trec else 3, [(0, "codes"), (2 if trec else 1, "id"),
                                                                (3 if trec else 2, "int")], header_line(head), head)
            if scan.needed():  # a lone \r or bytes not UTF-8 somewhere: the whole-file read names the line
                fast = None
            if fast is not None:
                (qidx, distinct), docs, grades = fast
                out = Qrels(_decode_ids(distinct, path), qidx, docs, grades, source=str(path))
                trim_heap()  # pyarrow's table is gone: its pages go back before the duplicate check
                try:
                    out.check_unique(None)
                    out.origin = label_origin(path)
                    return out
                except InputError:
                    pass  # read again below: the numpy splitter names the lines
    data = blank_comments(read_bytes_checked(path))
    document = peer_files.json_table_columns(data, path, "qrels") if format == "auto" else None
    if document is not None:  # ranx's {query: {doc: grade}}, LlamaIndex's relevant_docs
        out = peer_files.qrels_from_columns(document, path)
        out.origin = label_origin(path)
        return out
    fmt = _resolve_format(data, path, "qrels", format, check_role=head is None)  # (else the head was checked)
    if fmt == "trec":
        out = _read_columns_qrels(data, path, ncols=4, q_col=0, d_col=2, g_col=3, skip=header_line(data))
    elif fmt in ("beir", "trec3"):
        out = _read_columns_qrels(data, path, ncols=3, q_col=0, d_col=1, g_col=2, skip=header_line(data))
    elif fmt == "jsonl":
        out, said = _read_jsonl_qrels(data, path, format == "auto")
        out.origin = label_origin(path, said)
        return out
    else:
        raise InputError(f"unknown qrels format {format!r}: use trec, trec3, jsonl or beir", path)
    out.origin = label_origin(path)  # who made the labels: the sidecar beside the file, else unknown
    return out


def _read_jsonl_qrels(data: bytes, path: str | Path, check_role: bool = True) -> tuple[Qrels, list[dict]]:
    """JSON Lines qrels, and what each line says of who made it (assessor, model, prompt)."""
    rows, said = [], []
    for no, obj in iter_jsonl(data, path, keep_float_text=True):
        said.append({k: obj.get(k) for k in ("assessor", "model", "prompt", "record")})
        q = _field(obj, ("query_id", "qid"), path, no)
        d = _field(obj, ("chunk_id", "doc_id", "docid"), path, no)
        if check_role and (evidence := roles.jsonl_qrels_evidence(obj)) is not None:
            raise roles.refuse_role(path, no, "a run, not qrels", evidence, "give it as a RUN (are the arguments in the "
                                    "right order?)")
        g = _field(obj, ("grade", "relevance"), path, no)
        if g is None:
            if obj.get("status") == "error":
                continue  # a failed judgment carries no grade: it is not a judgment
            raise InputError("grade is null: a judgment needs an integer grade (a failed judgment says "
                             "\"status\": \"error\")", path, no)
        if isinstance(g, WrittenFloat) and _INTEGRAL.fullmatch(g.text.encode()):
            g = int(g)  # 3.0: an integer written as a float (pandas writes them so)
        if isinstance(g, bool) or not isinstance(g, int):  # 1e2, 2.5, "2", true: not integers as written
            shown = g.text if isinstance(g, WrittenFloat) else json.dumps(g)
            raise InputError(f"grade must be an integer, got {shown}", path, no)
        if abs(g) > GRADE_LIMIT:
            raise InputError(f"grade {g} is out of range (at most {GRADE_LIMIT} either side of 0)", path, no)
        rows.append((check_id(q, "query id", path, no), check_id(d, "chunk id", path, no), int(g), no))
    return _qrels_from_rows(rows, path), said


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
    fast = _arrow_columns(data, ncols, [(q_col, "codes"), (d_col, "id"), (g_col, "int")], skip)
    if fast is not None:
        (qidx, distinct), docs, grades = fast
        out = Qrels(_decode_ids(distinct, path), qidx, docs, grades, source=str(path))
        try:
            out.check_unique(None)
            return out
        except InputError:
            pass  # read again below: the numpy splitter names the lines
    (qcol, docs, grades), lines = read_columns(
        data, ncols, path, [(q_col, None), (d_col, None), (g_col, parse_grades)], skip_lines=skip)
    if not len(lines):
        raise InputError("no judgments in file", path)
    vocab: dict[bytes, int] = {}
    qidx = factorize(qcol, vocab)
    out = Qrels(_decode_vocab(vocab, path), qidx, docs, grades, source=str(path))
    out.check_unique(lines)
    return out


ARROW_MIN_BYTES = 4 << 20  # smaller files: the numpy splitter is as fast, and pyarrow's import is saved


def reader_path(size: int | None = None) -> str:
    """Which splitter reads clean TREC/TSV files (of ``size`` bytes, when known): ``arrow``
    (pyarrow's parser, when installed, for files of 4 MB and more) or ``numpy``.
    ``RAGASSAY_PARSER=numpy`` or ``=arrow`` forces one (both give the same tables)."""
    wanted = os.environ.get("RAGASSAY_PARSER", "auto")
    if wanted == "numpy" or (wanted != "arrow" and size is not None and size < ARROW_MIN_BYTES):
        return "numpy"
    from . import arrow_columns
    return "arrow" if arrow_columns.available() else "numpy"


def _arrow_columns(source: bytes | str, ncols: int, wanted: list[tuple[int, str]], skip: int,
                   head: bytes | None = None) -> list[np.ndarray] | None:
    if reader_path(len(source) if isinstance(source, bytes) else Path(source).stat().st_size) != "arrow":
        return None
    from . import arrow_columns
    cols = arrow_columns.read(source, ncols, wanted, skip, head)
    if cols is None:
        return None
    first = cols[0][0] if isinstance(cols[0], tuple) else cols[0]
    return cols if len(first) else None  # no rows: the numpy path says so, naming the file


def _plain_file_head(path: str | Path) -> bytes | None:
    """The first 64 KB of a plain (not gzipped, not empty, text) file when pyarrow will read it, else
    None: then the whole file goes through ``read_bytes_checked`` and its one clear error per case."""
    if str(path) == "-":
        return None
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size == 0 or reader_path(p.stat().st_size) != "arrow":
            return None
        with open(p, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    if head[:2] == b"\x1f\x8b" or head.startswith(b"\xef\xbb\xbf") or b"\x00" in head or not head.strip():
        return None
    if len(head) == 1 << 16:
        head = head[:head.rfind(b"\n") + 1]  # whole lines only
    if not head.strip() or b"\r" in head:
        return None  # a first line longer than 64 KB, or line ends with \r: the full path judges them
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return None  # bytes not UTF-8: the full path names the line
    return head


class WholeReadScan:
    """:func:`whole_read_needed` of a file on another thread, while pyarrow parses the same file (its
    parse lets go of the GIL, the scan reads at memchr speed): the scan costs no time of its own."""

    def __init__(self, path: str | Path):
        import threading
        self._said: list[bool] = []
        self._thread = threading.Thread(target=lambda: self._said.append(whole_read_needed(Path(path))),
                                        name="whole-read scan", daemon=True)
        self._thread.start()

    def needed(self) -> bool:
        """Whether the whole-file read must judge the file (also when the scan itself failed)."""
        self._thread.join()
        return self._said != [False]


def whole_read_needed(path: Path) -> bool:
    """Whether the file holds what pyarrow would read where the whole-file read refuses it: a \r not
    followed by \n (pyarrow ends a line there) or bytes that are not UTF-8 in any column (pyarrow
    reads only the columns it is asked for). Read 8 MB at a time into one buffer, scanned at memchr
    speed; the UTF-8 check only decodes buffers that are not all ASCII."""
    import codecs
    buf = bytearray(8 << 20)
    view = memoryview(buf)
    utf8 = codecs.getincrementaldecoder("utf-8")()
    after_cr = False  # the block before ended with a \r: this one must start with \n
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                try:
                    utf8.decode(b"", final=True)  # a sequence cut by the end of the file
                except UnicodeDecodeError:
                    return True
                return after_cr
            if after_cr and buf[0] != 0x0A:
                return True
            at = buf.find(b"\r", 0, n)
            while 0 <= at < n - 1:
                if buf[at + 1] != 0x0A:
                    return True
                at = buf.find(b"\r", at + 2, n)
            after_cr = buf[n - 1] == 0x0D
            ascii_only = buf.isascii() if n == len(buf) else buf[:n].isascii()  # (a copy for the last block only)
            if not ascii_only or utf8.getstate()[0]:  # (or a sequence the block before began)
                try:
                    utf8.decode(view[:n])
                except UnicodeDecodeError:
                    return True


def _parse_scores(col: np.ndarray, lines: np.ndarray, path: str | Path) -> np.ndarray:
    return parse_floats(col, lines, path, "score")


def parse_grades(col: np.ndarray, lines: np.ndarray, path: str | Path) -> np.ndarray:
    values, plain = parse_plain_integers(col)
    if plain.all() and (not len(values) or int(np.abs(values).max()) <= GRADE_LIMIT):
        return values  # the usual case; anything else is judged below, with its line
    values = None
    underscores = any(b"_" in raw for raw in col[~plain].tolist())  # numpy reads "1_0" as 10: judged below
    if not underscores:
        if col.dtype.itemsize > 8:  # a field of 9+ bytes: may be too big for a grade (numpy would wrap it)
            long = np.flatnonzero(np.char.str_len(col) > 10)
            if len(long):
                i = int(long[0])
                raise InputError(f"grade {col[i].decode('utf-8', 'replace')!r} is out of range (at most "
                                 f"{GRADE_LIMIT} either side of 0)", path, int(lines[i]))
        try:
            values = col.astype(np.int64)
        except (ValueError, OverflowError):
            values = None
    if values is not None:
        big = np.flatnonzero(np.abs(values) > GRADE_LIMIT)
        if len(big):
            i = int(big[0])
            raise InputError(f"grade {int(values[i])} is out of range (at most {GRADE_LIMIT} either side of 0)",
                             path, int(lines[i]))
        return values
    # not all plain integers: "3.0" is an integer written as a float; anything else ("1e2", "2.5",
    # "three") is named with its line. trec_eval would read "1e2" as 1, a float reader as 100:
    # neither is what was meant, so neither is guessed
    out = np.empty(len(col), dtype=np.int64)
    for i, raw in enumerate(col.tolist()):
        m = _INTEGRAL.fullmatch(raw)
        if m is None:
            raise InputError(f"grade must be an integer, got {raw.decode('utf-8', 'replace')!r}", path,
                             int(lines[i]))
        out[i] = int(m.group(1))
    big = np.flatnonzero(np.abs(out) > GRADE_LIMIT)
    if len(big):
        i = int(big[0])
        raise InputError(f"grade {int(out[i])} is out of range (at most {GRADE_LIMIT} either side of 0)", path,
                         int(lines[i]))
    return out


_INTEGRAL = re.compile(rb"\s*([+-]?\d{1,18})(?:\.0*)?\s*")  # 3, +3, -3, 3.0, 3.


# --------------------------------------------------------------------------------------------
# runs


def read_run(path: str | Path, format: RunFormat = "auto", dedupe: bool = False,
             name: str | None = None) -> Run:
    """Read a retrieval run: TREC six columns (``qid Q0 docid rank score tag``), JSONL or TSV.

    Documents are ranked by score (descending, ties by document id descending, as trec_eval
    does); the rank column is ignored. A document listed twice for one query is an error unless
    ``dedupe`` is true, which keeps its highest score. ``name`` defaults to the TREC tag or the
    file name. The queries the run was asked (``RUN.run.json`` beside it, :mod:`.run_asked`) are
    all queries of the run: one that returned nothing has an empty ranking (it scores 0).
    """
    from .run_asked import read_asked, with_asked
    if str(path) != "-" and Path(path).is_file() and os.path.getsize(path) == 0:
        asked = read_asked(path)
        if asked is not None:  # every query asked returned nothing: the file is empty, the run is not
            return Run(list(asked.queries), np.zeros(0, np.int64), encode_ids([]), np.zeros(0),
                       name or asked.run or Path(path).name.split(".")[0] or "run", str(path))
    return with_asked(_read_run_file(path, format, dedupe, name), path)


def _read_run_file(path: str | Path, format: RunFormat, dedupe: bool, name: str | None) -> Run:
    """The rows of a run file, as :func:`read_run` reads them (without its sidecar's queries)."""
    default_name = "stdin" if str(path) == "-" else (Path(path).name.split(".")[0] or "run")
    from . import peer_files
    binary = peer_files.binary_table_kind(path) if format == "auto" else None
    if binary is not None:  # ranx's Parquet (q_id, doc_id, score); LZ4 is refused, saying so
        return peer_files.run_from_columns(peer_files.binary_table_columns(path, binary, "run"), name or default_name,
                                           path, dedupe)
    head = _plain_file_head(path)
    if head is not None:  # a plain file: pyarrow may stream it without the whole file in memory
        fmt = _resolve_format(head, path, "run", format)
        if fmt in ("trec", "trec3", "beir"):
            trec, skip, tag = _column_layout(head, fmt)
            scan = WholeReadScan(path)
            fast = _arrow_columns(str(path), 6 if trec else 3,
                                  [(0, "codes"), (2 if trec else 1, "id"), (4 if trec else 2, "float")], skip, head)
            if scan.needed():  # a lone \r or bytes not UTF-8 somewhere: the whole-file read names the line
                fast = None
            if fast is not None:
                (qidx, distinct), docs, scores = fast
                run = Run(_decode_ids(distinct, path), qidx, docs, scores, name or tag or default_name, str(path))
                trim_heap()  # pyarrow's table is gone: its pages go back before the duplicate check
                try:
                    run = run.deduplicated() if dedupe else run.checked(None)
                    trim_heap()  # the parse's temporaries are gone: return their pages before the next phase
                    return run
                except InputError:
                    pass  # read again below: the numpy splitter names the lines
    data = blank_comments(read_bytes_checked(path))
    document = peer_files.json_table_columns(data, path, "run") if format == "auto" else None
    if document is not None:  # ranx's {query: {doc: score}}
        return peer_files.run_from_columns(document, name or default_name, path, dedupe)
    fmt = _resolve_format(data, path, "run", format, check_role=head is None)  # (else the head was checked)
    if fmt in ("trec", "trec3", "beir"):
        trec, skip, tag = _column_layout(data, fmt)
        # TREC: qid Q0 docid rank score, then the tag (optional) and any fields after it (ignored)
        holder = [data]  # handed over: read_columns frees the bytes once split
        del data
        (qcol, docs, scores), lines = read_columns(
            holder, 5 if trec else 3, path,
            [(0, None), (2 if trec else 1, None), (4 if trec else 2, _parse_scores)], skip_lines=skip,
            max_cols=None if trec else 3)
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
            if "score" not in obj and format == "auto" and (evidence := roles.jsonl_run_evidence(obj)) is not None:
                raise roles.refuse_role(path, no, "qrels, not a run", evidence, "give it as QRELS")
            s = _field(obj, ("score",), path, no)
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(s):
                raise InputError(f"score must be a finite number, got {s!r}", path, no)
            rows.append((check_id(q, "query id", path, no), check_id(d, "chunk id", path, no), float(s), no))
        if not rows:
            raise InputError("no results in file", path)
        queries, qidx = query_codes(r[0] for r in rows)
        run = Run(queries, qidx, encode_ids(r[1] for r in rows),
                  np.array([r[2] for r in rows]), name or default_name, str(path))
        lines = np.array([r[3] for r in rows], dtype=np.int64)
    else:
        raise InputError(f"unknown run format {format!r}: use trec, trec3, jsonl or beir", path)
    run = run.deduplicated() if dedupe else run.checked(lines)
    trim_heap()  # the parse's temporaries are gone: return their pages before the next phase
    return run


def _column_layout(data: bytes, fmt: str) -> tuple[bool, int, str | None]:
    """(six-column TREC?, header line to skip or 0, the TREC tag of the first row) of a run file."""
    trec = fmt == "trec"
    skip = header_line(data)
    first_fields = _first_line(data, after=skip)[0].split()
    return trec, skip, first_fields[5] if trec and len(first_fields) >= 6 else None


class ColumnShape(NamedTuple):
    """How a plain column file (TREC, three columns, BEIR TSV) is laid out: its format, the fields
    per line (``ncols``, up to ``max_cols``: None for any number, False for exactly ``ncols``), the
    query, document and value columns, the header line to skip (0: none) and a run's TREC tag."""

    fmt: str
    ncols: int
    max_cols: int | None | bool
    q_col: int
    d_col: int
    v_col: int
    skip: int
    tag: str | None


def column_shape(path: str | Path, kind: Literal["qrels", "run"], format: str = "auto",
                 check_role: bool = True) -> ColumnShape | None:
    """The layout of a plain (not gzipped) TREC or three-column ``kind`` file, told from its first
    64 KB, or None when the file is something else (standard input, gzip, JSON Lines, a peer's
    format, binary): such files are read whole by :func:`read_qrels` / :func:`read_run`."""
    if str(path) == "-" or not Path(path).is_file():
        return None
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if head[:2] == b"\x1f\x8b" or b"\x00" in head or not head.strip():
        return None
    head = head.removeprefix(UTF8_BOM)
    if len(head) >= (1 << 16) - 3:
        head = head[:head.rfind(b"\n") + 1]
    head = blank_comments(head)
    if not head.strip() or head.lstrip().startswith(b"{"):
        return None
    fmt = _resolve_format(head, path, kind, format, check_role)
    if fmt not in ("trec", "trec3", "beir"):
        return None
    if kind == "qrels":
        trec = fmt == "trec"
        return ColumnShape(fmt, 4 if trec else 3, False, 0, 2 if trec else 1, 3 if trec else 2, header_line(head), None)
    trec, skip, tag = _column_layout(head, fmt)
    return ColumnShape(fmt, 5 if trec else 3, None if trec else 3, 0, 2 if trec else 1, 4 if trec else 2, skip, tag)


def decode_query_ids(vocab: dict[bytes, int], path: str | Path) -> list[str]:
    """The query ids of a splitter's vocabulary (bytes in first-seen order) as text."""
    return _decode_vocab(vocab, path)


def _decode_ids(ids: np.ndarray, path: str | Path) -> list[str]:
    try:
        return [k.decode("utf-8") for k in ids.tolist()]
    except UnicodeDecodeError:
        raise InputError("query ids are not valid UTF-8", path) from None


def _decode_vocab(vocab: dict[bytes, int], path: str | Path) -> list[str]:
    try:
        return [k.decode("utf-8") for k in vocab]
    except UnicodeDecodeError:
        raise InputError("query ids are not valid UTF-8", path) from None


# --------------------------------------------------------------------------------------------
# JSON Lines, chunks and queries






















def _field(obj: Mapping[str, Any], names: tuple[str, ...], path: str | Path | None, no: int) -> Any:
    for n in names:
        if n in obj:
            return obj[n]
    would = f"any of {', '.join(names)} would do; " if len(names) > 1 else ""
    raise InputError(f"missing field {names[0]!r} ({would}keys present: {', '.join(sorted(obj)) or 'none'})", path, no)


def read_records(path: str | Path, model: Any, what: str,
                 prepare: Any = None, rows: Iterable[tuple[int, dict[str, Any]]] | None = None,
                 after: Any = None, problems: Any = None) -> list[tuple[int, Any]]:
    """Validate each JSONL line as ``model`` (a pydantic class with an ``id``); ids must be unique.

    Returns ``(line number, record)`` pairs; ``prepare(object, line number)`` may rewrite each raw
    object first. ``rows`` gives the (line, object) pairs when they come from another kind of file;
    ``after(record, object)`` may finish a record from its object. ``problems``: a
    :class:`~ragassay.data.line_problems.LineProblems` holding the bad lines found before (said
    with these, in file order).
    """
    from .line_problems import LineProblems
    out: list[tuple[int, Any]] = []
    seen: dict[str, int] = {}
    problems = LineProblems(path) if problems is None else problems  # every bad line, said at the end in file order
    for no, obj in (iter_jsonl(path, problems=problems) if rows is None else rows):
        try:
            if prepare is not None:
                obj = prepare(obj, no)
            record = validate_record(obj, model, path, no)
            if after is not None:
                record = after(record, obj)
            if record.id in seen:
                raise InputError(f"{what} id {record.id!r} appears twice (first on line {seen[record.id]})", path, no)
        except InputError as e:
            problems.add_error(e)
            continue
        seen[record.id] = no
        out.append((no, record))
    problems.raise_if_any()
    if not out:
        raise InputError(f"no {what}s in file", path)
    return out


def validate_record(obj: dict[str, Any], model: Any, path: str | Path | None, no: int) -> Any:
    """``obj`` as ``model`` (a pydantic class); what does not fit is one error naming file and line."""
    from pydantic import ValidationError
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        raise InputError(_pydantic_message(e, getattr(obj, "spelling", None)), path, no) from None


def beir_id(obj: dict[str, Any], no: int = 0) -> dict[str, Any]:
    """A BEIR corpus line's ``_id`` as ``id``; an ir_datasets docs line (``doc_id``, ``text``: one
    document, one chunk) gives its ``doc_id``. Only for a line of a file :mod:`.chunk_lines` has read
    whole already (which refuses a chunk whose only id would be its document's)."""
    if "id" not in obj and "_id" in obj:
        obj = {k: v for k, v in obj.items() if k != "_id"} | {"id": obj["_id"]}
    elif "id" not in obj and "doc_id" in obj:
        obj = {**obj, "id": obj["doc_id"]}
    return obj


def read_chunks(path: str | Path) -> list[Any]:
    """Read chunks (``id``, ``text``, ...) from JSONL; BEIR corpus lines (``_id``) and folders are accepted."""
    from .peer_files import llamaindex_corpus
    from .records import Chunk
    path = dataset_member(path, "chunks")
    corpus = llamaindex_corpus(path)
    if corpus is not None:  # LlamaIndex's EmbeddingQAFinetuneDataset: {"corpus": {id: text}, ...}
        return [validate_record({"id": check_id(k, "chunk id", path, None), "text": v}, Chunk, path, None)
                for k, v in corpus.items()]
    from .chunk_lines import ChunkLines
    lines = ChunkLines(path, validate_record)  # the id rule (no id invented), every bad line said at the end
    out = []
    for no, obj in iter_jsonl(path, problems=lines.problems):
        chunk = lines.take(obj, no)
        if chunk is not None:
            out.append(chunk)
    lines.finish()
    return out


def read_queries(path: str | Path) -> dict[str, str]:
    """Read queries as ``{query id: text}``.

    Accepts JSONL with ``id``/``query_id``/``_id`` and ``question``/``query``/``text`` (so a
    questions file from ``generate`` works as is), or TSV lines ``id<TAB>text``; a BEIR folder gives
    its queries.jsonl.
    """
    from . import peer_files
    path = dataset_member(path, "queries")
    data = read_bytes_checked(path)
    if not peer_files.is_ragassay_queries(data):  # RAGAS, DeepEval, LlamaIndex: ids by peer_files' rule
        return {q.id: q.text for q in peer_files.peer_queries(path, data)}
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    line, _ = _first_line(data)
    from .line_problems import LineProblems
    problems = LineProblems(path)  # every bad line, said at the end
    if line.startswith("{"):
        for no, obj in iter_jsonl(data, path, problems=problems):
            evidence = roles.query_line_evidence(obj)
            if evidence is not None and not out and not problems:
                raise roles.refuse_role(path, no, "chunks, not queries", f"the line {evidence}",
                                        "give it as --chunks (queries: id and question, query or text)")
            try:
                qid = check_id(_field(obj, ("id", "query_id", "_id", "qid"), path, no), "query id", path, no)
                text = _field(obj, ("question", "query", "text"), path, no)
                if not isinstance(text, str) or not text.strip():
                    raise InputError("query text is empty", path, no)
                if str(qid) in out:
                    raise InputError(f"query id {qid!r} appears twice (first on line {first[qid]})", path, no)
            except InputError as e:
                problems.add_error(e)
                continue
            out[str(qid)] = text
            first[str(qid)] = no
        problems.raise_if_any()
        return out
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("not valid UTF-8 text", path, data.count(b"\n", 0, e.start) + 1) from None
    # lines end at \n (or \r\n) only, as in every other reader: not str.splitlines(), which also
    # ends a line at \x0b, \x0c, \x1c-\x1e, \x85, U+2028 and U+2029, characters a query's text may hold
    for no, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")  # (read_bytes_checked refuses a \r that does not end a line)
        if not raw.strip():
            continue
        parts = raw.split("\t", 1)
        try:
            if len(parts) != 2 or not parts[1].strip():
                raise InputError("expected 'query id<TAB>query text'", path, no)
            check_id(parts[0], "query id", path, no)
            if parts[0] in out:
                raise InputError(f"query id {parts[0]!r} appears twice (first on line {first[parts[0]]})", path, no)
        except InputError as e:
            problems.add_error(e)
            continue
        out[parts[0].strip()] = parts[1].strip()
        first[parts[0]] = no
    problems.raise_if_any()
    return out


def _pydantic_message(e: Any, spelling: Callable[[str], str] | None = None) -> str:
    return "; ".join(validation_message(err, spelling) for err in e.errors())


def validation_message(err: Mapping[str, Any], spelling: Callable[[str], str] | None = None) -> str:
    """One pydantic error as a user reads it: where, and what is wrong. A field a record of
    ragassay's does not have says so, and what to do (its records are read back exactly as written).
    ``spelling(field)`` gives the name the file uses for a field (a peer's row: ``retrieved_contexts``
    where ragassay says ``contexts``)."""
    parts = [str(x) for x in err.get("loc", ())]
    if parts and spelling is not None:
        parts[0] = spelling(parts[0])
    loc = ".".join(parts) or "record"
    if err.get("type") == "extra_forbidden":
        return (f"{loc}: not a field ragassay writes in this record (its records are read back exactly as "
                "written: keep your own fields in another file, joined by id)")
    return f"{loc}: {err.get('msg')}"




def write_jsonl(path: str | Path, records: Iterable[Any]) -> int:
    """Write records (pydantic models or dicts) as JSON Lines, atomically; returns how many."""
    lines = [json.dumps(r.model_dump(mode="json") if hasattr(r, "model_dump") else r, ensure_ascii=False)
             for r in records]
    write_lines_atomic(path, lines)
    return len(lines)


def write_run(path: str | Path, run: Run, tag: str | None = None) -> None:
    """Write a run in TREC format, ranked as trec_eval would rank it. A TREC file cannot hold a query
    with an empty ranking: when the run has one, ``PATH.run.json`` beside it lists every query asked
    (:mod:`.run_asked`), so readers keep it as a query that scores 0; otherwise a stale one is removed."""
    from .run_asked import remove_asked, write_asked
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
    rows = qrels.rows() if isinstance(qrels, Qrels) else (
        (q, d, g) for q, docs in qrels.items() for d, g in docs.items())
    lines = [f"{check_id(q, 'query id', None, None)} 0 {check_id(d, 'chunk id', None, None)} {int(g)}"
             for q, d, g in sorted(rows)]
    write_lines_atomic(path, lines)
    from .origin import sidecar_path, write_origin
    if origin is not None:
        write_origin(path, origin)
    else:
        sidecar_path(path).unlink(missing_ok=True)  # an earlier writer's word would be wrong now
    return len(lines)


def _frame_columns(df: Any, kind: str) -> Any:
    """The query, document and value columns of a pandas DataFrame with ragassay's, trec_eval's, ranx's
    or ir_measures' column names (query_id/qid/q_id, chunk_id/doc_id/docid, grade/relevance or score)."""
    from .peer_files import named_columns
    return named_columns({c: df[c].tolist() for c in df.columns}, kind)


def _is_frame(x: Any) -> bool:
    return hasattr(x, "columns") and hasattr(x, "iloc")


def coerce_qrels(q: Qrels | Mapping | str | Path | Any) -> Qrels:
    """Qrels from a Qrels, a ``{query: {doc: grade}}`` dict, a pandas DataFrame or a file path."""
    from . import peer_files
    if isinstance(q, Qrels):
        return q
    if isinstance(q, Mapping):
        return Qrels.from_dict(q)
    ranx = peer_files.ranx_columns(q)
    if ranx is not None and ranx[0] == "qrels":  # a ranx Qrels
        return peer_files.qrels_from_columns(ranx[1])
    tuples = peer_files.tuple_columns(q, "qrels")  # ir_measures' Qrel tuples
    if _is_frame(q) or tuples is not None:
        return peer_files.qrels_from_columns(_frame_columns(q, "qrels") if tuples is None else tuples)
    return read_qrels(q)


def coerce_run(r: Run | Mapping | str | Path | Any, name: str | None = None) -> Run:
    """A Run from a Run, a ``{query: {doc: score}}`` dict, a pandas DataFrame or a file path."""
    from . import peer_files
    if isinstance(r, Run):
        return r
    if isinstance(r, Mapping):
        return Run.from_dict(r, name or "run")
    ranx = peer_files.ranx_columns(r)
    if ranx is not None and ranx[0] == "run":  # a ranx Run keeps its name
        return peer_files.run_from_columns(ranx[1], name or ranx[2] or "run")
    tuples = peer_files.tuple_columns(r, "run")  # ir_measures' ScoredDoc tuples
    if _is_frame(r) or tuples is not None:
        return peer_files.run_from_columns(_frame_columns(r, "run") if tuples is None else tuples, name or "run")
    return read_run(r)


def to_dataframe(records: list[dict] | list[Any], columns: list[str] | None = None) -> Any:
    """A pandas DataFrame of records (pandas is optional: ``pip install 'ragassay[notebook]'``)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_dataframe() needs pandas: pip install 'ragassay[notebook]' (or pip install pandas)") from None
    rows = [r.model_dump(mode="json") if hasattr(r, "model_dump") else r for r in records]
    return pd.DataFrame(rows, columns=columns)
