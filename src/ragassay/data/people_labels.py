"""What people-labelled data is, once read: people's grades of (query, chunk) pairs with their texts
(:class:`GradedPairs`), and people's labels of answers (:class:`LabelledAnswers`). The readers are
in :mod:`.people_samples`; the public sets fetched by name in :mod:`.public_sets`."""

from __future__ import annotations

from dataclasses import dataclass, field

from .origin import Origin
from .records import AnswerItem, Chunk


@dataclass(frozen=True)
class GradedPairs:
    """People's relevance grades of (query, chunk) pairs, with the texts of every pair kept. The
    pairs a file named whose texts were missing are counted in ``dropped`` (why -> pairs)."""

    queries: dict[str, str]
    chunks: dict[str, Chunk]
    grades: dict[tuple[str, str], int]
    second: dict[tuple[str, str], int] | None
    scale: tuple[int, int]
    relevant_from: int
    source: str
    citation: str | None
    dropped: dict[str, int] = field(default_factory=dict)  # why -> people-labelled pairs left out
    notes: tuple[str, ...] = ()  # what was assumed or left out, in sentences
    origin: Origin | None = None  # who graded (the qrels' sidecar)
    second_origin: Origin | None = None
    second_join: dict | None = None  # how the second's pairs met the first's


@dataclass(frozen=True)
class LabelledAnswers:
    """People's labels of answers: ``correct``/``incorrect`` when ``binary``, else check's four labels.
    Answers people did not judge, or labels that name no answer, are counted in ``skipped``."""

    answers: list[AnswerItem]
    labels: dict[str, str]
    binary: bool
    second: dict[str, str] | None
    source: str
    citation: str | None
    skipped: dict[str, int] = field(default_factory=dict)  # why -> answers (or labels) left out
    notes: tuple[str, ...] = ()
    origin: Origin | None = None
    join: dict | None = None  # how the answers met the labels
