"""The face is thin: a command's handler reads its flags, calls the library and renders what comes
back. A branch in a handler is logic that the Python API and the other commands do not share; the
only one allowed is an argument check (``if ...: raise UsageError(...)``)."""

from __future__ import annotations

import ast
import inspect

import pytest

from ragassay.cli import build_parser

# handlers that may hold logic beyond argument checks, each with why (none now: a new one needs a reason)
NOT_YET: dict[str, str] = {}


def _handlers():
    import argparse

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {p.get_default("handler").__name__: p.get_default("handler") for p in sub.choices.values()}


def _is_argument_check(node: ast.If) -> bool:
    body = node.body
    return (
        not node.orelse
        and len(body) == 1
        and isinstance(body[0], ast.Raise)
        and isinstance(body[0].exc, ast.Call)
        and getattr(body[0].exc.func, "id", "") == "UsageError"
    )


def test_the_list_of_handlers_not_yet_thin_names_real_handlers():
    assert set(NOT_YET) <= set(_handlers())


@pytest.mark.parametrize("name", sorted(set(_handlers()) - set(NOT_YET)))
def test_a_handler_holds_no_branch_but_argument_checks(name):
    tree = ast.parse(inspect.getsource(_handlers()[name]).lstrip())
    (function,) = tree.body
    branches = [
        f"line {n.lineno}: {type(n).__name__}"
        for n in ast.walk(function)
        if isinstance(n, (ast.For, ast.While, ast.Try, ast.With, ast.Match))
        or (isinstance(n, ast.If) and not _is_argument_check(n))
    ]
    assert branches == [], f"{name} holds logic: {branches}"


@pytest.mark.parametrize("name", ["run_generate", "run_judge", "run_check"])
def test_an_llm_stage_handler_is_one_library_call_rendered(name):
    tree = ast.parse(inspect.getsource(_handlers()[name]).lstrip())
    calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    conditionals = [n for n in ast.walk(tree) if isinstance(n, (ast.If, ast.IfExp, ast.BoolOp))]
    assert conditionals == [] and calls.count("render_stage") == 1 and calls.count(name.removeprefix("run_")) == 1
