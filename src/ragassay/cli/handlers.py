"""A command's handler, named where the command is declared and imported only when it runs.

Building the parser declares every command. When each declaration held its handler itself, the
parser imported every handler module and, through them, the library (numpy, pydantic, the LLM
layer, the label server): most of a start, ``ragassay --help`` included. A :class:`Handler` holds
the handler's module and name; the module is imported when the command is called.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


class Handler:
    """``module.name``, a function taking the parsed arguments, imported on call.

    It carries the function's ``__module__`` and ``__name__``, and ``__wrapped__`` is the function
    itself (imported then), so what reads a handler's source (``inspect.getsource``) reads the
    function's."""

    def __init__(self, module: str, name: str) -> None:
        self.__module__ = module
        self.__name__ = self.__qualname__ = name

    @property
    def __wrapped__(self) -> Callable[[argparse.Namespace], Any]:
        from importlib import import_module

        return getattr(import_module(self.__module__), self.__name__)

    def __call__(self, args: argparse.Namespace) -> Any:
        return self.__wrapped__(args)

    def __repr__(self) -> str:
        return f"<handler {self.__module__}.{self.__name__}>"
