"""What a run will cost before it runs: calls, tokens (what a repeated prefix saves), dollars and time,
read from the plan and the answer cache (read-only) with no endpoint and no key."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...data.result_models import EstimateResult
from ...llm.batch import LIMITS
from ...llm.cache import Cache, endpoint_id
from ...llm.config import LLMConfig, default_cache_path
from ...llm.schemas import request_key, schema_of
from ...llm.server_info import asks
from ...llm.speed import duration
from ...llm.usage import BATCH_DISCOUNT, price_for, token_model
from .work import Call, CallText, Stage, WorkItem, bulk, parsed_answer

if TYPE_CHECKING:
    from ...llm.speed import Speed


@dataclass
class Estimate:
    """What a run of the plan will do, computed offline. ``output_tokens`` and ``cost_usd`` are
    ceilings (every answer at its ``max_tokens``); ``output_tokens_expected`` and ``cost_usd_low``
    count what answers of the same prompts took before (from the cache) and nothing for calls whose
    prompt has no such answers yet (``expected_unknown`` of them)."""

    items: int = 0
    done: int = 0
    decided_without_call: int = 0
    calls: int = 0
    cached: int = 0
    shared: int = 0  # calls identical to another item's (equal inputs under two ids): asked once
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    output_tokens_expected: int = 0
    expected_unknown: int = 0
    cost_usd_low: float | None = None
    tokenizer: str = ""
    models: list[str] = field(default_factory=list)
    note: str = ""
    calls_per_step: list[int] = field(default_factory=list)  # a multi-step stage's calls, step by step
    batch: bool = False  # priced and shaped for --backend batch
    seconds_low: float | None = None   # one call at a time at the speeds ping measured (llm/speed.py)
    seconds_high: float | None = None
    speeds: list[str] = field(default_factory=list)  # the measured speeds the time comes from
    unmeasured: list[str] = field(default_factory=list)  # models called whose speed was never measured
    input_tokens_unshared: int | None = None  # of input_tokens, not shared with the start of the call before
    last_prompts: dict[int, list[str]] = field(default_factory=dict, repr=False)  # (while estimating)

    BATCH_DISCOUNT = BATCH_DISCOUNT  # the OpenAI Batch API's price is half the live price

    def batch_plan(self) -> dict[str, Any]:
        """Rounds (one per step with calls), requests and batch files per round, and the batch price."""
        rounds = [n for n in self.calls_per_step if n]
        return {"rounds": len(rounds), "requests_per_round": rounds,
                "batches_per_round": [-(-n // LIMITS["lines"]) for n in rounds],
                "cost_usd": None if self.cost_usd is None else round(self.cost_usd * self.BATCH_DISCOUNT, 6),
                "cost_usd_low": None if self.cost_usd_low is None
                else round(self.cost_usd_low * self.BATCH_DISCOUNT, 6)}

    def to_dict(self) -> dict[str, Any]:
        return EstimateResult(
            calls=self.calls, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
            cost_usd=None if self.cost_usd is None else round(self.cost_usd, 6),
            output_tokens_expected=self.output_tokens_expected, expected_unknown=self.expected_unknown,
            cost_usd_low=None if self.cost_usd_low is None else round(self.cost_usd_low, 6), items=self.items,
            done=self.done, cached=self.cached, shared=self.shared, decided_without_call=self.decided_without_call,
            tokenizer=self.tokenizer, models=self.models, note=self.note,
            seconds_low=None if self.seconds_low is None else round(self.seconds_low, 1),
            seconds_high=None if self.seconds_high is None else round(self.seconds_high, 1),
            speeds=self.speeds or None, speed_unmeasured=self.unmeasured or None,
            input_tokens_unshared=self.input_tokens_unshared, **self._batch_part()).to_dict()

    def _batch_part(self) -> dict[str, Any]:
        """The Batch API's plan, when the stage is sent that way (the field is left off otherwise)."""
        return {"batch": self.batch_plan()} if self.batch else {}

    def add(self, other: Estimate) -> Estimate:
        """Two plans run one after the other (judge's relevance, then coverage)."""
        counts = ("items", "done", "decided_without_call", "calls", "cached", "shared", "input_tokens",
                  "output_tokens", "output_tokens_expected", "expected_unknown")
        return Estimate(**{k: getattr(self, k) + getattr(other, k) for k in counts},
                        cost_usd=None if self.cost_usd is None or other.cost_usd is None
                        else self.cost_usd + other.cost_usd,
                        cost_usd_low=None if self.cost_usd_low is None or other.cost_usd_low is None
                        else self.cost_usd_low + other.cost_usd_low,
                        tokenizer=self.tokenizer or other.tokenizer, models=self.models or other.models,
                        note="; ".join(n for n in (self.note, other.note) if n),
                        calls_per_step=self.calls_per_step + other.calls_per_step, batch=self.batch or other.batch,
                        seconds_low=None if self.seconds_low is None or other.seconds_low is None
                        else self.seconds_low + other.seconds_low,
                        seconds_high=None if self.seconds_high is None or other.seconds_high is None
                        else self.seconds_high + other.seconds_high,
                        speeds=list(dict.fromkeys(self.speeds + other.speeds)),
                        unmeasured=list(dict.fromkeys(self.unmeasured + other.unmeasured)))

    def _output_text(self) -> str:
        if not self.calls:
            return "output tokens: 0"
        ceiling = f"at most {self.output_tokens} (every answer at its max_tokens)"
        if self.expected_unknown == self.calls:
            return (f"output tokens: {ceiling}; what answers take is not known yet (it is learnt from the "
                    "answer cache once this model has answered these prompts)")
        part = "" if not self.expected_unknown else \
            f" for the {self.calls - self.expected_unknown} calls whose prompts this model answered before"
        return f"output tokens: expected {self.output_tokens_expected}{part} (from the answer cache), {ceiling}"

    def _cost_text(self, high: float | None, low: float | None) -> str:
        if high is None:
            return "unknown (pass --price-in/--price-out)"
        if not self.calls or high == low:
            return f"${high:.4f}"
        if self.expected_unknown == self.calls:
            return f"at least ${low:.4f} (the input alone), at most ${high:.4f} (every answer at its max_tokens)"
        lower = "expected" if not self.expected_unknown else "expected, with nothing for the answers not known yet"
        return f"${low:.4f} {lower}; at most ${high:.4f} (every answer at its max_tokens)"

    def _time_text(self) -> str:
        if self.seconds_high is not None and self.calls:
            low, high = duration(self.seconds_low or 0.0), duration(self.seconds_high)
            span = high if low == high else f"{low} to {high}"
            answers = "the answers' expected tokens" if not self.expected_unknown else \
                "no answer tokens for answers not known yet"
            return (f"time: {span}, one call at a time (the least with {answers} and each prompt's start shared "
                    "with the one before kept by the server, as llama.cpp keeps it; the most with every prompt read "
                    f"whole and every answer at its max_tokens); at {'; '.join(self.speeds)}")
        if self.unmeasured and self.calls:
            return (f"time: not estimated: the speed of {', '.join(self.unmeasured)} at this endpoint was never "
                    "measured ('ragassay ping' with the same endpoint and model measures it)")
        return ""

    def text(self) -> str:
        lines = [f"dry run: nothing was called. {self.items} items ({self.done} already done, "
                 f"{self.decided_without_call} decided without a call)",
                 f"calls: {self.calls} ({self.cached} more answered from the cache, free"
                 + (f"; {self.shared} more shared by items with identical inputs" if self.shared else "") + ")",
                 f"input tokens: {self.input_tokens} ({self.tokenizer}); {self._output_text()}",
                 f"cost: {self._cost_text(self.cost_usd, self.cost_usd_low)}"]
        time_said = self._time_text()
        if time_said:
            lines.append(time_said)
        if self.batch:
            b = self.batch_plan()
            lines.append(f"batch backend: {b['rounds']} round(s), one per step; requests per round "
                         f"{b['requests_per_round']} in {sum(b['batches_per_round'])} batch file(s); cost at the "
                         f"Batch API price (half the live price): {self._cost_text(b['cost_usd'], b['cost_usd_low'])}")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


def estimate(items: Sequence[WorkItem], done: Callable[[WorkItem], bool], configs: Sequence[LLMConfig],
             stage: Stage | None = None, share: bool = True) -> Estimate:
    """Calls, tokens and cost of running ``items`` (those not ``done``) with one config per model.

    Calls whose exact request is in the answer cache cost nothing and are counted apart; for a
    multi-step ``stage``, a cached answer shapes the next step's calls exactly. With ``share``
    (the engine's runs: see :class:`SharedCalls`), a first-step call identical to another item's is
    counted once; later steps are sized from placeholders and always counted."""
    with bulk():
        return _estimate(items, done, configs, stage, share)


def _estimate(items: Sequence[WorkItem], done: Callable[[WorkItem], bool], configs: Sequence[LLMConfig],
              stage: Stage | None, share: bool) -> Estimate:
    models = [c.model or "" for c in configs]
    caches = [Cache.read_only(c.cache_path) if c.use_cache else None for c in configs]
    counters = [token_model(m, cache, endpoint_id(c.base_url)) for m, cache, c in zip(models, caches, configs)]
    # a cache with no answer of a model cannot answer its calls: their keys are not computed
    lookups = [c if c is not None and c.holds_model(m) else None for c, m in zip(caches, models)]
    est = Estimate(tokenizer=counters[0].method if counters else "", models=models)
    # input, output ceiling, output expected, calls, input not shared with the start of the model's call before
    tokens_per_model = [[0, 0, 0, 0, 0] for _ in configs]
    planned: set[bytes] = set()  # digests: identical calls are asked once (see SharedCalls), counted once
    # without a cache to look calls up in, a stage that can say its calls as texts is not built at all
    texts = _TextCounter(counters, configs) if stage is not None and not any(lookups) else None
    try:
        for it in items:
            est.items += 1
            if done(it):
                est.done += 1
                continue
            said = texts.said(it, stage) if texts is not None and stage is not None else None
            if said is not None and texts is not None:
                if not said:
                    est.decided_without_call += 1
                for call in said:
                    texts.count(call, est, tokens_per_model, planned, share)
                continue
            try:
                first = it.open()
                if not first:
                    est.decided_without_call += 1
                    continue
                _estimate_item(it, first, est, configs, models, lookups, counters, tokens_per_model, planned, stage,
                               share)
            finally:
                it.close()
        speeds = [_speed(cfg, m) for cfg, m in zip(configs, models)]
    finally:
        for c in caches:
            if c is not None:
                c.close()
    return _timed(_priced(est, configs, tokens_per_model), configs, speeds, tokens_per_model)


def _estimate_item(it: WorkItem, first: list[Call], est: Estimate, configs: Sequence[LLMConfig], models: list[str],
                   lookups: list, counters: list, tokens_per_model: list[list[int]], planned: set,
                   stage: Stage | None, share: bool) -> None:
    """One item's calls, step by step, into ``est``."""
    calls, step = list(first), 0
    answers: list[Any] = []
    while calls:
        if len(est.calls_per_step) <= step:
            est.calls_per_step.append(0)
        for call in calls:
            cfg, cache = configs[call.model], lookups[call.model]
            if share and step == 0:
                digest = call.digest()
                if digest in planned:
                    est.shared += 1
                    answers.append(None)
                    continue
                planned.add(digest)
            params = call.params(cfg.temperature)
            hit = None if cache is None else cache.get(request_key(models[call.model], call.message_list,
                                                                   call.response_model, params, cfg.base_url))
            answers.append(parsed_answer(hit, call.response_model))
            if hit is not None:
                est.cached += 1
                continue
            tokens = counters[call.model]
            t_in = tokens.input_tokens(call.message_list, schema_of(call.response_model)[3])
            t_out = call.max_tokens or 1000
            expected = tokens.output_tokens(call.response_model.__name__, t_out)
            est.calls += 1
            est.calls_per_step[step] += 1
            est.input_tokens += t_in
            est.output_tokens += t_out
            est.output_tokens_expected += expected or 0
            est.expected_unknown += expected is None
            tokens_per_model[call.model][0] += t_in
            tokens_per_model[call.model][1] += t_out
            tokens_per_model[call.model][2] += expected or 0
            tokens_per_model[call.model][3] += 1
            tokens_per_model[call.model][4] += _fresh(est, call.model, _message_parts(call.message_list), t_in)
        calls = stage.next_calls(it, answers) if stage is not None else []
        step += 1


class _TextCounter:
    """Counts calls said as texts (:class:`CallText`) exactly as :func:`_estimate_item` counts built
    ones: each distinct text measured once."""

    def __init__(self, counters: list, configs: Sequence[LLMConfig]):
        self.counters, self.configs = counters, configs
        self.digests: dict[Any, bytes] = {}
        self.exact: list[dict[str, int]] = [{} for _ in counters]
        self.schemas: dict[type, str] = {}

    @staticmethod
    def said(item: WorkItem, stage: Stage) -> list[CallText] | None:
        return stage.call_texts(item)

    def count(self, call: CallText, est: Estimate, tokens_per_model: list[list[int]], planned: set,
              share: bool) -> None:
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
        if tokens.exact is None:
            chars = len(schema)
            for _, texts in call.pieces:
                chars += sum(map(len, texts))
            t_in = max(1, round(chars / tokens.chars_per_token))
        else:
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
        t_out = call.max_tokens or 1000
        expected = tokens.output_tokens(call.response_model.__name__, t_out)
        est.calls += 1
        est.calls_per_step[0] += 1
        est.input_tokens += t_in
        est.output_tokens += t_out
        est.output_tokens_expected += expected or 0
        est.expected_unknown += expected is None
        row = tokens_per_model[call.model]
        row[0] += t_in
        row[1] += t_out
        row[2] += expected or 0
        row[3] += 1
        row[4] += _fresh(est, call.model, [t for role, texts in call.pieces for t in (role, *texts)], t_in)


def _priced(est: Estimate, configs: Sequence[LLMConfig], tokens_per_model: list[list[int]]) -> Estimate:
    cost: float | None = 0.0
    low: float | None = 0.0
    for cfg, (t_in, t_out, t_expected, _, _) in zip(configs, tokens_per_model):
        price = price_for(cfg.model, cfg.price_in, cfg.price_out)
        if t_in or t_out:
            cost = None if price is None or cost is None else cost + (t_in * price[0] + t_out * price[1]) / 1e6
            low = None if price is None or low is None else low + (t_in * price[0] + t_expected * price[1]) / 1e6
    est.cost_usd = cost  # 0 when nothing is sent; None when a model that will be called has no price
    est.cost_usd_low = low
    ceilings = [f"--max-calls {c.max_calls}" for c in configs[:1] if c.max_calls] + \
               [f"--max-cost ${c.max_cost:g}" for c in configs[:1] if c.max_cost]
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


def _timed(est: Estimate, configs: Sequence[LLMConfig], speeds: list[Speed | None],
           tokens_per_model: list[list[int]]) -> Estimate:
    """The run's time, one call at a time, at the speeds ``ping`` measured of each model called (none
    when a model called was never measured): at least with the answers' expected tokens (nothing for
    those not known yet), at most with every answer at its max_tokens. A model on a server of this
    machine or its network that was never measured is named (a hosted API's time is not estimated)."""
    est.last_prompts = {}
    called = [(speed, row) for speed, row in zip(speeds, tokens_per_model) if row[3]]
    if not called or any(speed is None for speed, _ in called):
        est.unmeasured = [c.model or "" for c, speed, row in zip(configs, speeds, tokens_per_model)
                          if row[3] and speed is None and asks(c.base_url)]
        return est
    measured = [(speed, row) for speed, row in called if speed is not None]  # every one, as just checked
    est.seconds_low = sum(speed.seconds(row[3], row[4], row[2]) for speed, row in measured)
    est.input_tokens_unshared = sum(row[4] for _, row in called)
    est.seconds_high = sum(speed.seconds(row[3], row[0], row[1]) for speed, row in measured)
    est.speeds = [speed.summary() for speed, _ in measured]
    return est
