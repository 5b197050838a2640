"""Results over time (``track`` and ``history``) and a gate for CI (``gate``), read from the JSON
that evaluate, compare and check write.

``track`` adds a result's metrics, settings and git commit to a SQLite history, so that a team can
see a metric move from one commit to the next; ``history`` reads that back. ``gate`` checks one
result against minimum and maximum thresholds, so that a CI job fails when a metric falls below
what the team accepts.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from ..data.result_models import GateResult, HistoryResult, TrackedResult, TrackResult
from ..data.results import read_result, result_errors, result_metrics
from ..data.sqlite_files import open_own_database
from ..errors import InputError, MeasureError, UsageError
from ..metrics.measures import parse_measure, split_measure_list
from ..metrics.rests_on import uses_relevance

DEFAULT_DB = Path(".ragassay") / "history.sqlite"


def parse_thresholds(items: list[str] | None, flag: str) -> dict[str, float]:
    out = {}
    # a list in one flag, as -m takes it: commas outside parentheses separate thresholds
    for item in [part for given in items or [] for part in split_measure_list(given)]:
        name, sep, value = item.rpartition("=")  # the value follows the last '=': P(rel=2)@5=0.4
        if not sep or not name.strip():
            raise UsageError(f"{flag} needs METRIC=VALUE, e.g. {flag} ndcg@10=0.6 (got {item!r})")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"{flag} {item!r}: {value!r} is not a number") from None
        if out[name.strip()] != out[name.strip()] or out[name.strip()] in (float("inf"), float("-inf")):
            raise UsageError(
                f"{flag} {item!r}: the threshold must be a finite number (nan passes no test, "
                "and an infinite one tests nothing)"
            )
    return out


def canonical(name: str) -> str:
    """Metric names in thresholds may use any accepted spelling (nDCG@10, P_5)."""
    prefix, slash, rest = name.rpartition("/")
    try:
        base = str(parse_measure(rest))
    except MeasureError:
        base = rest
    return f"{prefix}/{base}" if slash else base


def gate(
    values: Mapping[str, float],
    mins: Mapping[str, float],
    maxs: Mapping[str, float],
    errors: int = 0,
    allow_errors: int = 0,
) -> list[str]:
    """Failed thresholds, as sentences; empty when all hold. A missing metric fails, and so does a
    stage result with more error (ungraded) items than ``allow_errors``."""
    failures = []
    if errors > allow_errors:
        failures.append(
            f"{errors} items of this result are errors (ungraded), more than --allow-errors "
            f"{allow_errors}: rerun the stage to retry them"
        )
    for name, limit in mins.items():
        key = canonical(name)
        if key not in values:
            failures.append(f"{name}: not in the result (has: {', '.join(sorted(values)[:12])})")
        elif values[key] < limit:
            failures.append(f"{key} = {values[key]:.4f} is below the minimum {limit}")
    for name, limit in maxs.items():
        key = canonical(name)
        if key not in values:
            failures.append(f"{name}: not in the result (has: {', '.join(sorted(values)[:12])})")
        elif values[key] > limit:
            failures.append(f"{key} = {values[key]:.4f} is above the maximum {limit}")
    return failures


def git_commit(cwd: str | Path = ".") -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


class History:
    def __init__(self, path: str | Path = DEFAULT_DB):
        self.path = Path(path)
        # a broken, foreign or read-only --db is one clear line, never a table made in someone's database
        self.db = open_own_database(self.path, {"results"}, "history", "--db")
        try:
            self.db.execute("""CREATE TABLE IF NOT EXISTS results (
                id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, label TEXT, commit_id TEXT,
                kind TEXT NOT NULL, source TEXT, metrics TEXT NOT NULL, settings TEXT)""")
            have = {row[1] for row in self.db.execute("PRAGMA table_info(results)")}
            for column in ("run", "qrels"):  # added later: what makes two rows comparable
                if column not in have:
                    self.db.execute(f"ALTER TABLE results ADD COLUMN {column} TEXT")
        except sqlite3.Error as e:
            raise InputError(f"--db: the history cannot be used ({e}); give another path", self.path) from None

    def add(
        self,
        kind: str,
        metrics: Mapping[str, float],
        label: str | None,
        source: str,
        settings: Mapping | None = None,
        commit: str | None = None,
        run: str | None = None,
        qrels: Mapping | None = None,
    ) -> int:
        cur = self.db.execute(
            "INSERT INTO results (created, label, commit_id, kind, source, metrics, settings, run, qrels) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                time.time(),
                label,
                commit,
                kind,
                source,
                json.dumps(dict(metrics)),
                json.dumps(settings or {}),
                run,
                json.dumps(dict(qrels)) if qrels else None,
            ),
        )
        if cur.lastrowid is None:  # sqlite gives the row id of every INSERT
            raise RuntimeError("the history database gave no id for the row it stored")
        return int(cur.lastrowid)

    def rows(self, run: str | None = None) -> list[TrackedResult]:
        """Every tracked result in order (only those of the run named ``run``, when given)."""
        out = []
        for rid, created, label, commit, kind, source, metrics, settings, run_name, qrels in self.db.execute(
            "SELECT id, created, label, commit_id, kind, source, metrics, settings, run, qrels FROM results ORDER BY id"
        ):
            if run is not None and run_name != run:
                continue
            out.append(
                TrackedResult(
                    id=rid,
                    created=created,
                    label=label,
                    commit=commit,
                    kind=kind,
                    source=source,
                    metrics=json.loads(metrics),
                    run=run_name,
                    qrels=json.loads(qrels) if qrels else None,
                    settings=json.loads(settings) if settings else None,
                )
            )
        return out

    def trend(self, metric: str, run: str | None = None) -> list[TrackedResult]:
        """Each result that has ``metric``, with deltas against the previous result and the best so far
        **of the same series**: the same run, on the same qrels (by content digest), with the same
        settings that change a metric's value. A result that names no run or no qrels (a check
        result, or one tracked before these were kept) starts no trend with any other."""
        key = canonical(metric)
        lower_is_better = key.endswith(("hallucination_rate", "errors", "answered_when_unanswerable", "over_refusal"))
        out = []
        prev: dict[tuple, float] = {}
        best: dict[tuple, float] = {}
        for r in self.rows(run):
            if key not in r.metrics:
                continue
            v = r.metrics[key]
            series = _series(r, key)
            p, b = (prev.get(series), best.get(series)) if series is not None else (None, None)
            out.append(
                r.model_copy(
                    update={
                        "value": v,
                        "delta_previous": None if p is None else v - p,
                        "delta_best": None if b is None else v - b,
                        "series": None if series is None else _series_name(r, key),
                    }
                )
            )
            if series is not None:
                prev[series] = v
                best[series] = v if b is None else (min(b, v) if lower_is_better else max(b, v))
        return out

    def close(self) -> None:
        self.db.close()


METRIC_SETTINGS = ("relevance_level", "gain", "missing")  # settings that change a ranking metric's value


def _settings_of(metric: str | None) -> tuple[str, ...]:
    """The settings that change ``metric``'s value: the relevant grade only for the measures that
    count relevance from a grade (not NDCG's gains); all of them for a name that is no measure."""
    if metric is None:
        return METRIC_SETTINGS
    try:
        uses = bool(uses_relevance([metric]))
    except ValueError:
        return METRIC_SETTINGS
    return METRIC_SETTINGS if uses else tuple(k for k in METRIC_SETTINGS if k != "relevance_level")


def _series(r: TrackedResult, metric: str | None = None) -> tuple | None:
    """What two results must share for a trend of ``metric`` between them to mean anything; None: no series."""
    if r.kind in ("evaluate", "compare"):
        digest = (r.qrels or {}).get("digest")
        if not r.run or not digest:
            return None
        settings = r.settings or {}
        return ("ranking", r.run, digest, tuple(str(settings.get(k)) for k in _settings_of(metric)))
    if r.kind == "check" and r.qrels is None:  # answer labels: one series per run name (None: the answers)
        return ("check", r.run)
    return (r.kind, r.run, (r.qrels or {}).get("digest"))


def _series_name(r: TrackedResult, metric: str | None = None) -> str:
    """The series in words: run, qrels (digest and labeller) and the settings that change a value."""
    q = r.qrels or {}
    origin = (q.get("origin") or {}).get("describe", "unknown")
    settings = r.settings or {}
    settings_text = ", ".join(
        f"relevant = grade ≥ {settings[k]}" if k == "relevance_level" else f"{k} {settings[k]}"
        for k in _settings_of(metric)
        if k in settings
    )
    name = f"{r.run or r.kind} on qrels {q.get('digest', '?')[:8]} ({origin})" if q else (r.run or r.kind)
    return f"{name}, {settings_text}" if settings_text and r.kind in ("evaluate", "compare") else name


# ------------------------------------------------------- what the track, history and gate commands call


def track(
    result: str | Path, db: str | Path = DEFAULT_DB, label: str | None = None, run: str | None = None
) -> TrackResult:
    """Add the result JSON ``result`` (of evaluate, compare, check, ...) to the history ``db``: its
    metrics (of the run ``run`` in a compare result), settings, the time and the git commit."""
    parsed = read_result(result)
    metrics = result_metrics(parsed, run, result)
    run_name = result_run(parsed, run)
    qrels = getattr(parsed, "qrels", None)
    h = History(db)
    try:
        rid = h.add(
            parsed.kind,
            metrics,
            label,
            str(result),
            getattr(parsed, "settings", None),
            git_commit(),
            run=run_name,
            qrels=qrels,
        )
    finally:
        h.close()
    return TrackResult(
        id=rid, result_kind=parsed.kind, metrics=metrics, label=label, db=str(db), run=run_name, qrels=qrels
    )


def result_run(parsed: object, run: str | None = None) -> str | None:
    """Which run a result's metrics are of: evaluate's run; compare's chosen run (default the last)."""
    kind = getattr(parsed, "kind", None)
    if kind == "evaluate":
        return getattr(parsed, "run", None)
    if kind == "compare":
        means = getattr(parsed, "means", None) or {}
        return run or (list(means)[-1] if means else None)
    if kind == "agree":  # an agreement's series is its two labellers
        names = getattr(parsed, "names", None)
        return " vs ".join(names) if names else None
    return None


def read_history(db: str | Path = DEFAULT_DB, metric: str | None = None, run: str | None = None) -> HistoryResult:
    """The results tracked in ``db`` (of the run named ``run``, when given), or the values of
    ``metric`` over them, each trend within one series (same run, same qrels, same settings);
    InputError when there is no history yet (a missing database is not made by a read)."""
    if not Path(db).exists():
        raise InputError("no history yet: record results with 'ragassay track RESULT.json'", db)
    h = History(db)
    try:
        if run is not None:
            _known_run(run, h.rows(), db)
        if metric:
            _known_metric(metric, h.rows(run))
        return HistoryResult(metric=metric or None, run=run, results=h.trend(metric, run) if metric else h.rows(run))
    finally:
        h.close()


def _known_run(run: str, rows: list[TrackedResult], db: str | Path) -> None:
    """A run name the history has no result of is an InputError naming the runs it has (with the
    nearest): an empty answer would read as "no results yet" when the name is what is wrong."""
    names = sorted({r.run for r in rows if r.run})
    if run in names:
        return
    close = difflib.get_close_matches(run, names, n=1, cutoff=0.6)
    has = (
        f"the runs it has: {', '.join(names[:20])}{', ...' if len(names) > 20 else ''}"
        if names
        else "it has no result that names a run"
    )
    raise InputError(
        f"no tracked result of the run {run!r} in this history; {has}"
        + (f"; did you mean {close[0]!r}?" if close else ""),
        db,
    )


def _known_metric(metric: str, rows: list[TrackedResult]) -> None:
    """A metric name that is neither a measure ragassay knows nor any tracked result's metric is a
    UsageError (with the nearest name tracked): a typo, not an empty history."""
    tracked = sorted({name for r in rows for name in r.metrics})
    if canonical(metric) in tracked:
        return
    try:
        parse_measure(metric.rpartition("/")[2])
        return  # a measure: that none is tracked yet is the answer
    except MeasureError as e:
        close = difflib.get_close_matches(canonical(metric), tracked, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else (f" ({e})" if str(e) else "")
        raise UsageError(f"--metric {metric!r} is not a metric of any tracked result{hint}") from None


def gate_result(
    result: str | Path,
    mins: Mapping[str, float],
    maxs: Mapping[str, float],
    run: str | None = None,
    allow_errors: int = 0,
) -> GateResult:
    """Check the result JSON ``result`` against the thresholds (see :func:`gate`). A threshold name
    close to one of the result's metrics but not in it is a UsageError (a typo, not a failed gate)."""
    parsed = read_result(result)
    values = result_metrics(parsed, run, result)
    for name in [*mins, *maxs]:
        key = canonical(name)
        close = difflib.get_close_matches(key, list(values), n=1, cutoff=0.8) if key not in values else []
        if close:
            raise UsageError(f"{name!r} is not in this {parsed.kind} result; did you mean {close[0]!r}?")
    failures = gate(values, mins, maxs, result_errors(parsed), allow_errors)
    return GateResult(
        passed=not failures,
        failures=failures,
        result_kind=parsed.kind,
        run=_gated_runs(parsed, run, [*mins, *maxs]),
        qrels=getattr(parsed, "qrels", None),
        rests_on=getattr(parsed, "rests_on", None),
    )


def _gated_runs(parsed: object, run: str | None, names: list[str]) -> str | None:
    """The runs a gate's thresholds check: in a compare result, a ``RUN/metric`` name checks RUN and
    a bare name the chosen run (``--run``, default the last). A prefix naming another run than
    ``--run`` is a UsageError: the two say different things."""
    if getattr(parsed, "kind", None) != "compare":
        return result_run(parsed, run)
    means = getattr(parsed, "means", None) or {}
    named = [n.split("/", 1)[0] for n in names if "/" in n and n.split("/", 1)[0] in means]
    if run is not None and any(r != run for r in named):
        other = next(r for r in named if r != run)
        raise UsageError(
            f"a threshold names the run {other!r} and the run asked for is {run!r}: name the run "
            "one way (RUN/metric, or the run option with bare metric names)"
        )
    bare = any("/" not in n or n.split("/", 1)[0] not in means for n in names)
    runs = list(dict.fromkeys(named + ([result_run(parsed, run)] if bare else [])))
    return ", ".join(r for r in runs if r) or None
