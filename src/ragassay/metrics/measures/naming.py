"""How measures are spelt for people: the shape of a written name, the list the help and the README
show, and the closest names offered when a name is not known.

These sit apart from parsing because the command line's help reads :func:`measure_names` without
needing anything else of the metrics, and because a misspelt name is answered by these alone.
"""

from __future__ import annotations

import re

from .registry import ALIASES, EXAMPLES, MEASURES

# a written name: the measure, its parameters in parentheses, and a cutoff after @, _ or .
NAME_SHAPE = re.compile(
    r"^(?P<name>[^(@]+?)(?:\((?P<params>[^)]*)\))?"
    r"(?:(?P<sep>@|_|\.)(?P<k>\d+(?:\.\d+)?|\.\d+))?$"
)


def measure_names() -> list[str]:
    """Every measure as a user writes it, in the registry's order: ``p@k``, ``mrr``, ``mrr@k``, ...
    (help texts and the README list exactly these; a test keeps them in step)."""
    names: list[str] = []
    for name, (need, _) in MEASURES.items():
        example = EXAMPLES.get(name)
        if example:
            names.append(example)
            continue
        if need != "required":
            names.append(name)
        if need != "none":
            names.append(f"{name}@k")
    return names


def unknown_metric(raw: str) -> str:
    """The error for a name no measure has, with the closest names first: ordered by edit distance
    to what was written (``mapp`` is one edit from ``map``, three from ``map@10``), a cutoff kept when
    one was written (``mrr@k``, ``ndcg@1O``: the cutoff's digits are what went wrong)."""
    close = suggestions(raw)
    if close:
        more = f" (or {', '.join(repr(c) for c in close[1:])})" if len(close) > 1 else ""
        return f"unknown metric {raw!r}; did you mean {close[0]!r}?{more}"
    return (
        f"unknown metric {raw!r}; known: {', '.join(measure_names())} (trec_eval, ir_measures and ranx names work too)"
    )


def edit_distance(a: str, b: str) -> int:
    """Edits from one short name to another: insertions, deletions, substitutions and swaps of two
    neighbours (``ndgc``/``ndcg``), each 1 (optimal string alignment)."""
    d = [[i + j if not i * j else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def _written_name(text: str) -> tuple[str, str | None, bool]:
    """The name part of what was written, its cutoff when it is a number, and whether a cutoff was
    written at all (``ndcg@1O``, ``mrr@k`` and ``ndcg@ten`` ask for a cutoff that is not a number)."""
    m = NAME_SHAPE.match(text)
    if m and m.group("k") is not None:
        name, k, wants_k = m.group("name"), m.group("k"), True
    elif "@" in text:
        name, k, wants_k = text.rsplit("@", 1)[0], None, True
    else:
        name, k, wants_k = (m.group("name") if m else text), None, False
    return name.split("(")[0], k, wants_k


def suggestions(raw: str, n: int = 3) -> list[str]:
    """Up to ``n`` measure names close to ``raw``, the closest first (edit distance of the name, then
    whether it has a cutoff as ``raw`` has one, then the registry's order); only the names as close
    as the closest, and the closest measure's other form (``map`` and ``map@10``)."""
    name, k, wants_k = _written_name(raw.strip().lower())
    scored: dict[str, tuple[int, int, int]] = {}
    order = {c: i for i, c in enumerate(MEASURES)}
    for alias, canonical in ALIASES.items():
        need = MEASURES[canonical][0]
        d = edit_distance(name, alias)
        if d > max(1, len(name) // 3):
            continue
        forms = ([(canonical, wants_k)] if need != "required" else []) + (
            [(f"{canonical}@{k or 10}", not wants_k)] if need != "none" else []
        )
        for form, off in forms:
            key = (d, int(off), order[canonical])
            if form not in scored or key < scored[form]:
                scored[form] = key
    ranked = sorted(scored, key=scored.__getitem__)
    if not ranked:
        return []
    best = scored[ranked[0]]
    return [f for f in ranked if scored[f][0] == best[0] and (scored[f][1] == best[1] or scored[f][2] == best[2])][:n]
