"""A peer's sample as ragassay reads it: the id rule, the fields renamed to ragassay's names, and
the lists inside text cells read the way the peer reads its own file back (the package's docstring
states both rules).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError

ID_FIELDS = ("id", "query_id", "qid", "_id")
METADATA_FIELDS = ("additional_metadata", "metadata")
QUESTION_FIELDS = ("question", "query", "text", "user_input", "input")

# DeepEval's camelCase spellings (model_dump(by_alias=True)) of the fields read here
CAMEL_FIELDS = {
    "actualOutput": "actual_output",
    "expectedOutput": "expected_output",
    "retrievalContext": "retrieval_context",
    "additionalMetadata": "additional_metadata",
    "retrievedContexts": "retrieved_contexts",
    "referenceContexts": "reference_contexts",
    "userInput": "user_input",
    "retrievedContextIds": "retrieved_context_ids",
    "referenceAnswer": "reference_answer",
}
# the fields of a RAGAS sample, a DeepEval test case or golden and a LlamaIndex example, as ragassay names them
PEER_TO_OURS = {
    "user_input": "question",
    "input": "question",
    "query": "question",
    "actual_output": "response",
    "expected_output": "reference",
    "reference_answer": "reference",
    "retrieved_contexts": "contexts",
    "retrieval_context": "contexts",
    "retrieved_context_ids": "context_ids",
}
# DeepEval joins these lists with "|" in its CSV and JSONL files, and splits them so when it loads them
PIPE_LISTS = frozenset({"context", "retrieval_context"})
# RAGAS writes these lists into its CSV as Python's text of the list
LITERAL_CELLS = frozenset(
    {
        "retrieved_contexts",
        "reference_contexts",
        "retrieved_context_ids",
        "reference_context_ids",
        "multi_responses",
        "rubrics",
        "reference_tool_calls",
    }
)
JSON_CELLS = frozenset(
    {
        "additional_metadata",
        "metadata",
        "custom_column_key_values",
        "tools_called",
        "expected_tools",
        "expectations",
        "turns",
        "persona",
    }
)
# a text DeepEval writes for a RetrievedContextData: the passage is what follows deepeval_context=
DEEPEVAL_MARKER = "deepeval_source="
DEEPEVAL_CONTEXT = ",deepeval_context="
# the lists a LlamaIndex dataset file keeps its rows under (LabelledRagDataset)
ROW_LISTS = ("examples",)


@dataclass(frozen=True)
class PeerRow:
    """One sample of a peer's file: where it is, and its fields as the peer means them (lists read,
    camelCase spelled in snake_case, nulls left out)."""

    line: int  # where the row starts in the file
    position: int  # N of line-N: the line (JSONL), element (JSON array) or row after the header (CSV)
    where: str  # how a message names it: "line 3", "element 2", "row 4"
    fields: dict[str, Any]

    @property
    def message_prefix(self) -> str:
        """The prefix a message gives the row: ``element 2: ``, ``row 4: ``; none for a JSON line,
        whose line the error names already (``a.jsonl:7: line 7`` said it twice)."""
        return "" if self.where == f"line {self.line}" else f"{self.where}: "


# ----------------------------------------------------------------------------------- the id rule


def row_id(obj: Mapping[str, Any], position: int) -> Any:
    """The id of a row (see the module's id rule): its own id field, else the ``id`` in its
    metadata, else ``line-N``. A JSON integer is its digits; anything else is returned as it is,
    for the caller's check to refuse."""
    for name in ID_FIELDS:
        if name in obj:
            return digits(obj[name])
    for name in METADATA_FIELDS:
        meta = obj.get(name)
        if isinstance(meta, Mapping) and meta.get("id") is not None:
            return digits(meta["id"])
    return f"line-{position}"


def digits(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def answer_fields(obj: Mapping[str, Any], position: int) -> dict[str, Any]:
    """An answer in ragassay's fields from ragassay's, RAGAS's, DeepEval's or LlamaIndex's: theirs are
    renamed to ours (``user_input``/``input`` → question, ``actual_output`` → response,
    ``expected_output``/``reference_answer`` → reference, ``retrieved_contexts``/``retrieval_context``
    → contexts), and the id follows the module's rule."""
    out = PeerFields(_snake(dict(obj), None, None))
    for theirs, ours in PEER_TO_OURS.items():
        if theirs in out and ours not in out:
            out[ours] = out.pop(theirs)
            out.spelled[ours] = theirs
    if isinstance(out.get("context_ids"), list):
        out["context_ids"] = [digits(c) for c in out["context_ids"]]
    out["id"] = row_id(out, position)
    return out


class PeerFields(dict):
    """A row's fields in ragassay's names that remembers how the file spelled each one renamed
    (``spelled``: ours → theirs), so a message names the field the user can find in the file."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spelled: dict[str, str] = {}

    def spelling(self, ours: str) -> str:
        """How the file names ``ours``: its own spelling, or for a field it lacks, every name read as it."""
        if ours in self.spelled:
            return self.spelled[ours]
        if ours in self:
            return ours
        names = [ours] + [t for t, o in PEER_TO_OURS.items() if o == ours]
        return ours if len(names) == 1 else f"{ours} (or {', '.join(names[1:])})"


def peer_fields(obj: dict[str, Any], path: str | Path, line: int, shape: str) -> dict[str, Any]:
    """A peer's row as its tool means it: camelCase keys spelled in snake_case, nulls of peer fields
    left out, lists in text cells read as the tool reads them back."""
    out = _snake(obj, path, line)
    for key in list(out):
        value = out[key]
        if value is None and key not in ("id", "question", "reference", "response", "contexts", "context_ids"):
            del out[key]
        elif key in PIPE_LISTS and isinstance(value, str):
            out[key] = _deepeval_passages(value.split("|") if value else [])
        elif key in PIPE_LISTS and isinstance(value, list):
            out[key] = _deepeval_passages(value)
        elif shape == "csv" and key in LITERAL_CELLS:
            out[key] = _literal(value, key, path, line)
        elif shape == "csv" and key in JSON_CELLS:
            out[key] = _json_cell(value)
    _one_value_per_field(out, path, line)
    return out


def _one_value_per_field(fields: Mapping[str, Any], path: str | Path, line: int) -> None:
    """Refuse a row giving one of ragassay's fields under two spellings with different values (RAGAS's
    ``user_input`` beside DeepEval's ``input``): which one was meant cannot be told. Equal values are one."""
    spellings: dict[str, list[str]] = {}
    for name in fields:
        ours = PEER_TO_OURS.get(name, name)
        if fields[name] is not None and ours in PEER_TO_OURS.values():
            spellings.setdefault(ours, []).append(name)
    for names in spellings.values():
        first = names[0]
        other = next((n for n in names[1:] if fields[n] != fields[first]), None)
        if other is not None:
            raise InputError(f"both {first!r} and {other!r} are given, with different values: keep one", path, line)


def _snake(obj: dict[str, Any], path: str | Path | None, line: int | None) -> dict[str, Any]:
    out = dict(obj)
    for camel, snake in CAMEL_FIELDS.items():
        if camel in out:
            value = out.pop(camel)
            if snake in out and out[snake] is not None and value is not None and out[snake] != value:
                raise InputError(f"both {camel!r} and {snake!r} are given, with different values: keep one", path, line)
            if out.get(snake) is None:
                out[snake] = value
    return out


def _deepeval_passages(items: list[Any]) -> list[Any]:
    """DeepEval's text of a retrieved context with its source (``deepeval_source=S,deepeval_context=T``)
    is the passage T, as DeepEval reads it back."""
    out = []
    for item in items:
        if isinstance(item, str) and item.startswith(DEEPEVAL_MARKER) and DEEPEVAL_CONTEXT in item:
            item = item.split(DEEPEVAL_CONTEXT, 1)[1]
        out.append(item)
    return out


def _literal(value: Any, key: str, path: str | Path, line: int) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InputError(
            f"column {key}: expected a list as RAGAS writes it (['a', 'b']), got {value[:60]!r}", path, line
        ) from None


def _json_cell(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value  # kept as text: nothing here decides on it
