"""The static gates CI runs after the tests: lint rules that must hold everywhere, and a ratchet on
what is not yet clean (long lines, complex functions, mypy's errors) so that no file gets worse.

    python .ci/static_gate.py            # fails naming each file and rule that got worse or is new
    python .ci/static_gate.py --update   # writes the current counts as the new baseline (only ever lower them)

ruff's rules other than E501 (pyflakes, imports sorted, pyupgrade, bugbear, warnings, and McCabe's
complexity above 15 for any function) must report nothing at all. The ratcheted counts live in .ci/static_baseline.json, keyed by file and rule;
the goal of issue 47 is an empty file."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "static_baseline.json"
RATCHETED = {"E501"}


def ruff_findings() -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "src", "--output-format", "json", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"static gate: ruff did not run: {done.stderr.strip()}")
    return json.loads(done.stdout or "[]")


def mypy_counts() -> Counter[str]:
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, capture_output=True,
                          text=True)
    if done.returncode not in (0, 1) or "error: " not in done.stdout and done.returncode:
        raise SystemExit(f"static gate: mypy did not run: {(done.stderr or done.stdout).strip()[-2000:]}")
    counts: Counter[str] = Counter()
    for line in done.stdout.splitlines():
        found = re.match(r"(src/[^:]+):\d+: error: .*\[([\w-]+)\]$", line)
        if found:
            counts[f"{found.group(1)} mypy:{found.group(2)}"] += 1
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="write the current counts as the baseline")
    args = ap.parse_args()
    findings = ruff_findings()
    strict = [f for f in findings if f["code"] not in RATCHETED]
    counts: Counter[str] = Counter()
    for f in findings:
        if f["code"] in RATCHETED:
            counts[f"{Path(f['filename']).relative_to(ROOT).as_posix()} ruff:{f['code']}"] += 1
    counts += mypy_counts()
    if args.update:
        BASELINE.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n")
        print(f"static gate: baseline written ({sum(counts.values())} findings in {len(counts)} file-rule pairs)")
        return 0
    baseline = json.loads(BASELINE.read_text())
    worse = [f"{key}: {n} (baseline {baseline.get(key, 0)})" for key, n in sorted(counts.items())
             if n > baseline.get(key, 0)]
    problems = [f"{f['filename']}:{f['location']['row']}: {f['code']} {f['message']}" for f in strict] + worse
    for line in problems:
        print(line)
    if problems:
        print(f"static gate: {len(strict)} lint finding(s) that must be none, {len(worse)} file-rule count(s) above "
              "the baseline", file=sys.stderr)
        return 1
    fewer = sum(baseline.values()) - sum(counts.values())
    print(f"static gate: ruff clean but for {sum(v for k, v in counts.items() if 'ruff:' in k)} ratcheted findings; "
          f"mypy {sum(v for k, v in counts.items() if 'mypy:' in k)} errors; none above the baseline"
          + (f" ({fewer} fewer: lower it with --update)" if fewer > 0 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
