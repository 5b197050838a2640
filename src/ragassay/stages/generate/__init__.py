"""``generate``: easy, medium and hard questions from the user's own chunks, with evidence.

For each planned question: pick chunk(s) (stratified across documents; related chunks for hard),
ask the model for a question, answer, kind and verbatim evidence, then drop it, with the reason,
unless every check passes: text checks (self-contained, not copied, length, language, not a
near-duplicate), evidence found in the gold chunks, an independent answerability check from the
gold chunks alone, and for hard questions, not answerable from any single chunk offered. The BM25 rank
and word overlap of each gold chunk are kept in ``checks``; a label they contradict is relabelled
(medium -> easy) or dropped (hard).

Chunk ids in, the same ids out. Each candidate is a work item of the stage engine
(:class:`GenerateStage`): its calls are steps of the engine's ``next_calls``, its outcome (a
question or a reject) a record in the engine's journal beside the question file
(``OUTPUT.candidates.journal``, spent once the set is written). Candidates are drawn in waves, each
from what the last decided. Every answer a call of the set receives is kept, as it comes, in
``OUTPUT.answers`` (:class:`AnswerJournal`), keyed by the exact request as the answer cache is: a
request made again, in this run or a later one, is answered from there and not sent. So a rerun of
a finished set sends nothing, with or without the answer cache, and rebuilds the same set from the
answers (every check that needs no model made again on the chunks as they are now); a killed or
stopped run goes on without asking again for any answer it received; a chunk changed since asks
only the requests that hold its text, and what follows from their answers. Deleting
``OUTPUT.answers`` makes the next run ask the model again. The question file is written at the end
in one atomic step.

A dry run (:meth:`Generator.estimate`) draws the waves with the same code as the run, answering
each call from what the set and the answer cache hold; an answer not known yet is taken to pass
its check. It counts exactly the calls the run makes when every answer not known yet passes.
Otherwise a rejected candidate (another try) or a hard question's passage that answers alone (one
more comparison) costs calls it did not count; and a call that follows an answer not known yet
is counted even when that answer turns it into a request the set already holds (a chunk edited
in a way the model's question does not show), which the run does not send.

The package, by responsibility: ``shapes`` (what the model fills, the options, the shared rules),
``writer`` (chunks, draw order, prompts, calls and the checks without a model), ``steps`` (a
candidate's steps and the checks of each answer), ``stage`` (the stage on the engine), ``journal``
(the candidates' journal and the set's answers), ``dry_run`` (the waves walked without sending),
``generator`` (the waves of a run), ``result`` (what a run made, and its files) and ``no_answer``
(unanswerable and false-premise questions, and how each is verified against the corpus).
"""

from ...data.records import Question
from ..exports import EXPORT_ALIASES, EXPORT_FORMATS, EXPORTS, export, export_format
from .generator import Generator
from .journal import AnsweredFirst, AnswerJournal, answers_path, candidates_path, corpus_digest
from .result import GenerateResult, write_outputs
from .shapes import (
    LEVEL_ORDER,
    MIX_NAMES,
    STYLES,
    BlindAnswer,
    Critique,
    Evidence,
    GeneratedQuestion,
    GenerateOptions,
    SameAnswer,
    ceiling_for,
    cited,
    gold_grades,
    reject_record,
)
from .stage import GenerateStage
from .steps import Candidate, Step

__all__ = [
    "EXPORTS",
    "EXPORT_ALIASES",
    "EXPORT_FORMATS",
    "LEVEL_ORDER",
    "MIX_NAMES",
    "STYLES",
    "AnswerJournal",
    "AnsweredFirst",
    "BlindAnswer",
    "Candidate",
    "Critique",
    "Evidence",
    "GenerateOptions",
    "GenerateResult",
    "GenerateStage",
    "GeneratedQuestion",
    "Generator",
    "Question",
    "SameAnswer",
    "Step",
    "answers_path",
    "candidates_path",
    "ceiling_for",
    "cited",
    "corpus_digest",
    "export",
    "export_format",
    "gold_grades",
    "reject_record",
    "write_outputs",
]
