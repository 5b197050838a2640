"""``ragassay qualify`` as one call: the people-labelled data named by the command's flags (or the
samples inside the package), the graders (each model with each prompt), and the result written
beside the records, so that the command only reads its flags, calls this and renders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..data.people_labels import GradedPairs, LabelledAnswers
from ..data.people_samples import (
    bundled_answers,
    bundled_pairs,
    public_pairs,
    read_graded_pairs,
    read_labelled_answers,
)
from ..data.run_files import read_run
from ..errors import UsageError
from ..runtime.engine import Estimate
from .qualify import qualify_judge
from .qualify_answers import qualify_check
from .qualify_results import Grader, Qualification
from .qualify_text import estimates_text, qualification_text, write_qualification

JUDGE_FLAGS = {
    "qrels": "--qrels",
    "queries": "--queries",
    "chunks": "--chunks",
    "second": "--second",
    "public": "--public",
    "relevance_level": "--relevance-level",
    "runs": "--run",
}
CHECK_FLAGS = {"answers": "--answers", "labels": "--labels"}
DEFAULT_SIZE = {"judge": 150, "check": 100}


@dataclass
class QualifyEstimates:
    """A dry run of qualify: each grader's estimate, after what the data says of itself."""

    task: str
    graders: list[Grader]
    estimates: list[Estimate]
    data_notes: list[str]
    exit_code: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "estimates",
            "version": 1,
            "task": self.task,
            "graders": [
                {"model": g.model, "prompt": g.prompt, **e.to_dict()} for g, e in zip(self.graders, self.estimates)
            ],
        }

    def text(self) -> str:
        return estimates_text(self.estimates, self.graders, self.data_notes)


@dataclass
class WrittenQualification:
    """A qualification and where it was written (``OUT/qualification.json``)."""

    result: Qualification
    path: Path

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def text(self) -> str:
        return qualification_text(self.result, self.path)


def qualify(
    task: str,
    output: str | Path,
    *,
    qrels: str | None = None,
    queries: str | None = None,
    chunks: str | None = None,
    second: str | None = None,
    public: str | None = None,
    relevance_level: int | None = None,
    runs: Sequence[str] = (),
    metric: str = "ndcg_cut_10",
    answers: str | None = None,
    labels: str | None = None,
    model: Sequence[str] | None = None,
    prompts: Sequence[str] | None = None,
    size: int | None = None,
    seed: int = 0,
    dry_run: bool = False,
    base_url: str | None = None,
    timeout: float | None = None,
    concurrency: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    cache: str | Path | None = None,
    no_cache: bool = False,
    price_in: float | None = None,
    price_out: float | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    quiet: bool = True,
    **more: Any,
) -> QualifyEstimates | WrittenQualification:
    """Qualify each model with each prompt (``model`` x ``prompts``) at ``task`` ("judge" or "check")
    on the people-labelled data the keywords name, or on the samples inside the package; write
    ``OUT/qualification.json`` (not on a dry run). The keywords are the command's flags; ``more`` goes
    to the stages' LLM settings (``max_attempts=``, ...)."""
    if task not in DEFAULT_SIZE:
        raise UsageError(f"qualify judge or qualify check, not {task!r}")
    _one_task(
        task,
        {
            "qrels": qrels,
            "queries": queries,
            "chunks": chunks,
            "second": second,
            "public": public,
            "relevance_level": relevance_level,
            "runs": runs,
            "answers": answers,
            "labels": labels,
        },
    )
    models: Sequence[str | None] = model or [None]
    graders = [Grader(m, p) for m in models for p in (prompts or ["auto"])]
    given = {
        "base_url": base_url,
        "timeout": timeout,
        "concurrency": concurrency,
        "rpm": rpm,
        "tpm": tpm,
        "cache": cache,
        "no_cache": no_cache,
        "price_in": price_in,
        "price_out": price_out,
        "max_calls": max_calls,
        "max_cost": max_cost,
        "quiet": quiet,
        **more,
    }
    settings = {k: v for k, v in given.items() if v is not None}
    size = DEFAULT_SIZE[task] if size is None else size
    result: Qualification | list[Estimate]
    if task == "judge":
        pairs = _pairs(qrels, queries, chunks, second, public, relevance_level)
        data_notes = [
            f"data: {pairs.source}",
            *pairs.notes,
            f"sample: {min(size, len(pairs.grades))} of {len(pairs.grades)} pairs, stratified by the "
            f"people's grade, seed {seed}",
        ]
        result = qualify_judge(
            pairs,
            graders,
            size=size,
            seed=seed,
            output=output,
            runs=_runs(runs),
            metric=metric,
            dry_run=dry_run,
            **settings,
        )
    else:
        labelled = _answers(answers, labels)
        data_notes = [
            f"data: {labelled.source}",
            *labelled.notes,
            f"sample: {min(size, len(labelled.labels))} of {len(labelled.labels)} answers, stratified "
            f"by the people's label, seed {seed}",
        ]
        result = qualify_check(labelled, graders, size=size, seed=seed, output=output, dry_run=dry_run, **settings)
    if isinstance(result, list):
        return QualifyEstimates(task, graders, result, data_notes)
    return WrittenQualification(result, write_qualification(result, Path(output)))


def _one_task(task: str, given: dict[str, Any]) -> None:
    """A flag of the other task is refused, never silently ignored."""
    other = CHECK_FLAGS if task == "judge" else JUDGE_FLAGS
    wrong = [flag for name, flag in other.items() if given.get(name)]
    if wrong:
        raise UsageError(
            f"{', '.join(wrong)} belong(s) to 'qualify {'check' if task == 'judge' else 'judge'}', not 'qualify {task}'"
        )


def _pairs(
    qrels: str | None,
    queries: str | None,
    chunks: str | None,
    second: str | None,
    public: str | None,
    relevance_level: int | None,
) -> GradedPairs:
    files = [qrels, queries, chunks]
    if public and any(files):
        raise UsageError("give either --public NAME or your own files (--qrels, --queries, --chunks), not both")
    if any(files):
        if not (qrels and queries and chunks):
            raise UsageError("your own people-labelled pairs need --qrels, --queries and --chunks together")
        return read_graded_pairs(qrels, queries, chunks, second=second, relevant_from=relevance_level)
    if second:
        raise UsageError("--second goes with --qrels (the bundled example has its own second assessor)")
    pairs = public_pairs(public) if public else bundled_pairs()
    return pairs if relevance_level is None else replace(pairs, relevant_from=relevance_level)


def _answers(answers: str | None, labels: str | None) -> LabelledAnswers:
    if answers:
        return read_labelled_answers(answers, labels)
    if labels:
        raise UsageError("--labels goes with --answers (the bundled sample carries its own labels)")
    return bundled_answers()


def _runs(paths: Sequence[str]) -> dict[str, Any] | None:
    if not paths:
        return None
    if len(paths) < 2:
        raise UsageError("ranking runs needs two or more --run files")
    runs: dict[str, Any] = {}
    for p in paths:  # each run under a name of its own: two files tagged alike go by their paths
        run = read_run(p)
        runs[p if run.name in runs else run.name] = run
    return runs
