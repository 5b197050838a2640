"""Check an endpoint: reachable, how fast, does the model answer, is json_schema supported."""

from __future__ import annotations

import dataclasses
import random
import time

from pydantic import BaseModel

from ..data.result_models import PingResult
from ..errors import RagassayError
from .cache import Cache, endpoint_id
from .client import LLM
from .config import LLMConfig
from .errors import LLMError
from .prompts import load_prompt
from .server_info import ServerInfo, asks
from .speed import ANSWER_REPEATS, Speed, Timed, passage, solve
from .usage import estimate_tokens


class PingAnswer(BaseModel):
    ok: bool
    echo: str


async def ping(config: LLMConfig, client=None) -> dict:
    """One structured call, no cache. Raises :class:`LLMError` when the endpoint cannot be used."""
    given = config
    # no cache: the probe starts from json_schema, to say what the server takes now
    # (a minute a call; five on a server of this machine, where a small model on a busy laptop is slow)
    config = dataclasses.replace(
        config, use_cache=False, max_attempts=2, deadline=min(config.deadline, 300 if _measures(config) else 60)
    )
    llm = LLM(config, client=client)
    prompt = load_prompt("ping")
    word = "lanternfish"
    _ = llm.client.chat.completions  # the openai client loads its resources lazily: not part of latency
    import openai.types.chat  # noqa: F401

    start = time.perf_counter()
    answer = await llm.ask(
        [{"role": "user", "content": prompt.render(word=word)}], PingAnswer, stage="ping", max_tokens=50
    )
    latency = (time.perf_counter() - start) * 1000
    if not answer.ok or answer.echo.strip() != word:
        raise LLMError("invalid", f"the model answered but did not follow the instruction (echo={answer.echo!r})")
    stage = llm.usage.stage("ping")
    calls, completion_tokens = stage.calls, stage.completion_tokens
    speed = await measure_speed(llm, prompt.render(word=word), word) if _measures(config) else None
    _remember(given, config, llm, speed)
    server = llm.server
    return {
        "endpoint": config.public_base_url(),
        "model": config.model,
        "latency_ms": round(latency, 1),
        "structured_outputs": llm.mode,
        "structured_outputs_reason": llm.mode_reason,
        "calls": llm.usage.stage("ping").calls,
        "prompt": prompt.id,
        **_server_said(server),
        "tokens_per_second": round(completion_tokens / (latency / 1000), 1)
        if completion_tokens and latency > 0 and calls
        else None,
        **_speeds(speed, _measures(config)),
    }


def _remember(given: LLMConfig, config: LLMConfig, llm: LLM, speed: Speed | None) -> None:
    """Keep the mode found (and the speeds measured) in the cache the user's config names, so that
    later runs start with that mode and their dry runs say how long they take. A cache that cannot
    be written changes nothing: ping says what it found all the same."""
    if not (given.use_cache and given.cache_path and config.model):
        return
    try:
        cache = Cache(given.cache_path)
        try:
            cache.put_mode(endpoint_id(config.base_url), config.model, llm.mode, llm.mode_reason)
            if speed is not None:
                cache.put_speed(endpoint_id(config.base_url), config.model, speed)
        finally:
            cache.close()
    except Exception:  # a cache that cannot be written: ping says what it found all the same
        pass


def _server_said(server: ServerInfo | None) -> dict:
    """What a server on this machine said of itself, as ping's result fields (None when it said nothing)."""
    return {
        "context_tokens": server.context if server else None,
        "slots": server.slots if server else None,
        "server_said_by": (server.said_by or None) if server else None,
    }


def _speeds(speed: Speed | None, measures: bool) -> dict:
    """The measured speeds as ping's result fields, with a note when they were to be measured and could not be."""
    return {
        "prompt_tokens_per_second": speed.prompt_per_second if speed else None,
        "answer_tokens_per_second": speed.answer_per_second if speed else None,
        "seconds_per_call": speed.seconds_per_call if speed else None,
        "speed_note": None
        if speed is not None or not measures
        else "not measured: the three timing calls could not tell reading from writing apart (a server that "
        "answers at once, or one whose times vary more than its work): dry runs give no time",
    }


def _measures(config: LLMConfig) -> bool:
    """Speeds are measured on servers people run themselves (a run there can take hours), not on a
    hosted API, where calls run many at once and each extra call is paid."""
    return asks(config.base_url)


async def measure_speed(llm: LLM, check: str, word: str) -> Speed | None:
    """Three calls, one at a time, once the mode is settled: the check again, the check after a
    passage to read, the check with a longer word to write back (llm/speed.py solves for the
    speeds). A call that fails leaves the speed unmeasured; ping's answer stands."""
    seed = random.randrange(10**6)
    longer = " ".join([word] * ANSWER_REPEATS)
    calls = [
        ([{"role": "user", "content": check}], 50),
        (
            [
                {"role": "system", "content": "Background text, only to be read:\n" + passage(seed)},
                {"role": "user", "content": check},
            ],
            50,
        ),
        ([{"role": "user", "content": check.replace(word, longer)}], 40 + 4 * ANSWER_REPEATS),
    ]
    timed = []
    for messages, max_tokens in calls:
        before = dataclasses.replace(llm.usage.stage("ping"))
        start = time.perf_counter()
        try:
            answer = await llm.ask(messages, PingAnswer, stage="ping", max_tokens=max_tokens)
        except LLMError:
            return None
        seconds = time.perf_counter() - start
        after = llm.usage.stage("ping")
        read = after.prompt_tokens - before.prompt_tokens or sum(estimate_tokens(m["content"]) for m in messages)
        wrote = after.completion_tokens - before.completion_tokens or estimate_tokens(answer.model_dump_json())
        timed.append(Timed(read, wrote, seconds))
    return solve(timed)


async def ping_report(config: LLMConfig, client=None) -> dict:
    """The ``ping`` result: what :func:`ping` found with ``status: ok``, or ``status: error`` and
    the reason when the endpoint cannot be used."""
    try:
        info = await ping(config, client)
    except RagassayError as e:
        return PingResult(endpoint=config.public_base_url(), model=config.model, status="error", error=str(e)).to_dict()
    return PingResult(**info, status="ok").to_dict()
