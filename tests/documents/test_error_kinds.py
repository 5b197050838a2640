"""Errors are types: one class per reason, caught by ``except LLMError`` or by their own class,
each with the kind word records keep (unchanged, since files carry it) and a line of its own in the
documentation's table, generated from the classes."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from helpers import nonempty
from ragassay.llm import errors
from ragassay.llm.errors import ERROR_CLASSES, AuthRefused, ErrorKind, LLMError, error_kinds_table

SRC = Path(__file__).resolve().parents[2] / "src" / "ragassay"


def _kinds_raised() -> set[str]:
    """The kind of every ``LLMError("kind", ...)`` written in the source, and the kinds the client's
    answer reader gives (``_parse`` returns them as the first of three)."""
    kinds = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "LLMError"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                kinds.add(node.args[0].value)
            if (
                isinstance(node, ast.Tuple)
                and len(node.elts) == 3
                and isinstance(node.elts[0], ast.Constant)
                and node.elts[0].value in ("invalid", "refusal", "truncated", "message")
            ):
                kinds.add(node.elts[0].value)
    return kinds - {"message"}  # (the reader's own placeholder, never raised)


def test_every_kind_the_code_raises_is_a_named_kind_with_its_class():
    raised = _kinds_raised()
    assert {"auth", "transport", "config", "budget", "invalid", "refusal", "truncated"} <= raised
    assert raised <= {k.value for k in ErrorKind}
    assert set(ERROR_CLASSES) == {k.value for k in ErrorKind}


@pytest.mark.parametrize("kind", [k.value for k in ErrorKind])
def test_the_old_way_of_raising_builds_the_class_of_the_kind(kind):
    error = LLMError(kind, "what happened", 2)
    assert type(error) is ERROR_CLASSES[kind] and isinstance(error, LLMError)
    assert error.kind == kind and type(error.kind) is str and error.attempts == 2
    assert error.reason == f"{kind}: what happened" and json.dumps(error.kind) == f'"{kind}"'
    with pytest.raises(ERROR_CLASSES[kind]):
        raise LLMError(kind, "what happened")


def test_a_class_takes_its_message_alone_and_knows_its_kind():
    error = AuthRefused("the endpoint refused the key")
    assert error.kind == "auth" and str(error) == "the endpoint refused the key" and error.attempts == 0
    assert errors.EndpointUnreachable("down", attempts=4).reason == "transport: down"


def test_a_kind_no_class_names_is_kept_not_lost():
    error = LLMError("vendor-specific", "a reason from elsewhere")
    assert type(error) is LLMError and error.reason == "vendor-specific: a reason from elsewhere"
    with pytest.raises(TypeError, match="takes 2 or 3 arguments"):
        LLMError("only a message")


def test_the_stopping_errors_are_the_endpoints_not_the_items():
    assert {c.kind for c in errors.EARLY_FAILURES} == {"transport", "auth", "request", "cut", "context"}


def test_the_documentation_table_lists_each_kind_once_with_its_class_and_meaning():
    rows = error_kinds_table().splitlines()[2:]
    assert len(rows) == len(ErrorKind)
    for kind, row in nonempty(zip(ErrorKind, rows, strict=True)):
        cls = ERROR_CLASSES[kind.value]
        assert row.startswith(f"| `{kind.value}` | `{cls.__name__}` | ") and cls.__doc__.strip() in row


def test_the_documentation_page_holds_the_generated_table():
    page = (SRC.parents[1] / "docs" / "errors.md").read_text(encoding="utf-8")
    generated = page.split("<!-- generated: error kinds -->\n", 1)[1].split("\n<!-- end generated -->", 1)[0]
    assert generated == error_kinds_table()
