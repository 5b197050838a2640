"""What a person labels: the (query, chunk) pairs or answers with what the page shows of each, the
scales they are labelled on, and the sample drawn from them, spread over the model's grades and over
queries, the same for the same seed."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from ..data.records import Check, Judgment
from ..errors import InputError

PAIR_SCALE = [  # the judge's own scale, as its prompt and the README state it
    (3, "3", "about the query and contains the answer, stated clearly"),
    (2, "2", "answers part of it, or the answer is there but unclear or buried"),
    (1, "1", "on the topic, but does not answer it"),
    (0, "0", "nothing to do with the query"),
]
ANSWER_SCALE = [
    ("correct", "c", "the reference's key facts, nothing contradicted"),
    ("partial", "p", "some of the key facts, nothing contradicted"),
    ("hallucinated", "h", "something false or unsupported, hedged or not"),
    ("abstained", "a", "declines, and asserts nothing wrong"),
]


Task = Literal["pairs", "answers"]


class ItemIds(TypedDict, total=False):
    """The ids a label event carries: ``query_id`` and ``chunk_id`` for a pair, ``id`` for an answer."""

    query_id: str
    chunk_id: str
    id: str


@dataclass
class LabelItem:
    """One thing to label: a (query, chunk) pair or an answer, with what the page shows of it."""

    key: str
    show: dict[str, Any]  # the texts on screen (question, need, title, text / reference, response, contexts:
    # each {"id", "title", "text"}, the id and title None for a context given as text)
    model: Any = None  # the model's grade or label, when known
    stratum: str = "all"  # what the sample was stratified by
    group: str = ""  # the query (pairs) or question (answers): samples spread over these


def pair_key(query_id: str, chunk_id: str) -> str:
    """A pair's key in the events and on the page: the query id and the chunk id, tab-separated."""
    return f"{query_id}\t{chunk_id}"


def pair_items(
    queries: Sequence[Any],
    chunks: Mapping[str, Any],
    *,
    run: Any = None,
    judgments: Sequence[Judgment | Mapping[str, Any]] | None = None,
    depth: int = 10,
) -> list[LabelItem]:
    """The pairs a person may grade: every judged pair with its grade (``judgments``: judge's
    records, as models or as their JSON), or the top ``depth`` of each query in ``run`` (no model
    grade; stratified by rank)."""
    by_id = {q.id: q for q in queries}
    out: list[LabelItem] = []
    missing: list[str] = []

    def item(qid: str, cid: str, model: Any, stratum: str) -> None:
        q, c = by_id.get(qid), chunks.get(cid)
        if q is None or c is None:
            missing.append(qid if q is None else cid)
            return
        need = "\n".join(t for t in (q.description, q.narrative) if t)
        out.append(
            LabelItem(
                pair_key(qid, cid),
                {
                    "query_id": qid,
                    "chunk_id": cid,
                    "question": q.text,
                    "need": need,
                    "answer": q.answer or "",
                    "title": c.title or "",
                    "text": c.text,
                },
                model,
                stratum,
                qid,
            )
        )

    if judgments is not None:
        seen = set()
        for r in (Judgment.model_validate(j) for j in judgments):
            if r.status != "ok" or r.grade is None:
                continue
            k = (r.query_id, r.chunk_id)
            if k not in seen:
                seen.add(k)
                item(k[0], k[1], r.grade, f"grade {r.grade}")
    elif run is not None:
        for qid, ranking in run.ranked().items():
            for rank, (cid, _) in enumerate(ranking[:depth], start=1):
                item(qid, cid, None, "rank 1-3" if rank <= 3 else f"rank 4-{depth}")
    if not out:
        raise InputError("nothing to label: no pair has both its query and its chunk in the given files")
    return out


def answer_items(
    answers: Sequence[Any],
    checks: Sequence[Check | Mapping[str, Any]] | None = None,
    chunks: Mapping[str, Any] | None = None,
) -> list[LabelItem]:
    """The answers a person may label, with the model's label from ``check``'s records (as models or
    as their JSON) when given, and the context each answer was made from: its ``contexts``, or its
    ``context_ids`` looked up in ``chunks`` (as check reads them)."""
    model = {r.id: r.label for r in (Check.model_validate(c) for c in checks or []) if r.status == "ok"}
    out = []
    for a in answers:
        refs = [a.reference] if isinstance(a.reference, str) else list(a.reference)
        label = model.get(a.id)
        out.append(
            LabelItem(
                a.id,
                {
                    "id": a.id,
                    "question": a.question,
                    "reference": refs,
                    "response": a.response,
                    "contexts": answer_contexts(a, chunks),
                },
                label,
                f"label {label}" if label else "all",
                a.question,
            )
        )
    return out


def answer_contexts(answer: Any, chunks: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """What the answer's generator was given, as the page shows it: ``{"id", "title", "text"}`` for
    each context, in order. Texts given inline come first, as check grades them (their ids, when
    ``context_ids`` names as many, beside them); otherwise each of ``context_ids`` with its chunk's
    title and text (an id ``chunks`` lacks is shown with no text: check refuses it, the person sees it)."""
    ids = list(answer.context_ids or [])
    if answer.contexts is not None:
        named = ids if len(ids) == len(answer.contexts) else [None] * len(answer.contexts)
        return [{"id": cid, "title": None, "text": text} for cid, text in zip(named, answer.contexts)]
    out = []
    for cid in ids:
        chunk = (chunks or {}).get(cid)
        out.append(
            {
                "id": cid,
                "title": getattr(chunk, "title", None) or None,
                "text": chunk.text if chunk is not None else None,
            }
        )
    return out


def draw_sample(items: Sequence[LabelItem], n: int | None, seed: int = 0) -> tuple[list[LabelItem], dict]:
    """``n`` items (all of them when None), the same ones for the same seed: spread evenly over the
    strata (the model's grades, so that rare grades are labelled often enough for agreement and for
    corrections by prediction-powered inference), and within a stratum over queries in turn. The
    strata's sizes and draws are returned, so that estimates can be reweighted."""
    rng = random.Random(seed)
    strata: dict[str, list[LabelItem]] = defaultdict(list)
    for it in items:
        strata[it.stratum].append(it)
    if n is None or n >= len(items):
        chosen = list(items)
    else:
        quota = _equal_quota({s: len(v) for s, v in strata.items()}, n)
        chosen = []
        for s in sorted(strata):
            chosen += _spread(strata[s], quota[s], rng)
    order = list(chosen)
    rng.shuffle(order)  # grade order would tell the person the model's grade
    taken = Counter(it.stratum for it in order)
    info = {
        "seed": seed,
        "n": len(order),
        "population": len(items),
        "strata": {s: {"population": len(v), "sampled": taken[s]} for s, v in sorted(strata.items())},
    }
    return order, info


def _equal_quota(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """n spread as evenly as the strata allow: a small stratum gives all it has, the rest share."""
    quota = {s: 0 for s in sizes}
    left, open_ = n, sorted(sizes)
    while left > 0 and open_:
        share = max(1, left // len(open_))
        for s in list(open_):
            take = min(share, sizes[s] - quota[s], left)
            quota[s] += take
            left -= take
            if quota[s] == sizes[s]:
                open_.remove(s)
            if left == 0:
                break
    return quota


def _spread(items: Sequence[LabelItem], k: int, rng: random.Random) -> list[LabelItem]:
    """k items taken from the groups in turn (each group's items shuffled), so one query cannot fill it."""
    groups: dict[str, list[LabelItem]] = defaultdict(list)
    for it in items:
        groups[it.group].append(it)
    for members in groups.values():
        rng.shuffle(members)
    names = sorted(groups)
    rng.shuffle(names)
    out: list[LabelItem] = []
    while len(out) < k:
        for g in names:
            if groups[g] and len(out) < k:
                out.append(groups[g].pop())
    return out
