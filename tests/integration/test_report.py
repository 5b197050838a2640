"""The report: query pages hold the right data, no text in the data can break the HTML or the
Markdown, every query row and plot point links to its page, and report and compare agree."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.product.report import load_inputs, write_report
from ragassay.product.report_page import read_data_block

NASTY = (
    "</script><script>alert(1)</script> <!-- <b>bold</b> | pipe\nsecond line\r\nthird "
    "\u2028 'single' \"double\" & amp ```fence``` # heading"
)
ODD_ID = "q&<1>#é/%"


def _files(tmp_path: Path) -> dict[str, Path]:
    """Two queries, one with an id full of symbols; chunk and query texts full of markup."""
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(json.dumps({"id": c, "text": f"{NASTY} chunk {c}"}) + "\n" for c in ("c1", "c2", "c3")))
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"id": ODD_ID, "question": NASTY}) + "\n" + json.dumps({"id": "q2", "question": "plain?"}) + "\n"
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"{ODD_ID} 0 c1 3\n{ODD_ID} 0 c2 1\nq2 0 c3 2\n")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(f"{ODD_ID} Q0 c2 1 3.0 a\n{ODD_ID} Q0 c1 2 2.0 a\n{ODD_ID} Q0 c3 3 1.0 a\nq2 Q0 c1 1 1.0 a\n")
    b.write_text(f"{ODD_ID} Q0 c1 1 3.0 b\nq2 Q0 c3 1 1.0 b\n")
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(
        "".join(
            json.dumps({"query_id": q, "chunk_id": c, "grade": g, "status": "ok"}) + "\n"
            for q, c, g in ((ODD_ID, "c2", 0), (ODD_ID, "c1", 3), ("q2", "c1", 1))
        )
    )
    coverage = tmp_path / "coverage.jsonl"
    coverage.write_text(
        json.dumps(
            {
                "query_id": ODD_ID,
                "run": "a",
                "coverage": "PARTIAL",
                "status": "ok",
                "nuggets": [{"text": NASTY, "vital": True, "support": "support"}],
            }
        )
        + "\n"
    )
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": ODD_ID, "question": NASTY, "reference": "30 days", "response": NASTY}) + "\n")
    checks = tmp_path / "checks.jsonl"
    checks.write_text(json.dumps({"id": ODD_ID, "label": "hallucinated", "status": "ok", "rationale": NASTY}) + "\n")
    return {
        "chunks": chunks,
        "queries": queries,
        "qrels": qrels,
        "a": a,
        "b": b,
        "judgments": judgments,
        "coverage": coverage,
        "answers": answers,
        "checks": checks,
    }


def _report(tmp_path: Path, fmt: str = "html") -> tuple[str, dict]:
    f = _files(tmp_path)
    inp = load_inputs(
        [f["judgments"], f["coverage"], f["checks"]],
        qrels=f["qrels"],
        runs=[f["a"], f["b"]],
        chunks=f["chunks"],
        queries=f["queries"],
        answers=f["answers"],
    )
    out = write_report(inp, tmp_path / ("r.html" if fmt == "html" else "r.md"), fmt)
    return out.read_text(encoding="utf-8"), f


def test_query_page_holds_grades_from_both_sides_coverage_answer_and_label(tmp_path):
    page, _ = _report(tmp_path)
    data = read_data_block(page)
    q = data["queries"][ODD_ID]
    assert q["question"] == NASTY
    assert q["gold"] == [["c1", 3], ["c2", 1]]
    # each run's ranking: chunk, people's grade, the judge's grade
    assert q["runs"]["a"] == [["c2", 1, 0], ["c1", 3, 3], ["c3", None, None]]
    assert q["runs"]["b"] == [["c1", 3, 3]]
    assert q["coverage"]["a"] == {"label": "PARTIAL", "error": None, "nuggets": [[NASTY, True, "support"]]}
    assert q["reference"] == "30 days" and q["response"] == NASTY
    assert q["check"] == {"label": "hallucinated", "rationale": NASTY}
    assert q["metrics"]["a"]["mrr"] == pytest.approx(1.0) and q["metrics"]["b"]["p@5"] == pytest.approx(0.2)
    assert (
        data["queries"]["q2"]["runs"]["a"] == [["c1", None, 1]]
        and data["queries"]["q2"]["metrics"]["a"]["ndcg@10"] == 0
    )
    assert data["chunks"]["c1"] == f"{NASTY} chunk c1"  # texts exact, markup and all, inside the data


def test_no_text_in_the_data_reaches_the_markup_unescaped(tmp_path):
    page, _ = _report(tmp_path)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the data block and the code, nothing else
    assert "<b>bold</b>" not in page and "<script>alert" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # the question in the queries table, escaped
    assert not re.search(r"""(src|href)=["'](https?:|//)""", page)  # stands alone, opens offline


def test_every_query_row_and_point_opens_its_page(tmp_path):
    page, _ = _report(tmp_path)
    href = "#q=" + quote(ODD_ID, safe="")
    assert href == "#q=q%26%3C1%3E%23%C3%A9%2F%25"
    rows = re.findall(r"<tr data-q='([^']*)'>", page)
    assert set(rows) == {"q&amp;&lt;1&gt;#é/%", "q2"}  # queries table and the disagreements
    links = re.findall(r"href='(#q=[^']*)'", page)
    assert href in links and "#q=q2" in links
    # the strip plot has a dot per query and run, the difference plot a bar per query
    assert len(re.findall(rf"<a href='{re.escape(href)}'><circle", page)) == 2
    assert len(re.findall(rf"<a href='{re.escape(href)}'><rect", page)) == 1


def test_markdown_survives_any_text(tmp_path):
    text, _ = _report(tmp_path, "markdown")
    assert "<b>" not in text and "</script>" not in text
    # the queries table: a header, a rule and exactly one line per query, whatever the question holds
    block = text.split("## Queries")[1].split("##")[0]
    table = [ln for ln in block.splitlines() if ln.startswith("|")]
    assert len(table) == 2 + 2
    widths = {len(re.split(r"(?<!\\)\|", ln)) for ln in table}
    assert len(widths) == 1, table


def test_markdown_caps_per_query_tables(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(30)))
    run = tmp_path / "r.txt"
    run.write_text("".join(f"q{i} Q0 d{i} 1 1.0 r\n" for i in range(30)))
    out = write_report(load_inputs([], qrels=qrels, runs=[run]), tmp_path / "r.md", "markdown")
    text = out.read_text()
    assert "(the first 20 of 30 rows; the HTML report has every one)" in text


def test_report_and_compare_print_the_same_p_values(tmp_path, capsys):
    qrels, a, b = EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt", EXAMPLE / "runs" / "tfidf.txt"
    assert (
        main(
            [
                "compare",
                str(qrels),
                str(a),
                str(b),
                "-m",
                "ndcg@10",
                "-m",
                "map",
                "-m",
                "recall@10",
                "-m",
                "mrr",
                "--format",
                "json",
            ]
        )
        == 0
    )
    tests = json.loads(capsys.readouterr().out)["tests"]
    md = tmp_path / "r.md"
    assert (
        main(["report", "--qrels", str(qrels), "--run", str(a), "--run", str(b), "-o", str(md), "--format", "markdown"])
        == 0
    )
    text = md.read_text()
    for t in nonempty(tests):
        row = (
            f"| {t['run']} | {t['metric']} | {t['baseline_mean']:.4f} | {t['mean']:.4f} | {t['diff']:.4f} | "
            f"[{t['ci_low']:+.4f}, {t['ci_high']:+.4f}] | {t['p_randomization']:.4f} | {t['p_t_test']:.4f} | "
            f"{t['p_randomization_holm']:.4f} |"
        )
        assert row in text, row


def test_agreement_shows_kappa_interval_and_widest_disagreements(tmp_path, capsys):
    ag = tmp_path / "agree.json"
    assert (
        main(["agree", str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "qrels_second_assessor.txt"), "--format", "json"]) == 0
    )
    result = json.loads(capsys.readouterr().out)
    lo, hi = result["kappa_ci"]
    assert lo < result["kappa"] < hi
    first = result["disagreements"][0]
    gaps = [abs(d["reference"] - d["candidate"]) for d in result["disagreements"]]
    assert gaps == sorted(gaps, reverse=True) and all(g > 0 for g in gaps)
    ag.write_text(json.dumps(result))
    out = tmp_path / "r.html"
    assert main(["report", str(ag), "-o", str(out)]) == 0
    page = out.read_text()
    assert f"(95% interval {lo:.3f} to {hi:.3f})" in page
    assert f"<tr data-q='{first['query_id']}'>" in page and "<svg" in page


def test_report_of_a_generated_set(tmp_path):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"g{i}",
                    "question": f"Q{i}?",
                    "answer": "A",
                    "difficulty": d,
                    "kind": "factoid",
                    "chunk_ids": ["c1"],
                    "style": "keyword",
                }
            )
            + "\n"
            for i, d in enumerate(["easy", "easy", "hard"])
        )
    )
    rejects = tmp_path / "rejects.jsonl"
    rejects.write_text(json.dumps({"reason": "answer not in chunk: x", "question": "?"}) + "\n")
    out = write_report(load_inputs([questions, rejects]), tmp_path / "r.md", "markdown")
    text = out.read_text()
    assert "3 questions accepted, 1 candidates rejected." in text
    assert "| easy | 2 |" in text and "| hard | 1 |" in text and "| answer not in chunk | 1 |" in text


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_in_a_real_browser_a_query_page_opens_with_text_not_markup(tmp_path):
    page, _ = _report(tmp_path)
    url = (tmp_path / "r.html").as_uri() + "#q=" + quote(ODD_ID, safe="")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=20000",
    ]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    panel = dom[dom.index("<aside") : dom.index("</aside>")]
    assert 'hidden=""' not in panel.split(">")[0]  # the page is open
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in panel  # shown as text
    assert "<b>bold</b>" not in panel and "<script" not in panel
    assert "hallucinated" in panel and "PARTIAL" in panel and "unjudged" in panel
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, *flags, "--window-size=1280,1400", f"--screenshot={shot}", url], capture_output=True, timeout=120
    )
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one


def test_report_reads_checks_records_and_a_one_record_questions_file(tmp_path, capsys):
    """check's JSONL alone gives the label rates, the diagnosis (with qrels and a run) and people's
    agreement; a questions file with one record (its "kind" is a question kind) is records, not a result."""
    from ragassay.cli import main

    ex = EXAMPLE
    checks = tmp_path / "checks.jsonl"
    checks.write_text(
        "".join(
            json.dumps({"id": i, "label": lab, "status": "ok", "response_words": 3}) + "\n"
            for i, lab in (("q05", "hallucinated"), ("q06", "correct"), ("q17", "partial"), ("q21", "abstained"))
        )
    )
    assert (
        main(
            [
                "report",
                str(checks),
                "--qrels",
                str(ex / "qrels.txt"),
                "--run",
                str(ex / "runs" / "bm25.txt"),
                "--human",
                str(ex / "answers_human_labels.jsonl"),
                "-o",
                str(tmp_path / "r.md"),
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    md = (tmp_path / "r.md").read_text()
    for label in ("correct", "partial", "hallucinated", "abstained"):
        assert f"| {label} | 1 | 0.250" in md
    assert (
        "## Diagnosis: retrieval x answer" in md and "## Answers: agreement, example assessor 1 against unknown" in md
    )
    assert "click" not in md.lower() and "type to filter" not in md.lower()
    one = tmp_path / "q.jsonl"
    one.write_text(
        json.dumps(
            {
                "id": "q-1",
                "question": "How long do refunds take?",
                "answer": "5 days",
                "difficulty": "easy",
                "kind": "factoid",
                "chunk_ids": ["refund-01"],
            }
        )
        + "\n"
    )
    assert main(["report", str(one), "-o", str(tmp_path / "q.html")]) == 0
    rejects = tmp_path / "rejects.jsonl"
    rejects.write_text(
        json.dumps(
            {
                "chunk_ids": ["c1"],
                "difficulty": "easy",
                "question": "q?",
                "answer": "a",
                "kind": "factoid",
                "reason": "too short",
            }
        )
        + "\n"
    )
    assert main(["report", str(one), str(rejects), "-o", str(tmp_path / "rj.md"), "--format", "markdown"]) == 0
    assert "too short" in (tmp_path / "rj.md").read_text()
