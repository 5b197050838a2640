"""An answer read back as the schema its call asked for.

The engine hands a stage's ``finish`` and ``next_calls`` the answers as plain models; each was
validated against the schema its call named, so a stage may read it as that schema. Saying so with
:func:`answer_as` keeps the type checker honest and turns a stage that mixed up its steps into a
plain error instead of an attribute missing somewhere later."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

Answer = TypeVar("Answer", bound=BaseModel)


def answer_as(answer: BaseModel | None, model: type[Answer]) -> Answer:
    """The answer as ``model``, the schema its call asked for; anything else is a bug in the stage."""
    if not isinstance(answer, model):
        raise TypeError(f"expected an answer of {model.__name__}, got {type(answer).__name__}")
    return answer
