"""demo, report, merge, track, history, gate: the product around the stages (their handlers; the
arguments are declared in declare_product.py, and this module is imported when one of them runs)."""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..product.formatting import render_table
from .render import render

# ---------------------------------------------------------------------------------------- demo


def run_demo_cmd(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.demo import demo

    if args.copy and (args.out is not None or args.data is not None):
        raise UsageError(
            "--copy only writes the bundled example's files; --out and --data are for a demo run: give one or the other"
        )
    done = demo(args.out, args.data, args.copy, vars(args), log=_demo_log(args))
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
            str(Path(f).relative_to(args.copy)) for f in done.copied
        )
    lines = []
    if done.skipped:
        lines.append("skipped (no LLM configured): " + ", ".join(done.skipped))
        lines.append(
            "to run them too: OPENAI_API_KEY=sk-... ragassay demo --model gpt-4o-mini   "
            "(or --base-url http://localhost:8000/v1 --model NAME for a local server)"
        )
    if done.report:
        lines.append(f"report: {done.report}  (open it in a browser)")
    if done.failed:  # last, where a user (and a CI log) looks
        shows = "the report shows what succeeded" if done.report else "no report was written"
        lines.append(f"demo finished with failures in {len(done.failed)} stage(s); {shows}:")
        lines += [f"  {f}" for f in done.failed]
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- report


def run_report(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.report import make_report

    if bool(args.qrels) != bool(args.run) and not args.files:
        raise UsageError("--qrels and --run go together (or give result files)")
    written = make_report(
        args.files,
        args.output,
        qrels=args.qrels,
        runs=args.run,
        chunks=args.chunks,
        queries=args.queries,
        answers=args.answers,
        human=args.human,
        fmt=args.format,
        title=args.title,
        people_qrels=args.people_qrels,
        relevance_level=args.relevance_level,
    )
    return render(args, _warned(written).to_dict, lambda: f"report: {written.path}")


def _warned(written: Any) -> Any:
    """Say a report's partial joins on stderr (the report shows them too), and give it back."""
    for warning in written.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return written


# --------------------------------------------------------------------------------------- merge


def run_merge(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.merge import write_merged

    merged = write_merged(args.files, args.output)
    return render(args, lambda: _merge_json(merged, args), lambda: _merge_text(merged, args), merged.exit_code)


def _merge_json(m: Any, args: argparse.Namespace) -> dict:
    from ..data.result_models import MergeResult

    return MergeResult(
        files=m.files,
        records=len(m.records),
        duplicates=m.duplicates,
        replaced_errors=m.replaced_errors,
        conflicts=m.conflicts,
        output=str(args.output),
    ).to_dict()


def _merge_text(m: Any, args: argparse.Namespace) -> str:
    lines = [
        f"merged {m.files} files: {len(m.records)} records in {args.output} ({m.duplicates} duplicates dropped, "
        f"{m.replaced_errors} error records replaced by ok ones)"
    ]
    if m.conflicts:
        n = len(m.conflicts)
        lines.append(
            f"{n} key{' has' if n == 1 else 's have'} different records in different files (the first "
            f"file's is kept): {', '.join(m.conflicts[:5])}" + (" ..." if n > 5 else "")
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------ track, history


def run_track(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.tracking import track

    tracked = track(args.result, args.db, args.label, args.run)
    return render(args, tracked.to_dict, lambda: _track_text(tracked, args.db))


def _track_text(tracked: Any, db: str) -> str:
    of = f" of {tracked.run}" if tracked.run else ""
    q = tracked.qrels or {}
    on = (
        (
            f" on qrels {q.get('file')} (labels by {(q.get('origin') or {}).get('describe', 'unknown')}, digest "
            f"{str(q.get('digest'))[:8]})"
        )
        if q
        else ""
    )
    return f"tracked result #{tracked.id} ({tracked.result_kind}{of}{on}, {len(tracked.metrics)} metrics) in {db}"


def run_history(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.tracking import read_history

    view = read_history(args.db, args.metric, args.run)
    return render(args, view.to_dict, lambda: _history_text(view))


def _history_text(view: Any) -> str:
    rows, metric = view.results, view.metric
    if not rows and view.run:
        return f"no tracked result of the run {view.run!r}" + (f" has {metric}" if metric else "")
    if metric is not None:
        return _metric_history(rows, metric) if rows else f"no tracked result has {metric}"
    return render_table(
        ["#", "time", "kind", "run", "qrels (labels by, digest)", "label", "commit", "metrics"],
        [
            [
                r.id,
                _when(r.created),
                r.kind,
                r.run or "",
                _qrels_said(r),
                _clip(r.label) or "",
                r.commit or "",
                ", ".join(sorted(r.metrics)[:6]) + (" ..." if len(r.metrics) > 6 else ""),
            ]
            for r in rows
        ],
    )


def _metric_history(rows: list[Any], metric: str) -> str:
    """One measure over the tracked results, each against the previous and the best of its series."""
    table = render_table(
        ["#", "time", "run", "qrels (labels by, digest)", "label", "commit", metric, "vs previous", "vs best"],
        [
            [
                r.id,
                _when(r.created),
                r.run or "",
                _qrels_said(r),
                _clip(r.label) or "",
                r.commit or "",
                r.value,
                "" if r.delta_previous is None else f"{r.delta_previous:+.4f}",
                "" if r.delta_best is None else f"{r.delta_best:+.4f}",
            ]
            for r in rows
        ],
    )
    series = list(dict.fromkeys(r.series for r in rows if r.series))
    note = (
        "changes are against the previous result of the same run on the same qrels with the same settings; "
        "a blank change starts a series"
    )
    return f"{table}\n\n{note}" + (
        f" ({len(series)} series:\n" + "\n".join(f"  {s}" for s in series) + ")" if len(series) > 1 else ""
    )


def _when(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _clip(label: str | None) -> str | None:
    return label if label is None or len(label) <= 40 else label[:39] + "…"


def _qrels_said(r: Any) -> str:
    """Whose labels a result was scored on, and their digest."""
    q = r.qrels or {}
    return f"{(q.get('origin') or {}).get('describe', 'unknown')} {str(q.get('digest'))[:8]}" if q else ""


# ---------------------------------------------------------------------------------------- gate


def run_gate(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..product.tracking import gate_result, parse_thresholds

    mins, maxs = parse_thresholds(args.min, "--min"), parse_thresholds(args.max, "--max")
    if not mins and not maxs:
        raise UsageError("give at least one threshold: --min METRIC=VALUE or --max METRIC=VALUE")
    if args.allow_errors < 0:
        raise UsageError("--allow-errors must be 0 or more")
    verdict = gate_result(args.result, mins, maxs, args.run, args.allow_errors)
    gated = [n.split("/", 1)[-1] for n in [*mins, *maxs]]
    return render(args, verdict.to_dict, lambda: _gate_text(verdict, len(mins) + len(maxs), gated), verdict.exit_code)


def _gate_text(verdict: Any, thresholds: int, gated: list[str]) -> str:
    if verdict.failures:  # a CI log shows stderr; stdout stays empty
        print(
            f"gate failed ({verdict.result_kind} result{_of_run_on_qrels(verdict, gated)}):\n"
            + "\n".join(f"  {f}" for f in verdict.failures),
            file=sys.stderr,
        )
        return ""
    return (
        f"gate passed: {thresholds} threshold(s) hold ({verdict.result_kind} result{_of_run_on_qrels(verdict, gated)})"
    )


def _of_run_on_qrels(verdict: Any, gated: list[str]) -> str:
    """Which run, on whose labels, and what the gated measures rest on (relevant grade, pool)."""
    from ..metrics.rests_on import rests_on_brief

    q = verdict.qrels or {}
    rests = verdict.rests_on or {}
    try:  # a compare result says its relevant grade; an evaluate result its pool too
        brief = (
            rests_on_brief(rests if "pool" in rests else {"relevance": rests.get("relevance")}, only=gated)
            if rests
            else ""
        )
    except ValueError:  # a threshold on a name that is no measure (a check result's rate): nothing to say
        brief = ""
    return (
        (f" of {verdict.run}" if verdict.run else "")
        + (f" on qrels labelled by {(q.get('origin') or {}).get('describe', 'unknown')}" if q else "")
        + (f"; {brief}" if brief else "")
    )
