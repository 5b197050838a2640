"""How long does `ragassay` take to start? Whole processes, beside `python -c "import numpy"`.

    python benchmarks/cli_startup.py                    # the median of 15 runs of each
    python benchmarks/cli_startup.py --runs 5           # a quick look
    python benchmarks/cli_startup.py --against /tmp/old/src   # and another source tree, interleaved

Times `ragassay --help`, `ragassay evaluate --help` and an evaluate of the bundled example (its
qrels against each of its runs), each a whole process started as users start it (the `ragassay`
script beside this Python, else `python -m ragassay`), and `python -c "import numpy"` in the same
rounds: each round runs every command once, in turn, so a busy moment of a shared machine falls on
all of them alike. Each figure is the median wall time of --runs rounds; the ratio is to numpy's.
Goal: `ragassay --help` <= 1.5 x `python -c "import numpy"`.

With --against DIR (a `src` folder holding another `ragassay`, e.g. `git archive` of an older
commit), each round also runs every command with that tree first on PYTHONPATH, and a second
column shows its figures: before and after, measured at the same moment. Each tree's evaluate reads the
example of its own tree (the same rankings and labels; a newer tree's sidecars may say more).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "src" / "ragassay" / "example"
GOAL = 1.5


def ragassay_command() -> list[str]:
    """The `ragassay` script installed beside this Python, as users run it; else `python -m ragassay`."""
    script = Path(sys.executable).with_name("ragassay")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ragassay"]


def cases(tree: str | None = None) -> list[tuple[str, list[str]]]:
    """(label, argv) of every command timed; the first is the yardstick. A tree's commands read that tree's
    own example: an older ragassay may not read the sidecars a newer example carries (a field it does not
    know is an error, not a guess)."""
    ragassay = ragassay_command()
    example = EXAMPLE if tree is None else Path(tree) / "ragassay" / "example"
    qrels = example / "qrels.txt"
    runs = sorted((example / "runs").glob("*.txt"))
    return [
        ('python -c "import numpy"', [sys.executable, "-c", "import numpy"]),
        ("ragassay --help", [*ragassay, "--help"]),
        ("ragassay evaluate --help", [*ragassay, "evaluate", "--help"]),
    ] + [
        (f"ragassay evaluate qrels.txt runs/{run.name}", [*ragassay, "evaluate", str(qrels), str(run)]) for run in runs
    ]


def once(argv: list[str], pythonpath: str | None) -> float:
    """Seconds one whole process takes; a command that fails stops the benchmark."""
    env = dict(os.environ)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return took


def measure(runs: int, trees: list[str | None]) -> dict[tuple[str, str | None], float]:
    """The median seconds of each (case, tree), from ``runs`` rounds, each running everything once."""
    times: dict[tuple[str, str | None], list[float]] = {}
    per_tree = {tree: dict(cases(tree)) for tree in trees}
    labels = list(per_tree[trees[0]])
    for _ in range(runs):
        for label in labels:
            for tree in trees:
                times.setdefault((label, tree), []).append(once(per_tree[tree][label], tree))
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds; each figure is their median (default 15)")
    parser.add_argument("--against", metavar="DIR", help="another source tree (a src folder) timed in the same rounds")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.against and not (Path(args.against) / "ragassay" / "__init__.py").is_file():
        parser.error(f"--against {args.against}: no ragassay package in it (give the src folder of a tree)")
    trees: list[str | None] = [None] + ([str(Path(args.against).resolve())] if args.against else [])
    medians = measure(args.runs, trees)
    yardstick = cases()[0][0]
    print(
        f"cli start-up: median wall time of {args.runs} whole-process runs each, interleaved; "
        f"ragassay is {' '.join(ragassay_command())}"
    )
    columns = ["this tree"] + ([f"--against {trees[1]}"] if args.against else [])
    width = max(34, 2 + max(len(c) for c in columns))
    print(f"{'':46}" + "".join(f"{c:>{width}}" for c in columns))
    for label, _ in cases():
        cells = []
        for tree in trees:
            seconds = medians[(label, tree)]
            ratio = "" if label == yardstick else f" ({seconds / medians[(yardstick, tree)]:.2f} x numpy)"
            cells.append(f"{seconds:.3f} s{ratio}")
        print(f"{label:46}" + "".join(f"{c:>{width}}" for c in cells))
    print(f"goal: ragassay --help <= {GOAL} x numpy")


if __name__ == "__main__":
    main()
