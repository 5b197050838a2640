"""generate, remap, judge, check, ping: the commands that call an LLM, and their shared flags."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from .options import (add_batch_options, add_format_option, add_llm_options, batch_box, finish_batch, llm_config,
                      run_batch_rounds)
from ..errors import RagassayError, UsageError
from ..product.formatting import render_table, to_json
from ..data.result_models import PingResult, RemapSummary
from ..data.results import nan_to_none
from .values import nonneg_int, percent, positive_float, positive_int, share


def offline_llms(configs):
    """LLMs that only export requests and read imported answers: no endpoint or key needed."""
    from ..llm import LLM
    from ..llm.batch import OfflineClient
    return [LLM(c, client=OfflineClient()) for c in configs]


# ---------------------------------------------------------------------------------------- ping

def ping(sub: Any) -> None:
    p = sub.add_parser(
        "ping", help="check the LLM endpoint: reachable, latency, structured outputs",
        description="Send one small structured request to the configured endpoint and report whether "
                    "it is reachable, how long it took, whether the model answered as asked, and "
                    "whether JSON-schema structured outputs work or a fallback (JSON mode, plain "
                    "instructions) is in use. Exits 2 with the reason when it cannot be used.",
        epilog="Example: ragassay ping --base-url http://localhost:8000/v1 --model qwen2.5-7b-instruct")
    add_llm_options(p, stage=False)
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_ping)


def run_ping(args: argparse.Namespace) -> str:
    import asyncio

    from ..llm.ping import ping
    config = llm_config(args)
    try:
        info = asyncio.run(ping(config))
    except RagassayError as e:
        if args.format != "json":
            raise
        print(f"ragassay ping: error: {e}", file=sys.stderr)  # a script reads stdout, a person stderr
        return to_json(PingResult(endpoint=config.public_base_url(), model=config.model, status="error",
                                  error=str(e)).to_dict()), 1
    if args.format == "json":
        return to_json(PingResult(**info, status="ok").to_dict())
    modes = {"json_schema": "supported (json_schema)",
             "json_object": "json_schema rejected; using JSON mode + validation",
             "prompt": "json_schema and JSON mode rejected; using instructions + validation"}
    return "\n".join([f"endpoint:            {info['endpoint']}", f"model:               {info['model']}",
                      f"latency:             {info['latency_ms']} ms",
                      f"structured outputs:  {modes[info['structured_outputs']]}", "status:              ok"])


# --------------------------------------------------------------------------------------- judge

def judge(sub: Any) -> None:
    p = sub.add_parser(
        "judge", help="LLM relevance grades 0-3 for a run's top chunks, and answer coverage",
        description="Grade the top --depth chunks of every query in RUN for relevance (0 unrelated, "
                    "1 on topic but no answer, 2 partial or buried answer, 3 dedicated and answers "
                    "it), with the model's reasoning. Writes judgments JSONL (resumable), graded qrels "
                    "for evaluate/agree with --qrels-out, and per-query coverage (FULL / PARTIAL / "
                    "NONE from answer nuggets) with --coverage-out. A pair that cannot be judged is "
                    "an error record, never grade 0.",
        epilog="Example: ragassay judge --queries datasets/example/queries.jsonl --chunks "
               "datasets/example/chunks.jsonl --run datasets/example/runs/bm25.txt --depth 5 "
               "-o judgments.jsonl --qrels-out judged.qrels --model gpt-4o-mini")
    p.add_argument("--queries", required=True, metavar="FILE",
                   help="queries ({id, text} lines, or questions.jsonl from generate: its answers inform coverage)")
    p.add_argument("--chunks", required=True, metavar="FILE", help="the chunks the run retrieved (JSONL)")
    p.add_argument("--run", required=True, metavar="RUN", help="the run to judge (TREC or JSONL)")
    p.add_argument("--depth", type=positive_int, default=10, help="judge the top K chunks of each query (default 10)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="judgments JSONL: one record per pair, written at the end; a killed or failed run resumes "
                   "from FILE.journal and asks only what is missing")
    p.add_argument("--qrels-out", metavar="FILE", help="write graded TREC qrels of every pair the judgments file holds (runs judged into "
                   "it earlier too), with --keep labels included")
    p.add_argument("--coverage-out", metavar="FILE", help="write per-query coverage JSONL")
    p.add_argument("--keep", metavar="QRELS", help="labels made by people: kept as they are, never judged again")
    p.add_argument("--samples", type=positive_int, default=1, help="ask N times per pair (sample i sends seed "
                   "--seed + i) and take the median grade (default 1)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="first seed of the samples (default 0)")
    p.add_argument("--tie", choices=("lower", "higher", "round-half-even"), default="lower",
                   help="the median of an even number of votes (samples or jurors) that differ: take the lower "
                        "(default), the higher, or their mean rounded to even")
    add_batch_options(p)
    p.add_argument("--batch", type=positive_int, default=1, help="grade N chunks of a query per call, in a fixed shuffled "
                   "order (default 1: one call per pair, no position effects)")
    p.add_argument("--max-chunk-chars", type=positive_int, default=6000, help="longer chunks are judged in windows of this "
                   "many characters and take the best window's grade (default 6000)")
    p.add_argument("--long-chunks", choices=("windows", "cut"), default="windows",
                   help="windows (default: one call per window) or cut (one call, the rest cut with a visible mark)")
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
    p.set_defaults(handler=run_judge)


def run_judge(args: argparse.Namespace) -> str | tuple[str, int]:
    import asyncio
    from ..data.io import read_chunks, read_qrels, read_run
    from ..stages.judge import JudgeOptions, build_llms, execute_judge, model_configs, plan_judge
    from ..stages.queries import read_query_items
    if args.samples < 1 or args.batch < 1 or args.depth < 1:
        raise UsageError("--samples, --batch and --depth must be at least 1")
    queries = read_query_items(args.queries)
    chunks = {c.id: c for c in read_chunks(args.chunks)}
    run = read_run(args.run)
    keep = read_qrels(args.keep) if args.keep else None
    if args.max_chunk_chars < 500:
        raise UsageError("--max-chunk-chars must be at least 500")
    from ..stages.engine import parse_shard
    options = JudgeOptions(depth=args.depth, samples=args.samples, batch=args.batch, seed=args.seed, tie=args.tie,
                           max_chunk_chars=args.max_chunk_chars, long_chunks=args.long_chunks, quiet=args.quiet,
                           shard=parse_shard(args.shard) if args.shard else None)
    configs = model_configs(llm_config(args), args.model)

    def plan():
        return plan_judge(queries, chunks, run, configs, args.output, options=options, keep=keep,
                          coverage_out=args.coverage_out)
    if args.dry_run:  # offline: no endpoint, no key
        est = plan().estimate()
        est.batch = args.backend == "batch"
        return to_json(est.to_dict()) if args.format == "json" else est.text()

    def run_once(box):
        async def body():
            llms = offline_llms(configs) if box is not None and box.collect else build_llms(configs[0], args.model)
            for llm in llms:
                llm.batch = box
            try:
                return await execute_judge(plan(), llms, qrels_out=args.qrels_out)
            finally:
                for llm in llms:
                    llm.close()
        return asyncio.run(body())
    if args.backend == "batch":
        result, batch_note = run_batch_rounds(args, configs[0], args.output, run_once)
    else:
        box = batch_box(args)
        result = run_once(box)
        batch_note = finish_batch(args, box, result.pending)
    if args.format == "json":
        return to_json(nan_to_none({**result.to_dict(), "batch": batch_note or None})), result.exit_code
    out = [result.text(), f"judgments: {args.output}"] + ([batch_note] if batch_note else [])
    if args.qrels_out:
        out.append(f"qrels: {args.qrels_out}")
    if args.coverage_out:
        out.append(f"coverage: {args.coverage_out}")
    return "\n".join(out), result.exit_code


# --------------------------------------------------------------------------------------- check

def check(sub: Any) -> None:
    p = sub.add_parser(
        "check", help="label RAG answers correct / partial / hallucinated / abstained, and diagnose",
        description="Label each answer against its reference (correct, partial, hallucinated, "
                    "abstained) and against its retrieved context (supported, unsupported, "
                    "contradicted). Rules decide what they are sure of without a call; an LLM grades "
                    "the rest. Prints rates with 95% bootstrap intervals; with --run and --qrels, "
                    "whether wrong answers come from retrieval or generation; with --human, agreement "
                    "with people and prediction-powered rates. Without an endpoint, only the rules run "
                    "and the rest are error records that a rerun with an endpoint fills in.",
        epilog="Example: ragassay check datasets/example/answers.jsonl --chunks datasets/example/chunks.jsonl "
               "--run datasets/example/runs/bm25.txt --qrels datasets/example/qrels.txt -o checks.jsonl --model gpt-4o-mini")
    p.add_argument("answers", metavar="ANSWERS", help="JSONL: id, question, reference (string or list), "
                   "response, and contexts or context_ids")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="checks JSONL: one record per answer, written at the end; a rerun asks only what is missing")
    p.add_argument("--chunks", metavar="FILE", help="chunks JSONL, to resolve context_ids")
    p.add_argument("--run", metavar="RUN", help="the run behind the answers (with --qrels: diagnosis)")
    p.add_argument("--qrels", metavar="QRELS", help="gold chunks per question (with --run: diagnosis)")
    p.add_argument("-k", "--depth", dest="k", type=positive_int, default=10,
                   help="retrieval depth for the diagnosis's recall@k (default 10; --depth as in judge)")
    p.add_argument("--retrieval-threshold", type=share, default=0.5,
                   help="recall@k at or above this is good retrieval (default 0.5)")
    p.add_argument("--human", metavar="FILE", help="people's labels for some answers (JSONL id, label)")
    p.add_argument("--by", action="append", metavar="FIELD", help="break rates down by an answer field (repeatable)")
    p.add_argument("--samples", type=positive_int, default=1, help="ask N times, each a distinct request with its own seed, "
                   "and take the majority (ties go to the more severe label; default 1)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="with --samples N, sample i sends seed + i (default 0)")
    p.add_argument("--max-response-chars", type=positive_int, default=32000, metavar="N",
                   help="responses are graded whole up to N characters; a longer one is an error record that "
                        "says so, never graded from a cut (default 32000)")
    p.add_argument("--max-context-chars", type=positive_int, default=12000, metavar="N",
                   help="budget for all passages of an answer; the rest is cut or dropped, marked (default 12000)")
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
    add_batch_options(p)
    p.set_defaults(handler=run_check)


def _fmt_rate(r: dict) -> str:
    if r["value"] is None:
        return "n/a"
    return f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def run_check(args: argparse.Namespace) -> str | tuple[str, int]:
    import asyncio
    from ..data.io import iter_jsonl, read_chunks, read_qrels, read_run
    from ..llm import LLM
    from ..llm.errors import LLMError
    from ..stages.check import (CheckOptions, answer_fields, check_answers, check_result, plan_check, read_answers,
                                read_human_labels, retrieval_recall)
    if bool(args.run) != bool(args.qrels):
        raise UsageError("the diagnosis needs both --run and --qrels")
    if args.samples < 1:
        raise UsageError("--samples must be at least 1")
    chunks = {c.id: c for c in read_chunks(args.chunks)} if args.chunks else None
    items = read_answers(args.answers, chunks)
    fields = ({str(answer_fields(obj, no)["id"]): obj for no, obj in iter_jsonl(args.answers)}
              if args.by else None)
    for name in args.by or ():  # checked before anything is spent: a breakdown by nothing means nothing
        if not any(name in obj for obj in (fields or {}).values()):
            known = sorted({k for obj in (fields or {}).values() for k in obj})
            raise UsageError(f"--by {name}: no answer has this field (fields: {', '.join(known)})")
    qrels = read_qrels(args.qrels) if args.qrels else None
    run = read_run(args.run) if args.run else None
    human = read_human_labels(args.human) if args.human else None
    config = llm_config(args)
    if args.max_response_chars < 1 or args.max_context_chars < 1:
        raise UsageError("--max-response-chars and --max-context-chars must be at least 1")
    from ..stages.engine import parse_shard
    options = CheckOptions(samples=args.samples, seed=args.seed, quiet=args.quiet,
                           max_response_chars=args.max_response_chars,
                           max_context_chars=args.max_context_chars,
                           shard=parse_shard(args.shard) if args.shard else None)
    recall = retrieval_recall(qrels, run, args.k) if run is not None else None
    if args.dry_run:  # offline: no endpoint, no key
        est = plan_check(items, config, args.output, options=options, chunks=chunks, gold_recall=recall)
        est.batch = args.backend == "batch"
        return to_json(est.to_dict()) if args.format == "json" else est.text()
    usage = []

    def run_once(box):
        try:
            if box is not None and box.collect:
                llm = offline_llms([config])[0]
            else:
                config.check()
                llm = LLM(config)
            llm.batch = box
        except LLMError as e:
            if e.kind != "config" or config.api_key or config.base_url:
                raise  # only "no endpoint at all" means rules only; a bad setting is an error
            llm = None

        async def body():
            try:
                return await check_answers(items, llm, args.output, options=options, chunks=chunks, gold_recall=recall)
            finally:
                if llm is not None:
                    usage.append(llm.usage)
                    llm.close()
        return asyncio.run(body())
    if args.backend == "batch":
        done, batch_note = run_batch_rounds(args, config, args.output, run_once)
    else:
        box = batch_box(args)
        done = run_once(box)
        batch_note = finish_batch(args, box, done.pending)
    result = check_result(done, recall=recall,
                          threshold=args.retrieval_threshold, human=human, by=args.by or (), fields=fields)
    if usage:
        result["usage"] = {config.model: usage[-1].to_dict()}
        result["usage_text"] = usage[-1].summary()
    result["pending"] = done.pending
    if args.format == "json":
        return to_json(nan_to_none({**result, "batch": batch_note or None})), done.exit_code
    text = _check_text(result, args) + (f"\n{batch_note}" if batch_note else "")
    if done.errors or done.stopped:
        text += "\n" + done.failure_text()
    return text, done.exit_code


def _check_text(result: dict, args: argparse.Namespace) -> str:
    s = result["summary"]
    rows = [[lab, s["counts"][lab], _fmt_rate(s["rates"][lab])] for lab in ("correct", "partial", "hallucinated", "abstained")]
    out = [render_table(["label", "count", "rate [95% CI]"], rows)]
    out.append(f"{s['graded']} of {s['answers']} answers graded; {s['errors']} errors (excluded from rates)\n"
               f"correct given attempted: {_fmt_rate(s['correct_given_attempted'])}\n"
               f"truthfulness (+1 correct, +0.5 partial, 0 abstained, -1 hallucinated): {_fmt_rate(s['truthfulness'])}\n"
               "mean response words: " + ", ".join(f"{k} {v:.1f}" for k, v in s["mean_response_words"].items() if v is not None))
    for f, groups in result.get("breakdown", {}).items():
        labels = ("correct", "partial", "hallucinated", "abstained")
        out.append(render_table([f, "graded", *labels],
                                [[g, v["graded"], *(_fmt_rate(v["rates"][lab]) for lab in labels)]
                                 for g, v in groups.items()]))
    if "diagnosis" in result:
        d = result["diagnosis"]
        c = d["cells"]
        def cell(k):
            return f"{c[k]['count']} ({', '.join(c[k]['examples'])})" if c[k]["count"] else "0"
        out.append(f"diagnosis: recall@{args.k} >= {d['threshold']} is good retrieval; a good answer is a correct one\n" +
                   render_table(["", "good answer", "bad answer"],
                                [["good retrieval", cell("good_retrieval_good_answer"), cell("good_retrieval_bad_answer")],
                                 ["bad retrieval", cell("bad_retrieval_good_answer"), cell("bad_retrieval_bad_answer")]])
                   + f"\n=> {d['advice']}")
    if "human" in result:
        h = result["human"]
        kappa = "nan" if h["kappa"] != h["kappa"] else f"{h['kappa']:.3f}"
        lines = [f"agreement with people on {h['pairs']} answers: Cohen's kappa {kappa}"]
        for lab, r in h["rates"].items():
            lines.append(f"{lab} rate: prediction-powered {_fmt_rate(r['prediction_powered'])}; "
                         f"LLM only {_fmt_rate(r['llm_only'])}; people only {_fmt_rate(r['human_only'])}")
        out.append("\n".join(lines))
    if "flip_rate" in result:
        out.append(f"samples disagreed on {result['flip_rate']:.1%} of LLM-graded answers")
    if result.get("truncated"):
        out.append(f"{result['truncated']} answers were graded with some passages cut or dropped to the context "
                   "budget (the prompt marks each cut and the record's 'truncated' says what)")
    if "usage_text" in result:
        out.append(result["usage_text"])
    out.append(f"checks: {args.output}")
    return "\n\n".join(out)


# ------------------------------------------------------------------------------------ generate

def generate(sub: Any) -> None:
    p = sub.add_parser(
        "generate", help="write easy / medium / hard questions with answers and evidence from your chunks",
        description="Generate a question set from CHUNKS (used as given: the same ids come out). "
                    "Each question carries its reference answer, its gold chunk ids, verbatim evidence "
                    "and the checks it passed (BM25 rank and word overlap of the gold chunks, "
                    "answerability from the gold chunks alone, and for hard questions that no single "
                    "chunk suffices). Failed questions go to --rejects with the reason, never into the set.",
        epilog="Example: ragassay generate datasets/example/chunks.jsonl -o questions.jsonl --limit 20 "
               "--qrels-out questions.qrels --rejects rejects.jsonl --model gpt-4o-mini")
    p.add_argument("chunks", metavar="CHUNKS", help="chunks JSONL (id, text; BEIR corpus lines work too)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="questions JSONL")
    p.add_argument("--per-chunk", type=positive_float, default=1.0, metavar="N",
                   help="questions wanted per usable chunk when --limit is not given (default 1)")
    p.add_argument("--mix", default="easy=0.4,medium=0.4,hard=0.2", help="share of each difficulty (default "
                   "easy=0.4,medium=0.4,hard=0.2)")
    p.add_argument("--limit", type=positive_int, metavar="N", help="number of questions wanted in all (new ones, with --append)")
    p.add_argument("--append", action="store_true", help="grow the set in -o: keep its questions, add new ones "
                   "that duplicate none of them, drawn from chunks it does not use yet")
    p.add_argument("--styles", default="question=0.4,keywords=0.25,lowercase=0.15,task=0.2",
                   help="share of each style users type: question (a full sentence), keywords, lowercase (quick, "
                        "with a typo), task ('how do i ...'); default question=0.4,keywords=0.25,lowercase=0.15,task=0.2")
    p.add_argument("--seed", type=nonneg_int, default=0, help="seed for chunk selection and grouping (default 0)")
    p.add_argument("--qrels-out", metavar="FILE", help="TREC qrels of the gold chunks, graded by role: 3 for a chunk that states the answer, 2 for one "
                   "that supports a hop (as in the records' grades)")
    p.add_argument("--rejects", metavar="FILE", help="dropped questions and unfit chunks, with reasons")
    p.add_argument("--export", nargs=2, action="append", default=[], metavar=("FORMAT", "DIR"),
                   help="also write the set into DIR for another tool, named after what loads it: beir, "
                        "llamaindex-embedding-qa (llama_index.finetuning.EmbeddingQAFinetuneDataset), "
                        "ragas-evaluation-dataset (ragas.EvaluationDataset), ragas-testset (ragas's Testset), "
                        "deepeval-goldens (deepeval's EvaluationDataset goldens); repeat for several")
    p.add_argument("--max-per-doc", type=positive_int, metavar="N", help="draw at most N candidates from one document "
                   "before the others run out (default: a quarter of the set); documents are drawn in proportion "
                   "to their size")
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
    add_batch_options(p, shard=False)  # generate is adaptive (each wave depends on the last): no shards
    p.set_defaults(handler=run_generate)


def run_generate(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..data.io import read_chunks
    from ..errors import InputError
    from ..llm import LLM
    from ..stages.engine import run_locked
    from ..stages.generate import GenerateOptions, Generator, export, write_outputs
    from ..stages.generate_checks import parse_mix
    from ..stages.generate import STYLES
    try:
        mix = parse_mix(args.mix)
        styles = parse_mix(args.styles, tuple(STYLES), "--styles")
    except ValueError as e:
        raise UsageError(str(e)) from None
    from ..stages.generate import export_format
    try:
        args.export = [(export_format(fmt), d) for fmt, d in args.export]
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.max_per_doc is not None and args.max_per_doc < 1:
        raise UsageError("--max-per-doc must be at least 1")
    chunks = read_chunks(args.chunks)
    existing = []
    if args.append and Path(args.output).exists() and Path(args.output).stat().st_size:
        from ..data.io import read_records
        from ..data.records import Question
        existing = [q for _, q in read_records(args.output, Question, "question")]
    config = llm_config(args)
    probe = Generator(None, chunks, GenerateOptions(), config)
    total = args.limit if args.limit is not None else int(round(args.per_chunk * len(probe.fit)))
    if total < 1:
        raise InputError("nothing to generate: no usable chunks, or --limit below 1", args.chunks)
    options = GenerateOptions(total=total, mix=mix, seed=args.seed, quiet=args.quiet, max_per_doc=args.max_per_doc,
                              styles=styles, max_calls=args.max_calls)
    if args.dry_run:  # offline: no endpoint, no key
        est = Generator(None, chunks, options, config, existing).estimate()
        return to_json(est.to_dict()) if args.format == "json" else est.text()

    def run_once(box):
        async def body():
            llm = offline_llms([config])[0] if box is not None and box.collect else LLM(config)
            llm.batch = box
            try:
                result = await Generator(llm, chunks, options, existing=existing).run()
                return result, llm.usage
            finally:
                llm.close()
        return run_locked([args.output, args.rejects, args.qrels_out], body)
    note = ""
    if args.backend == "batch":
        (result, usage), note = run_batch_rounds(args, config, args.output, run_once)
    else:
        box = batch_box(args)
        result, usage = run_once(box)
        if result.pending:
            note = finish_batch(args, box, result.pending)
    if result.pending:  # the set is not finished: nothing is written until the batch answers are in
        if args.format == "json":
            return to_json({**result.to_dict(), "usage": {config.model: usage.to_dict()}, "usage_text": usage.summary(),
                            "pending": result.pending, "batch": note}), 0
        return "\n".join([f"generate: {result.pending} candidates wait for batch answers "
                          f"({len(result.accepted)} accepted so far; nothing written yet)", note]), 0
    write_outputs(result, args.output, args.rejects, args.qrels_out, existing)
    exported = [(fmt, export(result.accepted, chunks, fmt, directory)) for fmt, directory in args.export]
    if args.format == "json":
        return to_json({**result.to_dict(), "usage": {config.model: usage.to_dict()}, "usage_text": usage.summary()}), \
            result.exit_code
    out = [result.summary(), usage.summary(), f"questions: {args.output}"
           + (f" ({len(existing)} kept, {len(result.accepted)} added)" if args.append else "")] + ([note] if note else [])
    for fmt, paths in exported:
        out.append(f"exported ({fmt}): " + ", ".join(str(p) for p in paths))
    return "\n".join(out), result.exit_code


# --------------------------------------------------------------------------------------- remap

def remap(sub: Any) -> None:
    p = sub.add_parser(
        "remap", help="carry a question set over to re-chunked documents (new qrels)",
        description="Find each question's evidence quotes in NEW_CHUNKS (exact, then fuzzy matching) and "
                    "write qrels for the new chunk ids. Questions whose evidence cannot be placed are "
                    "listed, not dropped silently.",
        epilog="Example: ragassay remap questions.jsonl new_chunks.jsonl -o new.qrels")
    p.add_argument("questions", metavar="QUESTIONS", help="questions.jsonl from generate")
    p.add_argument("new_chunks", metavar="NEW_CHUNKS", help="the re-chunked corpus (JSONL)")
    p.add_argument("-o", "--output", required=True, metavar="QRELS", help="TREC qrels for the new chunk ids")
    p.add_argument("--threshold", type=percent, default=90.0, help="fuzzy match score needed, 0-100 (default 90)")
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_remap)


def run_remap(args: argparse.Namespace) -> str:
    from ..data.io import read_chunks, read_records, write_qrels
    from ..data.records import Question
    from ..stages.remap import remap
    questions = [q for _, q in read_records(args.questions, Question, "question")]
    result = remap(questions, read_chunks(args.new_chunks), args.threshold)
    write_qrels(args.output, result.qrels)
    how = Counter(result.how.values())
    if args.format == "json":
        return to_json(RemapSummary(questions=len(questions), placed=len(result.placed), how=dict(how),
                                    unplaced=result.unplaced, no_evidence=result.no_evidence,
                                    output=str(args.output)).to_dict())
    lines = [f"placed {len(result.placed)} of {len(questions)} questions (" +
             ", ".join(f"{k} {v}" for k, v in sorted(how.items())) + f"); qrels: {args.output}"]
    if result.unplaced:
        lines.append(f"{len(result.unplaced)} questions have evidence that could not be placed:")
        lines += [f"  {qid}: {quotes[0][:90]!r}" for qid, quotes in list(result.unplaced.items())[:20]]
    if result.no_evidence:
        lines.append(f"{len(result.no_evidence)} questions carry no evidence quotes: {', '.join(result.no_evidence[:10])}")
    return "\n".join(lines)


