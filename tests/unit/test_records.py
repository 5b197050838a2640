"""The data contract: failures are records with a reason, never a silent default."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragassay.data.records import Check, Chunk, Coverage, Judgment, Question


def test_error_records_carry_a_reason_and_no_label():
    j = Judgment(query_id="q", chunk_id="c", status="error", error="timeout after 3 attempts")
    assert j.grade is None
    with pytest.raises(ValidationError, match="needs the reason"):
        Judgment(query_id="q", chunk_id="c", status="error")
    with pytest.raises(ValidationError, match="must have a null grade"):
        Judgment(query_id="q", chunk_id="c", grade=2, status="error", error="x")
    with pytest.raises(ValidationError, match="needs a grade"):
        Judgment(query_id="q", chunk_id="c")
    with pytest.raises(ValidationError):
        Judgment(query_id="q", chunk_id="c", grade=4)
    with pytest.raises(ValidationError, match="needs a coverage"):
        Coverage(query_id="q")
    with pytest.raises(ValidationError, match="needs a label"):
        Check(id="a")
    assert Check(id="a", label="abstained", decided_by="rule").label == "abstained"


def test_question_and_chunk_fields():
    q = Question(id="q1", question="Why?", answer="Because.", difficulty="hard", chunk_ids=["c1", "c2"])
    assert q.model_dump()["chunk_ids"] == ["c1", "c2"]
    with pytest.raises(ValidationError):
        Question(id="q1", question="Why?", answer="x", difficulty="impossible", chunk_ids=[])
    assert Chunk(id=7, text="t").id == "7"
    assert Chunk(id="c", text="").text == ""
    with pytest.raises(ValidationError):
        Chunk(id="", text="x")
    with pytest.raises(ValidationError):
        Chunk(id="c")
