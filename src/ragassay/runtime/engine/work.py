"""What a stage plans, in the terms the engine runs it by.

A :class:`Call` (or its text form, :class:`CallText`) is one request exactly as it will be sent. A
:class:`WorkItem` is one unit of a stage's work: the calls it needs and the record key it writes.
:class:`Items` holds a plan of many items packed, so that a plan of a million pairs does not hold a
million objects. The module also reads ``--shard`` and provides the :class:`Stage` base that every
LLM stage extends, so the engine can run any stage the same way.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import compress, repeat
from operator import not_
from typing import Any, NamedTuple

from pydantic import BaseModel

from ...errors import UsageError
from ...llm.client import LLM
from ...llm.errors import LLMError
from ..plan_keys import KeyList


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while many small objects are made at once (a plan's
    items, an output's records): they hold no cycles, and as they pile up the collector's full
    passes over every live object recur (half the planning time of a 100,000-pair rerun,
    measured). Resumed as it was after; the pause is process-wide, for the few seconds of a plan."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def fingerprint(*parts: Any) -> str:
    """A short stable hash of JSON-able parts (order matters; dict keys are sorted)."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class Call:
    """One planned request: which model (index into the stage's models) and exactly what is sent."""

    model: int
    messages: tuple[tuple[tuple[str, str], ...], ...]
    response_model: type[BaseModel]
    stage: str
    max_tokens: int | None
    temperature: float | None = None
    seed: int | None = None
    sample: int = 0

    @classmethod
    def of(
        cls,
        model: int,
        messages: Sequence[dict[str, str]],
        response_model: type[BaseModel],
        stage: str,
        max_tokens: int | None,
        temperature: float | None = None,
        seed: int | None = None,
        sample: int = 0,
    ) -> Call:
        frozen = tuple(tuple(sorted(m.items())) for m in messages)
        return cls(model, frozen, response_model, stage, max_tokens, temperature, seed, sample)

    def digest(self) -> bytes:
        """16 bytes naming exactly this request (sha256): what a plan keeps in place of the call,
        to know which items ask the same thing without holding their prompts."""
        parts = [_request_head(self, len(self.messages))]
        for message in self.messages:  # each part as its length and text: no two requests spell the same
            for name, value in message:
                text = value if isinstance(value, str) else repr(value)
                parts.append(f"{len(name)}:{name}{len(text)}:{text}")
        return hashlib.sha256("".join(parts).encode("utf-8", "surrogatepass")).digest()[:16]

    @property
    def message_list(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.messages]

    def params(self, default_temperature: float) -> dict[str, Any]:
        params: dict[str, Any] = {
            "temperature": default_temperature if self.temperature is None else self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        if self.sample:
            params["sample"] = self.sample
        return params

    async def ask(self, llms: Sequence[LLM]) -> BaseModel:
        return await llms[self.model].ask(
            self.message_list,
            self.response_model,
            stage=self.stage,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            sample=self.sample,
        )


def _request_head(call: Call | CallText, *more: int) -> str:
    """What names a request besides its messages: model, answer schema, stage, sampling."""
    rm = call.response_model
    return repr(
        (
            call.model,
            f"{rm.__module__}.{rm.__qualname__}",
            call.stage,
            call.max_tokens,
            call.temperature,
            call.seed,
            call.sample,
            *more,
        )
    )


class CallText(NamedTuple):
    """A planned call as the texts its messages are made of (each message's content is its texts
    joined): what an estimate needs to count and price a call, without the prompt being built.
    A stage that can say its calls so (:meth:`Stage.call_texts`) makes a large dry run cheap: texts
    shared by many calls (the prompt's fixed parts, a query's part, a passage) are the same
    objects, so each is measured once. (A tuple: a dry run makes one per call.)"""

    model: int
    pieces: tuple[tuple[str, tuple[str, ...]], ...]  # (role, texts) per message
    response_model: type[BaseModel]
    stage: str
    max_tokens: int | None
    temperature: float | None = None
    seed: int | None = None
    sample: int = 0

    def digest(self, memo: dict[Any, bytes]) -> bytes:
        """16 bytes naming the request: calls whose messages are the same texts have the same
        digest (``memo`` keeps each text's own digest, so a text met again is not hashed again)."""
        head = self[:1] + self[2:]
        d = memo.get(head)
        if d is None:
            d = memo[head] = hashlib.sha256(_request_head(self).encode("utf-8")).digest()[:16]
        parts = [d]
        for role, texts in self.pieces:
            for text in (role, *texts):  # (a role is a text too: the pieces' count and order are in the join)
                d = memo.get(text)
                if d is None:
                    d = memo[text] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]
                parts.append(d)
            parts.append(b"/")
        return hashlib.sha256(b"".join(parts)).digest()[:16]


Shard = tuple[int, int]  # (i, n): the i-th of n slices, 1-based


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> (2, 4); anything else is a usage error."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise UsageError(f"--shard takes i/n with 1 <= i <= n, e.g. 1/4 (got {text!r})")
    return int(m.group(1)), int(m.group(2))


def in_shard(name: str, shard: Shard | None) -> bool:
    """Whether the unit named ``name`` (a query or answer id) belongs to ``shard``: a hash of the
    name, so every machine computes the same partition and the n shards cover the plan exactly once."""
    if shard is None:
        return True
    i, n = shard
    return int(hashlib.sha256(name.encode("utf-8")).hexdigest()[:12], 16) % n == i - 1


class WorkItem:
    """A unit of work. ``record_keys`` are the keys of the records it writes (one, or several for a
    batch); it is done when all of them are. ``calls`` is empty when no model is needed.

    A stage with many items passes ``build`` instead of ``calls``: the prompts are then made when
    the item is estimated or sent and dropped after it (:meth:`open` / :meth:`close`), so a plan
    holds no prompt text and its memory does not grow with the prompts of all the work."""

    __slots__ = ("key", "payload", "record_keys", "_calls", "_build")

    def __init__(
        self,
        key: str,
        calls: list[Call] | None = None,
        payload: Any = None,
        record_keys: list[str] | None = None,
        *,
        build: Callable[[], list[Call]] | None = None,
    ):
        self.key = key
        self.payload = payload
        self.record_keys: Sequence[str] = record_keys or (key,)  # (a tuple: the common case, light)
        self._calls = calls if build is None else None
        self._build = build

    @property
    def calls(self) -> list[Call]:
        if self._calls is not None:
            return self._calls
        return self._build() if self._build is not None else []  # not kept: see open

    @calls.setter
    def calls(self, calls: list[Call]) -> None:
        self._calls = calls

    def open(self) -> list[Call]:
        """Build the calls once and keep them until :meth:`close`."""
        if self._calls is None and self._build is not None:
            self._calls = self._build()
        return self.calls

    def close(self) -> None:
        """Drop built calls (an item made with ``calls`` keeps them)."""
        if self._build is not None:
            self._calls = None

    def __repr__(self) -> str:
        return f"WorkItem({self.key!r}, {len(self.record_keys)} record(s))"


class Items(Sequence):
    """A stage's items in plan order, made when they are read: an item already done is held as its
    key alone, an item to do as its key (packed: see :mod:`.plan_keys`) and two references (what
    ``make`` builds it from), so a plan of a million pairs holds no object per pair. A
    :class:`WorkItem` added as such is kept as is. Each read of a lazy item builds a new one: the
    engine reads it once, when it sends it.

    ``distinct_keys``: the planner's word that no two items share a record key (the engine then
    keeps this run's records by plan position: see :meth:`OutputStore.expect`)."""

    __slots__ = ("_keys", "_a", "_b", "_make", "distinct_keys")

    _DONE = object()  # _a of an item already done

    def __init__(self, make: Callable[[Any, Any, str], WorkItem] | None = None) -> None:
        self._keys = KeyList()  # the item's one record key; None where a WorkItem stands (in _a)
        self._a: list[Any] = []
        self._b: list[Any] = []
        self._make = make
        self.distinct_keys = False

    def add(self, item: WorkItem) -> None:
        self._keys.append(None)
        self._a.append(item)
        self._b.append(None)

    def add_done(self, key: str) -> None:
        """An item already done whose one record has ``key``: no calls, nothing to finish."""
        self._keys.append(key)
        self._a.append(Items._DONE)
        self._b.append(None)

    def add_done_keys(self, keys: Sequence[str]) -> None:
        """:meth:`add_done` of each key, in order (packed: a rerun of a million pairs holds no string a key)."""
        self._keys.extend(keys, pack=True)
        self._a.extend(repeat(Items._DONE, len(keys)))
        self._b.extend(repeat(None, len(keys)))

    def add_lazy(self, key: str, a: Any, b: Any) -> None:
        """An item to do whose one record has ``key``, built as ``make(a, b, key)`` when read."""
        self._keys.append(key, pack=True)
        self._a.append(a)
        self._b.append(b)

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        key, a = self._keys[i], self._a[i]
        if key is None:
            return a
        if a is Items._DONE:
            return WorkItem(key, [])
        assert self._make is not None
        return self._make(a, self._b[i], key)

    def __iter__(self) -> Iterator[WorkItem]:
        for i in range(len(self._keys)):
            yield self[i]

    @property
    def one_record_each(self) -> bool:
        """Every item writes one record, its key's: :meth:`record_keys` is aligned with the items."""
        return not self._keys.has_none

    def pending_positions(
        self, is_done: Callable[[str], bool], done_flags: Callable[[Sequence[str]], list[bool]] | None = None
    ) -> array:
        """See :func:`pending_positions`."""
        keys, a = self._keys, self._a
        if not keys.has_none:
            flags = done_flags(keys) if done_flags is not None else list(map(is_done, keys))
            return array("q", compress(range(len(flags)), map(not_, flags)))
        out = array("q")
        for i, key in enumerate(keys):
            if not (is_done(key) if key is not None else all(map(is_done, a[i].record_keys))):
                out.append(i)
        return out

    def record_keys_at(self, i: int) -> Sequence[str]:
        key = self._keys[i]
        return self._a[i].record_keys if key is None else (key,)

    def record_keys(self) -> Sequence[str]:
        """Every record key of the plan, in order (not to be changed: it may be the plan's own list)."""
        keys, a = self._keys, self._a
        if not keys.has_none:
            return keys  # (a million keys are not copied)
        return [k for i, key in enumerate(keys) for k in (a[i].record_keys if key is None else (key,))]


def record_keys(items: Sequence[WorkItem]) -> Sequence[str]:
    """Every record key of a plan's items, in order."""
    if isinstance(items, Items):
        return items.record_keys()
    return [k for it in items for k in it.record_keys]


def record_keys_at(items: Sequence[WorkItem], i: int) -> Sequence[str]:
    return items.record_keys_at(i) if isinstance(items, Items) else items[i].record_keys


def pending_positions(
    items: Sequence[WorkItem],
    is_done: Callable[[str], bool],
    done_flags: Callable[[Sequence[str]], list[bool]] | None = None,
) -> array:
    """Where the items with a record not yet done (by ``is_done``) are, in order, as 8-byte integers.
    An item that was done when planned is checked again, because another process may have changed the
    output since. ``done_flags`` answers ``is_done`` for many keys at once, when the store can."""
    if isinstance(items, Items):
        return items.pending_positions(is_done, done_flags)
    return array("q", [i for i, it in enumerate(items) if not all(map(is_done, it.record_keys))])


class Stage:
    """What a stage gives the engine. Subclasses build the plan and turn answers into records."""

    name = "stage"
    record_model: type[BaseModel] | None = None  # the data contract every record is checked against

    def identity(self, record: dict) -> str:
        """What a record is about (one record per identity in the output), e.g. query and chunk."""
        raise NotImplementedError

    def call_texts(self, item: WorkItem) -> list[CallText] | None:
        """For an estimate: the item's calls as :class:`CallText`, when the item has one step and
        the stage can say them without building its prompts; None to have them built."""
        return None

    def next_calls(self, item: WorkItem, answers: Sequence[BaseModel | None]) -> list[Call]:
        """Calls that need earlier answers (a multi-step stage: coverage's nuggets, then their
        importance, then their support); [] when the item has all it needs. A dry run passes None
        for answers it does not know yet; the calls must then have their final count and shape."""
        return []

    async def finish(self, item: WorkItem, answers: list[BaseModel], llms: Sequence[LLM]) -> list[BaseModel | dict]:
        """Records for an item from the answers to its calls, in call order: models of
        ``record_model`` (or their fields). May raise LLMError."""
        raise NotImplementedError

    def error_records(self, item: WorkItem, error: LLMError) -> list[BaseModel | dict]:
        raise NotImplementedError


def parsed_answer(hit: dict | None, response_model: type[BaseModel]) -> BaseModel | None:
    if hit is None:
        return None
    try:
        return response_model.model_validate(hit["answer"])
    except ValueError:
        return None
