"""evaluate, compare, agree, retrieve: the metrics core on the command line (their handlers; the
arguments are declared in declare_metrics.py, and this module is imported when one of them runs)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ..data.json_numbers import nan_to_none
from ..data.origin import read_origin
from ..errors import UsageError
from ..product.formatting import render_table
from .render import render


def _load_pair(args: argparse.Namespace, run_paths: list[str]):
    from ..data.qrels_files import read_qrels
    from ..data.run_files import read_run

    if [args.qrels, *run_paths].count("-") > 1:
        raise UsageError(
            "'-' (standard input) is given more than once: it can be read once, so give the other files by name"
        )
    qrels = read_qrels(args.qrels, format=args.qrels_format)
    runs = [read_run(p, format=args.run_format, dedupe=args.dedupe) for p in run_paths]
    if args.run_format == "auto":  # (a format given by name forces the reading)
        from ..data.roles import refuse_grades_as_run

        for run, path in zip(runs, run_paths):
            refuse_grades_as_run(qrels, run, args.qrels, path)
    return qrels, runs


def _warn_joins(qrels, runs: list, paths: list[str], args: argparse.Namespace, names: list[str] | None = None) -> list:
    """Each run meets the qrels by query id: a partial overlap is a warning with counts on stderr
    (none in common stops evaluate itself, naming both files); ``names``: the runs as the result names
    them (two files tagged alike go by their paths)."""
    from ..data.joins import Join

    quiet = args.format in ("json", "csv") and args.quiet
    names = names or [r.name for r in runs]
    by_design = set(getattr(qrels.origin, "no_relevant", None) or ())  # unanswerable questions: no qrels line
    return [
        Join.of(
            "query ids",
            "the run" if len(runs) == 1 else f"the run {name}",
            [q for q in r.queries if q not in by_design],
            "the qrels",
            qrels.queries,
            path,
            args.qrels,
        ).warn(quiet)
        for r, path, name in zip(runs, paths, names)
    ]


def _counts_line(ev, by_design: frozenset[str] = frozenset()) -> str:
    """The queries a score rests on, and what became of the others; ``by_design``: the queries the
    qrels' origin says have no relevant chunk (a set's unanswerable questions), said apart."""
    c = ev.counts
    parts = [f"{c['evaluated']} queries evaluated"]
    unanswerable = len(set(ev.run_only) & by_design) if isinstance(getattr(ev, "run_only", None), list) else 0
    if c["run_queries_without_qrels"] - unanswerable:
        parts.append(f"{c['run_queries_without_qrels'] - unanswerable} run queries without qrels ignored")
    if unanswerable:
        parts.append(
            f"{unanswerable} unanswerable questions skipped (no relevant chunk by design, as the qrels' "
            "origin file says)"
        )
    if c["qrels_queries_missing_from_run"]:
        verb = "scored 0" if ev.missing_policy == "zero" else "skipped (use --missing zero to count them as 0)"
        parts.append(f"{c['qrels_queries_missing_from_run']} qrels queries missing from the run {verb}")
    if c.get("asked_without_results"):
        parts.append(f"{c['asked_without_results']} queries the run was asked returned nothing (scored 0)")
    if c["queries_without_relevant"]:
        parts.append(f"{c['queries_without_relevant']} evaluated queries have no relevant document (score 0)")
    return "; ".join(parts)


# ------------------------------------------------------------------------------------ evaluate


def run_evaluate(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..metrics.blockwise import blockwise_wanted

    ev = _evaluation(
        args, blockwise_wanted(args.qrels, args.run, args.block_queries, args.qrels_format, args.run_format)
    )
    return _evaluate_output(ev, args)


def _evaluation(args: argparse.Namespace, blockwise: bool) -> Any:
    """The run scored in memory (with the join warnings), or by blocks of queries (big files)."""
    if blockwise:
        from ..metrics.blockwise import evaluate_files

        return evaluate_files(
            args.qrels,
            args.run,
            args.metrics,
            relevance_level=args.relevance_level,
            gain=args.gain,
            missing=args.missing,
            qrels_format=args.qrels_format,
            run_format=args.run_format,
            dedupe=args.dedupe,
            block_queries=args.block_queries,
            keep_per_query=args.per_query,
        )
    from ..metrics.evaluate import evaluate

    qrels, (run,) = _load_pair(args, [args.run])
    ev = evaluate(qrels, run, args.metrics, relevance_level=args.relevance_level, gain=args.gain, missing=args.missing)
    _warn_joins(qrels, [run], [args.run], args)
    return ev


def _evaluate_output(ev: Any, args: argparse.Namespace) -> str | tuple[str, int]:
    """The result rendered; a blockwise result's per-query JSON is written to stdout as its blocks are
    read back (the same document as in memory, its per-query part after the counts)."""
    if args.format == "json" and args.per_query and hasattr(ev, "per_query_blocks"):
        import json

        from ..product.formatting import to_json

        head = to_json(ev.to_dict(per_query=False))
        sys.stdout.write(head[: head.rfind("\n}")] + ',\n  "per_query": {')
        names = ev.metric_names
        sep = "\n"
        for ids, values in ev.per_query_blocks():
            sys.stdout.write(
                "".join(
                    (",\n" if i else sep)
                    + f"    {json.dumps(q, ensure_ascii=False)}: "
                    + json.dumps(dict(zip(names, row)), allow_nan=False)
                    for i, (q, row) in enumerate(zip(ids, values.tolist()))
                )
            )
            sep = ",\n"
        sys.stdout.write("\n  }\n}\n")
        return ""
    return render(args, lambda: ev.to_dict(per_query=args.per_query), lambda: _evaluate_text(ev, ev.run_name, args))


def _counts(names: list[str]) -> list[bool]:
    """Which metrics are counts (num_rel, num_ret, ...: totalled over the queries, not averaged)."""
    from ..metrics.measures import parse_measure

    return [parse_measure(m).summed for m in names]


def _shown(value: Any, count: bool) -> Any:
    """A count is shown as the whole number it is (72, not 72.0000); every other value as it is."""
    return int(value) if count and isinstance(value, float) and value.is_integer() else value


def _evaluate_text(ev: Any, run_name: str, args: argparse.Namespace) -> str:
    names = ev.metric_names
    agg = ev.aggregate
    counts = _counts(names)
    if args.per_query and hasattr(ev, "per_query_blocks"):  # blockwise: rows printed block by block
        table = _stream_per_query(ev, names, agg, args.format)
    elif args.per_query:
        rows = [
            [q] + [_shown(float(ev.values[m][i]), c) for m, c in zip(names, counts)] for i, q in enumerate(ev.queries)
        ]
        rows.append(["all"] + [_shown(agg[m], c) for m, c in zip(names, counts)])
        table = render_table(["query"] + names, rows, args.format)
    else:
        table = render_table(["metric", run_name], [[m, _shown(agg[m], c)] for m, c in zip(names, counts)], args.format)
    from ..metrics.rests_on import rests_on_lines

    by_design = frozenset(read_origin(args.qrels).no_relevant or ()) if args.qrels != "-" else frozenset()
    said = "\n".join([*rests_on_lines(ev.rests_on), _counts_line(ev, by_design)])  # the counts stay the last line
    if args.format == "csv":  # stdout stays one CSV table
        print(said, file=sys.stderr)
        return table
    return f"{table}\n\n{said}"


def _stream_per_query(ev: Any, names: list[str], agg: dict[str, float], fmt: str) -> str:
    """A blockwise result's per-query table: its rows written to stdout a block at a time (columns
    as wide as the longest query id and a value of 10 characters), the last row returned."""
    from ..product.formatting import fmt_value, render_table

    counts = _counts(names)
    if fmt in ("csv", "markdown"):
        head, _, _ = render_table(["query"] + names, [["q"] + [0.0] * len(names)], fmt).rpartition("\n")
        sys.stdout.write(head + "\n")
        for ids, values in ev.per_query_blocks():
            rows = [[q] + [_shown(v, c) for v, c in zip(row, counts)] for q, row in zip(ids, values.tolist())]
            sys.stdout.write(
                render_table(["query"] + names, rows, fmt).split("\n", 2 if fmt == "markdown" else 1)[-1] + "\n"
            )
        return render_table(
            ["query"] + names, [["all"] + [_shown(agg[m], c) for m, c in zip(names, counts)]], fmt
        ).split("\n", 2 if fmt == "markdown" else 1)[-1]
    widths = [max(5, ev.longest_query)] + [max(len(m), 10) for m in names]

    def line(cells: list[str]) -> str:
        return "  ".join([cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]).rstrip()

    sys.stdout.write(line(["query"] + names) + "\n" + line(["-" * w for w in widths]) + "\n")
    for ids, values in ev.per_query_blocks():
        sys.stdout.write(
            "".join(
                line([q] + [fmt_value(_shown(v, c)) for v, c in zip(row, counts)]) + "\n"
                for q, row in zip(ids, values.tolist())
            )
        )
    return line(["all"] + [fmt_value(_shown(agg[m], c)) for m, c in zip(names, counts)])


# ------------------------------------------------------------------------------------- compare


def run_compare(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..metrics.compare import compare, runs_by_name

    if len(args.runs) < 2:
        raise UsageError("compare needs at least two runs")
    qrels, runs = _load_pair(args, args.runs)
    cmp = compare(
        qrels,
        runs_by_name(runs, args.runs),
        args.metrics,
        missing=args.missing,
        relevance_level=args.relevance_level,
        gain=args.gain,
        n_permutations=args.permutations,
        n_bootstrap=args.bootstrap,
        confidence=args.confidence,
        seed=args.seed,
        power=args.power,
        effect=args.effect,
    )
    joins = _warn_joins(qrels, runs, args.runs, args, names=list(cmp.runs))
    return render(args, lambda: nan_to_none(cmp.to_dict()), lambda: _compare_text(cmp, args, joins))


def _compare_text(cmp: Any, args: argparse.Namespace, joins: Sequence = ()) -> str:
    means = cmp.means
    first = render_table(
        ["metric"] + cmp.runs,
        [[m] + [_shown(means[r][m], c) for r in cmp.runs] for m, c in zip(cmp.metrics, _counts(cmp.metrics))],
        args.format,
    )
    pct = int(round(cmp.settings["confidence"] * 100))
    from ..product.formatting import fmt_p

    def p(v: float) -> float | str:  # a p-value under 0.0001 is "< 0.0001", never "0.0000" (csv keeps the number)
        return v if args.format == "csv" else fmt_p(v, 4)

    rows = [
        [
            t.run,
            t.metric,
            t.diff,
            f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}]",
            p(t.p_randomization),
            p(t.p_t_test),
            p(t.p_randomization_holm),
            f"{t.wins}/{t.ties}/{t.losses}",
        ]
        for t in cmp.tests
    ]
    second = render_table(
        ["run", "metric", "diff", f"{pct}% CI", "p (rand)", "p (t)", "p (Holm)", "W/T/L"], rows, args.format
    )
    note = (
        f"{len(cmp.queries)} queries; baseline {cmp.runs[0]!r}; diff = run - baseline; "
        f"randomization test with {args.permutations} permutations (seed {args.seed}); "
        "Holm correction over all tests"
    )
    met = [
        f"{j.left.role}: {j.matched} of its {len(j.left.ids)} queries are in the qrels ({len(j.left.ids) - j.matched} "
        f"are not); {len(j.right.ids) - j.matched} of the qrels' {len(j.right.ids)} queries are not in it"
        for j in joins
        if not j.complete
    ]
    from ..metrics.compare import sizing_table

    headers, sized, notes = sizing_table(cmp.to_dict())
    ask = "" if cmp.settings["effect"] else "\nGive --effect D for the queries needed to detect a difference D."
    third = render_table(headers, sized, args.format) + "\n" + "\n".join(notes) + ask
    from ..metrics.rests_on import compare_rests_on_lines

    rests = "".join(f"\n{line}" for line in compare_rests_on_lines(cmp.rests_on))
    return f"{first}\n\n{second}\n\n{third}\n\n{note}{rests}" + "".join(f"\n{m}" for m in met)  # the footer stays last


# --------------------------------------------------------------------------------------- agree


def run_agree(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..data.qrels_files import read_qrels
    from ..metrics.agreement import agree

    if args.runs is not None and len(args.runs) < 2:
        raise UsageError(f"--runs needs at least two runs to compare their rankings (got {len(args.runs)})")
    ref = read_qrels(args.reference, format=args.qrels_format)
    cand = read_qrels(args.candidate, format=args.qrels_format)
    ag = agree(ref, cand, list(args.runs) or None if args.runs else None, metric=args.metric)  # paths: named apart
    from ..data.joins import Join

    Join.of(
        "query ids", "the reference", ref.queries, "the candidate", cand.queries, args.reference, args.candidate
    ).warn(args.format == "json" and args.quiet)
    return render(args, ag.to_dict, lambda: _agree_text(ag, args.format))


def _agree_text(ag: Any, fmt: str) -> str:
    ref, cand = ag.names
    ref_n = ag.pairs + ag.only_reference
    cand_n = ag.pairs + ag.only_candidate

    def kind(side: str) -> str:
        k = ag.origins[side]["kind"]
        return "" if k == "unknown" else f" ({k})"

    j = ag.join or {}
    partial = j and not (j["left"]["ids"] == j["right"]["ids"] == j["left"]["matched"])
    met = (
        f"; query ids: {j['left']['matched']} of {j['left']['ids']} in the reference meet "
        f"{j['right']['matched']} of {j['right']['ids']} in the candidate"
        if partial
        else ""
    )
    who = (
        f"reference: {ref}{kind('reference')}, {ref_n} labels; candidate: {cand}{kind('candidate')}, "
        f"{cand_n} labels; {ag.pairs} pairs labelled by both{met}"
    )
    if ag.scale_warning:  # grades of two scales compared one for one: said before any figure
        who += f"\nwarning: {ag.scale_warning}"
    if ag.same_origin:
        return (
            f"{who}.\nBoth files were labelled by {ref}: comparing them measures no agreement between two "
            "labellers (it would show kappa 1 or near it). Compare labels made by people with the model's, or "
            "two different models or prompts."
        )
    stats = [
        ["pairs judged by both", ag.pairs],
        ["judged only in reference", ag.only_reference],
        ["judged only in candidate", ag.only_candidate],
        ["exact agreement", ag.exact_agreement],
        ["Cohen's kappa", ag.kappa],
        ["kappa, linear weights", ag.kappa_linear],
        ["kappa, quadratic weights", ag.kappa_quadratic],
    ]
    stats += [[f"kappa, grade >= {t}", v] for t, v in ag.kappa_binary.items()]
    stats.append(["Krippendorff's alpha (ordinal)", ag.krippendorff_alpha_ordinal])
    out = [render_table(["statistic", "value"], stats, fmt)]
    labels = [str(g) for g in ag.labels]
    out.append(
        "confusion matrix (rows: reference, columns: candidate)\n"
        + render_table(["ref \\ cand"] + labels, [[g] + row for g, row in zip(labels, ag.confusion)], fmt)
    )
    out.append(
        render_table(
            ["grade", "reference", "candidate"],
            [[str(g), ag.reference_distribution[g], ag.candidate_distribution[g]] for g in ag.labels],
            fmt,
        )
    )
    if ag.run_ranking:
        rr = ag.run_ranking
        out.append(
            render_table(
                ["run", f"{rr['metric']} (reference)", f"{rr['metric']} (candidate)"],
                [[n, v["reference"], v["candidate"]] for n, v in rr["runs"].items()],
                fmt,
            )
        )
        if rr.get("kendall_tau_b") is not None:
            out.append(f"Kendall's tau-b = {_num(rr['kendall_tau_b'])}; Spearman's rho = {_num(rr['spearman_rho'])}")
    out.append(_not_given(ag))
    return who + "\n\n" + "\n\n".join(o for o in out if o)


def _not_given(ag: Any) -> str:
    """Each statistic left blank above, with why it cannot mean anything here (never a 0 or a nan);
    statistics blank for one reason are said together."""
    names = {
        "kappa": "Cohen's kappa",
        "kappa_linear": "its linear weighting",
        "kappa_quadratic": "its quadratic weighting",
        "kappa_ci": "its 95% interval",
        "krippendorff_alpha_ordinal": "Krippendorff's alpha",
    }
    why = ag.why or {}
    reasons: dict[str, list[str]] = {}
    for key, label in names.items():
        if why.get(key):
            reasons.setdefault(why[key], []).append(label)
    for t, reason in (why.get("kappa_binary") or {}).items():
        reasons.setdefault(reason, []).append(f"kappa at grade >= {t}")
    for name, reason in ((ag.run_ranking or {}).get("why") or {}).items():
        reasons.setdefault(reason, []).append("Kendall's tau" if name == "kendall_tau_b" else "Spearman's rho")
    said = [f"not given: {', '.join(labels)}; {reason}" for reason, labels in reasons.items()]
    from ..metrics.kappa_meaning import SIDES

    first = why.get("kappa") or ""
    if any(first.startswith(side) for side in SIDES) and ag.exact_agreement == ag.exact_agreement:
        said.append(
            f"(the two sides give the same grade to {ag.exact_agreement:.0%} of the {ag.pairs} pairs, but a "
            "file that holds one grade only, as generate's qrels do, can measure no agreement: compare labels "
            "that use the whole scale, e.g. people's against the judge's)"
        )
    return "\n".join(said)


def _num(v: float) -> str:
    return "nan" if v != v else f"{v:.4f}"


# ------------------------------------------------------------------------------------ retrieve


def run_retrieve(args: argparse.Namespace) -> str | tuple[str, int]:
    from ..stages.retrieve import retrieve

    result = retrieve(
        args.retriever,
        args.queries,
        chunks=args.chunks,
        id_field=args.id_field,
        k=args.k,
        output=args.output,
        name=args.name,
        quiet=args.quiet,
    ).to_dict()
    return render(args, lambda: result, lambda: _retrieve_text(result))


def _retrieve_text(result: dict) -> str:
    lat = result["latency_ms"]
    lines = [
        f"wrote {result['results']} results for {result['queries']} queries to {result['output']} "
        f"(latency p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms; per query in {result['latency_file']})"
    ]
    if result.get("without_results"):
        lines.append(
            f"{result['without_results']} of the {result['queries']} queries returned nothing: a TREC run "
            f"cannot list them, so {result['asked_file']} names every query asked, and evaluate, compare, "
            "report and run score them 0"
        )
    if result.get("id_field"):
        repeated = f"; {result['repeated']} repeating a chunk of their query dropped" if result.get("repeated") else ""
        lines.append(f"a {result['retriever']} retriever: chunk ids read from its {result['id_field']}{repeated}")
    joined = result.get("chunks")
    if joined:
        run, chunks = joined["left"], joined["right"]
        lines.append(
            f"chunk ids: {run['matched']} of the run's {run['ids']} are chunks of {chunks['file'] or 'the chunks'}; "
            f"{chunks['matched']} of its {chunks['ids']} chunks retrieved"
        )
    return "\n".join(lines)
