"""``generate`` for the one LLM-stage scaffold (:func:`ragassay.runtime.scaffold.run_llm_stage`):
the flags read into options, and a :class:`GenerateJob` that estimates the set offline or draws it
and writes its files (questions, rejects, qrels, exports) while it holds their locks.

Unlike judge and check, generate writes its files itself at the end, not through the engine's
writer: a set is only finished when the target is met, and until the batch answers are in (a
round of ``--export-requests`` or ``--backend batch``) nothing is written at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..data.io import read_records
from ..data.records import Chunk, Question
from ..errors import InputError, UsageError
from ..llm import LLM, LLMConfig
from ..runtime.engine import Estimate, OutputLock
from ..runtime.scaffold import StageJob
from .exports import export, export_format
from .generate.generator import Generator
from .generate.result import GenerateResult, write_outputs
from .generate.shapes import GenerateOptions
from .generate_checks import parse_mix, unfit_chunk


def shares(value: str | Mapping[str, float], names: Sequence[str], flag: str) -> dict[str, float]:
    """``--mix`` / ``--styles`` as shares by name: from the flag's text (``easy=0.5,hard=0.5``) or a
    dict, checked alike (known names, each share 0-1, adding up to 1); a UsageError names the flag."""
    text = value if isinstance(value, str) else ",".join(f"{k}={v}" for k, v in value.items())
    try:
        return parse_mix(text, tuple(names), flag)
    except ValueError as e:
        raise UsageError(str(e)) from None


def export_targets(exports: Sequence[Sequence[str | Path]]) -> list[tuple[str, str | Path]]:
    """``--export FORMAT DIR`` pairs, each format by its current name (earlier releases' names are
    taken); a UsageError names the choices."""
    try:
        return [(export_format(str(fmt)), directory) for fmt, directory in exports]
    except ValueError as e:
        raise UsageError(str(e)) from None


def wanted(chunks: Sequence[Chunk], limit: int | None, per_chunk: float, source: str | Path | None = None) -> int:
    """How many questions a run asks for: ``limit``, else ``per_chunk`` for each chunk fit to ask
    about. InputError (naming ``source``) when that is none."""
    total = limit if limit is not None else int(round(per_chunk * sum(1 for c in chunks if not unfit_chunk(c.text))))
    if total < 1:
        raise InputError("nothing to generate: no usable chunks, or --limit below 1", source)
    return total


def existing_questions(output: str | Path) -> list[Question]:
    """The questions already in ``output`` (``--append`` grows that set); none when it is missing or empty."""
    path = Path(output)
    if not path.exists() or not path.stat().st_size:
        return []
    return [q for _, q in read_records(path, Question, "question")]


@contextmanager
def locked(outputs: Sequence[str | Path | None]) -> Iterator[None]:
    """Hold the lock of every output given (None is skipped): a second writer fails at once."""
    with ExitStack() as stack:
        for output in outputs:
            if output is not None:
                stack.callback(OutputLock(output).acquire().release)
        yield


class GenerateJob(StageJob[GenerateResult]):
    """A generate run for the scaffold. Each call of :meth:`execute` (one per batch round) draws
    the set again from its journal beside ``output`` and, when no candidate waits for batch answers,
    writes the set after the ``existing`` questions, its rejects, its qrels and its exports; all of
    it while holding the locks of the files it writes."""

    def __init__(
        self,
        chunks: Sequence[Chunk],
        config: LLMConfig,
        output: str | Path,
        *,
        options: GenerateOptions,
        existing: Sequence[Question] = (),
        rejects: str | Path | None = None,
        qrels_out: str | Path | None = None,
        exports: Sequence[tuple[str, str | Path]] = (),
    ):
        self.chunks, self.configs, self.output, self.options = list(chunks), [config], Path(output), options
        self.existing, self.rejects, self.qrels_out, self.exports = list(existing), rejects, qrels_out, list(exports)

    def estimate(self) -> Estimate:
        return Generator(None, self.chunks, self.options, self.configs[0], self.existing).estimate(output=self.output)

    async def execute(self, llms: Sequence[LLM]) -> GenerateResult:
        with locked([self.output, self.rejects, self.qrels_out]):
            result = await Generator(llms[0], self.chunks, self.options, existing=self.existing).run(output=self.output)
            if not result.pending:  # until the batch answers are in, the set is not finished: nothing is written
                write_outputs(
                    result,
                    self.output,
                    self.rejects,
                    self.qrels_out,
                    self.existing,
                    endpoint=(llms[0].config.model, llms[0].config.base_url) if llms and llms[0] else None,
                )
                result.exported = [
                    (fmt, export(result.accepted, self.chunks, fmt, directory)) for fmt, directory in self.exports
                ]
        return result

    def pending(self, result: GenerateResult) -> int:
        return result.pending
