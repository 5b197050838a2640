"""Typed results of every command that computes something, written as JSON with ``kind`` and
``version`` so that report, track and gate dispatch on the kind instead of guessing from keys."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError, UsageError
from .lines import read_bytes_checked
from .result_models import (
    RESULT_VERSION,
    RESULTS,
    AgreeResult,
    CalibrationResult,
    CheckSummary,
    CompareResult,
    EvaluateResult,
    GenerateSummary,
    JudgeSummary,
    Result,
)

# the kinds of result that track, gate and report read: the ones with metrics or rates to follow
KINDS = ("evaluate", "compare", "agree", "judge", "check", "generate", "calibration")


def read_result(path: str | Path) -> Result:
    """A result file written with ``--format json``, parsed into the model its ``kind`` names; any
    other JSON (another kind, an unknown version, a field no command writes) is refused with the
    reason."""
    data = read_bytes_checked(path)
    try:
        obj = json.loads(data)
    except UnicodeDecodeError:
        raise InputError("not valid UTF-8 text", path) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", path, e.lineno) from None
    if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        raise InputError(
            "not a ragassay result (no known 'kind'): write one with "
            f"'ragassay {{{', '.join(KINDS)}}} ... --format json > result.json'",
            path,
        )
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= RESULT_VERSION:
        raise InputError(
            f"result version {version!r} is not one this ragassay reads (1..{RESULT_VERSION}); "
            "upgrade ragassay or rewrite the result",
            path,
        )
    try:
        return RESULTS[obj["kind"]].model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or obj["kind"]
        raise InputError(
            f"this {obj['kind']} result breaks its shape ({where}: {err.get('msg')}); was it edited?", path
        ) from None


def load_result(path: str | Path) -> dict[str, Any]:
    """:func:`read_result` as the JSON-ready mapping its command wrote (what the report draws from)."""
    return read_result(path).to_dict()


def _number(value: Any, name: str, path: str | Path | None) -> float | None:
    """A metric value: a finite number, or None when the result has none. Anything else is an error:
    a gate must never pass on NaN, infinity, ``true`` or the string "0.99"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(
            f"metric {name!r} is {value!r}, not a finite number; this result was not written by ragassay or was edited",
            path,
        )
    return float(value)


def as_result(result: Result | Mapping[str, Any], path: str | Path | None = None) -> Result:
    """A result as its kind's model (a mapping, e.g. a result built in a notebook, is parsed)."""
    if isinstance(result, Result):
        return result
    kind = result.get("kind")
    if kind not in RESULTS:
        raise InputError(f"not a ragassay result (kind {kind!r}; known: {', '.join(RESULTS)})", path)
    try:
        return RESULTS[kind].model_validate(dict(result))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or kind
        raise InputError(
            f"this {kind} result breaks its shape ({where}: {err.get('msg')}); was it edited?", path
        ) from None


def _needed(value: Any, kind: str, name: str, path: str | Path | None) -> Any:
    if value is None:
        raise InputError(f"a {kind} result without the expected field {name!r}; was it edited?", path)
    return value


def result_metrics(
    result: Result | Mapping[str, Any], run: str | None = None, path: str | Path | None = None
) -> dict[str, float]:
    """{metric name: value} of a result, by its kind. compare: the metrics of ``run`` (default: the
    last run) plus ``RUN/metric`` for every run; check: label rates; judge: grade shares and errors."""
    result = as_result(result, path)
    kind = result.kind
    out: dict[str, float | None] = {}
    try:
        if isinstance(result, EvaluateResult):
            aggregate = _needed(result.aggregate, kind, "aggregate", path)
            out = {k: _number(v, k, path) for k, v in aggregate.items()}
        elif isinstance(result, CompareResult):
            out = _compare_metrics(result, run, path)
        elif isinstance(result, CheckSummary):
            out = _check_metrics(result, path)
        elif isinstance(result, AgreeResult):
            out = _agree_metrics(result, path)
        elif isinstance(result, JudgeSummary):
            out = _judge_metrics(result, path)
        elif isinstance(result, GenerateSummary):
            out = {
                "accepted": _number(_needed(result.accepted, kind, "accepted", path), "accepted", path),
                "rejected": _number(_needed(result.rejected, kind, "rejected", path), "rejected", path),
            }
        elif isinstance(result, CalibrationResult):  # people against the model (ragassay label)
            out = _calibration_metrics(result, path)
    except (KeyError, TypeError, AttributeError) as e:
        raise InputError(f"a {kind} result without the expected field {e}; was it edited?", path) from None
    return {k: v for k, v in out.items() if v is not None}


def _compare_metrics(result: Any, run: str | None, path: str | Path | None) -> dict[str, float | None]:
    """The metrics of ``run`` (default: the last run), then ``RUN/metric`` for every run."""
    means = _needed(result.means, result.kind, "means", path)
    chosen = run or list(means)[-1]
    if chosen not in means:
        raise UsageError(f"run {chosen!r} is not in this comparison (runs: {', '.join(means)})")
    out = {k: _number(v, k, path) for k, v in means[chosen].items()}
    for r, metrics in means.items():
        out.update({f"{r}/{k}": _number(v, f"{r}/{k}", path) for k, v in metrics.items()})
    return out


def _agree_metrics(result: Any, path: str | Path | None) -> dict[str, float | None]:
    """An agree result's kappas and alpha; refused when the two sides share a labeller."""
    if result.same_origin:
        raise InputError(
            f"this agree result compares {' and '.join(result.names or ['one labeller'])}, "
            "which share a labeller: it holds no agreement to track or gate",
            path,
        )
    out: dict[str, float | None] = {}
    for name, value in (
        ("kappa", result.kappa),
        ("kappa_linear", result.kappa_linear),
        ("kappa_quadratic", result.kappa_quadratic),
        ("krippendorff_alpha_ordinal", result.krippendorff_alpha_ordinal),
    ):
        out[name] = _number(value, name, path)
    return out


def _judge_metrics(result: Any, path: str | Path | None) -> dict[str, float | None]:
    """A judge summary's share of each grade, and its errors."""
    grades = _needed(result.grades, result.kind, "grades", path)
    total = sum(grades.values()) or None
    out: dict[str, float | None] = {}
    for g, n in grades.items():
        out[f"grade_{g}_share"] = None if total is None else _number(n, f"grade_{g}", path) / total
    out["errors"] = _number(_needed(result.errors, result.kind, "errors", path), "errors", path)
    return out


def _check_metrics(result: Any, path: str | Path | None) -> dict[str, float | None]:
    """A check summary's label rates, truthfulness and errors."""
    s = _needed(result.summary, result.kind, "summary", path)  # label_summary's table of rates
    out: dict[str, float | None] = {}
    for lab in ("correct", "partial"):
        out[f"{lab}_rate"] = _number(s["rates"][lab]["value"], f"{lab}_rate", path)
    for name in ("hallucination_rate", "abstention_rate", "truthfulness", "correct_given_attempted"):
        out[name] = _number(s[name]["value"], name, path)
    out["errors"] = _number(result.errors if result.errors is not None else s.get("errors"), "errors", path)
    b = result.behaviour or {}  # a set with unanswerable or false-premise questions: their rates too
    for name in ("answered_when_unanswerable", "over_refusal", "premise_corrected"):
        if b.get(name, {}).get("value") is not None:
            out[name] = _number(b[name]["value"], name, path)
    if b.get("answerable"):
        out["answerable_correct_rate"] = _number(b["answerable"]["rates"]["correct"]["value"], "correct", path)
        out["answerable_hallucination_rate"] = _number(
            b["answerable"]["rates"]["hallucinated"]["value"], "hallucinated", path
        )
    return out


def _calibration_metrics(result: Any, path: str | Path | None) -> dict[str, float | None]:
    """A calibration's kappa with the model (and its interval) and how many labels it rests on."""
    a = _needed(result.model_agreement, result.kind, "model_agreement", path)  # labeling's agreement table
    progress = _needed(result.progress, result.kind, "progress", path)
    out = {
        "kappa": _number(a["kappa"], "kappa", path),
        "kappa_binary": _number(a["binary_kappa"], "kappa_binary", path),
        "labelled": _number(progress["labelled"], "labelled", path),
    }
    if a.get("interval"):
        out["kappa_ci_low"] = _number(a["interval"][0], "kappa_ci_low", path)
        out["kappa_ci_high"] = _number(a["interval"][1], "kappa_ci_high", path)
    return out


def result_errors(result: Result | Mapping[str, Any]) -> int:
    """Items of a stage result that ended without a label (error records); 0 for metric results."""
    result = as_result(result)
    if isinstance(result, (CheckSummary, JudgeSummary, GenerateSummary)):
        value = getattr(result, "errors", 0)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
    return 0
