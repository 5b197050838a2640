"""A project file names the prompt of judge and check (``[judge] prompt``, ``[check] prompt``):
auto, full, short or a prompt file relative to the project file, checked when the project is read
(a bad placeholder names the prompt file's line before any step), used by every step that judges
(judge and coverage share one judgments file), and part of each step's digest: an edited prompt
file makes the step run again, an unchanged one leaves it up to date."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from fake_llm import FakeLLM, schema_seen
from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.errors import InputError
from ragassay.llm.prompts import load_prompt
from ragassay.product.project import read_project

RUBRIC = "[system]\nGrade 0-3: 3 answers the query.\n[user]\n{{query}}\n{{passage}}\n"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    d = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, d, ignore=shutil.ignore_patterns("__pycache__"))
    return d


def set_tables(folder: Path, judge: str, check: str) -> Path:
    toml = folder / "ragassay.toml"
    text = toml.read_text()
    for table, line in (("judge", judge), ("check", check)):
        assert f"[{table}]\n" in text
        text = text.replace(f"[{table}]\n", f"[{table}]\n{line}\n", 1)
    toml.write_text(text)
    return toml


def test_the_project_reads_each_tables_prompt_relative_to_its_folder(folder):
    (folder / "rubrics").mkdir()
    (folder / "rubrics" / "mine.txt").write_text(RUBRIC)
    proj = read_project(set_tables(folder, 'prompt = "rubrics/mine.txt"', 'prompt = "short"'))
    assert proj.judge_prompt == str(folder / "rubrics" / "mine.txt") and proj.check_prompt == "short"
    assert read_project(EXAMPLE / "ragassay.toml").judge_prompt == "auto"


@pytest.mark.parametrize(
    "judge, check, file_text, where, words",
    [
        ('prompt = "nope.txt"', "", None, "toml", "no such file 'nope.txt'"),
        ("", 'prompt = "mine.txt"', RUBRIC, "mine:4", "{{query}} is not a placeholder the check stage fills"),
        ("", "prompt = 3", None, "toml", "auto, full, short or a prompt file"),
    ],
)
def test_a_bad_prompt_in_the_project_is_an_error_naming_its_line(folder, judge, check, file_text, where, words):
    if file_text is not None:
        (folder / "mine.txt").write_text(file_text)
    toml = set_tables(folder, judge, check)
    with pytest.raises(InputError) as e:
        read_project(toml)
    lines = toml.read_text().splitlines()
    table = "[check]" if check else "[judge]"
    expected = (str(toml), lines.index(table) + 2) if where == "toml" else (str(folder / "mine.txt"), 4)
    assert (e.value.path, e.value.line) == expected and words in e.value.message


def test_run_judges_and_checks_with_the_projects_prompts_and_redoes_a_step_whose_prompt_changed(folder, capsys):
    (folder / "mine.txt").write_text(RUBRIC)
    toml = set_tables(folder, 'prompt = "mine.txt"', 'prompt = "short"')
    out = folder / "ragassay-out"

    def run(server) -> dict:
        capsys.readouterr()
        code = main(
            [
                "run",
                str(toml),
                "--format",
                "json",
                "--quiet",
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--concurrency",
                "2",
            ]
        )
        assert code == 0, capsys.readouterr().err
        return json.loads(capsys.readouterr().out)

    with FakeLLM() as server:
        run(server)
        asked = {schema_seen(b) for b in nonempty(server.requests)}
        assert "ShortRelevance" in asked and "ShortVerdict" in asked
        assert not asked & {"RelevanceAnswer", "AnswerVerdict"}
        version = f"mine@{hashlib.sha256(RUBRIC.encode()).hexdigest()[:8]}"
        judged = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
        assert {r["prompt"] for r in nonempty(judged)} == {version}
        checks = [json.loads(x) for x in (out / "checks.jsonl").read_text().splitlines()]
        assert {r["prompt"] for r in checks if r["decided_by"] == "llm"} == {load_prompt("check_answer_short").id}
        before = server.calls
        second = run(server)
        assert server.calls == before  # unchanged: every step up to date, nothing asked
        assert {s["step"]: s["status"] for s in second["steps"]}["judge"] == "up to date"
        (folder / "mine.txt").write_text(RUBRIC.replace("0-3", "from 0 to 3"))
        third = run(server)
        steps = {s["step"]: s["status"] for s in third["steps"]}
        assert steps["judge"] == "ran" and steps["check"] == "up to date"
        assert server.calls - before == len(judged)  # every pair judged again with the edited prompt
