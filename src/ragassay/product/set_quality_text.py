"""The quality report of a test set as text: one section per question a reader asks of a set."""

from __future__ import annotations

from typing import Any

from .set_measures import TOP
from .set_quality import SetQuality


def quality_text(q: SetQuality) -> str:
    """The report a terminal shows; every figure says how many questions it rests on."""
    lines = [f"test set: {q.questions} questions", f"reproduce: {q.command}", "", _rests_on(q.rests_on), ""]
    lines += _difficulty(q.difficulty) + [""] + _checks(q.checks) + [""]
    lines += _coverage(q.coverage) + [_duplicates(q.duplicates), ""] + _mix(q.mix) + [""] + _power(q.power)
    if q.log is not None:
        lines += [""] + _log(q.log)
    if q.notes:
        lines += ["", "notes:"] + [f"  - {n}" for n in q.notes]
    return "\n".join(lines)


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _rests_on(r: dict[str, Any]) -> str:
    if r["relevant_grade"] is None:
        head = "gold: the questions' own chunk_ids"
    else:
        head = (
            f"gold: {r['gold']} ({r['relevant_grade_source']}); {r['qrels_queries_matched']} questions matched, "
            f"{r['qrels_queries_not_in_set']} qrels queries not in the set"
        )
    return head + f"; {r['without_relevant']} questions without a relevant chunk (left out of the ranks and power)"


def _difficulty(d: dict[str, dict[str, Any]]) -> list[str]:
    out = [
        "difficulty for a lexical retriever (BM25 over all chunks, the question as the query; the best gold "
        "chunk's rank, ties against it):",
        f"  {'asked':<11} {'questions':>9} {'first':>6} {'top ' + str(TOP):>7} {'median rank':>12}",
    ]
    for level, p in d.items():
        median = "-" if p["median_rank"] is None else f"{p['median_rank']:g}"
        out.append(
            f"  {level:<11} {p['questions']:>9} {_share(p['first']):>6} {_share(p[f'top{TOP}']):>7} {median:>12}"
        )
    return out


def _checks(c: dict[str, Any]) -> list[str]:
    if not c["recorded"]:
        return [f"generate's checks: none recorded (a hand-made set, or records without checks) in {c['of']} questions"]
    return [
        f"generate's checks, recorded for {c['recorded']} of {c['of']} questions:",
        f"  answerable from the gold chunks (blind answerer): {c['blind_answerable']} of {c['blind_checked']}",
        f"  blind answer confirmed the reference: {c['answer_confirmed']} of {c['recorded']}",
        f"  hard questions one chunk answered alone: {c['hard_answered_by_one_chunk']} of {c['hard_checked_alone']}",
    ]


def _coverage(c: dict[str, Any]) -> list[str]:
    out = [
        f"corpus touched: {c['chunks_cited']} of {c['chunks']} chunks cited as gold"
        f" ({_share(c['chunks_cited'] / c['chunks'] if c['chunks'] else None)})"
    ]
    if "documents" in c:
        out.append(
            f"  {c['documents_cited']} of {c['documents']} documents ({_share(c['documents_cited'] / c['documents'])})"
        )
    if c["cited_not_in_corpus_count"]:
        out.append(
            f"  {c['cited_not_in_corpus_count']} gold ids not in the chunks file, e.g. "
            + ", ".join(c["cited_not_in_corpus"])
        )
    return out


def _duplicates(d: dict[str, Any]) -> str:
    head = (
        f"near-duplicates: {d['pairs']} pairs ({d['questions_in_pairs']} questions; same words, or "
        f">= {d['similarity']:.0%} of content words shared)"
    )
    return head + ("; e.g. " + ", ".join(" ~ ".join(p) for p in d["examples"]) if d["examples"] else "")


def _mix(m: dict[str, Any]) -> list[str]:
    out = ["mix:"]
    for what in ("difficulty", "kind", "style", "answerable"):
        out.append(f"  {what}: " + ", ".join(f"{k} {v}" for k, v in m[what].items()))
    for k, a in (m.get("asked") or {}).items():
        out.append(f"  asked {k} {a['share']:.0%}: expected {a['expected']:g}, got {a['got']}")
    return out


def _power(p: dict[str, Any]) -> list[str]:
    if "note" in p:
        return [f"power: {p['note']}"]
    diffs = ", ".join(f"{v:.3f} if sd = {k}" for k, v in p["smallest_difference"].items())
    return [
        f"smallest nDCG difference detectable by {p['questions']} questions ({p['power']:.0%} power, "
        f"alpha {p['alpha']:g}, paired t-test): {diffs}",
        f"  sd of per-query differences: {p['sd_source']}",
    ]


def _log(g: dict[str, Any]) -> list[str]:
    s, r = g["set"], g["log"]
    out = [
        f"beside real queries ({g['file']}: {r['questions']}):",
        f"  median words: set {s['median_words']}, log {r['median_words']}; 10th-90th percentile: set "
        f"{s['words_p10_p90']}, log {r['words_p10_p90']}",
        f"  first words: set {_firsts(s)}; log {_firsts(r)}; "
        f"distance (total variation) {_num(g['first_word_distance'])}",
        f"  vocabulary: {_share(g['log_vocabulary_in_set'])} of the log's content words appear in the set "
        f"(Jaccard {_num(g['vocabulary_jaccard'])})",
    ]
    if "log_lexical" in g:
        lx = g["log_lexical"]
        out.append(
            f"  the log's judged gold for BM25 ({lx['questions']} queries, relevant from grade "
            f"{lx['relevant_grade']}): first {_share(lx['first'])}, top {TOP} {_share(lx[f'top{TOP}'])}"
        )
    return out


def _firsts(p: dict[str, Any]) -> str:
    return ", ".join(f"{w} {c}" for w, c in p["first_words"].items()) or "-"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
