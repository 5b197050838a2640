"""The product's words against its behaviour: the flag table (docs/reference/flags.md) against every
command's parser, the measure lists of --help and docs/reference/measures.md against the registry, every command's JSON
output carrying kind and version, and every --help example run as a user would run it."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from fake_llm import FakeLLM, dead_url
from helpers import ROOT, nonempty, stop_process
from ragassay.cli import build_parser, main
from ragassay.metrics.measures import measure_names

FLAGS_PAGE = (ROOT / "docs" / "reference" / "flags.md").read_text(encoding="utf-8")
MEASURES_PAGE = (ROOT / "docs" / "reference" / "measures.md").read_text(encoding="utf-8")


def commands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def takers() -> dict[str, set[str]]:
    """flag -> the commands whose parser takes it."""
    out: dict[str, set[str]] = {}
    for name, p in commands().items():
        for a in p._actions:
            for o in a.option_strings:
                out.setdefault(o, set()).add(name)
    return out


def flag_table() -> list[tuple[list[str], str]]:
    """(flags, 'taken by' cell) per row of the flag table."""
    start = FLAGS_PAGE.index("**Flags mean one thing in every command**")
    rows = []
    for line in FLAGS_PAGE[start:].splitlines()[3:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        flags = [f.split()[0] for f in re.findall(r"`([^`]+)`", cells[0]) if f.startswith("-") and f != "-"]
        rows.append((flags, cells[2]))
    assert len(rows) >= 10
    return rows


def test_the_flag_table_is_what_every_parser_takes():
    every, who = set(commands()), takers()
    checked = set()
    for flags, cell in nonempty(flag_table()):
        if not flags:  # `-` and a BEIR folder: inputs, not flags
            continue
        parts = cell.split(" / ") if len(flags) == 2 and " / " in cell else [cell] * len(flags)
        for flag, part in nonempty(zip(flags, parts)):
            said = (
                every
                if part.startswith("every command")
                else {w for w in re.findall(r"[a-z]+", part.split(";")[0]) if w in every}
            )
            assert who.get(flag, set()) == said, (
                f"{flag}: the flag table says {sorted(said)}, the parsers {sorted(who.get(flag, set()))}"
            )
            checked.add(flag)
    shared = {f for f, names in who.items() if len(names) >= 3}
    assert shared <= checked, f"flags of three or more commands missing from the table: {sorted(shared - checked)}"
    for name, p in nonempty(commands().items()):  # `--format json` on every command
        fmt = next(a for a in p._actions if "--format" in a.option_strings)
        assert "json" in fmt.choices, name


def test_help_and_the_measures_page_list_every_measure_of_the_registry():
    names = measure_names()
    assert len(names) >= 20 and "bpref" in names and "judged@k" in names
    readme_list = re.search(r"\*\*Metric names\*\* \(case-insensitive\): (.*?) \(the same", MEASURES_PAGE, re.S).group(
        1
    )
    assert re.findall(r"`([^`]+)`", readme_list) == names
    for command in ("evaluate", "compare"):
        text = " ".join(commands()[command].format_help().split())
        listed = re.search(r"metrics: (.*?); trec_eval", text).group(1)
        assert listed.split(", ") == names, command


@pytest.fixture()
def example_dir(tmp_path, monkeypatch):
    """An empty directory holding only what `ragassay demo --copy datasets/example` writes."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--copy", "datasets/example"]) == 0
    return tmp_path


def json_of(capsys, argv: list[str]) -> dict:
    code = main(argv + ["--format", "json"])
    out = capsys.readouterr().out
    assert code in (0, 1, 3), (argv, code)
    return json.loads(out)


def test_every_command_prints_json_with_kind_and_version(example_dir, capsys):
    e = "datasets/example/"
    runs = [e + "runs/bm25.txt", e + "runs/tfidf.txt"]
    seen = {}
    with FakeLLM() as fake:
        llm = ["--base-url", fake.url, "--model", "fake"]
        argvs = {
            "demo": ["demo", "--copy", "copied"],
            "evaluate": ["evaluate", e + "qrels.txt", runs[0]],
            "compare": ["compare", e + "qrels.txt", *runs, "-m", "ndcg@10"],
            "agree": ["agree", e + "qrels.txt", e + "qrels_second_assessor.txt"],
            "retrieve": [
                "retrieve",
                "--retriever",
                e + "retrievers.py:tfidf",
                "--queries",
                e + "queries.jsonl",
                "-o",
                "r.txt",
            ],
            "generate": ["generate", e + "chunks.jsonl", "-o", "q.jsonl", "--limit", "3", *llm],
            "remap": ["remap", "q.jsonl", e + "chunks.jsonl", "-o", "new.qrels"],
            "quality": ["quality", e + "queries.jsonl", "--chunks", e + "chunks.jsonl", "--qrels", e + "qrels.txt"],
            "judge": [
                "judge",
                "--queries",
                e + "queries.jsonl",
                "--chunks",
                e + "chunks.jsonl",
                "--run",
                runs[0],
                "--depth",
                "1",
                "-o",
                "j.jsonl",
                *llm,
            ],
            "check": ["check", e + "answers.jsonl", "--chunks", e + "chunks.jsonl", "-o", "c.jsonl", *llm],
            "merge": ["merge", "j.jsonl", "-o", "m.jsonl"],
            "report": ["report", "j.jsonl", "c.jsonl", "-o", "report.html"],
            "ping": ["ping", *llm],
            "init": ["init", "datasets/example", "--update"],  # the example ships its project file
            "run": ["run", "datasets/example/ragassay.toml", *llm],
            "qualify": ["qualify", "check", "--size", "10", "-o", "qualified", *llm],
        }
        for name, argv in argvs.items():
            seen[name] = json_of(capsys, argv)
        for stage in ("generate", "judge", "check"):  # the dry run's estimate too
            est = json_of(
                capsys,
                argvs[stage][:-4] + ["--model", "gpt-4o-mini", "--dry-run", "-o", "dry.jsonl"]
                if stage != "generate"
                else argvs[stage][:-4] + ["--model", "gpt-4o-mini", "--dry-run"],
            )
            assert (est["kind"], est["version"]) == ("estimate", 1), stage
    seen["label"] = label_until_stopped(
        [
            "pairs",
            "--queries",
            e + "queries.jsonl",
            "--chunks",
            e + "chunks.jsonl",
            "--run",
            runs[0],
            "--sample",
            "3",
            "-o",
            "human.qrels",
            "--format",
            "json",
        ],
        json_out=True,
    )
    Path("ev.json").write_text(json.dumps(seen["evaluate"]))
    seen["track"] = json_of(capsys, ["track", "ev.json", "--db", "h.sqlite"])
    seen["history"] = json_of(capsys, ["history", "--db", "h.sqlite"])
    assert json_of(capsys, ["history", "--db", "h.sqlite", "-m", "ndcg@10"])["kind"] == "history"
    seen["gate"] = json_of(capsys, ["gate", "ev.json", "--min", "ndcg@10=0.5"])
    dead = json_of(capsys, ["ping", "--base-url", dead_url(), "--model", "m"])  # a failure is JSON too
    assert (dead["kind"], dead["status"]) == ("ping", "error") and "connect" in dead["error"].lower()
    assert set(seen) == set(commands())
    for name, result in nonempty(seen.items()):
        assert isinstance(result, dict) and result.get("version") == 1, name
        assert result["kind"] == {"label": "calibration"}.get(name, name), name


def label_until_stopped(argv: list[str], json_out: bool = False) -> dict | str:
    """`ragassay label ...` runs until stopped: start it, see its URL, stop it with Ctrl-C (SIGINT)."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "ragassay", "label", *argv, "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = proc.stderr if json_out else proc.stdout
    assert said.readline().startswith("labelling ")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+\n", said.readline())
    out, err = stop_process(proc, signal.SIGINT)
    assert proc.returncode == 130, err  # Ctrl-C: 130, as every command (every label given is saved)
    return json.loads(out) if json_out else out


def help_example(parser: argparse.ArgumentParser) -> str:
    m = re.search(r"Example: (ragassay .*?)(?: \(the example's files|$)", " ".join((parser.epilog or "").split()))
    assert m, f"{parser.prog} --help has no example"
    return m.group(1)


def test_every_help_example_runs_where_its_files_are(example_dir, capsys):
    """What `--help` shows runs as shown, in a directory where `demo --copy` wrote the example (the
    files a clone has), with the fake model standing in for the endpoint and the files a command
    reads from another one's output made first."""
    shutil.copy("datasets/example/chunks.jsonl", "new_chunks.jsonl")  # remap: a re-chunking (here: the same)
    examples = {name: help_example(p) for name, p in commands().items()}
    order = [
        "demo",
        "evaluate",
        "compare",
        "agree",
        "retrieve",
        "generate",
        "remap",
        "quality",
        "judge",
        "check",
        "label",
        "merge",
        "report",
        "track",
        "history",
        "gate",
        "ping",
        "qualify",
        "init",
        "run",
    ]
    assert sorted(order) == sorted(examples)
    with FakeLLM() as fake:
        for name in nonempty(order):
            for part in nonempty(examples[name].split(" && ")):
                text, _, redirect = part.partition(" > ")
                argv = shlex.split(re.sub(r" \(.*\)$", "", text))[1:]  # a note in brackets is not run
                if name in ("generate", "judge", "check", "ping", "qualify"):
                    argv += ["--base-url", fake.url] if "--base-url" not in argv else []
                    argv = [fake.url if a.startswith("http://localhost") else a for a in argv]
                if name == "merge":  # two shards of a judge run: the files the example merges
                    judge = shlex.split(examples["judge"])[1:]
                    for i in (1, 2):
                        out = judge[: judge.index("-o")] + [
                            "-o",
                            f"judged.{i}.jsonl",
                            "--shard",
                            f"{i}/2",
                            "--base-url",
                            fake.url,
                            "--model",
                            "fake",
                        ]
                        assert main(out) == 0, capsys.readouterr().err
                if name == "label":  # a server: started, seen to print its URL, stopped
                    assert "labelled 0 of 30" in label_until_stopped(argv[1:])
                    continue
                code = main(argv)
                out = capsys.readouterr()
                assert code == 0, (name, argv, out.err)
                if redirect:
                    Path(redirect.strip()).write_text(out.out)
