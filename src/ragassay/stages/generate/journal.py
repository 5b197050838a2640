"""Where a question set keeps what it has been told, beside its questions file: the candidates'
journal (``OUTPUT.candidates.journal``, through the engine's store) and every answer its calls
received (``OUTPUT.answers``, :class:`AnswerJournal`), which :class:`AnsweredFirst` answers from
before it asks the model, so a rerun of a finished set sends nothing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ...data.records import Chunk
from ...llm import LLM
from ...runtime.engine import OutputStore
from ...runtime.store_lines import record_line


def candidates_path(output: str | Path) -> Path:
    """Where the engine keeps the candidates of a run writing the questions file ``output``: only
    their journal (``OUTPUT.candidates.journal``) is ever written, and removed with the set written.
    Not the questions file itself: that holds questions, whatever was there before is replaced."""
    return Path(f"{output}.candidates")


def journal_store(output: str | Path) -> OutputStore:
    """The engine's store of candidate records for the questions file ``output``."""
    return OutputStore(candidates_path(output), lambda r: r["key"])


def answers_path(output: str | Path) -> Path:
    """Where the answers of the calls made for the questions file ``output`` are kept
    (``OUTPUT.answers``, see :class:`AnswerJournal`)."""
    return Path(f"{output}.answers")


def corpus_digest(chunks: Sequence[Chunk]) -> str:
    """A fingerprint of every chunk (id, title, text), in order."""
    h = hashlib.sha256()
    for c in chunks:
        for part in (c.id, c.title or "", c.text):
            data = part.encode("utf-8", "surrogatepass")
            h.update(b"%d:" % len(data) + data)
    return h.hexdigest()[:24]


class AnswerJournal:
    """The answers the calls of one question set received, one JSON line each
    (``{"request": KEY, "answer": {...}}``, KEY the answer cache's key of the exact request: model,
    endpoint, messages, schema, sampling), appended and flushed as each comes, so a kill loses
    none received. A request found here is answered from here (:class:`AnsweredFirst`), in the run
    that asked it (identical requests of several waves are asked once, as the engine asks them once
    in a wave) and in every later run into the same questions file: the set's own record of its
    answers, kept with ``--no-cache`` as without it. A last line cut short by a kill is dropped, and
    cut off before this run appends; a line that does not read as an answer is ignored (asked again)."""

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self._lines: dict[str, bytes] = {}  # request key -> its line
        self._end = 0  # where the last whole line ends
        self._f: Any = None
        self.reused = 0  # answers kept by an earlier run, used by this one
        self.asked = 0  # answers this run asked for (and kept)
        self._earlier: set[str] = set()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        self._size = len(data)
        at = 0
        while True:
            nl = data.find(b"\n", at)
            if nl < 0:
                break
            line = data[at:nl]
            at = self._end = nl + 1
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("request"), str)
                and isinstance(entry.get("answer"), dict)
            ):
                self._lines[entry["request"]] = line
        self._earlier = set(self._lines)

    @property
    def held(self) -> int:
        """Answers held (kept by earlier runs and this one)."""
        return len(self._lines)

    def get(self, key: str, response_model: type[BaseModel]) -> BaseModel | None:
        line = self._lines.get(key)
        if line is None:
            return None
        try:
            answer = response_model.model_validate(json.loads(line)["answer"])
        except (ValueError, ValidationError):
            return None  # the answer's model changed shape since: asked again
        if key in self._earlier:
            self._earlier.discard(key)  # counted once: a repeat within this run is not another earlier answer
            self.reused += 1
        return answer

    def put(self, key: str, answer: BaseModel) -> None:
        if self.read_only:
            raise RuntimeError("a read-only answer journal")
        line = record_line({"request": key, "answer": answer.model_dump(mode="json")}).encode("utf-8", "surrogatepass")
        if self._f is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(self.path, "ab")
            if self._f.tell() == self._size and self._end < self._size:
                self._f.truncate(self._end)  # a line a kill cut short: this run's lines start on their own
                self._f.seek(self._end)
        self._f.write(line + b"\n")
        self._f.flush()
        self._lines[key] = line
        self.asked += 1

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


class AnsweredFirst:
    """The run's LLM as the engine sees it: a request the set's :class:`AnswerJournal` holds is
    answered from it; any other is asked of ``llm`` (its cache, batch files or endpoint) and its
    answer kept there before it is used."""

    def __init__(self, llm: LLM, journal: AnswerJournal):
        self.llm, self.journal = llm, journal
        self.config = llm.config

    async def ask(
        self,
        messages: list[dict[str, str]],
        response_model: type[BaseModel],
        *,
        stage: str = "default",
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        sample: int = 0,
    ) -> BaseModel:
        key = self.llm.request_key(messages, response_model, self.llm.params(max_tokens, temperature, seed, sample))
        answer = self.journal.get(key, response_model)
        if answer is None:
            answer = await self.llm.ask(
                messages,
                response_model,
                stage=stage,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                sample=sample,
            )
            self.journal.put(key, answer)
        return answer
