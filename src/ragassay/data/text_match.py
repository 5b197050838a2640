"""When ids do not meet but texts do: answers matched to queries by their question's text.

Answers written by one tool (``a000``...) and queries by another (``q000``...) may ask the very same
questions under ids that never meet. Joined by id, nothing matches and nothing can be scored; the
texts say which is which. A text matches only when it is the same text: Unicode's canonical form,
letter case and runs of whitespace aside (a near text, one word or one mark apart, is another
question). A text that two queries share cannot say which of them an answer is for: such an answer
is not matched, and the match says so rather than guess. The match is counted as a join is
(:mod:`ragassay.data.joins`) and said as a warning: ids that differ are worth knowing about.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import InputError
from .joins import Join

MATCH_SETTINGS = ("auto", "id", "text")  # [data] answers_match: by id, then by text when no id meets


def normalised(text: str) -> str:
    """The text as compared: canonical Unicode (NFC), case folded, whitespace runs as one space."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


@dataclass(frozen=True)
class TextMatch:
    """How the left side's texts met the right side's: ``pairs`` (left id -> right id), the left ids
    whose text is no right text (``unmatched``) and those whose text is several right ids' (``ambiguous``)."""

    left_role: str
    right_role: str
    left_total: int
    pairs: dict[str, str] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()
    ambiguous: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def matched(self) -> int:
        return len(self.pairs)

    def sentence(self) -> str:
        """ "the answers met the queries by question text, not by id: 16 of 16 matched; ids differ (a000 ↔ q000)" """
        first = next(iter(self.pairs.items()), None)
        text = (
            f"{self.left_role} met {self.right_role} by question text, not by id: {self.matched} of "
            f"{self.left_total} matched"
        )
        if first is not None:
            text += f"; ids differ ({first[0]} ↔ {first[1]})"
        if self.unmatched:
            text += (
                f"; {len(self.unmatched)} of {self.left_role}' questions are no text of {self.right_role} "
                f"(e.g. {', '.join(sorted(self.unmatched)[:3])})"
            )
        if self.ambiguous:
            a, ids = sorted(self.ambiguous.items())[0]
            text += (
                f"; {len(self.ambiguous)} of {self.left_role}' questions are the text of more than one of "
                f"{self.right_role} (e.g. {a}: {', '.join(ids)}), so they are not matched: which one would be "
                "a guess"
            )
        return text

    def to_dict(self) -> dict:
        return {
            "by": "text",
            "left": {"role": self.left_role, "ids": self.left_total, "matched": self.matched},
            "right_role": self.right_role,
            "unmatched": sorted(self.unmatched),
            "ambiguous": {k: list(v) for k, v in sorted(self.ambiguous.items())},
        }


def match_by_text(left_role: str, left: Mapping[str, str], right_role: str, right: Mapping[str, str]) -> TextMatch:
    """Each left id's right id, by text (``left`` and ``right``: id -> text)."""
    by_text: dict[str, list[str]] = {}
    for rid, text in right.items():
        by_text.setdefault(normalised(str(text)), []).append(str(rid))
    pairs: dict[str, str] = {}
    unmatched: list[str] = []
    ambiguous: dict[str, tuple[str, ...]] = {}
    for lid, text in left.items():
        found = by_text.get(normalised(str(text)), [])
        if len(found) == 1:
            pairs[str(lid)] = found[0]
        elif found:
            ambiguous[str(lid)] = tuple(sorted(found))
        else:
            unmatched.append(str(lid))
    return TextMatch(left_role, right_role, len(left), pairs, tuple(unmatched), ambiguous)


def answers_to_queries(
    answers: Mapping[str, str],
    queries: Mapping[str, str],
    how: str = "auto",
    answers_source: object = None,
    queries_source: object = None,
    setting: str = 'answers_match = "text"',
) -> TextMatch | None:
    """How answers (id -> question) meet queries (id -> text): None when by id (as they are); a
    :class:`TextMatch` when by question text: ``how`` is ``"text"``, or ``"auto"`` and no id meets.
    No id and no text in common is an :class:`InputError` naming both files and what was tried;
    ``how="id"`` with no id in common names ``setting``, which matches them by text."""
    if not answers or not queries:
        return None
    join = Join.of("query ids", "the answers", answers, "the queries", queries, answers_source, queries_source)
    if how == "id" or (how == "auto" and join.matched):
        if not join.matched:
            try:
                join.require_overlap()
            except InputError as e:
                raise InputError(
                    f"{e.message} If they ask the same questions under other ids, {setting} (in [data]) "
                    "matches the answers to the queries by question text",
                    e.path,
                ) from None
        return None
    found = match_by_text("the answers", answers, "the queries", queries)
    if found.pairs:
        return found
    side = join.left.name(), join.right.name()
    why = (
        f"{len(found.ambiguous)} of the {found.left_total} answers' questions are each the text of more than one "
        f"query (e.g. {sorted(found.ambiguous.items())[0][0]}: {', '.join(sorted(found.ambiguous.items())[0][1])}), "
        "so which query an answer is for would be a guess; the others' are no query's text"
        if found.ambiguous
        else f"none of the {found.left_total} answers' questions is the text of a query (compared exactly, case and "
        "whitespace aside)"
    )
    if how == "text":
        head = f"the answers ({side[0]}) by question text ({setting}): "
    else:
        head = (
            f"no query ids in common between {side[0]} and {side[1]} (the answers: {join.left.some()}; the "
            f"queries: {join.right.some()}), nor texts: "
        )
    raise InputError(
        f"{head}{why}. Are they from the same set? Give the answers the queries' ids, or questions "
        "that are the queries' texts"
    )
