"""What many test files share besides the fake model (tests/fake_llm.py): where the bundled example
is, a guard that makes a loop of assertions fail when it would check nothing, and the one way a test
runs a command of the CLI in this process (``cli``, also the ``cli`` fixture of tests/conftest.py), and
the one way a test stops a command that runs until stopped (``stop_process``)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple, TypeVar

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"  # the test files live in folders by kind below it (unit, integration, documents)
EXAMPLE = ROOT / "src" / "ragassay" / "example"  # the bundled example (datasets/example links to it)

T = TypeVar("T")


def nonempty(items: Iterable[T]) -> list[T]:
    """``items`` as a list, asserting there is at least one: a ``for`` loop of asserts over an empty
    sequence passes without checking anything (tests/test_house.py requires this guard)."""
    items = list(items)
    assert items, "nothing to check: this loop of assertions would pass without checking anything"
    return items


def store_contents(store) -> list[tuple[str, int, bool]]:
    """What an output store holds, in its order: each key with its newest record's location and
    whether that record failed (two stores of the same files hold the same)."""
    return [(k, store.location(k), store.failed(k)) for k in store.keys()]


class Said(NamedTuple):
    """What one command said: its exit code and what it printed on each stream. It unpacks as
    ``code, out, err`` for the tests that take it as a tuple."""

    code: int
    out: str
    err: str

    @property
    def json(self) -> dict:
        """Standard output read as the one JSON document a ``--format json`` command prints."""
        return json.loads(self.out)

    @property
    def text(self) -> str:
        """Both streams together, for a test that asks only whether something was said."""
        return self.out + self.err


def cli(*args: object, env: Mapping[str, str] | None = None) -> Said:
    """Run one command as a user types it, in this process (the CLI's ``main``, no child process:
    a subprocess adds start-up time and nothing a test here checks). ``env`` is set for the
    command's duration only; what it printed is captured apart from pytest's own capture."""
    from ragassay.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Said(code, out.getvalue(), err.getvalue())


def stop_process(proc: subprocess.Popen, sig: int, timeout: float = 30) -> tuple[str, str]:
    """Send ``sig`` to a command that runs until stopped (``ragassay label``) and return what it said.
    A command that does not end in ``timeout`` seconds is killed, not left running past its test (where
    it would hold its port and its output's lock), and the test fails saying so."""
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"running {timeout} s after signal {sig}, so killed; it said {out!r} {err!r}") from None
