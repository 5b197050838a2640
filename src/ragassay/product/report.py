"""One self-contained report (HTML with inline SVG plots, or Markdown) from ragassay's outputs.

Inputs are detected from their content: the JSON of evaluate / compare / check / agree, judgments
and coverage JSONL from judge, plus runs and qrels (for the P@k / R@k curves and the worst
queries). Plots need matplotlib (``pip install 'ragassay[report]'``); without it the report keeps
every table and says how to get the plots.
"""

from __future__ import annotations

import html
import io
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

K_MAX = 20


@dataclass
class Section:
    title: str
    html: str
    markdown: str


@dataclass
class ReportInputs:
    qrels: Any = None
    runs: list = field(default_factory=list)
    chunks: dict = field(default_factory=dict)
    evaluate: list[dict] = field(default_factory=list)
    compare: dict | None = None
    check: dict | None = None
    agree: dict | None = None
    judgments: list[dict] = field(default_factory=list)
    coverage: list[dict] = field(default_factory=list)


def load_inputs(paths: Sequence[str | Path], qrels: str | Path | None = None, runs: Sequence[str | Path] = (),
                chunks: str | Path | None = None) -> ReportInputs:
    from ..data.io import iter_jsonl, read_bytes_checked, read_chunks, read_qrels, read_run
    from ..data.results import load_result
    inp = ReportInputs()
    if qrels:
        inp.qrels = read_qrels(qrels)
    inp.runs = [read_run(r) for r in runs]
    if chunks:
        inp.chunks = {c.id: c for c in read_chunks(chunks)}
    for p in paths:
        p = Path(p)
        data = read_bytes_checked(p)
        try:
            whole = json.loads(data)  # one JSON document: a result (or a one-line JSONL file)
        except (json.JSONDecodeError, UnicodeDecodeError):
            whole = None  # several lines: judge's records
        if isinstance(whole, dict) and "kind" in whole:
            result = load_result(p)  # checks kind and version
            kind = result["kind"]
            if kind == "evaluate":
                inp.evaluate.append(result)
            elif kind in ("compare", "check", "agree"):
                setattr(inp, kind, result)
            else:
                raise InputError(f"a {kind} result: the report shows judge's judgments and coverage files "
                                 "themselves, not the summary", p)
            continue
        records = [obj for _, obj in iter_jsonl(data, p)]
        first = records[0] if records else {}
        if {"query_id", "chunk_id", "grade", "status"} <= set(first):  # judgment records (data contract)
            inp.judgments = records
        elif {"query_id", "coverage", "status"} <= set(first):         # coverage records
            inp.coverage = records
        else:
            raise InputError("neither a ragassay result (JSON with a 'kind') nor judge's judgments or coverage "
                             "(JSON Lines)", p)
    return inp


# ------------------------------------------------------------------------------------ plots


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


# ---------------------------------------------------------------------------------- builders


def _table_html(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v):
        if isinstance(v, float):
            return f"<td class=num>{v:.4f}</td>"
        if isinstance(v, int) and not isinstance(v, bool):
            return f"<td class=num>{v}</td>"
        return f"<td>{html.escape(str(v))}</td>"
    def numeric(i):
        vals = [r[i] for r in rows if i < len(r) and r[i] not in ("", None)]
        return bool(vals) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    head = "".join(f"<th class=num>{html.escape(h)}</th>" if numeric(i) else f"<th>{html.escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell(v) for v in r) + "</tr>" for r in rows)
    return f"<div class=scroll><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _table_md(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    from .formatting import render_table
    return render_table(list(headers), [list(r) for r in rows], "markdown")


def _section(title: str, headers, rows, note: str = "", plot: str = "") -> Section:
    h = (f"<p class=note>{html.escape(note)}</p>" if note else "") + (plot or "") + (_table_html(headers, rows) if rows else "")
    m = (note + "\n\n" if note else "") + (_table_md(headers, rows) if rows else "")
    return Section(title, h, m)


def retrieval_sections(inp: ReportInputs, plt) -> list[Section]:
    from ..metrics.evaluate import evaluate
    out = []
    if inp.qrels is None or not inp.runs:
        for ev in inp.evaluate:
            rows = [[m, v] for m, v in ev["aggregate"].items()]
            out.append(_section(f"Metrics: {ev.get('run', 'run')}", ["metric", "value"], rows))
        return out
    names = [f"p@{k}" for k in range(1, K_MAX + 1)] + [f"recall@{k}" for k in range(1, K_MAX + 1)] + ["ndcg@10", "mrr", "map"]
    evals = [evaluate(inp.qrels, r, names, missing="zero") for r in inp.runs]
    plot = ""
    if plt is not None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
        ks = list(range(1, K_MAX + 1))
        for r, ev in zip(inp.runs, evals):
            agg = ev.aggregate
            axes[0].plot(ks, [agg[f"p@{k}"] for k in ks], marker="o", ms=3, label=r.name)
            axes[1].plot(ks, [agg[f"recall@{k}"] for k in ks], marker="o", ms=3, label=r.name)
        for ax, t in zip(axes, ("precision@k", "recall@k")):
            ax.set_title(t)
            ax.set_xlabel("k")
            ax.set_ylim(0, 1.02)
            ax.grid(alpha=0.3)
        axes[1].legend(loc="lower right", fontsize=8)
        plot = _svg(fig)
    rows = [[r.name] + [ev.aggregate[m] for m in ("p@5", "p@10", "recall@10", "ndcg@10", "mrr", "map")]
            for r, ev in zip(inp.runs, evals)]
    out.append(_section("Retrieval: precision and recall at k", ["run", "p@5", "p@10", "recall@10", "ndcg@10", "mrr", "map"],
                        rows, f"{len(evals[0].queries)} queries; qrels queries a run missed count as 0.", plot))
    plot = ""
    if plt is not None:
        fig, ax = plt.subplots(figsize=(9, 0.6 + 0.5 * len(evals)))
        import numpy as np
        for i, ev in enumerate(evals, start=1):  # quartile bar, median tick, and every query as a dot
            v = ev.values["ndcg@10"]
            q1, med, q3 = np.percentile(v, [25, 50, 75]) if len(v) else (0, 0, 0)
            ax.plot([q1, q3], [i, i], color="#9aa3b2", lw=8, solid_capstyle="butt", zorder=1)
            ax.plot([med, med], [i - 0.25, i + 0.25], color="#1d2330", lw=2, zorder=3)
            jitter = (np.arange(len(v)) % 5 - 2) * 0.06
            ax.scatter(v, i + jitter, s=10, alpha=0.7, zorder=2)
        ax.set_yticks(range(1, len(evals) + 1), [r.name for r in inp.runs])
        ax.set_ylim(0.4, len(evals) + 0.6)
        ax.set_xlabel("ndcg@10 per query")
        ax.set_xlim(-0.02, 1.02)
        plot = _svg(fig)
    out.append(_section("Per-query NDCG@10", [], [], "Each dot is a query; the grey bar spans the middle half, the tick marks the median.", plot))
    # worst queries of the first run
    first, ev = inp.runs[0], evals[0]
    ranked = first.ranked()
    grades = inp.qrels.to_dict()
    judged = {(j["query_id"], j["chunk_id"]): j.get("grade") for j in inp.judgments if j.get("status", "ok") == "ok"}
    worst = sorted(zip(ev.queries, ev.values["ndcg@10"]), key=lambda x: (x[1], x[0]))[:5]
    rows = []
    for qid, v in worst:
        for rank, (doc, _) in enumerate(ranked.get(qid, [])[:3], start=1):
            g = grades.get(qid, {}).get(doc, judged.get((qid, doc), "unjudged"))
            text = inp.chunks[doc].text[:90] + "..." if doc in inp.chunks else ""
            rows.append([qid if rank == 1 else "", f"{v:.3f}" if rank == 1 else "", rank, doc, g, text])
    out.append(_section(f"Worst queries ({first.name}, by ndcg@10) and their top 3", ["query", "ndcg@10", "rank", "chunk", "grade", "text"], rows))
    return out


def compare_section(inp: ReportInputs) -> list[Section]:
    c = inp.compare
    if c is None:
        if inp.qrels is not None and len(inp.runs) >= 2:
            from ..metrics.compare import compare
            cmp = compare(inp.qrels, {r.name: r for r in inp.runs}, ["ndcg@10", "map", "recall@10"], n_permutations=5000,
                          n_bootstrap=2000)
            c = cmp.to_dict()
        else:
            return []
    rows = [[t["run"], t["metric"], t["baseline_mean"], t["mean"], t["diff"],
             f"[{t['ci_low']:+.4f}, {t['ci_high']:+.4f}]", t["p_randomization"], t["p_t_test"], t["p_randomization_holm"],
             f"{t['wins']}/{t['ties']}/{t['losses']}"] for t in c["tests"]]
    return [_section(f"Comparison against {c['baseline']}", ["run", "metric", "baseline", "run mean", "diff", "95% CI",
                                                            "p (rand)", "p (t)", "p (Holm)", "W/T/L"], rows,
                     f"{c['queries']} queries; paired randomization test and t-test; Holm over all tests.")]


def judge_sections(inp: ReportInputs, plt) -> list[Section]:
    out = []
    if inp.judgments:
        ok = [j for j in inp.judgments if j.get("status", "ok") == "ok"]
        counts = Counter(j["grade"] for j in ok)
        errors = len(inp.judgments) - len(ok)
        plot = ""
        if plt is not None:
            fig, ax = plt.subplots(figsize=(5, 2.4))
            ax.bar([str(g) for g in range(4)], [counts.get(g, 0) for g in range(4)], color="#4c72b0")
            ax.set_xlabel("grade")
            ax.set_ylabel("pairs")
            plot = _svg(fig)
        out.append(_section("Judge: grade distribution", ["grade", "pairs"], [[g, counts.get(g, 0)] for g in range(4)] + [["error", errors]],
                            "0 unrelated, 1 on topic, 2 partial or buried answer, 3 answers it.", plot))
    if inp.coverage:
        counts = Counter((r["coverage"] if r.get("status", "ok") == "ok" else "error") for r in inp.coverage)
        out.append(_section("Judge: answer coverage per query", ["coverage", "queries"],
                            [[k, counts.get(k, 0)] for k in ("FULL", "PARTIAL", "NONE", "error")]))
    if inp.agree:
        a = inp.agree
        labels = [str(x) for x in a["labels"]]
        rows = [[g] + row for g, row in zip(labels, a["confusion"])]
        k = a.get("kappa")
        kb = (a.get("kappa_binary") or {}).get(">=2")
        note = (f"{a['pairs']} pairs judged by both. Cohen's kappa {k if k is None else round(k, 3)}; "
                f"binarised at grade >= 2: {kb if kb is None else round(kb, 3)}; Krippendorff's alpha "
                f"{a.get('krippendorff_alpha_ordinal') if a.get('krippendorff_alpha_ordinal') is None else round(a['krippendorff_alpha_ordinal'], 3)}.")
        if a.get("run_ranking"):
            rr = a["run_ranking"]
            note += f" Ranking of runs by {rr['metric']}: Kendall's tau {rr['kendall_tau_b']}"
        ref_name, cand_name = a.get("names") or ("people", "judge")
        out.append(_section(f"Agreement: {ref_name} (rows) against {cand_name} (columns)",
                            [f"{ref_name} \\ {cand_name}"] + labels, rows, note))
    return out


def check_sections(inp: ReportInputs, plt) -> list[Section]:
    if inp.check is None:
        return []
    s = inp.check["summary"]
    labs = ("correct", "partial", "hallucinated", "abstained")
    plot = ""
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 2.6))
        vals = [s["rates"][lab]["value"] or 0 for lab in labs]
        lo = [max(0.0, v - (s["rates"][lab]["ci_low"] or 0)) for v, lab in zip(vals, labs)]
        hi = [max(0.0, (s["rates"][lab]["ci_high"] or 0) - v) for v, lab in zip(vals, labs)]
        ax.bar(labs, vals, yerr=[lo, hi], capsize=4, color=["#55a868", "#dd8452", "#c44e52", "#8c8c8c"])
        ax.set_ylim(0, 1)
        ax.set_ylabel("rate (95% CI)")
        plot = _svg(fig)

    def fmt(r):
        return "n/a" if r["value"] is None else f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
    words = s["mean_response_words"]
    rows = [[lab, s["counts"][lab], fmt(s["rates"][lab]), f"{words[lab]:.1f}" if words.get(lab) is not None else ""]
            for lab in labs]
    note = (f"{s['graded']} of {s['answers']} answers graded; {s['errors']} not graded (errors, not in the rates: "
            f"the checks file has each reason). Truthfulness "
            f"{fmt(s['truthfulness'])}; correct given attempted {fmt(s['correct_given_attempted'])}.")
    out = [_section("Answers: labels", ["label", "count", "rate [95% CI]", "mean words"], rows, note, plot)]
    d = inp.check.get("diagnosis")
    if d:
        c = d["cells"]

        def cell(k):
            return f"{c[k]['count']}" + (f" ({', '.join(c[k]['examples'])})" if c[k]["examples"] else "")
        rows = [["good retrieval", cell("good_retrieval_good_answer"), cell("good_retrieval_bad_answer")],
                ["bad retrieval", cell("bad_retrieval_good_answer"), cell("bad_retrieval_bad_answer")]]
        out.append(_section("Diagnosis: retrieval x answer", ["", "good answer", "bad answer"], rows, d["advice"]))
    return out


def build_sections(inp: ReportInputs) -> tuple[list[Section], bool]:
    plt = _plt()
    sections = retrieval_sections(inp, plt) + compare_section(inp) + judge_sections(inp, plt) + check_sections(inp, plt)
    if not sections:
        raise InputError("nothing to report: give --qrels and --run, or result files from evaluate, compare, judge or check")
    return sections, plt is not None


CSS = """body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1040px;margin:0 auto;padding:24px}h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px}
section{background:#fff;border:1px solid #e2e5ea;border-radius:8px;padding:16px 18px;margin:16px 0}
table{border-collapse:collapse;width:100%;font-size:13.5px}th,td{padding:5px 8px;border-bottom:1px solid #eceef2;text-align:left;vertical-align:top}
th{background:#f1f3f6;position:sticky;top:0}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto}.note{color:#4a5363;margin:4px 0 10px}svg{max-width:100%;height:auto}nav a{margin-right:12px}
.meta{color:#6b7384;font-size:13px}"""


def render_html(sections: Sequence[Section], title: str, have_plots: bool) -> str:
    nav = " ".join(f"<a href='#s{i}'>{html.escape(s.title.split(':')[0])}</a>" for i, s in enumerate(sections))
    note = "" if have_plots else ("<p class=note>Plots are missing: install matplotlib "
                                  "(pip install 'ragassay[report]') and run again.</p>")
    body = "".join(f"<section id='s{i}'><h2>{html.escape(s.title)}</h2>{s.html}</section>" for i, s in enumerate(sections))
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body><main><h1>{html.escape(title)}</h1>"
            f"<p class=meta>Made by ragassay. Metrics follow trec_eval's conventions.</p><nav>{nav}</nav>{note}{body}</main></body></html>")


def render_markdown(sections: Sequence[Section], title: str) -> str:
    return f"# {title}\n\n" + "\n\n".join(f"## {s.title}\n\n{s.markdown}".rstrip() for s in sections) + "\n"


def write_report(inp: ReportInputs, output: str | Path, fmt: str = "html", title: str = "ragassay report") -> Path:
    sections, have_plots = build_sections(inp)
    text = render_html(sections, title, have_plots) if fmt == "html" else render_markdown(sections, title)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out
