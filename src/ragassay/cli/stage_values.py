"""The values an LLM command hands its Python twin, built from its flags: the stage's options
(``JudgeOptions``, ``CheckOptions``) and the ``Backend``, passed as ``options=`` and ``backend=``, so
that the command calls the library the way its documentation asks a script to. The other flags go
by name (``api_arguments``): the endpoint's, since a jury of several ``--model`` flags is a list of
configs the function makes, and the stage's inputs and outputs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from ..runtime.engine import parse_shard
from ..runtime.scaffold import Backend
from ..stages.check import CheckOptions
from ..stages.judge import JudgeOptions
from .options import api_arguments

# the batch flags a Backend value holds
BACKEND_FLAGS = ("backend", "export_requests", "import_results", "poll_seconds")


def stage_arguments(args: argparse.Namespace, function: Callable[..., Any],
                    options_type: type[JudgeOptions] | type[CheckOptions] | None) -> dict[str, Any]:
    """``function``'s arguments from the command's flags: ``options=`` the stage's options (the flags
    named like its fields), ``backend=`` a Backend, and every other flag by its name."""
    given = api_arguments(args, function)
    values: dict[str, Any] = {"backend": Backend(args.backend, args.export_requests, tuple(args.import_results),
                                                 args.poll_seconds)}
    taken = set(BACKEND_FLAGS)
    if options_type is not None:
        names = {f.name for f in fields(options_type)} & set(given)
        settings = {name: given[name] for name in names}
        settings["shard"] = parse_shard(args.shard) if getattr(args, "shard", None) else None
        settings["prompt"] = str(settings.get("prompt", "auto"))
        values["options"] = options_type(**settings)
        taken |= names | {"shard"}
    return {**{k: v for k, v in given.items() if k not in taken}, **values}
