"""The measures of a test set that need no model: how hard it is for a lexical retriever against
the difficulty it was asked to have, near-duplicate questions, how much of the corpus it touches,
its mix, the smallest nDCG difference it can detect, and how far it is from real queries.

A synthetic set can look fine and still mislead: a "hard" set whose gold chunks a plain BM25 ranks
first is not hard for retrieval, and a set of 50 questions cannot tell two retrievers 0.02 nDCG apart.
Every figure here says what it rests on (which relevant grade, how many questions), so that a user
can decide whether the set is good enough before trusting the numbers measured with it.
"""

from __future__ import annotations

import math
import statistics
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.beir_folders import dataset_member
from ..data.lines import iter_jsonl, read_bytes_checked
from ..data.query_files import queries_in
from ..metrics.power import minimum_detectable_effect
from ..stages.generate_checks import (
    BM25,
    DUPLICATE_SIMILARITY,
    STOPWORDS,
    content_words,
    length_in_words,
    same_question_pairs,
    tokens,
)

TOP = 10  # the depth at which a gold chunk counts as found by the lexical ranker
ASSUMED_SDS = (0.1, 0.2, 0.3)  # sd of per-query nDCG differences, when no two runs say it
POWER, ALPHA = 0.8, 0.05


@dataclass
class SetQuestion:
    """One question of the set with what its record says of it (nothing, for a hand-made TSV)."""

    id: str
    text: str
    difficulty: str | None = None
    kind: str | None = None
    style: str | None = None
    answerable: bool | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    chunk_ids: list[str] = field(default_factory=list)


def read_set(path: str | Path) -> list[SetQuestion]:
    """The questions of a test set: ids and texts by the queries reader's rules (so every format it
    takes works), and, from JSON Lines, the fields generate writes (difficulty, kind, style,
    answerable, checks, chunk_ids)."""
    member = dataset_member(path, "queries")
    data = read_bytes_checked(member)  # read once: the queries and their lines' other fields come from it
    extra: dict[str, dict[str, Any]] = {}
    texts = queries_in(data, member, extra)
    if not (Path(path).is_file() and data.lstrip()[:1] == b"{"):
        extra = {}  # a folder's queries, stdin or a TSV file carry none of generate's fields
    elif not extra:  # a peer's JSON Lines (RAGAS, DeepEval, ...): its lines by the ids they name
        extra = _lines_by_id(data, path)
    out = []
    for qid, text in texts.items():
        obj = extra.get(qid, {})
        answerable, checks = obj.get("answerable"), obj.get("checks")
        if answerable is None and str(obj.get("record", "")).startswith("question@"):
            answerable = True  # generate leaves it off the line of a question the corpus answers
        out.append(
            SetQuestion(
                qid,
                text,
                _str_or_none(obj.get("difficulty")),
                _str_or_none(obj.get("kind")),
                _str_or_none(obj.get("style")),
                answerable if isinstance(answerable, bool) else None,
                checks if isinstance(checks, dict) else {},
                [str(c) for c in obj.get("chunk_ids") or [] if isinstance(c, (str, int))],
            )
        )
    return out


def _lines_by_id(data: bytes, path: str | Path) -> dict[str, dict[str, Any]]:
    """Each JSON line of ``data`` by the id it names, for the fields generate writes beside a question."""
    lines: dict[str, dict[str, Any]] = {}
    for _, obj in iter_jsonl(data, path):
        qid = next((obj[k] for k in ("id", "query_id", "_id", "qid") if k in obj), None)
        if qid is not None:
            lines[str(qid)] = obj
    return lines


def _str_or_none(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int)) and str(value).strip() else None


class LexicalRanker:
    """BM25 (k1 1.2, b 0.75, the generate checks' tokens) over every chunk, scored through an inverted
    index so that a thousand questions over ten thousand chunks take seconds, not minutes."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]):
        bm25 = BM25(ids, texts)
        self.ids = list(ids)
        self.index = {cid: i for i, cid in enumerate(self.ids)}
        self.idf = bm25.idf
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, (doc, length) in enumerate(zip(bm25.docs, bm25.lengths)):
            norm = bm25.k1 * (1 - bm25.b + bm25.b * length / (bm25.avg or 1))
            for term, tf in doc.items():
                rows, weights = postings.setdefault(term, ([], []))
                rows.append(i)
                weights.append(tf * (bm25.k1 + 1) / (tf + norm))
        self.postings = {t: (np.array(r, dtype=np.int64), np.array(w)) for t, (r, w) in postings.items()}

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.ids))
        for term in tokens(query):
            if term in self.postings and term not in STOPWORDS:
                rows, weights = self.postings[term]
                out[rows] += self.idf[term] * weights
        return out

    def best_rank(self, query: str, gold: Sequence[str]) -> int | None:
        """The 1-based rank of the best-placed gold chunk; ties are broken against it (a chunk tied
        with others ranks last among them) and a chunk sharing no word ranks last of all. None when no
        gold chunk is in the corpus."""
        scores = self.scores(query)
        ranks = []
        for cid in gold:
            i = self.index.get(cid)
            if i is None:
                continue
            mine = scores[i]
            ranks.append(int((scores >= mine).sum()) if mine > 0 else len(self.ids))
        return min(ranks) if ranks else None


def lexical_profile(ranks: Sequence[int]) -> dict[str, Any]:
    """Where the lexical ranker puts the gold: the share first, the share in the top 10, the median."""
    if not ranks:
        return {"questions": 0, "first": None, f"top{TOP}": None, "median_rank": None}
    return {
        "questions": len(ranks),
        "first": sum(r == 1 for r in ranks) / len(ranks),
        f"top{TOP}": sum(r <= TOP for r in ranks) / len(ranks),
        "median_rank": statistics.median(ranks),
    }


def near_duplicates(questions: Sequence[SetQuestion], limit: int = 5) -> dict[str, Any]:
    """Pairs of questions that are the same words (loosely compared) or share at least 80% of their
    content words; the first ``limit`` pairs as examples."""
    pairs = [(questions[i].id, questions[j].id) for i, j in same_question_pairs([q.text for q in questions])]
    return {
        "pairs": len(pairs),
        "questions_in_pairs": len({q for p in pairs for q in p}),
        "similarity": DUPLICATE_SIMILARITY,
        "examples": [list(p) for p in pairs[:limit]],
    }


def coverage(gold: Mapping[str, set[str]], chunks: Sequence[Any]) -> dict[str, Any]:
    """How much of the corpus the set cites: chunks, and documents when the chunks name theirs."""
    cited = set().union(*gold.values()) if gold else set()
    ids = {c.id for c in chunks}
    doc_of = {c.id: getattr(c, "doc_id", None) for c in chunks}
    docs = {d for d in doc_of.values() if d}
    out: dict[str, Any] = {
        "chunks": len(ids),
        "chunks_cited": len(cited & ids),
        "cited_not_in_corpus": sorted(cited - ids)[:5],
        "cited_not_in_corpus_count": len(cited - ids),
    }
    if docs:
        out.update(documents=len(docs), documents_cited=len({doc_of[c] for c in cited & ids if doc_of[c]}))
    return out


def mix(questions: Sequence[SetQuestion], asked: Mapping[str, float] | None) -> dict[str, Any]:
    """The counts of each difficulty, kind, style and answerability, and the difficulty mix asked."""

    def count(values: Sequence[str | None]) -> dict[str, int]:
        return dict(sorted(Counter(v or "unrecorded" for v in values).items()))

    answerable = ["unrecorded" if q.answerable is None else ("yes" if q.answerable else "no") for q in questions]
    out: dict[str, Any] = {
        "difficulty": count([q.difficulty for q in questions]),
        "kind": count([q.kind for q in questions]),
        "style": count([q.style for q in questions]),
        "answerable": count(answerable),
    }
    if asked:
        n = len(questions)
        out["asked"] = {
            k: {"share": v, "expected": round(n * v, 1), "got": out["difficulty"].get(k, 0)} for k, v in asked.items()
        }
    return out


def power(n: int, sd: float | None, sd_source: str) -> dict[str, Any]:
    """The smallest nDCG difference ``n`` questions detect with 80% power at alpha 0.05 (paired
    t-test): from the measured sd of per-query differences when two runs give it, else for three
    assumed sds, said as assumptions."""
    if n < 2:
        return {"questions": n, "note": "a paired comparison needs at least 2 questions with a relevant chunk"}
    sds = (sd,) if sd is not None else ASSUMED_SDS
    return {
        "questions": n,
        "power": POWER,
        "alpha": ALPHA,
        "sd_source": sd_source,
        "smallest_difference": {f"{s:.4g}": minimum_detectable_effect(n, s, POWER, ALPHA) for s in sds},
    }


def question_profile(texts: Sequence[str]) -> dict[str, Any]:
    """Length in words (any script), the first words, and the vocabulary of a list of questions."""
    lengths = [length_in_words(t) for t in texts]
    first = Counter(_first_word(t) for t in texts)
    first.pop(None, None)
    vocab = set().union(*(content_words(t) for t in texts)) if texts else set()
    return {
        "questions": len(texts),
        "median_words": statistics.median(lengths) if lengths else None,
        "words_p10_p90": _deciles(lengths),
        "first_words": dict(first.most_common(8)),
        "first_word_shares": {w: c / len(texts) for w, c in first.items()} if texts else {},
        "vocabulary": vocab,
    }


def _first_word(text: str) -> str | None:
    """The first word of a question in a script written with spaces (where the question word usually
    leads); None for scripts written without spaces, where the first character says nothing."""
    toks = tokens(text)
    if not toks or (len(toks[0]) == 1 and unicodedata.name(toks[0], "").startswith(("CJK", "HIRAGANA", "KATAKANA"))):
        return None
    return toks[0]


def _deciles(values: Sequence[float]) -> list[float] | None:
    if len(values) < 2:
        return None
    q = statistics.quantiles(values, n=10, method="inclusive")
    return [q[0], q[-1]]


def distance_to_log(mine: dict[str, Any], log: dict[str, Any]) -> dict[str, Any]:
    """How far the set's questions are from real ones: lengths, the total variation distance of their
    first words, and the share of the log's vocabulary the set uses."""
    a, b = mine["first_word_shares"], log["first_word_shares"]
    tvd = 0.5 * sum(abs(a.get(w, 0.0) - b.get(w, 0.0)) for w in set(a) | set(b)) if a and b else None
    shared = mine["vocabulary"] & log["vocabulary"]
    return {
        "first_word_distance": tvd,
        "log_vocabulary_in_set": len(shared) / len(log["vocabulary"]) if log["vocabulary"] else None,
        "vocabulary_jaccard": (
            len(shared) / len(mine["vocabulary"] | log["vocabulary"])
            if mine["vocabulary"] | log["vocabulary"]
            else None
        ),
    }


def public(profile: dict[str, Any]) -> dict[str, Any]:
    """A question profile without its raw vocabulary (its size instead), for the result."""
    return {k: (len(v) if k == "vocabulary" else v) for k, v in profile.items() if k != "first_word_shares"}


def finite(x: float | None) -> float | None:
    return x if x is None or math.isfinite(x) else None
