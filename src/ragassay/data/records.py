"""The data contract: one pydantic model per kind of JSON Lines record (see DESIGN.md).

Every stage reads and writes these; a field's meaning never depends on which stage wrote it.
Records that come out of an LLM stage carry ``status`` (ok | error) and, on error, ``error`` with
the reason and a null label: a failure is never disguised as a default grade.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Difficulty = Literal["easy", "medium", "hard"]
Status = Literal["ok", "error"]
CoverageLabel = Literal["FULL", "PARTIAL", "NONE"]
Support = Literal["support", "partial_support", "not_support"]
CheckLabel = Literal["correct", "partial", "hallucinated", "abstained"]
Grounded = Literal["supported", "unsupported", "contradicted"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", str_strip_whitespace=False)


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


class Question(_Record):
    """A generated question with its reference answer and the chunks holding the evidence."""

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


class Judgment(_Record):
    """An LLM relevance grade 0-3 for one query x chunk, or an error record with a null grade.
    ``key`` fingerprints what the grade depends on (texts, model, prompt, settings)."""

    query_id: str
    chunk_id: str
    key: str | None = None
    grade: int | None = Field(default=None, ge=0, le=3)
    reasoning: str | None = None
    status: Status = "ok"
    error: str | None = None
    model: str | None = None
    prompt: str | None = None

    @model_validator(mode="after")
    def _status_matches(self) -> Judgment:
        _check_status(self.status, self.grade, self.error, "grade")
        return self


class Nugget(_Record):
    """A piece of information the answer needs, and whether the retrieved chunks support it."""

    text: str
    vital: bool = True
    support: Support
    chunk_ids: list[str] = Field(default_factory=list)


class Coverage(_Record):
    """Whether the retrieved set covers what the answer needs: FULL, PARTIAL or NONE, for one query
    of one run (``run``) and the retrieved ids it measured (``chunk_ids``)."""

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

    @field_validator("reference")
    @classmethod
    def _reference_given(cls, v: str | list[str]) -> str | list[str]:
        refs = [v] if isinstance(v, str) else v
        if not refs or not all(r.strip() for r in refs):
            raise ValueError("the reference must be a non-empty string (or a non-empty list of non-empty accepted "
                             "answers): there is nothing to grade against")
        return v


class Check(_Record):
    """The verdict on one answer: correct / partial / hallucinated / abstained, or an error."""

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

    @model_validator(mode="after")
    def _status_matches(self) -> Check:
        _check_status(self.status, self.label, self.error, "label")
        return self


def _check_status(status: str, value: Any, error: str | None, what: str) -> None:
    if status == "ok" and value is None:
        raise ValueError(f"status 'ok' needs a {what}")
    if status == "error":
        if value is not None:
            raise ValueError(f"status 'error' must have a null {what}")
        if not error:
            raise ValueError("status 'error' needs the reason in 'error'")


class Reject(BaseModel):
    """A candidate question generate dropped, or a chunk it would not ask about, with the reason.
    One shape for every cause: what is not known for a cause (the question of a failed call, the
    difficulty of an unfit chunk) is null. ``kind`` is the question's kind (factoid, bridge, ...)."""

    model_config = ConfigDict(extra="forbid")

    chunk_ids: list[str]
    difficulty: Difficulty | None = None
    question: str | None = None
    answer: str | None = None
    style: str | None = None
    kind: str | None = None
    reason: str
    scores: dict[str, Any] = Field(default_factory=dict)


__all__ = ["AnswerItem", "Check", "Chunk", "Coverage", "Judgment", "Nugget", "QrelRow",
           "Question", "Reject", "RunRow"]
