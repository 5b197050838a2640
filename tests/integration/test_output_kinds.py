"""An output of another kind is never written into: judge, check and generate given `-o` a file that
holds other records (another stage's output, foreign JSON lines, qrels) stop at once with a usage
error (exit 2) naming the kind the file holds and the kind the command writes, before a call is
sent, and the file is left as it was."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE, nonempty
from ragassay.cli import main

KINDS = {"judge": "judgment", "check": "check", "generate": "question"}


def argv(command: str, out: Path, url: str) -> list[str]:
    llm = ["--base-url", url, "--model", "m", "--no-cache", "--quiet"]
    if command == "judge":
        return [
            "judge",
            "--queries",
            str(EXAMPLE / "queries.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "--run",
            str(EXAMPLE / "runs" / "bm25.txt"),
            "--depth",
            "1",
            "-o",
            str(out),
            *llm,
        ]
    if command == "check":
        return [
            "check",
            str(EXAMPLE / "answers.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "-o",
            str(out),
            *llm,
        ]
    return ["generate", str(EXAMPLE / "chunks.jsonl"), "--limit", "2", "-o", str(out), *llm]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, bytes]:
    """A real output of each command, as it writes it."""
    d = tmp_path_factory.mktemp("outputs")
    made = {}
    with FakeLLM() as server:
        for command in KINDS:
            out = d / f"{command}.jsonl"
            assert main(argv(command, out, server.url)) == 0
            made[command] = out.read_bytes()
            assert json.loads(made[command].splitlines()[0])["record"].startswith(KINDS[command] + "@")
    return made


def refused(
    tmp_path: Path, capsys, command: str, content: bytes, name: str = "taken.jsonl", journal: bool = False
) -> str:
    """Run ``command`` with ``-o`` a file holding ``content`` (or an unfinished run's journal beside
    it holding it): exit 2, nothing sent, the file as it was. The one error line."""
    out = tmp_path / name
    target = Path(f"{out}.journal") if journal else out
    target.write_bytes(content)
    capsys.readouterr()
    with FakeLLM() as server:
        code = main(argv(command, out, server.url))
        calls = server.calls
    err = capsys.readouterr().err
    assert code == 2, err
    assert calls == 0 and target.read_bytes() == content
    assert "Traceback" not in err and err.startswith(f"ragassay {command}: error: ")
    return err.splitlines()[0]


CROSS = [(command, other) for command in KINDS for other in KINDS if other != command]


@pytest.mark.parametrize("command,other", CROSS, ids=[f"{c}-into-{o}" for c, o in CROSS])
def test_an_output_of_another_kind_is_a_usage_error_naming_both_kinds(tmp_path, capsys, outputs, command, other):
    line = refused(tmp_path, capsys, command, outputs[other])
    assert f"holds {KINDS[other]} records" in line and f"not the {KINDS[command]} records this command writes" in line


@pytest.mark.parametrize("command", list(KINDS))
def test_foreign_json_lines_and_qrels_are_refused_saying_what_they_are(tmp_path, capsys, command):
    foreign = refused(tmp_path, capsys, command, b'{"id": "x1", "text": "mine, not a record"}\n', "foreign.jsonl")
    assert "JSON lines that are no ragassay records" in foreign and "no 'record' field" in foreign
    assert f"not the {KINDS[command]} records" in foreign
    qrels = refused(tmp_path, capsys, command, (EXAMPLE / "qrels.txt").read_bytes(), "human.qrels")
    assert "what looks like TREC qrels" in qrels and "line 1 reads" in qrels and f"not the {KINDS[command]}" in qrels


@pytest.mark.parametrize("command", ["judge", "check"])
def test_the_journal_of_an_unfinished_run_of_another_kind_is_refused_too(tmp_path, capsys, outputs, command):
    other = "check" if command == "judge" else "judge"
    line = refused(tmp_path, capsys, command, outputs[other], journal=True)
    assert "the journal of an unfinished run" in line and f"holds {KINDS[other]} records" in line


@pytest.mark.parametrize("command", ["judge", "check"])
def test_an_output_of_the_same_kind_is_resumed_in_every_form(tmp_path, capsys, outputs, command):
    """What the check must not refuse: the command's own output, gzipped, after a BOM and blank
    lines, written before records named their kind, and an empty file."""
    own = outputs[command]
    legacy = b"".join(
        json.dumps({k: v for k, v in json.loads(line).items() if k != "record"}).encode() + b"\n"
        for line in own.splitlines()
    )
    forms = {
        "plain": own,
        "gzip": gzip.compress(own),
        "bom": b"\xef\xbb\xbf\n  \n" + own,
        "legacy": legacy,
        "empty": b"",
    }
    for form, content in nonempty(forms.items()):
        out = tmp_path / f"{form}.jsonl"
        out.write_bytes(content)
        with FakeLLM() as server:
            code = main(argv(command, out, server.url))
            calls = server.calls
        err = capsys.readouterr().err
        assert code == 0, (form, err)
        assert (calls == 0) == bool(content), (form, calls)  # its own records: nothing asked again


def test_a_cut_first_line_in_a_journal_is_not_taken_for_a_kind(tmp_path, capsys, outputs):
    """A kill in the middle of a run's first journal line leaves a line with no end: not a file of
    another kind, only an item to redo."""
    out = tmp_path / "j.jsonl"
    Path(f"{out}.journal").write_bytes(outputs["judge"].splitlines()[0][:40])
    with FakeLLM() as server:
        assert main(argv("judge", out, server.url)) == 0
    assert "incomplete last line" in capsys.readouterr().err


def test_the_python_api_refuses_the_same(tmp_path, outputs):
    import ragassay
    from ragassay.errors import UsageError

    out = tmp_path / "c.jsonl"
    out.write_bytes(outputs["check"])
    with FakeLLM() as server, pytest.raises(UsageError, match=r"holds check records .*, not the judgment records"):
        ragassay.judge(
            queries=EXAMPLE / "queries.jsonl",
            chunks=EXAMPLE / "chunks.jsonl",
            run=EXAMPLE / "runs" / "bm25.txt",
            depth=1,
            output=out,
            base_url=server.url,
            model="m",
            no_cache=True,
        )
    assert out.read_bytes() == outputs["check"]
