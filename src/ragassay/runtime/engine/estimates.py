"""What a run will cost before it runs (:func:`estimate`): its calls, its tokens, its price in
dollars and its time.

The figures are read from the plan and from the answer cache, which is only read here, so a dry run
needs no endpoint and no key and changes nothing. The tokens count what a repeated prompt prefix
saves on a server that keeps its last prompt. The result is an :class:`.estimate_report.Estimate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ...llm.cache import Cache, endpoint_id
from ...llm.config import LLMConfig, default_cache_path
from ...llm.schemas import request_key, schema_of
from ...llm.server_info import asks
from ...llm.speed import Speed
from ...llm.usage import price_for, token_model
from .estimate_report import Estimate
from .work import Call, CallText, Stage, WorkItem, bulk, parsed_answer


@dataclass
class ModelTokens:
    """What the calls to one model will send and receive, summed over the plan: the price and the
    time of a run are worked out per model from these counts."""

    input: int = 0  # input tokens, every prompt counted whole
    output: int = 0  # output tokens, every answer at its max_tokens
    expected: int = 0  # output tokens the answers are expected to take (0 where not known)
    calls: int = 0
    unshared: int = 0  # input tokens a server still reads when it reuses a prefix shared with the call before


def estimate(
    items: Sequence[WorkItem],
    item_done: Callable[[WorkItem], bool],
    configs: Sequence[LLMConfig],
    stage: Stage | None = None,
    share: bool = True,
) -> Estimate:
    """Calls, tokens and cost of running ``items`` (those not ``item_done``) with one config per model.

    Calls whose exact request is in the answer cache cost nothing and are counted apart; for a
    multi-step ``stage``, a cached answer shapes the next step's calls exactly. With ``share``
    (the engine's runs: see :class:`SharedCalls`), a first-step call identical to another item's is
    counted once; later steps are sized from placeholders and always counted."""
    with bulk():
        return _estimate(items, item_done, configs, stage, share)


def _estimate(
    items: Sequence[WorkItem],
    item_done: Callable[[WorkItem], bool],
    configs: Sequence[LLMConfig],
    stage: Stage | None,
    share: bool,
) -> Estimate:
    caches = [Cache.read_only(c.cache_path) if c.use_cache else None for c in configs]
    try:
        counting = _Counting(configs, caches, stage, share)
        for it in items:
            counting.item(it, item_done)
        speeds = [_speed(cfg, m) for cfg, m in zip(configs, counting.models)]
    finally:
        for c in caches:
            if c is not None:
                c.close()
    est, tokens_per_model = counting.est, counting.tokens_per_model
    return _timed(_priced(est, configs, tokens_per_model), configs, speeds, tokens_per_model)


class _Counting:
    """One estimate being counted: each model's config, token counter and answer cache, the
    digests of the first-step calls met so far, and the tokens each model is sent. Held in one
    object so that counting an item, a step and a call are each a small method."""

    def __init__(
        self, configs: Sequence[LLMConfig], caches: list[Cache | None], stage: Stage | None, share: bool
    ) -> None:
        self.configs, self.stage, self.share = configs, stage, share
        self.models = models = [c.model or "" for c in configs]
        self.counters = [token_model(m, cache, endpoint_id(c.base_url)) for m, cache, c in zip(models, caches, configs)]
        # a cache with no answer of a model cannot answer its calls: their keys are not computed
        self.lookups = [c if c is not None and c.holds_model(m) else None for c, m in zip(caches, models)]
        self.est = Estimate(tokenizer=self.counters[0].method if self.counters else "", models=models)
        # input, output ceiling, output expected, calls, input not shared with the start of the model's call before
        self.tokens_per_model = [ModelTokens() for _ in configs]
        self.planned: set[bytes] = set()  # digests: identical calls are asked once (see SharedCalls), counted once
        # without a cache to look calls up in, a stage that can say its calls as texts is not built at all
        self.texts = _TextCounter(self.counters) if stage is not None and not any(self.lookups) else None

    def item(self, it: WorkItem, item_done: Callable[[WorkItem], bool]) -> None:
        """One item of the plan into the estimate: as the texts of its calls when the stage can say
        them, or from its calls, built for the while they are counted."""
        est = self.est
        est.items += 1
        if item_done(it):
            est.done += 1
            return
        if self.texts is not None and self.stage is not None:
            call_texts = self.stage.call_texts(it)
            if call_texts is not None:
                if not call_texts:
                    est.decided_without_call += 1
                for call in call_texts:
                    self.texts.count(call, est, self.tokens_per_model, self.planned, self.share)
                return
        try:
            first = it.open()
            if not first:
                est.decided_without_call += 1
                return
            self.built_item(it, first)
        finally:
            it.close()

    def built_item(self, it: WorkItem, first: list[Call]) -> None:
        """One item's calls, step by step, into the estimate."""
        est = self.est
        calls, step = list(first), 0
        answers: list[Any] = []
        while calls:
            if len(est.calls_per_step) <= step:
                est.calls_per_step.append(0)
            for call in calls:
                answers.append(self.built_call(call, step))
            calls = self.stage.next_calls(it, answers) if self.stage is not None else []
            step += 1

    def built_call(self, call: Call, step: int) -> BaseModel | None:
        """One call into the estimate; its answer when the cache holds it (it shapes the next step)."""
        est, cfg, cache = self.est, self.configs[call.model], self.lookups[call.model]
        if self.share and step == 0:
            digest = call.digest()
            if digest in self.planned:
                est.shared += 1
                return None
            self.planned.add(digest)
        params = call.params(cfg.temperature)
        hit = (
            None
            if cache is None
            else cache.get(
                request_key(self.models[call.model], call.message_list, call.response_model, params, cfg.base_url)
            )
        )
        if hit is not None:
            est.cached += 1
            return parsed_answer(hit, call.response_model)
        tokens = self.counters[call.model]
        t_in = tokens.input_tokens(call.message_list, schema_of(call.response_model)[3])
        t_out = call.max_tokens or 1000
        expected = tokens.output_tokens(call.response_model.__name__, t_out)
        _count_sent(
            est, self.tokens_per_model, step, call.model, (t_in, t_out, expected), _message_parts(call.message_list)
        )
        return None


def _count_sent(
    est: Estimate,
    tokens_per_model: list[ModelTokens],
    step: int,
    model: int,
    tokens: tuple[int, int, int | None],
    parts: list[str],
) -> None:
    """A call that will be sent, into the estimate and its model's row: ``tokens`` are its input,
    its output ceiling and the output its prompt took before (None when not known); ``parts`` its
    messages' texts in order, to count what its prompt shares with the call before."""
    t_in, t_out, expected = tokens
    est.calls += 1
    est.calls_per_step[step] += 1
    est.input_tokens += t_in
    est.output_tokens += t_out
    est.output_tokens_expected += expected or 0
    est.expected_unknown += expected is None
    counts = tokens_per_model[model]
    counts.input += t_in
    counts.output += t_out
    counts.expected += expected or 0
    counts.calls += 1
    counts.unshared += _fresh(est, model, parts, t_in)


class _TextCounter:
    """Counts calls said as texts (:class:`CallText`) exactly as :meth:`_Counting.built_call` counts
    built ones: each distinct text measured once."""

    def __init__(self, counters: list) -> None:
        self.counters = counters
        self.digests: dict[Any, bytes] = {}
        self.exact: list[dict[str, int]] = [{} for _ in counters]
        self.schemas: dict[type, str] = {}

    def count(
        self, call: CallText, est: Estimate, tokens_per_model: list[ModelTokens], planned: set, share: bool
    ) -> None:
        """One call said as texts into the estimate (counted once when ``share`` and met before)."""
        if not est.calls_per_step:
            est.calls_per_step.append(0)
        if share:
            if len(self.digests) > 50_000:  # bounded (texts met again are mostly the recent ones)
                self.digests.clear()
            digest = call.digest(self.digests)
            if digest in planned:
                est.shared += 1
                return
            planned.add(digest)
        tokens = self.counters[call.model]
        schema = self.schemas.get(call.response_model)
        if schema is None:
            schema = self.schemas[call.response_model] = schema_of(call.response_model)[3]
        t_in = self.input_tokens(call, schema)
        t_out = call.max_tokens or 1000
        expected = tokens.output_tokens(call.response_model.__name__, t_out)
        _count_sent(
            est,
            tokens_per_model,
            0,
            call.model,
            (t_in, t_out, expected),
            [t for role, texts in call.pieces for t in (role, *texts)],
        )

    def input_tokens(self, call: CallText, schema: str) -> int:
        """The prompt's tokens: each text counted once by the model's tokenizer (4 more a message),
        or its characters at the model's characters per token when its tokenizer is not known."""
        tokens = self.counters[call.model]
        if tokens.exact is None:
            chars = len(schema)
            for _, texts in call.pieces:
                chars += sum(map(len, texts))
            return max(1, round(chars / tokens.chars_per_token))
        memo = self.exact[call.model]
        if len(memo) > 50_000:
            memo.clear()
        t_in = memo.get(schema)
        if t_in is None:
            t_in = memo[schema] = tokens.exact(schema)
        for _, texts in call.pieces:
            t_in += 4
            for t in texts:
                n = memo.get(t)
                if n is None:
                    n = memo[t] = tokens.exact(t)
                t_in += n
        return t_in


def _priced(est: Estimate, configs: Sequence[LLMConfig], tokens_per_model: list[ModelTokens]) -> Estimate:
    cost: float | None = 0.0
    low: float | None = 0.0
    for cfg, counts in zip(configs, tokens_per_model):
        t_in, t_out, t_expected = counts.input, counts.output, counts.expected
        price = price_for(cfg.model, cfg.price_in, cfg.price_out)
        if t_in or t_out:
            cost = None if price is None or cost is None else cost + (t_in * price[0] + t_out * price[1]) / 1e6
            low = None if price is None or low is None else low + (t_in * price[0] + t_expected * price[1]) / 1e6
    est.cost_usd = cost  # 0 when nothing is sent; None when a model that will be called has no price
    est.cost_usd_low = low
    ceilings = [f"--max-calls {c.max_calls}" for c in configs[:1] if c.max_calls] + [
        f"--max-cost ${c.max_cost:g}" for c in configs[:1] if c.max_cost
    ]
    if ceilings:
        est.note = "; ".join(x for x in (est.note, "the run stops at " + " or ".join(ceilings)) if x)
    return est


def _speed(config: LLMConfig, model: str) -> Speed | None:
    """What ping measured of ``model`` at the config's endpoint, kept in the answer cache's file
    (read even with --no-cache: a speed is not an answer)."""
    cache = Cache.read_only(config.cache_path or default_cache_path())
    if cache is None:
        return None
    try:
        return cache.get_speed(endpoint_id(config.base_url), model)
    finally:
        cache.close()


def _message_parts(messages: list[dict[str, Any]]) -> list[str]:
    return [t for m in messages for t in (m.get("role") or "", m.get("content") or "")]


def _shared_chars(before: list[str], now: list[str]) -> int:
    """Characters ``now`` shares at its start with ``before`` (parts compared in order; the first
    that differs by its common start, found by halving: slices compare at C speed)."""
    shared = 0
    for a, b in zip(before, now):
        if a is b or a == b:
            shared += len(b)
            continue
        lo, hi = 0, min(len(a), len(b))
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if a[:mid] == b[:mid]:
                lo = mid
            else:
                hi = mid - 1
        return shared + lo
    return shared


def _fresh(est: Estimate, model: int, parts: list[str], tokens: int) -> int:
    """The tokens of a call's prompt after the start it shares with the same model's call before:
    what a server that keeps its last prompt (llama.cpp) reads anew (the least a time estimate
    counts; the call order is the plan's)."""
    before = est.last_prompts.get(model)
    est.last_prompts[model] = parts
    total = sum(map(len, parts))
    if before is None or not total:
        return tokens
    return round(tokens * (1 - _shared_chars(before, parts) / total))


def _timed(
    est: Estimate, configs: Sequence[LLMConfig], speeds: list[Speed | None], tokens_per_model: list[ModelTokens]
) -> Estimate:
    """The run's time, one call at a time, at the speeds ``ping`` measured of each model called (none
    when a model called was never measured): at least with the answers' expected tokens (nothing for
    those not known yet), at most with every answer at its max_tokens. A model on a server of this
    machine or its network that was never measured is named (a hosted API's time is not estimated)."""
    est.last_prompts = {}
    called = [(speed, counts) for speed, counts in zip(speeds, tokens_per_model) if counts.calls]
    measured = [(speed, counts) for speed, counts in called if speed is not None]
    if not called or len(measured) < len(called):
        est.unmeasured = _unmeasured(configs, speeds, tokens_per_model)
        return est
    est.seconds_low = sum(speed.seconds(c.calls, c.unshared, c.expected) for speed, c in measured)
    est.input_tokens_unshared = sum(c.unshared for _, c in measured)
    est.seconds_high = sum(speed.seconds(c.calls, c.input, c.output) for speed, c in measured)
    est.speeds = [speed.summary() for speed, _ in measured]
    return est


def _unmeasured(
    configs: Sequence[LLMConfig], speeds: list[Speed | None], tokens_per_model: list[ModelTokens]
) -> list[str]:
    """The models called whose speed was never measured, on a server of this machine or its network
    (a hosted API's time is not estimated, so its model is not named)."""
    return [
        c.model or ""
        for c, speed, counts in zip(configs, speeds, tokens_per_model)
        if counts.calls and speed is None and asks(c.base_url)
    ]
