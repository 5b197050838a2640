"""A join that fails offers the way out: answers and queries under different ids (a000 vs q000) that
ask the same questions are matched by question text, with the count said and a warning; a text two
queries share is not guessed; no id and no text in common stops the run naming both files; and
``[data] answers_match`` says how ("auto": by id, then by text; "id"; "text").

Texts are compared exactly but for Unicode's canonical form, letter case and runs of whitespace: a
near text (a word or a mark apart) is another question. The questions are real text: the first
sentences of Python standard-library docstrings.
"""

from __future__ import annotations

import importlib
import inspect
import json
import unicodedata
from pathlib import Path

import pytest

from helpers import Said, cli
from ragassay.data.text_match import match_by_text, normalised

MODULES = (
    "json",
    "textwrap",
    "shutil",
    "functools",
    "itertools",
    "heapq",
    "bisect",
    "difflib",
    "statistics",
    "calendar",
    "random",
    "tempfile",
    "urllib.parse",
    "copy",
    "csv",
)


def sentences(n: int) -> list[str]:
    """``n`` distinct first sentences of stdlib docstrings (ending in a period)."""
    found: list[str] = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in sorted(dir(module)):
            obj = getattr(module, attr)
            if attr.startswith("_") or not callable(obj):
                continue
            first = (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ").split(". ")[0].strip()
            if 40 <= len(first) <= 200 and first not in found and "é" not in first:
                found.append(first)
            if len(found) == n:
                return found
    raise AssertionError(f"only {len(found)} docstrings")


@pytest.fixture
def offline(monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def project(
    root: Path,
    questions: list[str],
    answer_questions: list[str] | None = None,
    *,
    answer_ids: str = "a",
    match: str | None = None,
    with_queries: bool = True,
) -> Path:
    """A project of 16 chunks and queries q000..q015 (one chunk each), a run, people's qrels and
    answers ``a000``.. asking ``answer_questions`` (the queries' texts unless given)."""
    root.mkdir()
    n = len(questions)
    (root / "chunks.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i:03d}", "text": f"{q} (as documented)"}) + "\n" for i, q in enumerate(questions))
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i:03d}", "question": q}) + "\n" for i, q in enumerate(questions))
    )
    (root / "base.txt").write_text(
        "".join(f"q{i:03d} Q0 c{(i + s) % n:03d} {s + 1} {10 - s} base\n" for i in range(n) for s in range(3))
    )
    (root / "people.qrels").write_text(
        "".join(  # every fourth query's gold chunk is not in the run's top 3
            f"q{i:03d} 0 c{(i + 8 if i % 4 == 3 else i) % n:03d} 2\n" for i in range(n)
        )
    )
    asked = questions if answer_questions is None else answer_questions
    (root / "answers.jsonl").write_text(
        "".join(
            json.dumps({"id": f"{answer_ids}{i:03d}", "question": q, "reference": "yes", "response": "yes"}) + "\n"
            for i, q in enumerate(asked)
        )
    )
    data = ['chunks = "chunks.jsonl"', 'qrels = "people.qrels"', 'answers = "answers.jsonl"']
    if with_queries:
        data.append('queries = "queries.jsonl"')
    if match is not None:
        data.append(f'answers_match = "{match}"')
    (root / "ragassay.toml").write_text(
        'depth = 5\nk = 10\nmetrics = ["ndcg@10"]\n\n[data]\n' + "\n".join(data) + '\n\n[runs]\nbase = "base.txt"\n'
    )
    return root / "ragassay.toml"


def run(toml: Path, *more: str) -> Said:
    return cli("run", toml, "--format", "json", "--quiet", *more)


# ------------------------------------------------------------------------------------- the matcher


def test_texts_match_across_case_whitespace_and_unicode_forms_but_not_near_texts():
    text = "Return the café's list of «items», sorted."
    same = [
        "return the CAFÉ'S list of «items», sorted.",
        "Return  the café's\tlist of «items»,\nsorted.",
        unicodedata.normalize("NFD", text),
        "Return\u00a0the café's list of «items», sorted.  ",
    ]
    near = [
        "Return the café's list of «items», sorted",
        "Return the cafe's list of «items», sorted.",
        "Return the café's list of items, sorted.",
        "Return a café's list of «items», sorted.",
    ]
    assert {normalised(t) for t in same} == {normalised(text)}
    assert all(normalised(t) != normalised(text) for t in near)
    found = match_by_text("the answers", {f"a{i}": t for i, t in enumerate(same + near)}, "the queries", {"q-1": text})
    assert found.pairs == {"a0": "q-1", "a1": "q-1", "a2": "q-1", "a3": "q-1"}
    assert sorted(found.unmatched) == ["a4", "a5", "a6", "a7"]


# ------------------------------------------------------------------------------------- the pipeline


def test_ids_that_differ_with_texts_that_meet_are_matched_by_text_and_said(tmp_path, offline):
    questions = sentences(16)
    toml = project(tmp_path / "p", questions)
    dry = run(toml, "--dry-run")
    assert dry.code == 0, dry.out + dry.err  # (it stopped: "no query ids in common ... from the same set?")
    said = "the answers met the queries by question text, not by id: 16 of 16 matched; ids differ (a000 ↔ q000)"
    assert said in dry.json["warnings"]
    joins = {
        (
            j.get("what"),
            j.get("left", {}).get("role"),
            j.get("right", {}).get("role") if "right" in j else j.get("right_role"),
        ): j
        for j in dry.json["joins"]
    }
    assert joins[("query ids", "the answers", "the run base")]["left"]["matched"] == 16
    assert joins[("query ids", "the answers", "the qrels")]["left"]["matched"] == 16
    assert joins[(None, "the answers", "the queries")] == {
        "by": "text",
        "left": {"role": "the answers", "ids": 16, "matched": 16},
        "right_role": "the queries",
        "unmatched": [],
        "ambiguous": {},
    }
    done = run(toml)
    assert done.code == 0, done.out + done.err
    check = next(s for s in done.json["steps"] if s["step"] == "check")
    assert check["status"] == "ran"
    diagnosis = check["result"]["diagnosis"]
    assert [j["left"]["matched"] for j in diagnosis["joins"]] == [16, 16]  # the run's and the qrels' queries
    assert diagnosis["diagnosed"] == 16 and diagnosis["not_diagnosed"] == 0
    cells = diagnosis["cells"]  # each answer's recall is its query's: a003 is q003's, whose gold the run missed
    assert cells["bad_retrieval_good_answer"] == {"count": 4, "examples": ["a003", "a007", "a011", "a015"]}
    assert cells["good_retrieval_good_answer"]["count"] == 12
    assert said in done.json["warnings"] and done.json["warnings"].count(said) == 1


def test_texts_half_meeting_match_half_and_name_the_rest(tmp_path, offline):
    questions = sentences(16)
    asked = [q if i % 2 == 0 else q.rstrip(".") + " in general." for i, q in enumerate(questions)]  # near texts
    done = run(project(tmp_path / "p", questions, asked), "--dry-run")
    assert done.code == 0, done.out + done.err
    (said,) = [w for w in done.json["warnings"] if "by question text" in w]
    assert said.startswith(
        "the answers met the queries by question text, not by id: 8 of 16 matched; ids differ "
        "(a000 ↔ q000); 8 of the answers' questions are no text of the queries (e.g. a001, a003, a005)"
    )
    joins = [
        j
        for j in done.json["joins"]
        if j.get("right", {}).get("role") == "the run base" and j["left"]["role"] == "the answers"
    ]
    assert joins[0]["left"] == {
        "role": "the answers",
        "file": str(tmp_path / "p" / "answers.jsonl"),
        "ids": 16,
        "matched": 8,
    }


def test_a_text_two_queries_share_is_not_guessed(tmp_path, offline):
    questions = sentences(16)
    questions[15] = questions[3].upper()  # q003 and q015 ask one question (case aside)
    done = run(project(tmp_path / "p", questions, questions[:15]), "--dry-run")
    assert done.code == 0, done.out + done.err
    (said,) = [w for w in done.json["warnings"] if "by question text" in w]
    assert "14 of 15 matched" in said
    assert (
        "1 of the answers' questions are the text of more than one of the queries (e.g. a003: q003, q015), so "
        "they are not matched: which one would be a guess" in said
    )


def test_every_text_ambiguous_stops_the_run_saying_why(tmp_path, offline):
    questions = sentences(2) * 8  # each text eight times: no answer can be told apart
    done = run(project(tmp_path / "p", questions, questions[:2]), "--dry-run")
    assert done.code == 1
    assert "no query ids in common between the answers" in done.err and "nor texts" in done.err
    assert "2 of the 2 answers' questions are each the text of more than one query" in done.err
    assert "would be a guess" in done.err and "Traceback" not in done.err


def test_no_id_and_no_text_in_common_stops_the_run_naming_both_files(tmp_path, offline):
    questions = sentences(16)
    other = sentences(32)[16:]
    done = run(project(tmp_path / "p", questions, other), "--dry-run")
    assert done.code == 1
    assert "answers.jsonl" in done.err and "queries.jsonl" in done.err
    assert "none of the 16 answers' questions is the text of a query" in done.err


def test_ids_that_meet_are_joined_by_id_whatever_the_texts(tmp_path, offline):
    questions = sentences(16)
    reworded = [q.rstrip(".") + ", as a rule." for q in questions]
    done = run(project(tmp_path / "p", questions, reworded, answer_ids="q"), "--dry-run")
    assert done.code == 0, done.out + done.err
    assert not [w for w in done.json["warnings"] if "by question text" in w]
    assert not [j for j in done.json["joins"] if j.get("by") == "text"]


def test_answers_match_id_names_the_setting_that_matches_by_text(tmp_path, offline):
    questions = sentences(16)
    done = run(project(tmp_path / "p", questions, match="id"), "--dry-run")
    assert done.code == 1
    assert "no query ids in common" in done.err and 'answers_match = "text" (in [data])' in done.err
    again = run(project(tmp_path / "t", questions, match="text"), "--dry-run")
    assert again.code == 0 and any("16 of 16 matched" in w for w in again.json["warnings"])


def test_answers_match_text_matches_by_text_even_where_some_ids_meet(tmp_path, offline):
    questions = sentences(16)
    toml = project(tmp_path / "p", questions, list(reversed(questions)), answer_ids="q", match="text")
    done = run(toml, "--dry-run")
    assert done.code == 0, done.out + done.err
    (said,) = [w for w in done.json["warnings"] if "by question text" in w]
    assert "16 of 16 matched; ids differ (q000 ↔ q015)" in said


def test_a_bad_answers_match_names_its_line(tmp_path, offline):
    toml = project(tmp_path / "p", sentences(4), match="fuzzy")
    done = run(toml, "--dry-run")
    assert done.code == 1 and "ragassay.toml:" in done.err and "answers_match" in done.err and "'fuzzy'" in done.err


def test_without_a_queries_file_the_error_names_it_as_the_way_out(tmp_path, offline):
    done = run(project(tmp_path / "p", sentences(16), with_queries=False), "--dry-run")
    assert done.code == 1
    assert "no query ids in common between the answers" in done.err
    assert "name the queries in [data] queries" in done.err


def test_the_python_check_meets_the_run_by_the_query_ids_it_is_given(tmp_path):
    """api.check's diagnosis, given each answer's query id, meets the run and qrels by those."""
    from ragassay import api

    questions = sentences(16)
    root = project(tmp_path / "p", questions).parent
    ids = {f"a{i:03d}": f"q{i:03d}" for i in range(16)}
    with pytest.raises(Exception, match="no query ids in common"):
        api.check(
            root / "answers.jsonl",
            chunks=root / "chunks.jsonl",
            run=root / "base.txt",
            qrels=root / "people.qrels",
            llm=[],
            quiet=True,
        )
    done = api.check(
        root / "answers.jsonl",
        chunks=root / "chunks.jsonl",
        run=root / "base.txt",
        qrels=root / "people.qrels",
        llm=[],
        quiet=True,
        query_ids=ids,
    )
    diagnosis = done.summary["diagnosis"]
    assert [j["left"]["matched"] for j in diagnosis["joins"]] == [16, 16]
