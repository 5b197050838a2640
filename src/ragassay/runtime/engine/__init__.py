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

from ...llm.errors import EARLY_FAILURES  # the failures the abort rule counts, said with it
from ..store import OutputStore  # where outputs live; stages import it with the engine's names
from .estimate_report import Estimate
from .estimates import estimate
from .lock import OutputLock, lock_folder, run_locked
from .result import FIXED_REASONS, StageAborted, StageRun, reason_of
from .run import ABORT_AFTER, contract, failing_alike, flow_note, progress_bar, run_stage
from .shared_calls import SharedCalls, repeated_digests
from .work import (
    Call,
    CallText,
    Items,
    Shard,
    Stage,
    WorkItem,
    bulk,
    fingerprint,
    in_shard,
    parse_shard,
    parsed_answer,
    pending_positions,
    record_keys,
    record_keys_at,
)

# the package's face: what stages, the scaffold and the API import (plan in work.py, the lock in lock.py,
# estimating in estimates.py, running in run.py with shared_calls.py, and what a run did in result.py)
__all__ = [
    "ABORT_AFTER",
    "EARLY_FAILURES",
    "FIXED_REASONS",
    "Call",
    "CallText",
    "Estimate",
    "Items",
    "OutputLock",
    "OutputStore",
    "SharedCalls",
    "Shard",
    "Stage",
    "StageAborted",
    "StageRun",
    "WorkItem",
    "bulk",
    "contract",
    "estimate",
    "failing_alike",
    "fingerprint",
    "flow_note",
    "in_shard",
    "lock_folder",
    "parse_shard",
    "parsed_answer",
    "pending_positions",
    "progress_bar",
    "reason_of",
    "record_keys",
    "record_keys_at",
    "repeated_digests",
    "run_locked",
    "run_stage",
]
