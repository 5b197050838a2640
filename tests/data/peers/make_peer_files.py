"""Writes the peers' files in this folder with the peers' own libraries (see README.md here for the
versions). Not run by the tests: the libraries are not test dependencies. Each library in its own
environment (RAGAS 0.4 needs an older langchain-openai than DeepEval tolerates):

    python make_peer_files.py ragas        # with ragas 0.4.3 (pip install ragas 'langchain-openai<0.4')
    python make_peer_files.py deepeval     # with deepeval 4.3.1
    python make_peer_files.py llamaindex   # with llama-index-core 0.14.25 (+ the llama-index-finetuning wheel's module)
    python make_peer_files.py labelled-rag # with llama-index-core 0.13.6 (0.14 removed llama_dataset)

The samples are the same three questions in every file, with the awkward cases: a passage holding a
'|', a question and answer in French (non-ASCII), a sample with no retrieved passages, and (RAGAS) a
sample without a reference.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")

QUESTIONS = ["How long do refunds take?", "Où est la tour Eiffel ?", 'Who signs the "returns" form, and when?']
CONTEXTS = [
    ["Refunds are paid within 14 days.", "Shipping | handling fees are not refunded."],
    [],
    ["The form is signed by the customer, at pickup."],
]
RESPONSES = ["Within 14 days.", "À Paris, sur le Champ-de-Mars.", "The customer signs it at pickup."]
REFERENCES = ["14 days", "Paris", None]  # RAGAS: the third sample has no reference
GOLD = [
    ["Refunds are paid within 14 days."],
    ["La tour Eiffel est à Paris."],
    ["Returns: the customer signs at pickup."],
]


def ragas() -> None:
    from ragas import EvaluationDataset, SingleTurnSample
    from ragas.testset.synthesizers.testset_schema import Testset, TestsetSample

    samples = [
        SingleTurnSample(user_input=q, retrieved_contexts=c, response=r, reference=ref)
        for q, c, r, ref in zip(QUESTIONS, CONTEXTS, RESPONSES, REFERENCES)
    ]
    ds = EvaluationDataset(samples=samples)
    ds.to_jsonl(HERE / "ragas_evaluation_dataset.jsonl")
    ds.to_csv(HERE / "ragas_evaluation_dataset.csv")
    (HERE / "ragas_evaluation_dataset.json").write_text(json.dumps(ds.to_list(), ensure_ascii=False, indent=2))
    ts = Testset(
        samples=[
            TestsetSample(
                eval_sample=SingleTurnSample(user_input=q, reference=ref or "unknown", reference_contexts=g),
                synthesizer_name="single_hop_specific_query_synthesizer",
            )
            for q, ref, g in zip(QUESTIONS, REFERENCES, GOLD)
        ]
    )
    ts.to_jsonl(HERE / "ragas_testset.jsonl")
    ts.to_csv(HERE / "ragas_testset.csv")
    (HERE / "ragas_testset.json").write_text(json.dumps(ts.to_list(), ensure_ascii=False, indent=2))


def deepeval() -> None:
    from deepeval.dataset import EvaluationDataset, Golden
    from deepeval.test_case import LLMTestCase

    refs = [r or "The customer, at pickup." for r in REFERENCES]
    goldens = [
        Golden(input=q, expected_output=ref, context=g, additional_metadata={"id": f"q{i + 1}"})
        for i, (q, ref, g) in enumerate(zip(QUESTIONS, refs, GOLD))
    ]
    EvaluationDataset(goldens=goldens).save_as("json", str(HERE), "deepeval_goldens")
    EvaluationDataset(goldens=goldens).save_as("jsonl", str(HERE), "deepeval_goldens")
    EvaluationDataset(goldens=goldens).save_as("csv", str(HERE), "deepeval_goldens")
    cases = [
        LLMTestCase(input=q, actual_output=r, expected_output=ref, retrieval_context=c)
        for q, r, ref, c in zip(QUESTIONS, RESPONSES, refs, CONTEXTS)
    ]
    for kind in ("json", "jsonl", "csv"):
        ds = EvaluationDataset()
        for case in cases:
            ds.add_test_case(case)
        ds.save_as(kind, str(HERE), "deepeval_test_cases", include_test_cases=True)
    (HERE / "deepeval_test_cases_by_alias.jsonl").write_text(
        "".join(json.dumps(c.model_dump(by_alias=True), ensure_ascii=False) + "\n" for c in cases)
    )


def llamaindex() -> None:
    import importlib.util

    import llama_index.core
    from llama_index.core.evaluation import QueryResponseDataset

    QueryResponseDataset(
        queries={f"{i}": q for i, q in enumerate(QUESTIONS)}, responses={f"{i}": r for i, r in enumerate(RESPONSES)}
    ).save_json(str(HERE / "llamaindex_query_response.json"))
    # EmbeddingQAFinetuneDataset lives in llama-index-finetuning (0.4.2), whose package imports torch: its
    # module is loaded on its own from the wheel's files (path in LLAMA_FINETUNING_COMMON)
    spec = importlib.util.spec_from_file_location("common", os.environ["LLAMA_FINETUNING_COMMON"])
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    common.EmbeddingQAFinetuneDataset(
        queries={f"node-q{i}": q for i, q in enumerate(QUESTIONS)},
        corpus={f"node-{i}": g[0] for i, g in enumerate(GOLD)},
        relevant_docs={f"node-q{i}": [f"node-{i}"] for i in range(len(QUESTIONS))},
    ).save_json(str(HERE / "llamaindex_embedding_qa.json"))
    print("llama-index-core", llama_index.core.__version__)


def labelled_rag() -> None:
    """LabelledRagDataset (llama-index-core 0.13 and before; 0.14 removed llama_dataset)."""
    from llama_index.core.llama_dataset import CreatedBy, CreatedByType, LabelledRagDataExample, LabelledRagDataset

    examples = [
        LabelledRagDataExample(
            query=q,
            query_by=CreatedBy(type=CreatedByType.AI, model_name="gpt-4o-mini"),
            reference_contexts=g,
            reference_answer=ref or "The customer, at pickup.",
            reference_answer_by=CreatedBy(type=CreatedByType.HUMAN),
        )
        for q, g, ref in zip(QUESTIONS, GOLD, REFERENCES)
    ]
    LabelledRagDataset(examples=examples).save_json(str(HERE / "llamaindex_labelled_rag.json"))


if __name__ == "__main__":
    {"ragas": ragas, "deepeval": deepeval, "llamaindex": llamaindex, "labelled-rag": labelled_rag}[sys.argv[1]]()
