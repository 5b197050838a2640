"""``LLM.ask``: a validated pydantic answer from any OpenAI-compatible endpoint, or one LLMError.

The class composes its parts, each in its own module: ``transport.py`` sends a call and retries it
(the client per event loop, the calls in flight, back-off and deadlines), ``modes.py`` finds and
remembers the structured-output mode an endpoint takes, ``answers.py`` reads a reply into the
response model and re-asks when it is unusable, and ``send_limits.py`` refuses a request past a
spending ceiling or the server's context. This module holds what ties them together: the state of
one client, the answer cache, and the one public call.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .answers import AnswerReading
from .batch import BatchBox, Deferred, request_line
from .cache import Cache, endpoint_id
from .config import LLMConfig, redact
from .cut_prompts import ReadCounts
from .errors import BudgetReached, LLMError
from .failures import v1_base_url
from .modes import MODES, ModeProbe
from .rate_limit import RateLimiter
from .schemas import request_key, schema_of
from .send_limits import SendLimits
from .server_info import ServerInfo
from .transport import Transport
from .usage import Usage, request_chars

# names other callers have imported from here since before the split
__all__ = ["LLM", "MODES", "request_key", "schema_of", "v1_base_url"]

T = TypeVar("T", bound=BaseModel)


class LLM(AnswerReading, ModeProbe, Transport, SendLimits):
    """Ask an endpoint for typed answers. One instance per run; share it between stages."""

    def __init__(
        self,
        config: LLMConfig,
        client: Any = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        config.check(endpoint=client is None)
        self.config = config
        self._given_client = client
        # per event loop (several asyncio.run in turn, or threads each with its own loop): its client and
        # that client's closer, and its semaphore; entries of closed loops are dropped as new ones come
        self._own: dict[Any, list[Any]] = {}
        self.cache = Cache(config.cache_path) if config.use_cache and config.cache_path else None
        self.usage = Usage(config.model, config.price_in, config.price_out)
        self.mode = MODES[0]
        self.mode_reason = "the default: the endpoint has refused no response format"
        self._mode_unsaved = False  # a fallback found in this run, kept once a call in that mode succeeds
        self._mode_settled = False  # a call has been answered (or refused for another reason) in self.mode
        self._probing: dict[Any, asyncio.Lock] = {}
        remembered = self._remembered_mode()
        if remembered is not None:
            self.mode, why = remembered
            self.mode_reason = f"remembered from an earlier run: {why}"
            self._mode_settled = True
        self._sleep, self._clock = sleep, clock
        self._sems: dict[Any, asyncio.Semaphore] = {}
        self.answered = False  # any answer from the endpoint yet? Until then a dead endpoint fails fast
        self._schemas: dict[type, tuple[str, dict, bool, str]] = {}
        self._cooldown_until = 0.0
        self._limiter = RateLimiter(config.rpm, config.tpm, sleep, clock)
        self._secrets = config.secrets()
        self.in_flight = 0
        self.max_in_flight = 0
        self._reserved = 0.0  # USD the calls in flight may still cost (held against --max-cost)
        self.batch: BatchBox | None = None  # answers from batch files, and requests left for one
        self.last_found = "whole"  # where the last answer's JSON was found (llm/reading.py)
        self.context_limit: int | None = None  # the context the server said it has, in tokens
        self._reads = ReadCounts()  # the prompt tokens this server said it read, against the estimates sent
        self.server: ServerInfo | None = None  # what a server on this machine said of itself (asked once)
        self._asking: dict[Any, asyncio.Lock] = {}
        self.slots: int | None = None  # calls in flight the server serves, when it said and --concurrency did not

    # ------------------------------------------------------------------------------- public

    async def ask(
        self,
        messages: list[dict[str, str]],
        response_model: type[T],
        *,
        stage: str = "default",
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        sample: int = 0,
    ) -> T:
        """Return ``response_model`` parsed from the answer to ``messages``; raise :class:`LLMError`.

        ``sample`` > 0 asks again for an independent answer (it is part of the cache key, not sent).
        """
        params = self.params(max_tokens, temperature, seed, sample)
        key = self.request_key(messages, response_model, params)
        su = self.usage.stage(stage)
        if self.cache is not None:
            hit = self._cached(key)
            if hit is not None:
                try:
                    answer = response_model.model_validate(hit["answer"])
                except ValidationError:
                    pass  # the model class changed shape since: ask again
                else:
                    su.cached += 1
                    su.ok += 1
                    return answer
        if self.batch is not None:
            line = self.batch.results.get(key)
            if line is not None:
                return self._from_batch(line, key, response_model, su)
            if self.batch.collect:
                self.batch.requests[key] = request_line(key, self.request_body(list(messages), response_model, params))
                raise Deferred(key)
        try:
            answer, raw, usage_in, usage_out, first_try = await self._ask_until_valid(
                messages, response_model, params, su
            )
        except LLMError as e:
            # a ceiling stops asks before they are sent: the stage says how many are left
            if not isinstance(e, BudgetReached):
                su.failed += 1
            raise
        self._keep(key, answer, raw, usage_in, usage_out, messages if first_try else None, response_model)
        su.ok += 1
        return answer

    def _cached(self, key: str) -> dict | None:
        try:
            return self.cache.get(key) if self.cache is not None else None
        except sqlite3.Error as e:
            self._cache_failed(e)
            return None

    def _keep(
        self,
        key: str,
        answer: BaseModel,
        raw: str,
        tokens_in: int,
        tokens_out: int,
        messages: list[dict[str, str]] | None,
        response_model: type[BaseModel],
    ) -> None:
        """Store an answer in the cache. A cache that cannot be written (a full disk, a file made
        read-only mid-run) does not cost the answer: the stage journals its record before anything
        else, so the run goes on without the cache and a rerun asks for nothing already received.
        With ``messages`` (an answer on the first try, whose tokens are one request's) the request's
        size is kept too, so that dry runs can learn how this endpoint counts tokens."""
        if self.cache is None:
            return
        chars = None if messages is None else request_chars(messages, self._schema(response_model)[3])
        try:
            self.cache.put(
                key,
                self.config.model,
                answer.model_dump(mode="json"),
                raw,
                tokens_in,
                tokens_out,
                endpoint=endpoint_id(self.config.base_url),
                schema=response_model.__name__,
                prompt_chars=chars,
            )
        except sqlite3.Error as e:
            self._cache_failed(e)

    def _cache_failed(self, e: Exception) -> None:
        cache = self.cache
        if cache is None:
            return
        print(
            f"warning: the answer cache {cache.path} cannot be used any more ({e}); this run goes on without "
            "it (every answer is still kept in the output's journal)",
            file=sys.stderr,
        )
        try:
            cache.close()
        except sqlite3.Error:
            pass
        self.cache = None

    def params(
        self, max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None, sample: int = 0
    ) -> dict[str, Any]:
        """The answer-changing parameters of one call, as they enter the cache key."""
        params: dict[str, Any] = {
            "temperature": self.config.temperature if temperature is None else temperature,
            "max_tokens": max_tokens,
            "seed": seed,
        }
        if sample:
            params["sample"] = sample
        return params

    def request_key(
        self, messages: list[dict[str, str]], response_model: type[BaseModel], params: dict[str, Any]
    ) -> str:
        """The cache key of a call: pure, so a dry run finds the same key the run will use."""
        return request_key(self.config.model or "", messages, response_model, params, self.config.base_url)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _schema(self, model: type[BaseModel]) -> tuple[str, dict, bool, str]:
        """Built once per model class: the per-call CPU cost must stay that of the bare client."""
        cached = self._schemas.get(model)
        if cached is None:
            cached = self._schemas[model] = schema_of(model)
        return cached
