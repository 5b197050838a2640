"""``ragassay demo`` is ``ragassay run`` over the example's own project file (issue 41, item 4).

The demo and ``run`` on a copy of the example make the same steps, the same calls and the same report
inputs; without an endpoint the demo runs every step that needs no model and exits 0; a second demo
into the same folder sends nothing; a dead endpoint still leaves a report. And the capabilities ``run``
gained for it, on a project made here (odd ids, ties, ids that meet and ids that do not): agreement
with a second labelling and with the judged pool, by origin; a rule-only check without an endpoint;
``--out`` moving outputs and state; the new keys checked with ``ragassay.toml:LINE`` errors."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from fake_llm import FakeLLM, dead_url, schema_seen
from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.product.pipeline import STEPS

REPORT_INPUTS = (
    "compare.json",
    "check.json",
    "checks.jsonl",
    "judgments.jsonl",
    "coverage.jsonl",
    "agree_second.json",
    "agree_pool.json",
    "questions.jsonl",
    "rejects.jsonl",
    "evaluate/bm25.json",
    "evaluate/tfidf.json",
)
VOLATILE = {"file", "date", "source"}  # where a file lies and when it was written: not what it says


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def said(capsys, argv: list[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(argv)
    out = capsys.readouterr()
    return code, (out.out + out.err).splitlines()


def steps_of(lines: list[str]) -> list[str]:
    """The step lines (``NAME  STATUS: text``), in order."""
    return [line for line in lines if re.match(rf"({'|'.join(STEPS)})\s+\S", line)]


def status(line: str) -> str:
    """A step line's status: ran, up to date, skipped, ..."""
    return re.match(r"\S+\s+([a-z ]+?)(?::|$)", line).group(1)


def without_paths(value, *dirs: str):
    """``value`` with every folder in ``dirs`` cut from its strings and the keys of where and when dropped."""
    if isinstance(value, dict):
        return {k: without_paths(v, *dirs) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [without_paths(v, *dirs) for v in value]
    if isinstance(value, str):
        for d in dirs:
            value = value.replace(d.rstrip("/") + "/", "")
        return value
    return value


def content(path: Path, *dirs: str):
    """A report input as it reads: a JSON result, or JSON Lines records in a stable order."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return without_paths(json.loads(text), *dirs)
    return sorted(
        json.dumps(without_paths(json.loads(line), *dirs), sort_keys=True) for line in text.splitlines() if line.strip()
    )


def top(path: Path, depth: int) -> set[tuple[str, str]]:
    """A TREC run's top ``depth`` pairs of each query, ranked here: score descending, ties by id descending."""
    by_query: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text().splitlines():
        q, _, doc, _, score, _ = line.split()
        by_query.setdefault(q, []).append((float(score), doc))
    return {(q, d) for q, docs in by_query.items() for _, d in sorted(docs, reverse=True)[:depth]}


def kappa(a: list[int], b: list[int]) -> float:
    """Cohen's kappa, unweighted, written out: (observed - chance) / (1 - chance)."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    chance = sum(ca[g] * cb[g] for g in set(a) | set(b)) / (n * n)
    return (observed - chance) / (1 - chance)


def qrels_of(path: Path) -> dict[tuple[str, str], int]:
    return {(q, d): int(g) for q, _, d, g in (line.split() for line in path.read_text().splitlines() if line.strip())}


# ------------------------------------------------------------------- the demo is run over the example


def test_the_demo_and_run_on_a_copy_make_the_same_steps_calls_and_report_inputs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with FakeLLM() as server:
        llm = ["--base-url", server.url, "--model", "fake", "--no-cache"]
        assert main(["demo", "--copy", "copy"]) == 0
        assert Path("copy/ragassay.toml").read_text() == (EXAMPLE / "ragassay.toml").read_text()
        code, dry_lines = said(capsys, ["run", "copy/ragassay.toml", "--dry-run", *llm])
        assert code == 0 and not server.requests  # coverage's ceiling counted: the dry run's total bounds the run's
        assert (
            dry_lines[-1]
            == "dry run: no model was called (the retrievers ran, to know the pool); at most 282 calls in all"
        )
        code, demo_lines = said(capsys, ["demo", "--out", "demo-out", *llm])
        demo_asked = Counter(schema_seen(b) for b in server.requests)
        seen = len(server.requests)
        run_code, run_lines = said(capsys, ["run", "copy/ragassay.toml", *llm])
        run_asked = Counter(schema_seen(b) for b in server.requests[seen:])
    assert code == run_code == 0, (code, demo_lines[-12:], run_code, run_lines[-12:])  # what a failed step said
    # the same steps, in the same words (but where each wrote)
    demo_steps = [line.replace("demo-out/", "OUT/") for line in steps_of(demo_lines)]
    run_steps = [
        line.replace("copy/ragassay-out/", "OUT/").replace("copy/.ragassay/", "OUT/.ragassay/")
        for line in steps_of(run_lines)
    ]
    assert demo_steps == run_steps and [s.split()[0] for s in demo_steps] == list(STEPS)
    assert all(status(s) in ("ran", "skipped") for s in nonempty(demo_steps))
    # the same calls, schema by schema; the pool is both runs' top 5, counted here from the run files
    pool = top(Path("demo-out/runs/bm25.txt"), 5) | top(Path("demo-out/runs/tfidf.txt"), 5)
    assert demo_asked == run_asked and demo_asked["RelevanceAnswer"] == len(pool) == 134
    assert sum(demo_asked.values()) == 282 and demo_asked["GeneratedQuestion"] == 10
    assert demo_asked["AnswerVerdict"] == 14  # two of the 16 answers are their reference as written
    # the same report inputs, read as the report reads them
    for name in nonempty(REPORT_INPUTS):
        mine, theirs = Path("demo-out") / name, Path("copy/ragassay-out") / name
        assert (mine.stat().st_size or name == "rejects.jsonl") and content(mine, "demo-out", str(EXAMPLE)) == content(
            theirs, "copy/ragassay-out", "copy"
        ), name
    # the report names both comparisons by who labelled
    html = Path("demo-out/report.html").read_text()
    assert "Agreement: example assessor 1 against example assessor 2" in html
    assert re.search(r"Agreement: example assessor 1 against fake, judge_relevance@\w+ at 127\.0\.0\.1:\d+", html)
    # the installed example was only read
    assert not (EXAMPLE / ".ragassay").exists() and not (EXAMPLE / "ragassay-out").exists()


def test_without_an_endpoint_the_demo_runs_what_needs_no_model_and_exits_0(tmp_path, capsys):
    out = tmp_path / "d"
    code, lines = said(capsys, ["demo", "--out", str(out)])
    assert code == 0
    assert {s.split()[0]: status(s) for s in steps_of(lines)} == {
        "generate": "skipped",
        "retrieve": "ran",
        "judge": "skipped",
        "coverage": "skipped",
        "agree": "ran",
        "check": "ran",
        "evaluate": "ran",
        "compare": "ran",
        "report": "ran",
        "track": "ran",
        "gate": "skipped",
    }
    assert "skipped (no LLM configured): generate, judge, coverage, check (LLM verdicts)" in lines
    assert lines[-1] == f"report: {out}/report.html  (open it in a browser)"
    written = sorted(
        str(p.relative_to(out))
        for p in out.rglob("*")
        if p.is_file() and not p.relative_to(out).parts[0].startswith(".")
    )
    assert written == sorted(
        str(p.relative_to(out))
        for p in out.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(out).parts)
    )
    assert written == [
        "agree_second.json",
        "check.json",
        "checks_by_rule.jsonl",
        "compare.json",
        "evaluate/bm25.json",
        "evaluate/tfidf.json",
        "report.html",
        "report.md",
        "runs/bm25.txt",
        "runs/bm25.txt.latency.json",
        "runs/bm25.txt.run.json",
        "runs/tfidf.txt",
        "runs/tfidf.txt.latency.json",
        "runs/tfidf.txt.run.json",
    ]
    assert (out / ".ragassay" / "state.json").exists() and (out / ".ragassay" / "history.sqlite").exists()
    # the two people's agreement, against kappa written out here over the pairs both labelled
    first, second = qrels_of(EXAMPLE / "qrels.txt"), qrels_of(EXAMPLE / "qrels_second_assessor.txt")
    both = sorted(set(first) & set(second))
    agreed = json.loads((out / "agree_second.json").read_text())
    assert agreed["pairs"] == len(both) == 65 and agreed["names"] == ["example assessor 1", "example assessor 2"]
    assert agreed["kappa"] == pytest.approx(kappa([first[p] for p in both], [second[p] for p in both]), abs=1e-12)
    assert agreed["only_reference"] == len(first) - 65 and agreed["only_candidate"] == 0
    # the rule-decided answers are the ones whose response is their reference as written
    checks = [json.loads(line) for line in (out / "checks_by_rule.jsonl").read_text().splitlines()]
    ruled = sorted(c["id"] for c in checks if c["status"] == "ok")
    answers = [json.loads(line) for line in (EXAMPLE / "answers.jsonl").read_text().splitlines()]

    def as_written(a: dict) -> bool:  # one of the accepted answers, a leading "the" and end punctuation aside
        refs = a["reference"] if isinstance(a["reference"], list) else [a["reference"]]
        return re.sub(r"^the |[.!]$", "", a["response"].lower()) in [
            re.sub(r"^the |[.!]$", "", r.lower()) for r in refs
        ]

    assert ruled == sorted(a["id"] for a in answers if as_written(a)) == ["q06", "q17"]
    assert all(
        c["decided_by"] == "rule" and c["label"] == "correct"
        for c in nonempty([c for c in checks if c["status"] == "ok"])
    )
    # a second demo: every step up to date
    code, again = said(capsys, ["demo", "--out", str(out)])
    assert code == 0 and {status(s) for s in steps_of(again)} == {"up to date", "skipped"}


def test_a_second_demo_sends_nothing_and_a_dead_endpoint_still_leaves_the_report(tmp_path, capsys):
    out = tmp_path / "d"
    with FakeLLM() as server:
        llm = ["--base-url", server.url, "--model", "fake", "--no-cache"]
        code, lines = said(capsys, ["demo", "--out", str(out), *llm])
        first = server.calls
        assert code == 0 and first == 282
        assert all(status(s) == "ran" for s in nonempty(steps_of(lines)) if not s.startswith("gate"))
        assert (out / "report.html").exists() and not any("finished with failures" in line for line in lines)
        code, again = said(capsys, ["demo", "--out", str(out), *llm])
        assert code == 0 and server.calls == first  # the state: nothing changed, nothing sent
    assert {status(s) for s in steps_of(again)} == {"up to date", "skipped"}
    ran_line = next(s for s in steps_of(lines) if s.startswith("evaluate"))
    kept_line = next(s for s in steps_of(again) if s.startswith("evaluate"))
    assert kept_line == ran_line.replace("evaluate  ran: ", "evaluate  up to date: ")  # the kept figures, said again
    code, lines = said(
        capsys, ["demo", "--out", str(tmp_path / "dead"), "--base-url", dead_url(), "--model", "fake", "--no-cache"]
    )
    assert code == 3 and (tmp_path / "dead" / "report.html").exists()
    tail = lines[lines.index("demo finished with failures in 4 stage(s); the report shows what succeeded:") + 1 :]
    assert [line.split(":")[0].strip() for line in tail] == ["generate", "judge", "coverage", "check"]
    assert all("could not connect" in line for line in nonempty(tail))
    # the steps that need no model ran on people's qrels
    assert any(s.startswith("evaluate  ran: bm25: ndcg@10 0.7935") for s in steps_of(lines))


# ------------------------------------------------------------- run's new capabilities, on a project of its own

FILLER = " This passage was written for the tests, so it holds at least twelve words."  # (generate needs 12)
CHUNKS = {
    "d:1": "alpha beta gamma delta." + FILLER,
    "ré-2": "alpha beta words." + FILLER,
    "d#3": "gamma delta epsilon." + FILLER,
    "d4": "nothing shared here." + FILLER,
    "d5": "alpha alpha beta." + FILLER,
}
QUERIES = {"q/1": "alpha beta", "q-ü": "gamma delta", "q3": "zeta"}


def origin(by: str, name: str) -> str:
    return json.dumps(
        {
            "record": "origin@1",
            "labellers": [{"by": by, "name": name, "prompt": None, "endpoint": None}],
            "command": None,
            "date": "2026-01-01T00:00:00+00:00",
        }
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project of odd ids, with two runs that tie, people's qrels by alice, a second labelling by
    bob (a query alice did not label, one pair of alice's left out), answers (one its reference as
    written, one empty, one for the model) and labels of one answer and of an id no answer has."""
    d = tmp_path / "p"
    d.mkdir()
    (d / "chunks.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in CHUNKS.items()))
    (d / "queries.jsonl").write_text("".join(json.dumps({"id": i, "question": t}) + "\n" for i, t in QUERIES.items()))
    (d / "a.txt").write_text(
        "q/1 Q0 d:1 1 2.0 a\nq/1 Q0 ré-2 2 2.0 a\nq/1 Q0 d5 3 1.0 a\n"
        "q-ü Q0 d#3 1 3.0 a\nq-ü Q0 d:1 2 1.0 a\nq3 Q0 d4 1 0.5 a\n"
    )
    (d / "b.txt").write_text("q/1 Q0 d5 1 9.0 b\nq/1 Q0 d:1 2 1.0 b\nq-ü Q0 d4 1 1.0 b\nq-ü Q0 d#3 2 1.0 b\n")
    (d / "people.qrels").write_text("q/1 0 d:1 3\nq/1 0 ré-2 2\nq/1 0 d5 1\nq-ü 0 d#3 3\nq-ü 0 d4 0\nq3 0 d4 0\n")
    (d / "people.qrels.origin.json").write_text(origin("person", "alice"))
    (d / "bob.qrels").write_text("q/1 0 d:1 2\nq/1 0 ré-2 2\nq/1 0 d5 0\nq-ü 0 d#3 3\nq-ü 0 d4 1\nq9 0 d:1 1\n")
    (d / "bob.qrels.origin.json").write_text(origin("person", "bob"))
    (d / "answers.jsonl").write_text(
        json.dumps(
            {
                "id": "q/1",
                "question": QUERIES["q/1"],
                "reference": "alpha beta.",
                "response": "alpha beta",
                "context_ids": ["d:1"],
            }
        )
        + "\n"
        + json.dumps(
            {"id": "q-ü", "question": QUERIES["q-ü"], "reference": "gamma", "response": " ", "context_ids": ["d#3"]}
        )
        + "\n"
        + json.dumps(
            {"id": "q3", "question": QUERIES["q3"], "reference": "zeta", "response": "it is d4", "context_ids": ["d4"]}
        )
        + "\n"
    )
    (d / "labels.jsonl").write_text('{"id": "q3", "label": "hallucinated"}\n{"id": "nobody", "label": "correct"}\n')
    (d / "labels.jsonl.origin.json").write_text(origin("person", "alice"))
    (d / "ragassay.toml").write_text(
        'depth = 2\nk = 5\nmetrics = ["ndcg@10", "P_2"]\n\n[data]\nchunks = "chunks.jsonl"\nqueries = '
        '"queries.jsonl"\n'
        'answers = "answers.jsonl"\nhuman = "labels.jsonl"\nqrels = "people.qrels"\n\n[runs]\na = "a.txt"\nb = '
        '"b.txt"\n\n'
        '[agree]\nsecond = "bob.qrels"\n'
    )
    return d


def run_json(capsys, project: Path, *more: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["run", str(project / "ragassay.toml"), "--format", "json", "--quiet", *more])
    return code, json.loads(capsys.readouterr().out)


def step(done: dict, name: str) -> dict:
    return next(s for s in done["steps"] if s["step"] == name)


def test_agree_with_a_second_labelling_and_a_rule_only_check_without_an_endpoint(project, capsys):
    code, done = run_json(capsys, project)
    assert code == 0, done
    # the second labelling met the people's qrels on two queries; bob's q9 is said (the sides that mean something)
    join = next(j for j in done["joins"] if j["right"]["role"] == "the second qrels")
    assert (join["left"]["ids"], join["left"]["matched"], join["right"]["ids"], join["right"]["matched"]) == (
        3,
        2,
        3,
        2,
    )
    assert "query ids: 1 of 3 in the second qrels are not in the qrels (e.g. q9)" in done["warnings"]
    alice, bob = qrels_of(project / "people.qrels"), qrels_of(project / "bob.qrels")
    both = sorted(set(alice) & set(bob))
    assert len(both) == 5  # q3's pair is alice's alone, q9's bob's alone
    expected = kappa([alice[p] for p in both], [bob[p] for p in both])
    assert (
        step(done, "agree")["text"]
        == f"alice vs bob: kappa {expected:.3f} on 5 pairs, Kendall tau of the runs "
        + f"{step(done, 'agree')['result']['second']['run_ranking']['kendall_tau_b']:.2f}"
    )
    written = json.loads((project / "ragassay-out" / "agree_second.json").read_text())
    assert written["kappa"] == pytest.approx(expected, abs=1e-12)
    assert (written["pairs"], written["only_reference"], written["only_candidate"]) == (5, 1, 1)
    assert written["same_origin"] is False and not (project / "ragassay-out" / "agree_pool.json").exists()
    # the check: one answer is its reference as written (case, end punctuation aside), one is empty
    check = step(done, "check")
    assert check["status"] == "ran" and check["exit_code"] == 0
    assert check["text"] == (
        "2 of 3 answers decided by rule (1 correct, 0 partial, 0 hallucinated, 1 abstained); "
        "the other 1 need an LLM verdict"
    )
    records = {
        r["id"]: r
        for r in map(json.loads, (project / "ragassay-out" / "checks_by_rule.jsonl").read_text().splitlines())
    }
    assert (records["q/1"]["label"], records["q-ü"]["label"], records["q3"]["status"]) == (
        "correct",
        "abstained",
        "error",
    )
    assert "no endpoint is configured" in records["q3"]["error"]
    # the labels of an answer no one gave are counted and said
    assert "answer ids: 1 of 2 in the human labels are not in the answers (e.g. nobody)" in done["warnings"]
    assert done["without_llm"] == ["judge", "check (LLM verdicts)"] and done["exit_code"] == 0


def test_one_labeller_on_both_sides_gives_no_kappa(project, capsys):
    (project / "bob.qrels.origin.json").write_text(origin("person", "alice"))
    code, done = run_json(capsys, project)
    assert code == 0
    assert step(done, "agree")["text"] == "alice vs alice: one labeller on both sides, no kappa (5 pairs)"
    written = json.loads((project / "ragassay-out" / "agree_second.json").read_text())
    assert written["same_origin"] is True and written["kappa"] is None
    assert "Agreement: not measured" in (project / "ragassay-out" / "report.md").read_text()


def test_people_against_the_judged_pool_and_out_moves_outputs_and_state(project, capsys, tmp_path):
    before = sorted(p.name for p in project.rglob("*"))
    out = tmp_path / "elsewhere"
    with FakeLLM() as server:
        llm = ["--base-url", server.url, "--model", "fake", "--no-cache"]
        code, done = run_json(capsys, project, "--out", str(out), *llm)
        assert code == 0, done
        asked = Counter(schema_seen(b) for b in server.requests)
        calls = server.calls
        code, again = run_json(capsys, project, "-o", str(out), *llm)
        assert code == 0 and server.calls == calls  # the state moved with the outputs: nothing sent
    assert sorted(p.name for p in project.rglob("*")) == before  # the project folder was only read
    assert (out / ".ragassay" / "state.json").exists() and step(again, "agree")["status"] == "up to date"
    # the pool: each run's top 2 (ties by id descending), counted here
    pool = top(project / "a.txt", 2) | top(project / "b.txt", 2)
    assert pool == {
        ("q/1", "ré-2"),
        ("q/1", "d:1"),
        ("q/1", "d5"),
        ("q-ü", "d#3"),
        ("q-ü", "d:1"),
        ("q-ü", "d4"),
        ("q3", "d4"),
    }
    assert asked["RelevanceAnswer"] == len(pool)
    graded = {
        (r["query_id"], r["chunk_id"]): r["grade"]
        for r in map(json.loads, (out / "judgments.jsonl").read_text().splitlines())
    }
    assert set(graded) == pool
    alice = qrels_of(project / "people.qrels")
    met = sorted(set(alice) & pool)
    assert len(met) == 6  # q-ü/d:1 is the judge's alone
    pooled = json.loads((out / "agree_pool.json").read_text())
    assert (pooled["pairs"], pooled["only_reference"], pooled["only_candidate"]) == (6, 0, 1)
    assert pooled["kappa"] == pytest.approx(kappa([alice[p] for p in met], [graded[p] for p in met]), abs=1e-12)
    assert pooled["names"][0] == "alice" and pooled["names"][1].startswith("fake, judge_relevance@")
    assert step(done, "agree")["text"].split("; ")[1].startswith("alice vs fake, judge_relevance@")
    assert (out / "agree_second.json").exists() and step(done, "check")["text"].startswith("3 of 3 answers graded")
    md = (out / "report.md").read_text()
    assert "## Agreement: alice against bob" in md and "## Agreement: alice against fake, judge_relevance@" in md
    # offline afterwards: the LLM's verdicts on these very answers stand and are shown (no rule file written
    # over them), no pool is compared
    verdicts = (out / "checks.jsonl").read_text()
    code, offline = run_json(capsys, project, "--out", str(out))
    assert code == 0 and (out / "checks.jsonl").read_text() == verdicts
    assert step(offline, "check")["status"] == "up to date"
    assert step(offline, "check")["text"].startswith("3 of 3 answers graded")
    assert "the verdicts an LLM gave before (checks.jsonl), kept" in step(offline, "check")["text"]
    assert not (out / "checks_by_rule.jsonl").exists() and "3 of 3" in (out / "report.md").read_text()
    # answers edited since: the LLM's verdicts are of other answers, the rules decide what they can now
    answers = project / "answers.jsonl"
    answers.write_text(answers.read_text().replace("alpha beta.", "alpha beta gamma."))
    code, edited = run_json(capsys, project, "--out", str(out))
    assert code == 0 and step(edited, "check")["text"].startswith("1 of 3 answers decided by rule"), edited
    answers.write_text(answers.read_text().replace("alpha beta gamma.", "alpha beta."))
    code, offline = run_json(capsys, project, "--out", str(out))
    assert step(offline, "check")["text"].startswith("2 of 3 answers decided by rule")  # the rules ran last
    assert (
        step(offline, "agree")["text"].startswith("alice vs bob: kappa")
        and "fake" not in step(offline, "agree")["text"]
    )
    assert not (out / "agree_pool.json").exists()
    assert "against fake" not in (out / "report.md").read_text()
    # and with the endpoint again: the verdicts are found done, nothing is sent, the pool is compared again
    with FakeLLM() as server:
        code, back = run_json(
            capsys, project, "--out", str(out), "--base-url", server.url, "--model", "fake", "--no-cache"
        )
        assert code == 0 and server.calls == 0, back
    assert step(back, "check")["text"].startswith("3 of 3 answers graded") and (out / "agree_pool.json").exists()


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if line.startswith(text))


@pytest.mark.parametrize(
    "edit, key, why",
    [
        (
            lambda t: t.replace('second = "bob.qrels"', 'second = "gone.qrels"'),
            "second = ",
            "no such file 'gone.qrels'",
        ),
        (
            lambda t: t.replace('qrels = "people.qrels"\n', ""),
            "second = ",
            "[agree] second is measured against people's",
        ),
        (
            lambda t: t.replace('second = "bob.qrels"', 'second = "bob.qrels"\nwith = "x"'),
            "with = ",
            "unknown key in [agree] (known: second)",
        ),
        (lambda t: t + "\n[generate]\nsample = -1\n", "sample = ", "must be a whole number of at least 0, got -1"),
        (
            lambda t: t.replace('queries = "queries.jsonl"\n', "") + "\n[generate]\nsample = 3\n",
            "sample = ",
            "[generate] sample writes questions beside the project's own queries",
        ),
        (lambda t: t + '\n[report]\ntitle = ""\n', "title = ", "must be a title in quotes"),
        (lambda t: 'keep_going = "yes"\n' + t, "keep_going = ", "must be true or false"),
    ],
)
def test_the_new_keys_are_checked_naming_the_line(project, capsys, edit, key, why):
    toml = project / "ragassay.toml"
    toml.write_text(edit(toml.read_text()))
    capsys.readouterr()
    assert main(["run", str(toml), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert f"ragassay.toml:{line_of(toml, key)}: " in err and why in err and "Traceback" not in err


def test_a_second_labelling_of_other_queries_stops_the_run_before_any_step(project, capsys):
    (project / "bob.qrels").write_text("x1 0 d:1 1\nx2 0 d5 0\n")
    capsys.readouterr()
    assert main(["run", str(project / "ragassay.toml")]) == 1
    err = capsys.readouterr().err
    assert "no query ids in common" in err and "people.qrels" in err and "bob.qrels" in err
    assert not (project / "ragassay-out").exists()


def test_a_sample_beside_the_queries_is_written_and_reported_never_retrieved(project, capsys, tmp_path):
    toml = project / "ragassay.toml"
    toml.write_text(toml.read_text() + "\n[generate]\nsample = 2\n\n[retrievers]\n")
    with FakeLLM() as server:
        code, done = run_json(capsys, project, "--base-url", server.url, "--model", "fake", "--no-cache")
        asked = Counter(schema_seen(b) for b in server.requests)
    assert code == 0, done
    out = project / "ragassay-out"
    generated = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert step(done, "generate")["text"] == (
        "a sample of 2 beside the project's queries (not retrieved): 2 questions accepted, 0 rejected"
    )
    assert asked["GeneratedQuestion"] == len(generated) == 2
    # the pool, the judge and the check read the project's own queries only; the sample is in the report
    judged = {r["query_id"] for r in map(json.loads, (out / "judgments.jsonl").read_text().splitlines())}
    assert judged == set(QUERIES) and not judged & {q["id"] for q in generated}
    assert step(done, "retrieve")["status"] == "skipped" and not (out / "runs").exists()
    assert "## Generated set: mix and rejects" in (out / "report.md").read_text()


def test_a_data_folder_without_a_project_file_is_refused_naming_it(tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "chunks.jsonl").write_text((EXAMPLE / "chunks.jsonl").read_text())
    (plain / "qrels.txt").write_text((EXAMPLE / "qrels.txt").read_text())
    code, lines = said(capsys, ["demo", "--data", str(plain), "--out", str(tmp_path / "d")])
    assert code == 1 and f"{plain}: not an example dataset: it needs its project file ragassay.toml" in "\n".join(lines)
    assert not (tmp_path / "d").exists()
