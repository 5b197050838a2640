"""The report's sections on runs: precision and recall at k, the usual measures with what they rest
on, and the comparison of runs against a baseline (computed here when no compare result was given,
with the settings `ragassay compare` uses, so both print the same p-values)."""

from __future__ import annotations

from ..metrics.compare import compare, sizing_table
from ..metrics.evaluate import evaluate
from . import svg
from .formatting import fmt_p
from .report_inputs import ReportInputs
from .report_model import Section, Table
from .report_words import labelled_by, share

K_MAX = 20  # precision/recall curves go to this depth
INCOMPLETE = ("bpref", "ndcg(judged_only)@10")  # measures made for judgments with holes (shown when a run has some)


PER_QUERY = ("ndcg@10", "p@5", "recall@10", "map", "mrr")  # map and mrr per query: AP and RR


def per_query(inp: ReportInputs) -> tuple[list, dict[str, dict[str, dict[str, float]]]]:
    """Aggregate evaluations (curves and summary) and per query, per run, the page's metrics."""
    if inp.qrels is None or not inp.runs:
        return [], {}
    names = (
        [f"p@{k}" for k in range(1, K_MAX + 1)]
        + [f"recall@{k}" for k in range(1, K_MAX + 1)]
        + ["ndcg@10", "map", "mrr", *INCOMPLETE]
    )
    evals = [evaluate(inp.qrels, r, names, missing="zero", relevance_level=inp.relevance_level) for r in inp.runs]
    per: dict[str, dict[str, dict[str, float]]] = {}
    for run, ev in zip(inp.runs, evals):
        for qid, vals in ev.per_query.items():
            per.setdefault(qid, {})[run.name] = {m: vals[m] for m in PER_QUERY}
    return evals, per


def runs_section(inp: ReportInputs, evals: list) -> list[Section]:
    """Precision and recall at every depth and the usual measures per run, with what they rest on; the
    aggregates of evaluate result files when no qrels and runs were given."""
    if not evals:
        return [
            Section(
                f"Metrics: {ev.get('run', 'run')}",
                tables=[Table(["metric", "value"], [[m, v] for m, v in ev["aggregate"].items()])],
            )
            for ev in inp.evaluate
        ]
    ks = range(1, K_MAX + 1)
    p = svg.line_chart(
        {r.name: [(k, ev.aggregate[f"p@{k}"]) for k in ks] for r, ev in zip(inp.runs, evals)}, "precision@k", "k"
    )
    rc = svg.line_chart(
        {r.name: [(k, ev.aggregate[f"recall@{k}"]) for k in ks] for r, ev in zip(inp.runs, evals)}, "recall@k", "k"
    )
    cols: tuple[str, ...] = ("p@5", "p@10", "recall@10", "ndcg@10", "mrr", "map")
    incomplete = any(ev.standing is not None and any(v < 1.0 for v in ev.standing.judged.values()) for ev in evals)
    if incomplete:  # the measures made for judgments with holes, beside the usual ones
        cols = cols + INCOMPLETE
    rows = [[r.name] + [ev.aggregate[m] for m in cols] for r, ev in zip(inp.runs, evals)]
    who = labelled_by(inp.qrels.origin)
    return [
        Section(
            "Runs: precision and recall at k",
            f"{len(evals[0].queries)} queries, graded on qrels judged by {who}; a query with judgments that a "
            "run did not answer counts as 0. "
            + _rests_on_note(inp, evals)
            + (
                " Some of the runs' results were never judged: bpref and ndcg(judged_only)@10 leave unjudged "
                "chunks out instead of counting them as not relevant (trec_eval's bpref, its -J)."
                if incomplete
                else ""
            ),
            [p, rc],
            [Table(["run", *cols], rows)],
        )
    ]


def _rests_on_note(inp: ReportInputs, evals: list) -> str:
    """What the curves and the table rest on: the relevant grade, the pool and each run's standing
    to it (alone in it, outside it), and how much of each run's top 10 was judged."""
    first = evals[0]
    parts = [f"Precision, recall, MRR and MAP count {first.relevance.text()}; NDCG uses the grades."]
    standing = first.standing
    if standing is not None and standing.pool is not None:
        pool = ", ".join(sorted({m.name for m in standing.pool}))
        parts.append(
            f"The labels judge the top {standing.depth} of {pool}"
            f": past k = {standing.depth} the curves count chunks nobody judged as not relevant."
        )
    else:
        parts.append("The labels do not say which runs they were judged from (their pool).")
    for r, ev in zip(inp.runs, evals):
        s = ev.standing
        judged = s.judged.get("share_judged@10") if s is not None else None
        flags = s.flags() if s is not None else []
        if flags or (judged is not None and judged < 1.0):
            parts.append(
                f"{r.name}: "
                + "; ".join(
                    flags
                    + ([f"{share(judged)} of what it returned in its top 10 was judged"] if judged is not None else [])
                )
                + "."
            )
    return " ".join(parts)


_P_KEYS = ("p_randomization", "p_t_test", "p_randomization_holm")  # shown "< 0.0001", never "0.0000"


def compare_sections(inp: ReportInputs, evals: list) -> list[Section]:
    """Each run against the baseline: a forest plot of the differences, per-query difference plots and the
    tests, computed with `ragassay compare`'s settings when no compare result was given."""
    c = inp.compare
    if c is None and inp.qrels is not None and len(inp.runs) >= 2:
        c = compare(
            inp.qrels,
            {r.name: r for r in inp.runs},
            ["ndcg@10", "map", "recall@10", "mrr"],
            relevance_level=inp.relevance_level,
        ).to_dict()
    if c is None:
        return []
    tests = c["tests"]
    forest = svg.forest_plot(
        [
            (f"{t['run']}: {t['metric']}", t["diff"], t["ci_low"], t["ci_high"], t.get("p_randomization_holm"))
            for t in tests
        ],
        f"Differences from {c['baseline']}, {int(c['settings']['confidence'] * 100)}% bootstrap intervals",
    )
    plots = [forest]
    if evals and len(evals) >= 2:
        base = dict(zip(evals[0].queries, evals[0].values["ndcg@10"].tolist()))
        for r, ev in zip(inp.runs[1:], evals[1:]):
            diffs = sorted(
                ((q, v - base.get(q, 0.0)) for q, v in zip(ev.queries, ev.values["ndcg@10"].tolist())),
                key=lambda x: (x[1], x[0]),
            )
            plots.append(svg.difference_plot(diffs, f"ndcg@10 per query: {r.name} - {inp.runs[0].name} (click a bar)"))
    size_headers, size_rows, size_notes = sizing_table(c)  # none for a compare JSON written before sizing
    rows = [
        [
            t["run"],
            t["metric"],
            t["baseline_mean"],
            t["mean"],
            t["diff"],
            f"[{t['ci_low']:+.4f}, {t['ci_high']:+.4f}]",
            *(fmt_p(t[k], 4) for k in _P_KEYS),
            f"{t['wins']}/{t['ties']}/{t['losses']}",
            *sized[3:],
        ]
        for t, sized in zip(tests, size_rows or [[]] * len(tests))
    ]
    s = c["settings"]
    note = (
        f"{c['queries']} queries; paired randomization test ({s['n_permutations']} permutations, "
        f"seed {s['seed']}), "
        f"t-test, bootstrap interval ({s['n_bootstrap']} resamples); Holm over all tests. "
        "The same settings as `ragassay compare`, so both print the same p-values."
    )
    if size_notes:
        note += f" {_detect_line(c)} " + " ".join(size_notes)
    unique = (c.get("rests_on") or {}).get("unique_relevant")
    if unique:  # pool bias: what a pool without that run would never have judged
        note = note.rstrip() + ("" if note.rstrip().endswith((".", "!", "?")) else ".")  # a sentence ends first
        note += f" Pool bias: {unique['text']}."
    return [
        Section(
            f"Comparison against {c['baseline']}",
            note,
            plots,
            [
                Table(
                    [
                        "run",
                        "metric",
                        "baseline",
                        "run mean",
                        "diff",
                        "95% CI",
                        "p (rand)",
                        "p (t)",
                        "p (Holm)",
                        "W/T/L",
                        *size_headers[3:],
                    ],
                    rows,
                )
            ],
        )
    ]


def _detect_line(c: dict) -> str:
    """The headline comparison's size in a sentence: what these queries detect, and what the
    difference asked for needs (ndcg@10's test when there is one)."""
    s = c["settings"]
    t = next(
        (t for t in c["tests"] if t["metric"] == "ndcg@10" and t.get("mde") is not None),
        next((t for t in c["tests"] if t.get("mde") is not None), None),
    )
    if t is None:
        return ""
    line = (
        f"{c['queries']} queries detect a difference of ≥ {t['mde']:.4f} in {t['metric']} ({t['run']} against "
        f"{c['baseline']}) at power {s['power']:g}"
    )
    if s.get("effect"):
        needed = t.get("queries_needed")
        line += f"; to detect {s['effect']:g} you need {needed} queries" if needed else f"; {t.get('power_note')}"
    return line + "."
