"""Structured-output modes: the one an endpoint takes, found by the first call and remembered.

Structured outputs use a JSON-schema ``response_format``; an endpoint that rejects it is
remembered and served with JSON mode (then plain instructions) plus validation. Until the mode is
settled calls are sent one at a time behind a probe lock, so a server that refuses json_schema
refuses it once; the calls that queued behind the probe are sent outside the lock.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

from pydantic import BaseModel

from .cache import endpoint_id
from .errors import ContextExceeded, LLMError, PromptCut
from .failures import error_detail, refuses_format
from .openai_calls import create, openai
from .state import LLMState

# Structured-output modes, best first: the JSON schema as response_format (OpenAI, vLLM, recent
# llama.cpp); JSON mode carrying the schema, which llama.cpp's and llama-cpp-python's servers turn
# into a grammar; plain JSON mode; the schema in the instructions alone. Every mode but the first
# also puts the schema in the instructions, and every answer is validated whatever the mode.
MODES = ("json_schema", "json_object_schema", "json_object", "prompt")


class ModeProbe(LLMState):
    """The part of :class:`~ragassay.llm.client.LLM` that builds a request in a mode and falls back
    to the next mode when the endpoint refuses one."""

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

    def request_body(
        self,
        convo: list[dict[str, str]],
        response_model: type[BaseModel],
        params: dict[str, Any],
        mode: str | None = None,
    ) -> dict[str, Any]:
        """The exact chat request of a call: what the live path sends and a batch line carries."""
        name, schema, strict, schema_text = self._schema(response_model)
        mode = mode or self.mode
        messages = list(convo)
        if mode != "json_schema":  # the schema goes into the instructions too
            messages = [
                {
                    "role": "system",
                    "content": "Reply with one JSON object, and nothing else, "
                    f"that follows this JSON schema:\n{schema_text}",
                }
            ] + messages
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": params["temperature"]}
        if params["max_tokens"] is not None:
            body["max_tokens"] = params["max_tokens"]
        if params["seed"] is not None:
            body["seed"] = params["seed"]
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": strict},
            }
        elif mode == "json_object_schema":  # llama.cpp's servers make a grammar of the schema
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

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
                    completion = await create(client, body, self.call_timeout(body))
                except (json.JSONDecodeError, UnicodeDecodeError) as e:  # a JSON content type over a body that is not
                    raise LLMError(
                        "transport",
                        f"the endpoint at {self.config.public_base_url()} answered with a body "
                        f"that is not JSON ({type(e).__name__}: {str(e)[:80]}), not a chat completion; "
                        "is the base URL the API's root (it usually ends in /v1)?",
                    ) from None
                not_completion = self._not_a_completion(completion)
                if not_completion:
                    raise LLMError("transport", not_completion)
                self.answered = True
                self._read_all(completion, body)
                if self._mode_unsaved and mode == self.mode:
                    self._remember_mode()
                return completion
            except openai.APIStatusError as e:
                if mode == MODES[-1] or not refuses_format(e):
                    raise
                # the endpoint cannot do this mode, whatever status it chose to say so: every later call
                # (and, once one succeeds, later runs) takes the next mode; each mode is tried at most once
                if self.mode == mode:
                    self.mode = MODES[MODES.index(mode) + 1]
                    self.mode_reason = (
                        f"{mode} was refused (HTTP {e.status_code}: {self._redact(error_detail(e))[:160]})"
                    )
                    self._mode_unsaved = True
                continue
            finally:
                self._reserved -= worst  # counted now in the usage (or the call failed)
