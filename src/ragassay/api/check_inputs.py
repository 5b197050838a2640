"""What ``ragassay.check`` reads beside the answers, each met to them by id and counted: the run and
the qrels of the diagnosis (recall of the gold chunks), people's labels, and the query each answer
answers when the answers carry other ids than the queries."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.coerce import coerce_qrels, coerce_run
from ..data.joins import Join
from ..data.peer_files.sample_files import answer_rows
from ..data.query_files import read_queries
from ..data.records import AnswerItem, Chunk
from ..data.text_match import answers_to_queries
from ..errors import InputError, UsageError
from ..stages.answer_files import answer_fields, read_answers, read_human_labels, retrieval_recall
from .inputs import source_of

# where ragassay.check says how its inputs met the answers: a function given each warning, or None to say
# nothing (the caller said them itself, as ``ragassay run`` does once for every step, naming its files)
Say = Callable[[str], None] | None


def on_stderr(warning: str) -> None:
    """A warning said as a command says it: one line on stderr."""
    print(f"warning: {warning}", file=sys.stderr)


def say_join(join: Join, say: Say, sides: tuple[str, ...]) -> Join:
    """``join``'s warning (some ids of ``sides`` found no partner) handed to ``say``; returns the join."""
    warning = join.warning(sides)
    if warning and say is not None:
        say(warning)
    return join


def answer_items(
    answers: str | Path | Sequence[AnswerItem | dict], chunks: Mapping[str, Chunk] | None, by: Sequence[str] | None
) -> tuple[list[AnswerItem], dict[str, dict] | None]:
    """The answers to check and, for a breakdown (``by``), each answer's fields by id. A field no
    answer has is a usage error, found before anything is spent: a breakdown by nothing means nothing."""
    if isinstance(answers, (str, Path)):
        items = read_answers(answers, chunks)
        raw = answer_rows(answers) if by else []  # (JSONL, a JSON array or CSV, as read_answers reads it)
    else:
        items, raw = _given_answers(list(answers), chunks)
    if not by:
        return items, None
    return items, _breakdown_fields(raw, by)


def _given_answers(
    given: list[AnswerItem | dict], chunks: Mapping[str, Chunk] | None
) -> tuple[list[AnswerItem], list[tuple[int, dict]]]:
    """Answers given as objects, validated, with their raw fields; a context named by id needs the chunks."""
    raw = [(no, a if isinstance(a, dict) else a.model_dump()) for no, a in enumerate(given, start=1)]
    items = [
        a if isinstance(a, AnswerItem) else AnswerItem.model_validate(answer_fields(a, no))
        for no, a in enumerate(given, start=1)
    ]
    missing = [c for a in items for c in (a.context_ids or []) if a.contexts is None and c not in (chunks or {})]
    if missing:
        raise InputError(f"context id {missing[0]!r} needs chunks=... to look its text up")
    return items, raw


def _breakdown_fields(raw: Sequence[tuple[int, dict]], by: Sequence[str]) -> dict[str, dict]:
    """Each answer's fields by id, once every field of the breakdown is known to some answer."""
    fields_by_id = {str(answer_fields(obj, no)["id"]): obj for no, obj in raw}
    for name in by:
        if not any(name in obj for obj in fields_by_id.values()):
            known = sorted({k for obj in fields_by_id.values() for k in obj})
            raise UsageError(f"--by {name}: no answer has this field (fields: {', '.join(known)})")
    return fields_by_id


def queries_by_text(
    items: Sequence[AnswerItem], queries: str | Path | Mapping[str, str], answers: Any, say: Say
) -> dict[str, str] | None:
    """Each answer's query id, when the answers' ids meet none of the queries' but their questions are
    the queries' texts (data/text_match.py: counted, and said as a warning); None when the ids meet."""
    texts = dict(queries) if isinstance(queries, Mapping) else read_queries(queries)
    found = answers_to_queries(
        {a.id: a.question for a in items},
        texts,
        "auto",
        source_of(answers),
        None if isinstance(queries, Mapping) else queries,
        setting="--queries",
    )
    if found is None:
        return None
    if say is not None:
        say(found.sentence())
    return dict(found.pairs)


@dataclass
class Diagnosis:
    """What the diagnosis rests on: how the answers met the run and the qrels (counted), and the
    recall of the gold chunks by answer id, with its caveat. Empty without a run."""

    joins: list[Join] = field(default_factory=list)
    recall: dict[str, float] | None = None
    caveat: str | None = None


def diagnosis_inputs(
    items: Sequence[AnswerItem],
    answers: Any,
    run: Any,
    qrels: Any,
    depth: int,
    query_ids: Mapping[str, str] | None,
    queries: Any,
    say: Say,
) -> Diagnosis:
    """The diagnosis meets answers with the run and the qrels by query id: each join is counted, and
    none in common is an error that names the way out (``queries=``, to match by question text)."""
    if run is None:
        return Diagnosis()
    run_t, qrels_t = coerce_run(run), coerce_qrels(qrels)
    asks = {a.id: (query_ids or {}).get(a.id, a.id) for a in items}  # the query each answer answers
    ids = list(asks.values())
    try:
        Join.of(
            "query ids", "the answers", ids, "the run", run_t.queries, source_of(answers), source_of(run)
        ).require_overlap()
    except InputError as e:  # the way out, when the answers ask the run's questions under other ids
        if queries is not None:
            raise
        raise InputError(
            f"{e.message} If the answers ask the queries' questions under other ids, give the "
            "queries (--queries FILE; queries= in Python) to match them by question text",
            e.path,
        ) from None
    joins = [
        say_join(
            Join.of(
                "query ids", "the answers", ids, "the run", run_t.queries, source_of(answers), source_of(run)
            ).require_overlap(),
            say,
            ("left",),
        ),
        say_join(
            Join.of(
                "query ids", "the answers", ids, "the qrels", qrels_t.queries, source_of(answers), source_of(qrels)
            ).require_overlap(),
            say,
            ("left",),
        ),
    ]
    in_run = set(run_t.queries)  # an answer whose question the run does not hold is not diagnosed
    all_recall, caveat = retrieval_recall(qrels_t, run_t, depth)
    by_query = {q: v for q, v in all_recall.items() if q in in_run}
    recall = {a: by_query[q] for a, q in asks.items() if q in by_query}  # keyed by answer id, as records are
    return Diagnosis(joins, recall, caveat)


def people_labels(
    human: str | Path | Mapping[str, str] | None, items: Sequence[AnswerItem], answers: Any, say: Say
) -> tuple[dict[str, str] | None, Join | None]:
    """People's labels of a sample of the answers, and how they met the answers: labels of no answer
    are the warning."""
    if human is None:
        return None, None
    people = read_human_labels(human) if isinstance(human, (str, Path)) else dict(human)
    join = say_join(
        Join.of(
            "answer ids",
            "the answers",
            [a.id for a in items],
            "the --human labels",
            people,
            source_of(answers),
            source_of(human),
        ).require_overlap(),
        say,
        ("right",),
    )
    return people, join
