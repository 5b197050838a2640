"""Loose text matching for finding a quote inside a chunk (generate's evidence, remap).

This is for *locating* text, where a missed match only costs a fuzzy fallback: case, compatibility
forms (NFKC), edge punctuation and a leading article are ignored. It must never decide a label:
check's rules compare answers as written (see check_rules.py).
"""

from __future__ import annotations

import re
import unicodedata

_EDGE = ".,;:!?\"'“”‘’«»()[]{}…*_`"
_ARTICLES = {"a", "an", "the"}
_MINUS = re.compile(r"(?<![\w.])[\u2212\u2012\u2013\u2014\ufe63\uff0d](?=[\d$€£¥])")
_DASHES = re.compile(r"[\u2012\u2013\u2014\u2015]")


def loose_text(text: str) -> str:
    """Words casefolded, compatibility forms folded, edge punctuation and a leading article removed."""
    out: list[str] = []
    t = unicodedata.normalize("NFKC", text).replace("\u2212", "-").replace("’", "'")
    t = _DASHES.sub(" ", _MINUS.sub("-", t)).replace("&", " and ")
    raws = t.split()
    for i, raw in enumerate(raws):
        tok = raw.strip(_EDGE)
        if tok.endswith("-") and not tok.startswith("-"):
            tok = tok.rstrip("-")
        if not tok:
            continue
        if not out and tok.lower() in _ARTICLES and i + 1 < len(raws):
            continue
        out.append(tok.casefold())
    return " ".join(out)
