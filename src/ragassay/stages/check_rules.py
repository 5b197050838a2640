"""Answer checks that need no model: exact match after normalisation, numbers, lists, abstentions.

A rule only ever decides when it is sure; everything else goes to the LLM grader. The rules are
deliberately narrow: a trailing period or "The" must not change a verdict, but a rule must never
call a wrong answer right.
"""

from __future__ import annotations

import re
import string
import unicodedata

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation + "“”‘’–—…"})
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?|[-+]?\.\d+")

_ABSTAIN = re.compile(
    r"\b(i (?:do not|don't|dont) know|i am not sure|i'm not sure|i (?:cannot|can't|am unable to|'m unable to) "
    r"(?:answer|find|say|tell|determine|help with)|unable to (?:answer|determine|find)|"
    r"(?:there is )?(?:no|not enough|insufficient) information|the (?:context|documents?|sources?|passages?) "
    r"(?:do(?:es)? not|don't|doesn't) (?:say|mention|contain|provide|specify)|not mentioned in|"
    r"i (?:do not|don't) have (?:that|this|enough|the) information|no answer)\b")


def normalize(text: str) -> str:
    """Lower case, Unicode-normalised, punctuation and articles removed, whitespace collapsed."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = t.replace("&", " and ")
    t = t.translate(_PUNCT)
    t = _ARTICLES.sub(" ", t)
    return " ".join(t.split())


def _numbers(text: str) -> list[str]:
    return [m.replace(",", "") for m in _NUMBER.findall(text)]


def _decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def _non_numeric_words(text: str) -> set[str]:
    return {w for w in normalize(_NUMBER.sub(" ", text)).split() if w}


def numbers_match(reference: str, response: str) -> bool:
    """The reference is a number (with perhaps a unit); the response states that number, at the
    reference's precision, with no other number and no other words than the reference's."""
    ref_nums, resp_nums = _numbers(reference), _numbers(response)
    if len(ref_nums) != 1 or len(resp_nums) != 1:
        return False
    ref_words = _non_numeric_words(reference)
    if len(ref_words) > 3:  # the reference is a sentence, not a number: not for this rule
        return False
    if not _non_numeric_words(response) <= ref_words | {"about", "approximately", "around", "is", "it", "its", "are"}:
        return False
    places = _decimals(ref_nums[0])
    try:
        return round(float(resp_nums[0]), places) == round(float(ref_nums[0]), places)
    except ValueError:
        return False


def _as_set(text: str) -> set[str] | None:
    parts = [normalize(p) for p in re.split(r",|;|&|\band\b|\n|/", text)]
    parts = [p for p in parts if p]
    return set(parts) if len(parts) >= 2 else None


def lists_match(reference: str, response: str) -> bool:
    ref, resp = _as_set(reference), _as_set(response)
    return ref is not None and ref == resp


def is_abstention(response: str) -> bool:
    """A short answer that declines, with no number in it (a number would be an assertion)."""
    text = unicodedata.normalize("NFKC", response).lower().replace("’", "'")
    if not text.strip():
        return True
    return len(text.split()) <= 30 and not _NUMBER.search(text) and bool(_ABSTAIN.search(text))


def decide(references: list[str], response: str) -> tuple[str, str] | None:
    """(label, rationale) when a rule is sure, else None."""
    if is_abstention(response):
        return "abstained", "the response declines to answer (abstention phrase, nothing asserted)"
    norm = normalize(response)
    for ref in references:
        if norm and norm == normalize(ref):
            return "correct", "exact match with an accepted answer after normalisation"
    for ref in references:
        if numbers_match(ref, response):
            return "correct", f"the same number as the reference ({ref.strip()}) at its precision"
        if lists_match(ref, response):
            return "correct", "the same set of items as the reference"
    return None
