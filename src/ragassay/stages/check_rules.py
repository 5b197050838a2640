"""Answer checks that need no model: only the two that cannot be wrong.

- **correct**: the response *is* an accepted answer as written. Three differences that never carry
  meaning are allowed: runs of whitespace, sentence punctuation at the very end (or a pair of quotes
  or emphasis marks around the whole text), and a leading English article before a word. Case,
  digits, signs, symbols, units, inner punctuation and every Unicode character are compared exactly
  as written: no case folding and no Unicode normalisation ("5 MW" is not "5 mW", "10⁶" is not
  "106", "3.10" is not "3.1", "A-" is not "A").
- **abstained**: the response is empty, whitespace, or sentence punctuation and dashes alone
  ("…", "?", "—"). Symbols, brackets, quotes and emoji can be answers ("%", "[]" for an empty
  list, '""' for an empty string, "-" for minus, "👍" for yes), so they go to the model.

Everything else (numbers in other forms, units, versions, lists and their order, hedges, refusals,
other languages) is for the model. What a rule notices on the way is passed to the model as a
neutral note (:func:`notes`), never as a label.
"""

from __future__ import annotations

import unicodedata

from ..data.records import CheckLabel

# sentence punctuation that may end an answer without changing it (Latin and CJK); not "?" (a
# doubt: "Paris?") and not an ellipsis (a hesitation: "Paris...")
_TERMINAL = ".,;:!。，、；：！"
# marks that may wrap a whole answer: quotes and Markdown emphasis (never brackets: "(500)" is
# a negative amount in accounting)
# (not underscores: "__init__" is not "init")
_WRAPS = (
    ("**", "**"),
    ("*", "*"),
    ("`", "`"),
    ('"', '"'),
    ("'", "'"),
    ("“", "”"),
    ("‘", "’"),
    ("«", "»"),
    ("»", "«"),
    ("„", "“"),
    ("‚", "‘"),
    ("「", "」"),
    ("『", "』"),
)
# "the" in any case; "a" and "an" only in lower case: a capital A is often a letter ("A major",
# "A levels"), and "An" a name ("An Lushan")
_ARTICLES = ("the", "The", "THE", "a", "an")


def _trim_edges(text: str) -> str:
    """Trailing sentence punctuation and wrapping quotes/emphasis off, until nothing changes."""
    while True:
        before = text
        text = text.strip()
        while text and text[-1] in _TERMINAL:
            if text[-1] == "!" and len(text) > 1 and text[-2].isdigit():
                break  # "5!" is a factorial, not an exclamation
            if text[-1] == "." and text[-2:-1] == ".":
                break  # "Paris..." trails off: not a full stop
            text = text[:-1].rstrip()
        for left, right in _WRAPS:
            if len(text) > len(left) + len(right) and text.startswith(left) and text.endswith(right):
                text = text[len(left) : -len(right)]
                break
        if text == before:
            return text


def _drop_article(text: str) -> str:
    """A leading English article before a word ("The Nile" -> "Nile"); not before a number, a
    symbol, or another article ("The The" stays: it is a band's name), and never a capital "A"."""
    head, _, rest = text.partition(" ")
    if head in _ARTICLES and rest:
        nxt = rest.split(" ", 1)[0]
        if nxt[:1].isalpha() and nxt.lower() not in ("the", "a", "an"):
            return rest
    return text


def exact_form(text: str) -> str:
    """The text as written, with only meaningless differences removed (see the module docstring)."""
    text = " ".join(text.split())
    return _trim_edges(_drop_article(_trim_edges(text)))


# ---------------------------------------------------------------------------------- abstention

# punctuation that only shapes sentences (Latin, Spanish, Greek, Arabic, Urdu, Devanagari, Ethiopic,
# CJK); every other mark can be an answer ("%", "#", "@", "/", "[]", '""', "-")
_SENTENCE_MARKS = ".,;:!?…¿¡\u037e؟،؛۔।॥።፧。、，；：！？"


def _cannot_answer(ch: str) -> bool:
    """Whitespace, an invisible format character, sentence punctuation, or a dash (not the
    hyphen-minus, which is also a minus sign)."""
    if ch.isspace() or ch in _SENTENCE_MARKS:
        return True
    return unicodedata.category(ch) == "Cf" or (unicodedata.category(ch) == "Pd" and ch != "-")


def says_nothing(response: str) -> bool:
    """Empty, whitespace, or sentence punctuation and dashes alone."""
    return all(_cannot_answer(ch) for ch in response)


# -------------------------------------------------------------------------------------- decide


def decide(references: list[str], response: str, question: str = "") -> tuple[CheckLabel, str] | None:
    """(label, rationale) when a rule is sure, else None (the model grades it). ``question`` is
    not used by a rule: whether order or wording matters is for the model."""
    mine = exact_form(response)
    if mine:
        for ref in references:
            if exact_form(ref) == mine:
                return "correct", "the response is an accepted answer as written (spacing and end punctuation aside)"
    if says_nothing(response):
        return "abstained", "the response is empty or holds only punctuation"
    return None


def notes(references: list[str], response: str) -> list[str]:
    """What a rule noticed without being sure, for the model to weigh: never a label."""
    mine = exact_form(response)
    out = []
    for ref in references:
        theirs = exact_form(ref)
        if not mine or not theirs or mine == theirs:
            continue
        if mine.casefold() == theirs.casefold():
            out.append(
                f"The response differs from the accepted answer {theirs!r} only in letter case; "
                "decide whether case changes the meaning here (units, symbols, codes)."
            )
        elif "".join(mine.split()) == "".join(theirs.split()):
            out.append(f"The response differs from the accepted answer {theirs!r} only in spacing.")
        elif unicodedata.normalize("NFKC", mine) == unicodedata.normalize("NFKC", theirs):
            out.append(
                f"The response differs from the accepted answer {theirs!r} only in the form of some "
                "characters (superscripts, full-width or compatibility forms); decide whether that "
                "changes the meaning."
            )
    return out
