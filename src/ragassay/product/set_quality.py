"""The quality report of a test set (``ragassay quality``), generated or hand-made: the figures of
set_measures.py put together, each saying what it rests on, with the command that reproduces them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.chunk_files import read_chunks
from ..data.qrels_files import QrelsFormat, read_qrels
from ..data.query_files import read_queries
from ..data.result_models import QualityResult
from ..data.run_files import RunFormat, read_run
from ..data.tables import Qrels
from ..errors import InputError, UsageError
from ..metrics.evaluate import evaluate
from ..metrics.rests_on import relevance_for
from ..stages.generate.shapes import MIX_NAMES
from ..stages.generate_checks import parse_mix
from .set_measures import (
    TOP,
    LexicalRanker,
    SetQuestion,
    coverage,
    distance_to_log,
    lexical_profile,
    mix,
    near_duplicates,
    power,
    public,
    question_profile,
    read_set,
)

NDCG = "ndcg@10"


@dataclass
class SetQuality:
    """What ``quality`` found. ``rests_on`` says where the gold came from and at which grade;
    ``difficulty`` holds, per difficulty the records say, where BM25 ranks the gold chunks."""

    command: str
    questions: int
    rests_on: dict[str, Any]
    difficulty: dict[str, dict[str, Any]]
    checks: dict[str, Any]
    duplicates: dict[str, Any]
    coverage: dict[str, Any]
    mix: dict[str, Any]
    power: dict[str, Any]
    log: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON prints it: kind and version first, like every command's."""
        return QualityResult(
            command=self.command,
            questions=self.questions,
            rests_on=self.rests_on,
            difficulty=self.difficulty,
            checks=self.checks,
            duplicates=self.duplicates,
            coverage=self.coverage,
            mix=self.mix,
            power=self.power,
            log=self.log,
            notes=self.notes,
        ).to_dict()


def set_quality(
    queries: str | Path,
    chunks: str | Path,
    qrels: str | Path | None = None,
    *,
    relevance_level: int | None = None,
    log: str | Path | None = None,
    log_qrels: str | Path | None = None,
    runs: Sequence[str | Path] = (),
    mix_asked: str | Mapping[str, float] | None = None,
    command: str | None = None,
    qrels_format: QrelsFormat = "auto",
    run_format: RunFormat = "auto",
) -> SetQuality:
    """Measure a test set: ``queries`` (generate's questions or any queries file), the ``chunks`` it
    was made from, and its ``qrels`` (else the gold is the questions' own ``chunk_ids``).

    ``log``: real queries (a queries file), to say how far the set is from them; ``log_qrels``: their
    judgments, for the lexical profile of their gold. ``runs``: two runs of the set, whose per-query
    nDCG@10 differences give the sd behind the power figure (else three sds are assumed, and said).
    ``mix_asked``: the difficulty shares generate was asked for. ``qrels_format`` and ``run_format``
    name the formats of the qrels (both) and the runs when detection is not wanted."""
    if isinstance(mix_asked, str):  # the flag's text: easy=0.3,hard=0.2,unanswerable=0.5
        try:
            mix_asked = parse_mix(mix_asked, MIX_NAMES)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if len(runs) not in (0, 2):
        raise UsageError(f"give two runs (to measure the sd of their nDCG@10 differences) or none, not {len(runs)}")
    questions = read_set(queries)
    corpus = read_chunks(chunks)
    table = read_qrels(qrels, qrels_format) if qrels is not None else None
    gold, rests_on = _gold(questions, qrels, table, relevance_level, queries)
    ranker = LexicalRanker([c.id for c in corpus], [c.text for c in corpus])
    ranks = {q.id: ranker.best_rank(q.text, sorted(gold[q.id])) for q in questions if gold.get(q.id)}
    rests_on["without_relevant"] = sum(1 for q in questions if not gold.get(q.id))
    by_level = _by_difficulty(questions, ranks)
    scored = [q for q in questions if gold.get(q.id)]
    sd, sd_source = _run_sd(runs, run_format, table, gold) if runs else (None, "assumed (give two runs to measure it)")
    result = SetQuality(
        command or _command(queries, chunks, qrels, relevance_level, log, log_qrels, runs, mix_asked),
        len(questions),
        rests_on,
        by_level,
        _checks(questions),
        near_duplicates(questions),
        coverage(gold, corpus),
        mix(questions, mix_asked),
        power(len(scored), sd, sd_source),
    )
    if log is not None:
        log_table = read_qrels(log_qrels, qrels_format) if log_qrels is not None else None
        result.log = _log_distance(questions, log, log_qrels, log_table, ranker, relevance_level)
    result.notes = _notes(result)
    return result


def _gold(
    questions: Sequence[SetQuestion],
    qrels: str | Path | None,
    table: Qrels | None,
    level: int | None,
    queries: str | Path,
) -> tuple[dict[str, set[str]], dict[str, Any]]:
    """Each question's relevant chunks, and what they rest on: the qrels at their relevant grade, or
    the questions' own chunk ids (every one of which generate cited as evidence)."""
    ids = {q.id for q in questions}
    if qrels is None or table is None:
        gold = {q.id: set(q.chunk_ids) for q in questions}
        if not any(gold.values()):
            raise InputError("the questions name no chunk_ids: give the set's qrels (--qrels)", queries)
        return gold, {"gold": "the questions' chunk_ids", "relevant_grade": None}
    rel = relevance_for(table.origin, level, qrels)
    gold = {q: {d for d, g in docs.items() if g >= rel.level} for q, docs in table.to_dict().items()}
    matched = len(ids & set(gold))
    if not matched:
        raise InputError(f"no query id of {queries} is in these qrels (e.g. {sorted(ids)[:3]})", qrels)
    return (
        {q: gold.get(q, set()) for q in ids},
        {
            "gold": str(qrels),
            "relevant_grade": rel.level,
            "relevant_grade_source": rel.text(),
            "qrels_queries_matched": matched,
            "qrels_queries_not_in_set": len(set(gold) - ids),
        },
    )


def _by_difficulty(questions: Sequence[SetQuestion], ranks: Mapping[str, int | None]) -> dict[str, dict[str, Any]]:
    """The lexical profile per difficulty asked (in the order easy, medium, hard, then the rest)."""
    order = {"easy": 0, "medium": 1, "hard": 2, "unanswerable": 3, "false_premise": 4}
    levels = sorted({q.difficulty or "unrecorded" for q in questions}, key=lambda d: (order.get(d, 5), d))
    out = {}
    for level in levels:
        got = [r for q in questions if (q.difficulty or "unrecorded") == level and (r := ranks.get(q.id)) is not None]
        out[level] = lexical_profile(got)
    return out


def _checks(questions: Sequence[SetQuestion]) -> dict[str, Any]:
    """What generate's checks recorded: verified by the blind answerer from the gold chunks, the answer
    confirmed, and for hard questions whether any single chunk answered alone."""
    recorded = [q for q in questions if q.checks]
    blind = [q for q in recorded if "answerable" in q.checks]
    hard = [q for q in recorded if isinstance(q.checks.get("single_chunk_answerable"), dict)]
    return {
        "recorded": len(recorded),
        "of": len(questions),
        "blind_answerable": sum(q.checks["answerable"] is True for q in blind),
        "blind_checked": len(blind),
        "answer_confirmed": sum(q.checks.get("answer_supported") is True for q in recorded),
        "hard_checked_alone": len(hard),
        "hard_answered_by_one_chunk": sum(any(q.checks["single_chunk_answerable"].values()) for q in hard),
    }


def _run_sd(
    runs: Sequence[str | Path], run_format: RunFormat, table: Qrels | None, gold: Mapping[str, set[str]]
) -> tuple[float | None, str]:
    """The sd of the per-query nDCG@10 differences of two runs, over the queries both were scored on."""
    labels: Any = table if table is not None else {q: {c: 1 for c in cs} for q, cs in gold.items() if cs}
    a, b = (evaluate(labels, read_run(r, run_format), [NDCG]).per_query for r in runs)
    common = sorted(set(a) & set(b))
    if len(common) < 2:
        raise InputError(f"the two runs share {len(common)} scored queries with the set: need at least 2", runs[1])
    diffs = [a[q][NDCG] - b[q][NDCG] for q in common]
    return statistics.stdev(
        diffs
    ), f"measured: {NDCG} of {Path(runs[0]).name} minus {Path(runs[1]).name} over {len(common)} queries"


def _log_distance(
    questions: Sequence[SetQuestion],
    log: str | Path,
    log_qrels: str | Path | None,
    log_table: Qrels | None,
    ranker: LexicalRanker,
    level: int | None,
) -> dict[str, Any]:
    """The set beside real queries: their lengths, first words, vocabulary, and (when the log is judged)
    where BM25 ranks each side's gold."""
    real = read_queries(log)
    mine, theirs = question_profile([q.text for q in questions]), question_profile(list(real.values()))
    out: dict[str, Any] = {
        "file": str(log),
        "set": public(mine),
        "log": public(theirs),
        **distance_to_log(mine, theirs),
    }
    if log_qrels is not None and log_table is not None:
        rel = relevance_for(log_table.origin, level, log_qrels)
        judged = {
            q: [d for d, g in docs.items() if g >= rel.level] for q, docs in log_table.to_dict().items() if q in real
        }
        ranks = [r for q, docs in judged.items() if docs and (r := ranker.best_rank(real[q], sorted(docs))) is not None]
        out["log_lexical"] = {**lexical_profile(ranks), "relevant_grade": rel.level}
    return out


def _notes(q: SetQuality) -> list[str]:
    """Plain statements of what a reader should not miss; each is a fact about the figures, not a verdict."""
    out = []
    easy, hard = q.difficulty.get("easy"), q.difficulty.get("hard")
    if easy and hard and easy["questions"] and hard["questions"] and hard["first"] >= easy["first"]:
        out.append(
            f"the hard questions are no harder for BM25 than the easy ones: gold ranked first for "
            f"{hard['first']:.0%} of hard and {easy['first']:.0%} of easy questions"
        )
    if q.duplicates["pairs"]:
        out.append(
            f"{q.duplicates['pairs']} pairs of near-duplicate questions (content words shared "
            f">= {q.duplicates['similarity']:.0%})"
        )
    if q.coverage["cited_not_in_corpus_count"]:
        out.append(f"{q.coverage['cited_not_in_corpus_count']} gold chunk ids are not in the chunks file")
    if q.rests_on["without_relevant"]:
        out.append(
            f"{q.rests_on['without_relevant']} questions have no relevant chunk: retrieval measures skip "
            "them (as trec_eval skips a query with no relevant document)"
        )
    return out


def _command(
    queries: Any, chunks: Any, qrels: Any, level: Any, log: Any, log_qrels: Any, runs: Any, mix_asked: Any
) -> str:
    """The command line that reproduces this report."""
    parts = ["ragassay", "quality", str(queries), "--chunks", str(chunks)]
    for flag, value in (("--qrels", qrels), ("--relevance-level", level), ("--log", log), ("--log-qrels", log_qrels)):
        if value is not None:
            parts += [flag, str(value)]
    for r in runs:
        parts += ["--run", str(r)]
    if mix_asked:
        parts += ["--mix", ",".join(f"{k}={v:g}" for k, v in mix_asked.items())]
    return " ".join(_quote(p) for p in parts)


def _quote(part: str) -> str:
    return (
        part if part and all(c.isalnum() or c in "-_./=,@:" for c in part) else "'" + part.replace("'", "'\\''") + "'"
    )


__all__ = ["SetQuality", "set_quality", "TOP"]
