"""What a run of a stage did (:class:`StageRun`: its records, counts and exit code, and the text
that says why records failed), and :class:`StageAborted`, raised when the first calls all fail the
same way.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...data.coerce import to_dataframe
from ...errors import RagassayError


class StageAborted(RagassayError):
    """The first calls all failed the same way (dead endpoint, refused key, unknown model).
    ``reason`` is the message without where the finished records are kept."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


@dataclass
class StageRun:
    """What one run of a stage did: the records of this plan (one per key, plan order) and counts."""

    stage: str
    records: Sequence[dict]  # Records (parsed when read) from a run; any list of dicts will do
    items: int
    skipped_done: int
    ok: int
    errors: int
    error_reasons: Counter
    pending: int = 0  # items waiting for batch answers (their requests were exported)
    stopped: str | None = None  # a spending ceiling stopped the run: why, and what is left

    def to_dataframe(self) -> Any:
        """The records of this run as a pandas DataFrame (pandas is optional)."""
        return to_dataframe(list(self.records))

    def __repr__(self) -> str:
        # short: asyncio.run's signal handling reprs the result of the task it ran (Python 3.11), and a
        # notebook shows it; a repr of every record would cost seconds on a large run
        return (
            f"StageRun({self.stage!r}, {len(self.records)} records: {self.ok} ok, {self.errors} errors, "
            f"{self.skipped_done} already done, {self.pending} pending)"
        )

    @property
    def exit_code(self) -> int:
        """0 every record ok; 3 some error records or items left by a ceiling (a rerun goes on); 1
        nothing succeeded."""
        if self.errors == 0 and self.stopped is None:
            return 0
        return 1 if self.ok == 0 and self.errors else 3

    def failure_text(self, source: str | Path | None = None) -> str:
        """The error records' commonest reasons, each input error with a few of its items (and
        ``source``, the input file, when given); a rerun is advised only for errors a rerun may
        mend (not an input's, which repeat, nor a setting's, whose reason says what to set)."""
        if self.stopped and not self.errors:
            return self.stopped
        if not self.errors:
            return ""
        reasons = "; ".join(f"{n} x {r}{self._items_of(r, source)}" for r, n in self.error_reasons.most_common(3))
        text = (
            f"{self.errors} of {self.ok + self.errors} {self.stage} records are errors (commonest: {reasons})"
            + "".join(f"; {a}" for a in self._advice())
        )
        return f"{text}\n{self.stopped}" if self.stopped else text

    def _advice(self) -> list[str]:
        """What to do about the error records: a rerun for those a rerun may mend, the input first for
        input errors (a setting's error says in its reason what to set)."""
        fixed = sum(n for r, n in self.error_reasons.items() if r.startswith(FIXED_REASONS))
        inputs = sum(n for r, n in self.error_reasons.items() if r.startswith("input:"))
        advice: list[str] = []
        if fixed < self.errors:
            advice.append(
                "rerun the same command to retry them"
                if not fixed
                else f"rerun the same command to retry the {self.errors - fixed} others"
            )
        if inputs:
            advice.append(
                f"the {inputs} input error{'s repeat' if inputs != 1 else ' repeats'} on a rerun: mend "
                f"{'those items' if inputs != 1 else 'that item'} in the input first"
            )
        return advice

    def _items_of(self, reason: str, source: str | Path | None, shown: int = 3) -> str:
        """`` (items 'a', 'b' of FILE)``: a few items whose records fail for an input ``reason``."""
        if not reason.startswith("input:"):
            return ""
        ids = [
            str(r.get("id"))
            for r in self.records
            if isinstance(r, dict) and r.get("status") == "error" and reason_of(r) == reason and r.get("id")
        ]
        if not ids:
            return ""
        # an item without an id of its own is named by its line (the id rule's "line-N"): said as the line
        named = ", ".join(f"line {i[5:]}" if re.fullmatch(r"line-\d+", i) else f"item {i!r}" for i in ids[:shown])
        return f" ({named}{', ...' if len(ids) > shown else ''}" + (f" of {source})" if source else ")")


FIXED_REASONS = ("input:", "config:")  # reasons a rerun of the same command repeats


def reason_of(record: dict) -> str:
    text = str(record.get("error") or "unknown")
    return text if len(text) <= 160 else text[:157] + "..."
