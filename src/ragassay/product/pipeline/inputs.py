"""The run's inputs, checked once before any step: how the queries, runs, answers and qrels meet by id
(none in common stops the run before anything is spent), and who labelled each file of labels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...data.joins import Join
from ...data.text_match import TextMatch, answers_to_queries
from ...errors import InputError
from .context import Context
from .results import PipelineResult


def check_inputs(ctx: Context, result: PipelineResult) -> None:
    """The joins, counted once before any step: queries x every run file, answers x runs and people's
    qrels; none in common stops the run here. And who labelled each file of labels."""
    p = ctx.project
    ctx.queries = p.queries
    query_texts = ctx.loaded.queries(p.queries) if p.queries is not None else None
    ids = _Ids(
        list(query_texts) if query_texts is not None else None,
        read_answer_ids(ctx, p.answers) if p.answers is not None else None,
        query_texts is not None,
    )
    human_ids = ids.answers  # people label answers by the answers' own ids
    by_text = _by_text(ctx, query_texts, ids)
    joins = _run_joins(ctx, ids) + _qrels_joins(ctx, ids) + _answer_joins(ctx, ids, human_ids)
    result.joins = [j.to_dict() for j, _ in joins] + ([by_text.to_dict()] if by_text is not None else [])
    result.warnings = ([by_text.sentence()] if by_text is not None else []) + [
        w for w in (j.warning(sides) for j, sides in joins) if w
    ]
    _label_origins(ctx, result)


def _by_text(ctx: Context, query_texts: dict[str, str] | None, ids: _Ids) -> TextMatch | None:
    """How the answers meet the queries by question text (None without both files, or when they meet
    by id); each answer's id is then the id of the query it answers, for the joins after."""
    p = ctx.project
    if p.answers is None or query_texts is None:
        return None
    by_text = answers_to_queries(_answer_questions(ctx, p.answers), query_texts, p.answers_match, p.answers, p.queries)
    if by_text is None:
        return None
    ctx.answer_queries = by_text.pairs
    ids.answers = [by_text.pairs.get(a, a) for a in ids.answers or []]  # each answer by the query it answers
    return by_text


@dataclass
class _Ids:
    """The ids the joins are counted on: the queries', the answers' (each by the query it answers)
    and whether a queries file is named (an answer that meets nothing may then be matched by text)."""

    queries: list[str] | None
    answers: list[str] | None
    queries_named: bool


_Sided = tuple[Join, tuple[str, ...]]  # a join and the sides whose ids missing from the other are said


def _run_joins(ctx: Context, ids: _Ids) -> list[_Sided]:
    """Every run file against the queries and against the answers."""
    p = ctx.project
    joins: list[_Sided] = []
    for name, f in p.runs.items():
        run = ctx.loaded.run(f)
        if ids.queries is not None:
            joins.append(
                (
                    Join.of(
                        "query ids", "the queries", ids.queries, f"the run {name}", run.queries, p.queries, f
                    ).require_overlap(),
                    ("left",),
                )
            )
        if ids.answers is not None:
            joins.append(
                (
                    _answers_met(
                        Join.of("query ids", "the answers", ids.answers, f"the run {name}", run.queries, p.answers, f),
                        ids.queries_named,
                    ),
                    ("left",),
                )
            )
    return joins


def _qrels_joins(ctx: Context, ids: _Ids) -> list[_Sided]:
    """People's qrels against the queries and against the answers."""
    p = ctx.project
    joins: list[_Sided] = []
    if p.qrels is None:
        return []
    qrels = ctx.loaded.qrels(p.qrels)
    if ids.queries is not None:
        joins.append(
            (
                Join.of(
                    "query ids", "the queries", ids.queries, "the qrels", qrels.queries, p.queries, p.qrels
                ).require_overlap(),
                ("right",),
            )
        )
    if ids.answers is not None:
        joins.append(
            (
                _answers_met(
                    Join.of("query ids", "the answers", ids.answers, "the qrels", qrels.queries, p.answers, p.qrels),
                    ids.queries_named,
                ),
                ("left",),
            )
        )
    return joins


def _answer_joins(ctx: Context, ids: _Ids, human_ids: list[str] | None) -> list[_Sided]:
    """People's labels against the answers, the answers against the queries, and [agree] second
    against people's qrels (a labelling of the same queries)."""
    p = ctx.project
    joins: list[_Sided] = []
    if human_ids is not None and p.human is not None:  # people label some answers: labels of none stop here
        joins.append(
            (
                Join.of(
                    "answer ids",
                    "the answers",
                    human_ids,
                    "the human labels",
                    ctx.loaded.human_labels(p.human),
                    p.answers,
                    p.human,
                ).require_overlap(),
                ("right",),
            )
        )
    if ids.answers is not None and ids.queries is not None:
        joins.append(
            (
                Join.of(
                    "query ids", "the answers", ids.answers, "the queries", ids.queries, p.answers, p.queries
                ).require_overlap(),
                ("left",),
            )
        )
    if p.qrels is not None and p.second_qrels is not None:
        joins.append(
            (
                Join.of(
                    "query ids",
                    "the qrels",
                    ctx.loaded.qrels(p.qrels).queries,
                    "the second qrels",
                    ctx.loaded.qrels(p.second_qrels).queries,
                    p.qrels,
                    p.second_qrels,
                ).require_overlap(),
                ("right",),
            )
        )
    return joins


def _label_origins(ctx: Context, result: PipelineResult) -> None:
    """Who labelled each file of labels, and the warnings of the joins, said before any step."""
    p = ctx.project
    if p.qrels is not None:
        result.origins[p.qrels.name] = ctx.loaded.origin(p.qrels).describe()
    if p.second_qrels is not None:
        result.origins[p.second_qrels.name] = ctx.loaded.origin(p.second_qrels).describe()
    if p.human is not None:  # (its sidecar alone: label_origin without the lines)
        result.origins[p.human.name] = ctx.loaded.origin(p.human).describe()
    for name, who in result.origins.items():
        ctx.log(f"labels   {name} by {who}")
    for warning in result.warnings:
        ctx.log(f"warning: {warning}")
        ctx.said.add(warning)


def read_answer_ids(ctx: Context, path: Path) -> list[str]:
    """The answers' ids (read as check reads them: ragassay, RAGAS or DeepEval fields), from the
    rows the run read once."""
    return [str(obj["id"]) for _, obj in ctx.loaded.answer_rows(path)]


def _answers_met(join: Any, queries_named: bool) -> Any:
    """The answers' join with a run or qrels, required to meet; without a queries file, an error says
    that one would let the answers be matched by question text."""
    try:
        return join.require_overlap()
    except InputError as e:
        if queries_named:
            raise
        raise InputError(
            f"{e.message} If the answers ask the queries' questions under other ids, name the queries "
            "in [data] queries: the answers are then matched to them by question text",
            e.path,
        ) from None


def _answer_questions(ctx: Context, path: Path) -> dict[str, str]:
    """Each answer's question by its id (read as check reads them)."""
    return {str(obj["id"]): str(obj["question"]) for _, obj in ctx.loaded.answer_rows(path)}
