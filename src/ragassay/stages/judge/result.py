"""What a judge run did (:class:`JudgeResult`): the counts, the grades and how far votes and jurors
agreed, read from this run's records in one pass and kept in the output's index, so that a rerun of
finished work reads none of them; and the lines the command prints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...data.result_models import JudgeSummary
from ...metrics.agreement import cohen_kappa
from ...runtime.engine import StageRun
from ...runtime.store_records import Records


@dataclass
class JudgeResult:
    """What a judge run did, for this run's pairs only (other records in the files are not counted)."""

    relevance: StageRun
    coverage: StageRun | None
    pairs: int
    kept: int
    truncated: int
    batch_fallbacks: int
    usage: dict[str, Any] = field(default_factory=dict)  # model -> calls, tokens and cost (Usage.to_dict())
    usage_text: str = ""  # the same, as the line the command prints
    coverage_waits: bool = False  # coverage was not run: judgments still wait for batch answers
    batch_note: str = ""  # what a run on batch files or the Batch API left to do (set by the scaffold)
    join: dict | None = None  # how the queries met the run by id (data/joins.py)

    @property
    def pending(self) -> int:
        """Items waiting for batch answers (relevance and coverage)."""
        return self.relevance.pending + (self.coverage.pending if self.coverage else 0)

    @property
    def records(self) -> Sequence[dict]:
        """This run's judgments, one per pair in plan order (parsed as they are read)."""
        return self.relevance.records

    def to_dataframe(self) -> Any:
        """The judgments of this run as a pandas DataFrame (coverage: ``result.coverage.to_dataframe()``)."""
        return self.relevance.to_dataframe()

    def __repr__(self) -> str:
        return f"JudgeResult({self.pairs} pairs, relevance={self.relevance!r}, coverage={self.coverage!r})"

    _TALLY = "judge summary 1"  # the name of the tally kept in the output's index (see _tally)

    def _tally(self) -> dict[str, Any]:
        """What the summary says of this run's records, read in one pass (a large run's records are
        parsed one at a time, never all held), and kept: in this result, and in the output's index
        for the next run with the same records in an unchanged output (a rerun of finished work
        then reads none of them)."""
        tally = self.__dict__.get("_tally_cache")
        if tally is None:
            records = self.relevance.records
            remembered = records.memo(self._TALLY) if isinstance(records, Records) else None
            tally = tally_from_json(remembered) if remembered is not None else None
            if tally is None:
                tally = tally_of(records)
                if isinstance(records, Records):
                    records.remember(self._TALLY, tally_to_json(tally))
            self.__dict__["_tally_cache"] = tally
        return tally

    @property
    def grades(self) -> Counter:
        return Counter(self._tally()["grades"])

    @property
    def errors(self) -> int:
        return self.relevance.errors + (self.coverage.errors if self.coverage else 0)

    @property
    def sample_disagreement(self) -> float | None:
        """The flip rate: the share of pairs whose votes were not all the same grade."""
        return self._tally()["sample_disagreement"]

    @property
    def mean_vote_spread(self) -> float | None:
        """Per-pair disagreement: the mean of (highest vote - lowest vote), 0 to 3."""
        return self._tally()["mean_vote_spread"]

    @property
    def juror_agreement(self) -> dict[str, dict[str, float]] | None:
        """For each pair of jurors: exact agreement and linear-weighted Cohen's kappa of their grades."""
        return self._tally()["juror_agreement"]

    @property
    def exit_code(self) -> int:
        codes = [self.relevance.exit_code] + ([self.coverage.exit_code] if self.coverage else [])
        if all(c == 0 for c in codes):
            return 0
        ok = self.relevance.ok + (self.coverage.ok if self.coverage else 0)
        stopped = self.relevance.stopped or (self.coverage.stopped if self.coverage else None)
        return 1 if ok == 0 and not stopped else 3

    def to_dict(self) -> dict[str, Any]:
        return self.summary().to_dict()

    def summary(self) -> JudgeSummary:
        """The typed result (kind ``judge``): counts, grades, coverage labels, usage as numbers."""
        cov = Counter(r["coverage"] for r in self.coverage.records if r["status"] == "ok") if self.coverage else None
        return JudgeSummary(
            pairs=self.pairs,
            kept=self.kept,
            judged=self.relevance.ok,
            errors=self.errors,
            already_done=self.relevance.skipped_done,
            decided_by_rule=self._tally()["decided_by_rule"],
            grades={str(g): self._tally()["grades"].get(g, 0) for g in range(4)},
            coverage=None if cov is None else {k: cov.get(k, 0) for k in ("FULL", "PARTIAL", "NONE")},
            sample_disagreement=self.sample_disagreement,
            mean_vote_spread=self.mean_vote_spread,
            juror_agreement=self.juror_agreement,
            truncated=self.truncated,
            windowed=self._tally()["windowed"],
            batch_fallbacks=self.batch_fallbacks,
            pending=self.pending,
            error_reasons=dict(
                (
                    self.relevance.error_reasons + (self.coverage.error_reasons if self.coverage else Counter())
                ).most_common(5)
            ),
            usage=self.usage,
            usage_text=self.usage_text,
            join=self.join,
        )

    def text(self) -> str:
        d = self.summary()
        lines = self._count_lines(d) + self._agreement_lines() + self._note_lines(d) + self._waiting_lines()
        for stage in (self.relevance, self.coverage):
            if stage is not None and (stage.errors or stage.stopped):
                lines.append(stage.failure_text())
        if self.usage_text:
            lines.append(self.usage_text)
        return "\n".join(lines)

    def _count_lines(self, d: JudgeSummary) -> list[str]:
        """How the queries met the run, the pairs and how they were done, the grades and the coverage."""
        j = self.join
        lines = (
            []
            if not j
            else [
                f"queries: {j['left']['matched']} of {j['left']['ids']} in the queries file are in "
                f"the run ({j['right']['ids']} queries)"
            ]
        )
        lines += [
            f"pairs: {self.pairs} ({self.kept} kept from --keep, {d.already_done} already done, "
            f"{d.decided_by_rule} decided by rule, {self.relevance.errors} "
            f"error{'s' if self.relevance.errors != 1 else ''})",
            "grades: " + ", ".join(f"{g}: {n}" for g, n in (d.grades or {}).items()),
        ]
        if self.coverage is not None:
            lines.append(
                "coverage: "
                + ", ".join(f"{k}: {v}" for k, v in (d.coverage or {}).items())
                + (f", errors: {self.coverage.errors}" if self.coverage.errors else "")
            )
        return lines

    def _agreement_lines(self) -> list[str]:
        """How much several votes, or several jurors, disagreed."""
        lines = []
        if self.sample_disagreement is not None:
            lines.append(
                f"votes disagreed on {self.sample_disagreement:.1%} of judged pairs (flip rate); "
                f"mean spread {self.mean_vote_spread:.2f} grades"
            )
        for jurors, a in (self.juror_agreement or {}).items():
            kappa = "n/a" if a["kappa_linear"] is None else f"{a['kappa_linear']:.3f}"
            lines.append(
                f"jurors {jurors}: same grade on {a['agreement']:.1%} of {a['pairs']} pairs, linear kappa {kappa}"
            )
        return lines

    def _note_lines(self, d: JudgeSummary) -> list[str]:
        """The chunks judged in windows or cut, and the pairs a batch answer missed."""
        lines = []
        if d.windowed:
            lines.append(f"{d.windowed} long chunks were judged in windows (the best window's grade)")
        if self.truncated:
            lines.append(f"{self.truncated} chunks were cut to the length budget")
        if self.batch_fallbacks:
            lines.append(f"{self.batch_fallbacks} pairs fell back to pointwise after a batch answer missed them")
        return lines

    def _waiting_lines(self) -> list[str]:
        """The items that wait for batch answers."""
        lines = []
        if self.relevance.pending:
            lines.append(
                f"{self.relevance.pending} judge items wait for batch answers"
                + ("; coverage runs once they are in" if self.coverage_waits else "")
            )
        if self.coverage is not None and self.coverage.pending:
            lines.append(f"{self.coverage.pending} coverage items wait for batch answers (one step per round)")
        return lines


def tally_of(records: Iterable[dict]) -> dict[str, Any]:
    """The summary's figures from judgment records: grades of the ok ones, how many a rule decided
    and how many were judged in windows, and, where there were several votes or jurors, how much
    they disagreed."""
    grades: Counter = Counter()
    votes: list[list[int]] = []
    jurors: list[dict[str, int]] = []
    rule = windowed = 0
    for r in records:
        rule += r.get("decided_by") == "rule"
        windowed += bool(r.get("windows"))
        if r["status"] != "ok":
            continue
        grades[r["grade"]] += 1
        if len(r.get("samples") or []) > 1:
            votes.append(r["samples"])
        if r.get("juror_grades"):
            jurors.append(r["juror_grades"])
    return {
        "grades": dict(grades),
        "decided_by_rule": rule,
        "windowed": windowed,
        "sample_disagreement": sum(1 for v in votes if len(set(v)) > 1) / len(votes) if votes else None,
        "mean_vote_spread": sum(max(v) - min(v) for v in votes) / len(votes) if votes else None,
        "juror_agreement": juror_agreement_of(jurors),
    }


def juror_agreement_of(rows: list[dict[str, int]]) -> dict[str, dict[str, Any]] | None:
    if not rows:
        return None
    names = list(rows[0])
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = [r[a] for r in rows], [r[b] for r in rows]
            kappa = cohen_kappa(np.asarray(x), np.asarray(y), "linear")
            out[f"{a} vs {b}"] = {
                "pairs": len(rows),
                "agreement": sum(u == v for u, v in zip(x, y)) / len(rows),
                "kappa_linear": None if kappa != kappa else kappa,
            }
    return out


def tally_to_json(tally: dict[str, Any]) -> dict[str, Any]:
    """A tally as JSON keeps it: grades as [grade, count] pairs (a grade may be None)."""
    return {**tally, "grades": [[g, n] for g, n in tally["grades"].items()]}


def tally_from_json(value: Any) -> dict[str, Any] | None:
    """:func:`tally_to_json` read back; None when it is not one (the tally is then counted again)."""
    try:
        grades = {g: int(n) for g, n in value["grades"]}
        out = {
            "grades": grades,
            "decided_by_rule": int(value["decided_by_rule"]),
            "windowed": int(value["windowed"]),
            "sample_disagreement": value["sample_disagreement"],
            "mean_vote_spread": value["mean_vote_spread"],
            "juror_agreement": value["juror_agreement"],
        }
    except (KeyError, TypeError, ValueError):
        return None
    return out
