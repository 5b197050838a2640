"""The report names every grade and label by who made it (the file's origin: people, a model, mixed
or unknown; never "people" for a file that does not say so), in the HTML page, its script and the
Markdown; and runs are named as the caller names them, not by the TREC tag inside the files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
import pytrec_eval

from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.errors import InputError
from ragassay.product.report import load_inputs, write_report
from ragassay.product.report_inputs import NamedRun
from ragassay.product.report_page import SCRIPT, read_data_block

ODD = "q|<1>é"  # an odd query id: a pipe, markup, an accent

PEOPLE = {"labellers": [{"by": "person", "name": "alice"}, {"by": "person", "name": "bob"}]}
MODEL = {"labellers": [{"by": "model", "name": "gpt-4o", "prompt": "judge_relevance@1a2b", "endpoint": "api.example"}]}
MIXED = {"labellers": [{"by": "person", "name": "alice"}, {"by": "model", "name": "gpt-4o"}]}
SILENT = {"labellers": []}

# (sidecar or None, what the report calls its maker, the origin's kind)
ORIGINS = [
    (PEOPLE, "people (alice + bob)", "people"),
    (MODEL, "gpt-4o", "model"),
    (MIXED, "mixed (alice + gpt-4o)", "mixed"),
    (None, "unknown", "unknown"),
    (SILENT, "unknown", "unknown"),
]


def _write(path: Path, text: str, origin: dict | None = None) -> Path:
    path.write_text(text, encoding="utf-8")
    if origin is not None:
        Path(f"{path}.origin.json").write_text(json.dumps(origin), encoding="utf-8")
    return path


def _data(
    tmp_path: Path, qrels_origin: dict | None, labels_origin: dict | None = None, assessor: str | None = None
) -> dict[str, Path]:
    """Two queries (one with an odd id), a run with tied scores, checks and answer labels."""
    qrels = _write(tmp_path / "qrels.txt", f"{ODD} 0 c1 3\n{ODD} 0 c2 0\nq2 0 c3 1\n", qrels_origin)
    run = _write(tmp_path / "run.txt", f"{ODD} Q0 c2 1 1.0 tag\n{ODD} Q0 c1 2 1.0 tag\nq2 Q0 c3 1 0.5 tag\n")
    checks = _write(tmp_path / "checks.jsonl", json.dumps({"id": ODD, "label": "correct", "status": "ok"}) + "\n")
    line = {"id": ODD, "label": "hallucinated", **({"assessor": assessor} if assessor else {})}
    labels = _write(tmp_path / "labels.jsonl", json.dumps(line) + "\n", labels_origin)
    return {"qrels": qrels, "run": run, "checks": checks, "labels": labels}


@pytest.mark.parametrize("origin,who,kind", ORIGINS)
def test_qrels_are_named_by_their_origin_in_both_formats(tmp_path, origin, who, kind):
    f = _data(tmp_path, origin)
    inp = load_inputs([f["checks"]], qrels=f["qrels"], runs=[f["run"]], human=f["labels"])
    data = read_data_block(write_report(inp, tmp_path / "r.html").read_text(encoding="utf-8"))
    assert data["labels"]["qrels"] == who
    assert data["queries"][ODD]["gold"] == [["c1", 3], ["c2", 0]]
    md = write_report(inp, tmp_path / "r.md", "markdown").read_text(encoding="utf-8")
    assert f"graded on qrels judged by {who};" in md
    row = next(line for line in md.splitlines() if line.startswith("| qrels |"))
    assert row.split(" | ")[1:3] == [who, kind]
    if kind != "people":  # neither format calls anyone people: not the page's names, not the Markdown's rows
        assert "people" not in data["labels"]["qrels"] and "people" not in row


@pytest.mark.parametrize(
    "origin,assessor,who",
    [
        (None, None, "unknown"),  # a file that says nothing
        (None, "carol", "people (carol)"),  # each line's assessor
        (MODEL, None, "gpt-4o"),  # a model's labels, said in the sidecar
        (PEOPLE, "carol", "people (alice + bob)"),  # the sidecar wins over the lines
    ],
)
def test_answer_labels_are_named_by_their_origin(tmp_path, origin, assessor, who):
    f = _data(tmp_path, PEOPLE, origin, assessor)
    inp = load_inputs([f["checks"]], qrels=f["qrels"], runs=[f["run"]], human=f["labels"])
    data = read_data_block(write_report(inp, tmp_path / "r.html").read_text(encoding="utf-8"))
    assert data["labels"]["answers"] == who and data["queries"][ODD]["human_label"] == "hallucinated"
    md = write_report(inp, tmp_path / "r.md", "markdown").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| answer labels |"))
    assert row.split(" | ")[1] == who


def test_the_page_script_names_no_labeller_itself():
    """Every name the query page gives a grade or a label comes from the data, never from the script."""
    assert "people" not in SCRIPT.lower()
    assert "D.labels.qrels" in SCRIPT and "D.labels.answers" in SCRIPT and "D.labels.second" in SCRIPT


def test_the_judges_pool_qrels_beside_peoples_qrels(tmp_path):
    """The judge's pool (a model's qrels) drives the metrics; people's qrels are shown beside it, each
    under its own maker's name, grade for grade on each run's rows (unjudged where a side has none)."""
    f = _data(tmp_path, MODEL)
    people = _write(
        tmp_path / "people.txt",
        f"{ODD} 0 c1 1\n{ODD} 0 c9 2\nq3 0 c3 2\n",
        {"labellers": [{"by": "person", "name": "alice"}]},
    )
    inp = load_inputs([], qrels=f["qrels"], runs=[f["run"]], people_qrels=people)
    data = read_data_block(write_report(inp, tmp_path / "r.html").read_text(encoding="utf-8"))
    assert data["labels"] == {"qrels": "gpt-4o", "answers": "unknown", "second": "people (alice)"}
    page = data["queries"][ODD]
    assert page["gold"] == [["c1", 3], ["c2", 0]] and page["second"] == [["c9", 2], ["c1", 1]]
    # ties by document id descending: c2 before c1; (chunk, model's grade, judge's grade, people's grade)
    assert page["runs"]["tag"] == [["c2", 0, None, None], ["c1", 3, None, 1]]
    assert data["queries"]["q3"]["second"] == [["c3", 2]] and data["queries"]["q2"]["runs"]["tag"] == [
        ["c3", 1, None, None]
    ]
    md = write_report(inp, tmp_path / "r.md", "markdown").read_text(encoding="utf-8")
    assert "| second qrels | people (alice) | people | alice |" in md
    assert "| query ids | the second qrels | 2 | the qrels | 2 | 1 |" in md
    without = read_data_block(
        write_report(load_inputs([], qrels=f["qrels"], runs=[f["run"]]), tmp_path / "r2.html").read_text(
            encoding="utf-8"
        )
    )
    assert "second" not in without["labels"] and without["queries"][ODD]["runs"]["tag"][1] == ["c1", 3, None]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_in_a_real_browser_the_page_names_each_labeller(tmp_path):
    f = _data(tmp_path, MODEL)  # answer labels say nothing: unknown
    people = _write(tmp_path / "people.txt", f"{ODD} 0 c1 1\n", {"labellers": [{"by": "person", "name": "alice"}]})
    answers = _write(
        tmp_path / "answers.jsonl",
        json.dumps({"id": ODD, "question": "why?", "reference": "r", "response": "s"}) + "\n",
    )
    inp = load_inputs(
        [f["checks"]], qrels=f["qrels"], runs=[f["run"]], human=f["labels"], answers=answers, people_qrels=people
    )
    out = write_report(inp, tmp_path / "r.html")
    url = out.as_uri() + "#q=" + quote(ODD, safe="")
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
    assert "<h3>Judged by gpt-4o, relevant first</h3>" in panel
    assert "<h3>Judged by people (alice), relevant first</h3>" in panel
    heads = re.findall(r"<th>([^<]*)</th>", panel.split("Top 2 of tag")[1])
    assert heads == ["rank", "chunk", "gpt-4o", "judge", "people (alice)", "text"]
    assert "unknown: " in panel and panel.count("people") == 2  # the answer label's line, and alice's two places


# ------------------------------------------------------------------------------ runs named apart


def _two_runs_one_tag(tmp_path: Path) -> dict[str, Path]:
    """Two run files tagged alike (myrun), ranking the same chunks in opposite orders (with a tie)."""
    qrels = _write(tmp_path / "qrels.txt", "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d4 1\n")
    a = _write(tmp_path / "a.txt", "q1 Q0 d1 1 3 myrun\nq1 Q0 d2 2 2 myrun\nq1 Q0 d3 3 2 myrun\nq2 Q0 d4 1 1 myrun\n")
    b = _write(tmp_path / "b.txt", "q1 Q0 d2 1 3 myrun\nq1 Q0 d3 2 1 myrun\nq1 Q0 d1 3 1 myrun\nq2 Q0 d9 1 1 myrun\n")
    return {"qrels": qrels, "a": a, "b": b}


def _trec_eval_ndcg10(qrels: Path, run: Path) -> dict[str, float]:
    q: dict = {}
    for line in qrels.read_text().split("\n"):
        if line:
            qid, _, doc, grade = line.split()
            q.setdefault(qid, {})[doc] = int(grade)
    r: dict = {}
    for line in run.read_text().split("\n"):
        if line:
            qid, _, doc, _, score, _ = line.split()
            r.setdefault(qid, {})[doc] = float(score)
    out = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut_10"}).evaluate(r)
    return {qid: v["ndcg_cut_10"] for qid, v in out.items()}


def test_two_runs_of_one_tag_are_refused_by_tag_and_named_apart_by_the_caller(tmp_path):
    f = _two_runs_one_tag(tmp_path)
    with pytest.raises(InputError, match="two runs are named 'myrun'"):
        load_inputs([], qrels=f["qrels"], runs=[f["a"], f["b"]])
    inp = load_inputs([], qrels=f["qrels"], runs={"first": f["a"], "second": f["b"]})
    assert [r.name for r in inp.runs] == ["first", "second"]
    data = read_data_block(write_report(inp, tmp_path / "r.html").read_text(encoding="utf-8"))
    assert data["runs"] == ["first", "second"]
    assert data["queries"]["q1"]["runs"] == {
        "first": [["d1", 2, None], ["d3", 1, None], ["d2", 0, None]],
        "second": [["d2", 0, None], ["d3", 1, None], ["d1", 2, None]],
    }
    expected = {"first": _trec_eval_ndcg10(f["qrels"], f["a"]), "second": _trec_eval_ndcg10(f["qrels"], f["b"])}
    for name, per_query in nonempty(expected.items()):
        for qid, value in nonempty(per_query.items()):
            assert data["queries"][qid]["metrics"][name]["ndcg@10"] == pytest.approx(value, abs=1e-12)
    md = write_report(inp, tmp_path / "r.md", "markdown").read_text(encoding="utf-8")
    assert "| query | question | ndcg@10 first | ndcg@10 second | second - first |" in md
    assert re.search(r"^\| first \| ", md, re.M) and re.search(r"^\| second \| ", md, re.M) and "myrun" not in md
    assert "Comparison against first" in md


def test_an_empty_name_is_refused_and_named_and_tagged_runs_mix(tmp_path):
    f = _two_runs_one_tag(tmp_path)
    with pytest.raises(InputError, match="name is empty"):
        load_inputs([], qrels=f["qrels"], runs={"": f["a"]})
    # in a sequence, a run the caller named (what --run NAME=PATH gives) beside one named by its tag
    inp = load_inputs([], qrels=f["qrels"], runs=[NamedRun(str(f["a"]), "mine"), f["b"]])
    assert [r.name for r in inp.runs] == ["mine", "myrun"] and [r.source for r in inp.runs] == [
        str(f["a"]),
        str(f["b"]),
    ]
    with pytest.raises(InputError, match=r"two runs are named 'myrun' \(its TREC tag"):
        load_inputs([], qrels=f["qrels"], runs=[NamedRun(str(f["a"]), "myrun"), f["b"]])


def test_the_report_command_takes_name_equals_path(tmp_path, capsys):
    f = _two_runs_one_tag(tmp_path)
    out = tmp_path / "r.md"
    assert main(["report", "--qrels", str(f["qrels"]), "--run", str(f["a"]), "--run", str(f["b"]), "-o", str(out)]) == 1
    assert "two runs are named 'myrun'" in capsys.readouterr().err
    assert (
        main(
            [
                "report",
                "--qrels",
                str(f["qrels"]),
                "--run",
                f"bm25={f['a']}",
                "--run",
                f"dense={f['b']}",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    md = out.read_text(encoding="utf-8")
    assert "ndcg@10 bm25 | ndcg@10 dense | dense - bm25" in md and "myrun" not in md
    # a path holding '=' that exists is a path (named by its tag); one named alike by the caller is refused
    odd = _write(tmp_path / "x=y.txt", f["b"].read_text())
    assert (
        main(["report", "--qrels", str(f["qrels"]), "--run", f"other={f['a']}", "--run", str(odd), "-o", str(out)]) == 0
    )
    assert "ndcg@10 other | ndcg@10 myrun" in out.read_text(encoding="utf-8")
    assert (
        main(
            ["report", "--qrels", str(f["qrels"]), "--run", f"same={f['a']}", "--run", f"same={f['b']}", "-o", str(out)]
        )
        == 1
    )
    assert "two runs are named 'same'" in capsys.readouterr().err


def test_the_report_command_refuses_a_bad_name_and_guards_a_named_input(tmp_path, capsys):
    f = _two_runs_one_tag(tmp_path)
    assert main(["report", "--qrels", str(f["qrels"]), "--run", f"={f['a']}", "-o", str(tmp_path / "r.md")]) == 2
    assert "give NAME=PATH" in capsys.readouterr().err
    assert (
        main(
            [
                "report",
                "--qrels",
                str(f["qrels"]),
                "--run",
                f"a={tmp_path / 'missing.txt'}",
                "-o",
                str(tmp_path / "r.md"),
            ]
        )
        == 1
    )
    assert "missing.txt" in capsys.readouterr().err
    before = f["a"].read_bytes()  # the named run is an input: writing the report over it is refused
    assert main(["report", "--qrels", str(f["qrels"]), "--run", f"a={f['a']}", "-o", str(f["a"])]) == 2
    assert "is also the input --run" in capsys.readouterr().err
    assert f["a"].read_bytes() == before


def test_the_report_says_how_its_queries_and_chunks_met_the_runs(tmp_path, capsys):
    """The queries and chunks fill the pages: none in common with the runs stops the report naming both;
    some is a warning with counts, and both joins are in the "Inputs: what met" table."""
    from ragassay.cli import main

    qrels, run = EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "bm25.txt"
    other = tmp_path / "zq.jsonl"
    other.write_text('{"id": "zz1", "question": "x"}\n')
    capsys.readouterr()
    assert (
        main(
            ["report", "--qrels", str(qrels), "--run", str(run), "--queries", str(other), "-o", str(tmp_path / "a.md")]
        )
        == 1
    )
    assert "no query ids in common between the runs and the queries" in capsys.readouterr().err
    part = tmp_path / "part.jsonl"
    part.write_text("".join((EXAMPLE / "queries.jsonl").read_text().splitlines(keepends=True)[:2]))
    assert (
        main(
            [
                "report",
                "--qrels",
                str(qrels),
                "--run",
                str(run),
                "--queries",
                str(part),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                str(tmp_path / "b.md"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "query ids: 20 of 22 in the runs are not in the queries" in err
    md = (tmp_path / "b.md").read_text()
    assert (
        "| query ids | the runs | 22 | the queries | 2 | 2 |" in md
        and "| chunk ids | the runs' results | 49 | the chunks | 50 | 49 |" in md
    )
