"""The project file (``ragassay.toml``): what ``ragassay init`` finds in a folder, and what ``ragassay run``
reads.

``init`` looks at every file of a folder and names its role: chunks, queries, answers, people's answer
labels, qrels (with who labelled them, from ``FILE.origin.json``), runs (TREC or JSON Lines), retriever
functions (a ``.py`` file's public functions of one required argument, the query) and BEIR folders. It
guesses nothing silently: a file that could fill a role another file fills too is written commented out,
with the choices, and said; a file it cannot place is said. ``init --update`` appends the files that
appeared since, at the end of their table, and leaves every line already written as it is (a file named
anywhere in the file, commented out or not, is known).

The file is TOML, read with :mod:`tomllib` (Python 3.11+; on 3.10 the ``tomli`` package) and written by
hand, with comments.
"""

from __future__ import annotations

import ast
import datetime
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import placing
from ..errors import InputError, UsageError

PROJECT_FILE = "ragassay.toml"
STATE_DIR = ".ragassay"  # beside the project file: state.json, history.sqlite
DEFAULT_OUT = "ragassay-out"
DEFAULT_METRICS = ("ndcg@10", "map", "recall@10", "mrr")
SINGLE_ROLES = ("chunks", "queries", "answers", "human", "qrels")  # one file each, in [data]
SKIPPED_DIRS = {STATE_DIR, "__pycache__", ".git", ".venv", "node_modules"}
RUN_SUFFIXES = {".txt", ".trec", ".run", ".tsv", ".qrels", ""}


# ------------------------------------------------------------------------------------- reading

def _toml(path: Path | None = None) -> Any:
    """The TOML reader: tomllib (3.11+), else tomli when installed, else a clear error."""
    try:
        import tomllib as toml
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as toml  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise InputError("reading the project file needs Python 3.11 or the tomli package on 3.10 "
                             "(pip install tomli)", path) from None
    return toml


def loads_toml(text: str, path: Path | None = None) -> dict[str, Any]:
    """``text`` read as TOML; an error names the file and line."""
    toml = _toml(path)
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"not valid TOML: {e}", path, int(m.group(1)) if m else None) from None


def load_toml(path: Path) -> dict[str, Any]:
    """The TOML file as a dict."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the project file: {e}", path) from None
    return loads_toml(text, path)


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
    fallbacks: dict[str, Path] = field(default_factory=dict)  # name -> a run file read when the retriever's packages are missing
    llm: dict[str, Any] = field(default_factory=dict)
    generate_limit: int = 20
    generate_sample: int = 0            # questions to write although the project has queries (read, not retrieved)
    second_qrels: Path | None = None    # a second labelling of the pairs: agree measures [data] qrels against it
    title: str | None = None            # the report's title
    state: Path | None = None           # where the state and history go, when not beside the project file
    coverage: bool = False
    check_run: str | None = None
    judge_prompt: str = "auto"          # [judge] prompt: auto, full, short, or a prompt file (absolute)
    check_prompt: str = "auto"          # [check] prompt: the same for check
    answers_match: str = "auto"         # answers meet queries by id; with none met, by question text ("id": never)
    gate_min: dict[str, float] = field(default_factory=dict)
    gate_max: dict[str, float] = field(default_factory=dict)
    gate_run: str | None = None
    allow_errors: int = 0
    keep_going: bool = False            # a failed LLM step does not stop the steps after it

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def state_dir(self) -> Path:
        return self.state if self.state is not None else self.root / STATE_DIR

    def moved(self, out: str | Path) -> Project:
        """This project with its outputs, state and history in ``out`` (state in ``out/.ragassay``):
        for a project file in a folder that is not to be written, such as the installed example."""
        import dataclasses
        return dataclasses.replace(self, out=Path(out), state=Path(out) / STATE_DIR)

    def run_names(self) -> list[str]:
        """Every run's name, files first, then retrievers (the first is compare's baseline)."""
        return list(self.runs) + list(self.retrievers)


LLM_KEYS = {"model": str, "base_url": str, "timeout": (int, float), "concurrency": int, "rpm": (int, float),
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


def read_project(path: str | Path | None = None) -> Project:
    """Read and check a project file: unknown keys, wrong types and missing files are errors naming
    the key (a value the pipeline would send to a stage is checked here, in the file's words)."""
    p = find_project(path)
    raw = load_toml(p)
    root = p.parent

    def bad(key: str, why: str) -> InputError:
        return InputError(f"{key}: {why}", p, _line_of(p, key))

    unknown = sorted(set(raw) - _TABLES - _TOP)
    if unknown:
        raise bad(unknown[0], f"unknown key (known: {', '.join(sorted(_TOP | _TABLES))})")
    for table in _TABLES & set(raw):
        if not isinstance(raw[table], dict):
            raise bad(table, "must be a table ([" + table + "])")

    def number(key: str, value: Any, least: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise bad(key, f"must be a whole number of at least {least}, got {value!r}")
        return value

    def path_of(key: str, value: Any) -> Path:
        if not isinstance(value, str) or not value:
            raise bad(key, f"must be a file name in quotes, got {value!r}")
        f = (root / value)
        if not f.exists():
            raise bad(key, f"no such file {value!r} (paths are relative to the project file)")
        return f

    out = raw.get("out", DEFAULT_OUT)
    if not isinstance(out, str) or not out:
        raise bad("out", f"must be a folder name in quotes, got {out!r}")
    proj = Project(path=p, out=root / out, depth=number("depth", raw.get("depth", 10), 1),
                   k=number("k", raw.get("k", 100), 1))
    metrics = raw.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise bad("metrics", "must be a list of metric names, e.g. [\"ndcg@10\", \"map\"]")
    proj.metrics = _metric_names(metrics, "metrics", bad)
    if "relevance_level" in raw:
        proj.relevance_level = number("relevance_level", raw["relevance_level"], 1)
    if not isinstance(raw.get("keep_going", False), bool):
        raise bad("keep_going", "must be true or false")
    proj.keep_going = raw.get("keep_going", False)
    data = raw.get("data", {})
    for key in data:
        if key == "answers_match":  # how the answers meet the queries: a setting, not a file
            from ..data.text_match import MATCH_SETTINGS
            if data[key] not in MATCH_SETTINGS:
                raise bad(key, f"is one of {', '.join(repr(m) for m in MATCH_SETTINGS)} (by id, then by question text "
                               f"when no id meets; by id only; by question text), got {data[key]!r}")
            proj.answers_match = data[key]
            continue
        if key not in SINGLE_ROLES:
            raise bad(key, f"unknown key in [data] (known: {', '.join(SINGLE_ROLES)}, answers_match)")
        setattr(proj, key, path_of(key, data[key]))
    for name, value in raw.get("runs", {}).items():
        proj.runs[name] = path_of(name, value)
    for name, value in raw.get("retrievers", {}).items():
        if isinstance(value, dict):  # { function = "file.py:function", fallback = "runs/name.txt" }
            extra = sorted(set(value) - {"function", "fallback"})
            if extra or "function" not in value:
                raise bad(name, f"a retriever's table holds function = \"file.py:function\" and, if wanted, "
                                f"fallback = \"run file\"; got {', '.join(extra) or 'no function'}")
            if "fallback" in value:
                proj.fallbacks[name] = path_of(name, value["fallback"])
            value = value["function"]
        file, sep, function = value.rpartition(":") if isinstance(value, str) else ("", "", "")
        if not sep or not file.endswith(".py") or not function:
            raise bad(name, f"a retriever is \"file.py:function\", got {value!r}")
        proj.retrievers[name] = f"{path_of(name, file)}:{function}"
    both = sorted(set(proj.runs) & set(proj.retrievers))
    if both:
        raise bad(both[0], "names a run file and a retriever: two runs need two names")
    for name in proj.run_names():
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            raise bad(name, "a run's name is letters, digits, '.', '_' and '-' (it names its files)")
    llm = raw.get("llm", {})
    for key, value in llm.items():
        kind = LLM_KEYS.get(key)
        if kind is None:
            raise bad(key, f"unknown key in [llm] (known: {', '.join(LLM_KEYS)})")
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise bad(key, f"has the wrong type: {value!r}")
        if kind is not bool and kind is not str and value <= 0:
            raise bad(key, f"must be above 0, got {value!r}")
    proj.llm = {k: (str(root / v) if k == "cache" else v) for k, v in llm.items()}
    generate = raw.get("generate", {})
    _known(generate, {"limit", "sample"}, "generate", bad)
    proj.generate_limit = number("limit", generate.get("limit", 20), 0)  # 0: none (a file may hold the queries)
    proj.generate_sample = number("sample", generate.get("sample", 0), 0)
    if proj.generate_sample and proj.queries is None:
        raise bad("sample", "[generate] sample writes questions beside the project's own queries; this project "
                            "has none ([data] queries): [generate] limit sets how many run writes")
    agree = raw.get("agree", {})
    _known(agree, {"second"}, "agree", bad)
    if "second" in agree:
        proj.second_qrels = path_of("second", agree["second"])
        if proj.qrels is None:
            raise bad("second", "[agree] second is measured against people's qrels: name them in [data] qrels")
    report = raw.get("report", {})
    _known(report, {"title"}, "report", bad)
    if "title" in report and (not isinstance(report["title"], str) or not report["title"].strip()):
        raise bad("title", f"must be a title in quotes, got {report['title']!r}")
    proj.title = report.get("title")
    judge = raw.get("judge", {})
    _known(judge, {"coverage", "prompt"}, "judge", bad)
    if not isinstance(judge.get("coverage", False), bool):
        raise bad("coverage", "must be true or false")
    proj.coverage = judge.get("coverage", False)
    proj.judge_prompt = _prompt_setting(judge, "judge", p, path_of)
    check = raw.get("check", {})
    _known(check, {"run", "prompt"}, "check", bad)
    proj.check_prompt = _prompt_setting(check, "check", p, path_of)
    proj.check_run = check.get("run")
    if proj.check_run is not None and proj.check_run not in proj.run_names():
        raise bad("run", f"[check] run {proj.check_run!r} is not a run of this project "
                         f"({', '.join(proj.run_names()) or 'none'})")
    gate = raw.get("gate", {})
    _known(gate, {"min", "max", "run", "allow_errors"}, "gate", bad)
    proj.gate_min, proj.gate_max = (_thresholds(gate.get(k, []), k, bad) for k in ("min", "max"))
    proj.metrics += _gated_metrics(proj)
    proj.gate_run = gate.get("run")
    if proj.gate_run is not None and proj.gate_run not in proj.run_names():
        raise bad("run", f"[gate] run {proj.gate_run!r} is not a run of this project")
    proj.allow_errors = number("allow_errors", gate.get("allow_errors", 0), 0)
    return proj


def _prompt_setting(table: Mapping[str, Any], stage: str, project: Path, path_of: Any) -> str:
    """A table's ``prompt``: auto, full or short as written, or a prompt file (relative to the
    project file), read and checked now: a placeholder the stage cannot fill is an error naming the
    prompt file's line, before any step runs."""
    from ..llm.prompt_files import CHOICES, read_prompt_file
    value = table.get("prompt", "auto")
    if value in CHOICES:
        return value
    if not isinstance(value, str) or not value:
        raise InputError(f"prompt: must be one of {', '.join(CHOICES)} or a prompt file's name, in quotes, got "
                         f"{value!r}", project, _line_in(project, stage, "prompt"))
    try:
        f = path_of("prompt", value)
    except InputError as e:  # (the line of this table's prompt, not the first prompt of the file)
        raise InputError(e.message, project, _line_in(project, stage, "prompt")) from None
    if f.is_dir():
        raise InputError(f"prompt: {value!r} is a folder, not a prompt file", project, _line_in(project, stage, "prompt"))
    read_prompt_file(f, stage)
    return str(f)


def _line_in(path: Path, table: str, key: str) -> int | None:
    """The line that sets ``key`` inside ``[table]`` (for messages)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    inside = False
    for no, line in enumerate(lines, start=1):
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            inside = header.group(1) == table
        elif inside and re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return no
    return None


def _known(table: Mapping[str, Any], keys: set[str], name: str, bad: Any) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise bad(unknown[0], f"unknown key in [{name}] (known: {', '.join(sorted(keys))})")


def _metric_names(names: list[str], key: str, bad: Any) -> list[str]:
    """``names`` as written, each checked: a name no metric spells is an error naming the line (with
    the close match), before any step runs."""
    from ..errors import MeasureError
    from ..metrics.measures import parse_measures
    try:
        parse_measures(names)
    except MeasureError as e:
        raise bad(key, str(e)) from None
    return list(names)


def _gated_metrics(proj: Project) -> list[str]:
    """The metrics a gate threshold names that ``metrics`` lacks (in any spelling): evaluate computes
    them too, so the gate has its numbers."""
    from ..metrics.measures import parse_measure, parse_measures
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


def _line_of(path: Path, key: str) -> int | None:
    """The first line that sets ``key`` (for messages)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    pattern = re.compile(rf"^\s*\[?\s*{re.escape(key)}\s*[\]=]")
    return next((no for no, line in enumerate(lines, start=1) if pattern.match(line)), None)


# -------------------------------------------------------------------------------- finding files

@dataclass
class Found:
    """One file and the role it can fill (``key`` in ``table``), with a note said beside it."""
    path: str          # relative to the folder, with '/'
    table: str         # data, runs, retrievers
    key: str           # chunks ... or a run's / retriever's name
    value: str         # what the TOML holds: the path, or path:function
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"file": self.path, "role": f"{self.table}.{self.key}" if self.table != "data" else self.key,
                "value": self.value, "note": self.note}


@dataclass
class Findings:
    """What a folder holds: files placed, files that could fill a role another fills too (each
    with its choices), files not placed (with why)."""
    placed: list[Found] = field(default_factory=list)
    ambiguous: list[tuple[Found, str]] = field(default_factory=list)  # (the file, why it is not chosen)
    unplaced: list[tuple[str, str]] = field(default_factory=list)     # (file, why)


def scan(folder: str | Path, skip: Sequence[Path] = ()) -> Findings:
    """Every file of ``folder`` (not hidden ones, not ``skip``) and its role."""
    root = Path(folder)
    candidates: list[Found] = []
    unplaced: list[tuple[str, str]] = []
    skipped = {s.resolve() for s in skip}
    beir = _beir_folders(root)
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root)
        if not f.is_file() or any(part.startswith(".") or part in SKIPPED_DIRS for part in rel.parts) \
                or f.resolve() in skipped or any(f.resolve().is_relative_to(s) for s in skipped):
            continue
        name = rel.as_posix()
        if name == PROJECT_FILE or name.endswith((".origin.json", ".latency.json", ".journal", ".lock")):
            continue
        found, why = _classify(f, name, beir)
        candidates += found
        if not found:
            unplaced.append((name, why))
    candidates, choices = _place_texts(root, candidates)
    out = _settle(candidates, unplaced)
    out.ambiguous += choices
    return out


def _place_texts(root: Path, candidates: list[Found]) -> tuple[list[Found], list[tuple[Found, str]]]:
    """Files of texts by id (``{"id", "text"}`` lines) placed as chunks or queries by the ids the
    folder's other files use (:mod:`.placing`); those the ids do not tell are returned as choices,
    written commented out under both roles. A lone such file, with no file naming ids and no other
    chunks, is the chunks."""
    texts = [c for c in candidates if c.table == "data" and c.key == placing.UNDECIDED]
    if not texts:
        return candidates, []
    rest = [c for c in candidates if c not in texts]
    sources = [s for s in (placing.source_of(root / c.path, c.table, c.key) for c in rest
                           if c.table in ("data", "runs")) if s is not None]
    choices: list[tuple[Found, str]] = []
    undecided: list[tuple[Found, str]] = []
    for c in texts:
        role, why = placing.decide(root / c.path, sources)
        if role is None:
            undecided.append((c, why))
        else:
            rest.append(Found(c.path, "data", role, c.value, why))
    chunk_files = [c for c in rest if c.table == "data" and c.key == "chunks"]
    if len(undecided) == 1 and not sources and not chunk_files:
        c, _ = undecided[0]
        rest.append(Found(c.path, "data", "chunks", c.value, "chunk texts by id (the only file of texts here, and "
                                                             "no run, qrels or answers to tell it from queries by id)"))
        return rest, []
    if len(undecided) == 1 and len(chunk_files) == 1:  # beside the chunks, a file of texts sharing none of their ids
        c, _ = undecided[0]
        if placing.shares_no_ids(root / c.path, root / chunk_files[0].path):
            rest.append(Found(c.path, "data", "queries", c.value,
                              f"texts by id beside the chunks ({chunk_files[0].path}), sharing none of their ids"))
            return rest, []
    for c, why in undecided:
        for role in ("chunks", "queries"):
            choices.append((Found(c.path, "data", role, c.value, ""), f"{why}; uncomment the role it plays"))
    return rest, choices


def _beir_folders(root: Path) -> set[Path]:
    return {c.parent for c in root.rglob("corpus.jsonl") if (c.parent / "queries.jsonl").exists()}


def _classify(f: Path, name: str, beir: set[Path]) -> tuple[list[Found], str]:
    """The roles one file can fill (none: why)."""
    suffix = f.suffix.lower()
    if suffix == ".py":
        return _retrievers(f, name)
    if suffix in (".jsonl", ".json"):
        return _json_roles(f, name, beir)
    if suffix in RUN_SUFFIXES:
        return _column_roles(f, name, beir)
    return [], "not a kind of file ragassay reads"


def _retrievers(f: Path, name: str) -> tuple[list[Found], str]:
    """The public functions of one required positional argument (the query): retrievers."""
    try:
        tree = ast.parse(f.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError) as e:
        return [], f"a Python file that does not parse ({type(e).__name__})"
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            args = node.args
            positional = args.posonlyargs + args.args
            required = len(positional) - len(args.defaults)
            kw_required = [a for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
            if required == 1 and not kw_required:
                found.append(Found(name, "retrievers", node.name, f"{name}:{node.name}",
                                   f"a function of one argument, {positional[0].arg}"))
    return found, "a Python file with no public function of one argument (a query)"


def _first_record(f: Path) -> dict | None:
    try:
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    return obj if isinstance(obj, dict) else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return None


def _json_roles(f: Path, name: str, beir: set[Path]) -> tuple[list[Found], str]:
    obj = _first_record(f)
    if obj is None:
        return [], "not JSON Lines of objects (or empty)"
    keys = set(obj)
    record = str(obj.get("record", ""))
    in_beir = f.parent in beir
    if record and not record.startswith("question@"):
        return [], f"an output of ragassay ({record.split('@')[0]} records): run writes its own"
    if in_beir and f.name == "corpus.jsonl":
        return [Found(name, "data", "chunks", name, "BEIR corpus")], ""
    if in_beir and f.name == "queries.jsonl":
        return [Found(name, "data", "queries", name, "BEIR queries")], ""
    texts = placing.texts_role(keys)  # by the fields the readers take; id and text alone: by the ids, in scan
    if texts == "chunks":
        return [Found(name, "data", "chunks", name, placing.chunks_note(f))], ""
    if texts == "queries":
        field = next(k for k in ("query", "query_id", "qid") if k in keys)
        return [Found(name, "data", "queries", name, f"queries ({field})")], ""
    if texts == placing.UNDECIDED:
        return [Found(name, "data", placing.UNDECIDED, name, "texts by id")], ""
    if "response" in keys or ("answer" in keys and ({"contexts", "ground_truth", "reference"} & keys)
                              and "chunk_ids" not in keys):
        return [Found(name, "data", "answers", name, "answers to check: question, reference, response")], ""
    if "label" in keys and "id" in keys and len(keys) <= 4:
        return [Found(name, "data", "human", name, "labels of the answers" + _labels_who(f))], ""
    if {"query_id", "chunk_id", "score"} <= keys:
        return [Found(name, "runs", _run_name(f), name, "a run (JSON Lines)")], ""
    if {"query_id", "chunk_id", "grade"} <= keys:
        return [Found(name, "data", "qrels", name, "qrels (JSON Lines)" + _who(f))], ""
    if ("question" in keys or "query" in keys) and ({"id", "_id"} & keys):
        return [Found(name, "data", "queries", name, "questions" + (" with reference answers"
                                                                     if "answer" in keys else ""))], ""
    return [], f"JSON Lines whose fields ({', '.join(sorted(keys)[:6])}) fit no role"


def _column_roles(f: Path, name: str, beir: set[Path]) -> tuple[list[Found], str]:
    try:
        with open(f, encoding="utf-8") as fh:
            lines = [line.split() for line, _ in zip(fh, range(5)) if line.strip()]
    except (OSError, UnicodeDecodeError):
        return [], "not a text file"
    if not lines:
        return [], "empty"
    first = lines[-1] if len(lines) > 1 else lines[0]
    if len(first) == 6 and first[1] == "Q0" and _numbers(first[3], first[4]):
        return [Found(name, "runs", _run_name(f), name, "a run (TREC)")], ""
    if len(first) == 4 and first[1] in ("0", "Q0") and _numbers(first[3]):
        return [Found(name, "data", "qrels", name, "qrels (TREC)" + _who(f))], ""
    if len(first) == 3 and _numbers(first[2]) and f.parent.name == "qrels" and f.parent.parent in beir:
        return [Found(name, "data", "qrels", name, f"BEIR qrels, split {f.stem}" + _who(f))], ""
    return [], "text whose columns fit no role (a run: qid Q0 docid rank score tag; qrels: qid 0 docid grade)"


def _numbers(*values: str) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return True


def _run_name(f: Path) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f.stem) or "run"


def _quote_arg(text: str) -> str:
    """A path as a shell would take it back (quoted when it holds a space or a quote)."""
    import shlex
    return shlex.quote(text)


def _labels_who(f: Path) -> str:
    """Who labelled a file of answer labels: its sidecar, else what its lines say (assessor, model)."""
    from ..data.io import iter_jsonl, read_bytes_checked
    from ..data.origin import label_origin
    try:
        origin = label_origin(f, (obj for _, obj in iter_jsonl(read_bytes_checked(f), f)))
    except InputError as e:
        return f"; who labelled them cannot be read: {e.message}"
    return f"; labelled by {origin.describe()}" if origin.known else "; who labelled them is unknown (add FILE.origin.json)"


def _who(f: Path) -> str:
    """Who labelled a qrels file, from its sidecar."""
    from ..data.origin import read_origin, sidecar_path
    if not sidecar_path(f).exists():
        return "; who labelled it is unknown (add FILE.origin.json)"
    try:
        return f"; labelled by {read_origin(f).describe()}"
    except InputError as e:
        return f"; its origin sidecar is unreadable: {e.message}"


def _settle(candidates: list[Found], unplaced: list[tuple[str, str]]) -> Findings:
    """One file per single role; a run or retriever name used twice is renamed (said); two files for
    one single role are both left as choices, as is a run file a retriever of its name makes."""
    out = Findings(unplaced=unplaced)
    by_role: dict[str, list[Found]] = {}
    for c in candidates:
        if c.table == "data":
            by_role.setdefault(c.key, []).append(c)
    for role in SINGLE_ROLES:
        files = by_role.get(role, [])
        if len(files) == 1:
            out.placed.append(files[0])
        elif len(files) > 1:
            choices = ", ".join(f.path for f in files)
            out.ambiguous += [(f, f"{len(files)} files could be the {role}: {choices}; uncomment one") for f in files]
    retrievers = [c for c in candidates if c.table == "retrievers"]
    names: set[str] = set()
    for c in retrievers:
        c.key = _unique(c.key, names, c)
        out.placed.append(c)
    for c in (c for c in candidates if c.table == "runs"):
        if c.key in {r.key for r in retrievers}:
            out.ambiguous.append((c, f"the retriever {c.key} makes a run of this name: run writes it; uncomment "
                                     "(under another name) to keep this file as a run of its own"))
            continue
        c.key = _unique(c.key, names, c)
        out.placed.append(c)
    return out


def _unique(key: str, names: set[str], c: Found) -> str:
    new, n = key, 2
    while new in names:
        new, n = f"{key}-{n}", n + 1
    if new != key:
        c.note += f" (named {new}: {key} is taken)"
    names.add(new)
    return new


# --------------------------------------------------------------------------------- writing

_HEADER = """\
# ragassay project file: `ragassay run` runs the pipeline it describes (generate questions when there
# are none, retrieve with each retriever, judge the pool of every run's top `depth`, measure people's
# qrels against a second labelling and the judged pool, check the answers, evaluate and compare every
# run, write the report, track the results, gate). Each step runs only when its inputs changed. Paths
# are relative to this file. `ragassay init --update` appends files that appear later and keeps your
# edits. Written by `ragassay init` on {date}.

out = "{out}"    # where run writes its outputs (state and history: .ragassay/ beside this file)
depth = 10    # the pool: the union of every run's top 10 for each query, judged once for all runs
k = 100    # results a retriever returns for each query
metrics = ["ndcg@10", "map", "recall@10", "mrr"]
# keep_going = true    # a failed LLM step does not stop the steps after it (the report shows what succeeded)
"""

_SECTIONS: dict[str, str] = {
    "data": "# the files the pipeline reads{no_queries}\n"
            "# (qrels: labels of query x chunk; human: labels of the answers; who made each: FILE.origin.json or its lines)",
    "runs": "# runs made elsewhere (TREC or JSON Lines): name = file",
    "retrievers": "# functions of a query returning chunk ids or (id, score) pairs, best first:\n"
                  "# name = \"file.py:function\"",
    "llm": "# the endpoint for generate, judge and check (flags and OPENAI_* / RAGASSAY_MODEL override these)\n"
           "# model = \"gpt-4o-mini\"\n# base_url = \"http://localhost:8000/v1\"\n# concurrency = 8\n"
           "# price_in = 0.15    # USD per million input tokens\n# price_out = 0.6\n"
           "# max_cost = 1.0    # stop before spending more",
    "generate": "# limit = 20    # questions to write when the project has no queries\n"
                "# sample = 10    # questions to write although it has queries (a set to read: not retrieved)",
    "judge": "# coverage = true    # also each run's coverage of each query's nuggets (more calls)\n"
             "# prompt = \"auto\"    # full, short (small local models), or your prompt file; auto: short when the\n"
             "#                     # model's name says 14B parameters or fewer",
    "check": "# run = \"NAME\"    # the run whose recall explains the answers (default: the first)\n"
             "# prompt = \"auto\"    # as [judge] prompt",
    "agree": "# people's qrels against the judged pool, always; and against a second labelling of the same pairs:\n"
             "# second = \"FILE\"",
    "report": "# title = \"...\"    # the report's title (default: this folder's name)",
    "gate": "# fail the run (exit 1) when a metric of a run crosses a threshold\n# min = [\"ndcg@10=0.5\"]\n"
            "# max = []\n# run = \"NAME\"    # only this run (default: every run)",
}


def _quote(s: str) -> str:
    return json.dumps(s)  # a TOML basic string is a JSON string for the characters paths hold


def _entry(f: Found, why: str = "", commented: bool = False) -> str:
    """One line of the file: ``key = "value"    # note; why``, commented out as a choice."""
    key = f.key if re.fullmatch(r"[A-Za-z0-9_-]+", f.key) else _quote(f.key)
    line = f"{key} = {_quote(f.value)}"
    note = "; ".join(n for n in (f.note, why) if n)
    return (f"# {line}" if commented else line) + (f"    # {note}" if note else "")


def render_project(findings: Findings, out: str = DEFAULT_OUT) -> str:
    """The project file's text for ``findings``."""
    text = _HEADER.format(date=datetime.date.today().isoformat(), out=out)
    for table, comment in _SECTIONS.items():
        lines = [_entry(f) for f in findings.placed if f.table == table]
        lines += [_entry(f, why, commented=True) for f, why in findings.ambiguous if f.table == table]
        if table == "data":  # questions are generated only when no file gives them
            has_queries = any(f.key == "queries" for f in findings.placed if f.table == table)
            may_be = [f.path for f, _ in findings.ambiguous if f.table == table and f.key == "queries"]
            comment = comment.format(no_queries="" if has_queries else
                                     f"; no queries placed: {' or '.join(may_be)} may hold them (uncomment "
                                     "below)" if may_be else "; no queries: run generates questions from the chunks")
        if table == "generate" and may_be_queries(findings):  # no questions written while a file may hold them
            lines.insert(0, f"limit = 0    # no questions are generated while {' or '.join(may_be_queries(findings))} "
                            "may hold the queries: name them in [data], or set a limit to generate")
        text += f"\n[{table}]\n{comment}\n" + "".join(line + "\n" for line in lines)
    if findings.unplaced:
        text += "\n# not placed:\n" + "".join(f"#   {name}: {why}\n" for name, why in findings.unplaced)
    return text


def may_be_queries(findings: Findings) -> list[str]:
    """The files that may hold the queries when none is placed as them (written commented out)."""
    if any(f.key == "queries" for f in findings.placed if f.table == "data"):
        return []
    return [f.path for f, _ in findings.ambiguous if f.table == "data" and f.key == "queries"]


def _mentioned(text: str, value: str) -> bool:
    """Whether ``value`` (a file's path, or a retriever's ``file.py:function``) appears anywhere in the
    file's text, in a line commented out or not, quoted either way or bare, after ``./`` or not: a
    file the user named, renamed or set aside by hand is known, and never added again."""
    return re.search(rf"(?<![\w./\\-])(?:\./)?{re.escape(value)}(?![\w./\\-])", text) is not None


def update_text(text: str, findings: Findings) -> tuple[str, Findings]:
    """``text`` with the files it does not name yet appended at the end of their table (a table it
    lacks is added at the end); every line it had is kept as it was. Returns the new text and what
    was added."""
    added = Findings(
        placed=[f for f in findings.placed if not _mentioned(text, f.value)],
        ambiguous=[(f, w) for f, w in findings.ambiguous if not _mentioned(text, f.value)],
        unplaced=[(n, w) for n, w in findings.unplaced if not _mentioned(text, n)])
    current = loads_toml(text)
    stamp = f"added by init --update on {datetime.date.today().isoformat()}"
    lines = text.splitlines()
    for table in _SECTIONS:
        entries = []
        for f in (f for f in added.placed if f.table == table):
            taken = f.key in current.get(table, {})
            if table == "data" and taken:  # the role is filled: the new file is a choice, not a replacement
                entries.append(_entry(f, f"{stamp}; [data] {f.key} is set already: uncomment to use this one",
                                      commented=True))
            else:
                f.key = _unique(f.key, set(current.get(table, {})) | {e.split(" ")[0] for e in entries}, f)
                entries.append(_entry(f, stamp))
        entries += [_entry(f, f"{why}; {stamp}", commented=True) for f, why in added.ambiguous if f.table == table]
        if entries:
            lines = _insert(lines, table, entries)
    if added.unplaced:
        lines += ["", f"# not placed ({stamp}):"] + [f"#   {n}: {w}" for n, w in added.unplaced]
    return "\n".join(lines) + "\n", added


def _insert(lines: list[str], table: str, entries: list[str]) -> list[str]:
    """``entries`` after the last line of ``[table]`` (before the blank lines that end it)."""
    header = next((i for i, line in enumerate(lines) if re.match(rf"^\s*\[{table}\]\s*(#.*)?$", line)), None)
    if header is None:
        return lines + ["", f"[{table}]"] + entries
    end = next((i for i in range(header + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines))
    while end > header + 1 and not lines[end - 1].strip():
        end -= 1
    return lines[:end] + entries + lines[end:]


# ------------------------------------------------------------------------------------ init

@dataclass
class InitResult:
    """What ``ragassay init`` wrote and found."""
    path: Path
    updated: bool
    findings: Findings

    def to_dict(self) -> dict[str, Any]:
        f = self.findings
        return {"kind": "init", "version": 1, "project": str(self.path), "updated": self.updated,
                "placed": [x.to_dict() for x in f.placed],
                "ambiguous": [{**x.to_dict(), "why": why} for x, why in f.ambiguous],
                "unplaced": [{"file": n, "why": why} for n, why in f.unplaced]}

    def text(self) -> str:
        f = self.findings
        verb = "updated" if self.updated else "wrote"
        lines = [f"{verb} {self.path}" + (": nothing new" if self.updated and not (f.placed or f.ambiguous) else "")]
        if f.placed:
            lines.append("found:")
            lines += [f"  {x.path:<40} {x.to_dict()['role']}" + (f"  ({x.note})" if x.note else "") for x in f.placed]
        if f.ambiguous:
            lines.append("to choose (written commented out):")
            lines += [f"  {x.path:<40} {x.to_dict()['role']}?  {why}" for x, why in f.ambiguous]
        if f.unplaced:
            lines.append("not placed:")
            lines += [f"  {n:<40} {why}" for n, why in f.unplaced]
        here = Path.cwd().resolve() == self.path.parent.resolve()  # run finds ./ragassay.toml by itself
        named = "" if here and self.path.name == PROJECT_FILE else f" {_quote_arg(str(self.path))}"
        lines.append(f"next: read {self.path}, then 'ragassay run{named} --dry-run' to see what it would do and cost")
        return "\n".join(lines)


def init_project(folder: str | Path | None = None, update: bool = False) -> InitResult:
    """``ragassay init [DIR]``: write ``DIR/ragassay.toml`` naming each file's role, or with
    ``update`` append the files that appeared since to the one there."""
    root = Path(folder) if folder else Path(".")
    if not root.is_dir():
        raise InputError("not a folder", root)
    path = root / PROJECT_FILE
    if path.exists() and not update:
        raise UsageError(f"{path} exists: 'ragassay init --update' adds the files that appeared since (keeping "
                         "your edits); remove it to start again")
    if update and not path.exists():
        raise UsageError(f"{path} does not exist yet: 'ragassay init' (without --update) writes it")
    out = DEFAULT_OUT
    if update:
        raw = load_toml(path)
        out = raw.get("out", DEFAULT_OUT) if isinstance(raw.get("out"), str) else DEFAULT_OUT
    findings = scan(root, skip=[root / out])
    if not update and not findings.placed and not findings.ambiguous:  # a file of comments only helps no one
        said = "".join(f"\n  {name}: {why}" for name, why in findings.unplaced[:10])
        more = len(findings.unplaced) - 10
        raise InputError("found nothing ragassay can use (chunks, queries, answers, qrels, runs or retriever "
                         "functions); no project file written" + (":" + said if said else ": the folder is empty")
                         + (f"\n  ... and {more} more" if more > 0 else ""), root)
    if not update:
        path.write_text(render_project(findings, out), encoding="utf-8")
        return InitResult(path, False, findings)
    text, added = update_text(path.read_text(encoding="utf-8"), findings)
    path.write_text(text, encoding="utf-8")
    return InitResult(path, True, added)
