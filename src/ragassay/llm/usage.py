"""Token and call accounting per stage, and cost from a small dated price table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

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
# USD per million input tokens the provider served from its prompt cache (the usage's
# ``prompt_tokens_details.cached_tokens``), same date. A model not listed here, or priced by
# --price-in, pays the full input price for them: no discount is assumed that was not published.
CACHED_PRICES: dict[str, float] = {
    "gpt-4o": 1.25,
    "gpt-4o-mini": 0.075,
    "gpt-4.1": 0.50,
    "gpt-4.1-mini": 0.10,
    "gpt-4.1-nano": 0.025,
    "gpt-5": 0.125,
    "gpt-5-mini": 0.025,
    "gpt-5-nano": 0.005,
}
BATCH_DISCOUNT = 0.5  # the OpenAI Batch API charges half the live price, input and output


def _known(model: str | None, table: dict[str, Any]) -> str | None:
    if not model:
        return None
    name = model.split("/")[-1].lower()
    if name in table:
        return name
    for known in sorted(table, key=len, reverse=True):  # dated snapshots: gpt-4o-mini-2024-07-18
        if name.startswith(known + "-"):
            return known
    return None


def price_for(
    model: str | None, price_in: float | None = None, price_out: float | None = None
) -> tuple[float, float] | None:
    if price_in is not None or price_out is not None:
        return (price_in or 0.0, price_out or 0.0)
    name = _known(model, PRICES)
    return PRICES[name] if name else None


def cached_price_for(model: str | None, price_in: float | None = None, price_out: float | None = None) -> float | None:
    """The price of a cached input token: the table's for a listed model, else the input price."""
    price = price_for(model, price_in, price_out)
    return None if price is None else cached_price(model, price, price_in, price_out)


def cached_price(
    model: str | None, price: tuple[float, float], price_in: float | None = None, price_out: float | None = None
) -> float:
    """The price of a cached input token for a model whose ``price`` (input, output) is known."""
    if price_in is None and price_out is None:
        name = _known(model, CACHED_PRICES)
        if name:
            return CACHED_PRICES[name]
    return price[0]


@dataclass
class StageUsage:
    calls: int = 0  # HTTP requests sent (retries and re-asks included)
    cached: int = 0  # answers served from the cache
    retried: int = 0  # transport retries
    reasked: int = 0  # re-asks after an invalid answer
    failed: int = 0  # asks that ended in LLMError (not those a spending ceiling stopped: the stage says them)
    ok: int = 0  # asks that returned an answer (cached or not)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prompt cache
    batch_prompt_tokens: int = 0  # of prompt_tokens and completion_tokens, answered through the Batch API
    batch_completion_tokens: int = 0
    extracted: int = 0  # answers whose JSON was found inside prose or a fence (llm/reading.py)
    unmetered: int = 0  # replies that carried no token usage: their tokens, and so the cost, are unknown


@dataclass
class Usage:
    model: str | None = None
    price_in: float | None = None
    price_out: float | None = None
    stages: dict[str, StageUsage] = field(default_factory=dict)

    def stage(self, name: str) -> StageUsage:
        return self.stages.setdefault(name, StageUsage())

    def cost(self, stage: str | None = None) -> float | None:
        """USD: input at the input price but for tokens the provider's prompt cache served (at the
        cached price), output at the output price, and what came through the Batch API at half."""
        price = price_for(self.model, self.price_in, self.price_out)
        if price is None:
            return None
        items = [self.stages[stage]] if stage else list(self.stages.values())
        if any(s.unmetered for s in items):
            return None  # a reply without usage has tokens no one counted: not free, unknown
        cached = cached_price(self.model, price, self.price_in, self.price_out)
        total = 0.0
        for s in items:
            full = (
                (s.prompt_tokens - s.cached_tokens) * price[0]
                + s.cached_tokens * cached
                + s.completion_tokens * price[1]
            )
            batch_share = s.batch_prompt_tokens * price[0] + s.batch_completion_tokens * price[1]
            total += full - batch_share * (1 - BATCH_DISCOUNT)
        return total / 1e6

    def total(self) -> StageUsage:
        t = StageUsage()
        for s in self.stages.values():
            for f in t.__dataclass_fields__:
                setattr(t, f, getattr(t, f) + getattr(s, f))
        return t

    def to_dict(self) -> dict[str, Any]:
        """The numbers behind :meth:`summary`: totals, the cost (None without a price) and each stage."""
        return {
            **asdict(self.total()),
            "cost_usd": self.cost(),
            "stages": {name: asdict(s) for name, s in self.stages.items()},
        }

    def summary(self, price_flags: bool = True) -> str:
        """One line: answers, calls, tokens and cost. An unknown cost names the flags that give a
        price only when ``price_flags`` (the printing command takes --price-in/--price-out: the
        stages do, the demo does not)."""
        t = self.total()
        cost = self.cost()
        money = (
            f"${cost:.4f}"
            if cost is not None
            else f"cost unknown (the endpoint reported no token usage for {t.unmetered} calls)"
            if t.unmetered
            else "cost unknown (pass --price-in/--price-out)"
            if price_flags
            else f"cost unknown (no price is known for {self.model})"
        )
        cached = f" ({t.cached_tokens} from the provider's prompt cache)" if t.cached_tokens else ""
        batch = " (Batch API answers at half price)" if t.batch_prompt_tokens and cost is not None else ""
        extracted = f" ({t.extracted} read from JSON inside prose or a fence)" if t.extracted else ""
        return (
            f"{t.ok} answers ({t.cached} from cache){extracted}, {t.failed} failed; {t.calls} calls, "
            f"{t.retried} retries, {t.reasked} re-asks; tokens in {t.prompt_tokens}{cached}, out "
            f"{t.completion_tokens}; {money}{batch}"
        )


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token): used to pace rate limits, never to bill."""
    return max(1, (len(text) + 3) // 4)


def prompt_estimate(body: dict[str, Any]) -> int:
    """Tokens of a request's messages at 4 characters a token (English text runs 3.5 to 4.5; text
    in scripts with more tokens a character only raises the server's count above it)."""
    return sum(estimate_tokens(m.get("content") or "") for m in body.get("messages", ()))


APPROXIMATE = "approximate: 4 characters a token"
MIN_CALIBRATION = 10  # answers of a model in the cache before its own characters-per-token ratio is used
MIN_EXPECTED = 3  # answers of one prompt's schema before their mean length is the expected output


def request_chars(messages: list[dict[str, Any]], schema_text: str) -> int:
    """A request's size in characters, as estimates measure it (the messages' text and the schema)."""
    return sum(len(m.get("content") or "") for m in messages) + len(schema_text)


@dataclass
class TokenModel:
    """How a dry run turns a request into tokens for one model: the endpoint's own counts learnt from
    the cache (a characters-per-token ratio, and each prompt's mean answer length), else tiktoken's
    encoding for OpenAI models, else 4 characters a token; ``method`` says which."""

    method: str = APPROXIMATE
    exact: Callable[[str], int] | None = None
    chars_per_token: float = 4.0
    expected_out: dict[str, float] = field(default_factory=dict)  # schema name -> mean completion tokens
    answers: int = 0  # the cached answers the expected lengths come from

    def input_tokens(self, messages: list[dict[str, Any]], schema_text: str) -> int:
        if self.exact is not None:
            return sum(self.exact(m.get("content") or "") + 4 for m in messages) + self.exact(schema_text)
        return max(1, round(request_chars(messages, schema_text) / self.chars_per_token))

    def output_tokens(self, schema: str, ceiling: int) -> int | None:
        """The expected answer length of a prompt (None until answers of it are in the cache)."""
        mean = self.expected_out.get(schema)
        return None if mean is None else min(ceiling, round(mean))


def token_model(model: str | None, cache: Any = None, endpoint: str = "") -> TokenModel:
    """The :class:`TokenModel` of ``model`` at ``endpoint``, from what ``cache`` (a read-only
    :class:`~ragassay.llm.cache.Cache`, or None) holds of its answers."""
    n, tokens, chars, out = cache.calibration(model or "", endpoint) if cache is not None else (0, 0, 0, {})
    expected = {s: mean for s, (mean, k) in out.items() if k >= MIN_EXPECTED}
    answers = sum(k for s, (_, k) in out.items() if s in expected)
    if n >= MIN_CALIBRATION:
        ratio = chars / tokens
        return TokenModel(
            f"calibrated: {ratio:.2f} characters a token, from {n} answers of {model} in the cache",
            chars_per_token=ratio,
            expected_out=expected,
            answers=answers,
        )
    exact, name = exact_counter(model)
    if exact is not None:
        return TokenModel(f"tiktoken {name}", exact, expected_out=expected, answers=answers)
    return TokenModel(APPROXIMATE, expected_out=expected, answers=answers)


def exact_counter(model: str | None) -> tuple[Callable[[str], int] | None, str]:
    """tiktoken's encoding for ``model`` when tiktoken is installed and its encoding files can be
    loaded (they are downloaded once, so offline they may be missing); else (None, "")."""
    try:
        import tiktoken

        try:
            enc = tiktoken.encoding_for_model((model or "").split("/")[-1])
        except KeyError:
            enc = tiktoken.get_encoding("o200k_base")
        enc.encode("probe")
    except Exception:  # not installed, unknown, or its files cannot be fetched offline
        return None, ""
    return (lambda text: len(enc.encode(text, disallowed_special=()))), enc.name
