"""``ragassay run``: the pipeline a project file describes, each step only when its inputs changed.

Steps, in order (``STEPS``): generate questions when the project has none (or, with ``[generate]
sample``, a set beside its queries that no later step reads), retrieve with each retriever, judge the
**pool** (the union of every run's top ``depth`` for each query, as TREC builds its pools: every run is
scored on the same judged set, and a new run costs only its pairs not judged yet), coverage (when
asked), agree (people's qrels against ``[agree] second`` and against the judged pool, each side by
origin), check the answers (without an endpoint, by rule only: the rest wait for a verdict), evaluate
and compare every run, write the report, track the results, gate. A failed step stops the steps after
it, but with ``keep_going`` a failed LLM step does not (the demo's setting: the report is written).
Each step calls the library function its command calls (``api.generate``, ``api.retrieve``,
``api.judge``, ``api.check``, ``agree``, ``evaluate``, ``compare``, ``make_report``, ``track``,
``gate_result``). Before any step the joins are counted once (queries x runs, answers x runs and
qrels: no id in common stops the run before anything is spent) and who labelled each file of labels
is read.

A step is skipped when the digest of its inputs (file contents and settings) equals the one kept in
``.ragassay/state.json`` beside the project file and its outputs exist; its exit code is the one kept.
A dry run prints each step's calls, tokens, cost and time (the LLM stages' own estimates) and calls
nothing; the retrievers run (offline) to know the pool. ``run_project(out=...)`` (``run --out``) writes
every output there and keeps the state and history in ``out/.ragassay``: the project's folder is only
read (``ragassay demo`` runs the installed example's project file so).

The package holds one module per step (``generate``, ``retrieve``, ``judge`` with coverage, ``agree``,
``check``, ``scores`` for evaluate and compare, ``report``, ``history`` for track and gate), the judged
pool (``pool``), the inputs checked before any step (``inputs``), what the steps share (``context``,
``state``, ``results``, ``files``, ``llm_steps``, and ``loaded``: each input parsed once a run and
handed to the steps as objects) and the order they run in (``run``). This module
only names what callers outside the package use.
"""

from .context import FLAG_KEYS, Context, endpoint_state, llm_settings
from .pool import pool
from .results import PipelineResult, StepResult
from .run import LLM_STEPS, STEPS, run_project

__all__ = [
    "FLAG_KEYS",
    "LLM_STEPS",
    "STEPS",
    "Context",
    "PipelineResult",
    "StepResult",
    "endpoint_state",
    "llm_settings",
    "pool",
    "run_project",
]
