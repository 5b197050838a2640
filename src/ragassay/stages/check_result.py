"""What ``ragassay.check`` returns (:class:`CheckResult`): the run's records, the ``check`` summary
and what the model used; it reads as the stage run it wraps, so scripts written against that go on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runtime.engine import StageRun


@dataclass
class CheckResult:
    """What a check run did: its records (``run``: one per answer, in input order), the ``check``
    summary (label rates, and the diagnosis, breakdowns and agreement with people when asked),
    and what the model used: ``usage`` as numbers per model ({} when only the rules ran)."""

    run: StageRun
    summary: dict
    usage: Mapping[Any, dict] = field(default_factory=dict)  # model (None: not named) -> usage
    usage_text: str = ""
    batch_note: str = ""  # what a run on batch files or the Batch API left to do

    @property
    def records(self) -> Sequence[dict]:
        return self.run.records

    def to_dataframe(self) -> Any:
        """The check records of this run as a pandas DataFrame (pandas is optional)."""
        return self.run.to_dataframe()

    @property
    def exit_code(self) -> int:
        return self.run.exit_code

    @property
    def pending(self) -> int:
        return self.run.pending

    @property
    def ok(self) -> int:
        return self.run.ok

    @property
    def errors(self) -> int:
        return self.run.errors

    # what the result was before it held the summary (a StageRun), so scripts that read these go on
    @property
    def items(self) -> int:
        return self.run.items

    @property
    def skipped_done(self) -> int:
        return self.run.skipped_done

    @property
    def error_reasons(self) -> Counter:
        return self.run.error_reasons

    @property
    def stopped(self) -> str | None:
        return self.run.stopped

    @property
    def stage(self) -> str:
        return self.run.stage

    def failure_text(self, source: str | Path | None = None) -> str:
        return self.run.failure_text(source)

    def to_dict(self) -> dict[str, Any]:
        """The ``check`` result as ``--format json`` prints it (without the batch line)."""
        usage = {"usage": self.usage, "usage_text": self.usage_text} if self.usage else {}
        return {**self.summary, **usage, "pending": self.run.pending}

    def __repr__(self) -> str:
        return f"CheckResult({self.run!r})"
