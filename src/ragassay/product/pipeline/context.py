"""What every step of a run shares: the project, the LLM settings (the [llm] table under the flags),
whether an endpoint is there, the state, and what the steps before found (the queries, the runs, the
judged pool, what was spent)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...llm.config import LLMConfig
from ..project import Project
from .loaded import Loaded
from .results import StepResult
from .state import Digests, State

FLAG_KEYS = (
    "model",
    "base_url",
    "timeout",
    "concurrency",
    "rpm",
    "tpm",
    "cache",
    "no_cache",
    "price_in",
    "price_out",
    "max_calls",
    "max_cost",
)


def llm_settings(project: Project, flags: Mapping[str, Any]) -> dict[str, Any]:
    """The api functions' LLM keywords: the project's [llm] table, each overridden by a flag given."""
    out = {k: v for k, v in project.llm.items()}
    for key in FLAG_KEYS:
        value = flags.get(key)
        if value is None or value is False:
            continue
        out[key] = value[0] if key == "model" and isinstance(value, list) and len(value) == 1 else value
        if key == "cache":
            out[key] = str(value)
    return out


def endpoint_state(settings: Mapping[str, Any], dry_run: bool) -> str | None:
    """None when the LLM stages can run (a dry run needs a model only); else why they are skipped."""
    model = settings.get("model")
    config = LLMConfig.from_env(
        model=model[0] if isinstance(model, list) else model,
        base_url=settings.get("base_url"),
        price_in=settings.get("price_in"),
        price_out=settings.get("price_out"),
        max_cost=settings.get("max_cost"),
    )
    if not config.model:
        return "no model given ([llm] model in the project file, --model or RAGASSAY_MODEL)"
    if not dry_run and not config.api_key and not config.base_url:
        return (
            "no LLM endpoint configured ([llm] base_url in the project file, --base-url, OPENAI_BASE_URL or "
            "OPENAI_API_KEY)"
        )
    config.check(endpoint=not dry_run)  # any other setting that cannot work (a URL without a scheme, ...) stops here
    return None


@dataclass
class Context:
    project: Project
    dry_run: bool
    llm: dict[str, Any]
    no_llm: str | None
    state: State
    digests: Digests
    log: Callable[[str], None]
    append: bool = False
    generating: bool = False  # a dry run's generate step will write questions
    judging: bool = False  # a dry run's judge step will judge pairs
    pooling: bool = False  # a dry run's judge step will write the pool's qrels
    queries: Path | None = None
    runs: dict[str, Path] = field(default_factory=dict)  # every run's file, once it exists
    memory_runs: dict[str, Any] = field(default_factory=dict)  # a dry run's retrievals, not written
    judged: Path | None = None  # the pool's qrels, once judged
    without_llm: list[str] = field(default_factory=list)  # what was not done for want of an endpoint
    unjudged: tuple[int, int] | None = None  # (pairs of the pool not graded, pairs in it), when any
    warnings: list[str] = field(default_factory=list)  # said by the steps, added to the run's
    said: set[str] = field(default_factory=set)  # every warning said so far (each is said once)
    llm_checks_kept: bool = False  # offline: an LLM's verdicts on these answers stand
    answer_queries: dict[str, str] | None = None  # answer id -> query id, when met by question text
    failed_llm: StepResult | None = None  # the LLM step that failed (the rest go on without it)
    spent_calls: int = 0  # requests the LLM steps of this run sent so far
    spent_cost: float = 0.0  # and what they cost (where a price is known)
    loaded: Loaded = field(default_factory=Loaded)  # the files read so far, parsed once
    results: dict[Path, Any] = field(default_factory=dict)  # each result JSON a step wrote or read, by its file

    @property
    def out(self) -> Path:
        return self.project.out

    def llm_args(self) -> dict[str, Any]:
        """The LLM settings for the next step: ``max_calls`` and ``max_cost`` are the run's, so each
        step gets what the steps before it left (a ceiling holds for the whole run, not per step)."""
        args = dict(self.llm)
        if args.get("max_calls") is not None:
            args["max_calls"] = args["max_calls"] - self.spent_calls
        if args.get("max_cost") is not None:
            args["max_cost"] = args["max_cost"] - self.spent_cost
        return args

    def spent(self) -> str | None:
        """Why no LLM step may run any more (a ceiling of the run reached), or None."""
        calls, cost = self.llm.get("max_calls"), self.llm.get("max_cost")
        if calls is not None and self.spent_calls >= calls:
            return f"the run's --max-calls {calls} is spent ({self.spent_calls} requests sent by the steps before)"
        if cost is not None and self.spent_cost >= cost:
            return f"the run's --max-cost ${cost:g} is spent (${self.spent_cost:.4f} by the steps before)"
        return None

    def spend(self, done: Any) -> None:
        """Count what an LLM step sent (its result's usage: model -> calls, cost)."""
        for numbers in (getattr(done, "usage", None) or {}).values():
            self.spent_calls += int(numbers.get("calls") or 0)
            self.spent_cost += float(numbers.get("cost_usd") or 0.0)

    def pool_qrels(self) -> Path | None:
        """The judged pool's qrels, when the judge graded some pair of it (a judge whose every record
        is an error writes an empty file: nothing to score on)."""
        return self.judged if self.judged is not None and self.judged.exists() and self.judged.stat().st_size else None

    def metric_qrels(self) -> Path | None:
        """What runs are scored on: the judged pool when there is one, else people's qrels."""
        return self.pool_qrels() or self.project.qrels
