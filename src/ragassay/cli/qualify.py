"""qualify: read the people-labelled data, qualify each model and prompt on it, render (the handler;
the arguments are declared in declare_qualify.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .render import render


def run_qualify(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.qualify import Grader, qualify_check, qualify_judge
    from ..product.qualify_text import (
        estimates_text,
        qualification_text,
        write_qualification,
    )
    _one_task(args)
    if Path(args.output).exists() and not Path(args.output).is_dir():
        raise UsageError(f"-o {args.output} is a file: qualify writes a folder (each grader's records and "
                         "qualification.json)")
    graders = [Grader(m, p) for m in (args.model or [None]) for p in (args.prompts or ["auto"])]
    size = args.size if args.size is not None else (150 if args.task == "judge" else 100)
    settings = _llm_settings(args)
    data = _pairs(args) if args.task == "judge" else _answers(args)
    if args.task == "judge":
        result = qualify_judge(data, graders, size=size, seed=args.seed, output=args.output,
                               runs=_runs(args.runs), metric=args.metric, dry_run=args.dry_run, **settings)
    else:
        result = qualify_check(data, graders, size=size, seed=args.seed, output=args.output,
                               dry_run=args.dry_run, **settings)
    if isinstance(result, list):  # a dry run: what each grader would cost
        return render(args, lambda: {"kind": "estimates", "version": 1, "task": args.task,
                                     "graders": [{"model": g.model, "prompt": g.prompt, **e.to_dict()}
                                                 for g, e in zip(graders, result)]},
                      lambda: estimates_text(result, graders, [f"data: {data.source}", *data.notes]))
    written = write_qualification(result, Path(args.output))
    return render(args, result.to_dict, lambda: qualification_text(result, written), result.exit_code)


JUDGE_FLAGS = {"qrels": "--qrels", "queries": "--queries", "chunks": "--chunks", "second": "--second",
               "public": "--public", "relevance_level": "--relevance-level", "runs": "--run"}
CHECK_FLAGS = {"answers": "--answers", "labels": "--labels"}


def _one_task(args: argparse.Namespace) -> None:
    """A flag of the other task is refused, never silently ignored."""
    other = CHECK_FLAGS if args.task == "judge" else JUDGE_FLAGS
    given = [flag for name, flag in other.items() if getattr(args, name, None)]
    if given:
        raise UsageError(f"{', '.join(given)} belong(s) to 'qualify {'check' if args.task == 'judge' else 'judge'}', "
                         f"not 'qualify {args.task}'")


def _llm_settings(args: argparse.Namespace) -> dict[str, Any]:
    names = ("base_url", "timeout", "concurrency", "rpm", "tpm", "cache", "no_cache", "price_in", "price_out",
             "max_calls", "max_cost", "quiet")
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _pairs(args: argparse.Namespace) -> Any:
    from ..data.people_samples import bundled_pairs, public_pairs, read_graded_pairs
    files = [args.qrels, args.queries, args.chunks]
    if args.public and any(files):
        raise UsageError("give either --public NAME or your own files (--qrels, --queries, --chunks), not both")
    if args.public:
        pairs = public_pairs(args.public)
    elif any(files):
        if not all(files):
            raise UsageError("your own people-labelled pairs need --qrels, --queries and --chunks together")
        return read_graded_pairs(args.qrels, args.queries, args.chunks, second=args.second,
                                 relevant_from=args.relevance_level)
    else:
        if args.second:
            raise UsageError("--second goes with --qrels (the bundled example has its own second assessor)")
        pairs = bundled_pairs()
    if args.relevance_level is not None:
        from dataclasses import replace
        pairs = replace(pairs, relevant_from=args.relevance_level)
    return pairs


def _answers(args: argparse.Namespace) -> Any:
    from ..data.people_samples import bundled_answers, read_labelled_answers
    if args.answers:
        return read_labelled_answers(args.answers, args.labels)
    if args.labels:
        raise UsageError("--labels goes with --answers (the bundled sample carries its own labels)")
    return bundled_answers()


def _runs(paths: list[str]) -> dict[str, Any] | None:
    if not paths:
        return None
    if len(paths) < 2:
        raise UsageError("ranking runs needs two or more --run files")
    from ..data.io import read_run
    runs: dict[str, Any] = {}
    for p in paths:  # each run under a name of its own: two files tagged alike go by their paths
        run = read_run(p)
        runs[p if run.name in runs else run.name] = run
    return runs
