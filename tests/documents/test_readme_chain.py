"""The "What `run` does, step by step" table (docs/get-started.md, once the README's), run as a user
runs it: each row's commands in bash, in order, against the local test server, on the example's chunks
with a search function of the user's own. What flows between the steps is asserted: every join's
counts, who made every file of labels, and that nothing calls a model's labels people's. Then the
same chain with answers whose ids meet none of the generated set's: the step stops, naming both
files, before any call."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from command_server import serving
from fake_llm import FakeLLM
from helpers import EXAMPLE, ROOT, nonempty

PAGE = (ROOT / "docs" / "get-started.md").read_text(encoding="utf-8")

MY_SEARCH = """
import json, re
from pathlib import Path
CHUNKS = [json.loads(line) for line in Path(__file__).with_name("chunks.jsonl").read_text().splitlines()]

def _words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))

def search(query):
    q = _words(query)
    scored = sorted(((len(q & _words(c["text"])) / (1 + len(_words(c["text"])) ** 0.5), c["id"]) for c in CHUNKS),
                    reverse=True)
    return [(cid, score) for score, cid in scored[:10] if score > 0]

def first_words(query):  # a second, weaker retriever for the comparison
    q = list(_words(query))[:2]
    return [(c["id"], 1.0 / (i + 1)) for i, c in enumerate(c for c in CHUNKS if set(q) & _words(c["text"]))][:10]
"""


def table_steps() -> list[tuple[int, list[str]]]:
    """(step, its commands) of the page's step-by-step table, in order."""
    section = PAGE.split("## What `run` does, step by step", 1)[1].split("\n## ", 1)[0]
    steps = []
    for line in section.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|(.*)\|.*\|\s*$", line)
        if m:
            steps.append((int(m.group(1)), re.findall(r"`([^`]+)`", m.group(2))))
    return steps


def bash(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


# this environment's bin folder first, so that ``ragassay`` and ``python`` are the installed ones
VENV_FIRST = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture(scope="module")
def server():
    """The command server (tests/command_server.py) of this environment's ``ragassay``, for every test here."""
    served = serving({**os.environ, "PATH": VENV_FIRST})
    assert served is not None
    with served:
        yield served


@pytest.fixture
def user(tmp_path, server):
    """A fresh folder holding the user's chunks and search function, and the environment a user
    sets for a local server (filled in with the test server's address)."""
    (tmp_path / "chunks.jsonl").write_text((EXAMPLE / "chunks.jsonl").read_text())
    (tmp_path / "my_search.py").write_text(MY_SEARCH)
    env = {
        **os.environ,
        "PATH": server.path({"PATH": VENV_FIRST}),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OPENAI_API_KEY": "x",
        "RAGASSAY_MODEL": "fake-model",
    }
    env.pop("RAGASSAY_HTTP", None)
    return tmp_path, env


def write_answers(work: Path, ids_from: str = "questions.jsonl", rename=lambda i: i) -> None:
    """The user's RAG answers to the generated questions: right for some, wrong or unsure for others."""
    questions = [json.loads(line) for line in (work / ids_from).read_text().splitlines()]
    rows = []
    for n, q in enumerate(questions):
        response = q["answer"] if n % 3 == 0 else ("I don't know." if n % 3 == 1 else "It is free and takes 90 days.")
        rows.append({"id": rename(q["id"]), "question": q["question"], "reference": q["answer"], "response": response})
    (work / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_step_by_step_table_runs_end_to_end_and_says_what_met_and_who_labelled(user):
    work, env = user
    steps = table_steps()
    assert [s for s, _ in steps] == [1, 2, 3, 4, 5, 6, 7]
    outputs: dict[str, subprocess.CompletedProcess] = {}
    with FakeLLM() as fake:
        env["OPENAI_BASE_URL"] = fake.url
        for step, commands in nonempty(steps):
            if step == 1:
                commands = [commands[0] + " --limit 6"]  # a small set: the test server answers every call
            if step == 4:
                write_answers(work)
            if step == 5:  # the comparison's two runs, from the user's two functions
                for name, fn in (("a.txt", "search"), ("b.txt", "first_words")):
                    r = bash(
                        f"ragassay retrieve --retriever my_search.py:{fn} --queries questions.jsonl -o {name}",
                        work,
                        env,
                    )
                    assert r.returncode == 0, r.stderr
            for command in nonempty(commands):
                run = bash(command, work, env)
                assert run.returncode == 0, (step, command, run.stdout, run.stderr)
                outputs[command.split()[1] + str(step)] = run
    questions = [json.loads(line) for line in (work / "questions.jsonl").read_text().splitlines()]
    n = len(questions)
    assert n >= 3

    # the judge counted how the queries met the run, and the check how the answers met run and qrels
    assert f"queries: {n} of {n} in the queries file are in the run ({n} queries)" in outputs["judge3"].stdout
    check = outputs["check4"].stdout
    assert f"query ids: {n} of {n} in the answers are in the run ({n})" in check
    assert f"query ids: {n} of {n} in the answers are in the qrels ({n})" in check
    assert "warning" not in outputs["check4"].stderr and "warning" not in outputs["judge3"].stderr

    # who made each file of labels
    host = fake.url.split("//")[1].split("/")[0]
    gold = json.loads((work / "gold.qrels.origin.json").read_text())
    graded = json.loads((work / "graded.qrels.origin.json").read_text())
    assert [(lab["by"], lab["name"], lab["endpoint"]) for lab in gold["labellers"]] == [("model", "fake-model", host)]
    assert gold["labellers"][0]["prompt"].startswith("generate_question@") and gold["command"] == "generate"
    assert [(lab["by"], lab["name"], lab["endpoint"]) for lab in graded["labellers"]] == [("model", "fake-model", host)]
    assert graded["labellers"][0]["prompt"].startswith("judge_relevance@") and graded["command"] == "judge"

    # the report: its inputs' counts, and no one is called people who did not label
    html = (work / "report.html").read_text()
    assert "Inputs: what met" in html and "people against" not in html.lower()
    assert re.search(
        r"Agreement: fake-model, generate_question@\w+ at 127.0.0.1:\d+ against fake-model, judge_relevance@\w+", html
    )
    assert "(model)" in html  # each side's kind is said
    md = bash(
        "ragassay report judgments.jsonl --qrels graded.qrels --run run.txt -o own.md --format markdown", work, env
    )
    assert md.returncode == 0, md.stderr
    own = (work / "own.md").read_text()
    assert "## Agreement: not measured" in own and "Cohen's kappa" not in own
    assert "fake-model, judge_relevance@" in own.split("## Agreement: not measured", 1)[1]

    # history: the tracked result names its run and its qrels' labeller
    tracked = outputs["track7"].stdout
    assert (
        "tracked result #1 (evaluate of search on qrels gold.qrels (labels by fake-model, generate_question@" in tracked
    )
    assert "search" in outputs["history7"].stdout and "fake-model" in outputs["history7"].stdout


@pytest.mark.parametrize(
    "rename, expect",
    [
        (lambda i: "q" + i[-3:], 1),  # ids of another scheme: nothing meets, exit 1 before any call
        (lambda i: i.upper(), 1),  # the same ids in another case are other ids
    ],
)
def test_answers_that_meet_no_generated_id_stop_the_check_before_any_call(user, rename, expect):
    work, env = user
    with FakeLLM() as fake:
        env["OPENAI_BASE_URL"] = fake.url
        for command in (
            "ragassay generate chunks.jsonl -o questions.jsonl --qrels-out gold.qrels --limit 3",
            "ragassay retrieve --retriever my_search.py:search --queries questions.jsonl -o run.txt",
        ):
            assert bash(command, work, env).returncode == 0
        write_answers(work, rename=rename)
        before = fake.settled_calls()
        run = bash(
            "ragassay check answers.jsonl --chunks chunks.jsonl --run run.txt --qrels gold.qrels -o checks.jsonl",
            work,
            env,
        )
        assert fake.settled_calls() == before  # nothing was asked
    assert run.returncode == expect
    assert "no query ids in common between the answers (answers.jsonl) and the run (run.txt)" in run.stderr
    assert "no wrong answers" not in run.stdout and not (work / "checks.jsonl").exists()


def test_answers_that_meet_part_of_the_generated_ids_are_counted_and_warned(user):
    work, env = user
    with FakeLLM() as fake:
        env["OPENAI_BASE_URL"] = fake.url
        for command in (
            "ragassay generate chunks.jsonl -o questions.jsonl --qrels-out gold.qrels --limit 4",
            "ragassay retrieve --retriever my_search.py:search --queries questions.jsonl -o run.txt",
        ):
            assert bash(command, work, env).returncode == 0
        ids = [json.loads(line)["id"] for line in (work / "questions.jsonl").read_text().splitlines()]
        write_answers(work, rename=lambda i: i if i != ids[0] else "someone-else")
        run = bash(
            "ragassay check answers.jsonl --chunks chunks.jsonl --run run.txt --qrels gold.qrels -o checks.jsonl "
            "--format json",
            work,
            env,
        )
    assert run.returncode == 0, run.stderr
    assert f"warning: query ids: 1 of {len(ids)} in the answers are not in the run (e.g. someone-else)" in run.stderr
    d = json.loads(run.stdout)["diagnosis"]
    assert d["not_diagnosed"] == 1 and d["joins"][0]["left"] == {
        "role": "the answers",
        "file": "answers.jsonl",
        "ids": len(ids),
        "matched": len(ids) - 1,
    }
