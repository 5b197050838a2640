"""The one scaffold every LLM stage runs in: config -> plan -> estimate (a dry run) or run on a
backend -> result. The commands and the Python API call it the same way, so a flag such as
``--dry-run`` or ``--backend batch`` means the same for every stage and is implemented once.

A stage plugs in with a :class:`StageJob`: its model configs, its output file, an offline
:meth:`~StageJob.estimate` and an ``async`` :meth:`~StageJob.execute` given one LLM per config.
The scaffold decides which LLMs those are (live clients, offline clients that only collect batch
requests, or none when a stage may run its rules without an endpoint), runs the job once or
round by round through the Batch API, and says what the batch files hold.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from ..errors import UsageError
from ..llm import LLM, LLMConfig, LLMError
from ..llm.batch import BatchBox, OfflineClient, write_requests
from ..llm.batch_api import run_rounds
from ..llm.errors import NoEndpoint
from ..llm.usage import Usage
from .engine import Estimate

R = TypeVar("R")

BACKENDS = ("live", "batch")


@dataclass(frozen=True)
class Backend:
    """Where a stage's calls go. ``live`` (the default) sends chat requests as the run goes; with
    ``export_requests`` it sends nothing and writes the calls still to be answered as Batch API
    request lines; ``import_results`` are batch output files whose answers are used before calling.
    ``batch`` sends the calls through the OpenAI Batch API itself, round by round (resumable: the
    batch ids are kept in ``OUTPUT.batches.json``)."""

    name: Literal["live", "batch"] = "live"
    export_requests: str | Path | None = None
    import_results: Sequence[str | Path] = ()
    poll_seconds: float = 30.0

    def check(self) -> None:
        """Usage errors, raised before anything is read or sent."""
        if self.name not in BACKENDS:
            raise UsageError(f"backend must be one of {', '.join(BACKENDS)} (got {self.name!r})")
        if self.name == "batch" and (self.export_requests or self.import_results):
            raise UsageError("--backend batch sends the batches itself: leave out --export-requests / --import-results")

    def box(self) -> BatchBox | None:
        """The BatchBox of a live run with batch files (answers imported, requests collected), or None."""
        if not self.export_requests and not self.import_results:
            return None
        box = BatchBox(collect=bool(self.export_requests))
        for path in self.import_results:
            box.import_file(path)
        return box

    def finish(self, box: BatchBox | None, pending: int) -> str:
        """Write the collected requests; the line that tells the user what to do next ("" if none)."""
        if box is None or not box.collect or self.export_requests is None:  # collect: requests were asked for
            return ""
        if not box.requests:
            return f"no calls left to export: every item is answered ({self.export_requests} not written)"
        files = write_requests(self.export_requests, list(box.requests.values()))
        return (
            f"{pending} items wait for {len(box.requests)} batch answers; requests: "
            + ", ".join(str(f) for f in files)
            + ". Run them (the OpenAI Batch API, or vLLM: vllm run-batch -i FILE -o OUT --model M), then rerun "
            "this command with --import-results OUT"
        )


class StageJob(ABC, Generic[R]):
    """One stage's work as the scaffold sees it. ``configs`` has one config per model (a jury has
    several; the first names the endpoint); ``output`` is the stage's records file (batch state is
    kept beside it). ``execute`` plans again on every call: a batch round changes what is done."""

    configs: Sequence[LLMConfig]
    output: Path
    rules_without_endpoint: bool = False  # with no endpoint at all, run on no LLM (rules only)

    @abstractmethod
    def estimate(self) -> Estimate:
        """Calls, tokens and cost of a run, offline: no endpoint, no key."""

    @abstractmethod
    async def execute(self, llms: Sequence[LLM]) -> R:
        """Run the stage with one LLM per config ([] for a rules-only run) and return its result."""

    @abstractmethod
    def pending(self, result: R) -> int:
        """Items of ``result`` that wait for batch answers."""


@dataclass
class StageOutcome(Generic[R]):
    """A finished run of a job: its result, what each model used (numbers, from the last round),
    and the line about batch files or rounds ("" on a plain live run)."""

    result: R
    usage: dict[str | None, Usage] = field(default_factory=dict)
    batch_note: str = ""

    def usage_numbers(self) -> dict[str | None, dict[str, Any]]:
        """Model -> calls, tokens and cost as numbers (``Usage.to_dict``)."""
        return {model: u.to_dict() for model, u in self.usage.items()}

    def usage_text(self) -> str:
        """One line per model, as the commands print it."""
        if len(self.usage) == 1:
            return next(iter(self.usage.values())).summary()
        return "; ".join(f"{model}: {u.summary()}" for model, u in self.usage.items())


def run_llm_stage(
    job: StageJob[R], backend: Backend | None = None, *, dry_run: bool = False, llms: Sequence[LLM] | None = None
) -> Estimate | StageOutcome[R]:
    """Estimate ``job`` (``dry_run``) or run it on ``backend``. ``llms`` are clients the caller made
    and keeps (the Python API's ``llm=``); otherwise the scaffold makes them from ``job.configs``
    and closes them after each round."""
    backend = backend or Backend()
    backend.check()
    if dry_run:
        est = job.estimate()
        est.batch = backend.name == "batch"
        return est
    usage: dict[str | None, Usage] = {}

    def run_once(box: BatchBox | None) -> R:
        clients, own = _clients(job, box, llms)

        async def body() -> R:
            try:
                return await job.execute(clients)
            finally:
                usage.clear()
                usage.update({c.config.model: c.usage for c in clients})
                if own:
                    for c in clients:
                        c.close()

        return asyncio.run(body())

    if backend.name == "batch":
        result, note = run_rounds(job.configs[0], job.output, run_once, poll_seconds=backend.poll_seconds)
    else:
        box = backend.box()
        result = run_once(box)
        note = backend.finish(box, job.pending(result))
    return StageOutcome(result, dict(usage), note)


def _clients(job: StageJob[Any], box: BatchBox | None, given: Sequence[LLM] | None) -> tuple[list[LLM], bool]:
    """The LLMs of one round, and whether the scaffold made them (and so closes them)."""
    if given is not None:
        for llm in given:
            llm.batch = box
        return list(given), False
    if box is not None and box.collect:  # export only: nothing is sent, so no endpoint or key is needed
        clients = [LLM(c, client=OfflineClient()) for c in job.configs]
    else:
        first = job.configs[0]
        try:
            first.check()
        except LLMError as e:
            # only "no endpoint at all" means rules only; a bad setting (a URL without a scheme) is an error
            if not job.rules_without_endpoint or not isinstance(e, NoEndpoint) or first.api_key or first.base_url:
                raise
            return [], True
        clients = [LLM(c) for c in job.configs]
    for llm in clients:
        llm.batch = box
    return clients, True
