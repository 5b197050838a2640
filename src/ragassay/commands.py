"""One function per subcommand: declare its arguments, and a handler that returns the text to print.

Handlers only call the library and format its results; anything worth testing lives in the library.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from .cli import EPILOG_METRICS, add_format_option, add_metric_options
from .formatting import render_table, to_json


def register_all(sub: Any) -> None:
    for register in (_demo, _evaluate, _compare, _agree, _retrieve, _generate, _remap, _judge, _check,
                     _report, _track, _history, _gate, _ping):
        register(sub)


def _load_pair(args: argparse.Namespace, run_paths: list[str]):
    from .io import read_qrels, read_run
    qrels = read_qrels(args.qrels, format=args.qrels_format)
    runs = [read_run(p, format=args.run_format, dedupe=args.dedupe) for p in run_paths]
    return qrels, runs


def _counts_line(ev) -> str:
    c = ev.counts
    parts = [f"{c['evaluated']} queries evaluated"]
    if c["run_queries_without_qrels"]:
        parts.append(f"{c['run_queries_without_qrels']} run queries without qrels ignored")
    if c["qrels_queries_missing_from_run"]:
        verb = "scored 0" if ev.missing_policy == "zero" else "skipped (use --missing zero to count them as 0)"
        parts.append(f"{c['qrels_queries_missing_from_run']} qrels queries missing from the run {verb}")
    if c["queries_without_relevant"]:
        parts.append(f"{c['queries_without_relevant']} evaluated queries have no relevant document (score 0)")
    return "; ".join(parts)


# ------------------------------------------------------------------------------------ evaluate

def _evaluate(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate", help="score a run against qrels (trec_eval's conventions)",
        description="Score a retrieval run against relevance judgments. Conventions are "
                    "trec_eval's: rank by score, ties by document id descending; P@k divides by k; "
                    "a run query without qrels is ignored.",
        epilog=EPILOG_METRICS + " Example: ragassay evaluate datasets/example/qrels.txt "
               "datasets/example/runs/bm25.txt -m ndcg@10 -m p@5 --per-query")
    p.add_argument("qrels", metavar="QRELS", help="relevance judgments (TREC, JSONL or BEIR TSV)")
    p.add_argument("run", metavar="RUN", help="the run to score (TREC, JSONL or TSV)")
    add_metric_options(p, "default: p@5 p@10 recall@10 recall@100 f1@10 hit_rate@10 mrr mrr@10 ndcg@10 map")
    p.add_argument("--missing", choices=("skip", "zero"), default="skip",
                   help="qrels queries absent from the run: skip them (default, as trec_eval) or "
                        "score them 0 (trec_eval -c)")
    p.add_argument("--per-query", action="store_true", help="also print every query's values")
    add_format_option(p)
    p.set_defaults(handler=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> str:
    from .metrics.evaluate import evaluate
    qrels, (run,) = _load_pair(args, [args.run])
    ev = evaluate(qrels, run, args.metrics, relevance_level=args.relevance_level, gain=args.gain,
                  missing=args.missing)
    if args.format == "json":
        d = ev.to_dict()
        if not args.per_query:
            d.pop("per_query")
        return to_json(d)
    names = ev.metric_names
    agg = ev.aggregate
    if args.per_query:
        rows = [[q] + [float(ev.values[m][i]) for m in names] for i, q in enumerate(ev.queries)]
        rows.append(["all"] + [agg[m] for m in names])
        table = render_table(["query"] + names, rows, args.format)
    else:
        table = render_table(["metric", run.name], [[m, agg[m]] for m in names], args.format)
    if args.format == "csv":
        print(_counts_line(ev), file=sys.stderr)
        return table
    return f"{table}\n\n{_counts_line(ev)}"


# ------------------------------------------------------------------------------------- compare

def _compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare", help="compare runs with paired significance tests",
        description="Each run's mean per metric; every run after the first is tested against the "
                    "first: mean difference, bootstrap confidence interval, paired randomization "
                    "and t-test p-values, Holm-corrected across all tests, and per-query "
                    "wins/ties/losses. Queries a run did not answer count as 0 (--missing zero), "
                    "so all runs are compared on the same queries.",
        epilog=EPILOG_METRICS + " Example: ragassay compare datasets/example/qrels.txt "
               "datasets/example/runs/bm25.txt datasets/example/runs/tfidf.txt -m ndcg@10")
    p.add_argument("qrels", metavar="QRELS", help="relevance judgments")
    p.add_argument("runs", metavar="RUN", nargs="+", help="two or more runs; the first is the baseline")
    add_metric_options(p, "default: the same set as evaluate")
    p.add_argument("--missing", choices=("skip", "zero"), default="zero",
                   help="qrels queries a run did not answer: score 0 (default) or use only the "
                        "queries every run answered")
    p.add_argument("--permutations", type=int, default=10_000, metavar="N",
                   help="randomization test permutations (default 10000)")
    p.add_argument("--bootstrap", type=int, default=10_000, metavar="N",
                   help="bootstrap resamples for the confidence interval (default 10000)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    add_format_option(p, ("table", "markdown", "json"))
    p.set_defaults(handler=run_compare)


def run_compare(args: argparse.Namespace) -> str:
    from .errors import InputError
    from .metrics.compare import compare
    if len(args.runs) < 2:
        raise InputError("compare needs at least two runs")
    qrels, runs = _load_pair(args, args.runs)
    named = {}
    for path, run in zip(args.runs, runs):
        key = run.name if run.name not in named else path
        named[key] = run
    if len(named) < len(runs):
        raise InputError("two runs have the same name and path")
    cmp = compare(qrels, named, args.metrics, missing=args.missing, relevance_level=args.relevance_level,
                  gain=args.gain, n_permutations=args.permutations, n_bootstrap=args.bootstrap,
                  confidence=args.confidence, seed=args.seed)
    if args.format == "json":
        return to_json(_none_for_nan(cmp.to_dict()))
    means = cmp.means
    first = render_table(["metric"] + cmp.runs, [[m] + [means[r][m] for r in cmp.runs] for m in cmp.metrics],
                         args.format)
    pct = int(round(cmp.settings["confidence"] * 100))
    rows = [[t.run, t.metric, t.diff, f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}]", t.p_randomization,
             t.p_t_test, t.p_randomization_holm, f"{t.wins}/{t.ties}/{t.losses}"] for t in cmp.tests]
    second = render_table(["run", "metric", "diff", f"{pct}% CI", "p (rand)", "p (t)", "p (Holm)", "W/T/L"],
                          rows, args.format)
    note = (f"{len(cmp.queries)} queries; baseline {cmp.runs[0]!r}; diff = run - baseline; "
            f"randomization test with {args.permutations} permutations (seed {args.seed}); "
            "Holm correction over all tests")
    return f"{first}\n\n{second}\n\n{note}"


def _none_for_nan(obj: Any) -> Any:
    import math
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, dict):
        return {k: _none_for_nan(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_none_for_nan(v) for v in obj]
    return obj


# --------------------------------------------------------------------------------------- agree

def _agree(sub: Any) -> None:
    p = sub.add_parser(
        "agree", help="agreement between two sets of graded labels (e.g. LLM judge vs humans)",
        description="On the (query, document) pairs both qrels judged: Cohen's kappa (unweighted, "
                    "linear, quadratic), kappa binarised at grade >= 1, 2, 3, Krippendorff's "
                    "alpha (ordinal), the confusion matrix and each side's label distribution. "
                    "With --runs, Kendall's tau and Spearman's rho between the rankings of the "
                    "runs by --metric under each qrels.",
        epilog="Example: ragassay agree datasets/example/qrels.txt datasets/example/qrels_second_assessor.txt "
               "--runs datasets/example/runs/bm25.txt datasets/example/runs/tfidf.txt")
    p.add_argument("reference", metavar="REFERENCE_QRELS", help="the labels you trust (e.g. human)")
    p.add_argument("candidate", metavar="CANDIDATE_QRELS", help="the labels to check (e.g. an LLM judge)")
    p.add_argument("--runs", nargs="+", metavar="RUN", help="runs to rank under both qrels")
    p.add_argument("-m", "--metric", default="ndcg@10", help="metric that ranks the runs (default ndcg@10)")
    p.add_argument("--qrels-format", choices=("auto", "trec", "jsonl", "beir"), default="auto",
                   help="format of both qrels files (default: detected)")
    add_format_option(p, ("table", "markdown", "json"))
    p.set_defaults(handler=run_agree)


def run_agree(args: argparse.Namespace) -> str:
    from .io import read_qrels, read_run
    from .metrics.agreement import agree
    ref = read_qrels(args.reference, format=args.qrels_format)
    cand = read_qrels(args.candidate, format=args.qrels_format)
    runs = [read_run(r) for r in args.runs] if args.runs else None
    ag = agree(ref, cand, runs, metric=args.metric)
    if args.format == "json":
        return to_json(ag.to_dict())
    fmt = args.format
    stats = [["pairs judged by both", ag.pairs], ["judged only in reference", ag.only_reference],
             ["judged only in candidate", ag.only_candidate], ["exact agreement", ag.exact_agreement],
             ["Cohen's kappa", ag.kappa], ["kappa, linear weights", ag.kappa_linear],
             ["kappa, quadratic weights", ag.kappa_quadratic]]
    stats += [[f"kappa, grade >= {t}", v] for t, v in ag.kappa_binary.items()]
    stats.append(["Krippendorff's alpha (ordinal)", ag.krippendorff_alpha_ordinal])
    out = [render_table(["statistic", "value"], stats, fmt)]
    labels = [str(g) for g in ag.labels]
    out.append("confusion matrix (rows: reference, columns: candidate)\n" + render_table(
        ["ref \\ cand"] + labels, [[g] + row for g, row in zip(labels, ag.confusion)], fmt))
    out.append(render_table(["grade", "reference", "candidate"],
                            [[str(g), ag.reference_distribution[g], ag.candidate_distribution[g]] for g in ag.labels], fmt))
    if ag.run_ranking:
        rr = ag.run_ranking
        out.append(render_table(["run", f"{rr['metric']} (reference)", f"{rr['metric']} (candidate)"],
                                [[n, v["reference"], v["candidate"]] for n, v in rr["runs"].items()], fmt))
        out.append(f"Kendall's tau-b = {_num(rr['kendall_tau_b'])}; Spearman's rho = {_num(rr['spearman_rho'])}")
    out.append("nan: undefined (e.g. both sides used a single label for every pair)" if any(
        v != v for v in [ag.kappa, ag.kappa_linear, ag.kappa_quadratic, ag.krippendorff_alpha_ordinal,
                         *ag.kappa_binary.values()]) else "")
    return "\n\n".join(o for o in out if o)


def _num(v: float) -> str:
    return "nan" if v != v else f"{v:.4f}"


# ------------------------------------------------------------------------------------ retrieve

def _retrieve(sub: Any) -> None:
    p = sub.add_parser(
        "retrieve", help="run your own search function over queries and write a run",
        description="Call your retriever on every query and write its results as a TREC run. "
                    "The function takes the query text and returns ranked ids, or (id, score) "
                    "pairs, best first. Per-query latency is written next to the run "
                    "(RUN.latency.json).",
        epilog="Example: ragassay retrieve --retriever datasets/example/retrievers.py:bm25 "
               "--queries datasets/example/queries.jsonl -k 10 -o my_run.txt")
    p.add_argument("--retriever", required=True, metavar="MODULE:FUNCTION",
                   help="package.module:function or path/to/file.py:function")
    p.add_argument("--queries", required=True, metavar="FILE",
                   help="queries: JSONL (id + question/query/text) or TSV (id<TAB>text)")
    p.add_argument("-k", type=int, default=100, help="results kept per query (default 100)")
    p.add_argument("-o", "--output", required=True, metavar="RUN", help="where to write the TREC run")
    p.add_argument("--name", help="run tag (default: the function's name)")
    p.set_defaults(handler=run_retrieve)


def run_retrieve(args: argparse.Namespace) -> str:
    import json
    from pathlib import Path

    from .io import read_queries, write_run
    from .retrieve import load_callable, run_retriever
    fn = load_callable(args.retriever)
    queries = read_queries(args.queries)
    run = run_retriever(fn, queries, args.k, name=args.name)
    out = Path(args.output)
    write_run(out, run)
    lat_path = out.with_name(out.name + ".latency.json")
    lat_path.write_text(json.dumps(run.latency_ms, indent=1) + "\n", encoding="utf-8")
    lat = sorted(run.latency_ms.values())
    p50 = lat[len(lat) // 2] if lat else 0.0
    p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))] if lat else 0.0
    return (f"wrote {len(run)} results for {len(queries)} queries to {out} "
            f"(latency p50 {p50:.1f} ms, p95 {p95:.1f} ms; per query in {lat_path})")


# ---------------------------------------------------------------------------------- LLM options

def add_llm_options(p: argparse.ArgumentParser, stage: bool = True) -> None:
    """The same LLM flags for every command that calls a model."""
    g = p.add_argument_group("LLM endpoint")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else api.openai.com)")
    g.add_argument("--model", action="append", help="model name (default: $RAGASSAY_MODEL); "
                   "judge takes several for a jury")
    g.add_argument("--timeout", type=float, help="seconds per HTTP request (default 60)")
    if not stage:
        return
    g.add_argument("--concurrency", type=int, help="calls in flight at once (default 8)")
    g.add_argument("--rpm", type=float, help="requests per minute budget (default: none)")
    g.add_argument("--tpm", type=float, help="tokens per minute budget (default: none)")
    g.add_argument("--cache", type=Path, metavar="PATH",
                   help="answer cache (default: $XDG_CACHE_HOME/ragassay/llm-cache.sqlite)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the answer cache")
    g.add_argument("--price-in", type=float, metavar="USD", help="price per million input tokens (overrides the table)")
    g.add_argument("--price-out", type=float, metavar="USD", help="price per million output tokens")
    g.add_argument("--dry-run", action="store_true", help="count calls and estimate tokens and cost; call nothing")
    g.add_argument("--quiet", action="store_true", help="no progress bar")


def llm_config(args: argparse.Namespace):
    from .llm.config import LLMConfig
    return LLMConfig.from_env(
        model=args.model[0] if args.model else None, base_url=args.base_url, timeout=args.timeout,
        concurrency=getattr(args, "concurrency", None), rpm=getattr(args, "rpm", None),
        tpm=getattr(args, "tpm", None), cache_path=getattr(args, "cache", None),
        use_cache=not getattr(args, "no_cache", False), price_in=getattr(args, "price_in", None),
        price_out=getattr(args, "price_out", None))


# ---------------------------------------------------------------------------------------- ping

def _ping(sub: Any) -> None:
    p = sub.add_parser(
        "ping", help="check the LLM endpoint: reachable, latency, structured outputs",
        description="Send one small structured request to the configured endpoint and report whether "
                    "it is reachable, how long it took, whether the model answered as asked, and "
                    "whether JSON-schema structured outputs work or a fallback (JSON mode, plain "
                    "instructions) is in use. Exits 2 with the reason when it cannot be used.",
        epilog="Example: ragassay ping --base-url http://localhost:8000/v1 --model qwen2.5-7b-instruct")
    add_llm_options(p, stage=False)
    p.set_defaults(handler=run_ping)


def run_ping(args: argparse.Namespace) -> str:
    import asyncio

    from .llm.ping import ping
    info = asyncio.run(ping(llm_config(args)))
    modes = {"json_schema": "supported (json_schema)",
             "json_object": "json_schema rejected; using JSON mode + validation",
             "prompt": "json_schema and JSON mode rejected; using instructions + validation"}
    return "\n".join([f"endpoint:            {info['endpoint']}", f"model:               {info['model']}",
                      f"latency:             {info['latency_ms']} ms",
                      f"structured outputs:  {modes[info['structured_outputs']]}", "status:              ok"])


# --------------------------------------------------------------------------------------- judge

def _judge(sub: Any) -> None:
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
    p.add_argument("--depth", type=int, default=10, help="judge the top K chunks of each query (default 10)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="judgments JSONL (appended; resumes)")
    p.add_argument("--qrels-out", metavar="FILE", help="write graded TREC qrels (with --keep labels included)")
    p.add_argument("--coverage-out", metavar="FILE", help="write per-query coverage JSONL")
    p.add_argument("--keep", metavar="QRELS", help="labels made by people: kept as they are, never judged again")
    p.add_argument("--samples", type=int, default=1, help="ask N times per pair and take the majority "
                   "(ties go to the lower grade; default 1)")
    p.add_argument("--batch", type=int, default=1, help="grade N chunks of a query per call (default 1: "
                   "one call per pair, no position effects)")
    p.add_argument("--max-chunk-chars", type=int, default=6000, help="cut longer chunks to this many characters (default 6000)")
    add_llm_options(p)
    p.set_defaults(handler=run_judge)


def run_judge(args: argparse.Namespace) -> str:
    import asyncio

    from .io import read_chunks, read_qrels, read_run
    from .judge import JudgeOptions, build_llms, judge_run, plan_pairs, read_query_items
    if args.samples < 1 or args.batch < 1 or args.depth < 1:
        from .errors import InputError
        raise InputError("--samples, --batch and --depth must be at least 1")
    queries = read_query_items(args.queries)
    chunks = {c.id: c for c in read_chunks(args.chunks)}
    run = read_run(args.run)
    keep = read_qrels(args.keep) if args.keep else None
    options = JudgeOptions(depth=args.depth, samples=args.samples, batch=args.batch,
                           max_chunk_chars=args.max_chunk_chars, quiet=args.quiet)
    config = llm_config(args)
    llms = build_llms(config, args.model)
    if args.dry_run:
        from .judge import Judge, RelevanceAnswer
        pairs, kept, _, _ = plan_pairs(queries, chunks, run, args.depth, keep.to_dict() if keep else None)
        qmap = {q.id: q for q in queries}
        judge = Judge(llms, options)
        lines = [f"{len(pairs)} pairs to judge ({len(kept)} kept from --keep); {args.samples} sample(s) x "
                 f"{len(llms)} model(s)"]
        for llm in llms:
            plan = llm.dry_run([(judge.relevance_messages(qmap[q], chunks[c]), RelevanceAnswer, options.max_tokens)
                                for q, c in pairs])
            calls = plan["calls"] * args.samples
            cost = "unknown (pass --price-in/--price-out)" if plan["cost_usd"] is None else f"${plan['cost_usd'] * args.samples:.4f}"
            lines.append(f"{llm.config.model}: ~{calls} calls ({plan['cached']} pairs cached), ~{plan['tokens_in'] * args.samples} "
                         f"tokens in, <= {plan['tokens_out'] * args.samples} out, cost {cost}"
                         + (" (batching lowers this)" if args.batch > 1 else ""))
        if args.coverage_out:
            lines.append(f"coverage: {len({q for q, _ in pairs})} more calls")
        return "\n".join(["dry run: nothing was called"] + lines)
    summary = asyncio.run(judge_run(queries, chunks, run, llms, args.output, options=options, keep=keep,
                                    qrels_out=args.qrels_out, coverage_out=args.coverage_out))
    for llm in llms:
        llm.close()
    out = [summary.text(), f"judgments: {args.output}"]
    if args.qrels_out:
        out.append(f"qrels: {args.qrels_out}")
    if args.coverage_out:
        out.append(f"coverage: {args.coverage_out}")
    return "\n".join(out)


# --------------------------------------------------------------------------------------- check

def _check(sub: Any) -> None:
    p = sub.add_parser(
        "check", help="label RAG answers correct / partial / hallucinated / abstained, and diagnose",
        description="Label each answer against its reference (correct, partial, hallucinated, "
                    "abstained) and against its retrieved context (supported, unsupported, "
                    "contradicted). Rules decide what they are sure of without a call; an LLM grades "
                    "the rest. Prints rates with 95%% bootstrap intervals; with --run and --qrels, "
                    "whether wrong answers come from retrieval or generation; with --human, agreement "
                    "with people and prediction-powered rates. Without an endpoint, only the rules run "
                    "and the rest are error records that a rerun with an endpoint fills in.",
        epilog="Example: ragassay check datasets/example/answers.jsonl --chunks datasets/example/chunks.jsonl "
               "--run datasets/example/runs/bm25.txt --qrels datasets/example/qrels.txt -o checks.jsonl")
    p.add_argument("answers", metavar="ANSWERS", help="JSONL: id, question, reference (string or list), "
                   "response, and contexts or context_ids")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="checks JSONL (appended; resumes)")
    p.add_argument("--chunks", metavar="FILE", help="chunks JSONL, to resolve context_ids")
    p.add_argument("--run", metavar="RUN", help="the run behind the answers (with --qrels: diagnosis)")
    p.add_argument("--qrels", metavar="QRELS", help="gold chunks per question (with --run: diagnosis)")
    p.add_argument("-k", type=int, default=10, help="retrieval depth for the diagnosis's recall@k (default 10)")
    p.add_argument("--retrieval-threshold", type=float, default=0.5,
                   help="recall@k at or above this is good retrieval (default 0.5)")
    p.add_argument("--human", metavar="FILE", help="people's labels for some answers (JSONL id, label)")
    p.add_argument("--by", action="append", metavar="FIELD", help="break rates down by an answer field (repeatable)")
    p.add_argument("--samples", type=int, default=1, help="ask N times and take the majority (ties go to the "
                   "more severe label; default 1)")
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
    p.set_defaults(handler=run_check)


def _fmt_rate(r: dict) -> str:
    if r["value"] is None:
        return "n/a"
    return f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def run_check(args: argparse.Namespace) -> str:
    import asyncio

    from .check import CheckOptions, check_answers, read_answers, read_human_labels, retrieval_recall
    from .errors import InputError
    from .io import iter_jsonl, read_chunks, read_qrels, read_run
    from .llm import LLM
    from .llm.errors import LLMError
    from .metrics.labels import breakdown, diagnosis, human_calibration, label_summary
    if bool(args.run) != bool(args.qrels):
        raise InputError("the diagnosis needs both --run and --qrels")
    chunks = {c.id: c for c in read_chunks(args.chunks)} if args.chunks else None
    items = read_answers(args.answers, chunks)
    config = llm_config(args)
    try:
        config.check()
        llm = LLM(config)
    except LLMError as e:
        if e.kind != "config":
            raise
        llm = None
    if args.dry_run:
        from .check import Checker
        from .check_rules import decide
        todo = [it for it in items if decide([it.reference] if isinstance(it.reference, str) else it.reference,
                                             it.response) is None]
        if llm is None:
            return f"dry run: {len(items) - len(todo)} answers decided by rules; {len(todo)} need an LLM (none configured)"
        from .check import AnswerVerdict
        checker = Checker(llm, CheckOptions(), chunks)
        plan = llm.dry_run([(checker.messages(it), AnswerVerdict, 700) for it in todo])
        cost = "unknown (pass --price-in/--price-out)" if plan["cost_usd"] is None else f"${plan['cost_usd'] * args.samples:.4f}"
        return (f"dry run: {len(items) - len(todo)} answers decided by rules; ~{plan['calls'] * args.samples} calls "
                f"({plan['cached']} cached), ~{plan['tokens_in'] * args.samples} tokens in, cost {cost}")
    options = CheckOptions(samples=args.samples, quiet=args.quiet)
    records = asyncio.run(check_answers(items, llm, args.output, options=options, chunks=chunks))
    fields = {obj["id"]: obj for _, obj in iter_jsonl(args.answers)}
    enriched = [{**fields.get(r["id"], {}), **r} for r in records]
    result: dict = {"summary": label_summary(records)}
    if args.by:
        result["breakdown"] = {f: breakdown(enriched, f) for f in args.by}
    if args.run:
        recall = retrieval_recall(read_qrels(args.qrels), read_run(args.run), args.k)
        labels = {r["id"]: r["label"] for r in records if r["status"] == "ok"}
        result["diagnosis"] = diagnosis(labels, recall, args.retrieval_threshold)
    if args.human:
        result["human"] = human_calibration(records, read_human_labels(args.human))
    multi = [r for r in records if len(r.get("samples") or []) > 1]
    if multi:
        result["flip_rate"] = sum(1 for r in multi if len(set(r["samples"])) > 1) / len(multi)
    if llm is not None:
        result["usage"] = llm.usage.summary()
        llm.close()
    if args.format == "json":
        return to_json(_none_for_nan(result))
    return _check_text(result, args)


def _check_text(result: dict, args: argparse.Namespace) -> str:
    s = result["summary"]
    rows = [[lab, s["counts"][lab], _fmt_rate(s["rates"][lab])] for lab in ("correct", "partial", "hallucinated", "abstained")]
    out = [render_table(["label", "count", "rate [95% CI]"], rows)]
    out.append(f"{s['graded']} of {s['answers']} answers graded; {s['errors']} errors (excluded from rates)\n"
               f"correct given attempted: {_fmt_rate(s['correct_given_attempted'])}\n"
               f"truthfulness (+1 correct, +0.5 partial, 0 abstained, -1 hallucinated): {_fmt_rate(s['truthfulness'])}\n"
               "mean response words: " + ", ".join(f"{k} {v:.1f}" for k, v in s["mean_response_words"].items() if v is not None))
    for f, groups in result.get("breakdown", {}).items():
        out.append(render_table([f, "graded", "correct", "hallucinated", "abstained"],
                                [[g, v["graded"], _fmt_rate(v["rates"]["correct"]), _fmt_rate(v["rates"]["hallucinated"]),
                                  _fmt_rate(v["rates"]["abstained"])] for g, v in groups.items()]))
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
    if "usage" in result:
        out.append(result["usage"])
    out.append(f"checks: {args.output}")
    return "\n\n".join(out)


# ------------------------------------------------------------------------------------ generate

def _generate(sub: Any) -> None:
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
    p.add_argument("--per-chunk", type=float, default=1.0, metavar="N",
                   help="questions wanted per usable chunk when --limit is not given (default 1)")
    p.add_argument("--mix", default="easy=0.4,medium=0.4,hard=0.2", help="share of each difficulty (default "
                   "easy=0.4,medium=0.4,hard=0.2)")
    p.add_argument("--limit", type=int, metavar="N", help="number of questions wanted in all")
    p.add_argument("--seed", type=int, default=0, help="seed for chunk selection and grouping (default 0)")
    p.add_argument("--qrels-out", metavar="FILE", help="TREC qrels: each question's gold chunks, grade 3")
    p.add_argument("--rejects", metavar="FILE", help="dropped questions and unfit chunks, with reasons")
    p.add_argument("--export", nargs=2, metavar=("FORMAT", "DIR"), help="also write the set as beir or llamaindex into DIR")
    add_llm_options(p)
    p.set_defaults(handler=run_generate)


def run_generate(args: argparse.Namespace) -> str:
    import asyncio

    from .errors import InputError
    from .generate import GenerateOptions, Generator, export, write_outputs
    from .generate_checks import mix_counts, parse_mix
    from .io import read_chunks
    from .llm import LLM
    try:
        mix = parse_mix(args.mix)
    except ValueError as e:
        raise InputError(str(e)) from None
    if args.export and args.export[0] not in ("beir", "llamaindex"):
        raise InputError(f"--export format must be beir or llamaindex, got {args.export[0]!r}")
    chunks = read_chunks(args.chunks)
    llm = LLM(llm_config(args))
    probe = Generator(llm, chunks, GenerateOptions())
    total = args.limit if args.limit is not None else int(round(args.per_chunk * len(probe.fit)))
    if total < 1:
        raise InputError("nothing to generate: no usable chunks, or --limit below 1")
    options = GenerateOptions(total=total, mix=mix, seed=args.seed, quiet=args.quiet)
    if args.dry_run:
        target = mix_counts(total, mix)
        calls = target.get("easy", 0) * 2 + target.get("medium", 0) * 2 + target.get("hard", 0) * 5
        return (f"dry run: {len(chunks)} chunks, {len(probe.unfit)} unfit; target {target}; about {calls} calls "
                f"if every first try is accepted, up to {int(calls * options.attempts_per_question)} with retries")
    gen = Generator(llm, chunks, options)
    result = asyncio.run(gen.run())
    write_outputs(result, args.output, args.rejects, args.qrels_out)
    out = [result.summary(), llm.usage.summary(), f"questions: {args.output}"]
    if args.export:
        paths = export(result.accepted, chunks, args.export[0], args.export[1])
        out.append(f"exported ({args.export[0]}): " + ", ".join(str(p) for p in paths))
    llm.close()
    return "\n".join(out)


# --------------------------------------------------------------------------------------- remap

def _remap(sub: Any) -> None:
    p = sub.add_parser(
        "remap", help="carry a question set over to re-chunked documents (new qrels)",
        description="Find each question's evidence quotes in NEW_CHUNKS (exact, then fuzzy matching) and "
                    "write qrels for the new chunk ids. Questions whose evidence cannot be placed are "
                    "listed, not dropped silently.",
        epilog="Example: ragassay remap questions.jsonl new_chunks.jsonl -o new.qrels")
    p.add_argument("questions", metavar="QUESTIONS", help="questions.jsonl from generate")
    p.add_argument("new_chunks", metavar="NEW_CHUNKS", help="the re-chunked corpus (JSONL)")
    p.add_argument("-o", "--output", required=True, metavar="QRELS", help="TREC qrels for the new chunk ids")
    p.add_argument("--threshold", type=float, default=90.0, help="fuzzy match score needed, 0-100 (default 90)")
    p.set_defaults(handler=run_remap)


def run_remap(args: argparse.Namespace) -> str:
    from pydantic import ValidationError

    from .errors import InputError
    from .io import _pydantic_message, iter_jsonl, read_chunks
    from .records import Question
    from .remap import remap
    questions = []
    for no, obj in iter_jsonl(args.questions):
        try:
            questions.append(Question.model_validate(obj))
        except ValidationError as e:
            raise InputError(_pydantic_message(e), args.questions, no) from None
    result = remap(questions, read_chunks(args.new_chunks), args.threshold)
    with open(args.output, "w", encoding="utf-8") as f:
        for qid, docs in result.qrels.items():
            for d, g in docs.items():
                f.write(f"{qid} 0 {d} {g}\n")
    how = Counter(result.how.values())
    lines = [f"placed {len(result.placed)} of {len(questions)} questions (" +
             ", ".join(f"{k} {v}" for k, v in sorted(how.items())) + f"); qrels: {args.output}"]
    if result.unplaced:
        lines.append(f"{len(result.unplaced)} questions have evidence that could not be placed:")
        lines += [f"  {qid}: {quotes[0][:90]!r}" for qid, quotes in list(result.unplaced.items())[:20]]
    if result.no_evidence:
        lines.append(f"{len(result.no_evidence)} questions carry no evidence quotes: {', '.join(result.no_evidence[:10])}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- demo

def _demo(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="run the whole pipeline on the bundled example and write a report",
        description="Retrieve with the bundled retrievers, evaluate and compare them against the "
                    "hand-made labels, check the example answers and write report.html. With an LLM "
                    "endpoint configured it also generates questions, judges the retrieved chunks and "
                    "compares the judge with the hand labels; without one it says which stages it skipped.",
        epilog="Example: ragassay demo --out ragassay-demo")
    p.add_argument("--out", default="ragassay-demo", metavar="DIR", help="output directory (default ragassay-demo)")
    p.add_argument("--data", metavar="DIR", help="the example dataset (default: datasets/example)")
    add_llm_options(p, stage=False)
    p.set_defaults(handler=run_demo_cmd)


def run_demo_cmd(args: argparse.Namespace) -> str:
    from .demo import run_demo
    done = run_demo(args.out, args.data, llm_config(args), log=lambda m: print(m, flush=True))
    lines = []
    if done["skipped"]:
        lines.append("skipped (no LLM endpoint configured): " + ", ".join(done["skipped"]))
        lines.append("to run them too: OPENAI_API_KEY=sk-... ragassay demo --model gpt-4o-mini   "
                     "(or --base-url http://localhost:8000/v1 --model NAME for a local server)")
    lines.append(f"report: {done['report']}  (open it in a browser)")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- report

def _report(sub: Any) -> None:
    p = sub.add_parser(
        "report", help="one self-contained HTML (or Markdown) report from ragassay's outputs",
        description="Build a report from result files (the JSON of evaluate / compare / check / agree "
                    "written with --format json, judge's judgments and coverage JSONL) and, with --qrels "
                    "and --run, precision/recall curves, per-query NDCG and the worst queries. Plots need "
                    "matplotlib (pip install 'ragassay[report]').",
        epilog="Example: ragassay report --qrels datasets/example/qrels.txt --run datasets/example/runs/bm25.txt "
               "--run datasets/example/runs/tfidf.txt -o report.html")
    p.add_argument("files", nargs="*", metavar="RESULT", help="result files (JSON or JSONL), detected from content")
    p.add_argument("--qrels", metavar="QRELS", help="qrels for curves and worst queries")
    p.add_argument("--run", action="append", default=[], metavar="RUN", help="a run to plot (repeat for several)")
    p.add_argument("--chunks", metavar="FILE", help="chunks JSONL, to show the worst queries' chunk texts")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the report")
    p.add_argument("--format", choices=("html", "markdown"), default="html", help="html (default) or markdown for pull requests")
    p.add_argument("--title", default="ragassay report", help="report title")
    p.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> str:
    from .errors import InputError
    from .report import load_inputs, write_report
    if bool(args.qrels) != bool(args.run) and not args.files:
        raise InputError("--qrels and --run go together (or give result files)")
    inputs = load_inputs(args.files, qrels=args.qrels, runs=args.run, chunks=args.chunks)
    path = write_report(inputs, args.output, args.format, args.title)
    return f"report: {path}"


# ------------------------------------------------------------------------------ track, history

def _track(sub: Any) -> None:
    p = sub.add_parser(
        "track", help="append a result to the history database",
        description="Record a result (the JSON of evaluate, compare or check) with its metrics, "
                    "settings, time and git commit in a SQLite history, to follow quality over time.",
        epilog="Example: ragassay evaluate qrels.txt run.txt --format json > result.json && ragassay track result.json --label nightly")
    p.add_argument("result", metavar="RESULT.json", help="JSON written by evaluate, compare or check with --format json")
    p.add_argument("--db", default=".ragassay/history.sqlite", metavar="FILE", help="history database (default .ragassay/history.sqlite)")
    p.add_argument("--label", help="a name for this result (e.g. the branch or the config)")
    p.add_argument("--run", help="for compare results: which run's metrics to track (default: the last)")
    p.set_defaults(handler=run_track)


def run_track(args: argparse.Namespace) -> str:
    from .tracking import History, flatten_result, git_commit, load_result
    data = load_result(args.result)
    kind, metrics = flatten_result(data, args.run)
    h = History(args.db)
    rid = h.add(kind, metrics, args.label, str(args.result), data.get("settings"), git_commit())
    h.close()
    return f"tracked result #{rid} ({kind}, {len(metrics)} metrics) in {args.db}"


def _history(sub: Any) -> None:
    p = sub.add_parser(
        "history", help="the trend of a metric over tracked results",
        description="Print tracked results; with --metric, its value over time with the change against "
                    "the previous result and against the best so far.",
        epilog="Example: ragassay history --metric ndcg@10")
    p.add_argument("--db", default=".ragassay/history.sqlite", metavar="FILE", help="history database (default .ragassay/history.sqlite)")
    p.add_argument("--metric", help="metric to follow (default: list the results)")
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_history)


def run_history(args: argparse.Namespace) -> str:
    import datetime

    from .errors import InputError
    from .tracking import History
    if not Path(args.db).exists():
        raise InputError("no history yet: record results with 'ragassay track RESULT.json'", args.db)
    h = History(args.db)
    def when(ts):
        return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")
    if args.metric:
        rows = h.trend(args.metric)
        if args.format == "json":
            return to_json(rows)
        if not rows:
            return f"no tracked result has {args.metric}"
        return render_table(["#", "time", "label", "commit", args.metric, "vs previous", "vs best"],
                            [[r["id"], when(r["created"]), r["label"] or "", r["commit"] or "", r["value"],
                              "" if r["delta_previous"] is None else f"{r['delta_previous']:+.4f}",
                              "" if r["delta_best"] is None else f"{r['delta_best']:+.4f}"] for r in rows])
    rows = h.rows()
    if args.format == "json":
        return to_json(rows)
    return render_table(["#", "time", "kind", "label", "commit", "metrics"],
                        [[r["id"], when(r["created"]), r["kind"], r["label"] or "", r["commit"] or "",
                          ", ".join(sorted(r["metrics"])[:6]) + (" ..." if len(r["metrics"]) > 6 else "")] for r in rows])


# ---------------------------------------------------------------------------------------- gate

def _gate(sub: Any) -> None:
    p = sub.add_parser(
        "gate", help="fail a build when a metric crosses a threshold",
        description="Check a result (the JSON of evaluate, compare or check) against thresholds. Exits 1 "
                    "and names every failed threshold; exits 0 when all hold. A metric missing from the "
                    "result fails.",
        epilog="Example: ragassay gate result.json --min ndcg@10=0.6 --min recall@100=0.8 --max hallucination_rate=0.1")
    p.add_argument("result", metavar="RESULT.json", help="JSON written by evaluate, compare or check with --format json")
    p.add_argument("--min", action="append", metavar="METRIC=VALUE", help="the metric must be at least VALUE")
    p.add_argument("--max", action="append", metavar="METRIC=VALUE", help="the metric must be at most VALUE")
    p.add_argument("--run", help="for compare results: which run to gate (default: the last)")
    p.set_defaults(handler=run_gate)


class GateFailed(Exception):
    pass


def run_gate(args: argparse.Namespace) -> str:
    from .errors import InputError
    from .tracking import flatten_result, gate, load_result, parse_thresholds
    mins, maxs = parse_thresholds(args.min, "--min"), parse_thresholds(args.max, "--max")
    if not mins and not maxs:
        raise InputError("give at least one threshold: --min METRIC=VALUE or --max METRIC=VALUE")
    kind, values = flatten_result(load_result(args.result), args.run)
    failures = gate(values, mins, maxs)
    if failures:
        print("gate failed:\n" + "\n".join(f"  {f}" for f in failures), file=sys.stderr)
        raise SystemExit(1)
    return f"gate passed: {len(mins) + len(maxs)} threshold(s) hold ({kind} result)"
