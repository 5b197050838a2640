"""The static gates CI runs after the tests. Each must report nothing at all on ``src/`` (ruff also on
the tests, the benchmarks, these scripts and the docs' hook):

- ruff's lint rules as pyproject.toml selects them: pyflakes, pycodestyle (lines of at most 120
  characters), imports sorted, modern syntax, likely bugs, and McCabe's complexity above 15 for
  any function (the complexity ceiling this project sets);
- ``ruff format --check``: the code is as the formatter writes it, so a change is reviewed for what
  it does, not for where its lines break;
- mypy with the settings in pyproject.toml: no type error;
- vulture at 60% confidence: no dead code. A name it cannot see used (one Python or a framework
  calls by name, a field of a written file format, a name only the tests or the docs use) is listed
  in ``.ci/vulture_whitelist.py`` with the reason; anything else it reports is to be removed.

    python .ci/static_gate.py     # prints every finding and exits 1 when there is one

There is no baseline: the long lines, complex functions and type errors that an earlier version of
this gate ratcheted down are all gone, so any new one fails the build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# what ruff lints and formats: the package, and the code that checks and measures it (mypy: the package)
LINTED = ["src", "tests", "benchmarks", ".ci", "docs/_hooks"]

GATES = {
    "ruff check": [sys.executable, "-m", "ruff", "check", *LINTED, "--output-format", "concise", "--quiet"],
    "ruff format": [sys.executable, "-m", "ruff", "format", "--check", *LINTED, "--quiet"],
    "mypy": [sys.executable, "-m", "mypy", "--no-error-summary"],
    "vulture": [sys.executable, "-m", "vulture", "src", ".ci/vulture_whitelist.py", "--min-confidence", "60"],
}

# the exit codes with which a gate says it found something (any other but 0 means it did not run)
FOUND = {"vulture": 3}


def run_gate(name: str, argv: list[str]) -> list[str]:
    """The findings of one gate, one line each; a tool that cannot run is an error, not a pass."""
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    found = FOUND.get(name, 1)
    if done.returncode not in (0, found):
        raise SystemExit(f"static gate: {name} did not run: {(done.stderr or done.stdout).strip()[-2000:]}")
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    if name == "mypy":  # its notes (untyped bodies not checked) are not errors
        lines = [line for line in lines if ": error: " in line]
    if done.returncode == found and not lines:
        lines = [f"{name} failed without saying why"]
    return [f"{name}: {line}" for line in lines]


def main() -> int:
    findings: list[str] = []
    for name, argv in GATES.items():
        findings += run_gate(name, argv)
    for line in findings:
        print(line)
    if findings:
        print(f"static gate: {len(findings)} finding(s); each gate must report none", file=sys.stderr)
        return 1
    print(
        "static gate: ruff check and ruff format report nothing on " + ", ".join(LINTED) + "; mypy and vulture on src/"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
