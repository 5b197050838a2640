"""A BEIR dataset folder given where one of its files is meant: the file that plays the role."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ..errors import InputError

BEIR_FILES = {"chunks": "corpus.jsonl", "queries": "queries.jsonl"}


def dataset_member(path: str | Path, role: Literal["qrels", "chunks", "queries"]) -> str | Path:
    """``path`` itself, or when it is a BEIR dataset folder, the file in it that plays ``role``:
    corpus.jsonl for chunks, queries.jsonl for queries, qrels/test.tsv (or the only split) for qrels."""
    p = Path(path)
    if str(path) == "-" or not p.is_dir():
        return path
    if role == "qrels":
        splits = sorted((p / "qrels").glob("*.tsv")) if (p / "qrels").is_dir() else []
        if len(splits) == 1:
            return splits[0]
        if splits:  # which split is meant is the user's choice (BEIR's own loader asks for one too)
            names = ", ".join(s.name for s in splits)
            test = p / "qrels" / "test.tsv"
            test_note = "" if test in splits else " and no test.tsv"
            raise InputError(
                f"a BEIR folder with several qrels splits{test_note}; name one, e.g. "
                f"{test if test in splits else splits[0]} (the splits: {names})",
                p,
            )
    else:
        for name in (BEIR_FILES[role], BEIR_FILES[role] + ".gz"):
            if (p / name).is_file():
                return p / name
    raise InputError(
        f"is a directory: expected a {role} file, or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)", p
    )
