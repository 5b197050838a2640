"""How the report says a number, a rate, a statistic or who labelled a file, in the same words in
every section and on every query page."""

from __future__ import annotations

from typing import Any

from ..metrics.rates import rate_text


def labelled_by(origin: Any) -> str:
    """Who made a file's labels, as the report names them: "people (alice + bob)", the model's name
    ("gpt-4o"), "mixed (alice + gpt-4o)", or "unknown" (no origin, or one that names no labeller)."""
    kind = "unknown" if origin is None else origin.kind
    if kind == "unknown":
        return "unknown"
    names = list(dict.fromkeys("unknown" if lab.by == "unknown" else lab.name for lab in origin.labellers))
    if kind == "model":
        return " + ".join(names)
    return f"{'people' if kind == 'people' else 'mixed'} ({' + '.join(names)})"


def clip(text: str, n: int) -> str:
    """The text cut to ``n`` characters with an ellipsis, so a long question or chunk keeps a page light."""
    return text if len(text) <= n else text[:n].rstrip() + " …"


def num(v: float | None) -> str:
    """A number to three places, or "n/a" when there is none."""
    return "n/a" if v is None else f"{v:.3f}"


def share(v: float) -> str:
    """A share as a percentage that never rounds an incomplete share up to "100%"."""
    shown = f"{v:.0%}"
    return "99%+" if shown == "100%" and v < 1.0 else shown


def stat(v: float | None, why: str | None) -> str:
    """A statistic, or why there is none (a kappa of a side with one grade is not 0: it is not given)."""
    return f"{v:.3f}" if v is not None and v == v else f"not given ({why or 'undefined'})"


def shown_rate(r: dict, unit: str = "answers", total: int | None = None) -> str:
    """A rate with the items it rests on, its interval or why it has none (metrics.rates)."""
    return rate_text(r, unit, total)
