"""Make the people-labelled answers sample shipped in the package (src/ragassay/samples/evouna_sample.jsonl).

EVOUNA (Wang et al. 2023, "Evaluating Open-QA Evaluation", arXiv 2305.12421; the repository
wangcunxiang/QA-Eval, Apache-2.0) holds people's true/false on the answers five QA models gave to
Natural Questions and TriviaQA questions. This script reads its two files with ragassay's own
reader (improper questions, missing judgments and empty answers left out) and draws, seeded, an
equal number from each (people's label, dataset, model) cell: 200 answers by default, 100 judged
correct and 100 incorrect, 10 in each of the 20 cells. Each line is an answer in ragassay's fields
(id, question, reference as the list of accepted answers, response) with the people's label and
``assessor``, so ``check`` reads it as answers and ``read_labelled_answers`` with its labels.

    git clone https://github.com/wangcunxiang/QA-Eval
    python benchmarks/make_evouna_sample.py QA-Eval/EVOUNA            # writes the sample in the package

The sample in the package was made from commit 90007d39d4ef0720984f80d56a586c66d6241e70 with the
defaults (seed 46, 200 answers).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragassay.data.people_files import read_evouna
from ragassay.data.people_samples import SAMPLES, stratified_sample

ASSESSOR = "EVOUNA annotators"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="EVOUNA's folder (NQ.json and TQ.json)")
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--seed", type=int, default=46)
    parser.add_argument("-o", "--output", type=Path, default=SAMPLES / "evouna_sample.jsonl")
    args = parser.parse_args()
    items, labels = {}, {}
    for name in ("NQ.json", "TQ.json"):
        got = read_evouna(args.folder / name)
        print(f"{name}: {len(got.answers)} people-judged answers; left out: {got.skipped}")
        for a in got.answers:
            if a.response.strip():  # an empty answer is a rule's case, not a judge's: not in the sample
                items[a.id] = a
                labels[a.id] = got.labels[a.id]
    cells = {aid: (labels[aid], aid.split("-")[0], aid.rsplit("-", 1)[1]) for aid in items}
    chosen = sorted(stratified_sample(cells, args.size, args.seed), key=_natural)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        for aid in chosen:
            a = items[aid]
            f.write(
                json.dumps(
                    {
                        "id": a.id,
                        "question": a.question,
                        "reference": a.reference,
                        "response": a.response,
                        "label": labels[aid],
                        "assessor": ASSESSOR,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    counts: dict[str, int] = {}
    for aid in chosen:
        counts[labels[aid]] = counts.get(labels[aid], 0) + 1
    print(f"wrote {len(chosen)} answers to {args.output}: {counts}")


def _natural(aid: str) -> tuple[str, int, str]:
    stem, index, model = aid.split("-")
    return (stem, int(index), model)


if __name__ == "__main__":
    main()
