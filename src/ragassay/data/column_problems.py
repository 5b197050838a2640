"""Every bad line of a column file (TREC, three columns, BEIR TSV), in file order, up to a cap.

The column reader checks a block of lines a column at a time: the count of fields first, then each
converted column (scores, grades). Its first error is therefore the first of one kind, not the first
line: a bad score on line 2 was reported as the short line 3. Once it has failed, the lines from the
start of the failing block (the blocks before it passed) are read again one at a time here, each
through the same checks and converters, so every bad line is said in file order with the reader's
own words. This runs only on the error path: a good file is never read twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .line_problems import CAP, LineProblems

_FIELD = re.compile(rb"[^\x00-\x20]+")  # the column reader splits on every byte up to a space


def every_bad_line(
    data: bytes,
    start: int,
    first_line: int,
    ncols: int,
    most: int | None,
    wanted: Sequence[tuple[int, Any]],
    path: str | Path,
    first: InputError,
    max_field: int,
) -> InputError:
    """One error saying the bad lines of ``data`` from byte ``start`` (line ``first_line``) on, in
    file order: the look stops at the ``CAP``-th bad line (saying the lines after it were not read).
    ``first`` is the reader's own error, returned when the lines show nothing more."""
    problems = LineProblems(path)
    line_no = first_line - 1
    pos, n = start, len(data)
    while pos < n and len(problems.found) < CAP:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl
        line, pos, line_no = data[pos:end], end + 1, line_no + 1
        problem = line_problem(line, line_no, ncols, most, wanted, path, max_field)
        if problem is not None:
            problems.add(line_no, problem)
    if not problems:
        return first
    error = problems.error()
    if pos < n and len(problems.found) >= CAP:  # the look stopped at the cap: the rest is not known
        error = InputError(f"{error.message}; the lines after line {line_no} were not read", path, None)
        error.line = problems.found[0][0]
    return error


def line_problem(
    line: bytes,
    line_no: int,
    ncols: int,
    most: int | None,
    wanted: Sequence[tuple[int, Any]],
    path: str | Path,
    max_field: int,
) -> str | None:
    """What is wrong with one line, in the column reader's words; None when it reads."""
    fields = _FIELD.findall(line)
    if not fields:
        return None
    if len(fields) < ncols or (most is not None and len(fields) > most):
        want = str(ncols) if most == ncols else f"{ncols} or more" if most is None else f"{ncols} to {most}"
        text = line.decode("utf-8", "replace").strip()
        return f"expected {want} whitespace-separated columns, found {len(fields)}: {text[:120]!r}"
    for c, convert in wanted:
        if len(fields[c]) > max_field:
            return f"a field of {len(fields[c])} bytes: not an id or a number (is this the right file?)"
        if convert is not None:
            try:
                convert(np.array([fields[c]]), np.array([line_no], dtype=np.int64), path)
            except InputError as e:
                return e.message
    return None
