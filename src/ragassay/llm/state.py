"""The state one :class:`~ragassay.llm.client.LLM` keeps, declared once for the parts it is made of.

``LLM`` is composed of a transport, a mode probe, an answer reader and the send limits, each a
class in its own module; they share one client's state (its config, the mode, the calls in
flight) and call each other's methods. This base declares those attributes and methods, so that
each part can be read, and type-checked, on its own; ``LLM.__init__`` sets the attributes, and the
methods are defined by the part that owns them (the declarations exist for the type checker only).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .cache import Cache
from .config import LLMConfig
from .cut_prompts import ReadCounts
from .rate_limit import RateLimiter
from .server_info import ServerInfo
from .usage import Usage


class LLMState:
    """The attributes every part of ``LLM`` reads or sets (see ``LLM.__init__`` for their meaning)."""

    config: LLMConfig
    cache: Cache | None
    usage: Usage
    mode: str
    mode_reason: str
    answered: bool
    last_found: str
    context_limit: int | None
    server: ServerInfo | None
    slots: int | None
    in_flight: int
    max_in_flight: int
    _given_client: Any
    _own: dict[Any, list[Any]]
    _mode_unsaved: bool
    _mode_settled: bool
    _probing: dict[Any, asyncio.Lock]
    _asking: dict[Any, asyncio.Lock]
    _sems: dict[Any, asyncio.Semaphore]
    _sleep: Callable[[float], Awaitable[None]]
    _clock: Callable[[], float]
    _cooldown_until: float
    _limiter: RateLimiter
    _reserved: float
    _reads: ReadCounts

    if TYPE_CHECKING:  # defined by the part that owns each; declared here so the others can call them

        @property
        def client(self) -> Any: ...

        def call_timeout(self, body: dict[str, Any]) -> float | None: ...

        async def _closing_with_loop(self) -> None: ...

        async def _call(self, convo: Any, response_model: Any, params: Any, su: Any) -> Any: ...

        async def _send(self, convo: Any, response_model: Any, params: Any, su: Any) -> Any: ...

        def _not_a_completion(self, reply: Any) -> str | None: ...

        def _check_ceilings(self, worst: float = 0.0) -> None: ...

        def _worst_cost(self, body: dict[str, Any]) -> float: ...

        def _fits(self, body: dict[str, Any]) -> None: ...

        def _read_all(self, completion: Any, body: dict[str, Any]) -> None: ...

        def _keep(
            self,
            key: str,
            answer: BaseModel,
            raw: str,
            tokens_in: int,
            tokens_out: int,
            messages: list[dict[str, str]] | None,
            response_model: type[BaseModel],
        ) -> None: ...

        def _cache_failed(self, e: Exception) -> None: ...

        def _redact(self, text: str) -> str: ...

        def _schema(self, model: type[BaseModel]) -> tuple[str, dict, bool, str]: ...
