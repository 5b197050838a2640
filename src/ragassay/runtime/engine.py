"""The one stage engine: plan -> estimate -> run -> result, for every stage that calls a model.

- A **work item** has a ``key``: a fingerprint of everything that changes its meaning (input
  texts, model, prompt version, answer-changing parameters). Records carry the key; a record whose
  key is already done (status ok) is never asked again, a changed key is redone. The request cache
  stays keyed by the exact request, so a redo that sends the same request costs nothing.
- **plan** is pure: the stage turns its inputs into items, each with the exact calls it needs.
  :func:`estimate` reads the plan (and the cache, read-only) and says what a run will cost; it
  needs no endpoint and no key.
- :func:`run_stage` is the one runner: a lock on the output refuses a second writer, records are
  appended to a journal as they come (a kill loses nothing), and at the end the output is written
  atomically with exactly one record per identity. A run whose first calls all fail the same way
  stops early with that reason.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import re
import sys
import time
from array import array
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import not_
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel, ValidationError

from ..data.io import to_dataframe
from ..data.result_models import EstimateResult
from ..errors import RagassayError, UsageError
from ..llm.batch import Deferred
from ..llm.batch_api import LIMITS
from ..llm.cache import Cache, endpoint_id
from ..llm.client import LLM, request_key, schema_of
from ..llm.config import LLMConfig, default_cache_path
from ..llm.errors import LLMError
from ..llm.server_info import asks
from ..llm.speed import duration
from ..llm.usage import BATCH_DISCOUNT, price_for, token_model
from .plan_keys import KeyList
from .store import OutputStore

if TYPE_CHECKING:
    from ..llm.speed import Speed

ABORT_AFTER = 3  # this many items failing the same way before any success stops the run
# the failures that say the endpoint cannot be used at all, or not as it is set up: a dead endpoint, a
# refused key or request, a server that cuts every prompt or cannot hold one
EARLY_FAILURES = ("transport", "auth", "request", "cut", "context")


def failing_alike(early: Sequence[LLMError]) -> bool:
    """The abort rule: the first failures (before any answer) are ABORT_AFTER or more, all of one
    kind that says the endpoint cannot be used (a dead endpoint, a refused key, an unknown model)."""
    return len(early) >= ABORT_AFTER and len({e.kind for e in early}) == 1 and early[0].kind in EARLY_FAILURES


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
    def of(cls, model: int, messages: Sequence[dict[str, str]], response_model: type[BaseModel], stage: str,
           max_tokens: int | None, temperature: float | None = None, seed: int | None = None,
           sample: int = 0) -> Call:
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
        params: dict[str, Any] = {"temperature": default_temperature if self.temperature is None else self.temperature,
                                  "max_tokens": self.max_tokens, "seed": self.seed}
        if self.sample:
            params["sample"] = self.sample
        return params

    async def ask(self, llms: Sequence[LLM]) -> BaseModel:
        return await llms[self.model].ask(self.message_list, self.response_model, stage=self.stage,
                                          max_tokens=self.max_tokens, temperature=self.temperature,
                                          seed=self.seed, sample=self.sample)


def _request_head(call: Call | CallText, *more: int) -> str:
    """What names a request besides its messages: model, answer schema, stage, sampling."""
    rm = call.response_model
    return repr((call.model, f"{rm.__module__}.{rm.__qualname__}", call.stage, call.max_tokens, call.temperature,
                 call.seed, call.sample, *more))


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

    def __init__(self, key: str, calls: list[Call] | None = None, payload: Any = None,
                 record_keys: list[str] | None = None, *, build: Callable[[], list[Call]] | None = None):
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
            return WorkItem(key, ())
        assert self._make is not None
        return self._make(a, self._b[i], key)

    def __iter__(self) -> Iterator[WorkItem]:
        for i in range(len(self._keys)):
            yield self[i]

    @property
    def one_record_each(self) -> bool:
        """Every item writes one record, its key's: :meth:`record_keys` is aligned with the items."""
        return not self._keys.has_none

    def pending_positions(self, done: Callable[[str], bool],
                          done_flags: Callable[[Sequence[str]], list[bool]] | None = None) -> array:
        """See :func:`pending_positions`."""
        keys, a = self._keys, self._a
        if not keys.has_none:
            flags = done_flags(keys) if done_flags is not None else list(map(done, keys))
            return array("q", compress(range(len(flags)), map(not_, flags)))
        out = array("q")
        for i, key in enumerate(keys):
            if not (done(key) if key is not None else all(map(done, a[i].record_keys))):
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


def pending_positions(items: Sequence[WorkItem], done: Callable[[str], bool],
                      done_flags: Callable[[Sequence[str]], list[bool]] | None = None) -> array:
    """Where the items with a record not done (by ``done``) are, in order, as 8-byte integers; an
    item done when planned is checked again (another process may have changed the output since).
    ``done_flags``: ``done`` of many keys at once, when there is such a thing."""
    if isinstance(items, Items):
        return items.pending_positions(done, done_flags)
    return array("q", [i for i, it in enumerate(items) if not all(map(done, it.record_keys))])


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


# ------------------------------------------------------------------------------------ outputs


def lock_folder() -> Path:
    """Where output locks live: one folder in the temporary directory, not beside the outputs (a
    user's output folders stay free of hidden files)."""
    import tempfile
    return Path(tempfile.gettempdir()) / "ragassay-locks"


class OutputLock:
    """An exclusive lock on one output, held for the whole run: a second process fails at once and
    is told which process holds it. The lock is named by the output's real path, so a symlink to a
    locked output meets the same lock (and a hard link the inode lock). Within one process it is
    re-entrant (the command locks all its outputs, then the stage locks its own again). The holder
    removes its lock file on release, while it still holds the lock; a process that locked a file
    meanwhile finds the path gone or another file there, and tries again, so two processes never
    hold two different files for one output."""

    _held: dict[Path, list] = {}  # lock path -> [open file, holders] in this process

    def __init__(self, output: str | Path):
        out = Path(output)
        try:
            real = out.resolve()
        except (OSError, RuntimeError):
            real = Path(os.path.abspath(out))
        digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:20]
        self.path = lock_folder() / f"{digest}-{real.name[:80]}.lock"
        self.output = out
        self._mine = False

    def acquire(self) -> OutputLock:
        held = OutputLock._held.get(self.path)
        if held is not None:
            held[1] += 1
            self._mine = True
            return self
        f = self._take(self.path)
        inode = self._inode_lock()
        try:
            g = self._take(inode) if inode is not None else None  # a hard link to it: the same file
        except RagassayError:
            _unlock_file(f)
            f.close()
            raise
        OutputLock._held[self.path] = [f, 1, g]
        self._mine = True
        return self

    def _inode_lock(self) -> Path | None:
        """For an output that exists: a lock named by its device and inode, in the temporary folder,
        so two paths that are hard links to one file meet the same lock."""
        try:
            st = self.output.stat()
        except OSError:
            return None
        return lock_folder() / f"{st.st_dev}-{st.st_ino}.lock"

    def _take(self, path: Path) -> Any:
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.parent.chmod(0o1777)  # shared like /tmp: another user's run meets the same locks
            except OSError:
                pass
        for _ in range(100):
            f = self._open_locked(path)
            try:  # the file locked must still be the one at the path: its last holder removes it on release
                same = os.stat(path).st_ino == os.fstat(f.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            _unlock_file(f)
            f.close()
        else:  # pragma: no cover - a path replaced a hundred times in a row
            raise RagassayError(f"could not lock {self.output}: its lock file {path} keeps changing")
        if f.writable():
            f.seek(0)
            f.truncate()
            f.write(f"ragassay (pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}: "
                    f"{' '.join(sys.argv[:1] + sys.argv[1:4])[:120]})")
            f.flush()
        return f

    def _open_locked(self, path: Path) -> Any:
        try:
            f = open(path, "a+", encoding="utf-8")
        except PermissionError:  # another user's lock file: lockable read-only, and says who holds it
            f = open(path, encoding="utf-8")
        try:
            _lock_file(f)
        except OSError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise RagassayError(f"{self.output} is being written by {holder}; wait for it to finish or "
                                "write to another file") from None
        return f

    def release(self) -> None:
        if not self._mine:
            return
        self._mine = False
        held = OutputLock._held.get(self.path)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del OutputLock._held[self.path]
            for f in held[0], held[2]:
                if f is not None:
                    try:  # removed while still locked, so no lock files pile up (see _take)
                        os.unlink(f.name)
                    except OSError:
                        pass  # another user's file, or Windows: it stays, harmless
                    _unlock_file(f)
                    f.close()

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_file(f: Any) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock_file(f: Any) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock_file(f: Any) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock_file(f: Any) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# ----------------------------------------------------------------------------------- estimate


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
            input_tokens_unshared=self.input_tokens_unshared,
            **({"batch": self.batch_plan()} if self.batch else {})).to_dict()

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
            said = texts.said(it, stage) if texts is not None else None
            if said is not None:
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
    calls, answers, step = list(first), [], 0
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
            answers.append(_parsed(hit, call.response_model))
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
    est.seconds_low = sum(speed.seconds(row[3], row[4], row[2]) for speed, row in called)
    est.input_tokens_unshared = sum(row[4] for _, row in called)
    est.seconds_high = sum(speed.seconds(row[3], row[0], row[1]) for speed, row in called)
    est.speeds = [speed.summary() for speed, _ in called]
    return est


def _parsed(hit: dict | None, response_model: type[BaseModel]) -> BaseModel | None:
    if hit is None:
        return None
    try:
        return response_model.model_validate(hit["answer"])
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------- run


class SharedCalls:
    """Identical calls of one run are asked once. Items with equal inputs under different ids (two
    chunks with the same text, two answers alike) keep their own records and keys; only the
    request is shared, so nothing is paid twice, with or without the answer cache.

    An answer is kept while items that planned the same first-step call are still to come (a
    count made from the plan), and for later steps (whose calls are known only as items run) for
    the rest of the run. A failed call is not kept: a later item asks again."""

    def __init__(self, items: Iterable[WorkItem]):
        # first-step calls, by digest (a plan holds no prompts): how many items are still to ask each;
        # only digests asked more than once are kept. Counted in one array (16 bytes a call, not a
        # dict entry of ~100): a million calls take 16 MB while they are counted
        digests = bytearray()
        for it in items:
            for c in it.calls:
                digests += c.digest()
        self._left: dict[bytes, int] = repeated_digests(digests)
        self._futures: dict[bytes, asyncio.Future] = {}

    async def ask(self, call: Call, llms: Sequence[LLM], first_step: bool = True) -> BaseModel:
        digest = call.digest()
        fut = self._futures.get(digest)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._futures[digest] = fut
            try:
                fut.set_result(await call.ask(llms))
            except asyncio.CancelledError:
                fut.cancel()
                self._futures.pop(digest, None)
                raise
            except BaseException as e:  # LLMError, Deferred: every item waiting on it gets it too
                fut.set_exception(e)
                self._futures.pop(digest, None)
        try:
            return await asyncio.shield(fut) if not fut.done() else fut.result()
        finally:
            self._release(digest, first_step)

    def _release(self, digest: bytes, first_step: bool) -> None:
        left = self._left.get(digest)
        if left is None:  # a first-step call of one item only: nobody else waits for it
            if first_step and digest in self._futures and self._futures[digest].done():
                del self._futures[digest]
            return
        if left <= 1:
            del self._left[digest]
            self._futures.pop(digest, None)
        else:
            self._left[digest] = left - 1


def repeated_digests(digests: bytearray) -> dict[bytes, int]:
    """How many times each 16-byte digest of ``digests`` that comes more than once comes. Its
    first 8 bytes are sorted to find the candidates (8 bytes a digest while it is done: not a
    sorted copy of all, 62 MB more at a million digests, measured, against 18), whose whole
    digests are then counted."""
    if not digests:
        return {}
    import numpy as np
    heads = np.frombuffer(digests, dtype="<u8")[::2].copy()
    heads.sort()
    twice = np.unique(heads[1:][heads[1:] == heads[:-1]])
    del heads
    if not twice.size:
        return {}
    view = np.frombuffer(digests, dtype="<u8")[::2]
    at = np.searchsorted(twice, view)
    np.minimum(at, twice.size - 1, out=at)
    candidates = np.frombuffer(digests, dtype="V16")[twice[at] == view]
    counted = Counter(row.tobytes() for row in candidates)
    return {d: n for d, n in counted.items() if n > 1}


class StageAborted(RagassayError):
    """The first calls all failed the same way (dead endpoint, refused key, unknown model).
    ``reason`` is the message without where the finished records are kept."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


@dataclass
class StageRun:
    """What one run of a stage did: the records of this plan (one per key, plan order) and counts."""

    stage: str
    records: Sequence[dict]  # Records (parsed when read) from a run; any list of dicts will do
    items: int
    skipped_done: int
    ok: int
    errors: int
    error_reasons: Counter
    pending: int = 0  # items waiting for batch answers (their requests were exported)
    stopped: str | None = None  # a spending ceiling stopped the run: why, and what is left

    def to_dataframe(self) -> Any:
        """The records of this run as a pandas DataFrame (pandas is optional)."""
        return to_dataframe(self.records)

    def __repr__(self) -> str:
        # short: asyncio.run's signal handling reprs the result of the task it ran (Python 3.11), and a
        # notebook shows it; a repr of every record would cost seconds on a large run
        return (f"StageRun({self.stage!r}, {len(self.records)} records: {self.ok} ok, {self.errors} errors, "
                f"{self.skipped_done} already done, {self.pending} pending)")

    @property
    def exit_code(self) -> int:
        """0 every record ok; 3 some error records or items left by a ceiling (a rerun goes on); 1
        nothing succeeded."""
        if self.errors == 0 and self.stopped is None:
            return 0
        return 1 if self.ok == 0 and self.errors else 3

    def failure_text(self, source: str | Path | None = None) -> str:
        """The error records' commonest reasons, each input error with a few of its items (and
        ``source``, the input file, when given); a rerun is advised only for errors a rerun may
        mend (not an input's, which repeat, nor a setting's, whose reason says what to set)."""
        if self.stopped and not self.errors:
            return self.stopped
        if not self.errors:
            return ""
        reasons = "; ".join(f"{n} x {r}{self._items_of(r, source)}" for r, n in self.error_reasons.most_common(3))
        fixed = sum(n for r, n in self.error_reasons.items() if r.startswith(FIXED_REASONS))
        inputs = sum(n for r, n in self.error_reasons.items() if r.startswith("input:"))
        advice = []
        if fixed < self.errors:
            advice.append("rerun the same command to retry them" if not fixed else
                          f"rerun the same command to retry the {self.errors - fixed} others")
        if inputs:
            advice.append(f"the {inputs} input error{'s repeat' if inputs != 1 else ' repeats'} on a rerun: mend "
                          f"{'those items' if inputs != 1 else 'that item'} in the input first")
        text = (f"{self.errors} of {self.ok + self.errors} {self.stage} records are errors (commonest: {reasons})"
                + "".join(f"; {a}" for a in advice))
        return f"{text}\n{self.stopped}" if self.stopped else text

    def _items_of(self, reason: str, source: str | Path | None, shown: int = 3) -> str:
        """`` (items 'a', 'b' of FILE)``: a few items whose records fail for an input ``reason``."""
        if not reason.startswith("input:"):
            return ""
        ids = [str(r.get("id")) for r in self.records
               if isinstance(r, dict) and r.get("status") == "error" and reason_of(r) == reason and r.get("id")]
        if not ids:
            return ""
        # an item without an id of its own is named by its line (the id rule's "line-N"): said as the line
        named = ", ".join(f"line {i[5:]}" if re.fullmatch(r"line-\d+", i) else f"item {i!r}" for i in ids[:shown])
        return f" ({named}{', ...' if len(ids) > shown else ''}" + (f" of {source})" if source else ")")


FIXED_REASONS = ("input:", "config:")  # reasons a rerun of the same command repeats


def reason_of(record: dict) -> str:
    text = str(record.get("error") or "unknown")
    return text if len(text) <= 160 else text[:157] + "..."


def contract(stage: Stage, records: Sequence[BaseModel | dict]) -> list[dict]:
    """Each record as the data contract defines it (records.py), serialised for the journal: a
    stage cannot write a record that breaks it (an ok status without a label, an error without its
    reason, a field its model does not declare)."""
    if stage.record_model is None:
        return [r.model_dump(mode="json") if isinstance(r, BaseModel) else r for r in records]
    return [stage.record_model.model_validate(r).model_dump(mode="json") for r in records]


async def run_stage(stage: Stage, items: Sequence[WorkItem], llms: Sequence[LLM], store: OutputStore, *,
                    concurrency: int | None = None, quiet: bool = False, keep_journal: bool = False) -> StageRun:
    """Run every item not already done in ``store``; write its output once, at the end. The output
    is locked for the whole run: a second process on it fails at once, before sending anything.

    ``keep_journal``: the records stay in the journal and the output is not written, for a stage
    that plans in rounds from the records of the last (generate) and writes its files itself."""
    with OutputLock(store.output):
        store.refresh()
        return await _run_stage(stage, items, llms, store, concurrency, quiet, keep_journal)


async def _run_stage(stage: Stage, items: Sequence[WorkItem], llms: Sequence[LLM], store: OutputStore,
                     concurrency: int | None, quiet: bool, keep_journal: bool = False) -> StageRun:
    done = store.done
    plan_keys = record_keys(items)
    # one record an item, keys distinct: this run's records are kept by plan position (8 bytes each)
    by_position = isinstance(items, Items) and items.distinct_keys and items.one_record_each
    if by_position:
        store.expect(plan_keys)
    todo = pending_positions(items, done, store.done_flags)  # positions: an item is made when sent, let go after
    total = len(plan_keys)
    left = len(todo) if isinstance(items, Items) and items.one_record_each \
        else sum(len(record_keys_at(items, i)) for i in todo)  # (one key an item: no item read for it)
    bar = progress_bar(total, total - left, stage.name, quiet)
    started = time.monotonic()
    shared = SharedCalls(items[i] for i in todo)
    queue = iter(todo)
    early: list[LLMError] = []
    answered = [False]
    aborted: list[str] = []
    budget: list[str] = []  # why a spending ceiling stopped the run
    abort = asyncio.Event()

    pending = [0]

    async def do(it: WorkItem) -> list[dict]:
        try:
            return await do_open(it)
        finally:
            it.close()  # its prompts are not kept past its records

    async def do_open(it: WorkItem) -> list[dict]:
        try:
            answers: list[BaseModel] = []
            calls, first = list(it.open()), True
            while calls:
                waiting = False
                for call in calls:  # every call of a step is asked (or exported) before the item waits
                    try:
                        answers.append(await shared.ask(call, llms, first))
                    except Deferred:
                        waiting = True
                if waiting:
                    pending[0] += 1
                    return []
                calls, first = stage.next_calls(it, answers), False
            try:  # a stage builds its record models in finish: a refused one is caught there too
                records = await stage.finish(it, answers, llms)
                if it.calls:
                    answered[0] = True
                return contract(stage, records)
            except ValidationError as e:  # never written as is: an error record that says why
                if it.calls:
                    answered[0] = True
                raise LLMError("invalid", f"the answers made a record outside the data contract: "
                               f"{e.errors()[0].get('msg', e)}") from None
        except LLMError as e:
            if e.kind == "budget":  # a spending ceiling: no new item starts; calls already sent (within the
                if not budget:      # ceiling, so paid for) are awaited and their records kept
                    budget.append(str(e))
                return []
            if not answered[0] and e.kind in EARLY_FAILURES:
                early.append(e)
                if len(todo) > ABORT_AFTER and failing_alike(early):
                    aborted.append(str(early[0]).rstrip("."))
                    abort.set()
            return contract(stage, stage.error_records(it, e))

    async def worker() -> None:
        while not aborted and not budget:
            i = next(queue, None)
            if i is None:
                return
            records = await do(items[i])
            store.append(records, repeat(i) if by_position else None)
            if bar is not None:
                bar.set_postfix_str(flow_note(llms, started), refresh=False)
                bar.update(len(records))

    if concurrency is None:
        concurrency = llms[0].config.concurrency if llms else 8
    # as many workers as calls may be in flight: an item is only started when it can be sent, so an
    # abort leaves nothing half-asked
    n_workers = max(1, min(len(todo), concurrency))
    workers = [asyncio.create_task(worker()) for _ in range(n_workers)]
    all_done = asyncio.gather(*workers)
    all_done.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved: no stray log
    stop = asyncio.create_task(abort.wait())
    try:
        await asyncio.wait({all_done, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not abort.is_set():
            await all_done  # re-raise a worker's error (a full disk)
    finally:
        stop.cancel()
        for w in workers:  # after an abort: calls not yet sent are never sent
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        all_done.cancel()
        if bar is not None:
            bar.close()
        store.close_journal()
    if aborted:
        reason = (f"stopped early: the first {len(early)} {stage.name} calls all failed the same way: "
                  f"{aborted[0]}. Nothing more was sent; fix this and rerun")
        raise StageAborted(f"{reason} (finished records are kept in {store.journal})", reason)
    records = store.pinned(store.held_locations(plan_keys)) if keep_journal else store.finalize(plan_keys)
    failed = store.failed_records(plan_keys)
    reasons = Counter(map(reason_of, failed))
    not_done = 0
    if budget:
        if by_position:
            flags = store.done_flags(plan_keys)
            not_done = sum(1 for i in todo if not flags[i])
        else:
            not_done = sum(1 for i in todo if not all(map(done, record_keys_at(items, i))))
    return StageRun(stage.name, records, len(items), len(items) - len(todo), len(records) - len(failed),
                    len(failed), reasons, pending[0],
                    stopped=f"{budget[0]}; {not_done} {stage.name} items not done: rerun with a higher ceiling to "
                            "go on" if budget else None)


def run_locked(outputs: Sequence[str | Path | None], body: Callable[[], Awaitable[Any]]) -> Any:
    """``asyncio.run(body())`` holding the lock of every output, for stages that write their files
    themselves at the end (generate); stages run by :func:`run_stage` lock their output there."""
    locks = [OutputLock(o) for o in outputs if o is not None]
    held = []
    try:
        for lock in locks:
            held.append(lock.acquire())
        return asyncio.run(body())
    finally:
        for lock in held:
            lock.release()


def flow_note(llms: Sequence[LLM], started: float) -> str:
    """What the progress bar says beside the count: calls in flight and the answers' tokens a second
    (a slow local model shows here what it can do)."""
    if not llms:
        return ""
    flying = sum(llm.in_flight for llm in llms)
    tokens = sum(llm.usage.total().completion_tokens for llm in llms)
    seconds = max(time.monotonic() - started, 1e-9)
    return f"{flying} in flight, {tokens / seconds:.1f} tok/s"


def progress_bar(total: int, initial: int, stage: str, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=stage, unit="item", file=sys.stderr, dynamic_ncols=True)
