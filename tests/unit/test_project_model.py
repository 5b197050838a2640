"""The project file is validated by one pydantic model per table (product/project/sections.py); each
error still reads ``ragassay.toml:LINE: key: why``, the line found from pydantic's location of the
error. Invented bad files, one fault each: the line and the words are asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragassay.errors import InputError
from ragassay.product.project import read_project

HEAD = 'depth = 5\nk = 10\nmetrics = ["ndcg@10"]\n\n[data]\nchunks = "chunks.jsonl"\n\n[runs]\nbm25 = "bm25.txt"\n'
# lines:  1          2       3                       4 5       6                         7 8       9


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "chunks.jsonl").write_text('{"id": "c1", "text": "alpha"}\n')
    (tmp_path / "bm25.txt").write_text("q1 Q0 c1 1 1.0 bm25\n")
    (tmp_path / "retrievers.py").write_text("def plain(query):\n    return []\n")
    return tmp_path


def refused(folder: Path, text: str | bytes) -> InputError:
    toml = folder / "ragassay.toml"
    if isinstance(text, bytes):
        toml.write_bytes(text)
    else:
        toml.write_text(text)
    with pytest.raises(InputError) as e:
        read_project(toml)
    assert e.value.path == str(toml)
    return e.value


def test_the_head_alone_is_read(folder):
    (folder / "ragassay.toml").write_text(HEAD)
    proj = read_project(folder / "ragassay.toml")
    assert (proj.depth, proj.k, proj.metrics, proj.runs) == (5, 10, ["ndcg@10"], {"bm25": folder / "bm25.txt"})
    assert proj.chunks == folder / "chunks.jsonl" and proj.llm == {} and proj.generate_limit == 20


@pytest.mark.parametrize(
    "text, line, words",
    [
        # a value of the wrong type: not converted, refused in the key's own words
        (HEAD.replace("depth = 5", 'depth = "5"'), 1, "depth: must be a whole number of at least 1, got '5'"),
        (HEAD + "\n[llm]\nconcurrency = 8.0\n", 12, "concurrency: has the wrong type: 8.0"),
        (HEAD + "\n[judge]\ncoverage = 1\n", 12, "coverage: must be true or false"),
        (HEAD.replace('bm25 = "bm25.txt"', "bm25 = 3"), 9, "bm25: must be a file name in quotes, got 3"),
        # a number out of its range
        (HEAD + "\n[llm]\ntimeout = 0\n", 12, "timeout: must be above 0, got 0"),
        (HEAD + "\n[gate]\nallow_errors = -2\n", 12, "allow_errors: must be a whole number of at least 0, got -2"),
        # a nested table where a value is expected: the table's own line
        (HEAD.replace("k = 10", "k = { top = 10 }"), 2, "k: must be a whole number of at least 1, got {'top': 10}"),
        (HEAD + "\n[judge.coverage]\nall = true\n", 11, "coverage: must be true or false"),
        # a table that is not one
        ('data = "chunks.jsonl"\n', 1, "data: must be a table ([data])"),
        # an item of a list
        (HEAD + '\n[gate]\nmin = ["ndcg@10=0.5", 3]\n', 12, 'min: a threshold is "METRIC=VALUE", got 3'),
        # a key a table requires, missing: the table's line names it
        (
            HEAD + '\n[retrievers.r]\nfallback = "bm25.txt"\n',
            11,
            'r: a retriever\'s table holds function = "file.py:function" and, if wanted, fallback = "run file"; '
            "got no function",
        ),
        (
            HEAD + '\n[retrievers]\nr = { function = "retrievers.py:plain", fallback = "gone.txt" }\n',
            12,
            "r: no such file 'gone.txt' (paths are relative to the project file)",
        ),
        # an enum's value
        (
            HEAD.replace("[data]\n", '[data]\nanswers_match = "fuzzy"\n'),
            6,
            "answers_match: is one of 'auto', 'id', 'text'",
        ),
    ],
)
def test_a_bad_value_names_its_line_and_the_allowed_values(folder, text, line, words):
    error = refused(folder, text)
    assert (error.line, error.message[: len(words)]) == (line, words), str(error)


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("deptth = 5\n" + HEAD, 1, "deptth: unknown key (known: agree, check, data, depth,"),
        (
            HEAD + "\n[generate]\nsampel = 3\n",
            12,
            "sampel: unknown key in [generate] (known: limit, sample); did you mean 'sample'?",
        ),
        (HEAD + '\n[llm]\nmodle = "m"\n', 12, "modle: unknown key in [llm] (known: model, base_url,"),
        (HEAD + '\n[agree]\nwith = "x"\n', 12, "with: unknown key in [agree] (known: second)"),
    ],
)
def test_an_unknown_key_lists_the_known_ones_and_the_near_name(folder, text, line, words):
    error = refused(folder, text)
    assert (error.line, error.message[: len(words)]) == (line, words), str(error)
    if "modle" in words:
        assert error.message.endswith("did you mean 'model'?")
    if "with" in words:
        assert "did you mean" not in error.message  # nothing spelt near it


def test_a_second_table_of_the_same_name_is_not_toml(folder):
    error = refused(folder, HEAD + '\n[data]\nqueries = "q.jsonl"\n')
    assert error.line == 11 and error.message.startswith("not valid TOML: ") and "data" in error.message


def test_a_byte_that_is_not_utf8_names_its_line(folder):
    error = refused(folder, HEAD.encode() + b'\n[report]\ntitle = "caf\xe9"\n')
    assert error.line == 12 and error.message.startswith("cannot read the project file: 'utf-8' codec can't decode")


def test_a_run_a_table_names_is_found_in_that_table(folder):
    """[check] run and [gate] run: each error names its own table's line, not the first ``run =``."""
    error = refused(folder, HEAD + '\n[check]\nrun = "bm25"\n\n[gate]\nrun = "gone"\n')
    assert (error.line, error.message) == (15, "run: [gate] run 'gone' is not a run of this project")


def test_the_first_error_a_reader_meets_is_the_one_said(folder):
    """An unknown key outside the tables first, then a table that is not one, then the tables in order."""
    text = HEAD + "\n[llm]\ntimeout = 0\n\n[gate]\nallow_errors = -1\n"
    assert refused(folder, text).line == 12
    assert refused(folder, "zzz = 1\n" + text).message.startswith("zzz: unknown key")
    assert refused(folder, "llm = 1\n" + HEAD).message == "llm: must be a table ([llm])"
