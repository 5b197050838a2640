"""What a run will cost, as counted before it runs (:class:`Estimate`): calls, tokens, dollars and
time, and the text a dry run prints. The counting itself is in ``estimates.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...data.result_models import EstimateResult
from ...llm.batch import LIMITS
from ...llm.speed import duration
from ...llm.usage import BATCH_DISCOUNT


@dataclass
class Estimate:
    """What a run of the plan will do, computed offline. ``output_tokens`` and ``cost_usd`` are
    ceilings (every answer at its ``max_tokens``); ``output_tokens_expected`` and ``cost_usd_low``
    count what answers of the same prompts took before (from the cache) and nothing for calls whose
    prompt has no such answers yet (``expected_unknown`` of them)."""

    items: int = 0
    done: int = 0
    decided_without_call: int = 0
    calls: int = 0
    cached: int = 0
    shared: int = 0  # calls identical to another item's (equal inputs under two ids): asked once
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    output_tokens_expected: int = 0
    expected_unknown: int = 0
    cost_usd_low: float | None = None
    tokenizer: str = ""
    models: list[str] = field(default_factory=list)
    note: str = ""
    calls_per_step: list[int] = field(default_factory=list)  # a multi-step stage's calls, step by step
    batch: bool = False  # priced and shaped for --backend batch
    seconds_low: float | None = None  # one call at a time at the speeds ping measured (llm/speed.py)
    seconds_high: float | None = None
    speeds: list[str] = field(default_factory=list)  # the measured speeds the time comes from
    unmeasured: list[str] = field(default_factory=list)  # models called whose speed was never measured
    input_tokens_unshared: int | None = None  # of input_tokens, not shared with the start of the call before
    last_prompts: dict[int, list[str]] = field(default_factory=dict, repr=False)  # (while estimating)

    BATCH_DISCOUNT = BATCH_DISCOUNT  # the OpenAI Batch API's price is half the live price

    def batch_plan(self) -> dict[str, Any]:
        """Rounds (one per step with calls), requests and batch files per round, and the batch price."""
        rounds = [n for n in self.calls_per_step if n]
        return {
            "rounds": len(rounds),
            "requests_per_round": rounds,
            "batches_per_round": [-(-n // LIMITS["lines"]) for n in rounds],
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd * self.BATCH_DISCOUNT, 6),
            "cost_usd_low": None if self.cost_usd_low is None else round(self.cost_usd_low * self.BATCH_DISCOUNT, 6),
        }

    def to_dict(self) -> dict[str, Any]:
        return EstimateResult(
            calls=self.calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=None if self.cost_usd is None else round(self.cost_usd, 6),
            output_tokens_expected=self.output_tokens_expected,
            expected_unknown=self.expected_unknown,
            cost_usd_low=None if self.cost_usd_low is None else round(self.cost_usd_low, 6),
            items=self.items,
            done=self.done,
            cached=self.cached,
            shared=self.shared,
            decided_without_call=self.decided_without_call,
            tokenizer=self.tokenizer,
            models=self.models,
            note=self.note,
            seconds_low=None if self.seconds_low is None else round(self.seconds_low, 1),
            seconds_high=None if self.seconds_high is None else round(self.seconds_high, 1),
            speeds=self.speeds or None,
            speed_unmeasured=self.unmeasured or None,
            input_tokens_unshared=self.input_tokens_unshared,
            **self._batch_part(),
        ).to_dict()

    def _batch_part(self) -> dict[str, Any]:
        """The Batch API's plan, when the stage is sent that way (the field is left off otherwise)."""
        return {"batch": self.batch_plan()} if self.batch else {}

    def add(self, other: Estimate) -> Estimate:
        """Two plans run one after the other (judge's relevance, then coverage)."""
        counts = (
            "items",
            "done",
            "decided_without_call",
            "calls",
            "cached",
            "shared",
            "input_tokens",
            "output_tokens",
            "output_tokens_expected",
            "expected_unknown",
        )
        return Estimate(
            **{k: getattr(self, k) + getattr(other, k) for k in counts},
            cost_usd=None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd,
            cost_usd_low=None
            if self.cost_usd_low is None or other.cost_usd_low is None
            else self.cost_usd_low + other.cost_usd_low,
            tokenizer=self.tokenizer or other.tokenizer,
            models=self.models or other.models,
            note="; ".join(n for n in (self.note, other.note) if n),
            calls_per_step=self.calls_per_step + other.calls_per_step,
            batch=self.batch or other.batch,
            seconds_low=None
            if self.seconds_low is None or other.seconds_low is None
            else self.seconds_low + other.seconds_low,
            seconds_high=None
            if self.seconds_high is None or other.seconds_high is None
            else self.seconds_high + other.seconds_high,
            speeds=list(dict.fromkeys(self.speeds + other.speeds)),
            unmeasured=list(dict.fromkeys(self.unmeasured + other.unmeasured)),
        )

    def _output_text(self) -> str:
        if not self.calls:
            return "output tokens: 0"
        ceiling = f"at most {self.output_tokens} (every answer at its max_tokens)"
        if self.expected_unknown == self.calls:
            return (
                f"output tokens: {ceiling}; what answers take is not known yet (it is learnt from the "
                "answer cache once this model has answered these prompts)"
            )
        part = (
            ""
            if not self.expected_unknown
            else f" for the {self.calls - self.expected_unknown} calls whose prompts this model answered before"
        )
        return f"output tokens: expected {self.output_tokens_expected}{part} (from the answer cache), {ceiling}"

    def _cost_text(self, high: float | None, low: float | None) -> str:
        if high is None:
            return "unknown (pass --price-in/--price-out)"
        if not self.calls or high == low:
            return f"${high:.4f}"
        if self.expected_unknown == self.calls:
            return f"at least ${low:.4f} (the input alone), at most ${high:.4f} (every answer at its max_tokens)"
        lower = "expected" if not self.expected_unknown else "expected, with nothing for the answers not known yet"
        return f"${low:.4f} {lower}; at most ${high:.4f} (every answer at its max_tokens)"

    def _time_text(self) -> str:
        if self.seconds_high is not None and self.calls:
            low, high = duration(self.seconds_low or 0.0), duration(self.seconds_high)
            span = high if low == high else f"{low} to {high}"
            answers = (
                "the answers' expected tokens"
                if not self.expected_unknown
                else "no answer tokens for answers not known yet"
            )
            return (
                f"time: {span}, one call at a time (the least with {answers} and each prompt's start shared "
                "with the one before kept by the server, as llama.cpp keeps it; the most with every prompt read "
                f"whole and every answer at its max_tokens); at {'; '.join(self.speeds)}"
            )
        if self.unmeasured and self.calls:
            return (
                f"time: not estimated: the speed of {', '.join(self.unmeasured)} at this endpoint was never "
                "measured ('ragassay ping' with the same endpoint and model measures it)"
            )
        return ""

    def text(self) -> str:
        lines = [
            f"dry run: nothing was called. {self.items} items ({self.done} already done, "
            f"{self.decided_without_call} decided without a call)",
            f"calls: {self.calls} ({self.cached} more answered from the cache, free"
            + (f"; {self.shared} more shared by items with identical inputs" if self.shared else "")
            + ")",
            f"input tokens: {self.input_tokens} ({self.tokenizer}); {self._output_text()}",
            f"cost: {self._cost_text(self.cost_usd, self.cost_usd_low)}",
        ]
        time_said = self._time_text()
        if time_said:
            lines.append(time_said)
        if self.batch:
            b = self.batch_plan()
            lines.append(
                f"batch backend: {b['rounds']} round(s), one per step; requests per round "
                f"{b['requests_per_round']} in {sum(b['batches_per_round'])} batch file(s); cost at the "
                f"Batch API price (half the live price): {self._cost_text(b['cost_usd'], b['cost_usd_low'])}"
            )
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)
