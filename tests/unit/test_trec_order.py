"""trec_order puts a run's rows in trec_eval's order: query code, score descending, document id
descending in byte order. Ties are ordered two ways (short runs of ties by pairwise comparison,
long ones by sorting): both are checked against Python's own sort of the same rows, on ids of one,
two and three 8-byte words, ids that are prefixes of others, non-ASCII ids, runs of ties shorter
and longer than the pairwise limit, in rank order, shuffled, and grouped but unsorted."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import nonempty
from ragassay.data.tables import SMALL_TIE, byte_order_words, places_in_ties, trec_order


def reference(qidx, scores, docs) -> list[int]:
    rows = list(range(len(qidx)))
    rows.sort(key=lambda i: bytes(docs[i]), reverse=True)  # document id descending (bytes)
    rows.sort(key=lambda i: (int(qidx[i]), -float(scores[i])))  # stable: then query, score descending
    return rows


def arrays(rows):
    qidx = np.array([r[0] for r in rows], dtype=np.int64)
    scores = np.array([r[1] for r in rows], dtype=np.float64)
    width = max([len(r[2]) for r in rows] + [1])
    docs = np.array([r[2] for r in rows], dtype=f"S{(width + 7) // 8 * 8}")
    return qidx, scores, docs


def ordered(qidx, scores, docs) -> list[int]:
    order = trec_order(qidx, scores, docs)
    return list(range(len(qidx))) if order is None else order.tolist()


ids = st.one_of(
    st.text(alphabet="ab01", min_size=1, max_size=4),  # short, prefixes of each other
    st.text(alphabet="xyz9", min_size=7, max_size=18),  # one to three words
    st.text(alphabet="éa€", min_size=1, max_size=5),  # non-ASCII
).map(lambda s: s.encode("utf-8"))


@st.composite
def runs(draw):
    n_queries = draw(st.integers(1, 4))
    rows = []
    for q in range(n_queries):
        docs = draw(st.lists(ids, min_size=0, max_size=30, unique=True))
        few_scores = draw(st.sampled_from([[1.0], [1.0, 2.0], [0.5, 1.0, 2.0, 3.0], [-1.0, 0.0]]))
        rows += [(q, draw(st.sampled_from(few_scores)), d) for d in docs]
    how = draw(st.sampled_from(["as drawn", "rank order", "shuffled"]))
    if how == "rank order":
        rows.sort(key=lambda r: (r[0], -r[1]))
    elif how == "shuffled":
        rows = draw(st.permutations(rows))
    return rows


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_the_order_is_pythons_sort_of_query_score_and_id(rows):
    qidx, scores, docs = arrays(rows)
    assert ordered(qidx, scores, docs) == reference(qidx, scores, docs)


@pytest.mark.parametrize("size", [2, 3, SMALL_TIE - 1, SMALL_TIE, SMALL_TIE + 1, 40])
@pytest.mark.parametrize("width", [3, 8, 12, 20])
def test_runs_of_ties_either_side_of_the_pairwise_limit(size, width):
    rng = np.random.default_rng(size * 100 + width)
    rows = []
    for q in range(30):  # every query: one run of `size` ties, runs of 2 and 3, and untied rows
        scores = [5.0] * size + [4.0, 4.0] + [3.0] * 3 + list(np.arange(2.0, 1.0, -0.25))
        for s in scores:
            tail = bytes(rng.integers(97, 100, size=max(1, width - 2)).tolist())
            rows.append((q, s, b"p" + tail + str(len(rows)).encode()))  # a shared prefix; distinct ids
    qidx, scores, docs = arrays(rows)
    assert ordered(qidx, scores, docs) == reference(qidx, scores, docs)


def test_places_in_ties_are_each_rows_count_of_greater_ids_in_its_run():
    rng = np.random.default_rng(7)
    sizes = [2, 2, 3, SMALL_TIE, SMALL_TIE + 1, 25, 2]
    tie_run = np.repeat(np.arange(len(sizes)), sizes)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    docs = np.array([b"d%d" % x for x in rng.permutation(1000)[: sum(sizes)]], dtype="S8")
    place = places_in_ties(byte_order_words(docs), tie_run, starts)
    for run in nonempty(range(len(sizes))):
        mine = np.flatnonzero(tie_run == run)
        expected = [sum(docs[j] > docs[i] for j in mine) for i in mine]
        assert place[mine].tolist() == expected
        assert sorted(place[mine].tolist()) == list(range(sizes[run]))
