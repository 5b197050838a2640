"""Each `generate --export` loads in the library it is named after, run by that library's own loader
in a subprocess. The libraries are not test dependencies (deepeval brings openai 3 and pytest
plugins that would change this suite; ragas 0.4 needs an older langchain-openai than pip picks;
llama-index-finetuning and beir bring torch), so each test looks for a Python that has the library:
this one, then those listed in RAGASSAY_EXPORT_PYTHONS (separated by ':'), and skips naming the
package when none has it.

Environments in which all six loaded (2026-11-24), each a fresh venv:
  ragas 0.4.3:        pip install ragas 'langchain-openai<0.4'   (with the newest one, ragas fails to import)
  deepeval 4.3.1:     pip install deepeval
  llama-index-finetuning 0.4.2 and beir 2.2.0: pip install torch==2.13.0 llama-index-finetuning beir 'mistralai<2'
then RAGASSAY_EXPORT_PYTHONS=/path/ragas/bin/python:/path/deepeval/bin/python:/path/li/bin/python pytest tests/test_exports_load.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ragassay
from ragassay.stages.generate import EXPORTS, Question, export
from helpers import EXAMPLE

CHUNKS = ragassay.read_chunks(EXAMPLE / "chunks.jsonl")
TEXT = {c.id: c.text for c in CHUNKS}
QUESTIONS = [
    Question(id="g-1", question="How many days do I have to return shoes?", answer="30 days", difficulty="easy",
             chunk_ids=["refund-01"], grades={"refund-01": 3}),
    Question(id="g-2", question="Which costs more, express or standard shipping?", answer="Express, $12 vs $5",
             difficulty="hard", kind="comparison", chunk_ids=["ship-01", "ship-02"],
             grades={"ship-01": 3, "ship-02": 2}),
]

LOADERS = {  # export -> (module to import, package to name, a script printing what was loaded as JSON)
    "ragas-evaluation-dataset": ("ragas", "ragas", """
import json, sys
from ragas import EvaluationDataset
d = EvaluationDataset.from_jsonl(sys.argv[1])
print(json.dumps([[s.user_input, s.reference, s.reference_contexts] for s in d.samples]))
"""),
    "ragas-testset": ("ragas", "ragas", """
import json, sys
from ragas.testset.synthesizers.testset_schema import Testset
t = Testset.from_jsonl(sys.argv[1])
print(json.dumps([[s.eval_sample.user_input, s.eval_sample.reference, s.eval_sample.reference_contexts,
                   s.synthesizer_name] for s in t.samples]))
"""),
    "deepeval-goldens": ("deepeval", "deepeval", """
import json, sys
from deepeval.dataset import EvaluationDataset
d = EvaluationDataset()
d.add_goldens_from_json_file(sys.argv[1])
print(json.dumps([[g.input, g.expected_output, g.context, g.additional_metadata] for g in d.goldens]))
"""),
    "llamaindex-embedding-qa": ("llama_index.finetuning", "llama-index-finetuning", """
import json, sys
from llama_index.finetuning import EmbeddingQAFinetuneDataset
d = EmbeddingQAFinetuneDataset.from_json(sys.argv[1])
print(json.dumps([d.queries, d.relevant_docs, sorted(d.corpus)]))
"""),
    "beir": ("beir", "beir", """
import json, sys
from beir.datasets.data_loader import GenericDataLoader
corpus, queries, qrels = GenericDataLoader(sys.argv[1]).load(split="test")
print(json.dumps([queries, qrels, sorted(corpus)]))
"""),
}

EXPECTED = {
    "ragas-evaluation-dataset": [[q.question, q.answer, [TEXT[c] for c in q.chunk_ids]] for q in QUESTIONS],
    "ragas-testset": [[q.question, q.answer, [TEXT[c] for c in q.chunk_ids], f"ragassay:{q.difficulty}:{q.kind}"]
                      for q in QUESTIONS],
    "deepeval-goldens": [[q.question, q.answer, [TEXT[c] for c in q.chunk_ids],
                          {"id": q.id, "difficulty": q.difficulty, "chunk_ids": q.chunk_ids}] for q in QUESTIONS],
    "llamaindex-embedding-qa": [{q.id: q.question for q in QUESTIONS}, {q.id: q.chunk_ids for q in QUESTIONS},
                                sorted(TEXT)],
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
        pytest.skip(f"{package} is not installed in this Python nor in RAGASSAY_EXPORT_PYTHONS: "
                    f"the {fmt} export was written but not loaded")
    target = tmp_path if fmt == "beir" else files[0]
    env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "RAGAS_DO_NOT_TRACK": "true"}
    loaded = subprocess.run([python, "-c", script, str(target)], capture_output=True, text=True, timeout=300,
                            env=env)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert json.loads(loaded.stdout.strip().splitlines()[-1]) == EXPECTED[fmt]
