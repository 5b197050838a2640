"""init never sets run generating questions while a file of the folder may hold the queries (issue
45, item 3): a file of texts by id beside the chunks, sharing none of their ids, is the queries; a
file init cannot place leaves generation off (``[generate] limit = 0``), and run says why."""

from __future__ import annotations

import json
from pathlib import Path

from ragassay.cli import main
from ragassay.product.project import read_project
from real_corpus import write_corpus


def plain(path: Path) -> None:
    """The file's lines as bare {"id", "text"} (no doc_id or title to tell chunks by)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows))


def dry_run(folder: Path, capsys) -> dict:
    capsys.readouterr()
    main(["run", str(folder / "ragassay.toml"), "--dry-run", "--model", "fake", "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_texts_beside_the_chunks_sharing_none_of_their_ids_are_the_queries(tmp_path, capsys):
    write_corpus(tmp_path, chunks=60, queries=10)  # chunks carry doc_id and title; queries are {"id", "text"}
    assert main(["init", str(tmp_path)]) == 0
    project = read_project(tmp_path / "ragassay.toml")
    assert project.queries == tmp_path / "queries.jsonl" and project.chunks == tmp_path / "chunks.jsonl"
    steps = {s["step"]: s for s in dry_run(tmp_path, capsys)["steps"]}
    assert steps["generate"]["text"] == "the project has queries"


def test_a_second_file_of_the_chunks_own_ids_is_not_taken_for_queries(tmp_path, capsys):
    chunks, _ = write_corpus(tmp_path, chunks=60, queries=10)
    (tmp_path / "queries.jsonl").unlink()
    (tmp_path / "more.jsonl").write_text(
        "".join(json.dumps({"id": c["id"], "text": c["text"][:50]}) + "\n" for c in chunks[:5])
    )
    assert main(["init", str(tmp_path)]) == 0
    assert read_project(tmp_path / "ragassay.toml").queries is None


def test_a_file_that_may_hold_the_queries_keeps_generation_off(tmp_path, capsys):
    write_corpus(tmp_path, chunks=60, queries=10)
    plain(tmp_path / "chunks.jsonl")  # now both files are bare texts by id: init cannot tell them apart
    assert main(["init", str(tmp_path)]) == 0
    text = (tmp_path / "ragassay.toml").read_text()
    assert "run generates questions" not in text
    assert "limit = 0    # no questions are generated while chunks.jsonl or queries.jsonl may hold the queries" in text
    result = dry_run(tmp_path, capsys)
    steps = {s["step"]: s for s in result["steps"]}
    assert steps["generate"]["status"] == "skipped" and "limit = 0" in steps["generate"]["text"]
    assert result["calls"] == 0  # nothing would be paid for
    # the user names the queries: the run goes on without generating
    toml = tmp_path / "ragassay.toml"
    toml.write_text(
        text.replace('# queries = "queries.jsonl"', 'queries = "queries.jsonl"').replace(
            '# chunks = "chunks.jsonl"', 'chunks = "chunks.jsonl"'
        )
    )
    steps = {s["step"]: s for s in dry_run(tmp_path, capsys)["steps"]}
    assert steps["generate"]["text"] == "the project has queries"
