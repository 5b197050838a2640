"""What generate asks the model to fill (a question with its evidence, a blind answer, a comparison,
a critique), the options of a set, and the small rules every part shares: which chunks are gold,
their grades, a question's id and the one shape of a reject."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from ...data.records import Difficulty, Reject
from ...llm.reading import Decision, Explanation

# hardest to fill first, relabels land in easy; then the questions the corpus cannot answer as asked
LEVEL_ORDER: tuple[Difficulty, ...] = ("hard", "medium", "easy", "false_premise", "unanswerable")
MIX_NAMES: tuple[Difficulty, ...] = ("easy", "medium", "hard", "unanswerable", "false_premise")  # --mix's names
SEED_USES = 2  # each usable chunk seeds at most this many candidates in a run: then the chunks are spent


def ceiling_for(estimated_calls: int) -> int:
    """generate's default ceiling: three times the calls of the target when every first candidate is
    accepted (room for rejections), and a little more for a tiny target."""
    return 3 * max(1, estimated_calls) + 20


class Evidence(BaseModel):
    """A verbatim quote from an offered chunk, and whether it states the answer or bridges to it."""

    chunk_id: str
    quote: str
    role: Literal["answer", "bridge"]


MULTI_HOP = ("bridge", "comparison", "aggregation")


class GeneratedQuestion(BaseModel):
    """What the model writes for a candidate: the question, its answer, its kind and its evidence."""

    question: str
    answer: str
    kind: Literal["factoid", "yes_no", "how_to", "conditional", "multi_fact", "bridge", "comparison", "aggregation"]
    evidence: list[Evidence] = Field(min_length=1)


class BlindAnswer(BaseModel):
    """An answer from the passages alone, written without seeing the proposed answer."""

    own_answer: str
    answerable: bool
    reason: Explanation


class SameAnswer(BaseModel):
    """Whether two answers to a question say the same thing."""

    same: bool
    reason: Explanation


class Critique(BaseModel):
    """A critic's scores of a question, 1-5 each: a question below ``CRITIC_MIN`` on any is dropped."""

    self_contained: Decision = Field(ge=1, le=5)
    clear: Decision = Field(ge=1, le=5)
    realistic: Decision = Field(ge=1, le=5)
    reason: Explanation


CRITIC_MIN = 3  # a question scoring below this on any point is dropped


# what each style asks for: the forms real users type into a search box
STYLES = {
    "question": "a well-formed question in a full sentence.",
    "keywords": "a short keyword query of 3 to 6 words, no question mark, the way people type into a search box "
    "(e.g. 'refund time gift card').",
    "lowercase": "a casual question typed quickly: all lower case, little punctuation, one small typo.",
    "task": "a task the user wants to get done, starting 'how do i' or 'how can i' (e.g. 'how do i return a gift').",
}


@dataclass
class GenerateOptions:
    """What a question set is asked for: its size, its mix of levels and styles, and what it may spend.

    ``ragassay.generate(options=...)`` takes it as ``JudgeOptions`` is taken, its fields named like the
    command's flags: ``limit`` questions, else ``per_chunk`` for each chunk fit to ask about; ``mix`` and
    ``styles`` as shares by name. Two fields are worked out by ``ragassay.generate`` and are not given
    there: ``total``, the number the run aims for (from ``limit`` and ``per_chunk`` once the chunks are
    read), and ``max_calls``, the endpoint's ceiling (``max_calls=`` or the config's). The stage itself
    reads ``total``."""

    total: int = 30
    mix: dict[str, float] = field(default_factory=lambda: {"easy": 0.4, "medium": 0.4, "hard": 0.2})
    seed: int = 0
    attempts_per_question: float = 2.0  # candidate chunks tried per wanted question, at most
    max_calls: int | None = None  # a ceiling on generate's requests (default: 3x the target's estimate)
    max_per_doc: int | None = None  # candidates per document before others run out (default: total / 4)
    styles: dict[str, float] = field(
        default_factory=lambda: {"question": 0.4, "keywords": 0.25, "lowercase": 0.15, "task": 0.2}
    )
    quiet: bool = False
    limit: int | None = None  # the questions wanted (--limit); None: per_chunk for each chunk fit
    per_chunk: float = 1.0  # questions per chunk fit to ask about, when no limit is given


# the fields of GenerateOptions that ragassay.generate works out itself: given in options=, each is refused
GENERATE_WORKED_OUT = ("total", "max_calls")


def cited(generated: GeneratedQuestion, offered: Sequence[str]) -> list[str]:
    """The chunks the evidence cites, in the order offered: only these are gold."""
    used = {e.chunk_id for e in generated.evidence}
    return [c for c in offered if c in used]


def gold_grades(generated: GeneratedQuestion, gold: Sequence[str]) -> dict[str, int]:
    """Grade 3 for a chunk that states the answer, 2 for one that only supports a hop."""
    roles: dict[str, set[str]] = {}
    for e in generated.evidence:
        roles.setdefault(e.chunk_id, set()).add(e.role)
    return {c: 3 if "answer" in roles.get(c, {"answer"}) else 2 for c in gold}


def question_id(chunk_ids: Sequence[str], difficulty: str, question: str) -> str:
    """A question's id: a hash of its gold chunks, its level and its text, the same in every run."""
    h = hashlib.sha256(json.dumps([list(chunk_ids), difficulty, question]).encode()).hexdigest()[:10]
    return f"q-{h}"


def reject_record(
    chunk_ids: Sequence[str],
    difficulty: Difficulty | None,
    question: str | None,
    answer: str | None,
    reason: str,
    scores: dict | None = None,
    style: str | None = None,
    kind: str | None = None,
) -> dict:
    """A reject, in the one shape every cause of a reject shares (:class:`Reject`)."""
    return Reject(
        chunk_ids=list(chunk_ids),
        difficulty=difficulty,
        question=question,
        answer=answer,
        style=style,
        kind=kind,
        reason=reason,
        scores=scores or {},
    ).model_dump(mode="json")
