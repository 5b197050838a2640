"""The README's "Your own data" steps walked as chains, from the outside (the CLI only), with
ids that meet fully, partly and not at all, and labels of every origin:

1. joins are counted (each side's count, a warning on a partial overlap, an error naming both files
   and a few ids of each when nothing meets, before any LLM call; no sentence about zero items);
2. labels keep who made them (origin sidecars, JSONL per line; one labeller against itself: no kappa);
3. history compares like with like (one run, one qrels, one set of settings);
4. declared arguments are text, never opened as files.

Every LLM stage runs against tests/fake_llm.py's local server; nothing touches the network.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from helpers import cli, nonempty, stop_process

# ----------------------------------------------------------------------------------------- helpers


def llm_args(fake: FakeLLM, model: str = "m") -> list[str]:
    """The fake server as the endpoint (a base URL alone is enough for a local server: no key)."""
    return ["--base-url", fake.url, "--model", model, "--quiet", "--no-cache"]


def host_of(fake: FakeLLM) -> str:
    return fake.url.split("//")[1].split("/")[0]


def origin_of(path: Path) -> dict:
    return json.loads(Path(f"{path}.origin.json").read_text())


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]


def write_run(path: Path, rows: list[tuple[str, str, float]], tag: str) -> Path:
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} {tag}\n" for i, (q, d, s) in enumerate(rows)), encoding="utf-8")
    return path


def subset_run(src: Path, dst: Path, keep: set[str], extra_prefix: str | None = None, extra_n: int = 0) -> Path:
    """The lines of ``src`` whose query is in ``keep``, plus those of its first ``extra_n`` queries renamed
    with ``extra_prefix`` (q01 -> zz1: queries the other side does not know)."""
    rows = src.read_text().splitlines()
    kept = [r for r in rows if r.split()[0] in keep]
    extra = []
    if extra_prefix:
        firsts = sorted({r.split()[0] for r in rows if r.startswith("q0")})[:extra_n]
        extra = [extra_prefix + r[len("q0") :] for r in rows if r.split()[0] in firsts]
    dst.write_text("\n".join(kept + extra) + "\n")
    return dst


def renamed(src: Path, dst: Path, old: str, new: str) -> Path:
    """``src`` with every line's leading ``old`` replaced by ``new`` (another id scheme)."""
    dst.write_text(
        "".join(new + x[len(old) :] if x.startswith(old) else x for x in src.read_text().splitlines(keepends=True))
    )
    return dst


@pytest.fixture(autouse=True)
def _no_endpoint_from_the_environment(monkeypatch):
    """No test inherits an endpoint, a key or a model from the machine."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    """The bundled example as `ragassay demo --copy DIR` writes it."""
    d = tmp_path_factory.mktemp("example") / "ex"
    said = cli("demo", "--copy", d)
    assert said.code == 0, said.err
    return d


@pytest.fixture
def work(tmp_path, monkeypatch, example) -> Path:
    """A fresh working directory holding the example as ``ex/`` (its origin sidecars too); paths in
    messages are the relative paths given."""
    shutil.copytree(example, tmp_path / "ex")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def judged(tmp_path_factory, example) -> dict:
    """judge on the example's bm25 run, top 3 (66 pairs), by model "m" of the fake server: the
    judgments, the judge's own qrels (with their sidecar) and the endpoint's host."""
    d = tmp_path_factory.mktemp("judged")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(d / "cache"))
        with FakeLLM() as fake:
            said = cli(
                "judge",
                "--queries",
                example / "queries.jsonl",
                "--chunks",
                example / "chunks.jsonl",
                "--run",
                example / "runs" / "bm25.txt",
                "--depth",
                "3",
                "-o",
                d / "j.jsonl",
                "--qrels-out",
                d / "g.qrels",
                *llm_args(fake),
            )
            assert said.code == 0, said.err
            host = host_of(fake)
    return {"judgments": d / "j.jsonl", "qrels": d / "g.qrels", "host": host}


def bring(judged: dict, where: Path) -> tuple[str, str]:
    """The judged files copied (with the qrels' sidecar) into ``where``: their relative names."""
    shutil.copy(judged["judgments"], where / "j.jsonl")
    shutil.copy(judged["qrels"], where / "g.qrels")
    shutil.copy(f"{judged['qrels']}.origin.json", where / "g.qrels.origin.json")
    return "j.jsonl", "g.qrels"


JUDGE_PROMPT = re.compile(r"judge_relevance@[0-9a-f]{8}")
CHECK_PROMPT = re.compile(r"check_answer@[0-9a-f]{8}")


# ------------------------------------------------------------------------- the example's origins


def test_the_examples_hand_labels_name_their_two_assessors(example):
    """qrels.txt and answers_human_labels.jsonl: example assessor 1; qrels_second_assessor.txt: 2."""
    expected = {
        "qrels.txt": "example assessor 1",
        "answers_human_labels.jsonl": "example assessor 1",
        "qrels_second_assessor.txt": "example assessor 2",
    }
    for name, person in nonempty(expected.items()):
        origin = origin_of(example / name)
        assert [(x["by"], x["name"]) for x in origin["labellers"]] == [("person", person)], name
    assert not Path(f"{example / 'runs' / 'bm25.txt'}.origin.json").exists()


# ---------------------------------------------------------------------------------------- agree


def test_agree_people_against_people_names_both_and_counts_the_join(work):
    said = cli("agree", "ex/qrels.txt", "ex/qrels_second_assessor.txt")
    assert said.code == 0 and said.err == ""
    assert said.out.splitlines()[0] == (
        "reference: example assessor 1 (people), 157 labels; candidate: "
        "example assessor 2 (people), 65 labels; 65 pairs labelled by both"
    )
    assert re.search(r"Cohen's kappa\s+0\.5288", said.out)
    j = cli("agree", "ex/qrels.txt", "ex/qrels_second_assessor.txt", "--format", "json").json
    assert j["same_origin"] is False and j["names"] == ["example assessor 1", "example assessor 2"]
    assert (j["origins"]["reference"]["kind"], j["origins"]["candidate"]["kind"]) == ("people", "people")
    assert j["join"] == {
        "what": "query ids",
        "left": {"role": "the reference", "file": "ex/qrels.txt", "ids": 22, "matched": 22},
        "right": {"role": "the candidate", "file": "ex/qrels_second_assessor.txt", "ids": 22, "matched": 22},
    }
    assert round(j["kappa"], 4) == 0.5288


@pytest.mark.parametrize("how", ["the same path twice", "a hard link"])
def test_agree_of_one_file_with_itself_says_so_and_shows_no_kappa(work, how):
    other = "ex/qrels.txt"
    if how == "a hard link":
        os.link("ex/qrels.txt", "hard.txt")
        other = "hard.txt"
    said = cli("agree", "ex/qrels.txt", other)
    assert said.code == 0
    assert "Both files were labelled by example assessor 1" in said.out
    assert "Cohen's kappa" not in said.out and not re.search(r"kappa[^\n]*\d\.\d{3}", said.out)
    j = cli("agree", "ex/qrels.txt", other, "--format", "json").json
    assert j["same_origin"] is True and j["kappa"] is None and j["kappa_linear"] is None
    assert j["exact_agreement"] is None and j["pairs"] == 157


def test_agree_of_a_file_with_a_symlink_to_it_says_they_share_a_labeller(work):
    os.symlink("ex/qrels.txt", "link.txt")
    said = cli("agree", "ex/qrels.txt", "link.txt")
    assert said.code == 0 and "Both files were labelled by example assessor 1" in said.out
    j = cli("agree", "ex/qrels.txt", "link.txt", "--format", "json").json
    assert j["same_origin"] is True and j["kappa"] is None


def test_a_symlink_to_a_labelled_file_is_named_by_that_files_origin(work):
    os.symlink("ex/qrels.txt", "link.txt")
    j = cli("agree", "ex/qrels.txt", "link.txt", "--format", "json").json
    assert j["origins"]["candidate"]["describe"] == "example assessor 1"
    said = cli("agree", "ex/qrels.txt", "link.txt")
    assert "unknown" not in said.out.splitlines()[0]


def test_an_agreement_of_one_labeller_is_refused_by_track_and_gate(work):
    Path("same.json").write_text(cli("agree", "ex/qrels.txt", "ex/qrels.txt", "--format", "json").out)
    tracked = cli("track", "same.json", "--db", "h.sqlite")
    assert tracked.code == 1
    assert tracked.err.strip() == (
        "ragassay track: error: same.json: this agree result compares example assessor 1 "
        "and example assessor 1, which share a labeller: it holds no agreement to track "
        "or gate"
    )
    gated = cli("gate", "same.json", "--min", "kappa=0.5")
    assert gated.code == 1 and "share a labeller" in gated.err and "gate passed" not in gated.out
    assert cli("history", "--db", "h.sqlite").out.count("agree") == 0
    # two people: tracked and gated
    Path("two.json").write_text(cli("agree", "ex/qrels.txt", "ex/qrels_second_assessor.txt", "--format", "json").out)
    ok = cli("track", "two.json", "--db", "h.sqlite")
    assert ok.code == 0 and "agree of example assessor 1 vs example assessor 2" in ok.out
    passed = cli("gate", "two.json", "--min", "kappa=0.5")
    assert passed.code == 0 and "agree result of example assessor 1 vs example assessor 2" in passed.out
    assert cli("gate", "two.json", "--min", "kappa=0.6").code == 1


def test_agree_the_judges_own_qrels_against_its_judgments_is_one_labeller(work, judged):
    j_file, g_file = bring(judged, work)
    origin = origin_of(Path(g_file))
    assert origin["command"] == "judge" and len(origin["labellers"]) == 1
    lab = origin["labellers"][0]
    assert (lab["by"], lab["name"], lab["endpoint"]) == ("model", "m", judged["host"])
    assert JUDGE_PROMPT.fullmatch(lab["prompt"]) and origin["date"]
    assert {(r["model"], r["prompt"]) for r in lines(Path(j_file))} == {("m", lab["prompt"])}
    said = cli("agree", g_file, j_file)
    assert said.code == 0
    assert said.out.startswith(
        f"reference: m, {lab['prompt']} at {judged['host']} (model), 66 labels; candidate: "
        f"m, {lab['prompt']} (model), 66 labels; 66 pairs labelled by both."
    )
    assert f"Both files were labelled by m, {lab['prompt']}" in said.out and "Cohen's kappa" not in said.out
    Path("own.json").write_text(cli("agree", g_file, j_file, "--format", "json").out)
    assert json.loads(Path("own.json").read_text())["kappa"] is None
    assert cli("gate", "own.json", "--min", "kappa=0").code == 1
    assert cli("track", "own.json", "--db", "h.sqlite").code == 1


@pytest.mark.parametrize("people", ["ex/qrels.txt", "ex/qrels_second_assessor.txt"])
@pytest.mark.parametrize("model_side", ["g.qrels", "j.jsonl"])
def test_agree_people_against_the_model_shows_kappa_and_names_both(work, judged, people, model_side):
    bring(judged, work)
    person = "example assessor 1" if people == "ex/qrels.txt" else "example assessor 2"
    j = cli("agree", people, model_side, "--format", "json").json
    assert j["same_origin"] is False and isinstance(j["kappa"], float)
    assert j["origins"]["reference"]["describe"] == person
    assert j["origins"]["candidate"]["kind"] == "model"
    assert j["origins"]["candidate"]["describe"].startswith("m, judge_relevance@")
    assert j["join"]["left"]["ids"] == 22 and j["join"]["right"] == {
        "role": "the candidate",
        "file": model_side,
        "ids": 22,
        "matched": 22,
    }
    said = cli("agree", people, model_side)
    assert said.out.startswith(f"reference: {person} (people), ")
    assert re.search(r"Cohen's kappa\s+-?\d\.\d{4}", said.out)


def test_agree_unknown_is_never_people_and_still_measured(work):
    shutil.copy("ex/qrels.txt", "u1.txt")  # the same labels with no origin: nobody vouches for who made them
    shutil.copy("ex/qrels_second_assessor.txt", "u2.txt")
    said = cli("agree", "u2.txt", "ex/qrels.txt")
    assert said.out.splitlines()[0] == (
        "reference: unknown (u2.txt), 65 labels; candidate: example "
        "assessor 1 (people), 157 labels; 65 pairs labelled by both"
    )
    j = cli("agree", "u1.txt", "u2.txt", "--format", "json").json
    assert [j["origins"][s]["kind"] for s in ("reference", "candidate")] == ["unknown", "unknown"]
    assert j["same_origin"] is False and round(j["kappa"], 4) == 0.5288
    assert "people" not in json.dumps(j["origins"])


def test_agree_unknown_against_the_model_is_measured(work, judged):
    bring(judged, work)
    shutil.copy("ex/qrels.txt", "u1.txt")
    j = cli("agree", "u1.txt", "g.qrels", "--format", "json").json
    assert (j["origins"]["reference"]["kind"], j["origins"]["candidate"]["kind"]) == ("unknown", "model")
    assert j["same_origin"] is False and isinstance(j["kappa"], float) and j["pairs"] == 66
    said = cli("agree", "u1.txt", "g.qrels")
    assert said.out.startswith("reference: unknown (u1.txt), 157 labels; candidate: m, judge_relevance@")


def test_agree_one_model_one_prompt_on_two_runs_is_one_labeller_another_prompt_is_not(work, judged):
    bring(judged, work)
    with FakeLLM() as fake:
        for run, out, extra in (("tfidf", "t", []), ("bm25", "cf", ["--cache-friendly"])):
            said = cli(
                "judge",
                "--queries",
                "ex/queries.jsonl",
                "--chunks",
                "ex/chunks.jsonl",
                "--run",
                f"ex/runs/{run}.txt",
                "--depth",
                "3",
                "-o",
                f"{out}.jsonl",
                "--qrels-out",
                f"{out}.qrels",
                *extra,
                *llm_args(fake),
            )
            assert said.code == 0, said.err
    # the same model and prompt judging the tfidf run: the pairs both runs share got the same grader
    same = cli("agree", "g.qrels", "t.qrels", "--format", "json").json
    assert same["same_origin"] is True and same["kappa"] is None
    assert same["pairs"] == 45
    other = cli("agree", "g.qrels", "cf.qrels", "--format", "json").json
    assert other["same_origin"] is False and isinstance(other["kappa"], float)
    assert other["origins"]["candidate"]["labellers"][0]["prompt"].startswith("judge_relevance_examples@")


def test_agree_ids_meeting_partly_are_counted_in_the_json(work):
    Path("cand.txt").write_text(
        "".join(
            x + "\n"
            for x in Path("ex/qrels_second_assessor.txt").read_text().splitlines()
            if x.split()[0] in {"q01", "q02", "q03", "q04", "q05"}
        )
        + "zz1 0 refund-01 2\nzz2 0 refund-01 2\n"
    )
    said = cli("agree", "ex/qrels.txt", "cand.txt", "--format", "json")
    assert said.code == 0
    assert said.json["join"] == {
        "what": "query ids",
        "left": {"role": "the reference", "file": "ex/qrels.txt", "ids": 22, "matched": 5},
        "right": {"role": "the candidate", "file": "cand.txt", "ids": 7, "matched": 5},
    }
    assert said.json["only_candidate"] == 2


def test_agree_ids_meeting_partly_warn_with_counts_and_the_text_counts_them(work):
    Path("cand.txt").write_text(
        "".join(
            x + "\n"
            for x in Path("ex/qrels_second_assessor.txt").read_text().splitlines()
            if x.split()[0] in {"q01", "q02", "q03", "q04", "q05"}
        )
        + "zz1 0 refund-01 2\nzz2 0 refund-01 2\n"
    )
    said = cli("agree", "ex/qrels.txt", "cand.txt")
    assert said.code == 0
    assert "warning" in said.err and "17 of 22" in said.err and "2 of 7" in said.err
    assert re.search(r"\b5 of 22\b", said.out) and re.search(r"\b5 of 7\b", said.out)


def test_agree_with_no_query_in_common_names_both_files_and_ids(work):
    renamed(Path("ex/qrels_second_assessor.txt"), Path("other.txt"), "q", "Q")  # ids differing by case only
    said = cli("agree", "ex/qrels.txt", "other.txt")
    assert said.code == 1 and said.out == ""
    assert said.err.strip() == (
        "ragassay agree: error: no query ids in common between the reference (ex/qrels.txt) "
        "and the candidate (other.txt) (the reference: q01, q02, q03, ...; the candidate: Q01, "
        "Q02, Q03, ...); are they from the same set?"
    )


# ---------------------------------------------------------------------------------------- judge


def test_judge_ids_meeting_partly_are_counted_warned_and_only_the_met_are_judged(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    with FakeLLM() as fake:
        said = cli(
            "judge",
            "--queries",
            "ex/queries.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "part.txt",
            "--depth",
            "2",
            "-o",
            "j.jsonl",
            "--qrels-out",
            "g.qrels",
            *llm_args(fake),
        )
        calls = fake.settled_calls()
    assert said.code == 0
    assert said.out.splitlines()[0] == "queries: 5 of 22 in the queries file are in the run (7 queries)"
    assert said.err.strip() == (
        "warning: query ids: 17 of 22 in the queries are not in the run (e.g. q06, q07, q08, "
        "...); 2 of 7 in the run are not in the queries (e.g. zz1, zz2)"
    )
    assert calls == 10 and len(lines(Path("j.jsonl"))) == 10
    assert {r["query_id"] for r in lines(Path("j.jsonl"))} == {"q01", "q02", "q03", "q04", "q05"}
    with FakeLLM() as fake:
        j = cli(
            "judge",
            "--queries",
            "ex/queries.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "part.txt",
            "--depth",
            "2",
            "-o",
            "j.jsonl",
            "--format",
            "json",
            *llm_args(fake),
        ).json
        assert fake.settled_calls() == 0  # all done already
    assert j["join"] == {
        "what": "query ids",
        "left": {"role": "the queries", "file": "ex/queries.jsonl", "ids": 22, "matched": 5},
        "right": {"role": "the run", "file": "part.txt", "ids": 7, "matched": 5},
    }


@pytest.mark.parametrize("scheme", ["generated", "case", "suffix"])
def test_judge_with_no_query_in_common_stops_before_any_call(work, scheme):
    new = {"generated": "q-3f2a", "case": "Q", "suffix": None}[scheme]
    if new:
        renamed(Path("ex/runs/bm25.txt"), Path("run.txt"), "q", new)
    else:  # q01 -> q01a: a suffix, never the same id
        Path("run.txt").write_text(
            "".join(
                x.split(" ", 1)[0] + "a " + x.split(" ", 1)[1] + "\n"
                for x in Path("ex/runs/bm25.txt").read_text().splitlines()
            )
        )
    first = Path("run.txt").read_text().split()[0]
    with FakeLLM() as fake:
        said = cli(
            "judge",
            "--queries",
            "ex/queries.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "run.txt",
            "-o",
            "j.jsonl",
            "--qrels-out",
            "g.qrels",
            *llm_args(fake),
        )
        assert fake.settled_calls() == 0
    assert said.code == 1
    assert said.err.startswith(
        "ragassay judge: error: no query ids in common between the queries (ex/queries.jsonl) "
        "and the run (run.txt) (the queries: q01, q02, q03, ...; the run: "
    )
    assert first in said.err
    assert not Path("j.jsonl").exists() and not Path("g.qrels").exists() and not Path("g.qrels.origin.json").exists()


def test_judge_keeping_peoples_labels_writes_a_mixed_origin_that_shares_the_person(work):
    with FakeLLM() as fake:
        said = cli(
            "judge",
            "--queries",
            "ex/queries.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "ex/runs/bm25.txt",
            "--depth",
            "10",
            "--keep",
            "ex/qrels.txt",
            "-o",
            "j.jsonl",
            "--qrels-out",
            "gk.qrels",
            *llm_args(fake),
        )
        calls = fake.settled_calls()
    assert said.code == 0
    assert "pairs: 202 (137 kept from --keep, 0 already done, 0 decided by rule, 0 errors)" in said.out
    assert calls == 65
    labellers = origin_of(Path("gk.qrels"))["labellers"]
    assert sorted((x["by"], x["name"]) for x in labellers) == [("model", "m"), ("person", "example assessor 1")]
    # the person whose labels were kept: one labeller on the pairs both hold
    same = cli("agree", "ex/qrels.txt", "gk.qrels", "--format", "json").json
    assert same["same_origin"] is True and same["kappa"] is None
    # another person: measured
    other = cli("agree", "ex/qrels_second_assessor.txt", "gk.qrels", "--format", "json").json
    assert other["same_origin"] is False and isinstance(other["kappa"], float)
    assert other["origins"]["candidate"]["kind"] == "mixed"


def test_a_jurys_qrels_name_the_endpoint_of_its_models(work):
    with FakeLLM() as fake:
        said = cli(
            "judge",
            "--queries",
            "ex/queries.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "ex/runs/bm25.txt",
            "--depth",
            "1",
            "-o",
            "jj.jsonl",
            "--qrels-out",
            "gj.qrels",
            "--base-url",
            fake.url,
            "--model",
            "a",
            "--model",
            "b",
            "--quiet",
            "--no-cache",
        )
        host = host_of(fake)
    assert said.code == 0
    labellers = origin_of(Path("gj.qrels"))["labellers"]
    assert labellers and all(x["endpoint"] == host for x in labellers)


# ---------------------------------------------------------------------------------------- check


def test_check_diagnosis_counts_both_joins_and_human_labels_are_named(work):
    with FakeLLM() as fake:
        said = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "ex/runs/bm25.txt",
            "--qrels",
            "ex/qrels.txt",
            "--human",
            "ex/answers_human_labels.jsonl",
            "-o",
            "c.jsonl",
            *llm_args(fake),
        )
        calls = fake.settled_calls()
    assert said.code == 0 and calls == 14 and said.err == ""
    out = said.out
    assert "diagnosis of 16 answers: recall@10 >= 0.5 is good retrieval; a good answer is a correct one" in out
    assert "query ids: 16 of 16 in the answers are in the run (22)" in out
    assert "query ids: 16 of 16 in the answers are in the qrels (22)" in out
    assert re.search(
        r"agreement on 10 answers, example assessor 1 \(people\) vs m, check_answer@[0-9a-f]{8}: "
        r"Cohen's kappa -?\d\.\d{3}",
        out,
    )
    records = lines(Path("c.jsonl"))
    assert len(records) == 16
    assert {r["model"] for r in records if r["decided_by"] == "llm"} == {"m"}
    assert all(CHECK_PROMPT.fullmatch(r["prompt"]) for r in nonempty(r for r in records if r["decided_by"] == "llm"))
    with FakeLLM() as fake:
        j = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "ex/runs/bm25.txt",
            "--qrels",
            "ex/qrels.txt",
            "--human",
            "ex/answers_human_labels.jsonl",
            "-o",
            "c.jsonl",
            "--format",
            "json",
            *llm_args(fake),
        ).json
    d = j["diagnosis"]
    assert d["diagnosed"] == 16 and d["not_diagnosed"] == 0
    assert [(x["right"]["role"], x["right"]["file"], x["right"]["ids"], x["left"]["matched"]) for x in d["joins"]] == [
        ("the run", "ex/runs/bm25.txt", 22, 16),
        ("the qrels", "ex/qrels.txt", 22, 16),
    ]
    assert sum(c["count"] for c in d["cells"].values()) == 16
    h = j["human"]
    assert h["pairs"] == 10 and h["same_origin"] is False
    assert h["origin"]["describe"] == "example assessor 1" and h["origin"]["kind"] == "people"
    assert h["grader"]["kind"] == "model" and h["grader"]["labellers"][0]["name"] == "m"


def test_check_rules_only_on_the_example_is_the_readmes_diagnosis(work):
    said = cli(
        "check",
        "ex/answers.jsonl",
        "--chunks",
        "ex/chunks.jsonl",
        "--run",
        "ex/runs/bm25.txt",
        "--qrels",
        "ex/qrels.txt",
        "-o",
        "checks.jsonl",
    )
    assert said.code == 3
    expected = (
        "diagnosis of 2 answers: recall@10 >= 0.5 is good retrieval; a good answer is a correct one\n"
        "query ids: 16 of 16 in the answers are in the run (22)\n"
        "query ids: 16 of 16 in the answers are in the qrels (22)\n"
        "                good answer   bad answer\n"
        "--------------  ------------  ----------\n"
        "good retrieval  2 (q06, q17)  0\n"
        "bad retrieval   0             0\n"
        "=> no wrong answers among the 2 diagnosed questions\n"
    )
    assert expected in said.out


@pytest.mark.parametrize("against", ["run", "qrels"])
def test_check_answers_of_another_id_scheme_stop_before_any_call(work, against):
    renamed(Path(f"ex/{'runs/bm25.txt' if against == 'run' else 'qrels.txt'}"), Path("other.txt"), "q", "q-3f2a")
    run = "other.txt" if against == "run" else "ex/runs/bm25.txt"
    qrels = "other.txt" if against == "qrels" else "ex/qrels.txt"
    with FakeLLM() as fake:
        said = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            run,
            "--qrels",
            qrels,
            "-o",
            "c.jsonl",
            *llm_args(fake),
        )
        assert fake.settled_calls() == 0
    assert said.code == 1 and not Path("c.jsonl").exists()
    way_out = (
        (
            " If the answers ask the queries' questions under other ids, give the queries (--queries FILE; "
            "queries= in Python) to match them by question text"
        )
        if against == "run"
        else ""
    )
    assert said.err.strip() == (
        f"ragassay check: error: no query ids in common between the answers (ex/answers.jsonl) "
        f"and the {against} (other.txt) (the answers: q01, q02, q03, ...; the {against}: "
        f"q-3f2a01, q-3f2a02, q-3f2a03, ...); are they from the same set?{way_out}"
    )


def test_check_answers_meeting_the_run_partly_are_warned_and_counted(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    said = cli(
        "check",
        "ex/answers.jsonl",
        "--chunks",
        "ex/chunks.jsonl",
        "--run",
        "part.txt",
        "--qrels",
        "ex/qrels.txt",
        "-o",
        "c.jsonl",
    )
    assert said.code == 3
    assert "warning: query ids: 11 of 16 in the answers are not in the run (e.g. q06, q07, q09, ...)" in said.err
    assert "query ids: 5 of 16 in the answers are in the run (7)" in said.out
    assert "query ids: 16 of 16 in the answers are in the qrels (22)" in said.out


def test_check_never_diagnoses_answers_the_run_does_not_hold(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    j = cli(
        "check",
        "ex/answers.jsonl",
        "--chunks",
        "ex/chunks.jsonl",
        "--run",
        "part.txt",
        "--qrels",
        "ex/qrels.txt",
        "-o",
        "c.jsonl",
        "--format",
        "json",
    ).json
    d = j["diagnosis"]
    examples = {x for c in d["cells"].values() for x in c["examples"]}
    assert examples <= {"q01", "q02", "q03", "q04", "q05"}
    assert d["diagnosed"] == 0 and d["not_diagnosed"] == 2


def test_check_with_nothing_graded_says_nothing_about_zero_answers(work):
    Path("ans14.jsonl").write_text(
        "".join(
            x + "\n"
            for x in Path("ex/answers.jsonl").read_text().splitlines()
            if json.loads(x)["id"] not in ("q06", "q17")
        )
    )
    said = cli(
        "check",
        "ans14.jsonl",
        "--chunks",
        "ex/chunks.jsonl",
        "--run",
        "ex/runs/bm25.txt",
        "--qrels",
        "ex/qrels.txt",
        "-o",
        "c.jsonl",
    )
    assert said.code == 1  # nothing succeeded
    assert "0 of 14 answers graded; 14 waiting for an LLM verdict; 0 errors (excluded from rates)" in said.out
    assert "diagnosis of 0 answers" not in said.out
    assert "mean response words: \n" not in said.out and not said.out.rstrip().endswith("mean response words:")
    assert "no wrong answers" not in said.out


def test_check_human_labels_of_a_person_named_per_line(work):
    Path("erin.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "label": lab, "assessor": "erin"}) + "\n"
            for i, lab in (("q01", "correct"), ("q02", "hallucinated"), ("q06", "correct"))
        )
    )
    with FakeLLM() as fake:
        said = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--human",
            "erin.jsonl",
            "-o",
            "c.jsonl",
            *llm_args(fake),
        )
    assert said.code == 0
    assert re.search(r"agreement on 3 answers, erin \(people\) vs m, check_answer@[0-9a-f]{8}: Cohen's kappa", said.out)
    assert "erin only" in said.out


def test_check_human_labels_with_no_answer_in_common_stop_before_any_call(work):
    Path("h.jsonl").write_text('{"id": "zz1", "label": "correct"}\n{"id": "zz2", "label": "partial"}\n')
    with FakeLLM() as fake:
        said = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--human",
            "h.jsonl",
            "-o",
            "c.jsonl",
            *llm_args(fake),
        )
        assert fake.settled_calls() == 0
    assert said.code == 1 and not Path("c.jsonl").exists()
    assert "no answer ids in common between the answers (ex/answers.jsonl) and " in said.err
    assert "(h.jsonl)" in said.err and "q01, q02, q03, ..." in said.err and "zz1, zz2" in said.err


def test_check_never_calls_labels_of_no_origin_peoples(work):
    Path("h.jsonl").write_text('{"id": "zz1", "label": "correct"}\n{"id": "zz2", "label": "partial"}\n')
    said = cli("check", "ex/answers.jsonl", "--chunks", "ex/chunks.jsonl", "--human", "h.jsonl", "-o", "c.jsonl")
    assert said.code == 1 and "(h.jsonl)" in said.err
    assert "people" not in said.err


def test_check_human_labels_meeting_partly_are_counted_and_warned(work):
    Path("hpart.jsonl").write_text(
        '{"id": "q01", "label": "correct"}\n{"id": "q02", "label": "partial"}\n{"id": "zz9", "label": "correct"}\n'
    )
    with FakeLLM() as fake:
        said = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--human",
            "hpart.jsonl",
            "-o",
            "c.jsonl",
            *llm_args(fake),
        )
        j = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--human",
            "hpart.jsonl",
            "-o",
            "c.jsonl",
            "--format",
            "json",
            *llm_args(fake),
        ).json
    assert said.code == 0
    assert "warning" in said.err and "zz9" in said.err and "1 of 3" in said.err
    assert re.search(r"\b2 of 3\b", said.out) and re.search(r"\b2 of 16\b", said.out)
    join = j["human"]["join"]
    assert (join["left"]["ids"], join["left"]["matched"], join["right"]["ids"], join["right"]["matched"]) in (
        (16, 2, 3, 2),
        (3, 2, 16, 2),
    )


def test_check_against_its_own_labels_is_one_labeller(work):
    with FakeLLM() as fake:
        assert (
            cli("check", "ex/answers.jsonl", "--chunks", "ex/chunks.jsonl", "-o", "c.jsonl", *llm_args(fake)).code == 0
        )
        Path("cm.jsonl").write_text(
            "".join(
                json.dumps({k: r[k] for k in ("id", "label", "model", "prompt")}) + "\n" for r in lines(Path("c.jsonl"))
            )
        )
        said = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--human",
            "cm.jsonl",
            "-o",
            "c2.jsonl",
            *llm_args(fake),
        )
        j = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--human",
            "cm.jsonl",
            "-o",
            "c2.jsonl",
            "--format",
            "json",
            *llm_args(fake),
        ).json
    assert j["human"]["origin"]["kind"] in ("model", "mixed")  # the rule-decided lines name no labeller
    assert j["human"]["same_origin"] is True and j["human"]["kappa"] is None
    agreement = [line for line in said.out.splitlines() if line.startswith("agreement")]
    assert agreement and agreement[0].startswith("agreement not measured") and "kappa" not in said.out
    assert "unknown" not in agreement[0]


def test_check_answers_with_numeric_ids_meet_the_runs_digits(work):
    Path("answers.jsonl").write_text(
        json.dumps({"id": 7, "question": "How long do refunds take?", "reference": "30 days", "response": "30 days"})
        + "\n"
    )
    write_run(Path("run.txt"), [("7", "refund-01", 2.0)], "r")
    Path("qrels.txt").write_text("7 0 refund-01 3\n")
    said = cli("check", "answers.jsonl", "--run", "run.txt", "--qrels", "qrels.txt", "-o", "c.jsonl")
    assert said.code == 0, said.err
    assert "query ids: 1 of 1 in the answers are in the run (1)" in said.out


# --------------------------------------------------------------------------------- evaluate, compare


def test_evaluate_and_compare_name_their_run_and_qrels(work):
    shutil.copy("ex/qrels.txt", "copy.txt")  # the same labels, no origin
    a = cli("evaluate", "ex/qrels.txt", "ex/runs/bm25.txt", "--format", "json").json
    b = cli("evaluate", "copy.txt", "ex/runs/bm25.txt", "--format", "json").json
    c = cli("evaluate", "ex/qrels_second_assessor.txt", "ex/runs/bm25.txt", "--format", "json").json
    assert a["run"] == "bm25" and a["qrels"]["file"] == "ex/qrels.txt"
    assert a["qrels"]["origin"]["describe"] == "example assessor 1" and a["qrels"]["origin"]["kind"] == "people"
    assert b["qrels"]["digest"] == a["qrels"]["digest"] != c["qrels"]["digest"]
    assert b["qrels"]["origin"]["kind"] == "unknown" and c["qrels"]["origin"]["describe"] == "example assessor 2"
    # the example's labels say their scale (0-3, relevant from 2); the same labels copied without it say nothing
    assert a["settings"] == {"relevance_level": 2, "gain": "linear", "missing": "skip"}
    assert b["settings"]["relevance_level"] == 1 and b["rests_on"]["relevance"]["source"] == "default"
    cmp = cli(
        "compare",
        "ex/qrels.txt",
        "ex/runs/bm25.txt",
        "ex/runs/tfidf.txt",
        "-m",
        "ndcg@10",
        "--permutations",
        "200",
        "--bootstrap",
        "200",
        "--format",
        "json",
    ).json
    assert cmp["qrels"]["digest"] == a["qrels"]["digest"] and cmp["qrels"]["file"] == "ex/qrels.txt"
    assert cmp["baseline"] == "bm25" and list(cmp["means"]) == ["bm25", "tfidf"]
    assert cmp["settings"]["missing"] == "zero"


def test_evaluate_ids_meeting_partly_are_counted(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    said = cli("evaluate", "ex/qrels.txt", "part.txt", "-m", "ndcg@10")
    assert said.code == 0
    assert said.out.rstrip().splitlines()[-1] == (
        "5 queries evaluated; 2 run queries without qrels ignored; 17 qrels queries missing from the run skipped "
        "(use --missing zero to count them as 0)"
    )
    counts = cli("evaluate", "ex/qrels.txt", "part.txt", "-m", "ndcg@10", "--format", "json").json["counts"]
    assert counts == {
        "evaluated": 5,
        "run_queries_without_qrels": 2,
        "qrels_queries_missing_from_run": 17,
        "asked_without_results": 0,
        "queries_without_relevant": 0,
    }


def test_evaluate_ids_meeting_partly_warn_on_stderr(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    said = cli("evaluate", "ex/qrels.txt", "part.txt", "-m", "ndcg@10")
    assert said.code == 0 and "warning" in said.err and "17 of 22" in said.err and "2 of 7" in said.err


def test_compare_ids_meeting_partly_are_counted_in_the_text_and_warned(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    args = (
        "compare",
        "ex/qrels.txt",
        "part.txt",
        "ex/runs/tfidf.txt",
        "-m",
        "ndcg@10",
        "--permutations",
        "200",
        "--bootstrap",
        "200",
    )
    counts = cli(*args, "--format", "json").json["counts"]["bm25"]
    assert counts["run_queries_without_qrels"] == 2 and counts["qrels_queries_missing_from_run"] == 17
    said = cli(*args)
    footer = said.out.rstrip().split("\n\n")[-1]
    assert re.search(r"\b17\b", footer) and re.search(r"\b2\b", footer.replace("22 queries", ""))
    assert "warning" in said.err and "17 of 22" in said.err


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_evaluate_and_compare_with_no_query_in_common_stop(work, command):
    renamed(Path("ex/runs/bm25.txt"), Path("none.txt"), "q", "x")
    runs = ["none.txt"] if command == "evaluate" else ["ex/runs/tfidf.txt", "none.txt"]
    said = cli(command, "ex/qrels.txt", *runs)
    assert said.code == 1 and said.out == ""
    assert said.err.startswith(f"ragassay {command}: error: none.txt: No queries with both results and relevance info")
    assert "'x01', 'x02', 'x03', ..." in said.err and "'q01', 'q02', 'q03', ..." in said.err


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_evaluate_and_compare_with_no_query_in_common_name_the_qrels_file_too(work, command):
    renamed(Path("ex/runs/bm25.txt"), Path("none.txt"), "q", "x")
    runs = ["none.txt"] if command == "evaluate" else ["ex/runs/tfidf.txt", "none.txt"]
    said = cli(command, "ex/qrels.txt", *runs)
    assert said.code == 1 and "none.txt" in said.err and "ex/qrels.txt" in said.err


# ----------------------------------------------------------------------------------------- report


def test_report_with_the_judges_own_qrels_measures_no_agreement(work, judged):
    j_file, g_file = bring(judged, work)
    said = cli("report", j_file, "--qrels", g_file, "--run", "ex/runs/bm25.txt", "-o", "r.md")
    assert said.code == 0 and said.out.strip() == "report: r.md"
    md = Path("r.md").read_text()
    assert "| query ids | the run bm25 | 22 | the qrels | 22 | 22 |" in md
    assert "| query ids | the judgments | 22 | the qrels | 22 | 22 |" in md
    assert "## Agreement: not measured" in md
    assert "were labelled by the same labeller (m, judge_relevance@" in md and "(66)" in md
    assert "Cohen's kappa" not in md


def test_report_with_peoples_qrels_and_the_judgments_names_both(work, judged):
    j_file, _ = bring(judged, work)
    said = cli("report", j_file, "--qrels", "ex/qrels.txt", "--run", "ex/runs/bm25.txt", "-o", "r.md")
    assert said.code == 0
    md = Path("r.md").read_text()
    assert re.search(r"## Agreement: example assessor 1 against m, judge_relevance@[0-9a-f]{8}\n", md)
    assert re.search(r"66 pairs graded by both\. Cohen's kappa -?\d\.\d{3}", md)
    assert re.search(
        r"Reference: example assessor 1 \(people\); candidate: m, judge_relevance@[0-9a-f]{8} \(model\)", md
    )
    html = cli("report", j_file, "--qrels", "ex/qrels.txt", "--run", "ex/runs/bm25.txt", "-o", "r.html")
    assert html.code == 0 and "example assessor 1" in Path("r.html").read_text()


def test_report_ids_meeting_partly_are_counted_and_none_in_common_stops(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    said = cli("report", "--qrels", "ex/qrels.txt", "--run", "part.txt", "-o", "r.md")
    assert said.code == 0
    md = Path("r.md").read_text()
    assert "| query ids | the run bm25 | 7 | the qrels | 22 | 5 |" in md
    assert (
        "Query ids: 2 of 7 in the run bm25 are not in the qrels (e.g. zz1, zz2); 17 of 22 in the qrels are not "
        "in the run bm25 (e.g. q06, q07, q08, ...)."
    ) in md
    renamed(Path("ex/runs/bm25.txt"), Path("none.txt"), "q", "x")
    none = cli("report", "--qrels", "ex/qrels.txt", "--run", "none.txt", "-o", "r2.md")
    assert none.code == 1 and not Path("r2.md").exists()
    assert none.err.strip() == (
        "ragassay report: error: no query ids in common between the run bm25 (none.txt) and "
        "the qrels (ex/qrels.txt) (the run bm25: x01, x02, x03, ...; the qrels: q01, q02, "
        "q03, ...); are they from the same set?"
    )


def test_report_ids_meeting_partly_warn_on_stderr(work):
    subset_run(Path("ex/runs/bm25.txt"), Path("part.txt"), {"q01", "q02", "q03", "q04", "q05"}, "zz", 2)
    said = cli("report", "--qrels", "ex/qrels.txt", "--run", "part.txt", "-o", "r.md")
    assert said.code == 0 and "warning" in said.err and "17 of 22" in said.err


def test_report_of_checks_against_themselves_measures_no_agreement(work):
    with FakeLLM() as fake:
        assert (
            cli("check", "ex/answers.jsonl", "--chunks", "ex/chunks.jsonl", "-o", "c.jsonl", *llm_args(fake)).code == 0
        )
    said = cli("report", "c.jsonl", "--human", "c.jsonl", "-o", "r.md")
    assert said.code == 0
    md = Path("r.md").read_text()
    assert "Cohen's kappa 1.000" not in md and "labelled by unknown" not in md


def test_report_of_checks_against_people_names_the_assessor(work):
    with FakeLLM() as fake:
        assert (
            cli("check", "ex/answers.jsonl", "--chunks", "ex/chunks.jsonl", "-o", "c.jsonl", *llm_args(fake)).code == 0
        )
    assert cli("report", "c.jsonl", "--human", "ex/answers_human_labels.jsonl", "-o", "r.md").code == 0
    md = Path("r.md").read_text()
    assert re.search(r"## Answers: agreement, example assessor 1 against m, check_answer@[0-9a-f]{8}\n", md)
    assert re.search(r"10 answers labelled by example assessor 1 \(people\); Cohen's kappa -?\d\.\d{3}", md)


# ---------------------------------------------------------------------------------------- history


def _evaluate(out: str, qrels: str, run: str, *extra: str) -> str:
    said = cli("evaluate", qrels, run, "--format", "json", *extra)
    assert said.code == 0, said.err
    Path(out).write_text(said.out)
    return out


def _history_rows(text: str) -> list[list[str]]:
    """The data rows of history's table, split on runs of 2+ spaces."""
    body = text.split("\n\n")[0].splitlines()[2:]
    return [re.split(r"\s{2,}", r.strip()) for r in body]


def _like_with_like_db() -> list[str]:
    files = [
        _evaluate("a.json", "ex/qrels.txt", "ex/runs/bm25.txt"),
        _evaluate("b.json", "ex/qrels.txt", "ex/runs/tfidf.txt"),
    ]
    cmp = cli(
        "compare",
        "ex/qrels.txt",
        "ex/runs/bm25.txt",
        "ex/runs/tfidf.txt",
        "--permutations",
        "200",
        "--bootstrap",
        "200",
        "--format",
        "json",
    )
    Path("c.json").write_text(cmp.out)
    files += [
        "c.json",
        _evaluate("d.json", "ex/qrels_second_assessor.txt", "ex/runs/bm25.txt"),
        _evaluate("e.json", "ex/qrels.txt", "ex/runs/bm25.txt", "--relevance-level", "3"),
        _evaluate("f.json", "ex/qrels.txt", "ex/runs/bm25.txt", "--gain", "exponential"),
        _evaluate("g.json", "ex/qrels.txt", "ex/runs/bm25.txt"),
    ]
    for f in nonempty(files):
        extra = ["--run", "bm25"] if f == "c.json" else []
        assert cli("track", f, "--db", "h.sqlite", *extra).code == 0
    return files


def test_history_draws_changes_only_between_like_results(work):
    _like_with_like_db()
    j = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--format", "json").json
    rows = j["results"]
    assert [r["run"] for r in rows] == ["bm25", "tfidf", "bm25", "bm25", "bm25", "bm25", "bm25"]
    # e follows a and g follows e (same run, same qrels, same settings that change ndcg@10: another relevant
    # grade does not, its gains are the grades); c is compare's bm25 (missing zero), d other labels, f another gain
    assert [r["delta_previous"] for r in rows] == [None, None, None, None, 0.0, None, 0.0]
    assert [r["delta_best"] for r in rows] == [None, None, None, None, 0.0, None, 0.0]
    # map counts relevance from a grade: e (relevant from 3) starts its own series, and g follows a
    binary = cli("history", "--db", "h.sqlite", "--metric", "map", "--format", "json").json["results"]
    assert [r["delta_previous"] for r in binary] == [None, None, None, None, None, None, 0.0]
    assert "relevant = grade ≥ 3" in binary[4]["series"] and "relevant = grade ≥ 2" in binary[6]["series"]
    said = cli("history", "--db", "h.sqlite", "--metric", "map").out
    assert "relevant = grade ≥ 3" in said and "series:" in said
    assert rows[3]["qrels"]["origin"]["describe"] == "example assessor 2"
    text = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10")
    table = _history_rows(text.out)
    assert [r[2] for r in table] == ["bm25", "tfidf", "bm25", "bm25", "bm25", "bm25", "bm25"]
    assert [r[3] for r in table] == [
        "example assessor 1 1805b9e6",
        "example assessor 1 1805b9e6",
        "example assessor 1 1805b9e6",
        "example assessor 2 ab06379d",
        "example assessor 1 1805b9e6",
        "example assessor 1 1805b9e6",
        "example assessor 1 1805b9e6",
    ]
    assert [r[-2:] for r in table if r[-1].startswith(("+", "-"))] == [["+0.0000", "+0.0000"]] * 2
    assert table[-1][0] == "7"


def test_history_of_one_run_keeps_its_series_apart(work):
    _like_with_like_db()
    j = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--run", "bm25", "--format", "json").json
    assert j["run"] == "bm25"
    assert [r["id"] for r in j["results"]] == [1, 3, 4, 5, 6, 7]
    assert [r["delta_previous"] for r in j["results"]] == [None, None, None, 0.0, None, 0.0]
    text = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--run", "bm25").out
    changes = [r[-2:] for r in _history_rows(text) if r[-1].startswith(("+", "-"))]
    assert changes == [["+0.0000", "+0.0000"]] * 2
    tfidf = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--run", "tfidf", "--format", "json").json
    assert [r["id"] for r in tfidf["results"]] == [2]
    nobody = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--run", "nope")
    assert nobody.code == 1 and not nobody.out  # a name the history has not: said with the names it has
    assert "no tracked result of the run 'nope' in this history; the runs it has: bm25, tfidf" in nobody.err


def test_history_counts_the_series_it_draws(work):
    _like_with_like_db()
    text = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10").out
    blanks = sum(1 for r in _history_rows(text) if not r[-1].startswith(("+", "-")))
    assert blanks == 5
    assert "(5 series:\n  " in text  # each named, the settings that split them said
    assert "(4 series:\n  " in cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--run", "bm25").out


def test_gate_names_the_run_and_the_qrels_labeller(work):
    _evaluate("a.json", "ex/qrels.txt", "ex/runs/bm25.txt")
    _evaluate("b.json", "ex/qrels_second_assessor.txt", "ex/runs/bm25.txt")
    failed = cli("gate", "a.json", "--min", "ndcg@10=0.8", "--min", "recall@10=0.8")
    assert failed.code == 1
    # what the gated measures rest on: the labels' relevant grade, and both look past the people's pool of 5
    assert (failed.out + failed.err).strip().splitlines() == [
        "gate failed (evaluate result of bm25 on qrels labelled by example assessor 1; relevant = grade ≥ 2; "
        "deeper than the pool's depth 5: recall@10, ndcg@10):",
        "  ndcg@10 = 0.7935 is below the minimum 0.8",
    ]
    passed = cli("gate", "b.json", "--min", "ndcg@10=0.7")
    assert passed.code == 0 and passed.out.strip() == (
        "gate passed: 1 threshold(s) hold (evaluate result of bm25 on qrels labelled by example assessor 2)"
    )
    j = cli("gate", "a.json", "--min", "ndcg@10=0.8", "--format", "json")
    assert j.code == 1 and j.json["run"] == "bm25" and j.json["qrels"]["origin"]["describe"] == "example assessor 1"


# ------------------------------------------------------------------ generate -> ... -> gate, a chain


@pytest.fixture(scope="module")
def generated(tmp_path_factory, example) -> dict:
    """generate 6 questions from the example's chunks with the fake model, with gold qrels."""
    d = tmp_path_factory.mktemp("generated")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(d / "cache"))
        with FakeLLM() as fake:
            said = cli(
                "generate",
                example / "chunks.jsonl",
                "-o",
                d / "questions.jsonl",
                "--qrels-out",
                d / "gold.qrels",
                "--limit",
                "6",
                *llm_args(fake),
            )
            host = host_of(fake)
    assert said.code == 0, said.err
    return {"questions": d / "questions.jsonl", "gold": d / "gold.qrels", "host": host, "out": said.out}


def test_generate_qrels_name_the_model_and_its_prompt(generated):
    origin = origin_of(generated["gold"])
    assert origin["command"] == "generate" and origin["date"]
    assert [(x["by"], x["name"]) for x in origin["labellers"]] == [("model", "m")]
    assert origin["labellers"][0]["prompt"].startswith("generate_question@")
    questions = lines(generated["questions"])
    assert len(questions) == 6 and {q["model"] for q in questions} == {"m"}
    gold_ids = {x.split()[0] for x in generated["gold"].read_text().splitlines()}
    assert gold_ids == {q["id"] for q in questions}


def test_generate_qrels_name_the_endpoint_host(generated):
    assert origin_of(generated["gold"])["labellers"][0]["endpoint"] == generated["host"]


def test_remap_qrels_name_the_generating_endpoint(generated, example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("new.jsonl").write_text(
        "".join(json.dumps({**c, "id": "n/" + c["id"]}) + "\n" for c in lines(example / "chunks.jsonl"))
    )
    assert cli("remap", generated["questions"], "new.jsonl", "-o", "new.qrels").code == 0
    assert origin_of(Path("new.qrels"))["labellers"][0]["endpoint"] == generated["host"]


def test_remap_qrels_carry_the_generating_model(generated, example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    chunks = lines(example / "chunks.jsonl")
    Path("new.jsonl").write_text("".join(json.dumps({**c, "id": "n/" + c["id"]}) + "\n" for c in chunks))
    said = cli("remap", generated["questions"], "new.jsonl", "-o", "new.qrels")
    assert said.code == 0 and said.out.strip() == "placed 6 of 6 questions (exact 6); qrels: new.qrels"
    origin = origin_of(Path("new.qrels"))
    assert origin["command"] == "remap"
    assert [(x["by"], x["name"]) for x in origin["labellers"]] == [("model", "m")]
    assert origin["labellers"][0]["prompt"] == origin_of(generated["gold"])["labellers"][0]["prompt"]
    old = sorted(x.split()[0] + " n/" + x.split()[2] for x in generated["gold"].read_text().splitlines())
    assert sorted(x.split()[0] + " " + x.split()[2] for x in Path("new.qrels").read_text().splitlines()) == old


def test_the_step_by_step_table_as_one_chain(work, generated):
    """generate -> retrieve -> judge -> check -> evaluate/compare -> report -> track -> history -> gate on
    the generated ids (q-...), and the example's own ids (q01...) meeting none of them."""
    shutil.copy(generated["questions"], "questions.jsonl")
    shutil.copy(generated["gold"], "gold.qrels")
    shutil.copy(f"{generated['gold']}.origin.json", "gold.qrels.origin.json")
    qids = [q["id"] for q in lines(Path("questions.jsonl"))]
    # 2 retrieve
    got = cli(
        "retrieve", "--retriever", "ex/retrievers.py:tfidf", "--queries", "questions.jsonl", "-k", "5", "-o", "run.txt"
    )
    assert got.code == 0 and got.out.startswith("wrote ") and " for 6 queries to run.txt" in got.out
    assert {x.split()[0] for x in Path("run.txt").read_text().splitlines()} == set(qids)
    # 3 judge: the questions meet the run fully
    with FakeLLM() as fake:
        judged = cli(
            "judge",
            "--queries",
            "questions.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "run.txt",
            "--depth",
            "3",
            "-o",
            "judgments.jsonl",
            "--qrels-out",
            "graded.qrels",
            *llm_args(fake),
        )
        assert judged.code == 0 and judged.err == ""
        assert judged.out.splitlines()[0] == "queries: 6 of 6 in the queries file are in the run (6 queries)"
        # the example's queries (q01...) meet none of the generated run's ids: stopped before a call
        before = fake.settled_calls()
        wrong = cli(
            "judge",
            "--queries",
            "ex/queries.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--run",
            "run.txt",
            "-o",
            "j2.jsonl",
            *llm_args(fake),
        )
        assert fake.settled_calls() == before
    assert wrong.code == 1 and "between the queries (ex/queries.jsonl) and the run (run.txt)" in wrong.err
    pairs = len(lines(Path("judgments.jsonl")))
    assert pairs == len(Path("graded.qrels").read_text().splitlines())
    # 4 check: answers to the generated questions (the reference as the response: decided by rule)
    qs = lines(Path("questions.jsonl"))
    Path("answers.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "id": q["id"],
                    "question": q["question"],
                    "reference": q["answer"],
                    "response": q["answer"],
                    "context_ids": q["chunk_ids"],
                }
            )
            + "\n"
            for q in qs
        )
    )
    checked = cli(
        "check",
        "answers.jsonl",
        "--chunks",
        "ex/chunks.jsonl",
        "--run",
        "run.txt",
        "--qrels",
        "gold.qrels",
        "-o",
        "checks.jsonl",
        "--format",
        "json",
    )
    assert checked.code == 0, checked.err
    d = checked.json["diagnosis"]
    assert d["diagnosed"] == 6 and [(x["left"]["matched"], x["right"]["ids"]) for x in d["joins"]] == [(6, 6), (6, 6)]
    # the example's answers (q01...) against the generated run: stopped, both files named
    stop = cli(
        "check",
        "ex/answers.jsonl",
        "--chunks",
        "ex/chunks.jsonl",
        "--run",
        "run.txt",
        "--qrels",
        "gold.qrels",
        "-o",
        "c2.jsonl",
    )
    assert stop.code == 1 and "between the answers (ex/answers.jsonl) and the run (run.txt)" in stop.err
    # 5 evaluate on the judge's labels and on the generator's gold: two labellers, two series
    assert cli("evaluate", "graded.qrels", "run.txt", "--format", "json").code == 0
    graded = _evaluate("graded.json", "graded.qrels", "run.txt")
    gold = _evaluate("gold.json", "gold.qrels", "run.txt")
    g = json.loads(Path(graded).read_text())
    assert g["counts"]["evaluated"] == 6 and g["run"] == "tfidf"
    assert g["qrels"]["origin"]["kind"] == "model" and g["qrels"]["origin"]["labellers"][0]["endpoint"]
    assert json.loads(Path(gold).read_text())["qrels"]["origin"]["labellers"][0]["prompt"].startswith("generate_")
    # 6 report with the judge's own qrels: no agreement measured; track; history; gate
    rep = cli("report", "judgments.jsonl", "--qrels", "graded.qrels", "--run", "run.txt", "-o", "report.md")
    assert rep.code == 0 and "## Agreement: not measured" in Path("report.md").read_text()
    assert "| query ids | the run tfidf | 6 | the qrels | 6 | 6 |" in Path("report.md").read_text()
    for f in nonempty([graded, gold, graded]):
        assert cli("track", f, "--db", "h.sqlite").code == 0
    hist = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--format", "json").json["results"]
    assert [r["delta_previous"] for r in hist] == [None, None, 0.0]
    assert [r["qrels"]["origin"]["labellers"][0]["prompt"].split("@")[0] for r in hist] == [
        "judge_relevance",
        "generate_question",
        "judge_relevance",
    ]
    rows = _history_rows(cli("history", "--db", "h.sqlite", "--metric", "ndcg@10").out)
    assert [r[2] for r in rows] == ["tfidf"] * 3 and rows[0][3].startswith("m, judge_relevance@")
    gate = cli("gate", graded, "--min", "ndcg@10=1.01")
    assert gate.code == 1
    assert (
        (gate.out + gate.err)
        .splitlines()[0]
        .startswith("gate failed (evaluate result of tfidf on qrels labelled by m, judge_relevance@")
    )


# --------------------------------------------------------------------------------- unicode ids


def test_ids_of_other_schemes_meet_exactly_as_written(work):
    """Unicode, symbols, case-only and full-width differences: each id meets itself only."""
    chunks = [
        ("c/ä-1", "Refunds are paid within thirty days of delivery to the original card."),
        ("c#2", "Shipping is free on orders above fifty euros and takes three days."),
        ("C#2", "Gift cards never expire and can be used online or in store."),
        ("３", "Returns need the original packaging and the receipt."),
    ]
    Path("chunks.jsonl").write_text(
        "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in chunks), encoding="utf-8"
    )
    queries = [
        ("q#1/ä", "When are refunds paid to the card after delivery?"),
        ("Q1", "Is shipping free on orders above fifty euros?"),
        ("q1", "Do gift cards expire?"),
        (7, "What do returns need besides the packaging?"),
    ]
    Path("queries.jsonl").write_text(
        "".join(json.dumps({"id": i, "question": t}, ensure_ascii=False) + "\n" for i, t in queries), encoding="utf-8"
    )
    write_run(
        Path("run.txt"),
        [
            ("q#1/ä", "c/ä-1", 2.0),
            ("q#1/ä", "c#2", 1.0),
            ("Q1", "c#2", 2.0),
            ("Q1", "C#2", 1.0),
            ("q1", "C#2", 2.0),
            ("q1", "c#2", 1.0),
            ("7", "３", 3.0),
            ("7", "c/ä-1", 1.0),
            ("q1/ä", "c#2", 1.0),
        ],
        "uni",
    )
    Path("qrels.txt").write_text("q#1/ä 0 c/ä-1 3\nQ1 0 c#2 3\nq1 0 C#2 3\n7 0 ３ 2\n", encoding="utf-8")
    with FakeLLM() as fake:
        said = cli(
            "judge",
            "--queries",
            "queries.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "run.txt",
            "-o",
            "j.jsonl",
            "--qrels-out",
            "g.qrels",
            *llm_args(fake),
        )
        calls = fake.settled_calls()
    assert said.code == 0
    assert said.out.splitlines()[0] == "queries: 4 of 4 in the queries file are in the run (5 queries)"
    assert said.err.strip() == "warning: query ids: 1 of 5 in the run are not in the queries (e.g. q1/ä)"
    assert calls == 8
    assert sorted(Path("g.qrels").read_text(encoding="utf-8").splitlines()) == sorted(
        [
            "q#1/ä 0 c/ä-1 3",
            "q#1/ä 0 c#2 0",
            "Q1 0 c#2 3",
            "Q1 0 C#2 0",
            "q1 0 C#2 3",
            "q1 0 c#2 0",
            "7 0 ３ 3",
            "7 0 c/ä-1 0",
        ]
    )
    ev = cli("evaluate", "qrels.txt", "run.txt", "-m", "p@1", "--per-query", "--format", "json").json
    assert sorted(ev["per_query"]) == ["7", "Q1", "q#1/ä", "q1"]
    assert ev["aggregate"]["p@1"] == 1.0 and ev["counts"]["run_queries_without_qrels"] == 1
    agree = cli("agree", "qrels.txt", "g.qrels", "--format", "json").json
    assert agree["pairs"] == 4 and agree["join"]["left"]["matched"] == 4 and agree["labels"] == [2, 3]
    assert agree["confusion"] == [[0, 1], [0, 3]]  # only 7/３ differs: 2 by hand, 3 by the model
    Path("answers.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "question": "?", "reference": r, "response": r}, ensure_ascii=False) + "\n"
            for i, r in (("q#1/ä", "thirty days"), ("Q1", "yes"), ("q1", "never"), ("Q#1/Ä", "no"))
        ),
        encoding="utf-8",
    )
    checked = cli("check", "answers.jsonl", "--run", "run.txt", "--qrels", "qrels.txt", "-o", "c.jsonl")
    assert checked.code == 0
    assert "query ids: 3 of 4 in the answers are in the run (5)" in checked.out
    assert "query ids: 3 of 4 in the answers are in the qrels (4)" in checked.out
    assert "warning: query ids: 1 of 4 in the answers are not in the run (e.g. Q#1/Ä)" in checked.err


# ------------------------------------------------------------------- arguments declared as text

METRICS = ",".join([f"p@{k}" for k in range(1, 21)] + [f"recall@{k}" for k in range(1, 21)])


def test_a_long_metric_list_is_text(work):
    assert len(METRICS) > 255 and METRICS.count(",") == 39
    ev = cli("evaluate", "ex/qrels.txt", "ex/runs/bm25.txt", "-m", METRICS, "--format", "json")
    assert ev.code == 0 and len(ev.json["aggregate"]) == 40
    cmp = cli(
        "compare",
        "ex/qrels.txt",
        "ex/runs/bm25.txt",
        "ex/runs/tfidf.txt",
        "-m",
        METRICS,
        "--permutations",
        "50",
        "--bootstrap",
        "50",
        "--format",
        "json",
    )
    assert cmp.code == 0 and len(cmp.json["means"]["tfidf"]) == 40 and len(cmp.json["tests"]) == 40
    ag = cli(
        "agree",
        "ex/qrels.txt",
        "ex/qrels_second_assessor.txt",
        "--runs",
        "ex/runs/bm25.txt",
        "ex/runs/tfidf.txt",
        "-m",
        METRICS,
    )
    assert ag.code == 0 and "Kendall's tau-b" in ag.out
    Path("a.json").write_text(ev.out)
    assert cli("track", "a.json", "--db", "h.sqlite").code == 0
    hist = cli("history", "--db", "h.sqlite", "-m", METRICS)
    # read as text (never as a file), and a list is not one metric: a usage error that says so
    assert hist.code == 2 and "File name too long" not in hist.err and "Errno" not in hist.err
    assert "is not a metric of any tracked result" in hist.err


def test_a_long_label_or_title_is_text(work):
    label = "L" * 300
    _evaluate("a.json", "ex/qrels.txt", "ex/runs/bm25.txt")
    assert cli("track", "a.json", "--db", "h.sqlite", "--label", label).code == 0
    assert cli("history", "--db", "h.sqlite", "--format", "json").json["results"][0]["label"] == label
    title = "T" * 300
    rep = cli("report", "--qrels", "ex/qrels.txt", "--run", "ex/runs/bm25.txt", "--title", title, "-o", "r.md")
    assert rep.code == 0 and Path("r.md").read_text().splitlines()[0] == "# " + title


def test_a_label_run_or_title_spelling_a_file_is_text(work):
    _evaluate("a.json", "ex/qrels.txt", "ex/runs/bm25.txt")
    before = Path("a.json").read_text()
    for label in nonempty(["a.json", "h.sqlite", "ex/qrels.txt"]):
        said = cli("track", "a.json", "--db", "h.sqlite", "--label", label)
        assert said.code == 0, said.err
    assert Path("a.json").read_text() == before
    labels = [r["label"] for r in cli("history", "--db", "h.sqlite", "--format", "json").json["results"]]
    assert labels == ["a.json", "h.sqlite", "ex/qrels.txt"]
    # a run whose name spells an existing file (even the result given to track)
    for tag in nonempty(["a.json", "h.sqlite"]):
        Path(f"{tag}.run").write_text(
            "".join(" ".join(x.split()[:5] + [tag]) + "\n" for x in Path("ex/runs/tfidf.txt").read_text().splitlines())
        )
    cmp = cli(
        "compare",
        "ex/qrels.txt",
        "ex/runs/bm25.txt",
        "a.json.run",
        "h.sqlite.run",
        "-m",
        "ndcg@10",
        "--permutations",
        "50",
        "--bootstrap",
        "50",
        "--format",
        "json",
    )
    Path("cmp.json").write_text(cmp.out)
    assert list(cmp.json["means"]) == ["bm25", "a.json", "h.sqlite"]
    tracked = cli("track", "cmp.json", "--db", "h.sqlite", "--run", "a.json")
    assert tracked.code == 0 and "compare of a.json on qrels" in tracked.out
    on_db = cli("track", "cmp.json", "--db", "h.sqlite", "--run", "h.sqlite")  # the output's own path, as a name
    assert on_db.code == 0 and "compare of h.sqlite on qrels" in on_db.out
    assert cli("gate", "cmp.json", "--run", "a.json", "--min", "ndcg@10=0.5").code == 0
    assert Path("a.json").read_text() == before
    rows = cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--run", "a.json", "--format", "json").json
    assert [r["id"] for r in rows["results"]] == [4]
    assert [
        r["run"] for r in cli("history", "--db", "h.sqlite", "--metric", "ndcg@10", "--format", "json").json["results"]
    ] == ["bm25", "bm25", "bm25", "a.json", "h.sqlite"]
    # a report title spelling its own output, or an input
    for title in nonempty(["r.md", "ex/qrels.txt"]):
        said = cli("report", "--qrels", "ex/qrels.txt", "--run", "ex/runs/bm25.txt", "--title", title, "-o", "r.md")
        assert said.code == 0 and Path("r.md").read_text().splitlines()[0] == "# " + title
    assert Path("ex/qrels.txt").read_text().startswith("q01 0 refund-01 3")


# --------------------------------------------------------------------------------------- label


class Labeller:
    """`ragassay label ...` in its own process; labels given through the page's JSON routes."""

    def __init__(self, argv: list[str], cwd: Path):
        env = {**os.environ}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragassay", "label", *argv, "--no-browser"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.first = self.proc.stdout.readline()
        url = self.proc.stdout.readline().strip()
        assert self.first.startswith("labelling "), (self.first, self.proc.stderr.read())
        self.base, self.token = url.split("/?token=")

    def _fetch(self, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path, data=data, headers={"Content-Type": "application/json", "X-Token": self.token}
        )
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read().decode())

    def state(self) -> dict:
        return self._fetch("/api/state")

    def label(self, key: str, value) -> dict:
        return self._fetch("/api/label", {"key": key, "value": value})

    def stop(self) -> str:
        out, _ = stop_process(self.proc, signal.SIGINT, 60)
        assert self.proc.returncode == 130
        return out


def _pairs_args(out: str, assessor: str, *extra: str) -> list[str]:
    return [
        "pairs",
        "--queries",
        "ex/queries.jsonl",
        "--chunks",
        "ex/chunks.jsonl",
        "--run",
        "ex/runs/bm25.txt",
        "--depth",
        "3",
        "--sample",
        "8",
        "--assessor",
        assessor,
        "-o",
        out,
        *extra,
    ]


def _label_some(run: Labeller, n: int) -> dict:
    items = run.state()["items"]
    state = {}
    for i, item in enumerate(nonempty(items[:n])):
        state = run.label(item["key"], i % 4)
    return state


def test_label_pairs_writes_a_people_origin_and_with_names_the_other_by_origin(work, judged):
    bring(judged, work)
    alice = Labeller(_pairs_args("alice.qrels", "alice"), work)
    _label_some(alice, 6)
    assert "labelled 6 of 8 (0 skipped) into alice.qrels" in alice.stop()
    origin = origin_of(Path("alice.qrels"))
    assert origin["command"] == "label"
    assert [(x["by"], x["name"]) for x in origin["labellers"]] == [("person", "alice")]
    assert len(Path("alice.qrels").read_text().splitlines()) == 6
    # a file named for nobody in particular but labelled by carol; a copy with no origin; the judge's qrels
    shutil.copy("alice.qrels", "x.qrels")
    Path("x.qrels.origin.json").write_text(Path("alice.qrels.origin.json").read_text().replace('"alice"', '"carol"'))
    shutil.copy("alice.qrels", "plain.qrels")
    expected = {"x.qrels": "carol", "plain.qrels": "unknown (plain.qrels)"}
    for other, name in nonempty(expected.items()):
        bob = Labeller(_pairs_args(f"bob-{other}", "bob", "--with", other), work)
        state = _label_some(bob, 6)
        bob.stop()
        assert list(state["people"]) == [name]
        assert state["people"][name]["n"] == 6 and state["people"][name]["kappa"] == 1.0
    dave = Labeller(_pairs_args("dave.qrels", "dave", "--with", "g.qrels"), work)
    state = _label_some(dave, 3)
    dave.stop()
    (name,) = state["people"]
    assert name.startswith("m, judge_relevance@") and judged["host"] in name
    # agree between the two people's files
    said = cli("agree", "alice.qrels", "bob-x.qrels")
    assert said.out.splitlines()[0] == (
        "reference: alice (people), 6 labels; candidate: bob (people), 6 labels; 6 pairs labelled by both"
    )


def test_label_with_a_file_by_the_person_labelling_is_refused(work):
    Path("mine.qrels").write_text("q01 0 refund-01 3\n")
    Path("mine.qrels.origin.json").write_text(json.dumps({"labellers": [{"by": "person", "name": "alice"}]}))
    said = cli("label", *_pairs_args("new.qrels", "alice", "--with", "mine.qrels"), "--no-browser")
    assert said.code == 2 and not Path("new.qrels").exists()
    assert (
        "ragassay label: error: --with mine.qrels holds labels by alice, who is labelling now: comparing alice "
        "with themselves measures no agreement; give another person's labels"
    ) in said.err
    same = cli("label", *_pairs_args("mine.qrels", "zed", "--with", "mine.qrels"), "--no-browser")
    assert same.code == 2 and "-o mine.qrels is also the input --with mine.qrels" in same.err


def test_label_answers_say_their_assessor_per_line_and_check_reads_them(work):
    erin = Labeller(
        ["answers", "ex/answers.jsonl", "--chunks", "ex/chunks.jsonl", "--assessor", "erin", "-o", "hl.jsonl"], work
    )
    items = erin.state()["items"]
    for item, label in zip(nonempty(items[:4]), ["correct", "partial", "hallucinated", "abstained"]):
        erin.label(item["key"], label)
    assert "labelled 4 of 16 (0 skipped) into hl.jsonl" in erin.stop()
    written = lines(Path("hl.jsonl"))
    assert len(written) == 4 and {r["assessor"] for r in written} == {"erin"}
    with FakeLLM() as fake:
        said = cli(
            "check",
            "ex/answers.jsonl",
            "--chunks",
            "ex/chunks.jsonl",
            "--human",
            "hl.jsonl",
            "-o",
            "c.jsonl",
            *llm_args(fake),
        )
    assert said.code == 0
    assert re.search(r"agreement on 4 answers, erin \(people\) vs m, check_answer@[0-9a-f]{8}: Cohen's kappa", said.out)
