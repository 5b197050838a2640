"""The report's sections on what the LLM stages and people wrote.

They show the judge's grades, its coverage and agreement, the calibration that ``ragassay label``
measured, the answers' labels and their diagnosis, a generated set's mix, and who made each file of
labels. The report (``report.py``) assembles its sections by subject, and these are the ones on
labels and answers; the runs' sections are in ``report_runs.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..data.origin import origin_of_records
from ..metrics.agreement import agree
from ..metrics.rates import MIN_INTERVAL
from . import svg
from .report_inputs import ReportInputs
from .report_model import Section, Table
from .report_words import labelled_by, num, shown_rate, stat


def judge_grades(inp: ReportInputs) -> dict[tuple[str, str], int]:
    """The judge's grade of each (query, chunk) it judged without an error."""
    return {(j.query_id, j.chunk_id): j.grade for j in inp.judgments if j.status == "ok" and j.grade is not None}


def judge_sections(inp: ReportInputs) -> list[Section]:
    """The judge's grade mix, its coverage per query and its agreement with the qrels (measured here
    when no agreement result was given)."""
    out = []
    if inp.judgments:
        ok = [j for j in inp.judgments if j.status == "ok"]
        counts = Counter(j.grade for j in ok)
        items = [(str(g), counts.get(g, 0)) for g in range(4)] + [("error", len(inp.judgments) - len(ok))]
        out.append(
            Section(
                "Judge: grade distribution",
                "0 unrelated, 1 on topic, 2 partial or buried answer, 3 answers it.",
                [svg.counts_bars(items, "judged pairs per grade")],
                [Table(["grade", "pairs"], [list(i) for i in items])],
            )
        )
    if inp.coverage:
        out.append(_coverage_section(inp.coverage))
    agreements = list(inp.agreements)
    if not agreements and inp.qrels is not None and inp.judgments:
        judged: dict[str, dict[str, int]] = {}
        for (q, d), g in judge_grades(inp).items():
            judged.setdefault(q, {})[d] = g
        if judged:  # the judge's side is named by what its records say (model, prompt)
            agreements.append(
                agree(
                    inp.qrels,
                    judged,
                    candidate_origin=origin_of_records(
                        {"model": j.model, "prompt": j.prompt} for j in inp.judgments if j.status == "ok"
                    ),
                ).to_dict()
            )
    for a in agreements:
        out += _agreement_section(a)
    return out


def _coverage_section(records: Sequence[Any]) -> Section:
    """Coverage per query, counted for each run it measured, and the runs named: the counts of two
    runs are never added together, and a reader knows whose retrieved chunks were measured."""
    by_run: dict[str, Counter] = {}
    for r in records:
        by_run.setdefault(r.run or "(a run not named in the records)", Counter())[
            r.coverage if r.status == "ok" else "error"
        ] += 1
    runs = list(by_run)
    named = ", ".join(runs)
    note = (
        f"Whether the chunks retrieved by {'the run' if len(runs) == 1 else 'the runs'} {named} hold what the "
        "answer "
        f"needs; queries measured: " + ", ".join(f"{sum(by_run[r].values())} of {r}" for r in runs) + "."
    )
    rows = [[k, *(by_run[r].get(k, 0) for r in runs)] for k in ("FULL", "PARTIAL", "NONE", "error")]
    return Section(
        f"Judge: answer coverage per query ({named})",
        note,
        tables=[Table(["coverage", *(f"queries ({r})" for r in runs)], rows)],
    )


def _agreement_section(a: dict) -> list[Section]:
    """One agreement result: two labellers' kappa, heatmap and widest disagreements; one labeller on
    both sides: why nothing was measured."""
    out: list[Section] = []
    if a.get("same_origin"):
        ref = (a.get("names") or ["unknown"])[0]
        out.append(
            Section(
                "Agreement: not measured",
                f"The qrels and the judgments were labelled by the same labeller ({ref}): set side by side "
                f"they agree on every pair they share ({a['pairs']}) by construction, which says nothing "
                "about how far to trust the judge. Give qrels labelled by people (ragassay label pairs "
                "writes them) to measure the judge against.",
            )
        )
    elif a:
        out.append(_measured_agreement(a))
    return out


def _agreement_note(a: dict) -> str:
    """The agreement's figures in a sentence: kappa with its interval, the binarised kappa, alpha,
    and Kendall's tau of the runs' ranking when the runs were scored under both."""
    k, ci = a.get("kappa"), a.get("kappa_ci")
    kb = (a.get("kappa_binary") or {}).get(">=2")
    alpha = a.get("krippendorff_alpha_ordinal")
    why = a.get("why") or {}
    note = (
        f"{a['pairs']} pairs graded by both. Cohen's kappa {stat(k, why.get('kappa'))}"
        + (f" (95% interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else "")
        + f"; binarised at grade >= 2: {stat(kb, (why.get('kappa_binary') or {}).get('>=2'))}; "
        f"Krippendorff's alpha (ordinal) {stat(alpha, why.get('krippendorff_alpha_ordinal'))}."
    )
    if a.get("run_ranking"):
        rr = a["run_ranking"]
        note += (
            f" Ranking of the runs by {rr['metric']}: Kendall's tau "
            f"{stat(rr.get('kendall_tau_b'), (rr.get('why') or {}).get('kendall_tau_b'))}."
        )
    return note


def _measured_agreement(a: dict) -> Section:
    """Two labellers' kappa and alpha (and the runs' ranking under each), the heatmap of their
    grades and the widest disagreements."""
    ref, cand = a.get("names") or ("unknown", "unknown")
    labels = [str(x) for x in a["labels"]]
    note = _agreement_note(a)
    plots = [svg.heatmap(labels, labels, a["confusion"], f"{ref} grade", f"{cand} grade")]
    tables = [Table([f"{ref} \\ {cand}"] + labels, [[g] + list(row) for g, row in zip(labels, a["confusion"])])]
    dis = a.get("disagreements") or []
    if dis:
        tables.append(
            Table(
                ["query", "chunk", ref, cand, "gap"],
                [
                    [d["query_id"], d["doc_id"], d["reference"], d["candidate"], abs(d["reference"] - d["candidate"])]
                    for d in dis
                ],
                queries=[d["query_id"] for d in dis],
                filter=True,
            )
        )
    kinds = [(a.get("origins") or {}).get(side, {}).get("kind", "unknown") for side in ("reference", "candidate")]
    who = f" Reference: {ref} ({kinds[0]}); candidate: {cand} ({kinds[1]})."
    if a.get("scale_warning"):
        who += f" Warning: {a['scale_warning']}."
    return Section(
        f"Agreement: {ref} against {cand}",
        note + who + (" The widest disagreements follow; click one to open its query." if dis else ""),
        plots,
        tables,
    )


def calibration_sections(inp: ReportInputs) -> list[Section]:
    """What `ragassay label` measured: each person against the model, and against each other."""
    out = []
    for c in inp.calibration:
        a, p, sample = c["model_agreement"], c["progress"], c.get("sample") or {}
        what = "pairs (0-3)" if c["task"] == "pairs" else "answers"

        def ci(interval: list[float] | None) -> str:
            return f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""

        rows = [
            [
                "the model",
                a["n"],
                num(a["exact"]),
                num(a["kappa"]) + ci(a["interval"]),
                num(a["binary_kappa"]) + ci(a["binary_interval"]),
                "" if a["more_labels"] is None else a["more_labels"],
            ]
        ]
        for name, o in (c.get("people_agreement") or {}).items():
            rows.append(
                [
                    name,
                    o["n"],
                    num(o["exact"]),
                    num(o["kappa"]) + ci(o["interval"]),
                    num(o["binary_kappa"]) + ci(o["binary_interval"]),
                    "" if o["more_labels"] is None else o["more_labels"],
                ]
            )
        strata = [[s, v["population"], v["sampled"]] for s, v in (sample.get("strata") or {}).items()]
        note = (
            f"{c['assessor']} labelled {p['labelled']} of {p['total']} {what} ({p['skipped']} skipped), drawn with "
            f"seed {sample.get('seed')} evenly over the strata below. Kappa with its 95% bootstrap interval; "
            "binary: "
            f"{c['binary']}. 'more labels': about how many more would narrow the interval to {c['target_width']}."
        )
        tables = [
            Table(
                [f"{c['assessor']} against", "labels", "exact", "kappa [95%]", "binary kappa [95%]", "more labels"],
                rows,
            )
        ]
        if strata:
            tables.append(Table(["stratum", "in the pool", "sampled"], strata))
        out.append(Section(f"Calibration: {c['assessor']} against the model", note, tables=tables))
    return out


def check_sections(inp: ReportInputs) -> list[Section]:
    """The answers' labels with their intervals, the retrieval-by-answer diagnosis and the grader's
    agreement with people's answer labels."""
    if inp.check is None:
        return []
    out = [_answer_labels_section(inp.check["summary"])]
    if inp.check.get("behaviour"):
        out.append(_behaviour_section(inp.check["behaviour"]))
    d = inp.check.get("diagnosis")
    if d:
        out.append(_diagnosis_section(d))
    return out + _answer_agreement_sections(inp.check.get("human"))


def _answer_labels_section(s: dict) -> Section:
    """The rate of each label with its interval (a chart when enough answers were decided), and the
    mean words of the responses under each."""
    labs = ("correct", "partial", "hallucinated", "abstained")
    rate = s["rates"]
    graded, answers = s["graded"], s["answers"]
    plots = (
        [
            svg.bars_with_intervals(
                [(lab, rate[lab]["value"] or 0.0, rate[lab]["ci_low"], rate[lab]["ci_high"]) for lab in labs],
                f"answer labels: {graded} of {answers} answers decided",
                "rate (95% interval)",
            )
        ]
        if graded >= MIN_INTERVAL
        else []
    )
    words = s["mean_response_words"]
    rows = [
        [lab, s["counts"][lab], shown_rate(rate[lab]), f"{words[lab]:.1f}" if words.get(lab) is not None else ""]
        for lab in labs
    ]
    note = _answers_note(s) + (
        f" Truthfulness {shown_rate(s['truthfulness'], total=answers)}; correct given attempted "
        f"{shown_rate(s['correct_given_attempted'], 'attempted answers')}."
    )
    if graded < MIN_INTERVAL:
        note += f" No chart: {graded} decided answers are too few to draw rates from ({MIN_INTERVAL} or more)."
    return Section(
        "Answers: labels",
        note,
        plots,
        [Table(["label", "count", "rate [95% interval], of the decided", "mean words"], rows)],
    )


def _diagnosis_section(d: dict) -> Section:
    """Retrieval against answer: good or bad of each, with examples of the bad answers."""
    c = d["cells"]
    rows, queries = [], []
    for name, good, bad in (
        ("good retrieval", "good_retrieval_good_answer", "good_retrieval_bad_answer"),
        ("bad retrieval", "bad_retrieval_good_answer", "bad_retrieval_bad_answer"),
    ):
        rows.append([name, c[good]["count"], c[bad]["count"], ", ".join(c[bad]["examples"])])
        queries.append(c[bad]["examples"][0] if c[bad]["examples"] else None)
    return Section(
        "Diagnosis: retrieval x answer",
        d["advice"].rstrip(".") + ". Click a row to open its first bad answer.",
        tables=[Table(["", "good answer", "bad answer", "bad answers, e.g."], rows, queries=queries)],
    )


def _answer_agreement_sections(h: dict | None) -> list[Section]:
    """The grader against people's answer labels; when the same labeller made both, why nothing was
    measured."""
    who = ((h or {}).get("origin") or {}).get("describe", "unknown")
    grader = ((h or {}).get("grader") or {}).get("describe", "the grader")
    if h and h.get("same_origin"):
        return [
            Section(
                "Answers: agreement not measured",
                f"The answer labels set beside the checks were made by {who}, who also graded these "
                "answers: they agree by construction. Give labels made by people (ragassay label answers "
                "writes them).",
            )
        ]
    if not (h and h.get("pairs")):
        return []
    kind = (h.get("origin") or {}).get("kind", "unknown")
    rows = [
        [lab, shown_rate(v["prediction_powered"]), shown_rate(v["llm_only"]), shown_rate(v["human_only"])]
        for lab, v in h["rates"].items()
    ]
    return [
        Section(
            f"Answers: agreement, {who} against {grader}",
            f"{h['pairs']} answers labelled by {who} ({kind}); Cohen's kappa {num(h.get('kappa'))}. "
            "Prediction-powered rates combine every grader label with the labelled subset's correction.",
            [svg.heatmap(h["labels"], h["labels"], h["confusion"], who, "grader")] if h.get("confusion") else [],
            [Table(["label", "prediction-powered", "grader only", f"{who} only"], rows)],
        )
    ]


def _behaviour_section(b: dict) -> Section:
    """The rates of a set with unanswerable and false-premise questions, each of the questions it rests on."""
    q = b["questions"]
    rows = [
        ["answered when unanswerable", shown_rate(b["answered_when_unanswerable"], "unanswerable questions")],
        ["premise corrected", shown_rate(b["premise_corrected"], "false-premise questions")],
        [
            "over-refusal: abstained though the context held the answer",
            shown_rate(b["over_refusal"], "answers whose context held it"),
        ],
    ]
    rows += [
        [f"{lab}, answerable questions", shown_rate(b["answerable"]["rates"][lab])]
        for lab in ("correct", "partial", "hallucinated", "abstained")
    ]
    return Section(
        "Answers: behaviour",
        f"{q['unanswerable']} unanswerable, {q['false_premise']} false-premise and "
        f"{q['answerable']} answerable questions. An abstention is the right answer to an unanswerable "
        "question; going along with a false premise is wrong even when the rest is right.",
        tables=[Table(["behaviour", "rate [95% interval]"], rows)],
    )


def _answers_note(s: dict) -> str:
    """How many answers the rates rest on, and what became of the others: waiting for an LLM verdict
    (no endpoint was given; not a failure) apart from errors."""
    waiting = s.get("waiting") or 0
    errors = s["errors"]
    parts = [f"{s['graded']} of {s['answers']} answers decided"]
    if waiting:
        parts.append(f"{waiting} waiting for an LLM verdict (no endpoint was given: a run with one decides them)")
    if errors:
        parts.append(f"{errors} not graded (errors: the checks file has each reason)")
    return "; ".join(parts) + f". Every rate is of the {s['graded']} decided, not of all {s['answers']}."


def generate_sections(inp: ReportInputs) -> list[Section]:
    """A generated set's mix of difficulties, kinds and styles and why candidates were rejected."""
    g = inp.generate
    if g is None and not inp.questions:
        return []
    if g is None:
        g = {
            "accepted": len(inp.questions),
            "rejected": len(inp.rejects),
            "delivered": dict(Counter(q.difficulty for q in inp.questions)),
            "kinds": dict(Counter(q.kind for q in inp.questions)),
            "styles": dict(Counter(q.style for q in inp.questions)),
            "reject_reasons": dict(Counter(r.reason.split(":")[0] for r in inp.rejects)),
        }
    tables = [
        Table([what, "questions"], [[str(k), v] for k, v in sorted((g.get(key) or {}).items(), key=lambda x: -x[1])])
        for what, key in (("difficulty", "delivered"), ("kind", "kinds"), ("style", "styles"))
    ]
    if g.get("reject_reasons"):
        tables.append(
            Table(
                ["reject reason", "candidates"],
                [[k, v] for k, v in sorted(g["reject_reasons"].items(), key=lambda x: -x[1])],
            )
        )
    note = f"{g['accepted']} questions accepted, {g.get('rejected', 0)} candidates rejected."
    return [Section("Generated set: mix and rejects", note, tables=tables)]


def labellers_section(inp: ReportInputs) -> list[Section]:
    """Who made each file of grades and labels the report shows, as every table and page names them."""
    rows = []
    if inp.qrels is not None:
        rows.append(["qrels", inp.qrels.origin])
    if inp.people_qrels is not None:
        rows.append(["second qrels", inp.people_qrels.origin])
    if inp.judgments:
        rows.append(
            [
                "judgments (the judge)",
                origin_of_records({"model": j.model, "prompt": j.prompt} for j in inp.judgments if j.status == "ok"),
            ]
        )
    if inp.human_labels:
        rows.append(["answer labels", inp.human_origin])
    if not rows:
        return []
    table = Table(
        ["labels", "made by", "kind", "in full"],
        [
            [what, labelled_by(o), "unknown" if o is None else o.kind, "unknown" if o is None else o.describe()]
            for what, o in rows
        ],
    )
    return [
        Section(
            "Labels: who made them",
            "Read from each file's origin (FILE.origin.json beside it, else what its lines say); a file that "
            "says nothing is unknown, never people's.",
            tables=[table],
        )
    ]
