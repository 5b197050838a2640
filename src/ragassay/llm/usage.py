"""Token and call accounting per stage, and cost from a small dated price table."""

from __future__ import annotations

from dataclasses import dataclass, field

# USD per million tokens (input, output), list prices as published on 2026-11-01. Override with
# --price-in / --price-out; unknown models are priced only when you give prices.
PRICES_AS_OF = "2026-11-01"
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
}


def price_for(model: str | None, price_in: float | None = None,
              price_out: float | None = None) -> tuple[float, float] | None:
    if price_in is not None or price_out is not None:
        return (price_in or 0.0, price_out or 0.0)
    if not model:
        return None
    name = model.split("/")[-1].lower()
    if name in PRICES:
        return PRICES[name]
    for known in sorted(PRICES, key=len, reverse=True):  # dated snapshots: gpt-4o-mini-2024-07-18
        if name.startswith(known + "-"):
            return PRICES[known]
    return None


@dataclass
class StageUsage:
    calls: int = 0           # HTTP requests sent (retries and re-asks included)
    cached: int = 0          # answers served from the cache
    retried: int = 0         # transport retries
    reasked: int = 0         # re-asks after an invalid answer
    failed: int = 0          # asks that ended in LLMError
    ok: int = 0              # asks that returned an answer (cached or not)
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Usage:
    model: str | None = None
    price_in: float | None = None
    price_out: float | None = None
    stages: dict[str, StageUsage] = field(default_factory=dict)

    def stage(self, name: str) -> StageUsage:
        return self.stages.setdefault(name, StageUsage())

    def cost(self, stage: str | None = None) -> float | None:
        price = price_for(self.model, self.price_in, self.price_out)
        if price is None:
            return None
        items = [self.stages[stage]] if stage else list(self.stages.values())
        return sum(s.prompt_tokens * price[0] + s.completion_tokens * price[1] for s in items) / 1e6

    def total(self) -> StageUsage:
        t = StageUsage()
        for s in self.stages.values():
            for f in t.__dataclass_fields__:
                setattr(t, f, getattr(t, f) + getattr(s, f))
        return t

    def summary(self) -> str:
        t = self.total()
        cost = self.cost()
        money = f"${cost:.4f}" if cost is not None else "cost unknown (pass --price-in/--price-out)"
        return (f"{t.ok} answers ({t.cached} from cache), {t.failed} failed; {t.calls} calls, "
                f"{t.retried} retries, {t.reasked} re-asks; tokens in {t.prompt_tokens}, out "
                f"{t.completion_tokens}; {money}")


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token): used to pace rate limits, never to bill."""
    return max(1, (len(text) + 3) // 4)


APPROXIMATE = "approximate: 4 characters a token"


def token_counter(model: str | None):
    """(count(text) -> int, name of the method) for estimates.

    tiktoken's encoding for OpenAI models when tiktoken is installed and its encoding files can be
    loaded (they are downloaded once, so offline they may be missing); otherwise 4 characters a
    token, and the estimate says so.
    """
    try:
        import tiktoken
        try:
            enc = tiktoken.encoding_for_model((model or "").split("/")[-1])
        except KeyError:
            enc = tiktoken.get_encoding("o200k_base")
        enc.encode("probe")
    except Exception:  # not installed, unknown, or its files cannot be fetched offline
        return estimate_tokens, APPROXIMATE
    return (lambda text: len(enc.encode(text, disallowed_special=()))), f"tiktoken {enc.name}"
