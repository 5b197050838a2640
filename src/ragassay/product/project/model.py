"""The project as ``read_project`` returns it: every setting of ``ragassay.toml`` with its default,
every path absolute, and the names of the files and folders a project keeps beside it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_FILE = "ragassay.toml"
STATE_DIR = ".ragassay"  # beside the project file: state.json, history.sqlite
DEFAULT_OUT = "ragassay-out"
DEFAULT_METRICS = ("ndcg@10", "map", "recall@10", "mrr")
SINGLE_ROLES = ("chunks", "queries", "answers", "human", "qrels")  # one file each, in [data]
SKIPPED_DIRS = {STATE_DIR, "__pycache__", ".git", ".venv", "node_modules"}
RUN_SUFFIXES = {".txt", ".trec", ".run", ".tsv", ".qrels", ""}


@dataclass
class Project:
    """A project file, read and checked: every path absolute (relative ones are to the file's folder)."""

    path: Path
    out: Path
    depth: int = 10
    k: int = 100
    metrics: list[str] = field(default_factory=lambda: list(DEFAULT_METRICS))
    relevance_level: int | None = None  # the grade binary metrics count from (None: the labels' own, else 1)
    chunks: Path | None = None
    queries: Path | None = None
    answers: Path | None = None
    human: Path | None = None
    qrels: Path | None = None
    runs: dict[str, Path] = field(default_factory=dict)
    retrievers: dict[str, str] = field(default_factory=dict)  # name -> "file.py:function" (path absolute)
    fallbacks: dict[str, Path] = field(default_factory=dict)  # name -> a run file read when the retriever's
    #                                                           packages are missing
    llm: dict[str, Any] = field(default_factory=dict)
    generate_limit: int = 20
    generate_sample: int = 0  # questions to write although the project has queries (read, not retrieved)
    second_qrels: Path | None = None  # a second labelling of the pairs: agree measures [data] qrels against it
    title: str | None = None  # the report's title
    state: Path | None = None  # where the state and history go, when not beside the project file
    coverage: bool = False
    check_run: str | None = None
    judge_prompt: str = "auto"  # [judge] prompt: auto, full, short, or a prompt file (absolute)
    check_prompt: str = "auto"  # [check] prompt: the same for check
    answers_match: str = "auto"  # answers meet queries by id; with none met, by question text ("id": never)
    gate_min: dict[str, float] = field(default_factory=dict)
    gate_max: dict[str, float] = field(default_factory=dict)
    gate_run: str | None = None
    allow_errors: int = 0
    keep_going: bool = False  # a failed LLM step does not stop the steps after it

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def state_dir(self) -> Path:
        return self.state if self.state is not None else self.root / STATE_DIR

    def moved(self, out: str | Path) -> Project:
        """This project with its outputs, state and history in ``out`` (state in ``out/.ragassay``):
        for a project file in a folder that is not to be written, such as the installed example."""
        return dataclasses.replace(self, out=Path(out), state=Path(out) / STATE_DIR)

    def run_names(self) -> list[str]:
        """Every run's name, files first, then retrievers (the first is compare's baseline)."""
        return list(self.runs) + list(self.retrievers)
