"""The vectorised primitives under both readers and the join, against plain Python.

Each is checked on data chosen to break it: tokens touching the end of the buffer (where an 8-byte
read would run past it), tokens of exactly 8 and 16 bytes, int32 and int64 offsets, ids that share
their first 8 bytes, keys that collide in the hash table's slots.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import nonempty
from ragassay.data.column_bytes import gather
from ragassay.data.column_keys import KeyIndex, factorize
from ragassay.data.column_numbers import parse_floats, parse_plain_decimals, parse_plain_integers
from ragassay.errors import InputError

tokens = st.lists(st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\0", b"x")), min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(tokens, st.binary(max_size=3), st.booleans(), st.booleans(), st.randoms())
def test_gather_copies_every_token_exactly(toks, tail, int32, into_out, rnd):
    data = b" ".join(toks) + tail  # the last token ends at or within 3 bytes of the buffer's end
    starts, pos = [], 0
    for t in toks:
        starts.append(pos)
        pos += len(t) + 1
    s = np.array(starts, dtype=np.int32 if int32 else np.int64)
    e = s + np.array([len(t) for t in toks], dtype=s.dtype)
    if rnd.random() < 0.3:  # tokens asked for out of file order
        perm = np.array(rnd.sample(range(len(toks)), len(toks)), dtype=np.int64)
        s, e, toks = s[perm], e[perm], [toks[i] for i in perm.tolist()]
    buf = np.frombuffer(data, dtype=np.uint8)
    if into_out:
        out = np.zeros(len(toks) + 2, dtype="S48")
        got = gather(buf, s, e, out=out[1:-1])
        assert out[0] == b"" and out[-1] == b""  # nothing written outside the slice
    else:
        got = gather(buf, s, e)
        assert got.dtype.itemsize % 8 == 0 and got.dtype.itemsize >= max(len(t) for t in toks)
    assert got.tolist() == toks


def test_gather_of_tokens_out_of_file_order():
    buf = np.frombuffer(b"alpha beta-is-longer-than-8 c", dtype=np.uint8)
    starts, ends = np.array([28, 6, 0]), np.array([29, 27, 5])
    assert gather(buf, starts, ends).tolist() == [b"c", b"beta-is-longer-than-8", b"alpha"]


def test_gather_in_a_buffer_shorter_than_one_word():
    buf = np.frombuffer(b"ab c", dtype=np.uint8)
    assert gather(buf, np.array([0, 3]), np.array([2, 4])).tolist() == [b"ab", b"c"]
    assert gather(buf, np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"q1", b"q10", b"q1\xc3\xa9", b"abcdefgh", b"abcdefghX", b"abcdefghY", b"#"]),
        min_size=1,
        max_size=40,
    ),
    st.booleans(),
)
def test_factorize_gives_first_seen_codes(ids, grouped):
    if grouped:
        ids = sorted(ids, key=ids.index)
    col = np.array(ids, dtype="S16")
    vocab: dict[bytes, int] = {}
    codes = factorize(col, vocab)
    expected: dict[bytes, int] = {}
    assert codes.tolist() == [expected.setdefault(i, len(expected)) for i in ids]
    assert list(vocab) == list(expected)


def test_factorize_of_ids_sharing_their_first_word():
    col = np.array([b"abcdefgh1", b"abcdefgh1", b"abcdefgh2", b"abcdefgh1"], dtype="S16")
    assert factorize(col, {}).tolist() == [0, 0, 1, 0]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 2**64 - 1), max_size=200),
    st.lists(st.integers(0, 2**64 - 1), max_size=200),
    st.integers(0, 60),
    st.booleans(),
)
def test_key_index_finds_exactly_the_stored_keys(keys, others, crowd, at_top):
    # keys whose top bits (their home slot) agree crowd into one run of slots: at the table's
    # start, or at its very end, where a probe must not run off the table
    top = ((1 << crowd) - 1) << (64 - crowd) if at_top else 0
    keys = list(dict.fromkeys((k & ((1 << (64 - crowd)) - 1)) | top or 1 for k in keys))
    others = [(k & ((1 << (64 - crowd)) - 1)) | top for k in others]
    index = KeyIndex(np.array(keys, dtype=np.uint64))
    assert index.distinct
    query = np.array(keys[::-1] + [o for o in others if o], dtype=np.uint64)
    where = {k: i for i, k in enumerate(keys)}
    assert index.find(query).tolist() == [where.get(int(q), -1) for q in query.tolist()]


@pytest.mark.parametrize("n", [2, 200, 5000])
def test_key_index_of_keys_that_differ_only_in_their_lowest_bits(n):
    """Keys sharing every bit above the few that count their positions (the table is built by one
    sort of each key's high bits with its position below them: such keys must still be found)."""
    keys = np.uint64(0xABCDEF0123400000) | np.arange(n, 0, -1, dtype=np.uint64)
    index = KeyIndex(keys)
    assert index.distinct
    assert index.find(keys[::-1]).tolist() == list(range(n))[::-1]
    assert index.find(keys + np.uint64(n + 1)).tolist() == [-1] * n  # near misses are misses


def test_key_index_of_many_random_keys_finds_each_at_its_position():
    rng = np.random.default_rng(3)
    keys = np.unique(rng.integers(1, 2**64 - 1, 300_000, dtype=np.uint64, endpoint=True))
    keys = keys[rng.permutation(len(keys))]
    index = KeyIndex(keys)
    perm = rng.permutation(len(keys))
    assert np.array_equal(index.find(keys[perm]), perm)
    stored = index.slot_keys[index.slot_keys != 0]
    assert len(stored) == len(keys) and set(stored.tolist()) == set(keys.tolist())


def test_key_index_says_when_it_cannot_be_used():
    assert not KeyIndex(np.array([5, 9, 5], dtype=np.uint64)).distinct  # a repeated key
    assert not KeyIndex(np.array([0, 9], dtype=np.uint64)).distinct  # 0 is the empty-slot mark
    assert KeyIndex(np.zeros(0, dtype=np.uint64)).find(np.array([1, 2], dtype=np.uint64)).tolist() == [-1, -1]


plain_decimals = st.builds(
    lambda sign, digits, dot: sign + (digits[:dot] + "." + digits[dot:] if dot is not None else digits),
    st.sampled_from(["", "-"]),
    st.text("0123456789", min_size=1, max_size=15),
    st.one_of(st.none(), st.integers(0, 15)),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(plain_decimals, min_size=1, max_size=20))
def test_plain_decimals_equal_python_float_bit_for_bit(texts):
    col = np.array([t.encode() for t in texts], dtype="S24")
    values, ok = parse_plain_decimals(col)
    assert ok.all()
    for t, v in nonempty(zip(texts, values.tolist())):
        assert v == float(t) and np.signbit(v) == np.signbit(float(t)), t


def test_other_numbers_are_left_to_the_full_parser():
    texts = [
        b"1e5",
        b"+1",
        b"inf",
        b"nan",
        b"1_0",
        b"--1",
        b"1.2.3",
        b"-",
        b".",
        b"1-",
        b"0x10",
        b"1234567890123456",
        b"0.30000000000000004",
        b"12.5",
    ]
    values, ok = parse_plain_decimals(np.array(texts, dtype="S24"))
    assert ok.tolist() == [False] * 13 + [True] and values[-1] == 12.5
    lines = np.arange(1, len(texts) + 1)
    parsed = parse_floats(
        np.array([b"1e5", b"+1", b"-0", b"0.30000000000000004"], dtype="S24"), lines[:4], "f", "score"
    )
    assert parsed.tolist() == [1e5, 1.0, -0.0, 0.30000000000000004] and np.signbit(parsed[2])
    with pytest.raises(InputError, match="score must be finite") as e:
        parse_floats(np.array([b"1", b"inf"], dtype="S8"), np.array([3, 9]), "f", "score")
    assert e.value.line == 9
    with pytest.raises(InputError, match="not a number: '1_0x'"):
        parse_floats(np.array([b"1_0x"], dtype="S8"), np.array([1]), "f", "score")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.builds(
            lambda sign, digits: sign + digits,
            st.sampled_from(["", "-"]),
            st.text("0123456789", min_size=1, max_size=15),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_plain_integers_equal_python_int(texts):
    values, ok = parse_plain_integers(np.array([t.encode() for t in texts], dtype="S16"))
    assert ok.all() and values.tolist() == [int(t) for t in texts]


def test_grades_in_other_forms_are_left_to_the_full_parser():
    values, ok = parse_plain_integers(np.array([b"2", b"1.0", b"1e2", b"+1", b"1234567890123456", b"-"], dtype="S16"))
    assert ok.tolist() == [True, False, False, False, False, False] and values[0] == 2
