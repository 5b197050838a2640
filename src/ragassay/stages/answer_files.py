"""Reading what ``check`` grades and what it is compared with: answers in ragassay's fields or a
peer's (RAGAS, DeepEval, LlamaIndex), people's labels of answers and who made them, and the recall of
the gold chunks that the check's diagnosis sets beside each answer. These are kept apart from the
stage itself because the report, the label page and the pipeline read the same files without
running a check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..data import peer_files
from ..data.io import read_records
from ..data.line_problems import LineProblems
from ..data.lines import iter_jsonl
from ..data.origin import label_origin
from ..data.records import AnswerItem, Chunk
from ..errors import InputError
from ..metrics.evaluate import evaluate
from ..metrics.labels import LABELS


def answer_fields(obj: dict, no: int) -> dict:
    """An answer in ragassay's fields, or RAGAS's, DeepEval's or LlamaIndex's: theirs are renamed to
    ours, and a row without an id gets one by the rule every reader of peers' files shares
    (:mod:`ragassay.data.peer_files`: its metadata's id, else ``line-N``)."""
    return peer_files.answer_fields(obj, no)


def read_answers(
    path: str | Path,
    chunks: Mapping[str, Chunk] | None = None,
    rows: Sequence[tuple[int, dict]] | None = None,
) -> list[AnswerItem]:
    """Answers to check (ragassay, RAGAS, DeepEval or LlamaIndex fields; JSON Lines, a JSON array or CSV,
    as :func:`ragassay.data.peer_files.sample_rows` reads them); ``context_ids`` are resolved to texts
    with ``chunks``. A sample that gives no reference (RAGAS's may have none) is read with an empty
    list of references: its record is an error ("nothing to grade against"), never a label. ``rows``:
    the file's rows as :func:`ragassay.data.peer_files.answer_rows` gave them to a caller that read
    them already (each row passed its checks), so that the file is not read again."""
    problems = LineProblems(path)  # every bad answer, said at once in file order (up to a cap)
    given = peer_files.answer_rows(path, problems) if rows is None else rows
    rows, lacking, line_of = [], set(), {}
    for no, obj in given:
        if obj.get("reference") is None:  # validated with a stand-in, then given no reference at all
            obj = {**obj, "reference": "-"}
            lacking.add(id(obj))
        rows.append((no, obj))
        line_of[id(obj)] = no

    def finished(item: AnswerItem, obj: dict) -> AnswerItem:
        """The item given no reference when it had none; its context ids looked up (a bad one is its line's error)."""
        if item.context_ids and item.contexts is None:
            if chunks is None:
                raise InputError("context_ids need --chunks to look the texts up", path, line_of[id(obj)])
            unknown = [c for c in item.context_ids if c not in chunks]
            if unknown:
                raise InputError(f"context id {unknown[0]!r} is not in the chunks file", path, line_of[id(obj)])
        return item.model_copy(update={"reference": []}) if id(obj) in lacking else item

    return [item for _, item in read_records(path, AnswerItem, "answer", rows=rows, after=finished, problems=problems)]


def retrieval_recall(qrels, run, k: int) -> tuple[dict[str, float], str | None]:
    """Per question, recall@k of the gold chunks (the retrieval half of the diagnosis), and why that
    recall cannot tell good retrieval from bad, when it cannot: labels judged from this run alone
    hold no relevant chunk it missed, so its recall is 1 wherever it found one (None otherwise)."""
    ev = evaluate(qrels, run, [f"recall@{k}"], missing="zero")
    caveat = None
    if ev.standing is not None and ev.standing.alone:
        caveat = (
            f"the qrels were judged from this run's own top {ev.standing.depth} alone, so its recall counts "
            "only what it found (1.0 by construction): judge a pool of other retrievers' runs too before "
            "blaming generation or retrieval"
        )
    return {q: v[f"recall@{k}"] for q, v in ev.per_query.items()}, caveat


def read_labels_origin(path: str | Path):
    """Who made a file of answer labels: its sidecar, else each line's ``assessor`` (or ``model``), else unknown."""
    return label_origin(path, (obj for _, obj in iter_jsonl(path)))


def read_human_labels(path: str | Path) -> dict[str, str]:
    """People's labels: JSONL lines with ``id`` and ``label``."""
    out = {}
    for no, obj in iter_jsonl(path):
        if "id" not in obj or obj.get("label") not in LABELS:
            raise InputError(f"each line needs an id and a label, one of {', '.join(LABELS)}", path, no)
        out[str(obj["id"])] = obj["label"]
    return out
