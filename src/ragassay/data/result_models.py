"""One pydantic model per kind of JSON result a command prints or writes (``--format json``).

Every result names its ``kind`` and ``version``; :data:`RESULTS` is their registry, so readers
(report, track, gate) parse a file into its model by that kind and never guess from keys. Each
model declares every field its command writes (``extra="forbid"``): a field no command writes is
an edit, refused with its name. A field may be missing (a result written by hand for a gate): the
reader that needs it says so. Fields that only some results of a kind carry (a check with
people's labels has ``human``) are left out of the JSON when not given, as the commands always
wrote them. Nested values keep the shape their command computes (a metric table stays a mapping
of names to numbers): the metrics and stages that compute them own those shapes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from .result_version import RESULT_VERSION


class Result(BaseModel):
    """A command's result: its kind, the version of its shape, and the fields of that kind."""

    model_config = ConfigDict(extra="forbid")
    KIND: ClassVar[str] = ""

    kind: str = ""
    version: int = RESULT_VERSION

    @model_validator(mode="before")
    @classmethod
    def _kind_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and "kind" not in data:
            return {"kind": cls.KIND, **data}
        return data

    @model_validator(mode="after")
    def _kind_matches(self) -> Result:
        if self.kind != self.KIND:
            raise ValueError(f"a {self.kind!r} result where a {self.KIND!r} result belongs")
        if not 1 <= self.version <= RESULT_VERSION:
            raise ValueError(f"result version {self.version} is not one this ragassay reads (1..{RESULT_VERSION})")
        self.model_fields_set.update(("kind", "version"))  # always on the JSON, first
        return self

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready result: kind and version first, then the fields given, in declared order."""
        return self.model_dump(exclude_unset=True)


class EvaluateResult(Result):
    KIND = "evaluate"
    kind: Literal["evaluate"] = "evaluate"
    run: str | None = None
    aggregate: dict[str, Any] | None = None
    per_query: dict[str, dict[str, Any]] | None = None
    counts: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    qrels: dict[str, Any] | None = None  # which qrels: file, content digest, origin (who labelled)
    rests_on: dict[str, Any] | None = None  # the relevant grade and why, the pool, Judged@k (metrics/rests_on.py)


class CompareResult(Result):
    KIND = "compare"
    kind: Literal["compare"] = "compare"
    baseline: str | None = None
    queries: int | None = None
    means: dict[str, dict[str, Any]] | None = None
    tests: list[dict[str, Any]] | None = None
    settings: dict[str, Any] | None = None
    qrels: dict[str, Any] | None = None  # which qrels: file, content digest, origin (who labelled)
    counts: dict[str, dict[str, Any]] | None = None  # run -> how its queries met the qrels
    rests_on: dict[str, Any] | None = None  # the relevant grade, each run's pool, unique relevant chunks


class AgreeResult(Result):
    KIND = "agree"
    kind: Literal["agree"] = "agree"
    pairs: int | None = None
    only_reference: int | None = None
    only_candidate: int | None = None
    labels: list[int] | None = None
    confusion: list[list[int]] | None = None
    reference_distribution: dict[int, int] | None = None
    candidate_distribution: dict[int, int] | None = None
    exact_agreement: Any = None
    kappa: Any = None
    kappa_linear: Any = None
    kappa_quadratic: Any = None
    kappa_binary: dict[str, Any] | None = None
    krippendorff_alpha_ordinal: Any = None
    run_ranking: dict[str, Any] | None = None
    kappa_ci: list[Any] | None = None
    disagreements: list[dict[str, Any]] = []
    names: list[str] | None = None  # who the two label sets are, by origin ("alice", "gpt-4o-mini, judge_relevance@..")
    origins: dict[str, Any] | None = None  # reference, candidate: who made each (data/origin.py)
    same_origin: bool | None = None  # one labeller on both sides: no statistic is given
    join: dict[str, Any] | None = None  # how the two files' query ids met (data/joins.py)
    why: dict[str, Any] | None = None  # statistic -> why it is null (no kappa of a side with one grade, ...)
    scale_warning: str | None = None  # the two files are not on one scale (different scales or relevant grades)


# What every LLM stage's result ends with: ``usage`` (model -> calls, tokens, cost, as numbers),
# ``usage_text`` (the same as the line a person reads), ``pending`` (items waiting for batch
# answers) and ``batch`` (what a batch backend did or waits for).


class JudgeSummary(Result):
    """The JSON result of ``judge``."""

    KIND = "judge"
    kind: Literal["judge"] = "judge"
    pairs: int | None = None
    kept: int | None = None
    judged: int | None = None
    errors: Any = None
    already_done: int | None = None
    decided_by_rule: int | None = None
    grades: dict[str, Any] | None = None
    coverage: dict[str, int] | None = None
    sample_disagreement: Any = None
    mean_vote_spread: Any = None
    juror_agreement: Any = None
    truncated: int = 0
    windowed: int = 0
    batch_fallbacks: int = 0
    pending: int | None = None
    error_reasons: dict[str, int] = {}
    usage: dict[str, Any] | None = None
    usage_text: str | None = None
    batch: Any = None
    join: dict[str, Any] | None = None  # how the queries met the run by id (data/joins.py)


class CheckSummary(Result):
    KIND = "check"
    kind: Literal["check"] = "check"
    items: int | None = None
    ok: int | None = None
    errors: Any = None
    error_reasons: dict[str, int] = {}
    truncated: int = 0
    summary: dict[str, Any] | None = None
    breakdown: dict[str, Any] | None = None
    diagnosis: dict[str, Any] | None = None
    human: dict[str, Any] | None = None
    flip_rate: float | None = None
    behaviour: dict[str, Any] | None = None  # rates for unanswerable and false-premise questions, when any
    usage: dict[str, Any] | None = None
    usage_text: str | None = None
    pending: int | None = None
    batch: Any = None


class GenerateSummary(Result):
    """The JSON result of ``generate``."""

    KIND = "generate"
    kind: Literal["generate"] = "generate"
    accepted: Any = None
    target: dict[str, int] | None = None
    delivered: dict[str, int] | None = None
    shortfall: dict[str, int] | None = None
    rejected: Any = None
    relabelled: int | None = None
    kinds: dict[str, int]
    styles: dict[str, int] | None = None
    reject_reasons: dict[str, int] | None = None
    unfit_chunks: int | None = None
    stopped: str | None = None
    usage: dict[str, Any] | None = None
    usage_text: str | None = None
    pending: int | None = None
    batch: Any = None


class CalibrationResult(Result):
    KIND = "calibration"
    kind: Literal["calibration"] = "calibration"
    task: str | None = None
    assessor: str | None = None
    output: str | None = None
    sample: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None
    model_agreement: dict[str, Any] | None = None
    people_agreement: Any = None
    target_width: float | None = None
    binary: str | None = None


class EstimateResult(Result):
    """A dry run: calls, tokens and cost, computed offline from the plan."""

    KIND = "estimate"
    kind: Literal["estimate"] = "estimate"
    calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    output_tokens_expected: int | None = None
    expected_unknown: int | None = None
    cost_usd_low: float | None = None
    items: int | None = None
    done: int | None = None
    cached: int | None = None
    shared: int | None = None
    decided_without_call: int | None = None
    tokenizer: str | None = None
    models: list[str] | None = None
    note: str | None = None
    batch: dict[str, Any] | None = None
    # the run's time one call at a time, at the speeds ping measured (llm/speed.py); the most and the least
    seconds_low: float | None = None
    seconds_high: float | None = None
    speeds: list[str] | None = None
    speed_unmeasured: list[str] | None = None  # models on a local server whose speed ping never measured
    input_tokens_unshared: int | None = None  # of input_tokens, those a server keeping its last prompt reads anew


class RetrieveResult(Result):
    KIND = "retrieve"
    kind: Literal["retrieve"] = "retrieve"
    run: str | None = None
    queries: int | None = None
    results: int | None = None
    output: str | None = None
    latency_ms: dict[str, float] | None = None
    latency_file: str | None = None
    retriever: str | None = None  # what it was: function, llamaindex, langchain
    id_field: str | None = None  # where a node's or document's chunk id was read (id, ref_doc_id, metadata.KEY)
    repeated: int | None = None  # nodes or documents dropped for repeating a chunk id of their query
    chunks: dict | None = None  # how the run's ids met the chunks given (a Join's counts)
    without_results: int | None = None  # queries asked that returned nothing (each scores 0)
    asked_file: str | None = None  # OUTPUT.run.json: every query asked, which the run file cannot say


class PingResult(Result):
    KIND = "ping"
    kind: Literal["ping"] = "ping"
    endpoint: str | None = None
    model: str | None = None
    latency_ms: float | None = None
    structured_outputs: str | None = None
    structured_outputs_reason: str | None = None  # why that mode: what the endpoint refused
    context_tokens: int | None = None  # the context a server on this machine said it has
    slots: int | None = None  # the calls it serves at once (the default --concurrency then)
    server_said_by: str | None = None  # which of its pages said so (/props, /v1/models, /api/show)
    tokens_per_second: float | None = None  # the answer's tokens over the call's time (latency included)
    # measured on a server on this machine or its network (llm/speed.py), kept for dry runs' time estimates
    prompt_tokens_per_second: float | None = None
    answer_tokens_per_second: float | None = None
    seconds_per_call: float | None = None
    speed_note: str | None = None  # why a local server's speed was not measured
    calls: int | None = None
    prompt: str | None = None
    status: Literal["ok", "error"] | None = None
    error: str | None = None


class RemapSummary(Result):
    """The JSON result of ``remap``."""

    KIND = "remap"
    kind: Literal["remap"] = "remap"
    questions: int | None = None
    placed: int | None = None
    how: dict[str, int] | None = None
    unplaced: dict[str, list[str]] | None = None
    no_evidence: list[str] | None = None
    unanswerable: list[str] | None = None  # questions with no gold chunk: nothing to carry, nothing lost
    output: str | None = None


class DemoResult(Result):
    KIND = "demo"
    kind: Literal["demo"] = "demo"
    copied: list[str] | None = None  # --copy: the files written
    skipped: list[str] | None = None  # a run: the LLM stages skipped for want of an endpoint
    failed: list[str] | None = None  # the stages that failed, each with its reason
    report: str | None = None  # the report written

    @property
    def exit_code(self) -> int:
        """3 when some stage of the demo failed (the report shows what succeeded), else 0."""
        return 3 if self.failed else 0


class ReportResult(Result):
    KIND = "report"
    kind: Literal["report"] = "report"
    output: str | None = None
    format: str | None = None
    bytes: int | None = None


class MergeResult(Result):
    KIND = "merge"
    kind: Literal["merge"] = "merge"
    files: int | None = None
    records: int | None = None
    duplicates: int | None = None
    replaced_errors: int | None = None
    conflicts: list[str] | None = None
    output: str | None = None


class TrackResult(Result):
    KIND = "track"
    kind: Literal["track"] = "track"
    id: int | None = None
    result_kind: str | None = None
    metrics: dict[str, float] | None = None
    label: str | None = None
    db: str | None = None
    run: str | None = None  # the run whose metrics were tracked
    qrels: dict[str, Any] | None = None  # the qrels they were scored on: file, digest, origin


class TrackedResult(BaseModel):
    """One result in the history database, as ``history`` lists it; with ``--metric``, its value
    and the change against the previous result and the best so far."""

    model_config = ConfigDict(extra="forbid")
    id: int
    created: float
    label: str | None
    commit: str | None
    kind: str
    source: str | None
    metrics: dict[str, float]
    run: str | None = None  # the run whose metrics these are (evaluate, compare)
    qrels: dict[str, Any] | None = None  # the qrels they were scored on: file, digest, origin
    settings: dict[str, Any] | None = None
    value: float | None = None
    delta_previous: float | None = None  # against the previous result of the same series
    delta_best: float | None = None  # against the best of the same series so far
    series: str | None = None  # the series: run, qrels and settings in words


class HistoryResult(Result):
    KIND = "history"
    kind: Literal["history"] = "history"
    metric: str | None = None
    run: str | None = None
    results: list[TrackedResult] | None = None


class GateResult(Result):
    KIND = "gate"
    kind: Literal["gate"] = "gate"
    passed: bool | None = None
    failures: list[str] | None = None
    result_kind: str | None = None
    run: str | None = None  # the run gated
    qrels: dict[str, Any] | None = None  # the qrels its metrics were scored on: file, digest, origin
    rests_on: dict[str, Any] | None = None  # what the gated scores rest on (the result's own rests_on)

    @property
    def exit_code(self) -> int:
        """0 every threshold holds; 1 some failed (a build stops)."""
        return 0 if self.passed else 1


RESULTS: dict[str, type[Result]] = {
    m.KIND: m
    for m in (
        EvaluateResult,
        CompareResult,
        AgreeResult,
        JudgeSummary,
        CheckSummary,
        GenerateSummary,
        CalibrationResult,
        EstimateResult,
        RetrieveResult,
        PingResult,
        RemapSummary,
        DemoResult,
        ReportResult,
        MergeResult,
        TrackResult,
        HistoryResult,
        GateResult,
    )
}


__all__ = [
    "AgreeResult",
    "CalibrationResult",
    "CheckSummary",
    "CompareResult",
    "DemoResult",
    "EstimateResult",
    "EvaluateResult",
    "GateResult",
    "GenerateSummary",
    "HistoryResult",
    "JudgeSummary",
    "MergeResult",
    "PingResult",
    "RESULTS",
    "RESULT_VERSION",
    "RemapSummary",
    "ReportResult",
    "Result",
    "RetrieveResult",
    "TrackResult",
    "TrackedResult",
]


class QualityResult(Result):
    """The JSON result of ``quality``: how good a test set is (see product/set_quality.py)."""

    KIND = "quality"
    kind: Literal["quality"] = "quality"
    command: str | None = None
    questions: int | None = None
    rests_on: dict[str, Any] | None = None
    difficulty: dict[str, Any] | None = None
    checks: dict[str, Any] | None = None
    duplicates: dict[str, Any] | None = None
    coverage: dict[str, Any] | None = None
    mix: dict[str, Any] | None = None
    power: dict[str, Any] | None = None
    log: dict[str, Any] | None = None
    notes: list[str] | None = None
