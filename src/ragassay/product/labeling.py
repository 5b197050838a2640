"""People's labels, to measure how far to trust the judge: what to label, the labels themselves, and
how well a person agrees with the model (and with other people) as the labels come in.

The server (label_server.py) only shows a :class:`LabelBook` and passes keys to it. Every label is
an event appended to ``OUTPUT.events.jsonl`` and flushed to disk before the answer returns, so a
closed tab or a killed server loses nothing; the output itself (TREC qrels for pairs, ``id``/
``label`` lines for answers: the formats ``agree``, ``judge --keep`` and ``check --human`` read)
is rewritten from the events after each one, atomically.
"""

from __future__ import annotations

import datetime
import getpass
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..data.chunk_files import read_chunks
from ..data.lines import write_lines_atomic
from ..data.origin import JUDGE_RELEVANT_FROM, JUDGE_SCALE, people
from ..data.qrels_files import read_qrels
from ..data.record_files import read_record_file
from ..data.records import Check, Judgment, LabelEvent, LabelEventsHeader
from ..data.result_models import CalibrationResult
from ..data.run_files import read_run
from ..data.writers import write_qrels
from ..errors import InputError, UsageError
from ..metrics.agreement import cohen_kappa, kappa_interval
from ..metrics.kappa_meaning import one_grade_why
from ..stages.answer_files import read_answers, read_human_labels, read_labels_origin
from ..stages.queries import read_query_items
from .label_items import (
    ANSWER_SCALE,
    PAIR_SCALE,
    ItemIds,
    LabelItem,
    Task,
    answer_items,
    draw_sample,
    pair_items,
    pair_key,
)

EVENTS_VERSION = 1


# -------------------------------------------------------------------------------- agreement


def agreement(
    person: Sequence[Any], other: Sequence[Any], binary: Any, target_width: float = 0.1, seed: int = 0
) -> dict[str, Any]:
    """Cohen's kappa between two label lists (4 classes, and binarised by ``binary``), with 95%
    bootstrap intervals, and about how many more labels would narrow the 4-class interval to
    ``target_width`` (the width shrinks as one over the square root of the count)."""
    n = len(person)
    out: dict[str, Any] = {
        "n": n,
        "exact": None,
        "kappa": None,
        "interval": None,
        "binary_kappa": None,
        "binary_interval": None,
        "more_labels": None,
    }
    if n == 0:
        return out
    codes = {v: i for i, v in enumerate(sorted({str(v) for v in list(person) + list(other)}))}
    x = np.array([codes[str(v)] for v in person])
    y = np.array([codes[str(v)] for v in other])
    bx = np.array([int(binary(v)) for v in person])
    by = np.array([int(binary(v)) for v in other])
    out["exact"] = float((x == y).mean())
    names = {i: v for v, i in codes.items()}
    sides = ("this person", "the other side")

    def label_words(g: int) -> str:
        return f"the label {names[g]}"

    def side_words(g: int) -> str:
        return "one side of the cut (all " + ("yes)" if g else "no)")

    for name, a, b, words in (("", x, y, label_words), ("binary_", bx, by, side_words)):
        why = one_grade_why(a, b, sides, "labels", words)  # one class on a side: 0 by construction, so none
        k = float("nan") if why else cohen_kappa(a, b)
        out[f"{name}kappa"] = None if math.isnan(k) else k
        out[f"{name}interval"] = None if why else kappa_interval(a, b, seed=seed)
        if why:
            out.setdefault("why", {})[f"{name}kappa"] = why
    interval = out["interval"]
    if interval is not None:
        width = interval[1] - interval[0]
        out["more_labels"] = 0 if width <= target_width else max(1, math.ceil(n * (width / target_width) ** 2) - n)
    return out


def pair_relevant(grade: Any) -> bool:
    """Whether a grade of the 0-3 scale counts as relevant when agreement is binarised."""
    return int(grade) >= 2  # the usual "relevant" cut of a 0-3 scale, as the README reads kappa


def answer_correct(label: Any) -> bool:
    """Whether an answer label counts as correct when agreement is binarised."""
    return label == "correct"


# ------------------------------------------------------------------------------------- book


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class LabelBook:
    """The labels of one person on one sample, kept as events on disk.

    ``task`` is "pairs" or "answers"; ``output`` the qrels or JSONL file the other commands read;
    ``prior`` labels people made before (``--from``), kept in the output and not asked again;
    ``others`` other people's labels of the same items ({name: {key: value}}), for their agreement."""

    task: Task
    items: list[LabelItem]
    output: Path
    assessor: str
    sample_info: dict[str, Any] = field(default_factory=dict)
    prior: dict[str, Any] = field(default_factory=dict)
    others: dict[str, dict[str, Any]] = field(default_factory=dict)
    target_width: float = 0.1
    labels: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)  # keys in the order labelled or skipped (for undo)

    def __post_init__(self) -> None:
        self.output = Path(self.output)
        self.events_path = self.output.with_name(self.output.name + ".events.jsonl")
        self.calibration_path = self.output.with_name(self.output.name + ".calibration.json")
        self.by_key = {it.key: it for it in self.items}
        self._replay()
        self._events = open(self.events_path, "a", encoding="utf-8")
        if self.events_path.stat().st_size == 0:
            self._append(
                LabelEventsHeader(
                    version=EVENTS_VERSION, task=self.task, sample=self.sample_info, keys=[it.key for it in self.items]
                )
            )
        self.write_outputs()

    # -- state

    @property
    def scale(self) -> list[tuple[Any, str, str]]:
        return PAIR_SCALE if self.task == "pairs" else ANSWER_SCALE

    def valid(self, value: Any) -> Any:
        for v, key, _ in self.scale:  # the value itself, or the key that gives it ("2", "h")
            if (value == v and type(value) is type(v)) or (isinstance(value, str) and value.strip() == key):
                return v
        shown = ", ".join(str(v) for v, _, _ in self.scale)
        raise UsageError(f"{value!r} is not a label of this task: use one of {shown}")

    def _replay(self) -> None:
        """Read the events of an earlier session: the person resumes where they stopped."""
        if not self.events_path.exists():
            return
        lines = self.events_path.read_bytes().split(b"\n")
        for no, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            e = self._read_event(raw, no, lines)
            if e is None:
                continue
            if isinstance(e, LabelEventsHeader):
                self._resume_sample(e)
                continue
            who = e.assessor
            if who != self.assessor:
                raise UsageError(
                    f"{self.output} holds the labels of {who!r}; each person labels into their own file: "
                    f"give {self.assessor!r} another -o (and --with {self.output} to see how you agree)"
                )
            self._apply(e)

    def _read_event(self, raw: bytes, no: int, lines: list[bytes]) -> LabelEvent | LabelEventsHeader | None:
        """One line of the events file as an event or the header; None for a last line cut by a kill
        (that label was never acknowledged). Any other line that is not an event is refused."""
        try:
            obj = json.loads(raw)
        except ValueError:
            if no == len(lines) or (no == len(lines) - 1 and not lines[-1].strip()):
                return None
            raise InputError(
                "not a label event: this file was edited or is not ragassay's", self.events_path, no
            ) from None
        try:
            return (LabelEventsHeader if isinstance(obj, dict) and "kind" in obj else LabelEvent).model_validate(obj)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "event"
            raise InputError(
                f"not a label event ({where}: {first.get('msg')}): this file was edited or is not ragassay's",
                self.events_path,
                no,
            ) from None

    def _resume_sample(self, e: LabelEventsHeader) -> None:
        """The header of an earlier session: same task, and its sample kept."""
        if e.task != self.task:
            raise UsageError(f"{self.events_path} holds labels of {e.task}, not {self.task}: give another -o")
        keys = [k for k in e.keys if k in self.by_key]
        if keys and set(keys) != set(self.by_key):  # the sample of the first session is kept
            self.items = [self.by_key[k] for k in keys]
            self.by_key = {it.key: it for it in self.items}
            self.sample_info = e.sample or self.sample_info

    def _apply(self, e: LabelEvent) -> None:
        key = e.key
        if e.event == "label" and key in self.by_key:
            self.labels[key] = e.value
            self.skipped.pop(key, None)
            self.seconds[key] = float(e.seconds or 0.0)
            self.history.append(key)
        elif e.event == "skip" and key in self.by_key:
            self.skipped[key] = e.reason or ""
            self.labels.pop(key, None)
            self.history.append(key)
        elif e.event == "undo" and self.history:
            last = self.history.pop()
            self.labels.pop(last, None)
            self.skipped.pop(last, None)
            self.seconds.pop(last, None)

    def _append(self, event: LabelEvent | LabelEventsHeader) -> None:
        """One line: the header whole, an act with the fields it has (a skip has no value, an undo no ids)."""
        line = event.model_dump(exclude_unset=isinstance(event, LabelEvent))
        self._events.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._events.flush()
        os.fsync(self._events.fileno())

    def close(self) -> None:
        self._events.close()

    # -- acts

    def label(self, key: str, value: Any, seconds: float = 0.0) -> dict[str, Any]:
        if key not in self.by_key:
            raise UsageError(f"no item {key!r} in this sample")
        value = self.valid(value)
        event = LabelEvent(
            event="label",
            key=key,
            value=value,
            assessor=self.assessor,
            time=_now(),
            seconds=round(max(0.0, float(seconds)), 3),
            **self._ids(key),
        )
        self._append(event)
        self._apply(event)
        self.write_outputs()
        return {"key": key, "value": value, "model": self.by_key[key].model}

    def skip(self, key: str, reason: str) -> None:
        if key not in self.by_key:
            raise UsageError(f"no item {key!r} in this sample")
        event = LabelEvent(
            event="skip", key=key, reason=reason.strip()[:500], assessor=self.assessor, time=_now(), **self._ids(key)
        )
        self._append(event)
        self._apply(event)
        self.write_outputs()

    def undo(self) -> str | None:
        """Take back the last label or skip; the key it was on (None when there is nothing to undo)."""
        if not self.history:
            return None
        last = self.history[-1]
        event = LabelEvent(event="undo", key=last, assessor=self.assessor, time=_now())
        self._append(event)
        self._apply(event)
        self.write_outputs()
        return last

    def _ids(self, key: str) -> ItemIds:
        """The ids an event of this item carries: the query and chunk of a pair, the id of an answer."""
        show = self.by_key[key].show
        return {"query_id": show["query_id"], "chunk_id": show["chunk_id"]} if self.task == "pairs" else {"id": key}

    # -- outputs

    def write_outputs(self) -> None:
        if self.task == "pairs":
            qrels: dict[str, dict[str, int]] = {}
            for key, value in list(self.prior.items()) + list(self.labels.items()):
                q, c = key.split("\t", 1)
                qrels.setdefault(q, {})[c] = int(value)
            write_qrels(
                self.output,
                qrels,
                origin=people(self.assessor, command="label").replace(
                    scale=JUDGE_SCALE, relevant_from=JUDGE_RELEVANT_FROM
                ),
            )
        else:
            rows = list(self.prior.items()) + list(self.labels.items())
            write_lines_atomic(
                self.output,
                [json.dumps({"id": k, "label": v, "assessor": self.assessor}, ensure_ascii=False) for k, v in rows],
            )
        write_lines_atomic(self.calibration_path, [json.dumps(self.calibration(), indent=1, ensure_ascii=False)])

    def agreement_with_model(self) -> dict[str, Any]:
        keys = [k for k in self.labels if self.by_key[k].model is not None]
        binary = pair_relevant if self.task == "pairs" else answer_correct
        return agreement(
            [self.labels[k] for k in keys], [self.by_key[k].model for k in keys], binary, self.target_width
        )

    def agreement_with_others(self) -> dict[str, dict[str, Any]]:
        binary = pair_relevant if self.task == "pairs" else answer_correct
        out = {}
        for name, theirs in self.others.items():
            keys = [k for k in self.labels if k in theirs]
            out[name] = agreement([self.labels[k] for k in keys], [theirs[k] for k in keys], binary, self.target_width)
        return out

    def progress(self) -> dict[str, Any]:
        times = [s for s in self.seconds.values() if s > 0]
        return {
            "total": len(self.items),
            "labelled": len(self.labels),
            "skipped": len(self.skipped),
            "left": len(self.items) - len(self.labels) - len(self.skipped),
            "seconds_per_label": round(sum(times) / len(times), 1) if times else None,
        }

    def calibration(self) -> dict[str, Any]:
        """The ``calibration`` result: the sample, its strata, and the agreement so far."""
        return CalibrationResult(
            task=self.task,
            assessor=self.assessor,
            output=str(self.output),
            sample=self.sample_info,
            progress=self.progress(),
            model_agreement=self.agreement_with_model(),
            people_agreement=self.agreement_with_others(),
            target_width=self.target_width,
            binary="grade >= 2" if self.task == "pairs" else "correct or not",
        ).to_dict()


def read_other_labels(path: str | Path, task: str) -> dict[str, Any]:
    """Another person's labels: TREC qrels for pairs, ``id``/``label`` lines for answers."""
    return _labels_and_origin(path, task)[0]


def _labels_and_origin(path: str | Path, task: str) -> tuple[dict[str, Any], Any]:
    """A file of labels read once: the labels, and who made them (data/origin.py)."""
    if task == "pairs":
        qrels = read_qrels(path)
        return {pair_key(q, c): g for q, docs in qrels.to_dict().items() for c, g in docs.items()}, qrels.origin
    return read_human_labels(path), read_labels_origin(path)


def open_label_book(
    task: Task,
    output: str | Path,
    *,
    answers: str | Path | None = None,
    queries: str | Path | None = None,
    chunks: str | Path | None = None,
    run: str | Path | None = None,
    judgments: str | Path | None = None,
    checks: str | Path | None = None,
    depth: int = 10,
    sample: int | None = None,
    seed: int = 0,
    assessor: str | None = None,
    prior: str | Path | None = None,
    others: Sequence[str | Path] = (),
    target_width: float = 0.1,
) -> LabelBook:
    """``ragassay label``'s book from its files: the items to label (pairs from a run or from
    judge's judgments; answers, with check's labels when given), minus those ``prior`` labels,
    sampled; other people's labels to compare with. Resumes what ``output`` already holds."""
    assessor = assessor or login_name()
    if task == "pairs":
        items = _pair_items_of_files(queries, chunks, run, judgments, depth)
    else:
        items = _answer_items_of_files(answers, chunks, checks)
    before = read_other_labels(prior, task) if prior else {}
    drawn, info = draw_sample([it for it in items if it.key not in before], sample, seed)
    theirs = {}
    for path in others:  # each named by who made it, never by the file alone
        labels, origin = _labels_and_origin(path, task)
        name = _other_labeller(path, origin, assessor)
        if name in theirs:
            name = f"{name} ({Path(path).name})"
        theirs[name] = labels
    return LabelBook(task, drawn, Path(output), assessor, info, before, theirs, target_width)


def _pair_items_of_files(
    queries: str | Path | None,
    chunks: str | Path | None,
    run: str | Path | None,
    judgments: str | Path | None,
    depth: int,
) -> list[LabelItem]:
    """The pairs to grade, read from the queries and chunks with the run or the judge's judgments."""
    if queries is None or chunks is None:  # the command checks it first, in the same words
        raise UsageError("label pairs needs --queries, --chunks and one of --run or --judgments")
    chunk_map = {c.id: c for c in read_chunks(chunks)}
    graded = (
        [r for r in read_record_file(judgments, kinds=("judgment",))[1] if isinstance(r, Judgment)]
        if judgments
        else None
    )
    return pair_items(
        read_query_items(queries), chunk_map, run=read_run(run) if run else None, judgments=graded, depth=depth
    )


def _answer_items_of_files(
    answers: str | Path | None, chunks: str | Path | None, checks: str | Path | None
) -> list[LabelItem]:
    """The answers to label, with their contexts from the chunks and the model's labels from check's records."""
    if answers is None:  # the command checks it first, in the same words
        raise UsageError("label answers needs ANSWERS (and takes --checks, --chunks), not --queries/--run/--judgments")
    chunk_map = {c.id: c for c in read_chunks(chunks)} if chunks else None
    labelled = [r for r in read_record_file(checks, kinds=("check",))[1] if isinstance(r, Check)] if checks else None
    return answer_items(read_answers(answers, chunk_map), labelled, chunk_map)


def _other_labeller(path: str | Path, origin: Any, assessor: str) -> str:
    """Who made the labels of a --with file, in words; a file of the person labelling now is refused
    (a labeller compared with itself agrees by construction)."""
    if origin is None or not origin.known:
        return f"unknown ({Path(path).name})"
    if any(lab.by == "person" and lab.name == assessor for lab in origin.labellers):
        raise UsageError(
            f"--with {path} holds labels by {assessor}, who is labelling now: comparing {assessor} "
            "with themselves measures no agreement; give another person's labels"
        )
    return origin.describe()


def login_name() -> str:
    """Who labels when no ``--assessor`` is given: the login name, or "assessor" where there is none
    (a container), so an output still holds one person's labels."""
    try:
        return getpass.getuser()
    except Exception:
        return "assessor"
