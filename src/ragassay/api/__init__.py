"""The LLM stages as Python functions: ``ragassay.generate(...)``, ``ragassay.judge(...)`` and
``ragassay.check(...)`` are what the ``generate``, ``judge`` and ``check`` commands call, with the same
keyword names and defaults as their flags
(``--max-chunk-chars 6000`` is ``max_chunk_chars=6000``). They read files or take objects, run the
stage on the one scaffold (``dry_run=True`` gives its estimate, and a type checker knows it: the
result's type follows the literal ``True`` or ``False``; ``backend="batch"`` goes through the Batch
API) and return a typed result (``.records``, ``.to_dataframe()``, ``.usage`` as numbers). They work in
a script and inside a notebook, whose own event loop is already running.

Settings may also be given as values, built once and reused: ``options=`` the stage's options
(:class:`~ragassay.JudgeOptions`, :class:`~ragassay.CheckOptions`, :class:`~ragassay.GenerateOptions`),
``config=`` an
:class:`~ragassay.LLMConfig` (the endpoint, model, limits and cache, used as given), ``backend=`` a
:class:`~ragassay.Backend`. A keyword that one of those values holds, given beside it, is a
``TypeError``: one of the two would silently go unused.

A dry run of the bundled example, offline (no endpoint, no key):

>>> import ragassay
>>> from ragassay.product.demo import example_dir
>>> ex = example_dir()
>>> est = ragassay.judge(ex / "queries.jsonl", ex / "chunks.jsonl", ex / "runs" / "bm25.txt",
...                      options=ragassay.JudgeOptions(depth=5), model="gpt-4o-mini", no_cache=True, dry_run=True)
>>> est.items, est.calls  # the top 5 of 22 queries (two have only 3 and 4): one call each
(107, 107)
>>> est = ragassay.check(ex / "answers.jsonl", chunks=ex / "chunks.jsonl", model="gpt-4o-mini", no_cache=True,
...                      dry_run=True)
>>> est.items, est.decided_without_call, est.calls
(16, 2, 14)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# each name and the module that defines it: a name is imported when first asked for, so that the
# ``judge`` command loads judge's stack and not check's or generate's (about half a second less)
_WHERE = {
    "check": "check_call",
    "generate": "generate_call",
    "judge": "judge_call",
    "retrieve": "retrieve_call",
    "in_own_thread": "running",
    "LLM_KEYWORDS": "settings",
    "RENAMED": "settings",
}

__all__ = ["LLM_KEYWORDS", "RENAMED", "check", "generate", "in_own_thread", "judge", "retrieve"]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ragassay.api' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs
    from .check_call import check
    from .generate_call import generate
    from .judge_call import judge
    from .retrieve_call import retrieve
    from .running import in_own_thread
    from .settings import LLM_KEYWORDS, RENAMED
