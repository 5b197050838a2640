"""The ``check`` result from check records alone: label rates with intervals and, when given, the
retrieval/generation diagnosis, agreement with people, breakdowns by answer fields, the flip rate of
sampled labels and the behaviour on questions without an answer.

It sits apart from the stage that makes the records (:mod:`.check`) because ``report`` builds the
same result from a checks file without running anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.origin import UNKNOWN, origin_of_records
from ..data.result_models import CheckSummary
from ..metrics.labels import breakdown, diagnosis, human_calibration, label_summary
from .check_behaviour import behaviour_summary


def summarise_checks(
    records: Sequence[dict],
    *,
    recall: Mapping[str, float] | None = None,
    threshold: float = 0.5,
    human: Mapping[str, str] | None = None,
    by: Sequence[str] = (),
    fields: Mapping[str, dict] | None = None,
    human_origin: Any = None,
    recall_caveat: str | None = None,
) -> dict:
    """The ``check`` result from check records alone (what ``report`` builds from a checks file).
    ``recall_caveat``: why the recall cannot judge retrieval (the diagnosis then gives no advice).
    ``human_origin`` says who made the ``human`` labels (unknown when not given): the agreement
    names both sides by origin, and gives no statistic when they share a labeller."""
    ok = sum(1 for r in records if r.get("status") == "ok")
    reasons = Counter(str(r.get("error") or "unknown") for r in records if r.get("status") != "ok")
    parts = _summary_parts(records, recall, threshold, human, by, fields, human_origin, recall_caveat)
    return CheckSummary(
        items=len(records),
        ok=ok,
        errors=len(records) - ok,
        error_reasons=dict(reasons.most_common(5)),
        truncated=sum(1 for r in records if r.get("truncated")),
        summary=label_summary(records),
        **parts,
    ).to_dict()


def _summary_parts(
    records: Sequence[dict],
    recall: Mapping[str, float] | None,
    threshold: float,
    human: Mapping[str, str] | None,
    by: Sequence[str],
    fields: Mapping[str, dict] | None,
    human_origin: Any,
    recall_caveat: str | None,
) -> dict[str, Any]:
    """What applies to this run only, left off the result otherwise: breakdowns by answer fields,
    the retrieval/generation diagnosis, agreement with people, the flip rate of sampled labels and
    the behaviour on questions without an answer."""
    parts: dict[str, Any] = {}
    if by:
        enriched = [{**(fields or {}).get(r["id"], {}), **r} for r in records]
        parts["breakdown"] = {f: breakdown(enriched, f) for f in by}
    if recall is not None:
        labels = {r["id"]: r["label"] for r in records if r["status"] == "ok"}
        parts["diagnosis"] = diagnosis(labels, recall, threshold, caveat=recall_caveat)
    if human is not None:
        parts["human"] = _human_agreement(records, human, human_origin)
    if (flip_rate := _flip_rate(records)) is not None:
        parts["flip_rate"] = flip_rate
    if (behaviour := behaviour_summary(records)) is not None:
        parts["behaviour"] = behaviour
    return parts


def _flip_rate(records: Sequence[dict]) -> float | None:
    """The share of answers labelled several times whose samples disagree (None when none was)."""
    multi = [r for r in records if len(r.get("samples") or []) > 1]
    if not multi:
        return None
    return sum(1 for r in multi if len(set(r["samples"])) > 1) / len(multi)


def _human_agreement(records: Sequence[dict], human: Mapping[str, str], human_origin: Any) -> dict[str, Any]:
    """Agreement of the check's labels with people's, both sides named by origin; no statistic when
    the two share a labeller (a labeller compared with itself measures nothing)."""
    theirs = human_origin or UNKNOWN
    grader = origin_of_records(r for r in records if r.get("status") == "ok" and r.get("decided_by") != "rule")
    agreement = {
        **human_calibration(records, human),
        "origin": theirs.summary(),
        "grader": grader.summary(),
        "same_origin": bool(theirs.shared_with(grader)),
    }
    if agreement["same_origin"]:
        agreement.update(kappa=None, rates={}, confusion=[])
    return agreement
