"""``ragassay demo``: ``ragassay run`` over the bundled example's own project file, ending in a report.

The example ships its project file (``example/ragassay.toml``: what ``init`` writes for the folder,
with the demo's settings: a sample of generated questions beside its queries, the pool of both runs'
top 5, coverage, a second assessor to agree with, a report title, and ``keep_going``), so the demo
is one pipeline with ``run``: the same steps, calls and files, written to the demo's folder (state
included: a second demo into the same folder sends nothing). Without an LLM endpoint everything that
needs none runs (retrieval, rule-decided answer checks, agreement between the two people, metrics,
comparison) and the stages skipped are named. An LLM stage that fails does not stop the demo: the
report is written and the failures are listed last (the command exits 3).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..data.result_models import DemoResult
from ..errors import InputError, UsageError
from ..llm import LLM
from ..llm.config import LLMConfig
from ..llm.errors import LLMError
from .bundled_example import copy_example, example_dir, find_example
from .pipeline import FLAG_KEYS, llm_settings, run_project
from .project import PROJECT_FILE, read_project

__all__ = ["copy_example", "demo", "example_dir", "find_example", "run_demo"]


def _demo_cache(project: Path, flags: Mapping[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    """The demo's LLM flags. The demo takes --cache and --no-cache, but the answer cache by default is
    one it did not ask for: when that one cannot be used (a directory, a broken or foreign file,
    read-only) the demo goes on without it and says why, without naming flags."""
    flags = dict(flags)
    settings = llm_settings(read_project(project), flags)  # the project's [llm] table, under the flags
    if settings.get("no_cache") or settings.get("cache"):
        return flags  # a cache the user chose: its errors are theirs to see
    model = settings.get("model")
    try:
        config = LLMConfig.from_env(
            model=model[0] if isinstance(model, list) and model else model, base_url=settings.get("base_url")
        )
        config.check()
    except (LLMError, InputError):
        return flags  # no endpoint: no LLM stage opens the cache
    if not (config.use_cache and config.cache_path):
        return flags
    try:
        LLM(config).close()
    except InputError as e:
        if e.path != str(config.cache_path):
            raise
        reason = re.sub(r"[;:] give another path.*$", "", re.sub(r"^--cache: ", "", e.message))
        log(f"answer cache {e.path}: {reason}; the demo goes on without one (XDG_CACHE_HOME moves it)")
        flags["no_cache"] = True
    return flags


def run_demo(
    out: str | Path,
    data: str | Path | None = None,
    flags: Mapping[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> DemoResult:
    """``ragassay run`` over the example's project file (``data``'s, or the bundled one), writing into
    ``out`` with its state there too: the installed example is only read. ``flags``: the LLM flags
    (``model``, ``base_url``, ``concurrency``, ...), as ``run`` takes them."""
    ex = find_example(data)
    project_run = run_project(
        ex / PROJECT_FILE, out=out, flags=_demo_cache(ex / PROJECT_FILE, flags or {}, log), log=log
    )
    for line in project_run.usage_lines():
        log(line)
    failed = [f"{s.step}: {s.text}" for s in project_run.steps if s.exit_code]
    return DemoResult(skipped=project_run.without_llm, failed=failed, report=project_run.report)


def demo(
    out: str | Path | None = None,
    data: str | Path | None = None,
    copy: str | Path | None = None,
    flags: Mapping[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> DemoResult:
    """``ragassay demo``: write the bundled example's files to ``copy``, or run the example's project
    file (or the example-shaped ``data``'s) into ``out`` (default ``ragassay-demo``)."""
    if copy:
        given = [k for k in FLAG_KEYS if (flags or {}).get(k) not in (None, False, [], ())]
        if given:  # said, not ignored: a copy runs nothing
            raise UsageError(
                "--copy only writes the bundled example's files and calls no model: "
                + ", ".join("--" + k.replace("_", "-") for k in given)
                + " would do nothing; give them to "
                "a demo run (or to 'ragassay run' in the copy)"
            )
        return DemoResult(copied=[str(f) for f in copy_example(copy)])
    return run_demo(out or "ragassay-demo", data, flags, log=log)
