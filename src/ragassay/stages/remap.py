"""Carry a question set over to a re-chunked corpus by finding each evidence quote again.

Exact match first (after normalising case, punctuation and spaces), then fuzzy partial matching
(rapidfuzz) for quotes whose wording drifted with the new chunking. A quote that straddles two new
chunks is found by its two halves. Questions whose evidence cannot be placed are reported, never
silently dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz import fuzz

from ..data.io import read_chunks, read_records, write_qrels
from ..data.origin import JUDGE_RELEVANT_FROM, JUDGE_SCALE, label_origin, today
from ..data.records import Chunk, Question
from ..data.result_models import RemapSummary
from .text_match import loose_text as normalize


@dataclass
class RemapResult:
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    placed: dict[str, list[str]] = field(default_factory=dict)  # question -> new chunk ids
    how: dict[str, str] = field(default_factory=dict)  # question -> exact | fuzzy | split
    unplaced: dict[str, list[str]] = field(default_factory=dict)  # question -> quotes not found
    no_evidence: list[str] = field(default_factory=list)
    unanswerable: list[str] = field(default_factory=list)  # no gold to carry: the new chunking answers them no more


def _find(quote: str, chunks: Sequence[Chunk], norm: dict[str, str], threshold: float) -> tuple[list[str], str]:
    nq = normalize(quote)
    if not nq:
        return [], "empty"
    exact = [c.id for c in chunks if nq in norm[c.id]]
    if exact:
        return exact, "exact"
    words = nq.split()
    if len(words) >= 6:  # split across a chunk boundary: each half ends up in a neighbour
        half = len(words) // 2
        left, right = " ".join(words[:half]), " ".join(words[half:])
        a = [c.id for c in chunks if norm[c.id].endswith(left) or left in norm[c.id]]
        b = [c.id for c in chunks if norm[c.id].startswith(right) or right in norm[c.id]]
        if a and b:
            return sorted(set(a[:1] + b[:1])), "split"
    best, best_id = 0.0, None
    for c in chunks:
        score = fuzz.partial_ratio(nq, norm[c.id])
        if score > best:
            best, best_id = score, c.id
    if best_id is not None and best >= threshold:
        return [best_id], "fuzzy"
    return [], "missing"


def remap(questions: Sequence[Question], new_chunks: Sequence[Chunk], threshold: float = 90.0) -> RemapResult:
    norm = {c.id: normalize(c.text) for c in new_chunks}
    out = RemapResult()
    for q in questions:
        if not q.answerable and not q.chunk_ids:
            out.unanswerable.append(q.id)
            continue
        if not q.evidence:
            out.no_evidence.append(q.id)
            continue
        ids: list[str] = []
        kinds = set()
        missing = []
        for quote in q.evidence:
            found, how = _find(quote, new_chunks, norm, threshold)
            if found:
                ids.extend(i for i in found if i not in ids)
                kinds.add(how)
            else:
                missing.append(quote)
        if missing:
            out.unplaced[q.id] = missing
        if ids:
            out.placed[q.id] = ids
            out.how[q.id] = "exact" if kinds == {"exact"} else "+".join(sorted(kinds))
            out.qrels[q.id] = {i: 3 for i in ids}
    return out


def remap_files(questions: str | Path, new_chunks: str | Path, output: str | Path, threshold: float = 90.0) -> dict:
    """``ragassay remap``: read a question set and a re-chunked corpus, write the qrels of the new
    chunk ids to ``output`` and return the ``remap`` result (how each question was placed, and
    which were not)."""
    read = [q for _, q in read_records(questions, Question, "question")]
    result = remap(read, read_chunks(new_chunks), threshold)
    # who chose the gold chunks: the set's sidecar (it names the endpoint), else its lines
    origin = label_origin(questions, ({"model": q.model, "prompt": q.prompt} for q in read))
    origin = origin.replace(
        command="remap",
        scale=origin.scale or JUDGE_SCALE,  # the gold's grade 3 on it
        relevant_from=origin.relevant_from or JUDGE_RELEVANT_FROM,
    )
    write_qrels(output, result.qrels, origin=origin.replace(date=today()))  # still the generator's gold
    return RemapSummary(
        questions=len(read),
        placed=len(result.placed),
        how=dict(Counter(result.how.values())),
        unplaced=result.unplaced,
        no_evidence=result.no_evidence,
        unanswerable=result.unanswerable,
        output=str(output),
    ).to_dict()
