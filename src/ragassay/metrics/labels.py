"""Rates of answer labels with intervals, retrieval-vs-answer diagnosis, and human calibration.

Records with ``status: error`` are excluded from every rate and counted apart: a grader failure
is never a label.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .agreement import cohen_kappa, confusion_matrix
from .kappa_meaning import one_grade_why
from .rates import rate

LABELS = ("correct", "partial", "hallucinated", "abstained")
TRUTH_SCORE = {"correct": 1.0, "partial": 0.5, "abstained": 0.0, "hallucinated": -1.0}  # CRAG-style
# what the check writes on an answer the rules could not decide while no endpoint was given: the
# answer waits for a verdict (a rerun with an endpoint gives it); it did not fail
NO_VERDICT_YET = "needs an LLM verdict but no endpoint is configured"


def waiting(record: Mapping) -> bool:
    """Whether a check record is an answer waiting for an LLM verdict (not a failure)."""
    return record.get("status", "ok") != "ok" and NO_VERDICT_YET in str(record.get("error") or "")


def _interval(values: np.ndarray, n_resamples: int, seed: int, unit: str = "answers", binary: bool = True) -> dict:
    return rate(values, unit, n_resamples, seed, binary)


def label_summary(records: Sequence[Mapping], n_resamples: int = 10_000, seed: int = 0) -> dict:
    """Counts and rates per label (95% bootstrap intervals), hallucination and abstention rates,
    correct given attempted, CRAG-style truthfulness (+1 / +0.5 / 0 / -1), answer length per label."""
    ok = [r for r in records if r.get("status", "ok") == "ok" and r.get("label") in LABELS]
    labels = [r["label"] for r in ok]
    n = len(labels)
    wait = sum(1 for r in records if waiting(r))
    out: dict = {
        "answers": len(records),
        "graded": n,
        "waiting": wait,
        "errors": len(records) - n - wait,
        "counts": {lab: labels.count(lab) for lab in LABELS},
    }
    arr = np.array(labels)
    out["rates"] = {lab: _interval((arr == lab).astype(float), n_resamples, seed) for lab in LABELS}
    out["hallucination_rate"] = out["rates"]["hallucinated"]
    out["abstention_rate"] = out["rates"]["abstained"]
    attempted = arr[arr != "abstained"]
    out["correct_given_attempted"] = _interval(
        (attempted == "correct").astype(float), n_resamples, seed, "attempted answers"
    )
    out["truthfulness"] = _interval(np.array([TRUTH_SCORE[x] for x in labels]), n_resamples, seed, binary=False)
    lengths: dict[str, list[int]] = {}
    for r in ok:
        if r.get("response_words") is not None:
            lengths.setdefault(r["label"], []).append(int(r["response_words"]))
    out["mean_response_words"] = {
        lab: (float(np.mean(v)) if v else None) for lab, v in ((lab, lengths.get(lab, [])) for lab in LABELS)
    }
    return out


def breakdown(records: Sequence[Mapping], field: str, n_resamples: int = 2_000, seed: int = 0) -> dict:
    """``label_summary`` for each value of a record field (difficulty, kind, document, ...)."""
    groups: dict[str, list[Mapping]] = {}
    for r in records:
        groups.setdefault(str(r.get(field, "(none)")), []).append(r)
    return {k: label_summary(v, n_resamples, seed) for k, v in sorted(groups.items())}


def diagnosis(
    labels: Mapping[str, str],
    retrieval: Mapping[str, float],
    threshold: float = 0.5,
    examples: int = 5,
    caveat: str | None = None,
) -> dict:
    """Retrieval success (recall of the gold chunks) beside the answer label, per question.

    Cells: good retrieval + good answer; good retrieval + bad answer (the generator's fault); bad
    retrieval + good answer (lucky, fragile); bad retrieval + bad answer (fix retrieval first).
    A good answer is a correct one. Questions missing on either side are counted apart. ``caveat``:
    why the recall cannot tell good retrieval from bad; the cells are counted, and no advice given.
    """
    cells: dict[str, list[str]] = {
        "good_retrieval_good_answer": [],
        "good_retrieval_bad_answer": [],
        "bad_retrieval_good_answer": [],
        "bad_retrieval_bad_answer": [],
    }
    missing = [q for q in labels if q not in retrieval]
    for qid, label in labels.items():
        if qid not in retrieval:
            continue
        r = "good_retrieval" if retrieval[qid] >= threshold else "bad_retrieval"
        a = "good_answer" if label == "correct" else "bad_answer"
        cells[f"{r}_{a}"].append(qid)
    table = {k: {"count": len(v), "examples": sorted(v)[:examples]} for k, v in cells.items()}
    gen, ret = len(cells["good_retrieval_bad_answer"]), len(cells["bad_retrieval_bad_answer"])
    diagnosed = sum(len(v) for v in cells.values())
    if diagnosed == 0:  # nothing is said about none: no cell is a finding
        advice = (
            f"no answer could be diagnosed: none of the {len(labels)} graded answers has a question in the qrels"
            if labels
            else "no answer could be diagnosed: no answer was graded"
        )
    elif caveat:
        advice = f"no advice: {caveat}"
    elif gen == 0 and ret == 0:
        advice = f"no wrong answers among the {diagnosed} diagnosed questions"
    elif ret >= gen:
        advice = f"fix retrieval first: {ret} wrong answers had poor retrieval, {gen} had good retrieval"
    else:
        advice = f"fix generation first: {gen} wrong answers had good retrieval, {ret} had poor retrieval"
    return {
        "threshold": threshold,
        "cells": table,
        "diagnosed": diagnosed,
        "not_diagnosed": len(missing),
        "advice": advice,
    }


def ppi_mean(llm_all: np.ndarray, llm_labeled: np.ndarray, human_labeled: np.ndarray, confidence: float = 0.95) -> dict:
    """Prediction-powered estimate of a mean (Angelopoulos et al., 2023) with a normal interval.

    ``llm_all``: the LLM's 0/1 values on the items people did not label; ``llm_labeled`` and
    ``human_labeled``: both sides on the items people labelled. The estimate is the LLM mean
    corrected by the average LLM-minus-human error measured on the labelled subset.
    """
    n, big_n = len(human_labeled), len(llm_all)
    if n < 2:
        return {"value": None, "ci_low": None, "ci_high": None}
    rectifier = llm_labeled - human_labeled
    if big_n == 0:  # people labelled everything: the classical estimate
        est, var = float(human_labeled.mean()), float(human_labeled.var(ddof=1)) / n
    else:
        est = float(llm_all.mean() - rectifier.mean())
        var = (float(llm_all.var(ddof=1)) / big_n if big_n > 1 else 0.0) + float(rectifier.var(ddof=1)) / n
    z = _normal_quantile(0.5 + confidence / 2)
    half = z * math.sqrt(var)
    # a rate lies in [0, 1]: the correction can carry the estimate or its interval past the ends on
    # small labelled sets, and a rate of 1.27 would only confuse. Clipped there (the width in
    # ``unclipped`` tells how far it went).
    return {
        "value": min(1.0, max(0.0, est)),
        "ci_low": max(0.0, est - half),
        "ci_high": min(1.0, est + half),
        "unclipped": [est - half, est, est + half],
    }


def _normal_quantile(p: float) -> float:
    """Inverse standard normal CDF by bisection on erfc (to ~1e-12)."""
    lo, hi = -10.0, 10.0
    for _ in range(200):  # bisection on the CDF: simple and exact enough (1e-12)
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def human_calibration(
    records: Sequence[Mapping], human: Mapping[str, str], n_resamples: int = 10_000, seed: int = 0
) -> dict:
    """Agreement of the grader with people on the labelled subset, and prediction-powered rates."""
    ok, both, x, y = _labelled_pairs(records, human)
    present = sorted(set(x.tolist()) | set(y.tolist()))
    # a kappa that cannot mean anything: None, and why
    one = one_grade_why(x, y, ("people", "the grader"), "answers", lambda i: f"the label {LABELS[i]}")
    out: dict = {
        "pairs": len(both),
        "kappa": None if one else cohen_kappa(x, y),
        "labels": [LABELS[i] for i in present],
        "confusion": confusion_matrix(x, y, present).tolist() if len(both) else [],
        "rates": {},
    }
    if one:
        out["why"] = {"kappa": one}
    unlabeled = [q for q in ok if q not in human]
    for lab in LABELS:  # every label, never a chosen few
        out["rates"][lab] = _label_rates(lab, ok, human, both, unlabeled, n_resamples, seed)
    return out


def _labelled_pairs(
    records: Sequence[Mapping], human: Mapping[str, str]
) -> tuple[dict[str, str], list[str], np.ndarray, np.ndarray]:
    """The grader's labels by answer id, the ids people labelled too, and both sides' labels of those
    as codes (people's, then the grader's)."""
    ok = {r["id"]: r["label"] for r in records if r.get("status", "ok") == "ok" and r.get("label") in LABELS}
    both = [q for q in ok if q in human and human[q] in LABELS]
    codes = {lab: i for i, lab in enumerate(LABELS)}
    x = np.array([codes[human[q]] for q in both], dtype=np.int64)
    y = np.array([codes[ok[q]] for q in both], dtype=np.int64)
    return ok, both, x, y


def _label_rates(
    lab: str,
    ok: Mapping[str, str],
    human: Mapping[str, str],
    both: list[str],
    unlabeled: list[str],
    n_resamples: int,
    seed: int,
) -> dict:
    """One label's rate three ways: prediction-powered (every grader label, corrected by the labelled
    subset), the grader's alone and people's alone."""
    llm_all = np.array([ok[q] == lab for q in unlabeled], dtype=float)
    llm_lab = np.array([ok[q] == lab for q in both], dtype=float)
    hum_lab = np.array([human[q] == lab for q in both], dtype=float)
    naive_llm = _interval(np.array([v == lab for v in ok.values()], dtype=float), n_resamples, seed)
    naive_human = _interval(hum_lab, n_resamples, seed)
    return {"prediction_powered": ppi_mean(llm_all, llm_lab, hum_lab), "llm_only": naive_llm, "human_only": naive_human}
