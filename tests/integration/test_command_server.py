"""The command server (tests/command_server.py), which runs the README's and the chains' commands,
changes nothing a command does: each command below, in bash, prints the same on both streams, writes
the same files and exits with the same code (or the same signal) through the server's client as
through the real ``ragassay`` script; a client whose server is gone runs the real script."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from command_server import CommandServer, serving
from helpers import EXAMPLE, nonempty, stop_process

PAIRS = "--queries queries.jsonl --chunks chunks.jsonl --run runs/bm25.txt --depth 2"
COMMANDS = [
    "ragassay --version",
    "ragassay evaluate qrels.txt runs/bm25.txt",
    "ragassay evaluate qrels.txt runs/bm25.txt 2>&1",  # both streams in one, in the order written
    "ragassay evaluate qrels.txt runs/bm25.txt --format json > result.json && cat result.json",
    "ragassay evaluate 'no such file é.txt' runs/bm25.txt",  # exit 1, the file named
    "cat qrels.txt | ragassay evaluate - runs/tfidf.txt -m ndcg@10",  # standard input
    "printf 'q1 0 d1 x\\n' | ragassay evaluate - runs/tfidf.txt",  # a bad line read from standard input
    f"ragassay judge {PAIRS} -o j.jsonl --dry-run --model m",
    f"env -u RAGASSAY_MODEL -u OPENAI_API_KEY -u OPENAI_BASE_URL ragassay judge {PAIRS} -o j.jsonl",  # the env
    f"OPENAI_BASE_URL=http://127.0.0.1:9/v1 ragassay judge {PAIRS} -o j.jsonl --dry-run --model m",
    "ragassay judge --help | head -2",  # a reader that stops early
    "ragassay nosuchcommand",  # exit 2
    "cd runs && ragassay evaluate ../qrels.txt bm25.txt -m p@5",  # another working directory
]


@pytest.fixture(scope="module")
def env():
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGASSAY_"))} | {"PATH": path}


@pytest.fixture(scope="module")
def server(env):
    served = serving(env)
    assert served is not None
    with served:
        yield served


def folder(base: Path) -> Path:
    shutil.copytree(EXAMPLE, base, symlinks=True)
    return base


def run(command: str, cwd: Path, env: dict) -> tuple[int, str, str, list[str]]:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr, sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*"))


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_through_the_server_is_the_command(command, server, env, tmp_path):
    real = run(command, folder(tmp_path / "real"), env)
    served = run(command, folder(tmp_path / "served"), {**env, "PATH": server.path(env)})
    assert served == real
    assert real[1] or real[2]  # each command says something


def test_the_client_is_what_bash_runs(server, env):
    """The comparison above would pass if the client were not used at all; the signal tests below
    find each command among the server's grandchildren."""
    where = subprocess.run(
        ["bash", "-c", "command -v ragassay"], env={**env, "PATH": server.path(env)}, capture_output=True, text=True
    )
    assert where.stdout.strip() == str(server.bin_dir / "ragassay")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals_reach_the_command_and_end_the_client_as_it(sig, code, server, env, tmp_path):
    """``ragassay label`` serves until stopped: the signal sent to the client reaches the command,
    which says how many pairs were labelled and exits with the code it exits with when run directly."""
    said = {}
    for name, path in (("real", env["PATH"]), ("served", server.path(env))):
        work = folder(tmp_path / name)
        label = subprocess.Popen(
            ["bash", "-c", f"exec ragassay label pairs {PAIRS} --sample 5 -o h.qrels --no-browser"],
            cwd=work,
            env={**env, "PATH": path},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert label.stdout is not None and label.stderr is not None
        first = [label.stdout.readline(), label.stdout.readline()]
        assert label.stderr.readline().startswith("(Ctrl-C stops")  # all it says before it waits
        if name == "served":  # the process bash became is the client, whose command is the server's grandchild
            children = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text().split()
            assert children, "the server forked no manager"
        out, err = stop_process(label, sig)
        said[name] = (label.returncode, first[0], "".join(first[1:]).startswith("http://127.0.0.1:"), out, err)
    assert said["served"] == said["real"]
    assert said["real"][0] == code and said["real"][2]


def test_a_command_killed_by_a_signal_kills_its_client_with_it(server, env, tmp_path):
    work = folder(tmp_path / "k")
    label = subprocess.Popen(
        ["bash", "-c", f"exec ragassay label pairs {PAIRS} --sample 5 -o h.qrels --no-browser"],
        cwd=work,
        env={**env, "PATH": server.path(env)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert label.stdout is not None and label.stdout.readline()
    managers = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text().split()
    commands = [c for m in nonempty(managers) for c in Path(f"/proc/{m}/task/{m}/children").read_text().split()]
    for pid in nonempty(commands):
        os.kill(int(pid), signal.SIGKILL)
    label.communicate(timeout=30)
    assert label.returncode == -signal.SIGKILL


def test_a_client_whose_server_is_gone_runs_the_real_script(env, tmp_path):
    real = shutil.which("ragassay", path=env["PATH"])
    assert real is not None
    gone = CommandServer(sys.executable, real, env)
    gone.close()
    deadline = time.monotonic() + 10
    while gone.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    command = "ragassay evaluate qrels.txt runs/bm25.txt -m ndcg@10"
    assert run(command, folder(tmp_path / "a"), {**env, "PATH": gone.path(env)}) == run(
        command, folder(tmp_path / "b"), env
    )
