"""Every command the README and the documentation site (docs/**.md) show, run as a new user runs it:
the wheel built from this checkout is installed into a fresh virtual environment (no network: its
dependencies are this environment's), and for each page, from an empty directory holding only what
`ragassay demo --copy datasets/example` writes, each `$ ...` line of the page runs in bash and must
print what the page prints under it (`...` stands for lines left out; timings are compared as
`N ms`). The `bash` blocks and Python scripts that need a model run against the test suite's fake
endpoint."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from command_server import serving
from fake_llm import FakeLLM
from helpers import ROOT, nonempty, stop_process

TIMING = re.compile(r"\d+(?:\.\d+)? ms\b")
LOCAL = re.compile(r"http://(?:localhost|127\.0\.0\.1):\d+/v1")  # a page's local server: here the fake one


def to_fake(text: str, fake: FakeLLM) -> str:
    return LOCAL.sub(fake.url, text)


def pages() -> list[Path]:
    """The README and every page of the site, the README first."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def fenced_blocks(page: Path) -> list[tuple[str, str, str]]:
    """(language, body, the text after the block up to the next one) of every top-level fenced block."""
    blocks, lines, i = [], page.read_text(encoding="utf-8").split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, j = lines[i][3:].strip(), i + 1
            while not lines[j].startswith("```"):
                j += 1
            blocks.append((lang, "\n".join(lines[i + 1 : j]) + "\n", j + 1))
            i = j + 1
        else:
            i += 1
    return [(lang, body, "\n".join(lines[end : end + 3])) for lang, body, end in blocks]


def shown_commands(page: Path, kind: str = "") -> list[tuple[str, list[str], int | None]]:
    """(command, the lines the README shows it printing, its exit code when the README gives one),
    from fenced blocks of `$ ` lines; "It exits N" right after a block is the code of its last command."""
    out: list[tuple[str, list[str], int | None]] = []
    for lang, body, after in fenced_blocks(page):
        lines = body.rstrip("\n").split("\n")
        if lang != kind or not lines[0].startswith("$ "):
            continue
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:], [], None))
            else:
                out[-1][1].append(line)
        m = re.match(r"\s*It exits (\d+)", after)
        if m:
            command, printed, _ = out[-1]
            out[-1] = (command, printed, int(m.group(1)))
    return out


def bash_blocks(page: Path) -> list[str]:
    return [body for lang, body, _ in fenced_blocks(page) if lang == "bash"]


def matches(expected: list[str], printed: list[str]) -> bool:
    """Line by line; a `...` line skips any number of printed lines."""

    def norm(line: str) -> str:
        return TIMING.sub("N ms", line.rstrip())

    expected = [norm(x) for x in expected]
    printed = [norm(x) for x in printed]

    def at(i: int, j: int) -> bool:
        if i == len(expected):
            return j == len(printed)
        if expected[i] == "...":
            return any(at(i + 1, k) for k in range(j, len(printed) + 1))
        return j < len(printed) and expected[i] == printed[j] and at(i + 1, j + 1)

    return at(0, 0)


@pytest.fixture(scope="module")
def user_env(wheel_venv, tmp_path_factory):
    """The venv with the wheel installed by pip (tests/conftest.py: wheel_venv, made once for all
    workers), a home and a cache of this module's own, and an empty working directory."""
    base = tmp_path_factory.mktemp("user")
    venv = wheel_venv
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    work = base / "empty"
    work.mkdir()
    env = {k: v for k, v in clean.items() if not k.startswith(("OPENAI_", "RAGASSAY_"))}
    env.update(PATH=f"{venv / 'bin'}:{env.get('PATH', '')}", XDG_CACHE_HOME=str(base / "cache"), HOME=str(base))
    where = subprocess.run(["ragassay", "--version"], cwd=work, env=env, capture_output=True, text=True)
    assert where.returncode == 0 and where.stdout.startswith("ragassay "), where.stderr
    module = subprocess.run(
        ["python", "-c", "import ragassay; print(ragassay.__file__)"], cwd=work, env=env, capture_output=True, text=True
    ).stdout
    assert module.startswith(str(venv)), module  # the wheel's copy, not this checkout
    # what `ragassay demo --copy datasets/example` writes, made once by the command (it takes 0.8 s of CPU, and
    # 26 pages start from it): each page's folder is a copy of it (see folder_for)
    (base / "demo-copy").mkdir()
    copied = subprocess.run(
        ["ragassay", "demo", "--copy", "datasets/example"],
        cwd=base / "demo-copy",
        env=env,
        capture_output=True,
        text=True,
    )
    assert copied.returncode == 0, copied.stderr
    # the commands above ran as real processes; the pages' commands run through the command server
    # (tests/command_server.py: the same script's entry point in a fork of a process that has imported
    # openai, pydantic and numpy already)
    server = serving(env)
    assert server is not None
    with server:
        yield work, {**env, "PATH": server.path(env)}


def folder_for(page: Path, user_env) -> tuple[Path, dict]:
    """A new empty folder for one page, holding only what `ragassay demo --copy datasets/example` writes
    (a copy of what the command wrote in user_env's folder "demo-copy", beside its working directory): each
    page's commands start where a reader who opens that page starts."""
    base, env = user_env
    name = str(page.relative_to(ROOT)).replace("/", "_").replace(".md", "")
    work = Path(tempfile.mkdtemp(prefix=name + "-", dir=base))
    shutil.copytree(base.parent / "demo-copy", work, symlinks=True, dirs_exist_ok=True)
    assert (work / "datasets").is_dir()
    return work, env


def bash(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command + " 2>&1"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_every_shown_command_prints_what_its_page_says(user_env):
    ran = skipped = 0
    with FakeLLM() as fake:
        for page in nonempty(p for p in pages() if shown_commands(p)):
            work, env = folder_for(page, user_env)
            for command, expected, code in nonempty(shown_commands(page)):
                if "sk-..." in command:  # a real key and api.openai.com: not from a test
                    skipped += 1
                    continue
                local = LOCAL.search(command)
                run = bash(to_fake(command, fake), work, env)
                said = run.stdout.replace(fake.url, local.group(0) if local else fake.url)
                printed = said.rstrip("\n").split("\n") if said.strip() else []
                where = (page.name, command)
                if code is not None:
                    assert run.returncode == code, (where, run.returncode, run.stdout)
                else:  # a command shown failing prints an error; any other succeeds
                    failing = any(w in " ".join(expected) for w in ("error:", "failed"))
                    assert (run.returncode != 0) == failing, (where, run.returncode, run.stdout)
                if expected:
                    assert matches(expected, printed), (where, "\n".join(printed))
                ran += 1
    assert ran >= 20 and skipped == 1


def test_every_console_session_runs_on_a_corpus_of_ones_own(user_env):
    """`console` blocks are a session in a folder of one's own: `my-corpus` holds the example's files
    without its project file, as a user's corpus would; `cd DIR && ...` moves the session into DIR."""
    ran = 0
    with FakeLLM() as fake:
        for page in nonempty(p for p in pages() if shown_commands(p, "console")):
            work, env = folder_for(page, user_env)
            made = bash("ragassay demo --copy my-corpus && rm my-corpus/ragassay.toml", work, env)
            assert made.returncode == 0, made.stdout
            cwd = work
            for command, expected, _ in nonempty(shown_commands(page, "console")):
                run = bash(to_fake(command, fake), cwd, env)
                printed = run.stdout.rstrip("\n").split("\n") if run.stdout.strip() else []
                assert run.returncode in (0, 3), (page.name, command, run.stdout)  # 3: what the fake cannot fill
                if expected:
                    assert matches(expected, printed), (page.name, command, "\n".join(printed))
                moved = re.match(r"cd (\S+) && ", command)
                cwd = cwd / moved.group(1) if moved else cwd
                ran += 1
    assert ran >= 6


def test_every_bash_block_runs_against_an_endpoint(user_env):
    blocks = [(page, block) for page in pages() for block in bash_blocks(page)]
    assert len(blocks) >= 3
    with FakeLLM() as fake:
        for page in nonempty({page for page, _ in blocks}):
            work, env = folder_for(page, user_env)
            for block in nonempty(bash_blocks(page)):
                run_bash_block(block, work, env, fake)


def run_bash_block(block: str, work: Path, env: dict, fake: FakeLLM) -> None:
    if block.startswith("ragassay label"):  # a server: it prints its address, then Ctrl-C stops it
        label = subprocess.Popen(
            ["bash", "-c", "exec " + to_fake(block, fake).replace("\\\n", " ")],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert label.stdout.readline().startswith("labelling 30 pairs")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+\n", label.stdout.readline())
        out, err = stop_process(label, signal.SIGINT)
        assert label.returncode == 130 and "labelled 0 of 30" in out, err  # Ctrl-C: 130, as every command
        return
    run = bash(to_fake(block, fake).replace("\\\n", " "), work, {**env, "OPENAI_BASE_URL": fake.url})
    assert run.returncode in (0, 3), (block, run.stdout)  # 3: the fake cannot fill every slot of a mix
    for out in nonempty(re.findall(r"(?:-o|--qrels-out|--coverage-out|--rejects) (\S+)", block)):
        assert (work / out).exists(), (out, run.stdout)


def test_every_python_script_runs_against_an_endpoint(user_env):
    """The Python blocks that are not `>>>` sessions (those run in test_readme.py) run whole, with the
    installed wheel, against the fake endpoint, and call nothing deprecated: a page shows the current
    way (a deprecation note from ragassay fails the script)."""
    scripts = [
        (page, body)
        for page in pages()
        for lang, body, _ in fenced_blocks(page)
        if lang == "python" and not body.startswith(">>>")
    ]
    assert scripts
    with FakeLLM() as fake:
        for page in nonempty({page for page, _ in scripts}):
            work, env = folder_for(page, user_env)
            for script in nonempty(body for p, body in scripts if p == page):
                # (-W: a warning whose message starts "ragassay." is an error; ragassay's deprecations do)
                command = ["python", "-W", "error:ragassay.:DeprecationWarning", "-c", to_fake(script, fake)]
                run = subprocess.run(
                    command,
                    cwd=work,
                    env={**env, "OPENAI_BASE_URL": fake.url},
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert run.returncode == 0, (page.name, script, run.stderr[-3000:])
                assert run.stdout.strip(), script
