"""Prompts shipped with the package (``src/ragassay/prompts/``, also at ``prompts/`` in the repo).

Each prompt is a plain text file with ``{{placeholders}}``. Its version is a hash of its text, so
every output record can say which prompt made it (``judge_relevance@3f2a9c1b``), and editing a
prompt changes the version.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str

    # what follows is derived from the text once (a judge run renders a prompt per pair)
    @cached_property
    def version(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:8]

    @cached_property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    @cached_property
    def placeholders(self) -> frozenset[str]:
        return frozenset(_PLACEHOLDER.findall(self.text))

    @cached_property
    def _sections(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each message's role and its text split at the placeholders: literal, name, literal, ...
        (the roles are read from the file before any value exists)."""
        parts = _ROLE.split(self.text)
        sections = list(zip(parts[1::2], parts[2::2])) or [("user", self.text)]
        return tuple((role, tuple(_PLACEHOLDER.split(body))) for role, body in sections)

    def _check_values(self, values: dict) -> None:
        if values.keys() == self.placeholders:
            return
        missing = self.placeholders - set(values)
        extra = set(values) - self.placeholders
        raise ValueError(f"prompt {self.name}: missing {sorted(missing)}, unexpected {sorted(extra)}")

    def render(self, **values: str) -> str:
        """The whole prompt as one text (for prompts without roles)."""
        self._check_values(values)
        return _fill(self.text, values)

    def messages(self, **values: str) -> list[dict[str, str]]:
        """Chat messages from a prompt written as ``[system]`` / ``[user]`` sections.

        The roles come from the prompt file before any value is filled in, and each value is put in
        one pass: text in a value (a line reading ``[system]``, role-like JSON, ``{{placeholder}}``)
        can never add, end or change a message."""
        return [{"role": role, "content": "".join(texts)} for role, texts in self.pieces(**values)]

    def pieces(self, **values: str) -> list[tuple[str, tuple[str, ...]]]:
        """Each message's role and the texts its content is made of, in order: the content is the
        texts joined (:meth:`messages` joins them). An estimate counts a prompt from its pieces,
        each distinct text once, without building it."""
        self._check_values(values)
        return [
            (role, _stripped([p if i % 2 == 0 else str(values[p]) for i, p in enumerate(parts)]))
            for role, parts in self._sections
        ]


_ROLE = re.compile(r"^\[(system|user)\]\n", re.M)


def _stripped(texts: list[str]) -> tuple[str, ...]:
    """The texts whose join is ``"".join(texts).strip()``: blank ones at either end dropped, the
    first and last stripped on their outer side."""
    while texts and not texts[0].strip():
        texts.pop(0)
    while texts and not texts[-1].strip():
        texts.pop()
    if texts:
        texts[0] = texts[0].lstrip()
        texts[-1] = texts[-1].rstrip()
    return tuple(t for t in texts if t)


def _fill(template: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def delimit(label: str, text: str) -> str:
    """Wrap untrusted text in markers it cannot close itself (marker characters inside, and in the
    label, are defused)."""
    safe = _defuse(text)
    label = _defuse(label)
    return f"<<<{label}\n{safe}\n{label.split()[0]}>>>"


_MARKER_RUN = re.compile(r"<{3,}|>{3,}")


def _defuse(text: str) -> str:
    """Every run of three or more ``<`` or ``>`` spaced out ("<<<<<" -> "< < < < <"): no marker can
    stand in the result, and defusing defused text changes nothing."""
    if "<<<" not in text and ">>>" not in text:  # the common case, without a regex pass
        return text
    return _MARKER_RUN.sub(lambda m: " ".join(m.group()), text)


def shown_id(identifier: str) -> str:
    """An id as a prompt shows it: on one line, with no marker text. Map the model's echo back with
    :func:`echoed_id`."""
    return " ".join(_defuse(identifier).split()) or "(empty id)"


def echoed_id(echo: str, identifiers: Iterable[str]) -> str | None:
    """The id the model meant when it echoed ``echo``: an id as written, or as :func:`shown_id`
    showed it (an id holding marker text or line breaks). None when it names no id, or several."""
    ids = list(identifiers)
    if echo in ids:
        return echo
    matches = {i for i in ids if shown_id(i) == echo.strip()}
    return matches.pop() if len(matches) == 1 else None


def clip(text: str, budget: int) -> tuple[str, int]:
    """``text`` cut to ``budget`` characters with a visible mark where it was cut, and how many
    characters were cut (0 when it fits)."""
    if len(text) <= budget:
        return text, 0
    cut = len(text) - budget
    return f"{text[:budget]}\n[… {cut:,} characters cut]", cut


@cache
def load_prompt(name: str) -> Prompt:
    try:
        text = resources.files("ragassay").joinpath("prompts").joinpath(f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"no prompt named {name!r} in ragassay/prompts") from None
    return Prompt(name, text)
