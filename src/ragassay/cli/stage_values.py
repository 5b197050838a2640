"""The values an LLM command hands its Python twin, built from its flags: the stage's options
(``JudgeOptions``, ``CheckOptions``, ``GenerateOptions``) and the ``Backend``, passed as ``options=``
and ``backend=``, and the endpoint's ``LLMConfig`` as ``config=`` (a list of them for judge's jury of
several ``--model`` flags), so that the command calls the library the way its documentation asks a
script to. The other flags, the stage's inputs and outputs, go by name (``api_arguments``)."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from ..api.settings import LLM_KEYWORDS, flag_configs
from ..runtime.engine import parse_shard
from ..runtime.scaffold import Backend
from .options import api_arguments

if TYPE_CHECKING:
    from ..stages.check import CheckOptions
    from ..stages.generate import GenerateOptions
    from ..stages.judge import JudgeOptions

# the batch flags a Backend value holds
BACKEND_FLAGS = ("backend", "export_requests", "import_results", "poll_seconds")


def generate_values(args: argparse.Namespace) -> dict[str, Any]:
    """generate's flags whose text a ``GenerateOptions`` field holds as a value: the shares by name of
    ``--mix`` and ``--styles``, read as the function reads them (a wrong share is the same usage error)."""
    from ..stages.generate import MIX_NAMES, STYLES  # (the lazy boundary: judge and check load no generate)
    from ..stages.generate_job import shares

    return {"mix": shares(args.mix, MIX_NAMES, "--mix"), "styles": shares(args.styles, tuple(STYLES), "--styles")}


def stage_arguments(
    args: argparse.Namespace,
    function: Callable[..., Any],
    options_type: type[JudgeOptions] | type[CheckOptions] | type[GenerateOptions],
    values_of_text: Mapping[str, Any] | None = None,
    jury: bool = False,
) -> dict[str, Any]:
    """``function``'s arguments from the command's flags: ``options=`` the stage's options (the flags
    named like its fields, an LLM flag such as ``--max-calls`` excepted: it goes to the endpoint; a
    flag's text read into its field's value where ``values_of_text`` holds it), ``backend=`` a Backend,
    ``config=`` the endpoint's config (with ``jury``, judge's, one per model; check and generate ask the
    first model, as their keywords do) and every other flag by its name."""
    given = api_arguments(args, function)
    values: dict[str, Any] = {
        "backend": Backend(args.backend, args.export_requests, tuple(args.import_results), args.poll_seconds)
    }
    names = {f.name for f in fields(options_type)} & set(given) - set(LLM_KEYWORDS)
    settings = {name: (values_of_text or {}).get(name, given[name]) for name in names}
    if "shard" in given:
        settings["shard"] = parse_shard(args.shard) if args.shard else None
    if "prompt" in given:
        settings["prompt"] = str(given["prompt"])
    values["options"] = options_type(**settings)
    if "config" in inspect.signature(function).parameters:  # the endpoint's flags as its config value(s)
        configs = flag_configs(**{name: given[name] for name in LLM_KEYWORDS})
        values["config"] = configs if jury and len(configs) > 1 else configs[0]
    taken = set(BACKEND_FLAGS) | names | {"shard"} | set(LLM_KEYWORDS)
    return {**{k: v for k, v in given.items() if k not in taken}, **values}
