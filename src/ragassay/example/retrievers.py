"""Two small retrievers over the example help centre, usable with `ragassay retrieve`.

    ragassay retrieve --retriever datasets/example/retrievers.py:tfidf \
        --queries datasets/example/queries.jsonl -k 10 -o tfidf.txt

`tfidf` needs only numpy; `bm25` needs bm25s (pip install -e '.[example]').
Each takes the query text and returns (chunk id, score) pairs, best first.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = set(
    "a an and are as at be by can do does for from have how i if in is it my of on or "
    "the to was what when where which who will with you your".split()
)


@lru_cache(maxsize=1)
def _chunks() -> tuple[list[str], list[str]]:
    rows = [
        json.loads(line) for line in (HERE / "chunks.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    return [r["id"] for r in rows], [f"{r.get('title', '')}. {r['text']}" for r in rows]


def _tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOPWORDS]


@lru_cache(maxsize=1)
def _tfidf_index():
    ids, texts = _chunks()
    vocab: dict[str, int] = {}
    docs = [_tokens(t) for t in texts]
    for d in docs:
        for t in d:
            vocab.setdefault(t, len(vocab))
    tf = np.zeros((len(docs), len(vocab)))
    for i, d in enumerate(docs):
        for t in d:
            tf[i, vocab[t]] += 1
    idf = np.log((1 + len(docs)) / (1 + (tf > 0).sum(axis=0))) + 1.0
    m = np.log1p(tf) * idf
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return ids, vocab, idf, m


def tfidf(query: str, k: int = 100) -> list[tuple[str, float]]:
    """Cosine similarity of log-scaled TF-IDF vectors."""
    ids, vocab, idf, m = _tfidf_index()
    q = np.zeros(len(vocab))
    for t in _tokens(query):
        if t in vocab:
            q[vocab[t]] += 1
    if not q.any():
        return []
    q = np.log1p(q) * idf
    q /= np.linalg.norm(q)
    scores = m @ q
    order = np.argsort(-scores, kind="stable")[:k]
    return [(ids[i], round(float(scores[i]), 6)) for i in order if scores[i] > 0]


@lru_cache(maxsize=1)
def _bm25_index():
    import bm25s

    ids, texts = _chunks()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    return ids, retriever


def bm25(query: str, k: int = 100) -> list[tuple[str, float]]:
    """BM25 (bm25s defaults: k1=1.5, b=0.75, Lucene idf) with English stopwords."""
    import bm25s

    ids, retriever = _bm25_index()
    k = min(k, len(ids))
    docs, scores = retriever.retrieve(
        bm25s.tokenize([query], stopwords="en", show_progress=False), k=k, show_progress=False
    )
    return [(ids[int(d)], round(float(s), 6)) for d, s in zip(docs[0], scores[0]) if s > 0]
