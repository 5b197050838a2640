"""demo, report, track, history, gate: the product around the stages."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..product.formatting import render_table
from .options import add_format_option, add_llm_options, llm_config
from .paths import folder, reads, text, writes
from .render import render
from .values import nonneg_int


# ---------------------------------------------------------------------------------------- demo

def demo(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="run the whole pipeline on the bundled example and write a report",
        description="Retrieve with the bundled retrievers, evaluate and compare them against the "
                    "hand-made labels, check the example answers and write report.html. With an LLM "
                    "endpoint configured it also generates questions, judges the retrieved chunks and "
                    "compares the judge with the hand labels; without one it says which stages it skipped.",
        epilog="Example: ragassay demo --out ragassay-demo")
    folder(p.add_argument("-o", "--output", "--out", dest="out", default=None, metavar="DIR",
                   help="output directory (default ragassay-demo)"))
    folder(p.add_argument("--data", metavar="DIR", help="an example-shaped dataset (default: the one bundled with ragassay)"))
    folder(p.add_argument("--copy", metavar="DIR", help="only write the bundled example's files to DIR, to look at and edit"))
    add_llm_options(p, dry_run=False)  # the stages' flags: a local server that answers one call at a time takes --concurrency 1
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_demo_cmd)


def run_demo_cmd(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.demo import demo
    if args.copy and (args.out is not None or args.data is not None):
        raise UsageError("--copy only writes the bundled example's files; --out and --data are for a demo run: "
                         "give one or the other")
    done = demo(args.out, args.data, args.copy, llm_config(args), log=_demo_log(args))
    return render(args, done.to_dict, lambda: _demo_text(done, args), done.exit_code)


def _demo_log(args: argparse.Namespace):
    """Where the step lines go: stdout; stderr when stdout is the JSON alone; nowhere with --quiet too."""
    as_json = args.format == "json"
    if as_json and getattr(args, "quiet", False):
        return lambda m: None
    return lambda m: print(m, flush=True, file=sys.stderr if as_json else sys.stdout)


def _demo_text(done: Any, args: argparse.Namespace) -> str:
    if done.copied is not None:
        return f"wrote {len(done.copied)} files of the bundled example to {args.copy}: " + ", ".join(
            str(Path(f).relative_to(args.copy)) for f in done.copied)
    lines = []
    if done.skipped:
        lines.append("skipped (no LLM endpoint configured): " + ", ".join(done.skipped))
        lines.append("to run them too: OPENAI_API_KEY=sk-... ragassay demo --model gpt-4o-mini   "
                     "(or --base-url http://localhost:8000/v1 --model NAME for a local server)")
    if done.report:
        lines.append(f"report: {done.report}  (open it in a browser)")
    if done.failed:  # last, where a user (and a CI log) looks
        shows = "the report shows what succeeded" if done.report else "no report was written"
        lines.append(f"demo finished with failures in {len(done.failed)} stage(s); {shows}:")
        lines += [f"  {f}" for f in done.failed]
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- report

def report(sub: Any) -> None:
    p = sub.add_parser(
        "report", help="one self-contained HTML (or Markdown) report to explore, from ragassay's outputs",
        description="Build a report from ragassay's outputs, recognised by content: result JSON of evaluate / "
                    "compare / check / agree / generate (written with --format json), label's OUTPUT.calibration.json "
                    "(people against the model) and JSON Lines records of "
                    "judge (judgments, coverage), check (verdicts) and generate (questions, rejects). With "
                    "--qrels and --run it adds precision/recall curves, every query's metrics, per-query "
                    "difference and forest plots. In the HTML, every query in a table or plot opens a page with "
                    "its question, gold chunks, each run's top chunks with people's and the judge's grades, "
                    "coverage nuggets, the reference and the system's answer with its label. One file, no network.",
        epilog="Example: ragassay report --qrels datasets/example/qrels.txt --run datasets/example/runs/bm25.txt "
               "--run datasets/example/runs/tfidf.txt --queries datasets/example/queries.jsonl "
               "--chunks datasets/example/chunks.jsonl -o report.html")
    reads(p.add_argument("files", nargs="*", metavar="RESULT", help="result files (JSON or JSONL), detected from content"))
    reads(p.add_argument("--qrels", metavar="QRELS", help="qrels (people's grades): curves, per-query metrics, gold chunks"))
    reads(p.add_argument("--run", action="append", default=[], metavar="RUN", help="a run to show (repeat for several)"))
    reads(p.add_argument("--chunks", metavar="FILE", help="chunks JSONL: chunk texts on each query's page"))
    reads(p.add_argument("--queries", metavar="FILE", help="queries (JSONL or TSV): the question on each query's page"))
    reads(p.add_argument("--answers", metavar="FILE", help="the answers that were checked: reference and system answer"))
    reads(p.add_argument("--human", metavar="FILE", help="people's answer labels (JSONL: id, label)"))
    writes(p.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the report"))
    p.add_argument("--format", choices=("html", "markdown", "json"), default=None,
                   help="the report's format: html, or markdown for a pull-request comment (default: from the "
                        "output's suffix, .md is markdown, else html); json writes the report by its suffix and "
                        "prints a JSON summary")
    text(p.add_argument("--title", default="ragassay report", help="report title"))
    p.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.report import make_report
    if bool(args.qrels) != bool(args.run) and not args.files:
        raise UsageError("--qrels and --run go together (or give result files)")
    written = make_report(args.files, args.output, qrels=args.qrels, runs=args.run, chunks=args.chunks,
                          queries=args.queries, answers=args.answers, human=args.human, fmt=args.format,
                          title=args.title)
    return render(args, _warned(written).to_dict, lambda: f"report: {written.path}")


def _warned(written: Any) -> Any:
    """Say a report's partial joins on stderr (the report shows them too), and give it back."""
    for warning in written.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return written


# --------------------------------------------------------------------------------------- merge

def merge(sub: Any) -> None:
    p = sub.add_parser(
        "merge", help="combine the outputs of shards (--shard i/n) into one file",
        description="Combine JSONL outputs of one stage run in shards on several machines (judgments, "
                    "coverage, checks): one record per key; an ok record replaces an error record for the "
                    "same key; two different ok records for one key are reported as conflicts (exit 3) and "
                    "the first file's is kept.",
        epilog="Example: ragassay merge judged.1.jsonl judged.2.jsonl -o judgments.jsonl")
    reads(p.add_argument("files", nargs="+", metavar="FILE", help="outputs of the shards"))
    writes(p.add_argument("-o", "--output", required=True, metavar="FILE", help="the merged output"))
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_merge)


def run_merge(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.merge import write_merged
    merged = write_merged(args.files, args.output)
    return render(args, lambda: _merge_json(merged, args), lambda: _merge_text(merged, args), merged.exit_code)


def _merge_json(m: Any, args: argparse.Namespace) -> dict:
    from ..data.result_models import MergeResult
    return MergeResult(files=m.files, records=len(m.records), duplicates=m.duplicates, replaced_errors=m.replaced_errors,
                       conflicts=m.conflicts, output=str(args.output)).to_dict()


def _merge_text(m: Any, args: argparse.Namespace) -> str:
    lines = [f"merged {m.files} files: {len(m.records)} records in {args.output} ({m.duplicates} duplicates dropped, "
             f"{m.replaced_errors} error records replaced by ok ones)"]
    if m.conflicts:
        n = len(m.conflicts)
        lines.append(f"{n} key{' has' if n == 1 else 's have'} different records in different files (the first "
                     f"file's is kept): {', '.join(m.conflicts[:5])}" + (" ..." if n > 5 else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ track, history

def track(sub: Any) -> None:
    p = sub.add_parser(
        "track", help="append a result to the history database",
        description="Record a result (the JSON of evaluate, compare or check) with its metrics, "
                    "settings, time and git commit in a SQLite history, to follow quality over time.",
        epilog="Example: ragassay evaluate datasets/example/qrels.txt datasets/example/runs/bm25.txt --format json "
               "> result.json && ragassay track result.json --label nightly")
    reads(p.add_argument("result", metavar="RESULT.json", help="JSON written by evaluate, compare or check with --format json"))
    writes(p.add_argument("--db", default=".ragassay/history.sqlite", metavar="FILE", help="history database (default .ragassay/history.sqlite)"))
    text(p.add_argument("--label", help="a name for this result (e.g. the branch or the config)"))
    text(p.add_argument("--run", help="for compare results: which run's metrics to track (default: the last)"))
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_track)


def run_track(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.tracking import track
    tracked = track(args.result, args.db, args.label, args.run)
    return render(args, tracked.to_dict, lambda: _track_text(tracked, args.db))


def _track_text(tracked: Any, db: str) -> str:
    of = f" of {tracked.run}" if tracked.run else ""
    q = tracked.qrels or {}
    on = (f" on qrels {q.get('file')} (labels by {(q.get('origin') or {}).get('describe', 'unknown')}, digest "
          f"{str(q.get('digest'))[:8]})") if q else ""
    return f"tracked result #{tracked.id} ({tracked.result_kind}{of}{on}, {len(tracked.metrics)} metrics) in {db}"


def history(sub: Any) -> None:
    p = sub.add_parser(
        "history", help="the trend of a metric over tracked results",
        description="Print tracked results; with --metric, its value over time with the change against "
                    "the previous result and against the best so far.",
        epilog="Example: ragassay history --metric ndcg@10")
    reads(p.add_argument("--db", default=".ragassay/history.sqlite", metavar="FILE", help="history database (default .ragassay/history.sqlite)"))
    text(p.add_argument("-m", "--metric", help="metric to follow (default: list the results)"))
    text(p.add_argument("--run", help="only the results of the run of this name (a trend is always drawn within one "
                                      "run, on one qrels, with one set of settings)"))
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_history)


def run_history(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.tracking import read_history
    view = read_history(args.db, args.metric, args.run)
    return render(args, view.to_dict, lambda: _history_text(view))


def _history_text(view: Any) -> str:
    import datetime

    def when(ts):
        return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")
    def clip(label):
        return label if label is None or len(label) <= 40 else label[:39] + "…"

    def qrels(r):
        q = r.qrels or {}
        return f"{(q.get('origin') or {}).get('describe', 'unknown')} {str(q.get('digest'))[:8]}" if q else ""
    rows, metric = view.results, view.metric
    if not rows and view.run:
        return f"no tracked result of the run {view.run!r}" + (f" has {metric}" if metric else "")
    if metric is not None:
        if not rows:
            return f"no tracked result has {metric}"
        table = render_table(["#", "time", "run", "qrels (labels by, digest)", "label", "commit", metric, "vs previous",
                              "vs best"],
                             [[r.id, when(r.created), r.run or "", qrels(r), clip(r.label) or "", r.commit or "", r.value,
                               "" if r.delta_previous is None else f"{r.delta_previous:+.4f}",
                               "" if r.delta_best is None else f"{r.delta_best:+.4f}"] for r in rows])
        series = {r.series for r in rows if r.series}
        note = ("changes are against the previous result of the same run on the same qrels with the same settings; "
                "a blank change starts a series")
        return f"{table}\n\n{note}" + (f" ({len(series)} series)" if len(series) > 1 else "")
    return render_table(["#", "time", "kind", "run", "qrels (labels by, digest)", "label", "commit", "metrics"],
                        [[r.id, when(r.created), r.kind, r.run or "", qrels(r), clip(r.label) or "", r.commit or "",
                          ", ".join(sorted(r.metrics)[:6]) + (" ..." if len(r.metrics) > 6 else "")] for r in rows])


# ---------------------------------------------------------------------------------------- gate

def gate(sub: Any) -> None:
    p = sub.add_parser(
        "gate", help="fail a build when a metric crosses a threshold",
        description="Check a result (the JSON of evaluate, compare or check) against thresholds. Exits 1 "
                    "and names every failed threshold; exits 0 when all hold. A metric missing from the "
                    "result fails.",
        epilog="Example: ragassay gate result.json --min ndcg@10=0.6 --min recall@100=0.8 (on a check result: "
               "--max hallucination_rate=0.1)")
    reads(p.add_argument("result", metavar="RESULT.json", help="JSON written by evaluate, compare or check with --format json"))
    text(p.add_argument("--min", action="append", metavar="METRIC=VALUE", help="the metric must be at least VALUE"))
    text(p.add_argument("--max", action="append", metavar="METRIC=VALUE", help="the metric must be at most VALUE"))
    text(p.add_argument("--run", help="for compare results: which run to gate (default: the last)"))
    p.add_argument("--allow-errors", type=nonneg_int, default=0, metavar="N",
                   help="pass a stage result (judge, check, generate) with up to N error items (default 0)")
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=run_gate)


def run_gate(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.tracking import gate_result, parse_thresholds
    mins, maxs = parse_thresholds(args.min, "--min"), parse_thresholds(args.max, "--max")
    if not mins and not maxs:
        raise UsageError("give at least one threshold: --min METRIC=VALUE or --max METRIC=VALUE")
    if args.allow_errors < 0:
        raise UsageError("--allow-errors must be 0 or more")
    verdict = gate_result(args.result, mins, maxs, args.run, args.allow_errors)
    return render(args, verdict.to_dict, lambda: _gate_text(verdict, len(mins) + len(maxs)), verdict.exit_code)


def _gate_text(verdict: Any, thresholds: int) -> str:
    if verdict.failures:  # a CI log shows stderr; stdout stays empty
        print(f"gate failed ({verdict.result_kind} result{_of_run_on_qrels(verdict)}):\n"
              + "\n".join(f"  {f}" for f in verdict.failures), file=sys.stderr)
        return ""
    return f"gate passed: {thresholds} threshold(s) hold ({verdict.result_kind} result{_of_run_on_qrels(verdict)})"


def _of_run_on_qrels(verdict: Any) -> str:
    q = verdict.qrels or {}
    return ((f" of {verdict.run}" if verdict.run else "")
            + (f" on qrels labelled by {(q.get('origin') or {}).get('describe', 'unknown')}" if q else ""))
