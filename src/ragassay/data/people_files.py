"""The files that people's labels come in, read for :mod:`.people_samples`.

They are: the texts of only the chunks that a set of labels names (a passage collection may hold
millions, as MS MARCO's 8.8 million lines do, so reading all of it would waste memory); EVOUNA's
JSON array of answers with people's true or false; and a file of people's labels of answers.

Each reader names the file and line of what it cannot read, and reports every bad line at once
(:class:`.line_problems.LineProblems`), so that a user fixes a file in one pass. Nothing is skipped
without the caller counting it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .beir_folders import dataset_member
from .line_problems import LineProblems
from .lines import check_id, iter_jsonl, read_bytes_checked
from .records import AnswerItem, Chunk
from .roles import chunk_line_evidence

# a chunk's own id and its text, as the corpora people's labels come with spell them: ragassay's and
# BEIR's (id/_id, text), ir_datasets' docs export (doc_id, text), llmjudge's dl2019 file (docid, doc)
CHUNK_ID_FIELDS = ("id", "_id", "docid", "doc_id", "pid", "passage_id")
CHUNK_TEXT_FIELDS = ("text", "doc", "contents", "passage", "body")
CHECK_LABELS = ("correct", "partial", "hallucinated", "abstained")  # check's labels (metrics.labels.LABELS)
BINARY_LABELS = ("correct", "incorrect")


def read_chunk_texts(path: str | Path, wanted: Collection[str]) -> dict[str, Chunk]:
    """The chunks of ``path`` whose id is in ``wanted`` (JSON Lines in any spelling of
    :data:`CHUNK_ID_FIELDS` and :data:`CHUNK_TEXT_FIELDS`, or TSV lines ``id<TAB>text`` as MS MARCO's
    collection.tsv). Only the wanted chunks are kept, so a collection of millions of passages reads
    in the memory of the few thousand judged; a wanted id given twice is an error naming both lines."""
    path = dataset_member(path, "chunks")
    wanted = set(wanted)
    with open(path, "rb") as f:
        head = f.read(4096).lstrip()
    if not head:
        raise InputError("empty file: expected chunks (JSON Lines with an id and a text, or id<TAB>text lines)", path)
    if head[:1] == b"{":
        return _jsonl_chunks(path, wanted)
    return _tsv_chunks(path, wanted)


def _jsonl_chunks(path: str | Path, wanted: set[str]) -> dict[str, Chunk]:
    problems = LineProblems(path)
    out: dict[str, Chunk] = {}
    first: dict[str, int] = {}
    seen = 0
    for no, obj in iter_jsonl(path, problems=problems):
        try:
            found = chunk_line_evidence(obj) if not any(k in obj for k in CHUNK_TEXT_FIELDS) else None
            if found is not None:
                raise InputError(f"looks like {found[0]}, not chunks: the line has {found[1]}", path, no)
            name = next((k for k in CHUNK_ID_FIELDS if k in obj), None)
            if name is None:
                raise InputError(
                    f"no chunk id (any of {', '.join(CHUNK_ID_FIELDS)} would do; keys present: "
                    f"{', '.join(sorted(obj)) or 'none'})",
                    path,
                    no,
                )
            cid = check_id(obj[name], "chunk id", path, no)
            seen += 1
            if cid not in wanted:
                continue
            text_name = next((k for k in CHUNK_TEXT_FIELDS if k in obj), None)
            text = obj.get(text_name) if text_name else None
            if not isinstance(text, str):
                raise InputError(
                    f"chunk {cid!r} has no text (a string in any of {', '.join(CHUNK_TEXT_FIELDS)})", path, no
                )
            if cid in first:
                raise InputError(f"chunk id {cid!r} appears twice (first on line {first[cid]})", path, no)
        except InputError as e:
            if seen == 0 and not problems:
                raise  # the first line is already not a chunk: the file is something else
            problems.add_error(e)
            continue
        title = obj.get("title")
        out[cid] = Chunk(id=cid, text=text, title=title if isinstance(title, str) else None)
        first[cid] = no
    problems.raise_if_any()
    if not seen:
        raise InputError("no chunks in file", path)
    return out


def _tsv_chunks(path: str | Path, wanted: set[str]) -> dict[str, Chunk]:
    problems = LineProblems(path)
    out: dict[str, Chunk] = {}
    first: dict[str, int] = {}
    seen = 0
    with open(path, "rb") as f:
        for no, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\n").removesuffix("\r")
            except UnicodeDecodeError:
                problems.add(no, "not valid UTF-8 text")
                continue
            if not line.strip():
                continue
            cid, tab, text = line.partition("\t")
            if not tab:
                problems.add(no, "expected 'chunk id<TAB>chunk text' (or JSON Lines with an id and a text)")
                continue
            if seen == 0 and cid.strip().lower() in ("id", "docid", "doc_id", "pid", "_id") and cid not in wanted:
                continue  # a header line
            try:
                cid = check_id(cid.strip(), "chunk id", path, no)
                if cid in wanted and cid in first:
                    raise InputError(f"chunk id {cid!r} appears twice (first on line {first[cid]})", path, no)
            except InputError as e:
                problems.add_error(e)
                continue
            seen += 1
            if cid in wanted:
                out[cid] = Chunk(id=cid, text=text.strip())
                first[cid] = no
    problems.raise_if_any()
    if not seen:
        raise InputError("no chunks in file", path)
    return out


# ------------------------------------------------------------------------------------- EVOUNA

EVOUNA_MODELS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")  # the answering models, in the file's order


@dataclass
class EvounaAnswers:
    """The answers of one EVOUNA file that people judged, with their labels, and what was left out."""

    answers: list[AnswerItem]
    labels: dict[str, str]
    skipped: dict[str, int] = field(default_factory=dict)  # why -> answers left out


def is_evouna(data: bytes) -> bool:
    """Whether a file is EVOUNA's: a JSON array whose first object has golden_answer and a judge_ field."""
    head = data.lstrip()
    if head[:1] != b"[":
        return False
    window = head[:20000]
    return b'"golden_answer"' in window and b'"judge_' in window


def read_evouna(path: str | Path, data: bytes | None = None) -> EvounaAnswers:
    """Each (question, model) of an EVOUNA file whose people's judgment is true or false, as an answer
    ``STEM-INDEX-MODEL`` (the index 0-based in the array: ``NQ-17-gpt4``) whose references are the
    '/'-separated accepted answers. Improper questions, missing judgments, answers or gold answers
    are left out and counted by reason."""
    data = read_bytes_checked(path) if data is None else data
    stem = Path(path).stem
    out = EvounaAnswers([], {})

    def skip(why: str) -> None:
        out.skipped[why] = out.skipped.get(why, 0) + 1

    for index, (no, item) in enumerate(_array_items(data, path)):
        refs = _evouna_references(item, index, path, no)
        for model in EVOUNA_MODELS:
            if f"judge_{model}" not in item and f"answer_{model}" not in item:
                continue  # a file of fewer models
            judge, response = item.get(f"judge_{model}"), item.get(f"answer_{model}")
            why = _evouna_unusable(item, judge, response, refs)
            if why is not None:
                skip(why)
            elif isinstance(response, str):  # (always, once usable: said for the type checker)
                aid = f"{stem}-{index}-{model}"
                out.answers.append(AnswerItem(id=aid, question=item["question"], reference=refs, response=response))
                out.labels[aid] = "correct" if judge else "incorrect"
    if not out.answers and not out.skipped:
        raise InputError(
            "no answers in file (an EVOUNA file is a JSON array of questions with answer_MODEL and judge_MODEL fields)",
            path,
        )
    return out


def _evouna_references(item: Any, index: int, path: str | Path, no: int) -> list[str]:
    """An EVOUNA question's accepted answers ('/'-separated in ``golden_answer``), once the item is
    known to be an object with a question."""
    if not isinstance(item, dict) or not isinstance(item.get("question"), str):
        raise InputError(
            f"item {index} of the array: expected an object with a question (EVOUNA's fields: "
            "question, golden_answer, answer_MODEL, judge_MODEL, improper)",
            path,
            no,
        )
    gold = item.get("golden_answer")
    return list(dict.fromkeys(p.strip() for p in gold.split("/") if p.strip())) if isinstance(gold, str) else []


def _evouna_unusable(item: dict, judge: Any, response: Any, refs: list[str]) -> str | None:
    """Why one model's answer to an EVOUNA question cannot test a grader, or None when it can."""
    if item.get("improper") is True:
        return "improper question"
    if judge is None:
        return "no people's judgment"
    if not isinstance(judge, bool):
        return "judgment not true or false"
    if not isinstance(response, str) or not response.strip():
        return "no answer text (an empty answer is no test of a grader: the rules call it abstained)"
    if not refs:
        return "no gold answer"
    if not item["question"].strip():
        return "no question text"
    return None


def _array_items(data: bytes, path: str | Path) -> list[tuple[int, Any]]:
    """The items of a JSON array, each with the line it starts on (for messages that name a line)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("not valid UTF-8 text", path, data.count(b"\n", 0, e.start) + 1) from None
    decoder = json.JSONDecoder()
    at = len(text) - len(text.lstrip())
    if text[at : at + 1] != "[":
        raise InputError("expected a JSON array", path, 1)
    at += 1
    out: list[tuple[int, Any]] = []
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text):
            raise InputError("the JSON array is not closed (a ']' is missing)", path, text.count("\n") + 1)
        if text[at] == "]":
            return out
        try:
            item, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON ({e.msg})", path, e.lineno) from None
        out.append((text.count("\n", 0, at) + 1, item))
        at = end


# ------------------------------------------------------------------------------ answer labels


def read_answer_labels(path: str | Path, field_name: str = "label") -> tuple[dict[str, str], bool, list[dict]]:
    """People's labels of answers: JSON Lines with ``id`` and ``label`` (what ``ragassay label``
    writes for answers, with ``assessor``). Check's four labels give a 4-class set; ``correct`` /
    ``incorrect`` or true / false give a binary one (true is correct). Returns the labels, whether
    they are binary, and each line's fields that say who labelled (for the origin)."""
    problems = LineProblems(path)
    return answer_labels(iter_jsonl(path, problems=problems), path, problems, field_name)


def _answer_id(value: Any, path: str | Path, line: int) -> str:
    """An answer's id as check reads it: any non-empty string (spaces allowed: answers are never
    written to a TREC file) or a JSON integer; never null, true/false, a fraction, a list or an object."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, str) and not value.strip()):
        raise InputError(
            f"answer id must be a non-empty string, got {json.dumps(value, ensure_ascii=False)[:60]}", path, line
        )
    return str(value)


def answer_labels(
    rows: Iterable[tuple[int, dict[str, Any]]],
    path: str | Path,
    problems: LineProblems | None = None,
    field_name: str = "label",
) -> tuple[dict[str, str], bool, list[dict]]:
    """:func:`read_answer_labels` of (line, object) rows: a labels file's lines, or answers' own."""
    labels: dict[str, str] = {}
    line_origins: list[dict] = []
    lines: dict[str, int] = {}
    problems = LineProblems(path) if problems is None else problems
    kinds: dict[str, int] = {}  # "binary" / "check" -> the first line that needs it
    for no, obj in rows:
        try:
            aid = _answer_id(obj.get("id", obj.get("answer_id")), path, no)
            value = obj.get(field_name)
            if isinstance(value, bool):
                value = "correct" if value else "incorrect"
            if isinstance(value, str):
                value = value.strip().lower()
                value = {"true": "correct", "false": "incorrect"}.get(value, value)
            if value not in CHECK_LABELS and value not in BINARY_LABELS:
                raise InputError(
                    f"{field_name} {json.dumps(obj.get(field_name))}: expected one of "
                    f"{', '.join(CHECK_LABELS)} (check's), or correct/incorrect, true/false",
                    path,
                    no,
                )
            if aid in lines:
                raise InputError(f"answer id {aid!r} is labelled twice (first on line {lines[aid]})", path, no)
        except InputError as e:
            problems.add_error(e)
            continue
        if value == "incorrect":
            kinds.setdefault("binary", no)
        elif value != "correct":
            kinds.setdefault("check", no)
        labels[aid] = value
        lines[aid] = no
        line_origins.append({k: obj.get(k) for k in ("assessor", "model", "prompt", "record")})
    problems.raise_if_any()
    if len(kinds) == 2:
        raise InputError(
            f"labels of two kinds in one file: 'incorrect' (line {kinds['binary']}) is binary, but line "
            f"{kinds['check']} has one of check's labels ({', '.join(CHECK_LABELS[1:])}); use one kind",
            path,
            max(kinds.values()),
        )
    if not labels:
        raise InputError("no labels in file", path)
    return labels, "binary" in kinds, line_origins
