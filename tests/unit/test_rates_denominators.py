"""Every rate shows what it rests on: its denominator beside it; no interval from a handful; answers
waiting for a verdict are waiting, not errors; and a statistic that cannot mean anything (a kappa
where one side has one grade, a correlation of equal values, a rate of nothing) is null with the
reason in the JSON and said in words in the text, never printed as 0 or nan."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.metrics.agreement import agree
from ragassay.metrics.labels import NO_VERDICT_YET, human_calibration, label_summary
from ragassay.metrics.rates import MIN_INTERVAL, rate_text, wilson

WAITING = {"status": "error", "label": None, "error": f"config: {NO_VERDICT_YET} (set OPENAI_API_KEY ...)"}


def ok(label: str) -> dict:
    return {"status": "ok", "label": label, "response_words": 3}


# ------------------------------------------------------------------------------------ label rates


def test_two_decided_of_sixteen_give_the_rate_with_its_denominator_and_no_interval():
    s = label_summary([ok("correct"), ok("correct")] + [dict(WAITING) for _ in range(14)], n_resamples=200)
    assert (s["answers"], s["graded"], s["waiting"], s["errors"]) == (16, 2, 14, 0)  # waiting is not error
    for name in nonempty(["correct", "partial", "hallucinated", "abstained"]):
        r = s["rates"][name]
        assert r["n"] == 2 and r["ci_low"] is None and r["ci_high"] is None and "too few" in r["why"]
    t = s["truthfulness"]
    assert t["value"] == 1.0 and t["n"] == 2 and t["ci_low"] is None
    said = rate_text(t, total=16)
    assert said.startswith("1.000 from 2 of 16 answers") and "[1.000, 1.000]" not in said


def test_a_failed_record_is_an_error_and_a_waiting_one_is_not():
    failed = {"status": "error", "label": None, "error": "transport: could not connect"}
    s = label_summary([ok("partial")] + [dict(WAITING)] * 3 + [failed] * 2, n_resamples=200)
    assert (s["graded"], s["waiting"], s["errors"]) == (1, 3, 2)


def test_a_rate_of_nothing_is_null_with_why_not_zero():
    s = label_summary([dict(WAITING)] * 5, n_resamples=200)
    r = s["rates"]["hallucinated"]
    assert r["value"] is None and r["n"] == 0 and "no answers" in r["why"]
    assert s["correct_given_attempted"]["value"] is None and s["correct_given_attempted"]["n"] == 0
    assert rate_text(r).startswith("none (no answers")
    # every answer abstained: correct given attempted has no attempted answer to rest on
    s = label_summary([ok("abstained")] * 12, n_resamples=200)
    cga = s["correct_given_attempted"]
    assert cga["value"] is None and "attempted answers" in cga["why"]


def test_all_alike_gets_an_interval_that_does_not_claim_certainty():
    """30 answers all correct: a resampled interval would be [1, 1]; the Wilson interval is not."""
    s = label_summary([ok("correct")] * 30, n_resamples=200)
    r = s["rates"]["correct"]
    assert r["value"] == 1.0 and r["n"] == 30 and r["method"] == "wilson"
    assert r["ci_high"] == 1.0 and r["ci_low"] == pytest.approx(wilson(30, 30)[0]) and r["ci_low"] < 0.9
    h = s["rates"]["hallucinated"]  # none of 30: the same interval from the other end
    assert h["value"] == 0.0 and h["ci_low"] == 0.0 and h["ci_high"] == pytest.approx(1 - r["ci_low"])
    # truthfulness is on a -1..1 scale, not a proportion: no interval, and the reason
    t = s["truthfulness"]
    assert t["value"] == 1.0 and t["ci_low"] is None and "alike" in t["why"]


def test_enough_mixed_answers_keep_their_bootstrap_interval():
    labels = ["correct"] * 8 + ["partial"] * 4 + ["hallucinated"] * 4 + ["abstained"] * 4
    s = label_summary([ok(x) for x in labels], n_resamples=500)
    r = s["rates"]["correct"]
    assert r["n"] == 20 >= MIN_INTERVAL and "why" not in r and r["ci_low"] < 0.4 < r["ci_high"]
    assert s["correct_given_attempted"]["n"] == 16
    assert rate_text(r).endswith("] from 20 answers")


def test_wilson_matches_its_formula():
    lo, hi = wilson(3, 10)
    assert (lo, hi) == pytest.approx((0.10779, 0.60323), abs=1e-5)


# ---------------------------------------------------------------------------------- agreement


def write(path: Path, rows: list[tuple[str, str, int]]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows), encoding="utf-8")
    return path


GOLD = [("q1", "a", 3), ("q1", "b", 3), ("q2", "c", 3), ("q2", "d", 3), ("qé", "e", 3), ("qé", "f", 3)]
JUDGED = [
    ("q1", "a", 3),
    ("q1", "b", 1),
    ("q2", "c", 3),
    ("q2", "d", 3),
    ("qé", "e", 2),
    ("qé", "f", 3),
    ("q1", "x", 0),
]


def test_generates_one_grade_qrels_give_no_kappa_and_say_why(tmp_path, capsys):
    """The README's recipe: generate's qrels (every pair grade 3) against the judge's graded ones."""
    gold, judged = write(tmp_path / "gold.qrels", GOLD), write(tmp_path / "judged.qrels", JUDGED)
    capsys.readouterr()
    assert main(["agree", str(gold), str(judged), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["exact_agreement"] == pytest.approx(4 / 6)
    for key in nonempty(["kappa", "kappa_linear", "kappa_quadratic", "kappa_ci", "krippendorff_alpha_ordinal"]):
        assert d[key] is None and "the reference gives all 6 shared pairs grade 3" in d["why"][key]
    assert d["kappa_binary"] == {">=1": None, ">=2": None, ">=3": None}
    assert set(d["why"]["kappa_binary"]) == {">=1", ">=2", ">=3"}
    capsys.readouterr()
    assert main(["agree", str(gold), str(judged)]) == 0
    text = capsys.readouterr().out
    assert "nan" not in text and not re.search(r"kappa[^\n]*\s0\.0000", text)
    assert "not given: Cohen's kappa" in text and "grade 3" in text and "67%" in text


def test_one_grade_on_the_candidate_side_or_a_binary_scale_is_named_too(tmp_path):
    ref = write(tmp_path / "a.qrels", [("1", "d1", 0), ("1", "d2", 1), ("2", "d3", 1), ("2", "d4", 0)])
    cand = write(tmp_path / "b.qrels", [("1", "d1", 1), ("1", "d2", 1), ("2", "d3", 1), ("2", "d4", 1)])
    d = agree(ref, cand).to_dict()
    assert d["kappa"] is None and d["why"]["kappa"].startswith("the candidate gives all 4 shared pairs grade 1")
    # the cut at 1 splits the reference but not the candidate; at 2 and 3 neither side is split
    assert d["kappa_binary"] == {">=1": None, ">=2": None, ">=3": None}
    assert "the candidate puts all 4" in d["why"]["kappa_binary"][">=1"]
    assert "the reference puts all 4 shared pairs below grade 2" in d["why"]["kappa_binary"][">=2"]


def test_two_labellings_that_use_the_scale_keep_every_number(tmp_path):
    a = agree(EXAMPLE / "qrels.txt", EXAMPLE / "qrels_second_assessor.txt").to_dict()
    assert a["kappa"] == pytest.approx(0.5288, abs=1e-4) and a["kappa_binary"][">=3"] == pytest.approx(0.966, abs=1e-3)
    assert a["kappa_ci"] is not None and a["why"] == {}


def test_a_kappa_interval_from_a_handful_of_pairs_is_withheld(tmp_path):
    ref = write(tmp_path / "a.qrels", [("q", "a", 0), ("q", "b", 2), ("q", "c", 1), ("q", "d", 2)])
    cand = write(tmp_path / "b.qrels", [("q", "a", 0), ("q", "b", 2), ("q", "c", 2), ("q", "d", 1)])
    d = agree(ref, cand).to_dict()
    assert d["kappa"] is not None and d["kappa_ci"] is None and "4 pairs: too few" in d["why"]["kappa_ci"]


def test_runs_that_score_alike_have_no_rank_correlation(tmp_path):
    """Two runs that rank alike score alike under both labellings: no order to correlate."""
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}
    from ragassay.data.tables import Run

    runs = {"one": Run.from_dict(run, name="one"), "two": Run.from_dict(run, name="two")}
    ref = write(tmp_path / "a.qrels", [("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 2), ("q2", "d", 0)])
    cand = write(tmp_path / "b.qrels", [("q1", "a", 0), ("q1", "b", 1), ("q2", "c", 2), ("q2", "d", 1)])
    rr = agree(ref, cand, runs).to_dict()["run_ranking"]
    assert rr["kendall_tau_b"] is None and rr["spearman_rho"] is None
    assert "there is no order to correlate" in rr["why"]["kendall_tau_b"]


def test_people_who_give_one_label_get_no_kappa_with_the_grader():
    records = [
        {"id": i, "label": lab, "status": "ok"} for i, lab in (("a", "correct"), ("b", "partial"), ("c", "correct"))
    ]
    h = human_calibration(records, {"a": "correct", "b": "correct", "c": "correct"}, n_resamples=100)
    assert h["kappa"] is None and h["why"]["kappa"].startswith("people give all 3 shared answers the label correct")
    h = human_calibration(records, {"a": "correct", "b": "partial", "c": "hallucinated"}, n_resamples=100)
    assert h["kappa"] is not None and "why" not in h


# ------------------------------------------------------------------------------- check and report


@pytest.fixture
def offline(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_the_check_command_says_how_many_it_decided_and_that_the_rest_wait(tmp_path, capsys, offline):
    capsys.readouterr()
    code = main(
        [
            "check",
            str(EXAMPLE / "answers.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "-o",
            str(tmp_path / "checks.jsonl"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 3  # the contract: error records a rerun fills in
    assert "2 of 16 answers graded; 14 waiting for an LLM verdict; 0 errors" in out
    assert "[1.000, 1.000]" not in out and "1.000 from 2 of 16 answers (too few for an interval" in out
    assert out.rstrip().endswith(
        "14 of 16 answers wait for an LLM verdict (no endpoint configured); rerun the same "
        "command with one to decide them"
    )


def test_the_reports_answers_show_the_denominator_and_waiting_not_error(tmp_path, capsys, offline):
    from ragassay.product.report import make_report

    checks = tmp_path / "checks.jsonl"
    capsys.readouterr()
    main(
        [
            "check",
            str(EXAMPLE / "answers.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "-o",
            str(checks),
            "--format",
            "json",
            "--quiet",
        ]
    )
    (tmp_path / "check.json").write_text(capsys.readouterr().out)
    common = dict(
        qrels=EXAMPLE / "qrels.txt",
        runs={"bm25": EXAMPLE / "runs" / "bm25.txt"},
        answers=EXAMPLE / "answers.jsonl",
        chunks=EXAMPLE / "chunks.jsonl",
    )
    make_report([tmp_path / "check.json", checks], tmp_path / "r.md", **common)
    make_report([tmp_path / "check.json", checks], tmp_path / "r.html", **common)
    md = (tmp_path / "r.md").read_text()
    answers = md.split("## Answers: labels", 1)[1].split("\n## ", 1)[0]
    assert "2 of 16 answers decided; 14 waiting for an LLM verdict" in answers
    assert "Truthfulness 1.000 from 2 of 16 answers" in answers and "[1.000, 1.000]" not in answers
    assert "No chart: 2 decided answers are too few" in answers
    queries = md.split("## Queries", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in queries.splitlines() if line.startswith("| q")]
    assert sum(line.rstrip(" |").endswith("waiting") for line in rows) >= 10
    assert not any(line.rstrip(" |").endswith("error") for line in nonempty(rows))
    html = (tmp_path / "r.html").read_text()
    assert "rate (95% interval)" not in html  # no bars drawn from 2 answers
    assert "2 of 16 answers decided" in html


def test_the_reports_bars_say_their_denominator_when_drawn(tmp_path):
    from ragassay.product.report import make_report

    labels = ["correct"] * 9 + ["hallucinated"] * 3
    checks = tmp_path / "checks.jsonl"
    checks.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "label": lab,
                    "status": "ok",
                    "decided_by": "llm",
                    "grounded": None,
                    "unsupported_claims": [],
                    "rationale": "r",
                    "error": None,
                    "model": "m",
                    "prompt": "p@1",
                    "samples": [lab],
                }
            )
            + "\n"
            for i, lab in enumerate(labels)
        )
    )
    make_report([checks], tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert "answer labels: 12 of 12 answers decided" in html
    assert "0.750 [" in html and "] from 12 answers" in html


def test_the_pipelines_agree_step_says_why_there_is_no_kappa(tmp_path, capsys):
    """People's qrels that hold one grade against a second labelling: the step's line says why, and
    the run does not break on a kappa that is not there."""
    folder = tmp_path / "p"
    folder.mkdir()
    write(folder / "gold.qrels", GOLD)
    write(folder / "second.qrels", JUDGED)
    (folder / "run.txt").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 c 1 1.0 t\nqé Q0 e 1 1.0 t\n")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"id": q, "text": f"question {q}"}, ensure_ascii=False) + "\n" for q in ("q1", "q2", "qé")),
        encoding="utf-8",
    )
    (folder / "ragassay.toml").write_text(
        '[data]\nqueries = "queries.jsonl"\nqrels = "gold.qrels"\n[runs]\n'
        'mine = "run.txt"\n[agree]\nsecond = "second.qrels"\n'
    )
    capsys.readouterr()
    assert main(["run", str(folder / "ragassay.toml"), "--format", "json", "--quiet"]) == 0
    done = json.loads(capsys.readouterr().out)
    agree_step = next(s for s in done["steps"] if s["step"] == "agree")
    assert (
        agree_step["status"] == "ran"
        and "no kappa (the reference gives all 6 shared pairs grade 3" in agree_step["text"]
    )
    md = (folder / "ragassay-out" / "report.md").read_text()
    assert "Cohen's kappa not given (the reference gives all 6" in md and "n/a" not in md.split("## Agreement")[1]


def test_labelling_against_a_model_that_gives_one_grade_has_no_kappa():
    """ragassay label: the person uses the scale, the model said 2 to every pair: kappa would be 0."""
    from ragassay.product.labeling import agreement, pair_relevant

    a = agreement([0, 1, 2, 3, 2, 1, 0, 3], [2] * 8, pair_relevant)
    assert a["exact"] == 0.25 and a["kappa"] is None and a["interval"] is None
    assert a["why"]["kappa"].startswith("the other side gives all 8 shared labels the label 2")
    assert a["binary_kappa"] is None and "(all yes)" in a["why"]["binary_kappa"]
    from ragassay.cli.label import _label_text

    said = _label_text({"progress": {"labelled": 8, "total": 8, "skipped": 0, "left": 0}, "model_agreement": a}, "o")
    assert "no kappa on 8 labels (the other side gives all 8" in said
