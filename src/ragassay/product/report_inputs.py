"""What a report is made from, read and recognised by content.

Result JSON (evaluate, compare, check, agree, generate: their ``kind`` says which) and JSON Lines
records (judge's judgments and coverage, check's verdicts, generate's questions and rejects: each
line's ``record`` says which) are parsed into their models; qrels, runs, chunks, queries, answers
and people's labels come from their own options.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.chunk_files import read_chunks
from ..data.lines import checked_bytes, iter_jsonl, read_bytes_checked
from ..data.origin import Origin
from ..data.qrels_files import read_qrels
from ..data.query_files import read_queries
from ..data.record_files import legacy_kind, read_record_file
from ..data.records import RECORD_FIELD, AnswerItem, Check, Chunk, Coverage, Judgment, Question, Reject
from ..data.results import as_result, load_result
from ..data.run_files import read_run
from ..data.tables import Qrels, Run
from ..errors import InputError
from ..stages.answer_files import read_answers, read_human_labels, read_labels_origin, retrieval_recall
from ..stages.check_summary import summarise_checks


@dataclass
class ReportInputs:
    qrels: Any = None
    people_qrels: Any = None  # a second qrels shown beside the first (people's beside the judge's pool)
    runs: list = field(default_factory=list)
    chunks: dict = field(default_factory=dict)  # id -> Chunk
    queries: dict[str, str] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)  # id -> AnswerItem
    human_labels: dict[str, str] = field(default_factory=dict)
    human_origin: Any = None  # who made human_labels (data/origin.py); None: unknown
    evaluate: list[dict] = field(default_factory=list)
    compare: dict | None = None
    check: dict | None = None
    agreements: list[dict] = field(default_factory=list)  # agree results, each shown in the order given
    generate: dict | None = None
    calibration: list[dict] = field(default_factory=list)  # ragassay label: one per person
    judgments: list[Judgment] = field(default_factory=list)
    coverage: list[Coverage] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    relevance_level: int | None = None  # the grade binary measures count from (None: the qrels' own, else 1)

    def records_of(self, kind: str) -> list:
        """The list the records of ``kind`` go to."""
        lists: dict[str, list] = {
            "judgment": self.judgments,
            "coverage": self.coverage,
            "check": self.checks,
            "question": self.questions,
            "reject": self.rejects,
        }
        return lists[kind]


REPORTED_RECORDS = ("judgment", "coverage", "check", "question", "reject")

RunFiles = Mapping[str, "str | Path | Run"] | Sequence["str | Path | Run"]


class NamedRun(str):
    """A run file's path (the string itself, so every check of declared input files sees the path)
    with the name the caller gave the run: what ``--run NAME=PATH`` becomes."""

    run_name: str

    def __new__(cls, path: str, run_name: str) -> NamedRun:
        made = super().__new__(cls, path)
        made.run_name = run_name
        return made


def run_argument(text: str) -> str:
    """A ``--run`` value: ``NAME=PATH`` names the run NAME; a path as it is (named by its TREC tag,
    else its file name). A path holding '=' that exists is a path; otherwise the first '=' splits."""
    if "=" not in text or Path(text).exists():
        return text
    name, path = text.split("=", 1)
    if not name.strip() or not path:
        raise ValueError(f"{text!r}: give NAME=PATH (a name and a run file) or the path of a run file")
    return NamedRun(path, name)


def named_run_files(runs: RunFiles) -> list[tuple[str | None, str | Path | Run]]:
    """(name, path) of each run: a mapping names every run; in a sequence, a :class:`NamedRun` has
    its name and a plain path none (the run's TREC tag, else its file name, names it)."""
    if isinstance(runs, Mapping):
        return [(str(name), path) for name, path in runs.items()]
    return [(r.run_name if isinstance(r, NamedRun) else None, r) for r in runs]


def read_runs(runs: RunFiles) -> list:
    """The runs, each named as the caller said (else by its tag or file name); two runs of one name
    are an error naming the second file."""
    out: list = []
    seen: dict[str, str | Path | Run] = {}
    for name, path in named_run_files(runs):
        if name is not None and not name.strip():
            raise InputError("a run's name is empty: give each run a name", path if not isinstance(path, Run) else None)
        run = read_run(path, name=name) if not isinstance(path, Run) else path
        if run.name in seen:
            how = "the name given" if name is not None else "its TREC tag (or file name)"
            raise InputError(
                f"two runs are named {run.name!r} ({how}; the other is {seen[run.name]}): give each "
                "run its own name (NAME=PATH in ragassay report; a mapping {name: path} from Python)",
                path if not isinstance(path, Run) else path.source,
            )
        seen[run.name] = path
        out.append(run)
    return out


def load_inputs(
    paths: Sequence[str | Path] = (),
    qrels: str | Path | Qrels | None = None,
    runs: RunFiles = (),
    chunks: str | Path | Sequence[Chunk] | None = None,
    queries: str | Path | Mapping[str, str] | None = None,
    answers: str | Path | Sequence[AnswerItem] | None = None,
    human: str | Path | Mapping[str, str] | None = None,
    people_qrels: str | Path | Qrels | None = None,
    human_origin: Origin | None = None,
    results: Mapping[Path, Any] | None = None,
    read: Mapping[Path, bytes] | None = None,
) -> ReportInputs:
    """Read everything a report can show; each file is checked and named in any error.

    ``runs`` is a mapping {name: path} that names each run, or a sequence of paths (each run named by
    its TREC tag, else its file name; a :class:`NamedRun` by its own name). ``people_qrels`` is a
    second qrels shown beside ``qrels`` on every query page (people's grades beside the judge's pool
    the metrics are computed on); each is labelled by who made it (``FILE.origin.json``).

    The qrels, runs, chunks and queries may be handed over as objects already read (a :class:`Qrels`,
    a :class:`Run` named as it is to be shown, the chunks, the queries' texts by id, the answers, people's
    labels by answer id with ``human_origin`` saying who made them): the pipeline reads each of its
    inputs once and hands the same objects to every step. ``results``: results already read (or
    written) by the file they are in, and ``read`` the bytes of files already read, for files of
    ``paths`` that are not read again."""
    inp = ReportInputs()
    inp.qrels, inp.people_qrels = _qrels_of(qrels), _qrels_of(people_qrels)
    inp.runs = read_runs(runs)
    inp.chunks = _chunks_of(chunks)
    inp.queries = _queries_of(queries)
    inp.answers = _answers_of(answers, inp.chunks)
    if human is not None and not isinstance(human, (str, Path)):
        inp.human_labels, inp.human_origin = dict(human), human_origin
    elif human:
        inp.human_labels = read_human_labels(human)
        inp.human_origin = read_labels_origin(human)
    for p in paths:
        given = (results or {}).get(Path(p))
        if given is not None:
            _put_result(inp, as_result(given, p).to_dict(), Path(p))
        else:
            _add_file(inp, Path(p), (read or {}).get(Path(p)))
    for q in inp.questions:  # a generated set brings its own question texts and reference answers
        inp.queries.setdefault(q.id, q.question)
    if inp.checks and inp.check is None:  # check's records alone: the label rates, diagnosis and people too
        inp.check = _check_summary(inp)
    return inp


def _qrels_of(given: str | Path | Qrels | None) -> Qrels | None:
    """Qrels handed over, or read from their file (None when none is given)."""
    if isinstance(given, Qrels):
        return given
    return read_qrels(given) if given else None


def _chunks_of(given: str | Path | Sequence[Chunk] | None) -> dict[str, Chunk]:
    """The chunks by id, handed over or read from their file."""
    if given is not None and not isinstance(given, (str, Path)):
        return {c.id: c for c in given}
    return {c.id: c for c in read_chunks(given)} if given else {}


def _queries_of(given: str | Path | Mapping[str, str] | None) -> dict[str, str]:
    """The queries' texts by id: a copy of those handed over (a generated set's own questions are
    added to it), or read from their file."""
    if given is not None and not isinstance(given, (str, Path)):
        return dict(given)
    return read_queries(given) if given else {}


def _answers_of(given: str | Path | Sequence[AnswerItem] | None, chunks: dict[str, Chunk]) -> dict[str, Any]:
    """The answers by id, handed over or read from their file (their context ids looked up in ``chunks``)."""
    if given is not None and not isinstance(given, (str, Path)):
        return {a.id: a for a in given}
    return {a.id: a for a in read_answers(given, chunks or None)} if given else {}


def _add_file(inp: ReportInputs, p: Path, raw: bytes | None = None) -> None:
    """One of the report's files: a result (evaluate, agree, compare, check, generate, calibration) or
    a file of records (judgments, coverage, checks, questions, rejects), each put where it belongs."""
    data = read_bytes_checked(p) if raw is None else checked_bytes(raw, p)
    try:
        whole = json.loads(data)  # one JSON document: a result (or a one-line JSONL file)
    except (json.JSONDecodeError, UnicodeDecodeError):
        whole = None
    # a result has a kind and a version; a record names its kind in RECORD_FIELD (a generated
    # question's own "kind" is its question kind: factoid, comparison ...)
    if isinstance(whole, dict) and RECORD_FIELD not in whole and "kind" in whole and "version" in whole:
        _add_result(inp, p)
        return
    lines = list(iter_jsonl(data, p))
    if not lines or (RECORD_FIELD not in lines[0][1] and legacy_kind(lines[0][1]) is None):
        raise InputError(
            "neither a ragassay result (JSON with a 'kind') nor records the report reads "
            "(judgments, coverage, checks, questions or rejects, as JSON Lines)",
            p,
        )
    kind, records = read_record_file(p, lines, REPORTED_RECORDS)
    inp.records_of(kind).extend(records)


def _add_result(inp: ReportInputs, p: Path) -> None:
    """A result file, by its kind; judge's summary is refused (the report reads its records instead)."""
    _put_result(inp, load_result(p), p)  # checks kind and version


def _put_result(inp: ReportInputs, result: dict[str, Any], p: Path) -> None:
    """A result, read from its file or handed over, put where its kind belongs."""
    kind = result["kind"]
    if kind == "evaluate":
        inp.evaluate.append(result)
    elif kind == "agree":
        inp.agreements.append(result)
    elif kind in ("compare", "check", "generate"):
        setattr(inp, kind, result)
    elif kind == "calibration":
        inp.calibration.append(result)
    else:
        raise InputError(
            f"a {kind} result: the report shows judge's judgments and coverage files themselves, not the summary", p
        )


def _check_summary(inp: ReportInputs) -> dict:
    """The check result from its records: rates always; the diagnosis with qrels and a run (the
    first run, at depth 10, as ``check`` does by default); agreement with people's labels."""
    recall, caveat = (
        retrieval_recall(inp.qrels, inp.runs[0], 10) if inp.qrels is not None and inp.runs else (None, None)
    )
    return summarise_checks(
        [c.model_dump() for c in inp.checks],
        recall=recall,
        human=inp.human_labels or None,
        human_origin=inp.human_origin,
        recall_caveat=caveat,
    )
