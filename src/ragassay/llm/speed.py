"""How fast a model reads prompts and writes answers, and how long a run will take at that speed.

``ping`` measures it on servers people run themselves (llm/server_info.py's ``asks``), where a run
can take hours: three calls, one at a time — the connectivity check itself, the same with a long
passage to read before it, and the same with a longer word to write back — give three equations
``time = per call + prompt tokens / reading speed + answer tokens / writing speed``, solved for the
three speeds. The figures are kept in the answer cache beside the structured-output mode, and a dry
run turns its token counts into a time range from them. Nothing here decides a record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

# the passage read in the second call: about 250 tokens of plain text (a few seconds on a small model on
# a laptop) that changes with every ping, so that no server serves it from a cache of an earlier prompt's start
PASSAGE_SENTENCES = 10
ANSWER_REPEATS = 12  # the longer word written back in the third call: the word this many times
# the least time the longer calls must take beyond the shortest for a speed to be read from them: a
# server that answers at once (a stub, a fast GPU) shows only its timing noise, which a busy machine
# can make tens of milliseconds
MIN_EXTRA_SECONDS = 0.25


@dataclass(frozen=True)
class Speed:
    """One call at a time: prompt tokens read a second, answer tokens written a second, and the
    seconds every call takes besides (the request, the template, the first token's wait)."""

    prompt_per_second: float
    answer_per_second: float
    seconds_per_call: float
    measured: float = field(default_factory=time.time)  # when (Unix time)

    def seconds(self, calls: int, prompt_tokens: int, answer_tokens: int) -> float:
        """The time ``calls`` calls take one after another with these many tokens in all."""
        return (
            calls * self.seconds_per_call
            + prompt_tokens / self.prompt_per_second
            + answer_tokens / self.answer_per_second
        )

    def summary(self) -> str:
        day = time.strftime("%Y-%m-%d", time.localtime(self.measured))
        return (
            f"{self.prompt_per_second:,.0f} prompt and {self.answer_per_second:,.1f} answer tokens a second, "
            f"{self.seconds_per_call:.1f} s a call besides (measured by ping on {day}, one call at a time)"
        )


@dataclass(frozen=True)
class Timed:
    """One measuring call: its prompt and answer tokens (the server's count, else an estimate) and seconds."""

    prompt_tokens: int
    answer_tokens: int
    seconds: float


def passage(seed: int) -> str:
    """A text to read that no earlier prompt began with: numbered sentences carrying ``seed``."""
    words = ("river", "lamp", "orchard", "copper", "harbour", "violin", "glacier", "meadow", "lantern", "quarry")
    return " ".join(
        f"Note {seed}-{i}: the {words[i % 10]} by the {words[(i * 7 + seed) % 10]} was counted "
        f"{(seed + i * 13) % 97} times."
        for i in range(PASSAGE_SENTENCES)
    )


def solve(calls: list[Timed]) -> Speed | None:
    """The three speeds from three or more timed calls (least squares, with every speed positive);
    None when the calls cannot tell them apart (equal sizes, a faster call for more tokens)."""
    if len(calls) < 3:
        return None
    base = min(calls, key=lambda c: (c.prompt_tokens + c.answer_tokens, c.seconds))
    if any(c is not base and c.seconds - base.seconds < MIN_EXTRA_SECONDS for c in calls):
        return None  # more to read or write took no measurable time more: noise would decide the speeds
    a = np.array([[1.0, c.prompt_tokens, c.answer_tokens] for c in calls])
    t = np.array([c.seconds for c in calls])
    if np.linalg.matrix_rank(a) < 3:
        return None
    (per_call, per_prompt, per_answer), *_ = np.linalg.lstsq(a, t, rcond=None)
    if per_prompt <= 0 or per_answer <= 0:
        return None  # noise larger than what the sizes tell: no figure rather than a wrong one
    return Speed(
        prompt_per_second=round(float(1 / per_prompt), 1),
        answer_per_second=round(float(1 / per_answer), 2),
        seconds_per_call=round(max(0.0, float(per_call)), 2),
    )


def duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``3.4 h``: as precise as an estimate deserves."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
