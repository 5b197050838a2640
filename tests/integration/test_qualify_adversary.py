"""`ragassay qualify` tried by a demanding user and an adversary, from its help text alone.

Every figure is recomputed here by hand (Cohen's kappa, the confusion matrix, the direction of the
disagreement, nDCG@10 of each run) from the items qualification.json keeps, and every call is
counted at the local test server (tests/fake_llm.py), which grades relevance by word overlap and
labels answers by comparing response and reference. A test marked xfail(strict) names a defect
found: it passes once the defect is fixed, and then the mark must go.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

import fake_llm
from fake_llm import FakeLLM, dead_url
from helpers import nonempty
from ragassay.cli import main

TOPICS = [
    "cafe opening hours",
    "bicycle repair warranty",
    "umbrella return policy",
    "train ticket refund",
    "piano tuning price",
]


@pytest.fixture(autouse=True)
def _endpoint_env(monkeypatch):
    for name in ("OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def run(args: list[str], capsys=None) -> tuple[int, str, str]:
    """The CLI in-process: (exit code, stdout, stderr); a usage error's SystemExit is its code."""
    try:
        rc = main([str(a) for a in args])
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr() if capsys is not None else ("", "")
    return rc, out, err


def own_pairs(folder: Path, shift: int = 0, top: int | None = None) -> dict[str, Path]:
    """Five queries with unicode ids, eight graded passages each (grades 0-3 plus ``shift``, the top
    grade written as ``top`` when given), a passage of empty text, and a query nobody judged."""
    folder.mkdir(parents=True, exist_ok=True)
    queries = {f"qé{i}": f"what are the {t}" for i, t in enumerate(TOPICS)}
    queries["q-unjudged"] = "nobody judged this query"
    chunks, qrels = [], []
    for i, t in enumerate(TOPICS):
        for j in range(8):
            g = j % 4  # the fake grades by shared words (4 letters or more): this passage shares g of them
            cid = f"dö{i}-{j}✓"
            chunks.append({"id": cid, "text": " ".join(t.split()[:g]) + " filler words about nothing " * 2})
            grade = g + shift
            if top is not None and g == 3:
                grade = top
            qrels.append(f"qé{i} 0 {cid} {grade}")
    chunks.append({"id": "empty-one", "text": ""})
    qrels.append(f"qé0 0 empty-one {shift}")
    paths = {"qrels": folder / "qrels.txt", "queries": folder / "queries.tsv", "chunks": folder / "chunks.jsonl"}
    paths["queries"].write_text("".join(f"{k}\t{v}\n" for k, v in queries.items()), encoding="utf-8")
    paths["chunks"].write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks), encoding="utf-8")
    paths["qrels"].write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return paths


def data_flags(p: dict[str, Path]) -> list:
    return ["--qrels", p["qrels"], "--queries", p["queries"], "--chunks", p["chunks"]]


def kappa(a: list, b: list) -> float:
    """Cohen's kappa by hand: (observed - chance) / (1 - chance)."""
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / n / n
    return (po - pe) / (1 - pe)


def qualification(folder: Path) -> dict:
    return json.loads((folder / "qualification.json").read_text(encoding="utf-8"))


def ndcg10(run_file: Path, grades: dict[tuple[str, str], int]) -> float:
    """trec_eval's ndcg_cut_10 on these grades: gain = grade, log2 discount, the mean over the queries
    holding a relevant pair."""
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in run_file.read_text(encoding="utf-8").splitlines():
        q, _, d, _, s, _ = line.split()
        ranked.setdefault(q, []).append((-float(s), d))
    scores = []
    for q in sorted({q for q, _ in grades}):
        rel = sorted((g for (qq, _), g in grades.items() if qq == q and g > 0), reverse=True)
        if not rel:
            continue
        ideal = sum(g / math.log2(i + 2) for i, g in enumerate(rel[:10]))
        top = [d for _, d in sorted(ranked.get(q, []))][:10]
        scores.append(sum(grades.get((q, d), 0) / math.log2(i + 2) for i, d in enumerate(top)) / ideal)
    return sum(scores) / len(scores)


# ------------------------------------------------------------------------------ bundled samples


def test_bundled_judge_figures_recomputed_by_hand(tmp_path, capsys):
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
                "--size",
                60,
            ],
            capsys,
        )
        calls = s.calls
    assert rc == 0
    d = qualification(tmp_path / "q")
    items = d["items"]
    assert len(items) == 60 and d["sample"]["items"] == 60 and 0 < calls <= 60
    people = [i["people"] for i in items]
    model = [i["graders"][0] for i in items]
    a = d["graders"][0]["agreement"]
    assert a["kappa"] == pytest.approx(kappa(people, model), abs=1e-12)
    assert a["kappa_binary"] == pytest.approx(kappa([p >= 2 for p in people], [m >= 2 for m in model]), abs=1e-12)
    assert a["confusion"] == [
        [sum(p == r and m == c for p, m in zip(people, model)) for c in range(4)] for r in range(4)
    ]
    assert (a["above"], a["below"]) == (
        sum(m > p for p, m in zip(people, model)),
        sum(m < p for p, m in zip(people, model)),
    )
    assert f"kappa over all labels: {a['kappa']:.2f}" in out
    # the ceiling: the second assessor against the first on the pairs both graded
    both = [(i["people"], i["second"]) for i in items if i["second"] is not None]
    assert d["ceiling"]["n"] == len(both) > 10
    assert d["ceiling"]["kappa"] == pytest.approx(kappa(*map(list, zip(*both))), abs=1e-12)


def test_bundled_check_figures_recomputed_by_hand(tmp_path, capsys):
    with FakeLLM() as s:
        rc, out, _ = run(
            ["qualify", "check", "--base-url", s.url, "--model", "fake", "--no-cache", "-o", tmp_path / "q"], capsys
        )
        calls = s.calls
    assert rc == 0
    d = qualification(tmp_path / "q")
    items = d["items"]
    assert len(items) == 100 and Counter(i["people"] for i in items) == {"correct": 50, "incorrect": 50}
    model = [
        "correct" if g == "correct" else "incorrect" for g in (i["graders"][0] for i in items)
    ]  # as given: four labels
    assert set(model) <= {"correct", "incorrect"}
    a = d["graders"][0]["agreement"]
    assert a["kappa_binary"] == pytest.approx(kappa([i["people"] for i in items], model), abs=1e-12)
    rules = d["graders"][0]["decided_by_rule"]
    assert calls == 100 - rules  # a rule's label costs no call
    assert f"kappa at correct: {a['kappa_binary']:.2f}" in out


# ------------------------------------------------------------------------------ the user's own files


def test_own_files_unicode_ids_empty_text_and_unjudged_query(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                2,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0
    d = qualification(tmp_path / "q")
    assert d["sample"]["items"] == 40 and d["sample"]["queries"] == 5
    assert all(i["chunk_id"] != "empty-one" for i in d["items"])  # no text, no grade to compare
    assert "chunk text empty: 1" in out
    assert {i["query_id"] for i in d["items"]} == {f"qé{i}" for i in range(5)}
    # the fake grades every pair as its people did, except grade-1..3 pairs whose words it misses
    assert d["graders"][0]["agreement"]["kappa"] == pytest.approx(
        kappa([i["people"] for i in d["items"]], [i["graders"][0] for i in d["items"]])
    )


@pytest.mark.parametrize(
    "bad, words",
    [
        ("qé0 0 dö0-1✓ 1\nq with space 0 d 2\n", "qrels.txt:43: expected 4 whitespace-separated columns"),
        ("qé0 0 dö0-1✓ 3\n", "judged twice"),
    ],
)
def test_bad_qrels_lines_named_before_any_call(tmp_path, capsys, bad, words):
    p = own_pairs(tmp_path / "d")
    with open(p["qrels"], "a", encoding="utf-8") as f:
        f.write(bad)
    with FakeLLM() as s:
        rc, out, err = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
        assert s.calls == 0
    assert rc == 1 and words in err and "Traceback" not in err


def test_scale_from_one_is_read_as_from_one(tmp_path, capsys):
    p = own_pairs(tmp_path / "d", shift=1)  # people grade 1 to 4, and nothing says from which grade is relevant
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
        assert s.calls == 0  # refused before any call: every pair would count as relevant
        assert rc == 1 and "--relevance-level" in err and "every pair would count as relevant" in err
        rc, _, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                3,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0
    d = qualification(tmp_path / "q")
    assert d["sample"]["relevant_from"] == 3
    assert d["graders"][0]["agreement"]["kappa_binary"] is not None  # not every pair at the bottom grade is relevant


def test_binary_cut_words_name_a_grade(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    p["qrels"].write_text(
        "".join(
            f"{q} 0 {c} {int(int(g) >= 2)}\n"
            for q, _, c, g in (x.split() for x in p["qrels"].read_text(encoding="utf-8").splitlines())
        ),
        encoding="utf-8",
    )
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0
    d = qualification(tmp_path / "q")
    a = d["graders"][0]["agreement"]
    people = [i["people"] >= 1 for i in d["items"]]
    # the judge's relevant grade (the items keep only relevant-or-not here: see the test below)
    model = [m if isinstance(m, bool) else m >= 2 for m in (i["graders"][0] for i in d["items"])]
    assert a["kappa_binary"] == pytest.approx(kappa(people, model))
    assert "grade >= 1" in out
    assert "True" not in out and ">= True" not in a["positive_words"]


def test_items_keep_the_graders_grade_on_another_scale(tmp_path, capsys):
    p = own_pairs(tmp_path / "d", top=4)  # people grade 0, 1, 2, 4
    with FakeLLM() as s:
        rc, _, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                2,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0
    items = qualification(tmp_path / "q")["items"]
    assert all(isinstance(i["graders"][0], int) and not isinstance(i["graders"][0], bool) for i in items)
    assert {i["graders"][0] for i in items} == {0, 1, 2, 3}


def test_relevance_level_above_every_grade_fails_before_calls(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                9,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
        assert s.calls == 0
    assert rc in (1, 2) and "9" in err


def test_relevance_note_names_the_cli_flag(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
                "--dry-run",
            ],
            capsys,
        )
    assert "give relevant_from=2" not in out and "--relevance-level 2" in out


# ------------------------------------------------------------------------------ sample size and seed


def test_size_larger_than_data_size_one_and_seeds(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    base = ["qualify", "judge", *data_flags(p), "--relevance-level", 2, "--model", "fake", "--no-cache"]
    with FakeLLM() as s:
        base += ["--base-url", s.url]
        assert run(base + ["--size", 1000, "-o", tmp_path / "big"], capsys)[0] == 0
        rc, _, err = run(base + ["--size", 1, "-o", tmp_path / "one"], capsys)  # one pair: one side of the cut
        assert rc == 2 and "cannot be measured beyond chance" in err
        samples = {}
        for seed in (0, 1, 0):
            assert (
                run(base + ["--size", 12, "--seed", seed, "-o", tmp_path / f"s{seed}x{len(samples)}"], capsys)[0] == 0
            )
            d = qualification(tmp_path / f"s{seed}x{len(samples)}")
            samples[(seed, len(samples))] = sorted((i["query_id"], i["chunk_id"]) for i in d["items"])
            assert d["sample"]["per_class"] == {"0": 3, "1": 3, "2": 3, "3": 3}
        assert run(base + ["--size", 0, "-o", tmp_path / "zero"], capsys)[0] == 2
    assert qualification(tmp_path / "big")["sample"]["items"] == 40
    assert not (tmp_path / "one" / "qualification.json").exists()
    assert samples[(0, 0)] == samples[(0, 2)] != samples[(1, 1)]


# ------------------------------------------------------------------------------ prompts and models


def user_prompt(path: Path, extra: str = "") -> Path:
    path.write_text(
        '[system]\nGrade the passage for the query from 0 to 3. Reply in JSON with "reasoning" and '
        f'"grade".\n[user]\nQuery: {{{{query}}}}\nPassage: {{{{passage}}}}\n{extra}',
        encoding="utf-8",
    )
    return path


def test_two_prompts_two_models_make_four_paired_graders(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    mine = user_prompt(tmp_path / "mine.txt")
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                2,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--model",
                "fake-8b",
                "--prompt",
                "short",
                "--prompt",
                mine,
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
        calls = s.calls
    assert rc == 0
    d = qualification(tmp_path / "q")
    assert [(g["grader"]["model"], Path(g["grader"]["prompt"]).name) for g in d["graders"]] == [
        ("fake", "short"),
        ("fake", "mine.txt"),
        ("fake-8b", "short"),
        ("fake-8b", "mine.txt"),
    ]
    assert d["graders"][0]["paired_with_first"] is None
    assert all(g["paired_with_first"] is not None for g in d["graders"][1:])
    assert out.count("against grader 1 on the same 40 items (paired)") == 3
    assert calls == 4 * 20  # 40 pairs, 20 distinct texts, per grader
    assert all(len(i["graders"]) == 4 for i in d["items"])
    recs = [json.loads(x) for x in Path(d["graders"][1]["output"]).read_text(encoding="utf-8").splitlines()]
    assert {r["prompt"].split("@")[0] for r in recs} == {"mine"}


def test_prompt_file_with_unknown_placeholder_alone_fails_with_file_and_line(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    bad = user_prompt(tmp_path / "bad.txt", "Title: {{title}}\n")
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--prompt",
                bad,
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
        assert s.calls == 0
    assert rc == 1 and "bad.txt:6: {{title}}" in err


@pytest.mark.parametrize("task", ["judge", "check"])
def test_bad_second_prompt_file_fails_before_any_call(tmp_path, capsys, task):
    p = own_pairs(tmp_path / "d")
    bad = user_prompt(tmp_path / "bad.txt", "Title: {{title}}\n")
    data = data_flags(p) if task == "judge" else ["--size", 10]
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                task,
                *data,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--prompt",
                "short",
                "--prompt",
                bad,
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
        calls = s.settled_calls()
    assert rc == 1 and "bad.txt:" in err
    assert calls == 0


# ------------------------------------------------------------------------------ dry run, reruns, failures


def test_dry_run_calls_nothing_and_predicts_the_calls(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    mine = user_prompt(tmp_path / "mine.txt")
    args = [
        "qualify",
        "judge",
        *data_flags(p),
        "--model",
        "fake",
        "--prompt",
        "short",
        "--prompt",
        mine,
        "--no-cache",
        "-o",
        tmp_path / "q",
    ]
    with FakeLLM() as s:
        rc, out, _ = run(args + ["--base-url", s.url, "--dry-run"], capsys)
        assert rc == 0 and s.calls == 0
        assert not (tmp_path / "q" / "qualification.json").exists()
        predicted = [int(x.split("calls: ")[1].split()[0]) for x in out.splitlines() if x.strip().startswith("calls:")]
        assert predicted == [20, 20]
        assert run(args + ["--base-url", s.url], capsys)[0] == 0
        assert s.calls == sum(predicted)
        rc, out, _ = run(args + ["--base-url", s.url, "--dry-run"], capsys)
        assert out.count("(40 already done") == 2


def test_rerun_into_the_same_folder_asks_nothing_and_mixes_no_old_sample(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    base = ["qualify", "judge", *data_flags(p), "--relevance-level", 2, "--model", "fake", "--no-cache"]
    with FakeLLM() as s:
        base += ["--base-url", s.url]
        assert run(base + ["--size", 12, "-o", tmp_path / "q"], capsys)[0] == 0
        first = s.calls
        assert run(base + ["--size", 12, "-o", tmp_path / "q"], capsys)[0] == 0
        assert s.calls == first  # resumed from the records: nothing asked again
        assert run(base + ["--size", 8, "--seed", 1, "-o", tmp_path / "q"], capsys)[0] == 0
        assert run(base + ["--size", 8, "--seed", 1, "-o", tmp_path / "fresh"], capsys)[0] == 0
    mixed, fresh = qualification(tmp_path / "q"), qualification(tmp_path / "fresh")
    assert len(mixed["items"]) == 8
    assert mixed["items"] == fresh["items"]
    assert mixed["graders"][0]["agreement"] == fresh["graders"][0]["agreement"]


def test_rerun_with_the_prompts_in_another_order_asks_nothing(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    mine = user_prompt(tmp_path / "mine.txt")
    base = ["qualify", "judge", *data_flags(p), "--model", "fake", "--no-cache", "-o", tmp_path / "q"]
    with FakeLLM() as s:
        base += ["--base-url", s.url]
        assert run(base + ["--prompt", "short", "--prompt", mine], capsys)[0] == 0
        first = s.calls
        assert run(base + ["--prompt", mine, "--prompt", "short"], capsys)[0] == 0
        assert s.calls == first


def test_dead_endpoint_exit_1_then_a_rerun_finishes(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    base = ["qualify", "judge", *data_flags(p), "--model", "fake", "--no-cache", "--size", 8, "-o", tmp_path / "q"]
    rc, out, err = run(base + ["--base-url", dead_url()], capsys)
    assert rc == 1 and "could not connect" in err and "Traceback" not in err
    assert not (tmp_path / "q" / "qualification.json").exists()
    with FakeLLM() as s:
        rc, _, _ = run(base + ["--base-url", s.url], capsys)
    assert rc == 0 and qualification(tmp_path / "q")["graders"][0]["errors"] == 0


def test_max_calls_stop_is_said_and_exits_3(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                2,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "--max-calls",
                5,
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
        assert s.settled_calls() <= 5
    a = qualification(tmp_path / "q")["graders"][0]["agreement"]
    assert a["n"] < 40  # the figures rest on the pairs graded before the stop
    assert rc == 3 and "error records: 0 of 40" not in out


def test_garbage_answers_are_error_records_left_out(tmp_path, capsys, monkeypatch):
    """Every request about bicycles gets the same prose (no JSON), asked again or not; the rest answer
    loosely first (a grade 2.5) and right when asked again."""
    p = own_pairs(tmp_path / "d")
    real = fake_llm.habit_reply

    def some_garbage(body, habit, context=None, reply_id="fake"):
        said = " ".join(m.get("content") or "" for m in body["messages"])
        return real(body, "repeat_invalid" if "bicycle" in said else "loose_decisions", context, reply_id)

    monkeypatch.setattr(fake_llm, "habit_reply", some_garbage)
    with FakeLLM(habit="prose") as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                2,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--prompt",
                "full",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 3
    d = qualification(tmp_path / "q")
    g = d["graders"][0]
    bad = [i for i in d["items"] if i["query_id"] == "qé1"]
    assert g["errors"] == len(bad) == 8 and all(i["graders"] == [None] for i in bad)
    a = g["agreement"]
    assert a["n"] == 32 and a["missing"] == 8
    good = [i for i in d["items"] if i["graders"][0] is not None]
    assert a["kappa"] == pytest.approx(kappa([i["people"] for i in good], [i["graders"][0] for i in good]))
    assert "without a label (error records, or not asked): 8 of 40 pairs, left out of the figures" in out


def test_json_format_is_the_qualification_file_and_agrees_with_the_text(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    base = ["qualify", "judge", *data_flags(p), "--relevance-level", 2, "--model", "fake", "--no-cache"]
    with FakeLLM() as s:
        rc, out, _ = run(base + ["--base-url", s.url, "-o", tmp_path / "q", "--format", "json"], capsys)
        assert rc == 0
        shown = json.loads(out)
        rc, text, _ = run(base + ["--base-url", s.url, "-o", tmp_path / "q"], capsys)
    assert shown == qualification(tmp_path / "q") or shown["items"] == qualification(tmp_path / "q")["items"]
    a = shown["graders"][0]["agreement"]
    lo, hi = a["kappa_ci"]
    assert f"kappa over all labels: {a['kappa']:.2f} (95% interval {lo:.2f} to {hi:.2f})" in text
    assert f"labelled as people did: {a['exact_agreement']:.0%} of {a['n']} pairs" in text


# ------------------------------------------------------------------------------ runs and Kendall's tau


def write_runs(folder: Path, qrels: Path) -> dict[str, Path]:
    by: dict[str, list[tuple[str, int]]] = {}
    for q, _, d, g in (x.split() for x in qrels.read_text(encoding="utf-8").splitlines()):
        by.setdefault(q, []).append((d, int(g)))
    rnd = random.Random(3)
    orders = {
        "best": lambda docs: sorted(docs, key=lambda x: (-x[1], x[0])),
        "worst": lambda docs: sorted(docs, key=lambda x: (x[1], x[0])),
        "mid": lambda docs: rnd.sample(docs, len(docs)),
    }
    paths = {}
    for name, order in orders.items():
        paths[name] = folder / f"{name}.run"
        paths[name].write_text(
            "".join(
                f"{q} Q0 {d} {r + 1} {100 - r} {name}\n"
                for q, docs in by.items()
                for r, (d, _) in enumerate(order(docs))
            ),
            encoding="utf-8",
        )
    return paths


@pytest.mark.parametrize("size", [40, 4])
def test_runs_scored_by_hand_and_ranked(tmp_path, capsys, size):
    p = own_pairs(tmp_path / "d")
    runs = write_runs(tmp_path / "d", p["qrels"])
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                2,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "--size",
                size,
                "-o",
                tmp_path / "q",
                *sum((["--run", r] for r in runs.values()), []),
            ],
            capsys,
        )
    assert rc == 0
    d = qualification(tmp_path / "q")
    people = {(i["query_id"], i["chunk_id"]): i["people"] for i in d["items"]}
    model = {(i["query_id"], i["chunk_id"]): i["graders"][0] for i in d["items"]}
    ranking = d["graders"][0]["ranking"]
    for name, path in nonempty(runs.items()):
        assert ranking["runs"][name]["reference"] == pytest.approx(ndcg10(path, people), abs=1e-9)
        assert ranking["runs"][name]["candidate"] == pytest.approx(ndcg10(path, model), abs=1e-9)
    assert "3 runs ranked by ndcg@10: Kendall's tau" in out


def test_two_runs_of_one_tag_are_kept_apart(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    runs = write_runs(tmp_path / "d", p["qrels"])
    twin = tmp_path / "d" / "twin.run"
    twin.write_text(runs["best"].read_text(encoding="utf-8").replace(" best\n", " worst\n"), encoding="utf-8")
    with FakeLLM() as s:
        rc, _, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--relevance-level",
                2,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
                "--run",
                twin,
                "--run",
                runs["worst"],
            ],
            capsys,
        )
    assert rc == 0
    scores = sorted(r["reference"] for r in qualification(tmp_path / "q")["graders"][0]["ranking"]["runs"].values())
    assert len(scores) == 2 and scores[1] == pytest.approx(1.0) and scores[0] < 0.7


def test_one_run_is_a_usage_error(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    runs = write_runs(tmp_path / "d", p["qrels"])
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
                "--run",
                runs["best"],
            ],
            capsys,
        )
        assert s.settled_calls() == 0
    assert rc == 2 and "two or more --run" in err


def test_a_run_with_no_sampled_query_loses_nothing(tmp_path, capsys):
    p = own_pairs(tmp_path / "d")
    runs = write_runs(tmp_path / "d", p["qrels"])
    nothing = tmp_path / "d" / "nothing.run"
    nothing.write_text("q-unjudged Q0 dö0-1✓ 1 1 nothing\n", encoding="utf-8")
    with FakeLLM() as s:
        rc, _, _ = run(
            [
                "qualify",
                "judge",
                *data_flags(p),
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
                "--run",
                runs["best"],
                "--run",
                nothing,
                "--run",
                runs["worst"],
            ],
            capsys,
        )
        calls = s.settled_calls()
    # either refused before any call, or the figures are written (the run left out with a note)
    assert (rc != 0 and calls == 0) or (tmp_path / "q" / "qualification.json").exists()


# ------------------------------------------------------------------------------ check on the user's answers

QA = [
    ("who wrote the piano sonata moonlight", "Ludwig van Beethoven"),
    ("capital city of australia", "Canberra"),
    ("largest planet in the solar system", "Jupiter"),
    ("inventor of the telephone", "Alexander Graham Bell"),
    ("author of hamlet tragedy", "William Shakespeare"),
    ("chemical symbol for gold element", "Aurum gold"),
]


def own_answers(folder: Path, sep: str = "") -> dict[str, Path]:
    """Four answers to each of six questions (right, declined, wrong, half), with people's labels in
    two classes and in the check's four; ``sep`` goes inside every id."""
    folder.mkdir(parents=True, exist_ok=True)
    answers, two, four = [], [], []
    for i, (q, ref) in enumerate(QA):
        for k, (resp, l2, l4) in enumerate(
            [
                (f"It was {ref}.", "correct", "correct"),
                ("I do not know.", "incorrect", "abstained"),
                ("Somebody else entirely", "incorrect", "hallucinated"),
                (ref.split()[0] + " maybe", "incorrect", "partial"),
            ]
        ):
            aid = f"é{i}·{k}{sep}ü"
            answers.append({"id": aid, "question": q, "reference": ref, "response": resp})
            two.append({"id": aid, "label": l2, "assessor": "me"})
            four.append({"id": aid, "label": l4, "assessor": "me"})
    out = {}
    for name, rows in (("answers", answers), ("labels2", two), ("labels4", four)):
        out[name] = folder / f"{name}.jsonl"
        out[name].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return out


@pytest.mark.parametrize(
    "labels, classes",
    [("labels2", {"correct", "incorrect"}), ("labels4", {"correct", "partial", "hallucinated", "abstained"})],
)
def test_check_on_own_labels_two_or_four_classes(tmp_path, capsys, labels, classes):
    f = own_answers(tmp_path / "c")
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "check",
                "--answers",
                f["answers"],
                "--labels",
                f[labels],
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0
    d = qualification(tmp_path / "q")
    items = d["items"]
    assert len(items) == 24 and {i["people"] for i in items} == classes
    given = [i["graders"][0] for i in items]  # the checker's label as given: one of its four
    assert set(given) <= {"correct", "partial", "hallucinated", "abstained"}
    model = given if len(classes) == 4 else ["correct" if g == "correct" else "incorrect" for g in given]
    a = d["graders"][0]["agreement"]
    right = lambda x: x == "correct"  # noqa: E731
    assert a["kappa_binary"] == pytest.approx(kappa([right(i["people"]) for i in items], [right(m) for m in model]))
    if len(classes) == 4:
        assert a["kappa"] == pytest.approx(kappa([i["people"] for i in items], model))


def test_check_labels_that_meet_no_answer_and_some(tmp_path, capsys):
    f = own_answers(tmp_path / "c")
    none = tmp_path / "c" / "none.jsonl"
    none.write_text(
        "".join(json.dumps({"id": f"nope-{j}", "label": "correct", "assessor": "me"}) + "\n" for j in range(5)),
        encoding="utf-8",
    )
    some = tmp_path / "c" / "some.jsonl"
    some.write_text(
        f["labels2"].read_text(encoding="utf-8").splitlines(keepends=True)[0] * 1
        + "".join(f["labels2"].read_text(encoding="utf-8").splitlines(keepends=True)[1:5])
        + none.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                "check",
                "--answers",
                f["answers"],
                "--labels",
                none,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q0",
            ],
            capsys,
        )
        assert rc == 1 and "no answer ids in common" in err and s.calls == 0
        rc, out, _ = run(
            [
                "qualify",
                "check",
                "--answers",
                f["answers"],
                "--labels",
                some,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q1",
            ],
            capsys,
        )
    assert rc == 0 and qualification(tmp_path / "q1")["sample"]["items"] == 5
    assert "19 of 24 in the answers are not in the labels" in out


def test_check_labels_with_spaced_ids(tmp_path, capsys):
    f = own_answers(tmp_path / "c", sep=" ")
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                "check",
                "--answers",
                f["answers"],
                "--labels",
                f["labels2"],
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0, err


def test_check_labels_some_without_assessor(tmp_path, capsys):
    f = own_answers(tmp_path / "c")
    rows = [json.loads(x) for x in f["labels2"].read_text(encoding="utf-8").splitlines()]
    for r in rows[::2]:
        del r["assessor"]
    f["labels2"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with FakeLLM() as s:
        rc, _, err = run(
            [
                "qualify",
                "check",
                "--answers",
                f["answers"],
                "--labels",
                f["labels2"],
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0, err


def test_check_on_an_evouna_shaped_file(tmp_path, capsys):
    rows = []
    for q, ref in QA:
        rows.append(
            {
                "question": q,
                "golden_answer": f"{ref}/{ref.split()[-1]}",
                "answer_fid": ref,
                "judge_fid": True,
                "answer_gpt35": "no idea",
                "judge_gpt35": False,
                "answer_chatgpt": f"The answer is {ref}",
                "judge_chatgpt": True,
                "answer_gpt4": "Something else",
                "judge_gpt4": False,
                "answer_newbing": "Somebody",
                "judge_newbing": False,
                "improper": False,
            }
        )
    rows.append({**rows[0], "question": "an improper one", "improper": True})
    path = tmp_path / "NQ.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    with FakeLLM() as s:
        rc, out, _ = run(
            [
                "qualify",
                "check",
                "--answers",
                path,
                "--base-url",
                s.url,
                "--model",
                "fake",
                "--no-cache",
                "-o",
                tmp_path / "q",
            ],
            capsys,
        )
    assert rc == 0
    d = qualification(tmp_path / "q")
    assert d["sample"]["items"] == 30  # five models' answers to six proper questions
    assert Counter(i["people"] for i in d["items"]) == {"correct": 12, "incorrect": 18}
    assert all(i["id"].startswith("NQ-") for i in d["items"])
    assert "EVOUNA" in out


# ------------------------------------------------------------------------------ the documentation


def test_the_site_documents_the_qualify_command():
    readme = (Path(__file__).parents[2] / "docs" / "commands" / "qualify.md").read_text(encoding="utf-8")
    assert "ragassay qualify judge" in readme and "ragassay qualify check" in readme
