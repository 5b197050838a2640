"""The command line: every command has help, output formats, errors with file:line, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ragassay
from helpers import EXAMPLE, nonempty
from ragassay.cli import build_parser, main

QRELS = str(EXAMPLE / "qrels.txt")
BM25 = str(EXAMPLE / "runs" / "bm25.txt")
TFIDF = str(EXAMPLE / "runs" / "tfidf.txt")


def subcommands():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices


def _described(parser) -> list:
    """Everything a parser declares that decides a parse or its help, nested commands included."""
    import argparse

    said = [parser.prog, parser.format_help(), parser.format_usage()]
    for a in parser._actions:
        said.append((a.option_strings, a.dest, a.nargs, repr(a.default), repr(a.type), a.required, a.help))
        if isinstance(a, argparse._SubParsersAction):
            said.extend([name, _described(p)] for name, p in a.choices.items())
        elif a.choices is not None:
            said.append(list(a.choices))
    return said


def test_a_command_built_alone_is_the_command_of_the_whole_parser():
    """A run builds only the command it names (the other commands' 300 flags cost ~10 ms a run): that
    command's parser must be the whole parser's, help, defaults, types and nested commands alike."""
    whole = subcommands()
    for name in nonempty(whole):
        alone = next(a for a in build_parser(name)._actions if a.dest == "command").choices
        assert list(alone) == [name]
        assert _described(alone[name]) == _described(whole[name]), name
    assert list(next(a for a in build_parser("nope")._actions if a.dest == "command").choices) == list(whole)


def test_a_run_builds_its_own_command_and_a_wrong_flag_still_names_the_commands_that_take_it(capsys, monkeypatch):
    """Declared: only the command named first; an unknown flag still learns which other commands take
    it, a misspelt command still gets its did-you-mean, and --help at the top still lists them all."""
    import ragassay.cli as cli

    built: list[str | None] = []
    real = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda command=None: built.append(command) or real(command))
    assert main(["evaluate", QRELS, BM25, "-m", "p@5"]) == 0 and built == ["evaluate"]
    assert "p@5" in capsys.readouterr().out
    built.clear()
    assert main(["evaluate", QRELS, BM25, "--concurrency", "4"]) == 2 and built == ["evaluate", None]
    err = capsys.readouterr().err
    assert "unrecognized arguments: --concurrency 4; --concurrency is a flag of " in err and "not of evaluate" in err
    assert main(["evalute", QRELS]) == 2 and "did you mean 'evaluate'?" in capsys.readouterr().err
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert all(f"    {name} " in top for name in subcommands())
    assert main(["judge", "--help"]) == 0
    assert capsys.readouterr().out == subcommands()["judge"].format_help()


def test_every_command_and_option_has_help_text():
    for name, sub in nonempty(subcommands().items()):
        assert sub.description, f"{name} has no description"
        for action in nonempty(sub._actions):
            if action.dest != "help":
                assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_all_matches_the_lazy_exports_and_the_type_checking_imports():
    """``__all__``, the lazy export table and the imports IDEs see must name the same objects."""
    import ast
    import importlib

    source = Path(ragassay.__file__).read_text()
    tree = ast.parse(source)
    checked = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
        for stmt in node.body
        if isinstance(stmt, ast.ImportFrom)
        for alias in stmt.names
    }
    exports = ragassay._EXPORTS
    assert set(ragassay.__all__) == set(exports) | {"__version__"} == checked | {"__version__"}
    for name, module in nonempty(exports.items()):
        assert getattr(ragassay, name) is getattr(importlib.import_module(f"ragassay.{module}"), name)
    with pytest.raises(AttributeError):
        ragassay.no_such_name  # noqa: B018


def test_evaluate_table_and_json(capsys):
    assert main(["evaluate", QRELS, BM25, "-m", "ndcg_cut_10,P@5", "-m", "recip_rank"]) == 0
    out = capsys.readouterr().out
    assert "ndcg@10" in out and "p@5" in out and "mrr" in out and "22 queries evaluated" in out
    assert main(["evaluate", QRELS, BM25, "--format", "json", "--per-query"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = ragassay.evaluate(QRELS, BM25)
    assert data["aggregate"] == pytest.approx(expected.aggregate)
    assert data["per_query"]["q01"] == pytest.approx(expected.per_query["q01"])
    assert data["counts"]["evaluated"] == 22


def test_evaluate_csv_and_markdown(capsys):
    assert main(["evaluate", QRELS, TFIDF, "-m", "map", "--format", "csv", "--per-query"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[0] == "query,map" and lines[-1].startswith("all,") and len(lines) == 24
    assert "queries evaluated" in captured.err
    assert main(["evaluate", QRELS, TFIDF, "-m", "map", "--format", "markdown"]) == 0
    assert "| metric | tfidf |" in capsys.readouterr().out


def test_bad_input_exits_1_with_file_and_line_and_a_bad_flag_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("q01 Q0 refund-01 1 0.5 x\nq01 Q0 refund-02 2 oops x\n")
    assert main(["evaluate", QRELS, str(bad)]) == 1
    assert f"{bad}:2: score is not a number: 'oops'" in capsys.readouterr().err
    assert main(["evaluate", QRELS, BM25, "-m", "ndcg@x"]) == 2
    assert "unknown metric" in capsys.readouterr().err


def test_dedupe_flag(tmp_path, capsys):
    dup = tmp_path / "dup.txt"
    dup.write_text("q01 Q0 refund-01 1 0.5 x\nq01 Q0 refund-01 2 0.9 x\n")
    assert main(["evaluate", QRELS, str(dup)]) == 1
    assert "--dedupe" in capsys.readouterr().err
    assert main(["evaluate", QRELS, str(dup), "--dedupe", "-m", "p@1"]) == 0


def test_compare_and_agree(capsys):
    assert main(["compare", QRELS, BM25, TFIDF, "-m", "ndcg@10", "--permutations", "500", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == "bm25" and data["tests"][0]["run"] == "tfidf"
    assert main(["compare", QRELS, BM25, TFIDF, "-m", "ndcg@10,map", "--permutations", "500"]) == 0
    out = capsys.readouterr().out
    assert "p (Holm)" in out and "W/T/L" in out
    second = str(EXAMPLE / "qrels_second_assessor.txt")
    assert main(["agree", QRELS, second, "--runs", BM25, TFIDF]) == 0
    out = capsys.readouterr().out
    assert "Cohen's kappa" in out and "Kendall's tau-b" in out
    assert main(["agree", QRELS, second, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"] == 65


def test_retrieve_with_a_file_function(tmp_path, capsys):
    out = tmp_path / "run.txt"
    assert (
        main(
            [
                "retrieve",
                "--retriever",
                f"{EXAMPLE / 'retrievers.py'}:tfidf",
                "--queries",
                str(EXAMPLE / "queries.jsonl"),
                "-k",
                "5",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert "latency p50" in capsys.readouterr().out
    run = ragassay.read_run(out)
    assert run.name == "tfidf" and len(run.queries) == 22
    assert json.loads((tmp_path / "run.txt.latency.json").read_text()).keys() == set(run.queries)
    assert main(["retrieve", "--retriever", "nope", "--queries", str(EXAMPLE / "queries.jsonl"), "-o", str(out)]) == 1


def test_python_dash_m_runs():
    r = subprocess.run([sys.executable, "-m", "ragassay", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("ragassay ")


def test_did_you_mean_for_commands_flags_and_metrics(tmp_path, capsys):
    assert main(["evalute", QRELS, BM25]) == 2  # a usage error is a return code, not an exception
    assert "did you mean 'evaluate'?" in capsys.readouterr().err
    assert main(["evaluate", QRELS, BM25, "--metrc", "ndcg@10"]) == 2
    assert "did you mean --metric?" in capsys.readouterr().err
    assert main(["evaluate", QRELS, BM25, "-m", "ndgc@10"]) == 2
    assert "did you mean 'ndcg@10'?" in capsys.readouterr().err
    assert main(["evaluate", QRELS, BM25, "-m", "ndcg@10", "--format", "json"]) == 0
    result = tmp_path / "r.json"
    result.write_text(capsys.readouterr().out)
    assert main(["gate", str(result), "--min", "ndgc@10=0.5"]) == 2  # a typo: usage, not a failed gate
    assert "did you mean 'ndcg@10'?" in capsys.readouterr().err


def test_dash_reads_standard_input():
    run = subprocess.run(
        [sys.executable, "-m", "ragassay", "evaluate", QRELS, "-", "-m", "ndcg@10", "--format", "json"],
        input=Path(BM25).read_bytes(),
        capture_output=True,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["aggregate"]["ndcg@10"] == pytest.approx(0.7935, abs=1e-4)
    bad = subprocess.run([sys.executable, "-m", "ragassay", "evaluate", QRELS, "-"], input=b"", capture_output=True)
    assert bad.returncode == 1 and b"<stdin>: file is empty" in bad.stderr


def test_one_dialect_the_same_flag_spelling_works_everywhere(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction)).choices
    assert sub["demo"].parse_args(["-o", "d"]).out == sub["demo"].parse_args(["--out", "d"]).out == "d"
    assert sub["check"].parse_args(["a.jsonl", "-o", "c", "--depth", "5"]).depth == 5
    assert sub["agree"].parse_args(["a", "b", "--run", "x", "--run", "y"]).runs == ["x", "y"]
    assert sub["agree"].parse_args(["a", "b", "--runs", "x", "y"]).runs == ["x", "y"]
    for name, p in nonempty(sub.items()):  # no formatting artefacts in help
        assert "%%" not in p.format_help(), name


def test_every_command_that_prints_a_result_speaks_json(tmp_path, capsys, monkeypatch):
    """--format json on retrieve, remap, track, report, demo (--copy and a run) and ping: stdout is
    one JSON document with a kind, and nothing else."""
    sys.path.insert(0, str(Path(__file__).parent))
    from fake_llm import FakeLLM

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    ev = tmp_path / "ev.json"
    assert main(["evaluate", QRELS, BM25, "--format", "json"]) == 0
    ev.write_text(capsys.readouterr().out)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "g1",
                "question": "How long?",
                "answer": "30 days",
                "difficulty": "easy",
                "chunk_ids": ["refund-01"],
                "evidence": ["within 30 days of delivery"],
            }
        )
        + "\n"
    )
    commands = {
        "retrieve": [
            "retrieve",
            "--retriever",
            f"{EXAMPLE / 'retrievers.py'}:tfidf",
            "--queries",
            str(EXAMPLE / "queries.jsonl"),
            "-o",
            str(tmp_path / "run.txt"),
        ],
        "remap": ["remap", str(questions), str(EXAMPLE / "chunks.jsonl"), "-o", str(tmp_path / "new.qrels")],
        "track": ["track", str(ev), "--db", str(tmp_path / "h.sqlite")],
        "report": ["report", str(ev), "-o", str(tmp_path / "r.md")],
        "demo": ["demo", "--copy", str(tmp_path / "copy")],
    }
    with FakeLLM() as server:
        commands["ping"] = ["ping", "--base-url", server.url, "--model", "m"]
        for kind, argv in nonempty(commands.items()):
            assert main(argv + ["--format", "json"]) == 0, kind
            out = json.loads(capsys.readouterr().out)
            assert out["kind"] == kind and out["version"] == 1, kind
    assert main(["report", str(ev), "-o", str(tmp_path / "r2.md"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "markdown"  # from the suffix
    assert (tmp_path / "r2.md").read_text().startswith("# ragassay report")
    assert (
        main(
            [
                "remap",
                str(questions),
                str(EXAMPLE / "chunks.jsonl"),
                "-o",
                str(tmp_path / "n.qrels"),
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["placed"] == 1


@pytest.mark.parametrize(
    "argv,says",
    [
        (
            ["demo", "--dry-run"],
            "ragassay demo: error: unrecognized arguments: --dry-run; --dry-run is a flag of check, "
            "generate, judge, qualify, run, not of demo",
        ),
        (
            ["evaluate", QRELS, BM25, "--model", "x"],
            "ragassay evaluate: error: unrecognized arguments: --model x; --model "
            "is a flag of check, demo, generate, judge, ping, qualify, run, not of evaluate",
        ),
        (
            ["evaluate", QRELS, BM25, "--metrc", "ndcg@10"],
            "ragassay evaluate: error: unrecognized arguments: --metrc ndcg@10; did you mean --metric?",
        ),
        (["compare", QRELS, BM25, BM25, "--per-query"], "--per-query is a flag of evaluate, not of compare"),
    ],
)
def test_an_unknown_flag_is_answered_by_the_command_with_a_flag_it_takes(capsys, argv, says):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and f"(see 'ragassay {argv[0]} --help')" in err
    assert "ragassay: error:" not in err  # one dialect: the command speaks


def test_a_base_url_without_a_scheme_gets_a_hint(capsys):
    assert main(["ping", "--base-url", "localhost:8000/v1", "--model", "m"]) == 1
    assert capsys.readouterr().err.strip() == (
        "ragassay ping: error: the base URL 'localhost:8000/v1' has no scheme: did you mean http://localhost:8000/v1?"
    )
