"""How the Python functions turn what they were given into the values a stage runs with: the
endpoint's :class:`~ragassay.LLMConfig`, the :class:`~ragassay.Backend`, the stage's options and
the caller's own clients. A setting given twice (as a keyword and inside a value) is refused with a
``TypeError``, since one of the two would silently go unused."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, cast

from ..llm import LLM, LLMConfig
from ..runtime.engine import parse_shard
from ..runtime.scaffold import Backend
from ..stages.judge import model_configs


class Dataclass(Protocol):
    """Any dataclass, as :func:`dataclasses.fields` takes it: a stage's options are one."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


Options = TypeVar("Options", bound=Dataclass)

# keywords the functions took before they took the flags' names
RENAMED = {"coverage_output": "coverage_out", "k": "depth"}


# the LLM keywords a config given as config= holds, with their defaults (a keyword beside it would go unused)
LLM_KEYWORDS = {
    "model": None,
    "base_url": None,
    "timeout": None,
    "concurrency": None,
    "rpm": None,
    "tpm": None,
    "cache": None,
    "no_cache": False,
    "price_in": None,
    "price_out": None,
    "max_calls": None,
    "max_cost": None,
}


def llm_keywords(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The LLM keywords a function was called with, taken from its arguments by the names in
    :data:`LLM_KEYWORDS`: each function's signature spells the keywords out (so that help, type checkers
    and the command's flags see them), and this is the one place that knows which they are, so that
    ``judge``, ``check`` and ``generate`` hand the same set to :func:`endpoint`
    (``tests/integration/test_api_values.py`` checks each signature against the table)."""
    return {name: arguments[name] for name in LLM_KEYWORDS}


def llm_config(
    given: LLMConfig | Sequence[LLMConfig] | None,
    model: str | Sequence[str] | None,
    settings: dict[str, Any],
    *,
    cache: str | Path | None,
    no_cache: bool,
    **flags: Any,
) -> LLMConfig:
    """The endpoint's config: ``config=`` as given (the caller's value, used as it is; the first of a
    jury's), or one made from the LLM flags' values (the first model of a jury) and any further
    ``LLMConfig`` settings, with unset values from the environment (``OPENAI_BASE_URL``, ...)."""
    if given is not None:
        values = {**flags, "model": model, "cache": cache, "no_cache": no_cache}
        clash = sorted([k for k, v in values.items() if v != LLM_KEYWORDS.get(k)] + list(settings))
        if clash:
            raise TypeError(f"give {', '.join(clash)} in config= or as keywords, not both")
        jury = config_list(given)
        if not jury:
            raise TypeError("config= holds no LLMConfig: give one, or a list of them for a jury")
        return jury[0]
    models = model_names(model)
    return LLMConfig.from_env(
        **{
            **settings,
            **flags,
            "model": models[0] if models else None,
            "cache_path": Path(cache) if cache is not None else settings.get("cache_path"),
            "use_cache": not no_cache and settings.get("use_cache", True),
        }
    )


def config_list(config: LLMConfig | Sequence[LLMConfig] | None) -> list[LLMConfig] | None:
    """``config=`` as a list: a jury's configs as given, one config as a list of one, or None."""
    if config is None:
        return None
    return [config] if isinstance(config, LLMConfig) else list(config)


def flag_configs(model: str | Sequence[str] | None, **keywords: Any) -> list[LLMConfig]:
    """The configs the LLM flags make, one per model named (several ``--model`` flags make a jury),
    the other settings shared: what a function makes of the same values given as keywords, so that the
    command can hand the function ``config=`` and still run exactly what the keywords would run."""
    first = llm_config(None, model, {}, **keywords)
    return model_configs(first, model_names(model))


def backend_of(
    backend: str | Backend,
    export_requests: str | Path | None,
    import_results: Sequence[str | Path],
    poll_seconds: float,
) -> Backend:
    """Where the calls go: ``backend=`` as a :class:`~ragassay.runtime.scaffold.Backend` value, or its name
    with the batch keywords beside it (not both: one of them would go unused). Usage errors are raised
    here, before anything is read or sent."""
    if isinstance(backend, Backend):
        if export_requests is not None or tuple(import_results) or poll_seconds != 30.0:
            raise TypeError(
                "give export_requests, import_results and poll_seconds in backend= or as keywords, not both"
            )
        on = backend
    else:  # a name: Backend.check() refuses one it does not know
        on = Backend(cast(Any, backend), export_requests, tuple(import_results), poll_seconds)
    on.check()
    return on


def model_names(model: str | Sequence[str] | None) -> list[str] | None:
    """The models named, as a list (a jury), or None when none is."""
    if model is None:
        return None
    return [model] if isinstance(model, str) else list(model) or None


def given_clients(
    llm: LLM | Sequence[LLM] | None,
    settings: Mapping[str, Any],
    config: LLMConfig | Sequence[LLMConfig] | None = None,
    keywords: Mapping[str, Any] | None = None,
) -> list[LLM] | None:
    """The clients the caller made (``llm=``), or None. ``settings`` are the keywords the function
    did not name: a keyword of an earlier release says what replaced it. ``keywords`` are the LLM
    keywords the function names (``model=``, ``base_url=``, ...): any of them set beside ``llm=`` is
    refused, as the further settings are, since that client's own config is what runs and the value
    given would silently go unused."""
    renamed = {k: RENAMED[k] for k in settings if k in RENAMED}
    if renamed:  # keywords of earlier releases: say the name that replaced each
        raise TypeError("; ".join(f"{old}= is now {new}= (the flag's name)" for old, new in renamed.items()))
    if llm is None:
        return None
    if config is not None:  # the client's own config is what runs: the value given would go unused
        raise TypeError("give llm= or config=, not both (an LLM runs with its own config)")
    clients = [llm] if isinstance(llm, LLM) else list(llm)
    # (no client at all, llm=[], runs the rules only, with the config the keywords make)
    unused = [k for k, v in (keywords or {}).items() if clients and v != LLM_KEYWORDS.get(k)] + list(settings)
    if unused:
        raise TypeError(f"{', '.join(sorted(unused))}: set these on the LLM given as llm= (its config is used)")
    return clients


def endpoint(
    llm: LLM | Sequence[LLM] | None,
    config: LLMConfig | Sequence[LLMConfig] | None,
    settings: dict[str, Any],
    model: str | Sequence[str] | None,
    **keywords: Any,
) -> tuple[list[LLM] | None, LLMConfig]:
    """The caller's clients (``llm=``) and the config that runs: the first client's own, else
    ``config=`` or the one the LLM keywords make. A keyword that the clients or ``config=`` would
    leave unused is refused (see :func:`given_clients` and :func:`llm_config`)."""
    given = given_clients(llm, settings, config, {"model": model, **keywords})
    if given:
        return given, given[0].config
    return given, llm_config(config, model, settings, **keywords)


def options_and_rest(
    options_type: type[Options], settings: Mapping[str, Any], **values: Any
) -> tuple[Options, dict[str, Any]]:
    """For a caller inside ragassay that holds a stage's settings as one dict of keywords (qualify's
    ``**settings``): the stage's options made from the keywords named like its fields, with ``values``
    over them and ``quiet`` True unless said (the functions' own default), and the other keywords (the
    endpoint's), to pass beside ``options=`` without any keyword the functions deprecate."""
    names = {f.name for f in fields(options_type)}
    given = {"quiet": True, **{k: v for k, v in settings.items() if k in names}, **values}
    if isinstance(given.get("shard"), str):
        given["shard"] = parse_shard(given["shard"])
    if "prompt" in given:
        given["prompt"] = str(given["prompt"])
    return options_type(**given), {k: v for k, v in settings.items() if k not in names}


def shard_of(shard: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """A shard given as the flag's text (``"1/4"``) or as its pair of numbers."""
    return parse_shard(shard) if isinstance(shard, str) else shard


def stage_options(options_type: type[Options], options: Options | None, function: str, **values: Any) -> Options:
    """The stage's options: ``options=`` as given, when no keyword differs from its default (both at
    once would leave one of them silently unused); else made from the keywords, which are deprecated
    where they differ from their defaults: the warning names the fields of ``options=`` that replace
    them (each keyword is the field of the same name)."""
    defaults = {
        f.name: f.default_factory() if f.default_factory is not MISSING else f.default for f in fields(options_type)
    }  # (a dict field's default is made by its factory)
    if options is None:
        moved = sorted(k for k, v in values.items() if v != {**defaults, "quiet": True}.get(k))
        if moved:  # (quiet defaults to True in the functions, as no progress bar is the rule there)
            named = ", ".join(f"{k}=..." for k in moved)
            warnings.warn(
                f"ragassay.{function}: the keywords {', '.join(moved)} are deprecated; give "
                f"options={options_type.__name__}({named}) (each keyword is the field of the same name)",
                DeprecationWarning,
                stacklevel=3,
            )
        return options_type(**values)
    clash = sorted(k for k, v in values.items() if k != "quiet" and v != defaults.get(k))
    if clash:
        raise TypeError(f"give {', '.join(clash)} in options= or as keywords, not both")
    return options
