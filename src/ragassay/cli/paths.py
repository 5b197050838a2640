"""Outputs never destroy inputs: every command's file arguments are checked before it runs.

Which arguments a command writes is declared once here (by their ``dest``), so a new command
cannot forget: every other argument naming an existing file is an input. An output that is an
input, or another output, is a usage error naming both, whether the two paths are spelt alike,
reach one file through a symlink, or are hard links to it. Every output file is then locked for
the whole command (see :class:`ragassay.stages.engine.OutputLock`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

# the dests of arguments a command writes (files); the demo's --out and generate's --export are
# directories, checked by the command itself
OUTPUT_DESTS = ("output", "qrels_out", "coverage_out", "rejects", "export_requests", "db")
READ_ONLY_DB = ("history", "gate")  # commands whose --db is only read


@dataclass(frozen=True)
class FileArg:
    flag: str        # as the user would write it: -o, --qrels-out, ANSWERS
    path: Path
    text: str        # the path as the user wrote it, for messages

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
    return action.option_strings[0] if action.option_strings else (action.metavar or action.dest).upper()


def _values(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _values(v)


def file_args(parser: argparse.ArgumentParser, args: argparse.Namespace, command: str) -> tuple[list[FileArg], list[FileArg]]:
    """(inputs, outputs) of one parsed command: outputs by declaration, inputs every other
    argument that names an existing file."""
    inputs, outputs = [], []
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if value is None or action.dest in ("help", "handler", "command"):
            continue
        is_output = action.dest in OUTPUT_DESTS and not (action.dest == "db" and command in READ_ONLY_DB)
        for text in _values(value):
            if not text or text == "-":
                continue
            text = text.split(":", 1)[0] if action.dest == "retriever" else text  # MODULE.py:FUNCTION
            path = Path(text)
            if is_output:
                outputs.append(FileArg(_flag(action), path, text))
            elif path.is_file():
                inputs.append(FileArg(_flag(action), path, text))
    return inputs, outputs


def check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace, command: str) -> list[FileArg]:
    """Refuse (exit 2) a command whose output is one of its inputs or another of its outputs;
    return its outputs."""
    inputs, outputs = file_args(parser, args, command)
    for out in outputs:
        if out.path.is_dir() or out.text.endswith(("/", os.sep)):
            raise UsageError(f"{out.flag} {out.text} is a directory: give the path of a file to write")
    for i, out in enumerate(outputs):
        for inp in inputs:
            if out.same_file(inp):
                raise UsageError(f"{out.flag} {out.text} is also the input {inp.flag} {inp.text}: writing it would "
                                 "destroy that input; write to another file")
        for other in outputs[i + 1:]:
            if out.same_file(other):
                raise UsageError(f"{out.flag} {out.text} and {other.flag} {other.text} are one file: each output "
                                 "needs its own")
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
    """Hold the lock of every output file for the rest of the command (``stack`` releases them)."""
    from ..stages.engine import OutputLock
    for out in outputs:
        if out.path.is_dir():
            continue
        stack.enter_context(OutputLock(out.path))
