"""The shape of ``ragassay.toml``: one pydantic model per table, each key declared once with its type,
its range, its default and the words an error about it says.

A model forbids keys it does not declare, and takes values strictly (``depth = "5"`` or ``keep_going =
1`` are errors, not conversions), so that a typo or a wrong type stops ``run`` before any step.
Checks that need the folder (a file named by a key exists) run as validators with the project's folder
as the validation context; checks that tie two tables together (``[check] run`` names a run of the
project) are made after validation, by ``reading``. The text an error says is declared beside the key as
``Says``, and ``model_errors`` turns pydantic's error into it, with the key's line in the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from ...data.text_match import MATCH_SETTINGS
from ...errors import MeasureError
from ...llm.prompt_files import CHOICES
from ...metrics.measures import parse_measures
from .model import DEFAULT_METRICS, DEFAULT_OUT


@dataclass(frozen=True)
class Says:
    """What an error about a key says, in the file's words: ``why`` for a value of the wrong type,
    ``range`` for a number out of its range, ``item`` for a bad item of a list. Each may name the value
    given as ``{value!r}`` and the key as ``{key}``."""

    why: str
    range: str | None = None
    item: str | None = None


WHOLE_FROM_0 = Says("must be a whole number of at least 0, got {value!r}")
WHOLE_FROM_1 = Says("must be a whole number of at least 1, got {value!r}")
FLAG = Says("must be true or false")
FILE_NAME = Says("must be a file name in quotes, got {value!r}")
TABLE = Says("must be a table ([{key}])")
LLM_VALUE = Says("has the wrong type: {value!r}", range="must be above 0, got {value!r}")
MATCH_WORDS = (
    f"is one of {', '.join(repr(m) for m in MATCH_SETTINGS)} (by id, then by question text when no id "
    "meets; by id only; by question text), got {value!r}"
)
PROMPT_WORDS = f"must be one of {', '.join(CHOICES)} or a prompt file's name, in quotes, got {{value!r}}"
THRESHOLD_WORDS = 'a threshold is "METRIC=VALUE", got {value!r}'
RETRIEVER_WORDS = 'a retriever is "file.py:function", got {value!r}'
RETRIEVER_TABLE_WORDS = (
    'a retriever\'s table holds function = "file.py:function" and, if wanted, fallback = "run file"; got {got}'
)


def folder_of(info: ValidationInfo) -> Path:
    """The project file's folder, which every path in the file is relative to (the validation context)."""
    context = info.context or {}
    return Path(context.get("root", "."))


def existing_file(value: str, info: ValidationInfo) -> str:
    """A file name that names a file (relative to the project file), kept as written."""
    if not (folder_of(info) / value).exists():
        raise ValueError(f"no such file {value!r} (paths are relative to the project file)")
    return value


def metric_names(names: list[str]) -> list[str]:
    """Metric names as written, each one a metric (a misspelt one says the close match)."""
    try:
        parse_measures(names)
    except MeasureError as e:
        raise ValueError(str(e)) from None
    return names


def threshold(item: str) -> str:
    """A gate threshold, ``"METRIC=VALUE"``, with a metric's name and a number."""
    metric, sep, value = item.partition("=")
    try:
        float(value)
    except ValueError:
        raise ValueError(THRESHOLD_WORDS.format(value=item)) from None
    if not sep or not metric.strip():
        raise ValueError(THRESHOLD_WORDS.format(value=item))
    metric_names([metric.strip()])
    return item


def match_setting(value: str) -> str:
    """How the answers meet the queries: one of the settings ``data.text_match`` knows."""
    if value not in MATCH_SETTINGS:
        raise ValueError(MATCH_WORDS.format(value=value))
    return value


def prompt_choice(value: str, info: ValidationInfo) -> str:
    """A stage's prompt: auto, full or short, or a prompt file that exists and is not a folder (its
    placeholders are checked by ``reading``, which reads it)."""
    if value in CHOICES:
        return value
    existing_file(value, info)
    if (folder_of(info) / value).is_dir():
        raise ValueError(f"{value!r} is a folder, not a prompt file")
    return value


def retriever_shape(value: Any) -> Any:
    """A retriever as written, ``"file.py:function"`` or a table with its function and fallback, made a
    table; any other shape is said in the retriever's own words."""
    if isinstance(value, str):
        return {"function": value}
    if isinstance(value, dict):
        extra = sorted(set(value) - {"function", "fallback"})
        if extra or "function" not in value:
            raise ValueError(RETRIEVER_TABLE_WORDS.format(got=", ".join(extra) or "no function"))
        return value
    raise ValueError(RETRIEVER_WORDS.format(value=value))


def retriever_function(value: str, info: ValidationInfo) -> str:
    """``"file.py:function"``, its file existing."""
    file, sep, function = value.rpartition(":")
    if not sep or not file.endswith(".py") or not function:
        raise ValueError(RETRIEVER_WORDS.format(value=value))
    existing_file(file, info)
    return value


FileName = Annotated[str, Field(min_length=1), AfterValidator(existing_file), FILE_NAME]
Whole0 = Annotated[int, Field(ge=0), WHOLE_FROM_0]
Whole1 = Annotated[int, Field(ge=1), WHOLE_FROM_1]
Flag = Annotated[bool, FLAG]
Prompt = Annotated[str, Field(min_length=1), AfterValidator(prompt_choice), Says(PROMPT_WORDS)]
Positive = Annotated[float, Field(gt=0), LLM_VALUE]
Count = Annotated[int, Field(gt=0), LLM_VALUE]
Text = Annotated[str, LLM_VALUE]
Thresholds = Annotated[
    list[Annotated[str, AfterValidator(threshold)]], Says('must be a list like ["ndcg@10=0.5"]', item=THRESHOLD_WORDS)
]


class Section(BaseModel):
    """A table of the file: its keys declared, any other key an error that lists the known ones."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    NAME: ClassVar[str] = ""
    SORTED: ClassVar[bool] = True  # the known keys listed sorted (else in the order declared)
    NAMED_BY_ENTRY: ClassVar[bool] = False  # an error inside names the table's key in its parent

    @classmethod
    def unknown_key(cls) -> str:
        """What an unknown key in this table says."""
        keys = list(cls.model_fields)
        known = ", ".join(sorted(keys) if cls.SORTED else keys)
        return f"unknown key in [{cls.NAME}] (known: {known})" if cls.NAME else f"unknown key (known: {known})"


class Data(Section):
    """[data]: one file for each role, and how the answers meet the queries."""

    NAME = "data"
    SORTED = False
    chunks: FileName | None = None
    queries: FileName | None = None
    answers: FileName | None = None
    human: FileName | None = None
    qrels: FileName | None = None
    answers_match: Annotated[str, AfterValidator(match_setting), Says(MATCH_WORDS)] = "auto"


class Retriever(Section):
    """One retriever of [retrievers]: its function, and the run file read when its packages are missing."""

    NAME = "retrievers"
    NAMED_BY_ENTRY = True  # an error inside names the retriever, as its one line in the file does
    function: Annotated[str, AfterValidator(retriever_function), Says(RETRIEVER_WORDS)]
    fallback: FileName | None = None

    @model_validator(mode="before")
    @classmethod
    def as_table(cls, value: Any) -> Any:
        return retriever_shape(value)


class Llm(Section):
    """[llm]: the endpoint's settings, each of its type and above 0 (the same names as the flags)."""

    NAME = "llm"
    SORTED = False
    model: Text | None = None
    base_url: Text | None = None
    timeout: Positive | None = None
    concurrency: Count | None = None
    rpm: Positive | None = None
    tpm: Positive | None = None
    cache: Text | None = None
    no_cache: Annotated[bool, LLM_VALUE] | None = None
    price_in: Positive | None = None
    price_out: Positive | None = None
    max_calls: Count | None = None
    max_cost: Positive | None = None


class Generate(Section):
    """[generate]: questions to write when the project has no queries (0: none), or as a sample beside them."""

    NAME = "generate"
    limit: Whole0 = 20
    sample: Whole0 = 0


class Judge(Section):
    """[judge]: coverage of each query's nuggets, and the prompt."""

    NAME = "judge"
    coverage: Flag = False
    prompt: Prompt = "auto"


class Check(Section):
    """[check]: the prompt, and the run whose recall explains the answers."""

    NAME = "check"
    run: Annotated[str, Says("must be a run's name in quotes, got {value!r}")] | None = None
    prompt: Prompt = "auto"


class Agree(Section):
    """[agree]: a second labelling of the pairs, measured against people's qrels."""

    NAME = "agree"
    second: FileName | None = None


class Report(Section):
    """[report]: the report's title."""

    NAME = "report"
    title: Annotated[Annotated[str, Field(pattern=r"\S")] | None, Says("must be a title in quotes, got {value!r}")] = (
        None
    )


class Gate(Section):
    """[gate]: thresholds, the run they apply to, and the errors a run may have and still pass."""

    NAME = "gate"
    allow_errors: Whole0 = 0
    max: Thresholds = []
    min: Thresholds = []
    run: Annotated[str, Says("must be a run's name in quotes, got {value!r}")] | None = None


class ProjectFile(Section):
    """The whole file: the keys outside any table, then the tables, in the order they are checked."""

    out: Annotated[str, Field(min_length=1), Says("must be a folder name in quotes, got {value!r}")] = DEFAULT_OUT
    depth: Whole1 = 10
    k: Whole1 = 100
    metrics: Annotated[
        list[str],
        Field(min_length=1),
        AfterValidator(metric_names),
        Says('must be a list of metric names, e.g. ["ndcg@10", "map"]'),
    ] = list(DEFAULT_METRICS)
    relevance_level: Whole1 | None = None
    keep_going: Flag = False
    data: Annotated[Data, TABLE] = Data()
    runs: Annotated[dict[str, FileName], TABLE] = {}
    retrievers: Annotated[dict[str, Retriever], TABLE] = {}
    llm: Annotated[Llm, TABLE] = Llm()
    generate: Annotated[Generate, TABLE] = Generate()
    agree: Annotated[Agree, TABLE] = Agree()
    report: Annotated[Report, TABLE] = Report()
    judge: Annotated[Judge, TABLE] = Judge()
    check: Annotated[Check, TABLE] = Check()
    gate: Annotated[Gate, TABLE] = Gate()


LLM_KEYS: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "base_url": str,
    "timeout": (int, float),
    "concurrency": int,
    "rpm": (int, float),
    "tpm": (int, float),
    "cache": str,
    "no_cache": bool,
    "price_in": (int, float),
    "price_out": (int, float),
    "max_calls": int,
    "max_cost": (int, float),
}
