"""Advice in an error names only flags the command at hand takes.

The library's errors do not know which command raised them; a clause of an error that begins with a
flag (``--run-format names it``) is advice to that command, and is said only when the command has
the flag: judge, which reads a run but names no run format, is never told to use ``--run-format``.
"""

from __future__ import annotations

import argparse
import re

_LEADING_FLAG = re.compile(r"^\s*(--[a-z][a-z0-9-]*)")


def flags_of(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string the command's parser takes."""
    return {o for a in parser._actions for o in a.option_strings}


def own_hints(error: BaseException, parser: argparse.ArgumentParser | None) -> str:
    """The error's text without the clauses (``; `` apart) that advise a flag ``parser`` lacks."""
    text = str(error)
    if parser is None or "; --" not in text:
        return text
    mine = flags_of(parser)
    head, *clauses = text.split("; ")
    kept = [c for c in clauses if (m := _LEADING_FLAG.match(c)) is None or m.group(1) in mine]
    return "; ".join([head, *kept])
