"""Who made a file of labels: people (by name) or a model (its name, prompt version, endpoint host
and date). Every file of labels that ragassay writes keeps its origin beside it, and every reader
of labels reads it.

A TREC qrels file cannot hold an origin, so it goes in a sidecar, ``FILE.origin.json``, which a
plain TREC reader never sees. JSON Lines records state it on each line: judge's and check's records
carry ``model`` and ``prompt``, and ``label``'s answer labels carry ``assessor``. A file that says
nothing is of **unknown** origin, never taken to be people's. Agreement is always measured between
two origins, and when two files were made by the same labeller the result says so, rather than
scoring them as two labellers who agree perfectly.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import InputError
from .lines import tell_watchers, write_lines_atomic

SIDECAR_SUFFIX = ".origin.json"
ORIGIN_RECORD = "origin@1"
LABELLER_KINDS = ("person", "model", "unknown")

# Plain frozen dataclasses, read by hand (``from_dict``): every reader of qrels reads an origin, and
# a validation library's import would be most of a small evaluate's start.


@dataclass(frozen=True)
class Labeller:
    """One person, or one model asked with one prompt (or, inside a file that mixes labels, a part
    whose maker is not known)."""

    by: str  # person, model or unknown
    name: str  # the assessor's name, or the model's
    prompt: str | None = None  # a model's prompt, name@version
    endpoint: str | None = None  # a model's endpoint host (never a key or a path)

    def __post_init__(self) -> None:
        if self.by not in LABELLER_KINDS:
            raise ValueError(f"by: {self.by!r} is not one of {', '.join(LABELLER_KINDS)}")
        _text("name", self.name)
        for key in ("prompt", "endpoint"):
            _text(key, getattr(self, key), optional=True)

    def identity(self) -> tuple[str, str, str | None]:
        """What makes two labellers one: a person's name; a model's name and prompt (the same
        model and prompt behind two hosts labels alike)."""
        return (self.by, self.name, self.prompt if self.by == "model" else None)

    def describe(self) -> str:
        if self.by != "model":
            return self.name
        return ", ".join(x for x in (self.name, self.prompt) if x) + (f" at {self.endpoint}" if self.endpoint else "")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> Labeller:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Any, where: str = "labeller") -> Labeller:
        fields = _fields(cls, data, where, required=("by", "name"))
        try:
            return cls(**fields)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None


@dataclass(frozen=True)
class PoolRun:
    """One run whose top ``depth`` results were judged into a file of labels. ``digest`` fingerprints
    those top results (``pool_digest``), so a run is known again whatever its file is called."""

    name: str
    digest: str
    depth: int

    def __post_init__(self) -> None:
        _text("name", self.name)
        _text("digest", self.digest)
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"depth: a whole number of at least 1, got {json.dumps(self.depth)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "pool") -> PoolRun:
        fields = _fields(cls, data, where, required=("name", "digest", "depth"))
        try:
            return cls(**fields)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None


def _check_scale(low_high: Any) -> None:
    """A scale is two whole numbers, the lowest first."""
    if low_high is None:
        return
    if (
        not isinstance(low_high, tuple)
        or len(low_high) != 2
        or not all(isinstance(g, int) and not isinstance(g, bool) for g in low_high)
        or low_high[0] >= low_high[1]
    ):
        raise ValueError(
            f"scale: [lowest, highest], two whole numbers, lowest first, got "
            f"{json.dumps(list(low_high) if isinstance(low_high, tuple) else low_high)}"
        )


def _check_relevant_from(r: Any, scale: tuple[int, int] | None) -> None:
    """The relevant grade is a whole number of at least 1, and a grade of the scale above its lowest."""
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ValueError(
            f"relevant_from: a whole number of at least 1 (grades of 0 and below are never "
            f"relevant), got {json.dumps(r)}"
        )
    if scale is not None and not scale[0] < r <= scale[1]:
        raise ValueError(f"relevant_from: {r} is not a grade of the scale {scale[0]}-{scale[1]} above its lowest")


@dataclass(frozen=True)
class Origin:
    """Who made a file's labels (no labeller at all means unknown), and what the labels rest on: the
    scale they were given on and the grade from which one counts as relevant (the judge's 0-3 counts
    from 2, TREC Deep Learning's convention for the same scale), and, for labels made by judging
    runs' top results, which runs and how deep (the pool)."""

    record: str = ORIGIN_RECORD
    labellers: tuple[Labeller, ...] = ()
    command: str | None = None  # the ragassay command that wrote the file
    date: str | None = None  # when, ISO 8601 (UTC)
    scale: tuple[int, int] | None = None  # the lowest and the highest grade of the labellers' scale
    relevant_from: int | None = None  # a label counts as relevant from this grade up
    pool: tuple[PoolRun, ...] | None = None  # the runs judged into the file, each to its depth
    # queries of the set with no relevant chunk by design (generate's unanswerable questions): they have
    # no line in the file, and a run that answers them is not a run of another set
    no_relevant: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.record != ORIGIN_RECORD:
            raise ValueError(f"record: {self.record!r}, expected {ORIGIN_RECORD!r}")
        if not isinstance(self.labellers, tuple) or not all(isinstance(lab, Labeller) for lab in self.labellers):
            raise ValueError("labellers: a tuple of Labeller")
        _text("command", self.command, optional=True)
        _text("date", self.date, optional=True)
        _check_scale(self.scale)
        if self.relevant_from is not None:
            _check_relevant_from(self.relevant_from, self.scale)
        if self.pool is not None and (
            not isinstance(self.pool, tuple) or not all(isinstance(p, PoolRun) for p in self.pool)
        ):
            raise ValueError("pool: a tuple of PoolRun")
        if self.no_relevant is not None and (
            not isinstance(self.no_relevant, tuple) or not all(isinstance(q, str) for q in self.no_relevant)
        ):
            raise ValueError("no_relevant: a list of query ids")

    @property
    def known(self) -> bool:
        """Whether every label's maker is known."""
        return bool(self.labellers) and all(lab.by != "unknown" for lab in self.labellers)

    @property
    def kind(self) -> str:
        """people, model, mixed (both in one file) or unknown."""
        kinds = {lab.by for lab in self.labellers}
        if not kinds or kinds == {"unknown"}:
            return "unknown"
        return "mixed" if len(kinds) > 1 else ("people" if kinds == {"person"} else "model")

    def identities(self) -> frozenset:
        return frozenset(lab.identity() for lab in self.labellers)

    def describe(self) -> str:
        """One phrase naming who labelled: "alice", "gpt-4o-mini, judge_relevance@3f2a", "unknown"."""
        if not self.labellers:
            return "unknown"
        return " + ".join(lab.describe() for lab in self.labellers)

    def same_as(self, other: Origin) -> bool:
        """Both known and made by the same labellers: comparing them measures nothing."""
        return self.known and other.known and self.identities() == other.identities()

    def shared_with(self, other: Origin) -> list[Labeller]:
        """Known labellers found on both sides (judge's qrels, which mix people's --keep labels with
        the judge's own, against the judge's records share the judge): the pairs both sides hold may
        be one labeller's twice, so no agreement between the two can be told from them."""
        theirs = other.identities()
        return [lab for lab in self.labellers if lab.by != "unknown" and lab.identity() in theirs]

    def to_dict(self) -> dict[str, Any]:
        """The sidecar's JSON (every field, in declared order)."""
        return {
            "record": self.record,
            "labellers": [lab.to_dict() for lab in self.labellers],
            "command": self.command,
            "date": self.date,
            "scale": list(self.scale) if self.scale is not None else None,
            "relevant_from": self.relevant_from,
            "pool": [p.to_dict() for p in self.pool] if self.pool is not None else None,
            # said only by a set that has such queries: every other sidecar reads as it always did
            **({"no_relevant": list(self.no_relevant)} if self.no_relevant is not None else {}),
        }

    def replace(self, **changes: Any) -> Origin:
        return dataclasses.replace(self, **changes)

    def summary(self) -> dict:
        """The origin as results carry it: who, in words and in parts."""
        data = self.to_dict()
        del data["record"]
        return {"kind": self.kind, "describe": self.describe(), **data}

    @classmethod
    def from_dict(cls, data: Any) -> Origin:
        """An origin read from JSON: every field checked (an unknown field, a wrong type or kind is an
        error naming it), as strictly as it is written."""
        fields = _fields(cls, data, "origin")
        labellers = fields.get("labellers", [])
        if not isinstance(labellers, list):
            raise ValueError(f"labellers: a list, got {type(labellers).__name__}")
        fields["labellers"] = tuple(Labeller.from_dict(lab, f"labellers[{i}]") for i, lab in enumerate(labellers))
        scale = fields.get("scale")
        if scale is not None:
            if not isinstance(scale, list):
                raise ValueError(f"scale: [lowest, highest], got {json.dumps(scale)}")
            fields["scale"] = tuple(scale)
        pool = fields.get("pool")
        if pool is not None:
            if not isinstance(pool, list):
                raise ValueError(f"pool: a list, got {type(pool).__name__}")
            fields["pool"] = tuple(PoolRun.from_dict(p, f"pool[{i}]") for i, p in enumerate(pool))
        no_relevant = fields.get("no_relevant")
        if no_relevant is not None:
            if not isinstance(no_relevant, list):
                raise ValueError(f"no_relevant: a list of query ids, got {type(no_relevant).__name__}")
            fields["no_relevant"] = tuple(no_relevant)
        return cls(**fields)

    def scale_text(self) -> str | None:
        """ "0-3, relevant from 2" (or None when the file says nothing of its scale)."""
        if self.scale is None and self.relevant_from is None:
            return None
        parts = [f"{self.scale[0]}-{self.scale[1]}"] if self.scale is not None else []
        if self.relevant_from is not None:
            parts.append(f"relevant from {self.relevant_from}")
        return ", ".join(parts)


def _text(key: str, value: Any, optional: bool = False) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        raise ValueError(f"{key}: a string{' or null' if optional else ''}, got {json.dumps(value)}")


def _fields(cls: type, data: Any, where: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """``data``'s fields for ``cls``: an object with no field ``cls`` lacks and every required one."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: an object, got {type(data).__name__}")
    names = [f.name for f in dataclasses.fields(cls)]
    extra = [k for k in data if k not in names]
    if extra:
        raise ValueError(f"{where}: unknown field {extra[0]!r} (fields: {', '.join(names)})")
    missing = [k for k in required if k not in data]
    if missing:
        raise ValueError(f"{where}: field {missing[0]!r} is missing")
    return dict(data)


UNKNOWN = Origin()

# the judge's scale (prompts/judge_relevance.txt): 0 unrelated, 1 on the topic but no answer, 2 answers
# in part, 3 answers; relevant from 2, as TREC Deep Learning counts its own 0-3 labels
JUDGE_SCALE = (0, 3)
JUDGE_RELEVANT_FROM = 2


def today() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def endpoint_host(base_url: str | None) -> str | None:
    """The host (and port) of an endpoint: never its path, user or key."""
    if not base_url:
        return None
    try:
        parts = urlsplit(base_url)
        host = parts.hostname
        return f"{host}:{parts.port}" if host and parts.port else host
    except ValueError:
        return None


def people(*names: str, command: str | None = None) -> Origin:
    return Origin(labellers=tuple(Labeller(by="person", name=n) for n in names), command=command, date=today())


def model_origin(
    models: Iterable[str], prompt: str | None, base_url: str | None = None, command: str | None = None
) -> Origin:
    host = endpoint_host(base_url)
    return Origin(
        labellers=tuple(Labeller(by="model", name=m, prompt=prompt, endpoint=host) for m in models),
        command=command,
        date=today(),
    )


def merged(*origins: Origin, command: str | None = None) -> Origin:
    """One origin for a file that holds the labels of several (judge's qrels with people's --keep).
    The scale and the relevant grade stay only when every part that says one says the same: labels
    on two scales in one file have no one relevant grade."""
    seen: dict = {}
    for o in origins:
        for lab in o.labellers:
            seen.setdefault(lab.identity(), lab)
    scales = {o.scale for o in origins if o.scale is not None}
    relevant = {o.relevant_from for o in origins if o.relevant_from is not None}
    pools = [p for o in origins for p in (o.pool or ())]
    return Origin(
        labellers=tuple(seen.values()),
        command=command,
        date=today(),
        scale=next(iter(scales)) if len(scales) == 1 else None,
        relevant_from=next(iter(relevant)) if len(relevant) == 1 and len(scales) <= 1 else None,
        pool=tuple({(p.name, p.digest, p.depth): p for p in pools}.values()) or None,
    )


def sidecar_path(path: str | Path) -> Path:
    return Path(f"{path}{SIDECAR_SUFFIX}")


def write_origin(path: str | Path, origin: Origin) -> Path:
    """Write ``origin`` beside the file of labels at ``path`` (atomically), and return where."""
    side = sidecar_path(path)
    write_lines_atomic(side, [json.dumps(origin.to_dict(), indent=1, ensure_ascii=False)])
    return side


def read_origin(path: str | Path | None) -> Origin:
    """The origin said beside ``path``; unknown when nothing is said (or the input is not a file)."""
    if path is None or str(path) == "-":
        return UNKNOWN
    side = sidecar_path(path)
    try:
        data = side.read_bytes()
    except OSError:
        try:  # a symlink is its target: the target's sidecar says who made it
            real = Path(path).resolve()
        except (OSError, RuntimeError):
            return UNKNOWN
        if real == Path(path).absolute():
            return UNKNOWN
        side = sidecar_path(real)
        try:
            data = side.read_bytes()
        except OSError:
            return UNKNOWN
    tell_watchers(side, data)  # (the pipeline's state takes the sidecar's digest from this read)
    try:
        return Origin.from_dict(json.loads(data))
    except (ValueError, TypeError) as e:  # JSON's errors and the fields' (a wrong type, kind or name)
        raise InputError(
            f"not an origin file ragassay can read ({str(e).splitlines()[0]}); delete it or write it again", side
        ) from None


SILENT = "lines that name no labeller"


def origin_of_records(records: Iterable[Mapping], command: str | None = None) -> Origin:
    """The origin JSON Lines labels carry on each line: ``assessor`` (people), else ``model`` and
    ``prompt`` (a model). Lines that say nothing are a part of unknown origin: a file of such lines
    alone is unknown; beside named lines, it keeps the file from being known whole."""
    seen: dict = {}
    silent = False
    kinds = set()
    for r in records:
        kinds.add(r.get("record"))
        if r.get("assessor"):
            lab = Labeller(by="person", name=str(r["assessor"]))
        elif r.get("model"):
            lab = Labeller(by="model", name=str(r["model"]), prompt=r.get("prompt") or None)
        else:
            silent = True
            continue
        seen.setdefault(lab.identity(), lab)
    if not seen:
        return Origin(labellers=(), command=command)
    unknown = (Labeller(by="unknown", name=SILENT),) if silent else ()
    # the judge's own records (``record: judgment@1`` on every line) are on the judge's scale
    judged = bool(kinds) and all(str(k).split("@")[0] == "judgment" for k in kinds) and not silent
    return Origin(
        labellers=(*seen.values(), *unknown),
        command=command,
        scale=JUDGE_SCALE if judged else None,
        relevant_from=JUDGE_RELEVANT_FROM if judged else None,
    )


def label_origin(path: str | Path | None, records: Iterable[Mapping] | None = None) -> Origin:
    """A file's origin: its sidecar when it has one, else what its lines say, else unknown."""
    return origin_with_records(read_origin(path), records)


def origin_with_records(side: Origin, records: Iterable[Mapping] | None = None) -> Origin:
    """:func:`label_origin` of a sidecar already read (``side``, what :func:`read_origin` gave): the
    records are read only when the sidecar does not say who made the labels."""
    if side.known or records is None:
        return side
    lines = origin_of_records(records)
    if side.scale is None and side.relevant_from is None and side.pool is None:
        return lines
    # a sidecar that says only what the labels rest on (a scale, a pool): the lines say who made them
    return lines.replace(
        scale=side.scale or lines.scale, relevant_from=side.relevant_from or lines.relevant_from, pool=side.pool
    )
