"""What the two qualifications share: graders checked before any call, the stratified sample every
grader is asked, each grader's output named by its model and prompt, the reasons of its errors
tallied, and every grader after the first paired with the first on the same items."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.people_samples import stratified_sample
from ..errors import UsageError
from ..llm.prompt_files import choose_prompt
from ..metrics.qualification import paired_difference
from .qualify_results import Grader, GraderOutcome


def check_graders(graders: Sequence[Grader], stage: str) -> None:
    """Every grader is sound before any of them is asked anything: a prompt file of the second
    grader that names an unknown placeholder must not wait for the first grader's calls."""
    if not graders:
        raise UsageError("qualify needs at least one model and prompt to qualify")
    seen = set()
    for g in graders:
        if g in seen:
            raise UsageError(f"{g.name()} is given twice: each grader is asked once")
        seen.add(g)
        choose_prompt(stage, g.prompt, g.model)  # raises, naming the file and line, on a bad prompt file


def both_sides(people: Sequence, positive: set, what: str, flag: str) -> None:
    """People's labels on one side of the relevant cut measure nothing beyond chance: said before any call."""
    sides = {p in positive for p in people}
    if len(sides) == 1:
        side = "relevant" if sides == {True} else "not relevant"
        raise UsageError(
            f"every sampled {what} is {side} by people's labels: agreement with them cannot be measured "
            f"beyond chance; {flag}"
        )


def draw_sample(labels: Mapping[Any, Hashable], size: int | None, seed: int) -> list:
    if not labels:
        raise UsageError("the people-labelled data holds no item to qualify on")
    return stratified_sample(labels, len(labels) if size is None else min(size, len(labels)), seed)


def grader_output(output: str | Path | None, stem: str, grader: Grader) -> Path | None:
    """Each grader's records under a name made of its model and prompt, never of its place in the
    command: the same grader finds its records again when prompts are reordered or one is added."""
    if output is None:
        return None
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    prompt = grader.prompt
    if prompt not in ("auto", "full", "short"):  # a file: its stem, and a hash of where it is
        path = str(Path(prompt).expanduser().resolve())
        prompt = f"{Path(prompt).stem}-{hashlib.sha256(path.encode('utf-8')).hexdigest()[:6]}"
    name = re.sub(r"[^\w.-]+", "_", f"{grader.model or 'default-model'}.{prompt}")
    return folder / f"{stem}.{name}.jsonl"


def error_reason(error: Any) -> str:
    """An error record's reason, shortened to its kind (the first clause), for a tally."""
    text = str(error or "no label").strip()
    if text == NOT_ASKED:
        return text
    return text.split(":")[0][:80] if ":" in text else text[:80]


NOT_ASKED = (
    "not asked: the run stopped before it (a --max-calls or --max-cost ceiling, or answers still to come "
    "from a batch); rerun to finish"
)


def count_unasked(keys: Sequence, labels: dict, reasons: Counter[str]) -> None:
    """Sampled items the stage wrote no record of are missing from the figures, and counted so."""
    missing = sum(1 for k in keys if k not in labels)
    if missing:
        reasons[NOT_ASKED] += missing


def pair_with_first(
    outcomes: list[GraderOutcome], people: list, keys: list, classes: Sequence, positive: set, seed: int
) -> None:
    """Each grader after the first is compared with the first on the same items (paired)."""
    if len(outcomes) < 2:
        return
    first = [outcomes[0].labels.get(k) for k in keys]
    for o in outcomes[1:]:
        o.paired = paired_difference(people, [o.labels.get(k) for k in keys], first, classes, positive, seed=seed)
