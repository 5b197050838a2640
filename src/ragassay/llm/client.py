"""``LLM.ask``: a validated pydantic answer from any OpenAI-compatible endpoint, or one LLMError.

Two loops, each bounded and each about one thing:
- transport (tenacity): 429 (honouring Retry-After), 408/409/5xx, timeouts and connection
  errors, with jittered exponential back-off, an attempt limit and a per-call deadline. The openai
  client's own retries are off, so retries never stack.
- answer: JSON that does not parse, breaks the schema, a refusal or a cut-off answer gets at most
  ``max_reasks`` re-asks that show the model what was wrong.

Structured outputs use a JSON-schema ``response_format``; an endpoint that rejects it is
remembered and served with JSON mode (then plain instructions) plus validation.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sqlite3
import time
from collections.abc import Awaitable, Callable
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, stop_after_delay

from . import server_info
from .batch import BatchBox, Deferred, failure_of, request_line
from .cache import Cache, cache_key, endpoint_id
from .config import LLMConfig, make_client, redact
from .cut_prompts import ReadCounts
from .errors import BudgetReached, ContextExceeded, LLMError, PromptCut
from .reading import read_answer
from .server_info import ServerInfo
from .usage import Usage, estimate_tokens, price_for, request_chars

T = TypeVar("T", bound=BaseModel)


class _Deferred:
    """``openai``, imported on first use: the package takes most of a second to import, and a
    process that sends nothing (a dry run, a rerun of finished work, a rules-only check) never
    needs it."""

    def __getattr__(self, name: str) -> Any:
        import openai as module
        return getattr(module, name)


openai: Any = _Deferred()

# Structured-output modes, best first: the JSON schema as response_format (OpenAI, vLLM, recent
# llama.cpp); JSON mode carrying the schema, which llama.cpp's and llama-cpp-python's servers turn
# into a grammar; plain JSON mode; the schema in the instructions alone. Every mode but the first
# also puts the schema in the instructions, and every answer is validated whatever the mode.
MODES = ("json_schema", "json_object_schema", "json_object", "prompt")
# words of a refusal that is about the response format (any status: llama-cpp-python answers a
# json_schema response_format with HTTP 500, others 400, 422 or 501)
_FORMAT_WORDS = re.compile(r"response_format|response format|json_schema|json_object|json schema|grammar|structured"
                           r"|\bschema\b|'text' or 'json_object'", re.I)
# a refusal for length, in each server's words: OpenAI, vLLM and llama-cpp-python ("maximum context length is N
# tokens"), llama-server ("exceeds the available context size (N tokens)"), SGLang ("longer than the model's
# context length (N tokens)"), LM Studio ("context length of only N tokens"), TGI ("`inputs` tokens +
# `max_new_tokens` must be <= N", "`inputs` must have less than N tokens"; TGI's "`max_new_tokens` must be <= N"
# alone is about the answer's budget, not the context, and is not one)
_CONTEXT_WORDS = re.compile(r"context length|context window|maximum context|too many tokens|prompt is too long"
                            r"|exceeds the (?:model's )?(?:maximum|context|available context)|context size"
                            r"|inputs`? tokens \+ `?max_new_tokens`? must be <=|inputs`? must have less than \d+ tokens",
                            re.I)
FORMAT_REFUSAL_STATUSES = (400, 422, 500, 501)


class LLM:
    """Ask an endpoint for typed answers. One instance per run; share it between stages."""

    def __init__(self, config: LLMConfig, client: Any = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic):
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

    async def ask(self, messages: list[dict[str, str]], response_model: type[T], *, stage: str = "default",
                  max_tokens: int | None = None, temperature: float | None = None,
                  seed: int | None = None, sample: int = 0) -> T:
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
                messages, response_model, params, su)
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

    def _keep(self, key: str, answer: BaseModel, raw: str, tokens_in: int, tokens_out: int,
              messages: list[dict[str, str]] | None, response_model: type[BaseModel]) -> None:
        """Store an answer in the cache. A cache that cannot be written (a full disk, a file made
        read-only mid-run) does not cost the answer: the stage journals its record before anything
        else, so the run goes on without the cache and a rerun asks for nothing already received.
        With ``messages`` (an answer on the first try, whose tokens are one request's) the request's
        size is kept too, so that dry runs can learn how this endpoint counts tokens."""
        if self.cache is None:
            return
        chars = None if messages is None else request_chars(messages, self._schema(response_model)[3])
        try:
            self.cache.put(key, self.config.model, answer.model_dump(mode="json"), raw, tokens_in, tokens_out,
                           endpoint=endpoint_id(self.config.base_url), schema=response_model.__name__,
                           prompt_chars=chars)
        except sqlite3.Error as e:
            self._cache_failed(e)

    def _remembered_mode(self) -> tuple[str, str] | None:
        """The mode an earlier run found this endpoint and model to take (kept in the answer cache)."""
        if self.cache is None or not self.config.model:
            return None
        try:
            found = self.cache.get_mode(endpoint_id(self.config.base_url), self.config.model)
        except sqlite3.Error:
            return None
        return found if found is not None and found[0] in MODES else None

    def _remember_mode(self) -> None:
        self._mode_unsaved = False
        if self.cache is None or not self.config.model:
            return
        try:
            self.cache.put_mode(endpoint_id(self.config.base_url), self.config.model, self.mode, self.mode_reason)
        except sqlite3.Error as e:
            self._cache_failed(e)

    def _cache_failed(self, e: Exception) -> None:
        import sys
        print(f"warning: the answer cache {self.cache.path} cannot be used any more ({e}); this run goes on without "
              "it (every answer is still kept in the output's journal)", file=sys.stderr)
        try:
            self.cache.close()
        except sqlite3.Error:
            pass
        self.cache = None

    def params(self, max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None,
               sample: int = 0) -> dict[str, Any]:
        """The answer-changing parameters of one call, as they enter the cache key."""
        params: dict[str, Any] = {"temperature": self.config.temperature if temperature is None else temperature,
                                  "max_tokens": max_tokens, "seed": seed}
        if sample:
            params["sample"] = sample
        return params

    def request_key(self, messages: list[dict[str, str]], response_model: type[BaseModel],
                    params: dict[str, Any]) -> str:
        """The cache key of a call: pure, so a dry run finds the same key the run will use."""
        return request_key(self.config.model or "", messages, response_model, params, self.config.base_url)

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

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def request_body(self, convo: list[dict[str, str]], response_model: type[BaseModel], params: dict[str, Any],
                     mode: str | None = None) -> dict[str, Any]:
        """The exact chat request of a call: what the live path sends and a batch line carries."""
        name, schema, strict, schema_text = self._schema(response_model)
        mode = mode or self.mode
        messages = list(convo)
        if mode != "json_schema":  # the schema goes into the instructions too
            messages = [{"role": "system", "content": "Reply with one JSON object, and nothing else, "
                         f"that follows this JSON schema:\n{schema_text}"}] + messages
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": params["temperature"]}
        if params["max_tokens"] is not None:
            body["max_tokens"] = params["max_tokens"]
        if params["seed"] is not None:
            body["seed"] = params["seed"]
        if mode == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": name, "schema": schema, "strict": strict}}
        elif mode == "json_object_schema":  # llama.cpp's servers make a grammar of the schema
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _from_batch(self, line: dict, key: str, response_model: type[T], su: Any) -> T:
        """An answer read from a batch output line: parsed exactly as a live answer, then cached."""
        from openai.types.chat import ChatCompletion
        why = failure_of(line)
        if why is not None:
            su.failed += 1
            raise LLMError("batch", f"the batch returned no answer for this call ({why})")
        try:
            completion = ChatCompletion.model_validate(line["response"]["body"])
        except ValidationError as e:
            su.failed += 1
            raise LLMError("batch", f"the batch answer is not a chat completion ({e.errors()[0]['msg']})") from None
        usage = completion.usage
        tokens_in, tokens_out = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
        su.calls += 1
        su.prompt_tokens += tokens_in
        su.completion_tokens += tokens_out
        su.cached_tokens += cached_tokens(usage, tokens_in)
        su.batch_prompt_tokens += tokens_in  # priced at the Batch API's rate
        su.batch_completion_tokens += tokens_out
        if not completion.choices:
            su.failed += 1
            raise LLMError("invalid", "the batch answer has no choices")
        self.last_found = "whole"
        kind, problem, answer = self._parse(completion.choices[0], response_model)
        su.extracted += answer is not None and self.last_found != "whole"
        if answer is None:  # no re-ask in a batch: the record says why, a live rerun can ask again
            su.failed += 1
            raise LLMError(kind, f"the batch answer is unusable: {problem}")
        self._keep(key, answer, _text_of(getattr(completion.choices[0].message, "content", None)) or "", tokens_in, tokens_out,
                   None, response_model)
        su.ok += 1
        return answer

    # ------------------------------------------------------------------------ answer loop

    async def _ask_until_valid(self, messages, response_model, params, su):
        convo = list(messages)
        problem_kind, problem = "invalid", ""
        total_in = total_out = 0
        replies: list[str] = []  # every unusable reply's text: one that comes back byte for byte is not re-asked
        tries = 0
        for round_no in range(self.config.max_reasks + 1):
            if round_no:
                su.reasked += 1
            completion = await self._call(convo, response_model, params, su)
            usage = getattr(completion, "usage", None)
            if usage is None or getattr(usage, "prompt_tokens", None) is None:
                su.unmetered += 1
            tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
            tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
            su.prompt_tokens += tokens_in
            su.completion_tokens += tokens_out
            su.cached_tokens += cached_tokens(usage, tokens_in)
            total_in, total_out = total_in + tokens_in, total_out + tokens_out
            if not completion.choices:
                problem_kind, problem, content = "invalid", "the endpoint returned no choices", ""
            else:
                choice = completion.choices[0]
                content = _text_of(getattr(getattr(choice, "message", None), "content", None)) or ""
                self.last_found = "whole"
                problem_kind, problem, answer = self._parse(choice, response_model)
                if answer is not None:
                    su.extracted += self.last_found != "whole"
                    return answer, content, total_in, total_out, round_no == 0
            tries = round_no + 1
            if content and content in replies:  # the same bytes again (temperature 0): a re-ask would too
                break
            replies.append(content)
            convo = convo + [{"role": "assistant", "content": content},
                             {"role": "user", "content": _reask_text(problem_kind, problem)}]
        again = " (the last reply repeated an earlier one byte for byte: not asked again)" \
            if tries < self.config.max_reasks + 1 else ""
        raise LLMError(problem_kind, f"no usable answer after {tries} tries{again}: {problem}", attempts=tries)

    def _parse(self, choice: Any, response_model: type[T]) -> tuple[str, str, T | None]:
        message = getattr(choice, "message", None)
        if message is None:
            return "invalid", "the answer had no message", None
        refusal = getattr(message, "refusal", None)
        if refusal:
            return "refusal", f"the model refused: {str(refusal)[:300]}", None
        if choice.finish_reason == "length":
            return "truncated", "the answer was cut off at the token limit (finish_reason=length)", None
        content = _text_of(message.content)
        if content is None:
            return "invalid", f"the answer's content is not text ({type(message.content).__name__})", None
        content = content.strip()
        if not content:
            return "invalid", "the answer was empty", None
        answer, how, problem = read_answer(content, response_model, clean=_no_lone_surrogates)
        if answer is None:
            return "invalid", problem, None
        self.last_found = how  # read by the caller at once (no await between): counts answers found in prose
        return "invalid", "", answer

    # ---------------------------------------------------------------------- transport loop

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
            if self._given_client is None and server_info.asks(self.config.base_url):
                headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else None
                info = await server_info.discover(self.config.base_url, self.config.model, headers)
            if info.context is not None:
                self.context_limit = info.context if self.context_limit is None else min(self.context_limit, info.context)
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
        return max(self.config.timeout, _prompt_estimate(body) / 20 + budget / 4)

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
                    raise LLMError("transport", f"no complete answer from {self.config.public_base_url()} within the "
                                   f"{self.config.deadline:g} s a call may take ({attempt_no} attempt(s)); the server "
                                   "may be overloaded or not reading the request", attempt_no) from None
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
            if _timed_out(exc):
                return True
            return retry_state.attempt_number >= 2 and isinstance(exc, openai.APIConnectionError)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_attempts) | stop_after_delay(self.config.deadline) | dead_endpoint,
            wait=self._wait, retry=retry_if_exception(_transient), sleep=self._sleep, reraise=True)
        try:
            return await retrying(once)
        except openai.APIStatusError as e:
            raise self._status_error(e, attempt_no) from None
        except openai.APIConnectionError as e:
            if _timed_out(e):
                raise LLMError("transport", f"no answer from {self.config.public_base_url()} within "
                               f"{self.config.timeout:g} s ({attempt_no} attempt(s)): is the server up and serving "
                               "this API? A slow model may need a longer --timeout", attempt_no) from None
            what = "could not connect to" if _never_connected(e) else "the connection broke off with"
            raise LLMError("transport", f"{what} {self.config.public_base_url()} after {attempt_no} "
                           f"attempt(s): {self._redact(_root_cause(e))}", attempt_no) from None

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
                raise LLMError("budget", f"stopped: --max-cost ${c.max_cost:g} cannot be held, the endpoint reports no "
                               f"token usage ({unmetered} replies without it); use --max-calls instead")
            spent = self.usage.cost() or 0.0
            if spent >= c.max_cost or (worst and spent + self._reserved + worst > c.max_cost):
                raise LLMError("budget", f"stopped at the --max-cost ${c.max_cost:g} ceiling (${spent:.4f} spent"
                               + (f", ${self._reserved:.4f} more in flight" if self._reserved else "")
                               + (f"; the next call could cost ${worst:.4f}" if worst and spent < c.max_cost else "")
                               + ")")

    async def _send(self, convo, response_model, params, su):
        """Send one call, in the mode the endpoint takes. Until the endpoint has answered once (or
        refused for a reason other than the format), calls go one at a time: the first finds the mode
        and the others then start with it, so a server that refuses json_schema refuses it once, not
        once for every call in flight."""
        if self._mode_settled:
            return await self._send_in_mode(convo, response_model, params, su)
        lock = self._probing.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            if not self._mode_settled:
                try:
                    completion = await self._send_in_mode(convo, response_model, params, su)
                except openai.APIStatusError:
                    self._mode_settled = True  # refused for another reason (the format was settled on the way)
                    raise
                except LLMError as e:
                    self._mode_settled = isinstance(e, (PromptCut, ContextExceeded))  # an answer came: its mode works
                    raise
                self._mode_settled = True
                return completion
        # settled while this call waited: sent outside the lock, or every call queued behind the first one would
        # go one at a time (128 calls in flight ran at 6% of ideal against a 200 ms endpoint)
        return await self._send_in_mode(convo, response_model, params, su)

    async def _send_in_mode(self, convo, response_model, params, su):
        while True:
            mode = self.mode
            body = self.request_body(convo, response_model, params, mode)
            self._fits(body)
            worst = self._worst_cost(body)
            self._check_ceilings(worst)
            su.calls += 1
            client = self.client
            if self._given_client is None:
                await self._closing_with_loop()
            self._reserved += worst  # held while the call is in flight: calls at once cannot pass the ceiling together
            try:
                try:
                    completion = await _create(client, body, self.call_timeout(body))
                except (json.JSONDecodeError, UnicodeDecodeError) as e:  # a JSON content type over a body that is not
                    raise LLMError("transport", f"the endpoint at {self.config.public_base_url()} answered with a body "
                                   f"that is not JSON ({type(e).__name__}: {str(e)[:80]}), not a chat completion; "
                                   "is the base URL the API's root (it usually ends in /v1)?") from None
                not_completion = self._not_a_completion(completion)
                if not_completion:
                    raise LLMError("transport", not_completion)
                self.answered = True
                self._read_all(completion, body)
                if self._mode_unsaved and mode == self.mode:
                    self._remember_mode()
                return completion
            except openai.APIStatusError as e:
                if mode == MODES[-1] or not _refuses_format(e):
                    raise
                # the endpoint cannot do this mode, whatever status it chose to say so: every later call
                # (and, once one succeeds, later runs) takes the next mode; each mode is tried at most once
                if self.mode == mode:
                    self.mode = MODES[MODES.index(mode) + 1]
                    self.mode_reason = (f"{mode} was refused (HTTP {e.status_code}: "
                                        f"{self._redact(_error_detail(e))[:160]})")
                    self._mode_unsaved = True
                continue
            finally:
                self._reserved -= worst  # counted now in the usage (or the call failed)

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
        return (f"{where} answered HTTP 200 with {what}, not a chat completion; is the base URL the API's root "
                "(it usually ends in /v1)?")

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
            hinted = _retry_after(exc)
            wait = min(self.config.max_wait, hinted if hinted is not None else wait * 2)
            # everyone waits while 429s keep coming, not just this call
            self._cooldown_until = max(self._cooldown_until, self._clock() + wait)
        return wait

    def _status_error(self, e: openai.APIStatusError, attempts: int) -> LLMError:
        detail = self._redact(_error_detail(e))
        if e.status_code in (401, 403):
            return LLMError("auth", f"the endpoint refused the credentials (HTTP {e.status_code}): {detail}. "
                            "Check OPENAI_API_KEY / --base-url", attempts)
        if _transient(e):
            return LLMError("transport", f"HTTP {e.status_code} after {attempts} attempt(s): {detail}", attempts)
        better = v1_base_url(self.config.base_url) if e.status_code in (404, 405) else None
        if better:  # no such path: most often a base URL without the API's /v1
            return LLMError("request", f"{self.config.public_base_url()} answered {e.status_code} for /chat/completions: "
                            f"OpenAI-compatible servers usually serve under /v1; try --base-url {self._redact(better)} "
                            f"(the server said: {detail})", attempts)
        limit = _context_limit(f"{e} {detail}") if e.status_code in (400, 413, 422) else None
        if limit is not None:  # vLLM's and llama-server's "maximum context length is N tokens"
            self.context_limit = limit
            return LLMError("context", f"the prompt does not fit the server's context of {limit} tokens (HTTP "
                            f"{e.status_code}: {detail}); give the server a longer context or send shorter prompts", attempts)
        return LLMError("request", f"the endpoint rejected the request (HTTP {e.status_code}): {detail}", attempts)

    def _fits(self, body: dict[str, Any]) -> None:
        """Never send a prompt the server has said it cannot hold: once a reply named its context, a
        prompt estimated at well over it (a quarter more: the estimate is not the server's count) is
        an error naming both sizes, and no call."""
        if self.context_limit is None:
            return
        est = _prompt_estimate(body)
        if est > 1.25 * self.context_limit:
            raise LLMError("context", f"the prompt is about {est:,} tokens and the server's context is "
                           f"{self.context_limit:,} (it said so in an earlier reply): not sent; give the server a "
                           "longer context or send shorter prompts")

    def _read_all(self, completion: Any, body: dict[str, Any]) -> None:
        """Never label from a prompt the server cut: a server that reports reading far fewer prompt
        tokens than were sent (Ollama keeps the end of a prompt longer than its num_ctx, and drops the
        instructions at its start) gave an answer to a prompt it did not see whole."""
        usage = getattr(completion, "usage", None)
        read = getattr(usage, "prompt_tokens", None)
        if not isinstance(read, int) or isinstance(read, bool) or read <= 0:
            return  # a server that counts nothing says nothing: no rule can decide
        why = self._reads.cut(read, _prompt_estimate(body))  # see llm/cut_prompts.py
        if why is not None:
            raise LLMError("cut", f"{why}: it cut the prompt (and with it the instructions at its start), so its "
                           "answer is not used; raise the server's context, e.g. Ollama's num_ctx, or send shorter "
                           "prompts")

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _schema(self, model: type[BaseModel]) -> tuple[str, dict, bool, str]:
        """Built once per model class: the per-call CPU cost must stay that of the bare client."""
        cached = self._schemas.get(model)
        if cached is None:
            cached = self._schemas[model] = schema_of(model)
        return cached


@lru_cache(maxsize=256)
def schema_of(response_model: type[BaseModel]) -> tuple[str, dict, bool, str]:
    """(name, closed JSON schema, strict?, schema text) of a response model, built once per class."""
    schema, strict = strict_schema(response_model.model_json_schema())
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", response_model.__name__)[:64]
    return name, schema, strict, json.dumps(schema, ensure_ascii=False)


def request_key(model: str, messages: list[dict[str, str]], response_model: type[BaseModel],
                params: dict[str, Any], base_url: str | None = None) -> str:
    """The cache key of one call, for the endpoint at ``base_url``; needs no client, so plans and
    dry runs compute it offline."""
    return cache_key(model, messages, None, params, endpoint_id(base_url), schema_json=_schema_json(response_model))


@lru_cache(maxsize=256)
def _schema_json(response_model: type[BaseModel]) -> str:
    """The schema as the cache key spells it (canonical JSON), once per class."""
    return json.dumps(schema_of(response_model)[1], sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def strict_schema(schema: dict) -> tuple[dict, bool]:
    """Close every object (``additionalProperties: false``); strict mode only when every property
    is required, as OpenAI's strict structured outputs demand."""
    strict = True

    def visit(node: Any) -> Any:
        nonlocal strict
        if isinstance(node, dict):
            node = {k: visit(v) for k, v in node.items()}
            if node.get("type") == "object" and "properties" in node:
                node.setdefault("additionalProperties", False)
                if set(node.get("required", [])) != set(node["properties"]):
                    strict = False
            if "default" in node:
                strict = False
            return node
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node

    return visit(schema), strict


async def _create(client: Any, body: dict[str, Any], timeout: float | None = None) -> Any:
    """``client.chat.completions.create(**body)``, minus the openai client's walk over the request
    to transform its parameters (about half the client's CPU per call, measured in
    benchmarks/llm_throughput.py): a body built here is plain JSON already, so it is posted as is,
    through the client's own public ``post``, and parsed into the same ``ChatCompletion``. A client
    that is not an ``AsyncOpenAI`` (a test double) is called the ordinary way."""
    if isinstance(client, openai.AsyncOpenAI):
        from openai.types.chat import ChatCompletion
        options = {"timeout": timeout} if timeout is not None else {}
        return await client.post("/chat/completions", cast_to=ChatCompletion, body=body, options=options)
    return await client.chat.completions.create(**body)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_of(content: Any) -> str | None:
    """A message's content as text: a string as is, a list of parts (some servers send
    ``[{"type": "text", "text": ...}]``) joined; None for anything else. A lone surrogate (JSON can
    escape one, ``"\\ud800"``; it is no character and no UTF-8 file or SQLite row can hold it)
    becomes U+FFFD."""
    if content is None or isinstance(content, str):
        text = content or ""
    elif isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in content):
        text = "".join(p["text"] for p in content)
    else:
        return None
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def _no_lone_surrogates(value: Any) -> Any:
    """Parsed JSON with every lone surrogate (an escaped ``"\\ud800"``) in its strings made U+FFFD:
    the answer's text goes into records and the cache, which must be valid UTF-8."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, list):
        return [_no_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_lone_surrogates(k): _no_lone_surrogates(v) for k, v in value.items()}
    return value


def cached_tokens(usage: Any, prompt_tokens: int) -> int:
    """Input tokens the provider served from its prompt cache (``prompt_tokens_details.cached_tokens``;
    0 when the endpoint does not say), never more than the prompt."""
    details = getattr(usage, "prompt_tokens_details", None)
    n = getattr(details, "cached_tokens", None) if details is not None else None
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return 0
    return min(n, prompt_tokens)


def _timed_out(e: BaseException | None) -> bool:
    """Whether a call failed for want of an answer in time, not for want of a connection. The
    aiohttp transport reports every aiohttp connection error (a refused port, a dropped connection)
    to openai as a connect *timeout*; the aiohttp error underneath tells which it was."""
    if not isinstance(e, openai.APITimeoutError):
        return False
    for cause in _causes(e):
        if type(cause).__module__.split(".")[0] == "aiohttp":
            return isinstance(cause, (TimeoutError, asyncio.TimeoutError))
    return True


def _causes(e: BaseException) -> list[BaseException]:
    out, cause = [e], e.__cause__ or e.__context__
    while cause is not None and len(out) < 10:
        out.append(cause)
        cause = cause.__cause__ or cause.__context__
    return out


def _root_cause(e: BaseException) -> str:
    """The innermost error's words on one line ("Connect call failed ('127.0.0.1', 9)"), not the
    openai wrapper's ("Connection error.")."""
    text = str(e)
    for cause in _causes(e)[1:]:
        said = str(cause).strip()
        if said.startswith("<"):  # an object's repr (aiohttp's raw message), not words
            said = type(cause).__name__
        text = re.sub(r"^\d{3}, message:\s*", "", said) or text  # aiohttp's parser errors are not HTTP statuses
    return " ".join(text.split())[:300]


def _never_connected(e: BaseException) -> bool:
    """Whether a connection error came before any connection (refused, no such host), rather than
    on one that then broke (closed mid-answer, a malformed reply). The aiohttp transport reports
    all of its connection errors to openai as connect timeouts: its own error underneath tells."""
    causes = _causes(e)
    aio = [c for c in causes if type(c).__module__.split(".")[0] == "aiohttp"]
    if aio:
        return any(type(c).__name__.startswith("ClientConnector") for c in aio)
    transport = [c for c in causes if type(c).__module__.split(".")[0] in ("httpx", "httpcore")]
    return not transport or any(type(c).__name__ in ("ConnectError", "ConnectTimeout") for c in transport)


def _transient(e: BaseException) -> bool:
    if isinstance(e, (openai.APIConnectionError, openai.RateLimitError)):
        return True
    # 501 Not Implemented and 505 HTTP Version Not Supported say what the server cannot do: asking
    # again changes nothing
    return isinstance(e, openai.APIStatusError) and (e.status_code in (408, 409)
                                                      or (e.status_code >= 500 and e.status_code not in (501, 505)))


def _prompt_estimate(body: dict[str, Any]) -> int:
    """Tokens of a request's messages at 4 characters a token (English text runs 3.5 to 4.5; text
    in scripts with more tokens a character only raises the server's count above it)."""
    return sum(estimate_tokens(m.get("content") or "") for m in body.get("messages", ()))


_CONTEXT_LIMIT = re.compile(r"(?:maximum context length|context length|context window|n_ctx|num_ctx|context size"
                            r"|max_new_tokens`? must be <=|inputs`? must have less than)"
                            r"[^0-9]{0,40}?(\d[\d,]{2,})\s*(?:tokens)?", re.I)


def _context_limit(text: str) -> int | None:
    """The context size a server's refusal names ("maximum context length is 2048 tokens",
    "exceeds the available context size (n_ctx = 4096)"), when it names one."""
    if not _CONTEXT_WORDS.search(text) and "n_ctx" not in text and "context size" not in text.lower():
        return None
    m = _CONTEXT_LIMIT.search(text)
    return int(m.group(1).replace(",", "")) if m else None


def _refuses_format(e: Any) -> bool:
    """Whether an error status refuses the response format (a 400, 422, 500 or 501 naming it), not
    the request for another reason such as its length."""
    if getattr(e, "status_code", None) not in FORMAT_REFUSAL_STATUSES:
        return False
    text = f"{e} {_error_detail(e)}"
    return bool(_FORMAT_WORDS.search(text)) and not _CONTEXT_WORDS.search(text)


def _retry_after(e: openai.APIStatusError) -> float | None:
    headers = getattr(e.response, "headers", None) or {}
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _error_detail(e: openai.APIStatusError) -> str:
    """The endpoint's own message, on one line: an API's error message, else the body's text, and
    for an HTML page (a web server, a proxy's error page) its title rather than the page."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")  # OpenAI's {"error": {"message"}}, vLLM's {"message"}, TGI's {"error": "..."}
        msg = err.get("message") if isinstance(err, dict) else body.get("message") or \
            (err if isinstance(err, str) else None)
        if msg:
            return " ".join(str(msg).split())[:300]
    text = str(e)
    if re.search(r"<!doctype html|<html|<body", text, re.I):
        title = re.search(r"<title>(.*?)</title>", text, re.I | re.S)
        return "an HTML page" + (f" ({' '.join(title.group(1).split())[:120]!r})" if title else "") + \
            ", not the API's JSON: is the base URL the API's root (it usually ends in /v1)?"
    return " ".join(text.split())[:300]


def v1_base_url(base_url: str | None) -> str | None:
    """The base URL an OpenAI-compatible server most likely serves the API under, for a ``base_url``
    whose requests found no such path (404/405): the URL cut after its /v1 part (a whole endpoint
    given as the base), else with /v1 appended. None when it ends in /v1 already or names another
    version (/v1beta, /v2): then the missing path is not the base URL's fault, as far as can be told."""
    if not base_url:
        return None  # the default, api.openai.com/v1
    from urllib.parse import urlsplit, urlunsplit
    parts = urlsplit(base_url)
    segments = [s for s in parts.path.split("/") if s]
    if segments and segments[-1] == "v1":
        return None
    if "v1" in segments:
        segments = segments[:segments.index("v1") + 1]
    elif any(re.fullmatch(r"v\d+\w*", s) for s in segments):
        return None
    else:
        segments.append("v1")
    return urlunsplit((parts.scheme, parts.netloc, "/" + "/".join(segments), parts.query, ""))


def _reask_text(kind: str, problem: str) -> str:
    extra = " Keep it shorter so that it fits." if kind == "truncated" else ""
    return (f"Your previous reply could not be used: {problem}. Reply again with only a JSON object "
            f"that follows the required schema.{extra}")


class RateLimiter:
    """Token buckets for requests and tokens per minute (either may be None: unlimited)."""

    def __init__(self, rpm: float | None, tpm: float | None, sleep, clock):
        self.rpm, self.tpm = rpm, tpm
        self._sleep, self._clock = sleep, clock
        self._req = max(1.0, (rpm or 0) / 6)  # start with ten seconds' worth
        self._tok = max(1.0, (tpm or 0) / 6)
        self._last = clock()
        self._locks: dict[Any, asyncio.Lock] = {}  # one per event loop: a lock is bound to the loop it first waits in

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            for gone in [k for k in list(self._locks) if k.is_closed()]:
                self._locks.pop(gone, None)
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def acquire(self, tokens: int) -> None:
        if not self.rpm and not self.tpm:
            return
        async with self._lock():
            while True:
                now = self._clock()
                elapsed, self._last = now - self._last, now
                if self.rpm:
                    self._req = min(max(1.0, self.rpm / 6), self._req + elapsed * self.rpm / 60)
                if self.tpm:
                    self._tok = min(max(float(tokens), self.tpm / 6), self._tok + elapsed * self.tpm / 60)
                need = 0.0
                if self.rpm and self._req < 1:
                    need = max(need, (1 - self._req) * 60 / self.rpm)
                if self.tpm and self._tok < tokens:
                    need = max(need, (tokens - self._tok) * 60 / self.tpm)
                if need <= 0:
                    if self.rpm:
                        self._req -= 1
                    if self.tpm:
                        self._tok -= tokens
                    return
                await self._sleep(need)
