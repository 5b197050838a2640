"""What a file's content says about the role it plays: qrels given as a run, a run given as qrels,
questions or queries given as chunks, and chunks given as queries.

A reader is told which role a file plays by the argument it was given as. A file in the wrong role
can often still be read, and then gives a wrong answer without any error: qrels' three columns read
as a run score an nDCG of 1.0 against themselves. So the content is asked as well. Only what is sure
refuses the file: a header that names the other role's columns, a line in the other role's TREC
shape, or values that no ranking written in order has. What is only likely is a warning. The checks
read the head of the file, which the reader has parsed already (at most 64 KB), and never make a
second pass over the whole file. A format given by name (``--run-format``, ``--qrels-format``,
``format=``) skips them, because the user's word decides how the file is read.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

HEAD_BYTES = 1 << 16
HEAD_ROWS = 2000
GRADE_WORDS = frozenset({"relevance", "rel", "grade", "label", "judgment", "judgement"})
BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")
SMALLEST_GRADE, LARGEST_GRADE = -2, 10  # TREC's -2 (spam) to a 0-10 scale: wider than any scale in use
_INTEGER = re.compile(r"[+-]?\d{1,9}")


@dataclass(frozen=True)
class Evidence:
    """What the content says: ``sure`` refuses, otherwise a warning; ``line`` where it shows, if one."""

    sure: bool
    evidence: str
    line: int | None = None


def head_of(data: bytes) -> bytes:
    """The first 64 KB of ``data`` in whole lines: what the role checks read."""
    if len(data) <= HEAD_BYTES:
        return data
    head = data[:HEAD_BYTES]
    return head[: head.rfind(b"\n") + 1] or head


def _rows(head: bytes, header: int) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of the data rows of ``head`` after the header line (blank and ``#``
    lines skipped), at most ``HEAD_ROWS``; a last line cut by the 64 KB limit is left out."""
    lines = head.split(b"\n", HEAD_ROWS + header + 64)[: HEAD_ROWS + header + 64]
    if len(head) >= HEAD_BYTES and not head.endswith(b"\n") and len(lines) < HEAD_ROWS + header + 64:
        lines = lines[:-1]
    given = 0
    for no, raw in enumerate(lines, start=1):
        text = raw.strip()
        if no <= header or not text or text.startswith(b"#"):
            continue
        yield no, text.decode("utf-8", "replace").split()
        given += 1
        if given == HEAD_ROWS:
            return


def _header_words(head: bytes, header: int) -> list[str]:
    if not header:
        return []
    return head.split(b"\n")[header - 1].decode("utf-8", "replace").lower().split()


def run_evidence(head: bytes, fmt: str, header: int) -> Evidence | None:
    """Whether a file given as a run in three columns (``trec3``/``beir``) is qrels: its header names
    grades, or is BEIR's qrels header over integer values; or its values are small integers laid out
    as grades are (ties and rises within a query: no ranking written in order), or all one value.
    Small integers in ranking order are only a warning: a run may score by counts."""
    if fmt not in ("trec3", "beir"):
        return None
    rows = _integer_rows(head, header)
    if not rows:
        return None
    words = _header_words(head, header)
    by_header = _header_evidence(words, header)
    if by_header is not None:
        return by_header
    values = [int(f[2]) for _, f in rows]
    low, high = min(values), max(values)
    if low < SMALLEST_GRADE or high > LARGEST_GRADE:
        return None
    scale = f"{low} to {high}" if low != high else str(low)
    if len(rows) >= 2 and low == high:
        return Evidence(
            True,
            f"every value in its third column is {low} ({len(rows)} rows read): grades as "
            "qrels list them; a run whose scores are all equal ranks nothing",
        )
    rise, tie = _rise_and_tie(rows)
    if rise is not None and tie is not None:
        q, low_value, a, high_value, b = rise
        return Evidence(
            True,
            f"every value in its third column is a small integer ({scale}), and within a query "
            f"they tie and rise in file order (query {q!r}: {low_value} on line {a}, then "
            f"{high_value} on line {b}): grades as qrels list them, not the scores of a ranking",
            b,
        )
    return Evidence(False, f"every value in its third column is a small integer ({scale}), as qrels' grades are")


def _integer_rows(head: bytes, header: int) -> list[tuple[int, list[str]]] | None:
    """The first rows of three fields, or None as soon as one's third field is not an integer (a
    score with a fraction or an exponent: a run)."""
    rows = []
    for no, f in _rows(head, header):  # (a generator: a run's first score with a fraction ends the look)
        if len(f) != 3:
            continue
        if not _INTEGER.fullmatch(f[2]):
            return None
        rows.append((no, f))
    return rows


def _header_evidence(words: list[str], header: int) -> Evidence | None:
    """A header that says the file is qrels: BEIR's qrels header, or one naming a grade column."""
    if tuple(words) == BEIR_QRELS_HEADER:
        return Evidence(
            True,
            f"its header {' '.join(words)!r} is BEIR's qrels header, and every value under "
            "'score' is an integer (a grade)",
            header,
        )
    named = [w for w in words if w in GRADE_WORDS]
    if named:
        return Evidence(
            True,
            f"its header {' '.join(words)!r} names a grade column ({named[0]!r}), and every value in it is an integer",
            header,
        )
    return None


def _rise_and_tie(
    rows: list[tuple[int, list[str]]],
) -> tuple[tuple[str, int, int, int, int] | None, tuple[str, int] | None]:
    """The first value that rises within a query in file order (query, value before, its line, value,
    line), and the first that ties one seen before in its query (query, line)."""
    last: dict[str, tuple[int, int, set[int]]] = {}  # query -> (its last value, its line, values seen)
    rise = tie = None
    for no, (q, _, v) in ((no, (f[0], f[1], int(f[2]))) for no, f in rows):
        if q in last:
            before, before_line, seen = last[q]
            if v > before and rise is None:
                rise = (q, before, before_line, v, no)
            if v in seen and tie is None:
                tie = (q, no)
            seen.add(v)
            last[q] = (v, no, seen)
        else:
            last[q] = (v, no, {v})
    return rise, tie


def qrels_evidence(head: bytes, fmt: str, header: int) -> Evidence | None:
    """Whether a file given as qrels in three columns holds a run's scores (a value with a fraction)."""
    if fmt not in ("trec3", "beir"):
        return None
    for (no, f), _ in zip(_rows(head, header), range(100)):  # (a run's scores show in its first rows)
        if len(f) == 3 and not _INTEGER.fullmatch(f[2]) and _fraction(f[2]):
            return Evidence(True, f"the line holds the score {f[2]!r} in its third column, not an integer grade", no)
    return None


def _fraction(text: str) -> bool:
    """A finite number that is not an integer as written (``0.83``, ``1e-3``; not ``3.0``)."""
    try:
        value = float(text)
    except ValueError:
        return False
    return value == value and abs(value) != float("inf") and not value.is_integer()


def check_columns(head: bytes, path: str | Path, kind: str, fmt: str, header: int) -> None:
    """Refuse (sure evidence) or warn (likely) when a column file given as ``kind`` holds the other
    role; ``head`` is the file's first 64 KB, ``header`` its header line (0: none)."""
    head = head_of(head)
    if kind == "run":
        found = run_evidence(head, fmt, header)
        other, given, flag, takers = "qrels", "a run", "--run-format", "evaluate and compare take it"
        advice = "give it as QRELS"
    else:
        found = qrels_evidence(head, fmt, header)
        other, given, flag, takers = "a run", "qrels", "--qrels-format", "evaluate, compare and agree take it"
        advice = "give it as a RUN (are the arguments in the right order?)"
    if found is None:
        return
    if found.sure:
        raise InputError(
            f"looks like {other}, not {given}: {found.evidence}; {advice}, or {flag} {fmt} ({takers}; "
            f"format={fmt!r} in Python) if it really is {given}",
            path,
            found.line,
        )
    print(
        f"warning: {path}: read as a run, though {found.evidence}; if it is qrels, it goes where qrels are read "
        "(the QRELS of evaluate, compare and agree)",
        file=sys.stderr,
    )


def trec_line_evidence(fields: list[str], kind: str) -> str | None:
    """Why a first line in the other role's TREC shape is that role (the four columns of TREC qrels
    given as a run, a TREC run's six given as qrels); None when it is not."""
    if kind == "run" and len(fields) == 4 and fields[1] == "0" and _INTEGER.fullmatch(fields[3]):
        return "has TREC qrels' four columns (query, iteration 0, chunk id, integer grade) and no rank, score or tag"
    if (
        kind == "qrels"
        and len(fields) in (5, 6)
        and fields[1].upper() == "Q0"
        and _number(fields[3])
        and _number(fields[4])
    ):
        return "has a TREC run's columns (query, Q0, chunk id, rank, score" + (", tag)" if len(fields) == 6 else ")")
    return None


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------- JSON Lines records

QUESTION_FIELDS = ("question", "answer", "chunk_ids", "difficulty", "reference", "response")
QUERY_ID_FIELDS = ("query_id", "qid")


def jsonl_run_evidence(obj: Mapping[str, Any]) -> str | None:
    """Why a JSON line given as a run (it has no ``score``) is a judgment: it has a grade instead."""
    grade = next((k for k in ("grade", "relevance") if k in obj), None)
    if grade is None or "score" in obj:
        return None
    return f"the line has {grade!r} and no 'score' (a judgment, as qrels and judge's output hold them)"


def jsonl_qrels_evidence(obj: Mapping[str, Any]) -> str | None:
    """Why a JSON line given as qrels (it has no ``grade``) is a run's result: it has a score instead."""
    if "score" not in obj or "grade" in obj or "relevance" in obj:
        return None
    return "the line has 'score' and no 'grade' (a run's result)"


def chunk_line_evidence(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why a line given as a chunk is something else: a question, an answer, a query or a run's
    result (its fields are theirs and it has no ``text``), as (what the file is, the fields that say
    so). None when it may be a chunk."""
    if "text" in obj:
        return None
    keys = set(obj)
    if {"query_id", "chunk_id"} <= keys and ("score" in keys or "grade" in keys):
        return ("a run or judgments", "query_id, chunk_id and " + ("score" if "score" in keys else "grade"))
    theirs = ", ".join(k for k in QUESTION_FIELDS if k in keys)
    if "response" in keys:
        return ("answers to check", f"{theirs}, and no 'text'")
    if "question" in keys or "query" in keys:
        return ("a question set or queries", f"{theirs or 'query'}, and no 'text'")
    if any(k in keys for k in QUERY_ID_FIELDS):
        return ("queries", f"{next(k for k in QUERY_ID_FIELDS if k in keys)}, and no 'id' or 'text'")
    return None


def query_line_evidence(obj: Mapping[str, Any]) -> str | None:
    """Why a line given as a query is a chunk: its only text is ``text``, beside the ``doc_id`` or
    ``title`` of a corpus line (no query file has either), and no question or query field."""
    if "text" not in obj or "question" in obj or "query" in obj:
        return None
    marks = [k for k in ("doc_id", "title") if k in obj]
    if not marks:
        return None
    return f"has {' and '.join(repr(k) for k in marks)} beside 'text', as a corpus line has"


def refuse_role(path: str | Path | None, line: int | None, other: str, evidence: str, advice: str) -> InputError:
    """The error of a file in the wrong role, with its evidence and what to do."""
    return InputError(f"looks like {other}: {evidence}; {advice}", path, line)


# ------------------------------------------------------------------ a run that is the qrels themselves

FEWEST_ROWS_OF_GRADES = 5


def grades_evidence(qrels: Any, run: Any, qrels_name: str = "the qrels") -> str | None:
    """Why a run (read with its format detected) is the qrels themselves: every (query, chunk) it
    ranks is judged in ``qrels`` and every score is that pair's grade, over at least 5 rows. Such a
    "run" scores ndcg 1.0 against itself, whatever its file's shape (three columns, ranx's JSON).
    Cheap: looked at only when every score is an integer and the run has no more rows than the qrels."""
    import numpy as np

    scores = np.asarray(run.scores)
    if (
        len(scores) < FEWEST_ROWS_OF_GRADES
        or len(scores) > len(qrels.grades)
        or not bool(np.all(np.isfinite(scores) & (scores == np.floor(scores))))
    ):
        return None
    grade_of = {
        (qrels.queries[q], d): g for q, d, g in zip(qrels.qidx.tolist(), qrels.doc_ids.tolist(), qrels.grades.tolist())
    }
    for q, d, s in zip(run.qidx.tolist(), run.doc_ids.tolist(), scores.tolist()):
        if grade_of.get((run.queries[q], d)) != s:
            return None
    return (
        f"every one of its {len(scores)} (query, chunk) pairs is judged in {qrels_name} and its score equals "
        "that pair's grade there: these are the qrels' own grades, and scored against them every measure is 1.0"
    )


def refuse_grades_as_run(
    qrels: Any, run: Any, qrels_path: str | Path | None = None, run_path: str | Path | None = None
) -> Any:
    """``run`` unchanged, unless it is the qrels' own grades (:func:`grades_evidence`): then an error
    naming both files and the way to force the reading (``--run-format`` / ``format=``). Asked only
    of a run whose format was detected, not given by name."""
    qrels_file = qrels_path or qrels.source or "the qrels"
    evidence = grades_evidence(qrels, run, str(qrels_file))
    if evidence is None:
        return run
    run_file = run_path or run.source or "the run"
    raise InputError(
        f"looks like qrels, not a run: {evidence}; give a run of a retriever's results; --run-format "
        f"names its format if {run_file} really is a run (trec, trec3, jsonl or beir; format= in Python, "
        "where a Run object or a dict is taken as it is)",
        run_file,
    )
