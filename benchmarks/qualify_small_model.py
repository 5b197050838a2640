"""Qualify ragassay's prompts and short published-style prompts against people, with a model you serve.

Measures what docs/qualify.md quotes: relevance on a seeded sample of TREC DL 2019 passage
judgments (NIST assessors, 0-3) and answer correctness on a held-out sample of EVOUNA (people's
true/false on model answers to NQ and TriviaQA questions). Neither data set ships with ragassay
for this: fetch them yourself (MS MARCO's passages are for research use only).

    python benchmarks/qualify_small_model.py --dl19 DIR --evouna DIR --umbrela DIR --base-url http://127.0.0.1:8077/v1 \
        --model qwen2.5-coder-1.5b-instruct --out qualify-bench/

DIR for --dl19 holds 2019qrels-pass.txt, msmarco-test2019-queries.tsv and dl2019_document.jsonl
(as in the public repository naghmefarzi/llmjudge, data/dl2019/); DIR for --evouna holds NQ.json and
TQ.json (github.com/wangcunxiang/QA-Eval, EVOUNA/). The samples drawn are written to --out first,
so a run can be repeated on the very same items; the two comparison prompts are written there too:
UMBRELA's published zero-shot relevance prompt, read from a checkout of castorini/umbrela (--umbrela
DIR) with its answer asked as JSON, and a plain yes/no answer grader.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

PAIRS_PER_GRADE = 20  # 80 pairs: a small model at ~10 s a call finishes each prompt in about 15 min
HELD_PER_GRADE = 40  # 160 held-out pairs, none of the 80 above: the prompts were written looking at those 80
ANSWERS_PER_LABEL = 40

UMBRELA_FILE = "src/umbrela/prompts/prompt_templates/qrel_zeroshot_bing.yaml"
UMBRELA_ASKS = "Provide each score in the format of: ##final score: score without providing any reasoning."
JSON_ASKS = 'Provide the final score as JSON {"grade": score} without providing any reasoning.'


def umbrela_prompt(checkout: Path) -> str:
    """UMBRELA's published zero-shot prompt, read from a checkout of castorini/umbrela (not copied
    here), as a ragassay prompt file: its {query}/{passage} become placeholders and its last line asks
    for the score as the judge's JSON instead of "##final score: N"."""
    lines = (checkout / UMBRELA_FILE).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("prefix_user:")) + 1
    body = [line[2:] if line.startswith("  ") else line for line in lines[start:]]
    text = "\n".join(body).rstrip().replace("{query}", "{{query}}").replace("{passage}", "{{passage}}")
    if UMBRELA_ASKS not in text:
        raise SystemExit(
            f"{checkout / UMBRELA_FILE}: the prompt's last instruction is not the one this script replaces"
        )
    return "[user]\n" + text.replace(UMBRELA_ASKS, JSON_ASKS) + "\n"


YES_NO = """[user]
Question: {{question}}
Gold answers: {{reference}}
Candidate answer: {{response}}

Is the candidate answer correct? Answer with JSON: {"label": "correct"} if yes, {"label": "hallucinated"} if no.
"""


def dl19_sample(
    folder: Path,
    out: Path,
    seed: int = 46,
    per_grade: int = PAIRS_PER_GRADE,
    exclude: frozenset[tuple[str, str]] = frozenset(),
    name: str = "dl19",
) -> list[str]:
    """``per_grade`` judged pairs of each grade, drawn with ``seed`` from the pairs not in ``exclude``:
    qrels, queries and passages written to ``out`` as NAME.qrels, NAME.queries.jsonl, NAME.chunks.jsonl."""
    rng = random.Random(seed)
    by_grade: dict[int, list[tuple[str, str, int]]] = {}
    for line in (folder / "2019qrels-pass.txt").read_text().splitlines():
        q, _, d, g = line.split()
        if (q, d) not in exclude:
            by_grade.setdefault(int(g), []).append((q, d, int(g)))
    picked = []
    for g in sorted(by_grade):
        rows = sorted(by_grade[g])
        rng.shuffle(rows)
        picked += rows[:per_grade]
    queries = dict(line.split("\t", 1) for line in (folder / "msmarco-test2019-queries.tsv").read_text().splitlines())
    wanted = {d for _, d, _ in picked}
    docs = {}
    for line in (folder / "dl2019_document.jsonl").read_text().splitlines():
        obj = json.loads(line)
        if obj["docid"] in wanted:
            docs[obj["docid"]] = obj["doc"]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in sorted(picked)))
    (out / f"{name}.queries.jsonl").write_text(
        "".join(json.dumps({"id": q, "text": queries[q].strip()}) + "\n" for q in sorted({q for q, _, _ in picked}))
    )
    (out / f"{name}.chunks.jsonl").write_text(
        "".join(json.dumps({"id": d, "text": docs[d]}) + "\n" for d in sorted(wanted))
    )
    return [str(out / f"{name}.qrels"), str(out / f"{name}.queries.jsonl"), str(out / f"{name}.chunks.jsonl")]


def pairs_in(qrels: str) -> frozenset[tuple[str, str]]:
    """The (query, passage) pairs a TREC qrels file judges: what the held-out sample leaves out."""
    return frozenset((cols[0], cols[2]) for cols in (line.split() for line in Path(qrels).read_text().splitlines()))


def evouna_heldout(folder: Path, out: Path, seed: int = 2026) -> list[str]:
    """ANSWERS_PER_LABEL answers people accepted and as many they rejected, none of them in the sample
    ragassay ships (so the figure is not measured on what the bundled sample shows)."""
    from ragassay.data.people_samples import bundled_answers, read_labelled_answers

    shipped = {(a.question, a.response) for a in bundled_answers().answers}
    pool: dict[str, list] = {"correct": [], "incorrect": []}
    for name in ("NQ.json", "TQ.json"):
        answers = read_labelled_answers(folder / name)
        for a in answers.answers:
            if (a.question, a.response) not in shipped and a.response.strip():
                pool[answers.labels[a.id]].append(a)
    rng = random.Random(seed)
    picked = []
    for label in ("correct", "incorrect"):
        rows = sorted(pool[label], key=lambda a: a.id)
        rng.shuffle(rows)
        picked += [(a, label) for a in rows[:ANSWERS_PER_LABEL]]
    picked.sort(key=lambda x: x[0].id)
    out.mkdir(parents=True, exist_ok=True)
    (out / "evouna.answers.jsonl").write_text(
        "".join(
            json.dumps(
                {"id": a.id, "question": a.question, "reference": a.reference, "response": a.response},
                ensure_ascii=False,
            )
            + "\n"
            for a, _ in picked
        ),
        encoding="utf-8",
    )
    (out / "evouna.labels.jsonl").write_text(
        "".join(json.dumps({"id": a.id, "label": label}) + "\n" for a, label in picked)
    )
    return [str(out / "evouna.answers.jsonl"), str(out / "evouna.labels.jsonl")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dl19", type=Path, required=True)
    ap.add_argument("--evouna", type=Path, required=True)
    ap.add_argument("--umbrela", type=Path, required=True, help="a checkout of github.com/castorini/umbrela")
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", type=Path, default=Path("qualify-bench"))
    args = ap.parse_args()
    out = args.out
    qrels, queries, chunks = dl19_sample(args.dl19, out)
    held = dl19_sample(args.dl19, out, seed=2027, per_grade=HELD_PER_GRADE, exclude=pairs_in(qrels), name="dl19-held")
    answers, labels = evouna_heldout(args.evouna, out)
    (out / "umbrela_zeroshot.txt").write_text(umbrela_prompt(args.umbrela), encoding="utf-8")
    (out / "yes_no.txt").write_text(YES_NO)
    llm = ["--model", args.model, "--base-url", args.base_url, "--timeout", "600", "--concurrency", "1"]
    runs = [
        [
            "qualify",
            "judge",
            "--qrels",
            qrels,
            "--queries",
            queries,
            "--chunks",
            chunks,
            "--relevance-level",
            "2",
            "--size",
            str(4 * PAIRS_PER_GRADE),
            "--prompt",
            "full",
            "--prompt",
            "short",
            "--prompt",
            str(out / "umbrela_zeroshot.txt"),
            "-o",
            str(out / "judge"),
            *llm,
        ],
        [
            "qualify",
            "judge",
            "--qrels",
            held[0],
            "--queries",
            held[1],
            "--chunks",
            held[2],
            "--relevance-level",
            "2",
            "--size",
            str(4 * HELD_PER_GRADE),
            "--prompt",
            "short",
            "--prompt",
            str(out / "umbrela_zeroshot.txt"),
            "-o",
            str(out / "judge-held"),
            *llm,
        ],
        [
            "qualify",
            "check",
            "--answers",
            answers,
            "--labels",
            labels,
            "--size",
            str(2 * ANSWERS_PER_LABEL),
            "--prompt",
            "short",
            "--prompt",
            str(out / "yes_no.txt"),
            "--prompt",
            "full",
            "-o",
            str(out / "check"),
            *llm,
        ],
    ]
    worst = 0
    for argv in runs:
        print("$ ragassay " + " ".join(argv), flush=True)
        worst = max(worst, subprocess.call([sys.executable, "-m", "ragassay", *argv]))
    return worst


if __name__ == "__main__":
    sys.exit(main())
