"""The public sets of people's grades by name: TREC Deep Learning 2019 and 2020 (passage task, NIST
assessors' 0-3 grades, relevant from 2), read by ir_datasets, an optional extra
(``pip install 'ragassay[public]'``), which fetches them once into its own folder where the user's
machine can reach them. None of MS MARCO's text ships with ragassay (its terms allow research use
only); where ir_datasets is missing or cannot fetch, the error says how to give the files instead.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .origin import Labeller, Origin
from .people_labels import GradedPairs
from .records import Chunk

PUBLIC = {
    # name: (ir_datasets id, source, citation)
    "trec-dl-2019": (
        "msmarco-passage/trec-dl-2019/judged",
        "TREC Deep Learning 2019 passage task: NIST assessors' 0-3 grades of MS MARCO passages "
        "(relevant from 2), via ir_datasets",
        "Craswell et al. 2020, Overview of the TREC 2019 Deep Learning Track, arXiv 2003.07820",
    ),
    "trec-dl-2020": (
        "msmarco-passage/trec-dl-2020/judged",
        "TREC Deep Learning 2020 passage task: NIST assessors' 0-3 grades of MS MARCO passages "
        "(relevant from 2), via ir_datasets",
        "Craswell et al. 2021, Overview of the TREC 2020 Deep Learning Track, arXiv 2102.07662",
    ),
}
TREC_DL_SCALE = (0, 3)
TREC_DL_RELEVANT_FROM = 2
_FILES = {
    "trec-dl-2019": "2019qrels-pass.txt, msmarco-test2019-queries.tsv",
    "trec-dl-2020": "2020qrels-pass.txt, msmarco-test2020-queries.tsv",
}


def public_pairs(name: str) -> GradedPairs:
    """A public set of people's grades by name (:data:`PUBLIC`), its queries, qrels and the texts of
    only its judged passages, read by ir_datasets (``pip install 'ragassay[public]'``), which fetches
    them once into its own folder. Where it is missing or cannot fetch, the error says how to give
    the files instead."""
    if name not in PUBLIC:
        raise InputError(f"unknown people-labelled set {name!r}: the known ones are {', '.join(sorted(PUBLIC))}")
    dataset_id, source, citation = PUBLIC[name]
    instead = (
        f"or give the files: read_graded_pairs(qrels, queries, chunks, relevant_from=2) with TREC's "
        f"{_FILES[name]} and MS MARCO's collection.tsv"
    )
    try:
        import ir_datasets
    except ImportError:
        raise InputError(
            f"the public set {name!r} is read with ir_datasets, which is not installed: "
            f"pip install 'ragassay[public]'; {instead}"
        ) from None

    dataset = _fetched("dataset", lambda: ir_datasets.load(dataset_id), dataset_id, instead)
    queries = _fetched(
        "queries", lambda: {str(q.query_id): q.text for q in dataset.queries_iter()}, dataset_id, instead
    )
    rows = _fetched(
        "qrels",
        lambda: {(str(r.query_id), str(r.doc_id)): int(r.relevance) for r in dataset.qrels_iter()},
        dataset_id,
        instead,
    )
    if not rows:
        raise InputError(f"ir_datasets gave no qrels for {dataset_id}; {instead}")
    wanted = sorted({cid for _, cid in rows})
    docs = _fetched("passages", lambda: dataset.docs_store().get_many(wanted), dataset_id, instead)
    grades, dropped = _pairs_with_text(rows, queries, docs)
    notes = _checked_notes(grades, dropped, len(rows), dataset_id)
    used_q = {q for q, _ in grades}
    return GradedPairs(
        queries={q: t for q, t in queries.items() if q in used_q},
        chunks={cid: Chunk(id=cid, text=docs[cid].text) for _, cid in grades},
        grades=grades,
        second=None,
        scale=TREC_DL_SCALE,
        relevant_from=TREC_DL_RELEVANT_FROM,
        source=source,
        citation=citation,
        dropped=dropped,
        notes=notes,
        origin=Origin(
            labellers=(Labeller(by="person", name="NIST assessors"),),
            scale=TREC_DL_SCALE,
            relevant_from=TREC_DL_RELEVANT_FROM,
        ),
    )


def _fetched(what: str, get: Any, dataset_id: str, instead: str) -> Any:
    """What ``get`` fetches with ir_datasets. It raises what its downloads raise (OSError, its own
    errors, HTTP errors): any of them here means the data could not be had on this machine, said
    with the way to give the files."""
    try:
        return get()
    except Exception as e:  # noqa: BLE001 -- a third party's network boundary
        raise InputError(
            f"could not fetch the {what} of {dataset_id} with ir_datasets "
            f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no message'}); "
            f"{instead}"
        ) from None


def _pairs_with_text(
    rows: dict[tuple[str, str], int], queries: dict[str, str], docs: Any
) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """The graded pairs whose query and passage both have text, and how many were dropped, by why."""
    grades: dict[tuple[str, str], int] = {}
    dropped: dict[str, int] = {}
    for (qid, cid), g in rows.items():
        doc = docs.get(cid)
        text = getattr(doc, "text", None)
        why = (
            "query text missing"
            if not queries.get(qid, "").strip()
            else "passage missing"
            if doc is None
            else "passage text empty"
            if not (text or "").strip()
            else None
        )
        if why:
            dropped[why] = dropped.get(why, 0) + 1
        else:
            grades[(qid, cid)] = g
    return grades, dropped


def _checked_notes(
    grades: dict[tuple[str, str], int], dropped: dict[str, int], total: int, dataset_id: str
) -> tuple[str, ...]:
    """The note on the pairs left out for want of text, once every grade is known to be on TREC DL's
    0-3 scale."""
    outside = sorted({g for g in grades.values() if not TREC_DL_SCALE[0] <= g <= TREC_DL_SCALE[1]})
    if outside:
        raise InputError(f"ir_datasets gave grade {outside[0]} for {dataset_id}, outside TREC DL's 0-3")
    return (
        (
            f"{sum(dropped.values())} of {total} people-labelled pairs have no text and are left out ("
            + "; ".join(f"{k}: {v}" for k, v in dropped.items())
            + ")",
        )
        if dropped
        else ()
    )
