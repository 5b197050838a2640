"""Who made a file of labels: people (by name) or a model (its name, prompt version, endpoint host
and date), kept beside every file of labels ragassay writes and read by every reader of labels.

A TREC qrels file cannot hold it, so it goes in a sidecar, ``FILE.origin.json``, which a plain TREC
reader never sees; JSON Lines records say it on each line (judge's and check's records carry
``model`` and ``prompt``; ``label``'s answer labels carry ``assessor``). A file that says nothing is
of **unknown** origin: never "people". Agreement is always between two origins, and two files made
by the same labeller are said to be so, never scored as two labellers agreeing perfectly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InputError

SIDECAR_SUFFIX = ".origin.json"
ORIGIN_RECORD = "origin@1"


class Labeller(BaseModel):
    """One person, or one model asked with one prompt (or, inside a file that mixes labels, a part
    whose maker is not known)."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    by: Literal["person", "model", "unknown"]
    name: str                       # the assessor's name, or the model's
    prompt: str | None = None       # a model's prompt, name@version
    endpoint: str | None = None     # a model's endpoint host (never a key or a path)

    def identity(self) -> tuple[str, str, str | None]:
        """What makes two labellers one: a person's name; a model's name and prompt (the same
        model and prompt behind two hosts labels alike)."""
        return (self.by, self.name, self.prompt if self.by == "model" else None)

    def describe(self) -> str:
        if self.by != "model":
            return self.name
        return ", ".join(x for x in (self.name, self.prompt) if x) + (f" at {self.endpoint}" if self.endpoint else "")


class Origin(BaseModel):
    """Who made a file's labels. No labeller at all means unknown."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["origin@1"] = ORIGIN_RECORD
    labellers: tuple[Labeller, ...] = ()
    command: str | None = None      # the ragassay command that wrote the file
    date: str | None = None         # when, ISO 8601 (UTC)

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

    def summary(self) -> dict:
        """The origin as results carry it: who, in words and in parts."""
        return {"kind": self.kind, "describe": self.describe(), **self.model_dump(mode="json", exclude={"record"})}


UNKNOWN = Origin()


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


def model_origin(models: Iterable[str], prompt: str | None, base_url: str | None = None,
                 command: str | None = None) -> Origin:
    host = endpoint_host(base_url)
    return Origin(labellers=tuple(Labeller(by="model", name=m, prompt=prompt, endpoint=host) for m in models),
                  command=command, date=today())


def merged(*origins: Origin, command: str | None = None) -> Origin:
    """One origin for a file that holds the labels of several (judge's qrels with people's --keep)."""
    seen: dict = {}
    for o in origins:
        for lab in o.labellers:
            seen.setdefault(lab.identity(), lab)
    return Origin(labellers=tuple(seen.values()), command=command, date=today())


def sidecar_path(path: str | Path) -> Path:
    return Path(f"{path}{SIDECAR_SUFFIX}")


def write_origin(path: str | Path, origin: Origin) -> Path:
    """Write ``origin`` beside the file of labels at ``path`` (atomically), and return where."""
    from .io import write_lines_atomic
    side = sidecar_path(path)
    write_lines_atomic(side, [json.dumps(origin.model_dump(mode="json"), indent=1, ensure_ascii=False)])
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
    try:
        return Origin.model_validate(json.loads(data))
    except (ValueError, ValidationError) as e:
        raise InputError(f"not an origin file ragassay can read ({str(e).splitlines()[0]}); delete it or "
                         f"write it again", side) from None


SILENT = "lines that name no labeller"


def origin_of_records(records: Iterable[Mapping], command: str | None = None) -> Origin:
    """The origin JSON Lines labels carry on each line: ``assessor`` (people), else ``model`` and
    ``prompt`` (a model). Lines that say nothing are a part of unknown origin: a file of such lines
    alone is unknown; beside named lines, it keeps the file from being known whole."""
    seen: dict = {}
    silent = False
    for r in records:
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
    return Origin(labellers=(*seen.values(), *unknown), command=command)


def label_origin(path: str | Path | None, records: Iterable[Mapping] | None = None) -> Origin:
    """A file's origin: its sidecar when it has one, else what its lines say, else unknown."""
    side = read_origin(path)
    if side.known or records is None:
        return side
    return origin_of_records(records)


def versus(a: Origin, b: Origin, a_count: int | None = None, b_count: int | None = None) -> str:
    """ "alice, 38 labels vs gpt-4o-mini, judge_relevance@3f2a, 66 labels" """
    def side(o: Origin, n: int | None) -> str:
        return o.describe() + (f", {n} labels" if n is not None else "")
    return f"{side(a, a_count)} vs {side(b, b_count)}"
