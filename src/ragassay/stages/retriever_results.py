"""What a retriever returned for one query, checked before its items are read.

A retriever returns a list (or any iterable) of chunk ids, ``(id, score)`` pairs, or nodes and
documents. Some values iterate without being such a list, and would be read wrongly in silence: a
string iterates as its characters (``"chunk-1"`` would be seven ids), a dict as its keys. These,
and None (a function that forgot its ``return``), are refused with the retriever's name, the query
and what came back.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import RagassayError

_SHAPE = "a list of chunk ids or (id, score) pairs, best first (an empty list when nothing is found)"


def shown(value: Any, limit: int = 80) -> str:
    """A short repr of a returned value."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def results_of(value: Any, retriever: str, qid: str) -> list[Any]:
    """``value`` as the list of its results, or a RagassayError naming ``retriever``, ``qid`` and
    what was returned."""
    returned = f"the retriever {retriever!r} returned"
    if value is None:
        raise RagassayError(
            f"{returned} None for query {qid!r}: it must return {_SHAPE}; does the function end without a return?"
        )
    if isinstance(value, (str, bytes)):
        raise RagassayError(
            f"{returned} a string ({shown(value)}) for query {qid!r}, not a list: it must return "
            f"{_SHAPE} (one id is [{shown(value, 40)}])"
        )
    if isinstance(value, Mapping):
        keys = ", ".join(shown(k, 30) for k in list(value)[:5]) + (", ..." if len(value) > 5 else "")
        raise RagassayError(
            f"{returned} a {type(value).__name__} (keys: {keys or 'none'}) for query {qid!r}, not a "
            f"list: it must return {_SHAPE} (a dict of id -> score: list(d.items()))"
        )
    if not isinstance(value, Iterable):
        raise RagassayError(
            f"{returned} {shown(value)} ({type(value).__name__}) for query {qid!r}: it must return {_SHAPE}"
        )
    try:
        return list(value)
    except RagassayError:
        raise
    except Exception as e:  # a generator that fails part-way: the user's code, on this query
        raise RagassayError(
            f"the retriever {retriever!r} failed on query {qid!r} while its results were read: {type(e).__name__}: {e}"
        ) from e


def near_names(module: Any, attr: str) -> str:
    """``; did you mean 'search'?`` for a name the module lacks: its public callables closest to
    ``attr`` (or, when none is close, the few it has)."""
    names = sorted(
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and callable(v) and getattr(v, "__module__", module.__name__) == module.__name__
    )
    close = difflib.get_close_matches(attr, names, n=3, cutoff=0.6) or difflib.get_close_matches(
        attr.lower(), [n.lower() for n in names], n=3, cutoff=0.6
    )
    close = [next(n for n in names if n.lower() == c) if c not in names else c for c in close]
    if close:
        return f"; did you mean {' or '.join(repr(c) for c in close)}?"
    return f"; it has {', '.join(repr(n) for n in names[:8])}" if names else "; it defines no public function"


def near_files(path: Any) -> str:
    """``; did you mean 'retrievers.py'?`` for a missing file: the Python files beside where it was
    looked for whose names are closest."""
    folder = Path(path).parent
    try:
        files = sorted(p.name for p in folder.iterdir() if p.suffix == ".py")
    except OSError:
        return ""
    close = difflib.get_close_matches(Path(path).name, files, n=3, cutoff=0.6)
    shown_files = [str(folder / c) if str(folder) != "." else c for c in close]
    return f"; did you mean {' or '.join(repr(c) for c in shown_files)}?" if close else ""
