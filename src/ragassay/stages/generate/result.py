"""What a generate run made (:class:`GenerateResult`: the questions, the rejects and why, what fell
short of the target, the lines the command prints) and the files it writes at the end in one step
(:func:`write_outputs`: the set, its rejects, its qrels and the origin of its gold chunks)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...data.io import to_dataframe, write_jsonl, write_qrels
from ...data.origin import (
    JUDGE_RELEVANT_FROM,
    JUDGE_SCALE,
    Origin,
    endpoint_host,
    origin_of_records,
    today,
    write_origin,
)
from ...data.records import NO_ANSWER, Question
from ...data.result_models import GenerateSummary
from ...runtime.store_lines import journal_path
from .journal import candidates_path
from .shapes import reject_record


@dataclass
class GenerateResult:
    """A question set as a run left it: accepted questions, rejects with their reasons, unfit chunks
    and the target, and what the run spent and reused."""

    accepted: list[Question]
    rejects: list[dict]
    unfit_chunks: dict[str, str]
    target: dict[str, int]
    pending: int = 0  # candidates waiting for batch answers: the set is not finished, nothing is written
    stopped: str | None = None  # why generation stopped before the target: a ceiling, or chunks spent
    # set by a run through the scaffold (ragassay.generate, the command):
    usage: dict[str | None, dict[str, Any]] = field(default_factory=dict)  # model -> calls, tokens, cost
    usage_text: str = ""  # the same, as the line the command prints
    batch_note: str = ""  # what a run on batch files or the Batch API left to do
    kept: int = 0  # questions of the set being grown (--append) written before the new ones
    exported: list[tuple[str, list[Path]]] = field(default_factory=list)  # (format, files) of each --export
    # answers of this set's calls: taken from what earlier runs kept in OUTPUT.answers, and asked now
    # (of the endpoint or its cache)
    reused: int = 0
    asked: int = 0
    answers_file: str = ""

    def levels(self) -> list[str]:
        """The mix's buckets said: easy, medium and hard always, the questions with no answer when asked for."""
        return ["easy", "medium", "hard"] + [k for k in NO_ANSWER if self.target.get(k) or k in self.delivered_levels()]

    def delivered_levels(self) -> set[str]:
        return {q.difficulty for q in self.accepted}

    def summary(self) -> str:
        return "\n".join(self._count_lines() + self._failure_lines() + self._reuse_lines())

    def _count_lines(self) -> list[str]:
        """What was accepted by level, kind and style, what was rejected and why, and the unfit chunks."""
        per_level: Counter[str] = Counter(q.difficulty for q in self.accepted)
        kinds = Counter(q.kind for q in self.accepted)
        reasons = Counter(r["reason"].split(":")[0].split(" (")[0] for r in self.rejects)
        return [
            f"accepted {len(self.accepted)}: "
            + ", ".join(f"{k} {per_level.get(k, 0)}/{self.target.get(k, 0)}" for k in self.levels()),
            "kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
            "styles: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(q.style for q in self.accepted).items())),
            f"rejected {len(self.rejects)}"
            + (": " + "; ".join(f"{k} {v}" for k, v in reasons.most_common()) if reasons else ""),
            f"chunks unfit to ask about: {len(self.unfit_chunks)}",
        ]

    def _failure_lines(self) -> list[str]:
        """Why the model's answers were unusable, the questions relabelled, and the shortfall."""
        lines = []
        failed = Counter(
            r["reason"].split(": ", 1)[1] for r in self.rejects if r["reason"].startswith("model call failed: ")
        )
        if failed:  # say why the model's answers were unusable, not only that they were
            why, n = failed.most_common(1)[0]
            lines.append(f"model calls failed {sum(failed.values())} times; commonest ({n}): {why[:300]}")
        relabelled = sum(1 for q in self.accepted if q.checks.get("relabelled"))
        if relabelled:
            lines.append(
                f"relabelled: {relabelled} asked as medium are easy (a gold chunk is BM25 rank 1 with most "
                "of the question's words); see checks.relabelled"
            )
        short = self.shortfall
        if short:
            lines.append(
                "fell short of the target: "
                + ", ".join(f"{k} {v} fewer" for k, v in short.items())
                + "; the rejects above say why (a rerun with --limit or another --seed tries other chunks)"
            )
        return lines

    def _reuse_lines(self) -> list[str]:
        """Why the run stopped, and the answers an earlier run kept."""
        lines = []
        if self.stopped:
            lines.append(self.stopped)
        if self.reused and not self.asked:
            lines.append(
                f"nothing was sent: all {self.reused} answers this set needs were kept by an earlier run in "
                f"{self.answers_file} (delete it to ask the model again)"
            )
        elif self.reused:
            lines.append(
                f"{self.reused} answers kept by an earlier run in {self.answers_file} were used, not asked "
                f"again; {self.asked} asked now"
            )
        return lines

    @property
    def shortfall(self) -> dict[str, int]:
        per_level: Counter[str] = Counter(q.difficulty for q in self.accepted)
        return {k: n - per_level.get(k, 0) for k, n in self.target.items() if per_level.get(k, 0) < n}

    @property
    def exit_code(self) -> int:
        """0 the target was met, or the set waits for batch answers; 3 some questions are missing; 1
        none was accepted."""
        if self.pending:
            return 0
        if not self.accepted:
            return 1
        return 3 if self.shortfall else 0

    def to_dict(self) -> dict:
        per_level: Counter[str] = Counter(q.difficulty for q in self.accepted)
        return GenerateSummary(
            accepted=len(self.accepted),
            target=dict(self.target),
            delivered={k: per_level.get(k, 0) for k in self.levels()},
            shortfall=self.shortfall,
            rejected=len(self.rejects),
            relabelled=sum(1 for q in self.accepted if q.checks.get("relabelled")),
            kinds=dict(Counter(q.kind for q in self.accepted)),
            styles=dict(Counter(q.style for q in self.accepted if q.style is not None)),
            reject_reasons=dict(Counter(r["reason"].split(":")[0].split(" (")[0] for r in self.rejects)),
            unfit_chunks=len(self.unfit_chunks),
            stopped=self.stopped,
            usage={str(model): numbers for model, numbers in self.usage.items()},  # (a run's model is named)
            usage_text=self.usage_text,
        ).to_dict()

    def to_dataframe(self) -> Any:
        """The accepted questions as a pandas DataFrame (pandas is optional)."""
        return to_dataframe(list(self.accepted))


def write_outputs(
    result: GenerateResult,
    output: str | Path,
    rejects: str | Path | None = None,
    qrels_out: str | Path | None = None,
    existing: Sequence[Question] = (),
    endpoint: tuple[str | None, str | None] | None = None,
) -> None:
    """Write the set (after ``existing`` questions, when growing one), its rejects and its qrels;
    ``endpoint`` (model, base URL) of this run names the host beside the gold qrels' origin."""
    known = {q.id for q in existing}
    result = dataclasses.replace(result, accepted=[*existing, *(q for q in result.accepted if q.id not in known)])
    write_jsonl(output, result.accepted)
    if rejects is not None:
        write_jsonl(
            rejects,
            result.rejects
            + [reject_record([c], None, None, None, f"chunk unfit: {why}") for c, why in result.unfit_chunks.items()],
        )
    if qrels_out is not None:
        # the gold chunks were chosen by the model that wrote each question (with its prompt)
        origin = origin_of_records(
            ({"model": q.model, "prompt": q.prompt} for q in result.accepted), command="generate"
        )
        if endpoint is not None:  # this run's model was asked at this host (a grown set's older questions: unknown)
            origin = _asked_at(origin, endpoint)
        none = tuple(q.id for q in result.accepted if not q.chunk_ids)  # unanswerable: no line, said beside
        write_qrels(
            qrels_out,
            {q.id: q.grades or {c: 3 for c in q.chunk_ids} for q in result.accepted if q.chunk_ids},
            origin=origin.replace(
                date=today(), scale=JUDGE_SCALE, relevant_from=JUDGE_RELEVANT_FROM, no_relevant=none or None
            ),
        )
    if endpoint is not None:  # the set itself holds gold chunks: its sidecar keeps the host its lines cannot
        set_origin = origin_of_records(
            ({"model": q.model, "prompt": q.prompt} for q in result.accepted), command="generate"
        )
        write_origin(output, _asked_at(set_origin, endpoint).replace(date=today()))
    journal_path(candidates_path(output)).unlink(missing_ok=True)  # the set is written: its journal is spent


def _asked_at(origin: Origin, endpoint: tuple[str | None, str | None]) -> Origin:
    """``origin`` with this run's model (``endpoint``'s first part) named at the host it was asked at."""
    host = endpoint_host(endpoint[1])
    return origin.replace(
        labellers=tuple(lab.replace(endpoint=host) if lab.name == endpoint[0] else lab for lab in origin.labellers)
    )
