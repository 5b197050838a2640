"""Reading an answer as small models write it.

A model without a grammar often wraps its JSON in prose or a fence ("Here is my assessment:
```json {...}``` I hope this helps."), and writes lists or objects where the schema asks for a
sentence of reasoning. Two rules keep that from costing records without ever guessing a decision:

- **Found, not guessed**: the answer is the reply's first complete JSON object that validates
  against the schema: the whole reply, else a fenced block, else an object inside the prose. How
  it was found is said (``whole``, ``fence``, ``prose``) and counted.
- **What decides is strict, what explains is lenient**: a field typed :data:`Explanation` (the
  judge's reasoning, check's facts and comparison, a critic's reasons) takes any JSON shape and
  keeps it as text; a grade, a label or a verdict is validated as declared (a grade ``true`` or
  ``2.5`` is refused, never rounded).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ValidationError

T = TypeVar("T", bound=BaseModel)


def as_text(value: Any) -> Any:
    """Any JSON value as the text it says: a list one item a line, an object ``key: value`` lines,
    a number or boolean as written. A string (and None, which the schema then refuses) is left as is."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        return "\n".join(t for t in (as_text(v) for v in value) if t)
    if isinstance(value, dict):
        return "\n".join(f"{k}: {as_text(v)}" for k, v in value.items())
    return value


# A field that only explains a decision: any JSON shape is kept, as text. Its JSON schema is a
# string's, so what is asked of the model does not change.
Explanation = Annotated[str, BeforeValidator(as_text)]


def as_texts(value: Any) -> Any:
    """A list of explanations from any JSON shape: a string is a list of one (an empty one, none),
    a list's items each as text, an object's entries each a ``key: value`` line."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [as_text(v) for v in value]
    if isinstance(value, dict):
        return [f"{k}: {as_text(v)}" for k, v in value.items()]
    return value


# A list of explanations (claims, reasons): any JSON shape is kept as a list of texts.
Explanations = Annotated[list[str], BeforeValidator(as_texts)]


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a decision must be a number as written, not true or false")
    return value


# A number that decides (a grade, a score): an integer as written, or "2" / 2.0; never a boolean.
Decision = Annotated[int, BeforeValidator(_no_bool)]


_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)```", re.S)


def json_candidates(text: str) -> Iterator[tuple[Any, str]]:
    """Each JSON object the reply holds, with where it was found, in the order to try them: the
    whole reply, then fenced blocks, then every object that starts at a ``{`` in the prose (the
    outermost first)."""
    stripped = text.strip()
    try:
        yield json.loads(stripped), "whole"
    except json.JSONDecodeError:
        pass
    for m in _FENCE.finditer(text):
        try:
            yield json.loads(m.group(1).strip()), "fence"
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        start = text.find("{", pos)
        if start < 0 or start >= end:
            return
        try:
            obj, stop = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        yield obj, "prose"
        pos = stop  # an object found: the next starts after it (its inner objects are parts, not answers)


def read_answer(
    text: str, response_model: type[T], clean: Callable[[Any], Any] = lambda data: data
) -> tuple[T | None, str, str]:
    """(the answer, how it was found, the problem when there is none). The answer is the first
    candidate that validates (after ``clean``); a reply whose candidates validate to different
    answers (prose weighing two grades) has none: which one it meant is not sure, so it decides
    nothing. When nothing validates, the problem is the first candidate's (or that the reply holds
    no JSON object at all)."""
    first_problem = ""
    found: list[tuple[T, str]] = []
    for data, how in json_candidates(text):
        if not isinstance(data, dict):
            first_problem = first_problem or f"the answer is JSON but not an object ({type(data).__name__})"
            continue
        try:
            answer = response_model.model_validate(clean(data))
        except ValidationError as e:
            errors = "; ".join(
                f"{'.'.join(str(x) for x in err['loc']) or 'answer'}: {err['msg']}" for err in e.errors()[:8]
            )
            first_problem = first_problem or f"the JSON does not match the schema: {errors}"
            continue
        if how == "whole":
            return answer, how, ""
        if found and answer != found[0][0]:
            return (
                None,
                "",
                (
                    "the reply holds more than one answer that differ (e.g. two grades in its prose): "
                    "reply with one JSON object only"
                ),
            )
        found.append((answer, how))
    if found:
        return found[0][0], found[0][1], ""
    if first_problem:
        return None, "", first_problem
    try:
        json.loads(text.strip())
    except json.JSONDecodeError as e:
        return None, "", f"the answer is not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
    return None, "", "the answer holds no JSON object"
