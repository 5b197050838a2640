"""generate, remap, judge, check, ping: the commands that call an LLM (their handlers; the arguments
are declared in declare_llm_stages.py, and this module is imported when one of them runs)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import RagassayError
from ..product.formatting import render_table
from .options import llm_config
from .render import render, render_stage
from .stage_values import generate_values, stage_arguments

# ---------------------------------------------------------------------------------------- ping


def run_ping(args: argparse.Namespace) -> str | tuple[str, int]:
    import asyncio

    from ..llm.ping import ping_report

    report = asyncio.run(ping_report(llm_config(args)))
    return render(args, lambda: _ping_json(report), lambda: _ping_text(report), PING_EXIT[report["status"]])


PING_EXIT = {"ok": 0, "error": 1}


def _ping_json(report: dict) -> dict:
    if report["status"] == "error":  # a script reads the JSON on stdout, a person this line on stderr
        print(f"ragassay ping: error: {report['error']}", file=sys.stderr)
    return report


def _ping_text(report: dict) -> str:
    if report["status"] == "error":
        raise RagassayError(report["error"])
    modes = {
        "json_schema": "supported (json_schema)",
        "json_object_schema": "json_schema refused; using JSON mode with the schema (the server's grammar) "
        "+ validation",
        "json_object": "json_schema refused, and JSON mode with a schema; using JSON mode + validation",
        "prompt": "json_schema and JSON mode refused; using instructions + validation",
    }
    lines = [
        f"endpoint:            {report['endpoint']}",
        f"model:               {report['model']}",
        f"latency:             {report['latency_ms']} ms",
        f"structured outputs:  {modes[report['structured_outputs']]}",
    ]
    if report.get("structured_outputs_reason") and report["structured_outputs"] != "json_schema":
        lines.append(f"why:                 {report['structured_outputs_reason']}")
    if report.get("context_tokens") or report.get("slots"):
        said = [
            f"context {report['context_tokens']:,} tokens" if report.get("context_tokens") else "",
            f"{report['slots']} calls at once" if report.get("slots") else "",
        ]
        lines.append(f"server:              {', '.join(x for x in said if x)} (its {report['server_said_by']})")
    if report.get("prompt_tokens_per_second"):
        lines.append(
            f"speed:               {report['prompt_tokens_per_second']:,.0f} prompt and "
            f"{report['answer_tokens_per_second']:,.1f} answer tokens a second, "
            f"{report['seconds_per_call']:.1f} s "
            "a call besides, one call at a time (kept in the answer cache: dry runs estimate time from it)"
        )
    if report.get("speed_note"):
        lines.append(f"speed:               {report['speed_note']}")
    return "\n".join(lines + ["status:              ok"])


# --------------------------------------------------------------------------------------- judge


def run_judge(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..api import judge
    from ..stages.judge import JudgeOptions

    return render_stage(judge(**stage_arguments(args, judge, JudgeOptions, jury=True)), args, _judge_text)


def _judge_text(result: Any, args: argparse.Namespace) -> str:
    out = [result.text(), f"judgments: {args.output}"] + ([result.batch_note] if result.batch_note else [])
    if args.qrels_out:
        out.append(f"qrels: {args.qrels_out}")
    if args.coverage_out:
        out.append(f"coverage: {args.coverage_out}")
    return "\n".join(out)


# --------------------------------------------------------------------------------------- check


def _fmt_rate(r: dict, unit: str = "answers", total: int | None = None) -> str:
    """A rate with the items it rests on and its interval, or why it has none."""
    from ..metrics.rates import rate_text

    return rate_text(r, unit, total)


def run_check(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..api import check
    from ..stages.check import CheckOptions

    return render_stage(check(**stage_arguments(args, check, CheckOptions), announce=True), args, _check_text)


def _check_text(done: Any, args: argparse.Namespace) -> str:
    text = _summary_text(done.to_dict(), args) + (f"\n{done.batch_note}" if done.batch_note else "")
    waiting = (done.summary.get("summary") or {}).get("waiting") or 0
    if waiting and waiting == done.run.errors and not done.run.stopped:  # none failed: they wait for a verdict
        return text + (
            f"\n{waiting} of {done.run.ok + done.run.errors} answers wait for an LLM verdict (no endpoint "
            "configured); rerun the same command with one to decide them"
        )
    source = args.answers if isinstance(getattr(args, "answers", None), str) and args.answers != "-" else None
    return text + ("\n" + done.failure_text(source) if done.run.errors or done.run.stopped else "")


def _summary_text(result: dict, args: argparse.Namespace) -> str:
    s = result["summary"]
    out = [_rates_text(s)]
    for f, groups in result.get("breakdown", {}).items():
        out.append(
            render_table(
                [f, "graded", *LABELS],
                [[g, v["graded"], *(_fmt_rate(v["rates"][lab]) for lab in LABELS)] for g, v in groups.items()],
            )
        )
    if "diagnosis" in result:
        out.append(_diagnosis_text(result["diagnosis"], args.depth))
    if "human" in result:
        out.append(_human_text(result["human"]))
    if result.get("behaviour"):
        from ..stages.check_behaviour import behaviour_lines

        out.append("\n".join(behaviour_lines(result["behaviour"])))
    if "flip_rate" in result:
        out.append(f"samples disagreed on {result['flip_rate']:.1%} of LLM-graded answers")
    if result.get("truncated"):
        out.append(
            f"{result['truncated']} answers were graded with some passages cut or dropped to the context "
            "budget (the prompt marks each cut and the record's 'truncated' says what)"
        )
    if "usage_text" in result:
        out.append(result["usage_text"])
    out.append(f"checks: {args.output}")
    return "\n\n".join(out)


LABELS = ("correct", "partial", "hallucinated", "abstained")


def _rates_text(s: dict) -> str:
    """The table of labels with their rates, and the counts and rates that rest on them."""
    rows = [[lab, s["counts"][lab], _fmt_rate(s["rates"][lab])] for lab in LABELS]
    words = ", ".join(f"{k} {v:.1f}" for k, v in s["mean_response_words"].items() if v is not None)
    waiting = s.get("waiting") or 0
    return (
        render_table(["label", "count", "rate [95% CI]"], rows)
        + "\n\n"
        + f"{s['graded']} of {s['answers']} answers graded"
        + (f"; {waiting} waiting for an LLM verdict" if waiting else "")
        + f"; {s['errors']} error{'s' if s['errors'] != 1 else ''} (excluded from rates)\n"
        f"correct given attempted: {_fmt_rate(s['correct_given_attempted'], 'attempted answers')}\n"
        f"truthfulness (+1 correct, +0.5 partial, 0 abstained, -1 hallucinated): "
        f"{_fmt_rate(s['truthfulness'], total=s['answers'])}" + (f"\nmean response words: {words}" if words else "")
    )


def _diagnosis_text(d: dict, depth: int) -> str:
    """Good or bad retrieval against a good or bad answer, with how the answers met the run and qrels."""
    c = d["cells"]

    def cell(k):
        return f"{c[k]['count']} ({', '.join(c[k]['examples'])})" if c[k]["count"] else "0"

    met = "".join(
        f"\n{j['what']}: {j['left']['matched']} of {j['left']['ids']} in {j['left']['role']} are in "
        f"{j['right']['role']} ({j['right']['ids']})"
        for j in d.get("joins", [])
    )
    not_done = (
        f"\n{d['not_diagnosed']} graded answers not diagnosed (their question is not in the run or the qrels)"
        if d.get("not_diagnosed")
        else ""
    )
    if not d.get("diagnosed"):  # nothing to say of none: only why
        return f"diagnosis: {d['advice']}{met}{not_done}"
    return (
        f"diagnosis of {d['diagnosed']} answers: recall@{depth} >= {d['threshold']} is good "
        f"retrieval; a good answer is a correct one{met}{not_done}\n"
        + render_table(
            ["", "good answer", "bad answer"],
            [
                ["good retrieval", cell("good_retrieval_good_answer"), cell("good_retrieval_bad_answer")],
                ["bad retrieval", cell("bad_retrieval_good_answer"), cell("bad_retrieval_bad_answer")],
            ],
        )
        + f"\n=> {d['advice']}"
    )


def _human_text(h: dict) -> str:
    """The agreement with people's labels, and the rates each side gives, or why none is measured."""
    kappa = (
        f"{h['kappa']:.3f}"
        if h["kappa"] is not None and h["kappa"] == h["kappa"]
        else f"not given ({(h.get('why') or {}).get('kappa') or 'undefined'})"
    )
    who = (h.get("origin") or {}).get("describe", "unknown")
    grader = (h.get("grader") or {}).get("describe", "unknown")
    if h.get("same_origin"):
        lines = [
            f"agreement not measured: the labels given with --human were made by {who}, who also graded "
            "these answers; compare labels made by people with the model's"
        ]
        h = {**h, "rates": {}}
    else:
        kind = (h.get("origin") or {}).get("kind", "unknown")
        j = h.get("join")
        met = (
            f" ({j['right']['matched']} of {j['right']['ids']} labels met {j['left']['matched']} of "
            f"{j['left']['ids']} answers)"
            if j and j["right"]["matched"] < j["right"]["ids"]
            else ""
        )
        lines = [
            f"agreement on {h['pairs']} answers{met}, {who}{'' if kind == 'unknown' else f' ({kind})'} vs "
            f"{grader}: Cohen's kappa {kappa}"
        ]
    for lab, r in h["rates"].items():
        lines.append(
            f"{lab} rate: prediction-powered {_fmt_rate(r['prediction_powered'])}; "
            f"LLM only {_fmt_rate(r['llm_only'])}; {who} only {_fmt_rate(r['human_only'])}"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ generate


def run_generate(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..api import generate
    from ..stages.generate import GenerateOptions

    done = generate(**stage_arguments(args, generate, GenerateOptions, generate_values(args)))
    return render_stage(done, args, _generate_text, _generate_json)


def _generate_json(result: Any) -> dict:
    # a set still waiting for batch answers says how many and what to do next; a finished one has no such keys
    waiting = {"pending": result.pending, "batch": result.batch_note} if result.pending else {}
    return {**result.to_dict(), **waiting}


def _generate_text(result: Any, args: argparse.Namespace) -> str:
    if result.pending:  # the set is not finished: nothing is written until the batch answers are in
        return "\n".join(
            [
                f"generate: {result.pending} candidates wait for batch answers "
                f"({len(result.accepted)} accepted so far; nothing written yet)",
                result.batch_note,
            ]
        )
    grown = f" ({result.kept} kept, {len(result.accepted)} added)" if args.append else ""
    out = [result.summary(), result.usage_text, f"questions: {args.output}{grown}"]
    out += [result.batch_note] if result.batch_note else []
    out += [f"exported ({fmt}): " + ", ".join(str(p) for p in paths) for fmt, paths in result.exported]
    return "\n".join(out)


# --------------------------------------------------------------------------------------- remap


def run_remap(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..stages.remap import remap_files

    result = remap_files(args.questions, args.new_chunks, args.output, args.threshold)
    return render(args, lambda: result, lambda: _remap_text(result))


def _remap_text(result: dict) -> str:
    lines = [
        f"placed {result['placed']} of {result['questions']} questions ("
        + ", ".join(f"{k} {v}" for k, v in sorted(result["how"].items()))
        + f"); qrels: {result['output']}"
    ]
    if result["unplaced"]:
        lines.append(f"{len(result['unplaced'])} questions have evidence that could not be placed:")
        lines += [f"  {qid}: {quotes[0][:90]!r}" for qid, quotes in list(result["unplaced"].items())[:20]]
    if result["no_evidence"]:
        lines.append(
            f"{len(result['no_evidence'])} questions carry no evidence quotes: {', '.join(result['no_evidence'][:10])}"
        )
    if result.get("unanswerable"):
        lines.append(
            f"{len(result['unanswerable'])} unanswerable questions have no gold chunk to carry (kept "
            "out of the qrels, as before)"
        )
    return "\n".join(lines)
