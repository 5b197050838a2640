"""Qrels and runs held as columns: one numpy array per column rather than a dict per query.

Query ids are kept once, in a small list (``queries``), and each row holds only an integer code
into it; document ids are one fixed-width UTF-8 bytes array. A run of two million lines then costs
a few tens of megabytes, and every metric can be computed over all queries at
once with array operations rather than a Python loop per query.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from ..errors import InputError
from .background import Background
from .column_keys import hash_bytes, mix
from .column_numbers import INT_LIMIT
from .origin import UNKNOWN, Origin


def encode_ids(ids: Iterable[str]) -> np.ndarray:
    encoded = [str(i).encode("utf-8") for i in ids]
    width = max((len(e) for e in encoded), default=1)
    width = max(8, (width + 7) // 8 * 8)
    return np.array(encoded, dtype=f"S{width}")


def query_codes(query_ids: Iterable[str]) -> tuple[list[str], np.ndarray]:
    vocab: dict[str, int] = {}
    codes = np.fromiter((vocab.setdefault(str(q), len(vocab)) for q in query_ids), dtype=np.int64)
    return list(vocab), codes


def _first_duplicate(
    qidx: np.ndarray, docs: np.ndarray, queries: list[str], lines: np.ndarray | None, keys: np.ndarray | None = None
) -> tuple[int, str, str, str, int | None] | None:
    """(count, document, query, " (first on line N)", line) of the first repeated pair, or None."""
    first, again = find_duplicates(qidx, docs, keys)
    if not len(again):
        return None
    i = int(np.argmin(again))
    f, a = int(first[i]), int(again[i])
    where = f" (first on line {int(lines[f])})" if lines is not None else ""
    return (
        len(again),
        docs[a].decode("utf-8", "replace"),
        queries[qidx[a]],
        where,
        int(lines[a]) if lines is not None else None,
    )


def _nested(queries: list[str], qidx: np.ndarray, docs: np.ndarray, values: np.ndarray) -> dict[str, dict]:
    out: dict[str, dict] = {q: {} for q in queries}
    for q, d, v in zip(qidx.tolist(), docs.tolist(), values.tolist()):
        out[queries[q]][d.decode("utf-8")] = v
    return out


DUPLICATE_SLICE = 1 << 17  # rows of a grouped run sorted at a time in the duplicate check
KEY_STEP = 1 << 18  # rows hashed at a time


def row_keys(qidx: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's (query code, document id): equal pairs, equal keys. Made in
    steps, so the hashing's temporaries stay a few MB whatever the run's size."""
    out = np.empty(len(docs), dtype=np.uint64)
    for lo in range(0, len(docs), KEY_STEP):
        out[lo : lo + KEY_STEP] = mix(hash_bytes(docs[lo : lo + KEY_STEP]), qidx[lo : lo + KEY_STEP])
    return out


def find_duplicates(
    qidx: np.ndarray, docs: np.ndarray, keys: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of rows ``(first, again)`` that repeat the same (query, document); ``keys``, when
    given, are the rows' :func:`row_keys` (left unchanged)."""
    empty = np.zeros(0, dtype=np.int64)
    if len(docs) < 2:
        return empty, empty
    if bool(np.all(qidx[1:] >= qidx[:-1])):
        # grouped by query: a repeat lies within one query, so slices cut at query starts are
        # sorted one at a time (cache-sized, and never a second copy of all the keys; without
        # ``keys`` each slice's are made as it is checked, and none are kept)
        cuts = np.flatnonzero(qidx[1:] != qidx[:-1]) + 1
        lo, n = 0, len(docs)
        while lo < n:
            j = int(np.searchsorted(cuts, lo + DUPLICATE_SLICE))  # the first query start past the slice
            hi = int(cuts[j]) if j < len(cuts) else n
            sk = np.sort(keys[lo:hi] if keys is not None else row_keys(qidx[lo:hi], docs[lo:hi]))
            if bool(np.any(sk[1:] == sk[:-1])):
                break
            lo = hi
        else:
            return empty, empty
    else:
        sk = row_keys(qidx, docs) if keys is None else keys.copy()
        sk.sort()  # in place: no third copy of the keys
        if not bool(np.any(sk[1:] == sk[:-1])):  # the usual case, found with a cheap sort
            return empty, empty
    del sk
    if keys is None:
        keys = row_keys(qidx, docs)  # (rare: a repeated key) again, unsorted, to find the rows
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    cand = np.flatnonzero(sk[1:] == sk[:-1])
    if not len(cand):
        return empty, empty
    a, b = order[cand], order[cand + 1]
    same = (qidx[a] == qidx[b]) & (docs[a] == docs[b])
    first, again = np.minimum(a, b)[same], np.maximum(a, b)[same]
    return first, again


class Qrels:
    """Relevance judgments: (query, document, integer grade) rows.

    Build one with :func:`ragassay.read_qrels`, :meth:`from_dict` (pytrec_eval's
    ``{query: {doc: grade}}``) or :meth:`from_rows`.
    """

    def __init__(
        self, queries: list[str], qidx: np.ndarray, doc_ids: np.ndarray, grades: np.ndarray, source: str | None = None
    ):
        self.queries = queries
        self.qidx = np.asarray(qidx, dtype=np.int64)
        self.doc_ids = doc_ids
        self.grades = np.asarray(grades, dtype=np.int64)
        self.source = source
        self.origin: Origin | None = None  # who made the labels (data/origin.py): set by the readers, None is unknown

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, int]], source: str | None = None) -> Qrels:
        rows = list(rows)
        queries, qidx = query_codes(r[0] for r in rows)
        docs = encode_ids(r[1] for r in rows)
        values = [int(r[2]) for r in rows]
        big = next((v for v in values if abs(v) > INT_LIMIT), None)
        if big is not None:
            raise InputError(f"grade {big} is out of range (at most {INT_LIMIT} either side of 0)", source)
        grades = np.array(values, dtype=np.int64)
        q = cls(queries, qidx, docs, grades, source)
        q.check_unique()
        return q

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, int]]) -> Qrels:
        return cls.from_rows(((q, doc, g) for q, docs in d.items() for doc, g in docs.items()))

    def check_unique(self, lines: np.ndarray | None = None) -> None:
        dup = _first_duplicate(self.qidx, self.doc_ids, self.queries, lines)
        if dup:
            _, doc, query, where, line = dup
            raise InputError(
                f"document {doc!r} is judged twice for query {query!r}{where}; "
                "keep one judgment per query and document",
                self.source,
                line,
            )

    def __len__(self) -> int:
        return len(self.grades)

    def digest(self) -> str:
        """A digest of the judgments as read (query, document, grade, in the file's order): two
        results carry the same digest only when scored on the same labels. A file written in
        another order gives another digest, so history never draws a trend it cannot vouch for."""
        job = getattr(self, "_digest_job", None)
        if job is not None and all(a is b for a, b in zip(job[0], self._content())):
            made = job[1].result()
            if made is not None:
                return made
        return self._hashed()

    def digest_soon(self) -> None:
        """Start :meth:`digest` on another thread (hashing lets go of the GIL): a large qrels' digest,
        a few tenths of a second, is then made while the run is scored and is ready when the result
        is written. The digest is of the arrays as they are now (a changed array is hashed again)."""
        job = Background(self._hashed, "qrels digest")
        self._digest_job = (self._content(), job, job.thread)  # (the thread is named: a test looks for it)

    def _content(self) -> tuple:
        return (self.queries, self.qidx, self.doc_ids, self.grades)

    def _hashed(self) -> str:
        h = hashlib.blake2b(digest_size=12)
        h.update("\n".join(self.queries).encode("utf-8", "surrogatepass"))
        for a in (self.qidx, self.grades):  # the arrays' own buffers: no copy of a large qrels
            h.update(np.ascontiguousarray(a, dtype="<i8").data.cast("B"))
        docs = self.doc_ids
        if isinstance(docs, np.ndarray) and docs.dtype.kind in "SU":  # fixed width: the buffer is the content
            h.update(str(docs.dtype).encode())
            h.update(np.ascontiguousarray(docs).data.cast("B"))
        else:
            h.update(b"\0".join(d if isinstance(d, bytes) else str(d).encode() for d in list(docs)))
        return h.hexdigest()

    def describe(self) -> dict:
        """Which qrels: the file, its content digest and who made its labels (data/origin.py)."""
        return {"file": self.source, "digest": self.digest(), "origin": (self.origin or UNKNOWN).summary()}

    def to_dict(self) -> dict[str, dict[str, int]]:
        return _nested(self.queries, self.qidx, self.doc_ids, self.grades)

    def rows(self) -> Iterable[tuple[str, str, int]]:
        for q, d, g in zip(self.qidx.tolist(), self.doc_ids.tolist(), self.grades.tolist()):
            yield self.queries[q], d.decode("utf-8"), g

    def __repr__(self) -> str:
        return f"Qrels({len(self.queries)} queries, {len(self)} judgments)"


class Run:
    """A retrieval run: (query, document, score) rows; ``name`` is the TREC tag.

    Build one with :func:`ragassay.read_run`, :meth:`from_dict` (``{query: {doc: score}}``),
    :meth:`from_rows` or :func:`ragassay.run_retriever`. ``latency_ms`` holds per-query
    latency when the run was produced by ``run_retriever``.
    """

    def __init__(
        self,
        queries: list[str],
        qidx: np.ndarray,
        doc_ids: np.ndarray,
        scores: np.ndarray,
        name: str = "run",
        source: str | None = None,
        latency_ms: dict[str, float] | None = None,
    ):
        self.queries = queries
        self.qidx = np.asarray(qidx, dtype=np.int64)
        self.doc_ids = doc_ids
        self.scores = np.asarray(scores, dtype=np.float64)
        self.name = name
        self.source = source
        self.latency_ms = latency_ms or {}
        self._keys: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def row_keys(self) -> np.ndarray:
        """Each row's 64-bit (query, document) hash, made once and kept: the duplicate check and
        every join to qrels use the same keys. Made again if ``qidx`` or ``doc_ids`` is replaced."""
        cached = getattr(self, "_keys", None)  # (a subclass may not call __init__)
        if cached is None or cached[0] is not self.qidx or cached[1] is not self.doc_ids:
            cached = (self.qidx, self.doc_ids, row_keys(self.qidx, self.doc_ids))
            self._keys = cached
        return cached[2]

    @classmethod
    def from_rows(
        cls, rows: Iterable[tuple[str, str, float]], name: str = "run", dedupe: bool = False, source: str | None = None
    ) -> Run:
        rows = list(rows)
        queries, qidx = query_codes(r[0] for r in rows)
        docs = encode_ids(r[1] for r in rows)
        scores = np.array([float(r[2]) for r in rows], dtype=np.float64)
        if not np.isfinite(scores).all():
            raise InputError("run scores must be finite numbers", source)
        run = cls(queries, qidx, docs, scores, name, source)
        return run.deduplicated() if dedupe else run.checked()

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, float]], name: str = "run") -> Run:
        """A run from ``{query: {doc: score}}``; a query with an empty ranking stays a query of the run."""
        run = cls.from_rows(((q, doc, s) for q, docs in d.items() for doc, s in docs.items()), name)
        known = set(run.queries)
        run.queries = run.queries + [str(q) for q in d if str(q) not in known]
        return run

    def checked(self, lines: np.ndarray | None = None) -> Run:
        """Raise on a document listed twice for one query (trec_eval refuses such runs)."""
        # a run grouped by query is checked a slice at a time without keeping its keys (scoring a
        # large one makes each slice's keys again); any other order keeps them for the join
        grouped = bool(np.all(self.qidx[1:] >= self.qidx[:-1]))
        dup = _first_duplicate(self.qidx, self.doc_ids, self.queries, lines, None if grouped else self.row_keys())
        if dup:
            count, doc, query, where, line = dup
            raise InputError(
                f"document {doc!r} is listed twice for query {query!r}{where}; {count} duplicate(s) in all. "
                "trec_eval refuses such runs; evaluate and compare take --dedupe (dedupe=True in Python) to keep "
                "each document's highest score",
                self.source,
                line,
            )
        return self

    def deduplicated(self) -> Run:
        """A copy keeping, for each (query, document) listed more than once, its highest score."""
        first, again = find_duplicates(self.qidx, self.doc_ids, self.row_keys())
        if not len(again):
            return self
        order = np.lexsort((-self.scores, self.doc_ids, self.qidx))
        q, d = self.qidx[order], self.doc_ids[order]
        keep = np.ones(len(order), dtype=bool)
        keep[1:] = (q[1:] != q[:-1]) | (d[1:] != d[:-1])
        rows = np.sort(order[keep])
        return Run(
            self.queries,
            self.qidx[rows],
            self.doc_ids[rows],
            self.scores[rows],
            self.name,
            self.source,
            self.latency_ms,
        )

    def __len__(self) -> int:
        return len(self.scores)

    def to_dict(self) -> dict[str, dict[str, float]]:
        return _nested(self.queries, self.qidx, self.doc_ids, self.scores)

    def ranked(self) -> dict[str, list[tuple[str, float]]]:
        """Each query's documents in trec_eval order: score descending, then id descending."""
        order = trec_order(self.qidx, self.scores, self.doc_ids)
        if order is None:
            order = np.arange(len(self))
        out: dict[str, list[tuple[str, float]]] = {q: [] for q in self.queries}
        for i in order.tolist():
            out[self.queries[self.qidx[i]]].append((self.doc_ids[i].decode("utf-8"), float(self.scores[i])))
        return out

    def top_ids(self, depth: int) -> dict[str, list[str]]:
        """Each query's first ``depth`` document ids in trec_eval order (what :meth:`ranked` lists
        first), without a tuple and a score object per row."""
        return dict(self.iter_top_ids(depth))

    def iter_top_ids(self, depth: int) -> Iterator[tuple[str, list[str]]]:
        """:meth:`top_ids` one query at a time, in the run's query order: only one query's ids are
        made at once (a million-row run's ids are not all decoded together)."""
        names = self.queries
        order = trec_order(self.qidx, self.scores, self.doc_ids)
        if order is None:
            order = np.arange(len(self))
        if not len(order):
            yield from ((name, []) for name in names)
            return
        q = self.qidx[order]  # grouped by query code, codes ascending (trec_order's contract)
        starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
        rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
        chosen = order[rank < depth]
        del q, starts, rank, order
        # each distinct id decoded once: a chunk in many queries' tops is one string, not one per row
        distinct, which = np.unique(self.doc_ids[chosen], return_inverse=True)
        ids = [d.decode("utf-8") for d in distinct.tolist()]
        del distinct
        docs: list[str] = []
        upcoming, current = 0, -1  # the next query code to give, the one being filled
        for lo in range(0, len(chosen), 1 << 16):
            part = slice(lo, lo + (1 << 16))
            for qi, d in zip(self.qidx[chosen[part]].tolist(), which[part].tolist()):
                if qi != current:
                    if current >= 0:
                        yield names[current], docs
                    while upcoming < qi:  # queries with nothing in the top (depth 0)
                        yield names[upcoming], []
                        upcoming += 1
                    current, docs, upcoming = qi, [], qi + 1
                docs.append(ids[d])
        if current >= 0:
            yield names[current], docs
        while upcoming < len(names):
            yield names[upcoming], []
            upcoming += 1

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {len(self.queries)} queries, {len(self)} rows)"


def trec_order(qidx: np.ndarray, scores: np.ndarray, docs: np.ndarray) -> np.ndarray | None:
    """Row order: grouped by query code, score descending, then document id descending.

    None means the rows are in that order already (the usual case for a system's run file).
    """
    n = len(qidx)
    if n < 2:
        return None
    same_q = qidx[1:] == qidx[:-1]
    grouped = bool(np.all(qidx[1:] >= qidx[:-1]))
    if grouped and bool(np.all(~same_q | (scores[1:] <= scores[:-1]))):
        order = None
    else:
        order = _sort_within_groups(qidx, scores) if grouped else None
        if order is None:
            order = np.lexsort((-scores, qidx))
    q, s = (qidx, scores) if order is None else (qidx[order], scores[order])
    tie = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    if tie.any():
        if order is None:
            order = np.arange(n)
        # Only rows tied on score need the (slower) ordering by document id.
        in_tie = np.zeros(n, dtype=bool)
        in_tie[1:] |= tie
        in_tie[:-1] |= tie
        idx = np.flatnonzero(in_tie)
        del in_tie
        first = ~tie[np.maximum(idx - 1, 0)] | (idx == 0)  # per tied row: does a run of ties start here
        starts = np.flatnonzero(first)
        tie_run = np.cumsum(first) - 1  # per tied row: which run of ties
        del first
        place = places_in_ties(byte_order_words(docs[order[idx]]), tie_run, starts)
        moved = np.empty(len(idx), dtype=order.dtype)
        moved[starts[tie_run] + place] = order[idx]
        order[idx] = moved
    return order


SMALL_TIE = 8  # runs of ties up to this long are ordered by comparing their rows pairwise


def places_in_ties(words: np.ndarray, tie_run: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each tied row's place in its run of ties, document id descending (trec_eval's order).

    ``words``: the rows' ids as :func:`byte_order_words`; ``tie_run``: each row's run (runs are
    contiguous, ``starts`` their first rows). A row's place is how many rows of its run have a
    greater id. Most runs hold two or three rows: those are counted by comparing each row with the
    rows 1, 2, ... places after it (a few vectorised comparisons, no sort); longer runs sort their
    rows' ids (stable sorts of the words, last word first, then one sort by run and rank), which
    is what the whole tie took before and costs several sorts of every tied row.
    """
    m = len(tie_run)
    sizes = np.diff(np.append(starts, m))
    size = sizes[tie_run]
    place = np.zeros(m, dtype=np.int64)
    small = size <= SMALL_TIE
    columns = [np.ascontiguousarray(words[:, j]) for j in range(words.shape[1])]
    longest_small = int(sizes[sizes <= SMALL_TIE].max(initial=0))
    for d in range(1, longest_small):  # rows i and i + d, as slices of the whole (no gathers)
        pair = tie_run[:-d] == tie_run[d:]
        pair &= small[:-d]
        later_greater = _greater([c[d:] for c in columns], [c[:-d] for c in columns])
        place[:-d] += pair & later_greater
        place[d:] += pair & ~later_greater
    big = np.flatnonzero(~small)
    if len(big):
        w = words[big]
        asc = np.argsort(w[:, -1], kind="stable")
        for j in range(w.shape[1] - 2, -1, -1):
            asc = asc[np.argsort(w[asc, j], kind="stable")]
        rank = np.empty(len(big), dtype=np.int64)
        rank[asc] = np.arange(len(big))
        order = np.argsort(tie_run[big] * len(big) - rank)  # every key differs: no need for a stable sort
        sorted_runs = tie_run[big][order]
        at = np.empty(len(big), dtype=np.int64)
        at[order] = np.arange(len(big))  # each row's position among the long runs' rows, sorted
        first_of_run = np.searchsorted(sorted_runs, tie_run[big], "left")
        place[big] = at - first_of_run
    return place


def _greater(a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
    """Row by row, whether the id in ``a`` sorts after the one in ``b`` (each a list of the byte
    order words' columns): decided by the first word that differs."""
    greater = a[-1] > b[-1]
    for x, y in zip(reversed(a[:-1]), reversed(b[:-1])):
        greater = (x > y) | ((x == y) & greater)
    return greater


def byte_order_words(ids: np.ndarray) -> np.ndarray:
    """A zero-padded ``S`` array as rows of uint64 words that order as the bytes do: each 8 bytes
    read big-endian, so comparing the rows as numbers, word after word, is comparing the ids byte
    by byte (the zero padding sorts a prefix first, as bytes comparison does). Sorting numbers
    this way is several times faster than sorting the strings."""
    width = ids.dtype.itemsize
    if width % 8:
        ids = ids.astype(f"S{(width + 7) // 8 * 8}")
    return np.ascontiguousarray(ids).view(">u8").reshape(len(ids), -1).astype(np.uint64)


def _sort_within_groups(qidx: np.ndarray, scores: np.ndarray) -> np.ndarray | None:
    """Score-descending order when rows are already grouped by query: one row of a padded
    matrix per query, sorted along its axis (much faster than a global lexsort). None when the
    groups are too uneven for the padding to be cheap."""
    n = len(qidx)
    starts = np.flatnonzero(np.r_[True, qidx[1:] != qidx[:-1]])
    sizes = np.diff(np.r_[starts, n])
    width = int(sizes.max())
    if len(starts) * width > 2 * n + 4096:
        return None
    group = np.repeat(np.arange(len(starts)), sizes)
    grid = np.full((len(starts), width), np.inf)
    grid[group, np.arange(n) - starts[group]] = -scores
    o = np.argsort(grid, axis=1, kind="stable") + starts[:, None]
    return o[np.arange(width)[None, :] < sizes[:, None]]
