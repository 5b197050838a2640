"""A generated question set written for other tools, each in the shape its own loader reads, and
keeping what the set knows: each question's id, its source chunk ids in order, its difficulty,
kind and style, wherever the tool has a field for them (and in its free metadata where it has not).

Each export is named after what loads it (:data:`EXPORTS`: the files, the loader, the package).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..data.lines import write_lines_atomic
from ..data.records import Chunk, Question
from ..errors import InputError

# Each export is named after what loads it: (the files it writes, how to load them, the package).
EXPORTS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "beir": (
        ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"),
        "beir.datasets.data_loader.GenericDataLoader(DIR).load(split='test'), or ragassay's own readers",
        "beir",
    ),
    "llamaindex-embedding-qa": (
        ("llamaindex_embedding_qa.json",),
        "llama_index.finetuning.EmbeddingQAFinetuneDataset.from_json(PATH)",
        "llama-index-finetuning, which imports only beside mistralai<2 (llama-index-core "
        "0.14 no longer has the class: see llamaindex-query-response)",
    ),
    "llamaindex-query-response": (
        ("llamaindex_query_response.json",),
        "llama_index.core.evaluation.QueryResponseDataset.from_json(PATH); its "
        "relevant_docs are RetrieverEvaluator's expected_ids",
        "llama-index-core",
    ),
    "ragas-evaluation-dataset": (
        ("ragas_evaluation_dataset.jsonl",),
        "ragas.EvaluationDataset.from_jsonl(PATH)",
        "ragas",
    ),
    "ragas-testset": (
        ("ragas_testset.jsonl",),
        "ragas.testset.synthesizers.testset_schema.Testset.from_jsonl(PATH)",
        "ragas",
    ),
    "deepeval-goldens": (
        ("deepeval_goldens.json",),
        "deepeval.dataset.EvaluationDataset().add_goldens_from_json_file(PATH)",
        "deepeval",
    ),
}
EXPORT_FORMATS = tuple(EXPORTS)
# the names of earlier releases, still taken: each meant what its new name says
EXPORT_ALIASES = {
    "llamaindex": "llamaindex-embedding-qa",
    "ragas": "ragas-evaluation-dataset",
    "deepeval": "deepeval-goldens",
}

# ragassay's styles as RAGAS's QueryStyle members (the names RAGAS's synthesizers write in query_style):
# the nearest of its four; ragassay's own name goes in persona_name, so nothing is lost
RAGAS_QUERY_STYLE = {
    "question": "PERFECT_GRAMMAR",
    "task": "PERFECT_GRAMMAR",
    "keywords": "WEB_SEARCH_LIKE",
    "lowercase": "MISSPELLED",
}


def export_format(name: str) -> str:
    """The export called ``name`` (or by an earlier release's name); ValueError naming the choices."""
    fmt = EXPORT_ALIASES.get(name, name)
    if fmt not in EXPORTS:
        raise ValueError(f"--export format must be one of {', '.join(EXPORT_FORMATS)}, got {name!r}")
    return fmt


def export(questions: Sequence[Question], chunks: Sequence[Chunk], fmt: str, directory: str | Path) -> list[Path]:
    """Write the set for another tool into ``directory``, in the shape its loader reads (see
    :data:`EXPORTS`); return the files written. A question citing a chunk that ``chunks`` lacks is an
    :class:`InputError` naming both ids (the set and the chunks file do not belong together)."""
    fmt = export_format(fmt)
    d = Path(directory)
    files = [d / f for f in EXPORTS[fmt][0]]
    by_id = {c.id: c for c in chunks}
    _require_chunks(questions, by_id)
    d.mkdir(parents=True, exist_ok=True)
    if fmt == "beir":
        (d / "qrels").mkdir(exist_ok=True)
        write_lines_atomic(files[0], [_line({"_id": c.id, "title": c.title or "", "text": c.text}) for c in chunks])
        write_lines_atomic(files[1], [_line({"_id": q.id, "text": q.question, **_beir_metadata(q)}) for q in questions])
        write_lines_atomic(
            files[2],
            ["query-id\tcorpus-id\tscore"]
            + [f"{q.id}\t{c}\t{q.grades.get(c, 1)}" for q in questions for c in q.chunk_ids],
        )
    elif fmt == "llamaindex-embedding-qa":
        write_lines_atomic(
            files[0], [json.dumps(llamaindex_embedding_qa(questions, chunks), ensure_ascii=False, indent=1)]
        )
    elif fmt == "llamaindex-query-response":
        write_lines_atomic(files[0], [json.dumps(llamaindex_query_response(questions), ensure_ascii=False, indent=1)])
    elif fmt in ("ragas-evaluation-dataset", "ragas-testset"):
        write_lines_atomic(files[0], [_line(s) for s in ragas_samples(questions, by_id, fmt == "ragas-testset")])
    else:
        write_lines_atomic(files[0], [json.dumps(deepeval_goldens(questions, by_id), ensure_ascii=False, indent=1)])
    return files


def llamaindex_embedding_qa(questions: Sequence[Question], chunks: Sequence[Chunk]) -> dict:
    """LlamaIndex's EmbeddingQAFinetuneDataset: queries and relevant_docs by question id, the corpus by chunk id."""
    return {
        "queries": {q.id: q.question for q in questions},
        "corpus": {c.id: c.text for c in chunks},
        "relevant_docs": {q.id: list(q.chunk_ids) for q in questions},
        "mode": "text",
    }


def llamaindex_query_response(questions: Sequence[Question]) -> dict:
    """llama-index-core's QueryResponseDataset (queries and responses by question id, the responses
    the reference answers) with each question's source chunk ids beside them in ``relevant_docs``
    (which the dataset leaves unread): the ``expected_ids`` that core's RetrieverEvaluator takes."""
    return {
        "queries": {q.id: q.question for q in questions},
        "responses": {q.id: q.answer for q in questions},
        "relevant_docs": {q.id: list(q.chunk_ids) for q in questions},
    }


def ragas_samples(questions: Sequence[Question], chunks: dict[str, Chunk], testset: bool) -> list[dict]:
    """RAGAS SingleTurnSample rows: the reference contexts with their chunk ids
    (``reference_context_ids``, read by IDBasedContextPrecision and IDBasedContextRecall), the style
    as RAGAS's ``query_style`` and ragassay's own as ``persona_name``; a Testset row adds
    ``synthesizer_name`` ``ragassay:DIFFICULTY:KIND``. A question without a style has neither field."""
    rows = []
    for q in questions:
        row: dict = {
            "user_input": q.question,
            "reference": q.answer,
            "reference_contexts": [chunks[c].text for c in q.chunk_ids],
            "reference_context_ids": list(q.chunk_ids),
        }
        if q.style is not None:
            row["query_style"] = RAGAS_QUERY_STYLE.get(q.style, q.style)
            row["persona_name"] = f"ragassay:{q.style}"
        if testset:
            row["synthesizer_name"] = f"ragassay:{q.difficulty}:{q.kind}"
        rows.append(row)
    return rows


def deepeval_goldens(questions: Sequence[Question], chunks: dict[str, Chunk]) -> list[dict]:
    """DeepEval Golden objects as its JSON loader reads them. The ids are where DeepEval keeps such
    things: ``name`` is the question id, ``source_file`` the documents the gold chunks came from
    (a chunk without ``doc_id`` stands for its own document; several are joined by '|', DeepEval's
    own list delimiter), ``custom_column_key_values`` (strings only) the chunk ids as a JSON list,
    and ``additional_metadata`` everything as it is."""
    goldens = []
    for q in questions:
        sources = list(dict.fromkeys(chunks[c].doc_id or c for c in q.chunk_ids))
        described = {
            "difficulty": q.difficulty,
            "kind": q.kind,
            **({"style": q.style} if q.style else {}),
            **_no_answer(q),
        }
        goldens.append(
            {
                "input": q.question,
                "expected_output": q.answer,
                "context": [chunks[c].text for c in q.chunk_ids],
                "name": q.id,
                "source_file": "|".join(sources),
                "custom_column_key_values": {
                    "id": q.id,
                    "chunk_ids": json.dumps(list(q.chunk_ids), ensure_ascii=False),
                    **{k: _text(v) for k, v in described.items()},
                },
                "additional_metadata": {
                    "id": q.id,
                    "chunk_ids": list(q.chunk_ids),
                    "grades": dict(q.grades),
                    "doc_ids": sources,
                    **described,
                    "model": q.model,
                    "prompt": q.prompt,
                },
            }
        )
    return goldens


def _text(value: object) -> str:
    """A value as DeepEval's custom columns hold it: a string (other values as JSON: ``false``)."""
    return value if isinstance(value, str) else json.dumps(value)


def _no_answer(q: Question) -> dict:
    """What a question the corpus cannot answer as asked carries into every export that has room for it:
    ``answerable: false`` and, for a false premise, the premise (nothing for an answerable question)."""
    if q.answerable:
        return {}
    return {"answerable": False, **({"premise": q.premise} if q.premise else {})}


def _beir_metadata(q: Question) -> dict:
    """BEIR's queries carry a free ``metadata`` object: a question with no answer says so there."""
    return {"metadata": _no_answer(q)} if not q.answerable else {}


def _require_chunks(questions: Sequence[Question], chunks: dict[str, Chunk]) -> None:
    for q in questions:
        missing = [c for c in q.chunk_ids if c not in chunks]
        if missing:
            raise InputError(
                f"question {q.id!r} cites chunk {missing[0]!r}, which the chunks given to the export "
                f"lack ({len(missing)} of its {len(q.chunk_ids)} missing): are the set and the chunks "
                "from the same corpus?"
            )


def _line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False)
