"""The README's two set-up commands stay true: the test command is the one .ci/run runs."""

from __future__ import annotations

import re
from helpers import EXAMPLE, ROOT



def readme_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    return [b.strip() for b in blocks]


def test_readme_has_exactly_two_setup_commands():
    assert len(readme_commands()) == 2


def test_ci_runs_the_readme_test_command():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert readme_commands()[1] in ci_lines


def test_readme_main_command_installs_a_declared_extra_and_runs_the_bundled_example():
    """The first command needs no file of the clone: it installs an extra pyproject declares and runs
    `ragassay demo` with no path, which reads the example shipped inside the package."""
    main = readme_commands()[0]
    extras = re.findall(r"pip install -e '\.\[([\w,]+)\]'", main)
    section = (ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]")[1].split("\n[")[0]
    declared = re.findall(r"^(\w+) = \[", section, re.M)
    assert extras and set(extras[0].split(",")) <= set(declared)
    assert main.endswith("&& ragassay demo")
    bundled = EXAMPLE
    for name in ("chunks.jsonl", "queries.jsonl", "qrels.txt", "answers.jsonl", "runs/bm25.txt"):
        assert (bundled / name).is_file(), name


def test_the_python_examples_in_the_readme_print_what_they_say(monkeypatch):
    """Every `>>>` line of the README runs, from a clone's root, and prints the value shown."""
    import doctest
    monkeypatch.chdir(ROOT)
    parser = doctest.DocTestParser()
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\n```", "\n\n```")  # a fence ends the output
    test = parser.get_doctest(text, {}, "README.md", str(ROOT / "README.md"), 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
