"""The answer schemas of the short prompts and of users' prompt files (see llm/prompt_files.py).

A small model asked for one decision, with a sentence of reasoning before it if it likes, follows
the schema more often than one asked for three fields of reasoning first; a user's own rubric says
its own steps in its text. So these schemas hold the decision and an optional reasoning only."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..llm.reading import Decision, Explanation


class ShortRelevance(BaseModel):
    """A 0-3 grade of one passage for one query, reasoning optional and first."""

    reasoning: Explanation | None = None
    grade: Decision = Field(ge=0, le=3)


class ShortVerdict(BaseModel):
    """Whether the response says the correct answer: one label, reasoning optional and first."""

    reasoning: Explanation | None = None
    # partial last: a small model reads an option in the middle of the list as the safe middle ground
    label: Literal["correct", "hallucinated", "abstained", "partial"]
