"""What may be sent at all: the spending ceilings (--max-calls, --max-cost) and the context a
server has said it holds. A request past either is an error and no call."""

from __future__ import annotations

from typing import Any

from .errors import LLMError
from .state import LLMState
from .usage import price_for, prompt_estimate


class SendLimits(LLMState):
    """The part of :class:`~ragassay.llm.client.LLM` that refuses a request before it is sent."""

    def _check_ceilings(self, worst: float = 0.0) -> None:
        """No request is sent past a spending ceiling: for the cost one, what is spent, what the calls
        in flight may still cost (``self._reserved``) and this call's ``worst`` must all fit under it."""
        c = self.config
        sent = self.usage.total().calls
        if c.max_calls is not None and sent >= c.max_calls:
            raise LLMError("budget", f"stopped at the --max-calls {c.max_calls} ceiling ({sent} requests sent)")
        if c.max_cost is not None:
            unmetered = self.usage.total().unmetered
            if unmetered:
                raise LLMError(
                    "budget",
                    f"stopped: --max-cost ${c.max_cost:g} cannot be held, the endpoint reports no "
                    f"token usage ({unmetered} replies without it); use --max-calls instead",
                )
            spent = self.usage.cost() or 0.0
            if spent >= c.max_cost or (worst and spent + self._reserved + worst > c.max_cost):
                raise LLMError(
                    "budget",
                    f"stopped at the --max-cost ${c.max_cost:g} ceiling (${spent:.4f} spent"
                    + (f", ${self._reserved:.4f} more in flight" if self._reserved else "")
                    + (f"; the next call could cost ${worst:.4f}" if worst and spent < c.max_cost else "")
                    + ")",
                )

    def _worst_cost(self, body: dict[str, Any]) -> float:
        """The most this request can cost (USD), counted high on purpose: its prompt at a token for every
        two bytes of UTF-8 (English runs near four characters a token, JSON and code fewer, CJK about a
        token for each three-byte character) plus a few for each message, and its whole answer budget,
        at the price; 0 without a price or a cost ceiling (nothing to hold then)."""
        if self.config.max_cost is None:
            return 0.0
        price = price_for(self.config.model, self.config.price_in, self.config.price_out)
        if price is None:
            return 0.0
        messages = body.get("messages", ())
        prompt = sum(len(str(m.get("content") or "").encode("utf-8")) // 2 + 4 for m in messages)
        return (prompt * price[0] + (body.get("max_tokens") or 0) * price[1]) / 1e6

    def _fits(self, body: dict[str, Any]) -> None:
        """Never send a prompt the server has said it cannot hold: once a reply named its context, a
        prompt estimated at well over it (a quarter more: the estimate is not the server's count) is
        an error naming both sizes, and no call."""
        if self.context_limit is None:
            return
        est = prompt_estimate(body)
        if est > 1.25 * self.context_limit:
            raise LLMError(
                "context",
                f"the prompt is about {est:,} tokens and the server's context is "
                f"{self.context_limit:,} (it said so in an earlier reply): not sent; give the server a "
                "longer context or send shorter prompts",
            )
