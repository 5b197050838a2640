"""Advice that names where to give a file ("give it as QRELS", "give it as --chunks") is said only
by a command that has that slot, as advice naming a flag already was: judge, which reads a run and
has no QRELS, is not told to give a file as QRELS; evaluate is. A clause's own aside in parentheses
stays with it when the clauses are cut."""

from __future__ import annotations

import argparse
import re

import pytest

from helpers import EXAMPLE, nonempty
from ragassay.cli import build_parser, main
from ragassay.cli.hints import clauses_of, own_hints, slots_of
from ragassay.errors import InputError


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


ADVICE = [
    ("give it as QRELS", "QRELS"),
    ("give it as a RUN (are the arguments in the right order?)", "RUN"),
    ("give it as --chunks (queries: id and question, query or text)", "--chunks"),
    ("give it as --queries", "--queries"),
]


@pytest.mark.parametrize("advice, slot", ADVICE)
def test_each_commands_parser_keeps_advice_only_for_its_own_slots(advice, slot):
    kept_by = set()
    for name, parser in nonempty(commands().items()):
        error = InputError(f"looks like the other role: the evidence (a; b); {advice}; --no-such-flag x", "f.txt", 3)
        said = own_hints(error, parser)
        assert said.startswith("f.txt:3: looks like the other role: the evidence (a; b)"), (name, said)
        assert "--no-such-flag" not in said
        if advice in said:
            kept_by.add(name)
        assert (advice in said) == (slot in slots_of(parser)), (name, said)
    assert kept_by and kept_by != set(commands())  # some commands have the slot, some do not


def test_positional_slots_are_named_as_help_shows_them():
    c = commands()
    assert {"QRELS", "RUN"} <= slots_of(c["evaluate"])
    assert "QRELS" not in slots_of(c["judge"]) and "--run" in slots_of(c["judge"])
    assert "--chunks" in slots_of(c["retrieve"]) and "--queries" in slots_of(c["retrieve"])


def test_a_clauses_aside_in_parentheses_stays_with_it():
    text = "head: x; give it as QRELS, or --run-format trec3 (evaluate takes it; format='trec3' in Python) if so"
    assert clauses_of(text) == [
        "head: x",
        "give it as QRELS, or --run-format trec3 (evaluate takes it; format='trec3' in Python) if so",
    ]


def test_judge_given_qrels_as_its_run_is_not_told_to_give_them_as_qrels(tmp_path, capsys):
    q3 = tmp_path / "q3.tsv"
    q3.write_text(
        "".join(
            f"{line.split()[0]}\t{line.split()[2]}\t{line.split()[3]}\n"
            for line in (EXAMPLE / "qrels.txt").read_text().splitlines()
            if line.strip()
        )
    )
    capsys.readouterr()
    code = main(
        [
            "judge",
            "--queries",
            str(EXAMPLE / "queries.jsonl"),
            "--chunks",
            str(EXAMPLE / "chunks.jsonl"),
            "--run",
            str(q3),
            "-o",
            str(tmp_path / "j.jsonl"),
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "looks like qrels, not a run" in err
    assert "QRELS" not in err and "--run-format" not in err and "format='trec3' in Python) if" not in err, err
    code = main(["evaluate", str(EXAMPLE / "qrels.txt"), str(q3)])
    err = capsys.readouterr().err
    assert code == 1 and "give it as QRELS" in err and "--run-format trec3" in err


def test_retrieve_given_chunks_as_queries_is_told_its_own_chunks_flag(tmp_path, capsys):
    capsys.readouterr()
    code = main(
        [
            "retrieve",
            "--retriever",
            f"{EXAMPLE / 'retrievers.py'}:tfidf",
            "--queries",
            str(EXAMPLE / "chunks.jsonl"),
            "-o",
            str(tmp_path / "r.txt"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "looks like chunks, not queries" in err and "give it as --chunks" in err
    assert set(re.findall(r"--[a-z][a-z0-9-]*", err)) <= slots_of(commands()["retrieve"])
