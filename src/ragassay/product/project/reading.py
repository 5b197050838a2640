"""Reading ``ragassay.toml``: the file validated by its models (``sections``: unknown keys, wrong
types, numbers out of range, missing files, metric names), then the checks that tie two tables
together (a run named twice, ``[check] run`` a run of the project, a prompt file's placeholders), each
error naming the key and ``ragassay.toml:LINE``. The first error a reader would meet is the one raised."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...errors import InputError
from ...llm.prompt_files import CHOICES, read_prompt_file
from ...metrics.measures import parse_measure, parse_measures
from .model import PROJECT_FILE, Project
from .model_errors import said
from .sections import LLM_KEYS, ProjectFile
from .toml_file import line_at, load_toml

__all__ = ["LLM_KEYS", "find_project", "read_project"]


def find_project(path: str | Path | None = None) -> Path:
    """The project file: ``path``, or ``path/ragassay.toml`` for a folder, or ``./ragassay.toml``."""
    p = Path(path) if path else Path(PROJECT_FILE)
    if p.is_dir():
        p = p / PROJECT_FILE
    if not p.exists():
        raise InputError("no project file here: 'ragassay init' writes one from the files of a folder", p)
    return p


def read_project(path: str | Path | None = None) -> Project:
    """Read and check a project file: unknown keys, wrong types and missing files are errors naming
    the key (a value the pipeline would send to a stage is checked here, in the file's words)."""
    p = find_project(path)
    raw = load_toml(p)
    try:
        file = ProjectFile.model_validate(raw, context={"root": p.parent})
    except ValidationError as e:
        raise said(e, p) from None
    proj = _project(p, file, raw.get("llm", {}))
    _check_run_names(proj)
    _check_needs(proj)
    proj.judge_prompt = _prompt(p, "judge", file.judge.prompt)
    proj.check_prompt = _prompt(p, "check", file.check.prompt)
    _check_runs_named(proj)
    return proj


def _bad(path: Path, where: tuple[str, ...], why: str) -> InputError:
    """An error naming the last key of ``where`` and its line."""
    return InputError(f"{where[-1]}: {why}", path, line_at(path, where))


def _project(path: Path, file: ProjectFile, llm: dict[str, Any]) -> Project:
    """The validated file as a ``Project``: every path made absolute, gate metrics added to those computed;
    the [llm] settings as written (a whole number stays one, as the flags would give it)."""
    root = path.parent
    data = file.data

    def at(name: str | None) -> Path | None:
        return None if name is None else root / name

    proj = Project(
        path=path,
        out=root / file.out,
        depth=file.depth,
        k=file.k,
        metrics=list(file.metrics),
        relevance_level=file.relevance_level,
        keep_going=file.keep_going,
        chunks=at(data.chunks),
        queries=at(data.queries),
        answers=at(data.answers),
        human=at(data.human),
        qrels=at(data.qrels),
        answers_match=data.answers_match,
        runs={name: root / f for name, f in file.runs.items()},
        generate_limit=file.generate.limit,
        generate_sample=file.generate.sample,
        second_qrels=at(file.agree.second),
        title=file.report.title,
        coverage=file.judge.coverage,
        check_run=file.check.run,
        gate_run=file.gate.run,
        allow_errors=file.gate.allow_errors,
    )
    for name, retriever in file.retrievers.items():
        module, _, function = retriever.function.rpartition(":")
        proj.retrievers[name] = f"{root / module}:{function}"
        if retriever.fallback is not None:
            proj.fallbacks[name] = root / retriever.fallback
    proj.llm = {key: (str(root / value) if key == "cache" else value) for key, value in llm.items()}
    proj.gate_min, proj.gate_max = _thresholds(file.gate.min), _thresholds(file.gate.max)
    proj.metrics += _gated_metrics(proj)
    return proj


def _check_run_names(proj: Project) -> None:
    """Each run's name used once, by a run file or a retriever, and fit to name files."""
    p = proj.path
    both = sorted(set(proj.runs) & set(proj.retrievers))
    if both:
        raise _bad(p, ("runs", both[0]), "names a run file and a retriever: two runs need two names")
    for name in proj.run_names():
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            table = "runs" if name in proj.runs else "retrievers"
            raise _bad(p, (table, name), "a run's name is letters, digits, '.', '_' and '-' (it names its files)")


def _check_needs(proj: Project) -> None:
    """A setting that needs another table's file: a sample of questions needs the project's queries, a
    second labelling needs people's qrels to be measured against."""
    p = proj.path
    if proj.generate_sample and proj.queries is None:
        raise _bad(
            p,
            ("generate", "sample"),
            "[generate] sample writes questions beside the project's own "
            "queries; this project has none ([data] queries): [generate] limit sets how many run writes",
        )
    if proj.second_qrels is not None and proj.qrels is None:
        raise _bad(
            p, ("agree", "second"), "[agree] second is measured against people's qrels: name them in [data] qrels"
        )


def _check_runs_named(proj: Project) -> None:
    """The run named in [check] or [gate] is a run of the project."""
    p, names = proj.path, proj.run_names()
    if proj.check_run is not None and proj.check_run not in names:
        raise _bad(
            p,
            ("check", "run"),
            f"[check] run {proj.check_run!r} is not a run of this project ({', '.join(names) or 'none'})",
        )
    if proj.gate_run is not None and proj.gate_run not in names:
        raise _bad(p, ("gate", "run"), f"[gate] run {proj.gate_run!r} is not a run of this project")


def _prompt(path: Path, stage: str, value: str) -> str:
    """A table's ``prompt``: auto, full or short as written, or a prompt file (relative to the project
    file), read and checked now: a placeholder the stage cannot fill is an error naming the prompt
    file's line, before any step runs."""
    if value in CHOICES:
        return value
    f = path.parent / value
    read_prompt_file(f, stage)
    return str(f)


def _thresholds(items: list[str]) -> dict[str, float]:
    """Validated ``"METRIC=VALUE"`` thresholds as a dict of metric name to value."""
    out = {}
    for item in items:
        metric, _, value = item.partition("=")
        out[metric.strip()] = float(value)
    return out


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
