"""Published figures of LLM graders' agreement with people, to set a user's own figure beside.

Each figure names the data it was measured on: a figure measured on other data than the user's
sample is a reference point, not a target, and the qualification says so. Only figures read in
the cited papers, or measured by ragassay's developers with the command that printed them, are
listed; a figure nobody can trace is worse than none.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class PublishedFigure:
    task: str  # "judge" (relevance grades) or "check" (answer correctness)
    data: str  # what it was measured on
    grader: str  # who graded against the people
    figure: str  # the figure, in words
    source: str  # the citation
    datasets: tuple[str, ...] = ()  # names of samples this figure was measured on (see people_samples)

    def to_dict(self) -> dict:
        return asdict(self)


PUBLISHED: tuple[PublishedFigure, ...] = (
    PublishedFigure(
        "judge",
        "TREC DL 2023 passages (LLMJudge challenge test set, 4,423 pairs, NIST assessors 0-3)",
        "33 submitted LLM judges",
        "4-class Cohen's kappa 0.06 to 0.29 (GPT-4o runs 0.24 to 0.26); binary kappa at grade >= 2 up to 0.43",
        "Rahmani et al. 2024, LLMJudge: LLMs for relevance judgments, arXiv 2408.08896",
    ),
    PublishedFigure(
        "judge",
        "TREC DL 2019 to 2023 passages (NIST assessors 0-3)",
        "UMBRELA (GPT-4o, zero-shot)",
        "per-year kappa and system-ranking correlations in the paper's tables",
        "Upadhyay et al. 2024, UMBRELA, arXiv 2406.06519",
    ),
    PublishedFigure(
        "check",
        "1,490 answers to 301 Natural Questions (people's judgments of correctness)",
        "GPT-4 as the grader",
        "agrees with people on about 85% of answers (Cohen's kappa about 0.70)",
        "Kamalloo et al. 2023, Evaluating Open-Domain Question Answering in the Era of LLMs, ACL 2023",
    ),
)


def published_for(task: str) -> list[PublishedFigure]:
    """The figures published for ``task``, most specific first."""
    return [f for f in PUBLISHED if f.task == task]
