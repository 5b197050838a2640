"""Which format a qrels or run file is in, told from its first lines: TREC, three columns, BEIR TSV
or JSON Lines; and how a plain column file is laid out.

The format is detected from the content, never from the file name; ``format=`` (``--qrels-format``,
``--run-format``) overrides the guess. A file that looks like the other role (qrels given as a run)
is refused here, naming the line that shows it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, NamedTuple

from ..errors import InputError
from . import roles
from .lines import UTF8_BOM

QrelsFormat = Literal["auto", "trec", "trec3", "jsonl", "beir"]
RunFormat = Literal["auto", "trec", "trec3", "jsonl", "beir"]
# A first line made only of these words is a header, whatever the format: skipped, never a row.
HEADER_WORDS = frozenset(
    {
        "query-id",
        "corpus-id",
        "score",
        "query_id",
        "qid",
        "queryid",
        "query",
        "docid",
        "doc_id",
        "docno",
        "doc",
        "document",
        "chunk_id",
        "corpus_id",
        "iter",
        "iteration",
        "q0",
        "rank",
        "tag",
        "run",
        "relevance",
        "rel",
        "grade",
        "label",
        "judgment",
        "judgement",
        "sim",
        "similarity",
    }
)

BEIR_HEADER = ("query-id", "corpus-id", "score")


def first_line(data: bytes, after: int = 0) -> tuple[str, int]:
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
    line, no = first_line(data)
    fields = line.lower().split()
    return no if fields and all(f in HEADER_WORDS for f in fields) else 0


def detect_format(data: bytes, kind: str) -> str:
    """Guess ``trec``, ``trec3``, ``beir`` or ``jsonl`` for a qrels or run file from its first lines."""
    line, no = first_line(data)
    if line.startswith("{"):
        return "jsonl"
    header = header_line(data)
    if header:
        line, no = first_line(data, after=header)
        if not line:
            raise InputError(f"only a header line, no {'results' if kind == 'run' else 'judgments'}", None, header)
    fields = line.split()
    if len(fields) == 3:
        return "beir" if header else "trec3"
    if kind == "run" and len(fields) >= 5 or kind == "qrels" and len(fields) == 4:
        return "trec"
    raise _undetected(line, no, fields, kind)


def _undetected(line: str, no: int, fields: list[str], kind: str) -> InputError:
    """The error for a ``kind`` file whose first row fits no format: it looks like the other role
    (with the evidence of its line), or its shape is said beside every shape that would do."""
    other = "run" if kind == "qrels" else "qrels"
    evidence = roles.trec_line_evidence(fields, kind)
    if evidence is not None:
        return InputError(
            f"looks like a {other} file, not {'a run' if kind == 'run' else 'qrels'}: its line "
            f"{line[:100]!r} {evidence}; give it as {other.upper()} (are the arguments in the right "
            "order?)",
            None,
            no,
        )
    hint = ""
    if len(fields) == (4 if kind == "run" else 6):
        hint = f" (this looks like a {other} file: are the arguments in the right order?)"
    shape = "qid Q0 docid rank score [tag]" if kind == "run" else "qid 0 docid grade"
    return InputError(
        f"cannot tell the format of this {kind} file from its line {line[:100]!r}: expected TREC "
        f"({shape}), three columns (qid docid {'score' if kind == 'run' else 'grade'}, with or without a "
        f"header), JSON Lines or BEIR TSV{hint}; "
        + ("--run-format" if kind == "run" else "--qrels-format")
        + " names it (format= in Python)",
        None,
    )


def resolve_format(data: bytes, path: str | Path, kind: str, format: str, check_role: bool = True) -> str:
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


def column_layout(data: bytes, fmt: str) -> tuple[bool, int, str | None]:
    """(six-column TREC?, header line to skip or 0, the TREC tag of the first row) of a run file."""
    trec = fmt == "trec"
    skip = header_line(data)
    first_fields = first_line(data, after=skip)[0].split()
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


def _column_head(path: str | Path) -> bytes | None:
    """The whole lines of the first 64 KB of a plain text file that may hold columns (BOM dropped,
    comments blanked), or None for standard input, a gzipped, binary, empty or JSON Lines file."""
    if str(path) == "-" or not Path(path).is_file():
        return None
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if head[:2] == b"\x1f\x8b" or b"\x00" in head or not head.strip():
        return None
    head = head.removeprefix(UTF8_BOM)
    if len(head) >= (1 << 16) - 3:
        head = head[: head.rfind(b"\n") + 1]
    head = blank_comments(head)
    if not head.strip() or head.lstrip().startswith(b"{"):
        return None
    return head


def column_shape(
    path: str | Path, kind: Literal["qrels", "run"], format: str = "auto", check_role: bool = True
) -> ColumnShape | None:
    """The layout of a plain (not gzipped) TREC or three-column ``kind`` file, told from its first
    64 KB, or None when the file is something else (standard input, gzip, JSON Lines, a peer's
    format, binary): such files are read whole by :func:`read_qrels` / :func:`read_run`."""
    head = _column_head(path)
    if head is None:
        return None
    fmt = resolve_format(head, path, kind, format, check_role)
    if fmt not in ("trec", "trec3", "beir"):
        return None
    if kind == "qrels":
        trec = fmt == "trec"
        return ColumnShape(fmt, 4 if trec else 3, False, 0, 2 if trec else 1, 3 if trec else 2, header_line(head), None)
    trec, skip, tag = column_layout(head, fmt)
    return ColumnShape(fmt, 5 if trec else 3, None if trec else 3, 0, 2 if trec else 1, 4 if trec else 2, skip, tag)
