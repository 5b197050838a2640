"""A run that IS the qrels (every pair it ranks is judged, every score that pair's grade) is refused,
whatever its shape (three columns in descending grade order, which look like a ranking; ranx's JSON;
JSON Lines; TREC's six columns), naming both files and the evidence, by evaluate, compare and the
Python API; a format given by name forces the reading. A qrels JSON whose values have fractions is
refused as a run's scores. A run of integer counts that differs from the grades is still a run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ragassay
from ragassay.data.run_files import read_run
from ragassay.errors import InputError

# grades of five queries about the standard library, with unicode ids among them
GRADES = {
    "q-json": {"json.dumps": 3, "json.loads": 2, "json.JSONEncoder": 1, "pickle.dumps": 0},
    "q-wrap": {"textwrap.fill": 3, "textwrap.wrap": 3, "textwrap.dedent": 1},
    "q-ümlaut": {"unicodedata.normalize": 2, "str.casefold": 1, "codecs.encode": 0},
    "q-diff": {"difflib.unified_diff": 2, "difflib.ndiff": 1},
}


def descending() -> list[tuple[str, str, int]]:
    """The qrels' rows, each query's grades in descending order (as a ranking would list them)."""
    return [(q, d, g) for q, docs in GRADES.items() for d, g in sorted(docs.items(), key=lambda x: -x[1])]


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    rows = descending()
    out = {
        "qrels": tmp_path / "qrels.txt",
        "q3": tmp_path / "q3.tsv",
        "ranx": tmp_path / "run.json",
        "jsonl": tmp_path / "run.jsonl",
        "trec": tmp_path / "oracle.txt",
    }
    out["qrels"].write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows), encoding="utf-8")
    out["q3"].write_text("".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows), encoding="utf-8")
    out["ranx"].write_text(json.dumps(GRADES, ensure_ascii=False), encoding="utf-8")
    out["jsonl"].write_text(
        "".join(json.dumps({"query_id": q, "chunk_id": d, "score": g}, ensure_ascii=False) + "\n" for q, d, g in rows),
        encoding="utf-8",
    )
    trec, rank = [], {}
    for q, d, g in rows:
        rank[q] = rank.get(q, 0) + 1
        trec.append(f"{q} Q0 {d} {rank[q]} {g} oracle\n")
    out["trec"].write_text("".join(trec), encoding="utf-8")
    return out


EVIDENCE = (
    r"looks like qrels, not a run: every one of its 12 \(query, chunk\) pairs is judged in .*qrels\.txt and "
    r"its score equals that pair's grade there"
)


@pytest.mark.parametrize("shape", ["q3", "ranx", "jsonl", "trec"])
def test_a_run_that_is_the_qrels_is_refused_naming_both_files(files, cli, shape):
    code, out, err = cli("evaluate", files["qrels"], files[shape])
    assert code == 1 and out == "" and "Traceback" not in err
    assert re.search(rf"error: {re.escape(str(files[shape]))}: " + EVIDENCE, err), err
    assert "--run-format" in err and "format= in Python" in err
    code, out, err = cli("compare", files["qrels"], files["q3"], files[shape])
    assert code == 1 and re.search(EVIDENCE, err), err
    with pytest.raises(InputError, match=EVIDENCE):
        ragassay.evaluate(files["qrels"], files[shape])
    with pytest.raises(InputError, match=EVIDENCE):
        ragassay.evaluate(str(files["qrels"]), str(files[shape]))


@pytest.mark.parametrize("shape, fmt", [("q3", "trec3"), ("jsonl", "jsonl"), ("trec", "trec")])
def test_a_format_given_by_name_forces_the_reading(files, cli, shape, fmt):
    code, out, err = cli("evaluate", files["qrels"], files[shape], "--run-format", fmt, "-m", "ndcg@10")
    assert code == 0 and re.search(r"^ndcg@10 +1\.0000$", out, re.M), out + err
    run = read_run(files[shape], format=fmt)  # a Run object is taken as it is
    assert ragassay.evaluate(files["qrels"], run, "ndcg@10").aggregate["ndcg@10"] == pytest.approx(1.0)


def test_a_run_of_integer_counts_is_still_a_run(files, cli, tmp_path):
    """Counts that differ from the grades on one pair, or rank a chunk nobody judged, or are too few
    to be sure, are a run's scores: scored, not refused."""
    rows = descending()
    counts = [(q, d, g + (1 if i == 5 else 0)) for i, (q, d, g) in enumerate(rows)]  # one score is not the grade
    unjudged = rows + [("q-json", "os.path.join", 0)]
    few = rows[:4]
    for name, these in (("counts", counts), ("unjudged", unjudged), ("few", few)):
        path = tmp_path / f"{name}.tsv"
        path.write_text("".join(f"{q}\t{d}\t{g}\n" for q, d, g in these), encoding="utf-8")
        code, out, err = cli("evaluate", files["qrels"], path, "-m", "ndcg@10")
        assert code == 0 and "looks like qrels" not in err, (name, err)
        assert "ndcg@10" in ragassay.evaluate(files["qrels"], path, "ndcg@10").aggregate


def test_ranx_qrels_with_fractions_are_refused_as_a_run(tmp_path, cli, files):
    path = tmp_path / "qrels.json"
    path.write_text(json.dumps({"q-json": {"json.dumps": 0.83, "json.loads": 0.5}}), encoding="utf-8")
    code, out, err = cli("evaluate", path, files["q3"])
    assert code == 1 and out == ""
    assert re.search(
        r"qrels\.json: query 'q-json', document 'json\.dumps': grade must be an integer .*got 0\.83 "
        r"\(a value with a fraction is a score: the file looks like a run, not qrels; give it as a RUN\)",
        err,
    ), err
