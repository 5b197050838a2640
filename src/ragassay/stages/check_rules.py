"""Answer checks that need no model: exact match, the same number, the same list, a clear abstention.

A rule decides only what it cannot get wrong; everything else goes to the LLM grader. So the
rules are narrow on purpose:

- normalisation drops case, edge punctuation and a leading article, and nothing that carries
  meaning: signs ("-5 °C" is not "5 °C"), currency, percent and degree signs, ``+`` and ``#`` in
  names (C, C++ and C# stay apart), and a capital single letter after a name ("Hepatitis A");
- a number matches only when value, sign, currency, unit and qualifier all agree, compared
  exactly (2.5 is not 2, $29.60 is not $30; 30.0 is 30); codes, versions, dates and times
  ("0420", "Python 3.10", "04/03/2021") are left to exact match or the model;
- lists match in the same order, or in any order only when the question asks for a set (it says
  nothing of order, rank, steps or sequence);
- an abstention is a response whose every sentence declines and asserts nothing ("I'm not sure,
  but I think it is Lisbon" commits to Lisbon: it goes to the model). Exact match runs first, so a
  reference that itself says "no information" is matched, not abstained.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

_EDGE = ".,;:!?\"'“”‘’«»()[]{}…*_`"
_ARTICLES = {"a", "an", "the"}
_DASHES = re.compile(r"(?<![\w.])[\u2212\u2012\u2013\u2014\ufe63\uff0d](?=[\d$€£¥])")  # a minus sign
_OTHER_DASHES = re.compile(r"[\u2012\u2013\u2014\u2015]")


def _clean(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).replace("\u2212", "-").replace("’", "'")
    t = _DASHES.sub("-", t)
    return _OTHER_DASHES.sub(" ", t).replace("&", " and ")


def _tokens(text: str) -> list[str]:
    """Words with edge punctuation removed and a leading article dropped ("The Eiffel Tower").
    Articles elsewhere stay: dropping them would make "Hepatitis A vaccine" equal "Hepatitis vaccine"."""
    out = []
    raws = _clean(text).split()
    for i, raw in enumerate(raws):
        tok = raw.strip(_EDGE)
        if tok.endswith("-") and not tok.startswith("-"):
            tok = tok.rstrip("-")
        if not tok:
            continue
        if not out and tok.lower() in _ARTICLES and i + 1 < len(raws):
            continue
        out.append(tok.casefold())
    return out


def normalize(text: str) -> str:
    """Case, edge punctuation, spacing and articles used as articles removed; meaning kept."""
    return " ".join(_tokens(text))


# ------------------------------------------------------------------------------------- numbers

_NUMBER = re.compile(r"(?<![\w.,/:])([-+]?)([$€£¥]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d,]\d|[.:/]\d)")
# a word right before a number that makes it an identifier, not a quantity
_CODE_CUES = {"version", "v", "release", "build", "rfc", "iso", "pin", "code", "id", "no", "number", "model",
              "ext", "zip", "postcode", "route", "room", "flight", "chapter", "section", "article", "page",
              "line", "port", "api", "sdk", "python", "java", "windows", "ios", "android", "iphone", "node"}
# frame words a response may add around a number without changing it
_FRAME = {"it", "is", "it's", "its", "are", "was", "were", "answer", "they", "this", "that"}


def _quantity(text: str) -> tuple[str, str, Decimal, tuple[str, ...]] | None:
    """(sign, currency, value, other words) of a text that states exactly one plain number."""
    cleaned = _clean(text)
    found = list(_NUMBER.finditer(cleaned))
    if len(found) != 1 or re.search(r"\d[\d.]*[/:]\d|\d\.\d+\.\d", cleaned):
        return None  # no number, several, or a date, time or dotted version
    m = found[0]
    sign, currency, whole, frac = m.group(1), m.group(2), m.group(3), m.group(4) or ""
    if len(whole) > 1 and whole.startswith("0") and not frac:
        return None  # "0420": a code, compared only as text
    before = cleaned[:m.start()].split()
    if before:
        prev = before[-1].strip(_EDGE)
        if prev.lower() in _CODE_CUES or (prev[:1].isupper() and prev.lower() not in _ARTICLES | _FRAME):
            return None  # "Python 3.10", "Windows 11", "Route 66": identifiers, not quantities
    try:
        value = Decimal(whole.replace(",", "") + frac)
    except InvalidOperation:
        return None
    rest = cleaned[:m.start()] + " " + cleaned[m.end():]
    words = tuple(w for w in _tokens(rest) if w not in _FRAME)
    return sign if value else "", currency, value, words


def numbers_match(reference: str, response: str) -> bool:
    """Both state one number; value, sign, currency, unit and qualifier words all agree exactly."""
    ref, resp = _quantity(reference), _quantity(response)
    if ref is None or resp is None:
        return False
    if len(ref[3]) > 3:  # the reference is a sentence, not a quantity: not for this rule
        return False
    return ref == resp


# --------------------------------------------------------------------------------------- lists

_ORDER_CUES = re.compile(r"\b(order|orders|ordered|rank|ranked|ranking|sequence|sequential|chronolog\w*|steps?|"
                         r"first|second|third|last|earliest|latest|finish\w*|place[sd]?|top \d+|before|after|"
                         r"then|sorted|oldest|newest|largest|smallest|highest|lowest)\b", re.I)


def _items(text: str) -> list[str] | None:
    parts = [normalize(p) for p in re.split(r",(?!\d{3}\b)|;|\n|\band\b", _clean(text))]
    parts = [p for p in parts if p]
    return parts if len(parts) >= 2 else None


def lists_match(reference: str, response: str, question: str = "") -> bool:
    """The same items in the same order; in any order only when the question asks for a set."""
    ref, resp = _items(reference), _items(response)
    if ref is None or resp is None or len(ref) != len(resp):
        return False
    if ref == resp:
        return True
    asks_for_set = bool(question.strip()) and not _ORDER_CUES.search(question)
    return asks_for_set and sorted(ref) == sorted(resp)


# --------------------------------------------------------------------------------- abstentions

_SOURCE = r"(?:the |this |these |provided |given |available )*(?:context|documents?|passages?|sources?|text|information|data)"
_DECLINE = [re.compile(p) for p in (
    r"i (?:do not|don't|dont|really don't) know(?: the answer)?(?: to (?:this|that|your)(?: question)?)?",
    r"i(?:'m| am) not sure",
    r"i(?:'m| am) (?:not able|unable) to (?:answer|find|say|tell|determine)(?: (?:this|that|it|the answer))?(?: question)?"
    rf"(?: (?:from|based on|in) {_SOURCE})?",
    r"i (?:cannot|can't|can not) (?:answer|find|say|tell|determine)(?: (?:this|that|it|the answer))?(?: question)?"
    rf"(?: (?:from|based on|in|with) {_SOURCE})?",
    rf"(?:there is|there's) (?:no|not enough|insufficient) information(?: (?:about|on|regarding) (?:this|that|it))?"
    rf"(?: (?:in|from) {_SOURCE})?(?: to answer(?: (?:this|that|the))?(?: question)?)?",
    rf"{_SOURCE} (?:does|do) not (?:say|mention|contain|provide|specify|include|state|cover)"
    r"(?: (?:this|that|it|the answer|this information|that information|an answer|anything about (?:this|that|it)))?",
    rf"(?:(?:it is|it's|this is|that is) )?not (?:mentioned|stated|specified|covered)(?: (?:in|by) {_SOURCE})?",
    r"i (?:do not|don't) have (?:that|this|enough|the|any) information(?: to answer(?: (?:this|that|the))?(?: question)?)?",
    rf"(?:the answer )?cannot be (?:determined|found)(?: (?:from|in) {_SOURCE})?",
    r"no answer|unknown|n/?a|not available|no idea",
)]


def is_abstention(response: str) -> bool:
    """Every sentence declines and none asserts anything (an empty response asserts nothing)."""
    text = _clean(response).lower().strip()
    if not text:
        return True
    sentences = [s.strip(" " + _EDGE) for s in re.split(r"(?<=[.!?])\s+|\n+", text)]
    sentences = [re.sub(r"^(?:sorry|unfortunately|i'm sorry|i am sorry)[, ]+", "", s) for s in sentences if s]
    return bool(sentences) and len(sentences) <= 3 and all(any(p.fullmatch(s) for p in _DECLINE) for s in sentences)


# -------------------------------------------------------------------------------------- decide


def decide(references: list[str], response: str, question: str = "") -> tuple[str, str] | None:
    """(label, rationale) when a rule is sure, else None (the model grades it)."""
    norm = normalize(response)
    for ref in references:
        if norm and norm == normalize(ref):
            return "correct", "exact match with an accepted answer after normalisation"
    if is_abstention(response):
        return "abstained", "every sentence of the response declines to answer; nothing is asserted"
    for ref in references:
        if numbers_match(ref, response):
            return "correct", f"the same quantity as the reference ({ref.strip()}): value, sign, unit and qualifier"
        if lists_match(ref, response, question):
            return "correct", "the same items as the reference" + ("" if _items(ref) == _items(response)
                                                                     else " (the question asks for a set)")
    return None
