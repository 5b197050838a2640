"""ragassay: build and grade ground truth for retrieval and RAG systems.

The metrics core (``read_qrels``, ``read_run``, ``evaluate``, ``compare``, ``agree``) needs no LLM.
Names are imported lazily so that ``import ragassay`` and the CLI start fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "read_qrels": "data.qrels_files",
    "read_run": "data.run_files",
    "read_chunks": "data.chunk_files",
    "read_queries": "data.query_files",
    "write_run": "data.writers",
    "write_qrels": "data.writers",
    "write_jsonl": "data.writers",
    "Qrels": "data.tables",
    "Run": "data.tables",
    "evaluate": "metrics.evaluate",
    "Evaluation": "metrics.evaluate",
    "compare": "metrics.compare",
    "Comparison": "metrics.compare",
    "agree": "metrics.agreement",
    "Agreement": "metrics.agreement",
    "run_retriever": "stages.retrieve",
    "check_answers": "stages.check",
    "read_answers": "stages.answer_files",
    "label_summary": "metrics.labels",
    "CheckOptions": "stages.check",
    "CheckResult": "stages.check_result",
    "judge_run": "stages.judge",
    "JudgeOptions": "stages.judge",
    "JudgeResult": "stages.judge",
    "read_query_items": "stages.queries",
    "Estimate": "runtime.engine",
    "Backend": "runtime.scaffold",
    "LLM": "llm",
    "LLMConfig": "llm",
    "LLMError": "llm",
    "Measure": "metrics.measures",
    "parse_measure": "metrics.measures",
    "judge": "api",
    "check": "api",
    "generate": "api",
    "GenerateResult": "stages.generate",
    "GenerateOptions": "stages.generate",
    "qualify": "product.qualify_inputs",
    "qualify_judge": "product.qualify",
    "qualify_check": "product.qualify_answers",
    "Grader": "product.qualify_results",
    "Qualification": "product.qualify_results",
    "read_graded_pairs": "data.people_samples",
    "read_labelled_answers": "data.people_samples",
    "bundled_pairs": "data.people_samples",
    "bundled_answers": "data.people_samples",
    "public_pairs": "data.people_samples",
    "InputError": "errors",
    "MeasureError": "errors",
    "RagassayError": "errors",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragassay' has no attribute {name!r}")

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs
    from .api import check, generate, judge
    from .data.chunk_files import read_chunks
    from .data.people_samples import (
        bundled_answers,
        bundled_pairs,
        public_pairs,
        read_graded_pairs,
        read_labelled_answers,
    )
    from .data.qrels_files import read_qrels
    from .data.query_files import read_queries
    from .data.run_files import read_run
    from .data.tables import Qrels, Run
    from .data.writers import write_jsonl, write_qrels, write_run
    from .errors import InputError, MeasureError, RagassayError
    from .llm import LLM, LLMConfig, LLMError
    from .metrics.agreement import Agreement, agree
    from .metrics.compare import Comparison, compare
    from .metrics.evaluate import Evaluation, evaluate
    from .metrics.labels import label_summary
    from .metrics.measures import Measure, parse_measure
    from .product.qualify import qualify_judge
    from .product.qualify_answers import qualify_check
    from .product.qualify_inputs import qualify
    from .product.qualify_results import Grader, Qualification
    from .runtime.engine import Estimate
    from .runtime.scaffold import Backend
    from .stages.answer_files import read_answers
    from .stages.check import CheckOptions, check_answers
    from .stages.check_result import CheckResult
    from .stages.generate import GenerateOptions, GenerateResult
    from .stages.judge import JudgeOptions, JudgeResult, judge_run
    from .stages.queries import read_query_items
    from .stages.retrieve import run_retriever
