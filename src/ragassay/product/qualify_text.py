"""What ``ragassay qualify`` prints and keeps: each grader's agreement with people as a person reads
it (every figure with what it rests on), and the whole result as ``qualification.json``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..data.json_numbers import nan_to_none
from ..metrics.qualification import LabelAgreement, PairedDifference, bias_sentence
from ..runtime.engine import Estimate
from .qualify_results import Grader, GraderOutcome, Qualification


def write_qualification(result: Qualification, folder: Path) -> Path:
    """``qualification.json`` in ``folder``, written whole or not at all (a crash never leaves half)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "qualification.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(nan_to_none(result.to_dict()), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def estimates_text(estimates: Sequence[Estimate], graders: Sequence[Grader], data_notes: Sequence[str] = ()) -> str:
    """Each grader's dry run, after what the data says of itself (its source, what was dropped or assumed)."""
    lines = list(data_notes)
    for i, (g, e) in enumerate(zip(graders, estimates), 1):
        lines.append(f"grader {i}: {g.name()}")
        lines.extend("  " + line for line in e.text().splitlines())
    return "\n".join(lines)


def qualification_text(q: Qualification, written: Path | None = None) -> str:
    s = q.sample
    unit = s["unit"]
    if q.task == "judge":
        spread = ", ".join(f"grade {c}: {n}" for c, n in s["per_class"].items())
        what = (
            f"{s['items']} pairs of {s['queries']} queries (of {s['of']} people-labelled pairs), people's scale "
            f"{s['scale'][0]}-{s['scale'][1]}, relevant from grade {s['relevant_from']}"
        )
    else:
        spread = ", ".join(f"{c}: {n}" for c, n in s["per_class"].items())
        what = f"{s['items']} answers (of {s['of']} people-labelled answers)"
    lines = [
        f"qualify {q.task} on {what}; stratified by the people's label, seed {s['seed']} ({spread})",
        f"data: {q.source}" + (f" ({q.citation})" if q.citation else ""),
    ]
    lines += [f"note: {n}" for n in q.notes]
    for i, g in enumerate(q.graders, 1):
        lines.append("")
        lines += _grader_lines(i, g, unit)
    if q.ceiling is not None:
        c = q.ceiling
        over_all = f"{_kappa(c.kappa, c.kappa_ci, c.why.get('kappa'))}; " if len(c.classes) > 2 else ""
        lines += [
            "",
            (
                f"ceiling: a second people's labelling of {c.n} of these {unit}: {over_all}at "
                f"{c.positive_words}: {_kappa(c.kappa_binary, c.kappa_binary_ci, c.why.get('kappa_binary'))}"
            ),
        ]
    if q.published:
        lines += [
            "",
            ("published figures (measured on the data they name, not on this sample: reference points, not targets):"),
        ]
        lines += [f"  - {p.grader} on {p.data}: {p.figure} ({p.source})" for p in q.published]
    if written is not None:
        lines += ["", f"qualification: {written}"]
    return "\n".join(lines)


def _grader_lines(i: int, g: GraderOutcome, unit: str) -> list[str]:
    a = g.agreement
    prompts = ", ".join(g.prompts) if g.prompts else "none answered"
    lines = [f"grader {i}: {g.grader.name()} (records name prompt {prompts})"]
    if len(a.classes) > 2:  # with two labels, the kappa over all labels is the binary one: said once
        lines.append(f"  kappa over all labels: {_kappa(a.kappa, a.kappa_ci, a.why.get('kappa'))}")
    lines += [
        f"  kappa at {a.positive_words}: {_kappa(a.kappa_binary, a.kappa_binary_ci, a.why.get('kappa_binary'))}",
        f"  labelled as people did: {_share(a.exact_agreement)} of {a.n} {unit}",
    ]
    if a.n:
        lines.append(f"  {bias_sentence(a, unit)}")
    lines += ["  " + row for row in _confusion(a)]
    if g.by_rule:
        lines.append(f"  {g.by_rule} of the {unit} were decided by the check's rules without a call")
    if g.errors:
        why = "; ".join(f"{n} x {r}" for r, n in sorted(g.error_reasons.items(), key=lambda x: -x[1]))
        lines.append(
            f"  without a label (error records, or not asked): {g.errors} of {a.n + a.missing} {unit}, "
            f"left out of the figures ({why})"
        )
    else:
        lines.append(f"  error records: 0 of {a.n + a.missing} {unit}")
    if g.usage_text:
        lines.append(f"  calls: {g.usage_text}; {_duration(g.seconds)}")
    if g.ranking is not None:
        r = g.ranking
        tau = r.get("kendall_tau_b")
        tau_text = f"{tau:.2f}" if tau is not None else f"not defined ({(r.get('why') or {}).get('kendall_tau_b')})"
        lines.append(f"  {len(r['runs'])} runs ranked by {r['metric']}: Kendall's tau {tau_text}")
    if g.paired is not None:
        lines += ["  " + line for line in _paired_lines(g.paired)]
    if g.output is not None:
        lines.append(f"  records: {g.output}")
    return lines


def _paired_lines(p: PairedDifference) -> list[str]:
    out = [f"against grader 1 on the same {p.n} items (paired):"]
    kinds = (("kappa over all labels", p.kappa),) if len(p.classes) > 2 else ()
    for name, d in kinds + (("kappa at the relevant cut", p.kappa_binary),):
        if d.difference is None:
            out.append(f"  {name}: no difference can be said ({d.why})")
            continue
        ci = f", interval {d.ci[0]:+.2f} to {d.ci[1]:+.2f}" if d.ci else ""
        pv = f", p = {_p(d.p_value)}" if d.p_value is not None else ""
        out.append(f"  {name}: {d.difference:+.2f}{ci}{pv}")
    out.append(
        f"  labelled as people did: {_share(p.exact_a)} against {_share(p.exact_b)}; only this grader right on "
        f"{p.only_a_right}, only grader 1 on {p.only_b_right} (McNemar's exact p = {_p(p.mcnemar_p)})"
    )
    return out


def _confusion(a: LabelAgreement) -> list[str]:
    if not a.n:
        return []
    names = [str(c) for c in a.classes]
    width = max(6, *(len(n) + 1 for n in names))
    head = "people \\ model".ljust(15) + "".join(n.rjust(width) for n in names)
    rows = [n.ljust(15) + "".join(str(v).rjust(width) for v in row) for n, row in zip(names, a.confusion)]
    return [head] + rows


def _kappa(value: float | None, ci: Sequence[float] | None, why: str | None) -> str:
    if value is None:
        return f"not defined ({why})" if why else "not defined"
    if ci:
        return f"{value:.2f} (95% interval {ci[0]:.2f} to {ci[1]:.2f})"
    return f"{value:.2f} (no interval{': ' + why if why else ''})"


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
