"""Checks on generated questions that need no model.

They cover a BM25 index over the chunks, word overlap, copying, self-containment, length, language,
near-duplicates and the difficulty mix. Every check returns a reason in words when a question fails,
so that every question dropped from a set is explained. The rule by which two questions are the same
question lives here, once (:func:`likeness`), and the test-set report uses it too.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .text_match import loose_text as normalize

# a run of letters/digits, or one character of a script written without spaces (Chinese, Japanese):
# there a character is the unit, as a word is elsewhere
_SPACELESS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_SPACELESS}]|[^\W{_SPACELESS}]+", re.UNICODE)
_SCRIPT_FAMILY = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "CJK": "CJK"}  # Japanese mixes kana and kanji
STOPWORDS = set(
    """a an and are as at be by can do does for from has have how i if in is it its my of on or
our the their there this to was what when where which who why will with you your""".split()
)

# "listed above 50 euros" is a price
_META = re.compile(
    r"\b(the|this|that|above|following|given|provided)\s+(passage|passages|text|document|"
    r"context|excerpt|article|paragraph|snippet|section)\b|\b(mentioned|described|listed|shown|"
    r"stated) above\b(?!\s+(?:\d|[$€£]|one|two|three|four|five|six|seven|eight|nine|ten|twenty|"
    r"thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|a |an ))|\bas above\b",
    re.I,
)


def tokens(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower())]


def length_in_words(text: str) -> float:
    """Length in words, in any script: a word is a token where words are spaced, and two characters
    where they are not (a 12-character Chinese question is about 6 words, not 1)."""
    toks = tokens(text)
    spaceless = sum(1 for t in toks if len(t) == 1 and re.match(rf"[{_SPACELESS}]", t))
    return (len(toks) - spaceless) + spaceless / 2


def content_words(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in STOPWORDS and len(t) > 1}


class BM25:
    """Okapi BM25 (k1 = 1.2, b = 0.75) over chunk texts, for ranking gold chunks against all."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str], k1: float = 1.2, b: float = 0.75):
        self.ids = list(ids)
        self.docs = [Counter(t for t in tokens(x) if t not in STOPWORDS) for x in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        q = [t for t in tokens(query) if t in self.idf]
        out = []
        for d, length in zip(self.docs, self.lengths):
            s = 0.0
            for t in q:
                f = d.get(t, 0)
                if f:
                    s += (
                        self.idf[t]
                        * f
                        * (self.k1 + 1)
                        / (f + self.k1 * (1 - self.b + self.b * length / (self.avg or 1)))
                    )
            out.append(s)
        return out

    def rank_of(self, query: str, chunk_id: str) -> int:
        """1-based rank of a chunk for the query (ties broken against the chunk: pessimistic)."""
        scores = self.scores(query)
        mine = scores[self.ids.index(chunk_id)]
        return sum(1 for s in scores if s >= mine) if mine > 0 else len(scores)

    def neighbours(self, chunk_id: str, k: int = 3) -> list[tuple[str, float]]:
        i = self.ids.index(chunk_id)
        query = " ".join(t for t, _ in self.docs[i].most_common(12))
        scores = self.scores(query)
        ranked = sorted(((s, cid) for cid, s in zip(self.ids, scores) if cid != chunk_id and s > 0), reverse=True)
        return [(cid, s) for s, cid in ranked[:k]]


def overlap(question: str, chunk: str) -> float:
    """Share of the question's content words that appear in the chunk."""
    q = content_words(question)
    return len(q & content_words(chunk)) / len(q) if q else 0.0


def longest_shared_ngram(question: str, chunk: str) -> int:
    q, c = tokens(question), tokens(chunk)
    grams = set()
    best = 0
    for n in range(1, len(q) + 1):
        grams = {tuple(c[i : i + n]) for i in range(len(c) - n + 1)}
        if any(tuple(q[i : i + n]) in grams for i in range(len(q) - n + 1)):
            best = n
        else:
            break
    return best


def script_of(text: str) -> str:
    """The dominant Unicode script of the letters (LATIN, CYRILLIC, CJK, ...)."""
    counts: Counter = Counter()
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            script = name.split(" ")[0] if name else "?"
            counts[_SCRIPT_FAMILY.get(script, script)] += 1
    return counts.most_common(1)[0][0] if counts else "?"


def unfit_chunk(text: str) -> str | None:
    """Why a chunk is not worth asking about (None when it is fine)."""
    words = tokens(text)
    if len(words) < 12:
        return "too short to ask about (fewer than 12 words)"
    letters = sum(ch.isalpha() for ch in text)
    if letters < 0.5 * len(text.replace(" ", "")):
        return "mostly numbers or symbols (a table or listing)"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 4 and sum(bool(re.search(r"(\.{3,}|\s\d+\s*$)", ln)) for ln in lines) >= 0.6 * len(lines):
        return "looks like a table of contents"
    if re.search(r"(all rights reserved|cookie policy|terms of use|privacy policy)", text, re.I) and len(words) < 60:
        return "boilerplate (legal or navigation text)"
    return None


def question_problems(question: str, answer: str, chunk_texts: Sequence[str]) -> list[str]:
    """Reasons to drop a question, from the text alone."""
    problems = []
    q = question.strip()
    if not q or not answer.strip():
        return ["empty question or answer"]
    n_words = length_in_words(q)
    if n_words < 3:
        problems.append(f"too short ({n_words:g} words)")
    if n_words > 60:
        problems.append(f"too long ({n_words:g} words)")
    if _META.search(q):
        problems.append("not self-contained: refers to the passage/context/document")
    joined_parts = conjunction(q)
    if joined_parts:
        problems.append(f"two questions joined into one ({joined_parts}): each part needs no other")
    joined = " ".join(chunk_texts)
    if script_of(q) != script_of(joined):
        problems.append(f"language differs from its chunk ({script_of(q)} vs {script_of(joined)})")
    nq = normalize(q)
    if nq and any(nq in normalize(t) for t in chunk_texts):
        problems.append("copies the chunk (the question is a substring of it)")
    else:
        longest = max((longest_shared_ngram(q, t) for t in chunk_texts), default=0)
        limit = 16 if script_of(q) == "CJK" else 8  # 16 characters is about 8 words
        if longest >= limit:
            problems.append(f"copies the chunk (shares a {longest}-token run with it)")
    return problems


_WH = r"(?:what|when|where|who|whom|whose|why|which|how|is|are|was|were|does|do|did|can|could|should|will)"
_JOINED = re.compile(rf"(?:[,;]\s*(?:and|but|also)\s+|\s+and\s+(?:also\s+)?)({_WH})\b\s+\w+", re.I)


def conjunction(question: str) -> str | None:
    """Why a question is two questions joined ("What does X do, and when was Y introduced?"), or None.
    A comparison ("What is the difference between X and Y?") is told apart by what follows "and": a
    question word or auxiliary starts a second question. A false alarm only costs another candidate."""
    q = question.strip()
    if q.count("?") >= 2 and re.search(r"\?\s*\S", q):
        return "two question marks"
    m = _JOINED.search(q)
    if m and len(tokens(q[: m.start()])) >= 3:
        return f"'... and {m.group(1).lower()} ...'"
    return None


def evidence_found(quote: str, chunk_text: str) -> bool:
    nq = normalize(quote)
    return bool(nq) and nq in normalize(chunk_text)


# -------------------------------------------------------------------- the same question twice

DUPLICATE_SIMILARITY = 0.8  # content-word Jaccard at which two questions are near-duplicates


@dataclass(frozen=True)
class QuestionWords:
    """What the same-question rule compares of a question: its text loosely compared (case, accents'
    compatibility forms, edge punctuation and a leading article aside) and its content words. Built
    once per question, so that comparing one question with many does not tokenize it again."""

    loose: str
    words: frozenset[str]

    @classmethod
    def of(cls, text: str) -> QuestionWords:
        return cls(normalize(text), frozenset(content_words(text)))


def likeness(a: QuestionWords, b: QuestionWords, threshold: float = DUPLICATE_SIMILARITY) -> str | None:
    """The one rule by which two questions are the same question: ``"duplicate"`` when they are the
    same words loosely compared, ``"near-duplicate"`` when they share at least ``threshold`` of their
    content words (Jaccard), else None. generate drops a candidate by it, and the test-set report
    counts the pairs it finds, so both say the same thing of the same two questions."""
    if a.loose == b.loose:
        return "duplicate"
    if a.words and b.words and len(a.words & b.words) / len(a.words | b.words) >= threshold:
        return "near-duplicate"
    return None


def same_question(a: str, b: str, threshold: float = DUPLICATE_SIMILARITY) -> bool:
    """Whether two question texts are the same question by :func:`likeness`."""
    return likeness(QuestionWords.of(a), QuestionWords.of(b), threshold) is not None


def near_duplicate(question: str, earlier: Sequence[str], threshold: float = DUPLICATE_SIMILARITY) -> str | None:
    """Why ``question`` repeats one of the ``earlier`` questions (the first it repeats), or None."""
    mine = QuestionWords.of(question)
    for other in earlier:
        kind = likeness(mine, QuestionWords.of(other), threshold)
        if kind is not None:
            return f"{kind} of an earlier question: {other!r}"
    return None


def same_question_pairs(texts: Sequence[str], threshold: float = DUPLICATE_SIMILARITY) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, of ``texts`` that :func:`likeness` calls the same question,
    ordered by ``i`` then ``j``. Only questions that share a content word or a loose text can be the
    same, so each question is compared only with those, found through an inverted index: a set of a
    thousand questions is then not a million comparisons."""
    asked = [QuestionWords.of(t) for t in texts]
    by_word: dict[str, list[int]] = {}
    by_loose: dict[str, list[int]] = {}
    for i, q in enumerate(asked):
        for w in q.words:
            by_word.setdefault(w, []).append(i)
        by_loose.setdefault(q.loose, []).append(i)
    pairs = []
    for i, q in enumerate(asked):
        near = {j for w in q.words for j in by_word[w] if j > i}
        near.update(j for j in by_loose[q.loose] if j > i)
        pairs += [(i, j) for j in sorted(near) if likeness(q, asked[j], threshold) is not None]
    return pairs


def mix_counts(total: int, mix: dict[str, float]) -> dict[str, int]:
    """Split ``total`` by the mix with the largest-remainder method: counts sum to ``total`` and each
    is within one of ``total * share``."""
    weight = sum(mix.values())
    if weight <= 0:
        raise ValueError("the mix must have a positive share")
    exact = {k: total * v / weight for k, v in mix.items()}
    counts = {k: int(math.floor(x)) for k, x in exact.items()}
    left = total - sum(counts.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - counts[k]), k))[:left]:
        counts[k] += 1
    return counts


def parse_mix(text: str, names: Sequence[str] = ("easy", "medium", "hard"), flag: str = "--mix") -> dict[str, float]:
    """``name=share,...``: known names, each once, each share from 0 to 1, the shares adding up to 1
    (a share of 2, or shares adding up to 0.9, would make a set nobody asked for)."""
    out: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        name = name.strip().lower()
        if name not in names:
            raise ValueError(f"unknown name {name!r} in {flag} (use {', '.join(names)})")
        if name in out:
            raise ValueError(f"{name} is given twice in {flag}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"{flag} needs numbers, e.g. {names[0]}=0.5,{names[-1]}=0.5 (got {part!r})") from None
        if not math.isfinite(out[name]) or not 0 <= out[name] <= 1:
            raise ValueError(f"{flag} shares are from 0 to 1 (got {part.strip()!r})")
    if not out:
        raise ValueError(f"{flag} needs at least one share, e.g. {names[0]}=1")
    total = sum(out.values())
    if abs(total - 1) > 1e-6:
        raise ValueError(f"{flag} shares must add up to 1; these add up to {total:g}")
    return out
