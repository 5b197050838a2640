"""Outputs never destroy inputs: every command's file arguments are checked before it runs.

Which arguments name files is **declared** where each argument is defined, never guessed from its
value: :func:`reads` (a file the command reads; the answer cache too), :func:`writes` (a file it
writes), :func:`folder` (a directory, checked by the command itself), :func:`module` (a
``path/to/file.py:function``) and :func:`text` (a value that is not a path: a metric list, a
label, a name of any length). The guard below looks at declared files only: no other value is
ever opened or stat'ed (a 300-character metric list is text, not a file name that is "too long").
``tests/test_declared_args.py`` fails on any argument taking a value that declares nothing.

An output that is an input, or another output, is a usage error naming both, whether the two
paths are spelt alike, reach one file through a symlink, or are hard links to it. Every output file
is then locked for the whole command (see :class:`ragassay.runtime.engine.OutputLock`).
"""

from __future__ import annotations

import argparse
import errno
import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import UsageError

ROLES = ("input", "output", "folder", "module", "text")
ROLE_ATTRIBUTE = "ragassay_role"
_A = TypeVar("_A", bound=argparse.Action)


def _declare(action: _A, role: str) -> _A:
    setattr(action, ROLE_ATTRIBUTE, role)
    return action


def reads(action: _A) -> _A:
    """Declare ``action`` a file the command reads ('-' is standard input)."""
    return _declare(action, "input")


def writes(action: _A) -> _A:
    """Declare ``action`` a file the command writes: checked against every input, its folder made, locked."""
    return _declare(action, "output")


def folder(action: _A) -> _A:
    """Declare ``action`` a directory (read or written); the command checks it itself."""
    return _declare(action, "folder")


def module(action: _A) -> _A:
    """Declare ``action`` a ``module:function`` whose part before the colon may be a ``.py`` file read."""
    return _declare(action, "module")


def text(action: _A) -> _A:
    """Declare ``action`` a value that is not a path, whatever it looks like."""
    return _declare(action, "text")


def role_of(action: argparse.Action) -> str | None:
    """The declared role of an argument, or None when it declares none."""
    return getattr(action, ROLE_ATTRIBUTE, None)


@dataclass(frozen=True)
class FileArg:
    flag: str  # as the user would write it: -o, --qrels-out, ANSWERS
    path: Path
    text: str  # the path as the user wrote it, for messages

    def same_file(self, other: FileArg) -> bool:
        a, b = _real(self.path), _real(other.path)
        if a == b:
            return True
        try:
            sa, sb = self.path.stat(), other.path.stat()
        except OSError:
            return False
        return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)  # hard links to one file


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare as written
        return Path(os.path.abspath(path))


def _flag(action: argparse.Action) -> str:
    if action.option_strings:
        return action.option_strings[0]
    return (action.metavar if isinstance(action.metavar, str) and action.metavar else action.dest).upper()


def _values(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _values(v)


def file_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace, command: str
) -> tuple[list[FileArg], list[FileArg]]:
    """(inputs, outputs) of one parsed command, from the declarations alone: an input is a
    declared input (or a module's ``.py`` file) that exists; an output is a declared output."""
    inputs, outputs = [], []
    for action in parser._actions:
        role = role_of(action)
        value = getattr(args, action.dest, None)
        if role not in ("input", "output", "module") or value is None:
            continue
        for text_ in _values(value):
            if not text_ or text_ == "-":
                continue
            if role == "module":
                text_ = text_.split(":", 1)[0]
                if not text_.endswith(".py"):
                    continue  # package.module:function names no file
            path = Path(text_)
            if role == "output":
                outputs.append(FileArg(_flag(action), path, text_))
            elif _is_file(path):
                inputs.append(FileArg(_flag(action), path, text_))
                side = Path(f"{text_}.origin.json")  # who made its labels: part of the input
                if _is_file(side):
                    inputs.append(FileArg(_flag(action), side, f"{side} (who labelled {text_})"))
    return inputs, outputs


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a declared input whose name the system refuses: its reader says so
        return False


def check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace, command: str) -> list[FileArg]:
    """Refuse (exit 2) a command whose output is one of its inputs or another of its outputs;
    return its outputs."""
    inputs, outputs = file_args(parser, args, command)
    for out in outputs:
        try:
            os.stat(out.path)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ENOTDIR):  # too long a name, a loop, no permission
                raise UsageError(
                    f"{out.flag} {out.text[:80]}{'...' if len(out.text) > 80 else ''}: cannot be written ({e.strerror})"
                ) from None
        if out.path.is_dir() or out.text.endswith(("/", os.sep)):
            raise UsageError(f"{out.flag} {out.text} is a directory: give the path of a file to write")
    for i, out in enumerate(outputs):
        for inp in inputs:
            if out.same_file(inp):
                raise UsageError(
                    f"{out.flag} {out.text} is also the input {inp.flag} {inp.text}: writing it would "
                    "destroy that input; write to another file"
                )
        for other in outputs[i + 1 :]:
            if out.same_file(other):
                raise UsageError(
                    f"{out.flag} {out.text} and {other.flag} {other.text} are one file: each output needs its own"
                )
    return outputs


def make_output_folders(outputs: list[FileArg]) -> None:
    """Create each output's missing folders before any work: a run must not spend its calls and
    then fail to write its file (judge and report did this already; generate and retrieve did not)."""
    for out in outputs:
        folder = out.path.parent
        if folder.is_dir():
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"{out.flag} {out.text}: cannot create its folder {folder} ({e.strerror or e})") from None


def lock_outputs(outputs: list[FileArg], stack: ExitStack) -> None:
    """Hold the lock of every output file for the rest of the command (``stack`` releases them).
    The lock is the stages' (it imports the engine and the LLM layer): a command that writes no file
    (evaluate, compare, agree) does not import it."""
    files = [out.path for out in outputs if not out.path.is_dir()]
    if files:
        from ..runtime.engine import OutputLock

        for path in files:
            stack.enter_context(OutputLock(path))
