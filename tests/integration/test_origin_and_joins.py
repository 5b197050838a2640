"""Between commands: every label keeps who made it, every join is counted, history compares like
with like. Cases invented here, both ways: people and models, one file twice, partial and disjoint
ids, another order of the same labels, legacy history rows."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import EXAMPLE, nonempty
from ragassay.cli import main
from ragassay.data.joins import Join
from ragassay.data.origin import (
    Labeller,
    Origin,
    endpoint_host,
    model_origin,
    origin_of_records,
    people,
    read_origin,
    sidecar_path,
    write_origin,
)
from ragassay.data.qrels_files import read_qrels
from ragassay.data.writers import write_qrels
from ragassay.errors import InputError
from ragassay.metrics.agreement import agree
from ragassay.product.tracking import History, read_history

QRELS, SECOND = EXAMPLE / "qrels.txt", EXAMPLE / "qrels_second_assessor.txt"
BM25, TFIDF = EXAMPLE / "runs" / "bm25.txt", EXAMPLE / "runs" / "tfidf.txt"


# ------------------------------------------------------------------------------------ origin


def test_an_origin_names_people_models_and_mixtures_and_unknown_is_never_people():
    alice, bob = people("alice"), people("bob")
    judge = model_origin(["gpt-4o-mini"], "judge_relevance@3f2a", "https://u:sk-secret@api.example.com:8443/v1")
    other_prompt = model_origin(["gpt-4o-mini"], "judge_relevance@9999", None)
    assert (alice.kind, alice.describe()) == ("people", "alice")
    assert judge.kind == "model" and judge.describe() == "gpt-4o-mini, judge_relevance@3f2a at api.example.com:8443"
    assert "sk-secret" not in json.dumps(judge.to_dict()) and "/v1" not in json.dumps(judge.to_dict())
    assert Origin().kind == "unknown" and Origin().describe() == "unknown" and not Origin().known
    assert not alice.same_as(bob) and alice.same_as(people("alice"))
    assert judge.same_as(
        model_origin(["gpt-4o-mini"], "judge_relevance@3f2a", "http://localhost:8000/v1")
    )  # host aside
    assert not judge.same_as(other_prompt)  # another prompt is another labeller
    assert not Origin().same_as(Origin())  # two unknowns are not known to be one labeller
    mixed = Origin(labellers=(*judge.labellers, *alice.labellers))
    assert mixed.kind == "mixed" and [lab.name for lab in mixed.shared_with(judge)] == ["gpt-4o-mini"]
    part_unknown = Origin(labellers=(*judge.labellers, Labeller(by="unknown", name="--keep labels of unknown origin")))
    assert not part_unknown.known and part_unknown.kind == "mixed"
    assert not Origin(labellers=(Labeller(by="unknown", name="x"),)).shared_with(
        Origin(labellers=(Labeller(by="unknown", name="x"),))
    )  # unknown parts are never "the same labeller"


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"),
        ("https://api.openai.com/v1", "api.openai.com"),
        (None, None),
        ("not a url", None),
        ("http://[::1]:11434/v1", "::1:11434"),
    ],
)
def test_the_endpoint_is_its_host_only(url, host):
    assert endpoint_host(url) == host


def test_origin_sidecars_round_trip_are_removed_when_stale_and_refused_when_broken(tmp_path):
    q = tmp_path / "labels.qrels"
    write_qrels(q, {"q1": {"d1": 2}}, origin=people("zoë", command="label"))
    assert json.loads(sidecar_path(q).read_text())["labellers"] == [
        {"by": "person", "name": "zoë", "prompt": None, "endpoint": None}
    ]
    assert read_qrels(q).origin.describe() == "zoë" and read_qrels(q).origin.kind == "people"
    assert q.read_text() == "q1 0 d1 2\n"  # the TREC file itself is untouched: plain readers see four columns
    write_qrels(q, {"q1": {"d1": 3}})  # rewritten by someone who does not say who: the old word would lie
    assert not sidecar_path(q).exists() and read_qrels(q).origin.kind == "unknown"
    write_origin(q, people("a"))
    sidecar_path(q).write_text('{"labellers": [{"by": "robot", "name": "x"}]}')
    with pytest.raises(InputError, match="labels.qrels.origin.json.*not an origin file"):
        read_qrels(q)
    assert read_origin(None).kind == "unknown" and read_origin("-").kind == "unknown"


@pytest.mark.parametrize(
    "side, said",
    [
        ('{"labellers": [{"by": "robot", "name": "x"}]}', "labellers\\[0\\]: by: 'robot'"),
        ('{"labellers": [{"by": "person"}]}', "labellers\\[0\\]: field 'name' is missing"),
        ('{"labellers": [{"by": "person", "name": 7}]}', "name: a string, got 7"),
        ('{"labellers": [{"by": "model", "name": "m", "prompt": ["p"]}]}', "prompt: a string or null"),
        ('{"labellers": [{"by": "person", "name": "a", "email": "a@b"}]}', "unknown field 'email'"),
        ('{"labellers": {"by": "person", "name": "a"}}', "labellers: a list"),
        ('{"record": "origin@2", "labellers": []}', "record: 'origin@2'"),
        ('{"labellers": [], "who": "me"}', "origin: unknown field 'who'"),
        ('{"labellers": [], "date": 20260101}', "date: a string or null, got 20260101"),
        ('[{"by": "person", "name": "a"}]', "origin: an object, got list"),
        ('{"labellers": ["alice"]}', "labellers\\[0\\]: an object, got str"),
        ('{"labellers": [', "Expecting value"),
    ],
)
def test_a_broken_sidecar_is_refused_naming_the_field(tmp_path, side, said):
    q = tmp_path / "labels.qrels"
    write_qrels(q, {"q1": {"d1": 2}})
    sidecar_path(q).write_text(side, encoding="utf-8")
    with pytest.raises(InputError, match="not an origin file ragassay can read \\(.*" + said):
        read_qrels(q)


def test_an_origin_read_back_equals_the_one_written_and_replace_keeps_the_rest(tmp_path):
    q = tmp_path / "labels.qrels"
    said = model_origin(["m1", "m2"], "judge@1", "http://127.0.0.1:8080/v1", command="judge")
    write_qrels(q, {"q1": {"d1": 2}}, origin=said)
    back = read_qrels(q).origin
    assert back == said and hash(back) == hash(said) and back.labellers[1].endpoint == "127.0.0.1:8080"
    moved = said.replace(command="remap")
    assert (moved.command, moved.labellers, moved.date) == (
        "remap",
        said.labellers,
        said.date,
    ) and said.command == "judge"
    assert said.labellers[0].replace(endpoint="h:1").describe() == "m1, judge@1 at h:1"
    with pytest.raises(ValueError, match="by: 'people'"):
        Labeller(by="people", name="a")


def test_jsonl_labels_say_who_made_them_on_each_line(tmp_path):
    judged = tmp_path / "j.jsonl"
    judged.write_text(
        "".join(
            json.dumps({"query_id": "q1", "chunk_id": c, "grade": 1, "model": "m", "prompt": "p@1"}) + "\n"
            for c in ("a", "b")
        )
    )
    assert read_qrels(judged).origin.describe() == "m, p@1"
    people_lines = tmp_path / "p.jsonl"
    people_lines.write_text('{"query_id": "q1", "chunk_id": "a", "grade": 1, "assessor": "Ana"}\n')
    assert read_qrels(people_lines).origin.describe() == "Ana"
    silent = tmp_path / "s.jsonl"  # one line says nothing: the file as a whole is not known
    silent.write_text(
        '{"query_id": "q1", "chunk_id": "a", "grade": 1, "model": "m"}\n'
        '{"query_id": "q1", "chunk_id": "b", "grade": 1}\n'
    )
    origin = read_qrels(silent).origin
    assert not origin.known and origin.kind == "mixed" and origin.describe() == "m + lines that name no labeller"
    none = tmp_path / "n.jsonl"
    none.write_text('{"query_id": "q1", "chunk_id": "b", "grade": 1}\n')
    assert read_qrels(none).origin.kind == "unknown" and read_qrels(none).origin.describe() == "unknown"
    assert origin_of_records([{"model": "m", "prompt": "p"}, {"model": "n", "prompt": "p"}]).describe() == "m, p + n, p"


# --------------------------------------------------------------------------------------- agree


def test_agree_names_both_sides_and_never_scores_one_labeller_against_itself(tmp_path, capsys):
    ag = agree(QRELS, SECOND)
    assert ag.names == ["example assessor 1", "example assessor 2"] and not ag.same_origin
    assert ag.to_dict()["kappa"] == pytest.approx(0.529, abs=1e-3)
    link = tmp_path / "again.txt"
    os.symlink(QRELS, link)
    hard = tmp_path / "hard.txt"
    copy = tmp_path / "copy.txt"  # the same labels copied without their sidecar: unknown, and compared
    copy.write_text(QRELS.read_text())
    os.link(copy, hard)
    for a, b in nonempty([(QRELS, QRELS), (QRELS, link), (copy, hard)]):
        same = agree(a, b)
        d = same.to_dict()
        assert same.same_origin and d["same_origin"] is True
        assert d["kappa"] is None and d["exact_agreement"] is None and d["kappa_binary"] is None
    assert main(["agree", str(QRELS), str(link)]) == 0
    out = capsys.readouterr().out
    assert "Both files were labelled by example assessor 1" in out and "1.000" not in out and "kappa 1" in out
    unknown = agree(QRELS, copy)
    assert not unknown.same_origin and unknown.names == ["example assessor 1", "unknown (copy.txt)"]
    people, people_hard = tmp_path / "people.txt", tmp_path / "people_hard.txt"  # a hard link to a file with a
    people.write_text(QRELS.read_text())  # sidecar: one file, one labeller
    Path(f"{people}.origin.json").write_text(Path(f"{QRELS}.origin.json").read_text())
    os.link(people, people_hard)  # named alike on both sides (its own path has no sidecar)
    linked = agree(people, people_hard)
    assert linked.same_origin and linked.names == ["example assessor 1", "example assessor 1"]
    assert unknown.to_dict()["kappa"] == pytest.approx(1.0)  # a person against an unknown file: measured, and named


def test_agree_on_files_with_no_query_or_no_pair_in_common_is_an_error_naming_both(tmp_path, capsys):
    other = tmp_path / "other.qrels"
    other.write_text("Q-ä/1 0 refund-01 1\nQ-ä/2 0 refund-02 0\n")
    with pytest.raises(InputError) as e:
        agree(QRELS, other)
    message = str(e.value)
    assert "no query ids in common" in message and str(QRELS) in message and "other.qrels" in message
    assert "q01, q02, q03, ..." in message and "Q-ä/1, Q-ä/2" in message
    assert main(["agree", str(QRELS), str(other)]) == 1
    assert "no query ids in common" in capsys.readouterr().err
    no_pair = tmp_path / "no_pair.qrels"
    no_pair.write_text("q01 0 a-chunk-nobody-judged 1\n")
    with pytest.raises(InputError, match="1 query ids are in both, but no .query, document. pair"):
        agree(QRELS, no_pair)


# ------------------------------------------------------------------------------------- joins


def test_a_join_counts_each_side_and_warns_only_for_the_sides_asked():
    j = Join.of("query ids", "the answers", ["a", "b", "c"], "the run", ["b", "c", "d", "e"], "ans.jsonl", "run.txt")
    assert j.matched == 2 and j.to_dict() == {
        "what": "query ids",
        "left": {"role": "the answers", "file": "ans.jsonl", "ids": 3, "matched": 2},
        "right": {"role": "the run", "file": "run.txt", "ids": 4, "matched": 2},
    }
    assert j.warning() == (
        "query ids: 1 of 3 in the answers are not in the run (e.g. a); "
        "2 of 4 in the run are not in the answers (e.g. d, e)"
    )
    assert j.warning(("left",)) == "query ids: 1 of 3 in the answers are not in the run (e.g. a)"
    assert j.warning(()) is None
    assert Join.of("ids", "x", ["1"], "y", ["1"]).warning() is None
    with pytest.raises(
        InputError,
        match=r"between the answers \(a.jsonl\) and the run \(r.txt\).*q1, q2, q3, \.\.\..*"
        r"the run: Q1, Q2, Q3, \.\.\.",
    ):
        Join.of(
            "query ids",
            "the answers",
            ["q1", "q2", "q3", "q4"],
            "the run",
            ["Q1", "Q2", "Q3", "Q4"],
            "a.jsonl",
            "r.txt",
        ).require_overlap()
    Join.of("ids", "x", [], "y", ["1"]).require_overlap()  # an empty side is its reader's business, not a join's


def _answers(path, ids):
    path.write_text(
        "".join(
            json.dumps({"id": i, "question": "How long do refunds take?", "reference": "5 days", "response": "5 days"})
            + "\n"
            for i in ids
        )
    )
    return path


def test_check_stops_before_any_call_when_the_answers_meet_no_query_of_the_run(tmp_path, capsys):
    answers = _answers(tmp_path / "answers.jsonl", ["gen-1", "gen-2"])
    with FakeLLM() as fake:
        code = main(
            [
                "check",
                str(answers),
                "--run",
                str(BM25),
                "--qrels",
                str(QRELS),
                "-o",
                str(tmp_path / "c.jsonl"),
                "--base-url",
                fake.url,
                "--model",
                "m",
                "--quiet",
            ]
        )
        assert fake.settled_calls() == 0
    err = capsys.readouterr().err
    assert code == 1 and "no query ids in common between the answers" in err and "gen-1, gen-2" in err
    assert "q01, q02, q03" in err and not (tmp_path / "c.jsonl").exists()


def test_check_counts_a_partial_join_and_says_nothing_about_zero_diagnosed(tmp_path, capsys):
    answers = _answers(tmp_path / "answers.jsonl", ["q01", "q02", "zz-not-in-the-run"])
    code = main(
        [
            "check",
            str(answers),
            "--run",
            str(BM25),
            "--qrels",
            str(QRELS),
            "-o",
            str(tmp_path / "c.jsonl"),
            "--format",
            "json",
        ]
    )
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert code == 0
    assert "warning: query ids: 1 of 3 in the answers are not in the run (e.g. zz-not-in-the-run)" in captured.err
    joins = result["diagnosis"]["joins"]
    assert [(j["left"]["ids"], j["left"]["matched"], j["right"]["ids"]) for j in joins] == [(3, 2, 22), (3, 2, 22)]
    assert result["diagnosis"]["diagnosed"] == 2 and result["diagnosis"]["not_diagnosed"] == 1
    from ragassay.metrics.labels import diagnosis

    none = diagnosis({"a": "correct"}, {"b": 1.0})
    assert none["diagnosed"] == 0 and none["advice"].startswith("no answer could be diagnosed")
    assert "no wrong answers" not in none["advice"]
    assert diagnosis({}, {})["advice"] == "no answer could be diagnosed: no answer was graded"


def test_judge_stops_before_any_call_when_the_queries_meet_no_query_of_the_run(tmp_path, capsys):
    queries = tmp_path / "queries.tsv"
    queries.write_text("1\tHow long do refunds take?\n2\tCan I return a tent?\n")
    with FakeLLM() as fake:
        code = main(
            [
                "judge",
                "--queries",
                str(queries),
                "--chunks",
                str(EXAMPLE / "chunks.jsonl"),
                "--run",
                str(BM25),
                "-o",
                str(tmp_path / "j.jsonl"),
                "--base-url",
                fake.url,
                "--model",
                "m",
                "--quiet",
            ]
        )
        assert fake.settled_calls() == 0
    err = capsys.readouterr().err
    assert code == 1 and "no query ids in common between the queries" in err and "(the queries: 1, 2;" in err
    assert not (tmp_path / "j.jsonl").exists()


# ------------------------------------------------------------------------ judge, report, label


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    d = tmp_path_factory.mktemp("judged")
    with FakeLLM() as fake:
        assert (
            main(
                [
                    "judge",
                    "--queries",
                    str(EXAMPLE / "queries.jsonl"),
                    "--chunks",
                    str(EXAMPLE / "chunks.jsonl"),
                    "--run",
                    str(BM25),
                    "--depth",
                    "3",
                    "-o",
                    str(d / "j.jsonl"),
                    "--qrels-out",
                    str(d / "graded.qrels"),
                    "--base-url",
                    fake.url,
                    "--model",
                    "fake-judge",
                    "--cache",
                    str(d / "c.sqlite"),
                    "--quiet",
                ]
            )
            == 0
        )
        host = fake.url.split("//")[1].split("/")[0]
    return d, host


def test_judges_qrels_say_the_model_and_reports_never_call_them_people(judged, tmp_path):
    d, host = judged
    origin = read_qrels(d / "graded.qrels").origin
    prompt = json.loads((d / "j.jsonl").read_text().splitlines()[0])["prompt"]
    assert origin.kind == "model" and origin.describe() == f"fake-judge, {prompt} at {host}"
    assert origin.command == "judge" and origin.date
    md = tmp_path / "r.md"
    assert (
        main(
            [
                "report",
                str(d / "j.jsonl"),
                "--qrels",
                str(d / "graded.qrels"),
                "--run",
                str(BM25),
                "-o",
                str(md),
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    text = md.read_text()
    assert "## Agreement: not measured" in text and "people" not in text.split("## Agreement")[1].split("##")[
        0
    ].replace("labelled by people", "")
    assert "kappa 1.000" not in text and "Cohen's kappa" not in text
    assert (
        main(
            [
                "report",
                str(d / "j.jsonl"),
                "--qrels",
                str(QRELS),
                "--run",
                str(BM25),
                "-o",
                str(md),
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    text = md.read_text()
    assert f"## Agreement: example assessor 1 against fake-judge, {prompt}" in text
    assert "Reference: example assessor 1 (people); candidate: fake-judge" in text
    # agree on the judge's records against its own qrels: one labeller, said so
    ag = agree(d / "graded.qrels", d / "j.jsonl")
    assert ag.same_origin and ag.to_dict()["kappa"] is None


def test_judges_qrels_with_people_kept_are_mixed_and_share_the_judge(tmp_path):
    keep = tmp_path / "keep.qrels"
    keep.write_text("q01 0 refund-01 3\n")
    write_origin(keep, people("rosa"))
    with FakeLLM() as fake:
        assert (
            main(
                [
                    "judge",
                    "--queries",
                    str(EXAMPLE / "queries.jsonl"),
                    "--chunks",
                    str(EXAMPLE / "chunks.jsonl"),
                    "--run",
                    str(BM25),
                    "--depth",
                    "2",
                    "--keep",
                    str(keep),
                    "-o",
                    str(tmp_path / "j.jsonl"),
                    "--qrels-out",
                    str(tmp_path / "g.qrels"),
                    "--base-url",
                    fake.url,
                    "--model",
                    "mm",
                    "--quiet",
                    "--no-cache",
                ]
            )
            == 0
        )
    origin = read_qrels(tmp_path / "g.qrels").origin
    assert origin.kind == "mixed" and {lab.name for lab in origin.labellers} == {"mm", "rosa"}
    assert agree(tmp_path / "g.qrels", tmp_path / "j.jsonl").same_origin  # the judge is on both sides
    with pytest.raises(InputError, match=r"no \(query, document\) pair was judged on both"):
        agree(keep, tmp_path / "j.jsonl")  # a kept pair is never judged: rosa and mm share no pair to compare
    unknown_keep = tmp_path / "keep2.qrels"
    unknown_keep.write_text("q01 0 refund-01 3\n")
    with FakeLLM() as fake:
        assert (
            main(
                [
                    "judge",
                    "--queries",
                    str(EXAMPLE / "queries.jsonl"),
                    "--chunks",
                    str(EXAMPLE / "chunks.jsonl"),
                    "--run",
                    str(BM25),
                    "--depth",
                    "2",
                    "--keep",
                    str(unknown_keep),
                    "-o",
                    str(tmp_path / "j2.jsonl"),
                    "--qrels-out",
                    str(tmp_path / "g2.qrels"),
                    "--base-url",
                    fake.url,
                    "--model",
                    "mm",
                    "--quiet",
                    "--no-cache",
                ]
            )
            == 0
        )
    origin = read_qrels(tmp_path / "g2.qrels").origin
    assert not origin.known and "--keep labels of unknown origin" in origin.describe()


def test_label_with_names_the_other_by_origin_and_refuses_the_labeller_itself(tmp_path):
    from ragassay.errors import UsageError
    from ragassay.product.labeling import open_label_book

    args = dict(queries=EXAMPLE / "queries.jsonl", chunks=EXAMPLE / "chunks.jsonl", run=BM25, depth=2, sample=4)
    book = open_label_book(
        "pairs", tmp_path / "me.qrels", assessor="example assessor 3", others=[SECOND, QRELS], **args
    )
    assert sorted(book.others) == ["example assessor 1", "example assessor 2"]
    copy = tmp_path / "nobody.qrels"
    copy.write_text(SECOND.read_text())
    book = open_label_book("pairs", tmp_path / "me2.qrels", assessor="x", others=[copy], **args)
    assert list(book.others) == ["unknown (nobody.qrels)"]
    with pytest.raises(UsageError, match="holds labels by example assessor 2, who is labelling now"):
        open_label_book("pairs", tmp_path / "me3.qrels", assessor="example assessor 2", others=[SECOND], **args)


# ------------------------------------------------------------------------------------ history


def _evaluate_json(tmp_path, capsys, qrels, run, name, *extra):
    assert main(["evaluate", str(qrels), str(run), "--format", "json", *extra]) == 0
    p = tmp_path / name
    p.write_text(capsys.readouterr().out)
    return p


def test_history_draws_a_change_only_within_one_run_on_one_qrels_with_one_setting(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    reordered = tmp_path / "reordered.qrels"  # the same labels in another order: not vouched for as the same
    reordered.write_text("".join(reversed(QRELS.read_text().splitlines(keepends=True))))
    files = [
        _evaluate_json(tmp_path, capsys, QRELS, BM25, "a.json"),
        _evaluate_json(tmp_path, capsys, QRELS, TFIDF, "b.json"),
        _evaluate_json(tmp_path, capsys, SECOND, BM25, "c.json"),
        _evaluate_json(tmp_path, capsys, QRELS, BM25, "d.json", "--missing", "zero"),
        _evaluate_json(tmp_path, capsys, reordered, BM25, "e.json"),
        _evaluate_json(tmp_path, capsys, QRELS, BM25, "f.json"),
    ]
    for f in nonempty(files):
        assert main(["track", str(f), "--db", str(db)]) == 0
    capsys.readouterr()
    trend = read_history(db, "ndcg@10").results
    assert [r.run for r in trend] == ["bm25", "tfidf", "bm25", "bm25", "bm25", "bm25"]
    assert [r.delta_previous for r in trend] == [None, None, None, None, None, 0.0]  # only f follows a
    assert trend[2].qrels["origin"]["describe"] == "example assessor 2"
    only = read_history(db, "ndcg@10", run="tfidf").results
    assert [r.id for r in only] == [2]
    assert main(["history", "--db", str(db), "--metric", "ndcg@10", "--run", "nope"]) == 1  # a name it has not
    assert (
        "no tracked result of the run 'nope' in this history; the runs it has: bm25, tfidf" in capsys.readouterr().err
    )


def test_a_compare_tracks_its_chosen_run_and_trends_with_an_evaluate_of_that_run(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    ev = _evaluate_json(tmp_path, capsys, QRELS, TFIDF, "ev.json", "--missing", "zero")
    assert (
        main(
            [
                "compare",
                str(QRELS),
                str(BM25),
                str(TFIDF),
                "--format",
                "json",
                "--permutations",
                "100",
                "--bootstrap",
                "100",
            ]
        )
        == 0
    )
    cmp = tmp_path / "cmp.json"
    cmp.write_text(capsys.readouterr().out)
    bm = _evaluate_json(tmp_path, capsys, QRELS, BM25, "bm.json", "--missing", "zero")
    for f in (ev, cmp, bm):
        assert main(["track", str(f), "--db", str(db)]) == 0
    assert "tracked result #3 (evaluate of bm25 on qrels" in capsys.readouterr().out
    trend = read_history(db, "ndcg@10").results
    assert [r.run for r in trend] == ["tfidf", "tfidf", "bm25"]
    assert trend[1].delta_previous == pytest.approx(0.0, abs=1e-12) and trend[2].delta_previous is None


def test_a_history_made_before_runs_were_kept_is_read_and_never_trended(tmp_path):
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.execute("""CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, label TEXT,
                   commit_id TEXT, kind TEXT NOT NULL, source TEXT, metrics TEXT NOT NULL, settings TEXT)""")
    for v in (0.5, 0.7):
        con.execute(
            "INSERT INTO results (created, kind, source, metrics, settings) VALUES (0, 'evaluate', 'x', ?, '{}')",
            (json.dumps({"ndcg@10": v}),),
        )
    con.commit()
    con.close()
    trend = read_history(db, "ndcg@10").results
    assert [r.value for r in trend] == [0.5, 0.7] and [r.delta_previous for r in trend] == [None, None]
    History(db).close()  # opened twice: the columns are added once
    assert {row[1] for row in sqlite3.connect(db).execute("PRAGMA table_info(results)")} >= {"run", "qrels"}


def test_track_and_gate_refuse_an_agreement_of_one_labeller(tmp_path, capsys):
    assert main(["agree", str(QRELS), str(QRELS), "--format", "json"]) == 0
    same = tmp_path / "same.json"
    same.write_text(capsys.readouterr().out)
    assert json.loads(same.read_text())["same_origin"] is True
    assert main(["track", str(same), "--db", str(tmp_path / "h.sqlite")]) == 1
    assert "share a labeller: it holds no agreement to track or gate" in capsys.readouterr().err
    assert main(["gate", str(same), "--min", "kappa=0.5"]) == 1
    assert "share a labeller" in capsys.readouterr().err
    assert main(["agree", str(QRELS), str(SECOND), "--format", "json"]) == 0
    two = tmp_path / "two.json"
    two.write_text(capsys.readouterr().out)
    assert main(["gate", str(two), "--min", "kappa=0.5"]) == 0
