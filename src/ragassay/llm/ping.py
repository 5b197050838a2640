"""Check an endpoint: reachable, how fast, does the model answer, is json_schema supported."""

from __future__ import annotations

import dataclasses
import time

from pydantic import BaseModel

from .prompts import load_prompt
from .client import LLM
from .config import LLMConfig
from .errors import LLMError


class PingAnswer(BaseModel):
    ok: bool
    echo: str


async def ping(config: LLMConfig, client=None) -> dict:
    """One structured call, no cache. Raises :class:`LLMError` when the endpoint cannot be used."""
    given = config
    # no cache: the probe starts from json_schema, to say what the server takes now
    config = dataclasses.replace(config, use_cache=False, max_attempts=2, deadline=min(config.deadline, 60))
    llm = LLM(config, client=client)
    prompt = load_prompt("ping")
    word = "lanternfish"
    _ = llm.client.chat.completions  # the openai client loads its resources lazily: not part of latency
    import openai.types.chat  # noqa: F401
    start = time.perf_counter()
    answer = await llm.ask([{"role": "user", "content": prompt.render(word=word)}], PingAnswer, stage="ping",
                           max_tokens=50)
    latency = (time.perf_counter() - start) * 1000
    if not answer.ok or answer.echo.strip() != word:
        raise LLMError("invalid", f"the model answered but did not follow the instruction (echo={answer.echo!r})")
    stage = llm.usage.stage("ping")
    if given.use_cache and given.cache_path and config.model:  # later runs start with the mode found here
        from .cache import Cache, endpoint_id
        try:
            cache = Cache(given.cache_path)
            try:
                cache.put_mode(endpoint_id(config.base_url), config.model, llm.mode, llm.mode_reason)
            finally:
                cache.close()
        except Exception:  # a cache that cannot be written: ping says what it found all the same
            pass
    server = llm.server
    return {"endpoint": config.public_base_url(), "model": config.model, "latency_ms": round(latency, 1),
            "structured_outputs": llm.mode, "structured_outputs_reason": llm.mode_reason, "calls": stage.calls,
            "prompt": prompt.id, "context_tokens": server.context if server else None,
            "slots": server.slots if server else None, "server_said_by": (server.said_by or None) if server else None,
            "tokens_per_second": round(stage.completion_tokens / (latency / 1000), 1)
            if stage.completion_tokens and latency > 0 else None}


async def ping_report(config: LLMConfig, client=None) -> dict:
    """The ``ping`` result: what :func:`ping` found with ``status: ok``, or ``status: error`` and
    the reason when the endpoint cannot be used."""
    from ..data.result_models import PingResult
    from ..errors import RagassayError
    try:
        info = await ping(config, client)
    except RagassayError as e:
        return PingResult(endpoint=config.public_base_url(), model=config.model, status="error", error=str(e)).to_dict()
    return PingResult(**info, status="ok").to_dict()
