"""Ids turned into numbers for fast joins: integer codes in first-seen order, 64-bit hashes of
fixed-width byte columns, and a vectorised hash table from those keys to their positions."""

from __future__ import annotations

import numpy as np

from .column_bytes import round8, to_width


def hash_bytes(a: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each element of an ``S`` array whose width is a multiple of 8.

    Used only to find candidate matches quickly; every match is then confirmed by comparing the
    bytes themselves, so a collision can never change a result.
    """
    width = a.dtype.itemsize
    if width % 8:
        a = to_width(a, round8(width))
        width = a.dtype.itemsize
    words = np.ascontiguousarray(a).view(np.uint64).reshape(len(a), width // 8)
    h = np.full(len(a), 0x9E3779B97F4A7C15, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h ^= words[:, j]
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
    return h


def mix(h: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Combine a hash with small integer codes (query positions) into one 64-bit key."""
    with np.errstate(over="ignore"):
        k = h ^ (codes.astype(np.uint64) * np.uint64(0x94D049BB133111EB))
        k *= np.uint64(0xD6E8FEB86659FD93)
        k ^= k >> np.uint64(32)
    return k


def factorize(col: np.ndarray, vocab: dict[bytes, int]) -> np.ndarray:
    """Integer codes for an ``S`` column, extending ``vocab`` in first-seen order.

    Runs and qrels are usually grouped by query, so only the heads of runs of equal values
    go through the dict; the codes are then repeated.
    """
    n = len(col)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    width = col.dtype.itemsize
    if width % 8 == 0 and col.flags.c_contiguous:  # compared as 8-byte words: ~20x faster than as bytes
        words = col.view(np.uint64).reshape(n, width // 8)
        np.not_equal(words[1:, 0], words[:-1, 0], out=change[1:])
        for j in range(1, width // 8):
            change[1:] |= words[1:, j] != words[:-1, j]
    else:
        np.not_equal(col[1:], col[:-1], out=change[1:])
    heads = np.flatnonzero(change)
    head_codes = np.fromiter(
        (vocab.setdefault(v, len(vocab)) for v in col[heads].tolist()), dtype=np.int64, count=len(heads)
    )
    return np.repeat(head_codes, np.diff(np.append(heads, n)))


def _key_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys)`` for 64-bit keys, by one sort of plain numbers where it can: each key's
    high bits with its position in the low bits (sorting numbers is several times faster than an
    argsort). Exact: when two keys share their high bits the order of their low bits is not known,
    and the argsort is used instead (about once in ten thousand tables of a hundred thousand keys)."""
    n = len(keys)
    bits = max(1, (n - 1).bit_length())
    if n < 2 or bits > 40:
        return np.argsort(keys)
    low = np.uint64((1 << bits) - 1)
    packed = np.sort((keys & ~low) | np.arange(n, dtype=np.uint64))
    high = packed & ~low
    if bool(np.any(high[1:] == high[:-1])):
        return np.argsort(keys)
    return (packed & low).astype(np.int64)


class KeyIndex:
    """A hash table from non-zero 64-bit keys to their positions, laid out in key order.

    Linear probing where a key's home slot is its top bits: placing the keys in sorted order, each
    in the first free slot at or after its home, is one running maximum (no rounds of scattering),
    and every run of occupied slots holds its keys in increasing order, so a probe for an absent key
    stops at the first larger key as well as at an empty slot. Built and probed with vectorised
    numpy, it joins millions of run rows to their judgments without a per-row Python lookup.
    ``distinct`` is False when two keys are equal or one is 0 (0 marks an empty slot): the table
    must not be used then (callers fall back to an exact join).
    """

    def __init__(self, keys: np.ndarray):
        n = len(keys)
        bits = max(4, int(2 * max(n, 1) - 1).bit_length())  # at least twice as many slots as keys
        self.shift = np.uint64(64 - bits)
        order = _key_order(keys)
        ordered = keys[order]
        self.distinct = not n or bool(ordered[0] != 0 and not np.any(ordered[1:] == ordered[:-1]))
        step = np.arange(n, dtype=np.int64)
        place = np.maximum.accumulate((ordered >> self.shift).astype(np.int64) - step) + step if n else step
        size = max(1 << bits, int(place[-1]) + 1 if n else 0) + 1  # a free slot past the last: probes stop
        self.slot_keys = np.zeros(size, dtype=np.uint64)
        self.slot_keys[place] = ordered
        small = np.int32 if n < 2**31 else np.int64
        self.slot_pos = np.zeros(size, dtype=small)
        self.slot_pos[place] = order

    def find(self, query: np.ndarray) -> np.ndarray:
        """Position of each query key in the indexed keys, or -1 when absent."""
        slot = (query >> self.shift).astype(np.int64)
        found = self.slot_keys[slot]
        hit = found == query
        out = np.full(len(query), -1, dtype=np.int64)
        at = np.flatnonzero(hit)
        out[at] = self.slot_pos[slot[at]]  # positions read for the hits only (most run rows miss)
        todo = np.flatnonzero((found != 0) & (found < query))  # a smaller key sits there: probe on
        del found, hit, at
        while len(todo):
            slot_t = slot[todo] + 1
            slot[todo] = slot_t
            found = self.slot_keys[slot_t]
            q = query[todo]
            hit = found == q
            out[todo[hit]] = self.slot_pos[slot_t[hit]]
            todo = todo[(found != 0) & (found < q)]
        return out
