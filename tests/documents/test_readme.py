"""The README's two set-up commands stay true: the test command is the one .ci/run runs."""

from __future__ import annotations

import re

from helpers import EXAMPLE, ROOT, nonempty


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


def test_the_python_examples_of_the_readme_and_the_site_print_what_they_say(monkeypatch):
    """Every `>>>` line of the README and of every page of the site runs, from a clone's root, and
    prints the value shown (each page in a namespace of its own, as a reader starts each page)."""
    import doctest

    monkeypatch.chdir(ROOT)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    examples = 0
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8").replace("\n```", "\n\n```")  # a fence ends the output
        test = parser.get_doctest(text, {}, page.name, str(page), 0)
        examples += len(test.examples)
        runner.run(test)
    assert examples >= 15
    assert runner.summarize(verbose=False).failed == 0


def test_the_site_shows_the_readmes_two_setup_commands_and_no_others():
    """A page of the site may repeat a set-up command (Get started does); it is then the README's, word
    for word, so that the one .ci/run runs is the one every page shows."""
    shown = [
        b.strip()
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for b in re.findall(r"```sh\n(.*?)\n```", page.read_text(encoding="utf-8"), re.S)
    ]
    assert shown and set(shown) <= set(readme_commands())


def test_every_yaml_and_json_block_of_the_site_reads_and_its_ragassay_steps_parse():
    """The blocks that are files, not commands (the CI workflow, an origin file), are valid as written, and
    each `ragassay` command in the workflow is one the parser takes."""
    import json
    import shlex

    import yaml

    from ragassay.cli import build_parser

    fence = re.compile(r"^```(yaml|json)\n(.*?)^```", re.S | re.M)
    blocks = [
        (lang, body)
        for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        for lang, body in fence.findall(page.read_text(encoding="utf-8"))
    ]
    assert {lang for lang, _ in blocks} == {"yaml", "json"}
    steps = []
    for lang, body in nonempty(blocks):
        data = yaml.safe_load(body) if lang == "yaml" else json.loads(body)
        assert data
        if lang == "yaml":
            steps += [
                s["run"]
                for job in data["jobs"].values()
                for s in job["steps"]
                if str(s.get("run", "")).startswith("ragassay ")
            ]
    assert steps
    for step in steps:
        build_parser().parse_args(shlex.split(step)[1:])
