"""Advice in an error names only flags the command at hand takes.

The library's errors do not know which command raised them; a clause of an error that begins with a
flag (``--run-format names it``) is advice to that command, and is said only when the command has
the flag: judge, which reads a run but names no run format, is never told to use ``--run-format``.
"""

from __future__ import annotations

import argparse
import re

_LEADING_FLAG = re.compile(r"^\s*(--[a-z][a-z0-9-]*)")
# "give it as --chunks", "give it as QRELS": advice naming the slot (a flag or a positional) to use
_GIVE_AS = re.compile(r"^\s*give it as (?:a |an )?(--[a-z][a-z0-9-]*|[A-Z][A-Z_]+)\b")


def flags_of(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string the command's parser takes."""
    return {o for a in parser._actions for o in a.option_strings}


def slots_of(parser: argparse.ArgumentParser) -> set[str]:
    """Every flag and every positional (by its metavar as --help shows it: QRELS, RUN) the command takes."""
    positional = {
        str(a.metavar or a.dest).upper()
        for a in parser._actions
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    }
    return flags_of(parser) | positional


def advises_absent(clause: str, mine: set[str]) -> bool:
    """Whether a clause of advice names a flag or an argument the command does not take."""
    m = _LEADING_FLAG.match(clause) or _GIVE_AS.match(clause)
    return m is not None and m.group(1) not in mine


def own_hints(error: BaseException, parser: argparse.ArgumentParser | None) -> str:
    """The error's text without the clauses (``; `` apart) that advise a flag or an argument
    ``parser`` lacks (judge, which has no QRELS, is not told "give it as QRELS")."""
    text = str(error)
    if parser is None or "; " not in text:
        return text
    mine = slots_of(parser)
    head, *clauses = clauses_of(text)
    kept = [c for c in clauses if not advises_absent(c, mine)]
    return "; ".join([head, *kept])


def clauses_of(text: str) -> list[str]:
    """``text`` cut at each ``; `` outside parentheses (a clause's own aside stays with it)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth <= 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    return out + [text[start:]]
