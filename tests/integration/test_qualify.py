"""`ragassay qualify`: a model and prompt measured against people's labels, as a user runs it.

Against the competent local test server (tests/fake_llm.py): the judge grades by word overlap and
the checker compares response and reference, so its agreement with people is a real figure that
these tests recompute by hand from the records written, never a number taken on trust.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from fake_llm import FakeLLM, dead_url
from ragassay.cli import main
from ragassay.metrics.agreement import cohen_kappa


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def write_pairs(folder: Path, grades: dict[tuple[str, str], int], *, sidecar: bool = True) -> list[str]:
    """People-labelled pairs whose texts make the fake judge's grade predictable: a passage that
    repeats the query's words is graded high, one sharing none of them 0."""
    folder.mkdir(parents=True, exist_ok=True)
    queries = sorted({q for q, _ in grades})
    words = {q: f"alpha{i} beta{i} gamma{i}" for i, q in enumerate(queries)}
    (folder / "queries.tsv").write_text("".join(f"{q}\t{words[q]}\n" for q in queries), encoding="utf-8")
    with open(folder / "passages.jsonl", "w", encoding="utf-8") as f:
        for q, c in sorted(grades):
            text = (f"{words[q]} and more on it in {c}") if grades[(q, c)] >= 2 else f"unrelated text about zeta {c}"
            f.write(json.dumps({"docid": c, "doc": text}) + "\n")
    with open(folder / "qrels.txt", "w", encoding="utf-8") as f:
        for (q, c), g in sorted(grades.items()):
            f.write(f"{q} 0 {c} {g}\n")
    if sidecar:
        (folder / "qrels.txt.origin.json").write_text(
            json.dumps({"labellers": [{"by": "person", "name": "assessors"}], "scale": [0, 3], "relevant_from": 2}),
            encoding="utf-8",
        )
    return [str(folder / "qrels.txt"), str(folder / "queries.tsv"), str(folder / "passages.jsonl")]


def grid(n_queries: int = 6, per: int = 4) -> dict[tuple[str, str], int]:
    return {(f"q{i}", f"d{i}-{j}"): (i + j) % 4 for i in range(n_queries) for j in range(per)}


def qualify(args: list[str], capsys) -> tuple[int, dict]:
    code = main(["qualify", *args, "--format", "json", "--quiet"])
    return code, json.loads(capsys.readouterr().out)


def kappa_by_hand(a: list, b: list) -> float:
    """Cohen's kappa written out: observed agreement against what the two margins give by chance."""
    labels = sorted(set(a) | set(b), key=str)
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    chance = sum(ca[label] * cb[label] for label in labels) / (n * n)
    return (observed - chance) / (1 - chance)


def test_judge_on_own_files_figures_recomputed_from_the_records(tmp_path, capsys):
    grades = grid(6, 4)  # 24 pairs, 6 of each grade
    files = write_pairs(tmp_path / "data", grades)
    with FakeLLM() as server:
        code, out = qualify(
            [
                "judge",
                "--qrels",
                files[0],
                "--queries",
                files[1],
                "--chunks",
                files[2],
                "--size",
                "16",
                "--seed",
                "3",
                "-o",
                str(tmp_path / "q"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--prompt",
                "short",
            ],
            capsys,
        )
        calls = server.calls
    assert code == 0
    assert calls == 16  # one call a sampled pair, no more
    s = out["sample"]
    assert (s["items"], s["of"], s["unit"], s["seed"]) == (16, 24, "pairs", 3)
    assert s["per_class"] == {"0": 4, "1": 4, "2": 4, "3": 4}  # stratified by the people's grade
    assert s["relevant_from"] == 2 and s["scale"] == [0, 3]
    records = {(r["query_id"], r["chunk_id"]): r for r in lines(Path(out["graders"][0]["output"]))}
    assert len(records) == 16 and all(r["prompt"].startswith("judge_relevance_short@") for r in records.values())
    items = out["items"]
    assert len(items) == 16 and len({(i["query_id"], i["chunk_id"]) for i in items}) == 16
    people = [i["people"] for i in items]
    model = [records[(i["query_id"], i["chunk_id"])]["grade"] for i in items]
    assert [i["graders"][0] for i in items] == model
    assert people == [grades[(i["query_id"], i["chunk_id"])] for i in items]
    agreement = out["graders"][0]["agreement"]
    assert agreement["n"] == 16 and agreement["missing"] == 0
    assert agreement["kappa"] == pytest.approx(kappa_by_hand(people, model))
    assert agreement["kappa"] == pytest.approx(cohen_kappa(np.array(people), np.array(model)))
    assert agreement["kappa_binary"] == pytest.approx(kappa_by_hand([p >= 2 for p in people], [m >= 2 for m in model]))
    confusion = agreement["confusion"]
    for p in range(4):
        for m in range(4):
            assert confusion[p][m] == sum(1 for x, y in zip(people, model) if (x, y) == (p, m))
    assert agreement["above"] == sum(m > p for p, m in zip(people, model))
    assert agreement["below"] == sum(m < p for p, m in zip(people, model))
    saved = json.loads((tmp_path / "q" / "qualification.json").read_text(encoding="utf-8"))
    assert saved["items"] == items and saved["graders"][0]["agreement"] == agreement


def test_same_seed_same_sample_other_seed_other_sample(tmp_path, capsys):
    files = write_pairs(tmp_path / "data", grid(8, 4))
    picked = []
    with FakeLLM() as server:
        for seed, folder in ((0, "a"), (0, "b"), (1, "c")):
            code, out = qualify(
                [
                    "judge",
                    "--qrels",
                    files[0],
                    "--queries",
                    files[1],
                    "--chunks",
                    files[2],
                    "--size",
                    "8",
                    "--seed",
                    str(seed),
                    "-o",
                    str(tmp_path / folder),
                    "--base-url",
                    server.url,
                    "--model",
                    "fake",
                    "--prompt",
                    "short",
                ],
                capsys,
            )
            assert code == 0
            picked.append([(i["query_id"], i["chunk_id"]) for i in out["items"]])
    assert picked[0] == picked[1]
    assert set(picked[0]) != set(picked[2])


def test_two_prompts_compared_on_the_same_items_with_a_paired_test(tmp_path, capsys):
    files = write_pairs(tmp_path / "data", grid(6, 4))
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(
        "[system]\nGrade 0 to 3 how well the passage answers the query.\n[user]\n{{query}}\n\n{{passage}}\n",
        encoding="utf-8",
    )
    with FakeLLM() as server:
        code, out = qualify(
            [
                "judge",
                "--qrels",
                files[0],
                "--queries",
                files[1],
                "--chunks",
                files[2],
                "--size",
                "12",
                "-o",
                str(tmp_path / "q"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--prompt",
                "short",
                "--prompt",
                str(rubric),
            ],
            capsys,
        )
        bodies = list(server.requests)
    assert code == 0
    first, second = out["graders"]
    assert first["grader"]["prompt"] == "short" and second["grader"]["prompt"] == str(rubric)
    assert len(second["prompts"]) == 1 and second["prompts"][0].startswith("rubric@")
    assert first["paired_with_first"] is None
    paired = second["paired_with_first"]
    assert paired["n"] == 12
    a = [i["graders"][1] for i in out["items"]]
    b = [i["graders"][0] for i in out["items"]]
    people = [i["people"] for i in out["items"]]
    assert paired["only_a_right"] == sum(x == p != y for x, y, p in zip(a, b, people))
    assert paired["only_b_right"] == sum(y == p != x for x, y, p in zip(a, b, people))
    assert paired["kappa"]["difference"] == pytest.approx(kappa_by_hand(people, a) - kappa_by_hand(people, b))
    # the user's rubric is what the model was sent, for the second grader's 12 pairs
    assert sum("Grade 0 to 3 how well" in json.dumps(body) for body in bodies) == 12
    # each grader's records under its model and prompt, not its place: reordered, they are found again
    assert Path(first["output"]).name == "judgments.fake.short.jsonl"
    assert Path(second["output"]).name.startswith("judgments.fake.rubric-") and Path(second["output"]).exists()


def test_dry_run_calls_nothing_and_counts_each_grader(tmp_path, capsys):
    files = write_pairs(tmp_path / "data", grid(5, 4))
    with FakeLLM() as server:
        code = main(
            [
                "qualify",
                "judge",
                "--qrels",
                files[0],
                "--queries",
                files[1],
                "--chunks",
                files[2],
                "--size",
                "10",
                "-o",
                str(tmp_path / "q"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--model",
                "fake-b",
                "--prompt",
                "short",
                "--dry-run",
                "--format",
                "json",
                "--no-cache",
            ]
        )
        assert server.calls == 0
    estimates = json.loads(capsys.readouterr().out)
    assert code == 0 and estimates["kind"] == "estimates"
    assert [(e["model"], e["calls"]) for e in estimates["graders"]] == [("fake", 10), ("fake-b", 10)]
    assert not (tmp_path / "q" / "qualification.json").exists()


def test_a_rerun_into_the_same_folder_asks_nothing_again(tmp_path, capsys):
    files = write_pairs(tmp_path / "data", grid(5, 4))
    args = [
        "judge",
        "--qrels",
        files[0],
        "--queries",
        files[1],
        "--chunks",
        files[2],
        "--size",
        "12",
        "-o",
        str(tmp_path / "q"),
        "--model",
        "fake",
        "--prompt",
        "short",
        "--cache",
        str(tmp_path / "cache.sqlite"),
    ]
    with FakeLLM() as server:
        code, first = qualify([*args, "--base-url", server.url], capsys)
        assert code == 0 and server.calls == 12
        code, again = qualify([*args, "--base-url", server.url], capsys)
        assert code == 0 and server.calls == 12  # nothing asked twice
    assert again["items"] == first["items"]
    assert again["graders"][0]["agreement"] == first["graders"][0]["agreement"]


def test_a_dead_endpoint_is_error_records_counted_and_a_true_exit_code(tmp_path, capsys):
    files = write_pairs(tmp_path / "data", grid(3, 4))
    code = main(
        [
            "qualify",
            "judge",
            "--qrels",
            files[0],
            "--queries",
            files[1],
            "--chunks",
            files[2],
            "--size",
            "6",
            "-o",
            str(tmp_path / "q"),
            "--base-url",
            dead_url(),
            "--model",
            "fake",
            "--prompt",
            "short",
            "--no-cache",
            "--timeout",
            "2",
            "--format",
            "json",
            "--quiet",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1  # the run stops early: nothing was labelled, and nothing is written as if it were
    assert "could not connect" in captured.err and "stopped early" in captured.err and "Traceback" not in captured.err
    assert captured.out == "" and not (tmp_path / "q" / "qualification.json").exists()
    assert list((tmp_path / "q").glob("judgments.*.journal"))  # what was done is kept for a rerun


def test_check_on_the_bundled_sample_needs_no_download(tmp_path, capsys):
    with FakeLLM() as server:
        code, out = qualify(
            [
                "check",
                "--size",
                "40",
                "-o",
                str(tmp_path / "q"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--prompt",
                "short",
            ],
            capsys,
        )
    assert code == 0
    s = out["sample"]
    assert (s["items"], s["of"], s["unit"], s["binary"]) == (40, 200, "answers", True)
    assert s["per_class"] == {"correct": 20, "incorrect": 20}
    assert "EVOUNA" in out["source"] and "Apache-2.0" in (out["citation"] or "")
    records = {r["id"]: r for r in lines(Path(out["graders"][0]["output"]))}
    people = [i["people"] for i in out["items"]]
    model = ["correct" if records[i["id"]]["label"] == "correct" else "incorrect" for i in out["items"]]
    assert [i["graders"][0] for i in out["items"]] == [records[i["id"]]["label"] for i in out["items"]]
    assert out["graders"][0]["agreement"]["kappa_binary"] == pytest.approx(kappa_by_hand(people, model))
    assert any("partial" in n for n in out["notes"])  # how four labels met two is said


def test_check_with_four_class_people_labels(tmp_path, capsys):
    answers = tmp_path / "answers.jsonl"
    labels = tmp_path / "labels.jsonl"
    rows = [
        ("a1", "Lisbon", "Lisbon", "correct"),
        ("a2", "Paris", "Lyon", "hallucinated"),
        ("a3", "1998", "I do not know", "abstained"),
        ("a4", "Visa and PayPal", "Visa", "partial"),
        ("a5", "Berlin", "Berlin it is", "correct"),
        ("a6", "42", "41", "hallucinated"),
    ]
    answers.write_text(
        "".join(
            json.dumps({"id": i, "question": f"question {i}?", "reference": ref, "response": resp}) + "\n"
            for i, ref, resp, _ in rows
        ),
        encoding="utf-8",
    )
    labels.write_text("".join(json.dumps({"id": i, "label": lab}) + "\n" for i, *_, lab in rows), encoding="utf-8")
    with FakeLLM() as server:
        code, out = qualify(
            [
                "check",
                "--answers",
                str(answers),
                "--labels",
                str(labels),
                "-o",
                str(tmp_path / "q"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--prompt",
                "full",
            ],
            capsys,
        )
    assert code == 0
    assert out["sample"]["binary"] is False and out["sample"]["items"] == 6
    assert out["graders"][0]["agreement"]["classes"] == ["correct", "partial", "hallucinated", "abstained"]
    people = {i: lab for i, *_, lab in rows}
    assert {i["id"]: i["people"] for i in out["items"]} == people
    records = {r["id"]: r["label"] for r in lines(Path(out["graders"][0]["output"]))}
    assert {i["id"]: i["graders"][0] for i in out["items"]} == records  # the label as the checker gave it
    agreement = out["graders"][0]["agreement"]
    ids = [i["id"] for i in out["items"]]
    assert agreement["exact_agreement"] == pytest.approx(sum(people[i] == records[i] for i in ids) / 6)


def test_another_scale_compares_relevant_or_not_and_says_so(tmp_path, capsys):
    grades = {(f"q{i}", f"d{i}-{j}"): (i + j) % 5 for i in range(4) for j in range(5)}  # 0-4
    files = write_pairs(tmp_path / "data", grades, sidecar=False)
    with FakeLLM() as server:
        code, out = qualify(
            [
                "judge",
                "--qrels",
                files[0],
                "--queries",
                files[1],
                "--chunks",
                files[2],
                "--relevance-level",
                "3",
                "-o",
                str(tmp_path / "q"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--prompt",
                "short",
            ],
            capsys,
        )
    assert code == 0
    assert any("only relevant or not" in n for n in out["notes"])
    agreement = out["graders"][0]["agreement"]
    assert agreement["classes"] == ["not relevant", "relevant"] and agreement["positive_words"] == "relevant"
    people = [i["people"] >= 3 for i in out["items"]]
    model = [i["graders"][0] >= 2 for i in out["items"]]  # the judge's own grade, kept as it gave it
    assert agreement["kappa_binary"] == pytest.approx(kappa_by_hand(people, model))


def test_runs_ranked_under_people_and_the_grader(tmp_path, capsys):
    grades = grid(6, 4)
    files = write_pairs(tmp_path / "data", grades)
    runs = []
    for name, key in (("best", lambda g: g), ("worst", lambda g: -g), ("mixed", lambda g: (g * 7) % 5)):
        path = tmp_path / f"{name}.run"
        path.write_text(
            "".join(f"{q} Q0 {c} 1 {key(g)} {name}\n" for (q, c), g in sorted(grades.items())), encoding="utf-8"
        )
        runs += ["--run", str(path)]
    with FakeLLM() as server:
        code, out = qualify(
            [
                "judge",
                "--qrels",
                files[0],
                "--queries",
                files[1],
                "--chunks",
                files[2],
                "-o",
                str(tmp_path / "q"),
                "--base-url",
                server.url,
                "--model",
                "fake",
                "--prompt",
                "short",
                *runs,
            ],
            capsys,
        )
    assert code == 0
    ranking = out["graders"][0]["ranking"]
    assert set(ranking["runs"]) == {"best", "worst", "mixed"}
    assert ranking["kendall_tau_b"] is not None and -1 <= ranking["kendall_tau_b"] <= 1
    assert any("sampled pairs only" in n for n in out["notes"])


@pytest.mark.parametrize(
    "args, words",
    [
        (["judge", "--qrels", "Q"], "--qrels, --queries and --chunks together"),
        (["judge", "--public", "trec-dl-2019", "--qrels", "Q"], "either --public"),
        (["check", "--labels", "L"], "--labels goes with --answers"),
        (["judge", "--run", "R"], "two or more --run"),
    ],
)
def test_usage_errors_say_the_way_out(tmp_path, capsys, args, words):
    files = write_pairs(tmp_path / "data", grid(2, 2))
    args = [
        files[0] if a == "Q" else str(tmp_path / "r.run") if a == "R" else files[0] if a == "L" else a for a in args
    ]
    (tmp_path / "r.run").write_text("q0 Q0 d0-0 1 1 r\n", encoding="utf-8")
    code = main(["qualify", *args, "-o", str(tmp_path / "q"), "--model", "fake", "--base-url", dead_url()])
    assert code == 2
    assert words in capsys.readouterr().err
