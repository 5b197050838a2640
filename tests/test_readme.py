"""The README's two set-up commands stay true: the test command is the one .ci/run runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    return [b.strip() for b in blocks]


def test_readme_has_exactly_two_setup_commands():
    assert len(readme_commands()) == 2


def test_ci_runs_the_readme_test_command():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert readme_commands()[1] in ci_lines


def test_readme_main_command_uses_bundled_files():
    main = readme_commands()[0]
    for path in re.findall(r"datasets/\S+", main):
        assert (ROOT / path).exists(), path
