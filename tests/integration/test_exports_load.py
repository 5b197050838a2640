"""Each `generate --export` loads in the library it is named after, run by that library's own loader
in a subprocess. The libraries are not test dependencies (deepeval brings openai 3 and pytest
plugins that would change this suite; ragas 0.4 needs an older langchain-openai than pip picks;
llama-index-finetuning and beir bring torch), so each test looks for a Python that has the library:
this one, then those listed in RAGASSAY_EXPORT_PYTHONS (separated by ':'), and skips naming the
package when none has it.

Environments in which all six loaded (2026-11-24), each a fresh venv:
  ragas 0.4.3:        pip install ragas 'langchain-openai<0.4'   (with the newest one, ragas fails to import)
  deepeval 4.3.1:     pip install deepeval
  (2026-11-26: ragas 0.4.3, deepeval 4.3.1 and llama-index-core 0.14.25 loaded theirs from one venv:
   pip install ragas deepeval llama-index-core langchain-core 'langchain-openai<0.4')
  llama-index-finetuning 0.4.2 and beir 2.2.0: pip install torch==2.13.0 llama-index-finetuning beir 'mistralai<2'
then RAGASSAY_EXPORT_PYTHONS=/path/ragas/bin/python:/path/deepeval/bin/python:/path/li/bin/python \\
    pytest tests/integration/test_exports_load.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ragassay
from helpers import EXAMPLE
from ragassay.stages.generate import EXPORTS, Question, export

CHUNKS = ragassay.read_chunks(EXAMPLE / "chunks.jsonl")
TEXT = {c.id: c.text for c in CHUNKS}
QUESTIONS = [
    Question(
        id="g-1",
        question="How many days do I have to return shoes?",
        answer="30 days",
        difficulty="easy",
        chunk_ids=["refund-01"],
        grades={"refund-01": 3},
        style="keywords",
        model="m",
        prompt="generate@1",
    ),
    Question(
        id="g-2",
        question="Which costs more, express or standard shipping?",
        answer="Express, $12 vs $5",
        difficulty="hard",
        kind="comparison",
        chunk_ids=["ship-01", "ship-02"],
        grades={"ship-01": 3, "ship-02": 2},
    ),
]

LOADERS = {  # export -> (module to import, package to name, a script printing what was loaded as JSON)
    "ragas-evaluation-dataset": (
        "ragas",
        "ragas",
        """
import json, sys
from ragas import EvaluationDataset
d = EvaluationDataset.from_jsonl(sys.argv[1])
print(json.dumps([[s.user_input, s.reference, s.reference_contexts, s.reference_context_ids, s.query_style,
                   s.persona_name] for s in d.samples]))
""",
    ),
    "ragas-testset": (
        "ragas",
        "ragas",
        """
import json, sys
from ragas.testset.synthesizers.testset_schema import Testset
t = Testset.from_jsonl(sys.argv[1])
print(json.dumps([[s.eval_sample.user_input, s.eval_sample.reference, s.eval_sample.reference_contexts,
                   s.eval_sample.reference_context_ids, s.eval_sample.query_style, s.eval_sample.persona_name,
                   s.synthesizer_name] for s in t.samples]))
""",
    ),
    "deepeval-goldens": (
        "deepeval",
        "deepeval",
        """
import json, sys
from deepeval.dataset import EvaluationDataset
d = EvaluationDataset()
d.add_goldens_from_json_file(sys.argv[1])
print(json.dumps([[g.input, g.expected_output, g.context, g.name, g.source_file, g.custom_column_key_values,
                   g.additional_metadata] for g in d.goldens]))
""",
    ),
    "llamaindex-embedding-qa": (
        "llama_index.finetuning",
        "llama-index-finetuning",
        """
import json, sys
from llama_index.finetuning import EmbeddingQAFinetuneDataset
d = EmbeddingQAFinetuneDataset.from_json(sys.argv[1])
print(json.dumps([d.queries, d.relevant_docs, sorted(d.corpus)]))
""",
    ),
    "llamaindex-query-response": (
        "llama_index.core",
        "llama-index-core",
        """
import json, sys, warnings
warnings.simplefilter("ignore")  # the class is deprecated in llama-index-core 0.14 (and the only dataset it loads)
from llama_index.core.evaluation import QueryResponseDataset
d = QueryResponseDataset.from_json(sys.argv[1])
print(json.dumps([d.queries, d.responses, json.load(open(sys.argv[1]))["relevant_docs"]]))
""",
    ),
    "beir": (
        "beir",
        "beir",
        """
import json, sys
from beir.datasets.data_loader import GenericDataLoader
corpus, queries, qrels = GenericDataLoader(sys.argv[1]).load(split="test")
print(json.dumps([queries, qrels, sorted(corpus)]))
""",
    ),
}

DOC = {c.id: c.doc_id for c in CHUNKS}
STYLE = [["WEB_SEARCH_LIKE", "ragassay:keywords"], [None, None]]  # RAGAS's name for the style, and ragassay's own
EXPECTED = {
    "ragas-evaluation-dataset": [
        [q.question, q.answer, [TEXT[c] for c in q.chunk_ids], q.chunk_ids, *style]
        for q, style in zip(QUESTIONS, STYLE)
    ],
    "ragas-testset": [
        [q.question, q.answer, [TEXT[c] for c in q.chunk_ids], q.chunk_ids, *style, f"ragassay:{q.difficulty}:{q.kind}"]
        for q, style in zip(QUESTIONS, STYLE)
    ],
    "deepeval-goldens": [
        [
            "How many days do I have to return shoes?",
            "30 days",
            [TEXT["refund-01"]],
            "g-1",
            DOC["refund-01"],
            {"id": "g-1", "chunk_ids": '["refund-01"]', "difficulty": "easy", "kind": "factoid", "style": "keywords"},
            {
                "id": "g-1",
                "chunk_ids": ["refund-01"],
                "grades": {"refund-01": 3},
                "doc_ids": [DOC["refund-01"]],
                "difficulty": "easy",
                "kind": "factoid",
                "style": "keywords",
                "model": "m",
                "prompt": "generate@1",
            },
        ],
        [
            "Which costs more, express or standard shipping?",
            "Express, $12 vs $5",
            [TEXT["ship-01"], TEXT["ship-02"]],
            "g-2",
            "|".join(dict.fromkeys([DOC["ship-01"], DOC["ship-02"]])),
            {"id": "g-2", "chunk_ids": '["ship-01", "ship-02"]', "difficulty": "hard", "kind": "comparison"},
            {
                "id": "g-2",
                "chunk_ids": ["ship-01", "ship-02"],
                "grades": {"ship-01": 3, "ship-02": 2},
                "doc_ids": list(dict.fromkeys([DOC["ship-01"], DOC["ship-02"]])),
                "difficulty": "hard",
                "kind": "comparison",
                "model": None,
                "prompt": None,
            },
        ],
    ],
    "llamaindex-query-response": [
        {q.id: q.question for q in QUESTIONS},
        {q.id: q.answer for q in QUESTIONS},
        {q.id: q.chunk_ids for q in QUESTIONS},
    ],
    "llamaindex-embedding-qa": [
        {q.id: q.question for q in QUESTIONS},
        {q.id: q.chunk_ids for q in QUESTIONS},
        sorted(TEXT),
    ],
    "beir": [{q.id: q.question for q in QUESTIONS}, {q.id: q.grades for q in QUESTIONS}, sorted(TEXT)],
}


def python_with(module: str) -> str | None:
    candidates = [sys.executable] + [p for p in os.environ.get("RAGASSAY_EXPORT_PYTHONS", "").split(":") if p]
    for python in candidates:
        found = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
        if found.returncode == 0:
            return python
    return None


def test_every_export_has_a_loader_test():
    assert set(LOADERS) == set(EXPORTS) == set(EXPECTED)


@pytest.mark.parametrize("fmt", sorted(LOADERS))
def test_the_export_loads_in_its_library(fmt, tmp_path):
    module, package, script = LOADERS[fmt]
    files = export(QUESTIONS, CHUNKS, fmt, tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == list(EXPORTS[fmt][0])
    python = python_with(module)
    if python is None:
        pytest.skip(
            f"{package} is not installed in this Python nor in RAGASSAY_EXPORT_PYTHONS: "
            f"the {fmt} export was written but not loaded"
        )
    target = tmp_path if fmt == "beir" else files[0]
    env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "RAGAS_DO_NOT_TRACK": "true"}
    loaded = subprocess.run([python, "-c", script, str(target)], capture_output=True, text=True, timeout=300, env=env)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert json.loads(loaded.stdout.strip().splitlines()[-1]) == EXPECTED[fmt]
