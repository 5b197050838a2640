"""``ragassay init`` and ``ragassay run`` on a copy of the bundled example, against the local fake
server: init names every file's role, a dry run predicts the calls the run makes, a second run sends
nothing, a new run costs exactly its pairs not in the pool yet, a retriever whose code changed is re-run
and re-judged only where its results changed, and ids that do not meet stop the run before any call."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fake_llm import FakeLLM, schema_seen
from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.data.run_files import read_run
from ragassay.product.pipeline import pool
from ragassay.product.project import loads_toml

DEPTH = 10


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the example without a project file."""
    d = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, d, ignore=shutil.ignore_patterns("__pycache__", "ragassay.toml"))
    return d


@pytest.fixture
def offline(monkeypatch) -> None:
    """No LLM endpoint in the environment: the run's offline steps alone."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def init(folder: Path, capsys, *more: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["init", str(folder), *more])
    return code, capsys.readouterr().out


def run(folder: Path, capsys, server: FakeLLM | None, *more: str) -> tuple[int, dict]:
    capsys.readouterr()
    llm = ["--base-url", server.url, "--model", "fake", "--concurrency", "2"] if server else []
    code = main(["run", str(folder / "ragassay.toml"), "--format", "json", "--quiet", *llm, *more])
    said = capsys.readouterr()
    # no JSON on stdout: what the command said instead, for the assertion that fails on it to show
    return code, json.loads(said.out) if said.out.strip() else {"stderr": said.err}


def judge_requests(server: FakeLLM, since: int = 0) -> int:
    return sum(schema_seen(b) == "RelevanceAnswer" for b in server.requests[since:])


def step(result: dict, name: str) -> dict:
    assert "steps" in result, result  # a run that printed no result: its stderr
    return next(s for s in result["steps"] if s["step"] == name)


def choose_people_qrels(folder: Path) -> None:
    toml = folder / "ragassay.toml"
    toml.write_text(toml.read_text().replace('# qrels = "qrels.txt"', 'qrels = "qrels.txt"'))


def tops(paths: list[Path]) -> set[tuple[str, str]]:
    """The pairs of the runs' top DEPTH, counted here from the files (trec order: score, then id desc)."""
    out = set()
    for p in paths:
        by_query: dict[str, list[tuple[float, str]]] = {}
        for line in p.read_text().splitlines():
            q, _, doc, _, score, _ = line.split()
            by_query.setdefault(q, []).append((float(score), doc))
        for q, docs in by_query.items():
            out |= {(q, d) for _, d in sorted(docs, reverse=True)[:DEPTH]}
    return out


def test_init_names_every_file_role_and_leaves_choices_commented(folder, capsys):
    code, out = init(folder, capsys)
    assert code == 0
    text = (folder / "ragassay.toml").read_text()
    project = loads_toml(text)
    assert project["data"] == {
        "chunks": "chunks.jsonl",
        "queries": "queries.jsonl",
        "answers": "answers.jsonl",
        "human": "answers_human_labels.jsonl",
    }
    assert project["retrievers"] == {"tfidf": "retrievers.py:tfidf", "bm25": "retrievers.py:bm25"}
    assert project["runs"] == {} and project["depth"] == 10
    # two people's qrels: neither is chosen; both are written commented out, with who labelled them
    assert re.search(r'^# qrels = "qrels.txt" .*example assessor 1', text, re.M)
    assert re.search(r'^# qrels = "qrels_second_assessor.txt" .*example assessor 2', text, re.M)
    # a run file a retriever of its name writes is a choice too
    assert re.search(r'^# bm25 = "runs/bm25.txt"', text, re.M)
    assert "make_runs.py" in text  # not placed, and said
    for name in nonempty(
        [
            "chunks.jsonl",
            "queries.jsonl",
            "answers.jsonl",
            "answers_human_labels.jsonl",
            "retrievers.py",
            "qrels.txt",
            "qrels_second_assessor.txt",
            "runs/tfidf.txt",
            "make_runs.py",
        ]
    ):
        assert name in out
    assert "to choose" in out and "not placed" in out
    # a second init does not overwrite it
    assert init(folder, capsys)[0] == 2
    code, out = init(folder, capsys, "--update")
    assert code == 0 and "nothing new" in out and (folder / "ragassay.toml").read_text() == text


def test_update_appends_new_files_and_keeps_the_users_lines(folder, capsys):
    init(folder, capsys)
    toml = folder / "ragassay.toml"
    edited = (
        toml.read_text().replace("depth = 10 ", "depth = 5 ").replace('# qrels = "qrels.txt"', 'qrels = "qrels.txt"')
    )
    toml.write_text(edited)
    shutil.copy(folder / "runs" / "bm25.txt", folder / "runs" / "dense run.txt")
    (folder / "notes.md").write_text("# notes\n")
    code, out = init(folder, capsys, "--update")
    assert code == 0 and "runs/dense run.txt" in out and "notes.md" in out
    text = toml.read_text()
    kept = text.splitlines()
    assert all(line in kept for line in nonempty(edited.splitlines()))  # every line the user had, as it was
    project = loads_toml(text)
    assert project["depth"] == 5 and project["data"]["qrels"] == "qrels.txt"
    assert project["runs"] == {"dense_run": "runs/dense run.txt"}
    # the new entry sits in [runs], before [retrievers]
    assert text.index("dense_run") < text.index("[retrievers]")


def test_run_pools_judges_once_reports_and_reruns_only_what_changed(folder, capsys):
    init(folder, capsys)
    choose_people_qrels(folder)
    out = folder / "ragassay-out"
    with FakeLLM() as server:
        code, dry = run(folder, capsys, server, "--dry-run")
        assert code == 0 and server.calls == 0 and dry["dry_run"]
        predicted = {s["step"]: s["estimate"]["calls"] for s in dry["steps"] if s["estimate"]}
        assert set(predicted) == {"judge", "check"} and dry["calls"] == sum(predicted.values()) > 0
        assert not out.joinpath("runs").exists() or not any(out.joinpath("runs").iterdir())  # a dry run writes no run

        code, done = run(folder, capsys, server)
        assert code == 0, done
        runs = [out / "runs" / "tfidf.txt", out / "runs" / "bm25.txt"]
        first_pool = tops(runs)
        assert judge_requests(server) == len(first_pool) == predicted["judge"]
        assert server.calls == dry["calls"]
        assert (out / "report.html").stat().st_size > 0 and "tfidf" in (out / "report.md").read_text()
        assert {s["step"]: s["status"] for s in done["steps"]}["gate"] == "skipped"
        # the pool written is the union counted here
        assert {
            (q, d) for q, d in (line.split()[0:3:2] for line in (out / "pool.txt").read_text().splitlines())
        } == first_pool

        # a second run sends nothing
        before = server.calls
        code, again = run(folder, capsys, server)
        assert code == 0 and server.calls == before
        assert {s["step"] for s in again["steps"] if s["status"] == "ran"} == set()
        for name in nonempty(["judge", "check", "evaluate", "compare", "report"]):  # the results kept, said again
            assert step(again, name)["result"] == step(done, name)["result"] is not None, name
        assert step(done, "judge")["result"]["pairs"] == len(first_pool)
        assert (
            step(done, "judge")["text"] == f"the pool of 2 runs' top {DEPTH}: {len(first_pool)} pairs, 0 judged "
            f"before, {len(first_pool)} now, 0 errors"
        )
        assert step(again, "judge")["status"] == "up to date"
        assert (
            step(again, "judge")["text"] == f"the pool of 2 runs' top {DEPTH}: {len(first_pool)} pairs, "
            f"all {len(first_pool)} judged before, 0 now"
        )

        # a new run file: init --update adds it; it costs exactly its pairs not in the pool
        dense = folder / "runs" / "dense.txt"
        lines = (folder / "runs" / "bm25.txt").read_text().splitlines()
        # bm25's ranking turned upside down: its deep results come to the top
        dense.write_text(
            "\n".join(f"{q} Q0 {d} {r} {-float(s)} dense" for q, _, d, r, s, _ in (ln.split() for ln in lines)) + "\n"
        )
        new_pairs = tops([dense]) - first_pool
        assert len(new_pairs) > 0
        assert init(folder, capsys, "--update")[0] == 0
        before = server.calls
        code, grown = run(folder, capsys, server)
        assert code == 0, grown
        assert judge_requests(server, before) == len(new_pairs) == server.calls - before
        assert "dense" in (out / "report.md").read_text()
        assert step(grown, "retrieve")["status"] == "up to date"

        # a retriever whose code changed is re-run, and judged again only where its results changed
        old_pool = tops([dense, *runs])
        code_file = folder / "retrievers.py"
        code_file.write_text(
            code_file.read_text().replace(
                "(ids[i], round(float(scores[i]), 6))", "(ids[i], round(1.0 - float(scores[i]), 6))"
            )
        )
        before = server.calls
        code, changed = run(folder, capsys, server)
        assert code == 0, changed
        assert "tfidf: " in step(changed, "retrieve")["text"]
        changed_pairs = tops([out / "runs" / "tfidf.txt"]) - old_pool
        assert len(changed_pairs) > 0
        assert judge_requests(server, before) == len(changed_pairs)


def test_ids_that_do_not_meet_stop_the_run_before_any_call(folder, capsys):
    init(folder, capsys)
    other = folder / "runs" / "other.txt"
    other.write_text("".join(f"x{i:02d} Q0 refund-01 1 1.0 other\n" for i in range(5)))
    assert init(folder, capsys, "--update")[0] == 0
    with FakeLLM() as server:
        capsys.readouterr()
        code = main(["run", str(folder / "ragassay.toml"), "--base-url", server.url, "--model", "fake"])
        err = capsys.readouterr().err
        assert code == 1 and server.calls == 0
    assert "no query ids in common" in err and "other.txt" in err and "x00" in err and "q01" in err
    assert not (folder / "ragassay-out" / "judgments.jsonl").exists()


def test_a_bad_project_file_names_the_file_and_line(folder, capsys):
    init(folder, capsys)
    toml = folder / "ragassay.toml"
    toml.write_text(toml.read_text().replace('chunks = "chunks.jsonl"', 'chunks = "missing.jsonl"'))
    capsys.readouterr()
    assert main(["run", str(toml)]) == 1
    err = capsys.readouterr().err
    line = next(i for i, ln in enumerate(toml.read_text().splitlines(), 1) if ln.startswith("chunks ="))
    assert f"ragassay.toml:{line}" in err and "missing.jsonl" in err
    assert main(["run", str(toml), "--only", "judje"]) == 2
    assert main(["run", str(toml), "--only", "judge", "--from", "check"]) == 2


def test_without_an_endpoint_the_offline_steps_run_and_the_llm_ones_say_why(folder, capsys, offline):
    init(folder, capsys)
    choose_people_qrels(folder)
    toml = folder / "ragassay.toml"
    toml.write_text(toml.read_text().replace('# min = ["ndcg@10=0.5"]', 'min = ["ndcg@10=0.99"]'))
    code, done = run(folder, capsys, None)
    status = {s["step"]: s["status"] for s in done["steps"]}
    assert status["judge"] == "skipped" and "no model given" in step(done, "judge")["text"]
    # the check decides by rule what it can: two answers whose response is their reference as written
    assert status["check"] == "ran" and step(done, "check")["exit_code"] == 0
    assert step(done, "check")["text"] == (
        "2 of 16 answers decided by rule (2 correct, 0 partial, 0 hallucinated, "
        "0 abstained); the other 14 need an LLM verdict"
    )
    assert done["without_llm"] == ["judge", "check (LLM verdicts)"]
    assert status["evaluate"] == status["compare"] == status["report"] == "ran"
    # people's qrels score the runs; the gate at 0.99 fails both runs: exit 1, each failure named
    assert code == 1 and status["gate"] == "failed"
    assert "tfidf:" in step(done, "gate")["text"] and "bm25:" in step(done, "gate")["text"]
    ev = json.loads((folder / "ragassay-out" / "evaluate" / "bm25.json").read_text())
    from ragassay.metrics.evaluate import evaluate

    expected = evaluate(
        folder / "qrels.txt", read_run(folder / "ragassay-out" / "runs" / "bm25.txt"), ["ndcg@10"], missing="zero"
    ).aggregate["ndcg@10"]
    assert ev["aggregate"]["ndcg@10"] == pytest.approx(expected)


def test_pool_is_the_union_of_each_runs_top_depth_with_ties_in_trec_order():
    from ragassay.data.tables import Run

    a = Run.from_dict({"q1": {"d1": 1.0, "d2": 1.0, "d3": 0.5}, "q2": {"d9": 2.0}}, name="a")
    b = Run.from_dict({"q1": {"d3": 3.0, "d4": 1.0}, "q9": {"x": 1.0}}, name="b")
    # top 2 of a for q1: the tie d1/d2 at 1.0 goes by id descending (trec_eval): d2, d1
    assert pool({"a": a, "b": b}, 2, ["q1", "q2"]) == {"q1": ["d2", "d1", "d3", "d4"], "q2": ["d9"]}
    assert pool({"a": a, "b": b}, 1) == {"q1": ["d2", "d3"], "q2": ["d9"], "q9": ["x"]}


def test_a_corpus_without_queries_gets_questions_then_the_pool_of_their_runs(tmp_path, capsys):
    folder = tmp_path / "bare"
    folder.mkdir()
    for name in ("chunks.jsonl", "retrievers.py"):
        shutil.copy(EXAMPLE / name, folder / name)
    code, out = init(folder, capsys)
    assert code == 0 and "queries" not in loads_toml((folder / "ragassay.toml").read_text())["data"]
    toml = folder / "ragassay.toml"
    toml.write_text(toml.read_text().replace("# limit = 20", "limit = 6"))
    with FakeLLM() as server:
        code, dry = run(folder, capsys, server, "--dry-run")
        assert code == 0 and server.calls == 0
        assert step(dry, "judge")["status"] == "estimated" and step(dry, "judge")["estimate"] is None  # after generate
        predicted = step(dry, "generate")["estimate"]["calls"]
        code, done = run(folder, capsys, server)
        assert code == 0, done
        out = folder / "ragassay-out"
        questions = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
        assert len(questions) == 6
        pooled = tops([out / "runs" / "tfidf.txt", out / "runs" / "bm25.txt"])
        assert {q for q, _ in pooled} <= {q["id"] for q in questions}
        assert judge_requests(server) == len(pooled) > 0
        assert server.calls - judge_requests(server) == predicted  # generate's calls, as its dry run said
        assert step(done, "compare")["status"] == "ran" and (out / "report.html").exists()


def test_only_and_from_run_part_of_the_pipeline_on_what_earlier_steps_left(folder, capsys, offline):
    init(folder, capsys)
    choose_people_qrels(folder)
    code, first = run(folder, capsys, None, "--only", "retrieve")
    status = {s["step"]: s["status"] for s in first["steps"]}
    assert code == 0 and status["retrieve"] == "ran" and status["evaluate"] == status["report"] == "not selected"
    assert not (folder / "ragassay-out" / "report.html").exists()
    code, rest = run(folder, capsys, None, "--from", "evaluate")
    status = {s["step"]: s["status"] for s in rest["steps"]}
    assert code == 0 and status["retrieve"] == "not selected" and status["evaluate"] == status["report"] == "ran"
    assert (folder / "ragassay-out" / "report.html").exists()
    # the runs evaluated are the ones --only retrieve wrote
    assert step(rest, "evaluate")["text"].startswith("tfidf: ndcg@10 0.8477")


def test_a_dead_endpoint_fails_the_judge_step_and_the_steps_that_need_it_say_so(folder, capsys):
    from fake_llm import dead_url

    init(folder, capsys)
    capsys.readouterr()
    code = main(
        [
            "run",
            str(folder / "ragassay.toml"),
            "--base-url",
            dead_url(),
            "--model",
            "fake",
            "--format",
            "json",
            "--quiet",
        ]
    )
    done = json.loads(capsys.readouterr().out)
    status = {s["step"]: s["status"] for s in done["steps"]}
    assert code == 1 and status["judge"] == "failed" and status["check"] == "ran"  # the rules' check stands
    assert status["evaluate"] == status["compare"] == "skipped"  # no people's qrels chosen: nothing to score on
    assert "judge failed before it" in step(done, "evaluate")["text"]
    assert done["exit_code"] == 1 and "Traceback" not in step(done, "judge")["text"]


def test_update_offers_a_second_file_for_a_filled_role_as_a_choice(folder, capsys):
    init(folder, capsys)
    shutil.copy(folder / "chunks.jsonl", folder / "chunks_v2.jsonl")
    code, out = init(folder, capsys, "--update")
    text = (folder / "ragassay.toml").read_text()
    assert code == 0 and loads_toml(text)["data"]["chunks"] == "chunks.jsonl"
    assert re.search(r'^# chunks = "chunks_v2.jsonl" .*2 files could be the chunks.*added by init --update', text, re.M)
    assert text.index("chunks_v2") < text.index("[runs]")


def line_of(toml: Path, start: str) -> int:
    return next(i for i, ln in enumerate(toml.read_text().splitlines(), 1) if ln.startswith(start))


@pytest.mark.parametrize(
    "edit, key, said",
    [
        (
            ('metrics = ["ndcg@10", "map", "recall@10", "mrr"]', 'metrics = ["ndcgg@10", "map"]'),
            "metrics =",
            "ndcgg@10",
        ),
        (('# min = ["ndcg@10=0.5"]', 'min = ["ndcgg@10=0.5"]'), "min =", "ndcgg@10"),
        (("# max = []", 'max = ["rcall@10=0.9"]'), "max =", "rcall@10"),
    ],
)
def test_a_wrong_metric_stops_even_a_dry_run_naming_its_line(folder, capsys, edit, key, said):
    init(folder, capsys)
    toml = folder / "ragassay.toml"
    text = toml.read_text()
    assert edit[0] in text
    toml.write_text(text.replace(*edit))
    capsys.readouterr()
    assert main(["run", str(toml), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert f"ragassay.toml:{line_of(toml, key)}:" in err and said in err and "did you mean" in err
    assert "Traceback" not in err and not (folder / "ragassay-out").exists()


def test_a_gate_metric_missing_from_metrics_is_computed_for_the_gate(folder, capsys, offline):
    init(folder, capsys)
    choose_people_qrels(folder)
    toml = folder / "ragassay.toml"
    toml.write_text(
        toml.read_text()
        .replace('metrics = ["ndcg@10", "map", "recall@10", "mrr"]', 'metrics = ["map"]')
        .replace('# min = ["ndcg@10=0.5"]', 'min = ["P_5=0.1"]')
    )
    from ragassay.product.project import read_project

    assert read_project(toml).metrics == ["map", "p@5"]
    code, done = run(folder, capsys, None)
    assert code == 0 and step(done, "gate")["status"] == "ran", done
    ev = json.loads((folder / "ragassay-out" / "evaluate" / "bm25.json").read_text())
    from ragassay.metrics.evaluate import evaluate

    expected = evaluate(
        folder / "qrels.txt", read_run(folder / "ragassay-out" / "runs" / "bm25.txt"), ["P_5"], missing="zero"
    ).aggregate
    assert set(ev["aggregate"]) == {"map", "p@5"} and ev["aggregate"]["p@5"] == pytest.approx(expected["p@5"])
    # a threshold the runs miss fails the gate on the metric added for it
    toml.write_text(toml.read_text().replace('min = ["P_5=0.1"]', 'min = ["P_5=0.99"]'))
    code, done = run(folder, capsys, None)
    assert code == 1 and f"bm25: p@5 = {expected['p@5']:.4f} is below the minimum 0.99" in step(done, "gate")["text"]


def test_json_gives_each_steps_result_and_an_up_to_date_rerun_the_kept_one(folder, capsys, offline):
    init(folder, capsys)
    choose_people_qrels(folder)
    out = folder / "ragassay-out"
    from ragassay.metrics.evaluate import evaluate

    for attempt in ("ran", "up to date"):
        code, done = run(folder, capsys, None)
        assert code == 0, done
        ev = step(done, "evaluate")
        assert ev["status"] == attempt and set(ev["result"]) == {"tfidf", "bm25"}
        for name in nonempty(["tfidf", "bm25"]):
            expected = evaluate(
                folder / "qrels.txt",
                read_run(out / "runs" / f"{name}.txt"),
                ["ndcg@10", "map", "recall@10", "mrr"],
                missing="zero",
            ).aggregate
            assert ev["result"][name]["kind"] == "evaluate"
            assert ev["result"][name]["aggregate"] == pytest.approx(expected)
            assert step(done, "retrieve")["result"][name]["results"] == len(read_run(out / "runs" / f"{name}.txt"))
        cmp = step(done, "compare")
        assert cmp["status"] == attempt and cmp["result"] == json.loads((out / "compare.json").read_text())
        assert cmp["result"]["kind"] == "compare" and set(cmp["result"]["means"]) == {"tfidf", "bm25"}
        assert step(done, "report")["result"]["html"] == str(out / "report.html")


def test_a_dry_run_says_what_the_metrics_steps_will_score_on(folder, capsys, offline):
    init(folder, capsys)  # people's qrels are left commented out: only the judged pool scores the runs
    code, offline = run(folder, capsys, None, "--dry-run")
    assert code == 0 and step(offline, "evaluate")["status"] == "skipped"
    assert "nothing to score on" in step(offline, "evaluate")["text"]
    with FakeLLM() as server:
        code, dry = run(folder, capsys, server, "--dry-run")
        assert code == 0 and server.calls == 0
        for name in nonempty(["evaluate", "compare"]):
            assert step(dry, name)["status"] == "estimated"
            assert "after judge, on the judged pool" in step(dry, name)["text"]
        assert step(dry, "evaluate")["text"].startswith("2 runs")
        code, done = run(folder, capsys, server)
        assert code == 0 and step(done, "evaluate")["status"] == "ran"
        assert step(done, "evaluate")["text"].endswith("(on judged.qrels)")
    choose_people_qrels(folder)  # the pool judged before still scores the runs when judge is not run
    code, offline = run(folder, capsys, None, "--dry-run", "--from", "evaluate")
    assert code == 0 and step(offline, "evaluate")["text"] == "2 runs, on judged.qrels, offline"
    shutil.rmtree(folder / "ragassay-out")  # no model and no pool: people's qrels score the runs
    code, offline = run(folder, capsys, None, "--dry-run")
    assert code == 0 and step(offline, "evaluate")["text"] == "2 runs, on qrels.txt, offline"


@pytest.mark.parametrize(
    "written",
    [
        "other = 'runs/other.txt'",  # single quotes
        'baseline = "./runs/other.txt"',  # renamed, with ./
        "# other = 'runs/other.txt'    # set aside",  # commented out by hand
        "# runs/other.txt is stale: not a run of ours",  # only said in a comment
    ],
)
def test_update_never_adds_again_a_file_the_file_names_anywhere(folder, capsys, written):
    init(folder, capsys)
    shutil.copy(folder / "runs" / "bm25.txt", folder / "runs" / "other.txt")
    assert init(folder, capsys, "--update")[0] == 0
    toml = folder / "ragassay.toml"
    text = toml.read_text()
    assert 'other = "runs/other.txt"' in text
    edited = text.replace('other = "runs/other.txt"', written).replace(
        'tfidf = "retrievers.py:tfidf"', "tfidf = 'retrievers.py:tfidf'"
    )
    toml.write_text(edited)
    code, out = init(folder, capsys, "--update")
    assert code == 0 and "nothing new" in out
    assert toml.read_text() == edited
    # a file named nowhere is still added; a name that merely contains another's is not the same file
    shutil.copy(folder / "runs" / "bm25.txt", folder / "runs" / "other.txt2")
    (folder / "runs" / "other.txt2").rename(folder / "runs" / "my-other.txt")
    assert init(folder, capsys, "--update")[0] == 0
    assert 'my-other = "runs/my-other.txt"' in toml.read_text()


def test_init_on_a_folder_with_nothing_to_use_writes_nothing_and_says_why(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert main(["init", str(empty)]) == 1
    err = capsys.readouterr().err
    assert "found nothing ragassay can use" in err and "the folder is empty" in err
    assert not (empty / "ragassay.toml").exists()
    (empty / "notes.md").write_text("# notes\n")
    (empty / "data.csv").write_text("a,b\n1,2\n")
    assert main(["init", str(empty)]) == 1
    err = capsys.readouterr().err
    assert "notes.md: not a kind of file ragassay reads" in err and "data.csv" in err and "Traceback" not in err
    assert not (empty / "ragassay.toml").exists()


def test_the_data_comment_says_questions_are_generated_only_without_queries(folder, tmp_path, capsys):
    init(folder, capsys)
    assert "generates questions" not in (folder / "ragassay.toml").read_text()
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(EXAMPLE / "chunks.jsonl", bare / "chunks.jsonl")
    assert init(bare, capsys)[0] == 0
    assert (
        "# the files the pipeline reads; no queries: run generates questions from the chunks"
        in (bare / "ragassay.toml").read_text()
    )


@pytest.mark.parametrize(
    "more, said",
    [
        (["--only", "evalute"], "--only evalute: no such step; did you mean 'evaluate'?"),
        (["--from", "juge"], "--from juge: no such step; did you mean 'judge'?"),
        (
            ["--only", "zzz"],
            "--only zzz: no such step (steps: generate, retrieve, judge, coverage, agree, check, evaluate",
        ),
        (["--only", "judge", "--only", "check"], "--only given 2 times (judge, check): give one step"),
        (["--from", "judge", "--from", "judge"], "--from given 2 times (judge, judge)"),
    ],
)
def test_a_step_misspelt_or_given_twice_is_refused(folder, capsys, more, said):
    init(folder, capsys)
    capsys.readouterr()
    assert main(["run", str(folder / "ragassay.toml"), "--dry-run", *more]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not (folder / "ragassay-out").exists()


def test_max_calls_holds_for_the_whole_run_not_for_each_step(folder, capsys):
    """--max-calls N is the run's: the judge may take all of it, and then check is not given N more;
    the steps left say the ceiling is spent (exit 3, as a stage stopped at its ceiling), and a rerun
    with a higher ceiling goes on from what was done, sending only what is left."""
    init(folder, capsys)
    choose_people_qrels(folder)
    with FakeLLM() as server:
        code, dry = run(folder, capsys, server, "--dry-run")
        judge_calls, check_calls = step(dry, "judge")["estimate"]["calls"], step(dry, "check")["estimate"]["calls"]
        ceiling = judge_calls + 3  # the judge fits; check gets only what the judge left
        code, done = run(folder, capsys, server, "--max-calls", str(ceiling))
        assert code == 3, done
        assert server.calls <= ceiling and judge_requests(server) == judge_calls
        assert step(done, "judge")["exit_code"] == 0
        assert step(done, "check")["exit_code"] == 3  # stopped at the ceiling, with 3 calls
        assert server.calls == ceiling
        sent = server.calls
        code, done = run(folder, capsys, server, "--max-calls", str(ceiling))  # the same ceiling, anew: all spent?
        assert server.calls - sent <= ceiling
        code, done = run(folder, capsys, server, "--max-calls", "1000")
        assert code == 0, done
        assert server.calls - sent <= check_calls  # only what check had left
        assert step(done, "judge")["status"] == "up to date"


def test_a_spent_ceiling_skips_the_llm_steps_after_it(folder, capsys):
    init(folder, capsys)
    choose_people_qrels(folder)
    with FakeLLM() as server:
        code, done = run(folder, capsys, server, "--max-calls", "5")
        assert code == 3 and server.calls == 5
        assert step(done, "judge")["exit_code"] == 3  # stopped at the ceiling itself
        check = step(done, "check")
        assert (check["status"], check["exit_code"]) == ("skipped", 3)
        assert check["text"] == "the run's --max-calls 5 is spent (5 requests sent by the steps before)"
        assert step(done, "evaluate")["status"] == "ran"  # the offline steps still run
        # ... on the 5 pairs judged of the pool: said, and kept out of the history and the gate
        pairs = step(done, "judge")["text"].split(" pairs")[0].rsplit(" ", 1)[1]
        partial = f"PARTIAL: {int(pairs) - 5} of the pool's {pairs} pairs are not judged yet"
        assert partial in step(done, "evaluate")["text"] and partial in step(done, "compare")["text"]
        assert step(done, "track")["status"] == "skipped" and "not kept in the history" in step(done, "track")["text"]
        assert not (folder / ".ragassay" / "history.sqlite").exists()
        # a rerun with room finishes the judge: the scores are whole again, and tracked
        code, done = run(folder, capsys, server)
        assert code == 0, done
        assert "PARTIAL" not in step(done, "evaluate")["text"] and step(done, "track")["status"] == "ran"


def test_a_gate_gives_no_verdict_on_part_of_the_pool(folder, capsys):
    init(folder, capsys)
    choose_people_qrels(folder)
    toml = folder / "ragassay.toml"
    toml.write_text(toml.read_text().replace('# min = ["ndcg@10=0.5"]', 'min = ["ndcg@10=0.1"]'))
    assert 'min = ["ndcg@10=0.1"]' in toml.read_text()
    with FakeLLM() as server:
        code, done = run(folder, capsys, server, "--max-calls", "4")
    gate = step(done, "gate")
    assert code == 3 and (gate["status"], gate["exit_code"]) == ("skipped", 3)
    assert "no verdict until the judge finishes" in gate["text"]


def test_init_says_who_labelled_the_answers_and_the_next_command_from_where_it_was_typed(tmp_path, capsys, monkeypatch):
    d = tmp_path / "my corpus"
    d.mkdir()
    shutil.copy(EXAMPLE / "chunks.jsonl", d)
    (d / "by_model.jsonl").write_text('{"id": "q01", "label": "correct", "model": "gpt-4o", "prompt": "p@1"}\n')
    (d / "answers.jsonl").write_text((EXAMPLE / "answers.jsonl").read_text())
    monkeypatch.chdir(tmp_path)
    code, out = init(Path("my corpus"), capsys)
    assert code == 0
    assert "human  (labels of the answers; labelled by gpt-4o, p@1)" in out  # the lines say a model: never "people's"
    assert out.splitlines()[-1] == (
        "next: read my corpus/ragassay.toml, then 'ragassay run 'my corpus/ragassay.toml' "
        "--dry-run' to see what it would do and cost"
    )
    (d / "by_model.jsonl").write_text('{"id": "q01", "label": "correct"}\n')
    (d / "ragassay.toml").unlink()
    monkeypatch.chdir(d)
    code, out = init(Path("."), capsys)
    assert "human  (labels of the answers; who labelled them is unknown (add FILE.origin.json))" in out
    assert (
        out.splitlines()[-1]
        == "next: read ragassay.toml, then 'ragassay run --dry-run' to see what it would do and cost"
    )


def test_each_join_is_said_once_before_any_step(folder, capsys):
    """The answers meet the queries, the runs and the qrels: a partial join is a warning at the start,
    said once (the check step, which meets them again for its diagnosis, does not say it again)."""
    answers = folder / "answers.jsonl"
    answers.write_text(
        answers.read_text()
        + json.dumps({"id": "zz9", "question": "x?", "reference": "a", "response": "a", "context_ids": ["refund-01"]})
        + "\n"
    )
    init(folder, capsys)
    choose_people_qrels(folder)
    capsys.readouterr()
    assert main(["run", str(folder / "ragassay.toml"), "--quiet"]) == 0
    said = capsys.readouterr()
    warnings = [line for line in (said.out + said.err).splitlines() if "zz9" in line]
    assert len(warnings) == len(set(warnings)) >= 3, warnings  # the runs, the qrels, the queries: each once
