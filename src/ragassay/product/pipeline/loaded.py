"""The files a run reads, each parsed once and handed to the steps as objects.

A step asks for a file's queries, run, qrels or chunks here instead of reading the file itself, so
that a run of the pipeline reads each input once (issue 47, item 4). A file a step rewrites during the
run (a retriever's run, the judged pool's qrels, the generated questions) is read again, because the
cache keys each object by the file's size and modification time as well as its path."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ...data import io as rio
from ...data.beir_folders import dataset_member
from ...data.chunk_files import read_chunks
from ...data.chunk_table import chunk_source
from ...data.lines import streamable
from ...data.origin import Origin, read_origin
from ...data.peer_files import answer_rows
from ...data.records import AnswerItem
from ...data.tables import Qrels, Run
from ...stages.answer_files import read_answers, read_human_labels
from ...stages.queries import QueryItem, read_query_items

T = TypeVar("T")


class Loaded:
    """Parsed files by path, kept for one run of the pipeline."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, Path], tuple[tuple[int, int], Any]] = {}

    def _get(self, kind: str, path: Path, read: Callable[[Path], T]) -> T:
        """The object ``read`` makes of ``path``, parsed again only when the file changed since."""
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
        kept = self.objects.get((kind, path))
        if kept is not None and kept[0] == stamp:
            return kept[1]
        value = read(path)
        self.objects[(kind, path)] = (stamp, value)
        return value

    def queries(self, path: Path) -> dict[str, str]:
        """The queries' texts by id, as ``read_queries`` gives them."""
        return self._get("queries", path, rio.read_queries)

    def query_items(self, path: Path) -> list[QueryItem]:
        """The queries as the LLM stages read them (with a generated question's reference answer)."""
        return self._get("query items", path, read_query_items)

    def run(self, path: Path) -> Run:
        """A run file, as ``read_run`` reads it (ranked, its tag as its name)."""
        return self._get("run", path, rio.read_run)

    def named_run(self, path: Path, name: str) -> Run:
        """A run file as :meth:`run` reads it, named as the project names it (what ``read_run(path,
        name=name)`` gives): a shallow copy, so the run read once keeps its own name."""
        run = copy.copy(self.run(path))
        run.name = name
        return run

    def qrels(self, path: Path) -> Qrels:
        """A qrels file, as ``read_qrels`` reads it."""
        return self._get("qrels", path, rio.read_qrels)

    def chunks(self, path: Path) -> list[Any]:
        """The chunks of a file in their order (generate draws by it)."""
        return self._get("chunks", path, read_chunks)

    def chunks_by_id(self, path: Path) -> Mapping[str, Any]:
        """The chunks for a stage that looks them up by id, as the stage itself would open them: a
        large plain file as a table of where each chunk lies (not held in memory), else the chunks
        read once by :meth:`chunks`."""
        if streamable(dataset_member(path, "chunks")):
            return self._get("chunks by id", path, chunk_source)
        return {c.id: c for c in self.chunks(path)}

    def answer_rows(self, path: Path) -> list[tuple[int, dict[str, Any]]]:
        """The answers' rows (line, fields in ragassay's names), as ``answer_rows`` reads them: the
        joins at the start, the check's and the report's answers are all made from this one read."""
        return self._get("answer rows", path, answer_rows)

    def answers(self, path: Path, chunks: Mapping[str, Any] | None) -> list[AnswerItem]:
        """The answers as the report reads them (``read_answers``), made from :meth:`answer_rows`."""
        return read_answers(path, chunks, rows=self.answer_rows(path))

    def human_labels(self, path: Path) -> dict[str, str]:
        """People's labels of the answers by answer id, as ``read_human_labels`` reads them."""
        return self._get("human labels", path, read_human_labels)

    def origin(self, path: Path) -> Origin:
        """What a file's sidecar (``FILE.origin.json``) says of who made its labels (``read_origin``),
        read once a run; keyed by the labels file, which a step that rewrites its sidecar rewrites too."""
        return self._get("origin", path, read_origin)

    def named_queries(self, path: Path) -> NamedQueries:
        """:meth:`query_items` named by their file, for a stage's messages."""
        return NamedQueries(self.query_items(path), str(path))


class NamedQueries(list[QueryItem]):
    """Queries read from a file, handed to a stage as objects but still named by the file in its
    messages (a stage names an input by its ``source``, as it does a run's or qrels' file)."""

    def __init__(self, items: list[QueryItem], source: str):
        super().__init__(items)
        self.source = source
