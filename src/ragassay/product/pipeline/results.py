"""What ``ragassay run`` returns: each step's result and the run's, with the summary they print."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import step_outcomes as outcomes


@dataclass
class StepResult:
    """One step: ``status`` is ran, up to date, skipped, not selected, estimated or failed."""

    step: str
    status: str
    text: str = ""
    exit_code: int = 0
    estimate: dict | None = None
    result: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "status": self.status,
            "text": self.text,
            "exit_code": self.exit_code,
            "estimate": self.estimate,
            "result": self.result,
        }


@dataclass
class PipelineResult:
    """Every step's result, the joins counted at the start and who labelled each file of labels."""

    project: str
    dry_run: bool
    steps: list[StepResult] = field(default_factory=list)
    joins: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    without_llm: list[str] = field(default_factory=list)  # what was not done for want of an endpoint

    @property
    def report(self) -> str | None:
        """The HTML report this run wrote or kept (None when no report step made one)."""
        made = next((s.result for s in self.steps if s.step == "report"), None)
        return made.get("html") if isinstance(made, dict) else None

    @property
    def exit_code(self) -> int:
        codes = [s.exit_code for s in self.steps]
        return 1 if 1 in codes else 3 if 3 in codes else 0

    @property
    def calls(self) -> int:
        """The calls a dry run predicts (the sum of its steps' estimates)."""
        return sum((s.estimate or {}).get("calls", 0) for s in self.steps)

    def usage_lines(self) -> list[str]:
        """What each LLM step that called a model used: answers, calls, tokens, cost."""
        said = [
            (s.step, s.result.get("usage_text")) for s in self.steps if s.status == "ran" and isinstance(s.result, dict)
        ]
        return [f"usage     {name}: {text}" for name, text in said if text]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "run",
            "version": 1,
            "project": self.project,
            "dry_run": self.dry_run,
            "exit_code": self.exit_code,
            "calls": self.calls if self.dry_run else None,
            "joins": self.joins,
            "warnings": self.warnings,
            "origins": self.origins,
            "without_llm": self.without_llm,
            "steps": [s.to_dict() for s in self.steps],
        }

    def text(self, steps: bool = True) -> str:
        """The summary; ``steps``: each step's line too (a log said them as they ended otherwise)."""
        lines = [step_line(s) for s in self.steps] if steps else []
        lines += self.usage_lines()
        if self.dry_run:
            ran = any(s.step == "retrieve" and s.status == "estimated" for s in self.steps)
            bound = any((s.estimate or {}).get("at_most") for s in self.steps)
            lines.append(
                f"dry run: no model was called{' (the retrievers ran, to know the pool)' if ran else ''}; "
                f"{'at most ' if bound else ''}{self.calls} calls in all"
            )
        failed = [s for s in self.steps if s.exit_code]
        stopped = outcomes.last_line(self.steps)  # a failed step: "stopped at STEP: reason", last
        if stopped or failed:
            lines.append(stopped or "finished with " + ", ".join(f"{s.step} (exit {s.exit_code})" for s in failed))
        return "\n".join(lines)


def step_line(s: StepResult) -> str:
    return f"{s.step:<9} {s.status}" + (f": {s.text}" if s.text else "")


def not_selected(name: str) -> StepResult:
    return StepResult(name, "not selected")
