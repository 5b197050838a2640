"""What qualifying a grader finds: the grader (a model with a prompt), its labels of the sample and
how they agree with people's, and the whole qualification that the text and the JSON are made from.

These values sit apart from the runs that fill them (:mod:`.qualify`) because the report's text
(:mod:`.qualify_text`) and the command read them without running anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..metrics.qualification import LabelAgreement, PairedDifference
from .published_agreement import PublishedFigure


@dataclass(frozen=True)
class Grader:
    """What is qualified: one model with one prompt (a choice of the stage, or a file)."""

    model: str | None
    prompt: str = "auto"

    def name(self) -> str:
        prompt = Path(self.prompt).name if ("/" in self.prompt or self.prompt.endswith(".txt")) else self.prompt
        return f"{self.model or '(default model)'} with prompt {prompt}"


@dataclass
class GraderOutcome:
    """One grader's labels of the sample and how they agree with people's."""

    grader: Grader
    output: Path | None
    prompts: list[str]  # the prompt ids the records name
    labels: dict[Any, Any]  # item -> the grader's label as compared with people's (None: an error)
    agreement: LabelAgreement
    errors: int
    error_reasons: dict[str, int]
    by_rule: int  # check: answers the rules decided without a call
    usage: Mapping[Any, Any]  # model (None when none was named) -> its usage
    usage_text: str
    seconds: float
    paired: PairedDifference | None = None  # against the first grader, on the same items
    given: dict[Any, Any] = field(default_factory=dict)  # item -> the label as the grader gave it (0-3, 4 labels)
    ranking: dict | None = None  # Kendall's tau of runs ranked under people's and this grader's labels

    def to_dict(self) -> dict[str, Any]:
        return {
            "grader": {"model": self.grader.model, "prompt": self.grader.prompt},
            "output": str(self.output) if self.output else None,
            "prompts": self.prompts,
            "agreement": self.agreement.to_dict(),
            "errors": self.errors,
            "error_reasons": self.error_reasons,
            "decided_by_rule": self.by_rule,
            "usage": self.usage,
            "seconds": round(self.seconds, 1),
            "paired_with_first": self.paired.to_dict() if self.paired else None,
            "ranking": self.ranking,
        }


@dataclass
class Qualification:
    """What ``ragassay qualify`` found: the sample, each grader's agreement with people, the
    ceiling (a second people's labelling of the same items, where there is one), and the
    published figures to set beside them."""

    task: str
    source: str
    citation: str | None
    sample: dict[str, Any]
    graders: list[GraderOutcome]
    ceiling: LabelAgreement | None
    published: list[PublishedFigure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)  # each sampled item: people's and each grader's label

    @property
    def exit_code(self) -> int:
        """0 when every grader labelled every item; 3 when some items are error records; 1 when a
        grader labelled nothing."""
        if any(g.agreement.n == 0 for g in self.graders):
            return 1
        return 3 if any(g.errors for g in self.graders) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "qualify",
            "version": 1,
            "task": self.task,
            "source": self.source,
            "citation": self.citation,
            "sample": self.sample,
            "graders": [g.to_dict() for g in self.graders],
            "ceiling": self.ceiling.to_dict() if self.ceiling else None,
            "published": [p.to_dict() for p in self.published],
            "notes": self.notes,
            "items": self.items,
        }
