"""``ragassay demo``: the whole pipeline on the bundled example, ending in a report.

Without an LLM endpoint it runs everything that needs none (retrieval, metrics, comparison,
rule-decided answer checks, agreement between the two hand labellings) and says which LLM
stages it skipped and how to enable them. With one, a stage that fails or falls short does not
stop the demo: the report is written, and the failures are listed last (the command exits 3).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from ..data.result_models import CheckSummary, DemoResult
from ..errors import InputError


def example_dir() -> Path:
    """The bundled example, inside the installed package (a clone links datasets/example to it)."""
    return Path(__file__).resolve().parents[1] / "example"


def find_example(explicit: str | Path | None = None) -> Path:
    c = Path(explicit) if explicit else example_dir()
    if (c / "chunks.jsonl").exists() and (c / "qrels.txt").exists():
        return c
    if explicit:
        raise InputError("not an example dataset: it needs chunks.jsonl, qrels.txt, queries.jsonl, runs/, "
                         "answers.jsonl", c)
    raise InputError("the bundled example is missing from this installation; reinstall ragassay", c)


def copy_example(directory: str | Path) -> list[Path]:
    """Write the bundled example's files to ``directory`` (to look at, edit, and run commands on)."""
    src, dest = example_dir(), Path(directory)
    if dest.exists() and any(dest.iterdir()):
        raise InputError("exists and is not empty; choose a new directory", dest)
    shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return sorted(p for p in dest.rglob("*") if p.is_file())


def _demo_llm(config, log):
    """The demo's LLM. The demo takes no --cache or --no-cache, so an answer cache that cannot be
    used (a directory, a broken or foreign file, read-only) does not stop it: it goes on without
    one and says why, without naming flags it does not take."""
    import dataclasses
    import re

    from ..llm import LLM
    try:
        return LLM(config)
    except InputError as e:
        if not (config.use_cache and config.cache_path and e.path == str(config.cache_path)):
            raise
        reason = re.sub(r"[;:] give another path.*$", "", re.sub(r"^--cache: ", "", e.message))
        log(f"answer cache {e.path}: {reason}; the demo goes on without one (XDG_CACHE_HOME moves it)")
        return LLM(dataclasses.replace(config, use_cache=False))


class _NothingJudged(Exception):
    """Every judgment is an error record (already named as a failure): no agreement to compute."""


def _write_json(path: Path, data: Any) -> None:
    from .formatting import to_json
    from ..data.results import nan_to_none
    path.write_text(to_json(nan_to_none(data)) + "\n", encoding="utf-8")


def run_demo(out: str | Path, data: str | Path | None = None, config=None, log=print) -> DemoResult:
    from ..data import io as rio
    from ..stages.check import (CheckOptions, check_answers, check_result, read_answers, read_human_labels,
                                read_labels_origin, retrieval_recall)
    from ..metrics.agreement import agree
    from ..metrics.compare import compare
    from ..metrics.evaluate import evaluate
    from .report import load_inputs, write_report
    from ..stages.retrieve import load_callable, run_retriever

    ex = find_example(data)
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    qrels = rio.read_qrels(ex / "qrels.txt")
    queries = rio.read_queries(ex / "queries.jsonl")
    chunks = {c.id: c for c in rio.read_chunks(ex / "chunks.jsonl")}
    skipped: list[str] = []

    # 1. retrieve with the bundled retrievers
    run_paths = []
    for name in ("bm25", "tfidf"):
        path = out / "runs" / f"{name}.txt"
        try:
            fn = load_callable(f"{ex / 'retrievers.py'}:{name}")
            run = run_retriever(fn, queries, k=10, name=name, progress=False)
            rio.write_run(path, run)
            log(f"retrieve: {name}, {len(run)} results for {len(queries)} queries")
        except Exception as e:  # bm25s is an optional extra: fall back to the bundled run
            if not (ex / "runs" / f"{name}.txt").exists():
                raise
            shutil.copy(ex / "runs" / f"{name}.txt", path)
            log(f"retrieve: {name} unavailable here ({type(e).__name__}: {e}); using the bundled run")
        run_paths.append(path)
    runs = [rio.read_run(p) for p in run_paths]

    # 2. evaluate and compare against the hand-made labels
    for r in runs:
        _write_json(out / f"evaluate_{r.name}.json", evaluate(qrels, r).to_dict())
    cmp = compare(qrels, {r.name: r for r in runs}, ["ndcg@10", "map", "recall@10", "mrr"])
    _write_json(out / "compare.json", cmp.to_dict())
    means = cmp.means
    log("evaluate: " + "; ".join(f"{r}: ndcg@10 {m['ndcg@10']:.4f}, map {m['map']:.4f}" for r, m in means.items()))
    t = next(t for t in cmp.tests if t.metric == "ndcg@10")
    log(f"compare: {t.run} - {cmp.runs[0]} ndcg@10 {t.diff:+.4f}, 95% CI [{t.ci_low:+.4f}, {t.ci_high:+.4f}], "
        f"p = {t.p_randomization:.4f}")

    # 3. LLM stages, when an endpoint is configured. A stage that fails is named at the end (and
    # the exit code says so); the report is written whatever fails.
    from ..errors import RagassayError
    from ..llm.errors import LLMError
    failed: list[str] = []
    llm = None
    if config is not None:
        try:
            config.check()
            llm = _demo_llm(config, log)
        except LLMError as e:
            if e.kind != "config" or config.api_key or config.base_url:
                raise  # only "no endpoint at all" skips the LLM stages; a bad setting is an error
    report_files = [out / "compare.json"]
    if llm is not None:
        from ..runtime.engine import run_locked
        from ..stages.generate import GenerateOptions, Generator, write_outputs
        try:
            generated = (out / "questions.jsonl", out / "rejects.jsonl", out / "questions.qrels")
            generator = Generator(llm, list(chunks.values()), GenerateOptions(total=10, quiet=True))

            async def generate_set():  # locked as the command locks them, until written
                result = await generator.run(output=generated[0])
                write_outputs(result, *generated)
                return result
            gen = run_locked(generated, generate_set)
            log(f"generate: {len(gen.accepted)} questions accepted, {len(gen.rejects)} rejected"
                + (f"; {gen.stopped}" if gen.stopped else ""))
            if gen.stopped:
                failed.append(f"generate: {gen.stopped}")
            elif gen.shortfall:
                failed.append("generate: fell short of the target (" + ", ".join(
                    f"{k} {v} fewer" for k, v in gen.shortfall.items()) + "); rejects.jsonl says why")
        except (RagassayError, LLMError) as e:
            log(f"generate: failed: {e}")
            failed.append(f"generate: {e}")
        from ..stages.judge import JudgeOptions, judge_run
        from ..stages.queries import read_query_items
        try:
            summary = asyncio.run(judge_run(read_query_items(ex / "queries.jsonl"), chunks, runs[0], [llm],
                                            out / "judgments.jsonl", options=JudgeOptions(depth=5, quiet=True),
                                            qrels_out=out / "judged.qrels", coverage_out=out / "coverage.jsonl"))
            grades = summary.summary().grades
            log("judge: " + ", ".join(f"grade {g}: {n}" for g, n in grades.items())
                + f"; {summary.relevance.errors} errors")
            if summary.relevance.stopped:
                log(f"judge: {summary.relevance.stopped}")
                failed.append(f"judge: {summary.relevance.stopped}")
            if summary.relevance.errors:
                failed.append(f"judge: {summary.relevance.failure_text()}")
            if summary.coverage is not None and summary.coverage.errors:
                failed.append(f"coverage: {summary.coverage.failure_text()}")
            if not summary.relevance.ok:
                raise _NothingJudged()
            ag = agree(qrels, rio.read_qrels(out / "judged.qrels"), runs)
            _write_json(out / "agree.json", ag.to_dict())
            log(f"agree ({' vs '.join(ag.names)}): kappa {ag.kappa:.3f}, binarised >= 2: {ag.kappa_binary[2]:.3f}")
            report_files += [out / "judgments.jsonl", out / "coverage.jsonl", out / "agree.json"]
        except _NothingJudged:
            log("agree (the example's people vs the judge): skipped, no pair was judged")
        except (RagassayError, LLMError) as e:
            log(f"judge: failed: {e}")
            failed.append(f"judge: {e}")
        report_files += [out / f for f in ("questions.jsonl", "rejects.jsonl")
                         if (out / f).exists() and (out / f).stat().st_size]  # a generated set, when any
    else:
        skipped = ["generate", "judge", "check (LLM verdicts)"]
        ag = agree(qrels, rio.read_qrels(ex / "qrels_second_assessor.txt"), runs)
        _write_json(out / "agree.json", ag.to_dict())
        log(f"agree ({' vs '.join(ag.names)}): kappa {ag.kappa:.3f}, Kendall tau of the runs "
            f"{ag.run_ranking['kendall_tau_b']:.2f}")
        report_files.append(out / "agree.json")

    # 4. check the example answers (only what the rules decide without an endpoint)
    answers = read_answers(ex / "answers.jsonl", chunks)
    (out / "checks.jsonl").unlink(missing_ok=True)
    recall = retrieval_recall(qrels, runs[0], 10)
    try:
        done_checks = asyncio.run(check_answers(answers, llm, out / "checks.jsonl", chunks=chunks,
                                                options=CheckOptions(quiet=True), announce=False, gold_recall=recall))
        result = CheckSummary.model_validate(check_result(done_checks, recall=recall,
                                                         human=read_human_labels(ex / "answers_human_labels.jsonl"),
                                                         human_origin=read_labels_origin(ex / "answers_human_labels.jsonl")))
        _write_json(out / "check.json", result.to_dict())
        s = result.summary
        counts = ", ".join(f"{s['counts'][lab]} {lab}" for lab in ("correct", "partial", "hallucinated", "abstained"))
        if llm is None:
            log(f"check: {s['graded']} of {s['answers']} answers decided by rule ({counts}); the other "
                f"{s['errors']} need an LLM verdict")
        else:
            log(f"check: {s['graded']} of {len(answers)} answers graded ({counts}); {result.diagnosis['advice']}"
                + (f"; {done_checks.stopped}" if done_checks.stopped else ""))
            if done_checks.stopped:
                failed.append(f"check: {done_checks.stopped}")
            if done_checks.errors:
                failed.append(f"check: {done_checks.failure_text()}")
        report_files += [out / "check.json", out / "checks.jsonl"]
    except (RagassayError, LLMError) as e:
        log(f"check: failed: {e}")
        failed.append(f"check: {e}")

    # 5. the report
    report_files = [f for f in report_files if f.exists() and f.stat().st_size]  # a failed stage wrote none
    inputs = load_inputs(report_files, qrels=ex / "qrels.txt", runs=run_paths, chunks=ex / "chunks.jsonl",
                         queries=ex / "queries.jsonl", answers=ex / "answers.jsonl",
                         human=ex / "answers_human_labels.jsonl")
    path = None
    try:
        path = write_report(inputs, out / "report.html", title="ragassay demo: the bundled help-centre example")
        write_report(inputs, out / "report.md", fmt="markdown", title="ragassay demo")
    except RagassayError as e:  # what the stages left cannot make a report (a ceiling stopped them early)
        log(f"report: not written: {e}")
        failed.append(f"report: {e}")
    if llm is not None:
        log(llm.usage.summary())  # the demo takes --price-in/--price-out as the stages do
        llm.close()
    return DemoResult(skipped=skipped, failed=failed, report=str(path) if path else None)


def demo(out: str | Path | None = None, data: str | Path | None = None, copy: str | Path | None = None,
         config=None, log=print) -> DemoResult:
    """``ragassay demo``: write the bundled example's files to ``copy``, or run the whole pipeline on
    the example (or the example-shaped ``data``) into ``out`` (default ``ragassay-demo``)."""
    if copy:
        return DemoResult(copied=[str(f) for f in copy_example(copy)])
    return run_demo(out or "ragassay-demo", data, config, log=log)
