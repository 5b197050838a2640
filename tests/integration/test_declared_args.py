"""Arguments are declared, not guessed: which values name files is said where each argument is
defined (cli/paths.py), and the output guard reads those declarations only. A metric list, a label,
a title or a run's name is text, whatever its length, and never opened or stat'ed."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import EXAMPLE, nonempty
from ragassay.cli import build_parser, main
from ragassay.cli.paths import ROLES, check_outputs, file_args, role_of

QRELS, BM25 = str(EXAMPLE / "qrels.txt"), str(EXAMPLE / "runs" / "bm25.txt")


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _takes_a_string(action: argparse.Action) -> bool:
    if action.nargs == 0 or action.choices or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
        return False
    return action.type is None or action.type is str or action.type is Path


def test_every_argument_that_takes_a_string_declares_its_role():
    undeclared, roles = [], set()
    for name, parser in nonempty(_commands().items()):
        for action in parser._actions:
            if _takes_a_string(action):
                role = role_of(action)
                roles.add(role)
                if role not in ROLES:
                    undeclared.append(f"{name} {action.option_strings or action.dest}")
    assert not undeclared, f"declare these with reads/writes/folder/module/text (cli/paths.py): {undeclared}"
    assert roles == set(ROLES)  # each role is in use: the walk saw every kind


def test_a_value_that_is_the_output_path_is_still_text_unless_declared(tmp_path):
    """track's --label and --run, gate's --run, report's --title: text, even when they spell the path
    of a file that exists, the output among them (guessing made them inputs and refused the command)."""
    db = tmp_path / "h.sqlite"
    db.write_bytes(b"")
    result = tmp_path / "r.json"
    result.write_text("{}")
    commands = _commands()
    args = commands["track"].parse_args([str(result), "--db", str(db), "--label", str(db), "--run", str(db)])
    inputs, outputs = file_args(commands["track"], args, "track")
    assert [i.path for i in inputs] == [result] and [o.path for o in outputs] == [db]
    check_outputs(commands["track"], args, "track")  # no clash: the label is not a file argument
    # report: a --run is declared an input, so the same spelling there is a clash
    out = tmp_path / "report.html"
    out.write_text("")
    args = commands["report"].parse_args(["--run", str(out), "--title", str(out), "-o", str(out)])
    with pytest.raises(Exception, match="is also the input --run"):
        check_outputs(commands["report"], args, "report")


def test_the_guard_stats_declared_files_only(tmp_path, monkeypatch):
    """Every value that is not a declared file is left alone: os.stat never sees it."""
    seen = []
    real_stat = os.stat

    def spy(path, *a, **k):
        seen.append(os.fspath(path))
        return real_stat(path, *a, **k)

    monkeypatch.setattr(os, "stat", spy)
    texts = {"metric": "ndcg@10," * 40, "label": "L" * 300, "title": "T" * 400, "name": "N" * 300}
    commands = _commands()
    cases = [
        ("evaluate", [QRELS, BM25, "-m", texts["metric"]]),
        ("compare", [QRELS, BM25, BM25, "-m", texts["metric"]]),
        (
            "track",
            [
                str(tmp_path / "r.json"),
                "--db",
                str(tmp_path / "h.sqlite"),
                "--label",
                texts["label"],
                "--run",
                texts["name"],
            ],
        ),
        ("report", ["--title", texts["title"], "-o", str(tmp_path / "r.html")]),
        (
            "retrieve",
            [
                "--retriever",
                "pkg.mod:" + texts["name"],
                "--queries",
                QRELS,
                "-o",
                str(tmp_path / "run.txt"),
                "--name",
                texts["name"],
            ],
        ),
        ("gate", [str(tmp_path / "r.json"), "--min", f"{texts['metric'][:-1]}=0.5", "--run", texts["name"]]),
    ]
    for command, argv in nonempty(cases):
        seen.clear()
        parser = commands[command]
        check_outputs(parser, parser.parse_args(argv), command)
        for value in nonempty(texts.values()):
            assert not any(value[:50] in s for s in seen), (command, seen)


@pytest.mark.parametrize(
    "argv",
    [
        [
            "evaluate",
            QRELS,
            BM25,
            "--format",
            "json",
            "-m",
            ",".join(f"{m}@{k}" for m in ("p", "recall", "ndcg", "hit_rate", "f1") for k in (1, 2, 3, 5, 10, 20, 50)),
        ],
    ],
)
def test_a_metric_list_of_any_length_is_text(argv, capsys):
    assert len(argv[-1]) > 255  # longer than any file name may be
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["aggregate"]) == 35


def test_a_long_label_and_title_are_text(tmp_path, capsys):
    result = tmp_path / "r.json"
    assert main(["evaluate", QRELS, BM25, "--format", "json"]) == 0
    result.write_text(capsys.readouterr().out)
    db = tmp_path / "h.sqlite"
    label = "nightly " + "x" * 300
    assert main(["track", str(result), "--db", str(db), "--label", label, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["label"] == label
    assert (
        main(["report", str(result), "--title", "T" * 400, "-o", str(tmp_path / "r.md"), "--format", "markdown"]) == 0
    )
    assert ("T" * 400) in (tmp_path / "r.md").read_text()


def test_a_declared_output_whose_name_is_too_long_is_a_usage_error(tmp_path, capsys):
    code = main(
        [
            "retrieve",
            "--retriever",
            f"{EXAMPLE / 'retrievers.py'}:bm25",
            "--queries",
            str(EXAMPLE / "queries.jsonl"),
            "-o",
            str(tmp_path / ("y" * 300)),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "-o" in err and "cannot be written (File name too long)" in err and "Traceback" not in err


def test_a_py_module_is_an_input_and_a_dotted_module_is_not_stated(tmp_path):
    commands = _commands()
    script = tmp_path / "mine.py"
    script.write_text("def search(q):\n    return []\n")
    p = commands["retrieve"]
    args = p.parse_args(["--retriever", f"{script}:search", "--queries", QRELS, "-o", str(script)])
    with pytest.raises(Exception, match="is also the input --retriever"):
        check_outputs(p, args, "retrieve")
    args = p.parse_args(["--retriever", "json:loads", "--queries", QRELS, "-o", str(tmp_path / "run.txt")])
    inputs, _ = file_args(p, args, "retrieve")
    assert {i.flag for i in inputs} == {"--queries"}  # (the file and its origin sidecar): no --retriever file


def test_a_long_metric_list_in_a_fresh_process(tmp_path):
    """As a script passes it: the whole command, from the shell's point of view."""
    metrics = ",".join(f"ndcg@{k}" for k in range(1, 61))
    r = subprocess.run(
        [sys.executable, "-m", "ragassay", "evaluate", QRELS, BM25, "-m", metrics],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "ndcg@60" in r.stdout


@pytest.mark.parametrize(
    "command",
    [
        lambda q, o: ["report", "--qrels", q, "--run", str(EXAMPLE / "runs" / "bm25.txt"), "-o", o],
        lambda q, o: [
            "judge",
            "--queries",
            str(EXAMPLE / "queries.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "--run",
            str(EXAMPLE / "runs" / "bm25.txt"),
            "--keep",
            q,
            "-o",
            o,
            "--dry-run",
            "--model",
            "m",
        ],
    ],
)
def test_an_input_files_origin_sidecar_is_part_of_the_input(tmp_path, capsys, command):
    """Who labelled a file (FILE.origin.json beside it) is part of that input: an output there would
    replace it with something else, leaving the labels of unknown origin."""
    q = tmp_path / "people.txt"
    q.write_text((EXAMPLE / "qrels.txt").read_text())
    side = tmp_path / "people.txt.origin.json"
    side.write_text((EXAMPLE / "qrels.txt.origin.json").read_text())
    before = side.read_text()
    capsys.readouterr()
    assert main(command(str(q), str(side))) == 2
    err = capsys.readouterr().err
    assert "is also the input" in err and f"{side} (who labelled {q})" in err and side.read_text() == before
