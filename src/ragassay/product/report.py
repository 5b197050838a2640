"""One self-contained report (HTML a person explores, or Markdown for a pull request).

Sections are built from whatever inputs were given (see ``report_inputs``): runs and metrics, every
query in a sortable table, comparisons (forest and per-query difference plots), the judge (grade
mix, coverage, agreement heatmap and the widest disagreements), answers (label rates, diagnosis,
agreement with people) and a generated set's mix. In HTML every query in a table row or a plot
point opens that query's page: its question, gold chunks, each run's top chunks with the qrels'
grades and the judge's, coverage nuggets, the reference and the system's answer with its check label.

Every grade and label is named by who made it, read from its file's origin (``FILE.origin.json``,
else what its lines say): "people (alice)" only when people made them, the model's name when a
model did, "unknown" when the file says nothing. The judge's pool qrels are never "people's".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.joins import Join
from ..data.lines import write_lines_atomic
from ..data.origin import origin_of_records
from ..data.result_models import ReportResult
from ..data.text_match import answers_to_queries
from ..errors import InputError
from ..metrics.agreement import agree
from ..metrics.compare import compare, sizing_table
from ..metrics.evaluate import evaluate
from ..metrics.labels import NO_VERDICT_YET
from ..metrics.rates import MIN_INTERVAL, rate_text
from . import svg
from .formatting import fmt_p
from .report_inputs import ReportInputs, RunFiles, load_inputs
from .report_model import Report, Section, Table
from .report_page import render_html, render_markdown

__all__ = ["ReportInputs", "Section", "Table", "build_report", "labelled_by", "load_inputs", "write_report"]

K_MAX = 20          # precision/recall curves go to this depth
INCOMPLETE = ("bpref", "ndcg(judged_only)@10")  # measures made for judgments with holes (shown when a run has some)
TOP_SHOWN = 10      # chunks per run on a query's page
TEXT_CLIP = 600     # characters of a chunk's text kept for a query's page
PER_QUERY = ("ndcg@10", "p@5", "recall@10", "map", "mrr")  # map and mrr per query: AP and RR


# ------------------------------------------------------------------------------------ helpers

def labelled_by(origin: Any) -> str:
    """Who made a file's labels, as the report names them: "people (alice + bob)", the model's name
    ("gpt-4o"), "mixed (alice + gpt-4o)", or "unknown" (no origin, or one that names no labeller)."""
    kind = "unknown" if origin is None else origin.kind
    if kind == "unknown":
        return "unknown"
    names = list(dict.fromkeys("unknown" if lab.by == "unknown" else lab.name for lab in origin.labellers))
    if kind == "model":
        return " + ".join(names)
    return f"{'people' if kind == 'people' else 'mixed'} ({' + '.join(names)})"


def _labels(inp: ReportInputs) -> dict[str, str]:
    """The names the query pages give each file of labels (the script reads them: it names nothing itself)."""
    out = {"qrels": labelled_by(inp.qrels.origin if inp.qrels is not None else None),
           "answers": labelled_by(inp.human_origin)}
    if inp.people_qrels is not None:
        out["second"] = labelled_by(inp.people_qrels.origin)
    return out


def _judge_grades(inp: ReportInputs) -> dict[tuple[str, str], int]:
    return {(j.query_id, j.chunk_id): j.grade for j in inp.judgments if j.status == "ok"}


def _per_query(inp: ReportInputs) -> tuple[list, dict[str, dict[str, dict[str, float]]]]:
    """Aggregate evaluations (curves and summary) and per query, per run, the page's metrics."""
    if inp.qrels is None or not inp.runs:
        return [], {}
    names = [f"p@{k}" for k in range(1, K_MAX + 1)] + [f"recall@{k}" for k in range(1, K_MAX + 1)] + \
        ["ndcg@10", "map", "mrr", *INCOMPLETE]
    evals = [evaluate(inp.qrels, r, names, missing="zero", relevance_level=inp.relevance_level) for r in inp.runs]
    per: dict[str, dict[str, dict[str, float]]] = {}
    for run, ev in zip(inp.runs, evals):
        for qid, vals in ev.per_query.items():
            per.setdefault(qid, {})[run.name] = {m: vals[m] for m in PER_QUERY}
    return evals, per


# ----------------------------------------------------------------------------------- sections

def runs_section(inp: ReportInputs, evals: list) -> list[Section]:
    if not evals:
        return [Section(f"Metrics: {ev.get('run', 'run')}",
                        tables=[Table(["metric", "value"], [[m, v] for m, v in ev["aggregate"].items()])])
                for ev in inp.evaluate]
    ks = range(1, K_MAX + 1)
    p = svg.line_chart({r.name: [(k, ev.aggregate[f"p@{k}"]) for k in ks] for r, ev in zip(inp.runs, evals)},
                       "precision@k", "k")
    rc = svg.line_chart({r.name: [(k, ev.aggregate[f"recall@{k}"]) for k in ks] for r, ev in zip(inp.runs, evals)},
                        "recall@k", "k")
    cols: tuple[str, ...] = ("p@5", "p@10", "recall@10", "ndcg@10", "mrr", "map")
    incomplete = any(ev.standing is not None and any(v < 1.0 for v in ev.standing.judged.values()) for ev in evals)
    if incomplete:  # the measures made for judgments with holes, beside the usual ones
        cols = cols + INCOMPLETE
    rows = [[r.name] + [ev.aggregate[m] for m in cols] for r, ev in zip(inp.runs, evals)]
    who = labelled_by(inp.qrels.origin)
    return [Section("Runs: precision and recall at k",
                    f"{len(evals[0].queries)} queries, graded on qrels judged by {who}; a query with judgments that a "
                    "run did not answer counts as 0. " + _rests_on_note(inp, evals)
                    + (" Some of the runs' results were never judged: bpref and ndcg(judged_only)@10 leave unjudged "
                       "chunks out instead of counting them as not relevant (trec_eval's bpref, its -J)."
                       if incomplete else ""),
                    [p, rc], [Table(["run", *cols], rows)])]


def _rests_on_note(inp: ReportInputs, evals: list) -> str:
    """What the curves and the table rest on: the relevant grade, the pool and each run's standing
    to it (alone in it, outside it), and how much of each run's top 10 was judged."""
    first = evals[0]
    parts = [f"Precision, recall, MRR and MAP count {first.relevance.text()}; NDCG uses the grades."]
    standing = first.standing
    if standing is not None and standing.pool is not None:
        parts.append(f"The labels judge the top {standing.depth} of {', '.join(sorted({m.name for m in standing.pool}))}"
                     f": past k = {standing.depth} the curves count chunks nobody judged as not relevant.")
    else:
        parts.append("The labels do not say which runs they were judged from (their pool).")
    for r, ev in zip(inp.runs, evals):
        s = ev.standing
        judged = s.judged.get("share_judged@10") if s is not None else None
        flags = s.flags() if s is not None else []
        if flags or (judged is not None and judged < 1.0):
            parts.append(f"{r.name}: " + "; ".join(
                flags + ([f"{_share(judged)} of what it returned in its top 10 was judged"] if judged is not None
                         else [])) + ".")
    return " ".join(parts)


def queries_section(inp: ReportInputs, evals: list, per: dict, pages: dict) -> list[Section]:
    if not pages:
        return []
    runs = [r.name for r in inp.runs]
    labels = {c.id: c.label or ("waiting" if NO_VERDICT_YET in (c.error or "") else "error") for c in inp.checks}
    cov: dict[str, str] = {}
    for c in inp.coverage:
        if not runs or c.run in (None, runs[0]):
            cov[c.query_id] = c.coverage or "error"
    headers = ["query", "question"] + [f"ndcg@10 {r}" for r in runs]
    if len(runs) == 2:
        headers.append(f"{runs[1]} - {runs[0]}")
    if labels:
        headers.append("answer")
    if cov:
        headers.append("coverage")
    order = sorted(pages, key=lambda q: (per.get(q, {}).get(runs[0], {}).get("ndcg@10", 2.0) if runs else 0, q))
    rows = []
    for q in order:
        vals = [per.get(q, {}).get(r, {}).get("ndcg@10") for r in runs]
        row = [q, _clip(pages[q].get("question") or "", 120)] + vals
        if len(runs) == 2:
            row.append(None if None in vals else vals[1] - vals[0])
        if labels:
            row.append(labels.get(q, ""))
        if cov:
            row.append(cov.get(q, ""))
        rows.append(row)
    plots = []
    if evals:
        plots.append(svg.strip_plot([(r.name, [(v, q) for q, v in zip(ev.queries, ev.values["ndcg@10"].tolist())])
                                     for r, ev in zip(inp.runs, evals)], "ndcg@10 per query (click a dot to open the query)"))
    in_runs = {q for r in inp.runs for q in r.queries}
    outside = [q for q in order if in_runs and q not in in_runs]
    where = (f" ({len(order) - len(outside)} in the runs, {len(outside)} only in other inputs: "
             f"{', '.join(outside[:3])}{', ...' if len(outside) > 3 else ''})" if outside else "")
    graders = [labelled_by(q.origin) for q in (inp.qrels, inp.people_qrels) if q is not None] + ["the judge"]
    note = (f"{len(rows)} queries{where}, worst first. Click a row or a dot to open the query: its chunks as graded "
            f"by {', by '.join(graders)}, the answer and its label. Click a column to sort; type to filter.")
    return [Section("Queries", note, plots, [Table(headers, rows, queries=list(order), filter=True)])]


def _coverage_section(records: Sequence[Any]) -> Section:
    """Coverage per query, counted for each run it measured, and the runs named: the counts of two
    runs are never added together, and a reader knows whose retrieved chunks were measured."""
    by_run: dict[str, Counter] = {}
    for r in records:
        by_run.setdefault(r.run or "(a run not named in the records)", Counter())[
            r.coverage if r.status == "ok" else "error"] += 1
    runs = list(by_run)
    named = ", ".join(runs)
    note = (f"Whether the chunks retrieved by {'the run' if len(runs) == 1 else 'the runs'} {named} hold what the answer "
            f"needs; queries measured: " + ", ".join(f"{sum(by_run[r].values())} of {r}" for r in runs) + ".")
    rows = [[k, *(by_run[r].get(k, 0) for r in runs)] for k in ("FULL", "PARTIAL", "NONE", "error")]
    return Section(f"Judge: answer coverage per query ({named})", note,
                   tables=[Table(["coverage", *(f"queries ({r})" for r in runs)], rows)])


_P_KEYS = ("p_randomization", "p_t_test", "p_randomization_holm")  # shown "< 0.0001", never "0.0000"


def compare_sections(inp: ReportInputs, evals: list) -> list[Section]:
    c = inp.compare
    if c is None and inp.qrels is not None and len(inp.runs) >= 2:
        c = compare(inp.qrels, {r.name: r for r in inp.runs}, ["ndcg@10", "map", "recall@10", "mrr"],
                    relevance_level=inp.relevance_level).to_dict()
    if c is None:
        return []
    tests = c["tests"]
    forest = svg.forest_plot([(f"{t['run']}: {t['metric']}", t["diff"], t["ci_low"], t["ci_high"],
                               t.get("p_randomization_holm")) for t in tests],
                             f"Differences from {c['baseline']}, {int(c['settings']['confidence'] * 100)}% bootstrap intervals")
    plots = [forest]
    if evals and len(evals) >= 2:
        base = dict(zip(evals[0].queries, evals[0].values["ndcg@10"].tolist()))
        for r, ev in zip(inp.runs[1:], evals[1:]):
            diffs = sorted(((q, v - base.get(q, 0.0)) for q, v in zip(ev.queries, ev.values["ndcg@10"].tolist())),
                           key=lambda x: (x[1], x[0]))
            plots.append(svg.difference_plot(diffs, f"ndcg@10 per query: {r.name} - {inp.runs[0].name} (click a bar)"))
    size_headers, size_rows, size_notes = sizing_table(c)  # none for a compare JSON written before sizing
    rows = [[t["run"], t["metric"], t["baseline_mean"], t["mean"], t["diff"],
             f"[{t['ci_low']:+.4f}, {t['ci_high']:+.4f}]", *(fmt_p(t[k], 4) for k in _P_KEYS),
             f"{t['wins']}/{t['ties']}/{t['losses']}", *sized[3:]]
            for t, sized in zip(tests, size_rows or [[]] * len(tests))]
    s = c["settings"]
    note = (f"{c['queries']} queries; paired randomization test ({s['n_permutations']} permutations, seed {s['seed']}), "
            f"t-test, bootstrap interval ({s['n_bootstrap']} resamples); Holm over all tests. "
            "The same settings as `ragassay compare`, so both print the same p-values.")
    if size_notes:
        note += f" {_detect_line(c)} " + " ".join(size_notes)
    unique = (c.get("rests_on") or {}).get("unique_relevant")
    if unique:  # pool bias: what a pool without that run would never have judged
        note = note.rstrip() + ("" if note.rstrip().endswith((".", "!", "?")) else ".")  # a sentence ends first
        note += f" Pool bias: {unique['text']}."
    return [Section(f"Comparison against {c['baseline']}", note, plots,
                    [Table(["run", "metric", "baseline", "run mean", "diff", "95% CI", "p (rand)", "p (t)",
                            "p (Holm)", "W/T/L", *size_headers[3:]], rows)])]


def _detect_line(c: dict) -> str:
    """The headline comparison's size in a sentence: what these queries detect, and what the
    difference asked for needs (ndcg@10's test when there is one)."""
    s = c["settings"]
    t = next((t for t in c["tests"] if t["metric"] == "ndcg@10" and t.get("mde") is not None),
             next((t for t in c["tests"] if t.get("mde") is not None), None))
    if t is None:
        return ""
    line = (f"{c['queries']} queries detect a difference of ≥ {t['mde']:.4f} in {t['metric']} ({t['run']} against "
            f"{c['baseline']}) at power {s['power']:g}")
    if s.get("effect"):
        needed = t.get("queries_needed")
        line += f"; to detect {s['effect']:g} you need {needed} queries" if needed else f"; {t.get('power_note')}"
    return line + "."


def judge_sections(inp: ReportInputs) -> list[Section]:
    out = []
    if inp.judgments:
        ok = [j for j in inp.judgments if j.status == "ok"]
        counts = Counter(j.grade for j in ok)
        items = [(str(g), counts.get(g, 0)) for g in range(4)] + [("error", len(inp.judgments) - len(ok))]
        out.append(Section("Judge: grade distribution", "0 unrelated, 1 on topic, 2 partial or buried answer, 3 answers it.",
                           [svg.counts_bars(items, "judged pairs per grade")], [Table(["grade", "pairs"], [list(i) for i in items])]))
    if inp.coverage:
        out.append(_coverage_section(inp.coverage))
    agreements = list(inp.agreements)
    if not agreements and inp.qrels is not None and inp.judgments:
        judged = {}
        for (q, d), g in _judge_grades(inp).items():
            judged.setdefault(q, {})[d] = g
        if judged:  # the judge's side is named by what its records say (model, prompt)
            agreements.append(agree(inp.qrels, judged, candidate_origin=origin_of_records(
                {"model": j.model, "prompt": j.prompt} for j in inp.judgments if j.status == "ok")).to_dict())
    for a in agreements:
        out += _agreement_section(a)
    return out


def _agreement_section(a: dict) -> list[Section]:
    """One agreement result: two labellers' kappa, heatmap and widest disagreements; one labeller on
    both sides: why nothing was measured."""
    out: list[Section] = []
    if a.get("same_origin"):
        ref = (a.get("names") or ["unknown"])[0]
        out.append(Section("Agreement: not measured",
                           f"The qrels and the judgments were labelled by the same labeller ({ref}): set side by side "
                           f"they agree on every pair they share ({a['pairs']}) by construction, which says nothing "
                           "about how far to trust the judge. Give qrels labelled by people (ragassay label pairs "
                           "writes them) to measure the judge against."))
    elif a:
        ref, cand = a.get("names") or ("unknown", "unknown")
        labels = [str(x) for x in a["labels"]]
        k, ci = a.get("kappa"), a.get("kappa_ci")
        kb = (a.get("kappa_binary") or {}).get(">=2")
        alpha = a.get("krippendorff_alpha_ordinal")
        why = a.get("why") or {}
        note = (f"{a['pairs']} pairs graded by both. Cohen's kappa {_stat(k, why.get('kappa'))}"
                + (f" (95% interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else "")
                + f"; binarised at grade >= 2: {_stat(kb, (why.get('kappa_binary') or {}).get('>=2'))}; "
                f"Krippendorff's alpha (ordinal) {_stat(alpha, why.get('krippendorff_alpha_ordinal'))}.")
        if a.get("run_ranking"):
            rr = a["run_ranking"]
            note += (f" Ranking of the runs by {rr['metric']}: Kendall's tau "
                     f"{_stat(rr.get('kendall_tau_b'), (rr.get('why') or {}).get('kendall_tau_b'))}.")
        plots = [svg.heatmap(labels, labels, a["confusion"], f"{ref} grade", f"{cand} grade")]
        tables = [Table([f"{ref} \\ {cand}"] + labels, [[g] + list(row) for g, row in zip(labels, a["confusion"])])]
        dis = a.get("disagreements") or []
        if dis:
            tables.append(Table(["query", "chunk", ref, cand, "gap"],
                                [[d["query_id"], d["doc_id"], d["reference"], d["candidate"], abs(d["reference"] - d["candidate"])]
                                 for d in dis], queries=[d["query_id"] for d in dis], filter=True))
        kinds = [(a.get("origins") or {}).get(side, {}).get("kind", "unknown") for side in ("reference", "candidate")]
        who = f" Reference: {ref} ({kinds[0]}); candidate: {cand} ({kinds[1]})."
        if a.get("scale_warning"):
            who += f" Warning: {a['scale_warning']}."
        out.append(Section(f"Agreement: {ref} against {cand}", note + who + (" The widest disagreements follow; click "
                                                                              "one to open its query." if dis else ""),
                           plots, tables))
    return out


def calibration_sections(inp: ReportInputs) -> list[Section]:
    """What `ragassay label` measured: each person against the model, and against each other."""
    out = []
    for c in inp.calibration:
        a, p, sample = c["model_agreement"], c["progress"], c.get("sample") or {}
        what = "pairs (0-3)" if c["task"] == "pairs" else "answers"

        def ci(interval: list[float] | None) -> str:
            return f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
        rows = [["the model", a["n"], _num(a["exact"]), _num(a["kappa"]) + ci(a["interval"]),
                 _num(a["binary_kappa"]) + ci(a["binary_interval"]),
                 "" if a["more_labels"] is None else a["more_labels"]]]
        for name, o in (c.get("people_agreement") or {}).items():
            rows.append([name, o["n"], _num(o["exact"]), _num(o["kappa"]) + ci(o["interval"]),
                         _num(o["binary_kappa"]) + ci(o["binary_interval"]), "" if o["more_labels"] is None else o["more_labels"]])
        strata = [[s, v["population"], v["sampled"]] for s, v in (sample.get("strata") or {}).items()]
        note = (f"{c['assessor']} labelled {p['labelled']} of {p['total']} {what} ({p['skipped']} skipped), drawn with "
                f"seed {sample.get('seed')} evenly over the strata below. Kappa with its 95% bootstrap interval; binary: "
                f"{c['binary']}. 'more labels': about how many more would narrow the interval to {c['target_width']}.")
        tables = [Table([f"{c['assessor']} against", "labels", "exact", "kappa [95%]", "binary kappa [95%]",
                         "more labels"], rows)]
        if strata:
            tables.append(Table(["stratum", "in the pool", "sampled"], strata))
        out.append(Section(f"Calibration: {c['assessor']} against the model", note, tables=tables))
    return out


def check_sections(inp: ReportInputs) -> list[Section]:
    if inp.check is None:
        return []
    s = inp.check["summary"]
    labs = ("correct", "partial", "hallucinated", "abstained")
    rate = s["rates"]
    graded, answers = s["graded"], s["answers"]
    plots = [svg.bars_with_intervals([(lab, rate[lab]["value"] or 0.0, rate[lab]["ci_low"], rate[lab]["ci_high"])
                                      for lab in labs], f"answer labels: {graded} of {answers} answers decided",
                                     "rate (95% interval)")] if graded >= MIN_INTERVAL else []
    words = s["mean_response_words"]
    rows = [[lab, s["counts"][lab], _rate(rate[lab]), f"{words[lab]:.1f}" if words.get(lab) is not None else ""] for lab in labs]
    note = _answers_note(s) + (f" Truthfulness {_rate(s['truthfulness'], total=answers)}; correct given attempted "
                               f"{_rate(s['correct_given_attempted'], 'attempted answers')}.")
    if graded < MIN_INTERVAL:
        note += f" No chart: {graded} decided answers are too few to draw rates from ({MIN_INTERVAL} or more)."
    out = [Section("Answers: labels", note, plots, [Table(["label", "count", "rate [95% interval], of the decided",
                                                           "mean words"], rows)])]
    d = inp.check.get("diagnosis")
    if d:
        c = d["cells"]
        rows, queries = [], []
        for name, good, bad in (("good retrieval", "good_retrieval_good_answer", "good_retrieval_bad_answer"),
                                ("bad retrieval", "bad_retrieval_good_answer", "bad_retrieval_bad_answer")):
            rows.append([name, c[good]["count"], c[bad]["count"], ", ".join(c[bad]["examples"])])
            queries.append(c[bad]["examples"][0] if c[bad]["examples"] else None)
        out.append(Section("Diagnosis: retrieval x answer", d["advice"].rstrip(".") + ". Click a row to open its first bad answer.",
                           tables=[Table(["", "good answer", "bad answer", "bad answers, e.g."], rows, queries=queries)]))
    h = inp.check.get("human")
    who = ((h or {}).get("origin") or {}).get("describe", "unknown")
    grader = ((h or {}).get("grader") or {}).get("describe", "the grader")
    if h and h.get("same_origin"):
        out.append(Section("Answers: agreement not measured",
                           f"The answer labels set beside the checks were made by {who}, who also graded these answers: "
                           "they agree by construction. Give labels made by people (ragassay label answers writes them)."))
    elif h and h.get("pairs"):
        kind = (h.get("origin") or {}).get("kind", "unknown")
        rows = [[lab, _rate(v["prediction_powered"]), _rate(v["llm_only"]), _rate(v["human_only"])] for lab, v in h["rates"].items()]
        out.append(Section(f"Answers: agreement, {who} against {grader}",
                           f"{h['pairs']} answers labelled by {who} ({kind}); Cohen's kappa {_num(h.get('kappa'))}. "
                           "Prediction-powered rates combine every grader label with the labelled subset's correction.",
                           [svg.heatmap(h["labels"], h["labels"], h["confusion"], who, "grader")] if h.get("confusion") else [],
                           [Table(["label", "prediction-powered", "grader only", f"{who} only"], rows)]))
    return out


def _answers_note(s: dict) -> str:
    """How many answers the rates rest on, and what became of the others: waiting for an LLM verdict
    (no endpoint was given; not a failure) apart from errors."""
    waiting = s.get("waiting") or 0
    errors = s["errors"]
    said = [f"{s['graded']} of {s['answers']} answers decided"]
    if waiting:
        said.append(f"{waiting} waiting for an LLM verdict (no endpoint was given: a run with one decides them)")
    if errors:
        said.append(f"{errors} not graded (errors: the checks file has each reason)")
    return "; ".join(said) + f". Every rate is of the {s['graded']} decided, not of all {s['answers']}."


def generate_sections(inp: ReportInputs) -> list[Section]:
    g = inp.generate
    if g is None and not inp.questions:
        return []
    if g is None:
        g = {"accepted": len(inp.questions), "rejected": len(inp.rejects),
             "delivered": dict(Counter(q.difficulty for q in inp.questions)),
             "kinds": dict(Counter(q.kind for q in inp.questions)),
             "styles": dict(Counter(q.style for q in inp.questions)),
             "reject_reasons": dict(Counter(r.reason.split(":")[0] for r in inp.rejects))}
    tables = [Table([what, "questions"], [[str(k), v] for k, v in sorted((g.get(key) or {}).items(), key=lambda x: -x[1])])
              for what, key in (("difficulty", "delivered"), ("kind", "kinds"), ("style", "styles"))]
    if g.get("reject_reasons"):
        tables.append(Table(["reject reason", "candidates"], [[k, v] for k, v in sorted(g["reject_reasons"].items(), key=lambda x: -x[1])]))
    note = f"{g['accepted']} questions accepted, {g.get('rejected', 0)} candidates rejected."
    return [Section("Generated set: mix and rejects", note, tables=tables)]


# -------------------------------------------------------------------------------- query pages

def query_pages(inp: ReportInputs, per: dict) -> dict[str, Any]:
    """Per query, what its page shows (only ids and clipped texts; the page is drawn by the script)."""
    gold = inp.qrels.to_dict() if inp.qrels is not None else {}
    second = inp.people_qrels.to_dict() if inp.people_qrels is not None else None
    judged = _judge_grades(inp)
    ranked = {r.name: r.ranked() for r in inp.runs}
    # the queries file (or a generated set) gives texts, not pages: a page is for a query with results,
    # judgments, an answer or coverage
    ids = set(gold) | set(second or {}) | {q for rk in ranked.values() for q in rk} | set(inp.answers) | {c.id for c in inp.checks} \
        | {c.query_id for c in inp.coverage}
    if not inp.runs and not gold and not second and not inp.answers and not inp.checks:
        return {}
    checks = {c.id: c for c in inp.checks}
    questions = {q.id: q for q in inp.questions}
    coverage: dict[str, dict] = {}
    for c in inp.coverage:
        coverage.setdefault(c.query_id, {})[c.run or "run"] = {
            "label": c.coverage or "error", "error": c.error,
            "nuggets": [[n.text, n.vital, n.support] for n in c.nuggets]}
    pages: dict[str, Any] = {}
    for q in sorted(ids):
        a = inp.answers.get(q)
        page: dict[str, Any] = {"question": inp.queries.get(q) or (a.question if a else None)}
        if gold.get(q):
            page["gold"] = _relevant_first(gold[q])
        if second and second.get(q):
            page["second"] = _relevant_first(second[q])
        page["runs"] = {name: [[d, gold.get(q, {}).get(d), judged.get((q, d))]
                               + ([second.get(q, {}).get(d)] if second is not None else [])
                               for d, _ in rk.get(q, [])[:TOP_SHOWN]]
                        for name, rk in ranked.items()}
        if q in per:
            page["metrics"] = per[q]
        if q in coverage:
            page["coverage"] = coverage[q]
        if a is not None:
            page["reference"] = a.reference if isinstance(a.reference, str) else " | ".join(a.reference or [])
            page["response"] = a.response
        elif q in questions:
            page["reference"] = questions[q].answer
        if q in checks:
            c = checks[q]
            shown = {"label": c.label, "grounded": c.grounded, "rationale": c.rationale, "decided_by": c.decided_by,
                     "unsupported_claims": c.unsupported_claims, "fault": c.fault, "error": c.error}
            page["check"] = {k: v for k, v in shown.items() if v not in (None, [], "")}
        if q in inp.human_labels:
            page["human_label"] = inp.human_labels[q]
        pages[q] = page
    return pages


def _relevant_first(grades: dict[str, int]) -> list[list]:
    return sorted(([d, g] for d, g in grades.items()), key=lambda x: (-x[1], x[0]))


def chunk_texts(inp: ReportInputs, pages: dict[str, Any]) -> dict[str, str]:
    wanted = {d for p in pages.values() for d, _ in p.get("gold", []) + p.get("second", [])}
    wanted |= {row[0] for p in pages.values() for rows in p["runs"].values() for row in rows}
    return {d: _clip(inp.chunks[d].text, TEXT_CLIP) for d in sorted(wanted) if d in inp.chunks}


# ------------------------------------------------------------------------------------ joins

def input_joins(inp: ReportInputs) -> list:
    """How the report's files meet by id (each run with the qrels, the answers and checks with the
    first run, the judgments with the qrels, people's answer labels with the checks), each counted
    with the sides whose unmatched ids deserve a warning (a run over every query answered in part is
    not one); a pair with no id in common is an error naming both files."""
    joins = []
    if inp.qrels is not None:
        for r in inp.runs:
            joins.append((Join.of("query ids", f"the run {r.name}", r.queries, "the qrels", inp.qrels.queries,
                                  r.source, inp.qrels.source), ("left", "right")))
        if inp.people_qrels is not None:
            joins.append((Join.of("query ids", "the second qrels", inp.people_qrels.queries, "the qrels",
                                  inp.qrels.queries, inp.people_qrels.source, inp.qrels.source), ()))
        if inp.judgments:
            joins.append((Join.of("query ids", "the judgments", {j.query_id for j in inp.judgments}, "the qrels",
                                  inp.qrels.queries, None, inp.qrels.source), ("left",)))
    if inp.queries and inp.runs:  # the query pages' questions
        asked = {q for r in inp.runs for q in r.queries}
        joins.append((Join.of("query ids", "the runs", asked, "the queries", list(inp.queries), None, None),
                      ("left",)))
    if inp.chunks and inp.runs:  # the chunk texts the pages show beside each run's results
        import numpy as np
        retrieved = {d.decode("utf-8") for r in inp.runs for d in np.unique(r.doc_ids).tolist()}
        joins.append((Join.of("chunk ids", "the runs' results", retrieved, "the chunks", list(inp.chunks), None, None),
                      ("left",)))
    answered = {c.id for c in inp.checks} or set(inp.answers)
    if answered and inp.runs and inp.answers and inp.queries:  # answers under other ids than the queries':
        by_text = answers_to_queries({a.id: a.question for a in inp.answers.values()}, inp.queries)
        if by_text is not None:
            answered = {by_text.pairs.get(a, a) for a in answered}
    if answered and inp.runs:
        joins.append((Join.of("query ids", "the checked answers" if inp.checks else "the answers", answered,
                              f"the run {inp.runs[0].name}", inp.runs[0].queries, None, inp.runs[0].source), ("left",)))
    if inp.human_labels and inp.checks:
        joins.append((Join.of("answer ids", "the checks", {c.id for c in inp.checks}, "the answer labels",
                              inp.human_labels, None, None), ()))  # people label a sample: counts only
    for j, _ in joins:
        j.require_overlap()
    return joins


def joins_section(joins: list) -> list[Section]:
    """The counts of every join, so a reader sees what met before reading a number."""
    if not joins:
        return []
    rows = [[j.what, j.left.role, len(j.left.ids), j.right.role, len(j.right.ids), j.matched] for j, _ in joins]
    warnings = [w for w in (j.warning(sides) for j, sides in joins) if w]
    note = "How the files met by id: each side's count and how many met." + (
        " " + " ".join(w[0].upper() + w[1:] + "." for w in warnings) if warnings else "")
    return [Section("Inputs: what met", note, tables=[Table(["ids", "side", "ids", "other side", "ids", "met"], rows)])]


# ---------------------------------------------------------------------------------- labellers

def labellers_section(inp: ReportInputs) -> list[Section]:
    """Who made each file of grades and labels the report shows, as every table and page names them."""
    rows = []
    if inp.qrels is not None:
        rows.append(["qrels", inp.qrels.origin])
    if inp.people_qrels is not None:
        rows.append(["second qrels", inp.people_qrels.origin])
    if inp.judgments:
        rows.append(["judgments (the judge)", origin_of_records(
            {"model": j.model, "prompt": j.prompt} for j in inp.judgments if j.status == "ok")])
    if inp.human_labels:
        rows.append(["answer labels", inp.human_origin])
    if not rows:
        return []
    table = Table(["labels", "made by", "kind", "in full"],
                  [[what, labelled_by(o), "unknown" if o is None else o.kind, "unknown" if o is None else o.describe()]
                   for what, o in rows])
    return [Section("Labels: who made them",
                    "Read from each file's origin (FILE.origin.json beside it, else what its lines say); a file that "
                    "says nothing is unknown, never people's.", tables=[table])]


# ------------------------------------------------------------------------------------ assembly

def build_report(inp: ReportInputs, title: str = "ragassay report", joins: list | None = None) -> Report:
    joins = input_joins(inp) if joins is None else joins
    evals, per = _per_query(inp)
    pages = query_pages(inp, per)
    sections = (joins_section(joins) + labellers_section(inp) + runs_section(inp, evals) + queries_section(inp, evals, per, pages)
                + compare_sections(inp, evals) + judge_sections(inp) + calibration_sections(inp) + check_sections(inp)
                + generate_sections(inp))
    if not sections:
        raise InputError("nothing to report: give --qrels and --run, or result files from evaluate, compare, judge, "
                         "check or generate")
    return Report(title, sections, {"runs": [r.name for r in inp.runs], "labels": _labels(inp), "queries": pages,
                                    "chunks": chunk_texts(inp, pages) if pages else {}})


def write_report(inp: ReportInputs, output: str | Path, fmt: str = "html", title: str = "ragassay report",
                 joins: list | None = None) -> Path:
    report = build_report(inp, title, joins)
    text = render_html(report) if fmt == "html" else render_markdown(report)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_lines_atomic(out, [text])
    return out


@dataclass
class ReportFile:
    """A report written: where, in which format, how large."""

    path: Path
    format: str
    bytes: int
    warnings: list[str] = field(default_factory=list)  # joins that met in part (the report shows them too)

    def to_dict(self) -> dict:
        return ReportResult(output=str(self.path), format=self.format, bytes=self.bytes).to_dict()


def make_report(files: Sequence[str | Path], output: str | Path, *, qrels: str | Path | None = None,
                runs: RunFiles = (), chunks: str | Path | None = None, queries: str | Path | None = None,
                answers: str | Path | None = None, human: str | Path | None = None, fmt: str | None = None,
                title: str = "ragassay report", people_qrels: str | Path | None = None,
                relevance_level: int | None = None) -> ReportFile:
    """Read ragassay's outputs (``files``, with the qrels, runs and texts they refer to) and write
    one report to ``output``: ``fmt`` html or markdown, else by the output's suffix (.md is markdown).

    ``runs``: a mapping {name: path} names each run; a sequence of paths names each by its TREC tag
    (else its file name). ``people_qrels``: a second qrels shown beside ``qrels`` (see ``load_inputs``).
    ``relevance_level``: the grade binary measures count from (default: the qrels' own, else 1)."""
    inputs = load_inputs(files, qrels=qrels, runs=runs, chunks=chunks, queries=queries, answers=answers, human=human,
                         people_qrels=people_qrels)
    inputs.relevance_level = relevance_level
    file_format = fmt if fmt in ("html", "markdown") else \
        ("markdown" if Path(output).suffix.lower() in (".md", ".markdown") else "html")
    joins = input_joins(inputs)  # counted once: for the report's section and for the warnings said
    path = write_report(inputs, output, file_format, title, joins)
    warnings = [w for w in (j.warning(sides) for j, sides in joins) if w]
    return ReportFile(path, file_format, path.stat().st_size, warnings)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n].rstrip() + " …"


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _share(v: float) -> str:
    shown = f"{v:.0%}"
    return "99%+" if shown == "100%" and v < 1.0 else shown


def _stat(v: float | None, why: str | None) -> str:
    """A statistic, or why there is none (a kappa of a side with one grade is not 0: it is not given)."""
    return f"{v:.3f}" if v is not None and v == v else f"not given ({why or 'undefined'})"


def _rate(r: dict, unit: str = "answers", total: int | None = None) -> str:
    """A rate with the items it rests on, its interval or why it has none (metrics.rates)."""
    return rate_text(r, unit, total)

