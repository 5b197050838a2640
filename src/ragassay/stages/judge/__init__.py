"""``judge``: graded 0-3 relevance of a run's top chunks (coverage of the answer: coverage.py).

The model sees the query, and when known the need behind it (description, narrative) and what a
good answer contains; it lists the aspects of the need, how the passage meets each and whether it
can be trusted, then grades. Samples send their own seed and are combined by the median (ties by a
stated rule); a jury of models is combined the same way, and agreement between jurors is reported.
A chunk longer than the budget is judged in windows and takes its best window's grade. A pair that
cannot be judged becomes a ``status: error`` record with the reason, never grade 0.

The package, by responsibility: ``options`` (what a run is asked, fitted to a server's context),
``keys`` (the encodings a judgment's key is hashed from), ``prompt`` (the prompts, the calls of a
pair and how votes become records), ``relevance`` (the stage on the engine), ``plan`` (the pairs and
items of a run, without an endpoint), ``result`` (what a run did and the lines it prints) and
``job`` (a run from plan to files, and the scaffold's job).
"""

from .job import JudgeJob, build_llms, execute_judge, judge_run, model_configs
from .options import JudgeOptions, fit_to_context
from .plan import JudgePlan, PairIds, RunTop, plan_judge, plan_pairs
from .prompt import BatchAnswer, BatchItem, Judge, RelevanceAnswer, median_grade
from .relevance import RelevanceStage
from .result import JudgeResult

__all__ = [
    "BatchAnswer",
    "BatchItem",
    "Judge",
    "JudgeJob",
    "JudgeOptions",
    "JudgePlan",
    "JudgeResult",
    "PairIds",
    "RelevanceAnswer",
    "RelevanceStage",
    "RunTop",
    "build_llms",
    "execute_judge",
    "fit_to_context",
    "judge_run",
    "median_grade",
    "model_configs",
    "plan_judge",
    "plan_pairs",
]
