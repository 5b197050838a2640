"""Compare runs on the same queries: means, differences, confidence intervals and paired tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..data.coerce import coerce_qrels, coerce_run
from ..data.result_models import CompareResult
from ..data.tables import Qrels, Run
from ..errors import UsageError
from .evaluate import Evaluation, evaluate
from .measure_values import Gain
from .measures.parsing import DEFAULT_MEASURES, Measure, parse_measures
from .power import analyse_pilot, check_design
from .rests_on import compare_rests_on
from .significance import bootstrap_ci, holm, paired_t_test, randomization_test
from .significance_settings import N_BOOTSTRAP, N_PERMUTATIONS, SEED


@dataclass
class Test:
    """One run against the baseline on one metric."""

    run: str
    metric: str
    baseline_mean: float
    mean: float
    diff: float
    ci_low: float
    ci_high: float
    p_randomization: float
    p_t_test: float
    t: float
    wins: int
    ties: int
    losses: int
    p_randomization_holm: float = float("nan")
    p_t_test_holm: float = float("nan")
    sd_diff: float | None = None  # sd of the per-query differences (the pilot's, for sizing)
    mde: float | None = None  # smallest difference these queries detect at the power asked for
    queries_needed: int | None = None  # queries needed to detect the effect asked for (None: none asked)
    power_note: str = ""  # why mde or queries_needed is missing, when it is


@dataclass
class Comparison:
    """Every run's mean per metric, and each run tested against the first (the baseline)."""

    runs: list[str]
    metrics: list[str]
    queries: list[str]
    evaluations: dict[str, Evaluation]
    tests: list[Test]
    settings: dict = field(default_factory=dict)
    qrels: Any = field(default=None, repr=False)  # the qrels scored against: named in the JSON (file, digest, origin)
    counts: dict = field(default_factory=dict)  # run -> how its queries met the qrels (Evaluation.counts)
    rests_on: dict | None = None  # the relevant grade, each run's pool standing, unique relevant (rests_on.py)

    @property
    def means(self) -> dict[str, dict[str, float]]:
        """Each run's aggregate as evaluate gives it: a mean, or a total for the counts (num_rel...)."""
        return {
            name: {m: ev.aggregate[m] if len(ev.queries) else 0.0 for m in self.metrics}
            for name, ev in self.evaluations.items()
        }

    def to_dict(self) -> dict:
        return CompareResult(
            baseline=self.runs[0],
            queries=len(self.queries),
            means=self.means,
            tests=[t.__dict__ for t in self.tests],
            settings=self.settings,
            qrels=self.qrels.describe() if self.qrels is not None else None,
            counts=self.counts or None,
            rests_on=self.rests_on,
        ).to_dict()


def compare(
    qrels: Qrels | Mapping | str | Path,
    runs: Mapping[str, Run | Mapping | str | Path] | Sequence[Run | str | Path],
    metrics: Iterable[str | Measure] | str | None = None,
    *,
    missing: Literal["skip", "zero"] = "zero",
    relevance_level: int | None = None,
    gain: Gain = "linear",
    n_permutations: int = N_PERMUTATIONS,
    n_bootstrap: int = N_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = SEED,
    power: float = 0.8,
    effect: float | None = None,
) -> Comparison:
    """Compare two or more runs; the first is the baseline every other run is tested against.

    Tests are paired over queries: a randomization (sign-flip) test with ``n_permutations`` and a
    fixed ``seed``, a paired t-test (equal to ``scipy.stats.ttest_rel``), a percentile bootstrap
    ``confidence`` interval of the mean difference, and win/tie/loss counts. With several runs or
    metrics, Holm's correction is applied across all the tests at once.

    Each test also sizes the comparison from these queries (``metrics.power``, Sakai's topic set
    size design with the paired t-test, at alpha = 1 - ``confidence``, two-sided): ``mde``, the
    smallest difference of means the current queries detect with ``power``, and with ``effect`` (an
    absolute difference of means, e.g. 0.02) ``queries_needed`` to detect it. The randomization
    test's figures are taken to be the t-test's (they agree at these sizes).

    ``missing="zero"`` (the default here) scores qrels queries a run did not answer as 0, so every
    run is compared on the same queries (trec_eval -c). With ``"skip"``, only queries every run
    answered are used.
    """
    alpha = round(1.0 - confidence, 12)  # the tests' level, as the interval's
    if not alpha < power:
        raise UsageError(
            f"the power to aim for ({power:g}) must be above the tests' alpha, 1 - confidence "
            f"({alpha:g}): a power of alpha or less asks nothing of the queries"
        )
    check_design(power, alpha, effect)
    qrels = coerce_qrels(qrels)
    named = _named_runs(runs)
    if len(named) < 2:
        raise ValueError("compare needs at least two runs")
    measures = (
        DEFAULT_MEASURES if metrics is None else parse_measures(metrics if isinstance(metrics, str) else list(metrics))
    )
    names = [str(m) for m in measures]
    evals = {
        k: evaluate(qrels, r, measures, relevance_level=relevance_level, gain=gain, missing=missing)
        for k, r in named.items()
    }
    common = sorted(set.intersection(*(set(e.queries) for e in evals.values())))
    aligned = {k: _restrict(e, common) for k, e in evals.items()}

    run_names = list(named)
    base = aligned[run_names[0]]
    tests = [
        _paired_test(
            other,
            m,
            base.values[m],
            aligned[other].values[m],
            n_permutations=n_permutations,
            n_bootstrap=n_bootstrap,
            confidence=confidence,
            seed=seed,
            power=power,
            alpha=alpha,
            effect=effect,
        )
        for other in run_names[1:]
        for m in names
    ]
    _adjust_holm(tests)
    relevance_level = next(iter(evals.values())).relevance_level  # the one every run was scored with
    settings = {
        "missing": missing,
        "relevance_level": relevance_level,
        "gain": gain,
        "n_permutations": n_permutations,
        "n_bootstrap": n_bootstrap,
        "confidence": confidence,
        "seed": seed,
        "power": power,
        "alpha": alpha,
        "effect": None if effect is None else abs(effect),
    }
    return Comparison(
        run_names,
        names,
        common,
        aligned,
        tests,
        settings,
        qrels,
        {k: e.counts for k, e in evals.items()},
        compare_rests_on(evals, qrels, named),
    )


def _named_runs(runs: Mapping[str, Run | Mapping | str | Path] | Sequence[Run | str | Path]) -> dict[str, Run]:
    """The runs by name: the keys given, else each run's own name (a name taken twice gets -2, -3...)."""
    if isinstance(runs, Mapping):
        return {str(k): coerce_run(v, str(k)) for k, v in runs.items()}
    loaded = [coerce_run(r) for r in runs]
    named: dict[str, Run] = {}
    for r in loaded:
        key, i = r.name, 2
        while key in named:
            key, i = f"{r.name}-{i}", i + 1
        named[key] = r
    return named


def _paired_test(
    other: str,
    m: str,
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_permutations: int,
    n_bootstrap: int,
    confidence: float,
    seed: int,
    power: float,
    alpha: float,
    effect: float | None,
) -> Test:
    """One run against the baseline on one metric, paired over the queries, and sized."""
    d = b - a
    lo, hi = bootstrap_ci(d, confidence, n_bootstrap, seed)
    t, p_t = paired_t_test(d)
    sized = analyse_pilot(d, effect, power, alpha)
    return Test(
        run=other,
        metric=m,
        baseline_mean=_mean(a),
        mean=_mean(b),
        diff=_mean(d),
        ci_low=lo,
        ci_high=hi,
        p_randomization=randomization_test(d, n_permutations, seed),
        p_t_test=p_t,
        t=t,
        wins=int((d > 0).sum()),
        ties=int((d == 0).sum()),
        losses=int((d < 0).sum()),
        sd_diff=sized.sd_diff,
        mde=sized.mde,
        queries_needed=sized.queries_needed,
        power_note=sized.note,
    )


def _adjust_holm(tests: list[Test]) -> None:
    """Holm's correction across all the tests at once, of each kind of p-value."""
    for test, adj in zip(tests, holm([test.p_randomization for test in tests])):
        test.p_randomization_holm = adj
    for test, adj in zip(tests, holm([test.p_t_test for test in tests])):
        test.p_t_test_holm = adj


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if len(x) else float("nan")


def _restrict(ev: Evaluation, queries: list[str]) -> Evaluation:
    if ev.queries == queries:
        return ev
    pos = {q: i for i, q in enumerate(ev.queries)}
    idx = np.array([pos[q] for q in queries], dtype=np.int64)
    return Evaluation(
        ev.run_name,
        ev.measures,
        queries,
        {k: v[idx] for k, v in ev.values.items()},
        ev.run_only,
        ev.missing,
        [q for q in ev.no_relevant if q in set(queries)],
        ev.missing_policy,
        ev.relevance_level,
        ev.gain,
        asked_empty=[q for q in ev.asked_empty if q in set(queries)],
    )


def runs_by_name(runs: Sequence[Run], paths: Sequence[str]) -> dict[str, Run]:
    """Runs keyed by their name, in order; a run whose name an earlier one took (two files of one
    retriever) goes by its path. The same file given twice is a usage error."""
    named: dict[str, Run] = {}
    for path, run in zip(paths, runs):
        named[run.name if run.name not in named else path] = run
    if len(named) < len(runs):
        raise UsageError("two runs have the same name and path")
    return named


def sizing_table(result: Mapping[str, Any]) -> tuple[list[str], list[list[Any]], list[str]]:
    """How many queries, from a compare result (``Comparison.to_dict()``, or its JSON read back):
    headers and one row per test (run, metric, sd of the differences, MDE, and the queries needed
    for the effect asked for, when one was), and the notes: the design in one line, then why a
    figure is missing where one is. A result written before sizing existed gives no rows."""
    settings = result.get("settings") or {}
    if "power" not in settings:
        return [], [], []
    effect = settings.get("effect")
    tests = result.get("tests") or []
    headers = ["run", "metric", "sd (diff)", "MDE"] + ([f"queries for {effect:g}"] if effect else [])
    rows = [
        [t["run"], t["metric"], t.get("sd_diff"), t.get("mde")] + ([t.get("queries_needed")] if effect else [])
        for t in tests
    ]
    notes = [
        f"MDE: the smallest difference these {result.get('queries')} queries detect with power "
        f"{settings['power']:g} at alpha {settings['alpha']:g} (two-sided paired t-test, exact, from the sd "
        "of the per-query differences: Sakai's topic set size design).",
        "The randomization test's figures are taken to be the t-test's: it matches the t-test at these sizes.",
    ]
    notes += [f"{t['run']} {t['metric']}: {t['power_note']}" for t in tests if t.get("power_note")]
    return headers, rows, notes
