"""The data contract: one pydantic model for each kind of JSON Lines record (README.md gives each
command's fields).

Every stage reads and writes these models, and a field means the same thing whichever stage wrote
it. Records that come out of an LLM stage carry ``status`` (ok or error) and, on an error, ``error``
with the reason and a null label, so that a failure is never disguised as a default grade.

Two families of models live here. The inputs users write themselves (chunks, run and qrels rows,
answers to check) keep any extra field they carry, so a corpus with a ``url`` per chunk is still a
corpus. The records ragassay writes (questions, rejects, judgments, coverage, checks) declare every
field (``extra="forbid"``) and name their own kind on every line in ``record`` (``judgment@1``), so
that a reader knows a file's kind from any one of its lines: a file of one record is read right, and
a question's own ``kind`` (factoid, comparison, ...) is never taken for the file's. :data:`RECORDS`
is their registry; lines written before ``record`` existed are read as the kind their reader expects.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

Difficulty = Literal["easy", "medium", "hard", "unanswerable", "false_premise"]  # the mix's buckets
NO_ANSWER: tuple[Difficulty, ...] = ("unanswerable", "false_premise")  # questions the corpus cannot answer as asked
Status = Literal["ok", "error"]
CoverageLabel = Literal["FULL", "PARTIAL", "NONE"]
Support = Literal["support", "partial_support", "not_support"]
CheckLabel = Literal["correct", "partial", "hallucinated", "abstained"]
Grounded = Literal["supported", "unsupported", "contradicted"]


class _Record(BaseModel):
    """An input record a user writes: fields beyond the contract are kept, never refused."""

    model_config = ConfigDict(extra="allow", str_strip_whitespace=False)


class Strict(BaseModel):
    """A part of a written record: every field declared, an unknown one refused."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


RECORD_FIELD = "record"  # the field of every written record that names its kind and version


class WrittenRecord(Strict):
    """A record ragassay writes. ``record`` (``KIND@VERSION``) comes first on the line and is filled
    in when a stage builds the model, so no stage spells it by hand."""

    KIND: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1
    # fields that apply to some records only (a jury's grades, a batch's position): left off the
    # line when the record was built without them, as the stages always wrote them
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    record: str | None = None

    @model_serializer(mode="wrap")
    def _leave_off_what_does_not_apply(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        given = self.model_fields_set
        return {k: v for k, v in data.items() if k in given or k not in self.OPTIONAL}

    @property
    def ok(self) -> bool:
        """Whether the record holds a label (a stage's error record does not)."""
        return getattr(self, "status", "ok") == "ok"

    def merge_key(self) -> str | None:
        """What matches this record across shards: its ``key`` (the fingerprint of what it depends on)."""
        return getattr(self, "key", None)

    @classmethod
    def tag(cls) -> str:
        """``judgment@1``: the kind and version every line of this model carries."""
        return f"{cls.KIND}@{cls.VERSION}"

    @model_validator(mode="before")
    @classmethod
    def _tag_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get(RECORD_FIELD) is None:
            return {**data, RECORD_FIELD: cls.tag()}
        return data

    @field_validator("record")
    @classmethod
    def _tag_matches(cls, v: str | None) -> str:
        kind, version = parse_tag(v)
        if kind != cls.KIND:
            raise ValueError(f"a {kind} record where a {cls.KIND} record belongs")
        if version > cls.VERSION:
            raise ValueError(
                f"a {kind} record of version {version}, written by a newer ragassay (this one reads "
                f"up to {cls.VERSION}); upgrade ragassay"
            )
        return cls.tag()


def parse_tag(tag: Any) -> tuple[str, int]:
    """``("judgment", 1)`` from ``"judgment@1"``; anything else is a ValueError that says why."""
    kind, sep, version = str(tag).partition("@") if isinstance(tag, str) else ("", "", "")
    if not sep or not kind or not version.isdigit():
        raise ValueError(f"{RECORD_FIELD!r} must be KIND@VERSION, e.g. 'judgment@1' (got {tag!r})")
    return kind, int(version)


class Chunk(_Record):
    """A passage of the user's corpus. BEIR corpus lines (``_id``) are mapped to ``id`` on read.

    ``text`` may be empty (real corpora have empty chunks); stages decide what to do with them.
    """

    id: str
    text: str
    doc_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, v: Any) -> str:
        if isinstance(v, (int, str)) and not isinstance(v, bool) and str(v) and not any(c.isspace() for c in str(v)):
            return str(v)
        raise ValueError("id must be a non-empty string without whitespace (TREC files cannot hold it)")


class Question(WrittenRecord):
    """A generated question with its reference answer and the chunks holding the evidence. Its
    ``kind`` is the question's kind (factoid, comparison ...); the record's own is in ``record``."""

    KIND = "question"
    # a question the corpus answers says neither (its lines are as they always were)
    OPTIONAL = frozenset({"answerable", "premise"})

    def merge_key(self) -> str | None:
        """A question is matched by its id (it has no fingerprint key)."""
        return self.id

    id: str
    question: str
    answer: str
    difficulty: Difficulty
    kind: str = "factoid"
    chunk_ids: list[str]
    grades: dict[str, int] = Field(default_factory=dict)  # per gold chunk: 3 states the answer, 2 supports a hop
    style: str | None = None
    evidence: list[str] = Field(default_factory=list)
    checks: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    prompt: str | None = None
    # false for an unanswerable question (no chunk answers it: it has no gold) and for a false-premise
    # one (its gold chunk corrects the premise it takes for granted, stated in ``premise``)
    answerable: bool = True
    premise: str | None = None


class RunRow(_Record):
    """One retrieved chunk for one query (JSONL form of a TREC run line)."""

    query_id: str
    chunk_id: str
    score: float


class QrelRow(_Record):
    """One relevance judgment (JSONL form of a TREC qrels line)."""

    query_id: str
    chunk_id: str
    grade: int


class Judgment(WrittenRecord):
    """An LLM relevance grade 0-3 for one query x chunk, or an error record with a null grade.
    ``key`` fingerprints what the grade depends on (texts, model, prompt, settings).

    How the grade was reached: ``samples`` holds every vote (samples of every juror, in order),
    ``decided_by`` says whether a rule (an empty chunk) or the model gave it, ``truncated`` whether
    the chunk was cut to the length budget. Optional, when they apply: ``seeds`` and
    ``temperature`` of sampled votes, ``juror_grades`` (model -> its grade) for a jury,
    ``batch_position`` / ``batch_size`` for a pair graded in a batch, and for a long chunk judged
    window by window ``windows``, ``window_grades`` and the ``best_window`` [start, end]."""

    KIND = "judgment"
    OPTIONAL = frozenset(
        {
            "truncated",
            "seeds",
            "temperature",
            "juror_grades",
            "batch_position",
            "batch_size",
            "windows",
            "window_grades",
            "best_window",
        }
    )

    query_id: str
    chunk_id: str
    key: str | None = None
    grade: int | None = Field(default=None, ge=0, le=3)
    reasoning: str | None = None
    status: Status = "ok"
    error: str | None = None
    model: str | None = None
    prompt: str | None = None
    samples: list[int] = Field(default_factory=list)
    decided_by: Literal["rule", "llm"] | None = None
    truncated: bool | None = None
    seeds: list[int] | None = None
    temperature: float | None = None
    juror_grades: dict[str, int] | None = None
    batch_position: int | None = None
    batch_size: int | None = None
    windows: int | None = None
    window_grades: list[int] | None = None
    best_window: list[int] | None = None

    @model_validator(mode="after")
    def _status_matches(self) -> Judgment:
        _check_status(self.status, self.grade, self.error, "grade")
        return self


class Nugget(Strict):
    """A piece of information the answer needs, and whether the retrieved chunks support it."""

    text: str
    vital: bool = True
    support: Support
    chunk_ids: list[str] = Field(default_factory=list)


class Coverage(WrittenRecord):
    """Whether the retrieved set covers what the answer needs: FULL, PARTIAL or NONE, for one query
    of one run (``run``) and the retrieved ids it measured (``chunk_ids``). ``question_key``
    fingerprints the question the nuggets were drawn from (a rerun on another run reuses them:
    ``nuggets_reused``); ``scores`` are the nugget scores (vital/all, strict/partial)."""

    KIND = "coverage"
    OPTIONAL = frozenset({"question_key", "nuggets_reused", "scores"})

    query_id: str
    run: str | None = None
    chunk_ids: list[str] = Field(default_factory=list)
    key: str | None = None
    coverage: CoverageLabel | None = None
    nuggets: list[Nugget] = Field(default_factory=list)
    status: Status = "ok"
    error: str | None = None
    model: str | None = None
    prompt: str | None = None
    question_key: str | None = None
    nuggets_reused: bool | None = None
    scores: dict[str, float | None] | None = None

    @model_validator(mode="after")
    def _status_matches(self) -> Coverage:
        _check_status(self.status, self.coverage, self.error, "coverage")
        return self


class AnswerItem(_Record):
    """A RAG answer to check: the question, the accepted reference(s), the response, its context."""

    id: str
    question: str
    reference: str | list[str]
    response: str
    contexts: list[str] | None = None
    context_ids: list[str] | None = None
    # from a test set with questions the corpus cannot answer as asked: false for those, and the
    # premise a false-premise question takes for granted (check then expects it corrected)
    answerable: bool | None = None
    premise: str | None = None

    @field_validator("reference")
    @classmethod
    def _reference_given(cls, v: str | list[str]) -> str | list[str]:
        refs = [v] if isinstance(v, str) else v
        if not refs or not all(r.strip() for r in refs):
            raise ValueError(
                "the reference must be a non-empty string (or a non-empty list of non-empty accepted "
                "answers): there is nothing to grade against"
            )
        return v


class ContextCuts(Strict):
    """What was cut from an answer's context to fit the prompt (marked in the prompt too)."""

    context_chars_cut: int = 0
    contexts_dropped: list[str] = Field(default_factory=list)  # the ids of the passages left out


class Check(WrittenRecord):
    """The verdict on one answer: correct / partial / hallucinated / abstained, or an error.

    ``samples`` holds each sampled label, ``fault`` whether a wrong answer is retrieval's or
    generation's fault (given gold recall), ``context_has_answer`` whether the context held the
    reference, ``response_words`` the answer's length, ``truncated`` what was cut from its context."""

    KIND = "check"
    OPTIONAL = frozenset({"context_has_answer", "expected", "behaviour", "graded_label"})

    id: str
    key: str | None = None
    label: CheckLabel | None = None
    grounded: Grounded | None = None
    unsupported_claims: list[str] = Field(default_factory=list)
    rationale: str | None = None
    decided_by: Literal["rule", "llm"] | None = None
    status: Status = "ok"
    error: str | None = None
    model: str | None = None
    prompt: str | None = None
    response_words: int | None = None
    truncated: ContextCuts | None = None
    samples: list[str] = Field(default_factory=list)
    fault: str | None = None
    context_has_answer: bool | None = None
    # for a question that expects an abstention or a corrected premise (see stages/check_behaviour.py):
    # what was expected, what the response did, and the grader's own label before that rule
    expected: Literal["abstain", "correct_premise"] | None = None
    behaviour: Literal["abstained", "answered", "corrected_premise", "accepted_premise"] | None = None
    graded_label: CheckLabel | None = None

    @model_validator(mode="after")
    def _status_matches(self) -> Check:
        _check_status(self.status, self.label, self.error, "label")
        return self


class Reject(WrittenRecord):
    """A candidate question generate dropped, or a chunk unfit to seed one, with the reason. One
    shape for every cause: what a cause does not know (the question of a failed call, the
    difficulty of an unfit chunk) is null. ``kind`` is the question's kind (factoid, bridge, ...);
    ``scores`` are the filter scores the candidate had when it was dropped."""

    KIND = "reject"

    chunk_ids: list[str] = Field(default_factory=list)
    difficulty: Difficulty | None = None
    question: str | None = None
    answer: str | None = None
    style: str | None = None
    kind: str | None = None
    reason: str
    scores: dict[str, Any] = Field(default_factory=dict)


def _check_status(status: str, value: Any, error: str | None, what: str) -> None:
    if status == "ok" and value is None:
        raise ValueError(f"status 'ok' needs a {what}")
    if status == "error":
        if value is not None:
            raise ValueError(f"status 'error' must have a null {what}")
        if not error:
            raise ValueError("status 'error' needs the reason in 'error'")


class CandidateRecord(WrittenRecord):
    """What generate's journal (``OUTPUT.candidates.journal``) keeps of one candidate question: the
    question accepted, or the reject that says why not. A failed call is an error record (with its
    reject), tried again by a rerun; ``key`` is the candidate's draw."""

    KIND = "candidate"

    key: str
    status: Status = "ok"
    error: str | None = None
    question: Question | None = None
    reject: Reject | None = None


class LabelEventsHeader(Strict):
    """The first line of a person's label events file (``ragassay label``): the file's kind and
    version, the task, and the sample drawn, so a later session labels the same items."""

    kind: Literal["label_events"] = "label_events"
    version: int = 1
    task: Literal["pairs", "answers"]
    sample: dict[str, Any] | None = None
    keys: list[str] = Field(default_factory=list)


class LabelEvent(Strict):
    """One act of a person labelling: a label (``value``: a grade 0-3 or an answer label), a skip
    (with its ``reason``) or an undo of the last act, with who, when and how long it took. Pairs
    carry ``query_id`` and ``chunk_id``, answers ``id``. Written with only the fields the act has."""

    event: Literal["label", "skip", "undo"]
    key: str
    value: int | str | None = None
    reason: str | None = None
    assessor: str
    time: str
    seconds: float | None = None
    query_id: str | None = None
    chunk_id: str | None = None
    id: str | None = None


# every record ragassay writes, by the kind its lines carry
RECORDS: dict[str, type[WrittenRecord]] = {
    m.KIND: m for m in (Question, Reject, Judgment, Coverage, Check, CandidateRecord)
}


def record_model(tag: Any) -> type[WrittenRecord]:
    """The model of a written line's ``record`` tag; a ValueError names a kind this ragassay does not know."""
    kind, _ = parse_tag(tag)
    if kind not in RECORDS:
        raise ValueError(f"{RECORD_FIELD!r} names kind {kind!r}, not one ragassay writes ({', '.join(RECORDS)})")
    return RECORDS[kind]


__all__ = [
    "AnswerItem",
    "CandidateRecord",
    "Check",
    "Chunk",
    "ContextCuts",
    "Coverage",
    "Judgment",
    "LabelEvent",
    "LabelEventsHeader",
    "Nugget",
    "QrelRow",
    "Question",
    "RECORDS",
    "RECORD_FIELD",
    "Reject",
    "RunRow",
    "Strict",
    "WrittenRecord",
    "parse_tag",
    "record_model",
]
