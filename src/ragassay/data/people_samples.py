"""People-labelled data to qualify a judge against: people's relevance grades of (query, chunk)
pairs and people's labels of answers, from the user's files, the bundled samples or public sets.

A judge's agreement with people means something only when it is measured on labels people made,
on pairs whose texts the judge can read. So every reader here keeps the texts beside the labels,
says what it left out and why (a pair whose chunk is not in the chunks file, an answer people did
not judge) in counts, never silently, and refuses labels whose origin says a model made them. The
scale and the relevant grade come from the labels' sidecar (``FILE.origin.json``) unless given.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InputError
from .joins import Join
from .line_problems import LineProblems
from .lines import read_bytes_checked
from .origin import Labeller, Origin, label_origin
from .peer_files.sample_files import answer_rows
from .people_files import answer_labels, is_evouna, read_answer_labels, read_chunk_texts, read_evouna
from .people_labels import GradedPairs, LabelledAnswers
from .public_sets import PUBLIC, public_pairs
from .qrels_files import read_qrels
from .query_files import read_queries
from .record_validation import read_records
from .records import AnswerItem

__all__ = [
    "PUBLIC",
    "GradedPairs",
    "LabelledAnswers",
    "bundled_answers",
    "bundled_pairs",
    "public_pairs",
    "read_graded_pairs",
    "read_labelled_answers",
    "stratified_sample",
]

K = TypeVar("K")

SAMPLES = Path(__file__).resolve().parents[1] / "samples"  # the people-labelled sample shipped in the wheel
EXAMPLE = Path(__file__).resolve().parents[1] / "example"
EVOUNA_SAMPLE = "evouna_sample.jsonl"
EVOUNA_CITATION = (
    "Wang et al. 2023, Evaluating Open-QA Evaluation, NeurIPS Datasets and Benchmarks, "
    "arXiv 2305.12421 (EVOUNA, github.com/wangcunxiang/QA-Eval, Apache-2.0)"
)


# ------------------------------------------------------------------------------ graded pairs


def read_graded_pairs(
    qrels: str | Path,
    queries: str | Path,
    chunks: str | Path,
    second: str | Path | None = None,
    *,
    relevant_from: int | None = None,
    scale: tuple[int, int] | None = None,
    source: str | None = None,
    citation: str | None = None,
) -> GradedPairs:
    """People's grades from a qrels file (TREC's four columns, or any qrels ragassay reads) with the
    texts of its queries (TSV ``id<TAB>text`` or JSON Lines) and chunks (JSON Lines or TSV). The
    scale and the relevant grade are ``scale``/``relevant_from`` when given, else the qrels' sidecar's,
    else the grades seen and 1 (said in ``notes``: TREC Deep Learning counts from 2, pass it).
    ``second`` is another person's qrels of some of the same pairs (the ceiling of agreement)."""
    q = read_qrels(qrels)
    origin = _people_only(q.origin, qrels)
    table = q.to_dict()
    rows = {(qid, cid): int(g) for qid, docs in table.items() for cid, g in docs.items()}
    texts = read_queries(queries)
    chunk_ids = {cid for _, cid in rows}
    found = read_chunk_texts(chunks, chunk_ids)
    grades: dict[tuple[str, str], int] = {}
    dropped: Counter = Counter()
    for (qid, cid), g in rows.items():
        if qid not in texts:
            dropped[f"query not in {Path(queries).name}"] += 1
        elif cid not in found:
            dropped[f"chunk not in {Path(chunks).name}"] += 1
        elif not found[cid].text.strip():
            dropped["chunk text empty"] += 1
        else:
            grades[(qid, cid)] = g
    if not grades:
        raise InputError(
            f"none of its {len(rows)} people-labelled pairs has both texts ({_reasons(dropped)}): are "
            f"{queries} and {chunks} the queries and chunks these labels were made on?",
            qrels,
        )
    notes = []
    if dropped:
        notes.append(
            f"{sum(dropped.values())} of {len(rows)} people-labelled pairs have no text and are left out "
            f"({_reasons(dropped)})"
        )
    seen = sorted({g for g in rows.values()})
    scale, relevant_from, assumed = _scale(scale, relevant_from, origin, seen, qrels)
    notes += assumed
    second_grades, second_origin, join = None, None, None
    if second is not None:
        second_grades, second_origin, join, second_notes = _second(second, origin, grades, qrels)
        notes += second_notes
        if second_origin.scale is not None and origin.scale is not None and second_origin.scale != origin.scale:
            raise InputError(
                f"the second assessor's scale {second_origin.scale[0]}-{second_origin.scale[1]} is not "
                f"the first's ({origin.scale[0]}-{origin.scale[1]}, {qrels}): grades on two scales "
                "cannot be compared",
                second,
            )
    used = {qid for qid, _ in grades}
    return GradedPairs(
        queries={k: v for k, v in texts.items() if k in used},
        chunks={cid: found[cid] for _, cid in grades},
        grades=grades,
        second=second_grades,
        scale=scale,
        relevant_from=relevant_from,
        source=source or f"people's grades in {qrels} ({origin.describe()}), texts from {queries} and {chunks}",
        citation=citation,
        dropped=dict(dropped),
        notes=tuple(notes),
        origin=origin,
        second_origin=second_origin,
        second_join=join,
    )


def _people_only(origin: Origin | None, path: str | Path) -> Origin:
    """The labels' origin, refused when it says a model made (some of) them: a judge is qualified
    against people, not against another model (nor itself)."""
    origin = origin or Origin()
    if any(lab.by == "model" for lab in origin.labellers):  # people beside unnamed lines are still people
        raise InputError(
            f"its origin says {origin.describe()} made these labels ({origin.kind}), not people: a judge "
            "is qualified against people's labels",
            path,
        )
    return origin


def _scale(
    scale: tuple[int, int] | None, relevant_from: int | None, origin: Origin, seen: list[int], path: str | Path
) -> tuple[tuple[int, int], int, list[str]]:
    notes = []
    if relevant_from is None:
        relevant_from = origin.relevant_from
        if relevant_from is None:
            if seen and seen[0] >= 1 and origin.scale is None and scale is None:
                raise InputError(
                    f"no grade below {seen[0]} and nothing says from which grade a pair is relevant "
                    f"(no {Path(path).name}.origin.json): every pair would count as relevant; give "
                    "--relevance-level N (relevant_from=N in Python)",
                    path,
                )
            relevant_from = 1
            if seen and seen[-1] >= 3:
                notes.append(
                    f"relevant from 1 assumed (no sidecar {Path(path).name}.origin.json says; grades reach "
                    f"{seen[-1]}: TREC Deep Learning counts from 2, give --relevance-level 2 for it, "
                    "relevant_from=2 in Python)"
                )
    if scale is None:
        scale = origin.scale
        if scale is None:
            low, high = min(0, seen[0]), seen[-1]
            scale = (low, high if high > low else low + 1)
            notes.append(f"scale {scale[0]}-{scale[1]} taken from the grades seen (no sidecar says it)")
    if (
        not isinstance(relevant_from, int)
        or isinstance(relevant_from, bool)
        or not scale[0] < relevant_from <= scale[1]
    ):
        raise InputError(
            f"the relevant grade {relevant_from!r} (--relevance-level; relevant_from in Python) is not a "
            f"grade of the scale {scale[0]}-{scale[1]} above its lowest",
            path,
        )
    outside = [g for g in seen if not scale[0] <= g <= scale[1]]
    if outside:
        raise InputError(f"grade {outside[0]} is outside the scale {scale[0]}-{scale[1]}", path)
    return (scale[0], scale[1]), relevant_from, notes


def _second(
    path: str | Path, first: Origin, grades: Mapping[tuple[str, str], int], first_path: str | Path
) -> tuple[dict, Origin, dict, list[str]]:
    """The second people's grades of the pairs kept, with how its pairs met the first's."""
    q = read_qrels(path)
    origin = _people_only(q.origin, path)
    if first.same_as(origin):
        raise InputError(
            f"made by the same people as {first_path} ({origin.describe()}): one labeller compared "
            "with itself measures nothing",
            path,
        )
    theirs = {(qid, cid): int(g) for qid, docs in q.to_dict().items() for cid, g in docs.items()}
    join = Join.of(
        "pairs",
        "the first people's pairs with texts",
        (f"{a} {b}" for a, b in grades),
        "the second people's pairs",
        (f"{a} {b}" for a, b in theirs),
        first_path,
        path,
    ).require_overlap()
    shared = {k: g for k, g in theirs.items() if k in grades}
    notes = []
    if len(shared) < len(theirs):
        notes.append(
            f"{len(theirs) - len(shared)} of the second people's {len(theirs)} pairs are not among the "
            "first's pairs with texts and are left out"
        )
    return shared, origin, join.to_dict(), notes


def _reasons(counts: Mapping[str, int]) -> str:
    return "; ".join(f"{why}: {n}" for why, n in counts.items()) or "none"


# ---------------------------------------------------------------------------- labelled answers


def read_labelled_answers(
    answers: str | Path,
    labels: str | Path | None = None,
    *,
    second: str | Path | None = None,
    source: str | None = None,
    citation: str | None = None,
) -> LabelledAnswers:
    """Answers with people's labels: an EVOUNA file (people's true/false on five models' answers to
    NQ or TriviaQA questions), or an answers file ragassay checks with the labels in ``labels`` (what
    ``ragassay label`` writes: ``id``, ``label``, ``assessor``) or on each answer's own ``label``.
    Answers without a label, and labels naming no answer, are counted and said."""
    data = read_bytes_checked(answers)
    if is_evouna(data):
        return _evouna_answers(answers, data, labels, second, source, citation)
    items, own = _answer_items(answers)
    got, binary, origin, where = _first_labels(answers, labels, own)
    join = Join.of(
        "answer ids", "the answers", (a.id for a in items), "the labels", got, answers, where
    ).require_overlap()
    labelled = [a for a in items if a.id in got]
    skipped = {}
    if len(labelled) < len(items):
        skipped["answers without a label"] = len(items) - len(labelled)
    stray = len(set(got) - {a.id for a in items})
    if stray:
        skipped["labels naming no answer"] = stray
    warned = join.warning()
    notes = [warned] if warned else []
    second_labels = None
    if second is not None:
        second_labels = _second_labels(second, origin, where, binary, labelled)
    return LabelledAnswers(
        answers=labelled,
        labels={a.id: got[a.id] for a in labelled},
        binary=binary,
        second=second_labels,
        source=source or f"people's labels in {where} ({origin.describe()}) of the answers in {answers}",
        citation=citation,
        skipped=skipped,
        notes=tuple(notes),
        origin=origin,
        join=join.to_dict(),
    )


def _evouna_answers(
    answers: str | Path,
    data: bytes,
    labels: str | Path | None,
    second: str | Path | None,
    source: str | None,
    citation: str | None,
) -> LabelledAnswers:
    """EVOUNA's file, which carries its people's true/false itself (a labels file beside it is refused)."""
    extra = next((f for f in (labels, second) if f is not None), None)
    if extra is not None:
        raise InputError(
            f"{answers} is EVOUNA's file, which carries its people's labels itself: {extra} would "
            "not be read; give the EVOUNA file alone",
            extra,
        )
    ev = read_evouna(answers, data)
    skipped = dict(ev.skipped)
    notes = [f"{sum(skipped.values())} answers of {answers} are left out ({_reasons(skipped)})"] if skipped else []
    return LabelledAnswers(
        answers=ev.answers,
        labels=ev.labels,
        binary=True,
        second=None,
        source=source
        or f"EVOUNA {Path(answers).name}: people's true/false on model answers to "
        f"{'TriviaQA' if Path(answers).stem.upper().startswith('TQ') else 'Natural Questions'} "
        "questions (Wang et al. 2023)",
        citation=citation or EVOUNA_CITATION,
        skipped=skipped,
        notes=tuple(notes),
        origin=_evouna_origin(),
    )


def _first_labels(
    answers: str | Path, labels: str | Path | None, own: Mapping[str, tuple[int, Any, Any]]
) -> tuple[dict[str, str], bool, Origin, str | Path]:
    """The first people's labels (from ``labels``, else carried on the answers), whether they are
    only right or wrong, who made them, and the file they came from."""
    if labels is None:
        if not own:
            raise InputError(
                "no labels: give a labels file (id and label on each line, as `ragassay label` writes) "
                "or a label on each answer",
                answers,
            )
        got, binary, line_origins = _own_labels(own, answers)
        return got, binary, _people_only(label_origin(answers, line_origins), answers), answers
    got, binary, line_origins = read_answer_labels(labels)
    return got, binary, _people_only(label_origin(labels, line_origins), labels), labels


def _second_labels(
    second: str | Path, origin: Origin, where: str | Path, binary: bool, labelled: Sequence[AnswerItem]
) -> dict[str, str]:
    """A second people's labels of the kept answers, refused when made by the same people or of
    another kind of label."""
    theirs, second_binary, second_said = read_answer_labels(second)
    second_origin = _people_only(label_origin(second, second_said), second)
    if origin.same_as(second_origin):
        raise InputError(
            f"made by the same people as {where} ({origin.describe()}): one labeller compared "
            "with itself measures nothing",
            second,
        )
    if second_binary != binary and any(v != "correct" for v in theirs.values()):
        kinds = {True: "correct/incorrect", False: "check's four labels"}
        raise InputError(
            f"its labels are {kinds[second_binary]}, those of {where} are {kinds[binary]}: labels of "
            "two kinds cannot be compared",
            second,
        )
    Join.of(
        "answer ids", "the labelled answers", (a.id for a in labelled), "the second labels", theirs, where, second
    ).require_overlap()
    kept_ids = {a.id for a in labelled}
    return {k: v for k, v in theirs.items() if k in kept_ids}


def _evouna_origin() -> Origin:
    return Origin(labellers=(Labeller(by="person", name="EVOUNA annotators"),), scale=None)


def _answer_items(path: str | Path) -> tuple[list[AnswerItem], dict[str, tuple[int, Any, Any]]]:
    """The answers of a file ``check`` reads (ragassay's fields or a peer's), and each one's own
    ``label`` (with its line and assessor) when it carries one."""
    problems = LineProblems(path)
    rows, own = [], {}
    for no, obj in answer_rows(path, problems):  # (obj keeps the file's spellings for messages)
        label, assessor = obj.pop("label", None), obj.pop("assessor", None)
        if label is not None:
            own[str(obj.get("id"))] = (no, label, assessor)
        rows.append((no, obj))
    items = [item for _, item in read_records(path, AnswerItem, "answer", rows=rows, problems=problems)]
    return items, own


def _own_labels(own: Mapping[str, tuple[int, Any, Any]], path: str | Path) -> tuple[dict[str, str], bool, list[dict]]:
    """Labels carried on the answers' own lines, read as a labels file's are (errors at those lines)."""
    rows = [
        (no, {"id": aid, "label": label, **({"assessor": who} if who else {})}) for aid, (no, label, who) in own.items()
    ]
    return answer_labels(rows, path)


# ------------------------------------------------------------------------- bundled samples


def bundled_pairs() -> GradedPairs:
    """The bundled example's people's grades (qrels.txt) with its second assessor's
    (qrels_second_assessor.txt), queries and chunks; scale and relevant grade from their sidecars."""
    return read_graded_pairs(
        EXAMPLE / "qrels.txt",
        EXAMPLE / "queries.jsonl",
        EXAMPLE / "chunks.jsonl",
        second=EXAMPLE / "qrels_second_assessor.txt",
        source="the bundled example: a fictional shop's help pages, graded 0-3 by two example assessors "
        "(made for ragassay's example; not public people-labelled data)",
    )


def bundled_answers() -> LabelledAnswers:
    """The people-labelled answers shipped in the package: a seeded sample of EVOUNA (Wang et al. 2023,
    Apache-2.0), 100 answers people judged correct and 100 incorrect, to NQ and TriviaQA questions,
    from five QA models (made by benchmarks/make_evouna_sample.py; samples/NOTICE says what changed)."""
    return read_labelled_answers(
        SAMPLES / EVOUNA_SAMPLE,
        source="a seeded sample of EVOUNA bundled with ragassay: people's true/false on answers of five QA models "
        "(FiD, GPT-3.5, ChatGPT, GPT-4, Bing Chat) to Natural Questions and TriviaQA questions",
        citation=EVOUNA_CITATION,
    )


# ------------------------------------------------------------------------------- sampling


def stratified_sample(labels: Mapping[K, Hashable], size: int, seed: int) -> list[K]:
    """``size`` keys of ``labels`` spread over its classes: an equal share of each where the classes
    hold enough, the rest taken from those that hold more, one each in turn. The same seed gives the
    same keys whatever the mapping's order (keys and classes are put in a fixed order first); a size
    of all or more gives all; a size below the number of classes still takes each from another
    class. The keys come back in the order drawn (class after class), so any prefix is spread too."""
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ValueError(f"size: a whole number of at least 1, got {size!r}")
    groups: dict[Any, list[K]] = defaultdict(list)
    for key, cls in labels.items():
        groups[_order(cls)].append(key)
    rng = random.Random(seed)
    pools = []
    for name in sorted(groups):
        keys = sorted(groups[name], key=_order)
        rng.shuffle(keys)
        pools.append(keys)
    rng.shuffle(pools)  # which classes go first (when size is below their number, which are drawn)
    out: list[K] = []
    size = min(size, len(labels))
    at = 0
    while len(out) < size:
        for keys in pools:
            if at < len(keys) and len(out) < size:
                out.append(keys[at])
        at += 1
    return out


def _order(value: Any) -> tuple[str, str]:
    """A total order over any hashable (strings, numbers, tuples, mixed): its type's name and repr."""
    return (type(value).__name__, repr(value))
