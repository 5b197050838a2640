"""What ``ragassay init`` finds in a folder: every file and the role it can fill (chunks, queries,
answers, people's answer labels, qrels with who labelled them, runs, retriever functions, BEIR
folders), a file that could fill a role another fills too left as a choice, and a file it cannot
place said with why."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...data.lines import iter_jsonl, read_bytes_checked
from ...data.origin import label_origin, read_origin, sidecar_path
from ...errors import InputError
from .. import placing
from .model import PROJECT_FILE, RUN_SUFFIXES, SINGLE_ROLES, SKIPPED_DIRS


@dataclass
class Found:
    """One file and the role it can fill (``key`` in ``table``), with a note said beside it."""

    path: str  # relative to the folder, with '/'
    table: str  # data, runs, retrievers
    key: str  # chunks ... or a run's / retriever's name
    value: str  # what the TOML holds: the path, or path:function
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "file": self.path,
            "role": f"{self.table}.{self.key}" if self.table != "data" else self.key,
            "value": self.value,
            "note": self.note,
        }


@dataclass
class Findings:
    """What a folder holds: files placed, files that could fill a role another fills too (each
    with its choices), files not placed (with why)."""

    placed: list[Found] = field(default_factory=list)
    ambiguous: list[tuple[Found, str]] = field(default_factory=list)  # (the file, why it is not chosen)
    unplaced: list[tuple[str, str]] = field(default_factory=list)  # (file, why)


def scan(folder: str | Path, skip: Sequence[Path] = ()) -> Findings:
    """Every file of ``folder`` (not hidden ones, not ``skip``) and its role."""
    root = Path(folder)
    candidates: list[Found] = []
    unplaced: list[tuple[str, str]] = []
    skipped = {s.resolve() for s in skip}
    beir = _beir_folders(root)
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root)
        if (
            not f.is_file()
            or any(part.startswith(".") or part in SKIPPED_DIRS for part in rel.parts)
            or f.resolve() in skipped
            or any(f.resolve().is_relative_to(s) for s in skipped)
        ):
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
    sources = [
        s
        for s in (placing.source_of(root / c.path, c.table, c.key) for c in rest if c.table in ("data", "runs"))
        if s is not None
    ]
    undecided = _by_ids(root, texts, sources, rest)
    chunk_files = [c for c in rest if c.table == "data" and c.key == "chunks"]
    lone = _lone_texts(root, undecided[0][0], bool(sources), chunk_files) if len(undecided) == 1 else None
    if lone is not None:
        return rest + [lone], []
    choices = [
        (Found(c.path, "data", role, c.value, ""), f"{why}; uncomment the role it plays")
        for c, why in undecided
        for role in ("chunks", "queries")
    ]
    return rest, choices


def _by_ids(
    root: Path, texts: list[Found], sources: list[placing.IdSource], placed: list[Found]
) -> list[tuple[Found, str]]:
    """Each file of texts the ids the other files name place as chunks or queries, added to
    ``placed``; those they do not tell are returned, each with why."""
    undecided: list[tuple[Found, str]] = []
    for c in texts:
        role, why = placing.decide(root / c.path, sources)
        if role is None:
            undecided.append((c, why))
        else:
            placed.append(Found(c.path, "data", role, c.value, why))
    return undecided


def _lone_texts(root: Path, c: Found, ids_named: bool, chunk_files: list[Found]) -> Found | None:
    """The one file of texts the ids do not place, placed by what is beside it: the chunks when no
    file names ids and there are no other chunks, the queries when beside the chunks it shares none of
    their ids; None when neither tells (it is then left as a choice)."""
    if not ids_named and not chunk_files:
        return Found(
            c.path,
            "data",
            "chunks",
            c.value,
            "chunk texts by id (the only file of texts here, and "
            "no run, qrels or answers to tell it from queries by id)",
        )
    if len(chunk_files) == 1 and placing.shares_no_ids(root / c.path, root / chunk_files[0].path):
        return Found(
            c.path,
            "data",
            "queries",
            c.value,  # beside the chunks, sharing none of their ids
            f"texts by id beside the chunks ({chunk_files[0].path}), sharing none of their ids",
        )
    return None


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
                found.append(
                    Found(
                        name,
                        "retrievers",
                        node.name,
                        f"{name}:{node.name}",
                        f"a function of one argument, {positional[0].arg}",
                    )
                )
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
    """The role of a file of JSON Lines, by the fields of its first record (none: why)."""
    obj = _first_record(f)
    if obj is None:
        return [], "not JSON Lines of objects (or empty)"
    keys = set(obj)
    record = str(obj.get("record", ""))
    if record and not record.startswith("question@"):
        return [], f"an output of ragassay ({record.split('@')[0]} records): run writes its own"
    found = _beir_role(f, name, beir) or _texts_role(f, name, keys) or _labelled_role(f, name, keys)
    if found is not None:
        return [found], ""
    return [], f"JSON Lines whose fields ({', '.join(sorted(keys)[:6])}) fit no role"


def _beir_role(f: Path, name: str, beir: set[Path]) -> Found | None:
    """A BEIR folder's corpus or queries, by its name."""
    if f.parent in beir and f.name == "corpus.jsonl":
        return Found(name, "data", "chunks", name, "BEIR corpus")
    if f.parent in beir and f.name == "queries.jsonl":
        return Found(name, "data", "queries", name, "BEIR queries")
    return None


def _texts_role(f: Path, name: str, keys: set[str]) -> Found | None:
    """Texts by id, by the fields the readers take: chunks, queries, or (id and text alone) left for
    :func:`scan` to place by the ids the folder's other files use."""
    texts = placing.texts_role(keys)
    if texts == "chunks":
        return Found(name, "data", "chunks", name, placing.chunks_note(f))
    if texts == "queries":
        field = next(k for k in ("query", "query_id", "qid") if k in keys)
        return Found(name, "data", "queries", name, f"queries ({field})")
    if texts == placing.UNDECIDED:
        return Found(name, "data", placing.UNDECIDED, name, "texts by id")
    return None


def _labelled_role(f: Path, name: str, keys: set[str]) -> Found | None:
    """Answers, labels of answers, a run, qrels or questions, by their fields."""
    if "response" in keys or (
        "answer" in keys and ({"contexts", "ground_truth", "reference"} & keys) and "chunk_ids" not in keys
    ):
        return Found(name, "data", "answers", name, "answers to check: question, reference, response")
    if "label" in keys and "id" in keys and len(keys) <= 4:
        return Found(name, "data", "human", name, "labels of the answers" + _labels_who(f))
    if {"query_id", "chunk_id", "score"} <= keys:
        return Found(name, "runs", _run_name(f), name, "a run (JSON Lines)")
    if {"query_id", "chunk_id", "grade"} <= keys:
        return Found(name, "data", "qrels", name, "qrels (JSON Lines)" + _who(f))
    if ("question" in keys or "query" in keys) and ({"id", "_id"} & keys):
        return Found(
            name, "data", "queries", name, "questions" + (" with reference answers" if "answer" in keys else "")
        )
    return None


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


def _labels_who(f: Path) -> str:
    """Who labelled a file of answer labels: its sidecar, else what its lines say (assessor, model)."""
    try:
        origin = label_origin(f, (obj for _, obj in iter_jsonl(read_bytes_checked(f), f)))
    except InputError as e:
        return f"; who labelled them cannot be read: {e.message}"
    if not origin.known:
        return "; who labelled them is unknown (add FILE.origin.json)"
    return f"; labelled by {origin.describe()}"


def _who(f: Path) -> str:
    """Who labelled a qrels file, from its sidecar."""
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
        c.key = unique_name(c.key, names, c)
        out.placed.append(c)
    for c in (c for c in candidates if c.table == "runs"):
        if c.key in {r.key for r in retrievers}:
            out.ambiguous.append(
                (
                    c,
                    f"the retriever {c.key} makes a run of this name: run writes it; uncomment "
                    "(under another name) to keep this file as a run of its own",
                )
            )
            continue
        c.key = unique_name(c.key, names, c)
        out.placed.append(c)
    return out


def unique_name(key: str, names: set[str], c: Found) -> str:
    new, n = key, 2
    while new in names:
        new, n = f"{key}-{n}", n + 1
    if new != key:
        c.note += f" (named {new}: {key} is taken)"
    names.add(new)
    return new
