"""Sending a call: the client per event loop (httpx or aiohttp, chosen by the config), the calls in
flight (one semaphore per loop, or the slots a local server said it serves), retries and back-off,
the per-call deadline, and the error a failed call becomes.

Retries (tenacity) cover 429 (honouring Retry-After), 408/409/5xx, timeouts and connection errors,
with jittered exponential back-off, an attempt limit and a per-call deadline. The openai client's
own retries are off, so retries never stack.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, stop_after_delay

from . import server_info
from .config import make_client
from .errors import LLMError
from .failures import (
    error_detail,
    named_context,
    never_connected,
    retry_after,
    root_cause,
    timed_out,
    transient,
    v1_base_url,
)
from .openai_calls import openai
from .server_info import ServerInfo
from .state import LLMState
from .usage import estimate_tokens, prompt_estimate


class Transport(LLMState):
    """The part of :class:`~ragassay.llm.client.LLM` that sends calls and retries them."""

    @property
    def client(self) -> Any:
        """The ``AsyncOpenAI`` client: the one given, or one made for the running event loop.

        A connection pool belongs to the loop that opened it (aiohttp's refuses any other), and one
        LLM serves several ``asyncio.run`` calls (stages in turn, the demo, notebooks). So a client is
        made per loop and closed inside that loop before it ends: an async generator that closes it
        is registered with the loop, and ``asyncio.run`` finalizes async generators while the loop
        still runs (``shutdown_asyncgens``). :meth:`aclose` closes it earlier."""
        if self._given_client is not None:
            return self._given_client
        try:
            loop: Any = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        own = self._own.get(loop)
        if own is None:
            for gone in [k for k in list(self._own) if k is not None and k.is_closed()]:
                self._own.pop(gone, None)
            own = self._own[loop] = [make_client(self.config), None]
        return own[0]

    async def _closing_with_loop(self) -> None:
        """Register the running loop's client's closer with that loop (see :attr:`client`)."""
        own = self._own.get(asyncio.get_running_loop())
        if own is None or own[1] is not None:
            return
        client = own[0]

        async def closer():
            try:
                yield
            finally:
                await client.close()

        gen = closer()
        own[1] = gen
        await gen.__anext__()  # started: the loop now finalizes it when it shuts down

    async def aclose(self) -> None:
        """Close the connections of the running loop's client now (the cache stays open)."""
        own = self._own.pop(asyncio.get_running_loop(), None)
        if own is not None and own[1] is not None:
            await own[1].aclose()
        elif own is not None:
            await own[0].close()

    async def _ask_server(self) -> None:
        """Once per run, before the first call: what a server on this machine says it can hold and
        serve (llm/server_info.py). Its context keeps prompts that cannot fit from being sent; its
        slots are the calls in flight unless --concurrency was given."""
        if self.server is not None:
            return
        loop = asyncio.get_running_loop()
        lock = self._asking.setdefault(loop, asyncio.Lock())
        async with lock:
            if self.server is not None:
                return
            info = ServerInfo()
            base_url = self.config.base_url
            if self._given_client is None and base_url and server_info.asks(base_url):
                headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else None
                info = await server_info.discover(base_url, self.config.model, headers)
            if info.context is not None:
                known = self.context_limit
                self.context_limit = info.context if known is None else min(known, info.context)
            if info.slots is not None and "concurrency" not in self.config.given and not self._sems.get(loop):
                self.slots = info.slots
            self.server = info

    async def known_context(self) -> int | None:
        """The context in tokens the server has said it holds (asked once, on a server of this
        machine or its network), or None: a stage sizes what it sends to fit it."""
        await self._ask_server()
        return self.context_limit

    def call_timeout(self, body: dict[str, Any]) -> float | None:
        """Seconds to wait for a local server's answer: a slow model on this machine reads ~20
        prompt tokens a second and writes ~4 at worst, so the wait grows with the prompt and the
        answer's budget (never below --timeout); None (the client's own) elsewhere or when
        --timeout was given."""
        if "timeout" in self.config.given or not server_info.asks(self.config.base_url):
            return None
        budget = body.get("max_tokens") or 512
        return max(self.config.timeout, prompt_estimate(body) / 20 + budget / 4)

    async def _call(self, convo, response_model, params, su):
        await self._ask_server()
        est = sum(estimate_tokens(m.get("content") or "") for m in convo) + (params["max_tokens"] or 300)
        attempt_no = 0
        started: list[float] = []  # when the first attempt got its slot: the deadline counts from there

        async def once():
            nonlocal attempt_no
            attempt_no += 1
            if attempt_no > 1:
                su.retried += 1
            async with self._semaphore():
                # checked once a slot is free, not before: calls queued behind the slots when 429s came
                # must wait out the cooldown too, not each send one more request into it
                wait = self._cooldown_until - self._clock()
                if wait > 0:
                    await self._sleep(wait)
                await self._limiter.acquire(est)
                if not started:
                    started.append(time.monotonic())
                # --timeout bounds each wait for bytes; this bounds the whole call (a server that trickles
                # its answer, or never reads a large request, which aiohttp has no write timeout for)
                left = max(1.0, self.config.deadline - (time.monotonic() - started[0]))
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    return await asyncio.wait_for(self._send(convo, response_model, params, su), left)
                except asyncio.TimeoutError:
                    raise LLMError(
                        "transport",
                        f"no complete answer from {self.config.public_base_url()} within the "
                        f"{self.config.deadline:g} s a call may take ({attempt_no} attempt(s)); the server "
                        "may be overloaded or not reading the request",
                        attempt_no,
                    ) from None
                finally:
                    self.in_flight -= 1

        def dead_endpoint(retry_state) -> bool:
            # Before the endpoint has answered once, a refused connection is not retried at length
            # (a wrong URL or a server that is down is reported in seconds, not minutes), and a
            # call that got no answer within the timeout is not tried again (a port that accepts
            # and never answers costs one timeout, not the whole deadline)
            exc = retry_state.outcome.exception() if retry_state.outcome else None
            if self.answered:
                return False
            if timed_out(exc):
                return True
            return retry_state.attempt_number >= 2 and isinstance(exc, openai.APIConnectionError)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_attempts) | stop_after_delay(self.config.deadline) | dead_endpoint,
            wait=self._wait,
            retry=retry_if_exception(transient),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            return await retrying(once)
        except openai.APIStatusError as e:
            raise self._status_error(e, attempt_no) from None
        except openai.APIConnectionError as e:
            if timed_out(e):
                raise LLMError(
                    "transport",
                    f"no answer from {self.config.public_base_url()} within "
                    f"{self.config.timeout:g} s ({attempt_no} attempt(s)): is the server up and serving "
                    "this API? A slow model may need a longer --timeout",
                    attempt_no,
                ) from None
            what = "could not connect to" if never_connected(e) else "the connection broke off with"
            raise LLMError(
                "transport",
                f"{what} {self.config.public_base_url()} after {attempt_no} attempt(s): {self._redact(root_cause(e))}",
                attempt_no,
            ) from None

    def _not_a_completion(self, reply: Any) -> str | None:
        """Why a reply is not a chat completion (an HTML page, plain text, another JSON shape), in
        one line naming the endpoint; None when it is one. A server that is not the API answers
        every call this way, so it is a transport fault: the run stops early and says so."""
        if isinstance(getattr(reply, "choices", None), list):
            return None
        where = f"the endpoint at {self.config.public_base_url()}"
        if isinstance(reply, (str, bytes)):
            text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply
            head = text.lstrip()[:300].lower()
            if head.startswith(("<!doctype html", "<html")) or "<body" in head or "<head" in head:
                what = "an HTML page"
            else:
                snippet = " ".join(text.split())[:80]
                what = f"plain text ({snippet!r})" if snippet else "an empty body"
        else:
            what = "JSON without a 'choices' list"
        return (
            f"{where} answered HTTP 200 with {what}, not a chat completion; is the base URL the API's root "
            "(it usually ends in /v1)?"
        )

    def _semaphore(self) -> asyncio.Semaphore:
        """One semaphore per event loop: the same LLM serves several ``asyncio.run`` calls (stages
        run one after another, notebooks) without 'bound to a different event loop'; two threads
        using one LLM at once each get ``concurrency`` calls in flight."""
        loop = asyncio.get_running_loop()
        sem = self._sems.get(loop)
        if sem is None:
            for gone in [k for k in list(self._sems) if k.is_closed()]:
                self._sems.pop(gone, None)
            sem = self._sems[loop] = asyncio.Semaphore(self.slots or self.config.concurrency)
        return sem

    def _wait(self, retry_state) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        n = retry_state.attempt_number
        backoff = min(self.config.max_wait, 0.5 * 2 ** (n - 1))
        wait = random.uniform(backoff / 2, backoff)  # jittered exponential
        if isinstance(exc, openai.RateLimitError):
            hinted = retry_after(exc)
            wait = min(self.config.max_wait, hinted if hinted is not None else wait * 2)
            # everyone waits while 429s keep coming, not just this call
            self._cooldown_until = max(self._cooldown_until, self._clock() + wait)
        return wait

    def _status_error(self, e: openai.APIStatusError, attempts: int) -> LLMError:
        detail = self._redact(error_detail(e))
        if e.status_code in (401, 403):
            return LLMError(
                "auth",
                f"the endpoint refused the credentials (HTTP {e.status_code}): {detail}. "
                "Check OPENAI_API_KEY / --base-url",
                attempts,
            )
        if transient(e):
            return LLMError("transport", f"HTTP {e.status_code} after {attempts} attempt(s): {detail}", attempts)
        better = v1_base_url(self.config.base_url) if e.status_code in (404, 405) else None
        if better:  # no such path: most often a base URL without the API's /v1
            return LLMError(
                "request",
                f"{self.config.public_base_url()} answered {e.status_code} for "
                "/chat/completions: "
                f"OpenAI-compatible servers usually serve under /v1; try --base-url {self._redact(better)} "
                f"(the server said: {detail})",
                attempts,
            )
        limit = named_context(f"{e} {detail}") if e.status_code in (400, 413, 422) else None
        if limit is not None:  # vLLM's and llama-server's "maximum context length is N tokens"
            self.context_limit = limit
            return LLMError(
                "context",
                f"the prompt does not fit the server's context of {limit} tokens (HTTP "
                f"{e.status_code}: {detail}); give the server a longer context or send shorter prompts",
                attempts,
            )
        return LLMError("request", f"the endpoint rejected the request (HTTP {e.status_code}): {detail}", attempts)
