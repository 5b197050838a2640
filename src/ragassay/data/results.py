"""Typed results of every command that computes something, written as JSON with ``kind`` and
``version`` so that report, track and gate dispatch on the kind instead of guessing from keys."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from .result_models import RESULT_VERSION, RESULTS, Result


def nan_to_none(obj: Any) -> Any:
    """JSON has no NaN or infinity: a value that is not a finite number becomes null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [nan_to_none(v) for v in obj]
    return obj


# the kinds of result that track, gate and report read: the ones with metrics or rates to follow
KINDS = ("evaluate", "compare", "agree", "judge", "check", "generate", "calibration")


def read_result(path: str | Path) -> Result:
    """A result file written with ``--format json``, parsed into the model its ``kind`` names; any
    other JSON (another kind, an unknown version, a field no command writes) is refused with the
    reason."""
    from pydantic import ValidationError

    from .io import read_bytes_checked
    data = read_bytes_checked(path)
    try:
        obj = json.loads(data)
    except UnicodeDecodeError:
        raise InputError("not valid UTF-8 text", path) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", path, e.lineno) from None
    if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        raise InputError("not a ragassay result (no known 'kind'): write one with "
                         f"'ragassay {{{', '.join(KINDS)}}} ... --format json > result.json'", path)
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= RESULT_VERSION:
        raise InputError(f"result version {version!r} is not one this ragassay reads (1..{RESULT_VERSION}); "
                         "upgrade ragassay or rewrite the result", path)
    try:
        return RESULTS[obj["kind"]].model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or obj["kind"]
        raise InputError(f"this {obj['kind']} result breaks its shape ({where}: {err.get('msg')}); was it "
                         "edited?", path) from None


def load_result(path: str | Path) -> dict[str, Any]:
    """:func:`read_result` as the JSON-ready mapping its command wrote (what the report draws from)."""
    return read_result(path).to_dict()


def _number(value: Any, name: str, path: str | Path | None) -> float | None:
    """A metric value: a finite number, or None when the result has none. Anything else is an error:
    a gate must never pass on NaN, infinity, ``true`` or the string "0.99"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"metric {name!r} is {value!r}, not a finite number; this result was not written by "
                         "ragassay or was edited", path)
    return float(value)


def result_metrics(result: Result | Mapping[str, Any], run: str | None = None,
                   path: str | Path | None = None) -> dict[str, float]:
    """{metric name: value} of a result, by its kind. compare: the metrics of ``run`` (default: the
    last run) plus ``RUN/metric`` for every run; check: label rates; judge: grade shares and errors."""
    if isinstance(result, Result):
        result = result.to_dict()
    kind = result["kind"]
    out: dict[str, float | None] = {}
    try:
        if kind == "evaluate":
            out = {k: _number(v, k, path) for k, v in result["aggregate"].items()}
        elif kind == "compare":
            means = result["means"]
            chosen = run or list(means)[-1]
            if chosen not in means:
                raise UsageError(f"run {chosen!r} is not in this comparison (runs: {', '.join(means)})")
            out = {k: _number(v, k, path) for k, v in means[chosen].items()}
            for r, metrics in means.items():
                out.update({f"{r}/{k}": _number(v, f"{r}/{k}", path) for k, v in metrics.items()})
        elif kind == "check":
            s = result["summary"]
            for lab in ("correct", "partial"):
                out[f"{lab}_rate"] = _number(s["rates"][lab]["value"], f"{lab}_rate", path)
            for name in ("hallucination_rate", "abstention_rate", "truthfulness", "correct_given_attempted"):
                out[name] = _number(s[name]["value"], name, path)
            out["errors"] = _number(result.get("errors", s.get("errors")), "errors", path)
        elif kind == "agree":
            for name in ("kappa", "kappa_linear", "kappa_quadratic", "krippendorff_alpha_ordinal"):
                if name in result:
                    out[name] = _number(result[name], name, path)
        elif kind == "judge":
            grades = result["grades"]
            total = sum(grades.values()) or None
            for g, n in grades.items():
                out[f"grade_{g}_share"] = None if total is None else _number(n, f"grade_{g}", path) / total
            out["errors"] = _number(result["errors"], "errors", path)
        elif kind == "generate":
            out = {"accepted": _number(result["accepted"], "accepted", path),
                   "rejected": _number(result["rejected"], "rejected", path)}
        elif kind == "calibration":  # people against the model (ragassay label)
            a = result["model_agreement"]
            out = {"kappa": _number(a["kappa"], "kappa", path), "kappa_binary": _number(a["binary_kappa"],
                                                                                      "kappa_binary", path),
                   "labelled": _number(result["progress"]["labelled"], "labelled", path)}
            if a.get("interval"):
                out["kappa_ci_low"] = _number(a["interval"][0], "kappa_ci_low", path)
                out["kappa_ci_high"] = _number(a["interval"][1], "kappa_ci_high", path)
    except (KeyError, TypeError, AttributeError) as e:
        raise InputError(f"a {kind} result without the expected field {e}; was it edited?", path) from None
    return {k: v for k, v in out.items() if v is not None}


def result_errors(result: Result | Mapping[str, Any]) -> int:
    """Items of a stage result that ended without a label (error records); 0 for metric results."""
    if isinstance(result, Result):
        result = result.to_dict()
    if result["kind"] in ("check", "judge", "generate"):
        value = result.get("errors", 0)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
    return 0
