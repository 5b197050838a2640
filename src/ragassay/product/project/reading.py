"""Reading ``ragassay.toml``: every key checked before any step runs (unknown keys, wrong types,
missing files, metric names, prompt files), each error naming the key and ``ragassay.toml:LINE``.
The tables are read in the file's order of meaning, and the first error found is the one raised."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...data.text_match import MATCH_SETTINGS
from ...errors import InputError, MeasureError
from ...llm.prompt_files import CHOICES, read_prompt_file
from ...metrics.measures import parse_measure, parse_measures
from .model import DEFAULT_METRICS, DEFAULT_OUT, PROJECT_FILE, SINGLE_ROLES, Project
from .toml_file import line_in, line_of, load_toml

LLM_KEYS: dict[str, type | tuple[type, ...]] = {
    "model": str, "base_url": str, "timeout": (int, float), "concurrency": int, "rpm": (int, float),
    "tpm": (int, float), "cache": str, "no_cache": bool, "price_in": (int, float), "price_out": (int, float),
    "max_calls": int, "max_cost": (int, float)}
_TABLES = {"data", "runs", "retrievers", "llm", "judge", "generate", "check", "agree", "report", "gate"}
_TOP = {"out", "depth", "k", "metrics", "keep_going", "relevance_level"}


def find_project(path: str | Path | None = None) -> Path:
    """The project file: ``path``, or ``path/ragassay.toml`` for a folder, or ``./ragassay.toml``."""
    p = Path(path) if path else Path(PROJECT_FILE)
    if p.is_dir():
        p = p / PROJECT_FILE
    if not p.exists():
        raise InputError("no project file here: 'ragassay init' writes one from the files of a folder", p)
    return p


class _Checks:
    """The checks every key's value goes through, each error naming the key and its line."""

    def __init__(self, path: Path):
        self.path = path
        self.root = path.parent

    def bad(self, key: str, why: str) -> InputError:
        return InputError(f"{key}: {why}", self.path, line_of(self.path, key))

    def number(self, key: str, value: Any, least: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise self.bad(key, f"must be a whole number of at least {least}, got {value!r}")
        return value

    def path_of(self, key: str, value: Any) -> Path:
        if not isinstance(value, str) or not value:
            raise self.bad(key, f"must be a file name in quotes, got {value!r}")
        f = (self.root / value)
        if not f.exists():
            raise self.bad(key, f"no such file {value!r} (paths are relative to the project file)")
        return f

    def flag(self, key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.bad(key, "must be true or false")
        return value


def read_project(path: str | Path | None = None) -> Project:
    """Read and check a project file: unknown keys, wrong types and missing files are errors naming
    the key (a value the pipeline would send to a stage is checked here, in the file's words)."""
    p = find_project(path)
    raw = load_toml(p)
    c = _Checks(p)
    unknown = sorted(set(raw) - _TABLES - _TOP)
    if unknown:
        raise c.bad(unknown[0], f"unknown key (known: {', '.join(sorted(_TOP | _TABLES))})")
    for table in _TABLES & set(raw):
        if not isinstance(raw[table], dict):
            raise c.bad(table, "must be a table ([" + table + "])")
    proj = _top_keys(raw, c)
    _data(proj, raw.get("data", {}), c)
    _runs(proj, raw, c)
    proj.llm = _llm(raw.get("llm", {}), c)
    _generate(proj, raw.get("generate", {}), c)
    _agree_and_report(proj, raw.get("agree", {}), raw.get("report", {}), c)
    _judge_and_check(proj, raw.get("judge", {}), raw.get("check", {}), c)
    _gate(proj, raw.get("gate", {}), c)
    return proj


def _top_keys(raw: Mapping[str, Any], c: _Checks) -> Project:
    """The keys outside any table: out, depth, k, metrics, relevance_level, keep_going."""
    out = raw.get("out", DEFAULT_OUT)
    if not isinstance(out, str) or not out:
        raise c.bad("out", f"must be a folder name in quotes, got {out!r}")
    proj = Project(path=c.path, out=c.root / out, depth=c.number("depth", raw.get("depth", 10), 1),
                   k=c.number("k", raw.get("k", 100), 1))
    metrics = raw.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise c.bad("metrics", "must be a list of metric names, e.g. [\"ndcg@10\", \"map\"]")
    proj.metrics = _metric_names(metrics, "metrics", c.bad)
    if "relevance_level" in raw:
        proj.relevance_level = c.number("relevance_level", raw["relevance_level"], 1)
    proj.keep_going = c.flag("keep_going", raw.get("keep_going", False))
    return proj


def _data(proj: Project, data: Mapping[str, Any], c: _Checks) -> None:
    """[data]: one file for each role, and how the answers meet the queries."""
    for key in data:
        if key == "answers_match":  # how the answers meet the queries: a setting, not a file
            if data[key] not in MATCH_SETTINGS:
                raise c.bad(key, f"is one of {', '.join(repr(m) for m in MATCH_SETTINGS)} (by id, then by question "
                                 f"text when no id meets; by id only; by question text), got {data[key]!r}")
            proj.answers_match = data[key]
            continue
        if key not in SINGLE_ROLES:
            raise c.bad(key, f"unknown key in [data] (known: {', '.join(SINGLE_ROLES)}, answers_match)")
        setattr(proj, key, c.path_of(key, data[key]))


def _runs(proj: Project, raw: Mapping[str, Any], c: _Checks) -> None:
    """[runs] and [retrievers]: a run's file or a retriever's function (with a fallback run file),
    each name used once and fit to name files."""
    for name, value in raw.get("runs", {}).items():
        proj.runs[name] = c.path_of(name, value)
    for name, value in raw.get("retrievers", {}).items():
        _retriever(proj, name, value, c)
    both = sorted(set(proj.runs) & set(proj.retrievers))
    if both:
        raise c.bad(both[0], "names a run file and a retriever: two runs need two names")
    for name in proj.run_names():
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            raise c.bad(name, "a run's name is letters, digits, '.', '_' and '-' (it names its files)")


def _retriever(proj: Project, name: str, value: Any, c: _Checks) -> None:
    """One retriever: ``"file.py:function"``, or a table with its function and fallback run file."""
    if isinstance(value, dict):  # { function = "file.py:function", fallback = "runs/name.txt" }
        extra = sorted(set(value) - {"function", "fallback"})
        if extra or "function" not in value:
            raise c.bad(name, f"a retriever's table holds function = \"file.py:function\" and, if wanted, "
                              f"fallback = \"run file\"; got {', '.join(extra) or 'no function'}")
        if "fallback" in value:
            proj.fallbacks[name] = c.path_of(name, value["fallback"])
        value = value["function"]
    file, sep, function = value.rpartition(":") if isinstance(value, str) else ("", "", "")
    if not sep or not file.endswith(".py") or not function:
        raise c.bad(name, f"a retriever is \"file.py:function\", got {value!r}")
    proj.retrievers[name] = f"{c.path_of(name, file)}:{function}"


def _llm(llm: Mapping[str, Any], c: _Checks) -> dict[str, Any]:
    """[llm]: the endpoint's settings, each of its type and above 0 (the cache's path made absolute)."""
    for key, value in llm.items():
        kind = LLM_KEYS.get(key)
        if kind is None:
            raise c.bad(key, f"unknown key in [llm] (known: {', '.join(LLM_KEYS)})")
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise c.bad(key, f"has the wrong type: {value!r}")
        if kind is not bool and kind is not str and isinstance(value, (int, float)) and value <= 0:
            raise c.bad(key, f"must be above 0, got {value!r}")
    return {k: (str(c.root / v) if k == "cache" else v) for k, v in llm.items()}


def _generate(proj: Project, generate: Mapping[str, Any], c: _Checks) -> None:
    """[generate]: how many questions to write when there are no queries, or as a sample beside them."""
    _known(generate, {"limit", "sample"}, "generate", c.bad)
    proj.generate_limit = c.number("limit", generate.get("limit", 20), 0)  # 0: none (a file may hold the queries)
    proj.generate_sample = c.number("sample", generate.get("sample", 0), 0)
    if proj.generate_sample and proj.queries is None:
        raise c.bad("sample", "[generate] sample writes questions beside the project's own queries; this project "
                              "has none ([data] queries): [generate] limit sets how many run writes")


def _agree_and_report(proj: Project, agree: Mapping[str, Any], report: Mapping[str, Any], c: _Checks) -> None:
    """[agree] second (a labelling measured against people's qrels) and [report] title."""
    _known(agree, {"second"}, "agree", c.bad)
    if "second" in agree:
        proj.second_qrels = c.path_of("second", agree["second"])
        if proj.qrels is None:
            raise c.bad("second", "[agree] second is measured against people's qrels: name them in [data] qrels")
    _known(report, {"title"}, "report", c.bad)
    if "title" in report and (not isinstance(report["title"], str) or not report["title"].strip()):
        raise c.bad("title", f"must be a title in quotes, got {report['title']!r}")
    proj.title = report.get("title")


def _judge_and_check(proj: Project, judge: Mapping[str, Any], check: Mapping[str, Any], c: _Checks) -> None:
    """[judge] coverage and prompt; [check] prompt and the run that explains the answers."""
    _known(judge, {"coverage", "prompt"}, "judge", c.bad)
    proj.coverage = c.flag("coverage", judge.get("coverage", False))
    proj.judge_prompt = _prompt_setting(judge, "judge", c.path, c.path_of)
    _known(check, {"run", "prompt"}, "check", c.bad)
    proj.check_prompt = _prompt_setting(check, "check", c.path, c.path_of)
    proj.check_run = check.get("run")
    if proj.check_run is not None and proj.check_run not in proj.run_names():
        raise c.bad("run", f"[check] run {proj.check_run!r} is not a run of this project "
                           f"({', '.join(proj.run_names()) or 'none'})")


def _gate(proj: Project, gate: Mapping[str, Any], c: _Checks) -> None:
    """[gate]: thresholds (their metrics computed too), the run they apply to, the errors allowed."""
    _known(gate, {"min", "max", "run", "allow_errors"}, "gate", c.bad)
    proj.gate_min, proj.gate_max = (_thresholds(gate.get(k, []), k, c.bad) for k in ("min", "max"))
    proj.metrics += _gated_metrics(proj)
    proj.gate_run = gate.get("run")
    if proj.gate_run is not None and proj.gate_run not in proj.run_names():
        raise c.bad("run", f"[gate] run {proj.gate_run!r} is not a run of this project")
    proj.allow_errors = c.number("allow_errors", gate.get("allow_errors", 0), 0)


def _prompt_setting(table: Mapping[str, Any], stage: str, project: Path, path_of: Any) -> str:
    """A table's ``prompt``: auto, full or short as written, or a prompt file (relative to the
    project file), read and checked now: a placeholder the stage cannot fill is an error naming the
    prompt file's line, before any step runs."""
    value = table.get("prompt", "auto")
    if value in CHOICES:
        return value
    if not isinstance(value, str) or not value:
        raise InputError(f"prompt: must be one of {', '.join(CHOICES)} or a prompt file's name, in quotes, got "
                         f"{value!r}", project, line_in(project, stage, "prompt"))
    try:
        f = path_of("prompt", value)
    except InputError as e:  # (the line of this table's prompt, not the first prompt of the file)
        raise InputError(e.message, project, line_in(project, stage, "prompt")) from None
    if f.is_dir():
        raise InputError(f"prompt: {value!r} is a folder, not a prompt file", project,
                         line_in(project, stage, "prompt"))
    read_prompt_file(f, stage)
    return str(f)


def _known(table: Mapping[str, Any], keys: set[str], name: str, bad: Any) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise bad(unknown[0], f"unknown key in [{name}] (known: {', '.join(sorted(keys))})")


def _metric_names(names: list[str], key: str, bad: Any) -> list[str]:
    """``names`` as written, each checked: a name no metric spells is an error naming the line (with
    the close match), before any step runs."""
    try:
        parse_measures(names)
    except MeasureError as e:
        raise bad(key, str(e)) from None
    return list(names)


def _gated_metrics(proj: Project) -> list[str]:
    """The metrics a gate threshold names that ``metrics`` lacks (in any spelling): evaluate computes
    them too, so the gate has its numbers."""
    have = {str(m) for m in parse_measures(proj.metrics)}
    out = []
    for name in [*proj.gate_min, *proj.gate_max]:
        canonical = str(parse_measure(name))
        if canonical not in have:
            have.add(canonical)
            out.append(canonical)
    return out


def _thresholds(items: Any, key: str, bad: Any) -> dict[str, float]:
    if not isinstance(items, list):
        raise bad(key, "must be a list like [\"ndcg@10=0.5\"]")
    out = {}
    for item in items:
        metric, sep, value = str(item).partition("=")
        try:
            out[metric.strip()] = float(value)
        except ValueError:
            raise bad(key, f"a threshold is \"METRIC=VALUE\", got {item!r}") from None
        if not sep or not metric.strip():
            raise bad(key, f"a threshold is \"METRIC=VALUE\", got {item!r}")
        _metric_names([metric.strip()], key, bad)
    return out
