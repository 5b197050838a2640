"""Every bad line of a qrels or run column file, and every bad answer given to check, is said at
once in file order (up to 10), in the readers' own words: the column reader checked a block a column
at a time, so a bad score on line 2 was reported as the short line 3, and check stopped at one."""

from __future__ import annotations

import json
import re

import pytest

from helpers import nonempty
from ragassay.data.qrels_files import read_qrels
from ragassay.data.run_files import read_run
from ragassay.errors import InputError


@pytest.fixture(params=["numpy", "arrow"])
def parser(request, monkeypatch):
    if request.param == "arrow":
        pytest.importorskip("pyarrow")
    monkeypatch.setenv("RAGASSAY_PARSER", request.param)
    return request.param


CASES = [  # (reader, file text, the lines said in order, with what)
    (
        "run",
        "json Q0 json.dumps 1 0.9 bm25\njson Q0 json.loads 2 high bm25\njson Q0 json.load 3\n"
        "json Q0 textwrap.fill 4 0.1 bm25\n",
        [(2, "score is not a number: 'high'"), (3, "expected 5 or more whitespace-separated columns, found 4")],
    ),
    (
        "run",
        "q-ü\tjson.dumps\t0.5\nq-ü\tjson.loads\tnan\nq-ü\tjson.load\nq-ü\tshlex.split\tinf\n",
        [
            (2, "score must be finite, got 'nan'"),
            (3, "expected 3 whitespace-separated columns, found 2"),
            (4, "score must be finite, got 'inf'"),
        ],
    ),
    (
        "run",
        "query-id\tcorpus-id\tscore\nq1\td1\t0.5\nq1\td2\tx\nq1\td3\n",
        [(3, "score is not a number: 'x'"), (4, "expected 3 whitespace-separated columns, found 2")],
    ),
    (
        "qrels",
        "json 0 json.dumps 3\njson 0 json.loads 2.5\njson 0 json.load\njson 0 shlex.split two\n",
        [
            (2, "grade must be an integer, got '2.5'"),
            (3, "expected 4 whitespace-separated columns, found 3"),
            (4, "grade must be an integer, got 'two'"),
        ],
    ),
]


@pytest.mark.parametrize("kind, text, said", CASES)
def test_every_bad_line_of_a_column_file_in_file_order(tmp_path, parser, kind, text, said):
    path = tmp_path / ("run.txt" if kind == "run" else "qrels.txt")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        (read_run if kind == "run" else read_qrels)(path)
    e = caught.value
    assert e.line == said[0][0]
    assert e.message.startswith(f"{len(said)} lines are wrong: line {said[0][0]}: "), e.message
    found = [(int(m.group(1)), m.start()) for m in re.finditer(r"line (\d+): ", e.message)]
    assert [n for n, _ in found] == [n for n, _ in said]
    for (n, what), (_, at) in nonempty(zip(said, found)):
        assert e.message[at:].startswith(f"line {n}: {what}"), (n, e.message)


def test_one_bad_line_is_said_as_before(tmp_path, parser):
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 a 1 0.9 t\nq1 Q0 b 2 x t\nq1 Q0 c 3 0.1 t\n")
    with pytest.raises(InputError, match=r"run\.txt:2: score is not a number: 'x'$"):
        read_run(path)


def test_the_look_stops_at_ten_bad_lines_saying_so(tmp_path, cli):
    path = tmp_path / "run.txt"
    path.write_text("".join(f"q{i // 10} Q0 d{i} {i % 10 + 1} {'x' if i % 7 == 3 else '0.5'} t\n" for i in range(400)))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    code, out, err = cli("evaluate", qrels, path)
    bad = [i + 1 for i in range(400) if i % 7 == 3]
    assert code == 1 and out == ""
    assert f"10 lines are wrong: line {bad[0]}: score is not a number: 'x'; line {bad[1]}: " in err
    assert [int(n) for n in re.findall(r"line (\d+): score", err)] == bad[:10]
    assert err.rstrip().endswith(f"the lines after line {bad[9]} were not read"), err


ANSWERS = [
    {
        "id": "a1",
        "question": "What does json.dumps do?",
        "response": "It serialises an object.",
        "reference": "Serialize obj to a JSON formatted str.",
    },
    {"id": "a2", "question": "What does textwrap.fill do?", "reference": "Wraps a paragraph."},
    {"id": "a3", "question": "What is shlex for?", "response": 5, "reference": "A lexical analyser."},
    {"id": "a4", "response": "It splits.", "reference": "Split the string using shell-like syntax."},
    {"id": "a5", "question": "Ein Schlüssel?", "response": "ja", "reference": "ja"},
]


def test_check_says_every_bad_answer_in_file_order(tmp_path, cli):
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in ANSWERS), encoding="utf-8")
    code, out, err = cli("check", path, "-o", tmp_path / "checks.jsonl", "--dry-run")
    assert code == 1 and "Traceback" not in err
    assert "3 lines are wrong: line 2: response" in err and "Field required" in err, err
    assert re.search(r"line 2: .*; line 3: response: .*; line 4: no question", err), err


def test_check_says_every_unknown_context_id(tmp_path, cli):
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(json.dumps({"id": "json.dumps", "text": "Serialize obj to a JSON formatted str."}) + "\n")
    path = tmp_path / "answers.jsonl"
    rows = [
        {"id": f"a{i}", "question": "q?", "response": "r", "reference": "s", "context_ids": [c]}
        for i, c in enumerate(["json.dumps", "json.nope", "json.dumps", "shlex.nope"])
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli("check", path, "--chunks", chunks, "-o", tmp_path / "checks.jsonl", "--dry-run")
    assert code == 1
    assert (
        "2 lines are wrong: line 2: context id 'json.nope' is not in the chunks file; line 4: context id "
        "'shlex.nope' is not in the chunks file"
    ) in err, err
